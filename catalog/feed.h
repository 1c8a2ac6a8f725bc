/* feed.h - feed definitions (DESIGN §5b): a source of objects or pushes
 * pointed at a table, with its format, mode, policies and batch bounds.
 *
 * A definition is validated and normalized here (every default filled in, so
 * what is stored and shown is exactly what the workers use); the rows live in
 * the feed tables of catalog/db/feed.c.  Every function is thread-safe and
 * uses a pooled connection of its own.  An unknown feed is FL_ERR_NOT_FOUND;
 * JSON results are new references owned by the caller. */
#ifndef CAT_FEED_H
#define CAT_FEED_H

#include <jansson.h>
#include <stdbool.h>
#include <stdint.h>

#include "catalog.h"

/* Bounds of a definition, enforced by cat_feed_def_check. */
#define CAT_FEED_NAME_MAX 128
#define CAT_FEED_PATH_MAX 1024
#define CAT_FEED_GLOB_MAX 255
#define CAT_FEED_INTERVAL_MIN 1 /* seconds */
#define CAT_FEED_INTERVAL_MAX 86400

/* Checks a CreateFeedRequest and returns its normalized form in *out (a new
 * reference): {name, warehouse, table, source, format, mode, interval,
 * on-error, new-columns, create-table, batch:{max-bytes, max-objects,
 * max-age}, max-retries, dead-letter, spool-max-bytes}.  default_wh is used
 * when "warehouse" is absent.  An unknown key, a wrong type, or a value out
 * of range is FL_ERR_BAD_REQUEST naming the key (e.g. "source.glob");
 * a mode or source the workers cannot run yet is FL_ERR_BAD_REQUEST saying
 * so.  Pure: no database, no file system. */
int cat_feed_def_check(const json_t *req, const char *default_wh, json_t **out,
                       struct fl_err *err) FL_MUST_CHECK;

/* Splits a definition's "table" ("a.b.orders") into namespace levels and a
 * name, all malloc'd into one block *levels (free it; the strings live in
 * it).  FL_ERR_BAD_REQUEST for an empty level or no namespace. */
int cat_feed_table_split(const char *table, char ***levels, int *nlevels, const char **name,
                         struct fl_err *err) FL_MUST_CHECK;

/* Creates a feed from a CreateFeedRequest (checked with cat_feed_def_check).
 * The warehouse must exist (FL_ERR_NO_SUCH_WAREHOUSE); the table must exist
 * unless create-table is true, and then its namespace must
 * (FL_ERR_NO_SUCH_TABLE / FL_ERR_NO_SUCH_NAMESPACE).  FL_ERR_ALREADY_EXISTS
 * when the name is taken.  *out = the feed as cat_feed_get shows it. */
int cat_feed_create(struct cat_db *db, const json_t *req, const char *default_wh, json_t **out,
                    struct fl_err *err) FL_MUST_CHECK;

/* {feeds:[{name, warehouse, table, state, …}]} ordered by name. */
int cat_feed_list(struct cat_db *db, json_t **out, struct fl_err *err) FL_MUST_CHECK;

/* One feed: {name, definition, state, created-at, updated-at, last-error,
 * failures, backlog:{spooled-bytes, spooled-requests}, last-batches:[…]}
 * (the ten newest batches, newest first). */
int cat_feed_get(struct cat_db *db, const char *name, json_t **out,
                 struct fl_err *err) FL_MUST_CHECK;

/* Pauses or resumes a feed (idempotent); resuming makes it due now and
 * clears its failure count.  *out = the feed as cat_feed_get shows it. */
int cat_feed_set_paused(struct cat_db *db, const char *name, bool paused, json_t **out,
                        struct fl_err *err) FL_MUST_CHECK;

/* Deletes a feed with its ledger, batches, dead-letter records and spool.
 * The table and the files it landed stay. */
int cat_feed_delete(struct cat_db *db, const char *name, struct fl_err *err) FL_MUST_CHECK;

#endif
