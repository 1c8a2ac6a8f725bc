#!/bin/sh
# Prints the Debian packages that hold the shared libraries a binary links (one per line),
# so the runtime image installs exactly what the build produced, with no hand-kept list.
# Usage: deploy/runtime-packages.sh BINARY
set -eu
bin=${1:?usage: runtime-packages.sh BINARY}
ldd "$bin" | awk '$2 == "=>" && $3 ~ /^\// { print $3 }' | while read -r lib; do
	# Debian 12 is usr-merged: a library found as /usr/lib/... may be registered as /lib/...
	for p in "$lib" "$(readlink -f "$lib")" "${lib#/usr}" "$(readlink -f "$lib" | sed 's#^/usr##')"; do
		if pkg=$(dpkg-query -S "$p" 2>/dev/null); then
			echo "${pkg%%:*}"
			break
		fi
	done
done | sort -u
