#!/usr/bin/env bash
# make.sh regenerates the project's small CRAM fixtures under testdata/cram/
# and the reference FASTA files under testdata/ref/.
#
# Needs samtools (Debian's 1.16.1 is the oracle) and Debian's htslib-test
# package (SAM files and references under /usr/share/htslib-test/test, or
# $HTSLIB_TEST). Deterministic and idempotent: it removes and rewrites
# testdata/cram/ and testdata/ref/ and nothing else. Run it from anywhere:
#
#     bash testdata/make.sh
#
# For every input set below it writes one CRAM per setting (see VARIANTS),
# and for each CRAM X:
#   X.expected.sam  samtools view -h --no-PG -T ref X.cram
#   X.bam.md5       md5 of the uncompressed BAM stream of
#                   samtools view -u --no-PG -T ref X.cram (BGZF inflated by gzip -dc)
# plus cram/manifest.tsv, whose columns follow the shared corpus's
# cram_manifest.tsv (paths are relative to testdata/) with an extra last
# column "options" saying how the file was written.
#
# A second part writes CRAMs with other writers (see WRITERS): scramble
# (Debian's staden-io-lib-utils, installed when missing and run as root),
# htsjdk through Debian's picard-tools (SamFormatConverter, likewise) and the
# newest samtools ($SAMTOOLS_NEW, default ../shared/tools/samtools-1.23/samtools
# from the project root), from the sets above and from SAM files of corner
# cases (sam/*.sam, and long CIGARs generated here); their expected outputs
# are still samtools 1.16's. The tests read only the committed files: no
# Java, scramble or newer samtools is needed to run them.
#
# Input SAM headers get M5 tags on their @SQ lines before conversion. Writers
# also record UR:<absolute path of the reference> in the header; they are
# given the references at a fixed path ($wref below), so that the fixtures do
# not depend on where the tree lives.
set -euo pipefail
export LC_ALL=C
# Nothing may come from the network or a local cache: only -T.
export REF_PATH=/nonexistent REF_CACHE=/nonexistent

src=${HTSLIB_TEST:-/usr/share/htslib-test/test}
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
cd "$here"

# need CMD PACKAGE: installs the Debian package when CMD is missing.
need() {
	command -v "$1" >/dev/null && return
	if [[ $(id -u) != 0 ]]; then
		echo "make.sh: $1 not found (apt-get install $2)" >&2
		exit 1
	fi
	apt-get install -y --no-install-recommends "$2" >&2 ||
		{ apt-get update >&2 && apt-get install -y --no-install-recommends "$2" >&2; } || exit 1
}
need samtools samtools
need scramble staden-io-lib-utils
need PicardCommandLine picard-tools
samtools_new=${SAMTOOLS_NEW:-$here/../../shared/tools/samtools-1.23/samtools}
[[ -x $samtools_new ]] || { echo "make.sh: $samtools_new not found (set SAMTOOLS_NEW to a newer samtools)" >&2; exit 1; }
[[ -d $src ]] || { echo "make.sh: $src not found (apt-get install htslib-test)" >&2; exit 1; }
case $(samtools --version | head -1) in
"samtools 1.16.1") ;;
*) echo "make.sh: warning: expected outputs come from $(samtools --version | head -1), not samtools 1.16.1" >&2 ;;
esac

# Input sets: name, SAM file in $src, reference FASTA in $src, records kept (0: all).
#   ce_1000   one reference, 500 single-end reads (first half of ce#1000.sam)
#   ce_5b     reads on five references, a secondary alignment
#   ce_unmap2 mapped reads followed by unplaced unmapped reads, @RG and @PG lines
#   ce_supp   a read pair with supplementary alignments
#   xx_tlen   read pairs on two references (mate fields, template lengths)
SETS=(
	"ce_1000	ce#1000.sam	ce.fa	500"
	"ce_5b	ce#5b.sam	ce.fa	0"
	"ce_unmap2	ce#unmap2.sam	ce.fa	0"
	"ce_supp	ce#supp.sam	ce.fa	0"
	"xx_tlen	xx#tlen.sam	xx.fa	0"
)

# Settings: variant name, then the samtools output format string.
# SPS in a format string is replaced by a per-set seqs_per_slice that gives
# about ten slices (at least two records each), three slices per container.
VARIANTS=(
	"3.0	cram,version=3.0"
	"3.0-multislice	cram,version=3.0,seqs_per_slice=SPS,slices_per_container=3"
	"3.0-embedref	cram,version=3.0,embed_ref=1"
	"3.0-noref	cram,version=3.0,no_ref=1"
	"3.0-lossynames	cram,version=3.0,lossy_names=1"
	"3.1-fast	cram,version=3.1,fast"
	"3.1-normal	cram,version=3.1,normal"
	"3.1-small	cram,version=3.1,small"
	"3.1-archive	cram,version=3.1,archive"
	"2.1	cram,version=2.1"
	"4.0	cram,version=4.0"
	"4.0-multislice	cram,version=4.0,seqs_per_slice=SPS,slices_per_container=3"
	"4.0-embedref	cram,version=4.0,embed_ref=1"
	"4.0-noref	cram,version=4.0,no_ref=1"
	"4.0-lossynames	cram,version=4.0,lossy_names=1"
	"4.0-fast	cram,version=4.0,fast"
	"4.0-small	cram,version=4.0,small"
	"4.0-archive	cram,version=4.0,archive"
)

rm -rf cram ref
mkdir -p cram ref
work=$(mktemp -d)
wref=/tmp/cramfs-testdata-ref
rm -rf "$wref"
mkdir -p "$wref"
trap 'rm -rf "$work" "$wref"' EXIT

manifest=cram/manifest.tsv
printf 'cram\tversion\tbytes\treference\tsamtools_rc\trecords\texpected_sam_md5\tbam_payload_md5\tbam_payload_md5_decode_md0\tstderr\toptions\n' >"$manifest"

md5() { md5sum | cut -d' ' -f1; }

# expect CRAM REF OPTIONS: writes CRAM.expected.sam and CRAM.bam.md5 and a
# manifest row. A non-zero samtools exit is recorded, not fatal.
expect() {
	local cram=$1 ref=$2 opts=$3 base=${1%.cram} rc version bytes records sammd5 bammd5 bammd5nomd errs
	set +e
	samtools view -h --no-PG -T "$ref" "$cram" >"$base.expected.sam" 2>"$work/err"
	rc=$?
	bammd5=$(samtools view -u --no-PG -T "$ref" "$cram" 2>/dev/null | gzip -dc 2>/dev/null | md5)
	bammd5nomd=$(samtools view -u --no-PG --input-fmt-option decode_md=0 -T "$ref" "$cram" 2>/dev/null |
		gzip -dc 2>/dev/null | md5)
	set -e
	echo "$bammd5" >"$base.bam.md5"
	version=$(od -An -tu1 -j4 -N2 "$cram" | awk '{print $1 "." $2}')
	bytes=$(wc -c <"$cram")
	records=$(grep -vc '^@' "$base.expected.sam" || true)
	sammd5=$(md5 <"$base.expected.sam")
	errs=$(tr '\n\t' '  ' <"$work/err")
	printf '%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n' "$cram" "$version" "$bytes" "$ref" "$rc" \
		"$records" "$sammd5" "$bammd5" "$bammd5nomd" "$errs" "$opts" >>"$manifest"
}

# add_m5 SAM REF: the SAM on stdout with M5 tags added to @SQ lines lacking one.
add_m5() {
	samtools dict "$2" | awk -F'\t' '
		FNR == NR { if ($1 == "@SQ") { for (i = 2; i <= NF; i++) { if ($i ~ /^SN:/) sn = substr($i, 4); if ($i ~ /^M5:/) m5[sn] = $i } } next }
		$1 == "@SQ" && $0 !~ /\tM5:/ { for (i = 2; i <= NF; i++) if ($i ~ /^SN:/ && (substr($i, 4) in m5)) { print $0 "\t" m5[substr($i, 4)]; next } }
		{ print }' - "$1"
}

for set in "${SETS[@]}"; do
	IFS=$'\t' read -r name sam fa keep <<<"$set"
	if [[ ! -e ref/$fa ]]; then
		cp "$src/$fa" "ref/$fa"
		cp "$src/$fa.fai" "ref/$fa.fai"
		cp "ref/$fa" "ref/$fa.fai" "$wref/"
		# picard wants a dictionary beside the reference.
		samtools dict "ref/$fa" -o "$wref/${fa%.fa}.dict"
	fi
	in=$work/$name.sam
	if ((keep > 0)); then
		awk -v keep="$keep" '/^@/ { print; next } n++ < keep' "$src/$sam" >"$work/raw.sam"
	else
		cp "$src/$sam" "$work/raw.sam"
	fi
	add_m5 "$work/raw.sam" "ref/$fa" >"$in"
	n=$(grep -vc '^@' "$in")
	sps=$((n / 10 >= 2 ? n / 10 : 2))
	for v in "${VARIANTS[@]}"; do
		IFS=$'\t' read -r vname fmt <<<"$v"
		fmt=${fmt//SPS/$sps}
		out=cram/$name.$vname.cram
		# 3.1 and 4.0 writing warn that they are drafts; that is expected.
		samtools view --no-PG -T "$wref/$fa" -O "$fmt" -o "$out" "$in" 2>"$work/werr" ||
			{ cat "$work/werr" >&2; exit 1; }
		expect "$out" "ref/$fa" "from $sam: $fmt"
	done
done

# Other writers. Corner-case inputs, reference ce.fa unless given:
#   corner_aux      every aux type (A c C s S i I f Z H) at its bounds, B arrays
#                   of every subtype, empty arrays and strings, a 300-element array
#   corner_seq      `*` sequence and/or quality, hard-clip-only and zero-length
#                   CIGAR operations, = X N P H S, IUPAC and lowercase bases,
#                   reads past and beyond a contig's end, placed unmapped reads
#   corner_unmapped unplaced unmapped reads only, some without sequence
#   corner_header   a header and no records
#   corner_rg       RG, MD and NM before, between and after other tags, right
#                   and wrong MD/NM, an RG missing from the header, reverse
#                   reads (CRAM 4.0 stores these as placeholders in place)
#   corner_long     reads of 20000 and 66000 CIGAR operations (the latter is
#                   stored in a CG tag in BAM), generated below
#   xx_minimal      xx#minimal.sam: reads with no sequence, quality or bases
#   ce_1, xx_pair   ce#1.sam, xx#pair.sam as they are, without M5 tags: CRAM 2.1
#                   writers declare the container of so short a header text 2
#                   bytes shorter than its block
#   ce_1000         (group slices) as written above, in slices of one read:
#                   both writers then make multi-reference slices, each
#                   covering a few hundred bases of a 1 Mb contig
awk 'function rd(name, pos, ops, op,   i, cig, seq, qual) {
		for (i = 0; i < ops / 2; i++) {
			cig = cig "1M1" op
			seq = seq substr("ACGT", i % 4 + 1, 1) (op == "I" ? "T" : "")
			qual = qual "I" (op == "I" ? "5" : "")
		}
		printf "%s\t0\tCHROMOSOME_I\t%d\t40\t%s\t*\t0\t0\t%s\t%s\n", name, pos, cig, seq, qual
	}
	BEGIN {
		print "@HD\tVN:1.6\tSO:coordinate"
		print "@SQ\tSN:CHROMOSOME_I\tLN:1009800"
		rd("ops20000", 10000, 20000, "I")
		rd("ops66000", 20000, 66000, "D")
	}' >"$work/corner_long.sam"
OTHER_SETS=(
	"corner_aux	sam/corner_aux.sam	ce.fa	all"
	"corner_seq	sam/corner_seq.sam	ce.fa	all"
	"corner_unmapped	sam/corner_unmapped.sam	ce.fa	all"
	"corner_header	sam/corner_header.sam	ce.fa	all"
	"corner_rg	sam/corner_rg.sam	ce.fa	all"
	"xx_minimal	$src/xx#minimal.sam	xx.fa	all"
	"corner_long	$work/corner_long.sam	ce.fa	long"
	"ce_5b	$work/ce_5b.sam	ce.fa	other"
	"ce_1	$src/ce#1.sam	ce.fa	short"
	"xx_pair	$src/xx#pair.sam	xx.fa	short"
	"xx_tlen	$work/xx_tlen.sam	xx.fa	other"
	"ce_1000	$work/ce_1000.sam	ce.fa	slices"
)
# Writers: variant name, the groups of sets it applies to (all: corner sets;
# long: corner_long; other: sets of the first part, which samtools 1.16
# already wrote; short: short headers; slices: small multi-reference slices), and the command (@IN@, @OUT@, @REF@ replaced). scramble -q and
# --no-PG keep @PG lines out; picard adds none.
WRITERS=(
	"3.0-sps1	all,slices	samtools view --no-PG -T @REF@ -O cram,version=3.0,seqs_per_slice=1 -o @OUT@ @IN@"
	"3.0	all,long	samtools view --no-PG -T @REF@ -O cram,version=3.0 -o @OUT@ @IN@"
	"3.0-noref	all	samtools view --no-PG -T @REF@ -O cram,version=3.0,no_ref=1 -o @OUT@ @IN@"
	"3.1-archive	all	samtools view --no-PG -T @REF@ -O cram,version=3.1,archive -o @OUT@ @IN@"
	"3.1-sps1	all	samtools view --no-PG -T @REF@ -O cram,version=3.1,seqs_per_slice=1 -o @OUT@ @IN@"
	"2.1	all,short	samtools view --no-PG -T @REF@ -O cram,version=2.1 -o @OUT@ @IN@"
	"st1.23-3.1	all,other	$samtools_new view --no-PG -T @REF@ -O cram -o @OUT@ @IN@"
	"st1.23-3.0-sps1	all,other	$samtools_new view --no-PG -T @REF@ -O cram,version=3.0,seqs_per_slice=1 -o @OUT@ @IN@"
	"st1.23-2.1	short	$samtools_new view --no-PG -T @REF@ -O cram,version=2.1 -o @OUT@ @IN@"
	"scramble-2.1	all,other,short	scramble -q -I sam -O cram -V2.1 -r @REF@ @IN@ @OUT@"
	"scramble-2.1-e	all,other,short	scramble -q -I sam -O cram -V2.1 -e -r @REF@ @IN@ @OUT@"
	"scramble-2.1-x	all,other,short	scramble -q -I sam -O cram -V2.1 -x -r @REF@ @IN@ @OUT@"
	"scramble-3.0-9jZ	all,other	scramble -q -I sam -O cram -V3.0 -9 -j -Z -r @REF@ @IN@ @OUT@"
	"scramble-3.0-s3S2	all,other	scramble -q -I sam -O cram -V3.0 -s 3 -S 2 -r @REF@ @IN@ @OUT@"
	"scramble-3.0-s1S50	slices	scramble -q -I sam -O cram -V3.0 -s 1 -S 50 -r @REF@ @IN@ @OUT@"
	"scramble-3.0-Ms50	other	scramble -q -I sam -O cram -V3.0 -M -s 50 -r @REF@ @IN@ @OUT@"
	"scramble-3.0-e	other	scramble -q -I sam -O cram -V3.0 -e -r @REF@ @IN@ @OUT@"
	"scramble-3.1-archive	all,other	scramble -q -I sam -O cram -V3.1 -X archive -r @REF@ @IN@ @OUT@"
	"scramble-3.1-afTjZ	all,other	scramble -q -I sam -O cram -V3.1 -a -f -T -j -Z -9 -r @REF@ @IN@ @OUT@"
	"4.0	all,long	samtools view --no-PG -T @REF@ -O cram,version=4.0 -o @OUT@ @IN@"
	"4.0-sps1	all	samtools view --no-PG -T @REF@ -O cram,version=4.0,seqs_per_slice=1 -o @OUT@ @IN@"
	"4.0-noref	all	samtools view --no-PG -T @REF@ -O cram,version=4.0,no_ref=1 -o @OUT@ @IN@"
	"4.0-embedref	all	samtools view --no-PG -T @REF@ -O cram,version=4.0,embed_ref=1 -o @OUT@ @IN@"
	"4.0-archive	all	samtools view --no-PG -T @REF@ -O cram,version=4.0,archive -o @OUT@ @IN@"
	"st1.23-4.0	all,other	$samtools_new view --no-PG -T @REF@ -O cram,version=4.0 -o @OUT@ @IN@"
	"st1.23-4.0-sps1	all	$samtools_new view --no-PG -T @REF@ -O cram,version=4.0,seqs_per_slice=1 -o @OUT@ @IN@"
	"scramble-4.0	all,other	scramble -q -I sam -O cram -V4.0 -r @REF@ @IN@ @OUT@"
	"scramble-4.0-e	other	scramble -q -I sam -O cram -V4.0 -e -r @REF@ @IN@ @OUT@"
	"scramble-4.0-x	all,other	scramble -q -I sam -O cram -V4.0 -x -r @REF@ @IN@ @OUT@"
	"scramble-4.0-9jZ	all,other	scramble -q -I sam -O cram -V4.0 -9 -j -Z -r @REF@ @IN@ @OUT@"
	"scramble-4.0-s3S2	all,other	scramble -q -I sam -O cram -V4.0 -s 3 -S 2 -r @REF@ @IN@ @OUT@"
	"scramble-4.0-s1S50	slices	scramble -q -I sam -O cram -V4.0 -s 1 -S 50 -r @REF@ @IN@ @OUT@"
	"scramble-4.0-Ms50	other	scramble -q -I sam -O cram -V4.0 -M -s 50 -r @REF@ @IN@ @OUT@"
	"scramble-4.0-archive	all,other	scramble -q -I sam -O cram -V4.0 -X archive -r @REF@ @IN@ @OUT@"
	"scramble-4.0-Pp	all	scramble -q -I sam -O cram -V4.0 -P -p -r @REF@ @IN@ @OUT@"
	"picard	all,other	PicardCommandLine SamFormatConverter -I @IN@ -O @OUT@ -R @REF@ --VALIDATION_STRINGENCY SILENT --VERBOSITY ERROR"
)
for set in "${OTHER_SETS[@]}"; do
	IFS=$'\t' read -r name sam fa group <<<"$set"
	in=$work/other.$name.sam
	if [[ $group == short ]]; then cp "$sam" "$in"; else add_m5 "$sam" "ref/$fa" >"$in"; fi
	for w in "${WRITERS[@]}"; do
		IFS=$'\t' read -r vname groups tmpl <<<"$w"
		[[ ,$groups, == *,$group,* ]] || continue
		out=cram/$name.$vname.cram
		cmd=${tmpl//@IN@/$in}
		cmd=${cmd//@OUT@/$out}
		cmd=${cmd//@REF@/$wref/$fa}
		desc=${tmpl//@IN@/$(basename "$sam")}
		desc=${desc//@OUT@/$(basename "$out")}
		desc=${desc//@REF@/$fa}
		desc=${desc//$samtools_new/samtools-1.23}
		# Unquoted on purpose: the paths above hold no blanks.
		if ! $cmd >"$work/werr" 2>&1 || [[ ! -s $out ]]; then
			echo "make.sh: $out not written, left out: $(head -c 300 "$work/werr" | tr '\n' ' ')" >&2
			rm -f "$out"
			continue
		fi
		expect "$out" "ref/$fa" "$desc"
	done
done

# CRAM 4.0's transforms, which htslib 1.16 reads and no writer emits:
# testdata/xform4 (go run) rewrites 4.0 fixtures written above to use XRLE
# for QS, XPACK for BA and MQ, XDELTA for RL and fixed-length tag values
# (XFORM4_ONLY=NAME: that one alone), records unchanged. htslib 1.16 caches
# what XRLE and XPACK expand past the end of an array (block_by_id[512 +
# codec id] of 512 entries), so samtools decodes such files right only by
# luck of the heap, and crashes on some: a rewrite is kept only when
# samtools decodes it to the BAM stream of its source.
command -v go >/dev/null || export PATH=$PATH:/usr/local/go/bin
XFORMS=(
	"ce_unmap2.4.0	"
	"corner_rg.4.0	"
	"corner_aux.4.0	"
	"corner_unmapped.4.0	"
	"xx_tlen.4.0	"
	"ce_1000.4.0-multislice	XPACK MQ"
	"ce_5b.4.0	XDELTA tags"
)
for x in "${XFORMS[@]}"; do
	IFS=$'\t' read -r base only <<<"$x"
	suffix=xform4
	[[ -n $only ]] && suffix=xform4-$(tr 'A-Z ' 'a-z-' <<<"$only")
	out=cram/${base}.$suffix.cram
	ref=$(awk -F'\t' -v c="cram/$base.cram" '$1 == c { print $4 }' "$manifest")
	if ! (cd .. && XFORM4_ONLY=$only go run ./testdata/xform4 "testdata/cram/$base.cram" "testdata/$out") >"$work/xf" 2>&1; then
		echo "make.sh: $out not written, left out: $(head -c 300 "$work/xf")" >&2
		rm -f "$out"
		continue
	fi
	got=$(samtools view -u --no-PG -T "$ref" "$out" 2>/dev/null | gzip -dc 2>/dev/null | md5)
	if [[ $got != "$(cat "cram/$base.bam.md5")" ]]; then
		echo "make.sh: $out left out: samtools 1.16 does not decode it as $base.cram" >&2
		rm -f "$out"
		continue
	fi
	expect "$out" "$ref" "cram/$base.cram rewritten by testdata/xform4: $(cat "$work/xf")"
done

# The corrupt fixture: ce_1000.3.0.cram with one byte flipped (XOR 0xff) in
# the middle of the largest external data block (content type 4) of the first
# data container. Its CRC32 no longer matches, and its content decodes to
# garbage: a reader must fail with an error, not return wrong records. The
# offset, block and content id are printed and recorded in the manifest.
corrupt_src=cram/ce_1000.3.0.cram
corrupt=cram/corrupt.ce_1000.3.0.cram
cp "$corrupt_src" "$corrupt"
mapfile -t B < <(od -An -v -tu1 "$corrupt_src" | tr -s ' ' '\n' | sed '/^$/d')
pos=0
itf8() { # value and length of the ITF8 at $pos into V, L
	local b0=${B[pos]}
	if ((b0 < 0x80)); then V=$b0 L=1
	elif ((b0 < 0xc0)); then V=$(((b0 & 0x3f) << 8 | B[pos + 1])) L=2
	elif ((b0 < 0xe0)); then V=$(((b0 & 0x1f) << 16 | B[pos + 1] << 8 | B[pos + 2])) L=3
	elif ((b0 < 0xf0)); then V=$(((b0 & 0x0f) << 24 | B[pos + 1] << 16 | B[pos + 2] << 8 | B[pos + 3])) L=4
	else V=$(((b0 & 0x0f) << 28 | B[pos + 1] << 20 | B[pos + 2] << 12 | B[pos + 3] << 4 | (B[pos + 4] & 0x0f))) L=5
	fi
	pos=$((pos + L))
}
ltf8_skip() { # skip the LTF8 at $pos: its length is the count of leading 1 bits + 1
	local b0=${B[pos]} n=1
	while ((n < 9 && (b0 << (n - 1)) & 0x80)); do n=$((n + 1)); done
	pos=$((pos + n))
}
container_header() { # parse a CRAM 3 container header at $pos; sets CLEN, NBLOCKS
	CLEN=$((B[pos] | B[pos + 1] << 8 | B[pos + 2] << 16 | B[pos + 3] << 24))
	pos=$((pos + 4))
	itf8; itf8; itf8; itf8 # ref id, start, span, records
	ltf8_skip; ltf8_skip  # record counter, bases
	itf8; NBLOCKS=$V
	itf8; local nl=$V i
	for ((i = 0; i < nl; i++)); do itf8; done
	pos=$((pos + 4)) # CRC32
}
pos=26 # after the file definition
container_header
pos=$((pos + CLEN)) # skip the SAM header container
container_header
best_off=-1 best_size=0 best_id=-1
for ((blk = 0; blk < NBLOCKS; blk++)); do
	ctype=${B[pos + 1]}
	pos=$((pos + 2))
	itf8; cid=$V
	itf8; csize=$V
	itf8 # raw size
	if ((ctype == 4 && csize > best_size)); then
		best_off=$((pos + csize / 2)) best_size=$csize best_id=$cid
	fi
	pos=$((pos + csize + 4))
done
((best_off >= 0)) || { echo "make.sh: no external block found in $corrupt_src" >&2; exit 1; }
flipped=$((B[best_off] ^ 0xff))
printf "$(printf '\\%03o' "$flipped")" | dd of="$corrupt" bs=1 seek="$best_off" conv=notrunc status=none
echo "make.sh: $corrupt: byte $best_off (${B[best_off]} -> $flipped) in external block content id $best_id ($best_size bytes)"
expect "$corrupt" ref/ce.fa "copy of $corrupt_src, byte at offset $best_off XOR 0xff (middle of external block content id $best_id, $best_size bytes, first data container)"

echo "make.sh: wrote $(($(wc -l <"$manifest") - 1)) CRAM files, $(du -sk cram ref | awk '{s += $1} END {print s}') KiB in cram/ and ref/"
