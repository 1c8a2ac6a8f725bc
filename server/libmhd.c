/* libmhd.c - the srv_libmhd table, filled from SRV_LIBMHD_SONAME (the
 * SONAME of the libmicrohttpd the build found; see meson.build). */
#include "libmhd.h"

#include <stddef.h>

#include "dl.h"

static struct srv_libmhd mhd;

static const struct fl_dl_sym mhd_syms[] = {
#define SRV_LIBMHD_SYM(f) {"MHD_" #f, offsetof(struct srv_libmhd, f)},
        SRV_LIBMHD_FUNCS(SRV_LIBMHD_SYM)
#undef SRV_LIBMHD_SYM
};

static struct fl_dl_lib mhd_lib = FL_DL_LIB(SRV_LIBMHD_SONAME, mhd_syms, &mhd, NULL);

const struct srv_libmhd *srv_libmhd_load(struct fl_err *err)
{
	return fl_dl_lib_load(&mhd_lib, err) == 0 ? &mhd : NULL;
}

const struct srv_libmhd *srv_libmhd(void)
{
	return &mhd;
}
