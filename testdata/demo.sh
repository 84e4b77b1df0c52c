#!/usr/bin/env bash
# Mounts the bundled example CRAMs (testdata/cram) with cramfs and reads them as BAM with
# samtools, side by side with samtools reading the CRAM itself. Installs what is missing
# (samtools, fuse3) with apt-get when run as root. Leaves nothing mounted and writes nothing
# into the source tree.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."

need=()
command -v samtools >/dev/null 2>&1 || need+=(samtools)
command -v fusermount3 >/dev/null 2>&1 || need+=(fuse3)
if ((${#need[@]})); then
	if [ "$(id -u)" = 0 ]; then
		apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${need[@]}" >/dev/null
	else
		echo "demo: please install ${need[*]} (apt-get install ${need[*]})" >&2
		exit 1
	fi
fi
command -v go >/dev/null 2>&1 || export PATH=$PATH:/usr/local/go/bin

work=$(mktemp -d)
mnt=$work/mnt
mkdir -p "$mnt"
CGO_ENABLED=0 go build -o "$work/cramfs" ./cmd/cramfs
export REF_PATH=/nonexistent REF_CACHE=/nonexistent # nothing from the network or a shared cache

"$work/cramfs" mount -T testdata/ref/ce.fa -T testdata/ref/xx.fa --cache-dir "$work/cache" \
	testdata/cram "$mnt" 2>"$work/mount.log" &
pid=$!
cleanup() {
	kill -TERM "$pid" 2>/dev/null || true
	wait "$pid" 2>/dev/null || true
	"$work/cramfs" unmount "$mnt" 2>/dev/null || true
	rm -rf "$work"
}
trap cleanup EXIT
for _ in $(seq 100); do [ -e "$mnt/ce_5b.3.1-archive.bam" ] && break; sleep 0.1; done

cram=testdata/cram/ce_5b.3.1-archive.cram
bam=$mnt/ce_5b.3.1-archive.bam
echo "== $cram, mounted as $bam"
ls -l "$mnt"/ce_5b.3.1-archive.*
echo
echo "== samtools view of the mounted BAM (first 3 records)"
samtools view "$bam" | head -3 | cut -c1-150
echo
echo "== samtools idxstats through the synthesized .bai"
samtools idxstats "$bam"
echo
a=$(samtools view -h --no-PG "$bam" | md5sum | cut -d' ' -f1)
b=$(samtools view -h --no-PG -T testdata/ref/ce.fa "$cram" | md5sum | cut -d' ' -f1)
echo "== samtools view -h of the BAM: $a; of the CRAM: $b"
if [ "$a" = "$b" ]; then echo "identical"; else echo "DIFFERENT" >&2; exit 1; fi
