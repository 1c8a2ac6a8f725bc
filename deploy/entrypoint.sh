#!/bin/sh
# Container (and systemd) entry point for floe.
#
#   floe-entrypoint [serve] [FLAGS...]   wait for the database, `floe migrate`, then exec
#                                        `floe serve FLAGS...` (the default with no arguments)
#   floe-entrypoint -FLAG ...            the same: arguments starting with "-" go to serve
#   floe-entrypoint CMD ARGS...          exec `floe CMD ARGS...` (migrate, version, help)
#
# With FLOE_DATABASE_URL set, the database is awaited (pg_isready, up to
# FLOE_ENTRYPOINT_DB_WAIT seconds, default 60) and migrated before serving; `floe migrate`
# holds an advisory lock, so replicas starting together are safe. FLOE_ENTRYPOINT_MIGRATE=0
# skips that step (e.g. when a Kubernetes init container or Job already migrated).
# Without FLOE_DATABASE_URL, serve runs on its embedded PostgreSQL, which needs the
# PostgreSQL server binaries (FLOE_PG_BIN_DIR or the postgresql package) in the image.
#
# The final step is `exec`, so floe becomes this process: SIGTERM from `docker stop`,
# Kubernetes or systemd reaches floe itself, which drains and exits 0.
set -eu

FLOE=${FLOE_BIN:-floe}
log() { printf 'floe-entrypoint: %s\n' "$*" >&2; }

# Secrets mounted as files (Docker/Compose secrets, Kubernetes Secret volumes): a
# FLOE_BOOTSTRAP_CLIENT_SECRET_FILE names the file holding FLOE_BOOTSTRAP_CLIENT_SECRET.
if [ -n "${FLOE_BOOTSTRAP_CLIENT_SECRET_FILE:-}" ] && [ -z "${FLOE_BOOTSTRAP_CLIENT_SECRET:-}" ]; then
	FLOE_BOOTSTRAP_CLIENT_SECRET=$(cat "$FLOE_BOOTSTRAP_CLIENT_SECRET_FILE")
	export FLOE_BOOTSTRAP_CLIENT_SECRET
fi

if [ $# -eq 0 ]; then
	set -- serve
fi
case "$1" in
-*) set -- serve "$@" ;;
esac

if [ "$1" != serve ]; then
	exec "$FLOE" "$@"
fi

if [ -n "${FLOE_DATABASE_URL:-}" ] && [ "${FLOE_ENTRYPOINT_MIGRATE:-1}" != 0 ]; then
	wait_s=${FLOE_ENTRYPOINT_DB_WAIT:-60}
	if command -v pg_isready >/dev/null 2>&1; then
		deadline=$(($(date +%s) + wait_s))
		# -q: nothing printed, so the URL and its password never reach the log.
		if ! pg_isready -q -t 2 -d "$FLOE_DATABASE_URL"; then
			log "waiting for the database (up to ${wait_s}s)"
			until pg_isready -q -t 2 -d "$FLOE_DATABASE_URL"; do
				if [ "$(date +%s)" -ge "$deadline" ]; then
					log "database not reachable after ${wait_s}s; giving up"
					exit 1
				fi
				sleep 1
			done
		fi
	fi
	log "applying migrations"
	"$FLOE" migrate
fi

exec "$FLOE" "$@"
