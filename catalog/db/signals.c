/* signals.c - what /metrics shows of feeds and of table freshness, read from
 * PostgreSQL: the feeds' counters (added to in each run's transaction) and
 * the commit events (written by every commit, whichever process made it). */
#include <stdio.h>
#include <string.h>

#include "db_int.h"
#include "feed.h"

int cat_feed_stats(struct cat_db *db, int limit, void (*fn)(const struct cat_feed_stat *, void *),
                   void *arg, struct fl_err *err)
{
	char lim[16];
	const char *params[1] = {lim};
	struct cat_conn *c;
	PGresult *r;

	snprintf(lim, sizeof(lim), "%d", limit);
	if (cat_conn_get(db, &c, err) != 0)
		return -1;
	r = cat_exec(c,
	             "SELECT f.name, w.name, array_to_string(f.namespace, '.'), f.table_name,"
	             " f.state = 'paused', f.failures, f.rows_committed, f.bytes_read,"
	             " f.bytes_written, f.batches_committed, f.batch_seconds, f.dead_letter_rows,"
	             " f.dead_letter_objects, f.runs_failed, f.backlog_objects,"
	             " coalesce(s.bytes, 0), coalesce(s.n, 0)"
	             " FROM feed f JOIN warehouse w ON w.id = f.warehouse_id"
	             " LEFT JOIN LATERAL (SELECT sum(bytes) AS bytes, count(*) AS n FROM feed_spool"
	             "   WHERE feed_id = f.id AND batch_id IS NULL) s ON true"
	             " ORDER BY f.name LIMIT $1::int",
	             1, params, err);
	cat_conn_put(db, c);
	if (r == NULL)
		return -1;
	for (int i = 0; i < PQntuples(r); i++) {
		struct cat_feed_stat st = {
		        .name = PQgetvalue(r, i, 0),
		        .warehouse = PQgetvalue(r, i, 1),
		        .ns = PQgetvalue(r, i, 2),
		        .table = PQgetvalue(r, i, 3),
		        .paused = strcmp(PQgetvalue(r, i, 4), "t") == 0,
		        .failures = cat_i64(PQgetvalue(r, i, 5)),
		        .rows_committed = cat_i64(PQgetvalue(r, i, 6)),
		        .bytes_read = cat_i64(PQgetvalue(r, i, 7)),
		        .bytes_written = cat_i64(PQgetvalue(r, i, 8)),
		        .batches_committed = cat_i64(PQgetvalue(r, i, 9)),
		        .batch_seconds = strtod(PQgetvalue(r, i, 10), NULL),
		        .dead_letter_rows = cat_i64(PQgetvalue(r, i, 11)),
		        .dead_letter_objects = cat_i64(PQgetvalue(r, i, 12)),
		        .runs_failed = cat_i64(PQgetvalue(r, i, 13)),
		        .backlog_objects = cat_i64(PQgetvalue(r, i, 14)),
		        .spooled_bytes = cat_i64(PQgetvalue(r, i, 15)),
		        .spooled_requests = cat_i64(PQgetvalue(r, i, 16)),
		};
		fn(&st, arg);
	}
	PQclear(r);
	return 0;
}

int cat_table_signals(struct cat_db *db, int limit,
                      void (*fn)(const struct cat_table_signal *, void *), void *arg,
                      struct fl_err *err)
{
	char lim[16];
	const char *params[1] = {lim};
	struct cat_conn *c;
	PGresult *r;

	snprintf(lim, sizeof(lim), "%d", limit);
	if (cat_conn_get(db, &c, err) != 0)
		return -1;
	/* A snapshot's data is as new as the first event that made it current
	 * (later events of the same snapshot change only metadata). */
	r = cat_exec(
	        c,
	        "WITH e AS (SELECT table_id, count(*) AS commits FROM commit_event GROUP BY table_id),"
	        " d AS (SELECT table_id, max(first_at) AS newest FROM (SELECT table_id, snapshot_id,"
	        "   min(created_at) AS first_at FROM commit_event WHERE snapshot_id IS NOT NULL"
	        "   AND operation IN ('append', 'overwrite') GROUP BY table_id, snapshot_id) x"
	        "   GROUP BY table_id)"
	        " SELECT w.name, array_to_string(n.levels, '.'), t.name, e.commits,"
	        " coalesce(extract(epoch FROM now() - d.newest), -1)"
	        " FROM e JOIN table_entry t ON t.id = e.table_id AND t.kind = 'TABLE'"
	        " JOIN namespace n ON n.id = t.namespace_id JOIN warehouse w ON w.id = t.warehouse_id"
	        " LEFT JOIN d ON d.table_id = e.table_id"
	        " ORDER BY w.name, n.levels, t.name LIMIT $1::int",
	        1, params, err);
	cat_conn_put(db, c);
	if (r == NULL)
		return -1;
	for (int i = 0; i < PQntuples(r); i++) {
		struct cat_table_signal st = {
		        .warehouse = PQgetvalue(r, i, 0),
		        .ns = PQgetvalue(r, i, 1),
		        .name = PQgetvalue(r, i, 2),
		        .commits = cat_i64(PQgetvalue(r, i, 3)),
		        .freshness_s = strtod(PQgetvalue(r, i, 4), NULL),
		};
		fn(&st, arg);
	}
	PQclear(r);
	return 0;
}
