#!/usr/bin/env bash
# Reruns every benchmark and regenerates the figures of BENCHMARKS.md and its SVG charts
# (docs/bench/*.svg) from what they print.
#
# Usage: tests/bench/run_all.sh
# Environment:
#   BENCH_RUNS (2)          runs of each benchmark (BENCHMARKS.md gives min-max over them)
#   BENCH_CLIENT_STEPS ("8 16 32 64")  wrk connections for the throughput-vs-clients chart
#   BENCH_OUT               where the raw outputs go (default build-bench/results/<UTC time>)
#   FLOE_BIN, FLOE_SHARED_DIR, FLOE_SERVE_ARGS   as for each script
# Takes about (2 + 1.5 + 1.5 + 1) min per run plus ~1 min for the connection steps.
set -euo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
repo=$(cd "$here/../.." && pwd)
runs=${BENCH_RUNS:-2}
out=${BENCH_OUT:-$repo/build-bench/results/$(date -u +%Y%m%dT%H%M%SZ)}
mkdir -p "$out"
# Each script's files are deleted only when every run is done: a deletion of tens of
# thousands of files taxes the file creations of the minutes after it (create_probe.c), and
# only Floe's side of a ratio creates files.
BENCH_TRASH=$(mktemp -d "${TMPDIR:-/tmp}/floe-bench-trash.XXXXXX")
export BENCH_TRASH
trap 'rm -rf "$BENCH_TRASH"' EXIT

for i in $(seq 1 "$runs"); do
	echo "run_all: run $i/$runs: load_table_bench..." >&2
	"$here/load_table_bench.sh" >"$out/load_table.$i.txt"
	echo "run_all: run $i/$runs: load_table_bench, pure misses..." >&2
	FLOE_SERVE_ARGS="${FLOE_SERVE_ARGS:-} --table-cache-bytes 8000000" BENCH_CYCLE_SMALL=20 \
		"$here/load_table_bench.sh" >"$out/miss.$i.txt"
	echo "run_all: run $i/$runs: commit_bench..." >&2
	"$here/commit_bench.sh" >"$out/commit.$i.txt"
	echo "run_all: run $i/$runs: ingest_bench..." >&2
	"$here/ingest_bench.sh" >"$out/ingest.$i.txt"
	echo "run_all: run $i/$runs: ingest_bench --threads 2..." >&2
	"$here/ingest_bench.sh" --threads 2 >"$out/ingest2.$i.txt"
done
for c in ${BENCH_CLIENT_STEPS:-8 16 32 64}; do
	echo "run_all: loadTable at $c connections..." >&2
	BENCH_CONNECTIONS=$c BENCH_CYCLE_LARGE=0 BENCH_DURATION=5s "$here/load_table_bench.sh" >"$out/clients.$c.txt"
done
python3 "$here/bench_report.py" "$out" "$repo/BENCHMARKS.md" "$repo/docs/bench"
echo "run_all: raw outputs in $out; BENCHMARKS.md and docs/bench/*.svg regenerated" >&2
