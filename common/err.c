/* err.c - filling struct fl_err.  Messages are truncated, never overflowed. */
#include "err.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

_Thread_local bool fl_no_wait;

void fl_err_put(struct fl_err *err, enum fl_err_kind kind, const char *fmt, ...)
{
	va_list ap;

	if (err == NULL)
		return;
	err->kind = kind;
	va_start(ap, fmt);
	vsnprintf(err->msg, sizeof(err->msg), fmt, ap);
	va_end(ap);
}

int fl_err_prefix(struct fl_err *err, const char *fmt, ...)
{
	char head[sizeof(err->msg)];
	char old[sizeof(err->msg)];
	va_list ap;

	if (err == NULL)
		return -1;
	va_start(ap, fmt);
	vsnprintf(head, sizeof(head), fmt, ap);
	va_end(ap);
	memcpy(old, err->msg, sizeof(old));
	/* Truncation keeps the head, which names the object; that is the intent. */
	size_t hl = strlen(head);
	memcpy(err->msg, head, hl);
	if (hl + 2 < sizeof(err->msg)) {
		err->msg[hl] = ':';
		err->msg[hl + 1] = ' ';
		size_t room = sizeof(err->msg) - hl - 3, ol = strlen(old);
		memcpy(err->msg + hl + 2, old, ol < room ? ol : room);
		err->msg[hl + 2 + (ol < room ? ol : room)] = '\0';
	} else {
		err->msg[hl < sizeof(err->msg) ? hl : sizeof(err->msg) - 1] = '\0';
	}
	return -1;
}

void fl_err_clear(struct fl_err *err)
{
	if (err == NULL)
		return;
	err->kind = FL_ERR_NONE;
	err->msg[0] = '\0';
}

const char *fl_err_kind_name(enum fl_err_kind kind)
{
	static const char *const names[FL_ERR_KIND_COUNT] = {
	        [FL_ERR_NONE] = "none",
	        [FL_ERR_BAD_REQUEST] = "bad-request",
	        [FL_ERR_NOT_AUTHORIZED] = "not-authorized",
	        [FL_ERR_FORBIDDEN] = "forbidden",
	        [FL_ERR_NOT_FOUND] = "not-found",
	        [FL_ERR_NO_SUCH_WAREHOUSE] = "no-such-warehouse",
	        [FL_ERR_NO_SUCH_NAMESPACE] = "no-such-namespace",
	        [FL_ERR_NO_SUCH_TABLE] = "no-such-table",
	        [FL_ERR_NO_SUCH_VIEW] = "no-such-view",
	        [FL_ERR_METHOD_NOT_ALLOWED] = "method-not-allowed",
	        [FL_ERR_UNSUPPORTED] = "unsupported",
	        [FL_ERR_ALREADY_EXISTS] = "already-exists",
	        [FL_ERR_NAMESPACE_NOT_EMPTY] = "namespace-not-empty",
	        [FL_ERR_COMMIT_FAILED] = "commit-failed",
	        [FL_ERR_CONFLICT] = "conflict",
	        [FL_ERR_TOO_LARGE] = "too-large",
	        [FL_ERR_TOO_MANY_REQUESTS] = "too-many-requests",
	        [FL_ERR_UNPROCESSABLE] = "unprocessable",
	        [FL_ERR_COMMIT_STATE_UNKNOWN] = "commit-state-unknown",
	        [FL_ERR_UNAVAILABLE] = "unavailable",
	        [FL_ERR_IO] = "io",
	        [FL_ERR_INTERNAL] = "internal",
	        [FL_ERR_NOMEM] = "nomem",
	        [FL_ERR_WOULD_BLOCK] = "would-block",
	};

	if ((unsigned)kind >= FL_ERR_KIND_COUNT)
		return "unknown";
	return names[kind];
}
