/* libsnappy.h - snappy (the parquet SNAPPY codec), loaded on first use (see
 * common/dl.h for why: libsnappy links libstdc++, ~1.5 ms of every cold start
 * that never compresses with snappy).  Built only when meson found snappy
 * (ST_HAVE_SNAPPY).
 *
 * Every snappy function Floe calls is a field of struct st_libsnappy, named
 * without its snappy_ prefix and typed from snappy-c.h's own prototype.  A
 * new one is added to ST_LIBSNAPPY_FUNCS. */
#ifndef ST_LIBSNAPPY_H
#define ST_LIBSNAPPY_H

#include <snappy-c.h>

#include "err.h"

#define ST_LIBSNAPPY_FUNCS(X)    \
	X(compress)              \
	X(max_compressed_length) \
	X(uncompress)            \
	X(uncompressed_length)

struct st_libsnappy {
#define ST_LIBSNAPPY_FIELD(f) __typeof__(&snappy_##f) f;
	ST_LIBSNAPPY_FUNCS(ST_LIBSNAPPY_FIELD)
#undef ST_LIBSNAPPY_FIELD
};

/* The loaded library (the SONAME the build found), or NULL with
 * FL_ERR_UNAVAILABLE in err naming it and the loader's reason.  Loads on the
 * first call only; the table is read-only afterwards.  Thread-safe. */
const struct st_libsnappy *st_libsnappy_load(struct fl_err *err) FL_MUST_CHECK;

#endif
