#!/usr/bin/env bash
# Maintenance benchmark: N appends of M rows (each `floe ingest` one snapshot and one small
# file), then `floe maintain manifests` and `floe maintain compact`, against DuckDB rewriting
# the same files in the same run.
#
# Usage: tests/bench/maintenance_bench.sh [--appends N] [--rows M]
#   --appends N   appends (default 1000, the issue's figure; ~5 min on 2 cores)
#   --rows M      rows per append (default 1000)
# Environment:
#   FLOE_BIN          the binary to measure (default: release build in build-bench/, built here)
#   FLOE_SHARED_DIR   where bench/gencsv.c is (default: ../shared)
#   BENCH_SCAN_REPEAT (3) scans timed after a warm-up; the best is printed
#
# Prints: data files, manifests and snapshots before and after; the DuckDB scan time of the
# live files (read_parquet over every live file, one thread, best of BENCH_SCAN_REPEAT)
# before and after; compaction wall time and MB/s (input bytes / seconds, `floe maintain
# compact` as a process: start-up, plan, read, write, commit) against DuckDB's `COPY (SELECT
# * FROM read_parquet([same files])) TO ... (FORMAT parquet, COMPRESSION zstd)` at one
# thread, and the ratio; and the time `floe maintain manifests` takes to merge the appends'
# manifests into one (run before the compaction).
# Fails only when it cannot measure; never on speed.
set -euo pipefail

# shellcheck source=tests/bench/bench_lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/bench_lib.sh"
appends=1000
per=1000
while [ $# -gt 0 ]; do
	case $1 in
	--appends)
		appends=$2
		shift
		;;
	--rows)
		per=$2
		shift
		;;
	-h | --help)
		sed -n '2,21p' "$0"
		exit 0
		;;
	*)
		echo "maintenance_bench: unknown argument $1" >&2
		exit 2
		;;
	esac
	shift
done
bench_init maintenance_bench
bench_need curl jq cc node
bench_build_c gencsv "$SHARED/bench/gencsv.c"
helper=$(dirname "${BASH_SOURCE[0]}")/maintenance_bench.mjs

bench_pg_start || bench_die "could not start PostgreSQL"
# No maintenance workers: the daemon must not touch the table while it is measured.
bench_floe_start --log-level=info --maintenance-workers=0
bench_env_line
bench_fs_line

curl -fsS -X POST -H 'Content-Type: application/json' -d '{"namespace":["mb"]}' \
	"$BASE$P/namespaces" >/dev/null || bench_die "create namespace failed"
curl -fsS -X POST -H 'Content-Type: application/json' \
	-d "{\"name\":\"t\",\"schema\":$BENCH_GENCSV_SCHEMA}" "$BASE$P/namespaces/mb/tables" \
	>/dev/null || bench_die "create table mb.t failed"
# One file per append, each with other rows (ingesting the same bytes twice is recognised
# as the same batch and commits nothing).
"$BT/gencsv" $((appends * per)) >"$BT/all.csv"
mkdir -p "$BT/appends"
tail -n +2 "$BT/all.csv" | split -l "$per" -a 5 - "$BT/appends/a-"
head -n 1 "$BT/all.csv" >"$BT/header.csv"
for f in "$BT"/appends/a-*; do
	cat "$BT/header.csv" "$f" >"$f.csv"
	rm "$f"
done
rm "$BT/all.csv"
echo "appends: $appends of $per rows ($(stat -c %s "$BT/appends/a-aaaaa.csv") bytes of CSV each)"

now_ms()
{
	echo $(($(date +%s%N) / 1000000))
}

# ---- N appends, each its own snapshot and file ----
bench_load_line
a0=$(now_ms)
for f in "$BT"/appends/*.csv; do
	"$FLOE_BIN" ingest --database-url="$DB_URL" --log-level=error --table mb.t \
		"$f" >>"$BT/ingest.json" 2>>"$BT/ingest.err" || {
		tail -n 20 "$BT/ingest.err" >&2
		bench_die "floe ingest failed"
	}
done
a1=$(now_ms)
echo "appends took $(((a1 - a0) / 1000)) s ($(bench_ratio $((appends * 1000)) $((a1 - a0))) appends/s)"

# The table's metadata straight from PostgreSQL: the server's loadTable cache learns of
# in-process commits by NOTIFY and may lag behind them.
table_files()
{
	bench_psql "SELECT '{\"metadata\":' || metadata || '}' FROM table_entry WHERE name = 't'" \
		>"$BT/meta-$1.json" || bench_die "reading the metadata failed"
	node "$helper" files "$BT/meta-$1.json" "$BT/files-$1.json"
}

# ---- before ----
bench_load_line
before=$(table_files before) || bench_die "reading the table failed"
scan_before=$(node "$helper" scan "$BT/files-before.json" "${BENCH_SCAN_REPEAT:-3}") ||
	bench_die "DuckDB scan failed"
duck=$(node "$helper" rewrite "$BT/files-before.json" "$BT/duck.parquet" 1) ||
	bench_die "DuckDB rewrite failed"

# ---- manifest rewrite: the appends' manifests merged into one ----
m0=$(now_ms)
"$FLOE_BIN" maintain --database-url="$DB_URL" --log-level=error --table mb.t manifests \
	>"$BT/manifests.json" 2>"$BT/manifests.err" || {
	cat "$BT/manifests.err" >&2
	bench_die "floe maintain manifests failed"
}
m1=$(now_ms)

# ---- compaction ----
bench_load_line
c0=$(now_ms)
"$FLOE_BIN" maintain --database-url="$DB_URL" --log-level=error --table mb.t compact \
	>"$BT/compact.json" 2>"$BT/compact.err" || {
	cat "$BT/compact.err" "$BT/compact.json" >&2
	bench_die "floe maintain compact failed"
}
c1=$(now_ms)
after=$(table_files after) || bench_die "reading the table failed"
scan_after=$(node "$helper" scan "$BT/files-after.json" "${BENCH_SCAN_REPEAT:-3}") ||
	bench_die "DuckDB scan failed"

bench_load_line

node - "$before" "$after" "$scan_before" "$scan_after" "$duck" "$(cat "$BT/compact.json")" \
	"$((c1 - c0))" "$(cat "$BT/manifests.json")" "$((m1 - m0))" <<'JS'
const [before, after, sb, sa, duck, compact, ms, manifests, mms] = process.argv.slice(2).map((x, i) => (i === 6 || i === 8 ? Number(x) : JSON.parse(x)));
const mb = (b) => (b / 1e6).toFixed(1);
const floeSecs = ms / 1000;
const floeMBs = compact['bytes-removed'] / 1e6 / floeSecs;
const duckMBs = duck.bytes_in / 1e6 / duck.seconds;
console.log(`before: ${before.files} data files (${mb(before.bytes)} MB), ${before.manifests} manifests, ${before.snapshots} snapshots`);
console.log(`after:  ${after.files} data files (${mb(after.bytes)} MB), ${after.manifests} manifests, ${after.snapshots} snapshots`);
console.log(`DuckDB scan of the live files (1 thread, best of 3): before ${sb.seconds.toFixed(3)} s, after ${sa.seconds.toFixed(3)} s, ` +
  `speed-up ${(sb.seconds / sa.seconds).toFixed(2)}x (rows ${sb.rows} / ${sa.rows})`);
console.log(`compaction (floe maintain compact, whole process): ${floeSecs.toFixed(2)} s, ${mb(compact['bytes-removed'])} MB in -> ` +
  `${mb(compact['bytes-added'])} MB out, ${floeMBs.toFixed(1)} MB/s`);
console.log(`DuckDB COPY of the same files to one zstd file (1 thread): ${duck.seconds.toFixed(2)} s, ${mb(duck.bytes_in)} MB in -> ` +
  `${mb(duck.bytes_out)} MB out, ${duckMBs.toFixed(1)} MB/s`);
console.log(`ratio Floe/DuckDB MB/s: ${(floeMBs / duckMBs).toFixed(2)}`);
console.log(`manifest rewrite (floe maintain manifests, before the compaction): ${manifests['manifests-replaced']} manifests -> ` +
  `${manifests['manifests-created']} in ${(mms / 1000).toFixed(2)} s, ${manifests['entries-processed']} entries`);
if (sb.rows !== sa.rows) console.log('WARNING: the scans counted different rows');
JS
bench_env_line
