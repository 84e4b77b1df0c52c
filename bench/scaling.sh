#!/bin/bash
# bench/scaling.sh: the measurements behind bench/archive/SCALING.md.
#
# For each thread count (default 1 and 2) it runs, on one CRAM of the
# benchmark dataset:
#   - convert: `cramfs convert -@ N --cpuprofile` to a file in OUT;
#   - scan + mounted read: `cramfs mount -@ N --cpuprofile` with an empty
#     cache dir, then `stat` of the BAM (the open scans the file: layout +
#     BAI) and `dd` of the whole BAM to /dev/null (segment builds through
#     FUSE), then unmount (which writes the profile).
# It prints wall/user/sys of each step (GNU time) and leaves the CPU
# profiles in OUT for `go tool pprof` (see SCALING.md for the queries).
#
# Usage: bench/scaling.sh [CRAM [OUT [THREADS...]]]
#   CRAM default /tmp/cramfs-bench/data/sample.v31.cram (ref.fa beside it),
#   OUT default /tmp/scal. Needs fuse3; run as a user that may mount.
set -euo pipefail
cram=${1:-/tmp/cramfs-bench/data/sample.v31.cram}
out=${2:-/tmp/scal}
shift $(( $# > 2 ? 2 : $# ))
threads=("$@")
[ ${#threads[@]} -gt 0 ] || threads=(1 2)
ref=$(dirname "$cram")/ref.fa
base=$(basename "$cram" .cram)
mkdir -p "$out"
here=$(cd "$(dirname "$0")/.." && pwd)
(cd "$here" && go build -o "$out/cramfs" ./cmd/cramfs)
bin=$out/cramfs
T() { /usr/bin/time -f "$1 wall=%e user=%U sys=%S maxrss=%MKB" "${@:2}"; }
for t in "${threads[@]}"; do
	T "convert -@$t" "$bin" convert -@ "$t" -T "$ref" --cpuprofile "$out/convert.t$t.prof" \
		-o "$out/$base.t$t.bam" "$cram"
	rm -f "$out/$base.t$t.bam"
	src=$out/src.t$t mnt=$out/mnt.t$t cache=$out/cache.t$t
	rm -rf "$src" "$cache"; mkdir -p "$src" "$mnt" "$cache"
	ln "$cram" "$src/$base.cram" 2>/dev/null || cp "$cram" "$src/$base.cram"
	"$bin" mount -@ "$t" -T "$ref" --cache-dir "$cache" --cpuprofile "$out/mount.t$t.prof" "$src" "$mnt" &
	pid=$!
	trap 'fusermount3 -u "$mnt" 2>/dev/null' EXIT
	for _ in $(seq 100); do mountpoint -q "$mnt" && break; sleep 0.1; done
	T "scan(stat) -@$t" stat -c %s "$mnt/$base.bam"
	T "read(dd) -@$t" dd if="$mnt/$base.bam" of=/dev/null bs=1M status=none
	fusermount3 -u "$mnt"
	wait "$pid"
	trap - EXIT
done
