#!/bin/sh
# Prints the Debian packages that hold the shared libraries a binary links (one per line),
# so the runtime image installs exactly what the build produced, with no hand-kept list.
# The libraries the binary opens on first use (dlopen: libcurl, libmicrohttpd, libjwt) are
# not in ldd's answer: the build lists their SONAMEs in BUILD_DIR/dlopen-libs.txt; each is
# found through the loader's cache (ldconfig -p) and added with what ldd says it needs.
# Usage: deploy/runtime-packages.sh BINARY [DLOPEN_LIST]
set -eu
bin=${1:?usage: runtime-packages.sh BINARY [DLOPEN_LIST]}
opened=""
if [ -n "${2:-}" ]; then
	while read -r so; do
		[ -n "$so" ] || continue
		path=$(ldconfig -p | awk -v so="$so" '$1 == so && $NF ~ /^\// { print $NF; exit }')
		if [ -z "$path" ]; then
			echo "runtime-packages: $so (opened at run time) is not installed" >&2
			exit 1
		fi
		opened="$opened $path"
	done <"$2"
fi
{
	ldd "$bin"
	for path in $opened; do
		echo "	$(basename "$path") => $path (0x0)"
		ldd "$path"
	done
} | awk '$2 == "=>" && $3 ~ /^\// { print $3 }' | sort -u | while read -r lib; do
	# Debian 12 is usr-merged: a library found as /usr/lib/... may be registered as /lib/...
	for p in "$lib" "$(readlink -f "$lib")" "${lib#/usr}" "$(readlink -f "$lib" | sed 's#^/usr##')"; do
		if pkg=$(dpkg-query -S "$p" 2>/dev/null); then
			echo "${pkg%%:*}"
			break
		fi
	done
done | sort -u
