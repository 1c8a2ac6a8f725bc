/* catalog.h - Iceberg catalog semantics over PostgreSQL: the connection pool,
 * migrations, warehouses and namespaces.
 *
 * Every function is thread-safe: each call takes a pooled connection for its
 * duration.  A lost or unreachable database is FL_ERR_UNAVAILABLE (the pool
 * reconnects with backoff on later calls); nothing here aborts.  JSON results
 * are new references owned by the caller. */
#ifndef CAT_CATALOG_H
#define CAT_CATALOG_H

#include <jansson.h>
#include <stdbool.h>
#include <stdint.h>

#include "coding.h"
#include "err.h"
#include "io/profile.h"

struct cat_db;
struct cat_warehouse;
struct st_io;

/* Opens a pool of `size` connections (connected lazily, the first one
 * eagerly so that a wrong URL fails at startup).  The conninfo string is
 * kept privately and never appears in messages. */
int cat_db_open(const char *conninfo, int size, struct cat_db **out,
                struct fl_err *err) FL_MUST_CHECK;

/* For a short-lived command (floe ingest, maintain): statements run
 * unprepared.  A statement prepared on first use costs a second round trip,
 * which pays off only when it runs again on the same connection. */
void cat_db_oneshot(struct cat_db *db);

/* cat_db_open with one connection, then cat_db_oneshot, for a short-lived
 * command whose every round trip shows in its run time: the connection's
 * session settings are not sent at once but ride in front of its first
 * statement (cat_warehouse_get_ready sends them with its query). */
int cat_db_open_oneshot(const char *conninfo, struct cat_db **out,
                        struct fl_err *err) FL_MUST_CHECK;

/* Starts the loadTable cache and its LISTEN connection (see cache.c for
 * the coherence rules), holding at most max_bytes of table metadata
 * (0 = cache nothing, but still listen for access changes).  Optional:
 * without it every load reads the database. */
int cat_db_enable_cache(struct cat_db *db, size_t max_bytes, struct fl_err *err) FL_MUST_CHECK;

/* How the loadTable cache is doing (all zero when it is not enabled). */
struct cat_cache_stats {
	unsigned long hits, misses, evictions;
	unsigned long notifications; /* NOTIFY floe_table applied (from every process) */
	size_t bytes, entries, max_bytes;
	size_t coded_bytes; /* the coded copies its versions keep (cat_table_bytes_coded) */
	bool listening; /* the LISTEN connection is up: the cache serves only then */
	/* Misses read in batches: statements, the loads they answered, and the
	 * loads queued or being read now (parked connections included). */
	unsigned long batch_reads, batch_loads;
	size_t loads_waiting;
	/* Table documents read from their files because the rows do not keep
	 * them (metadata-inline-max-bytes), and their bytes: set with or
	 * without the cache. */
	unsigned long file_reads, file_read_bytes;
};
void cat_db_cache_stats(struct cat_db *db, struct cat_cache_stats *st);

/* The access-data generation: it changes whenever principals, roles, grants
 * or assignments change in the database (NOTIFY floe_auth, from any
 * replica) and whenever the listener reconnects.  False when it cannot be
 * known (cache not enabled or listener not connected): then callers must
 * bound how long they trust what they cached. */
bool cat_db_access_generation(struct cat_db *db, unsigned long *gen);

/* Closes every connection.  Callers must have stopped using the pool. */
void cat_db_close(struct cat_db *db);

/* The stages of a table commit (DESIGN §3), timed for /metrics: the row
 * lock, parsing the stored metadata and judging the requirements, the
 * builder, writing the metadata file (its fsync included), the pointer
 * UPDATE with the commit event, claiming and storing the Idempotency-Key
 * record (when the request has one), and the COMMIT. */
enum cat_stage {
	CAT_STAGE_GATE,
	CAT_STAGE_LOCK,
	CAT_STAGE_REQUIREMENTS,
	CAT_STAGE_BUILD,
	CAT_STAGE_WRITE,
	CAT_STAGE_UPDATE,
	CAT_STAGE_IDEMPOTENCY,
	CAT_STAGE_COMMIT,
	CAT_STAGE_N
};

/* The stage's name as a metrics label ("gate", "lock", "requirements", …). */
const char *cat_stage_name(enum cat_stage s);

/* Called once per stage of every commit with its duration; it must be
 * thread-safe and fast (commits call it under the row lock). */
typedef void (*cat_stage_fn)(void *arg, enum cat_stage stage, int64_t ns);

/* Installs the stage observer (before serving; NULL removes it). */
void cat_db_on_stage(struct cat_db *db, cat_stage_fn fn, void *arg);

/* Table metadata larger than CAT_INLINE_DEFAULT bytes (or the limit set
 * here) is not stored in PostgreSQL beside the row: only its location is,
 * and readers read the file, which exists and is durable before the pointer
 * names it.  A hot table's commits then write ~100 bytes to the row instead
 * of its whole document, compressed, with its WAL.  Reads of such a table
 * that miss the loadTable cache read its warehouse's storage: through
 * storage_fn (which sets wh->io to a reference the caller releases) when
 * set, else through a handle opened for the read.  Views always keep their
 * text in the row. */
#define CAT_INLINE_DEFAULT ((size_t)262144)

/* The longest property value of a namespace, table or view, in bytes. */
#define CAT_PROPERTY_VALUE_MAX 65536

/* FL_ERR_BAD_REQUEST, "<what>: the value of 'k' is N bytes, over the limit
 * of CAT_PROPERTY_VALUE_MAX", for the first string value of props longer
 * than that (values that are not strings are the caller's to refuse). */
int cat_property_values_check(const json_t *props, const char *what,
                              struct fl_err *err) FL_MUST_CHECK;
typedef int (*cat_storage_fn)(void *arg, struct cat_warehouse *wh, struct fl_err *err);
void cat_db_set_metadata_inline(struct cat_db *db, size_t max_inline, cat_storage_fn storage_fn,
                                void *arg);

/* text as the row stores it: text, or NULL when it is larger than the
 * limit (its file holds it). */
const char *cat_db_inline_text(const struct cat_db *db, const char *text);

/* A table row's metadata text when the row does not hold it: the file at
 * metadata_location read through wh (its io, or one opened as above).
 * *out is malloc'd and NUL-terminated. */
int cat_metadata_file_text(struct cat_db *db, const struct cat_warehouse *wh,
                           const char *metadata_location, char **out, size_t *len,
                           struct fl_err *err) FL_MUST_CHECK;

/* Pool gauges for /metrics. */
void cat_db_stats(struct cat_db *db, int *in_use, int *idle, int *waiting);

/* Checks that the database answers and its schema is this binary's. */
int cat_db_ready(struct cat_db *db, struct fl_err *err) FL_MUST_CHECK;

/* Tells every process's loadTable cache to drop everything (NOTIFY
 * floe_table '*').  A commit notifies the others right after its COMMIT,
 * before its client is answered; a process that died in between (its
 * client got no answer) left them a stale entry, which this clears when
 * the process starts again.  -1 when the database did not take it. */
int cat_db_notify_all(struct cat_db *db);

/* Applies pending migrations under an advisory lock, so replicas starting
 * together apply each file once.  Refuses (FL_ERR_UNSUPPORTED) a database whose
 * schema is newer than this binary.  *applied = number of files applied. */
int cat_db_migrate(const char *conninfo, int *applied, struct fl_err *err) FL_MUST_CHECK;

/* The schema version this binary carries (the number of migrations). */
int cat_schema_version(void);

/* Loads (creating on first use) the server-wide secret used to sign page
 * tokens; call once after migrating. */
int cat_db_load_secret(struct cat_db *db, struct fl_err *err) FL_MUST_CHECK;

/* ---- transactions spanning several calls ---- */

struct cat_tx;

/* Pins a pooled connection for a transaction, whose BEGIN rides with its
 * first statement.  Functions below that take a tx run inside it (a failed
 * call is rolled back to its own savepoint); NULL means "in a transaction
 * of its own". */
int cat_tx_begin(struct cat_db *db, struct cat_tx **out, struct fl_err *err) FL_MUST_CHECK;

/* COMMITs and frees tx.  FL_ERR_COMMIT_STATE_UNKNOWN when the outcome cannot
 * be known (connection lost during COMMIT). */
int cat_tx_commit(struct cat_tx *tx, struct fl_err *err) FL_MUST_CHECK;

/* ROLLBACKs and frees tx; accepts NULL. */
void cat_tx_abort(struct cat_tx *tx);

/* ---- warehouses ---- */

struct cat_warehouse {
	char id[37];
	char name[256];
	char location[1024]; /* storage root, "file:///…" or "s3://…", no trailing '/' */
	char storage_type[16]; /* "file" or "s3" */
	struct st_profile profile; /* parsed; names no secret */
	/* The warehouse's storage, for calls that touch files (create,
	 * register, commit); set by the caller, borrowed.  cat_warehouse_get
	 * leaves it NULL. */
	struct st_io *io;
};

/* Creates a warehouse from {name, storage-profile} (storage/io/profile.h
 * validates the profile) and returns its JSON.  FL_ERR_ALREADY_EXISTS when
 * the name is taken. */
int cat_warehouse_create(struct cat_db *db, const json_t *req, json_t **out,
                         struct fl_err *err) FL_MUST_CHECK;

/* Creates the named file warehouse when it does not exist (idempotent). */
int cat_warehouse_ensure(struct cat_db *db, const char *name, const char *location,
                         struct fl_err *err) FL_MUST_CHECK;

/* Fills *out; FL_ERR_NO_SUCH_WAREHOUSE when absent. */
int cat_warehouse_get(struct cat_db *db, struct cat_tx *tx, const char *name,
                      struct cat_warehouse *out, struct fl_err *err) FL_MUST_CHECK;

/* cat_db_ready and cat_warehouse_get in one round trip, for a command's
 * start.  *ready false (and 0, *out untouched) when the schema is not this
 * binary's or not there: migrate, then cat_warehouse_get.  Otherwise as
 * cat_warehouse_get. */
int cat_warehouse_get_ready(struct cat_db *db, const char *name, struct cat_warehouse *out,
                            bool *ready, struct fl_err *err) FL_MUST_CHECK;

/* Replaces the warehouse's properties (a string map, checked by the
 * caller) and returns its JSON.  FL_ERR_NO_SUCH_WAREHOUSE. */
int cat_warehouse_update_properties(struct cat_db *db, const char *name, const json_t *props,
                                    json_t **out, struct fl_err *err) FL_MUST_CHECK;

/* {warehouses:[…]} sorted by name, and one warehouse's JSON. */
int cat_warehouse_list(struct cat_db *db, json_t **out, struct fl_err *err) FL_MUST_CHECK;
int cat_warehouse_get_json(struct cat_db *db, const char *name, json_t **out,
                           struct fl_err *err) FL_MUST_CHECK;

/* Replaces the storage profile of a warehouse (validated like a new one)
 * and returns the warehouse's JSON.  The type and location may change only
 * while the warehouse holds no namespace (FL_ERR_CONFLICT): its tables'
 * locations lie under the old one.  FL_ERR_NO_SUCH_WAREHOUSE when absent. */
int cat_warehouse_update_profile(struct cat_db *db, const char *name, const json_t *profile,
                                 json_t **out, struct fl_err *err) FL_MUST_CHECK;

/* FL_ERR_CONFLICT when it still holds namespaces. */
int cat_warehouse_delete(struct cat_db *db, const char *name, struct fl_err *err) FL_MUST_CHECK;

/* ---- namespaces ---- */

struct cat_ns {
	const char *const *levels; /* decoded levels, each non-empty */
	int n;
};

/* Formats a namespace for messages: levels joined by '.', each cut to 64 bytes. */
const char *cat_ns_str(const struct cat_ns *ns, char *buf, size_t cap);

/* Creates ns with properties (a string map, may be NULL).  Parent levels must
 * exist (FL_ERR_NO_SUCH_NAMESPACE); FL_ERR_ALREADY_EXISTS when present.
 * *out = {namespace, properties}. */
int cat_namespace_create(struct cat_db *db, struct cat_tx *tx, const char *wh_id,
                         const struct cat_ns *ns, const json_t *props, json_t **out,
                         struct fl_err *err) FL_MUST_CHECK;

/* *out = {namespace, properties}; FL_ERR_NO_SUCH_NAMESPACE when absent. */
int cat_namespace_load(struct cat_db *db, struct cat_tx *tx, const char *wh_id,
                       const struct cat_ns *ns, json_t **out, struct fl_err *err) FL_MUST_CHECK;

/* Drops an empty namespace: FL_ERR_NAMESPACE_NOT_EMPTY when it holds
 * namespaces or tables or views. */
int cat_namespace_drop(struct cat_db *db, struct cat_tx *tx, const char *wh_id,
                       const struct cat_ns *ns, struct fl_err *err) FL_MUST_CHECK;

/* Applies removals then updates atomically; *out = {updated, removed, missing}.
 * A key both removed and updated is FL_ERR_UNPROCESSABLE.  The resulting
 * property count must not exceed max_props (FL_ERR_BAD_REQUEST). */
int cat_namespace_update_props(struct cat_db *db, struct cat_tx *tx, const char *wh_id,
                               const struct cat_ns *ns, const json_t *removals,
                               const json_t *updates, long max_props, json_t **out,
                               struct fl_err *err) FL_MUST_CHECK;

/* Lists the direct children of parent (n = 0 for top level) in byte order of
 * their levels, at most page_size of them after page_token (NULL = start).
 * *out = {namespaces:[…], next-page-token: token|null}.  A token that was not
 * issued by this catalog is FL_ERR_BAD_REQUEST.  A missing parent is
 * FL_ERR_NO_SUCH_NAMESPACE. */
int cat_namespace_list(struct cat_db *db, struct cat_tx *tx, const char *wh_id,
                       const struct cat_ns *parent, const char *page_token, long page_size,
                       json_t **out, struct fl_err *err) FL_MUST_CHECK;

/* ---- tables ---- */

/* One table change of a commit (POST …/tables/{t} or one element of
 * transactions/commit).  The result fields are filled on success. */
struct cat_change {
	struct cat_ns ns;
	const char *name;
	const json_t *requirements; /* array of TableRequirement */
	const json_t *updates; /* array of TableUpdate */
	char *metadata_location; /* out, malloc'd */
	char *metadata; /* out, malloc'd JSON text */
};

/* Frees the result fields of n changes. */
void cat_changes_free(struct cat_change *c, int n);

/* Limits the catalog enforces on table calls. */
struct cat_limits {
	size_t max_updates; /* per commit, all tables together */
	size_t max_metadata_bytes; /* a metadata file read (register) or written (commit) */
};

/* Creates a table from a CreateTableRequest.  With stage, nothing is stored
 * (the table's metadata/ and data/ folders are created so that engines can
 * write there before the first commit) and *metadata_location is NULL.
 * FL_ERR_NO_SUCH_NAMESPACE, FL_ERR_ALREADY_EXISTS, FL_ERR_BAD_REQUEST for an
 * invalid request or a location outside the warehouse or overlapping another
 * table.  *metadata is JSON text (malloc'd).  actor (the acting principal,
 * or NULL) goes into the commit event. */
int cat_table_create(struct cat_db *db, struct cat_tx *tx, const struct cat_warehouse *wh,
                     const struct cat_ns *ns, const json_t *req, bool stage,
                     char **metadata_location, char **metadata, const char *actor,
                     struct fl_err *err) FL_MUST_CHECK;

/* Registers an existing metadata file as a table (overwrite replaces the
 * pointer of an existing table); actor as for cat_table_create. */
int cat_table_register(struct cat_db *db, struct cat_tx *tx, const struct cat_warehouse *wh,
                       const struct cat_ns *ns, const char *name, const char *metadata_location,
                       bool overwrite, const struct cat_limits *lim, char **metadata,
                       const char *actor, struct fl_err *err) FL_MUST_CHECK;

/* One round trip: the current metadata location and JSON text, byte for
 * byte as stored, and the warehouse's storage type, looked up by warehouse
 * name.  FL_ERR_NO_SUCH_WAREHOUSE / _NAMESPACE / _TABLE on a miss. */
int cat_table_load(struct cat_db *db, struct cat_tx *tx, const char *wh_name,
                   const struct cat_ns *ns, const char *name, char **metadata_location,
                   char **metadata, char storage_type[16], struct fl_err *err) FL_MUST_CHECK;

/* The members after "metadata" in a LoadTableResult with an empty config. */
#define CAT_EMPTY_CONFIG ",\"config\":{}"

/* cat_table_load without copies: the bytes are shared with the loadTable
 * cache (or, on a read of their own, held alone) and stay valid until
 * cat_table_bytes_release(out->hold), which any thread may call once.
 * location_sha256 is the SHA-256 of metadata_location, computed once per
 * version read (a version's name for validators such as ETags). */
struct cat_shared;
struct cat_table_bytes {
	const char *metadata_location;
	const unsigned char *location_sha256; /* 32 bytes */
	const char *metadata; /* metadata_len bytes, not NUL-terminated */
	size_t metadata_len;
	/* The whole LoadTableResult of this version for a table whose config
	 * is empty, {"metadata-location":…,"metadata":… CAT_EMPTY_CONFIG}
	 * (a file warehouse's: see the server's table_extras), NUL-terminated;
	 * the metadata is its middle, so the cache keeps one copy. */
	const char *answer;
	size_t answer_len;
	char storage_type[16];
	struct cat_shared *hold;
	/* Not NULL: the bytes are this form of hold's version (its refs-only
	 * answer, cat_table_bytes_refs), which hold keeps. */
	struct cat_shared *form;
};
int cat_table_load_bytes(struct cat_db *db, struct cat_tx *tx, const char *wh_name,
                         const struct cat_ns *ns, const char *name, struct cat_table_bytes *out,
                         struct fl_err *err) FL_MUST_CHECK;
void cat_table_bytes_release(struct cat_shared *hold);
/* The table's location (the metadata's "location"), parsed from the text
 * the first time it is asked for and kept with the bytes, so a cached
 * version is parsed once, not on every load that needs it.  NULL when the
 * metadata has no string "location", or out of memory.  Thread-safe. */
const char *cat_table_bytes_location(const struct cat_table_bytes *t);
/* The answer of t's version (cat_table_bytes.answer) coded with c, kept
 * with the version once made, so that a version is coded once however
 * often it is sent.  A copy is kept only while its version is in the
 * loadTable cache, and counts against the cache's budget: the version and
 * its copies are evicted together.  1: *p and *n are the coded bytes,
 * valid while t->hold is, or, for a version not cached (or no room even
 * after evicting), a copy made for this caller, which *owned then names
 * (the caller frees it; NULL otherwise; owned NULL: only a copy that is
 * kept is wanted, and one that cannot be is not tried again for this
 * version, which then goes as it is); 0: another thread is making them,
 * or the coding gains nothing, and the caller sends the answer as it is;
 * -1: out of memory.  cat_table_bytes_coded_state says, without making
 * anything, which of those a call would find.  Thread-safe. */
int cat_table_bytes_coded(struct cat_db *db, const struct cat_table_bytes *t, enum fl_coding c,
                          const char **p, size_t *n, char **owned) FL_MUST_CHECK;
enum cat_coded_state {
	CAT_CODED_OPEN, /* not made yet (or not kept: not cached, no room) */
	CAT_CODED_BUSY, /* being made */
	CAT_CODED_KEPT,
	CAT_CODED_NONE, /* the coding gains nothing */
};
enum cat_coded_state cat_table_bytes_coded_state(const struct cat_table_bytes *t, enum fl_coding c);
/* Whether t's version is in the loadTable cache now, so that a coded copy
 * made of it is kept. */
bool cat_table_bytes_cached(const struct cat_table_bytes *t);
/* The refs-only form of t's version (snapshots=refs: only the snapshots a
 * branch or tag points at) as bytes of their own into *out, which the
 * caller releases (out->hold) like t.  Made once and kept with the version
 * while it is cached, counted in the cache's bytes; made for this caller
 * otherwise (not cached, no room, or another thread making it).  Making it
 * parses the metadata (~12 us a KB): where the thread may not wait
 * (fl_no_wait) a form to be made of more than 128 KiB is
 * FL_ERR_WOULD_BLOCK, for a worker.  -1 with err set otherwise. */
int cat_table_bytes_refs(struct cat_db *db, const struct cat_table_bytes *t,
                         struct cat_table_bytes *out, struct fl_err *err) FL_MUST_CHECK;

/* loadTable without holding the caller while PostgreSQL reads.
 * cat_table_cached: true with *out (storage_type included) when the table
 * is in the loadTable cache.  cat_table_load_queue: queues the read of a
 * table for a loader thread (misses are read in batches); 0 when queued,
 * and fn(arg, t) then runs once, on that thread, with the bytes (t->hold
 * is then fn's to release) or with t NULL when the batch did not find the
 * table or failed: the caller then reads it with cat_table_load_bytes,
 * which gives the precise error.  wh_name and name must stay valid until
 * fn runs.  -1 when nothing was queued (no cache, out of memory, closing). */
typedef void cat_load_done_fn(void *arg, const struct cat_table_bytes *t);
bool cat_table_cached(struct cat_db *db, const char *wh_name, const struct cat_ns *ns,
                      const char *name, struct cat_table_bytes *out);
int cat_table_load_queue(struct cat_db *db, const char *wh_name, const struct cat_ns *ns,
                         const char *name, cat_load_done_fn *fn, void *arg) FL_MUST_CHECK;

/* A table found by the location of one of its objects. */
struct cat_table_ref {
	char warehouse[256]; /* name */
	char namespace_json[1024]; /* its levels as a JSON array of strings */
	char name[256];
	char location[1024];
};

/* The tables (of any warehouse) whose location is a proper ancestor of the
 * object "s3://bucket/key", deepest first: at most max into out, their
 * number in *found (0 when none).  Remote signing's legacy route uses it
 * to find the table a request is for. */
int cat_table_find_by_object(struct cat_db *db, const char *object, struct cat_table_ref *out,
                             int max, int *found, struct fl_err *err) FL_MUST_CHECK;

/* {identifiers:[{namespace, name}…], next-page-token} in byte order of name. */
int cat_table_list(struct cat_db *db, struct cat_tx *tx, const char *wh_id, const struct cat_ns *ns,
                   const char *page_token, long page_size, json_t **out,
                   struct fl_err *err) FL_MUST_CHECK;

/* Drops a table; with purge, a background job deletes its files. */
int cat_table_drop(struct cat_db *db, struct cat_tx *tx, const char *wh_id, const struct cat_ns *ns,
                   const char *name, bool purge, struct fl_err *err) FL_MUST_CHECK;

/* Unregisters a table (the opposite of cat_table_register): it leaves the
 * catalog as a drop without purge does, and *mloc and *metadata (new
 * strings) get its last version, read under the row lock, so no commit
 * acknowledged before is missing from it; one after finds no table.  The
 * files stay, for another catalog to register. */
int cat_table_unregister(struct cat_db *db, struct cat_tx *tx, const struct cat_warehouse *wh,
                         const struct cat_ns *ns, const char *name, char **mloc, char **metadata,
                         struct fl_err *err) FL_MUST_CHECK;

/* Renames within or across namespaces of one warehouse; the location stays. */
int cat_table_rename(struct cat_db *db, struct cat_tx *tx, const char *wh_id,
                     const struct cat_ns *from_ns, const char *from, const struct cat_ns *to_ns,
                     const char *to, struct fl_err *err) FL_MUST_CHECK;

/* Stores a metrics report (ScanReport / CommitReport) for the table. */
int cat_table_report(struct cat_db *db, struct cat_tx *tx, const char *wh_id,
                     const struct cat_ns *ns, const char *name, const json_t *report,
                     struct fl_err *err) FL_MUST_CHECK;

/* Applies n table changes atomically (all or nothing), each under its
 * table's row lock taken in a fixed order.  Requirement failures are
 * FL_ERR_COMMIT_FAILED (nothing applied); invalid updates FL_ERR_BAD_REQUEST;
 * an unknown COMMIT outcome FL_ERR_COMMIT_STATE_UNKNOWN (metadata files
 * kept).  request_id and actor (the acting principal; NULL = Floe itself)
 * go into the commit events. */
int cat_commit(struct cat_db *db, struct cat_tx *tx, const struct cat_warehouse *wh,
               struct cat_change *changes, int n, const struct cat_limits *lim,
               const char *request_id, const char *actor, struct fl_err *err) FL_MUST_CHECK;

/* Builds the updates of an in-process append from the table's current
 * metadata, called under the table's row lock (so the result can never lose
 * a race).  Set *updates (a new reference; an empty array = nothing to do). */
typedef int (*cat_append_fn)(void *arg, const json_t *current, json_t **updates,
                             struct fl_err *err);

/* In-process commit for `floe ingest` and maintenance: locks the table, calls build with its
 * current metadata and commits what build returns, in one transaction.
 * ch->ns and ch->name name the table; the result fields are filled. */
int cat_table_append(struct cat_db *db, const struct cat_warehouse *wh, struct cat_change *ch,
                     cat_append_fn build, void *arg, const struct cat_limits *lim,
                     const char *request_id, struct fl_err *err) FL_MUST_CHECK;

/* A version of a table the caller has already read and parsed (by
 * cat_table_load): its location, text and document. */
struct cat_known {
	const char *location;
	const char *text;
	json_t *meta;
};

/* cat_table_append inside the caller's transaction tx (NULL = its own): the
 * hook for "extra rows in this commit's transaction".  The row lock is held
 * and the commit becomes visible only when the caller commits tx, so rows
 * the caller adds to tx (a feed's ledger) land atomically with the snapshot;
 * an unknown outcome of that final COMMIT is the caller's
 * FL_ERR_COMMIT_STATE_UNKNOWN.  actor (NULL = Floe itself) goes into the
 * commit event.  known (NULL = none): when the locked row still points at
 * that version, its metadata is neither sent again nor parsed again. */
int cat_table_append_tx(struct cat_db *db, struct cat_tx *tx, const struct cat_warehouse *wh,
                        struct cat_change *ch, cat_append_fn build, void *arg,
                        const struct cat_known *known, const struct cat_limits *lim,
                        const char *request_id, const char *actor,
                        struct fl_err *err) FL_MUST_CHECK;

/* Per-table statistics for /metrics: fn is called once per table. */
struct cat_table_stat {
	const char *warehouse;
	const char *ns; /* levels joined by '.' */
	const char *name;
	int64_t total_records, total_data_files, total_files_size; /* -1 = unknown */
	double seconds_since_commit; /* -1 = never */
};
int cat_table_stats(struct cat_db *db, int limit, void (*fn)(const struct cat_table_stat *, void *),
                    void *arg, struct fl_err *err) FL_MUST_CHECK;

/* ---- views ---- */

/* Creates a view from a CreateViewRequest (name, location?, schema,
 * view-version, properties?): its metadata file (format version 1) is
 * written create-exclusive and fsynced before the row is inserted.
 * FL_ERR_NO_SUCH_NAMESPACE, FL_ERR_ALREADY_EXISTS (a table or view has the
 * name), FL_ERR_BAD_REQUEST for an invalid request.  *metadata_location and
 * *metadata (JSON text) are malloc'd. */
int cat_view_create(struct cat_db *db, struct cat_tx *tx, const struct cat_warehouse *wh,
                    const struct cat_ns *ns, const json_t *req, char **metadata_location,
                    char **metadata, struct fl_err *err) FL_MUST_CHECK;

/* Registers an existing view metadata file (inside the warehouse, at most
 * lim->max_metadata_bytes, validated) as the view ns.name; the next commit
 * continues its file numbering.  FL_ERR_ALREADY_EXISTS when a table or view
 * has the name; FL_ERR_BAD_REQUEST for a missing or invalid file.
 * *metadata (JSON text) is malloc'd. */
int cat_view_register(struct cat_db *db, struct cat_tx *tx, const struct cat_warehouse *wh,
                      const struct cat_ns *ns, const char *name, const char *metadata_location,
                      const struct cat_limits *lim, char **metadata,
                      struct fl_err *err) FL_MUST_CHECK;

/* A view as cat_table_load_bytes gives a table, from the same cache (a
 * view is a row of table_entry too, and every change to it notifies as a
 * table's does): the answer is the whole LoadViewResult, whose config is
 * always empty.  FL_ERR_NO_SUCH_VIEW / _NAMESPACE / _WAREHOUSE on a miss. */
int cat_view_load_bytes(struct cat_db *db, struct cat_tx *tx, const char *wh_name,
                        const struct cat_ns *ns, const char *name, struct cat_table_bytes *out,
                        struct fl_err *err) FL_MUST_CHECK;

/* {identifiers:[{namespace, name}…], next-page-token} of the views of a
 * namespace, in byte order of name (as cat_table_list). */
int cat_view_list(struct cat_db *db, struct cat_tx *tx, const char *wh_id, const struct cat_ns *ns,
                  const char *page_token, long page_size, json_t **out,
                  struct fl_err *err) FL_MUST_CHECK;

/* Drops a view (its metadata files stay). */
int cat_view_drop(struct cat_db *db, struct cat_tx *tx, const char *wh_id, const struct cat_ns *ns,
                  const char *name, struct fl_err *err) FL_MUST_CHECK;

/* Renames a view within or across namespaces of one warehouse;
 * FL_ERR_ALREADY_EXISTS when a table or view has the new name. */
int cat_view_rename(struct cat_db *db, struct cat_tx *tx, const char *wh_id,
                    const struct cat_ns *from_ns, const char *from, const struct cat_ns *to_ns,
                    const char *to, struct fl_err *err) FL_MUST_CHECK;

/* Commits a CommitViewRequest to the view ch->ns.ch->name: under the row
 * lock, checks ch->requirements (assert-view-uuid; FL_ERR_COMMIT_FAILED on
 * a mismatch), applies ch->updates (FL_ERR_BAD_REQUEST when invalid or more
 * than lim->max_updates), writes the next metadata file and moves the
 * pointer (compare-and-swap on the row version).  The result fields of ch
 * are filled on success. */
int cat_view_commit(struct cat_db *db, struct cat_tx *tx, const struct cat_warehouse *wh,
                    struct cat_change *ch, const struct cat_limits *lim,
                    struct fl_err *err) FL_MUST_CHECK;

/* ---- idempotency records ---- */

struct cat_idem {
	int status; /* 0 = claimed (execute); otherwise the stored response */
	char *content_type;
	char *etag;
	char *body;
	size_t body_len;
	/* A CommitTableResponse kept by reference: the metadata file the commit
	 * wrote, whose text is the response's "metadata" (body is then NULL). */
	char *metadata_location;
};

/* Inside tx, claims key for (method, route, fingerprint) or returns the
 * stored response of an earlier request with the same key (waiting for it
 * when it is still in flight).  The same key with another method, route or
 * fingerprint is FL_ERR_UNPROCESSABLE.  Free the record's strings with
 * cat_idem_free. */
int cat_idem_claim(struct cat_tx *tx, const char *key, const char *method, const char *route,
                   const unsigned char fp[32], int64_t lifetime_s, struct cat_idem *out,
                   struct fl_err *err) FL_MUST_CHECK;

/* cat_idem_claim in two halves, so that the claim rides with the
 * transaction's first statement instead of a round trip of its own.
 * _defer only notes it (FL_ERR_NOMEM).  Until it has been judged to be
 * this request's, every use of tx fails: the use that sent it with
 * FL_ERR_CONFLICT when the key has a stored response, else with the
 * claim's own error.  _claimed then answers as cat_idem_claim does (a
 * stored response is handed over once), sending the claim first when
 * nothing carried it; a caller whose handler ran meanwhile discards that
 * handler's answer unless it returns 0 with out->status 0.  Only for a
 * handler whose first act with any effect is a statement of tx: anything
 * done before it is done for a request that may turn out to be a replay. */
int cat_idem_claim_defer(struct cat_tx *tx, const char *key, const char *method, const char *route,
                         const unsigned char fp[32], int64_t lifetime_s,
                         struct fl_err *err) FL_MUST_CHECK;
int cat_idem_claimed(struct cat_tx *tx, struct cat_idem *out, struct fl_err *err) FL_MUST_CHECK;
/* Whether tx's deferred claim stopped its handler (the key has a stored
 * response, or the claim failed): the handler's failure is then no
 * outcome of its own. */
bool cat_idem_stopped(struct cat_tx *tx);

/* Records the response for a claimed key in tx and COMMITs tx, in one
 * round trip; frees tx as cat_tx_commit does and fails as it does
 * (FL_ERR_COMMIT_STATE_UNKNOWN when the outcome cannot be known).  With
 * metadata_location (a CommitTableResponse) the body is not stored: the
 * location is, and a replay reads the metadata back. */
int cat_idem_store_commit(struct cat_tx *tx, const char *key, int status, const char *content_type,
                          const char *etag, const char *body, size_t n,
                          const char *metadata_location, struct fl_err *err) FL_MUST_CHECK;
void cat_idem_free(struct cat_idem *r);

/* ---- maintenance ---- */

/* Snapshot expiry for one table (wh->io set): commits the removal of the
 * snapshots and refs the table's retention settings expire
 * (cat_meta_expire_plan, under the row lock), then deletes the manifest
 * lists, manifests, data and delete files that no remaining snapshot
 * reaches.  dry_run commits and deletes nothing but reports the same.
 * *report = {action: "expire", table, dry-run, refs-removed: [names],
 * snapshots-removed, snapshot-ids, data-files-removed,
 * delete-files-removed, manifests-removed, manifest-lists-removed,
 * files-removed, bytes-removed, files-added: 0, bytes-added: 0}.
 * FL_ERR_NO_SUCH_TABLE, commit errors, or storage errors (prefixed with
 * what was committed already: the snapshots are gone, the files stay for
 * orphan cleanup). */
int cat_maintain_expire(struct cat_db *db, const struct cat_warehouse *wh, const struct cat_ns *ns,
                        const char *name, const struct cat_limits *lim, int64_t now_ms,
                        bool dry_run, json_t **report, struct fl_err *err) FL_MUST_CHECK;

/* Orphan cleanup for one table (wh->io set): deletes the objects under the
 * table location that no snapshot (manifest lists, manifests, data and
 * delete files, DELETED entries included), metadata file (current and
 * metadata-log) or statistics file references and that were last modified
 * longer ago than the table property floe.orphan-grace (ISO-8601 duration,
 * default P3D, never below PT1H, so an in-flight write is never hit).  The
 * references are read again after the listing, so a commit that lands
 * meanwhile protects its files.  dry_run deletes nothing.  *report =
 * {action: "orphans", table, dry-run, grace-seconds, objects-listed,
 * files-of-retired-tables-kept (when some), files-removed, bytes-removed,
 * files-added: 0, bytes-added: 0, sample: [up to 20 URIs]}.  An object
 * under a location a table left with its files in place
 * (cat_location_retired) that is older than that departure is never an
 * orphan: a new table at the same place must not delete another's files.
 * A referenced file that cannot be read stops the run before
 * anything is deleted.  FL_ERR_BAD_REQUEST for a malformed floe.orphan-grace. */
int cat_maintain_orphans(struct cat_db *db, const struct cat_warehouse *wh, const struct cat_ns *ns,
                         const char *name, int64_t now_ms, bool dry_run, json_t **report,
                         struct fl_err *err) FL_MUST_CHECK;

/* When a table last left the catalog with its files in place (a drop
 * without purge, an unregister) from a location equal to, inside or around
 * location: *ms (Unix ms) and *found.  Those files are not a later
 * table's orphans. */
int cat_location_retired(struct cat_db *db, const char *wh_id, const char *location, int64_t *ms,
                         bool *found, struct fl_err *err) FL_MUST_CHECK;
/* How far storage's clock (an object's mtime) may run ahead of
 * PostgreSQL's (a retirement's time): orphan cleanup and the purge job keep
 * the objects up to the retirement plus this. */
#define CAT_RETIRED_SKEW_MS ((int64_t)10 * 60 * 1000)

/* Compaction (bin-pack) of one table (wh->io set).  Per partition (spec
 * id and partition tuple) of the current snapshot, the live data files of
 * the default spec smaller than 75% of write.target-file-size-bytes
 * (default 512 MiB) are chosen when there are two or more; a manifest is
 * rewritten only whole (every live file in it chosen), so chosen files that
 * share a manifest with files that stay are skipped (files-skipped).  The
 * chosen files are read (storage/parquet/reader.h) and written again
 * toward the target size with the current schema's field ids and the same
 * partition values, then one `replace` snapshot is committed whose new
 * manifest holds the new files ADDED and the old ones DELETED; the other
 * manifests are carried unchanged.  The commit is built under the row
 * lock on the then current state: appends since the plan are kept; a
 * commit that removed a dropped manifest aborts the run (FL_ERR_CONFLICT,
 * the new files deleted).  pause_ms (tests only; 0 normally) sleeps
 * between the rewrite and the commit.  dry_run writes nothing and
 * estimates the files added (bytes / target, rounded up).  *report =
 * {action: "compact", table, dry-run, target-file-size-bytes,
 * files-removed, files-added, bytes-removed, bytes-added, partitions,
 * files-skipped, plan: [{spec-id, partition, files-removed, bytes-removed,
 * files-added, bytes-added}], snapshot-id (when committed)}.
 * FL_ERR_UNSUPPORTED (not yet) for v3 tables, tables with delete files,
 * nested columns and binary/fixed/uuid/decimal partition values;
 * FL_ERR_BAD_REQUEST for a malformed write.target-file-size-bytes;
 * storage and commit errors. */
int cat_maintain_compact(struct cat_db *db, const struct cat_warehouse *wh, const struct cat_ns *ns,
                         const char *name, const struct cat_limits *lim, unsigned pause_ms,
                         bool dry_run, json_t **report, struct fl_err *err) FL_MUST_CHECK;

/* Manifest rewrite of one table (wh->io set; catalog/maintain_manifests.c):
 * per partition spec and content (data and delete manifests apart), the
 * manifests of the current snapshot smaller than the table property
 * commit.manifest.target-size-bytes (default 8 MiB; every manifest of the
 * spec when it has more than commit.manifest.min-count-to-merge, default
 * 100), when two or more, are packed in list order into bins within the
 * target and each bin is merged into one manifest: live entries EXISTING
 * with their snapshot id, sequence numbers and v3 first_row_id, DELETED
 * entries dropped.  Committed as one `replace` snapshot built under the
 * row lock on the then current state (appends since the plan carried;
 * when a merged manifest left the current list, planned again, at most 3
 * times, else FL_ERR_CONFLICT).  pause_ms (tests only; 0 normally) sleeps
 * before the first commit attempt.  The replaced manifests stay on storage
 * for older snapshots until expiry.  dry_run writes nothing.  *report =
 * {action: "manifests", table, dry-run, target-size-bytes,
 * manifests-replaced, manifests-created, manifests-kept,
 * entries-processed (0 in a dry run), files-removed and bytes-removed
 * (the replaced manifests), files-added and bytes-added (the new ones;
 * bytes 0 in a dry run), snapshot-id (when committed)}.
 * FL_ERR_BAD_REQUEST for malformed properties or manifests;
 * FL_ERR_UNSUPPORTED for binary/fixed/uuid/decimal partition values;
 * storage and commit errors. */
int cat_maintain_manifests(struct cat_db *db, const struct cat_warehouse *wh,
                           const struct cat_ns *ns, const char *name, const struct cat_limits *lim,
                           unsigned pause_ms, bool dry_run, json_t **report,
                           struct fl_err *err) FL_MUST_CHECK;

/* ---- background work ---- */

/* Deletes expired idempotency records; *n = how many. */
int cat_idem_gc(struct cat_db *db, long *n, struct fl_err *err) FL_MUST_CHECK;

/* Takes one due purge job (SKIP LOCKED), deletes the location's files, and
 * marks it done or schedules a retry.  *did = whether a job ran. */
int cat_jobs_run_one(struct cat_db *db, bool *did, struct fl_err *err) FL_MUST_CHECK;

#endif
