#!/bin/sh
# Regenerates the gzip test fixtures. gen.go writes the original inputs
# deterministically; each is compressed by GNU gzip (levels 1 and 9, no
# name or time: -n) and by zlib through Python's zlib module (gzip
# wrapper, levels 1 and 9, and the Huffman-only, RLE and fixed-code
# strategies at level 6). name.gz is "gzip -9" of a file with its name
# and a fixed time (FNAME, MTIME), two.gz two members concatenated.
# MANIFEST records each fixture's original length and SHA-256, which the
# tests check. The committed files were made by GNU gzip 1.12 and zlib
# 1.2.13; both are deterministic, so rerunning this with those versions
# reproduces them byte for byte.
# Run from anywhere: sh decode/codec/gzip/testdata/make.sh
set -eu
cd "$(dirname "$0")"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
go run gen.go "$tmp"
rm -f ./*.gz
: > MANIFEST
add() { # fixture original
	printf '%s %s %s\n' "$1" "$(wc -c < "$2" | tr -d ' ')" \
		"$(sha256sum < "$2" | cut -d' ' -f1)" >> MANIFEST
}
for f in $(ls "$tmp" | LC_ALL=C sort); do
	for level in 1 9; do
		gzip -n -"$level" -c "$tmp/$f" > "$f.gnu$level.gz"
		add "$f.gnu$level.gz" "$tmp/$f"
	done
	for s in 1:default 9:default 6:huffman 6:rle 6:fixed; do
		level=${s%%:*} strategy=${s#*:}
		python3 - "$tmp/$f" "$level" "$strategy" > "$f.zlib$level$strategy.gz" <<'PY'
import sys, zlib
data = open(sys.argv[1], "rb").read()
strategy = {"default": zlib.Z_DEFAULT_STRATEGY, "huffman": zlib.Z_HUFFMAN_ONLY,
            "rle": zlib.Z_RLE, "fixed": zlib.Z_FIXED}[sys.argv[3]]
c = zlib.compressobj(int(sys.argv[2]), zlib.DEFLATED, 31, 8, strategy)
sys.stdout.buffer.write(c.compress(data) + c.flush())
PY
		add "$f.zlib$level$strategy.gz" "$tmp/$f"
	done
done
cp "$tmp/text" "$tmp/name.txt"
touch -d @1000000000 "$tmp/name.txt"
gzip -9 -c "$tmp/name.txt" > name.gz
add name.gz "$tmp/name.txt"
cat text.gnu1.gz dna.zlib9default.gz > two.gz
cat "$tmp/text" "$tmp/dna" > "$tmp/two"
add two.gz "$tmp/two"
