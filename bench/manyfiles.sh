#!/usr/bin/env bash
# Measures a mount of many small CRAMs with a GRCh38-sized header (3,366
# @SQ lines): the time of `ls -l` over the mount once the files are indexed,
# and the mount's RSS after listing them and reading every BAM and BAI.
# Not a test: run it by hand on a quiet machine.
#   bash bench/manyfiles.sh [N] [CRAMFS_BINARY] [--cache-size value]
set -euo pipefail
N=${1:-2000}
BIN=${2:-}
CACHE=${3:-256M}
WORK=${WORK:-/tmp/cramfs-manyfiles}
here=$(cd "$(dirname "$0")/.." && pwd)
if [[ -z $BIN ]]; then
  BIN=$WORK/cramfs
  (cd "$here" && go build -o "$BIN" ./cmd/cramfs)
fi
mkdir -p "$WORK/src"
if [[ ! -s $WORK/one.cram ]]; then
  {
    printf '@HD\tVN:1.6\tSO:coordinate\n'
    for i in $(seq 1 3366); do
      m5=$(printf '%032x' "$i")
      printf '@SQ\tSN:chrUn_KI27%05dv1_decoy\tLN:%d\tM5:%s\tAS:GRCh38\tUR:file:///refs/GRCh38_full_analysis_set_plus_decoy_hla.fa\n' "$i" $((100000 + i * 977)) "$m5"
    done
    for j in $(seq 1 8); do
      printf 'r%d\t0\tchrUn_KI2700001v1_decoy\t%d\t60\t10M\t*\t0\t0\tACGTACGTAC\tIIIIIIIIII\n' "$j" $((j * 100))
    done
  } > "$WORK/one.sam"
  samtools view -C --output-fmt-option no_ref=1 -o "$WORK/one.cram" "$WORK/one.sam"
fi
have=$(find "$WORK/src" -name '*.cram' | wc -l)
for i in $(seq "$((have + 1))" "$N"); do
  cp "$WORK/one.cram" "$WORK/src/f$i.cram"
  touch -d "@$((1700000000 + i))" "$WORK/src/f$i.cram" # each its own version
done
rm -rf "$WORK/cache"
echo "indexing $N files"
/usr/bin/time -f 'index: %e s, %M KiB peak' "$BIN" index --cache-dir "$WORK/cache" "$WORK/src" >/dev/null 2>"$WORK/index.log"
mkdir -p "$WORK/mnt"
"$BIN" mount --cache-dir "$WORK/cache" --cache-size "$CACHE" "$WORK/src" "$WORK/mnt" 2>"$WORK/mount.log" &
pid=$!
trap 'fusermount3 -u "$WORK/mnt" 2>/dev/null || true; wait $pid 2>/dev/null || true' EXIT
for _ in $(seq 100); do mountpoint -q "$WORK/mnt" && break; sleep 0.1; done
rss() {
  awk '/^VmRSS|^VmHWM/ {printf "%s %d MiB  ", $1, $2/1024}' "/proc/$pid/status"
  # CPU seconds of the mount so far (utime + stime): wall times on a loaded machine mislead.
  awk -v hz="$(getconf CLK_TCK)" '{printf "mount CPU %.2f s", ($14 + $15) / hz}' "/proc/$pid/stat"
  echo "  (load $(cut -d' ' -f1 /proc/loadavg))"
}
echo "mounted: $(rss)"
s=$(date +%s.%N); ls -l "$WORK/mnt" >/dev/null; e=$(date +%s.%N)
echo "ls -l of $N files (first): $(echo "$e - $s" | bc) s; $(rss)"
s=$(date +%s.%N); ls -l "$WORK/mnt" >/dev/null; e=$(date +%s.%N)
echo "ls -l again: $(echo "$e - $s" | bc) s; $(rss)"
s=$(date +%s.%N); cat "$WORK/mnt"/*.bam "$WORK/mnt"/*.bai >/dev/null; e=$(date +%s.%N)
echo "read every BAM and BAI: $(echo "$e - $s" | bc) s; $(rss)"
