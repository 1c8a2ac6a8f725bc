/* reachable.h - the files a snapshot references: its manifest list, the
 * manifests the list names and the data and delete files their entries
 * name (spec "Manifest Lists", "Manifests").  Snapshot expiry and orphan
 * cleanup compare such sets to decide what no kept snapshot needs.
 *
 * A set is a JSON object keyed by URI (jansson hashes its keys): lists and
 * manifests map to their size in bytes (manifest_length; a list's size is
 * not known and is 0), files to [file_size_in_bytes, content] with content
 * 0 data, 1 position deletes, 2 equality deletes.  Nothing is shared
 * between calls; one thread per set. */
#ifndef ST_REACHABLE_H
#define ST_REACHABLE_H

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>

#include "err.h"
#include "io/io.h"

struct st_reachable {
	struct st_io *io;
	size_t max_read_bytes; /* per list or manifest; 0: 64 MiB */
	bool live_only; /* skip entries with status DELETED (2) */
	bool missing_ok; /* a list or manifest that does not exist adds nothing */
	size_t missing; /* how many were missing (with missing_ok) */
	const json_t *skip; /* manifests not to read (a set as above); may be NULL */
	json_t *lists, *manifests, *files; /* the sets filled */
};

/* Adds the list at list_uri, each manifest it names (reading those not in
 * r->skip and not already in r->manifests) and their files to the sets.
 * Errors name the file: the IO error (FL_ERR_NOT_FOUND only without
 * missing_ok), or FL_ERR_BAD_REQUEST for a list or
 * manifest that is malformed; FL_ERR_NOMEM.  The sets may hold part of the
 * snapshot's files after a failure. */
int st_reachable_add(struct st_reachable *r, const char *list_uri,
                     struct fl_err *err) FL_MUST_CHECK;

#endif
