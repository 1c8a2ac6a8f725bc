/* jobs.c - background jobs (purging dropped tables' files).
 *
 * A job is taken with FOR UPDATE SKIP LOCKED inside a transaction that stays
 * open while its files are deleted, so exactly one replica works on it and a
 * crash simply releases it for another.  Failures retry with a growing delay. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "db_int.h"
#include "io/io.h"

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
	r = cat_exec(
	        c,
	        "SELECT id, location, attempts, warehouse_id FROM maintenance_job WHERE state = 'pending'"
	        " AND run_after <= now() ORDER BY id LIMIT 1 FOR UPDATE SKIP LOCKED",
	        0, NULL, err);
	if (r == NULL)
		goto out;
	if (PQntuples(r) == 0) {
		PQclear(r);
		rc = cat_exec_cmd(c, "COMMIT", err);
		goto out;
	}
	char id[24], wh[40], *loc = strdup(PQgetvalue(r, 0, 1));
	snprintf(id, sizeof(id), "%s", PQgetvalue(r, 0, 0));
	snprintf(wh, sizeof(wh), "%s", PQgetvalue(r, 0, 3));
	PQclear(r);
	if (loc == NULL) {
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
		goto out;
	}
	bool reused = cat_i64(PQgetvalue(r, 0, 0)) > 0;
	PQclear(r);
	if (reused) {
		const char *p3[1] = {id};

		free(loc);
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
	int failed = st_io_delete_tree(loc, &job_err) != 0;
	free(loc);
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
