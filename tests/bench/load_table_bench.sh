#!/usr/bin/env bash
# loadTable benchmark: Floe's GET /v1/{prefix}/namespaces/{ns}/tables/{t} against the
# libmicrohttpd ceiling serving the same number of bytes, in one run.
#
# Usage: tests/bench/load_table_bench.sh
# Environment:
#   FLOE_BIN          the daemon to measure (default: release build in build-bench/, built here)
#   FLOE_SHARED_DIR   where bench/ceilings/mhd_hello.c is (default: ../shared)
#   BENCH_DURATION (10s) BENCH_CONNECTIONS (64) BENCH_THREADS (2)   wrk settings
#   BENCH_MHD_POOL (2)          mhd_hello's thread pool
#   BENCH_CYCLE_SMALL (200)     tables cycled through in the second Floe run
#   BENCH_CYCLE_LARGE (4096)    tables cycled through in the third Floe run (0 = skip)
#   FLOE_SERVE_ARGS             extra `floe serve` flags, e.g. "--threads 8"
#
# Steps: throwaway PostgreSQL (durable defaults), `floe serve --port 0`, tables whose
# loadTable body is ~20 KB (properties are added until the body matches mhd_hello's /meta),
# then five wrk runs (-t2 -c64 -d10s --latency):
#   1. Floe, one table (served from Floe's loadTable cache after the first request);
#   2. mhd_hello GET /meta, the ceiling (a persistent 20 KB response, no work per request);
#   2b. Floe, loadView of one view of about the same size (the same cache);
#   3. Floe cycling over BENCH_CYCLE_SMALL tables (cycle_tables.lua): a different table
#      each request, all in the cache (sized in bytes: --table-cache-bytes, 256 MiB);
#   4. Floe cycling over BENCH_CYCLE_LARGE tables (~80 MB of metadata for 4096): the first
#      pass misses and reads PostgreSQL, later passes hit while the tables fit the budget
#      (FLOE_SERVE_ARGS="--table-cache-bytes 8000000" measures the miss path).
# For each Floe run it prints PostgreSQL transactions per request (pg_stat_database
# xact_commit delta / requests): ~0 means served from the cache, ~1 means one database
# read per request; and the CPU time per request of the daemon and of the PostgreSQL
# backends (utime + stime from /proc, in microseconds), which the throughput of a machine
# shared with other work hides. Prints figures and ratios; fails only when it cannot measure.
set -euo pipefail

# shellcheck source=tests/bench/bench_lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/bench_lib.sh"
bench_init load_table_bench
bench_need wrk curl jq cc pkg-config node

duration=${BENCH_DURATION:-10s}
conns=${BENCH_CONNECTIONS:-64}
wrk_threads=${BENCH_THREADS:-2}
mhd_pool=${BENCH_MHD_POOL:-2}
cycle_small=${BENCH_CYCLE_SMALL:-200}
cycle_large=${BENCH_CYCLE_LARGE:-4096}
here=$bench_repo/tests/bench

# shellcheck disable=SC2046
bench_build_c mhd_hello "$SHARED/bench/ceilings/mhd_hello.c" $(pkg-config --cflags --libs libmicrohttpd)

bench_pg_start || bench_die "could not start PostgreSQL"
# shellcheck disable=SC2086
bench_floe_start ${FLOE_SERVE_ARGS:-}

mhd_port=$(pg_throwaway_free_port)
"$BT/mhd_hello" "$mhd_port" "$mhd_pool" </dev/null >"$BT/mhd.log" 2>&1 &
BENCH_PIDS+=($!)
for _ in $(seq 1 100); do
	curl -fsS "http://127.0.0.1:$mhd_port/" >/dev/null 2>&1 && break
	sleep 0.1
done
mhd_bytes=$(curl -fsS "http://127.0.0.1:$mhd_port/meta" | wc -c) || bench_die "mhd_hello did not start"

ntables=$cycle_small
[ "$cycle_large" -gt "$ntables" ] && ntables=$cycle_large
echo "load_table_bench: creating $ntables tables with ~$mhd_bytes-byte loadTable bodies..." >&2
created=$(node "$here/bench_client.mjs" create-tables --base "$BASE" --p "$P" --ns lt \
	--count "$ntables" --target-bytes "$mhd_bytes" --concurrency 8) || bench_die "creating tables failed"
route="$P/namespaces/lt/tables/t0"
floe_bytes=$(curl -fsS "$BASE$route" | wc -c) || bench_die "GET $route failed"
curl -fsS "$BASE$route" | jq -e '.metadata."table-uuid"' >/dev/null || bench_die "GET $route: no metadata"
# A view whose loadView body is about as large: 34-byte properties fill what the rest leaves.
vroute="$P/namespaces/lt/views/v"
jq -n --argjson n $(((mhd_bytes - 900) / 34)) '{name: "v",
	schema: {type: "struct", "schema-id": 0, fields: [{id: 1, name: "a", type: "long", required: false}]},
	"view-version": {"version-id": 1, "timestamp-ms": 1700000000000, "schema-id": 0,
		summary: {"engine-name": "bench"}, "default-namespace": ["lt"],
		representations: [{type: "sql", sql: "SELECT a FROM lt.t0", dialect: "spark"}]},
	properties: ([range(0; $n)] | map({key: ("view.prop.\(10000 + .)"), value: "value-0123456"}) | from_entries)}' \
	>"$BT/view.json"
curl -fsS -XPOST -H 'Content-Type: application/json' "$BASE$P/namespaces/lt/views" -d @"$BT/view.json" \
	>/dev/null || bench_die "creating the view failed"
view_bytes=$(curl -fsS "$BASE$vroute" | wc -c) || bench_die "GET $vroute failed"

xacts()
{
	bench_psql "SELECT xact_commit + xact_rollback FROM pg_stat_database WHERE datname = 'postgres'"
}

# CPU time (utime + stime, clock ticks) of the daemon, and of PostgreSQL's backends (the
# postmaster's children; the pool keeps its connections, so none exits during a run).
cpu_ticks()
{
	local pm pid t sum=0
	pm=$(head -n 1 "$PGT_DIR/data/postmaster.pid")
	awk '{ print $14 + $15 }' "/proc/$FLOE_PID/stat"
	for pid in $(pgrep -P "$pm"); do
		t=$(awk '{ print $14 + $15 }' "/proc/$pid/stat" 2>/dev/null) || t=0
		sum=$((sum + ${t:-0}))
	done
	echo "$sum"
}

# One wrk run; sets R_RPS, R_P50, R_P99 (milliseconds), R_REQ, R_ERR, R_XPR (PostgreSQL
# transactions per request), R_FCPU and R_PCPU (microseconds of CPU per request of the
# daemon and of PostgreSQL); the last three are "-" for servers other than Floe.
measure()
{
	local url=$1 script=${2:-} floe=${3:-0} out="$BT/wrk.out" x0=0 x1=0 c0=() c1=()
	if [ "$floe" = 1 ]; then
		sleep 2 # let idle backends flush their statistics
		x0=$(xacts)
		mapfile -t c0 < <(cpu_ticks)
	fi
	wrk -t"$wrk_threads" -c"$conns" -d"$duration" --latency ${script:+-s "$script"} "$url" \
		>"$out" 2>&1 || {
		cat "$out" >&2
		bench_die "wrk failed against $url"
	}
	[ "$floe" = 1 ] && mapfile -t c1 < <(cpu_ticks)
	cat "$out" >>"$BT/wrk.all"
	R_RPS=$(awk '/^Requests\/sec:/ { print $2 }' "$out")
	R_REQ=$(awk '/requests in/ { print $1 }' "$out")
	ms()
	{
		awk -v p="$1" '$1 == p {
			v = $2; u = v; sub(/[0-9.]+/, "", u); sub(/[a-z]+$/, "", v)
			if (u == "us") v /= 1000; else if (u == "s") v *= 1000; else if (u == "m") v *= 60000
			printf "%.3f", v }' "$out"
	}
	R_P50=$(ms 50%)
	R_P99=$(ms 99%)
	R_ERR=$(awk '/Non-2xx or 3xx responses:/ { n += $NF } /Socket errors:/ {
		for (i = 3; i <= NF; i++) if ($i ~ /^[0-9]+,?$/) n += $i } END { print n + 0 }' "$out")
	R_RPS=${R_RPS:-0} R_P50=${R_P50:-0} R_P99=${R_P99:-0} R_REQ=${R_REQ:-0}
	R_XPR=- R_FCPU=- R_PCPU=-
	if [ "$floe" = 1 ]; then
		sleep 2
		x1=$(xacts)
		R_XPR=$(awk -v a="$x0" -v b="$x1" -v n="$R_REQ" 'BEGIN { printf "%.3f", (n > 0 ? (b - a) / n : 0) }')
		R_FCPU=$(per_request_us "${c0[0]}" "${c1[0]}" "$R_REQ")
		R_PCPU=$(per_request_us "${c0[1]}" "${c1[1]}" "$R_REQ")
	fi
}

# Microseconds per request from two clock-tick readings and a request count.
per_request_us()
{
	awk -v a="$1" -v b="$2" -v n="$3" -v hz="$(getconf CLK_TCK)" \
		'BEGIN { printf "%.0f", (n > 0 ? (b - a) * 1e6 / hz / n : 0) }'
}

echo "== load_table_bench: loadTable vs the libmicrohttpd ceiling (same run) =="
bench_env_line
echo "floe: $("$FLOE_BIN" version 2>/dev/null | head -n 1), serve flags: ${FLOE_SERVE_ARGS:-(defaults: --threads 0 --db-pool-size 20, i.e. 16 threads)}"
echo "setup: $(jq -r '"\(.created) tables created in \(.seconds) s, \(.properties) properties each"' <<<"$created");" \
	"loadTable body $floe_bytes bytes (GET $route); loadView body $view_bytes bytes (GET $vroute);" \
	"mhd_hello /meta body $mhd_bytes bytes, pool=$mhd_pool"
echo "load: wrk -t$wrk_threads -c$conns -d$duration --latency (wrk shares the $(nproc) cores with the server)"
echo

measure "$BASE$route" "" 1
f1=("$R_RPS" "$R_P50" "$R_P99" "$R_ERR" "$R_XPR" "$R_FCPU" "$R_PCPU")
measure "http://127.0.0.1:$mhd_port/meta"
m=("$R_RPS" "$R_P50" "$R_P99" "$R_ERR" "$R_XPR" "$R_FCPU" "$R_PCPU")
measure "$BASE$vroute" "" 1
fv=("$R_RPS" "$R_P50" "$R_P99" "$R_ERR" "$R_XPR" "$R_FCPU" "$R_PCPU")
export BENCH_PATH_PREFIX="$P/namespaces/lt/tables/t"
BENCH_NTABLES=$cycle_small measure "$BASE" "$here/cycle_tables.lua" 1
f2=("$R_RPS" "$R_P50" "$R_P99" "$R_ERR" "$R_XPR" "$R_FCPU" "$R_PCPU")
f3=(0 0 0 0 - - -)
if [ "$cycle_large" -gt 0 ]; then
	BENCH_NTABLES=$cycle_large measure "$BASE" "$here/cycle_tables.lua" 1
	f3=("$R_RPS" "$R_P50" "$R_P99" "$R_ERR" "$R_XPR" "$R_FCPU" "$R_PCPU")
fi

row()
{
	printf '%-50s %11.0f %8.3f %8.3f %7d %9s %11s %9s\n' "$1" "$2" "$3" "$4" "$5" "$6" "$7" "$8"
}
printf '%-50s %11s %8s %8s %7s %9s %11s %9s\n' "target" "requests/s" "p50 ms" "p99 ms" "errors" \
	"PG tx/req" "floe us/req" "PG us/req"
row "floe loadTable, 1 table" "${f1[@]}"
row "mhd_hello GET /meta (ceiling)" "${m[@]}"
row "floe loadView, 1 view" "${fv[@]}"
row "floe loadTable, cycling $cycle_small tables" "${f2[@]}"
[ "$cycle_large" -gt 0 ] && row "floe loadTable, cycling $cycle_large tables" "${f3[@]}"
echo "(PG tx/req = PostgreSQL transactions per request: ~0 served from Floe's loadTable cache;" \
	"misses are read up to 64 per statement, ~0.1 when all miss; us/req = CPU microseconds per request of the daemon and of" \
	"PostgreSQL's backends)"
echo
echo "ratio floe/ceiling, 1 table: throughput $(bench_ratio "${f1[0]}" "${m[0]}")," \
	"p99 $(bench_ratio "${f1[2]}" "${m[2]}")x"
echo "ratio floe/ceiling, 1 view (loadView): throughput $(bench_ratio "${fv[0]}" "${m[0]}")," \
	"p99 $(bench_ratio "${fv[2]}" "${m[2]}")x"
echo "ratio floe/ceiling, cycling $cycle_small tables: throughput $(bench_ratio "${f2[0]}" "${m[0]}")," \
	"p99 $(bench_ratio "${f2[2]}" "${m[2]}")x"
[ "$cycle_large" -gt 0 ] &&
	echo "ratio floe/ceiling, cycling $cycle_large tables: throughput $(bench_ratio "${f3[0]}" "${m[0]}")," \
		"p99 $(bench_ratio "${f3[2]}" "${m[2]}")x"
bench_load_line
if [ "${f1[3]}" != 0 ] || [ "${m[3]}" != 0 ] || [ "${fv[3]}" != 0 ] || [ "${f2[3]}" != 0 ] || [ "${f3[3]}" != 0 ]; then
	echo "load_table_bench: some requests failed (see the errors column); figures are not comparable" >&2
	exit 1
fi
