# shellcheck shell=bash
# Shared by the bench scripts (sourced, not run).
#
# What it gives a benchmark script:
#   bench_init NAME          temp dir ($BT), EXIT/INT/TERM traps that stop everything started
#                            here, the floe binary ($FLOE_BIN; a release build in build-bench/
#                            unless set), and $SHARED (shared/bench/ is read from there)
#   bench_pg_start           a throwaway PostgreSQL 15 on 127.0.0.1 at a free port with the
#                            DEFAULT durability (fsync, synchronous_commit, full_page_writes on),
#                            unlike scripts/pg-throwaway.sh, because commit and ingest figures
#                            include the cost of durable commits; sets PGT_*, PGT_HOST and DB_URL.
#                            Clients connect over TCP, as to a database on another host, unless
#                            BENCH_PG_SOCKET=1: then Floe, psql and pgbench use the cluster's
#                            unix socket, as Floe's embedded default does
#   bench_floe_start [ARGS]  floe migrate + `floe serve --port 0`; sets FLOE_PID, BASE, PREFIX, P
#   bench_floe_stop, bench_stop_pid PID
#   bench_env_line           one line: cores, load averages, PostgreSQL durability settings
#   bench_build_c OUT SRC... cc -O2 into $BT
#   bench_fs_line            one line: what creating a file costs here now (create_probe.c),
#                            for the scripts whose measured work creates files
# BENCH_TRASH=DIR (run_all.sh sets it): at exit the run's directories are moved into DIR, on
# the same filesystem, instead of deleted, so that the deletion cannot tax the next run's
# file creations (see create_probe.c); whoever set it deletes DIR when every run is done.
# Every server binds 127.0.0.1 only. Nothing here decides that a figure is "too slow".

bench_repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
# shellcheck source=scripts/pg-throwaway.sh
source "$bench_repo/scripts/pg-throwaway.sh"

BENCH_NAME=bench
BT=
FLOE_PID=
BENCH_PIDS=()

# The Iceberg schema whose types cast shared/bench/gencsv.c's text exactly (see
# ingest_bench.sh): id long, user_id long, qty int, amount decimal(9,2), score double,
# category/name/comment string, created_at/updated_at timestamp.
# shellcheck disable=SC2034 # used by the scripts that source this file
BENCH_GENCSV_SCHEMA='{"type":"struct","schema-id":0,"fields":[
 {"id":1,"name":"id","type":"long","required":true},
 {"id":2,"name":"user_id","type":"long","required":false},
 {"id":3,"name":"qty","type":"int","required":false},
 {"id":4,"name":"amount","type":"decimal(9, 2)","required":false},
 {"id":5,"name":"score","type":"double","required":false},
 {"id":6,"name":"category","type":"string","required":false},
 {"id":7,"name":"name","type":"string","required":false},
 {"id":8,"name":"comment","type":"string","required":false},
 {"id":9,"name":"created_at","type":"timestamp","required":false},
 {"id":10,"name":"updated_at","type":"timestamp","required":false}]}'

bench_die()
{
	echo "$BENCH_NAME: $*" >&2
	exit 1
}

bench_stop_pid()
{
	local pid=$1
	[ -n "$pid" ] || return 0
	kill -TERM "$pid" 2>/dev/null || return 0
	for _ in $(seq 1 150); do
		kill -0 "$pid" 2>/dev/null || break
		sleep 0.1
	done
	kill -KILL "$pid" 2>/dev/null || true
	wait "$pid" 2>/dev/null || true
}

bench_cleanup()
{
	set +e # an EXIT trap under errexit would stop at its first failure
	local pid
	for pid in "${BENCH_PIDS[@]}"; do
		bench_stop_pid "$pid"
	done
	bench_stop_pid "$FLOE_PID"
	if [ -n "${BENCH_TRASH:-}" ]; then
		local pgdir=${PGT_DIR:-}
		PGT_KEEP=1 pg_throwaway_stop
		[ -z "$pgdir" ] || mv "$pgdir" "$BENCH_TRASH/"
	else
		pg_throwaway_stop
	fi
	if [ "${BENCH_KEEP:-0}" = 1 ]; then
		echo "$BENCH_NAME: kept $BT" >&2
	elif [ -n "${BENCH_TRASH:-}" ]; then
		mv "$BT" "$BENCH_TRASH/"
	else
		rm -rf "$BT"
	fi
}

bench_init()
{
	BENCH_NAME=$1
	SHARED=${FLOE_SHARED_DIR:-$bench_repo/../shared}
	BT=$(mktemp -d "${TMPDIR:-/tmp}/floe-$BENCH_NAME.XXXXXX")
	chmod 755 "$BT"
	trap bench_cleanup EXIT
	trap 'exit 130' INT TERM
	[ -d "$SHARED/bench" ] || bench_die "no $SHARED/bench; set FLOE_SHARED_DIR"
	if [ -z "${FLOE_BIN:-}" ]; then
		if [ ! -f "$bench_repo/build-bench/meson-private/coredata.dat" ]; then
			meson setup "$bench_repo/build-bench" "$bench_repo" --buildtype=release \
				-Dtests=false >/dev/null || bench_die "meson setup build-bench failed"
		fi
		meson compile -C "$bench_repo/build-bench" >/dev/null ||
			bench_die "build failed (meson compile -C build-bench)"
		FLOE_BIN=$bench_repo/build-bench/server/floe
	fi
	[ -x "$FLOE_BIN" ] || bench_die "FLOE_BIN=$FLOE_BIN is not an executable"
}

bench_need()
{
	local tool
	for tool in "$@"; do
		command -v "$tool" >/dev/null 2>&1 || bench_die "$tool not found"
	done
}

# Like pg_throwaway_start, but durable: the defaults of a real installation.
bench_pg_start()
{
	local try
	PGT_BIN=$(pg_throwaway_bindir) || return 1
	PGT_DIR=$(mktemp -d "${TMPDIR:-/tmp}/floe-pg.XXXXXX") || return 1
	[ "$(id -u)" = 0 ] && chown postgres: "$PGT_DIR"
	pg_throwaway_as_owner "$PGT_BIN/initdb" -D "$PGT_DIR/data" -U postgres --auth=trust \
		-E UTF8 --locale=C.UTF-8 >"$PGT_DIR/initdb.log" 2>&1 || {
		cat "$PGT_DIR/initdb.log" >&2
		return 1
	}
	for try in 1 2 3 4 5; do
		PGT_PORT=$(pg_throwaway_free_port)
		if pg_throwaway_as_owner "$PGT_BIN/pg_ctl" -D "$PGT_DIR/data" -l "$PGT_DIR/pg.log" \
			-w -t 60 -o "-c listen_addresses=127.0.0.1 -p $PGT_PORT -k $PGT_DIR \
			-c fsync=on -c synchronous_commit=on -c full_page_writes=on \
			-c max_connections=200" start >/dev/null; then
			PGT_URL="postgresql://postgres@127.0.0.1:$PGT_PORT/postgres"
			PGT_HOST=127.0.0.1
			if [ "${BENCH_PG_SOCKET:-0}" = 1 ]; then
				PGT_HOST=$PGT_DIR
				PGT_URL="postgresql://postgres@/postgres?host=$PGT_DIR&port=$PGT_PORT"
			fi
			DB_URL=$PGT_URL
			export PGT_DIR PGT_PORT PGT_BIN PGT_URL PGT_HOST
			return 0
		fi
		echo "$BENCH_NAME: PostgreSQL start on port $PGT_PORT failed (try $try)" >&2
	done
	tail -n 30 "$PGT_DIR/pg.log" >&2 2>/dev/null
	return 1
}

bench_psql()
{
	"$PGT_BIN/psql" -X -q -v ON_ERROR_STOP=1 -h "$PGT_HOST" -p "$PGT_PORT" -U postgres \
		-d "${2:-postgres}" -Atc "$1"
}

bench_env_line()
{
	local pg=""
	if [ -n "${PGT_PORT:-}" ]; then
		pg=$(bench_psql "SELECT 'PostgreSQL ' || current_setting('server_version') ||
			' fsync=' || current_setting('fsync') ||
			' synchronous_commit=' || current_setting('synchronous_commit') ||
			' full_page_writes=' || current_setting('full_page_writes') ||
			' shared_buffers=' || current_setting('shared_buffers')" 2>/dev/null || echo "PostgreSQL ?")
	fi
	if [ -n "$pg" ]; then
		if [ "${PGT_HOST:-}" = 127.0.0.1 ]; then
			pg="$pg, clients over TCP (127.0.0.1)"
		else
			pg="$pg, clients on its unix socket"
		fi
	fi
	echo "machine: $(nproc) cores, load average $(cut -d' ' -f1-3 /proc/loadavg) (1/5/15 min);" \
		"${pg:-no PostgreSQL}"
}

bench_fs_line()
{
	local probe
	bench_build_c create_probe "$bench_repo/tests/bench/create_probe.c"
	# A figure beside the others, not a condition of them.
	if probe=$("$BT/create_probe" "$BT/create-probe" 2>&1); then
		echo "filesystem: ${probe#create_probe: } (O_TMPFILE + link; costlier minutes after many deletions, see create_probe.c)"
	else
		echo "filesystem: file create not measured ($probe)"
	fi
}

bench_load_line()
{
	echo "load average now: $(cut -d' ' -f1-3 /proc/loadavg) (1/5/15 min)  [$(date -u +%H:%M:%SZ)]"
}

# bench_floe_start [extra serve flags...]
bench_floe_start()
{
	local log="$BT/floe.log" port=
	"$FLOE_BIN" migrate --database-url="$DB_URL" >"$BT/migrate.log" 2>&1 || {
		cat "$BT/migrate.log" >&2
		bench_die "floe migrate failed"
	}
	"$FLOE_BIN" serve --port=0 --database-url="$DB_URL" --data-dir="$BT/floe" \
		"$@" </dev/null >"$log" 2>&1 &
	FLOE_PID=$!
	for _ in $(seq 1 300); do
		port=$(sed -n 's/.*listening on http:\/\/[^ "]*:\([0-9][0-9]*\).*/\1/p' "$log" | head -n 1)
		[ -n "$port" ] && break
		kill -0 "$FLOE_PID" 2>/dev/null || break
		sleep 0.1
	done
	[ -n "$port" ] || {
		cat "$log" >&2
		bench_die "floe did not report its port"
	}
	# the address it listens on (127.0.0.1 unless --host says otherwise)
	BASE=$(sed -n 's/.*listening on \(http:\/\/[^ "]*:[0-9][0-9]*\).*/\1/p' "$log" | head -n 1)
	PREFIX=$(curl -fsS "$BASE/v1/config?warehouse=default" | jq -r '.overrides.prefix // empty') ||
		bench_die "GET /v1/config failed"
	# shellcheck disable=SC2034 # used by the scripts that source this file
	P="/v1${PREFIX:+/$PREFIX}"
}

bench_floe_stop()
{
	bench_stop_pid "$FLOE_PID"
	FLOE_PID=
}

# bench_build_c OUT SRC [cc args...]
bench_build_c()
{
	local out=$1
	shift
	cc -O2 -o "$BT/$out" "$@" || bench_die "could not compile $out"
}

# Prints $1 / $2 with 3 decimals, or "n/a" when $2 is zero.
bench_ratio()
{
	awk -v a="$1" -v b="$2" 'BEGIN { if (b + 0 > 0) printf "%.3f", a / b; else printf "n/a" }'
}
