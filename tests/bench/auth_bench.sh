#!/usr/bin/env bash
# Authentication overhead: loadTable with a verified Bearer token against the same loadTable
# without authentication, in one run (issue 8; goal: the authenticated rate >= 0.9 of the
# unauthenticated one, because verified tokens are cached until their exp and signature
# checks stay off the hot path).
#
# Usage: tests/bench/auth_bench.sh
# Environment:
#   FLOE_BIN          the daemon to measure (default: release build in build-bench/, built here)
#   BENCH_DURATION (8s) BENCH_CONNECTIONS (64) BENCH_THREADS (2)   wrk settings
#   BENCH_ROUNDS (2)  alternating rounds (none, token, none, token, ...) to even out drift
#
# Steps: throwaway PostgreSQL, two `floe serve` over the same database -- one with
# --auth none, one with --auth token (a bootstrap admin; the token comes from
# POST /v1/oauth/tokens) -- one table of a ~4 KB loadTable body, then wrk rounds against
# each in turn. Prints requests/s and p99 of both and the ratio token/none. Fails only when
# it cannot measure.
set -euo pipefail

# shellcheck source=tests/bench/bench_lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/bench_lib.sh"
bench_init auth_bench
bench_need wrk curl jq node

duration=${BENCH_DURATION:-8s}
conns=${BENCH_CONNECTIONS:-64}
wrk_threads=${BENCH_THREADS:-2}
rounds=${BENCH_ROUNDS:-2}
here=$bench_repo/tests/bench

bench_pg_start || bench_die "could not start PostgreSQL"
bench_floe_start --auth none
NONE_BASE=$BASE
node "$here/bench_client.mjs" create-tables --base "$BASE" --p "$P" --ns ab --count 1 \
	--target-bytes 4000 >/dev/null || bench_die "creating the table failed"
route="$P/namespaces/ab/tables/t0"

# The token server: same database, auth on, a bootstrap admin whose secret exists only here.
secret=$(head -c 24 /dev/urandom | od -An -tx1 | tr -d ' \n')
log="$BT/floe-token.log"
FLOE_BOOTSTRAP_CLIENT_ID=bench FLOE_BOOTSTRAP_CLIENT_SECRET=$secret \
	"$FLOE_BIN" serve --port=0 --database-url="$DB_URL" --data-dir="$BT/floe2" --auth token \
	</dev/null >"$log" 2>&1 &
BENCH_PIDS+=($!)
port=
for _ in $(seq 1 300); do
	port=$(sed -n 's/.*listening on http:\/\/[^ "]*:\([0-9][0-9]*\).*/\1/p' "$log" | head -n 1)
	[ -n "$port" ] && break
	sleep 0.1
done
[ -n "$port" ] || bench_die "the token server did not report its port"
TOKEN_BASE="http://127.0.0.1:$port"
token=$(curl -fsS -u "bench:$secret" -d 'grant_type=client_credentials&scope=catalog' \
	"$TOKEN_BASE/v1/oauth/tokens" | jq -r .access_token) || bench_die "token request failed"
status=$(curl -s -o /dev/null -w '%{http_code}' "$TOKEN_BASE$route")
[ "$status" = 401 ] || bench_die "the token server answered $status without a token"
curl -fsS -H "Authorization: Bearer $token" "$TOKEN_BASE$route" | jq -e '.metadata."table-uuid"' \
	>/dev/null || bench_die "loadTable with the token failed"

# One wrk run; sets R_RPS, R_P99 (ms), R_ERR.
measure()
{
	local out="$BT/wrk.out"
	wrk -t"$wrk_threads" -c"$conns" -d"$duration" --latency "$@" >"$out" 2>&1 || {
		cat "$out" >&2
		bench_die "wrk failed"
	}
	R_RPS=$(awk '/^Requests\/sec:/ { print $2 }' "$out")
	R_P99=$(awk '$1 == "99%" { v = $2; u = v; sub(/[0-9.]+/, "", u); sub(/[a-z]+$/, "", v)
		if (u == "us") v /= 1000; else if (u == "s") v *= 1000; printf "%.3f", v }' "$out")
	R_ERR=$(awk '/Non-2xx or 3xx responses:/ { n += $NF } /Socket errors:/ {
		for (i = 3; i <= NF; i++) if ($i ~ /^[0-9]+,?$/) n += $i } END { print n + 0 }' "$out")
}

echo "== auth_bench: loadTable with a verified Bearer token vs without auth (same run) =="
bench_env_line
echo "load: wrk -t$wrk_threads -c$conns -d$duration --latency, $rounds alternating round(s) each"
none_sum=0 tok_sum=0 errors=0
printf '%-34s %11s %8s %7s\n' "target" "requests/s" "p99 ms" "errors"
for i in $(seq 1 "$rounds"); do
	measure "$NONE_BASE$route"
	printf '%-34s %11.0f %8.3f %7d\n' "round $i: auth none" "$R_RPS" "$R_P99" "$R_ERR"
	none_sum=$(awk -v a="$none_sum" -v b="$R_RPS" 'BEGIN { print a + b }')
	errors=$((errors + R_ERR))
	measure -H "Authorization: Bearer $token" "$TOKEN_BASE$route"
	printf '%-34s %11.0f %8.3f %7d\n' "round $i: auth token (Bearer)" "$R_RPS" "$R_P99" "$R_ERR"
	tok_sum=$(awk -v a="$tok_sum" -v b="$R_RPS" 'BEGIN { print a + b }')
	errors=$((errors + R_ERR))
done
echo "ratio token/none (throughput, summed over rounds): $(bench_ratio "$tok_sum" "$none_sum") (goal >= 0.9)"
bench_load_line
if [ "$errors" != 0 ]; then
	echo "auth_bench: some requests failed; figures are not comparable" >&2
	exit 1
fi
