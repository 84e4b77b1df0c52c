#!/bin/sh
# Indexes the CRAMs listed in LIST (one path a line) into the shared cache
# CACHE as a Slurm array of FILES_PER_TASK files a task (default 50), and
# waits for it: exit 0 once every task succeeded, non-zero (with the
# failed tasks in their slurm-JOB_TASK.out files) otherwise.
#
#   sh docs/cluster/index-array.sh crams.txt /shared/cramfs-cache /shared/ref/GRCh38.fa
#
# It runs as written on any cluster and node size: every path is made
# absolute here, where the command is given (tasks start in no particular
# directory, and TMPDIR may not be set there); cramfs is the one found on
# PATH here (the nodes must see the same path: a shared filesystem); each
# task asks for at most the CPUs of the smallest node, so that no task can
# wait forever for a node larger than any there is.
set -eu
[ $# -ge 3 ] || { echo "usage: $0 LIST CACHE REF [FILES_PER_TASK]" >&2; exit 2; }
list=$(realpath "$1")
cache=$(realpath "$2")
ref=$(realpath "$3")
per=${4:-50}
cramfs=$(command -v cramfs) || { echo "$0: cramfs is not on PATH" >&2; exit 1; }
for tool in sbatch sinfo; do
	command -v $tool >/dev/null || { echo "$0: $tool (Slurm) is not on PATH" >&2; exit 1; }
done
n=$(grep -c . "$list" || true)
[ "$n" -gt 0 ] || { echo "$0: $list names no file" >&2; exit 1; }
cpus=$(sinfo -N -h -o %c | sort -n | head -n 1)
if [ "$cpus" -gt 4 ]; then cpus=4; fi
# cramfs index needs about --cache-size (256M) plus 150 MiB.
sbatch --wait --job-name=cramfs-index --array=0-$(( (n - 1) / per )) \
	--cpus-per-task="$cpus" --mem=1G --output="$(pwd)/slurm-%A_%a.out" \
	--wrap "sed -n \"\$((SLURM_ARRAY_TASK_ID * $per + 1)),+$((per - 1))p\" '$list' |
	xargs -r '$cramfs' index --shared-cache --digests --cache-dir '$cache' -T '$ref' -@ \"\${SLURM_CPUS_PER_TASK:-1}\""
echo "$0: the $n files of $list are indexed in $cache"
