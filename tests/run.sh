#!/usr/bin/env bash
# Floe's whole test suite, the README's test command and what CI runs.
#
# Usage: tests/run.sh [--quick] [--no-deps] [--build-only]
#   --quick       no sanitizers: the unit tests and every integration file on build-test/
#                 (no AddressSanitizer + UndefinedBehaviorSanitizer, no ThreadSanitizer)
#   --no-deps     do not check or install Debian packages
#   --build-only  only the build steps (each pass's build and the release build), no tests
# Environment: TESTS_BUILD_DIR (default build-test), TESTS_ASAN_BUILD_DIR (default
#   build-asan), TESTS_TSAN_BUILD_DIR (default build-tsan), TESTS_RELEASE_BUILD_DIR
#   (default build-release), FLOE_SHARED_DIR,
#   INTEGRATION_TIMEOUT (seconds per integration pass, default 1200),
#   INTEGRATION_CONCURRENCY (test files run at once, default 2; each file has its own
#   database, daemons on port 0 and temporary directories).
#
# Steps, each with a Meson build directory of its own (never build/, which belongs to
# deploy/quickstart.sh and the developer), configured with every option it depends on, so
# whatever state a directory is in (absent, half-built, configured by an older version
# or by hand) the result is the same:
#   1. build-asan/     (debug, -Dwerror=true, -Db_sanitize=address,undefined): cmocka unit
#                      tests (`meson test`), then the whole integration suite (`node --test`
#                      in tests/integration) against the real daemon, every file
#   2. build-test/     (debug, -Dwerror=true): the unit tests again, without sanitizers
#   3. build-release/  (release, -O3, -Dwerror=true): compile only, so that a warning only
#                      the optimiser finds fails here rather than in a newcomer's quickstart
#   4. build-tsan/     (debug, -Dwerror=true, -Db_sanitize=thread): the unit tests (all but
#                      TSAN_UNIT_SKIP below, slow ones that start no thread) and the
#                      integration files again (all but TSAN_SKIP below) under
#                      ThreadSanitizer, which fails on the first data race (suppressions:
#                      tests/tsan.supp), with no table document kept in PostgreSQL
#   5. tests/quickstart-build.sh: in a copy of the checkout, build/ configured as the
#                      quickstart does, then this script's build steps (one pass or one
#                      failure; not with --build-only)
# With --quick, step 1 is build-test/ without sanitizers (its unit tests and every
# integration file), and there are no steps 2 and 4.
# Every build but the first, and step 5, are compiles: unless --build-only, they run in the
# background at nice 19 while the tests of step 1 run (the tests mostly wait on daemons,
# PostgreSQL and sleeps, so the compiler gets the idle CPU and the tests keep theirs); their
# logs are printed when they are done. Integration files run INTEGRATION_CONCURRENCY at a time.
#
# Why the integration suite runs on the sanitizer build and not on a plain one as well: the
# same assertions run, and AddressSanitizer + UndefinedBehaviorSanitizer only add checks.
# A third pass on build-test/ repeated the work of the tests themselves (node, DuckDB,
# PostgreSQL, moto: ~85 % of a pass's CPU, `accton`), about six minutes of the run.
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
group=    # process group of the integration run in progress, if any
bg_group= # process group of the background compile steps, if running
bg_rc=    # exit status of the background step background_wait waited for

# shellcheck source=scripts/pg-throwaway.sh
source "$repo/scripts/pg-throwaway.sh"

cleanup()
{
	set +e # an EXIT trap under errexit would stop at its first failure
	local g
	for g in "$group" "$bg_group"; do
		[ -n "$g" ] || continue
		kill -TERM -- "-$g" 2>/dev/null || true
		sleep 1
		kill -KILL -- "-$g" 2>/dev/null || true
	done
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

# A sanitizer build's options. $1 = the sanitizers (address,undefined or thread).
sanitizer_options()
{
	options debug "-Db_sanitize=$1" -Db_lundef=false -Dc_args=-fno-omit-frame-pointer
}

# Configures (or reconfigures) a build directory and compiles it. $1 = dir, rest = options.
build()
{
	local dir=$1 log
	shift
	log="$logdir/setup-${dir//\//_}.log"
	if [ -f "$dir/meson-private/coredata.dat" ]; then
		meson setup --reconfigure "$dir" "$@" >"$log" 2>&1 ||
			meson setup --wipe "$dir" "$@" >"$log" 2>&1 ||
			{
				cat "$log"
				return 1
			}
	else
		# Half-configured (setup interrupted before coredata was written): start over.
		if [ -d "$dir/meson-private" ] || [ -d "$dir/meson-logs" ]; then
			rm -rf "$dir"
		fi
		meson setup "$dir" "$@" >"$log" 2>&1 || {
			cat "$log"
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

# cmocka unit tests of every folder through meson test. $1 = build dir, $2 = pass name,
# rest = test names to leave out (warned about when meson has no such test).
unit_tests()
{
	local dir=$1 name=$2 log="$logdir/unit-$2.log" rc=0 ok fail counts skip
	local -a only=()
	shift 2
	if [ "$#" -gt 0 ]; then
		mapfile -t only < <(meson test -C "$dir" --list 2>/dev/null | sed -n 's|^[^ ]* / ||p')
		for skip in "$@"; do
			printf '%s\n' "${only[@]}" | grep -qxF -- "$skip" ||
				echo "warning: no unit test named $skip to leave out" >&2
		done
		mapfile -t only < <(printf '%s\n' "${only[@]}" | grep -vxF -f <(printf '%s\n' "$@"))
	fi
	rm -f "$dir/meson-logs/testlog.json"
	meson test -C "$dir" --print-errorlogs --num-processes 2 \
		${UNIT_TIMEOUT_MULTIPLIER:+--timeout-multiplier "$UNIT_TIMEOUT_MULTIPLIER"} "${only[@]}" 2>&1 |
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
	# moto_server's Python, probed once here rather than in every test process
	# (lib/moto.mjs: the probe imports moto, ~1 s of CPU).
	FLOE_TEST_MOTO_PYTHON=$(cd tests/integration && node --input-type=module -e \
		"import { motoPython } from './lib/moto.mjs'; process.stdout.write(motoPython() ?? '')")
	export FLOE_TEST_MOTO_PYTHON
	echo "moto_server's Python: ${FLOE_TEST_MOTO_PYTHON:-none (the S3 tests will skip)}"
	integration_ready=1
}

# Integration files the ThreadSanitizer pass leaves out; the first pass (ASan, or build-test/
# with --quick) runs every file, and a new file runs under both unless it is added here.
# Chosen by evidence (for the ASan pass, when it did not run every file): each file run
# alone against a -Db_coverage=true build, gcov's executed lines of the C sources (not
# tests/) per file. Without the 17 files measured then (the 14 below but deploy, and the
# three taken back, see below) the other files still executed 21,840 of the 21,845 lines the
# whole suite did (the 5: one line each in storage/feed/cast.c, storage/feed/infer.c,
# storage/iceberg/snapshot.c and two in storage/rest/committer.c), and they were 155 s of a
# 688 s run. What they check is behaviour the first pass keeps checking: independent readers
# (DuckDB, hyparquet, icebird, avsc, python3-avro) of files the unit-tested writers made,
# SIGKILL timing (a killed floe has no sanitizer report to give), the README's text, and the
# same C paths on S3 or over REST. Kept although their own lines are few: tables/concurrency
# (8 threads racing commits: where a race would show), the bad-input, auth attack, openapi
# and client-replay files (untrusted bytes into the parsers), s3/faults and db-outage (error
# paths). Taken back for ThreadSanitizer, whose findings depend on which threads meet, not
# on lines: tables/replicas and tables/commit-replica-base (a daemon's listening thread
# dropping cached tables while its workers serve them, two daemons) and restart (SIGTERM
# draining workers with a request in flight); mostly quiet periods, ~20 s of the pass.
TSAN_SKIP=(
	write-path/avro-readers.test.mjs            # 0 lines of its own
	write-path/parquet-duckdb.test.mjs          # 0
	write-path/parquet-hyparquet.test.mjs       # 0
	write-path/table-icebird.test.mjs           # 0
	write-path-snapshot/avro-readers.test.mjs   # 0
	write-path-snapshot/table-icebird.test.mjs  # 0
	tables/crash.test.mjs                       # 0 (SIGKILL)
	feeds/crash.test.mjs                        # 0 (SIGKILL)
	readme.test.mjs                             # 0 (the README's commands)
	deploy.test.mjs                             # not measured (after the 17): a shell entry point
	                                            # starting `floe migrate` and `serve`, as all do
	ingest/table.test.mjs                       # 0
	s3/maintain.test.mjs                        # 0
	s3/ingest.test.mjs                          # 2
	ingest/rest-vs-inprocess.test.mjs           # 2
	maintain/manifests-deletes.test.mjs         # 1
)

# Unit programs the ThreadSanitizer pass leaves out (the ASan pass runs every one): programs
# that never start a second thread, where TSan has no race to find, and that took over a
# second under it (49 s, 8.5, 4.4, 3.3, 2.0, 1.8, 1.4 and 1.3 s; together a minute of the
# pass's two processes). The evidence: meson test over the whole unit suite with an
# `strace -f -e trace=clone,clone3,fork,vfork` wrapper; 10 programs clone with CLONE_THREAD,
# none of these does (storage_snapshot_snapshot forks children that start none either).
# Re-measure when one of them starts using threads (storage/base/workq.c, io/pending.c).
TSAN_UNIT_SKIP=(
	storage_parquet_reader
	storage_deletes
	storage_snapshot_snapshot
	common/json
	storage_snapshot_reader
	test_secret
	storage_feed_cast
	test_basecache
)

# Prints the integration test files (relative to tests/integration) minus those named in
# the arguments, one a line; warns about a named file that does not exist.
integration_files_except()
{
	local f skip
	for skip in "$@"; do
		[ -f "tests/integration/$skip" ] || echo "warning: TSAN_SKIP names a missing file: $skip" >&2
	done
	(cd tests/integration && find . -path ./node_modules -prune -o -type f -name '*.test.mjs' -print) |
		sed 's|^\./||' | LC_ALL=C sort | while IFS= read -r f; do
		for skip in "$@"; do [ "$f" = "$skip" ] && continue 2; done
		printf '%s\n' "$f"
	done
}

# node's --test-concurrency (node 20.10+; older ones run one file at a time).
concurrency_args()
{
	local n=${INTEGRATION_CONCURRENCY:-2}
	if node --test-concurrency="$n" -e '' >/dev/null 2>&1; then
		echo "--test-concurrency=$n"
	fi
}

# The integration suite against the daemon of one build. $1 = build dir, $2 = pass name,
# rest = the test files to run (relative to tests/integration; none = every file).
integration_tests()
{
	local dir=$1 name=$2 tap="$logdir/integration-$2.tap" rc=0 db pass fail cancelled conc
	shift 2
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
	conc=$(concurrency_args)
	if [ "$#" -gt 0 ]; then
		section "integration tests ($name): $# files${conc:+, $conc}"
	else
		section "integration tests ($name): every file${conc:+, $conc}"
	fi
	# timeout(1) puts itself and everything below it in a new process group; after the run,
	# anything still in that group (a daemon a test failed to stop) is reported and killed.
	(
		cd tests/integration
		export FLOE_BIN="$dir/server/floe" FLOE_BUILD_DIR="$dir"
		export FLOE_TEST_PG_URL="postgresql://postgres@127.0.0.1:$PGT_PORT/$db"
		# shellcheck disable=SC2086 # $conc is one word or none
		exec timeout -k 10 "${INTEGRATION_TIMEOUT:-1200}" node --test $conc \
			--test-reporter=spec --test-reporter-destination=stdout \
			--test-reporter=tap --test-reporter-destination="$tap" "$@"
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

# The AddressSanitizer + UndefinedBehaviorSanitizer pass's tests, on a build-asan/ built
# already: every unit test and every integration file, with the default settings.
# $1 = build dir.
asan_tests()
{
	export ASAN_OPTIONS="detect_leaks=1"
	export UBSAN_OPTIONS="halt_on_error=1:print_stacktrace=1"
	UNIT_TIMEOUT_MULTIPLIER=3
	section "unit tests (asan)"
	unit_tests "$1" asan
	integration_tests "$1" asan
	unset ASAN_OPTIONS UBSAN_OPTIONS UNIT_TIMEOUT_MULTIPLIER
}

# The ThreadSanitizer pass's tests, on a build-tsan/ built already. $1 = build dir. A
# daemon stops at its first data race (the harness reports it exited by itself, with the
# report), and a command exits 66; tests/tsan.supp says what is suppressed and why. Its
# daemons and commands keep no table's metadata in PostgreSQL (--metadata-inline-max-bytes
# 0, given to them by the harness): every read of a table's document reads its file,
# through the same tests that the first pass runs with documents stored beside their rows.
tsan_tests()
{
	local files
	export TSAN_OPTIONS="halt_on_error=1 second_deadlock_stack=1 suppressions=$repo/tests/tsan.supp"
	export FLOE_TEST_CHILD_METADATA_INLINE_MAX_BYTES=0
	UNIT_TIMEOUT_MULTIPLIER=3
	section "unit tests (tsan)"
	unit_tests "$1" tsan "${TSAN_UNIT_SKIP[@]}"
	mapfile -t files < <(integration_files_except "${TSAN_SKIP[@]}")
	integration_tests "$1" tsan "${files[@]}"
	unset TSAN_OPTIONS UNIT_TIMEOUT_MULTIPLIER FLOE_TEST_CHILD_METADATA_INLINE_MAX_BYTES
}

# The compile steps that overlap the tests (see the header), run by background_start in a
# process group of their own at nice 19. Each step STEP leaves its output in
# $logdir/bg-STEP.log and then its exit status in $logdir/bg-STEP.rc.
background_steps()
{
	local rc
	if [ "$quick" = 0 ]; then
		# shellcheck disable=SC2046 # options() prints words
		build "$main_dir" $(options debug) >"$logdir/bg-main.log" 2>&1 && rc=0 || rc=$?
		echo "$rc" >"$logdir/bg-main.rc"
	fi
	# shellcheck disable=SC2046
	build "$rel_dir" $(options release) >"$logdir/bg-release.log" 2>&1 && rc=0 || rc=$?
	echo "$rc" >"$logdir/bg-release.rc"
	if [ "$quick" = 0 ]; then
		# shellcheck disable=SC2046
		build "$tsan_dir" $(sanitizer_options thread) >"$logdir/bg-tsan.log" 2>&1 && rc=0 || rc=$?
		echo "$rc" >"$logdir/bg-tsan.rc"
	fi
	"$repo/tests/quickstart-build.sh" >"$logdir/bg-quickstart.log" 2>&1 && rc=0 || rc=$?
	echo "$rc" >"$logdir/bg-quickstart.rc"
}

background_start()
{
	export logdir repo quick main_dir rel_dir tsan_dir
	export -f background_steps build options sanitizer_options
	# timeout(1) makes itself the leader of a new process group: cleanup() can stop it all.
	nice -n 19 timeout -k 10 3600 bash -c background_steps </dev/null >"$logdir/bg.log" 2>&1 &
	bg_group=$!
}

# Waits for background step $1 to finish and sets bg_rc to its exit status (empty if the
# background job ended without it). Polls in this shell, so an INT or TERM trap runs
# within a second (a trap waits for the foreground command to end).
background_wait()
{
	while [ ! -f "$logdir/bg-$1.rc" ] && kill -0 "$bg_group" 2>/dev/null; do
		sleep 1
	done
	bg_rc=$(cat "$logdir/bg-$1.rc" 2>/dev/null || true)
}

# Reports background step $1 (a section titled $2) as one pass or one failure; on success
# only its last line is printed, on failure its whole log.
background_report()
{
	local rc
	background_wait "$1"
	rc=$bg_rc
	section "$2 (in the background)"
	if [ "$rc" = 0 ]; then
		tail -n 1 "$logdir/bg-$1.log"
		passed=$((passed + 1))
	else
		cat "$logdir/bg-$1.log" "$logdir/bg.log" 2>/dev/null
		fail_step "$2${rc:+ (exit $rc)}"
	fi
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

main_dir=$(abs_dir "${TESTS_BUILD_DIR:-build-test}")
rel_dir=$(abs_dir "${TESTS_RELEASE_BUILD_DIR:-build-release}")
asan_dir=$(abs_dir "${TESTS_ASAN_BUILD_DIR:-build-asan}")
tsan_dir=$(abs_dir "${TESTS_TSAN_BUILD_DIR:-build-tsan}")
if [ "$failed" = 0 ] && [ "$build_only" = 1 ]; then
	# shellcheck disable=SC2046 # options() prints words
	run_pass "$main_dir" main $(options debug)
	# shellcheck disable=SC2046
	compile_step "$rel_dir" $(options release)
	if [ "$quick" = 0 ]; then
		# shellcheck disable=SC2046
		run_pass "$asan_dir" asan $(sanitizer_options address,undefined)
		# shellcheck disable=SC2046
		run_pass "$tsan_dir" tsan $(sanitizer_options thread)
	fi
elif [ "$failed" = 0 ]; then
	# The first build is in the foreground, the others compile while its tests run.
	if [ "$quick" = 1 ]; then
		first_dir=$main_dir first=main first_options=$(options debug)
	else
		first_dir=$asan_dir first=asan first_options=$(sanitizer_options address,undefined)
	fi
	section "build $first_dir ($first)"
	# shellcheck disable=SC2086 # the options are words
	if build "$first_dir" $first_options; then
		background_start
		if [ "$quick" = 1 ]; then
			section "unit tests (main)"
			unit_tests "$main_dir" main
			integration_tests "$main_dir" main
		else
			asan_tests "$asan_dir"
		fi
	else
		fail_step "build $first_dir"
		background_start
	fi
	if [ "$quick" = 0 ]; then
		background_report main "build $main_dir (main)"
		if [ "$bg_rc" = 0 ]; then
			section "unit tests (main)"
			unit_tests "$main_dir" main
		fi
	fi
	background_report release "build $rel_dir (compile only)"
	if [ "$quick" = 0 ]; then
		background_report tsan "build $tsan_dir (tsan)"
		[ "$bg_rc" = 0 ] && tsan_tests "$tsan_dir"
	fi
	background_report quickstart "the quickstart's build/, then this script's build steps (tests/quickstart-build.sh)"
	bg_group=
fi

section "summary"
for f in "${failures[@]+"${failures[@]}"}"; do
	echo "  failed: $f"
done
echo "$passed passed, $failed failed"
[ "$failed" = 0 ]
