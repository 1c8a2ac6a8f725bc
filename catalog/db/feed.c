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
#include "buf.h"
#include "clock.h"
#include "json.h"

#define TS(col) "to_char(" col " AT TIME ZONE 'UTC', 'YYYY-MM-DD\"T\"HH24:MI:SS.MS\"Z\"')"

/* The columns every view of a feed reads, in this order. */
#define FEED_COLS                                                           \
	"f.name, f.definition::text, f.state, " TS("f.created_at") ", " TS( \
	        "f.updated_at") ", f.last_error, f.failures, " TS("f.next_run_at")

/* What GET adds: the spool backlog, the ten newest batches and the pending
 * replay. */
/* clang-format off */
#define FEED_DETAIL \
	", (SELECT coalesce(sum(s.bytes), 0) FROM feed_spool s WHERE s.feed_id = f.id AND s.batch_id IS NULL)" \
	", (SELECT count(*) FROM feed_spool s WHERE s.feed_id = f.id AND s.batch_id IS NULL)" \
	", (SELECT coalesce(json_agg(json_build_object('batch-id', b.batch_id, 'outcome', b.outcome," \
	"     'objects', b.objects, 'rows-committed', b.rows_ok, 'rows-dead-lettered', b.rows_bad," \
	"     'bytes-read', b.bytes_in, 'bytes-written', b.bytes_out, 'snapshot-id', b.snapshot_id," \
	"     'forced', b.forced, 'error', b.error, 'started-at', " TS("b.started_at") "," \
	"     'finished-at', " TS("b.finished_at") ") ORDER BY b.id DESC), '[]')::text" \
	"   FROM (SELECT * FROM feed_batch WHERE feed_id = f.id ORDER BY id DESC LIMIT 10) b)" \
	", f.replay::text"
/* clang-format on */

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
		json_object_set_new(o, "pending-replay",
		                    PQgetisnull(r, i, 11)
		                            ? json_null()
		                            : json_loads(PQgetvalue(r, i, 11), 0, NULL));
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
		json_t *m = json_loads(meta, 0, NULL);
		int rc = m != NULL
		                 ? cat_feed_def_check_table(def, m, err)
		                 : fl_err_set(err, FL_ERR_INTERNAL, "stored metadata is not JSON");

		json_decref(m);
		free(mloc);
		free(meta);
		return rc;
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
	if (cat_feed_def_check_warehouse(def, &wh, err) != 0 ||
	    check_target(db, def, &wh, &ns, tname, err) != 0)
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

/* ---- the workers' side ---- */

int cat_feed_claim(struct cat_db *db, struct cat_feed_job *job, bool *found, struct fl_err *err)
{
	struct cat_tx *tx = NULL;
	PGresult *r = NULL;
	char wh_name[256];
	int rc = -1;

	*found = false;
	memset(job, 0, sizeof(*job));
	if (cat_tx_begin(db, &tx, err) != 0)
		return -1;
	/* The advisory lock is keyed by the table (warehouse, namespace, name):
	 * two feeds on one table take turns, and a feed whose table is busy is
	 * skipped, not waited for. */
	r = cat_exec(cat_tx_conn(tx),
	             "SELECT f.id, f.name, f.definition::text, w.name, f.failures, f.replay::text"
	             " FROM feed f"
	             " JOIN warehouse w ON w.id = f.warehouse_id"
	             " WHERE f.state = 'active' AND f.next_run_at <= now()"
	             " ORDER BY f.next_run_at LIMIT 8 FOR UPDATE OF f SKIP LOCKED",
	             0, NULL, err);
	if (r == NULL)
		goto out;
	for (int i = 0; i < PQntuples(r) && !*found; i++) {
		const char *p[1] = {PQgetvalue(r, i, 0)};
		PGresult *l = cat_exec(
		        cat_tx_conn(tx),
		        "SELECT pg_try_advisory_xact_lock(hashtext('floe-feed-table'),"
		        " hashtext(warehouse_id::text || '/' || array_to_string(namespace, chr(31))"
		        " || '/' || table_name)) FROM feed WHERE id = $1::bigint",
		        1, p, err);

		if (l == NULL)
			goto out;
		if (PQntuples(l) == 1 && strcmp(PQgetvalue(l, 0, 0), "t") == 0) {
			job->id = cat_i64(PQgetvalue(r, i, 0));
			snprintf(job->name, sizeof(job->name), "%s", PQgetvalue(r, i, 1));
			job->def = json_loads(PQgetvalue(r, i, 2), 0, NULL);
			snprintf(wh_name, sizeof(wh_name), "%s", PQgetvalue(r, i, 3));
			job->failures = (int)cat_i64(PQgetvalue(r, i, 4));
			if (!PQgetisnull(r, i, 5))
				job->replay = json_loads(PQgetvalue(r, i, 5), 0, NULL);
			*found = true;
		}
		PQclear(l);
	}
	if (!*found) {
		rc = 0;
		goto out;
	}
	if (job->def == NULL) {
		fl_err_set(err, FL_ERR_INTERNAL, "feed %s: stored definition is not JSON",
		           job->name);
		goto out;
	}
	if (cat_warehouse_get(db, tx, wh_name, &job->wh, err) != 0)
		goto out;
	job->tx = tx;
	tx = NULL;
	rc = 0;
out:
	PQclear(r);
	if (tx != NULL) {
		cat_tx_abort(tx);
		if (rc != 0 || !*found) {
			json_decref(job->def);
			json_decref(job->replay);
			job->def = job->replay = NULL;
			*found = false;
		}
	}
	return rc;
}

int cat_feed_job_end(struct cat_feed_job *job, bool ok, struct fl_err *err)
{
	int rc = 0;

	if (job->tx != NULL) {
		if (ok)
			rc = cat_tx_commit(job->tx, err);
		else
			cat_tx_abort(job->tx);
	}
	job->tx = NULL;
	json_decref(job->def);
	json_decref(job->replay);
	job->def = job->replay = NULL;
	return rc;
}

int cat_feed_ledger_seen(struct cat_feed_job *job, const struct cat_feed_object *objs, size_t n,
                         bool *seen, struct fl_err *err)
{
	const char **keys = calloc(n ? n : 1, sizeof(char *)),
	           **etags = calloc(n ? n : 1, sizeof(char *));
	struct fl_buf sizes = FL_BUF_INIT;
	char id[24], *karr = NULL, *earr = NULL;
	PGresult *r = NULL;
	int rc = -1;

	/* One round trip for the whole listing: the ledger rows that match, by
	 * position in the arrays. */
	for (size_t i = 0; i < n; i++)
		seen[i] = false;
	if (n == 0) {
		rc = 0;
		goto out;
	}
	if (keys == NULL || etags == NULL || fl_buf_puts(&sizes, "{") != 0)
		goto nomem;
	for (size_t i = 0; i < n; i++) {
		keys[i] = objs[i].key;
		etags[i] = objs[i].etag;
		if (fl_buf_printf(&sizes, i ? ",%lld" : "%lld", (long long)objs[i].size) != 0)
			goto nomem;
	}
	struct cat_ns kns = {keys, (int)n}, ens = {etags, (int)n};
	karr = cat_text_array(&kns, (int)n);
	earr = cat_text_array(&ens, (int)n);
	if (karr == NULL || earr == NULL || fl_buf_puts(&sizes, "}") != 0)
		goto nomem;
	snprintf(id, sizeof(id), "%lld", (long long)job->id);
	const char *p[4] = {id, karr, sizes.data, earr};
	r = cat_exec(
	        cat_tx_conn(job->tx),
	        "SELECT u.i FROM unnest($2::text[], $3::bigint[], $4::text[])"
	        " WITH ORDINALITY AS u(k, s, e, i) WHERE EXISTS (SELECT 1 FROM feed_object o"
	        " WHERE o.feed_id = $1::bigint AND o.key = u.k AND o.size = u.s AND o.etag = u.e)",
	        4, p, err);
	if (r == NULL)
		goto out;
	for (int i = 0; i < PQntuples(r); i++) {
		int64_t at = cat_i64(PQgetvalue(r, i, 0));

		if (at >= 1 && (size_t)at <= n)
			seen[at - 1] = true;
	}
	rc = 0;
	goto out;
nomem:
	fl_err_set(err, FL_ERR_NOMEM, "out of memory");
out:
	PQclear(r);
	free(keys);
	free(etags);
	free(karr);
	free(earr);
	fl_buf_free(&sizes);
	return rc;
}

int cat_feed_ledger_add(struct cat_feed_job *job, const char *batch_id,
                        const struct cat_feed_object *objs, size_t n, struct fl_err *err)
{
	char id[24], size[24], ok[24], bad[24];

	snprintf(id, sizeof(id), "%lld", (long long)job->id);
	for (size_t i = 0; i < n; i++) {
		const char *p[8] = {id,       objs[i].key,     size, objs[i].etag,
		                    batch_id, objs[i].outcome, ok,   bad};
		PGresult *r;

		snprintf(size, sizeof(size), "%lld", (long long)objs[i].size);
		snprintf(ok, sizeof(ok), "%lld", (long long)objs[i].rows_ok);
		snprintf(bad, sizeof(bad), "%lld", (long long)objs[i].rows_bad);
		r = cat_exec(cat_tx_conn(job->tx),
		             "INSERT INTO feed_object (feed_id, key, size, etag, batch_id, outcome,"
		             " rows_ok, rows_bad) VALUES ($1::bigint, $2, $3::bigint, $4, $5, $6,"
		             " $7::bigint, $8::bigint)",
		             8, p, err);
		if (r == NULL)
			return fl_err_prefix(err, "feed %s: ledger", job->name);
		PQclear(r);
	}
	return 0;
}

int cat_feed_dead_letter_add(struct cat_feed_job *job, const char *batch_id, const char *key,
                             bool whole_object, int64_t rows_bad, const char *location,
                             const char *reason, struct fl_err *err)
{
	char id[24], bad[24];
	const char *p[7] = {id, batch_id, key, whole_object ? "t" : "f", bad, location, reason};
	PGresult *r;

	snprintf(id, sizeof(id), "%lld", (long long)job->id);
	snprintf(bad, sizeof(bad), "%lld", (long long)rows_bad);
	r = cat_exec(
	        cat_tx_conn(job->tx),
	        "INSERT INTO feed_dead_letter (feed_id, batch_id, key, whole_object, rows_bad,"
	        " location, reason) VALUES ($1::bigint, $2, $3, $4::boolean, $5::bigint, $6, $7)",
	        7, p, err);
	if (r == NULL)
		return -1;
	PQclear(r);
	return 0;
}

/* Inserts a batch row on c. */
static int batch_insert(struct cat_conn *c, int64_t feed_id, const struct cat_feed_batch *b,
                        struct fl_err *err)
{
	char id[24], objects[24], ok[24], bad[24], in[24], out[24], snap[24], started[24];
	const char *p[11] = {id,
	                     b->batch_id,
	                     b->outcome,
	                     objects,
	                     ok,
	                     bad,
	                     in,
	                     out,
	                     b->snapshot_id ? snap : NULL,
	                     b->forced ? "t" : "f",
	                     b->error};
	const char *p2[12];
	PGresult *r;

	snprintf(id, sizeof(id), "%lld", (long long)feed_id);
	snprintf(objects, sizeof(objects), "%d", b->objects);
	snprintf(ok, sizeof(ok), "%lld", (long long)b->rows_ok);
	snprintf(bad, sizeof(bad), "%lld", (long long)b->rows_bad);
	snprintf(in, sizeof(in), "%lld", (long long)b->bytes_in);
	snprintf(out, sizeof(out), "%lld", (long long)b->bytes_out);
	snprintf(snap, sizeof(snap), "%lld", (long long)b->snapshot_id);
	snprintf(started, sizeof(started), "%lld", (long long)b->started_ms);
	memcpy(p2, p, sizeof(p));
	p2[11] = started;
	r = cat_exec(
	        c,
	        "INSERT INTO feed_batch (feed_id, batch_id, outcome, objects, rows_ok, rows_bad,"
	        " bytes_in, bytes_out, snapshot_id, forced, error, started_at) VALUES"
	        " ($1::bigint, $2, $3, $4::integer, $5::bigint, $6::bigint, $7::bigint,"
	        " $8::bigint, $9::bigint, $10::boolean, $11,"
	        " to_timestamp($12::bigint / 1000.0))",
	        12, p2, err);
	if (r == NULL)
		return -1;
	PQclear(r);
	return 0;
}

int cat_feed_batch_done(struct cat_feed_job *job, const struct cat_feed_batch *b, int64_t backlog,
                        int64_t after_s, struct fl_err *err)
{
	static const struct cat_feed_batch none = {0};
	char v[10][24];
	const char *p[10];
	PGresult *r;

	if (b != NULL && batch_insert(cat_tx_conn(job->tx), job->id, b, err) != 0)
		return -1;
	if (b == NULL)
		b = &none;
	snprintf(v[0], sizeof(v[0]), "%lld", (long long)job->id);
	snprintf(v[1], sizeof(v[1]), "%lld", (long long)after_s);
	snprintf(v[2], sizeof(v[2]), "%lld", (long long)backlog);
	snprintf(v[3], sizeof(v[3]), "%lld", (long long)b->rows_ok);
	snprintf(v[4], sizeof(v[4]), "%lld", (long long)b->bytes_in);
	snprintf(v[5], sizeof(v[5]), "%lld", (long long)b->bytes_out);
	snprintf(v[6], sizeof(v[6]), "%d", b->snapshots);
	snprintf(v[7], sizeof(v[7]), "%lld", (long long)(b->objects > 0 ? b->started_ms : 0));
	snprintf(v[8], sizeof(v[8]), "%lld", (long long)b->rows_bad);
	snprintf(v[9], sizeof(v[9]), "%lld", (long long)b->dead_objects);
	for (int i = 0; i < 10; i++)
		p[i] = v[i];
	r = cat_exec(
	        cat_tx_conn(job->tx),
	        "UPDATE feed SET failures = 0, last_error = NULL,"
	        " next_run_at = now() + make_interval(secs => $2::bigint),"
	        " backlog_objects = $3::bigint, rows_committed = rows_committed + $4::bigint,"
	        " bytes_read = bytes_read + $5::bigint, bytes_written = bytes_written + $6::bigint,"
	        " batches_committed = batches_committed + $7::integer,"
	        " batch_seconds = batch_seconds + CASE WHEN $8::bigint = 0 THEN 0 ELSE"
	        "   extract(epoch FROM clock_timestamp() - to_timestamp($8::bigint / 1000.0)) END,"
	        " dead_letter_rows = dead_letter_rows + $9::bigint,"
	        " dead_letter_objects = dead_letter_objects + $10::bigint"
	        " WHERE id = $1::bigint",
	        10, p, err);
	if (r == NULL)
		return -1;
	PQclear(r);
	r = cat_exec(cat_tx_conn(job->tx),
	             "DELETE FROM feed_batch WHERE feed_id = $1::bigint AND id < (SELECT id FROM"
	             " feed_batch WHERE feed_id = $1::bigint ORDER BY id DESC OFFSET 99 LIMIT 1)",
	             1, p, err);
	if (r == NULL)
		return -1;
	PQclear(r);
	return 0;
}

int cat_feed_failed(struct cat_db *db, int64_t feed_id, const struct cat_feed_batch *b,
                    int64_t max_retries, bool *paused, struct fl_err *err)
{
	char id[24], max[24];
	const char *p[3] = {id, max, b->error ? b->error : "unknown error"};
	struct cat_conn *c;
	PGresult *r;
	int rc = -1;

	*paused = false;
	snprintf(id, sizeof(id), "%lld", (long long)feed_id);
	snprintf(max, sizeof(max), "%lld", (long long)max_retries);
	if (cat_conn_get(db, &c, err) != 0)
		return -1;
	if (cat_exec_cmd(c, "BEGIN", err) != 0 || batch_insert(c, feed_id, b, err) != 0)
		goto out;
	r = cat_exec(
	        c,
	        "UPDATE feed SET failures = failures + 1, last_error = $3, updated_at = now(),"
	        " runs_failed = runs_failed + 1,"
	        " state = CASE WHEN failures + 1 > $2::integer THEN 'paused' ELSE state END,"
	        " next_run_at = now() + make_interval(secs => least(2 ^ least(failures + 1, 9), 300))"
	        " WHERE id = $1::bigint RETURNING state",
	        3, p, err);
	if (r == NULL)
		goto out;
	*paused = PQntuples(r) == 1 && strcmp(PQgetvalue(r, 0, 0), "paused") == 0;
	PQclear(r);
	rc = cat_exec_cmd(c, "COMMIT", err);
out:
	cat_conn_put(db, c);
	return rc;
}

/* ---- pushes ---- */

int cat_feed_spool_add(struct cat_db *db, struct cat_tx *tx, const char *name,
                       const char *content_type, const char *body, size_t n, const char *idem_key,
                       struct cat_feed_push *out, struct fl_err *err)
{
	char len[24], keep[24];
	const char *p[6] = {name, idem_key, content_type, body, len, keep};
	struct cat_scope sc;
	PGresult *r;
	bool ok = false;

	memset(out, 0, sizeof(*out));
	snprintf(len, sizeof(len), "%zu", n);
	snprintf(keep, sizeof(keep), "%d", CAT_FEED_SPOOL_KEEP_S);
	if (cat_scope_begin(db, tx, true, &sc, err) != 0)
		return -1;
	/* The feed row is share-locked so a delete cannot interleave. */
	r = cat_exec(
	        sc.c,
	        "WITH f AS (SELECT id, (definition->>'spool-max-bytes')::bigint AS max,"
	        "   definition->>'interval' AS iv FROM feed WHERE name = $1 FOR SHARE),"
	        " dup AS (SELECT 1 FROM feed_spool s, f WHERE s.feed_id = f.id AND s.idem_key = $2),"
	        " pending AS (SELECT coalesce(sum(s.bytes), 0) AS b FROM feed_spool s, f"
	        "   WHERE s.feed_id = f.id AND s.batch_id IS NULL),"
	        " ins AS (INSERT INTO feed_spool (feed_id, idem_key, content_type, body, bytes, expires_at)"
	        "   SELECT f.id, $2, $3, $4, $5::bigint, now() + make_interval(secs => $6::bigint)"
	        "   FROM f, pending WHERE NOT EXISTS (SELECT 1 FROM dup)"
	        "   AND pending.b + $5::bigint <= f.max"
	        "   ON CONFLICT (feed_id, idem_key) DO NOTHING RETURNING id)"
	        " SELECT (SELECT count(*) FROM f), (SELECT count(*) FROM dup), (SELECT count(*) FROM ins),"
	        "   (SELECT b FROM pending), (SELECT iv FROM f)",
	        6, p, err);
	if (r == NULL)
		goto out;
	if (cat_i64(PQgetvalue(r, 0, 0)) == 0) {
		PQclear(r);
		not_found(name, err);
		goto out;
	}
	out->duplicate = cat_i64(PQgetvalue(r, 0, 1)) > 0;
	out->full = !out->duplicate && cat_i64(PQgetvalue(r, 0, 2)) == 0;
	out->spooled_bytes =
	        cat_i64(PQgetvalue(r, 0, 3)) + (out->full || out->duplicate ? 0 : (int64_t)n);
	out->interval_s = fl_duration_parse(PQgetvalue(r, 0, 4));
	PQclear(r);
	ok = true;
out:
	return cat_scope_end(&sc, ok, err) == 0 ? 0 : -1;
}

int cat_feed_spool_take(struct cat_feed_job *job, int64_t max, int64_t max_bytes,
                        struct cat_spooled **out, size_t *n, struct fl_err *err)
{
	char id[24], lim[24];
	const char *p[2] = {id, lim};
	struct cat_spooled *v = NULL;
	PGresult *r;
	size_t k = 0;
	int64_t total = 0;

	*out = NULL;
	*n = 0;
	snprintf(id, sizeof(id), "%lld", (long long)job->id);
	snprintf(lim, sizeof(lim), "%lld", (long long)max);
	r = cat_exec(
	        cat_tx_conn(job->tx),
	        "SELECT id, content_type, body, bytes FROM feed_spool"
	        " WHERE feed_id = $1::bigint AND batch_id IS NULL ORDER BY id LIMIT $2::bigint",
	        2, p, err);
	if (r == NULL)
		return -1;
	v = calloc((size_t)PQntuples(r) + 1, sizeof(*v));
	if (v == NULL) {
		PQclear(r);
		return fl_err_set(err, FL_ERR_NOMEM, "out of memory");
	}
	for (int i = 0; i < PQntuples(r); i++) {
		int64_t bytes = cat_i64(PQgetvalue(r, i, 3));

		if (k > 0 && (strcmp(PQgetvalue(r, i, 1), v[0].content_type) != 0 ||
		              total + bytes > max_bytes))
			break;
		v[k].id = cat_i64(PQgetvalue(r, i, 0));
		v[k].content_type = strdup(PQgetvalue(r, i, 1));
		v[k].body = strdup(PQgetvalue(r, i, 2));
		v[k].bytes = bytes;
		if (v[k].content_type == NULL || v[k].body == NULL) {
			cat_feed_spooled_free(v, k + 1);
			PQclear(r);
			return fl_err_set(err, FL_ERR_NOMEM, "out of memory");
		}
		total += bytes;
		k++;
	}
	PQclear(r);
	*out = v;
	*n = k;
	return 0;
}

void cat_feed_spooled_free(struct cat_spooled *v, size_t n)
{
	for (size_t i = 0; v != NULL && i < n; i++) {
		free(v[i].content_type);
		free(v[i].body);
	}
	free(v);
}

int cat_feed_spool_landed(struct cat_feed_job *job, const char *batch_id, const int64_t *ids,
                          size_t n, struct fl_err *err)
{
	char id[24], one[24];
	const char *p[3] = {id, batch_id, one};
	PGresult *r;

	snprintf(id, sizeof(id), "%lld", (long long)job->id);
	for (size_t i = 0; i < n; i++) {
		snprintf(one, sizeof(one), "%lld", (long long)ids[i]);
		r = cat_exec(cat_tx_conn(job->tx),
		             "UPDATE feed_spool SET batch_id = $2, body = NULL"
		             " WHERE feed_id = $1::bigint AND id = $3::bigint AND batch_id IS NULL",
		             3, p, err);
		if (r == NULL)
			return -1;
		PQclear(r);
	}
	r = cat_exec(cat_tx_conn(job->tx),
	             "DELETE FROM feed_spool WHERE feed_id = $1::bigint AND batch_id IS NOT NULL"
	             " AND expires_at < now()",
	             1, p, err);
	if (r == NULL)
		return -1;
	PQclear(r);
	return 0;
}

/* ---- replays ---- */

int cat_feed_replay(struct cat_db *db, const char *name, const json_t *req, json_t **out,
                    struct fl_err *err)
{
	json_t *replay = NULL;
	char *text = NULL;
	struct cat_conn *c;
	PGresult *r;
	int rc = -1;

	if (cat_feed_replay_check(req, &replay, err) != 0)
		return -1;
	text = fl_json_dump(replay, NULL);
	json_decref(replay);
	if (text == NULL)
		return fl_err_set(err, FL_ERR_NOMEM, "out of memory");
	if (cat_conn_get(db, &c, err) != 0) {
		free(text);
		return -1;
	}
	const char *p[2] = {name, text};
	r = cat_exec(
	        c,
	        "WITH f AS (SELECT id, definition->'source'->>'type' AS type FROM feed"
	        "   WHERE name = $1 FOR UPDATE),"
	        " u AS (UPDATE feed SET replay = $2::jsonb, next_run_at = now(), updated_at = now()"
	        "   WHERE id IN (SELECT id FROM f WHERE type = 'directory') RETURNING id)"
	        " SELECT (SELECT count(*) FROM f), (SELECT count(*) FROM u), (SELECT type FROM f)",
	        2, p, err);
	cat_conn_put(db, c);
	free(text);
	if (r == NULL)
		return -1;
	if (cat_i64(PQgetvalue(r, 0, 0)) == 0)
		not_found(name, err);
	else if (cat_i64(PQgetvalue(r, 0, 1)) == 0)
		fl_err_set(err, FL_ERR_BAD_REQUEST,
		           "feed '%.128s' has a %s source; replays need a directory source", name,
		           PQgetvalue(r, 0, 2));
	else
		rc = 0;
	PQclear(r);
	return rc == 0 ? cat_feed_get(db, name, out, err) : -1;
}

int cat_feed_replay_progress(struct cat_feed_job *job, const json_t *replay, struct fl_err *err)
{
	char id[24], *text = replay ? fl_json_dump(replay, NULL) : NULL;
	const char *p[2] = {id, text};
	PGresult *r;

	if (replay != NULL && text == NULL)
		return fl_err_set(err, FL_ERR_NOMEM, "out of memory");
	snprintf(id, sizeof(id), "%lld", (long long)job->id);
	r = cat_exec(cat_tx_conn(job->tx),
	             "UPDATE feed SET replay = $2::jsonb WHERE id = $1::bigint", 2, p, err);
	free(text);
	if (r == NULL)
		return -1;
	PQclear(r);
	return 0;
}
