/* io.h - object IO on warehouse locations, through one handle per
 * warehouse.
 *
 * A handle is opened from a storage profile (profile.h) and hides which
 * store it talks to: "file:///abs/path" locations (a local directory;
 * development, tests, single node) or "s3://bucket/key" (S3 and
 * S3-compatible stores, signed with SigV4).  Nothing above storage/ knows
 * which one it has.  Locations are URIs of the handle's scheme; a URI of the
 * other scheme is FL_ERR_BAD_REQUEST.
 *
 * Handles are reference counted and thread-safe: any number of threads may
 * use one handle at once (an S3 handle shares its connections between
 * them).  Errors name the object and the store's reason; FL_ERR_NOT_FOUND
 * for a missing object, FL_ERR_ALREADY_EXISTS for a create-only write that
 * lost, FL_ERR_FORBIDDEN for refused credentials, FL_ERR_UNAVAILABLE for an
 * unreachable or overloaded store (after retries), FL_ERR_IO otherwise. */
#ifndef ST_IO_H
#define ST_IO_H

#include <stddef.h>
#include <stdint.h>

#include "base/sink.h"
#include "err.h"
#include "profile.h"

struct st_io;
struct st_io_writer;

/* Opens a handle for the profile (copied).  For s3 the server's keys are
 * resolved now (st_profile_credentials); when they cannot be, the handle
 * is still returned and every operation fails with that reason, so a
 * warehouse with a missing variable fails where storage is used and
 * nowhere else.  *out holds one reference. */
int st_io_open(const struct st_profile *p, struct st_io **out, struct fl_err *err) FL_MUST_CHECK;

/* Like st_io_open, but an s3 handle signs with the given keys (copied)
 * instead of resolving the profile's: for credentials a catalog vended
 * (`floe ingest --catalog-uri`).  A file profile ignores creds. */
int st_io_open_creds(const struct st_profile *p, const struct st_creds *creds, struct st_io **out,
                     struct fl_err *err) FL_MUST_CHECK;

/* Adds a reference. */
void st_io_retain(struct st_io *io);

/* Drops a reference, freeing the handle with the last; accepts NULL. */
void st_io_release(struct st_io *io);

/* The profile the handle was opened with. */
const struct st_profile *st_io_profile(const struct st_io *io);

/* Writes n bytes to uri, which must not exist (FL_ERR_ALREADY_EXISTS):
 * two writers can never both create one object.  file: fsynced, parents
 * created.  s3: a PUT with If-None-Match: *.  On failure nothing is left. */
int st_io_write_new(struct st_io *io, const char *uri, const void *p, size_t n,
                    struct fl_err *err) FL_MUST_CHECK;

/* ---- syncs made together ----
 * A batch's data files, manifest and manifest list must be durable before
 * the commit that refers to them, not each before the next one is written.
 * Given a pending set, the file:// backend leaves what it would otherwise
 * sync one at a time - a data file's bytes, the new names in a directory -
 * to st_io_pending_sync, which syncs the files concurrently and then each
 * directory once, concurrently.  A new object's own bytes are still synced
 * before it gets its name, so no crash leaves half an object under a name.
 * s3: an object is durable when its write returns; nothing is pending. */
struct st_io_pending;

int st_io_pending_new(struct st_io_pending **out, struct fl_err *err) FL_MUST_CHECK;

/* st_io_write_new, the sync of the new name left to pend (NULL: synced
 * before it returns, as st_io_write_new). */
int st_io_write_new_pending(struct st_io *io, const char *uri, const void *p, size_t n,
                            struct st_io_pending *pend, struct fl_err *err) FL_MUST_CHECK;

/* Makes everything pending durable and empties the set, whatever the
 * outcome.  Fails naming the first file or directory that could not be
 * synced: what was written with the set must then not be referred to. */
int st_io_pending_sync(struct st_io_pending *pend, struct fl_err *err) FL_MUST_CHECK;

/* Frees the set, syncing nothing; accepts NULL. */
void st_io_pending_free(struct st_io_pending *pend);

/* Reads at most max bytes of uri into a malloc'd, NUL-terminated buffer.
 * FL_ERR_NOT_FOUND when absent, FL_ERR_TOO_LARGE when bigger than max. */
int st_io_read(struct st_io *io, const char *uri, size_t max, char **out, size_t *n,
               struct fl_err *err) FL_MUST_CHECK;

/* Reads up to len bytes at offset off into buf; *got = bytes read (less
 * than len only at the end of the object). */
int st_io_read_range(struct st_io *io, const char *uri, uint64_t off, size_t len, void *buf,
                     size_t *got, struct fl_err *err) FL_MUST_CHECK;

/* The object's size; FL_ERR_NOT_FOUND when absent. */
int st_io_stat(struct st_io *io, const char *uri, uint64_t *size, struct fl_err *err) FL_MUST_CHECK;

/* Deletes one object; a missing one is success. */
int st_io_delete(struct st_io *io, const char *uri, struct fl_err *err) FL_MUST_CHECK;

/* Deletes n objects (s3: batches of up to 1000 per request); missing ones
 * are success.  Fails naming the first object that could not be deleted. */
int st_io_delete_many(struct st_io *io, const char *const *uris, size_t n,
                      struct fl_err *err) FL_MUST_CHECK;

/* Calls fn for every object whose URI starts with prefix_uri + "/" (and
 * the object at prefix_uri itself), in no particular order, following the
 * store's continuation tokens, with its size and its last modification time
 * (milliseconds since the epoch: file mtime, S3 LastModified).  fn
 * returning -1 stops the walk with its error. */
typedef int (*st_io_list_fn)(void *arg, const char *uri, uint64_t size, int64_t mtime_ms,
                             struct fl_err *err);
int st_io_list(struct st_io *io, const char *prefix_uri, st_io_list_fn fn, void *arg,
               struct fl_err *err) FL_MUST_CHECK;

/* Copies the object uri into the open file descriptor fd (at its current
 * offset) in ranged reads of at most 8 MiB, so memory stays bounded
 * whatever the object's size; *size = bytes copied.  Fails on a short
 * write to fd with FL_ERR_IO naming the object. */
int st_io_download(struct st_io *io, const char *uri, int fd, uint64_t *size,
                   struct fl_err *err) FL_MUST_CHECK;

/* Copies the local file path to uri (overwritten if it exists) through a
 * streaming writer: nothing is visible at uri unless the copy is whole. */
int st_io_upload(struct st_io *io, const char *path, const char *uri,
                 struct fl_err *err) FL_MUST_CHECK;

/* Deletes uri and everything under it; a missing uri is success. */
int st_io_delete_tree(struct st_io *io, const char *uri, struct fl_err *err) FL_MUST_CHECK;

/* Creates the directory uri and its parents (no-op for object stores). */
int st_io_mkdirs(struct st_io *io, const char *uri, struct fl_err *err) FL_MUST_CHECK;

/* Checks that the store works with these settings: writes, reads back and
 * deletes a marker object under the profile's location.  The error names
 * what failed (missing bucket, refused credentials, unreachable endpoint,
 * clock skew, unset environment variable). */
int st_io_probe(struct st_io *io, struct fl_err *err) FL_MUST_CHECK;

/* ---- streaming writes (data files) ----
 * A writer accepts a file front to back through its sink and makes it
 * visible only at st_io_writer_close; st_io_writer_abort (or a crash) leaves
 * no visible object on s3 (an unfinished multipart upload is aborted; the
 * store's lifecycle rules collect one a killed process left).  Memory is
 * bounded by one part (8 MiB) per writer. */

/* Starts writing uri (overwritten if it exists). */
int st_io_writer_open(struct st_io *io, const char *uri, struct st_io_writer **out,
                      struct fl_err *err) FL_MUST_CHECK;

/* The sink the format writer writes into; valid until close or abort. */
struct st_sink *st_io_writer_sink(struct st_io_writer *w);

/* Finishes the object and frees w (also on failure, after which nothing is
 * visible).  *size = bytes written when size is not NULL. */
int st_io_writer_close(struct st_io_writer *w, uint64_t *size, struct fl_err *err) FL_MUST_CHECK;

/* st_io_writer_close, the syncs of the bytes and the name left to pend
 * (NULL: as st_io_writer_close). */
int st_io_writer_close_pending(struct st_io_writer *w, uint64_t *size, struct st_io_pending *pend,
                               struct fl_err *err) FL_MUST_CHECK;

/* Discards everything written and frees w; accepts NULL. */
void st_io_writer_abort(struct st_io_writer *w);

#endif
