/* libcurl.h - libcurl, loaded on first use (see common/dl.h for why).
 *
 * Every libcurl function Floe calls is a field of struct st_libcurl, named
 * without its curl_ prefix and typed from curl's own prototype, so a call
 * reads cu->easy_setopt(h, CURLOPT_URL, url) and the compiler checks it
 * against <curl/curl.h> (except curl's gcc-only setopt/getinfo argument
 * macros, which a function pointer cannot carry).  Nothing outside this
 * module names a curl_ function; a new one is added to ST_LIBCURL_FUNCS. */
#ifndef ST_LIBCURL_H
#define ST_LIBCURL_H

#include <curl/curl.h>

#include "err.h"

#define ST_LIBCURL_FUNCS(X) \
	X(easy_cleanup)     \
	X(easy_getinfo)     \
	X(easy_init)        \
	X(easy_perform)     \
	X(easy_reset)       \
	X(easy_setopt)      \
	X(easy_strerror)    \
	X(global_init)      \
	X(share_cleanup)    \
	X(share_init)       \
	X(share_setopt)     \
	X(slist_append)     \
	X(slist_free_all)

struct st_libcurl {
#define ST_LIBCURL_FIELD(f) __typeof__(&curl_##f) f;
	ST_LIBCURL_FUNCS(ST_LIBCURL_FIELD)
#undef ST_LIBCURL_FIELD
};

/* The loaded library, with curl_global_init(CURL_GLOBAL_DEFAULT) done, or
 * NULL when it cannot be loaded or initialised: err (FL_ERR_UNAVAILABLE) then names the
 * library and the loader's reason.  Loads on the first call only; the table
 * stays valid and read-only for the life of the process.  Thread-safe.  Callers never
 * call global_init themselves. */
const struct st_libcurl *st_libcurl_load(struct fl_err *err) FL_MUST_CHECK;

#endif
