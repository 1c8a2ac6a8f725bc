#!/usr/bin/env bash
# Floe in one command: install the build and runtime packages (Debian 12; needs root when
# something is missing), build a release binary in build/ (reused if it exists), and run
# `floe serve` in the foreground on the embedded default: a private PostgreSQL cluster and a
# `file` warehouse under ./.floe, listening on http://127.0.0.1:8181. Ctrl-C stops it
# (and its PostgreSQL). Extra arguments go to `floe serve`, e.g. --port=9000.
# As root, floe runs the embedded PostgreSQL as the `postgres` user itself.
# `deploy/quickstart.sh --build-only` installs and builds, then exits without serving.
set -euo pipefail

repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$repo"

build_only=0
if [ "${1:-}" = --build-only ]; then
	build_only=1
	shift
fi

"$repo/scripts/install-deps.sh"

if [ ! -f build/meson-private/coredata.dat ]; then
	meson setup build --buildtype=release -Dtests=false # the daemon only; tests/run.sh turns tests on
fi
meson compile -C build
floe="$repo/build/server/floe"
if [ "$build_only" = 1 ]; then
	echo "built $floe"
	exit 0
fi

# Only to print the right URLs: the port floe will use (flag beats env beats 8181).
port=${FLOE_PORT:-8181}
prev=
for a in "$@"; do
	case "$a" in
	--port=*) port=${a#--port=} ;;
	*) [ "$prev" = --port ] && port=$a ;;
	esac
	prev=$a
done
base="http://127.0.0.1:$port"

cat <<EOF

Floe is starting on $base (Ctrl-C to stop). From another terminal:

  curl -s $base/v1/config
  curl -s -X POST -H 'Content-Type: application/json' \\
       -d '{"namespace":["demo"],"properties":{"owner":"me"}}' $base/v1/namespaces
  curl -s $base/v1/namespaces
  curl -s $base/v1/namespaces/demo
  curl -s $base/metrics | head

EOF

exec "$floe" serve "$@"
