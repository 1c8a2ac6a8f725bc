#!/bin/sh
# Runs the integration suite against one throwaway PostgreSQL cluster (unless
# FLOE_TEST_PG_URL is already set) and the floe binary in FLOE_BIN (default
# <repo>/build/server/floe). Usage: tests/integration/run.sh [node --test args...]
set -eu
here=$(cd "$(dirname "$0")" && pwd)
repo=$(cd "$here/../.." && pwd)
: "${FLOE_BIN:=$repo/build/server/floe}"
export FLOE_BIN
cd "$here"
[ -d node_modules ] || npm ci --no-audit --no-fund
if [ -z "${FLOE_TEST_PG_URL:-}" ]; then
	PGBIN=${FLOE_PG_BIN_DIR:-$(pg_config --bindir)}
	PGTMP=$(mktemp -d /tmp/floe-it-runner.XXXXXX)
	chmod 755 "$PGTMP"
	as_pg=""
	if [ "$(id -u)" = 0 ]; then chown postgres:postgres "$PGTMP"; as_pg="runuser -u postgres --"; fi
	PGPORT=$(node -e 'const s=require("net").createServer().listen(0,"127.0.0.1",()=>{console.log(s.address().port);s.close()})')
	$as_pg "$PGBIN/initdb" -D "$PGTMP/data" -U postgres --auth=trust -E UTF8 --locale=C.UTF-8 --no-sync >"$PGTMP/initdb.log"
	$as_pg "$PGBIN/pg_ctl" -D "$PGTMP/data" -l "$PGTMP/pg.log" -w -t 30 \
		-o "-c listen_addresses=127.0.0.1 -p $PGPORT -k $PGTMP -c fsync=off -c synchronous_commit=off -c full_page_writes=off -c max_connections=300" \
		start >/dev/null
	trap '$as_pg "$PGBIN/pg_ctl" -D "$PGTMP/data" -m fast -w stop >/dev/null; rm -rf "$PGTMP"' EXIT INT TERM
	export FLOE_TEST_PG_URL="postgresql://postgres@127.0.0.1:$PGPORT/postgres"
fi
node --test "$@"
