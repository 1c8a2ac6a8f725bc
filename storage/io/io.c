/* io.c - the object-IO handle: reference counting, the scheme check every
 * call makes, and what is the same for every backend (the probe).
 *
 * Invariant: an operation reaches a backend only with a URI of that
 * backend's scheme, so a backend never has to guess what it was given. */
#include "io_int.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "uuid.h"

static int io_open(const struct st_profile *p, const struct st_creds *creds, struct st_io **out,
                   struct fl_err *err)
{
	struct st_io *io = calloc(1, sizeof(*io));
	int rc;

	if (io == NULL)
		return fl_err_set(err, FL_ERR_NOMEM, "out of memory");
	io->profile = *p;
	atomic_init(&io->refs, 1);
	rc = p->type == ST_STORAGE_S3 ? st_io_s3_init(io, creds, err) : st_io_file_init(io, err);
	if (rc != 0) {
		free(io);
		return -1;
	}
	*out = io;
	return 0;
}

int st_io_open(const struct st_profile *p, struct st_io **out, struct fl_err *err)
{
	return io_open(p, NULL, out, err);
}

int st_io_open_creds(const struct st_profile *p, const struct st_creds *creds, struct st_io **out,
                     struct fl_err *err)
{
	return io_open(p, creds, out, err);
}

void st_io_retain(struct st_io *io)
{
	atomic_fetch_add(&io->refs, 1);
}

void st_io_release(struct st_io *io)
{
	if (io == NULL || atomic_fetch_sub(&io->refs, 1) != 1)
		return;
	io->ops->free(io);
	free(io);
}

const struct st_profile *st_io_profile(const struct st_io *io)
{
	return &io->profile;
}

static int scheme_ok(struct st_io *io, const char *uri, struct fl_err *err)
{
	const char *want = io->profile.type == ST_STORAGE_S3 ? "s3://" : "file:///";

	if (uri == NULL || strncmp(uri, want, strlen(want)) != 0)
		return fl_err_set(err, FL_ERR_BAD_REQUEST,
		                  "location %.200s is not on this warehouse's storage (%s)",
		                  uri ? uri : "(null)", want);
	return 0;
}

int st_io_write_new(struct st_io *io, const char *uri, const void *p, size_t n, struct fl_err *err)
{
	return st_io_write_new_pending(io, uri, p, n, NULL, err);
}

int st_io_write_new_pending(struct st_io *io, const char *uri, const void *p, size_t n,
                            struct st_io_pending *pend, struct fl_err *err)
{
	if (scheme_ok(io, uri, err) != 0)
		return -1;
	if (pend != NULL && io->ops->write_new_pending != NULL)
		return io->ops->write_new_pending(io, uri, p, n, pend, err);
	return io->ops->write_new(io, uri, p, n, err);
}

int st_io_read(struct st_io *io, const char *uri, size_t max, char **out, size_t *n,
               struct fl_err *err)
{
	if (scheme_ok(io, uri, err) != 0)
		return -1;
	return io->ops->read(io, uri, max, out, n, err);
}

int st_io_read_range(struct st_io *io, const char *uri, uint64_t off, size_t len, void *buf,
                     size_t *got, struct fl_err *err)
{
	if (scheme_ok(io, uri, err) != 0)
		return -1;
	if (len == 0) {
		*got = 0;
		return 0;
	}
	return io->ops->read_range(io, uri, off, len, buf, got, err);
}

int st_io_stat(struct st_io *io, const char *uri, uint64_t *size, struct fl_err *err)
{
	if (scheme_ok(io, uri, err) != 0)
		return -1;
	return io->ops->stat(io, uri, size, err);
}

int st_io_delete(struct st_io *io, const char *uri, struct fl_err *err)
{
	return st_io_delete_many(io, &uri, 1, err);
}

int st_io_delete_many(struct st_io *io, const char *const *uris, size_t n, struct fl_err *err)
{
	for (size_t i = 0; i < n; i++)
		if (scheme_ok(io, uris[i], err) != 0)
			return -1;
	if (n == 0)
		return 0;
	return io->ops->delete_many(io, uris, n, err);
}

int st_io_list(struct st_io *io, const char *prefix_uri, st_io_list_fn fn, void *arg,
               struct fl_err *err)
{
	if (scheme_ok(io, prefix_uri, err) != 0)
		return -1;
	return io->ops->list(io, prefix_uri, fn, arg, err);
}

int st_io_delete_tree(struct st_io *io, const char *uri, struct fl_err *err)
{
	if (scheme_ok(io, uri, err) != 0)
		return -1;
	return io->ops->delete_tree(io, uri, err);
}

int st_io_mkdirs(struct st_io *io, const char *uri, struct fl_err *err)
{
	if (scheme_ok(io, uri, err) != 0)
		return -1;
	return io->ops->mkdirs(io, uri, err);
}

int st_io_probe(struct st_io *io, struct fl_err *err)
{
	char uuid[FL_UUID_STR], uri[ST_PROFILE_LOCATION_MAX + 64], *back = NULL;
	static const char body[] = "floe storage probe\n";
	size_t n = 0;
	int rc = -1;

	fl_uuid_v4(uuid);
	snprintf(uri, sizeof(uri), "%s/.floe-probe-%s", io->profile.location, uuid);
	if (st_io_mkdirs(io, io->profile.location, err) != 0) {
		fl_err_prefix(err, "storage probe: cannot create the location");
		goto out;
	}
	if (st_io_write_new(io, uri, body, sizeof(body) - 1, err) != 0) {
		fl_err_prefix(err, "storage probe: cannot write a marker object");
		goto out;
	}
	if (st_io_read(io, uri, 1024, &back, &n, err) != 0) {
		fl_err_prefix(err, "storage probe: cannot read the marker object back");
		goto cleanup;
	}
	if (n != sizeof(body) - 1 || memcmp(back, body, n) != 0) {
		fl_err_set(err, FL_ERR_IO, "storage probe: the marker object read back differs");
		goto cleanup;
	}
	rc = 0;
cleanup:
	if (st_io_delete(io, uri, rc == 0 ? err : &(struct fl_err){0}) != 0 && rc == 0) {
		fl_err_prefix(err, "storage probe: cannot delete the marker object");
		rc = -1;
	}
out:
	free(back);
	return rc;
}

int st_io_writer_open(struct st_io *io, const char *uri, struct st_io_writer **out,
                      struct fl_err *err)
{
	if (scheme_ok(io, uri, err) != 0)
		return -1;
	return io->ops->writer_open(io, uri, out, err);
}

struct st_sink *st_io_writer_sink(struct st_io_writer *w)
{
	return &w->sink;
}

int st_io_writer_close(struct st_io_writer *w, uint64_t *size, struct fl_err *err)
{
	return st_io_writer_close_pending(w, size, NULL, err);
}

int st_io_writer_close_pending(struct st_io_writer *w, uint64_t *size, struct st_io_pending *pend,
                               struct fl_err *err)
{
	uint64_t bytes = w->bytes;
	int rc = pend != NULL && w->close_pending != NULL ? w->close_pending(w, pend, err)
	                                                  : w->close(w, err);

	if (rc == 0 && size != NULL)
		*size = bytes;
	return rc;
}

void st_io_writer_abort(struct st_io_writer *w)
{
	if (w != NULL)
		w->abort(w);
}

#define COPY_CHUNK ((size_t)8 << 20)

int st_io_download(struct st_io *io, const char *uri, int fd, uint64_t *size, struct fl_err *err)
{
	char *buf = malloc(COPY_CHUNK);
	uint64_t off = 0;
	size_t got = 0;
	int rc = -1;

	if (buf == NULL)
		return fl_err_set(err, FL_ERR_NOMEM, "out of memory");
	do {
		if (st_io_read_range(io, uri, off, COPY_CHUNK, buf, &got, err) != 0)
			goto out;
		for (size_t done = 0; done < got;) {
			ssize_t w = write(fd, buf + done, got - done);

			if (w < 0 && errno == EINTR)
				continue;
			if (w <= 0) {
				fl_err_set(err, FL_ERR_IO, "copying %.200s to a local file: %s",
				           uri, w < 0 ? strerror(errno) : "short write");
				goto out;
			}
			done += (size_t)w;
		}
		off += got;
	} while (got == COPY_CHUNK);
	*size = off;
	rc = 0;
out:
	free(buf);
	return rc;
}

int st_io_upload(struct st_io *io, const char *path, const char *uri, struct fl_err *err)
{
	struct st_io_writer *w = NULL;
	char *buf = NULL;
	int fd = open(path, O_RDONLY | O_CLOEXEC), rc = -1;
	ssize_t n;

	if (fd < 0)
		return fl_err_set(err, FL_ERR_IO, "cannot open %.200s: %s", path, strerror(errno));
	buf = malloc(COPY_CHUNK);
	if (buf == NULL) {
		fl_err_set(err, FL_ERR_NOMEM, "out of memory");
		goto out;
	}
	if (st_io_writer_open(io, uri, &w, err) != 0)
		goto out;
	while ((n = read(fd, buf, COPY_CHUNK)) > 0) {
		struct st_sink *s = st_io_writer_sink(w);

		if (s->write(s->ctx, buf, (size_t)n, err) != 0)
			goto out;
	}
	if (n < 0) {
		fl_err_set(err, FL_ERR_IO, "cannot read %.200s: %s", path, strerror(errno));
		goto out;
	}
	rc = st_io_writer_close(w, NULL, err);
	w = NULL;
out:
	st_io_writer_abort(w);
	free(buf);
	close(fd);
	return rc;
}
