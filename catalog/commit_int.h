/* commit_int.h - the helpers of commit.c that the view commit (view.c)
 * shares: default locations and the create-exclusive, fsynced metadata
 * file write with its undo list. */
#ifndef CAT_COMMIT_INT_H
#define CAT_COMMIT_INT_H

#include <jansson.h>
#include <stdbool.h>
#include <stdint.h>

#include "catalog.h"
#include "io/io.h"

/* Files written by this call, deleted again when the transaction is
 * definitely not committed. */
struct cat_written {
	struct st_io *io;
	char **paths;
	int n;
	size_t max_bytes; /* largest metadata file to write (max-metadata-bytes); 0 = any */
};

/* <warehouse location>/<namespace levels…>/<name>, each segment escaped;
 * malloc'd, NULL when out of memory. */
char *cat_default_location(const struct cat_warehouse *wh, const struct cat_ns *ns,
                           const char *name);

/* The location of a new table or view: given without trailing slashes, or
 * the default when given is NULL or empty; malloc'd, NULL when out of
 * memory. */
char *cat_create_location(const struct cat_warehouse *wh, const struct cat_ns *ns, const char *name,
                          const char *given);

/* Writes meta as <location>/metadata/<version>-<uuid>.metadata.json (or
 * under write.metadata.path), create-exclusive and fsynced, and records it
 * in w; on success *path and *text are malloc'd, on failure both are left
 * untouched. */
int cat_write_metadata(const json_t *meta, int64_t version, struct cat_written *w, char **path,
                       char **text, struct fl_err *err) FL_MUST_CHECK;

/* Reads and parses the metadata file at metadata_location, which must lie
 * inside the warehouse and hold at most max_bytes; a missing file, one
 * outside the warehouse or not JSON is FL_ERR_BAD_REQUEST prefixed with
 * `what`.  *out is a new reference. */
int cat_metadata_read(const struct cat_warehouse *wh, const char *metadata_location,
                      size_t max_bytes, const char *what, json_t **out,
                      struct fl_err *err) FL_MUST_CHECK;

/* The version number a metadata file name starts with ("00042-…" → 42), so
 * that the next commit after a register continues the file numbering. */
int64_t cat_file_version(const char *location);

/* Forgets the files of w, deleting them first when remove is set (best
 * effort: an orphan metadata file is harmless). */
void cat_written_done(struct cat_written *w, bool remove);

#endif
