#!/usr/bin/env bash
# A throwaway PostgreSQL cluster for tests and benchmarks: initdb into a fresh temporary
# directory, start it on 127.0.0.1 at a free port (unix socket in the same directory), with
# durability off (fsync, synchronous_commit, full_page_writes) because the data is discarded.
#
# Two ways to use it:
#   source scripts/pg-throwaway.sh
#   pg_throwaway_start || exit 1     # sets PGT_DIR PGT_PORT PGT_BIN PGT_URL (…/postgres)
#   trap pg_throwaway_stop EXIT      # stops the server and deletes PGT_DIR
#
#   scripts/pg-throwaway.sh [--] CMD ARGS...
#       runs CMD with FLOE_TEST_PG_URL and PGT_* exported, then stops the cluster; the exit
#       status is CMD's. Without CMD it prints the URL and waits until interrupted.
#
# As root, initdb and the server run as the `postgres` user through runuser (PostgreSQL
# refuses to run as root); otherwise as the calling user. PGT_KEEP=1 keeps the directory.

# Prints the directory holding initdb and pg_ctl: `pg_config --bindir` when it has them,
# else the newest /usr/lib/postgresql/*/bin (Debian installs the server binaries there).
pg_throwaway_bindir()
{
	local d
	if [ -n "${FLOE_PG_BIN_DIR:-}" ] && [ -x "$FLOE_PG_BIN_DIR/initdb" ]; then
		echo "$FLOE_PG_BIN_DIR"
		return 0
	fi
	if command -v pg_config >/dev/null 2>&1; then
		d=$(pg_config --bindir 2>/dev/null || true)
		if [ -n "$d" ] && [ -x "$d/initdb" ]; then
			echo "$d"
			return 0
		fi
	fi
	d=$(printf '%s\n' /usr/lib/postgresql/*/bin | sort -V | tail -n 1)
	if [ -n "$d" ] && [ -x "$d/initdb" ]; then
		echo "$d"
		return 0
	fi
	echo "pg-throwaway: no initdb found (install the postgresql package)" >&2
	return 1
}

# Prints a TCP port that is free on 127.0.0.1 right now. The kernel picks it (bind to 0);
# the small race until PostgreSQL binds it is covered by the retry in pg_throwaway_start.
pg_throwaway_free_port()
{
	local py
	for py in /usr/bin/python3 python3; do
		if command -v "$py" >/dev/null 2>&1; then
			"$py" -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])' && return 0
		fi
	done
	if command -v node >/dev/null 2>&1; then
		node -e 'const s=require("net").createServer().listen(0,"127.0.0.1",()=>{console.log(s.address().port);s.close()})' && return 0
	fi
	echo $((20000 + RANDOM % 40000))
}

# Runs a PostgreSQL program as the cluster's owner, from a directory it can read.
pg_throwaway_as_owner()
{
	if [ "$(id -u)" = 0 ]; then
		(cd / && runuser -u postgres -- "$@")
	else
		(cd / && "$@")
	fi
}

pg_throwaway_start()
{
	local try
	PGT_BIN=$(pg_throwaway_bindir) || return 1
	if [ "$(id -u)" = 0 ] && ! id postgres >/dev/null 2>&1; then
		echo "pg-throwaway: running as root but there is no 'postgres' user" >&2
		return 1
	fi
	PGT_DIR=$(mktemp -d "${TMPDIR:-/tmp}/floe-pg.XXXXXX") || return 1
	[ "$(id -u)" = 0 ] && chown postgres: "$PGT_DIR"
	if ! pg_throwaway_as_owner "$PGT_BIN/initdb" -D "$PGT_DIR/data" -U postgres --auth=trust \
		-E UTF8 --locale=C.UTF-8 --no-sync >"$PGT_DIR/initdb.log" 2>&1; then
		echo "pg-throwaway: initdb failed:" >&2
		cat "$PGT_DIR/initdb.log" >&2
		return 1
	fi
	for try in 1 2 3 4 5; do
		PGT_PORT=$(pg_throwaway_free_port)
		if pg_throwaway_as_owner "$PGT_BIN/pg_ctl" -D "$PGT_DIR/data" -l "$PGT_DIR/pg.log" \
			-w -t 60 -o "-c listen_addresses=127.0.0.1 -p $PGT_PORT -k $PGT_DIR \
			-c fsync=off -c synchronous_commit=off -c full_page_writes=off \
			-c max_connections=200" start >/dev/null; then
			PGT_URL="postgresql://postgres@127.0.0.1:$PGT_PORT/postgres"
			export PGT_DIR PGT_PORT PGT_BIN PGT_URL
			return 0
		fi
		echo "pg-throwaway: start on port $PGT_PORT failed (try $try)" >&2
	done
	echo "pg-throwaway: could not start PostgreSQL; log:" >&2
	tail -n 30 "$PGT_DIR/pg.log" >&2 2>/dev/null
	return 1
}

# Runs SQL against the cluster (database postgres unless $2 names one).
pg_throwaway_sql()
{
	PGOPTIONS="-c client_min_messages=warning" "$PGT_BIN/psql" -X -q -v ON_ERROR_STOP=1 -h 127.0.0.1 -p "$PGT_PORT" -U postgres \
		-d "${2:-postgres}" -Atc "$1"
}

# Stops the server (fast shutdown) and removes its directory. Safe to call twice, after a
# failed start, and from an EXIT trap under `set -e` (nothing in it fails).
pg_throwaway_stop()
{
	[ -n "${PGT_DIR:-}" ] || return 0
	if [ -f "$PGT_DIR/data/postmaster.pid" ]; then
		pg_throwaway_as_owner "$PGT_BIN/pg_ctl" -D "$PGT_DIR/data" -m fast -w -t 30 stop \
			>/dev/null 2>&1 || {
			local pid
			pid=$(head -n 1 "$PGT_DIR/data/postmaster.pid" 2>/dev/null || true)
			[ -z "$pid" ] || kill -9 "$pid" 2>/dev/null || true
		}
	fi
	[ "${PGT_KEEP:-0}" = 1 ] || rm -rf "$PGT_DIR" || true
	PGT_DIR=
}

# Command mode: only when executed, not when sourced.
if [ "${BASH_SOURCE[0]}" = "$0" ]; then
	set -euo pipefail
	[ "${1:-}" = "--" ] && shift
	pg_throwaway_start || exit 1
	trap pg_throwaway_stop EXIT
	trap 'exit 130' INT TERM
	export FLOE_TEST_PG_URL="$PGT_URL"
	if [ $# -eq 0 ]; then
		echo "$PGT_URL"
		echo "pg-throwaway: running; press Ctrl-C to stop and delete it" >&2
		while :; do
			sleep 3600 &
			wait $!
		done
	fi
	set +e
	"$@"
	rc=$?
	exit "$rc"
fi
