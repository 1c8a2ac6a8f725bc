#!/usr/bin/env bash
# Feed benchmark: objects of ~1 MB of CSV dropped into a directory a feed watches, landed by
# the daemon's feed worker, against `floe ingest` run once per object (the seeds'
# function-per-object pattern) on the same objects in the same run.
#
# Usage: tests/bench/feed_bench.sh [--full]
#   --full   1,000 objects (the issue's figure; ~4 min) instead of 200 (~1 min)
# Environment:
#   FLOE_BIN          the binary to measure (default: release build in build-bench/, built here)
#   FLOE_SHARED_DIR   where bench/gencsv.c is (default: ../shared)
#   BENCH_OBJECTS     objects to drop (overrides the two defaults above)
#   BENCH_OBJECT_ROWS (7600) rows per object (gencsv rows are ~131 bytes: ~1 MB)
#
# Prints, for each side: rows/s end to end (from the first drop to the last object in a
# committed snapshot), snapshots made, data files per partition (the table is unpartitioned:
# files in its one partition), and freshness lag per object (its snapshot's timestamp-ms
# minus the object's modification time: p50 and max). The feed's lag includes waiting for
# the scheduler's next tick (1 s) and the feed's interval (PT1S). Fails only when it cannot
# measure; never on speed.
set -euo pipefail

# shellcheck source=tests/bench/bench_lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/bench_lib.sh"
objects=200
for a in "$@"; do
	case $a in
	--full) objects=1000 ;;
	-h | --help)
		sed -n '2,19p' "$0"
		exit 0
		;;
	*)
		echo "feed_bench: unknown argument $a" >&2
		exit 2
		;;
	esac
done
objects=${BENCH_OBJECTS:-$objects}
per=${BENCH_OBJECT_ROWS:-7600}
bench_init feed_bench
bench_need curl jq cc node
bench_build_c gencsv "$SHARED/bench/gencsv.c"

bench_pg_start || bench_die "could not start PostgreSQL"
bench_floe_start --log-level=info
bench_env_line
bench_fs_line

schema=$BENCH_GENCSV_SCHEMA
curl -fsS -X POST -H 'Content-Type: application/json' -d '{"namespace":["fb"]}' \
	"$BASE$P/namespaces" >/dev/null || bench_die "create namespace failed"
for t in fed each; do
	curl -fsS -X POST -H 'Content-Type: application/json' \
		-d "{\"name\":\"$t\",\"schema\":$schema}" "$BASE$P/namespaces/fb/tables" >/dev/null ||
		bench_die "create table fb.$t failed"
done

"$BT/gencsv" "$per" >"$BT/object.csv"
obj_bytes=$(stat -c %s "$BT/object.csv")
rows=$((objects * per))
echo "objects: $objects of $obj_bytes bytes ($per rows each), $rows rows in all"
mkdir -p "$BT/landing" "$BT/each"

now_ms()
{
	echo $(($(date +%s%N) / 1000000))
}

curl -fsS -X POST -H 'Content-Type: application/json' -d "{\"name\":\"fb\",\"warehouse\":\"default\",
	\"table\":\"fb.fed\",\"source\":{\"type\":\"directory\",\"path\":\"$BT/landing\",\"glob\":\"*.csv\"},
	\"format\":\"csv\",\"interval\":\"PT1S\",\"on-error\":\"dead-letter\"}" \
	"$BASE/management/v1/feeds" >/dev/null || bench_die "create feed failed"

# ---- the feed: drop every object (write, then rename), wait for the ledger ----
bench_load_line
t0=$(now_ms)
for i in $(seq -w 1 "$objects"); do
	cp "$BT/object.csv" "$BT/landing/.o-$i.csv.tmp"
	mv "$BT/landing/.o-$i.csv.tmp" "$BT/landing/o-$i.csv"
done
t_dropped=$(now_ms)
landed=0
for _ in $(seq 1 3000); do
	landed=$(bench_psql "SELECT count(*) FROM feed_object") || bench_die "ledger query failed"
	[ "$landed" -ge "$objects" ] && break
	sleep 0.1
done
t1=$(now_ms)
[ "$landed" -ge "$objects" ] || bench_die "only $landed of $objects objects landed in 300 s"
bench_load_line

# ---- floe ingest once per object (the same object bytes, under another name each) ----
for i in $(seq -w 1 "$objects"); do cp "$BT/object.csv" "$BT/each/o-$i.csv"; done
bench_floe_stop # the daemon takes no part in the in-process ingests
i0=$(now_ms)
for f in "$BT"/each/o-*.csv; do
	touch "$f" # its drop time: the freshness lag is measured from here
	"$FLOE_BIN" ingest --database-url="$DB_URL" --table fb.each "$f" >>"$BT/each.json" \
		2>>"$BT/each.err" || {
		tail -n 20 "$BT/each.err" >&2
		bench_die "floe ingest $f failed"
	}
done
i1=$(now_ms)
bench_load_line
bench_floe_start --log-level=info

# ---- figures ----
curl -fsS "$BASE$P/namespaces/fb/tables/fed" >"$BT/fed.json" || bench_die "load fb.fed failed"
curl -fsS "$BASE$P/namespaces/fb/tables/each" >"$BT/each-table.json" || bench_die "load fb.each failed"
bench_psql "SELECT key || '|' || batch_id FROM feed_object" >"$BT/ledger.txt"
stat -c '%n|%.3Y' "$BT"/landing/o-*.csv "$BT"/each/o-*.csv >"$BT/mtimes.txt"

node - "$BT" "$rows" "$t0" "$t1" "$t_dropped" "$i0" "$i1" <<'EOF'
const fs = require('fs');
const [bt, rows, t0, t1, tDropped, i0, i1] = process.argv.slice(2).map((x, i) => (i === 0 ? x : Number(x)));
const mtime = new Map(fs.readFileSync(`${bt}/mtimes.txt`, 'utf8').trim().split('\n')
  .map((l) => l.split('|')).map(([f, secs]) => [f, Math.round(Number(secs) * 1000)]));
const q = (v, p) => { const s = [...v].sort((a, b) => a - b); return s[Math.min(s.length - 1, Math.floor(p * s.length))]; };
function table(file) {
  const meta = JSON.parse(fs.readFileSync(file, 'utf8')).metadata;
  const cur = meta.snapshots.find((s) => String(s['snapshot-id']) === String(meta['current-snapshot-id']));
  return { meta, snaps: meta.snapshots.length, files: Number(cur?.summary?.['total-data-files'] ?? 0),
    records: Number(cur?.summary?.['total-records'] ?? 0) };
}
const fed = table(`${bt}/fed.json`);
const byBatch = new Map(fed.meta.snapshots.map((s) => [s.summary['floe.batch-id'], s['timestamp-ms']]));
const fedLag = fs.readFileSync(`${bt}/ledger.txt`, 'utf8').trim().split('\n').map((l) => l.split('|'))
  .map(([key, batch]) => byBatch.get(batch) - mtime.get(`${bt}/landing/${key}`));
const each = table(`${bt}/each-table.json`);
// Object k's snapshot is the k-th (ingests ran in name order, one snapshot each).
const eachSnaps = [...each.meta.snapshots].sort((a, b) => a['sequence-number'] - b['sequence-number']);
const eachFiles = [...mtime.keys()].filter((f) => f.startsWith(`${bt}/each/`)).sort();
const eachLag = eachFiles.map((f, k) => eachSnaps[k]['timestamp-ms'] - mtime.get(f));
const line = (name, r, secs, t, lag) => console.log(
  `${name.padEnd(22)} ${String(Math.round(r / secs)).padStart(9)} rows/s  ${secs.toFixed(1).padStart(6)} s  ` +
  `${String(t.snaps).padStart(5)} snapshots  ${String(t.files).padStart(5)} files/partition  ` +
  `lag p50 ${(q(lag, 0.5) / 1000).toFixed(2)} s, max ${(Math.max(...lag) / 1000).toFixed(2)} s  (rows in table ${t.records})`);
console.log(`dropping the objects took ${((tDropped - t0) / 1000).toFixed(1)} s`);
line('feed (directory)', rows, (t1 - t0) / 1000, fed, fedLag);
line('floe ingest per object', rows, (i1 - i0) / 1000, each, eachLag);
console.log(`ratio feed/per-object rows/s: ${(((rows / (t1 - t0)) / (rows / (i1 - i0)))).toFixed(2)}`);
if (fed.records !== rows || each.records !== rows) console.log(`WARNING: expected ${rows} rows in each table`);
EOF
bench_env_line
