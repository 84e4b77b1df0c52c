#!/bin/sh
# Regenerates the bzip2 test fixtures with the bzip2 command-line tool
# (the committed ones were made by bzip2 1.0.8). gen.go writes the
# original inputs deterministically; each is compressed at levels 1 and
# 9, except the benchmark inputs "names" and "qual" (level 9 only), and
# MANIFEST records each fixture's original length and SHA-256, which the
# tests check. bzip2 is deterministic, so rerunning this reproduces the
# committed files byte for byte.
# Run from anywhere: sh decode/codec/bzip2/testdata/make.sh
set -eu
cd "$(dirname "$0")"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
go run gen.go "$tmp"
rm -f ./*.bz2
: > MANIFEST
for f in $(ls "$tmp" | LC_ALL=C sort); do
	for level in 1 9; do
		if [ "$level" = 1 ] && { [ "$f" = names ] || [ "$f" = qual ]; }; then
			continue
		fi
		out="$f.$level.bz2"
		bzip2 -"$level" -c "$tmp/$f" > "$out"
		printf '%s %s %s\n' "$out" "$(wc -c < "$tmp/$f" | tr -d ' ')" \
			"$(sha256sum < "$tmp/$f" | cut -d' ' -f1)" >> MANIFEST
	done
done
