/* committer.h - "a catalog" as the write path sees it (DESIGN §5, §5b).
 *
 * One small interface with two implementations: in process (catalog/,
 * cat_committer_open: the commit runs under the table's row lock, so it never
 * loses a race) and REST (storage/rest/, st_rest_committer_open: any Iceberg
 * REST catalog, with optimistic retries).  `floe ingest` and the daemon's
 * feed workers drive both alike through st_batch_run (batch.h).
 *
 * A committer is bound to one table and used by one thread at a time. */
#ifndef ST_COMMITTER_H
#define ST_COMMITTER_H

#include <jansson.h>
#include <stdbool.h>

#include "err.h"

struct st_committer;

/* Builds the updates of a commit on top of `current` (the table's metadata
 * the commit will apply to).  Sets *updates to a new reference; an empty
 * array means "nothing to commit" (e.g. the batch is already in the
 * history), and the committer then commits nothing and succeeds. */
typedef int (*st_commit_build_fn)(void *arg, const json_t *current, json_t **updates,
                                  struct fl_err *err);

struct st_committer_ops {
	/* The table's current metadata (*meta, a new reference).
	 * FL_ERR_NO_SUCH_TABLE when it does not exist. */
	int (*load)(struct st_committer *c, json_t **meta, struct fl_err *err);
	/* Creates the table with schema (unpartitioned); *meta = its metadata.
	 * FL_ERR_ALREADY_EXISTS when someone else created it first. */
	int (*create)(struct st_committer *c, const json_t *schema, json_t **meta,
	              struct fl_err *err);
	/* Commits what build returns, exactly once for batch_id: build sees the
	 * state the commit applies to (in process: under the row lock; over
	 * REST: after each reload, with the commit asserting that state).  A
	 * conflict is retried up to `retries` times with backoff.
	 * FL_ERR_COMMIT_FAILED when retries ran out, FL_ERR_COMMIT_STATE_UNKNOWN
	 * when the outcome cannot be known (the caller keeps its files). */
	int (*commit)(struct st_committer *c, const char *batch_id, int retries,
	              st_commit_build_fn build, void *arg, struct fl_err *err);
	/* Releases the committer; accepts NULL. */
	void (*close)(struct st_committer *c);
};

struct st_committer {
	const struct st_committer_ops *ops;
};

#endif
