/* maintenance.h - table maintenance as the daemon runs it: the action
 * dispatcher, the policy, the job queue (FOR UPDATE SKIP LOCKED, one
 * caretaker per table across replicas), the last outcome of each action per
 * table, and the table shape /metrics reports (catalog/maintain_run.c,
 * catalog/db/maintenance.c; migrations/0005_maintenance.sql).
 *
 * The policy of a table is read from its properties, each falling back to
 * the warehouse's properties of the same name, then to the default:
 *   floe.maintenance.enabled   "true" / "false"        (default false)
 *   floe.maintenance.interval  ISO-8601 duration        (default P1D)
 *   floe.maintenance.actions   comma list of actions   (default expire,orphans) */
#ifndef CAT_MAINTENANCE_H
#define CAT_MAINTENANCE_H

#include "catalog.h"

#define CAT_MAINT_DEFAULT_ACTIONS "expire,orphans"
#define CAT_MAINT_MAX_ACTIONS 4

/* True for expire, orphans, compact and manifests. */
bool cat_maintain_known(const char *action);

/* Runs one action on ns.name (wh->io set) and returns its report (the
 * cat_maintain_* report of that action).  pause_ms: tests only (compact,
 * manifests).
 * FL_ERR_BAD_REQUEST for an unknown action; the action's errors. */
int cat_maintain_action(struct cat_db *db, const struct cat_warehouse *wh, const struct cat_ns *ns,
                        const char *name, const struct cat_limits *lim, const char *action,
                        bool dry_run, unsigned pause_ms, json_t **report,
                        struct fl_err *err) FL_MUST_CHECK;

/* Parses a comma list of actions (spaces allowed) into a JSON array in
 * the canonical order (expire, orphans, compact, manifests), each once.
 * FL_ERR_BAD_REQUEST naming an unknown or empty item. */
int cat_maintain_actions_parse(const char *list, json_t **out, struct fl_err *err) FL_MUST_CHECK;

/* The shape of a table's current snapshot, for /metrics. */
struct cat_maint_shape {
	int64_t snapshots; /* kept in the metadata */
	int64_t data_files, data_bytes; /* live data files of the current snapshot */
	int64_t partitions; /* distinct (spec id, partition tuple) among them */
	int64_t max_files_per_partition;
};

/* Measures ns.name (reads its manifest list and manifests) and stores the
 * shape for /metrics.  Storage and database errors. */
int cat_maintain_measure(struct cat_db *db, const struct cat_warehouse *wh, const struct cat_ns *ns,
                         const char *name, struct fl_err *err) FL_MUST_CHECK;

/* ---- the queue (catalog/db/maintenance.c) ---- */

/* Adds a scheduled job for each table (at most limit) whose policy is
 * enabled, that has no queued scheduled job and whose last scheduled job
 * is older than its interval; *added = how many.  Safe to run on every
 * replica at once (a unique index keeps one queued job per table). */
int cat_maint_schedule_due(struct cat_db *db, int limit, int *added,
                           struct fl_err *err) FL_MUST_CHECK;

/* Queues a requested run of actions (a JSON array of known names) on the
 * table, which must exist; *out = {job-id, state: "queued", actions,
 * dry-run}.  FL_ERR_NO_SUCH_TABLE; FL_ERR_CONFLICT when a requested job of
 * that table is already queued (naming it). */
int cat_maint_request(struct cat_db *db, const struct cat_warehouse *wh, const struct cat_ns *ns,
                      const char *name, const json_t *actions, bool dry_run,
                      const char *requested_by, json_t **out, struct fl_err *err) FL_MUST_CHECK;

struct cat_maint_job {
	struct cat_tx *tx; /* holds the job's row lock and the table's advisory lock */
	int64_t id;
	struct cat_warehouse wh;
	char *levels[64];
	int nlevels;
	char name[256];
	char origin[16];
	json_t *actions; /* array of action names (owned) */
	bool dry_run;
};

/* Claims the oldest queued job whose table no other caretaker holds
 * (SKIP LOCKED, then a transaction-scoped advisory lock keyed by the
 * table), opening job->tx.  *found = false (and no tx) when none.  Release
 * with cat_maint_job_end. */
int cat_maint_claim(struct cat_db *db, struct cat_maint_job *job, bool *found,
                    struct fl_err *err) FL_MUST_CHECK;

/* Marks the job done (ok) or failed with result (may be NULL) and commits
 * its transaction; frees what the job holds whatever the outcome. */
int cat_maint_job_end(struct cat_maint_job *job, bool ok, const json_t *result,
                      struct fl_err *err) FL_MUST_CHECK;

/* Records the outcome of one action on a table: report (ok) or error
 * (failed); inside tx when not NULL.  Counts runs and failures and, for
 * expire and orphans that are not dry runs, the bytes reclaimed. */
int cat_maint_record(struct cat_db *db, struct cat_tx *tx, const struct cat_warehouse *wh,
                     const struct cat_ns *ns, const char *name, const char *action, int64_t job_id,
                     bool dry_run, int64_t started_ms, const json_t *report, const char *error,
                     struct fl_err *err) FL_MUST_CHECK;

/* Stores the table's shape (replacing the last one). */
int cat_maint_shape_put(struct cat_db *db, const struct cat_warehouse *wh, const struct cat_ns *ns,
                        const char *name, const struct cat_maint_shape *s,
                        struct fl_err *err) FL_MUST_CHECK;

/* The GET view: {table, outcomes: [{action, outcome, dry-run, job-id,
 * started-at, finished-at, files-removed, bytes-removed, files-added,
 * bytes-added, error, runs, failures}], jobs: [the 10 newest jobs: {job-id,
 * origin, state, actions, dry-run, requested-by, created-at, finished-at}]}.
 * FL_ERR_NO_SUCH_TABLE when the table does not exist. */
int cat_maint_status(struct cat_db *db, const struct cat_warehouse *wh, const struct cat_ns *ns,
                     const char *name, json_t **out, struct fl_err *err) FL_MUST_CHECK;

/* One table's maintenance signals for /metrics; NULL/-1 when unknown. */
struct cat_maint_stat {
	const char *warehouse, *ns, *name;
	const char *action; /* NULL on the table's shape row */
	/* the table's shape row */
	int64_t snapshots, data_files, data_bytes, partitions, max_files_per_partition;
	/* an action row */
	bool ok;
	double last_run_s; /* epoch seconds */
	int64_t runs, failures, bytes_reclaimed;
};

/* Calls fn for the shape rows, then the outcome rows, of at most
 * limit tables (ordered by name). */
int cat_maint_stats(struct cat_db *db, int limit, void (*fn)(const struct cat_maint_stat *, void *),
                    void *arg, struct fl_err *err) FL_MUST_CHECK;

#endif
