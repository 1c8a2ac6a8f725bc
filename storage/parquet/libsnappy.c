/* libsnappy.c - the st_libsnappy table, filled from ST_LIBSNAPPY_SONAME (the
 * SONAME of the snappy the build found; see meson.build) on first use. */
#include "libsnappy.h"

#include <stddef.h>

#include "dl.h"

static struct st_libsnappy snappy;

static const struct fl_dl_sym snappy_syms[] = {
#define ST_LIBSNAPPY_SYM(f) {"snappy_" #f, offsetof(struct st_libsnappy, f)},
        ST_LIBSNAPPY_FUNCS(ST_LIBSNAPPY_SYM)
#undef ST_LIBSNAPPY_SYM
};

static struct fl_dl_lib snappy_lib = FL_DL_LIB(ST_LIBSNAPPY_SONAME, snappy_syms, &snappy, NULL);

const struct st_libsnappy *st_libsnappy_load(struct fl_err *err)
{
	return fl_dl_lib_load(&snappy_lib, err) == 0 ? &snappy : NULL;
}
