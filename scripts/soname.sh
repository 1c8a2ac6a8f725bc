#!/bin/sh
# Prints the SONAME of the shared library the linker would use for -lNAME in LIBDIR (e.g.
# "libcurl.so.4" for LIBDIR/libcurl.so), so that meson.build can dlopen() exactly the
# runtime library it compiled against (common/dl.h). Fails when there is none.
# Usage: scripts/soname.sh LIBDIR NAME
set -eu
lib="${1:?usage: soname.sh LIBDIR NAME}/lib${2:?usage: soname.sh LIBDIR NAME}.so"
so=$(objdump -p "$lib" | awk '$1 == "SONAME" { print $2 }')
if [ -z "$so" ]; then
	echo "soname.sh: $lib has no SONAME" >&2
	exit 1
fi
echo "$so"
