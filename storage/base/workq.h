/* workq.h - a fixed set of worker threads running submitted tasks, for the
 * parts of the write path that parallelise (the Parquet writer encodes and
 * compresses column chunks on them: `floe ingest --threads N`).
 *
 * Tasks are submitted in groups; a group is waited for as a whole.  Tasks
 * run in submission order as workers free up; their completion order is
 * not defined, so callers that need ordered output (the Parquet writer
 * does) collect results by group, in the order they submitted the groups.
 * A queue may be shared by several producers; each waits only for its own
 * groups.  The task and group memory is the caller's and must stay valid
 * until the group has been waited for. */
#ifndef ST_WORKQ_H
#define ST_WORKQ_H

#include <stdbool.h>

#include "err.h"

struct st_workq;

/* A set of tasks to wait for together; zero-initialise it before its
 * first submit. */
struct st_workq_group {
	int pending; /* submitted, not yet finished (under the queue's lock) */
};

struct st_workq_task {
	void (*run)(struct st_workq_task *t); /* runs on a worker thread */
	struct st_workq_group *group;
	struct st_workq_task *next; /* the queue's */
};

/* Starts `threads` workers (1-256).  FL_ERR_BAD_REQUEST for a count out of
 * range, FL_ERR_NOMEM / FL_ERR_INTERNAL when threads cannot be started
 * (none is left running then). */
int st_workq_open(int threads, struct st_workq **out, struct fl_err *err) FL_MUST_CHECK;

/* The number of worker threads. */
int st_workq_threads(const struct st_workq *q);

/* Queues t (t->run must be set) as part of g. */
void st_workq_submit(struct st_workq *q, struct st_workq_group *g, struct st_workq_task *t);

/* Blocks until every task of g has finished, running queued tasks (of any
 * group) on the calling thread meanwhile rather than sitting idle. */
void st_workq_wait(struct st_workq *q, struct st_workq_group *g);

/* True when every task of g has finished (does not block). */
bool st_workq_done(struct st_workq *q, struct st_workq_group *g);

/* Runs the tasks still queued, stops the workers and frees q; accepts NULL.
 * No other thread may use q any more. */
void st_workq_free(struct st_workq *q);

#endif
