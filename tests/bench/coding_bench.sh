#!/usr/bin/env bash
# Coded loadTable answers: what a client that sends Accept-Encoding (PyIceberg, Iceberg Java,
# curl --compressed) costs the daemon, and what it saves on the wire, in one run.
#
# Usage: tests/bench/coding_bench.sh
# Environment:
#   FLOE_BIN          the daemon to measure (default: release build in build-bench/, built here)
#   BENCH_DURATION (5s) BENCH_CONNECTIONS (64) BENCH_THREADS (2)   wrk settings
#   BENCH_SNAPSHOTS (1000)   snapshots of the large table (PyIceberg appends, one at a time)
#   BENCH_LINK (100mbit)     rate of the simulated link (tc tbf), or 0 for none
#
# Steps: throwaway PostgreSQL (durable defaults), `floe serve --port 0`, a table whose
# loadTable body is ~20 KB (load_table_bench.sh's) and one grown to BENCH_SNAPSHOTS
# snapshots, then for each table and each Accept-Encoding (none, gzip, zstd):
#   1. the body's bytes as sent (curl);
#   2. wrk -t2 -c64 on the cached table: requests/s and the daemon's CPU per request
#      (utime + stime from /proc), the first request of each coding making the version's
#      kept copy;
#   3. the median of 5 loads (curl, start to last byte, decoded) from a network namespace
#      whose veth link to the daemon is shaped to BENCH_LINK by tc's token bucket (tbf).
#      That needs root, ip and tc; without them, or with BENCH_LINK=0, the daemon listens
#      on 127.0.0.1 and step 3 is skipped. With the link, the daemon listens on the link's
#      address with --auth none (it warns; the address is on this machine only), and wrk
#      reaches it over loopback, unshaped.
# Prints figures; fails only when it cannot measure.
set -euo pipefail

# shellcheck source=tests/bench/bench_lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/bench_lib.sh"
bench_init coding_bench
bench_need curl jq node wrk

dur=${BENCH_DURATION:-5s}
conns=${BENCH_CONNECTIONS:-64}
threads=${BENCH_THREADS:-2}
snapshots=${BENCH_SNAPSHOTS:-1000}
link=${BENCH_LINK:-100mbit}
here=$bench_repo/tests/bench
netns=floe-cb-$$
host=127.0.0.1

link_down()
{
	ip link del "cb$$a" 2>/dev/null || true
	ip netns del "$netns" 2>/dev/null || true
}

# A veth pair into a namespace of its own, shaped both ways; 0 when it is up.
link_up()
{
	[ "$link" != 0 ] && [ "$(id -u)" = 0 ] && command -v ip >/dev/null && command -v tc >/dev/null ||
		return 1
	ip netns add "$netns" &&
		ip link add "cb$$a" type veth peer name "cb$$b" netns "$netns" &&
		ip addr add 10.213.0.1/30 dev "cb$$a" && ip link set "cb$$a" up &&
		ip netns exec "$netns" ip addr add 10.213.0.2/30 dev "cb$$b" &&
		ip netns exec "$netns" ip link set "cb$$b" up &&
		tc qdisc add dev "cb$$a" root tbf rate "$link" burst 32kb latency 400ms &&
		ip netns exec "$netns" tc qdisc add dev "cb$$b" root tbf rate "$link" burst 32kb latency 400ms
}

bench_pg_start || bench_die "PostgreSQL did not start"
trap 'link_down; bench_cleanup' EXIT
if link_up; then
	host=10.213.0.1
	echo "link: a veth pair shaped to $link (tc tbf) into network namespace $netns"
	bench_floe_start --host "$host" --auth none
else
	link_down
	link=0
	echo "link: not simulated (needs root, ip and tc, and BENCH_LINK not 0)"
	bench_floe_start
fi
bench_env_line
ns=cb
curl -fsS -X POST -H 'Content-Type: application/json' -d "{\"namespace\":[\"$ns\"]}" \
	"$BASE$P/namespaces" >/dev/null || bench_die "create namespace failed"
# ~20 KB: 100 properties of 180 random hex digits beside a small schema (hex codes to about
# half; real metadata, mostly paths, ids and names, codes better: the large table below)
node -e '
const props = {};
const crypto = require("crypto");
for (let i = 0; i < 100; i++) props[`p.${i}`] = crypto.randomBytes(90).toString("hex");
process.stdout.write(JSON.stringify({ name: "t20k", properties: props, schema: { type: "struct",
  "schema-id": 0, fields: [{ id: 1, name: "id", type: "long", required: true },
  { id: 2, name: "msg", type: "string", required: false }] } }));' >"$BT/t20k.json"
curl -fsS -X POST -H 'Content-Type: application/json' --data-binary @"$BT/t20k.json" \
	"$BASE$P/namespaces/$ns/tables" >/dev/null || bench_die "create table failed"
node "$here/bench_client.mjs" create-tables --base "$BASE" --p "$P" --ns "$ns" --count 1 \
	--concurrency 1 >/dev/null || bench_die "create the large table failed"
node "$here/bench_client.mjs" grow --base "$BASE" --p "$P" --ns "$ns" --snapshots "$snapshots" \
	>/dev/null || bench_die "growing the large table failed"

cpu() { awk '{ print $14 + $15 }' "/proc/$FLOE_PID/stat"; }
tick=$(getconf CLK_TCK)

for table in t20k t0; do
	url="$BASE$P/namespaces/$ns/tables/$table"
	plain=$(curl -fsS "$url" | wc -c)
	echo "table $table: $plain bytes of LoadTableResult"
	for ae in none gzip zstd; do
		hdr=()
		dec=()
		[ "$ae" = none ] || hdr=(-H "Accept-Encoding: $ae") dec=(--compressed)
		sent=$(curl -fsS "${hdr[@]}" "$url" | wc -c)
		c0=$(cpu)
		out=$(wrk -t"$threads" -c"$conns" -d"$dur" "${hdr[@]}" "$url")
		c1=$(cpu)
		rps=$(awk '/^Requests\/sec:/ { print $2 }' <<<"$out")
		total=$(awk '/requests in/ { print $1 }' <<<"$out")
		us=$(awk -v d=$((c1 - c0)) -v n="$total" -v t="$tick" \
			'BEGIN { if (n > 0) printf "%.1f", d / t * 1e6 / n; else print "n/a" }')
		# the shaped link: median of 5 loads, decoded
		ms=n/a
		if [ "$link" != 0 ]; then
			times=()
			for _ in 1 2 3 4 5; do
				times+=("$(ip netns exec "$netns" curl -fsS "${dec[@]}" "${hdr[@]}" \
					-o /dev/null -w '%{time_total}' "$url")")
			done
			ms=$(printf '%s\n' "${times[@]}" | sort -n | sed -n 3p |
				awk '{ printf "%.1f ms", $1 * 1000 }')
		fi
		printf '  %-5s sent %8d bytes (%5.1f %%)  cached hits %9.0f req/s, daemon %6s us CPU each  over %s: %s\n' \
			"$ae" "$sent" "$(awk -v a="$sent" -v b="$plain" 'BEGIN { print 100 * a / b }')" \
			"$rps" "$us" "$link" "$ms"
	done
done
curl -fsS "$BASE/metrics" | grep -E '^floe_(http_coded|table_cache_coded)' | sed 's/^/  /'
bench_load_line
