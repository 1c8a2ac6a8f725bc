#!/usr/bin/env bash
# Ingest benchmark: `floe ingest` (CSV -> Parquet data file + manifests + one committed
# snapshot, in process) against DuckDB's single-thread CSV -> zstd Parquet on the same file,
# in one run; then the cold-start wall time of `floe ingest` for a 1,000-row file, in process
# and through the running catalog (--catalog-uri).
#
# Usage: tests/bench/ingest_bench.sh [--big] [--threads N]
#   --big         also the 1 GB case (7,600,000 rows; needs ~3 GB free in TMPDIR, ~1 min more)
#   --threads N   `floe ingest --threads N` against DuckDB `SET threads = N` (default 1); the
#                 cold start always runs with one thread
# CPU seconds are user + system time from /usr/bin/time; DuckDB's are those of its node process
# minus the same COPY of a 1-row file (node, the module and the instance start), so the CPU
# ratio compares the work of the two writers, whatever the load on the machine.
# Environment:
#   FLOE_BIN          the binary to measure (default: release build in build-bench/, built here)
#   FLOE_SHARED_DIR   where bench/gencsv.c is (default: ../shared)
#   BENCH_ROWS (760000)   rows of the main file (~100 MB)
#   BENCH_SMALL_RUNS (10) runs of the 1,000-row cold start, each with a different file
#   FLOE_DUCKDB_MODULES   node_modules holding @duckdb/node-api (default tests/integration's)
#
# The table is created over REST with the types that cast gencsv's text exactly:
#   id long, user_id long, qty int, amount decimal(9,2) (2 decimals, < 100,000),
#   score double (6 decimals), category/name/comment string, created_at timestamp
#   (microseconds, no zone), updated_at timestamp.
# DuckDB infers BIGINT x3, DOUBLE x2, VARCHAR x3, TIMESTAMP x2 for the same file. Both write
# zstd Parquet (Floe: the table default write.parquet.compression-codec=zstd). Floe's time
# includes writing the manifest, the manifest list, metadata.json (fsynced) and the commit
# in PostgreSQL (durable); DuckDB writes one Parquet file. Peak RSS is /usr/bin/time -v's
# "Maximum resident set size" (for DuckDB that includes node itself).
# The input is in the page cache for both (it was just generated). Prints figures and
# ratios; fails only when it cannot measure.
set -euo pipefail

# shellcheck source=tests/bench/bench_lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/bench_lib.sh"
big=0
threads=1
while [ $# -gt 0 ]; do
	case $1 in
	--big) big=1 ;;
	--threads)
		threads=${2:-}
		shift
		;;
	--threads=*) threads=${1#--threads=} ;;
	-h | --help)
		sed -n '2,15p' "$0"
		exit 0
		;;
	*)
		echo "ingest_bench: unknown argument $1" >&2
		exit 2
		;;
	esac
	shift
done
case $threads in
'' | *[!0-9]* | 0)
	echo "ingest_bench: --threads needs a count of 1 or more" >&2
	exit 2
	;;
esac
bench_init ingest_bench
bench_need curl jq cc node
[ -x /usr/bin/time ] || bench_die "/usr/bin/time not found (Debian package time)"

rows=${BENCH_ROWS:-760000}
small_runs=${BENCH_SMALL_RUNS:-10}
here=$bench_repo/tests/bench
[ -f "$SHARED/bench/gencsv.c" ] || bench_die "no $SHARED/bench/gencsv.c"
bench_build_c gencsv "$SHARED/bench/gencsv.c"

bench_pg_start || bench_die "could not start PostgreSQL"
bench_floe_start --log-level=info

schema=$BENCH_GENCSV_SCHEMA
curl -fsS -X POST -H 'Content-Type: application/json' -d '{"namespace":["ing"]}' \
	"$BASE$P/namespaces" >/dev/null || bench_die "create namespace failed"
create_table()
{
	curl -fsS -X POST -H 'Content-Type: application/json' \
		-d "{\"name\":\"$1\",\"schema\":$schema}" "$BASE$P/namespaces/ing/tables" >/dev/null ||
		bench_die "create table ing.$1 failed"
}
create_table events
create_table small
create_table small_rest
[ "$big" = 1 ] && create_table events_big
# The in-process ingest needs only PostgreSQL; the daemon is not part of the measurement
# (it is started again for the cold start through the catalog, at the end).
bench_floe_stop

now_ns()
{
	date +%s%N
}

# cpu_of TIME_FILE: user + system seconds from /usr/bin/time -v
cpu_of()
{
	awk -F': ' '/User time|System time/ { s += $2 } END { printf "%.3f", s }' "$1"
}

# run_floe TABLE FILE [THREADS] -> sets I_SEC I_CPU I_RSS_KB I_BYTES I_ROWS I_STATUS (JSON line in
# $BT/ingest.json)
run_floe()
{
	local t0 t1 th=()
	# (one thread is the default: no flag, so that older binaries can be measured too)
	[ "${3:-1}" = 1 ] || th=(--threads "$3")
	t0=$(now_ns)
	/usr/bin/time -v -o "$BT/time.txt" "$FLOE_BIN" ingest --database-url="$DB_URL" \
		--table "ing.$1" "${th[@]}" "$2" >"$BT/ingest.json" 2>"$BT/ingest.err" || {
		cat "$BT/ingest.json" "$BT/ingest.err" >&2
		bench_die "floe ingest $2 failed"
	}
	t1=$(now_ns)
	I_SEC=$(awk -v a="$t0" -v b="$t1" 'BEGIN { printf "%.3f", (b - a) / 1e9 }')
	I_RSS_KB=$(awk -F': ' '/Maximum resident set size/ { print $2 }' "$BT/time.txt")
	I_CPU=$(cpu_of "$BT/time.txt")
	I_BYTES=$(jq -r '."bytes-written"' "$BT/ingest.json")
	I_ROWS=$(jq -r '."rows-committed"' "$BT/ingest.json")
	I_STATUS=$(jq -r '.status' "$BT/ingest.json")
}

# run_duck FILE -> sets D_SEC (COPY only) D_WALL (process) D_CPU (process) D_RSS_KB D_BYTES
# D_ROWS D_VER
run_duck()
{
	local out t0 t1
	t0=$(now_ns)
	out=$(/usr/bin/time -v -o "$BT/time.txt" node "$here/duckdb_copy.mjs" "$1" "$BT/duck.parquet" \
		"$threads") || bench_die "DuckDB COPY failed"
	t1=$(now_ns)
	D_WALL=$(awk -v a="$t0" -v b="$t1" 'BEGIN { printf "%.3f", (b - a) / 1e9 }')
	D_SEC=$(jq -r '.seconds' <<<"$out")
	D_ROWS=$(jq -r '.rows' <<<"$out")
	D_BYTES=$(jq -r '.bytes_out' <<<"$out")
	D_VER=$(jq -r '.duckdb' <<<"$out")
	D_RSS_KB=$(awk -F': ' '/Maximum resident set size/ { print $2 }' "$BT/time.txt")
	D_CPU=$(cpu_of "$BT/time.txt")
	rm -f "$BT/duck.parquet"
}

# compare LABEL TABLE FILE: one Floe and one DuckDB run on FILE, a table of figures.
compare()
{
	local label=$1 table=$2 file=$3 bytes nrows
	bytes=$(stat -c %s "$file")
	nrows=$(($(wc -l <"$file") - 1))
	echo "ingest_bench: $label: floe ingest..." >&2
	run_floe "$table" "$file" "$threads"
	[ "$I_STATUS" = committed ] || bench_die "floe ingest status $I_STATUS"
	[ "$I_ROWS" = "$nrows" ] || bench_die "floe committed $I_ROWS rows, the file has $nrows"
	echo "ingest_bench: $label: DuckDB..." >&2
	run_duck "$BT/one.csv"
	local duck_base=$D_CPU
	run_duck "$file"
	[ "$D_ROWS" = "$nrows" ] || bench_die "DuckDB wrote $D_ROWS rows, the file has $nrows"
	local duck_cpu
	duck_cpu=$(awk -v a="$D_CPU" -v b="$duck_base" 'BEGIN { printf "%.3f", a - b }')
	echo "-- $label: $(awk -v b="$bytes" 'BEGIN { printf "%.1f MB", b / 1e6 }'), $nrows rows --"
	printf '%-40s %9s %12s %9s %10s %14s %7s\n' "" "seconds" "rows/s" "MB/s in" "peak RSS" "output bytes" "out/in"
	line()
	{
		awk -v l="$1" -v s="$2" -v n="$nrows" -v b="$bytes" -v r="$3" -v o="$4" 'BEGIN {
			printf "%-40s %9.3f %12.0f %9.1f %7.1f MB %14d %7.3f\n", l, s, n / s, b / 1e6 / s, r / 1024, o, o / b }'
	}
	line "floe ingest (--threads $threads, committed)" "$I_SEC" "$I_RSS_KB" "$I_BYTES"
	line "DuckDB $D_VER COPY, threads=$threads" "$D_SEC" "$D_RSS_KB" "$D_BYTES"
	echo "(floe: process wall time, start to committed snapshot; DuckDB: the COPY statement," \
		"process wall $D_WALL s; RSS of DuckDB includes node)"
	echo "CPU seconds: floe $I_CPU (whole process), DuckDB $duck_cpu (process $D_CPU minus $duck_base for a 1-row file)"
	echo "ratio floe/DuckDB: rows/s $(bench_ratio "$D_SEC" "$I_SEC"), CPU time $(bench_ratio "$duck_cpu" "$I_CPU")" \
		"(DuckDB CPU / floe CPU), peak RSS $(bench_ratio "$I_RSS_KB" "$D_RSS_KB")x," \
		"output bytes $(bench_ratio "$I_BYTES" "$D_BYTES")x"
	echo
}

echo "ingest_bench: generating $rows rows..." >&2
"$BT/gencsv" "$rows" >"$BT/x.csv"
"$BT/gencsv" 1 >"$BT/one.csv"
if [ "$big" = 1 ]; then
	echo "ingest_bench: generating 7600000 rows..." >&2
	"$BT/gencsv" 7600000 >"$BT/x1g.csv"
fi
# Different 1,000-row files, one more than the timed runs for the peak-RSS run (the batch
# identity is a content hash: the same file twice would be an already-committed no-op).
"$BT/gencsv" $((1000 * (small_runs + 1))) >"$BT/small_all.csv"
for i in $(seq 0 "$small_runs"); do
	{
		head -n 1 "$BT/small_all.csv"
		sed -n "$((2 + 1000 * i)),$((1001 + 1000 * i))p" "$BT/small_all.csv"
	} >"$BT/small$i.csv"
done

echo "== ingest_bench: floe ingest vs DuckDB CSV -> zstd Parquet (same run, same file) =="
bench_env_line
bench_fs_line
echo "floe: $("$FLOE_BIN" version 2>/dev/null | head -n 1), in process (--database-url), warehouse on $(df -T "$BT" | awk 'NR == 2 { print $2 }') ($BT)"
echo

compare "gencsv $rows" events "$BT/x.csv"
[ "$big" = 1 ] && compare "gencsv 7600000 (--big)" events_big "$BT/x1g.csv"

# The cold start is timed with bash's $EPOCHREALTIME around the process alone: `date` and
# /usr/bin/time are processes too, and the pair of them added ~4-5 ms to each run (see the
# harness line below, which times /bin/true the same way). Peak RSS comes from one more run
# under /usr/bin/time, not timed.
epoch_ms()
{
	local t=${1/,/.} # EPOCHREALTIME follows LC_NUMERIC's decimal point
	awk -v t="$t" 'BEGIN { printf "%.3f", t * 1000 }'
}
median_line()
{
	sort -n | awk '{ t[NR] = $1 }
		END { m = (NR % 2) ? t[(NR + 1) / 2] : (t[NR / 2] + t[NR / 2 + 1]) / 2
		      printf "median %.1f ms, min %.1f ms, max %.1f ms", m, t[1], t[NR] }'
}
# cold_runs TABLE ARGS...: one `floe ingest ARGS --table ing.TABLE small$i.csv` per file;
# sets COLD_MS (one time per run) and FLOOR_MS (/bin/true timed the same way before each).
cold_runs()
{
	local table=$1 i t0 t1 status rows
	shift
	COLD_MS=()
	FLOOR_MS=()
	for i in $(seq 0 $((small_runs - 1))); do
		t0=$EPOCHREALTIME
		/bin/true
		t1=$EPOCHREALTIME
		FLOOR_MS+=("$(awk -v a="$(epoch_ms "$t0")" -v b="$(epoch_ms "$t1")" 'BEGIN { print b - a }')")
		t0=$EPOCHREALTIME
		"$FLOE_BIN" ingest "$@" --table "ing.$table" "$BT/small$i.csv" \
			>"$BT/ingest.json" 2>"$BT/ingest.err" || {
			cat "$BT/ingest.json" "$BT/ingest.err" >&2
			bench_die "floe ingest $* $BT/small$i.csv failed"
		}
		t1=$EPOCHREALTIME
		COLD_MS+=("$(awk -v a="$(epoch_ms "$t0")" -v b="$(epoch_ms "$t1")" 'BEGIN { print b - a }')")
		status=$(jq -r '.status' "$BT/ingest.json")
		rows=$(jq -r '."rows-committed"' "$BT/ingest.json")
		if [ "$status" != committed ] || [ "$rows" != 1000 ]; then
			bench_die "cold start $i into ing.$table: $status, $rows rows"
		fi
	done
}
# The comparison above left ~130 MB of dirty pages (its input, both outputs); their writeback
# would land in the cold start's fsyncs and measure the kernel flushing them, not the ingest.
sync
echo "ingest_bench: cold start, $small_runs runs..." >&2
cold_runs small --database-url="$DB_URL"
times=("${COLD_MS[@]}")
floor=("${FLOOR_MS[@]}")
run_floe small "$BT/small$small_runs.csv"
[ "$I_STATUS" = committed ] || bench_die "small run for peak RSS: $I_STATUS"
echo "-- cold start: floe ingest of a 1,000-row file ($(stat -c %s "$BT/small0.csv") bytes), process start to committed snapshot --"
echo "$small_runs runs, different files each: $(printf '%s\n' "${times[@]}" | median_line);" \
	"peak RSS $(awk -v r="$I_RSS_KB" 'BEGIN { printf "%.1f", r / 1024 }') MB"
echo "(separate processes, each timed with \$EPOCHREALTIME around its fork, exec and exit; each run" \
	"adds one snapshot to ing.small; harness: /bin/true timed the same way," \
	"$(printf '%s\n' "${floor[@]}" | median_line))"
# The part of a cold start that is PostgreSQL's alone: a new connection (the postmaster forks a
# backend, which starts up and authenticates), as pgbench measures it over 20 connections.
if [ -x "$PGT_BIN/pgbench" ]; then
	echo 'SELECT 1;' >"$BT/select1.sql"
	conn=$("$PGT_BIN/pgbench" -n -C -c 1 -t 20 -f "$BT/select1.sql" "$DB_URL" 2>/dev/null |
		sed -n 's/^average connection time = \([0-9.]*\) ms/\1/p')
	echo "(PostgreSQL alone: a new connection takes ${conn:-?} ms on average, pgbench -C over 20;" \
		"a cold start opens one)"
fi
# The same files through a running catalog: `floe ingest --catalog-uri` opens no PostgreSQL
# connection of its own (it loads the table and commits over HTTP; the daemon uses its pool).
# One untimed run first, so that the daemon's own first-use costs are not in the figure.
echo "ingest_bench: cold start through the catalog, $small_runs runs..." >&2
bench_floe_start
"$FLOE_BIN" ingest --catalog-uri="$BASE" --table ing.small_rest "$BT/small$small_runs.csv" \
	>"$BT/ingest.json" 2>"$BT/ingest.err" || {
	cat "$BT/ingest.err" >&2
	bench_die "floe ingest --catalog-uri failed"
}
cold_runs small_rest --catalog-uri="$BASE"
bench_floe_stop
echo "through a running catalog (--catalog-uri, the same files into ing.small_rest):" \
	"$(printf '%s\n' "${COLD_MS[@]}" | median_line); harness $(printf '%s\n' "${FLOOR_MS[@]}" | median_line)"
bench_load_line
