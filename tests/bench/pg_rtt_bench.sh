#!/usr/bin/env bash
# Commit latency when PostgreSQL is across a network: one writer's commit p50 at several
# round-trip times to the database, beside the txn.sql ceiling's transaction at the same
# round-trip times, and how many round trips each pays (the slope of latency against RTT).
#
# Usage: tests/bench/pg_rtt_bench.sh
# Environment:
#   FLOE_BIN          the daemon to measure (default: release build in build-bench/, built here)
#   FLOE_SHARED_DIR   where bench/ceilings/*.sql are (default: ../shared)
#   BENCH_DELAYS_US ("0 500 1000 1500")   one-way delays added between Floe and PostgreSQL
#   BENCH_SECONDS (6)                length of each run
#   BENCH_MBIT (0)                   the link's rate in megabits per second, each way, shared
#                                    by every connection (0 = no limit)
#   BENCH_HOT_CLIENTS (0)            also, at each delay, this many writers racing on one
#                                    hot table that starts empty (0 = not run)
#   BENCH_HOT_SECONDS (10)           length of the hot run (the table grows all along)
#   FLOE_SERVE_ARGS                  extra `floe serve` flags
#
# Steps: throwaway PostgreSQL (durable), then for each delay a delay_proxy.c in front of it
# (every chunk forwarded DELAY µs after it arrived, each way: a network of that latency, and
# of BENCH_MBIT's rate when set), and through it
#   1. pgbench -c 1 with `SELECT 1`: the round trip it makes (RTT);
#   2. pgbench -M prepared -c 1 with shared/bench/ceilings/txn.sql: the ceiling's commit;
#   3. `floe serve` connected through the proxy, 50 tables, one commit_writer client appending
#      PyIceberg-style across them, with an Idempotency-Key on every commit and without;
#   4. with BENCH_HOT_CLIENTS, that many keyed writers on one hot table: won commits/s, p50,
#      and the table's snapshots and document size at the end.
# The writer talks to Floe directly: only the database is far.  A commit's latency grows by
# one RTT per round trip it makes to PostgreSQL in series; the script prints that count (the
# least-squares slope of latency against RTT over the delays) for Floe and for the ceiling.  Local durability (the
# metadata file's fsync, PostgreSQL's WAL flush) is in every figure and cancels in the slope.
# Prints figures; fails only when it cannot measure.
set -euo pipefail

# shellcheck source=tests/bench/bench_lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/bench_lib.sh"
bench_init pg_rtt_bench
bench_need curl jq cc node

delays=${BENCH_DELAYS_US:-0 500 1000 1500}
seconds=${BENCH_SECONDS:-6}
mbit=${BENCH_MBIT:-0}
hot_clients=${BENCH_HOT_CLIENTS:-0}
hot_seconds=${BENCH_HOT_SECONDS:-10}
here=$bench_repo/tests/bench
ceil=$SHARED/bench/ceilings
for f in schema.sql txn.sql; do
	[ -f "$ceil/$f" ] || bench_die "no $ceil/$f"
done

cc -O2 -pthread -o "$BT/commit_writer" "$here/commit_writer.c" -lzstd ||
	bench_die "could not compile commit_writer.c"
cc -O2 -pthread -o "$BT/delay_proxy" "$here/delay_proxy.c" || bench_die "could not compile delay_proxy.c"
bench_pg_start || bench_die "could not start PostgreSQL"
[ -x "$PGT_BIN/pgbench" ] || bench_die "no $PGT_BIN/pgbench (postgresql-contrib)"
direct_url=$DB_URL
bench_psql "CREATE DATABASE ceiling"
PGOPTIONS="-c client_min_messages=warning" "$PGT_BIN/psql" -X -q -v ON_ERROR_STOP=1 -h 127.0.0.1 \
	-p "$PGT_PORT" -U postgres -d ceiling -f "$ceil/schema.sql" >/dev/null || bench_die "schema.sql failed"
echo 'SELECT 1;' >"$BT/one.sql"

# pgbench -c 1 through port $1 with script $2 in database $3 for $4 s: the mean latency in ms.
pgb_latency()
{
	(cd "$BT" && "$PGT_BIN/pgbench" -h 127.0.0.1 -p "$1" -U postgres -n -M prepared -f "$2" \
		-c 1 -T "$4" "$3") >"$BT/pgbench.out" 2>&1 || {
		cat "$BT/pgbench.out" >&2
		bench_die "pgbench $2 failed"
	}
	awk '/^latency average/ { print $4; exit }' "$BT/pgbench.out"
}

# One writer's commits across $2 tables of namespace $1, keyed ($3 = 1) or not: p50 in ms.
writer_p50()
{
	local out
	out=$("$BT/commit_writer" --port "${BASE##*:}" --prefix "$P" --ns "$1" --tables "$2" \
		--clients 1 --duration "$seconds" --idempotency "$3") || bench_die "commit run failed"
	jq -r '"\(.commit_p50_ms) \(.commits_per_s) \(.errors)"' <<<"$out"
}

echo "== pg_rtt_bench: one writer's commit latency against the round trip to PostgreSQL =="
bench_env_line
bench_fs_line
echo "floe: $("$FLOE_BIN" version 2>/dev/null | head -n 1), serve flags: ${FLOE_SERVE_ARGS:-(defaults)}; ${seconds} s per run; the writer talks to Floe directly, PostgreSQL is behind delay_proxy"
echo "link: $([ "$mbit" = 0 ] && echo "no bandwidth limit" || echo "$mbit Mbit/s each way, shared by every connection")"
echo
printf '%-10s %9s %12s %14s %14s %12s %12s\n' "delay us" "RTT ms" "txn.sql ms" "floe keyed ms" "floe plain ms" "keyed/s" "plain/s"
n=0
declare -a R T K U H
for d in $delays; do
	port=$(pg_throwaway_free_port)
	"$BT/delay_proxy" "$port" "$PGT_PORT" "$d" "$mbit" >"$BT/proxy.$n.log" 2>&1 &
	proxy=$!
	BENCH_PIDS+=("$proxy")
	for _ in $(seq 1 50); do
		grep -q ready "$BT/proxy.$n.log" 2>/dev/null && break
		sleep 0.1
	done
	rtt=$(pgb_latency "$port" "$BT/one.sql" postgres 3)
	txn=$(pgb_latency "$port" "$ceil/txn.sql" ceiling "$seconds")
	DB_URL="postgresql://postgres@127.0.0.1:$port/postgres"
	# shellcheck disable=SC2086 # flags, word-split on purpose
	bench_floe_start --data-dir="$BT/floe.$n" ${FLOE_SERVE_ARGS:-}
	node "$here/bench_client.mjs" create-tables --base "$BASE" --p "$P" --ns "rtt$n" --count 50 \
		--concurrency 4 >/dev/null || bench_die "creating tables failed"
	read -r keyed keyed_rate keyed_err <<<"$(writer_p50 "rtt$n" 50 1)"
	read -r plain plain_rate plain_err <<<"$(writer_p50 "rtt$n" 50 0)"
	if [ "$keyed_err" != 0 ] || [ "$plain_err" != 0 ]; then
		bench_die "the writer saw errors (delay $d us)"
	fi
	if [ "$hot_clients" -gt 0 ]; then
		node "$here/bench_client.mjs" create-tables --base "$BASE" --p "$P" --ns "hot$n" --count 1 \
			>/dev/null || bench_die "creating the hot table failed"
		hot_out=$("$BT/commit_writer" --port "${BASE##*:}" --prefix "$P" --ns "hot$n" --tables 1 \
			--clients "$hot_clients" --duration "$hot_seconds" --idempotency 1) || bench_die "hot run failed"
		curl -fsS -o "$BT/hot.json" "$BASE$P/namespaces/hot$n/tables/t0" || bench_die "loading the hot table failed"
		hot_body=$(wc -c <"$BT/hot.json")
		hot_snaps=$(jq '.metadata.snapshots | length' "$BT/hot.json")
		H[n]=$(jq -r --arg d "$d" --arg b "$hot_body" --arg s "$hot_snaps" \
			'"\($d) us: hot table, \(.clients) keyed writers, \(.commits_per_s) won commits/s, p50 \(.commit_p50_ms) ms, p99 \(.commit_p99_ms) ms, commits per writer \(.client_commits_min)-\(.client_commits_max), \(.errors) errors; by the end \($s) snapshots, loadTable body \($b) bytes"' <<<"$hot_out")
	fi
	bench_floe_stop
	kill "$proxy" 2>/dev/null || true
	wait "$proxy" 2>/dev/null || true
	DB_URL=$direct_url
	printf '%-10s %9s %12s %14s %14s %12s %12s\n' "$d" "$rtt" "$txn" "$keyed" "$plain" "$keyed_rate" "$plain_rate"
	R[n]=$rtt T[n]=$txn K[n]=$keyed U[n]=$plain
	n=$((n + 1))
done
if [ "$hot_clients" -gt 0 ]; then
	echo
	printf '%s\n' "${H[@]}"
fi
[ "$n" -ge 2 ] || exit 0
last=$((n - 1))
# The least-squares slope of latency (the arguments, one per delay) against the RTTs.
slope()
{
	echo "${R[*]}" "$@" | awk -v n="$n" '{
		for (i = 1; i <= n; i++) { x = $i; y = $(n + i); sx += x; sy += y; sxx += x * x; sxy += x * y }
		d = n * sxx - sx * sx
		if (d <= 0) print "n/a"; else printf "%.2f", (n * sxy - sx * sy) / d
	}'
}
echo
echo "round trips per commit in series (least-squares slope of latency against RTT, ${R[0]}-${R[$last]} ms):"
echo "  txn.sql (pgbench, one statement per round trip):  $(slope "${T[@]}")"
echo "  floe, Idempotency-Key on every commit:             $(slope "${K[@]}")"
echo "  floe, no Idempotency-Key (PyIceberg's commits):    $(slope "${U[@]}")"
echo "ratio txn.sql / floe keyed commit latency at ${R[$last]} ms RTT: $(awk -v t="${T[$last]}" -v f="${K[$last]}" 'BEGIN { printf "%.2f", t / f }')"
echo "load average now: $(cut -d' ' -f1-3 /proc/loadavg) (1/5/15 min)  [$(date -u +%H:%M:%SZ)]"
