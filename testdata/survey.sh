#!/usr/bin/env bash
# survey.sh writes CRAMs with every writer and setting it knows from the
# htslib-test SAM files and testdata/sam/, converts each with cramfs and
# compares the uncompressed BAM stream with samtools 1.16's
# (samtools view -u --no-PG). It prints one line per file that is not equal
# and a table of counts per writer and setting. Nothing is kept.
#
#     bash testdata/survey.sh [OUT.tsv]
#
# Categories: equal; refused (samtools decodes it, cramfs fails);
# different (both decode, the streams differ); both-refuse (samtools fails
# too, and so does cramfs); accepted (samtools fails, cramfs does not).
# Files a writer cannot write are counted as write-failed.
set -uo pipefail
export LC_ALL=C REF_PATH=/nonexistent REF_CACHE=/nonexistent
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
src=${HTSLIB_TEST:-/usr/share/htslib-test/test}
st116=samtools
st123=${SAMTOOLS_NEW:-$here/../../shared/tools/samtools-1.23/samtools}
out=${1:-/dev/stdout}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

export PATH=$PATH:/usr/local/go/bin
(cd "$here/.." && CGO_ENABLED=0 go build -o "$work/cramfs" ./cmd/cramfs) || exit 1
cramfs=$work/cramfs

# Inputs: name, SAM, reference.
inputs=()
for sam in "$src"/*#*.sam; do
	b=$(basename "$sam") p=${b%%#*}
	[[ -e $src/$p.fa ]] && inputs+=("${b%.sam}	$sam	$src/$p.fa")
done
for sam in "$here"/sam/*.sam; do
	inputs+=("$(basename "${sam%.sam}")	$sam	$src/ce.fa")
done
if [[ -n ${LONG_SAM:-} ]]; then inputs+=("corner_long	$LONG_SAM	$src/ce.fa"); fi

mkdir -p "$work/ref"
for fa in "$src"/*.fa; do
	[[ -e $fa.fai ]] || continue
	cp "$fa" "$fa.fai" "$work/ref/"
	b=$(basename "$fa" .fa)
	samtools dict "$fa" -o "$work/ref/$b.dict" 2>/dev/null
done

# Writers and settings: label, then a command template with @IN@, @OUT@, @REF@.
WRITERS=(
	"samtools-1.16 3.0	$st116 view --no-PG -T @REF@ -O cram,version=3.0 -o @OUT@ @IN@"
	"samtools-1.16 3.0 sps=1	$st116 view --no-PG -T @REF@ -O cram,version=3.0,seqs_per_slice=1 -o @OUT@ @IN@"
	"samtools-1.16 3.0 embed_ref	$st116 view --no-PG -T @REF@ -O cram,version=3.0,embed_ref=1 -o @OUT@ @IN@"
	"samtools-1.16 3.0 no_ref	$st116 view --no-PG -T @REF@ -O cram,version=3.0,no_ref=1 -o @OUT@ @IN@"
	"samtools-1.16 3.0 multi_seq	$st116 view --no-PG -T @REF@ -O cram,version=3.0,seqs_per_slice=3,slices_per_container=2,multi_seq_per_slice=1 -o @OUT@ @IN@"
	"samtools-1.16 3.1 fast	$st116 view --no-PG -T @REF@ -O cram,version=3.1,fast -o @OUT@ @IN@"
	"samtools-1.16 3.1 normal	$st116 view --no-PG -T @REF@ -O cram,version=3.1,normal -o @OUT@ @IN@"
	"samtools-1.16 3.1 small	$st116 view --no-PG -T @REF@ -O cram,version=3.1,small -o @OUT@ @IN@"
	"samtools-1.16 3.1 archive	$st116 view --no-PG -T @REF@ -O cram,version=3.1,archive -o @OUT@ @IN@"
	"samtools-1.16 3.1 sps=1	$st116 view --no-PG -T @REF@ -O cram,version=3.1,seqs_per_slice=1 -o @OUT@ @IN@"
	"samtools-1.16 2.1	$st116 view --no-PG -T @REF@ -O cram,version=2.1 -o @OUT@ @IN@"
	"samtools-1.16 4.0	$st116 view --no-PG -T @REF@ -O cram,version=4.0 -o @OUT@ @IN@"
	"samtools-1.16 4.0 fast	$st116 view --no-PG -T @REF@ -O cram,version=4.0,fast -o @OUT@ @IN@"
	"samtools-1.16 4.0 small	$st116 view --no-PG -T @REF@ -O cram,version=4.0,small -o @OUT@ @IN@"
	"samtools-1.16 4.0 archive	$st116 view --no-PG -T @REF@ -O cram,version=4.0,archive -o @OUT@ @IN@"
	"samtools-1.16 4.0 sps=1	$st116 view --no-PG -T @REF@ -O cram,version=4.0,seqs_per_slice=1 -o @OUT@ @IN@"
	"samtools-1.16 4.0 embed_ref	$st116 view --no-PG -T @REF@ -O cram,version=4.0,embed_ref=1 -o @OUT@ @IN@"
	"samtools-1.16 4.0 no_ref	$st116 view --no-PG -T @REF@ -O cram,version=4.0,no_ref=1 -o @OUT@ @IN@"
	"samtools-1.16 4.0 multi_seq	$st116 view --no-PG -T @REF@ -O cram,version=4.0,seqs_per_slice=3,slices_per_container=2,multi_seq_per_slice=1 -o @OUT@ @IN@"
	"samtools-1.16 4.0 lossy_names	$st116 view --no-PG -T @REF@ -O cram,version=4.0,lossy_names=1 -o @OUT@ @IN@"
	"samtools-1.23 default	$st123 view --no-PG -T @REF@ -O cram -o @OUT@ @IN@"
	"samtools-1.23 3.0	$st123 view --no-PG -T @REF@ -O cram,version=3.0 -o @OUT@ @IN@"
	"samtools-1.23 3.1 small	$st123 view --no-PG -T @REF@ -O cram,small -o @OUT@ @IN@"
	"samtools-1.23 3.1 archive	$st123 view --no-PG -T @REF@ -O cram,archive -o @OUT@ @IN@"
	"samtools-1.23 3.1 sps=1	$st123 view --no-PG -T @REF@ -O cram,seqs_per_slice=1 -o @OUT@ @IN@"
	"samtools-1.23 2.1	$st123 view --no-PG -T @REF@ -O cram,version=2.1 -o @OUT@ @IN@"
	"samtools-1.23 4.0	$st123 view --no-PG -T @REF@ -O cram,version=4.0 -o @OUT@ @IN@"
	"samtools-1.23 4.0 archive	$st123 view --no-PG -T @REF@ -O cram,version=4.0,archive -o @OUT@ @IN@"
	"samtools-1.23 4.0 sps=1	$st123 view --no-PG -T @REF@ -O cram,version=4.0,seqs_per_slice=1 -o @OUT@ @IN@"
	"scramble 2.1	scramble -q -I sam -O cram -V2.1 -r @REF@ @IN@ @OUT@"
	"scramble 2.1 -e	scramble -q -I sam -O cram -V2.1 -e -r @REF@ @IN@ @OUT@"
	"scramble 2.1 -x	scramble -q -I sam -O cram -V2.1 -x -r @REF@ @IN@ @OUT@"
	"scramble 3.0	scramble -q -I sam -O cram -V3.0 -r @REF@ @IN@ @OUT@"
	"scramble 3.0 -9 -j -Z	scramble -q -I sam -O cram -V3.0 -9 -j -Z -r @REF@ @IN@ @OUT@"
	"scramble 3.0 -1	scramble -q -I sam -O cram -V3.0 -1 -r @REF@ @IN@ @OUT@"
	"scramble 3.0 -e	scramble -q -I sam -O cram -V3.0 -e -r @REF@ @IN@ @OUT@"
	"scramble 3.0 -x	scramble -q -I sam -O cram -V3.0 -x -r @REF@ @IN@ @OUT@"
	"scramble 3.0 -s 3 -S 2	scramble -q -I sam -O cram -V3.0 -s 3 -S 2 -r @REF@ @IN@ @OUT@"
	"scramble 3.0 -M -s 50	scramble -q -I sam -O cram -V3.0 -M -s 50 -r @REF@ @IN@ @OUT@"
	"scramble 3.0 -P -p	scramble -q -I sam -O cram -V3.0 -P -p -r @REF@ @IN@ @OUT@"
	"scramble 3.1	scramble -q -I sam -O cram -V3.1 -r @REF@ @IN@ @OUT@"
	"scramble 3.1 -X small	scramble -q -I sam -O cram -V3.1 -X small -r @REF@ @IN@ @OUT@"
	"scramble 3.1 -X archive	scramble -q -I sam -O cram -V3.1 -X archive -r @REF@ @IN@ @OUT@"
	"scramble 3.1 -a -f -T -j -Z	scramble -q -I sam -O cram -V3.1 -a -f -T -j -Z -9 -r @REF@ @IN@ @OUT@"
	"scramble 4.0	scramble -q -I sam -O cram -V4.0 -r @REF@ @IN@ @OUT@"
	"scramble 4.0 -e	scramble -q -I sam -O cram -V4.0 -e -r @REF@ @IN@ @OUT@"
	"scramble 4.0 -x	scramble -q -I sam -O cram -V4.0 -x -r @REF@ @IN@ @OUT@"
	"scramble 4.0 -1	scramble -q -I sam -O cram -V4.0 -1 -r @REF@ @IN@ @OUT@"
	"scramble 4.0 -9 -j -Z	scramble -q -I sam -O cram -V4.0 -9 -j -Z -r @REF@ @IN@ @OUT@"
	"scramble 4.0 -s 3 -S 2	scramble -q -I sam -O cram -V4.0 -s 3 -S 2 -r @REF@ @IN@ @OUT@"
	"scramble 4.0 -M -s 50	scramble -q -I sam -O cram -V4.0 -M -s 50 -r @REF@ @IN@ @OUT@"
	"scramble 4.0 -P -p	scramble -q -I sam -O cram -V4.0 -P -p -r @REF@ @IN@ @OUT@"
	"scramble 4.0 -X small	scramble -q -I sam -O cram -V4.0 -X small -r @REF@ @IN@ @OUT@"
	"scramble 4.0 -X archive	scramble -q -I sam -O cram -V4.0 -X archive -r @REF@ @IN@ @OUT@"
	"scramble 4.0 -n	scramble -q -I sam -O cram -V4.0 -n -r @REF@ @IN@ @OUT@"
	"picard SamFormatConverter	PicardCommandLine SamFormatConverter -I @IN@ -O @OUT@ -R @REF@ --VALIDATION_STRINGENCY SILENT --VERBOSITY ERROR"
)
[[ -n ${ONLY:-} ]] && { keep=(); for w in "${WRITERS[@]}"; do [[ ${w%%	*} == *$ONLY* ]] && keep+=("$w"); done; WRITERS=("${keep[@]}"); }

md5() { md5sum | cut -d' ' -f1; }
declare -A count
printf 'writer\tinput\tresult\tdetail\n' >"$work/rows.tsv"
for w in "${WRITERS[@]}"; do
	label=${w%%	*} tmpl=${w#*	}
	for in in "${inputs[@]}"; do
		IFS=$'\t' read -r name sam fa <<<"$in"
		ref=$work/ref/$(basename "$fa")
		cram=$work/x.cram
		rm -f "$cram"
		cmd=${tmpl//@IN@/$sam}
		cmd=${cmd//@OUT@/$cram}
		cmd=${cmd//@REF@/$ref}
		if ! timeout 300 $cmd >/dev/null 2>"$work/werr" || [[ ! -s $cram ]]; then
			r=write-failed detail=$(head -c 200 "$work/werr" | tr '\n\t' '  ')
		else
			want=$(set -o pipefail; $st116 view -u --no-PG -T "$ref" "$cram" 2>"$work/serr" | gzip -dc | md5)
			src_ok=$?
			got=$(set -o pipefail; timeout 300 "$cramfs" convert --level 0 -T "$ref" "$cram" 2>"$work/cerr" | gzip -dc 2>/dev/null | md5)
			c_ok=$?
			detail=$(head -c 300 "$work/cerr" | tr '\n\t' '  ')
			if ((src_ok == 0 && c_ok == 0)); then
				[[ $want == "$got" ]] && r=equal || r=different
			elif ((src_ok == 0)); then r=refused
			elif ((c_ok != 0)); then r=both-refuse detail="samtools: $(head -c 150 "$work/serr" | tr '\n\t' '  ') cramfs: $detail"
			else r=accepted detail="samtools: $(head -c 200 "$work/serr" | tr '\n\t' '  ')"
			fi
		fi
		count[$label/$r]=$((${count[$label/$r]:-0} + 1))
		printf '%s\t%s\t%s\t%s\n' "$label" "$name" "$r" "$detail" >>"$work/rows.tsv"
		[[ $r == equal ]] || printf '%s\t%s\t%s\t%s\n' "$label" "$name" "$r" "$detail" >&2
	done
done
{
	printf '# writer/setting\tequal\trefused\tdifferent\tboth-refuse\taccepted\twrite-failed\n'
	for w in "${WRITERS[@]}"; do
		l=${w%%	*}
		printf '%s' "$l"
		for r in equal refused different both-refuse accepted write-failed; do printf '\t%s' "${count[$l/$r]:-0}"; done
		printf '\n'
	done
	cat "$work/rows.tsv"
} >"$out"
