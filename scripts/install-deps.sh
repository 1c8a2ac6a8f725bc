#!/usr/bin/env bash
# Installs the Debian packages Floe needs to build, run and (with --test) be tested.
#
# Usage: scripts/install-deps.sh [--test | --build-only] [--check]
#   --test        also the packages the test suite and the benchmark use (node, wrk, jq, ...)
#   --build-only  only what compiling needs (no PostgreSQL server; for the image's build stage)
#   --check       install nothing; list what is missing and exit 1 if anything is
#
# Idempotent: when every package is already installed it runs no apt command at all (the
# fast path), so a developer machine pays nothing; on a fresh Debian 12 it needs root.
# Node.js is special: a machine may already have a newer Node from another source (this
# image has NodeSource's v20, whose package conflicts with Debian's `npm`); any Node >= 18
# with npm is kept as it is, and Debian's nodejs + npm (v18) are installed only when there
# is no node at all (or it is older than 18).
set -euo pipefail

want_test=0
want_run=1
check_only=0
for arg in "$@"; do
	case "$arg" in
	--test) want_test=1 ;;
	--build-only) want_run=0 ;;
	--check) check_only=1 ;;
	-h | --help)
		sed -n '2,14p' "$0" | sed 's/^# \{0,1\}//'
		exit 0
		;;
	*)
		echo "install-deps: unknown argument: $arg" >&2
		exit 2
		;;
	esac
done

# To build: the compiler, Meson, and the -dev package of every library meson.build asks for
# (cmocka too: the unit tests are on by default).
build_pkgs=(
	build-essential meson ninja-build pkg-config
	libmicrohttpd-dev libpq-dev libjansson-dev libssl-dev libjwt-dev uuid-dev
	libzstd-dev libsnappy-dev zlib1g-dev libcurl4-openssl-dev libcmocka-dev
)
# To run: the PostgreSQL server binaries back the embedded default (initdb/pg_ctl), and
# ca-certificates lets libcurl verify S3/STS endpoints.
run_pkgs=(postgresql ca-certificates)
# To test and benchmark. util-linux gives runuser (PostgreSQL must not run as root); procps
# gives pgrep/ps, which the scripts use to make sure nothing is left running; bsdutils gives
# script(1), the pseudo-terminal of the ingest progress test; strace shows the durability test
# (ingest/durability.test.mjs) which syncs an ingest makes before it commits; zstd decodes
# the zstd-coded responses the HTTP tests read (node 20's zlib has no zstd), and
# python3-requests is PyIceberg's HTTP library, reading gzip-coded ones
# (tables/coding.test.mjs).
test_pkgs=(wrk jq python3 python3-avro python3-requests python3-yaml curl util-linux bsdutils procps strace zstd)

pkgs=("${build_pkgs[@]}")
[ "$want_run" = 1 ] && pkgs+=("${run_pkgs[@]}")
[ "$want_test" = 1 ] && pkgs+=("${test_pkgs[@]}")

missing=()
for p in "${pkgs[@]}"; do
	status=$(dpkg-query -W -f='${db:Status-Abbrev}' "$p" 2>/dev/null || true)
	case "$status" in
	ii*) ;;
	*) missing+=("$p") ;;
	esac
done

# Node: keep any node >= 18 that has npm beside it, whatever installed it.
if [ "$want_test" = 1 ]; then
	major=0
	if command -v node >/dev/null 2>&1; then
		major=$(node -p 'process.versions.node.split(".")[0]' 2>/dev/null || echo 0)
	fi
	if [ "$major" -lt 18 ]; then
		missing+=(nodejs) # absent or too old: Debian 12's is 18.x
	fi
	if ! command -v npm >/dev/null 2>&1; then
		if dpkg-query -W -f='${Provides}' nodejs 2>/dev/null | grep -qw npm; then
			echo "install-deps: this Node.js package claims to provide npm but npm is missing;" >&2
			echo "install-deps: Debian's npm conflicts with it, so install npm for it by hand" >&2
			exit 1
		fi
		missing+=(npm)
	fi
fi

if [ ${#missing[@]} -eq 0 ]; then
	echo "install-deps: all packages present"
	exit 0
fi
if [ "$check_only" = 1 ]; then
	echo "install-deps: missing: ${missing[*]}"
	exit 1
fi
if [ "$(id -u)" != 0 ]; then
	echo "install-deps: missing packages: ${missing[*]}" >&2
	echo "install-deps: run this script as root (or: sudo apt-get install ${missing[*]})" >&2
	exit 1
fi

echo "install-deps: installing ${missing[*]}"
export DEBIAN_FRONTEND=noninteractive
apt_opts=(-o DPkg::Lock::Timeout=600 -q)
apt-get "${apt_opts[@]}" update
apt-get "${apt_opts[@]}" install -y --no-install-recommends "${missing[@]}"
echo "install-deps: done"
