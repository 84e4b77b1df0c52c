/* Writes fqzcomp_qual fixtures with hand-chosen parameters (libhtscodecs'
 * fqz_compress with a custom fqz_gparams): custom1 (one parameter block,
 * qloc>0, non-identity qtab, ptab/dtab, dedup, reversal, contexts that
 * wrap 16 bits), custom2 (two blocks chosen by selector, fixed length) and
 * custom3 (custom1's parameters with reversal but no dedup). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <stdint.h>
#include <htscodecs/fqzcomp_qual.h>

static uint32_t st = 12345;
static uint32_t rnd(void) { st = st * 1103515245u + 12345u; return st >> 8; }

static void fill_param(fqz_param *p) {
    int i;
    for (i = 0; i < 256; i++) p->qmap[i] = i;
    p->qmask = (1u << p->qbits) - 1;
    p->pflags = (p->use_qtab ? PFLAG_HAVE_QTAB : 0) | (p->use_dtab ? PFLAG_HAVE_DTAB : 0) |
                (p->use_ptab ? PFLAG_HAVE_PTAB : 0) | (p->do_sel ? PFLAG_DO_SEL : 0) |
                (p->fixed_len ? PFLAG_DO_LEN : 0) | (p->do_dedup ? PFLAG_DO_DEDUP : 0);
}

static void write(const char *name, unsigned char *d, size_t n) {
    FILE *f = fopen(name, "wb");
    fwrite(d, 1, n, f);
    fclose(f);
}

static void quals(unsigned char *q, int n) {
    int v = 20 + rnd() % 15, i;
    for (i = 0; i < n; i++) {
        v += (int)(rnd() % 7) - 3;
        if (v < 2) v = 2;
        if (v > 40) v = 40;
        q[i] = v;
    }
}

int main(void) {
    int nrec = 300, i;
    uint32_t *len = calloc(nrec, 4), *flags = calloc(nrec, 4);
    unsigned char *in = malloc(nrec * 200);
    size_t n = 0, clen;
    char *c;

    /* custom1 */
    for (i = 0; i < nrec; i++) {
        len[i] = 60 + rnd() % 90;
        flags[i] = (rnd() & 1) ? FQZ_FREVERSE : 0;
        if (i > 0 && i % 37 == 0) { /* a duplicate record */
            len[i] = len[i-1];
            memcpy(in + n, in + n - len[i], len[i]);
        } else {
            quals(in + n, len[i]);
        }
        n += len[i];
    }
    fqz_slice s = {nrec, len, flags};
    fqz_gparams gp;
    fqz_param p1;
    memset(&gp, 0, sizeof(gp));
    memset(&p1, 0, sizeof(p1));
    gp.vers = FQZ_VERS; gp.gflags = GFLAG_DO_REV; gp.nparam = 1; gp.max_sym = 40; gp.p = &p1;
    p1.context = 0x0abc; p1.do_dedup = 1; p1.use_qtab = 1; p1.use_ptab = 1; p1.use_dtab = 1;
    p1.qbits = 7; p1.qshift = 3; p1.qloc = 5; p1.pbits = 4; p1.ploc = 13; p1.dbits = 5; p1.dloc = 0;
    p1.max_sym = 40; p1.nsym = 41;
    for (i = 0; i < 256; i++) p1.qtab[i] = i / 2;
    for (i = 0; i < 1024; i++) p1.ptab[i] = (i >> 3) < 15 ? i >> 3 : 15;
    for (i = 0; i < 256; i++) p1.dtab[i] = i < 31 ? i : 31;
    fill_param(&p1);
    c = fqz_compress(3 << 8, &s, (char *)in, n, &clen, 0, &gp);
    if (!c) { fprintf(stderr, "compress 1 failed\n"); return 1; }
    write("custom1.fqz", (unsigned char *)c, clen);
    write("custom1.raw", in, n);
    free(c);

    /* custom2 */
    n = 0;
    for (i = 0; i < nrec; i++) {
        len[i] = 100;
        flags[i] = (rnd() % 3) << 16;
        quals(in + n, 100);
        n += 100;
    }
    fqz_param p2[2];
    memset(&gp, 0, sizeof(gp));
    memset(p2, 0, sizeof(p2));
    gp.vers = FQZ_VERS; gp.gflags = GFLAG_MULTI_PARAM | GFLAG_HAVE_STAB; gp.nparam = 2; gp.max_sel = 2;
    gp.max_sym = 40; gp.p = p2;
    gp.stab[0] = 0; for (i = 1; i < 256; i++) gp.stab[i] = i - 1 + (i == 1); /* 0,1,1,2,3,...: runs short enough for store_array */
    p2[0].do_sel = 1; p2[0].fixed_len = 1; p2[0].qbits = 6; p2[0].qshift = 2; p2[0].qloc = 0;
    p2[0].sloc = 14; p2[0].use_ptab = 1; p2[0].pbits = 3; p2[0].ploc = 6;
    for (i = 0; i < 1024; i++) p2[0].ptab[i] = (i >> 4) < 7 ? i >> 4 : 7;
    p2[0].max_sym = 40; p2[0].nsym = 41;
    for (i = 0; i < 256; i++) p2[0].qtab[i] = i;
    p2[1].do_sel = 1; p2[1].fixed_len = 1; p2[1].qbits = 8; p2[1].qshift = 4; p2[1].qloc = 6;
    p2[1].sloc = 15; p2[1].context = 0xfff0; p2[1].use_dtab = 1; p2[1].dbits = 2; p2[1].dloc = 14;
    for (i = 0; i < 256; i++) p2[1].dtab[i] = i < 3 ? i : 3;
    p2[1].max_sym = 40; p2[1].nsym = 41;
    for (i = 0; i < 256; i++) p2[1].qtab[i] = i;
    fill_param(&p2[0]);
    fill_param(&p2[1]);
    c = fqz_compress(3 << 8, &s, (char *)in, n, &clen, 0, &gp);
    if (!c) { fprintf(stderr, "compress 2 failed\n"); return 1; }
    write("custom2.fqz", (unsigned char *)c, clen);
    write("custom2.raw", in, n);
    free(c);

    /* custom3: custom1's parameters without dedup, so reversed records
     * are all unique (the decoder then turns each around as decoded). */
    n = 0;
    for (i = 0; i < nrec; i++) {
        len[i] = 60 + rnd() % 90;
        flags[i] = (rnd() & 1) ? FQZ_FREVERSE : 0;
        quals(in + n, len[i]);
        n += len[i];
    }
    memset(&gp, 0, sizeof(gp));
    memset(&p1, 0, sizeof(p1));
    gp.vers = FQZ_VERS; gp.gflags = GFLAG_DO_REV; gp.nparam = 1; gp.max_sym = 40; gp.p = &p1;
    p1.context = 0x0abc; p1.use_qtab = 1; p1.use_ptab = 1; p1.use_dtab = 1;
    p1.qbits = 7; p1.qshift = 3; p1.qloc = 5; p1.pbits = 4; p1.ploc = 13; p1.dbits = 5; p1.dloc = 0;
    p1.max_sym = 40; p1.nsym = 41;
    for (i = 0; i < 256; i++) p1.qtab[i] = i / 2;
    for (i = 0; i < 1024; i++) p1.ptab[i] = (i >> 3) < 15 ? i >> 3 : 15;
    for (i = 0; i < 256; i++) p1.dtab[i] = i < 31 ? i : 31;
    fill_param(&p1);
    c = fqz_compress(3 << 8, &s, (char *)in, n, &clen, 0, &gp);
    if (!c) { fprintf(stderr, "compress 3 failed\n"); return 1; }
    write("custom3.fqz", (unsigned char *)c, clen);
    write("custom3.raw", in, n);
    free(c);

    /* Check that all decode with the C decoder. */
    const char *names[] = {"custom1", "custom2", "custom3"};
    for (i = 0; i < 3; i++) {
        char fn[64];
        sprintf(fn, "%s.fqz", names[i]);
        FILE *f = fopen(fn, "rb");
        fseek(f, 0, SEEK_END); long m = ftell(f); fseek(f, 0, SEEK_SET);
        char *b = malloc(m); fread(b, 1, m, f); fclose(f);
        sprintf(fn, "%s.raw", names[i]);
        f = fopen(fn, "rb");
        fseek(f, 0, SEEK_END); long r = ftell(f); fseek(f, 0, SEEK_SET);
        char *raw = malloc(r); fread(raw, 1, r, f); fclose(f);
        size_t ol; char *o = fqz_decompress(b, m, &ol, NULL, 0);
        printf("%s: %ld -> %ld bytes, C decode %s\n", names[i], r, m, o && ol == (size_t)r && !memcmp(o, raw, r) ? "ok" : "MISMATCH");
    }
    return 0;
}
