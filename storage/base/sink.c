/* sink.c - memory and local-file sinks.
 *
 * Invariant: a file sink's fd is -1 exactly when it is not open. */
#include "sink.h"

#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <unistd.h>

static int buf_write(void *ctx, const void *p, size_t n, struct fl_err *err)
{
	if (st_buf_append(ctx, p, n) != 0)
		return fl_err_set(err, FL_ERR_NOMEM, "out of memory buffering %zu bytes", n);
	return 0;
}

void st_sink_to_buf(struct st_sink *s, struct st_buf *b)
{
	s->write = buf_write;
	s->ctx = b;
}

static int file_write(void *ctx, const void *p, size_t n, struct fl_err *err)
{
	struct st_file_sink *f = ctx;
	const char *c = p;

	while (n > 0) {
		ssize_t w = write(f->fd, c, n);

		if (w < 0 && errno == EINTR)
			continue;
		if (w < 0)
			return fl_err_set(err, FL_ERR_IO, "write: %s", strerror(errno));
		c += w;
		n -= (size_t)w;
	}
	return 0;
}

int st_file_sink_open(struct st_file_sink *f, const char *path, struct fl_err *err)
{
	f->fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
	if (f->fd < 0)
		return fl_err_set(err, FL_ERR_IO, "open %s: %s", path, strerror(errno));
	f->sink.write = file_write;
	f->sink.ctx = f;
	return 0;
}

int st_file_sink_close(struct st_file_sink *f, struct fl_err *err)
{
	int rc;

	if (f->fd < 0)
		return 0;
	rc = close(f->fd);
	f->fd = -1;
	if (rc != 0)
		return fl_err_set(err, FL_ERR_IO, "close: %s", strerror(errno));
	return 0;
}
