/* db_int.h - what catalog/db/ files share: pooled connections and query helpers. */
#ifndef CAT_DB_INT_H
#define CAT_DB_INT_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdlib.h>

#include "catalog.h"
#include "json.h"
#include "libpq.h"

#define CAT_STMT_CACHE 96

struct cat_conn {
	PGconn *pg;
	/* Statements named on this connection, keyed by the address of their
	 * SQL text (always a string literal), named "s<index>", and where each
	 * stands (enum cat_stmt_state, pool.c).  A new one runs unnamed while
	 * its preparation rides at the end of the connection's next pipeline. */
	const char *stmts[CAT_STMT_CACHE];
	unsigned char stmt_state[CAT_STMT_CACHE];
	int nstmts;
	int pipe_nprep; /* preparations sent by cat_pipeline_send, not read yet */
	unsigned char pipe_prep[CAT_STMT_CACHE]; /* their indexes */
	bool pipe_prep_sync; /* the sync sent ahead of them, not read yet */
	bool busy;
	bool unprepared; /* cat_db_oneshot: never prepare */
	bool settings_pending; /* session settings not sent yet (cat_db_open_oneshot) */
	size_t pipe_set_syncs; /* settings sent by cat_pipeline_send, not read yet */
	uint64_t pipe_mid_syncs; /* bit i: a sync after statement i (struct cat_pipe_q) */
	int64_t retry_at_ns; /* no reconnect attempt before this (backoff) */
	int64_t backoff_ns;
	/* The process id of the connection's backend, once the server said
	 * the same as the connection's start did (no pooler in between: it
	 * would show a pid of its own); 0 otherwise.  Checked in listener
	 * epoch pid_epoch (cat_db_own_backend). */
	atomic_int own_pid;
	atomic_uint pid_epoch;
};

/* Whether pid is the backend of one of this process's pooled connections
 * now: a notification it sent (tx.c) has its match in this process's own
 * invalidation of what it names, made before its client is answered. */
bool cat_db_own_backend(struct cat_db *db, int pid);

/* Threads reading loadTable misses in batches (table.c). */
#define CAT_LOAD_READERS 2

struct cat_db {
	char *conninfo;
	int size;
	struct cat_conn *conns;
	pthread_mutex_t mu;
	pthread_cond_t cv;
	int in_use;
	int waiting;
	unsigned char secret[32];
	bool have_secret;
	bool settings_deferred; /* a new connection leaves its settings pending */
	struct cat_cache *cache; /* NULL until cat_db_enable_cache */
	/* Bumped by the cache's listener each time it (re)connects: a pooled
	 * connection's backend pid is trusted only when checked since
	 * (cat_db_own_backend), as a server that restarted may give a pid
	 * again to another client's backend. */
	atomic_uint listen_epoch;
	struct cat_base_cache *bases; /* NULL when out of memory at open */
	struct cat_gates *gates; /* likewise */
	cat_stage_fn on_stage; /* commit stage timings; may be NULL */
	void *on_stage_arg;
	/* Table metadata stored in the row only up to inline_max bytes; larger
	 * is read from its file (at most read_max bytes, what the column could
	 * hold) through storage_fn (cat_db_set_metadata_inline). */
	size_t inline_max, read_max;
	cat_storage_fn storage_fn;
	void *storage_arg;
	atomic_ulong file_reads, file_read_bytes; /* documents read that way */
	/* loadTable misses read together (table.c) */
	pthread_mutex_t load_mu;
	pthread_cond_t load_cv; /* a request queued, or stopping */
	struct cat_load_wait *load_queue; /* newest first */
	bool load_stop;
	unsigned long load_reads, load_loads; /* statements, loads they answered */
	size_t load_waiting; /* queued or being read */
	int loaders; /* started, on the first miss */
	pthread_t loader[CAT_LOAD_READERS];
};

/* Stops the loaders of loadTable misses once the requests queued are
 * answered (cat_db_close). */
void cat_db_loaders_stop(struct cat_db *db);

/* PQconnectdb for every connection Floe opens; a server on this machine is
 * reached without TLS/GSS negotiation unless conninfo or the environment
 * asks for it (pool.c says why).  Loads libpq first (libpq.h).  NULL when
 * out of memory, when libpq cannot be loaded, or when conninfo does not
 * parse (libpq never sees it: its parse errors quote it, password and all):
 * PQerrorMessage(NULL) then says why. */
PGconn *cat_pg_connect(const char *conninfo);

/* A cache key for a table: the warehouse (its name or id), the levels and
 * the name, separated by bytes that cannot occur inside them (malloc'd,
 * *len bytes; NULL when out of memory). */
char *cat_table_key(const char *wh, const struct cat_ns *ns, const char *name, size_t *len);

/* Parsed metadata of recently committed tables (basecache.c). */
struct cat_base_cache;
struct cat_base_cache *cat_base_cache_new(void);
void cat_base_cache_free(struct cat_base_cache *c);
/* true with copies of the entry's location and text (not copied when text
 * is NULL: it is up to megabytes), a new reference to its parsed document
 * (never to be modified) and, when memo is not NULL, one to the memo of
 * the dump that wrote it (NULL when it was read, not written here: a
 * document with a memo is the builder's own, cat_meta_apply_built); false
 * on a miss or without a cache or key, the out-parameters untouched. */
bool cat_base_get(struct cat_base_cache *c, const char *key, size_t key_len, char **location,
                  char **text, json_t **doc, struct fl_json_memo **memo);
/* Keeps doc (a reference is taken; the caller must not modify doc from
 * now on) and a copy of text as version `version` of table id, stored at
 * location; a newer version of the same table already held is kept
 * instead.  Only committed versions belong here: as read, or as written
 * by a commit whose COMMIT succeeded (doc then built, not parsed, but the
 * document that text serializes).  With memo (the dump of doc that wrote
 * text: a reference is taken) text is NULL and the memo's is kept. */
void cat_base_put(struct cat_base_cache *c, const char *key, size_t key_len, const char *id,
                  int64_t version, const char *location, const char *text, json_t *doc,
                  struct fl_json_memo *memo);

/* One optimistic commit per table at a time in this process (gate.c). */
struct cat_gates;
struct cat_gate;
struct cat_gates *cat_gates_new(void);
void cat_gates_free(struct cat_gates *g);
/* Waits until no other caller holds the gate of key, for at most a second,
 * and holds it: the gate or NULL (no gates, out of memory, or waited too
 * long), with which the caller goes on as if there were no gate. */
struct cat_gate *cat_gate_enter(struct cat_gates *g, const char *key, size_t key_len);
/* Lets the next caller through; e may be NULL. */
void cat_gate_leave(struct cat_gate *e);

/* Reports the time since *t0 as `stage` to the observer and restarts *t0. */
void cat_stage_done(struct cat_db *db, enum cat_stage stage, int64_t *t0);

struct cat_scope;
/* Work that may run only once the change is durably committed (deleting
 * files the new state no longer references): called with committed = true
 * after a successful COMMIT of the scope or of its outer transaction, with
 * false when it rolls back or its outcome is unknown; always exactly once. */
typedef void (*cat_after_fn)(void *arg, bool committed);
void cat_scope_after_commit(struct cat_scope *s, cat_after_fn fn, void *arg);
/* The same for work that ends with tx (committed or not), after the work
 * registered before it. */
void cat_tx_after_end(struct cat_tx *tx, cat_after_fn fn, void *arg);

/* Marks the scope as a table commit, so the COMMIT that ends it (here or
 * in its outer transaction) is timed as CAT_STAGE_COMMIT. */
void cat_scope_timed(struct cat_scope *s);

/* A loadTable row's location and metadata text, immutable and counted:
 * the cache and each response that sends them hold a reference, so a hit
 * copies nothing.  cat_shared_new copies the strings and hashes the
 * location once (refs = 1); NULL when out of memory. */
struct cat_shared {
	atomic_uint refs;
	size_t meta_len, answer_len;
	char *mloc;
	char *answer; /* cat_table_bytes.answer, NUL-terminated */
	char *meta; /* inside answer: not NUL-terminated */
	_Atomic(char *) location; /* cat_table_bytes_location, once asked */
	/* answer content-coded (cat_table_bytes_coded), once asked */
	_Atomic(struct cat_coded *) coded[FL_CODING_COUNT];
	/* While the version is in the cache: what its kept coded copies hold
	 * (its refs form's too), and what its refs form holds, which the
	 * cache's bytes include (cache.c); 0 otherwise. */
	atomic_size_t charge, charge_forms;
	/* The refs-only answer of this version (cat_table_bytes_refs), once
	 * made and kept: owned by this one, freed with it. */
	_Atomic(struct cat_shared *) refs_form;
	unsigned char mloc_sha256[32];
	/* The row that held this version: its id, namespace and version
	 * (version -1: not known), which an optimistic commit's
	 * compare-and-swap names (commit.c). */
	char row_id[40], ns_id[24];
	int64_t version;
};
/* meta NULL: its meta_len bytes are left for the caller to write, at s->meta. */
struct cat_shared *cat_shared_new(const char *mloc, const char *meta, size_t meta_len);
/* The bytes of sh into out, whose hold takes the caller's reference. */
void cat_shared_bytes(struct cat_shared *sh, struct cat_table_bytes *out);
/* Notes the row of s's version (a version < 0, or an id too long to keep:
 * not known). */
void cat_shared_row(struct cat_shared *s, const char *row_id, const char *ns_id, int64_t version);
static inline struct cat_shared *cat_shared_ref(struct cat_shared *s)
{
	atomic_fetch_add_explicit(&s->refs, 1, memory_order_relaxed);
	return s;
}

/* The loadTable cache (cache.c). */
struct cat_cache;
/* cat_table_bytes_coded on a cache (NULL: none, so nothing is kept); the
 * bytes a cache holds, and in *coded (when not NULL) the part of them its
 * versions' coded copies hold. */
int cat_cache_coded(struct cat_cache *cache, const struct cat_table_bytes *t, enum fl_coding c,
                    const char **p, size_t *n, char **owned) FL_MUST_CHECK;
size_t cat_cache_bytes(const struct cat_cache *c, size_t *coded);
int cat_cache_start(struct cat_db *db, size_t max_bytes, struct fl_err *err) FL_MUST_CHECK;
/* The cache alone, without the listener that cat_cache_start runs (which
 * makes it live while connected): for that, and for tests.  NULL when out
 * of memory.  cat_cache_stop frees either. */
struct cat_cache *cat_cache_new(size_t max_bytes, bool live);
void cat_cache_stop(struct cat_cache *c);
/* 1 = hit with a new reference to the entry's bytes, 0 = miss or cache not
 * live.  Hits are counted here; misses where the database is read
 * (cat_cache_missed), so that a request that looks twice (an HTTP thread,
 * then the worker it hands the request to) counts once, and the count is
 * what its name says: reads that went to the database. */
int cat_cache_get(struct cat_cache *c, const char *key, size_t key_len, struct cat_shared **sh,
                  char storage_type[16]);
void cat_cache_missed(struct cat_cache *c, unsigned long n);
unsigned long cat_cache_generation(struct cat_cache *c);
/* Keeps sh (taking a reference of its own when it does). */
void cat_cache_put(struct cat_cache *c, unsigned long generation, const char *key, size_t key_len,
                   const char *table_id, struct cat_shared *sh, const char *storage_type);
void cat_cache_invalidate(struct cat_cache *c, const char *table_id);

/* The version a commit of this process wrote: once its COMMIT is done, it
 * takes the place of whatever the loadTable cache holds of its table, so
 * that the reloads a commit causes (its writer's next load, the losers of
 * a race after their 409) are hits.  generation was noted before the COMMIT
 * was sent: a commit of the table by anyone after this one is then either
 * in the ring since generation (the insert is refused) or purges what was
 * inserted, as for a reader (cache.c). */
struct cat_fresh {
	char table_id[40];
	char *key; /* cat_table_key of the warehouse's name, as loadTable reads it */
	size_t key_len;
	struct cat_shared *sh;
	char storage_type[16];
	unsigned long generation;
};
/* NULL without a cache, or when out of memory (the table is then only
 * invalidated, as before). */
struct cat_fresh *cat_fresh_new(struct cat_db *db, const char *wh_name, const char *storage_type,
                                const struct cat_ns *ns, const char *name, const char *table_id,
                                const char *ns_id, int64_t version, const char *metadata_location,
                                const char *metadata, size_t metadata_len,
                                unsigned long generation);
void cat_fresh_free(struct cat_fresh *f);
/* Invalidates f's table as cat_cache_invalidate does, then inserts f's
 * version unless another invalidation of the table came after
 * f->generation (not the one made here). */
void cat_cache_committed(struct cat_cache *c, const struct cat_fresh *f);

/* Tables changed inside a transaction: invalidated in this process's cache
 * right after COMMIT (other processes learn through NOTIFY), or replaced by
 * the version a single-table commit wrote (fresh). */
#define CAT_TOUCH_MAX 16
struct cat_touched {
	char ids[CAT_TOUCH_MAX][40];
	int n;
	bool overflow; /* more than CAT_TOUCH_MAX: flush everything */
	struct cat_fresh *fresh; /* owned; NULL for most changes */
};

/* Takes a connected connection from the pool, waiting up to a few seconds for
 * one to be free.  FL_ERR_UNAVAILABLE when the database cannot be reached. */
int cat_conn_get(struct cat_db *db, struct cat_conn **out, struct fl_err *err) FL_MUST_CHECK;

/* Returns c to the pool; a broken connection, or one left inside a
 * transaction, is closed so the next user starts clean. */
void cat_conn_put(struct cat_db *db, struct cat_conn *c);

/* cat_location_retired (catalog.h) on connection c. */
int cat_location_retired_on(struct cat_conn *c, const char *wh_id, const char *location,
                            int64_t *ms, bool *found, struct fl_err *err) FL_MUST_CHECK;

/* Runs sql with text parameters as a prepared statement of this connection
 * (prepared on first use).  sql must be a string literal: the statement cache
 * is keyed by its address.  Returns the result (PQclear it) when its
 * status is PGRES_COMMAND_OK or PGRES_TUPLES_OK; otherwise NULL with err set:
 * FL_ERR_UNAVAILABLE for a lost connection, FL_ERR_ALREADY_EXISTS for a
 * unique violation (SQLSTATE 23505), FL_ERR_INTERNAL otherwise. */
PGresult *cat_exec(struct cat_conn *c, const char *sql, int n, const char *const *params,
                   struct fl_err *err);

/* Runs a statement whose result is not needed (BEGIN, COMMIT, …). */
int cat_exec_cmd(struct cat_conn *c, const char *sql, struct fl_err *err) FL_MUST_CHECK;

/* The prepared name of sql (a string literal: its address is the key) on
 * c, written to name and returned; NULL when it is not prepared there (yet:
 * its first use asks for its preparation, which the connection's next
 * pipeline that leaves no transaction block open carries after its
 * statements and a sync, costing no round trip of its own;
 * or at all: the cache is full, or PostgreSQL refused it).  A NULL runs the
 * statement unnamed, in the same round trip. */
const char *cat_prepared(struct cat_conn *c, const char *sql, char name[16]);

/* One statement of a pipeline: prepared as stmt when stmt is not NULL,
 * else sql; lengths and formats as PQsendQueryParams takes them. */
struct cat_pipe_q {
	const char *sql;
	const char *stmt;
	int n;
	const char *const *params;
	const int *lengths;
	const int *formats;
	/* A sync after this statement (not the last): those after it run in
	 * an implicit transaction of their own, even when this one fails. */
	bool sync;
};

/* Sends the k statements in one round trip (libpq pipeline mode, one
 * sync, and one after each statement marked sync; at most 64) and
 * collects the first result of each into res[] (NULL for a statement
 * whose result never came; the caller PQclears them all).  A
 * statement after a failed one is not run (PGRES_PIPELINE_ABORTED).  true
 * when the whole pipeline was answered and the connection left it. */
bool cat_pipeline(struct cat_conn *c, int k, const struct cat_pipe_q *q, PGresult **res);
/* cat_pipeline in two halves, so that the caller works while PostgreSQL
 * runs the statements: _send queues and flushes them (false: not sent, and
 * the connection unusable); _recv then waits for their results, as
 * cat_pipeline returns them.  Nothing else may use c in between. */
bool cat_pipeline_send(struct cat_conn *c, int k, const struct cat_pipe_q *q);
bool cat_pipeline_recv(struct cat_conn *c, int k, PGresult **res);
/* cat_exec in the same two halves. */
bool cat_exec_send(struct cat_conn *c, const char *sql, int n, const char *const *params);
PGresult *cat_exec_recv(struct cat_conn *c, struct fl_err *err);
/* r (a statement's result, from cat_pipeline) when it succeeded; otherwise
 * NULL, r cleared and err set as cat_exec sets it. */
PGresult *cat_result(struct cat_conn *c, PGresult *r, struct fl_err *err);

/* BEGIN, then sql as cat_exec runs it, in one round trip (libpq pipeline
 * mode): opens a transaction with its first statement.  Returns the
 * statement's result or NULL with err set as cat_exec does (for BEGIN's
 * failure too). */
PGresult *cat_exec_begin(struct cat_conn *c, const char *sql, int n, const char *const *params,
                         struct fl_err *err);

/* Runs parameterless statements separated by ';' in one round trip (the
 * simple query protocol); sql may be built at run time but must never hold
 * request data.  The first failing statement ends the script: -1 with err
 * set as cat_exec does. */
int cat_exec_script(struct cat_conn *c, const char *sql, struct fl_err *err) FL_MUST_CHECK;

/* Formats levels as a PostgreSQL text[] literal ({"a","b\"c"}) into a malloc'd
 * string, quoting every element. */
char *cat_text_array(const struct cat_ns *ns, int n);

/* Parses a text[] value of a result into a JSON array of strings. */
json_t *cat_parse_text_array(const char *s);

/* Where a catalog call runs: inside the caller's transaction (under a
 * savepoint) or in its own.  Reads (write = false) without an outer
 * transaction run in autocommit. */
struct cat_scope {
	struct cat_db *db;
	struct cat_conn *c;
	struct cat_tx *outer;
	bool write;
	/* The scope's SAVEPOINT rides with its first statement (cat_scope_begin_ahead). */
	bool savepoint_due;
	int prefix_sent; /* statements of cat_scope_prefix sent, results not read */
	int claim_at; /* the outer transaction's claim among them, or -1 */
	bool timed; /* see cat_scope_timed */
	bool notified; /* see cat_scope_notified */
	struct cat_touched touched;
	struct cat_after *after; /* cat_scope_after_commit, in order */
};

/* The notification of what the scope touched went already, behind the
 * statement that committed the change by itself (cat_row_move_if_notify). */
void cat_scope_notified(struct cat_scope *s);

/* Records a table as changed by this scope: once its COMMIT (or that of
 * the outer transaction) is done, whatever the outcome, the table leaves
 * this process's cache and NOTIFY floe_table tells the other processes. */
void cat_scope_touched(struct cat_scope *s, const char *table_id);

/* Gives f (owned from now) to the change recorded by cat_scope_touched of
 * f->table_id: once committed, f's version replaces the cache's entry of the
 * table instead of only dropping it; freed unused when the change is not
 * committed, or when the scope has a fresh version already. */
void cat_scope_fresh(struct cat_scope *s, struct cat_fresh *f);

int cat_scope_begin(struct cat_db *db, struct cat_tx *tx, bool write, struct cat_scope *s,
                    struct fl_err *err) FL_MUST_CHECK;

/* A write scope whose opening is not sent yet: it rides in front of the
 * scope's first statement, which must be sent through cat_scope_prefix.
 * That is its SAVEPOINT inside tx, preceded by tx's own deferred BEGIN and
 * Idempotency-Key claim when tx has sent nothing yet; its BEGIN without
 * tx.  A scope ended before any statement was sent ends as a read scope. */
int cat_scope_begin_ahead(struct cat_db *db, struct cat_tx *tx, struct cat_scope *s,
                          struct fl_err *err) FL_MUST_CHECK;

/* Fills q (room for 8) with the statements due in front of the scope's
 * next one (the opening of cat_scope_begin_ahead, once) and
 * returns their number; they count as sent. */
int cat_scope_prefix(struct cat_scope *s, struct cat_pipe_q *q);

/* Judges the results res[0..k-1] of the k statements cat_scope_prefix gave
 * (each cleared here; NULL where none came): 0 when all succeeded and a
 * claim among them is this request's; else -1 and err, the first failure
 * (a claim that is not this request's: cat_claim_stop's error). */
int cat_scope_prefix_judge(struct cat_scope *s, PGresult **res, int k, struct fl_err *err);

/* Ends the scope: ok commits (or releases the savepoint), !ok rolls back.
 * Returns -1 when ok was false or the commit failed (err set then; an
 * unknown COMMIT outcome is FL_ERR_COMMIT_STATE_UNKNOWN). */
int cat_scope_end(struct cat_scope *s, bool ok, struct fl_err *err);

/* Looks up (share-locking) the namespace row; FL_ERR_NO_SUCH_NAMESPACE when
 * absent.  id receives the row id as text. */
int cat_namespace_id(struct cat_conn *c, const char *wh_id, const struct cat_ns *ns, char *id,
                     size_t cap, struct fl_err *err) FL_MUST_CHECK;

/* A table row as the commit path sees it (strings malloc'd). */
struct cat_row {
	char id[40];
	char ns_id[24];
	char *metadata_location;
	char *metadata;
	char *location;
	int64_t version;
};
void cat_row_free(struct cat_row *row);

/* Locks the table row FOR UPDATE; 1 = found, 0 = absent, -1 = error.
 * With known_location (NULL = none), row->metadata is left NULL (and not
 * sent) when the row still points there, as in cat_row_read.  It is NULL
 * too when PostgreSQL does not keep the document (larger than the inline
 * limit): cat_row_text then reads it. */
int cat_row_lock(struct cat_conn *c, const char *wh_id, const struct cat_ns *ns, const char *name,
                 const char *known_location, struct cat_row *row, struct fl_err *err);

/* Reads the table row without a lock (the optimistic commit); as
 * cat_row_lock otherwise, except that row->metadata is left NULL (and not
 * sent) when the row's metadata_location is known_location: the caller
 * holds that version already. */
int cat_row_read(struct cat_conn *c, const char *wh_id, const struct cat_ns *ns, const char *name,
                 const char *known_location, struct cat_row *row, struct fl_err *err);
/* cat_row_read as a statement of tx (cat_tx_exec): the transaction's
 * first one carries its BEGIN and deferred claim in the same round trip. */
int cat_row_read_tx(struct cat_tx *tx, const char *wh_id, const struct cat_ns *ns, const char *name,
                    const char *known_location, struct cat_row *row, struct fl_err *err);

/* Gives a table row read without its text the text of its metadata file,
 * unless the row still points at known_location (the caller's version). */
int cat_row_text(struct cat_db *db, const struct cat_warehouse *wh, struct cat_row *row,
                 const char *known_location, struct fl_err *err) FL_MUST_CHECK;

/* cat_metadata_file_text for a warehouse known by name (read with tx,
 * or on a connection of the pool when tx is NULL). */
int cat_file_text_by_name(struct cat_db *db, struct cat_tx *tx, const char *wh_name,
                          const char *mloc, char **text, size_t *len,
                          struct fl_err *err) FL_MUST_CHECK;

/* The row of a view, locked FOR UPDATE when lock is set: 0 = found, -1 =
 * error (FL_ERR_NO_SUCH_VIEW or _NAMESPACE when absent). */
int cat_view_row_get(struct cat_conn *c, const char *wh_id, const struct cat_ns *ns,
                     const char *name, bool lock, struct cat_row *row,
                     struct fl_err *err) FL_MUST_CHECK;

/* 1 when the namespace (row id ns_id) holds a view named name, 0 when
 * not, -1 on error: table creation refuses a view's name before it judges
 * the location (a view's default location is the table's). */
int cat_view_exists(struct cat_conn *c, const char *ns_id, const char *name,
                    struct fl_err *err) FL_MUST_CHECK;

/* Inserts a new view row at `version` (the number of its metadata file);
 * FL_ERR_ALREADY_EXISTS when the name is
 * taken by a table or a view. */
int cat_view_row_insert(struct cat_conn *c, const char *wh_id, const char *ns_id, const char *id,
                        const char *name, const char *location, const char *metadata_location,
                        const char *metadata, int64_t version, struct fl_err *err) FL_MUST_CHECK;

/* Moves a view's pointer from version `expected` to expected + 1 (a
 * compare-and-swap; the caller holds the row lock, so a mismatch is a
 * concurrent change: FL_ERR_COMMIT_FAILED). */
int cat_view_row_move(struct cat_conn *c, const char *id, int64_t expected,
                      const char *metadata_location, const char *metadata, const char *location,
                      struct fl_err *err) FL_MUST_CHECK;

/* Statistics of a metadata version, for /metrics (-1 = unknown). */
struct cat_row_stats {
	int64_t records, files, bytes;
};

/* Inserts a new table row; FL_ERR_ALREADY_EXISTS when the name is taken by a
 * table or a view. */
int cat_row_insert(struct cat_conn *c, const char *wh_id, const char *ns_id, const char *id,
                   const char *name, const char *location, const char *metadata_location,
                   const char *metadata, int64_t version, const struct cat_row_stats *st,
                   struct fl_err *err) FL_MUST_CHECK;

/* One commit's writes to a locked row: the new pointer and stored
 * metadata, the commit event, and NOTIFY floe_table — one statement. */
struct cat_row_move {
	const char *id;
	const char *metadata_location;
	const char *metadata;
	int64_t version;
	const char *location;
	const struct cat_row_stats *stats;
	const struct cat_ns *ns;
	const char *name;
	int64_t snapshot_id; /* -1 = none */
	const char *operation;
	const char *request_id; /* may be NULL */
	const char *actor; /* the acting principal; NULL = Floe itself or auth none */
};
int cat_row_move(struct cat_conn *c, const struct cat_row_move *m,
                 struct fl_err *err) FL_MUST_CHECK;

/* cat_row_move as a compare-and-swap, for a row read without a lock: it
 * moves only when the row still has version `expected`, namespace ns_id and
 * m->name (the UPDATE waits for a concurrent holder of the row lock, then
 * judges the row as that one left it).  1 = moved; 0 = the row changed, was
 * renamed or dropped, and nothing was written; -1 = error.  Run outside a
 * transaction, the statement commits by itself, and a connection lost
 * during it is FL_ERR_COMMIT_STATE_UNKNOWN. */
int cat_row_move_if(struct cat_conn *c, const struct cat_row_move *m, const char *ns_id,
                    int64_t expected, struct fl_err *err) FL_MUST_CHECK;
/* cat_row_move_if outside a transaction with the notification of the move
 * behind it, in one round trip: the NOTIFY runs in a transaction of its
 * own after the move's has committed (tx.c: never inside it), and only
 * when the row then has the version the move wrote.  *notified says
 * whether it went; when it did not, the caller notifies as ever. */
int cat_row_move_if_notify(struct cat_conn *c, const struct cat_row_move *m, const char *ns_id,
                           int64_t expected, bool *notified, struct fl_err *err) FL_MUST_CHECK;

/* cat_row_move_if in two halves, inside the write scope s (a transaction
 * of its own, begun, or a savepoint of the caller's, whose SAVEPOINT rides
 * in front): _send sends the statement without waiting (0, or -1 with err
 * when it could not be sent); _recv waits for it and returns what
 * cat_row_move_if returns.  The caller does its own work in between
 * (commit.c: the metadata file is written while PostgreSQL runs the
 * UPDATE) and uses nothing else on s; the move is visible only once the
 * transaction commits. */
int cat_row_move_if_send(struct cat_scope *s, const struct cat_row_move *m, const char *ns_id,
                         int64_t expected, struct fl_err *err) FL_MUST_CHECK;
int cat_row_move_if_recv(struct cat_scope *s, struct fl_err *err) FL_MUST_CHECK;

/* Takes the warehouse's transaction advisory lock, which serializes table
 * creation and location changes within a warehouse. */
int cat_warehouse_lock(struct cat_conn *c, const char *wh_id, struct fl_err *err) FL_MUST_CHECK;

/* The longest table or view location, in bytes (the S3 profile's bound). */
#define CAT_LOCATION_MAX 1024

/* FL_ERR_BAD_REQUEST when location is longer than CAT_LOCATION_MAX, lies
 * outside the warehouse or overlaps another table's location (excluding the
 * table exclude_id). Serializes location changes per warehouse with a
 * transaction advisory lock. */
int cat_location_check(struct cat_conn *c, const struct cat_warehouse *wh, const char *location,
                       const char *exclude_id, struct fl_err *err) FL_MUST_CHECK;

/* Appends the commit event of one table change. */
int cat_event_insert(struct cat_conn *c, const char *table_id, const char *wh_id,
                     const struct cat_ns *ns, const char *name, int64_t version,
                     const char *metadata_location, int64_t snapshot_id, const char *operation,
                     const char *request_id, const char *actor, struct fl_err *err) FL_MUST_CHECK;

/* An Idempotency-Key claim (idempotency.c) that a transaction sends with
 * its BEGIN, and its outcome.  A deferred claim rides in front of the
 * transaction's first statement sent by cat_tx_exec (one round trip for
 * BEGIN, claim and statement); any other first use of the transaction
 * sends BEGIN and the claim on their own first.  Until the claim has been
 * judged CAT_CLAIMED, every use of the transaction fails (cat_claim_stop):
 * nothing runs under a key that is not this request's. */
enum cat_claim_state { CAT_CLAIM_PENDING, CAT_CLAIMED, CAT_CLAIM_RECORD, CAT_CLAIM_FAILED };

struct cat_claim {
	enum cat_claim_state state;
	char *key, *method, *route;
	char fph[70], life[24], stmt[16];
	const char *params[5];
	struct cat_idem rec; /* CAT_CLAIM_RECORD: the stored response */
	struct fl_err err; /* CAT_CLAIM_FAILED: why */
};

void cat_claim_free(struct cat_claim *cl);
/* The claim's statement, prepared on c. */
struct cat_pipe_q cat_claim_q(struct cat_conn *c, struct cat_claim *cl);
/* Judges the claim's result r (cleared here; NULL: none came), reading
 * the stored response when the key has one: 0 when claimed, else -1. */
int cat_claim_judge(struct cat_conn *c, struct cat_claim *cl, PGresult *r);
/* 0 when claimed; else -1 and err: the claim's failure, or FL_ERR_CONFLICT
 * saying the key's stored response is to be replayed. */
int cat_claim_stop(const struct cat_claim *cl, struct fl_err *err);

/* The transaction's deferred claim (it takes cl), and the claim or NULL. */
void cat_tx_claim_set(struct cat_tx *tx, struct cat_claim *cl);
struct cat_claim *cat_tx_claim(struct cat_tx *tx);

/* The connection a transaction pins, its BEGIN sent. */
struct cat_conn *cat_tx_conn(struct cat_tx *tx);

/* Runs sql in tx as cat_exec does; the transaction's first statement
 * carries its deferred BEGIN (and deferred claim) in the same round trip. */
PGresult *cat_tx_exec(struct cat_tx *tx, const char *sql, int n, const char *const *params,
                      struct fl_err *err);

/* cat_tx_commit with last run just before the COMMIT, in the same round
 * trip.  A failure of last is definite (FL_ERR_INTERNAL; the COMMIT is not
 * run); a lost connection is FL_ERR_COMMIT_STATE_UNKNOWN.  Frees tx. */
int cat_tx_commit_after(struct cat_tx *tx, const struct cat_pipe_q *last,
                        struct fl_err *err) FL_MUST_CHECK;

/* Adds ns to the transaction's idempotency time (reported as
 * CAT_STAGE_IDEMPOTENCY when a table commit ran in it). */
void cat_tx_idem_time(struct cat_tx *tx, int64_t ns);

/* A result column known to hold an integer. */
static inline int64_t cat_i64(const char *s)
{
	return strtoll(s, NULL, 10);
}

/* Page tokens: opaque, signed with the server secret (pagetoken.c). */
char *cat_page_token_make(const struct cat_db *db, const json_t *cursor);
int cat_page_token_parse(const struct cat_db *db, const char *token, json_t **cursor,
                         struct fl_err *err) FL_MUST_CHECK;

/* ---- a metadata document as the row stores it (doc.c) ---- */

/* What table_entry.metadata stores for text (NULL: NULL): text itself or,
 * packed, *owned, which the caller frees once the statement is sent. */
const char *cat_doc_pack(const char *text, char **owned);
/* Whether a stored value of len bytes is a packed document. */
bool cat_doc_packed(const char *v, size_t len);
/* The text of a packed stored value: *out (malloc'd, NUL-terminated) and
 * *out_len; -1 with err set when it is not one. */
int cat_doc_unpack(const char *v, size_t len, char **out, size_t *out_len, struct fl_err *err);
/* The same in two steps, for a caller that has the text's room to fill:
 * cat_doc_open reads the frame of a packed stored value and its text's
 * size; cat_doc_inflate writes exactly that many bytes to dst (no NUL
 * added) and closes the frame, as cat_doc_close does, whatever it returns. */
struct cat_doc_frame {
	unsigned char *z;
	size_t zn, size;
};
int cat_doc_open(const char *v, size_t len, struct cat_doc_frame *f, struct fl_err *err);
int cat_doc_inflate(struct cat_doc_frame *f, char *dst, struct fl_err *err);
void cat_doc_close(struct cat_doc_frame *f);

#endif
