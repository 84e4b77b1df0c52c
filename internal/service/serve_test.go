package service

import (
	"bytes"
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/json"
	"encoding/pem"
	"errors"
	"fmt"
	"io"
	"math/big"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/cramfs/cramfs/internal/corpus"
)

// serveT serves src over HTTP on a free loopback port with the options of
// mountT (-T refs, -@ 2, a temporary cache) and so, and stops at cleanup.
func serveT(t *testing.T, src string, refs []string, so ServeOptions) *HTTPServer {
	t.Helper()
	svc, err := Open(Options{References: refs, CacheDir: t.TempDir(), CacheSize: 256 << 20, Threads: 2})
	if err != nil {
		t.Fatal(err)
	}
	if so.Listen == "" {
		so.Listen = "127.0.0.1:0"
	}
	srv, err := svc.Serve(src, so)
	if err != nil {
		svc.Close()
		t.Fatal(err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		if err := srv.Shutdown(ctx); err != nil {
			t.Errorf("Shutdown: %v", err)
		}
		svc.Close()
	})
	return srv
}

func urlOf(srv *HTTPServer, p string) string { return "http://" + srv.Addr().String() + "/" + p }

// get sends a GET (or method) of url with the headers h and returns the
// response with its body read.
func get(t *testing.T, method, url string, h map[string]string) (*http.Response, []byte) {
	t.Helper()
	req, err := http.NewRequest(method, url, nil)
	if err != nil {
		t.Fatal(err)
	}
	for k, v := range h {
		req.Header.Set(k, v)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return resp, body
}

// TestServeSameBytesAsMount: cramfs serve sends the bytes of the mount,
// for the BAM and its index under both names, whole and by range.
func TestServeSameBytesAsMount(t *testing.T) {
	requireMount(t)
	src := t.TempDir()
	must(t, os.Mkdir(filepath.Join(src, "sub"), 0o755))
	copyFile(t, testdata("cram", "ce_5b.3.0.cram"), filepath.Join(src, "x.cram"))
	copyFile(t, testdata("cram", "ce_1000.3.1-archive.cram"), filepath.Join(src, "sub", "y.cram"))
	refs := []string{testdata("ref", "ce.fa")}
	m := mountT(t, src, mountConfig{refs: refs})
	srv := serveT(t, src, refs, ServeOptions{})
	for _, p := range []string{"x.bam", "x.bam.bai", "x.bai", "sub/y.bam", "sub/y.bam.bai"} {
		want, err := os.ReadFile(filepath.Join(m.mnt, p))
		if err != nil {
			t.Fatal(err)
		}
		resp, got := get(t, "GET", urlOf(srv, p), nil)
		if resp.StatusCode != 200 || !bytes.Equal(got, want) || resp.ContentLength != int64(len(want)) {
			t.Errorf("GET %s: %d, %d bytes (Content-Length %d), want the mount's %d bytes", p, resp.StatusCode, len(got), resp.ContentLength, len(want))
		}
		if len(want) > 100 {
			resp, got = get(t, "GET", urlOf(srv, p), map[string]string{"Range": "bytes=17-99"})
			if resp.StatusCode != 206 || !bytes.Equal(got, want[17:100]) || resp.Header.Get("Content-Range") != fmt.Sprintf("bytes 17-99/%d", len(want)) {
				t.Errorf("GET %s bytes=17-99: %d %q, %d bytes", p, resp.StatusCode, resp.Header.Get("Content-Range"), len(got))
			}
		}
	}
}

// TestServeProtocol checks the HTTP corners: HEAD, 416, conditional
// requests, a new ETag for a replaced CRAM, methods, paths with ..,
// listings, links as redirects.
func TestServeProtocol(t *testing.T) {
	corpus := testdata("cram", "ce_5b.3.0.cram")
	src := t.TempDir()
	copyFile(t, corpus, filepath.Join(src, "x.cram"))
	must(t, os.WriteFile(filepath.Join(src, "notes.txt"), []byte("a real file\n"), 0o644))
	must(t, os.Symlink("x.cram", filepath.Join(src, "link.cram")))
	srv := serveT(t, src, []string{testdata("ref", "ce.fa")}, ServeOptions{})
	full, body := get(t, "GET", urlOf(srv, "x.bam"), nil)
	etag := full.Header.Get("ETag")
	if full.StatusCode != 200 || etag == "" || full.Header.Get("Accept-Ranges") != "bytes" || full.Header.Get("Last-Modified") == "" {
		t.Fatalf("GET x.bam: %d, headers %v", full.StatusCode, full.Header)
	}
	head, hb := get(t, "HEAD", urlOf(srv, "x.bam"), nil)
	if head.StatusCode != 200 || len(hb) != 0 || head.ContentLength != int64(len(body)) {
		t.Errorf("HEAD x.bam: %d, %d body bytes, Content-Length %d, want %d", head.StatusCode, len(hb), head.ContentLength, len(body))
	}
	if r, _ := get(t, "GET", urlOf(srv, "x.bam"), map[string]string{"Range": fmt.Sprintf("bytes=%d-", len(body))}); r.StatusCode != 416 {
		t.Errorf("a range past the end: %d, want 416", r.StatusCode)
	}
	if r, _ := get(t, "GET", urlOf(srv, "x.bam"), map[string]string{"If-None-Match": etag}); r.StatusCode != 304 {
		t.Errorf("If-None-Match of the current ETag: %d, want 304", r.StatusCode)
	}
	if r, b := get(t, "GET", urlOf(srv, "x.bam"), map[string]string{"Range": "bytes=0-9", "If-Range": `"stale"`}); r.StatusCode != 200 || len(b) != len(body) {
		t.Errorf("If-Range of another ETag: %d, %d bytes, want the whole file", r.StatusCode, len(b))
	}
	if r, b := get(t, "GET", urlOf(srv, "x.bam"), map[string]string{"Range": "bytes=0-9", "If-Range": etag}); r.StatusCode != 206 || len(b) != 10 {
		t.Errorf("If-Range of the ETag: %d, %d bytes, want 10", r.StatusCode, len(b))
	}
	if r, b := get(t, "GET", urlOf(srv, "notes.txt"), nil); r.StatusCode != 200 || string(b) != "a real file\n" {
		t.Errorf("GET notes.txt: %d %q", r.StatusCode, b)
	}
	for _, p := range []string{"x.cram", "nothing.bam", "x.crai"} {
		if r, _ := get(t, "GET", urlOf(srv, p), nil); r.StatusCode != 404 {
			t.Errorf("GET %s: %d, want 404", p, r.StatusCode)
		}
	}
	if r, _ := get(t, "POST", urlOf(srv, "x.bam"), nil); r.StatusCode != 405 || r.Header.Get("Allow") != "GET, HEAD" {
		t.Errorf("POST: %d, Allow %q", r.StatusCode, r.Header.Get("Allow"))
	}
	for _, raw := range []string{"/../etc/passwd", "/sub/../x.bam", "/./x.bam"} {
		if code := rawRequest(t, srv, raw); code != 400 {
			t.Errorf("GET %s: %d, want 400", raw, code)
		}
	}
	r, b := get(t, "GET", urlOf(srv, ""), nil)
	var l struct {
		Entries []struct{ Name, Type string }
	}
	if err := json.Unmarshal(b, &l); r.StatusCode != 200 || err != nil || !strings.Contains(string(b), `"x.bam"`) || strings.Contains(string(b), "x.cram") {
		t.Errorf("listing: %d %v %s", r.StatusCode, err, b)
	}
	if r, b := get(t, "GET", urlOf(srv, ""), map[string]string{"Accept": "text/html,application/xhtml+xml"}); r.StatusCode != 200 || !strings.Contains(string(b), `<a href="/x.bam">`) {
		t.Errorf("HTML listing: %d %s", r.StatusCode, b)
	}
	noRedirect := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	lr, err := noRedirect.Get(urlOf(srv, "link.bam"))
	if err != nil {
		t.Fatal(err)
	}
	lr.Body.Close()
	if lr.StatusCode != 302 || lr.Header.Get("Location") != "/x.bam" {
		t.Errorf("GET link.bam: %d Location %q, want a redirect to /x.bam", lr.StatusCode, lr.Header.Get("Location"))
	}
	if r, b := get(t, "GET", urlOf(srv, "link.bam"), nil); r.StatusCode != 200 || !bytes.Equal(b, body) {
		t.Errorf("GET link.bam, redirect followed: %d, %d bytes", r.StatusCode, len(b))
	}

	// A CRAM replaced: a new ETag, and the new version's bytes whole.
	copyFile(t, testdata("cram", "ce_1000.3.0.cram"), filepath.Join(src, "x.cram"))
	r, nb := get(t, "GET", urlOf(srv, "x.bam"), nil)
	if r.Header.Get("ETag") == etag || bytes.Equal(nb, body) {
		t.Errorf("replaced CRAM: ETag %q (was %q), same bytes %v", r.Header.Get("ETag"), etag, bytes.Equal(nb, body))
	}
	if r, _ := get(t, "GET", urlOf(srv, "x.bam"), map[string]string{"If-None-Match": etag}); r.StatusCode != 200 {
		t.Errorf("If-None-Match of the old version's ETag: %d, want 200", r.StatusCode)
	}
}

// rawRequest sends GET path as written (no client-side cleaning) and
// returns the status code.
func rawRequest(t *testing.T, srv *HTTPServer, p string) int {
	t.Helper()
	c, err := net.Dial("tcp", srv.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	fmt.Fprintf(c, "GET %s HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n", p)
	b, _ := io.ReadAll(c)
	var code int
	fmt.Sscanf(string(b), "HTTP/1.1 %d", &code)
	return code
}

// TestServeToken: with a token, a request without it or with another is
// refused (401); with it, served.
func TestServeToken(t *testing.T) {
	src := t.TempDir()
	copyFile(t, testdata("cram", "ce_5b.3.0.cram"), filepath.Join(src, "x.cram"))
	srv := serveT(t, src, []string{testdata("ref", "ce.fa")}, ServeOptions{Token: "s3cret"})
	for _, auth := range []string{"", "Bearer wrong", "Bearer s3cret2", "Basic s3cret"} {
		if r, _ := get(t, "GET", urlOf(srv, "x.bam"), map[string]string{"Authorization": auth}); r.StatusCode != 401 || r.Header.Get("WWW-Authenticate") == "" {
			t.Errorf("Authorization %q: %d, want 401 with WWW-Authenticate", auth, r.StatusCode)
		}
	}
	if r, _ := get(t, "GET", urlOf(srv, "x.bam"), map[string]string{"Authorization": "Bearer s3cret"}); r.StatusCode != 200 {
		t.Errorf("the right token: %d", r.StatusCode)
	}
}

// TestServeListenNeedsAuth: an address other than loopback needs a token
// or NoAuth; a certificate needs its key.
func TestServeListenNeedsAuth(t *testing.T) {
	for _, c := range []struct {
		o  ServeOptions
		ok bool
	}{
		{ServeOptions{Listen: "127.0.0.1:0"}, true},
		{ServeOptions{Listen: "[::1]:0"}, true},
		{ServeOptions{Listen: "localhost:0"}, true},
		{ServeOptions{Listen: "0.0.0.0:8157"}, false},
		{ServeOptions{Listen: ":8157"}, false},
		{ServeOptions{Listen: "10.1.2.3:8157", Token: "t"}, true},
		{ServeOptions{Listen: "0.0.0.0:8157", NoAuth: true}, true},
		{ServeOptions{Listen: "127.0.0.1:0", TLSCert: "c.pem"}, false},
		{ServeOptions{Listen: "nonsense"}, false},
	} {
		err := checkListen(c.o)
		var oe *OptionError
		if (err == nil) != c.ok || (err != nil && !errors.As(err, &oe)) {
			t.Errorf("%+v: %v, want ok %v", c.o, err, c.ok)
		}
	}
}

// TestServeTLS serves HTTPS with a certificate made here; a client that
// trusts it reads the BAM.
func TestServeTLS(t *testing.T) {
	dir := t.TempDir()
	certFile, keyFile, pool := selfSigned(t, dir)
	src := t.TempDir()
	copyFile(t, testdata("cram", "ce_5b.3.0.cram"), filepath.Join(src, "x.cram"))
	srv := serveT(t, src, []string{testdata("ref", "ce.fa")}, ServeOptions{TLSCert: certFile, TLSKey: keyFile})
	c := &http.Client{Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool}}}
	resp, err := c.Get("https://" + srv.Addr().String() + "/x.bam")
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 200 || len(b) == 0 || resp.TLS == nil {
		t.Errorf("HTTPS GET x.bam: %d, %d bytes, TLS %v", resp.StatusCode, len(b), resp.TLS != nil)
	}
}

// selfSigned writes a certificate for 127.0.0.1 and its key into dir.
func selfSigned(t *testing.T, dir string) (cert, key string, pool *x509.CertPool) {
	t.Helper()
	k, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "cramfs test"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
		IPAddresses: []net.IP{net.ParseIP("127.0.0.1")}, KeyUsage: x509.KeyUsageDigitalSignature, ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &k.PublicKey, k)
	if err != nil {
		t.Fatal(err)
	}
	kb, err := x509.MarshalECPrivateKey(k)
	if err != nil {
		t.Fatal(err)
	}
	cert, key = filepath.Join(dir, "cert.pem"), filepath.Join(dir, "key.pem")
	must(t, os.WriteFile(cert, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), 0o644))
	must(t, os.WriteFile(key, pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: kb}), 0o600))
	c, _ := x509.ParseCertificate(der)
	pool = x509.NewCertPool()
	pool.AddCert(c)
	return cert, key, pool
}

// TestServeSamtools reads the served BAM with samtools over http, as a
// user would: view, view REGION (through the served .bai), idxstats and
// quickcheck give what samtools gives on the CRAM.
func TestServeSamtools(t *testing.T) {
	requireMount(t)
	src := t.TempDir()
	cram := filepath.Join(src, "x.cram")
	copyFile(t, testdata("cram", "ce_5b.3.0.cram"), cram)
	ref := testdata("ref", "ce.fa")
	mustSamtools(t, "index", cram) // x.cram.crai, for samtools' side; the tree hides it
	t.Chdir(t.TempDir())           // htslib keeps a remote index in the working directory
	srv := serveT(t, src, []string{ref}, ServeOptions{})
	u := urlOf(srv, "x.bam")
	for _, c := range []struct{ cmd, opts, region []string }{
		{[]string{"view"}, []string{"-h", "--no-PG"}, nil},
		{[]string{"view"}, []string{"--no-PG"}, []string{"CHROMOSOME_II:1-2000", "CHROMOSOME_I"}},
	} {
		line := func(file string, ref ...string) []string {
			return append(append(append(append(c.cmd[:1:1], c.opts...), ref...), file), c.region...)
		}
		want := mustSamtools(t, line(cram, "-T", ref)...)
		got, err := samtools(line(u)...)
		if err != nil || !bytes.Equal(got, want) {
			t.Errorf("samtools %s over http: %v\n%s\nwant\n%s", strings.Join(line(u), " "), err, got, want)
		}
	}
	// idxstats reads the index: that of samtools' own BAM of the CRAM.
	local := filepath.Join(t.TempDir(), "x.bam")
	mustSamtools(t, "view", "-b", "--no-PG", "-T", ref, "-o", local, cram)
	mustSamtools(t, "index", local)
	if got, err := samtools("idxstats", u); err != nil || !bytes.Equal(got, mustSamtools(t, "idxstats", local)) {
		t.Errorf("samtools idxstats over http: %v\n%s", err, got)
	}
	if _, err := samtools("quickcheck", u); err != nil {
		t.Errorf("samtools quickcheck over http: %v", err)
	}
	// pysam (htslib through Python) fetches a region through the served
	// index, as many pipelines read BAM.
	python := pysamPython(t)
	script := "import pysam, sys\nf = pysam.AlignmentFile(sys.argv[1])\nprint(sum(1 for _ in f.fetch('CHROMOSOME_I')))\n"
	out, err := exec.Command(python, "-c", script, u).CombinedOutput()
	want := strings.TrimSpace(string(mustSamtools(t, "view", "-c", "-T", ref, cram, "CHROMOSOME_I")))
	if err != nil || strings.TrimSpace(string(out)) != want {
		t.Errorf("pysam fetch over http: %v %q, want %s records", err, out, want)
	}
}

// htsgetView runs samtools view with args on an htsget URL and returns
// its records (or header) as samtools prints them.
func htsgetView(t *testing.T, args ...string) []byte {
	t.Helper()
	out, err := samtools(append([]string{"view", "--no-PG"}, args...)...)
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// TestServeHtsget reads the htsget endpoint with samtools, as a user
// would: the whole file and the header as samtools reads the CRAM, a
// region with every record of it (htsget may send more, never fewer),
// the unplaced reads; and the spec's errors.
func TestServeHtsget(t *testing.T) {
	requireMount(t)
	src := t.TempDir()
	must(t, os.Mkdir(filepath.Join(src, "sub"), 0o755))
	ref := testdata("ref", "ce.fa")
	multi, unmapped := filepath.Join(src, "sub", "multi.cram"), filepath.Join(src, "unmapped.cram")
	copyFile(t, testdata("cram", "ce_5b.3.0.cram"), multi)
	copyFile(t, testdata("cram", "ce_unmap2.3.0.cram"), unmapped)
	for _, c := range []string{multi, unmapped} {
		mustSamtools(t, "index", c)
	}
	t.Chdir(t.TempDir()) // htslib may keep downloaded data in the working directory
	srv := serveT(t, src, []string{ref}, ServeOptions{})
	reads := func(id, query string) string { return urlOf(srv, "reads/"+id) + query }

	if got, want := htsgetView(t, reads("sub/multi", "")), mustSamtools(t, "view", "--no-PG", "-T", ref, multi); !bytes.Equal(got, want) {
		t.Errorf("htsget whole file:\n%s\nwant\n%s", got, want)
	}
	if got, want := htsgetView(t, "-H", reads("sub/multi", "?class=header")), mustSamtools(t, "view", "-H", "--no-PG", "-T", ref, multi); !bytes.Equal(got, want) {
		t.Errorf("htsget class=header:\n%s\nwant\n%s", got, want)
	}
	for _, c := range []struct{ id, query, region string }{
		{"sub/multi", "?referenceName=CHROMOSOME_V&start=0&end=20", "CHROMOSOME_V:1-20"},
		{"sub/multi", "?referenceName=CHROMOSOME_II", "CHROMOSOME_II"},
		{"unmapped", "?referenceName=*", "*"},
	} {
		cram := multi
		if c.id == "unmapped" {
			cram = unmapped
		}
		want := strings.Split(strings.TrimSpace(string(mustSamtools(t, "view", "--no-PG", "-T", ref, cram, c.region))), "\n")
		got := string(htsgetView(t, reads(c.id, c.query)))
		for _, rec := range want {
			if !strings.Contains(got, rec+"\n") {
				t.Errorf("htsget %s%s lacks a record of samtools view %s:\n%s\ngot:\n%s", c.id, c.query, c.region, rec, got)
			}
		}
	}
	for _, c := range []struct {
		id, query string
		status    int
		kind      string
	}{
		{"nothing", "", 404, "NotFound"},
		{"sub/multi", "?referenceName=chrNone", 404, "NotFound"},
		{"sub/multi", "?start=10", 400, "InvalidInput"},
		{"sub/multi", "?referenceName=CHROMOSOME_I&start=20&end=10", 400, "InvalidRange"},
		{"sub/multi", "?format=CRAM", 400, "UnsupportedFormat"},
		{"sub/multi", "?class=everything", 400, "InvalidInput"},
	} {
		resp, body := get(t, "GET", reads(c.id, c.query), nil)
		var e struct {
			Htsget struct{ Error, Message string }
		}
		if err := json.Unmarshal(body, &e); err != nil || resp.StatusCode != c.status || e.Htsget.Error != c.kind {
			t.Errorf("htsget %s%s: %d %s, want %d %s", c.id, c.query, resp.StatusCode, body, c.status, c.kind)
		}
	}
}

// TestServeStatus: cramfs status URL reports a server's files and cache,
// with the token the server wants, and is refused without it.
func TestServeStatus(t *testing.T) {
	src := t.TempDir()
	copyFile(t, testdata("cram", "ce_5b.3.0.cram"), filepath.Join(src, "x.cram"))
	srv := serveT(t, src, []string{testdata("ref", "ce.fa")}, ServeOptions{Token: "tok"})
	if r, _ := get(t, "GET", urlOf(srv, "x.bam"), map[string]string{"Authorization": "Bearer tok"}); r.StatusCode != 200 {
		t.Fatalf("GET x.bam: %d", r.StatusCode)
	}
	root := urlOf(srv, "")
	if _, err := QueryServerStatus(root, ""); err == nil {
		t.Error("the status without the token: no error")
	}
	raw, err := QueryServerStatus(root, "tok")
	if err != nil {
		t.Fatal(err)
	}
	var st mountStatus
	must(t, json.Unmarshal(raw, &st))
	if st.URL != root || st.Src != src || len(st.Files) != 1 || st.Files[0].Path != filepath.Join(src, "x.cram") || st.Files[0].Reads == 0 {
		t.Errorf("status %+v", st)
	}
	var out bytes.Buffer
	must(t, WriteStatus(&out, root, raw))
	if !strings.Contains(out.String(), "cramfs server of "+src+" at "+root) {
		t.Errorf("status text:\n%s", out.String())
	}
}

// gmodScript counts, with @gmod/bam (what igv.js and JBrowse read BAM
// with), the records of a region of the BAM at a URL, and how many of
// them are repeats.
const gmodScript = `import { BamFile } from '@gmod/bam'
const [, , url, ref, start, end] = process.argv
const f = new BamFile({ bamUrl: url, baiUrl: url + '.bai' })
await f.getHeader()
const recs = await f.getRecordsForRange(ref, Number(start), Number(end))
const seen = new Set()
let repeats = 0
for (const r of recs) {
  const k = r.name + '/' + r.flags + '/' + r.start
  if (seen.has(k)) repeats++
  seen.add(k)
}
console.log(recs.length, repeats)
`

// gmodBam is @gmod/bam 7.1.17 installed from npm into a test's
// directory, with gmodScript beside it.
type gmodBam struct{ node, dir string }

// installGmodBam installs @gmod/bam; node or npm missing, or the install
// failing, skips the test (fails it under CI).
func installGmodBam(t *testing.T) gmodBam {
	t.Helper()
	node, err := exec.LookPath("node")
	if err != nil {
		corpus.Missing(t, "node (Debian's nodejs): %v", err)
	}
	npm, err := exec.LookPath("npm")
	if err != nil {
		corpus.Missing(t, "npm: %v", err)
	}
	dir := t.TempDir()
	if out, err := exec.Command(npm, "install", "--silent", "--no-audit", "--no-fund", "--prefix", dir, "@gmod/bam@7.1.17").CombinedOutput(); err != nil {
		corpus.Missing(t, "npm install @gmod/bam@7.1.17: %v\n%s", err, out)
	}
	must(t, os.WriteFile(filepath.Join(dir, "count.mjs"), []byte(gmodScript), 0o644))
	return gmodBam{node, dir}
}

// count returns what gmodScript prints for the region [start, end) of ref
// in the BAM at url (its index at url.bai): "RECORDS REPEATS".
func (g gmodBam) count(t *testing.T, url, ref string, start, end int) string {
	t.Helper()
	cmd := exec.Command(g.node, "count.mjs", url, ref, fmt.Sprint(start), fmt.Sprint(end))
	cmd.Dir = g.dir
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("@gmod/bam %s %s:%d-%d: %v\n%s", url, ref, start, end, err, out)
	}
	return strings.TrimSpace(string(out))
}

// TestServeGmodBam reads the served BAM over HTTP with @gmod/bam under
// node, installed from npm into the test's directory: each reference's
// records, counted as samtools counts them in the CRAM, none repeated.
func TestServeGmodBam(t *testing.T) {
	requireMount(t)
	gm := installGmodBam(t)
	src := t.TempDir()
	ref := testdata("ref", "ce.fa")
	cram := filepath.Join(src, "x.cram")
	copyFile(t, testdata("cram", "ce_5b.3.0-multislice.cram"), cram)
	mustSamtools(t, "index", cram)
	srv := serveT(t, src, []string{ref}, ServeOptions{})
	for _, c := range []struct {
		ref        string
		start, end int
	}{{"CHROMOSOME_I", 0, 1009800}, {"CHROMOSOME_V", 0, 5000}, {"CHROMOSOME_V", 9, 10}} {
		got := gm.count(t, urlOf(srv, "x.bam"), c.ref, c.start, c.end)
		want := strings.TrimSpace(string(mustSamtools(t, "view", "-c", "-T", ref, cram, fmt.Sprintf("%s:%d-%d", c.ref, c.start+1, c.end))))
		if got != want+" 0" {
			t.Errorf("@gmod/bam %s:%d-%d: %q (records, repeats), want %s records, none repeated", c.ref, c.start, c.end, got, want)
		}
	}
}

// overlapSAM is a SAM of one reference c1 (50 kb) whose bin-4681 records
// (the window [0, 16384)) come first, fillers of them, more than 5 MB of
// BAM; then 20 records crossing 16384 (bin 585), 8 records of bin 4681
// again, and 2,000 records after the window. When no BGZF block ends
// among the 20, the index merges the two runs of bin 4681 (their chunks
// start and end in one block, as htslib's compress_binning merges them),
// and that chunk, 5 MB long, overlaps the first chunk of bin 585.
func overlapSAM(fillers int) string {
	var b strings.Builder
	b.WriteString("@HD\tVN:1.6\tSO:coordinate\n@SQ\tSN:c1\tLN:50000\n")
	k := 0
	for j := range fillers {
		writeRead(&b, "f", k, 1+j*16000/fillers, 250)
		k++
	}
	for j := range 20 {
		writeRead(&b, "z", k, 16200+j, 250)
		k++
	}
	for j := range 8 {
		writeRead(&b, "z", k, 16220+j, 30)
		k++
	}
	for j := range 2000 {
		writeRead(&b, "t", k, 16400+j*16, 250)
		k++
	}
	return b.String()
}

// writeRead writes read prefix+i of c1 to b: n bases matching at pos,
// qualities I.
func writeRead(b *strings.Builder, prefix string, i, pos, n int) {
	seq := make([]byte, n)
	for j := range seq {
		seq[j] = "ACGT"[(pos+j)%4]
	}
	fmt.Fprintf(b, "%s%06d\t0\tc1\t%d\t60\t%dM\t*\t0\t0\t%s\t%s\n", prefix, i, pos, n, seq, strings.Repeat("I", n))
}

// TestServeGmodBamOverlappingChunks pins down a defect of @gmod/bam
// 7.1.17, not of cramfs (docs/clients.md): its optimizeChunks does not
// merge two overlapping chunks when the merged chunk would span 5 MB or
// more of compressed file, and it reads both whole, so the records where
// they overlap come twice. Whether a BAM's index has such chunks depends
// on where its BGZF blocks end, which differs between cramfs' framing
// and samtools'; each side meets it on some files: here the 28 records
// from the first bin-585 record to the last bin-4681 one come twice from
// cramfs' bytes only (as on htsjdk's mitoAlignmentStartTest CRAM), from
// samtools' only, or from both. The served index is samtools index of
// the served bytes, and samtools counts the records of every file right.
func TestServeGmodBamOverlappingChunks(t *testing.T) {
	requireMount(t)
	gm := installGmodBam(t)
	src := t.TempDir()
	cases := []struct {
		name                   string
		fillers                int
		cramfsRep, samtoolsRep int
	}{{"cramfs", 13085, 28, 0}, {"samtools", 13065, 0, 28}, {"both", 13005, 28, 28}}
	for _, c := range cases {
		sam := filepath.Join(t.TempDir(), c.name+".sam")
		must(t, os.WriteFile(sam, []byte(overlapSAM(c.fillers)), 0o644))
		cram := filepath.Join(src, c.name+".cram")
		mustSamtools(t, "view", "-C", "--no-PG", "--output-fmt-option", "no_ref=1",
			"--output-fmt-option", "seqs_per_slice=4000", "-o", cram, sam)
		st := filepath.Join(src, c.name+".samtools.bam")
		mustSamtools(t, "view", "-u", "--no-PG", "-o", st, cram)
		mustSamtools(t, "index", st)
	}
	srv := serveT(t, src, nil, ServeOptions{})
	for _, c := range cases {
		served := filepath.Join(t.TempDir(), "x.bam")
		_, bam := get(t, "GET", urlOf(srv, c.name+".bam"), nil)
		must(t, os.WriteFile(served, bam, 0o644))
		mustSamtools(t, "index", served)
		_, bai := get(t, "GET", urlOf(srv, c.name+".bam.bai"), nil)
		if want, err := os.ReadFile(served + ".bai"); err != nil || !bytes.Equal(bai, want) {
			t.Errorf("%s: the served .bai (%d bytes) is not samtools index of the served BAM (%d bytes, %v)", c.name, len(bai), len(want), err)
		}
		count := strings.TrimSpace(string(mustSamtools(t, "view", "-c", filepath.Join(src, c.name+".cram"))))
		n, err := strconv.Atoi(count)
		if err != nil {
			t.Fatalf("samtools view -c %s.cram: %q", c.name, count)
		}
		for _, f := range []struct {
			bam  string
			reps int
		}{{c.name + ".bam", c.cramfsRep}, {c.name + ".samtools.bam", c.samtoolsRep}} {
			if got := strings.TrimSpace(string(runClient(t, t.TempDir(), "samtools", "view", "-c", urlOf(srv, f.bam), "c1"))); got != count {
				t.Errorf("samtools view -c %s c1: %s records, want %s", f.bam, got, count)
			}
			if got, want := gm.count(t, urlOf(srv, f.bam), "c1", 0, 50000), fmt.Sprint(n+f.reps, " ", f.reps); got != want {
				t.Errorf("@gmod/bam %s c1: %q (records, repeats), want %q (%d records)", f.bam, got, want, n)
			}
		}
	}
}

// TestServePicard reads the served BAM over HTTP with Picard ViewSam
// (htsjdk, as GATK reads BAM): the records samtools reads from the CRAM,
// in order (name, flag, reference, position, mapping quality, CIGAR).
func TestServePicard(t *testing.T) {
	requireMount(t)
	pc := clientTool(t, "PicardCommandLine", "picard-tools")
	src := t.TempDir()
	ref := testdata("ref", "ce.fa")
	cram := filepath.Join(src, "x.cram")
	copyFile(t, testdata("cram", "ce_5b.3.0.cram"), cram)
	srv := serveT(t, src, []string{ref}, ServeOptions{})
	cmd := exec.Command(pc, "ViewSam", "--INPUT", urlOf(srv, "x.bam"), "--ALIGNMENT_STATUS", "All", "--PF_STATUS", "All", "--VERBOSITY", "ERROR")
	cmd.Dir = t.TempDir()
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("Picard ViewSam over http: %v\n%s", err, stderr.String())
	}
	fields := func(sam []byte) []string {
		var recs []string
		for _, l := range strings.Split(string(sam), "\n") {
			f := strings.Split(l, "\t")
			if len(f) < 11 || strings.HasPrefix(l, "@") {
				continue // the header, and what the Debian wrapper prints
			}
			recs = append(recs, strings.Join(f[:6], "\t"))
		}
		return recs
	}
	got, want := fields(out), fields(mustSamtools(t, "view", "-T", ref, cram))
	if len(want) == 0 || strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("Picard ViewSam over http:\n%s\nwant (samtools on the CRAM):\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}
