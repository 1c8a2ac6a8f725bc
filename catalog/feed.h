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
#define CAT_FEED_PATH_MAX 1024 /* also a replay's from and to */
#define CAT_FEED_TABLE_MAX 1024 /* NAMESPACE.TABLE, each part at most 255 (new feeds) */
#define CAT_FEED_GLOB_MAX 255
#define CAT_FEED_INTERVAL_MIN 1 /* seconds */
#define CAT_FEED_INTERVAL_MAX 86400

/* Checks a CreateFeedRequest and returns its normalized form in *out (a new
 * reference): {name, warehouse, table, source, format, mode, interval,
 * on-error, new-columns, create-table, batch:{max-bytes, max-objects,
 * max-age}, max-retries, dead-letter, spool-max-bytes} and, for mode
 * upsert with create-table, key: [column names].  default_wh is used
 * when "warehouse" is absent.  An unknown key, a wrong type, or a value out
 * of range is FL_ERR_BAD_REQUEST naming the key (e.g. "source.glob");
 * a mode the workers cannot run yet is FL_ERR_BAD_REQUEST saying so.  Pure: no database, no file system. */
int cat_feed_def_check(const json_t *req, const char *default_wh, json_t **out,
                       struct fl_err *err) FL_MUST_CHECK;

/* Checks a normalized definition against its warehouse: an s3 source (and
 * an s3:// dead-letter) needs an S3 warehouse, whose object-IO handle reads
 * it; a directory source (and a directory dead-letter) a warehouse on local
 * files.  FL_ERR_BAD_REQUEST naming why.  Pure. */
int cat_feed_def_check_warehouse(const json_t *def, const struct cat_warehouse *wh,
                                 struct fl_err *err) FL_MUST_CHECK;

/* Checks a normalized definition against its table's metadata: mode upsert
 * needs identifier fields in the current schema, and a "key" given must
 * name exactly those.  FL_ERR_BAD_REQUEST naming the problem.  Pure. */
int cat_feed_def_check_table(const json_t *def, const json_t *meta,
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

/* ---- replays ---- */

/* Checks a ReplayFeedRequest {from?, to?, since?, until?, force?} (key range
 * inclusive, modification times RFC 3339 UTC "…Z") and returns the stored
 * form {id, from, to, since-ms, until-ms, force, after: null} in *out.
 * FL_ERR_BAD_REQUEST naming the key.  Pure. */
int cat_feed_replay_check(const json_t *req, json_t **out, struct fl_err *err) FL_MUST_CHECK;

/* Asks feed `name` to replay (replacing a pending replay) and to run now.
 * FL_ERR_NOT_FOUND for an unknown feed; FL_ERR_BAD_REQUEST when its source
 * is not a directory.  *out = the feed as cat_feed_get shows it. */
int cat_feed_replay(struct cat_db *db, const char *name, const json_t *req, json_t **out,
                    struct fl_err *err) FL_MUST_CHECK;

/* ---- pushes ---- */

/* How long a landed push is remembered by its Idempotency-Key. */
#define CAT_FEED_SPOOL_KEEP_S 86400

/* What a push did. */
struct cat_feed_push {
	bool full; /* refused: the spool holds spool-max-bytes already */
	bool duplicate; /* the key was pushed before: nothing added */
	int64_t spooled_bytes; /* waiting after this push */
	int64_t interval_s; /* the feed's interval (a Retry-After when full) */
};

/* Spools n bytes of body (NDJSON or CSV, as content_type says) for feed
 * `name`, durably, in tx when given (the idempotency transaction) or its
 * own.  idem_key (may be NULL) makes a repeated push a no-op for as long as
 * the spool remembers it.  FL_ERR_NOT_FOUND for an unknown feed.  A full
 * spool is not an error: out->full says so.  The bound is checked before the
 * insert, so concurrent pushes may pass it by at most one body each. */
int cat_feed_spool_add(struct cat_db *db, struct cat_tx *tx, const char *name,
                       const char *content_type, const char *body, size_t n, const char *idem_key,
                       struct cat_feed_push *out, struct fl_err *err) FL_MUST_CHECK;

/* ---- the workers' side ---- */

/* A feed claimed by a worker: its row is locked FOR UPDATE in tx, and a
 * transaction advisory lock keyed by its table is held, so a table has one
 * feed committer across all replicas until tx ends. */
struct cat_feed_job {
	struct cat_tx *tx;
	int64_t id;
	char name[CAT_FEED_NAME_MAX + 1];
	json_t *def; /* the normalized definition (owned) */
	struct cat_warehouse wh;
	int failures; /* runs failed in a row before this one */
	json_t *replay; /* the pending replay (cat_feed_replay_check's form) or NULL; owned */
};

/* Claims the active feed that is due soonest and not held by another
 * worker (SKIP LOCKED), opening job->tx.  *found = false (and no tx) when
 * none is due.  Release with cat_feed_job_end. */
int cat_feed_claim(struct cat_db *db, struct cat_feed_job *job, bool *found,
                   struct fl_err *err) FL_MUST_CHECK;

/* Commits (ok) or rolls back job->tx and frees the job's fields.  A failed
 * COMMIT is reported (FL_ERR_COMMIT_STATE_UNKNOWN when its outcome cannot be
 * known); a rollback always succeeds. */
int cat_feed_job_end(struct cat_feed_job *job, bool ok, struct fl_err *err);

/* One source object, as the ledger keys it. */
struct cat_feed_object {
	const char *key; /* path relative to the source */
	int64_t size;
	const char *etag; /* directory: mtime in nanoseconds */
	const char *outcome; /* ledger: committed, dead-letter or empty */
	int64_t rows_ok, rows_bad;
};

/* Records a replay's progress inside job->tx: replay (borrowed) is the new
 * pending state, NULL when it is done. */
int cat_feed_replay_progress(struct cat_feed_job *job, const json_t *replay,
                             struct fl_err *err) FL_MUST_CHECK;

/* Marks seen[i] for the objects already in the feed's ledger (same key,
 * size and etag), inside job->tx. */
int cat_feed_ledger_seen(struct cat_feed_job *job, const struct cat_feed_object *objs, size_t n,
                         bool *seen, struct fl_err *err) FL_MUST_CHECK;

/* Adds n objects to the ledger under batch_id, inside job->tx (so with the
 * commit that lands them). */
int cat_feed_ledger_add(struct cat_feed_job *job, const char *batch_id,
                        const struct cat_feed_object *objs, size_t n,
                        struct fl_err *err) FL_MUST_CHECK;

/* Records a dead letter (a whole object, or rows of a batch) inside job->tx. */
int cat_feed_dead_letter_add(struct cat_feed_job *job, const char *batch_id, const char *key,
                             bool whole_object, int64_t rows_bad, const char *location,
                             const char *reason, struct fl_err *err) FL_MUST_CHECK;

/* A spooled push waiting to land. */
struct cat_spooled {
	int64_t id;
	char *content_type;
	char *body;
	int64_t bytes;
};

/* The oldest waiting pushes of job's feed with the content type of the
 * oldest one, at most max of them and (past the first) at most max_bytes
 * together, inside job->tx.  Free with cat_feed_spooled_free. */
int cat_feed_spool_take(struct cat_feed_job *job, int64_t max, int64_t max_bytes,
                        struct cat_spooled **out, size_t *n, struct fl_err *err) FL_MUST_CHECK;
void cat_feed_spooled_free(struct cat_spooled *v, size_t n);

/* Marks pushes landed under batch_id (or set aside: batch_id
 * "dead-letter:…") and drops their bodies, inside job->tx; also forgets
 * landed pushes older than CAT_FEED_SPOOL_KEEP_S. */
int cat_feed_spool_landed(struct cat_feed_job *job, const char *batch_id, const int64_t *ids,
                          size_t n, struct fl_err *err) FL_MUST_CHECK;

/* A batch's outcome, for `floe feed show` and /metrics. */
struct cat_feed_batch {
	const char *batch_id;
	const char *outcome; /* committed, nothing, failed */
	int objects;
	int64_t rows_ok, rows_bad, bytes_in, bytes_out;
	int64_t dead_objects; /* objects set aside whole */
	int64_t snapshot_id; /* 0 = none */
	int snapshots; /* snapshots this run committed */
	bool forced;
	const char *error; /* NULL = none */
	int64_t started_ms;
};

/* Ends a successful run inside job->tx: records the batch (b may be NULL
 * when the run found nothing to do), adds it to the feed's counters, keeps
 * the newest 100 batch records, notes the backlog (objects seen but left for
 * later runs) and schedules the next run after `after_s` seconds with the
 * failure count cleared. */
int cat_feed_batch_done(struct cat_feed_job *job, const struct cat_feed_batch *b, int64_t backlog,
                        int64_t after_s, struct fl_err *err) FL_MUST_CHECK;

/* After a failed run (job->tx rolled back): in a transaction of its own,
 * records the failed batch, counts the failure and delays the next run by
 * backoff (2^failures seconds, at most 5 minutes); past max-retries the
 * feed is paused with the error, so an operator looks.  *paused says
 * which. */
int cat_feed_failed(struct cat_db *db, int64_t feed_id, const struct cat_feed_batch *b,
                    int64_t max_retries, bool *paused, struct fl_err *err) FL_MUST_CHECK;

/* ---- signals (/metrics), from PostgreSQL so every replica and the CLI count ---- */

struct cat_feed_stat {
	const char *name, *warehouse, *ns, *table; /* ns: levels joined by '.' */
	bool paused;
	int64_t failures; /* runs failed in a row */
	int64_t rows_committed, bytes_read, bytes_written, batches_committed;
	double batch_seconds; /* sum over committed batches */
	int64_t dead_letter_rows, dead_letter_objects, runs_failed;
	int64_t backlog_objects, spooled_bytes, spooled_requests;
};

/* Calls fn once per feed (at most limit), ordered by name. */
int cat_feed_stats(struct cat_db *db, int limit, void (*fn)(const struct cat_feed_stat *, void *),
                   void *arg, struct fl_err *err) FL_MUST_CHECK;

struct cat_table_signal {
	const char *warehouse, *ns, *name;
	int64_t commits; /* commit events, whoever committed */
	double freshness_s; /* seconds since the newest snapshot that added data; -1 = none */
};

/* Calls fn once per live table with commit events (at most limit).  Read
 * from the commit events, so commits of every process count (the CLI's,
 * other replicas'). */
int cat_table_signals(struct cat_db *db, int limit,
                      void (*fn)(const struct cat_table_signal *, void *), void *arg,
                      struct fl_err *err) FL_MUST_CHECK;

#endif
