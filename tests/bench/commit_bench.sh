#!/usr/bin/env bash
# Commit benchmark: Floe's commits/s with 16 concurrent PyIceberg-style writers, against the
# pgbench ceilings of the commit path on the same PostgreSQL, in one run.
#
# Usage: tests/bench/commit_bench.sh
# Environment:
#   FLOE_BIN          the daemon to measure (default: release build in build-bench/, built here)
#   FLOE_SHARED_DIR   where bench/ceilings/*.sql are (default: ../shared)
#   BENCH_SECONDS (15)     length of each run
#   BENCH_CLIENTS (16)     concurrent writers (Floe) and pgbench clients
#   BENCH_TABLES (1000)    tables in the many-tables run
#   BENCH_IDEMPOTENCY (1)  send an Idempotency-Key with every commit (0 = do not)
#   BENCH_HOT_SNAPSHOTS (0) grow the hot table to this many snapshots (one writer, one
#                          commit at a time) before its run: the hot figure at that size
#   FLOE_SERVE_ARGS        extra `floe serve` flags, e.g. "--threads 16 --db-pool-size 16"
#   BENCH_WRITER (c)       the writers: c = commit_writer.c (built here; as lean as pgbench,
#                          the ceilings' writer), node = bench_client.mjs (the figures before
#                          December 2026). Same requests; see commit_writer.c for why.
#   BENCH_ACCEPT_ENCODING  (c writers only) sent on every request, e.g. "gzip, deflate, zstd"
#                          (PyIceberg's requests session with urllib3 2.x and zstandard); zstd
#                          answers are decoded by the writer. Unset: none, as before.
#
# Steps: throwaway PostgreSQL with durable commits (fsync, synchronous_commit on),
# `floe serve --port 0`, BENCH_TABLES tables plus one hot table, then
#   1. the writers commit across BENCH_TABLES tables (client k appends to tables
#      k, k+16, ... in turn: no two clients share a table);
#   2. the same on one hot table (all clients race; 409 -> reload -> retry);
#   3. pgbench -n -M prepared -c 16 -j 2 -T 15 with shared/bench/ceilings/cas.sql, hot.sql
#      and txn.sql in a separate database of the same cluster (schema.sql first).
# A Floe commit is: HTTP POST, row lock, requirements, metadata builder, a new
# metadata.json written and fsynced, pointer CAS + idempotency record + commit event in one
# PostgreSQL transaction. The ceilings are the bare PostgreSQL part: read + CAS (cas.sql),
# read + CAS + idempotency insert in one transaction (txn.sql), and read + CAS on one row
# (hot.sql; successful commits counted from the version column, as most attempts lose).
# Prints figures and ratios, and the CPU time per commit of Floe, of PostgreSQL (every
# process of the cluster) and of the writer, beside that of a txn.sql transaction: on a
# small machine they share the cores, so CPU per commit bounds commits/s.
# Fails only when it cannot measure.
set -euo pipefail

# shellcheck source=tests/bench/bench_lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/bench_lib.sh"
bench_init commit_bench
bench_need curl jq node
writer=${BENCH_WRITER:-c}
case $writer in
c) bench_need cc ;;
node) ;;
*) bench_die "BENCH_WRITER must be c or node, not '$writer'" ;;
esac

seconds=${BENCH_SECONDS:-15}
grow=${BENCH_HOT_SNAPSHOTS:-0}
clients=${BENCH_CLIENTS:-16}
ntables=${BENCH_TABLES:-1000}
idem=${BENCH_IDEMPOTENCY:-1}
here=$bench_repo/tests/bench
ceil=$SHARED/bench/ceilings
for f in schema.sql cas.sql hot.sql txn.sql; do
	[ -f "$ceil/$f" ] || bench_die "no $ceil/$f"
done

if [ "$writer" = c ]; then
	cc -O2 -pthread -o "$BT/commit_writer" "$bench_repo/tests/bench/commit_writer.c" -lzstd ||
		bench_die "could not compile commit_writer.c"
fi
bench_pg_start || bench_die "could not start PostgreSQL"
[ -x "$PGT_BIN/pgbench" ] || bench_die "no $PGT_BIN/pgbench (postgresql-contrib)"
# shellcheck disable=SC2086
bench_floe_start ${FLOE_SERVE_ARGS:-}

echo "commit_bench: creating $ntables tables + 1 hot table..." >&2
created=$(node "$here/bench_client.mjs" create-tables --base "$BASE" --p "$P" --ns cm \
	--count "$ntables" --concurrency 16) || bench_die "creating tables failed"
node "$here/bench_client.mjs" create-tables --base "$BASE" --p "$P" --ns hot --count 1 \
	>/dev/null || bench_die "creating the hot table failed"

echo "== commit_bench: commits/s vs the PostgreSQL commit-path ceilings (same run) =="
bench_env_line
bench_fs_line
echo "floe: $("$FLOE_BIN" version 2>/dev/null | head -n 1), serve flags: ${FLOE_SERVE_ARGS:-(defaults: --threads 0 --db-pool-size 20, i.e. 16 threads)}"
echo "setup: $(jq -r '"\(.created) tables created in \(.seconds) s"' <<<"$created");" \
	"$clients clients, ${seconds} s per run, Idempotency-Key on every commit: $([ "$idem" = 1 ] && echo yes || echo no)"
if [ "$writer" = c ]; then
	echo "writer: commit_writer.c (C, one keep-alive connection per client), PyIceberg-style append; 409 -> reload -> retry at once; Accept-Encoding: ${BENCH_ACCEPT_ENCODING:-(none)}"
else
	echo "writer: bench_client.mjs (node, keep-alive), PyIceberg-style append; 409 -> reload -> retry at once"
fi
echo

run_floe()
{
	if [ "$writer" = c ]; then
		"$BT/commit_writer" --port "${BASE##*:}" --prefix "$P" --ns "$1" --tables "$2" \
			--clients "$clients" --duration "$seconds" --idempotency "$idem" \
			--accept-encoding "${BENCH_ACCEPT_ENCODING:-}" || bench_die "commit run failed"
	else
		node "$here/bench_client.mjs" commit --base "$BASE" --p "$P" --ns "$1" --tables "$2" \
			--clients "$clients" --duration "$seconds" --idempotency "$idem" || bench_die "commit run failed"
	fi
}
# Mean time per commit stage (floe_commit_stage_seconds) between two /metrics scrapes.
stage_scrape()
{
	curl -fsS "$BASE/metrics" | awk '/^floe_commit_stage_seconds_(sum|count)\{/ {
		match($0, /stage="[a-z]+"/); s = substr($0, RSTART + 7, RLENGTH - 8)
		if ($0 ~ /_sum/) print s, "sum", $2; else print s, "count", $2 }'
}
stage_means()
{
	awk 'NR == FNR { v[$1 " " $2] = $3; next } { d[$1 " " $2] = $3 - v[$1 " " $2]; if (!($1 in seen)) { seen[$1] = 1; order[++n] = $1 } }
		END { for (i = 1; i <= n; i++) { s = order[i]; c = d[s " count"]
			printf "%s %.2f ms  ", s, (c > 0 ? d[s " sum"] / c * 1000 : 0) } print "" }' "$1" "$2"
}
# CPU clock ticks used so far by a process (utime + stime), and by the whole PostgreSQL
# cluster: the postmaster with its exited children (pgbench's backends) and the live ones.
ticks()
{
	awk '{ print $14 + $15 }' "/proc/$1/stat" 2>/dev/null || echo 0
}
pg_ticks()
{
	local pm t kid
	pm=$(head -n 1 "$PGT_DIR/data/postmaster.pid")
	t=$(awk '{ print $14 + $15 + $16 + $17 }' "/proc/$pm/stat")
	for kid in $(pgrep -P "$pm"); do
		t=$((t + $(ticks "$kid")))
	done
	echo "$t"
}
hz=$(getconf CLK_TCK)
# CPU ms per event: ticks / count.
per()
{
	awk -v t="$1" -v n="$2" -v hz="$hz" 'BEGIN { printf "%.3f", (n > 0 ? t / hz * 1000 / n : 0) }'
}
if [ "$grow" -gt 0 ]; then
	echo "floe: growing the hot table to $grow snapshots..." >&2
	grown=$(node "$here/bench_client.mjs" grow --base "$BASE" --p "$P" --ns hot --snapshots "$grow") ||
		bench_die "growing the hot table failed"
fi
echo "floe: $ntables tables..." >&2
stage_scrape >"$BT/st0"
f0=$(ticks "$FLOE_PID") p0=$(pg_ticks)
many=$(run_floe cm "$ntables")
f1=$(ticks "$FLOE_PID") p1=$(pg_ticks)
bench_load_line >"$BT/load1"
stage_scrape >"$BT/st1"
echo "floe: 1 hot table..." >&2
hot=$(run_floe hot 1)
f2=$(ticks "$FLOE_PID") p2=$(pg_ticks)
bench_load_line >"$BT/load2"
stage_scrape >"$BT/st2"

# --- the ceilings, in their own database of the same cluster ---
bench_psql "CREATE DATABASE ceiling"
PGOPTIONS="-c client_min_messages=warning" "$PGT_BIN/psql" -X -q -v ON_ERROR_STOP=1 -h "$PGT_HOST" \
	-p "$PGT_PORT" -U postgres -d ceiling -f "$ceil/schema.sql" >/dev/null || bench_die "schema.sql failed"
versions()
{
	bench_psql "SELECT sum(version), coalesce(sum(version) FILTER (WHERE name = 't_42'), 0) FROM tables" ceiling
}
# Runs one script; sets B_TPS, B_LAT (ms average), B_FAIL, B_WON (successful CAS), B_WON42.
pgb()
{
	local script=$1 out="$BT/pgbench.out" v0 v1 q0 q1 c0 c1
	v0=$(versions)
	echo "pgbench $script..." >&2
	q0=$(pg_ticks) c0=$(awk '{ print $16 + $17 }' /proc/$$/stat)
	(cd "$BT" && "$PGT_BIN/pgbench" -h "$PGT_HOST" -p "$PGT_PORT" -U postgres -n -M prepared \
		-f "$ceil/$script" -c "$clients" -j 2 -T "$seconds" ceiling) >"$out" 2>&1 || {
		cat "$out" >&2
		bench_die "pgbench $script failed"
	}
	# pgbench ran in a subshell that has been waited for: its CPU is in this shell's cutime.
	q1=$(pg_ticks) c1=$(awk '{ print $16 + $17 }' /proc/$$/stat)
	B_PGCPU=$((q1 - q0)) B_CLCPU=$((c1 - c0))
	B_N=$(awk '/^number of transactions actually processed:/ { print $6; exit }' "$out")
	cat "$out" >>"$BT/pgbench.all"
	v1=$(versions)
	B_TPS=$(awk '/^tps = / { print $3; exit }' "$out")
	B_LAT=$(awk '/^latency average = / { print $4; exit }' "$out")
	B_FAIL=$(awk '/^number of failed transactions:/ { print $5; exit }' "$out")
	B_WON=$(awk -F'|' -v a="${v0%%|*}" -v s="$seconds" '{ printf "%.1f", ($1 - a) / s }' <<<"$v1")
	B_WON42=$(awk -F'|' -v a="${v0##*|}" -v s="$seconds" '{ printf "%.1f", ($2 - a) / s }' <<<"$v1")
	B_TPS=${B_TPS:-0} B_LAT=${B_LAT:-0} B_FAIL=${B_FAIL:-0}
}
pgb cas.sql
cas=("$B_TPS" "$B_LAT" "$B_FAIL" "$B_WON")
pgb hot.sql
hotp=("$B_TPS" "$B_LAT" "$B_FAIL" "$B_WON42")
pgb txn.sql
txn=("$B_TPS" "$B_LAT" "$B_FAIL" "$B_WON")
txncpu=("$(per "$B_PGCPU" "${B_N:-0}")" "$(per "$B_CLCPU" "${B_N:-0}")")

f()
{
	jq -r "$2" <<<"$1"
}
printf '%-36s %10s %10s %9s %9s %8s %7s %7s\n' "floe run" "commits/s" "attempts" "conflicts" "p50 ms" "p99 ms" "errors" "inflight"
for r in many hot; do
	j=${!r}
	label="floe, $(f "$j" .tables) table(s), $(f "$j" .clients) clients"
	printf '%-36s %10.1f %10d %9d %9.1f %8.1f %7d %7d\n' "$label" "$(f "$j" .commits_per_s)" \
		"$(f "$j" .attempts)" "$(f "$j" .conflicts)" "$(f "$j" .commit_p50_ms)" \
		"$(f "$j" .commit_p99_ms)" "$(f "$j" .errors)" "$(f "$j" .max_in_flight)"
done
echo "(p50/p99: first attempt to acknowledged commit, retries included; POST p50/p99 many:" \
	"$(f "$many" '"\(.post_p50_ms*10|round/10)/\(.post_p99_ms*10|round/10)"') ms, hot:" \
	"$(f "$hot" '"\(.post_p50_ms*10|round/10)/\(.post_p99_ms*10|round/10)"') ms;" \
	"generator CPU $(f "$many" '.generator_cpu_pct|round')% / $(f "$hot" '.generator_cpu_pct|round')% of one core)"
echo "commits per second, many: $(f "$many" '.per_second|join(" ")')"
echo "commits per second, hot:  $(f "$hot" '.per_second|join(" ")')"
echo "commits per writer, fewest/most: many $(f "$many" '"\(.client_commits_min)/\(.client_commits_max)"'), hot" \
	"$(f "$hot" '"\(.client_commits_min)/\(.client_commits_max)"') (the latencies count acknowledged commits only)"
echo "mean per commit stage, many: $(stage_means "$BT/st0" "$BT/st1")"
echo "mean per commit stage, hot:  $(stage_means "$BT/st1" "$BT/st2")"
echo "hot table after the run: $(f "$hot" .first_table_snapshots) snapshots, loadTable body" \
	"$(f "$hot" .first_table_load_bytes) bytes (each commit rewrites the whole metadata.json)"
[ "$grow" -gt 0 ] && echo "hot table before the run: $(f "$grown" '"\(.snapshots) snapshots, loadTable body \(.load_bytes) bytes (grown in \(.seconds) s)"')"
# The writer's CPU: its own figure (percent of one core over the run).
gen_ticks()
{
	f "$1" ".generator_cpu_pct / 100 * .duration_s * $hz | round"
}
for r in many hot; do
	j=${!r}
	if [ $r = many ]; then ft=$((f1 - f0)) pt=$((p1 - p0)); else ft=$((f2 - f1)) pt=$((p2 - p1)); fi
	n=$(f "$j" .commits) gt=$(gen_ticks "$j")
	echo "CPU ms per commit, $r: floe $(per "$ft" "$n")  postgres $(per "$pt" "$n")  writer $(per "$gt" "$n")" \
		"= $(per $((ft + pt + gt)) "$n")  (per attempt: $(per $((ft + pt + gt)) "$(f "$j" .attempts)"))"
done
for r in many hot; do
	j=${!r}
	[ "$(f "$j" '.error_samples|length')" = 0 ] || echo "errors ($r): $(f "$j" '.error_samples|join(" | ")')"
done
echo
printf '%-36s %10s %14s %10s %8s\n' "pgbench ceiling (-c $clients -j 2)" "tps" "won CAS/s" "lat ms" "failed"
printf '%-36s %10.1f %14.1f %10.3f %8s\n' "cas.sql (read + CAS)" "${cas[0]}" "${cas[3]}" "${cas[1]}" "${cas[2]}"
printf '%-36s %10.1f %14.1f %10.3f %8s\n' "hot.sql (read + CAS, one row)" "${hotp[0]}" "${hotp[3]}" "${hotp[1]}" "${hotp[2]}"
printf '%-36s %10.1f %14.1f %10.3f %8s\n' "txn.sql (read + CAS + idem row)" "${txn[0]}" "${txn[3]}" "${txn[1]}" "${txn[2]}"
echo "(tps counts transactions, lost CAS included; 'won CAS/s' counts the pointer moves)"
echo "CPU ms per txn.sql transaction: postgres ${txncpu[0]}  pgbench ${txncpu[1]}" \
	"= $(awk -v a="${txncpu[0]}" -v b="${txncpu[1]}" 'BEGIN { printf "%.3f", a + b }')"
echo
fm=$(f "$many" .commits_per_s)
fh=$(f "$hot" .commits_per_s)
echo "ratio floe/txn.sql  (many tables): $(bench_ratio "$fm" "${txn[3]}")"
echo "ratio floe/cas.sql  (many tables): $(bench_ratio "$fm" "${cas[3]}")"
echo "ratio floe-hot/hot.sql (won CAS):  $(bench_ratio "$fh" "${hotp[3]}")   (vs hot.sql tps: $(bench_ratio "$fh" "${hotp[0]}"))"
echo "load during floe runs: $(cut -d' ' -f4-6 "$BT/load1") / $(cut -d' ' -f4-6 "$BT/load2")"
bench_load_line
