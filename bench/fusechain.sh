#!/bin/bash
# bench/fusechain.sh: the serial part of one sequential reader of a mount,
# for bench/archive/SCALING.md. It mounts with a cache that holds the whole virtual
# BAM, builds every segment by reading the file backwards 1 MiB at a time
# (backward reads never drop segments from the cache, unlike a sequential
# run), then reads it forwards with dd (buffered, and O_DIRECT: one request
# in flight), so that no segment is built during the timed reads: what is
# timed is the FUSE chain (kernel request, go-fuse, View, the reply copied
# into the page cache, dd's copy out). With RA_KB set, the mount's kernel
# read-ahead (/sys/class/bdi/<dev>/read_ahead_kb, DefaultMaxReadAhead = 4 MiB)
# is set to RA_KB before the buffered read. PROF=FILE writes the mount's CPU
# profile to FILE.
#
# Usage: [RA_KB=8192] bench/fusechain.sh [OUT]   (after bench/scaling.sh,
# whose OUT (default /tmp/scal) holds the binary, src.t2 and cache.t2)
set -u
out=${1:-/tmp/scal}; bin=$out/cramfs; base=sample.v31
ref=/tmp/cramfs-bench/data/ref.fa
mnt=$out/mnt.c; mkdir -p "$mnt"
"$bin" mount -@ 2 -T "$ref" ${PROF:+--cpuprofile "$PROF"} --cache-dir "$out/cache.t2" --cache-size 2G "$out/src.t2" "$mnt" 2>/dev/null &
pid=$!
for _ in $(seq 100); do mountpoint -q "$mnt" && break; sleep 0.1; done
f=$mnt/$base.bam
size=$(stat -c %s "$f"); n=$(( (size + 1048575) / 1048576 ))
for ((i=n-1; i>=0; i--)); do dd if="$f" of=/dev/null bs=1M skip=$i count=1 iflag=direct status=none; done
bdi=/sys/class/bdi/$(mountpoint -d "$mnt")/read_ahead_kb
[ -n "${RA_KB:-}" ] && echo "$RA_KB" > "$bdi"
echo "read_ahead_kb=$(cat "$bdi")"
/usr/bin/time -f "warm buffered 1 MiB reads: wall=%e sys=%S" dd if="$f" of=/dev/null bs=1M status=none
for ((i=n-1; i>=0; i--)); do dd if="$f" of=/dev/null bs=1M skip=$i count=1 iflag=direct status=none; done
/usr/bin/time -f "warm O_DIRECT 1 MiB reads: wall=%e sys=%S" dd if="$f" of=/dev/null bs=1M iflag=direct status=none
fusermount3 -u "$mnt"; wait "$pid"
