#!/usr/bin/env bash
# The README's two commands share a checkout: deploy/quickstart.sh configures build/ as a
# release build without tests, and tests/run.sh must build whatever state build/ is in.
# This proves it without touching the caller's build directories: in a copy of the
# checkout (what a clone would have), it runs the quickstart's own build step
# (`deploy/quickstart.sh --build-only`: build/ at --buildtype=release), then the test
# command's build steps (`tests/run.sh --build-only --quick --no-deps`), and checks that
# both succeed and that build/ is still the quickstart's release build afterwards.
#
# Usage: tests/quickstart-build.sh [--keep]   (--keep leaves the copy for inspection)
# Needs the build packages installed (scripts/install-deps.sh); takes three builds.
set -euo pipefail

repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
keep=0
[ "${1:-}" = --keep ] && keep=1

copy=$(mktemp -d "${TMPDIR:-/tmp}/floe-quickstart-build.XXXXXX")
cleanup()
{
	if [ "$keep" = 1 ]; then echo "kept $copy"; else rm -rf "$copy"; fi
}
trap cleanup EXIT

# What a clone would have: tracked files plus new ones that are not ignored (no build
# directories, no .floe); without git (a copied checkout), everything but those.
if git -C "$repo" rev-parse --git-dir >/dev/null 2>&1; then
	# shellcheck disable=SC2016 # the sh -c script is meant to be single-quoted
	(cd "$repo" && git ls-files -z --cached --others --exclude-standard |
		xargs -0 -r sh -c 'for f; do [ -e "$f" ] && printf "%s\0" "$f"; done' sh |
		tar --null -T - -cf -) | tar -C "$copy" -xf -
else
	tar -C "$repo" --exclude='./build*' --exclude='./.floe' --exclude='node_modules' -cf - . |
		tar -C "$copy" -xf -
fi

fail() { echo "quickstart-build: FAILED: $*" >&2; exit 1; }
buildtype() { meson introspect --buildoptions "$copy/build" | jq -r '.[] | select(.name == "buildtype") | .value'; }

echo "== deploy/quickstart.sh --build-only (in $copy)"
(cd "$copy" && deploy/quickstart.sh --build-only </dev/null) || fail "deploy/quickstart.sh --build-only"
[ -x "$copy/build/server/floe" ] || fail "the quickstart built no build/server/floe"
[ "$(buildtype)" = release ] || fail "the quickstart's build/ is $(buildtype), not release"

echo "== tests/run.sh --build-only --quick --no-deps"
out=$(cd "$copy" && tests/run.sh --build-only --quick --no-deps </dev/null 2>&1) || {
	echo "$out"
	fail "tests/run.sh --build-only after the quickstart"
}
echo "$out" | tail -n 1
echo "$out" | tail -n 1 | grep -qx '2 passed, 0 failed' || fail "expected the two build steps to pass"
[ "$(buildtype)" = release ] || fail "tests/run.sh changed the quickstart's build/ to $(buildtype)"
"$copy/build/server/floe" version >/dev/null || fail "build/server/floe no longer runs"
echo "quickstart-build: ok (build/ is the quickstart's release build; the test builds succeeded beside it)"
