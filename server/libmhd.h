/* libmhd.h - libmicrohttpd, loaded when `floe serve` starts (see
 * common/dl.h for why the other commands never map it).
 *
 * Every MHD function Floe calls is a field of struct srv_libmhd, named
 * without its MHD_ prefix and typed from microhttpd.h's own prototype, so
 * a call reads srv_libmhd()->queue_response(c, status, r) and the compiler
 * checks it.  Nothing else names an MHD_ function; a new one is added to
 * SRV_LIBMHD_FUNCS. */
#ifndef SRV_LIBMHD_H
#define SRV_LIBMHD_H

#include <microhttpd.h>

#include "err.h"

#define SRV_LIBMHD_FUNCS(X)                                   \
	X(add_response_header)                                \
	X(create_response_from_buffer)                        \
	X(create_response_from_buffer_with_free_callback_cls) \
	X(destroy_response)                                   \
	X(get_connection_info)                                \
	X(get_daemon_info)                                    \
	X(lookup_connection_value)                            \
	X(queue_response)                                     \
	X(quiesce_daemon)                                     \
	X(resume_connection)                                  \
	X(start_daemon)                                       \
	X(stop_daemon)                                        \
	X(suspend_connection)

struct srv_libmhd {
#define SRV_LIBMHD_FIELD(f) __typeof__(&MHD_##f) f;
	SRV_LIBMHD_FUNCS(SRV_LIBMHD_FIELD)
#undef SRV_LIBMHD_FIELD
};

/* The loaded library (the SONAME the build found), or NULL with
 * FL_ERR_UNAVAILABLE in err naming it and the loader's reason (a daemon
 * then refuses to start).  Loads on the first call only.  Thread-safe. */
const struct srv_libmhd *srv_libmhd_load(struct fl_err *err) FL_MUST_CHECK;

/* The loaded table.  Only valid after srv_libmhd_load returned 0, which any
 * MHD daemon, connection or response in hand proves (they come from it). */
const struct srv_libmhd *srv_libmhd(void);

#endif
