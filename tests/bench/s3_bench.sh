#!/usr/bin/env bash
# S3 benchmark, in one run: `floe ingest` of the same gencsv file into an S3 warehouse on
# moto_server (signature checks on) and into the local file warehouse, and loadTable of the
# same table on both warehouses with wrk. The ingest ratio shows what the object-store path
# costs (SigV4, multipart uploads through moto's Python HTTP server); the loadTable ratio
# should be ~1: loadTable reads PostgreSQL only (the moto request count during the S3 wrk
# run is printed and should be 0).
#
# Usage: tests/bench/s3_bench.sh
# Environment:
#   FLOE_BIN          the binary to measure (default: release build in build-bench/, built here)
#   FLOE_SHARED_DIR   where bench/gencsv.c is (default: ../shared)
#   BENCH_ROWS (760000)   rows of the file (~100 MB)
#   BENCH_DURATION (10s) BENCH_CONNECTIONS (64) BENCH_THREADS (2)   wrk settings
# Needs moto_server (the machine image's Python); without it prints "skipped: no S3 server"
# and exits 0. Prints figures and ratios; fails only when it cannot measure.
set -euo pipefail

# shellcheck source=tests/bench/bench_lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/bench_lib.sh"
case ${1:-} in
-h | --help)
	sed -n '2,16p' "$0"
	exit 0
	;;
esac
bench_init s3_bench
bench_need curl jq cc wrk
[ -x /usr/bin/time ] || bench_die "/usr/bin/time not found (Debian package time)"
if ! command -v moto_server >/dev/null 2>&1 || ! python3 -c 'import moto.server' 2>/dev/null; then
	echo "skipped: no S3 server"
	exit 0
fi

rows=${BENCH_ROWS:-760000}
duration=${BENCH_DURATION:-10s}
conns=${BENCH_CONNECTIONS:-64}
wrk_threads=${BENCH_THREADS:-2}
[ -f "$SHARED/bench/gencsv.c" ] || bench_die "no $SHARED/bench/gencsv.c"
bench_build_c gencsv "$SHARED/bench/gencsv.c"

# ---- moto with signature checks (the recipe of tests/integration/lib/moto.mjs) ----
moto_port=$(pg_throwaway_free_port)
MOTO="http://127.0.0.1:$moto_port"
INITIAL_NO_AUTH_ACTION_COUNT=0 python3 "$bench_repo/tests/integration/lib/moto_server.py" \
	-H 127.0.0.1 -p "$moto_port" >"$BT/moto.log" 2>&1 &
BENCH_PIDS+=($!)
for _ in $(seq 1 300); do
	curl -fs -o /dev/null "$MOTO/moto-api/" && break
	sleep 0.1
done
curl -fsS -o /dev/null -X POST -H 'Content-Type: text/plain' --data 3 "$MOTO/moto-api/reset-auth" ||
	bench_die "moto did not start (see $BT/moto.log)"
iam()
{
	curl -fsS --aws-sigv4 aws:amz:us-east-1:iam --user setup:setup \
		-H 'Content-Type: application/x-www-form-urlencoded' --data "$1&Version=2010-05-08" "$MOTO/"
}
iam 'Action=CreateUser&UserName=bench' >/dev/null || bench_die "IAM CreateUser failed"
keys=$(iam 'Action=CreateAccessKey&UserName=bench') || bench_die "IAM CreateAccessKey failed"
iam "Action=PutUserPolicy&UserName=bench&PolicyName=all&PolicyDocument=$(jq -rn --arg p \
	'{"Version":"2012-10-17","Statement":[{"Effect":"Allow","Action":"*","Resource":"*"}]}' '$p|@uri')" \
	>/dev/null || bench_die "IAM PutUserPolicy failed"
BENCH_S3_AK=$(sed -n 's:.*<AccessKeyId>\([^<]*\)</AccessKeyId>.*:\1:p' <<<"$keys")
BENCH_S3_SK=$(sed -n 's:.*<SecretAccessKey>\([^<]*\)</SecretAccessKey>.*:\1:p' <<<"$keys")
export BENCH_S3_AK BENCH_S3_SK
curl -fsS -o /dev/null -X PUT --aws-sigv4 aws:amz:us-east-1:s3 --user "$BENCH_S3_AK:$BENCH_S3_SK" \
	-H 'x-amz-content-sha256: UNSIGNED-PAYLOAD' "$MOTO/bench" || bench_die "create bucket failed"
moto_requests()
{
	grep -c '" [0-9][0-9][0-9] ' "$BT/moto.log" || true
}

# ---- catalog: the file warehouse `default` and the S3 warehouse `s3wh` ----
bench_pg_start || bench_die "could not start PostgreSQL"
bench_floe_start --log-level=info
curl -fsS -o "$BT/wh.json" -X POST "$BASE/management/v1/warehouses" -d "{\"name\": \"s3wh\",
	\"storage-profile\": {\"type\": \"s3\", \"location\": \"s3://bench/wh\", \"endpoint\": \"$MOTO\",
	\"region\": \"us-east-1\", \"path-style-access\": true,
	\"access-key-id-env\": \"BENCH_S3_AK\", \"secret-access-key-env\": \"BENCH_S3_SK\"}}" ||
	bench_die "create the s3 warehouse failed"
schema=$BENCH_GENCSV_SCHEMA
for wh in default s3wh; do
	curl -fsS -o /dev/null -X POST -d '{"namespace":["ing"]}' "$BASE/v1/$wh/namespaces" ||
		bench_die "create namespace in $wh failed"
	curl -fsS -o /dev/null -X POST -d "{\"name\":\"events\",\"schema\":$schema}" \
		"$BASE/v1/$wh/namespaces/ing/tables" || bench_die "create table in $wh failed"
done

echo "s3_bench: generating $rows rows..." >&2
"$BT/gencsv" "$rows" >"$BT/x.csv"
bytes=$(stat -c %s "$BT/x.csv")

now_ns()
{
	date +%s%N
}

# run_ingest WAREHOUSE -> I_SEC I_RSS_KB I_BYTES I_FILES
run_ingest()
{
	local t0 t1
	t0=$(now_ns)
	/usr/bin/time -v -o "$BT/time.txt" "$FLOE_BIN" ingest --database-url="$DB_URL" --warehouse "$1" \
		--table ing.events "$BT/x.csv" >"$BT/ingest.json" 2>"$BT/ingest.err" || {
		cat "$BT/ingest.json" "$BT/ingest.err" >&2
		bench_die "floe ingest into $1 failed"
	}
	t1=$(now_ns)
	[ "$(jq -r .status "$BT/ingest.json")" = committed ] || bench_die "ingest into $1 did not commit"
	I_SEC=$(awk -v a="$t0" -v b="$t1" 'BEGIN { printf "%.3f", (b - a) / 1e9 }')
	I_RSS_KB=$(awk -F': ' '/Maximum resident set size/ { print $2 }' "$BT/time.txt")
	I_BYTES=$(jq -r '."bytes-written"' "$BT/ingest.json")
	I_FILES=$(jq -r '."files-written"' "$BT/ingest.json")
}

echo "== s3_bench: floe ingest and loadTable, S3 warehouse (moto) vs file warehouse, same run =="
bench_env_line
echo "floe: $("$FLOE_BIN" version 2>/dev/null | head -n 1); moto $(python3 -c 'import moto; print(moto.__version__)') on 127.0.0.1 with signature checks"
echo
echo "s3_bench: ingest into the file warehouse..." >&2
run_ingest default
f_sec=$I_SEC f_rss=$I_RSS_KB f_bytes=$I_BYTES
m0=$(moto_requests)
echo "s3_bench: ingest into the S3 warehouse..." >&2
run_ingest s3wh
s_sec=$I_SEC s_rss=$I_RSS_KB s_bytes=$I_BYTES s_files=$I_FILES
m1=$(moto_requests)
nrows=$(($(wc -l <"$BT/x.csv") - 1))
echo "-- floe ingest, gencsv $nrows rows, $(awk -v b="$bytes" 'BEGIN { printf "%.1f MB", b / 1e6 }') (in process, one snapshot) --"
printf '%-34s %9s %12s %9s %10s %14s\n' "" "seconds" "rows/s" "MB/s in" "peak RSS" "output bytes"
line()
{
	awk -v l="$1" -v s="$2" -v n="$nrows" -v b="$bytes" -v r="$3" -v o="$4" 'BEGIN {
		printf "%-34s %9.3f %12.0f %9.1f %7.1f MB %14d\n", l, s, n / s, b / 1e6 / s, r / 1024, o }'
}
line "file warehouse (local disk)" "$f_sec" "$f_rss" "$f_bytes"
line "S3 warehouse (moto, $((m1 - m0)) requests)" "$s_sec" "$s_rss" "$s_bytes"
echo "ratio S3/file: seconds $(bench_ratio "$s_sec" "$f_sec")x, peak RSS $(bench_ratio "$s_rss" "$f_rss")x" \
	"($s_files data file(s); multipart parts of 8 MiB)"
echo

# loadTable: one wrk run per warehouse, same table shape and history.
wrk_run()
{
	local out
	out=$(wrk -t"$wrk_threads" -c"$conns" -d"$duration" --latency "$1") || bench_die "wrk failed"
	L_RPS=$(awk '/^Requests\/sec:/ { print $2 }' <<<"$out")
	L_P50=$(awk '$1 == "50%" { print $2 }' <<<"$out")
	L_P99=$(awk '$1 == "99%" { print $2 }' <<<"$out")
	L_ERR=$(awk '/Non-2xx or 3xx responses:/ { print $NF }' <<<"$out")
}
for wh in default s3wh; do
	curl -fsS -o /dev/null "$BASE/v1/$wh/namespaces/ing/tables/events" || bench_die "loadTable $wh failed"
done
echo "s3_bench: loadTable on the file warehouse..." >&2
wrk_run "$BASE/v1/default/namespaces/ing/tables/events"
fl_rps=$L_RPS fl_p50=$L_P50 fl_p99=$L_P99 fl_err=${L_ERR:-0}
echo "s3_bench: loadTable on the S3 warehouse..." >&2
m0=$(moto_requests)
wrk_run "$BASE/v1/s3wh/namespaces/ing/tables/events"
m1=$(moto_requests)
sl_rps=$L_RPS sl_p50=$L_P50 sl_p99=$L_P99 sl_err=${L_ERR:-0}
echo "-- loadTable (wrk -t$wrk_threads -c$conns -d$duration), $(curl -fsS "$BASE/v1/s3wh/namespaces/ing/tables/events" | wc -c) bytes --"
printf '%-34s %10s %9s %9s %8s\n' "" "req/s" "p50" "p99" "non-2xx"
printf '%-34s %10s %9s %9s %8s\n' "file warehouse" "$fl_rps" "$fl_p50" "$fl_p99" "$fl_err"
printf '%-34s %10s %9s %9s %8s\n' "S3 warehouse" "$sl_rps" "$sl_p50" "$sl_p99" "$sl_err"
echo "ratio S3/file: req/s $(bench_ratio "$sl_rps" "$fl_rps") (goal: 1); moto requests during the S3 run: $((m1 - m0)) (goal: 0)"
bench_load_line
