/* err.h - the one error type every layer returns.
 *
 * A fallible function returns 0 on success and -1 on failure, takes a
 * struct fl_err * as its last argument and fills it on failure.  The kinds
 * mirror the Iceberg REST error types; server/reply.c maps each kind to an
 * HTTP status and a type name, and nothing else chooses statuses. */
#ifndef FL_ERR_H
#define FL_ERR_H

#include <stdbool.h>
#include <stddef.h>

#define FL_MUST_CHECK __attribute__((warn_unused_result))
#define FL_PRINTF(f, a) __attribute__((format(printf, f, a)))

enum fl_err_kind {
	FL_ERR_NONE = 0,
	FL_ERR_BAD_REQUEST, /* malformed or invalid input */
	FL_ERR_NOT_AUTHORIZED, /* no or bad credentials */
	FL_ERR_FORBIDDEN, /* authenticated, not allowed */
	FL_ERR_NOT_FOUND, /* unknown route or resource */
	FL_ERR_NO_SUCH_WAREHOUSE,
	FL_ERR_NO_SUCH_NAMESPACE,
	FL_ERR_NO_SUCH_TABLE,
	FL_ERR_NO_SUCH_VIEW,
	FL_ERR_METHOD_NOT_ALLOWED,
	FL_ERR_UNSUPPORTED, /* valid request the server does not support */
	FL_ERR_ALREADY_EXISTS,
	FL_ERR_NAMESPACE_NOT_EMPTY,
	FL_ERR_COMMIT_FAILED, /* definitely not applied; retry on fresh state */
	FL_ERR_CONFLICT, /* other state conflicts (e.g. key in flight) */
	FL_ERR_TOO_LARGE, /* a configured limit was exceeded */
	FL_ERR_TOO_MANY_REQUESTS, /* rate limited; retry later */
	FL_ERR_UNPROCESSABLE, /* well-formed but contradictory */
	FL_ERR_COMMIT_STATE_UNKNOWN, /* maybe applied: the client must not assume either */
	FL_ERR_UNAVAILABLE, /* dependency down; retry later */
	FL_ERR_IO, /* storage failure */
	FL_ERR_INTERNAL, /* a bug or an unexpected failure */
	FL_ERR_NOMEM,
	FL_ERR_WOULD_BLOCK, /* this thread may not wait (fl_may_wait); never answered */
	FL_ERR_KIND_COUNT
};

struct fl_err {
	enum fl_err_kind kind;
	char msg[256];
};

/* Records kind and a printf-style message in err (which may be NULL) and
 * evaluates to -1, so that callers can write `return fl_err_set(err, ...);`.
 * A macro rather than a function so that the compiler sees the -1: a helper
 * that sets its out-parameter on every path returning 0 is then visibly
 * correct to gcc's -O3 maybe-uninitialized analysis, which cannot see into
 * another translation unit's return value. */
#define fl_err_set(err, kind, ...)                      \
	__extension__({                                 \
		fl_err_put((err), (kind), __VA_ARGS__); \
		-1;                                     \
	})

/* What fl_err_set does, without the value: call fl_err_set instead. */
void fl_err_put(struct fl_err *err, enum fl_err_kind kind, const char *fmt, ...) FL_PRINTF(3, 4);

/* Prefixes err's message with "prefix: ", keeping the kind; returns -1. */
int fl_err_prefix(struct fl_err *err, const char *fmt, ...) FL_PRINTF(2, 3);

/* Resets err to FL_ERR_NONE with an empty message. */
void fl_err_clear(struct fl_err *err);

/* A thread that must never wait, such as an HTTP front thread serving from
 * memory (server/httpd.c), sets fl_no_wait.  Whatever would then wait for
 * PostgreSQL, the network or another thread calls fl_may_wait first, which
 * fails with FL_ERR_WOULD_BLOCK: the caller gives the work to a thread that
 * may wait, which does it again from the start.  Work done before such a
 * point is therefore done twice, so only reads run where fl_no_wait is set. */
extern _Thread_local bool fl_no_wait;

static inline int fl_may_wait(struct fl_err *err)
{
	return fl_no_wait ? fl_err_set(err, FL_ERR_WOULD_BLOCK, "this thread may not wait") : 0;
}

/* The stable short name of a kind, for logs ("commit-failed"). */
const char *fl_err_kind_name(enum fl_err_kind kind);

#endif
