/* feed.c - the feed tables: definitions, their state, and what GET shows of
 * the ledger, batches and spool.
 *
 * A definition is stored as cat_feed_def_check normalized it; the warehouse
 * id, namespace and table name are copied into columns so that the workers
 * and the lists never parse jsonb to find a feed's table. */
#include <stdio.h>
#include <string.h>

#include "db_int.h"
#include "feed.h"
#include "json.h"

#define TS(col) "to_char(" col " AT TIME ZONE 'UTC', 'YYYY-MM-DD\"T\"HH24:MI:SS.MS\"Z\"')"

/* The columns every view of a feed reads, in this order. */
#define FEED_COLS                                                           \
	"f.name, f.definition::text, f.state, " TS("f.created_at") ", " TS( \
	        "f.updated_at") ", f.last_error, f.failures, " TS("f.next_run_at")

/* What GET adds: the spool backlog and the ten newest batches. */
#define FEED_DETAIL                                                                                            \
	", (SELECT coalesce(sum(s.bytes), 0) FROM feed_spool s WHERE s.feed_id = f.id AND s.batch_id IS NULL)" \
	", (SELECT count(*) FROM feed_spool s WHERE s.feed_id = f.id AND s.batch_id IS NULL)"                  \
	", (SELECT coalesce(json_agg(json_build_object('batch-id', b.batch_id, 'outcome', b.outcome,"          \
	"     'objects', b.objects, 'rows-committed', b.rows_ok, 'rows-dead-lettered', b.rows_bad,"            \
	"     'bytes-read', b.bytes_in, 'bytes-written', b.bytes_out, 'snapshot-id', b.snapshot_id,"           \
	"     'forced', b.forced, 'error', b.error, 'started-at', " TS(                                        \
	        "b.started_at") ","                                                                            \
	                        "     'finished-at', " TS(                                                     \
	                                "b.finished_at") ") ORDER BY b.id DESC), '[]')::text"                  \
	                                                 "   FROM (SELECT * FROM feed_batch WHERE feed_id = f.id ORDER BY id DESC LIMIT 10) b)"

static json_t *feed_json(PGresult *r, int i, bool detail)
{
	json_t *def = json_loads(PQgetvalue(r, i, 1), 0, NULL), *o;

	o = json_pack("{s:s, s:o, s:s, s:s, s:s, s:I, s:s}", "name", PQgetvalue(r, i, 0),
	              "definition", def ? def : json_object(), "state", PQgetvalue(r, i, 2),
	              "created-at", PQgetvalue(r, i, 3), "updated-at", PQgetvalue(r, i, 4),
	              "failures", (json_int_t)cat_i64(PQgetvalue(r, i, 6)), "next-run-at",
	              PQgetvalue(r, i, 7));
	if (o == NULL)
		return NULL;
	json_object_set_new(o, "last-error",
	                    PQgetisnull(r, i, 5) ? json_null() : json_string(PQgetvalue(r, i, 5)));
	if (detail) {
		json_t *batches = json_loads(PQgetvalue(r, i, 10), 0, NULL);

		json_object_set_new(o, "backlog",
		                    json_pack("{s:I, s:I}", "spooled-bytes",
		                              (json_int_t)cat_i64(PQgetvalue(r, i, 8)),
		                              "spooled-requests",
		                              (json_int_t)cat_i64(PQgetvalue(r, i, 9))));
		json_object_set_new(o, "last-batches", batches ? batches : json_array());
	}
	return o;
}

static int not_found(const char *name, struct fl_err *err)
{
	return fl_err_set(err, FL_ERR_NOT_FOUND, "feed '%.200s' does not exist", name);
}

int cat_feed_get(struct cat_db *db, const char *name, json_t **out, struct fl_err *err)
{
	const char *params[1] = {name};
	struct cat_conn *c;
	PGresult *r;
	int rc = -1;

	if (cat_conn_get(db, &c, err) != 0)
		return -1;
	r = cat_exec(c, "SELECT " FEED_COLS FEED_DETAIL " FROM feed f WHERE f.name = $1", 1, params,
	             err);
	cat_conn_put(db, c);
	if (r == NULL)
		return -1;
	if (PQntuples(r) == 0)
		not_found(name, err);
	else if ((*out = feed_json(r, 0, true)) == NULL)
		fl_err_set(err, FL_ERR_NOMEM, "out of memory");
	else
		rc = 0;
	PQclear(r);
	return rc;
}

int cat_feed_list(struct cat_db *db, json_t **out, struct fl_err *err)
{
	struct cat_conn *c;
	PGresult *r;
	json_t *arr;

	if (cat_conn_get(db, &c, err) != 0)
		return -1;
	r = cat_exec(c, "SELECT " FEED_COLS " FROM feed f ORDER BY f.name", 0, NULL, err);
	cat_conn_put(db, c);
	if (r == NULL)
		return -1;
	arr = json_array();
	for (int i = 0; arr != NULL && i < PQntuples(r); i++)
		json_array_append_new(arr, feed_json(r, i, false));
	PQclear(r);
	*out = arr ? json_pack("{s:o}", "feeds", arr) : NULL;
	return *out ? 0 : fl_err_set(err, FL_ERR_NOMEM, "out of memory");
}

/* The feed's table must exist, or (create-table) at least its namespace. */
static int check_target(struct cat_db *db, const json_t *def, const struct cat_warehouse *wh,
                        const struct cat_ns *ns, const char *name, struct fl_err *err)
{
	char *mloc = NULL, *meta = NULL, type[16];
	json_t *nsj = NULL;

	if (cat_table_load(db, NULL, wh->name, ns, name, &mloc, &meta, type, err) == 0) {
		free(mloc);
		free(meta);
		return 0;
	}
	if (err->kind != FL_ERR_NO_SUCH_TABLE)
		return -1;
	if (!json_is_true(json_object_get(def, "create-table")))
		return fl_err_prefix(err, "feed table (set create-table to create it)");
	if (cat_namespace_load(db, NULL, wh->id, ns, &nsj, err) != 0)
		return -1;
	json_decref(nsj);
	return 0;
}

int cat_feed_create(struct cat_db *db, const json_t *req, const char *default_wh, json_t **out,
                    struct fl_err *err)
{
	json_t *def = NULL;
	struct cat_warehouse wh;
	struct cat_conn *c = NULL;
	char **levels = NULL, *arr = NULL, *text = NULL;
	const char *name, *tname;
	int nlevels, rc = -1;
	PGresult *r;

	if (cat_feed_def_check(req, default_wh, &def, err) != 0)
		return -1;
	name = json_string_value(json_object_get(def, "name"));
	if (cat_warehouse_get(db, NULL, json_string_value(json_object_get(def, "warehouse")), &wh,
	                      err) != 0 ||
	    cat_feed_table_split(json_string_value(json_object_get(def, "table")), &levels,
	                         &nlevels, &tname, err) != 0)
		goto out;
	struct cat_ns ns = {(const char *const *)levels, nlevels};
	if (check_target(db, def, &wh, &ns, tname, err) != 0)
		goto out;
	arr = cat_text_array(&ns, nlevels);
	text = fl_json_dump(def, NULL);
	if (arr == NULL || text == NULL) {
		fl_err_set(err, FL_ERR_NOMEM, "out of memory");
		goto out;
	}
	if (cat_conn_get(db, &c, err) != 0)
		goto out;
	const char *params[5] = {name, wh.id, arr, tname, text};
	r = cat_exec(c,
	             "INSERT INTO feed (name, warehouse_id, namespace, table_name, definition)"
	             " VALUES ($1, $2::uuid, $3::text[], $4, $5::jsonb)",
	             5, params, err);
	cat_conn_put(db, c);
	if (r == NULL) {
		if (err->kind == FL_ERR_ALREADY_EXISTS)
			fl_err_set(err, FL_ERR_ALREADY_EXISTS, "feed '%s' already exists", name);
		goto out;
	}
	PQclear(r);
	rc = cat_feed_get(db, name, out, err);
out:
	free(arr);
	free(text);
	free(levels);
	json_decref(def);
	return rc;
}

int cat_feed_set_paused(struct cat_db *db, const char *name, bool paused, json_t **out,
                        struct fl_err *err)
{
	const char *params[2] = {name, paused ? "paused" : "active"};
	struct cat_conn *c;
	PGresult *r;
	bool found;

	if (cat_conn_get(db, &c, err) != 0)
		return -1;
	r = cat_exec(c,
	             "UPDATE feed SET state = $2, updated_at = now(),"
	             " next_run_at = CASE WHEN $2 = 'active' THEN now() ELSE next_run_at END,"
	             " failures = CASE WHEN $2 = 'active' THEN 0 ELSE failures END"
	             " WHERE name = $1 RETURNING id",
	             2, params, err);
	cat_conn_put(db, c);
	if (r == NULL)
		return -1;
	found = PQntuples(r) == 1;
	PQclear(r);
	if (!found)
		return not_found(name, err);
	return cat_feed_get(db, name, out, err);
}

int cat_feed_delete(struct cat_db *db, const char *name, struct fl_err *err)
{
	const char *params[1] = {name};
	struct cat_conn *c;
	PGresult *r;
	bool found;

	if (cat_conn_get(db, &c, err) != 0)
		return -1;
	r = cat_exec(c, "DELETE FROM feed WHERE name = $1 RETURNING id", 1, params, err);
	cat_conn_put(db, c);
	if (r == NULL)
		return -1;
	found = PQntuples(r) == 1;
	PQclear(r);
	return found ? 0 : not_found(name, err);
}
