/* libjwt.c - the srv_libjwt table, filled from SRV_LIBJWT_SONAME (the
 * SONAME of the libjwt the build found; see meson.build) on first use. */
#include "libjwt.h"

#include <stddef.h>

#include "dl.h"
#include "libcrypto.h"

static struct srv_libjwt jwt;

static const struct fl_dl_sym jwt_syms[] = {
#define SRV_LIBJWT_SYM(f) {"jwt_" #f, offsetof(struct srv_libjwt, f)},
        SRV_LIBJWT_FUNCS(SRV_LIBJWT_SYM)
#undef SRV_LIBJWT_SYM
};

/* After libcrypto, which it links: OpenSSL starts without an exit handler
 * (libcrypto.c). */
static struct fl_dl_lib jwt_lib =
        FL_DL_LIB_AFTER(&fl_crypto_lib, SRV_LIBJWT_SONAME, jwt_syms, &jwt, NULL);

const struct srv_libjwt *srv_libjwt_load(struct fl_err *err)
{
	return fl_dl_lib_load(&jwt_lib, err) == 0 ? &jwt : NULL;
}
