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
	r = cat_exec(c,
	             "SELECT id, location, attempts FROM maintenance_job WHERE state = 'pending'"
	             " AND run_after <= now() ORDER BY id LIMIT 1 FOR UPDATE SKIP LOCKED",
	             0, NULL, err);
	if (r == NULL)
		goto out;
	if (PQntuples(r) == 0) {
		PQclear(r);
		rc = cat_exec_cmd(c, "COMMIT", err);
		goto out;
	}
	char id[24], attempts[16];
	snprintf(id, sizeof(id), "%s", PQgetvalue(r, 0, 0));
	snprintf(attempts, sizeof(attempts), "%s", PQgetvalue(r, 0, 2));
	int failed = st_io_delete_tree(PQgetvalue(r, 0, 1), &job_err) != 0;
	PQclear(r);
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
