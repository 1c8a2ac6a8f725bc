/* maintenance.c - the maintenance queue, outcomes and table shapes
 * (migrations/0005_maintenance.sql; catalog/maintenance.h).
 *
 * A job is claimed in a transaction that keeps its row locked (FOR UPDATE
 * SKIP LOCKED, one row at a time so that a replica never holds jobs it
 * does not run) and takes a transaction-scoped advisory lock keyed by the
 * table, so two jobs of one table never run at once on any replicas.  The
 * transaction ends with the job: a replica that dies mid-run leaves the
 * job queued for another. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "db_int.h"
#include "json.h"
#include "log.h"
#include "maintenance.h"

#define TS(col) "to_char(" col " AT TIME ZONE 'UTC', 'YYYY-MM-DD\"T\"HH24:MI:SS.MS\"Z\"')"
#define MAX_REPORT_BYTES 65536 /* larger reports are not stored */

static int nomem(struct fl_err *err)
{
	return fl_err_set(err, FL_ERR_NOMEM, "out of memory");
}

/* Notes the maintenance properties of every table whose metadata changed
 * since the last pass (migrations/0007_maintenance_policy.sql): only those
 * tables' metadata is read, and only a document that names a maintenance
 * property is parsed.  A concurrent pass of another replica may note the
 * same tables: the newer version stays, and both insert in the order of
 * the tables' ids, so that neither waits for a row the other will wait
 * for (a deadlock). */
#define POLICY_INSERT "INSERT INTO table_maintenance_policy AS p (table_id, version, props)"
/* A note is replaced only by one of a newer version. */
#define POLICY_UPSERT                                                                              \
	" ON CONFLICT (table_id) DO UPDATE SET version = excluded.version, props = excluded.props" \
	"   WHERE p.version < excluded.version"
static const char policy_refresh_sql[] = POLICY_INSERT
        " SELECT t.id, t.version, CASE WHEN t.metadata LIKE '%floe.maintenance.%' THEN"
        "   (SELECT jsonb_object_agg(e.key, e.value)"
        "    FROM jsonb_each((t.metadata::jsonb)->'properties') e"
        "    WHERE e.key LIKE 'floe.maintenance.%') END"
        " FROM table_entry t LEFT JOIN table_maintenance_policy q ON q.table_id = t.id"
        " WHERE t.kind = 'TABLE' AND t.metadata IS NOT NULL"
        "   AND (q.table_id IS NULL OR q.version <> t.version)"
        " ORDER BY t.id" POLICY_UPSERT;

/* The same for tables whose metadata only its file holds (larger than the
 * inline limit): up to 64 of them a pass, their files read here, without
 * holding a connection meanwhile.  A file that cannot be read leaves the
 * table's note as it was, for the next pass. */
static const char policy_files_sql[] =
        "SELECT t.id, t.version, w.name, t.metadata_location"
        " FROM table_entry t JOIN warehouse w ON w.id = t.warehouse_id"
        " LEFT JOIN table_maintenance_policy q ON q.table_id = t.id"
        " WHERE t.kind = 'TABLE' AND t.metadata IS NULL"
        "   AND (q.table_id IS NULL OR q.version <> t.version)"
        " ORDER BY t.id LIMIT 64";
static const char policy_note_sql[] =
        POLICY_INSERT " VALUES ($1::uuid, $2::bigint, $3::jsonb)" POLICY_UPSERT;

/* The floe.maintenance.* properties of a metadata text, as JSON text (NULL
 * when it names none).  *bad when the text is not a JSON object. */
static char *maintenance_props(const char *text, size_t len, bool *bad)
{
	json_t *doc = json_loadb(text, len, 0, NULL), *props = json_object(), *v;
	const char *k;
	char *out = NULL;

	*bad = doc == NULL || !json_is_object(doc);
	json_object_foreach(json_object_get(doc, "properties"), k, v)
	{
		if (strncmp(k, "floe.maintenance.", 17) == 0)
			json_object_set(props, k, v);
	}
	if (props != NULL && json_object_size(props) > 0)
		out = json_dumps(props, JSON_COMPACT);
	json_decref(props);
	json_decref(doc);
	return out;
}

static void refresh_file_policies(struct cat_db *db)
{
	struct fl_err err = {0};
	struct cat_conn *c;
	PGresult *r = NULL;

	if (cat_conn_get(db, &c, &err) == 0) {
		r = cat_exec(c, policy_files_sql, 0, NULL, &err);
		cat_conn_put(db, c);
	}
	for (int i = 0; r != NULL && i < PQntuples(r); i++) {
		char *text = NULL, *props;
		size_t len = 0;
		bool bad;

		if (cat_file_text_by_name(db, NULL, PQgetvalue(r, i, 2), PQgetvalue(r, i, 3), &text,
		                          &len, &err) != 0) {
			fl_warn(NULL, "maintenance policy of table %s: %s", PQgetvalue(r, i, 0),
			        err.msg);
			continue;
		}
		props = maintenance_props(text, len, &bad);
		free(text);
		if (!bad && cat_conn_get(db, &c, &err) == 0) {
			const char *params[3] = {PQgetvalue(r, i, 0), PQgetvalue(r, i, 1), props};

			PQclear(cat_exec(c, policy_note_sql, 3, params, &err));
			cat_conn_put(db, c);
		}
		free(props);
	}
	PQclear(r);
}

int cat_maint_schedule_due(struct cat_db *db, int limit, int *added, struct fl_err *err)
{
	char lim[16];
	const char *params[1] = {lim};
	struct cat_conn *c;
	PGresult *r;
	bool ok;

	*added = 0;
	snprintf(lim, sizeof(lim), "%d", limit);
	refresh_file_policies(db);
	if (cat_conn_get(db, &c, err) != 0)
		return -1;
	r = cat_exec(c, policy_refresh_sql, 0, NULL, err);
	ok = r != NULL;
	PQclear(r);
	if (ok) {
		r = cat_exec(
		        c,
		        "DELETE FROM table_maintenance_policy p WHERE NOT EXISTS"
		        " (SELECT 1 FROM table_entry t WHERE t.id = p.table_id AND t.kind = 'TABLE')",
		        0, NULL, err);
		ok = r != NULL;
		PQclear(r);
	}
	r = NULL;
	if (ok)
		r = cat_exec(
		        c,
		        "INSERT INTO table_maintenance_job (warehouse_id, namespace, table_name, origin, actions)"
		        " SELECT p.warehouse_id, p.levels, p.name, 'schedule',"
		        "   string_to_array(regexp_replace(p.actions, '\\s', '', 'g'), ',')"
		        " FROM (SELECT t.warehouse_id, n.levels, t.name,"
		        "   coalesce(m.props->>'floe.maintenance.enabled',"
		        "            w.properties->>'floe.maintenance.enabled', 'false') AS enabled,"
		        "   floe_maintenance_interval(coalesce(m.props->>'floe.maintenance.interval',"
		        "            w.properties->>'floe.maintenance.interval'), interval '1 day') AS every,"
		        "   coalesce(m.props->>'floe.maintenance.actions',"
		        "            w.properties->>'floe.maintenance.actions', '" CAT_MAINT_DEFAULT_ACTIONS
		        "') AS actions"
		        "   FROM table_maintenance_policy m JOIN table_entry t ON t.id = m.table_id"
		        "   JOIN namespace n ON n.id = t.namespace_id"
		        "   JOIN warehouse w ON w.id = t.warehouse_id"
		        "   WHERE w.properties ? 'floe.maintenance.enabled'"
		        "      OR m.props ? 'floe.maintenance.enabled') p"
		        " WHERE p.enabled = 'true' AND NOT EXISTS (SELECT 1 FROM table_maintenance_job j"
		        "   WHERE j.warehouse_id = p.warehouse_id AND j.namespace = p.levels"
		        "   AND j.table_name = p.name AND j.origin = 'schedule'"
		        "   AND (j.state = 'queued' OR j.created_at > now() - p.every))"
		        " ORDER BY p.warehouse_id, p.levels, p.name LIMIT $1::int"
		        " ON CONFLICT DO NOTHING",
		        1, params, err);
	if (r != NULL) {
		*added = (int)strtol(PQcmdTuples(r), NULL, 10);
		PQclear(r);
	}
	/* The outcomes and shapes of dropped tables go (so /metrics forgets
	 * them); finished jobs are kept a week, and the newest of each table
	 * and origin always (its time is when the next scheduled run is due). */
	for (int k = 0; k < 2 && r != NULL; k++) {
		r = cat_exec(
		        c,
		        k == 0 ? "DELETE FROM maintenance_outcome m WHERE NOT EXISTS (SELECT 1"
		                 " FROM table_entry t JOIN namespace n ON n.id = t.namespace_id"
		                 " WHERE t.warehouse_id = m.warehouse_id AND n.levels = m.namespace"
		                 " AND t.name = m.table_name)"
		               : "DELETE FROM maintenance_table_stats m WHERE NOT EXISTS (SELECT 1"
		                 " FROM table_entry t JOIN namespace n ON n.id = t.namespace_id"
		                 " WHERE t.warehouse_id = m.warehouse_id AND n.levels = m.namespace"
		                 " AND t.name = m.table_name)",
		        0, NULL, err);
		PQclear(r);
	}
	if (r != NULL) {
		r = cat_exec(
		        c,
		        "DELETE FROM table_maintenance_job j WHERE j.state <> 'queued'"
		        " AND j.created_at < now() - interval '7 days' AND EXISTS"
		        " (SELECT 1 FROM table_maintenance_job k WHERE k.warehouse_id = j.warehouse_id"
		        "  AND k.namespace = j.namespace AND k.table_name = j.table_name"
		        "  AND k.origin = j.origin AND k.id > j.id)",
		        0, NULL, err);
		PQclear(r);
	}
	cat_conn_put(db, c);
	return r != NULL ? 0 : -1;
}

/* A JSON array of strings as a text[] literal (quoted elements). */
static char *text_array_of(const json_t *arr)
{
	const char *v[CAT_MAINT_MAX_ACTIONS * 4];
	struct cat_ns ns = {v, 0};
	size_t i;
	const json_t *s;

	json_array_foreach(arr, i, s)
	{
		if (i >= sizeof(v) / sizeof(v[0]) || json_string_value(s) == NULL)
			return NULL;
		v[ns.n++] = json_string_value(s);
	}
	return cat_text_array(&ns, ns.n);
}

int cat_maint_request(struct cat_db *db, const struct cat_warehouse *wh, const struct cat_ns *ns,
                      const char *name, const json_t *actions, bool dry_run,
                      const char *requested_by, json_t **out, struct fl_err *err)
{
	char *levels = cat_text_array(ns, ns->n), *acts = text_array_of(actions), nsbuf[520];
	const char *params[6] = {wh->id,      levels, name, acts, dry_run ? "true" : "false",
	                         requested_by};
	struct cat_conn *c = NULL;
	PGresult *r = NULL;
	int rc = -1;

	if (levels == NULL || acts == NULL) {
		nomem(err);
		goto out;
	}
	if (cat_conn_get(db, &c, err) != 0)
		goto out;
	r = cat_exec(
	        c,
	        "WITH t AS (SELECT 1 FROM table_entry t JOIN namespace n ON n.id = t.namespace_id"
	        "   WHERE t.warehouse_id = $1::uuid AND n.levels = $2::text[] AND t.name = $3"
	        "   AND t.kind = 'TABLE'),"
	        " ins AS (INSERT INTO table_maintenance_job (warehouse_id, namespace, table_name,"
	        "   origin, actions, dry_run, requested_by)"
	        "   SELECT $1::uuid, $2::text[], $3, 'request', $4::text[], $5::boolean, $6"
	        "   FROM t ON CONFLICT DO NOTHING RETURNING id)"
	        " SELECT (SELECT count(*) FROM t), (SELECT id FROM ins),"
	        "   (SELECT id FROM table_maintenance_job WHERE warehouse_id = $1::uuid"
	        "    AND namespace = $2::text[] AND table_name = $3 AND origin = 'request'"
	        "    AND state = 'queued')",
	        6, params, err);
	if (r == NULL)
		goto out;
	if (cat_i64(PQgetvalue(r, 0, 0)) == 0) {
		fl_err_set(err, FL_ERR_NO_SUCH_TABLE, "table %s.%s does not exist",
		           cat_ns_str(ns, nsbuf, sizeof(nsbuf)), name);
		goto out;
	}
	if (PQgetisnull(r, 0, 1)) {
		fl_err_set(
		        err, FL_ERR_CONFLICT,
		        "table %s.%s: maintenance job %s is already queued; wait for its outcome",
		        cat_ns_str(ns, nsbuf, sizeof(nsbuf)), name,
		        PQgetisnull(r, 0, 2) ? "(just finished)" : PQgetvalue(r, 0, 2));
		goto out;
	}
	*out = json_pack("{s:I, s:s, s:O, s:b}", "job-id", (json_int_t)cat_i64(PQgetvalue(r, 0, 1)),
	                 "state", "queued", "actions", actions, "dry-run", dry_run);
	rc = *out != NULL ? 0 : nomem(err);
out:
	PQclear(r);
	if (c != NULL)
		cat_conn_put(db, c);
	free(levels);
	free(acts);
	return rc;
}

static void job_clear(struct cat_maint_job *job)
{
	for (int i = 0; i < job->nlevels; i++)
		free(job->levels[i]);
	json_decref(job->actions);
	memset(job, 0, sizeof(*job));
}

/* Fills job from the claimed row (id, warehouse name, namespace JSON,
 * table, origin, actions JSON, dry run). */
static int job_fill(struct cat_db *db, struct cat_tx *tx, PGresult *r, struct cat_maint_job *job,
                    struct fl_err *err)
{
	json_t *levels = json_loads(PQgetvalue(r, 0, 2), 0, NULL), *v;
	size_t i;
	int rc = -1;

	job->id = cat_i64(PQgetvalue(r, 0, 0));
	snprintf(job->name, sizeof(job->name), "%s", PQgetvalue(r, 0, 3));
	snprintf(job->origin, sizeof(job->origin), "%s", PQgetvalue(r, 0, 4));
	job->actions = json_loads(PQgetvalue(r, 0, 5), 0, NULL);
	job->dry_run = strcmp(PQgetvalue(r, 0, 6), "t") == 0;
	if (levels == NULL || job->actions == NULL ||
	    json_array_size(levels) > sizeof(job->levels) / sizeof(job->levels[0])) {
		fl_err_set(err, FL_ERR_INTERNAL, "maintenance job %lld: stored row is malformed",
		           (long long)job->id);
		goto out;
	}
	json_array_foreach(levels, i, v)
	{
		job->levels[i] = strdup(json_string_value(v) ? json_string_value(v) : "");
		if (job->levels[i] == NULL) {
			nomem(err);
			goto out;
		}
		job->nlevels++;
	}
	rc = cat_warehouse_get(db, tx, PQgetvalue(r, 0, 1), &job->wh, err);
out:
	json_decref(levels);
	return rc;
}

int cat_maint_claim(struct cat_db *db, struct cat_maint_job *job, bool *found, struct fl_err *err)
{
	struct cat_tx *tx = NULL;
	PGresult *cands = NULL;
	int rc = -1;

	*found = false;
	memset(job, 0, sizeof(*job));
	if (cat_tx_begin(db, &tx, err) != 0)
		return -1;
	/* Candidates first, unlocked; then each is locked alone, so that
	 * jobs this replica does not run stay free for the others. */
	cands = cat_exec(
	        cat_tx_conn(tx),
	        "SELECT id FROM table_maintenance_job WHERE state = 'queued' ORDER BY id LIMIT 8",
	        0, NULL, err);
	if (cands == NULL)
		goto out;
	for (int i = 0; i < PQntuples(cands) && !*found; i++) {
		const char *p[1] = {PQgetvalue(cands, i, 0)};
		PGresult *r = cat_exec(
		        cat_tx_conn(tx),
		        "SELECT j.id, w.name, array_to_json(j.namespace)::text, j.table_name,"
		        " j.origin, array_to_json(j.actions)::text, j.dry_run,"
		        " pg_try_advisory_xact_lock(hashtext('floe-maintain-table'),"
		        "   hashtext(j.warehouse_id::text || '/' || array_to_string(j.namespace, chr(31))"
		        "   || '/' || j.table_name))"
		        " FROM table_maintenance_job j JOIN warehouse w ON w.id = j.warehouse_id"
		        " WHERE j.id = $1::bigint AND j.state = 'queued' FOR UPDATE OF j SKIP LOCKED",
		        1, p, err);

		if (r == NULL)
			goto out;
		if (PQntuples(r) == 1 && strcmp(PQgetvalue(r, 0, 7), "t") == 0) {
			if (job_fill(db, tx, r, job, err) != 0) {
				PQclear(r);
				goto out;
			}
			*found = true;
		}
		PQclear(r);
	}
	rc = 0;
	if (*found) {
		job->tx = tx;
		tx = NULL;
	}
out:
	PQclear(cands);
	if (tx != NULL)
		cat_tx_abort(tx);
	if (!*found)
		job_clear(job);
	return rc;
}

int cat_maint_job_end(struct cat_maint_job *job, bool ok, const json_t *result, struct fl_err *err)
{
	char id[24], *text = result != NULL ? fl_json_dump(result, NULL) : NULL;
	const char *params[3] = {id, ok ? "done" : "failed",
	                         text != NULL && strlen(text) <= MAX_REPORT_BYTES ? text : NULL};
	PGresult *r;
	int rc = -1;

	snprintf(id, sizeof(id), "%lld", (long long)job->id);
	if (job->tx == NULL) {
		rc = fl_err_set(err, FL_ERR_INTERNAL, "maintenance job %s is not claimed", id);
		goto out;
	}
	r = cat_exec(
	        cat_tx_conn(job->tx),
	        "UPDATE table_maintenance_job SET state = $2, finished_at = now(), result = $3::jsonb"
	        " WHERE id = $1::bigint",
	        3, params, err);
	if (r == NULL) {
		cat_tx_abort(job->tx);
		goto out;
	}
	PQclear(r);
	rc = cat_tx_commit(job->tx, err);
out:
	job->tx = NULL;
	free(text);
	job_clear(job);
	return rc;
}

static int64_t report_int(const json_t *report, const char *key)
{
	return (int64_t)json_integer_value(json_object_get(report, key));
}

int cat_maint_record(struct cat_db *db, struct cat_tx *tx, const struct cat_warehouse *wh,
                     const struct cat_ns *ns, const char *name, const char *action, int64_t job_id,
                     bool dry_run, int64_t started_ms, const json_t *report, const char *error,
                     struct fl_err *err)
{
	char *levels = cat_text_array(ns, ns->n), *text = NULL;
	char jid[24], n[4][24], started[32], reclaimed[24];
	bool ok = error == NULL;
	struct cat_scope sc;
	PGresult *r;
	int64_t rec = 0;

	if (levels == NULL)
		return nomem(err);
	if (report != NULL) {
		text = fl_json_dump(report, NULL);
		if (text != NULL && strlen(text) > MAX_REPORT_BYTES) {
			free(text);
			text = NULL;
		}
	}
	snprintf(jid, sizeof(jid), "%lld", (long long)job_id);
	snprintf(n[0], sizeof(n[0]), "%lld", (long long)report_int(report, "files-removed"));
	snprintf(n[1], sizeof(n[1]), "%lld", (long long)report_int(report, "bytes-removed"));
	snprintf(n[2], sizeof(n[2]), "%lld", (long long)report_int(report, "files-added"));
	snprintf(n[3], sizeof(n[3]), "%lld", (long long)report_int(report, "bytes-added"));
	snprintf(started, sizeof(started), "%lld", (long long)started_ms);
	/* Only expiry and orphan cleanup delete from storage; compaction and
	 * manifest rewrite leave the old files to expiry. */
	if (ok && !dry_run && (strcmp(action, "expire") == 0 || strcmp(action, "orphans") == 0))
		rec = report_int(report, "bytes-removed");
	snprintf(reclaimed, sizeof(reclaimed), "%lld", (long long)rec);
	const char *params[15] = {wh->id,
	                          levels,
	                          name,
	                          action,
	                          job_id > 0 ? jid : NULL,
	                          dry_run ? "true" : "false",
	                          ok ? "ok" : "failed",
	                          n[0],
	                          n[1],
	                          n[2],
	                          n[3],
	                          error,
	                          text,
	                          started,
	                          reclaimed};
	if (cat_scope_begin(db, tx, true, &sc, err) != 0) {
		free(levels);
		free(text);
		return -1;
	}
	r = cat_exec(
	        sc.c,
	        "INSERT INTO maintenance_outcome (warehouse_id, namespace, table_name, action,"
	        " job_id, dry_run, outcome, files_removed, bytes_removed, files_added, bytes_added,"
	        " error, report, started_at, runs, failures, bytes_reclaimed_total)"
	        " VALUES ($1::uuid, $2::text[], $3, $4, $5::bigint, $6::boolean, $7, $8::bigint,"
	        " $9::bigint, $10::bigint, $11::bigint, $12, $13::jsonb,"
	        " to_timestamp($14::double precision / 1000), 1,"
	        " CASE WHEN $7 = 'failed' THEN 1 ELSE 0 END, $15::bigint)"
	        " ON CONFLICT (warehouse_id, namespace, table_name, action) DO UPDATE SET"
	        " job_id = EXCLUDED.job_id, dry_run = EXCLUDED.dry_run, outcome = EXCLUDED.outcome,"
	        " files_removed = EXCLUDED.files_removed, bytes_removed = EXCLUDED.bytes_removed,"
	        " files_added = EXCLUDED.files_added, bytes_added = EXCLUDED.bytes_added,"
	        " error = EXCLUDED.error, report = EXCLUDED.report,"
	        " started_at = EXCLUDED.started_at, finished_at = now(),"
	        " runs = maintenance_outcome.runs + 1,"
	        " failures = maintenance_outcome.failures + EXCLUDED.failures,"
	        " bytes_reclaimed_total = maintenance_outcome.bytes_reclaimed_total"
	        "   + EXCLUDED.bytes_reclaimed_total",
	        15, params, err);
	PQclear(r);
	free(levels);
	free(text);
	return cat_scope_end(&sc, r != NULL, err) == 0 && r != NULL ? 0 : -1;
}

int cat_maint_shape_put(struct cat_db *db, const struct cat_warehouse *wh, const struct cat_ns *ns,
                        const char *name, const struct cat_maint_shape *s, struct fl_err *err)
{
	char *levels = cat_text_array(ns, ns->n), v[5][24];
	int64_t nums[5] = {s->snapshots, s->data_files, s->data_bytes, s->partitions,
	                   s->max_files_per_partition};
	struct cat_conn *c;
	PGresult *r;

	if (levels == NULL)
		return nomem(err);
	for (int i = 0; i < 5; i++)
		snprintf(v[i], sizeof(v[i]), "%lld", (long long)nums[i]);
	const char *params[8] = {wh->id, levels, name, v[0], v[1], v[2], v[3], v[4]};
	if (cat_conn_get(db, &c, err) != 0) {
		free(levels);
		return -1;
	}
	r = cat_exec(c,
	             "INSERT INTO maintenance_table_stats (warehouse_id, namespace, table_name,"
	             " snapshots, data_files, data_bytes, partitions, max_files_per_partition)"
	             " VALUES ($1::uuid, $2::text[], $3, $4::bigint, $5::bigint, $6::bigint,"
	             " $7::bigint, $8::bigint)"
	             " ON CONFLICT (warehouse_id, namespace, table_name) DO UPDATE SET"
	             " snapshots = EXCLUDED.snapshots, data_files = EXCLUDED.data_files,"
	             " data_bytes = EXCLUDED.data_bytes, partitions = EXCLUDED.partitions,"
	             " max_files_per_partition = EXCLUDED.max_files_per_partition,"
	             " measured_at = now()",
	             8, params, err);
	cat_conn_put(db, c);
	free(levels);
	PQclear(r);
	return r != NULL ? 0 : -1;
}

int cat_maint_status(struct cat_db *db, const struct cat_warehouse *wh, const struct cat_ns *ns,
                     const char *name, json_t **out, struct fl_err *err)
{
	char *levels = cat_text_array(ns, ns->n), nsbuf[520], tbuf[800];
	const char *params[3] = {wh->id, levels, name};
	struct cat_conn *c = NULL;
	PGresult *r = NULL;
	json_t *o = NULL, *j = NULL;
	int rc = -1;

	if (levels == NULL)
		return nomem(err);
	if (cat_conn_get(db, &c, err) != 0)
		goto out;
	r = cat_exec(
	        c,
	        "SELECT (SELECT count(*) FROM table_entry t JOIN namespace n"
	        "   ON n.id = t.namespace_id WHERE t.warehouse_id = $1::uuid"
	        "   AND n.levels = $2::text[] AND t.name = $3 AND t.kind = 'TABLE'),"
	        " (SELECT coalesce(json_agg(json_build_object('action', action, 'outcome', outcome,"
	        "   'dry-run', dry_run, 'job-id', job_id, 'started-at', " TS(
	                "started_at") ","
	                              "   'finished-at', " TS(
	                                      "finished_at") ", 'files-removed', files_removed,"
	                                                     "   'bytes-removed', bytes_removed, 'files-added', files_added,"
	                                                     "   'bytes-added', bytes_added, 'error', error, 'runs', runs, 'failures', failures)"
	                                                     "   ORDER BY action), '[]')::text FROM maintenance_outcome"
	                                                     "   WHERE warehouse_id = $1::uuid AND namespace = $2::text[] AND table_name = $3),"
	                                                     " (SELECT coalesce(json_agg(json_build_object('job-id', id, 'origin', origin,"
	                                                     "   'state', state, 'actions', actions, 'dry-run', dry_run,"
	                                                     "   'requested-by', requested_by, 'created-at', " TS(
	                                                             "created_at") ","
	                                                                           "   'finished-at', " TS(
	                                                                                   "finished_at") ") ORDER BY id DESC), '[]')::text"
	                                                                                                  "   FROM (SELECT * FROM table_maintenance_job WHERE warehouse_id = $1::uuid"
	                                                                                                  "   AND namespace = $2::text[] AND table_name = $3 ORDER BY id DESC LIMIT 10) k)",
	        3, params, err);
	if (r == NULL)
		goto out;
	snprintf(tbuf, sizeof(tbuf), "%s.%s", cat_ns_str(ns, nsbuf, sizeof(nsbuf)), name);
	if (cat_i64(PQgetvalue(r, 0, 0)) == 0) {
		fl_err_set(err, FL_ERR_NO_SUCH_TABLE, "table %s does not exist", tbuf);
		goto out;
	}
	o = json_loads(PQgetvalue(r, 0, 1), 0, NULL);
	j = json_loads(PQgetvalue(r, 0, 2), 0, NULL);
	*out = json_pack("{s:s, s:o, s:o}", "table", tbuf, "outcomes", o ? o : json_array(), "jobs",
	                 j ? j : json_array());
	o = j = NULL;
	rc = *out != NULL ? 0 : nomem(err);
out:
	PQclear(r);
	if (c != NULL)
		cat_conn_put(db, c);
	free(levels);
	return rc;
}

int cat_maint_stats(struct cat_db *db, int limit, void (*fn)(const struct cat_maint_stat *, void *),
                    void *arg, struct fl_err *err)
{
	char lim[16];
	const char *params[1] = {lim};
	struct cat_conn *c;
	PGresult *s = NULL, *o = NULL;

	snprintf(lim, sizeof(lim), "%d", limit);
	if (cat_conn_get(db, &c, err) != 0)
		return -1;
	s = cat_exec(c,
	             "SELECT w.name, array_to_string(s.namespace, '.'), s.table_name, s.snapshots,"
	             " s.data_files, s.data_bytes, s.partitions, s.max_files_per_partition"
	             " FROM maintenance_table_stats s JOIN warehouse w ON w.id = s.warehouse_id"
	             " ORDER BY w.name, s.namespace, s.table_name LIMIT $1::int",
	             1, params, err);
	if (s != NULL)
		o = cat_exec(c,
		             "WITH t AS (SELECT DISTINCT warehouse_id, namespace, table_name"
		             "   FROM maintenance_outcome ORDER BY 1, 2, 3 LIMIT $1::int)"
		             " SELECT w.name, array_to_string(m.namespace, '.'), m.table_name,"
		             " m.action, m.outcome, extract(epoch FROM m.finished_at), m.runs,"
		             " m.failures, m.bytes_reclaimed_total"
		             " FROM maintenance_outcome m JOIN t USING (warehouse_id, namespace,"
		             " table_name) JOIN warehouse w ON w.id = m.warehouse_id"
		             " ORDER BY w.name, m.namespace, m.table_name, m.action",
		             1, params, err);
	cat_conn_put(db, c);
	if (s == NULL || o == NULL) {
		PQclear(s);
		return -1;
	}
	for (int i = 0; i < PQntuples(s); i++) {
		struct cat_maint_stat st = {
		        .warehouse = PQgetvalue(s, i, 0),
		        .ns = PQgetvalue(s, i, 1),
		        .name = PQgetvalue(s, i, 2),
		        .snapshots = cat_i64(PQgetvalue(s, i, 3)),
		        .data_files = cat_i64(PQgetvalue(s, i, 4)),
		        .data_bytes = cat_i64(PQgetvalue(s, i, 5)),
		        .partitions = cat_i64(PQgetvalue(s, i, 6)),
		        .max_files_per_partition = cat_i64(PQgetvalue(s, i, 7)),
		};
		fn(&st, arg);
	}
	for (int i = 0; i < PQntuples(o); i++) {
		struct cat_maint_stat st = {
		        .warehouse = PQgetvalue(o, i, 0),
		        .ns = PQgetvalue(o, i, 1),
		        .name = PQgetvalue(o, i, 2),
		        .action = PQgetvalue(o, i, 3),
		        .ok = strcmp(PQgetvalue(o, i, 4), "ok") == 0,
		        .last_run_s = strtod(PQgetvalue(o, i, 5), NULL),
		        .runs = cat_i64(PQgetvalue(o, i, 6)),
		        .failures = cat_i64(PQgetvalue(o, i, 7)),
		        .bytes_reclaimed = cat_i64(PQgetvalue(o, i, 8)),
		};
		fn(&st, arg);
	}
	PQclear(s);
	PQclear(o);
	return 0;
}

int cat_location_retired_on(struct cat_conn *c, const char *wh_id, const char *location,
                            int64_t *ms, bool *found, struct fl_err *err)
{
	const char *params[2] = {wh_id, location};
	PGresult *r;

	*found = false;
	r = cat_exec(c,
	             "SELECT (extract(epoch FROM max(retired_at)) * 1000)::bigint"
	             " FROM retired_location WHERE warehouse_id = $1::uuid"
	             " AND (location = $2 OR starts_with($2, location || '/')"
	             "      OR starts_with(location, $2 || '/'))",
	             2, params, err);
	if (r == NULL)
		return -1;
	if (!PQgetisnull(r, 0, 0)) {
		*found = true;
		*ms = cat_i64(PQgetvalue(r, 0, 0));
	}
	PQclear(r);
	return 0;
}

int cat_location_retired(struct cat_db *db, const char *wh_id, const char *location, int64_t *ms,
                         bool *found, struct fl_err *err)
{
	struct cat_conn *c;
	int rc;

	*found = false;
	if (cat_conn_get(db, &c, err) != 0)
		return -1;
	rc = cat_location_retired_on(c, wh_id, location, ms, found, err);
	cat_conn_put(db, c);
	return rc;
}
