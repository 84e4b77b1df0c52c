#!/usr/bin/env bash
# bench/ab.sh: an A/B comparison of two cramfs binaries on the mount's three
# paths, to show that a change (a refactor) moved nothing beyond noise. Per
# round, each binary in turn (old then new, swapped every other round, so that
# neither always runs second on a drifting machine):
#   first access  a fresh mount (empty --cache-dir) of SRC, a directory of hard
#                 links to the dataset's 3.0, 3.1 and long-read CRAMs; the
#                 time of the first `stat MNT/x.bam` (the layout scan), and the
#                 mount's CPU (utime + stime from /proc/PID/stat) over it;
#   seq read      then, on that mount, `samtools view -@ T -c MNT/x.bam`: its
#                 wall time and the mount's CPU over it; the two binaries'
#                 counts must agree;
#   regions       a fresh mount (block cache cold) on the cache dir the first
#                 access filled (layout index warm), `samtools view -@ T -u -o
#                 /dev/null MNT/x.bam REGIONS...`, with the regions
#                 tools/cramfs-bench picks (pickRegions over ref.fa.fai);
#                 for the 3.0 and 3.1 files only.
# The mount options are cramfs-bench's: -T ref.fa --cache-size 256M -@ T
# --level 0. Prints a Markdown table: median old, median new, ratio of the
# medians new/old, each side's spread (min-max) over the rounds, the median
# of the rounds' own ratios, and the same for the mount's CPU, with the
# load average at start and end; every sample goes to $WORK/samples.tsv.
# Not a test: on a shared machine run it under `nice -n 5`.
#
# Usage: [ROUNDS=5] [THREADS=2] [NREGIONS=20] [DATA=/tmp/cramfs-bench/data]
#        [SAMTOOLS=/usr/bin/samtools] [WORK=/tmp/cramfs-ab]
#        [FILES="sample.v30 sample.v31 longread.v31"] [REGFILES="sample.v30 sample.v31"]
#        bench/ab.sh OLD NEW
#        bench/ab.sh --table SAMPLES.TSV   (the table of a past run's samples)
set -euo pipefail
# table SAMPLES: the Markdown table of a samples.tsv. Per (measure, file):
# the medians of each side's wall time, their ratio new/old and each side's
# min-max; then the median (min-max) of the rounds' own ratios new/old, of
# wall time and of the mount's CPU: the two sides of a round ran seconds
# apart, so these follow the machine's load less.
table() {
  echo "| measure | file | median old (s) | median new (s) | new/old | spread old (s) | spread new (s) | per-round new/old, wall | mount CPU old / new (s, median) | per-round new/old, CPU |"
  echo "| --- | --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |"
  awk -F'\t' '
    function sort(v, m,   i, j, t) {
      for (i = 2; i <= m; i++) for (j = i; j > 1 && v[j - 1] + 0 > v[j] + 0; j--) { t = v[j]; v[j] = v[j - 1]; v[j - 1] = t }
    }
    function med(v, m) { return m % 2 ? v[(m + 1) / 2] : (v[m / 2] + v[m / 2 + 1]) / 2 }
    # side K B ARR: median of ARR over the rounds of side B of row K; sets spread.
    function side(k, b, arr,   r, m, v) {
      for (r = 1; r <= rounds; r++) if ((k, r, b) in arr) v[++m] = arr[k, r, b]
      sort(v, m); spread = sprintf("%.2f-%.2f", v[1], v[m])
      return med(v, m)
    }
    # paired K ARR: median (min-max) of the rounds ratios new/old of ARR.
    function paired(k, arr,   r, m, v) {
      for (r = 1; r <= rounds; r++) if ((k, r, "old") in arr && (k, r, "new") in arr && arr[k, r, "old"] > 0) v[++m] = arr[k, r, "new"] / arr[k, r, "old"]
      if (m == 0) return "-"
      sort(v, m)
      return sprintf("%.2f (%.2f-%.2f)", med(v, m), v[1], v[m])
    }
    NR > 1 { k = $4 "\t" $3; if (!(k in seen)) { seen[k] = 1; keys[++nk] = k }
      wall[k, $1, $2] = $5; cpu[k, $1, $2] = $6; if ($1 > rounds) rounds = $1 }
    END { for (i = 1; i <= nk; i++) { k = keys[i]; split(k, p, "\t")
        mo = side(k, "old", wall); so = spread; mn = side(k, "new", wall); sn = spread
        co = side(k, "old", cpu); cn = side(k, "new", cpu)
        printf "| %s | %s | %.2f | %.2f | %.2f | %s | %s | %s | %.2f / %.2f | %s |\n",
          p[1], p[2], mo, mn, mn / mo, so, sn, paired(k, wall), co, cn, paired(k, cpu) } }' "$1"
}
if [[ ${1:-} == --table && $# -eq 2 ]]; then
  table "$2"
  exit 0
fi
if [[ $# -ne 2 ]]; then
  sed -n '2,/^set /p' "$0" | sed '$d; s/^# \{0,1\}//' >&2
  exit 2
fi
old=$(realpath "$1") new=$(realpath "$2")
rounds=${ROUNDS:-5} th=${THREADS:-2} nreg=${NREGIONS:-20}
data=${DATA:-/tmp/cramfs-bench/data} sam=${SAMTOOLS:-/usr/bin/samtools}
work=${WORK:-/tmp/cramfs-ab}
ref=$data/ref.fa
read -ra files <<<"${FILES:-sample.v30 sample.v31 longread.v31}" # stems of CRAMs in $data
read -ra regfiles <<<"${REGFILES-sample.v30 sample.v31}"          # a subset of files
export REF_PATH=/nonexistent REF_CACHE=/nonexistent # only -T, as cramfs-bench

rm -rf "$work"
mkdir -p "$work/src" "$work/mnt" "$work/cache"
for s in "${files[@]}"; do ln "$data/$s.cram" "$work/src/$s.cram"; done
out=$work/samples.tsv
printf 'round\tbinary\tfile\tmeasure\twall_s\tmount_cpu_s\n' > "$out"

# regions prints cramfs-bench's pickRegions(contigs of ref.fa.fai, n).
regions() {
  awk -v n="$1" 'BEGIN { split("1000 10000 100000", w, " ") }
    { name[NR - 1] = $1; len[NR - 1] = $2 }
    END {
      L = NR; per = int((n + L - 1) / L)
      for (k = 0; k < n; k++) {
        c = k % L; slot = int(k / L); wd = w[k % 3 + 1]
        mid = int(len[c] * (2 * slot + 1) / (2 * per))
        s = mid - int(wd / 2); if (s < 1) s = 1
        e = s + wd - 1; if (e > len[c]) e = len[c]
        printf "%s:%d-%d\n", name[c], s, e
      }
    }' "$ref.fai"
}
mapfile -t regs < <(regions "$nreg")

now() { date +%s%N; }
secs() { awk -v a="$1" -v b="$2" 'BEGIN { printf "%.3f", (b - a) / 1e9 }'; }
cpu() { awk -v hz="$(getconf CLK_TCK)" '{ printf "%.2f", ($14 + $15) / hz }' "/proc/$1/stat"; }
cpudiff() { awk -v a="$1" -v b="$2" 'BEGIN { printf "%.2f", b - a }'; }
record() { printf '%s\t%s\t%s\t%s\t%s\t%s\n' "$@" >> "$out"; }

pid=
# mnt_up BIN NAME CACHE: a fresh mount of SRC at MNT, logging to
# mount.NAME.log; sets pid.
mnt_up() {
  "$1" mount -T "$ref" --cache-dir "$3" --cache-size 256M -@ "$th" --level 0 \
    "$work/src" "$work/mnt" 2>>"$work/mount.$2.log" &
  pid=$!
  for _ in $(seq 200); do mountpoint -q "$work/mnt" && return 0; sleep 0.05; done
  echo "ab.sh: $1 did not mount within 10 s (see $work/mount.$2.log)" >&2
  exit 1
}
mnt_down() { fusermount3 -u "$work/mnt"; wait "$pid" || true; pid=; }
trap 'if [[ -n $pid ]]; then mnt_down; fi' EXIT

# first BIN NAME ROUND STEM: first access and sequential read on a fresh mount.
first() {
  local bin=$1 name=$2 r=$3 s=$4 cache=$work/cache/$2.r$3.$4 t0 t1 c0 c1 n
  mkdir -p "$cache"
  mnt_up "$bin" "$name" "$cache"
  c0=$(cpu "$pid"); t0=$(now)
  stat "$work/mnt/$s.bam" >/dev/null
  t1=$(now); c1=$(cpu "$pid")
  record "$r" "$name" "$s" "first access" "$(secs "$t0" "$t1")" "$(cpudiff "$c0" "$c1")"
  c0=$c1; t0=$(now)
  n=$("$sam" view -@ "$th" -c "$work/mnt/$s.bam")
  t1=$(now); c1=$(cpu "$pid")
  record "$r" "$name" "$s" "seq read" "$(secs "$t0" "$t1")" "$(cpudiff "$c0" "$c1")"
  mnt_down
  echo "$n" > "$work/count.$name.r$r.$s"
}

# region BIN NAME ROUND STEM: the region queries on a fresh mount, warm index.
region() {
  local bin=$1 name=$2 r=$3 s=$4 t0 t1 c0 c1
  mnt_up "$bin" "$name" "$work/cache/$name.r$r.$s"
  c0=$(cpu "$pid"); t0=$(now)
  "$sam" view -@ "$th" -u -o /dev/null "$work/mnt/$s.bam" "${regs[@]}"
  t1=$(now); c1=$(cpu "$pid")
  record "$r" "$name" "$s" "regions" "$(secs "$t0" "$t1")" "$(cpudiff "$c0" "$c1")"
  mnt_down
}

load0=$(uptime)
echo "ab.sh: $rounds rounds; old $old, new $new; regions ${regs[*]}" >&2
for ((r = 1; r <= rounds; r++)); do
  order=(old new)
  ((r % 2 == 0)) && order=(new old)
  for s in "${files[@]}"; do
    for b in "${order[@]}"; do
      if [[ $b == old ]]; then first "$old" old "$r" "$s"; else first "$new" new "$r" "$s"; fi
    done
    if ! cmp -s "$work/count.old.r$r.$s" "$work/count.new.r$r.$s"; then
      echo "ab.sh: round $r, $s: old counted $(cat "$work/count.old.r$r.$s"), new $(cat "$work/count.new.r$r.$s")" >&2
      exit 1
    fi
  done
  for s in "${regfiles[@]}"; do
    for b in "${order[@]}"; do
      if [[ $b == old ]]; then region "$old" old "$r" "$s"; else region "$new" new "$r" "$s"; fi
    done
  done
  rm -rf "$work/cache/"*.r"$r".*
  echo "ab.sh: round $r done (load $(cut -d' ' -f1-3 /proc/loadavg))" >&2
done
load1=$(uptime)

echo "old: $("$old" version | sed -n 2p)"
echo "new: $("$new" version | sed -n 2p)"
echo "load at start:$load0"
echo "load at end:  $load1"
echo
table "$out"
