/* io.h - object IO on warehouse locations.
 *
 * A location is a URI: "file:///abs/path" (local directory; development,
 * tests, single-node) or "s3://bucket/key".  These calls are what the
 * catalog needs from storage: write a new object that must not already exist
 * (metadata files), read a bounded object, make directories, delete a tree.
 * Thread-safe; no global state.  s3:// is FL_ERR_UNSUPPORTED until the S3
 * client lands. */
#ifndef ST_IO_H
#define ST_IO_H

#include <stddef.h>

#include "err.h"

/* Writes n bytes to uri, which must not exist (FL_ERR_ALREADY_EXISTS), and
 * makes it durable (fsync of the file and its directory) before returning.
 * Missing parent directories are created.  On failure nothing is left. */
int st_io_write_new(const char *uri, const void *p, size_t n, struct fl_err *err) FL_MUST_CHECK;

/* Reads at most max bytes of uri into a malloc'd, NUL-terminated buffer.
 * FL_ERR_NOT_FOUND when absent, FL_ERR_TOO_LARGE when bigger than max. */
int st_io_read(const char *uri, size_t max, char **out, size_t *n,
               struct fl_err *err) FL_MUST_CHECK;

/* Creates the directory uri and its parents (no-op for object stores). */
int st_io_mkdirs(const char *uri, struct fl_err *err) FL_MUST_CHECK;

/* Deletes uri and everything under it; a missing uri is success. */
int st_io_delete_tree(const char *uri, struct fl_err *err) FL_MUST_CHECK;

/* True when uri names a location this build can reach. */
int st_io_supported(const char *uri);

#endif
