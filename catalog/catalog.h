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

#include "err.h"

struct cat_db;

/* Opens a pool of `size` connections (connected lazily, the first one
 * eagerly so that a wrong URL fails at startup).  The conninfo string is
 * kept privately and never appears in messages. */
int cat_db_open(const char *conninfo, int size, struct cat_db **out,
                struct fl_err *err) FL_MUST_CHECK;

/* Closes every connection.  Callers must have stopped using the pool. */
void cat_db_close(struct cat_db *db);

/* Pool gauges for /metrics. */
void cat_db_stats(struct cat_db *db, int *in_use, int *idle, int *waiting);

/* Checks that the database answers and its schema is this binary's. */
int cat_db_ready(struct cat_db *db, struct fl_err *err) FL_MUST_CHECK;

/* Applies pending migrations under an advisory lock, so replicas starting
 * together apply each file once.  Refuses (FL_ERR_UNSUPPORTED) a database whose
 * schema is newer than this binary.  *applied = number of files applied. */
int cat_db_migrate(const char *conninfo, int *applied, struct fl_err *err) FL_MUST_CHECK;

/* The schema version this binary carries (the number of migrations). */
int cat_schema_version(void);

/* Loads (creating on first use) the server-wide secret used to sign page
 * tokens; call once after migrating. */
int cat_db_load_secret(struct cat_db *db, struct fl_err *err) FL_MUST_CHECK;

/* ---- warehouses ---- */

struct cat_warehouse {
	char id[37];
	char name[256];
	char location[1024]; /* storage root, "file:///…" or "s3://…", no trailing '/' */
	char storage_type[16];
};

/* Creates a warehouse from {name, storage-profile:{type, location}} and
 * returns its JSON.  FL_ERR_ALREADY_EXISTS when the name is taken. */
int cat_warehouse_create(struct cat_db *db, const json_t *req, json_t **out,
                         struct fl_err *err) FL_MUST_CHECK;

/* Creates the named file warehouse when it does not exist (idempotent). */
int cat_warehouse_ensure(struct cat_db *db, const char *name, const char *location,
                         struct fl_err *err) FL_MUST_CHECK;

/* Fills *out; FL_ERR_NO_SUCH_WAREHOUSE when absent. */
int cat_warehouse_get(struct cat_db *db, const char *name, struct cat_warehouse *out,
                      struct fl_err *err) FL_MUST_CHECK;

/* {warehouses:[…]} sorted by name, and one warehouse's JSON. */
int cat_warehouse_list(struct cat_db *db, json_t **out, struct fl_err *err) FL_MUST_CHECK;
int cat_warehouse_get_json(struct cat_db *db, const char *name, json_t **out,
                           struct fl_err *err) FL_MUST_CHECK;

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
int cat_namespace_create(struct cat_db *db, const char *wh_id, const struct cat_ns *ns,
                         const json_t *props, json_t **out, struct fl_err *err) FL_MUST_CHECK;

/* *out = {namespace, properties}; FL_ERR_NO_SUCH_NAMESPACE when absent. */
int cat_namespace_load(struct cat_db *db, const char *wh_id, const struct cat_ns *ns, json_t **out,
                       struct fl_err *err) FL_MUST_CHECK;

/* Drops an empty namespace: FL_ERR_NAMESPACE_NOT_EMPTY when it holds
 * namespaces or tables or views. */
int cat_namespace_drop(struct cat_db *db, const char *wh_id, const struct cat_ns *ns,
                       struct fl_err *err) FL_MUST_CHECK;

/* Applies removals then updates atomically; *out = {updated, removed, missing}.
 * A key both removed and updated is FL_ERR_UNPROCESSABLE.  The resulting
 * property count must not exceed max_props (FL_ERR_BAD_REQUEST). */
int cat_namespace_update_props(struct cat_db *db, const char *wh_id, const struct cat_ns *ns,
                               const json_t *removals, const json_t *updates, long max_props,
                               json_t **out, struct fl_err *err) FL_MUST_CHECK;

/* Lists the direct children of parent (n = 0 for top level) in byte order of
 * their levels, at most page_size of them after page_token (NULL = start).
 * *out = {namespaces:[…], next-page-token: token|null}.  A token that was not
 * issued by this catalog is FL_ERR_BAD_REQUEST.  A missing parent is
 * FL_ERR_NO_SUCH_NAMESPACE. */
int cat_namespace_list(struct cat_db *db, const char *wh_id, const struct cat_ns *parent,
                       const char *page_token, long page_size, json_t **out,
                       struct fl_err *err) FL_MUST_CHECK;

#endif
