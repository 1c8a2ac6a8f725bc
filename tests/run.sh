#!/usr/bin/env bash
# Floe's whole test suite, the README's test command and what CI runs.
#
# Usage: tests/run.sh [--quick] [--no-deps] [--build-only]
#   --quick       skip the second pass under AddressSanitizer + UndefinedBehaviorSanitizer
#   --no-deps     do not check or install Debian packages
#   --build-only  only the build steps (each pass's build and the release build), no tests
# Environment: TESTS_BUILD_DIR (default build-test), TESTS_ASAN_BUILD_DIR (default
#   build-asan), TESTS_RELEASE_BUILD_DIR (default build-release), FLOE_SHARED_DIR,
#   INTEGRATION_TIMEOUT (seconds per integration pass, default 1200).
#
# Steps, each with a Meson build directory of its own (never build/, which belongs to
# deploy/quickstart.sh and the developer), configured with every option it depends on, so
# whatever state a directory is in (absent, half-built, configured by an older version
# or by hand) the result is the same:
#   1. build-test/     (debug, -Dwerror=true): cmocka unit tests (`meson test`), then the
#                      integration suite (`node --test` in tests/integration) against the
#                      real daemon
#   2. build-release/  (release, -O3, -Dwerror=true): compile only, so that a warning only
#                      the optimiser finds fails here rather than in a newcomer's quickstart
#   3. build-asan/     (debug, -Dwerror=true, -Db_sanitize=address,undefined): the unit and
#                      integration suites again (not with --quick)
#   4. tests/quickstart-build.sh: in a copy of the checkout, build/ configured as the
#                      quickstart does, then this script's build steps (one pass or one
#                      failure; not with --build-only)
# Both test passes share one throwaway PostgreSQL cluster (scripts/pg-throwaway.sh); each
# pass gets a fresh database in it, named in FLOE_TEST_PG_URL. The integration tests also
# get FLOE_BIN, FLOE_BUILD_DIR and FLOE_SHARED_DIR (default: ../shared beside the checkout).
#
# Ends with the line "N passed, N failed" (individual tests and compile-only steps; a step
# that could not run, such as a failed build, counts as one failure) and exits non-zero if
# anything failed. Every process it starts is stopped before it exits, including ones a
# test leaked.
set -euo pipefail

repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$repo"

quick=0
deps=1
build_only=0
for arg in "$@"; do
	case "$arg" in
	--quick) quick=1 ;;
	--no-deps) deps=0 ;;
	--build-only) build_only=1 ;;
	-h | --help)
		sed -n '2,/^set -euo/p' "$0" | sed '$d' | sed 's/^# \{0,1\}//'
		exit 0
		;;
	*)
		echo "tests/run.sh: unknown argument: $arg" >&2
		exit 2
		;;
	esac
done

if [ -z "${FLOE_SHARED_DIR:-}" ] && [ -d "$repo/../shared" ]; then
	FLOE_SHARED_DIR=$(cd "$repo/../shared" && pwd)
fi
[ -n "${FLOE_SHARED_DIR:-}" ] && export FLOE_SHARED_DIR

passed=0
failed=0
failures=()
t_start=$SECONDS
logdir=$(mktemp -d "${TMPDIR:-/tmp}/floe-tests.XXXXXX")
group= # process group of the integration run in progress, if any

# shellcheck source=scripts/pg-throwaway.sh
source "$repo/scripts/pg-throwaway.sh"

cleanup()
{
	set +e # an EXIT trap under errexit would stop at its first failure
	if [ -n "$group" ]; then
		kill -TERM -- "-$group" 2>/dev/null || true
		sleep 1
		kill -KILL -- "-$group" 2>/dev/null || true
	fi
	pg_throwaway_stop
	rm -rf "$logdir"
}
trap cleanup EXIT
trap 'echo "tests/run.sh: interrupted" >&2; exit 130' INT TERM

section()
{
	printf '\n==== %s (%ds)\n' "$*" $((SECONDS - t_start))
}

fail_step()
{
	failed=$((failed + 1))
	failures+=("$1")
	echo "FAILED: $1" >&2
}

# Reads one "Label:   N" count from meson test's closing summary.
meson_count()
{
	local n
	n=$(sed -n "s/^$1:[[:space:]]*\([0-9][0-9]*\)[[:space:]]*\$/\1/p" "$2" | tail -n 1)
	echo "${n:-0}"
}

# Every option a build depends on, set explicitly: whatever configured a directory
# before (the quickstart, an older version of this script, a developer), setup gives the
# same build. $1 = buildtype; the rest are added after, and a later -D wins in Meson.
options()
{
	local buildtype=$1
	shift
	echo "--buildtype=$buildtype -Dwerror=true -Dtests=true -Dfuzz=false -Db_sanitize=none" \
		"-Db_lundef=true -Dc_args= -Dc_link_args= $*"
}

# Configures (or reconfigures) a build directory and compiles it. $1 = dir, rest = options.
build()
{
	local dir=$1
	shift
	if [ -f "$dir/meson-private/coredata.dat" ]; then
		meson setup --reconfigure "$dir" "$@" >"$logdir/setup.log" 2>&1 ||
			meson setup --wipe "$dir" "$@" >"$logdir/setup.log" 2>&1 ||
			{
				cat "$logdir/setup.log"
				return 1
			}
	else
		# Half-configured (setup interrupted before coredata was written): start over.
		if [ -d "$dir/meson-private" ] || [ -d "$dir/meson-logs" ]; then
			rm -rf "$dir"
		fi
		meson setup "$dir" "$@" >"$logdir/setup.log" 2>&1 || {
			cat "$logdir/setup.log"
			return 1
		}
	fi
	meson compile -C "$dir"
}

# A build directory's absolute path. $1 = dir (relative to the checkout or absolute).
abs_dir()
{
	case "$1" in /*) echo "$1" ;; *) echo "$repo/$1" ;; esac
}

# Prints "PASSED FAILED" for the last meson test run in build dir $1, counting cmocka's
# individual cases: "[       OK ]" and "[  FAILED  ]"/"[  ERROR   ]" lines of each program.
# A program that failed without a failed case (a crash, a sanitizer report at exit, a
# timeout) counts as one failure; a passing program with no cmocka output as one pass.
unit_counts()
{
	jq -rs '
	  def n(p): (.stdout // "") | split("\n") | map(select(test(p))) | length;
	  map(
	    (n("^\\[       OK \\] ")) as $ok | (n("^\\[  (FAILED|ERROR) *\\] ")) as $bad |
	    if .result == "OK" or .result == "EXPECTEDFAIL" then [([$ok, 1] | max), 0]
	    elif .result == "SKIP" then [$ok, $bad]
	    else [$ok, ([$bad, 1] | max)] end)
	  | "\(map(.[0]) | add // 0) \(map(.[1]) | add // 0)"' "$1/meson-logs/testlog.json"
}

# cmocka unit tests of every folder through meson test. $1 = build dir, $2 = pass name.
unit_tests()
{
	local dir=$1 name=$2 log="$logdir/unit-$2.log" rc=0 ok fail counts
	rm -f "$dir/meson-logs/testlog.json"
	meson test -C "$dir" --print-errorlogs --num-processes 2 \
		${UNIT_TIMEOUT_MULTIPLIER:+--timeout-multiplier "$UNIT_TIMEOUT_MULTIPLIER"} 2>&1 |
		tee "$log" || rc=$?
	if [ -f "$dir/meson-logs/testlog.json" ] && counts=$(unit_counts "$dir") && [ -n "$counts" ]; then
		read -r ok fail <<<"$counts"
	else # no jq or no log: count whole programs from meson's summary
		ok=$(($(meson_count Ok "$log") + $(meson_count 'Expected Fail' "$log")))
		fail=$(($(meson_count Fail "$log") + $(meson_count 'Unexpected Pass' "$log") + $(meson_count Timeout "$log")))
	fi
	echo "unit tests ($name): $ok cases passed, $fail failed"
	passed=$((passed + ok))
	failed=$((failed + fail))
	[ "$fail" -gt 0 ] && failures+=("unit tests ($name): $fail failed")
	if [ "$rc" != 0 ] && [ "$fail" = 0 ]; then
		fail_step "meson test ($name) exited $rc"
	fi
	return 0
}

integration_ready=0
# Installs the integration suite's npm packages once (from its lockfile).
integration_setup()
{
	[ "$integration_ready" = 0 ] || return 0
	integration_ready=2
	if [ ! -f tests/integration/package.json ]; then
		echo "no tests/integration/package.json: integration suite skipped"
		return 0
	fi
	section "npm ci (tests/integration)"
	local cmd=ci
	[ -f tests/integration/package-lock.json ] || {
		echo "warning: no package-lock.json; using npm install" >&2
		cmd=install
	}
	(cd tests/integration && npm "$cmd" --no-audit --no-fund --loglevel=error) || {
		fail_step "npm $cmd in tests/integration"
		return 0
	}
	integration_ready=1
}

# The integration suite against the daemon of one build. $1 = build dir, $2 = pass name.
integration_tests()
{
	local dir=$1 name=$2 tap="$logdir/integration-$2.tap" rc=0 db pass fail cancelled
	integration_setup
	[ "$integration_ready" = 1 ] || return 0
	if [ -z "${PGT_DIR:-}" ]; then
		section "PostgreSQL (throwaway cluster)"
		pg_throwaway_start || {
			fail_step "start throwaway PostgreSQL"
			integration_ready=2
			return 0
		}
		echo "PostgreSQL on 127.0.0.1:$PGT_PORT, data in $PGT_DIR"
	fi
	db="floe_test_${name//[^a-z0-9]/_}"
	if ! pg_throwaway_sql "DROP DATABASE IF EXISTS $db" || ! pg_throwaway_sql "CREATE DATABASE $db"; then
		fail_step "create database $db"
		return 0
	fi
	section "integration tests ($name)"
	# timeout(1) puts itself and everything below it in a new process group; after the run,
	# anything still in that group (a daemon a test failed to stop) is reported and killed.
	(
		cd tests/integration
		export FLOE_BIN="$dir/server/floe" FLOE_BUILD_DIR="$dir"
		export FLOE_TEST_PG_URL="postgresql://postgres@127.0.0.1:$PGT_PORT/$db"
		exec timeout -k 10 "${INTEGRATION_TIMEOUT:-1200}" node --test \
			--test-reporter=spec --test-reporter-destination=stdout \
			--test-reporter=tap --test-reporter-destination="$tap"
	) </dev/null &
	group=$!
	wait "$group" || rc=$?
	if kill -0 -- "-$group" 2>/dev/null; then
		echo "processes left running by the integration tests ($name):" >&2
		ps -e -o pid=,pgid=,args= | awk -v g="$group" '$2 == g' >&2 || true
		kill -TERM -- "-$group" 2>/dev/null || true
		sleep 2
		kill -KILL -- "-$group" 2>/dev/null || true
		fail_step "integration tests ($name) left processes running"
	fi
	group=
	[ "$rc" = 124 ] && fail_step "integration tests ($name) timed out"
	pass=$(sed -n 's/^# pass \([0-9]*\)$/\1/p' "$tap" 2>/dev/null | tail -n 1)
	fail=$(sed -n 's/^# fail \([0-9]*\)$/\1/p' "$tap" 2>/dev/null | tail -n 1)
	cancelled=$(sed -n 's/^# cancelled \([0-9]*\)$/\1/p' "$tap" 2>/dev/null | tail -n 1)
	fail=$((${fail:-0} + ${cancelled:-0}))
	passed=$((passed + ${pass:-0}))
	failed=$((failed + fail))
	[ "$fail" -gt 0 ] && failures+=("integration tests ($name): $fail failed")
	if [ "$rc" != 0 ] && [ "$rc" != 124 ] && [ "$fail" = 0 ]; then
		fail_step "node --test ($name) exited $rc"
	fi
	return 0
}

# One pass: build, unit tests, integration tests. $1 = build dir, $2 = name, rest = options.
run_pass()
{
	local dir name=$2
	dir=$(abs_dir "$1")
	shift 2
	section "build $dir ($name)"
	if ! build "$dir" "$@"; then
		fail_step "build $dir"
		return 0
	fi
	if [ "$build_only" = 1 ]; then
		passed=$((passed + 1))
		return 0
	fi
	section "unit tests ($name)"
	unit_tests "$dir" "$name"
	integration_tests "$dir" "$name"
}

# A compile-only step: one test that passes when the build does. $1 = dir, rest = options.
compile_step()
{
	local dir
	dir=$(abs_dir "$1")
	shift
	section "build $dir (compile only)"
	if build "$dir" "$@"; then
		passed=$((passed + 1))
	else
		fail_step "build $dir"
	fi
}

if [ "$deps" = 1 ]; then
	section "dependencies"
	"$repo/scripts/install-deps.sh" --test || fail_step "install dependencies"
fi
[ -n "${FLOE_SHARED_DIR:-}" ] || echo "warning: no ../shared beside the checkout; set FLOE_SHARED_DIR" >&2
echo "node $(node --version 2>/dev/null || echo missing), $(meson --version 2>/dev/null | sed 's/^/meson /'), $(gcc --version 2>/dev/null | head -n 1)"

if [ "$failed" = 0 ]; then
	# shellcheck disable=SC2046 # options() prints words
	run_pass "${TESTS_BUILD_DIR:-build-test}" main $(options debug)
	# shellcheck disable=SC2046
	compile_step "${TESTS_RELEASE_BUILD_DIR:-build-release}" $(options release)
	if [ "$quick" = 0 ]; then
		export ASAN_OPTIONS="detect_leaks=1"
		export UBSAN_OPTIONS="halt_on_error=1:print_stacktrace=1"
		UNIT_TIMEOUT_MULTIPLIER=3
		# shellcheck disable=SC2046
		run_pass "${TESTS_ASAN_BUILD_DIR:-build-asan}" asan $(options debug \
			-Db_sanitize=address,undefined -Db_lundef=false -Dc_args=-fno-omit-frame-pointer)
		unset ASAN_OPTIONS UBSAN_OPTIONS
	fi
	if [ "$build_only" = 0 ]; then
		section "the quickstart's build/, then this script's build steps (tests/quickstart-build.sh)"
		if "$repo/tests/quickstart-build.sh" >"$logdir/quickstart-build.log" 2>&1; then
			tail -n 1 "$logdir/quickstart-build.log"
			passed=$((passed + 1))
		else
			cat "$logdir/quickstart-build.log"
			fail_step "tests/quickstart-build.sh"
		fi
	fi
fi

section "summary"
for f in "${failures[@]+"${failures[@]}"}"; do
	echo "  failed: $f"
done
echo "$passed passed, $failed failed"
[ "$failed" = 0 ]
