/* jobs.c - background jobs (purging dropped tables' files).
 *
 * A job is taken with FOR UPDATE SKIP LOCKED inside a transaction that stays
 * open while its files are deleted, so exactly one replica works on it and a
 * crash simply releases it for another.  Failures retry with a growing delay.
 * The files are reached through an IO handle opened from the warehouse's
 * storage profile for the job (on S3: a listing and batch deletes). */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "db_int.h"
#include "io/io.h"
#include "json.h"

/* The objects of a listing modified after a moment. */
struct newer {
	int64_t after_ms;
	char **uris;
	size_t n, cap;
};

static int newer_cb(void *arg, const char *uri, uint64_t size, int64_t mtime_ms, struct fl_err *err)
{
	struct newer *w = arg;

	(void)size;
	if (mtime_ms <= w->after_ms)
		return 0;
	if (w->n == w->cap) {
		size_t cap = w->cap ? w->cap * 2 : 64;
		char **g = realloc(w->uris, cap * sizeof(*g));

		if (g == NULL)
			return fl_err_set(err, FL_ERR_NOMEM, "out of memory");
		w->uris = g;
		w->cap = cap;
	}
	if ((w->uris[w->n] = strdup(uri)) == NULL)
		return fl_err_set(err, FL_ERR_NOMEM, "out of memory");
	w->n++;
	return 0;
}

/* Deletes everything under loc with the warehouse's storage; with
 * retired_ms (not INT64_MIN), only the objects newer than that: older ones
 * are the files of a table that left the catalog from there with its files
 * kept (migration 0011). */
static int purge(const json_t *profile, const char *loc, int64_t retired_ms, struct fl_err *err)
{
	struct st_profile p;
	struct st_io *io = NULL;
	struct newer w = {.after_ms = retired_ms};
	int rc;

	if (profile == NULL)
		return fl_err_set(err, FL_ERR_INTERNAL, "the warehouse of %.200s no longer exists",
		                  loc);
	if (st_profile_parse(profile, &p, NULL, err) != 0 || st_io_open(&p, &io, err) != 0)
		return -1;
	if (retired_ms == INT64_MIN)
		rc = st_io_delete_tree(io, loc, err);
	else if ((rc = st_io_list(io, loc, newer_cb, &w, err)) == 0 && w.n > 0)
		rc = st_io_delete_many(io, (const char *const *)w.uris, w.n, err);
	for (size_t i = 0; i < w.n; i++)
		free(w.uris[i]);
	free(w.uris);
	st_io_release(io);
	return rc;
}

int cat_jobs_run_one(struct cat_db *db, bool *did, struct fl_err *err)
{
	struct fl_err job_err = {0};
	struct cat_conn *c;
	PGresult *r;
	int rc = -1;

	*did = false;
	if (cat_conn_get(db, &c, err) != 0)
		return -1;
	if (cat_exec_cmd(c, "BEGIN", err) != 0)
		goto out;
	r = cat_exec(c,
	             "SELECT j.id, j.location, j.attempts, j.warehouse_id, w.storage_profile::text"
	             " FROM maintenance_job j LEFT JOIN warehouse w ON w.id = j.warehouse_id"
	             " WHERE j.state = 'pending' AND j.run_after <= now() ORDER BY j.id LIMIT 1"
	             " FOR UPDATE OF j SKIP LOCKED",
	             0, NULL, err);
	if (r == NULL)
		goto out;
	if (PQntuples(r) == 0) {
		PQclear(r);
		rc = cat_exec_cmd(c, "COMMIT", err);
		goto out;
	}
	char id[24], wh[40], *loc = strdup(PQgetvalue(r, 0, 1));
	json_t *profile = json_loads(PQgetvalue(r, 0, 4), 0, NULL);
	snprintf(id, sizeof(id), "%s", PQgetvalue(r, 0, 0));
	snprintf(wh, sizeof(wh), "%s", PQgetvalue(r, 0, 3));
	PQclear(r);
	if (loc == NULL) {
		json_decref(profile);
		fl_err_set(err, FL_ERR_NOMEM, "out of memory");
		goto out;
	}
	/* A new table may have been created at (or around) the dropped table's
	 * location since: its files must survive.  Creates take the same
	 * warehouse lock, so none can start while the files are deleted. */
	const char *p2[2] = {wh, loc};
	if (cat_warehouse_lock(c, wh, err) != 0 ||
	    (r = cat_exec(
	             c,
	             "SELECT count(*) FROM table_entry WHERE warehouse_id = $1 AND (location = $2"
	             " OR starts_with(location, $2 || '/') OR starts_with($2, location || '/'))",
	             2, p2, err)) == NULL) {
		free(loc);
		json_decref(profile);
		goto out;
	}
	bool reused = cat_i64(PQgetvalue(r, 0, 0)) > 0;
	PQclear(r);
	if (reused) {
		const char *p3[1] = {id};

		free(loc);
		json_decref(profile);
		r = cat_exec(
		        c,
		        "UPDATE maintenance_job SET state = 'cancelled', finished_at = now(),"
		        " last_error = 'the location belongs to a live table again' WHERE id = $1::bigint",
		        1, p3, err);
		if (r == NULL)
			goto out;
		PQclear(r);
		rc = cat_exec_cmd(c, "COMMIT", err);
		*did = rc == 0;
		goto out;
	}
	bool retired;
	int64_t retired_ms = INT64_MIN;

	if (cat_location_retired_on(c, wh, loc, &retired_ms, &retired, err) != 0) {
		free(loc);
		json_decref(profile);
		goto out;
	}
	int failed = purge(profile, loc, retired ? retired_ms + CAT_RETIRED_SKEW_MS : INT64_MIN,
	                   &job_err) != 0;
	free(loc);
	json_decref(profile);
	const char *params[2] = {id, failed ? job_err.msg : NULL};
	r = cat_exec(
	        c,
	        failed ? "UPDATE maintenance_job SET attempts = attempts + 1, last_error = $2,"
	                 " state = CASE WHEN attempts >= 9 THEN 'failed' ELSE 'pending' END,"
	                 " run_after = now() + make_interval(secs => 2 ^ least(attempts, 10))"
	                 " WHERE id = $1::bigint"
	               : "UPDATE maintenance_job SET state = 'done', finished_at = now(), attempts = attempts + 1,"
	                 " last_error = $2 WHERE id = $1::bigint",
	        2, params, err);
	if (r == NULL)
		goto out;
	PQclear(r);
	if (cat_exec_cmd(c, "COMMIT", err) != 0)
		goto out;
	*did = true;
	rc = 0;
out:
	cat_conn_put(db, c);
	return rc;
}
