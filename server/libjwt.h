/* libjwt.h - libjwt, loaded when a token is first signed or verified (see
 * common/dl.h for why).
 *
 * Every jwt_ function Floe calls is a field of struct srv_libjwt, named
 * without its jwt_ prefix and typed from jwt.h's own prototype; only
 * jose.c uses it.  A new function is added to SRV_LIBJWT_FUNCS. */
#ifndef SRV_LIBJWT_H
#define SRV_LIBJWT_H

#include <jwt.h>

#include "err.h"

#define SRV_LIBJWT_FUNCS(X) \
	X(add_grants_json)  \
	X(add_header)       \
	X(decode)           \
	X(encode_str)       \
	X(free)             \
	X(get_alg)          \
	X(get_grants_json)  \
	X(new)              \
	X(set_alg)          \
	X(str_alg)

struct srv_libjwt {
#define SRV_LIBJWT_FIELD(f) __typeof__(&jwt_##f) f;
	SRV_LIBJWT_FUNCS(SRV_LIBJWT_FIELD)
#undef SRV_LIBJWT_FIELD
};

/* The loaded library (the SONAME the build linked against), or NULL with
 * FL_ERR_UNAVAILABLE in err naming it and the loader's reason.  Loads on
 * the first call only; the table is read-only afterwards.  Thread-safe. */
const struct srv_libjwt *srv_libjwt_load(struct fl_err *err) FL_MUST_CHECK;

#endif
