/* libcurl.c - the st_libcurl table, filled from ST_LIBCURL_SONAME (the
 * SONAME of the libcurl the build found; see meson.build) on first use. */
#include "libcurl.h"

#include <stddef.h>

#include "dl.h"
#include "libcrypto.h"

static struct st_libcurl curl;

static const struct fl_dl_sym curl_syms[] = {
#define ST_LIBCURL_SYM(f) {"curl_" #f, offsetof(struct st_libcurl, f)},
        ST_LIBCURL_FUNCS(ST_LIBCURL_SYM)
#undef ST_LIBCURL_SYM
};

/* Runs curl_global_init once, before any caller can reach a handle, which
 * is what libcurl asks of it. */
static int curl_global(const void *table, struct fl_err *err)
{
	const struct st_libcurl *cu = table;

	if (cu->global_init(CURL_GLOBAL_DEFAULT) != CURLE_OK)
		return fl_err_set(err, FL_ERR_UNAVAILABLE, "%s: curl_global_init failed",
		                  ST_LIBCURL_SONAME);
	return 0;
}

/* After libcrypto, which it links: OpenSSL starts without an exit handler
 * (libcrypto.c). */
static struct fl_dl_lib curl_lib =
        FL_DL_LIB_AFTER(&fl_crypto_lib, ST_LIBCURL_SONAME, curl_syms, &curl, curl_global);

const struct st_libcurl *st_libcurl_load(struct fl_err *err)
{
	return fl_dl_lib_load(&curl_lib, err) == 0 ? &curl : NULL;
}
