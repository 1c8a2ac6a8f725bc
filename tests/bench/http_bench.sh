#!/usr/bin/env bash
# HTTP benchmark: Floe's GET namespace route against the libmicrohttpd ceiling, in one run.
#
# Usage: tests/bench/http_bench.sh
# Environment:
#   FLOE_BIN         the daemon to measure (default: a release build in build-bench/,
#                    configured and compiled on demand)
#   FLOE_SHARED_DIR  where bench/ceilings/mhd_hello.c is (default: ../shared)
#   BENCH_DURATION (10s) BENCH_CONNECTIONS (64) BENCH_THREADS (2)   wrk settings
#   BENCH_MHD_POOL (2)   mhd_hello's thread pool
#
# Starts a throwaway PostgreSQL, migrates it, starts `floe serve --port 0`, creates one
# namespace, then runs `wrk --latency` against GET /v1/{prefix}/namespaces/{ns} and against
# mhd_hello's GET / (built from shared/bench/ceilings/mhd_hello.c into a temporary
# directory), and prints requests/s and p99 latency for both and Floe's ratio to the
# ceiling. Machines here are shared and noisy: compare ratios, not absolute figures. It
# prints figures and never fails because something is slow; it fails only when it cannot
# measure (a build, a start-up or the namespace request failed, or a run had errors).
set -euo pipefail

repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
shared=${FLOE_SHARED_DIR:-$repo/../shared}
duration=${BENCH_DURATION:-10s}
conns=${BENCH_CONNECTIONS:-64}
wrk_threads=${BENCH_THREADS:-2}
mhd_pool=${BENCH_MHD_POOL:-2}

# shellcheck source=scripts/pg-throwaway.sh
source "$repo/scripts/pg-throwaway.sh"

tmp=$(mktemp -d "${TMPDIR:-/tmp}/floe-bench.XXXXXX")
floe_pid=
mhd_pid=

stop_pid()
{
	local pid=$1
	[ -n "$pid" ] || return 0
	kill -TERM "$pid" 2>/dev/null || return 0
	for _ in $(seq 1 100); do
		kill -0 "$pid" 2>/dev/null || break
		sleep 0.1
	done
	kill -KILL "$pid" 2>/dev/null || true
	wait "$pid" 2>/dev/null || true
}

cleanup()
{
	set +e # an EXIT trap under errexit would stop at its first failure
	stop_pid "$floe_pid"
	stop_pid "$mhd_pid"
	pg_throwaway_stop
	rm -rf "$tmp"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

die()
{
	echo "http_bench: $*" >&2
	exit 1
}

for tool in wrk curl jq cc pkg-config; do
	command -v "$tool" >/dev/null 2>&1 || die "$tool not found (scripts/install-deps.sh --test)"
done
[ -f "$shared/bench/ceilings/mhd_hello.c" ] || die "no $shared/bench/ceilings/mhd_hello.c; set FLOE_SHARED_DIR"

if [ -z "${FLOE_BIN:-}" ]; then
	if [ ! -f "$repo/build-bench/meson-private/coredata.dat" ]; then
		meson setup "$repo/build-bench" "$repo" --buildtype=release -Dtests=false >/dev/null
	fi
	meson compile -C "$repo/build-bench" >/dev/null || die "build failed (meson compile -C build-bench)"
	FLOE_BIN=$repo/build-bench/server/floe
fi
[ -x "$FLOE_BIN" ] || die "FLOE_BIN=$FLOE_BIN is not an executable"

# The ceiling, compiled here rather than committed.
# shellcheck disable=SC2046
cc -O2 -o "$tmp/mhd_hello" "$shared/bench/ceilings/mhd_hello.c" $(pkg-config --cflags --libs libmicrohttpd) ||
	die "could not compile mhd_hello"

pg_throwaway_start || die "could not start PostgreSQL"
db_url="postgresql://postgres@127.0.0.1:$PGT_PORT/postgres"

"$FLOE_BIN" migrate --database-url="$db_url" >"$tmp/migrate.log" 2>&1 || {
	cat "$tmp/migrate.log" >&2
	die "floe migrate failed"
}
"$FLOE_BIN" serve --port=0 --database-url="$db_url" --data-dir="$tmp/floe" \
	</dev/null >"$tmp/floe.log" 2>&1 &
floe_pid=$!
port=
for _ in $(seq 1 300); do
	port=$(sed -n 's/.*listening on http:\/\/[^ "]*:\([0-9][0-9]*\).*/\1/p' "$tmp/floe.log" | head -n 1)
	[ -n "$port" ] && break
	kill -0 "$floe_pid" 2>/dev/null || break
	sleep 0.1
done
[ -n "$port" ] || {
	cat "$tmp/floe.log" >&2
	die "floe did not report its port"
}
base="http://127.0.0.1:$port"

prefix=$(curl -fsS "$base/v1/config" | jq -r '.overrides.prefix // .defaults.prefix // empty') ||
	die "GET /v1/config failed"
ns=bench
route="/v1/${prefix:+$prefix/}namespaces/$ns"
curl -fsS -X POST -H 'Content-Type: application/json' \
	-d "{\"namespace\":[\"$ns\"],\"properties\":{\"owner\":\"bench\"}}" \
	"$base/v1/${prefix:+$prefix/}namespaces" >/dev/null || die "create namespace failed"
curl -fsS "$base$route" >/dev/null || die "GET $route failed"

mhd_port=$(pg_throwaway_free_port)
"$tmp/mhd_hello" "$mhd_port" "$mhd_pool" </dev/null >"$tmp/mhd.log" 2>&1 &
mhd_pid=$!
for _ in $(seq 1 100); do
	curl -fsS "http://127.0.0.1:$mhd_port/" >/dev/null 2>&1 && break
	sleep 0.1
done
curl -fsS "http://127.0.0.1:$mhd_port/" >/dev/null || die "mhd_hello did not start"

# One wrk run; sets R_RPS, R_P99 (milliseconds; wrk prints a unit) and R_ERR.
measure()
{
	local url=$1 out="$tmp/wrk.out"
	wrk -t"$wrk_threads" -c"$conns" -d"$duration" --latency "$url" >"$out" 2>&1 || {
		cat "$out" >&2
		die "wrk failed against $url"
	}
	cat "$out" >>"$tmp/wrk.all"
	R_RPS=$(awk '/^Requests\/sec:/ { print $2 }' "$out")
	R_P99=$(awk '$1 == "99%" {
		v = $2; u = v; sub(/[0-9.]+/, "", u); sub(/[a-z]+$/, "", v)
		if (u == "us") v /= 1000; else if (u == "s") v *= 1000; else if (u == "m") v *= 60000
		printf "%.3f", v }' "$out")
	R_ERR=$(awk '/Non-2xx or 3xx responses:/ { n += $NF } /Socket errors:/ {
		for (i = 3; i <= NF; i++) if ($i ~ /^[0-9]+,?$/) n += $i } END { print n + 0 }' "$out")
	R_RPS=${R_RPS:-0}
	R_P99=${R_P99:-0}
}

echo "http_bench: wrk -t$wrk_threads -c$conns -d$duration --latency on $(nproc) cores;" \
	"$("$FLOE_BIN" version 2>/dev/null | head -n 1) with default settings; mhd_hello pool=$mhd_pool"
measure "$base$route"
f_rps=$R_RPS f_p99=$R_P99 f_err=$R_ERR
measure "http://127.0.0.1:$mhd_port/"
m_rps=$R_RPS m_p99=$R_P99 m_err=$R_ERR

printf '%-44s %12s %10s %8s\n' "target" "requests/s" "p99 ms" "errors"
printf '%-44s %12.0f %10.3f %8d\n' "floe GET $route" "$f_rps" "$f_p99" "$f_err"
printf '%-44s %12.0f %10.3f %8d\n' "mhd_hello GET / (ceiling)" "$m_rps" "$m_p99" "$m_err"
awk -v fr="$f_rps" -v mr="$m_rps" -v fp="$f_p99" -v mp="$m_p99" 'BEGIN {
	printf "ratio floe/ceiling: throughput %.3f, p99 latency %.2fx\n",
		(mr > 0 ? fr / mr : 0), (mp > 0 ? fp / mp : 0) }'
if [ "$f_err" != 0 ] || [ "$m_err" != 0 ]; then
	echo "http_bench: some requests failed (see the error column); figures are not comparable" >&2
	exit 1
fi
