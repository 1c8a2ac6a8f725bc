/* io_int.h - what io.c and the backends (file.c, s3.c) share: the handle
 * layout and the operations table each backend fills. */
#ifndef ST_IO_INT_H
#define ST_IO_INT_H

#include <stdatomic.h>

#include "io.h"

struct st_io_ops {
	int (*write_new)(struct st_io *io, const char *uri, const void *p, size_t n,
	                 struct fl_err *err);
	int (*read)(struct st_io *io, const char *uri, size_t max, char **out, size_t *n,
	            struct fl_err *err);
	int (*read_range)(struct st_io *io, const char *uri, uint64_t off, size_t len, void *buf,
	                  size_t *got, struct fl_err *err);
	int (*stat)(struct st_io *io, const char *uri, uint64_t *size, struct fl_err *err);
	int (*delete_many)(struct st_io *io, const char *const *uris, size_t n, struct fl_err *err);
	int (*list)(struct st_io *io, const char *prefix_uri, st_io_list_fn fn, void *arg,
	            struct fl_err *err);
	int (*delete_tree)(struct st_io *io, const char *uri, struct fl_err *err);
	int (*mkdirs)(struct st_io *io, const char *uri, struct fl_err *err);
	int (*writer_open)(struct st_io *io, const char *uri, struct st_io_writer **out,
	                   struct fl_err *err);
	void (*free)(struct st_io *io);
	/* Optional: write_new leaving the sync of the new name to pend (a
	 * backend without it is durable when write_new returns). */
	int (*write_new_pending)(struct st_io *io, const char *uri, const void *p, size_t n,
	                         struct st_io_pending *pend, struct fl_err *err);
};

struct st_io {
	const struct st_io_ops *ops;
	atomic_int refs;
	struct st_profile profile;
	void *impl; /* the backend's state */
};

/* A writer: the backend embeds this first in its own struct. */
struct st_io_writer {
	struct st_sink sink;
	uint64_t bytes;
	int (*close)(struct st_io_writer *w, struct fl_err *err); /* frees w */
	void (*abort)(struct st_io_writer *w); /* frees w */
	/* Optional: close leaving the syncs to pend (see write_new_pending). */
	int (*close_pending)(struct st_io_writer *w, struct st_io_pending *pend,
	                     struct fl_err *err); /* frees w */
};

/* For backends: leave the fdatasync of fd (a file's bytes) to pend, which
 * owns fd from then on, also when this fails; path names it in errors. */
int st_io_pending_add_file(struct st_io_pending *pend, int fd, const char *path,
                           struct fl_err *err) FL_MUST_CHECK;

/* Leave the fsync of the directory at path to pend, once however often it
 * is added. */
int st_io_pending_add_dir(struct st_io_pending *pend, const char *path,
                          struct fl_err *err) FL_MUST_CHECK;

/* Backend constructors: fill io->ops and io->impl.  creds NULL: the s3
 * backend resolves the profile's keys. */
int st_io_file_init(struct st_io *io, struct fl_err *err);
int st_io_s3_init(struct st_io *io, const struct st_creds *creds, struct fl_err *err);

#endif
