/* source.c - the memory and file-descriptor byte sources the feed readers
 * pull from.
 *
 * Invariant: a read either fills *got (0 only at end of input) or fails
 * with err set; a source never returns more than cap bytes. */
#include "source.h"

#include <errno.h>
#include <string.h>
#include <unistd.h>

static int mem_read(void *ctx, void *p, size_t cap, size_t *got, struct fl_err *err)
{
	struct st_mem_source *m = ctx;
	size_t n = m->len - m->pos;

	(void)err;
	if (n > cap)
		n = cap;
	if (n > 0)
		memcpy(p, m->p + m->pos, n);
	m->pos += n;
	*got = n;
	return 0;
}

void st_mem_source_init(struct st_mem_source *m, const void *p, size_t n)
{
	m->source.read = mem_read;
	m->source.ctx = m;
	m->p = p;
	m->len = n;
	m->pos = 0;
}

static int fd_read(void *ctx, void *p, size_t cap, size_t *got, struct fl_err *err)
{
	struct st_fd_source *f = ctx;
	ssize_t n;

	do
		n = read(f->fd, p, cap);
	while (n < 0 && errno == EINTR);
	if (n < 0)
		return fl_err_set(err, FL_ERR_IO, "read %s: %s", f->name ? f->name : "input",
		                  strerror(errno));
	*got = (size_t)n;
	f->bytes_read += (uint64_t)n;
	return 0;
}

void st_fd_source_init(struct st_fd_source *f, int fd, const char *name)
{
	f->source.read = fd_read;
	f->source.ctx = f;
	f->fd = fd;
	f->name = name;
	f->bytes_read = 0;
}
