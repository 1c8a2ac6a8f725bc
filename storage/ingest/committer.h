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
#include <stdlib.h>
#include <string.h>

#include "err.h"

struct st_committer;
struct st_io;

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
	/* The storage handle for the table's files (*io, borrowed: valid until
	 * the next call on c).  In process: the warehouse's.  Over REST: opened
	 * with the credentials the catalog vended for the table (meta), fetched
	 * again when they are about to expire ("refresh credentials").  Call it
	 * after load or create, and again before each write. */
	int (*io)(struct st_committer *c, const json_t *meta, struct st_io **io,
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

/* For implementations: copies n namespace levels into one malloc'd block
 * (the array, then the strings); free() releases it all.  NULL when out of
 * memory. */
static inline char **st_committer_levels_dup(const char *const *levels, int n)
{
	size_t bytes = 0;
	char **v, *p;

	for (int i = 0; i < n; i++)
		bytes += strlen(levels[i]) + 1;
	v = malloc(sizeof(char *) * (size_t)(n ? n : 1) + bytes);
	if (v == NULL)
		return NULL;
	p = (char *)(v + (n ? n : 1));
	for (int i = 0; i < n; i++) {
		size_t len = strlen(levels[i]) + 1;

		memcpy(p, levels[i], len);
		v[i] = p;
		p += len;
	}
	return v;
}

#endif
