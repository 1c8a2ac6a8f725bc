#!/usr/bin/env bash
# Proves the README's two commands on a fresh, minimal Debian 12, in README order, as a
# newcomer runs them: debootstrap a minbase bookworm (cached in --base), copy this checkout
# (what a clone has: no build directories) and ../shared into a new chroot, then inside it,
# in one chroot, one after the other:
#   1. the run command (the README's first sh block, deploy/quickstart.sh), in the
#      background: it must serve GET /v1/config on 127.0.0.1:8181 (and the other routes
#      curled below); then Ctrl-C (SIGINT) stops it, and nothing may be left running;
#   2. the test command (the README's second sh block, tests/run.sh), on the checkout the
#      quickstart just built in: it must pass, and nothing may be left running.
# The commands are read from README.md, so the check follows the README when it changes.
# Needs root and debootstrap; uses apt's configured Debian mirror. Port 8181 must be free
# on the host (a chroot shares the host's network).
#
# Usage: scripts/fresh-debian-check.sh [--base DIR] [--root DIR] [--keep] [--quick] [--skip-tests]
#   --base DIR    cached pristine debootstrap (default /var/tmp/floe-chroot-base; created
#                 when missing)
#   --root DIR    the chroot to create (default /var/tmp/floe-chroot; replaced)
#   --keep        leave the chroot in place afterwards (mounts are always removed)
#   --quick       add --quick to the test command (one pass, without sanitizers)
#   --skip-tests  only the run command
set -euo pipefail

repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
shared=${FLOE_SHARED_DIR:-$repo/../shared}
base=/var/tmp/floe-chroot-base
root=/var/tmp/floe-chroot
keep=0
tests=1
quick=
while [ $# -gt 0 ]; do
	case "$1" in
	--base) base=$2; shift ;;
	--root) root=$2; shift ;;
	--keep) keep=1 ;;
	--quick) quick=" --quick" ;;
	--skip-tests) tests=0 ;;
	*) echo "usage: $0 [--base DIR] [--root DIR] [--keep] [--quick] [--skip-tests]" >&2; exit 2 ;;
	esac
	shift
done
[ "$(id -u)" = 0 ] || { echo "fresh-debian-check: needs root" >&2; exit 1; }
command -v debootstrap >/dev/null || { echo "fresh-debian-check: apt-get install debootstrap" >&2; exit 1; }

# The README's commands: its first two sh blocks (run, then test), one command each,
# without comments.
readme_command()
{
	awk -v want="$1" '/^```sh$/ { n++; inside = 1; next } /^```/ { inside = 0 } inside && n == want' \
		"$repo/README.md" | sed 's/[[:space:]]*#.*$//' | grep -v '^[[:space:]]*$'
}
run_cmd=$(readme_command 1)
test_cmd=$(readme_command 2)
if [ "$(echo "$run_cmd" | wc -l)" != 1 ] || [ "$(echo "$test_cmd" | wc -l)" != 1 ]; then
	printf 'fresh-debian-check: expected one run and one test command in README.md, got:\n%s\n%s\n' \
		"$run_cmd" "$test_cmd" >&2
	exit 1
fi
test_cmd="$test_cmd$quick"
echo "README order: run command '$run_cmd', then test command '$test_cmd'"
if curl -s -o /dev/null --max-time 2 http://127.0.0.1:8181/; then
	echo "fresh-debian-check: something already answers on 127.0.0.1:8181; stop it first" >&2
	exit 1
fi

# The Debian mirror apt already uses (deb822 or one-line sources).
mirror=$(sed -n 's/^URIs:[[:space:]]*\(http[^ ]*\/debian\)\/*$/\1/p' /etc/apt/sources.list.d/*.sources 2>/dev/null | head -n 1)
[ -n "$mirror" ] || mirror=$(awk '$1 == "deb" && $2 ~ /\/debian\/?$/ { print $2; exit }' /etc/apt/sources.list 2>/dev/null)
mirror=${mirror:-http://deb.debian.org/debian}

mounts_of() { awk -v r="$1" '$2 == r || index($2, r "/") == 1 { print $2 }' /proc/self/mounts; }
unmount_all()
{
	local m
	for m in $(mounts_of "$root" | sort -r); do
		umount -l "$m" 2>/dev/null || true
	done
}
# Kills processes whose root directory is the chroot (things the checks left running).
chroot_procs() { local p; for p in /proc/[0-9]*; do [ "$(readlink "$p/root" 2>/dev/null)" = "$root" ] && echo "${p#/proc/}"; done; true; }
cleanup()
{
	set +e # an EXIT trap under errexit would stop at the first failure, leaving mounts
	local pids
	pids=$(chroot_procs)
	# shellcheck disable=SC2086 # a list of pids
	[ -n "$pids" ] && kill -KILL $pids 2>/dev/null
	unmount_all
	if [ -n "$(mounts_of "$root")" ]; then
		echo "fresh-debian-check: mounts remain under $root; not deleting it" >&2
	elif [ "$keep" = 0 ]; then
		rm -rf "$root"
	fi
}

t0=$SECONDS
stamp() { printf '\n#### %s (%ds)\n' "$*" $((SECONDS - t0)); }

if [ ! -x "$base/bin/bash" ]; then
	stamp "debootstrap --variant=minbase bookworm $base ($mirror)"
	debootstrap --variant=minbase bookworm "$base" "$mirror"
fi

stamp "new chroot $root"
unmount_all
[ -z "$(mounts_of "$root")" ] || { echo "fresh-debian-check: $root still has mounts" >&2; exit 1; }
rm -rf "$root"
cp -a "$base" "$root"
trap cleanup EXIT
trap 'exit 130' INT TERM
security=${mirror%/debian}/debian-security
cat >"$root/etc/apt/sources.list" <<EOF
deb $mirror bookworm main
deb $mirror bookworm-updates main
deb $security bookworm-security main
EOF
cp /etc/resolv.conf "$root/etc/resolv.conf" 2>/dev/null || true
# A host behind a TLS-inspecting proxy trusts extra CA certificates (and points npm, whose
# Node.js ignores the system store, at the system bundle); a fresh machine on the same
# network has them too, so carry both over. ca-certificates picks the certificates up when
# it is installed.
if ls /usr/local/share/ca-certificates/*.crt >/dev/null 2>&1; then
	mkdir -p "$root/usr/local/share/ca-certificates"
	cp /usr/local/share/ca-certificates/*.crt "$root/usr/local/share/ca-certificates/"
fi
for f in /etc/npmrc /usr/etc/npmrc; do
	[ -f "$f" ] && install -D -m 0644 "$f" "$root$f"
done
# As in any chroot, package scripts must not start services (postgresql's main cluster).
printf '#!/bin/sh\nexit 101\n' >"$root/usr/sbin/policy-rc.d"
chmod +x "$root/usr/sbin/policy-rc.d"
mount -t proc proc "$root/proc"
mount --rbind /sys "$root/sys" && mount --make-rslave "$root/sys"
mount --rbind /dev "$root/dev" && mount --make-rslave "$root/dev"

mkdir -p "$root/src/floe" "$root/src/shared"
# What a clone would have: tracked files plus new ones that are not ignored.
# shellcheck disable=SC2016 # the sh -c script is meant to be single-quoted
if git -C "$repo" rev-parse --git-dir >/dev/null 2>&1; then
	(cd "$repo" && git ls-files -z --cached --others --exclude-standard |
		xargs -0 -r sh -c 'for f; do [ -e "$f" ] && printf "%s\0" "$f"; done' sh |
		tar --null -T - -cf -) | tar -C "$root/src/floe" -xf -
else
	tar -C "$repo" --exclude='./build*' --exclude='./.floe' --exclude='node_modules' -cf - . |
		tar -C "$root/src/floe" -xf -
fi
tar -C "$shared" -cf - . | tar -C "$root/src/shared" -xf -
chmod -R a-w "$root/src/shared" # CI's copy of shared/ has no write bits

in_chroot()
{
	chroot "$root" /usr/bin/env -i HOME=/root LANG=C.UTF-8 CI=true TERM=dumb \
		PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin \
		/bin/bash -c "$1"
}

# Prints the processes running in the chroot and returns 1 if there are any.
nothing_left()
{
	local left
	left=$(chroot_procs)
	[ -z "$left" ] && return 0
	echo "LEFT RUNNING in the chroot after $1:"
	ps -o pid,args -p "$(echo "$left" | paste -sd, -)" || true
	return 1
}

# 1. The run command, as a newcomer runs it: in the foreground of a terminal until Ctrl-C.
stamp "run command: $run_cmd (inside the chroot, in the background)"
(exec chroot "$root" /usr/bin/env -i HOME=/root LANG=C.UTF-8 TERM=dumb \
	PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin \
	/bin/bash -c "cd /src/floe && exec $run_cmd </dev/null >/tmp/quickstart.log 2>&1") &
qs=$! # becomes floe itself: every step of the chain execs
ok=0
# The host's curl: the chroot shares its network, and the quickstart installs no curl.
for _ in $(seq 1 1800); do
	if curl -fsS -o /dev/null http://127.0.0.1:8181/v1/config 2>/dev/null; then
		ok=1
		break
	fi
	kill -0 "$qs" 2>/dev/null || break
	sleep 1
done
stamp "run command's log"
cat "$root/tmp/quickstart.log"
rc_qs=1
if [ "$ok" = 1 ]; then
	stamp "curl against the run command's floe"
	(
		set -ex
		curl -fsS -i http://127.0.0.1:8181/v1/config
		echo
		curl -fsS -X POST -H "Content-Type: application/json" -d '{"namespace":["demo"]}' http://127.0.0.1:8181/v1/namespaces
		echo
		curl -fsS http://127.0.0.1:8181/v1/namespaces
		echo
		curl -fsS -o /dev/null -w "readyz %{http_code}\n" http://127.0.0.1:8181/readyz
	) && rc_qs=0
else
	echo "the run command did not serve /v1/config on 127.0.0.1:8181"
fi
# Ctrl-C: the quickstart exec'd floe, so floe is the process to signal.
for p in $(chroot_procs); do
	case "$(readlink "/proc/$p/exe" 2>/dev/null)" in */floe) kill -INT "$p" ;; esac
done
set +e
for _ in $(seq 1 60); do
	kill -0 "$qs" 2>/dev/null || break
	sleep 1
done
kill -0 "$qs" 2>/dev/null && {
	echo "the run command did not stop within 60 s of SIGINT"
	rc_qs=1
	kill -KILL "$qs"
}
wait "$qs"
echo "run command exit status after Ctrl-C: $?"
set -e
tail -n 5 "$root/tmp/quickstart.log"
sleep 1
nothing_left "the run command" || rc_qs=1

# 2. The test command, in the same chroot, on the checkout the run command built in.
rc_tests=skipped
if [ "$tests" = 1 ]; then
	stamp "test command: $test_cmd (inside the chroot)"
	set +e
	in_chroot "cd /src/floe && $test_cmd </dev/null"
	rc_tests=$?
	set -e
	sleep 1
	if ! nothing_left "the test command" && [ "$rc_tests" = 0 ]; then
		rc_tests="0, but processes were left running"
	fi
fi

stamp "result"
echo "run command ($run_cmd): $([ "$rc_qs" = 0 ] && echo ok || echo FAILED); test command ($test_cmd): exit $rc_tests"
[ "$rc_qs" = 0 ] && { [ "$rc_tests" = 0 ] || [ "$rc_tests" = skipped ]; }
