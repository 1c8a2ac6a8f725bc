/* migrate.c - applying the embedded migrations, and the server secret.
 *
 * Invariants: migrations are applied in version order, each in its own
 * transaction together with its schema_migrations row, under a session-level
 * advisory lock; a database newer than the binary is never touched. */
#include <stdio.h>
#include <string.h>

#include "libcrypto.h"
#include "db_int.h"
#include "migrations.h"

/* "floe" in ASCII: the advisory lock key for migrations. */
#define MIGRATE_LOCK "1718382437"

int cat_schema_version(void)
{
	return cat_migration_count;
}

static int db_version(struct cat_conn *c, int *v, struct fl_err *err)
{
	PGresult *r = cat_exec(c, "SELECT coalesce(max(version), 0) FROM schema_migrations", 0,
	                       NULL, err);

	if (r == NULL)
		return -1;
	*v = (int)cat_i64(PQgetvalue(r, 0, 0));
	PQclear(r);
	return 0;
}

int cat_db_migrate(const char *conninfo, int *applied, struct fl_err *err)
{
	struct cat_conn conn = {0};
	int have, rc = -1, locked = 0;

	*applied = 0;
	conn.pg = cat_pg_connect(conninfo);
	if (PQstatus(conn.pg) != CONNECTION_OK) {
		char msg[160];

		snprintf(msg, sizeof(msg), "%s", PQerrorMessage(conn.pg));
		msg[strcspn(msg, "\n")] = '\0';
		fl_err_set(err, FL_ERR_UNAVAILABLE, "cannot connect to the database: %s", msg);
		goto out;
	}
	PQclear(PQexec(conn.pg, "SET client_min_messages = warning"));
	if (cat_exec_cmd(&conn, "SELECT pg_advisory_lock(" MIGRATE_LOCK ")", err) != 0)
		goto out;
	locked = 1;
	if (cat_exec_cmd(&conn,
	                 "CREATE TABLE IF NOT EXISTS schema_migrations ("
	                 " version integer PRIMARY KEY, name text NOT NULL,"
	                 " applied_at timestamptz NOT NULL DEFAULT now())",
	                 err) != 0 ||
	    db_version(&conn, &have, err) != 0)
		goto out;
	if (have > cat_migration_count) {
		fl_err_set(
		        err, FL_ERR_UNSUPPORTED,
		        "database schema version %d is newer than this binary's %d; upgrade floe",
		        have, cat_migration_count);
		goto out;
	}
	for (int i = have; i < cat_migration_count; i++) {
		const struct cat_migration *m = &cat_migrations[i];
		char ver[16];
		const char *params[2] = {ver, m->name};
		PGresult *r;

		snprintf(ver, sizeof(ver), "%d", m->version);
		if (cat_exec_cmd(&conn, "BEGIN", err) != 0)
			goto out;
		/* A migration file holds several statements: simple-query protocol. */
		r = PQexec(conn.pg, m->sql);
		if (PQresultStatus(r) != PGRES_COMMAND_OK) {
			fl_err_set(err, FL_ERR_INTERNAL, "migration %s failed: %.180s", m->name,
			           PQresultErrorMessage(r));
			PQclear(r);
			goto out;
		}
		PQclear(r);
		r = cat_exec(&conn, "INSERT INTO schema_migrations (version, name) VALUES ($1, $2)",
		             2, params, err);
		if (r == NULL)
			goto out;
		PQclear(r);
		if (cat_exec_cmd(&conn, "COMMIT", err) != 0)
			goto out;
		++*applied;
	}
	rc = 0;
out:
	if (locked && PQstatus(conn.pg) == CONNECTION_OK)
		PQclear(PQexec(conn.pg, "SELECT pg_advisory_unlock(" MIGRATE_LOCK ")"));
	PQfinish(conn.pg);
	return rc;
}

int cat_db_load_secret(struct cat_db *db, struct fl_err *err)
{
	unsigned char fresh[32];
	char hex[2 * sizeof(fresh) + 3] = "\\x";
	const char *params[1] = {hex};
	struct cat_conn *c;
	PGresult *r;
	int rc = -1;

	if (RAND_bytes(fresh, sizeof(fresh)) != 1)
		return fl_err_set(err, FL_ERR_INTERNAL, "no randomness for the server secret");
	for (size_t i = 0; i < sizeof(fresh); i++)
		snprintf(hex + 2 + 2 * i, 3, "%02x", fresh[i]);
	if (cat_conn_get(db, &c, err) != 0)
		return -1;
	/* The first replica to start decides the secret; others read it. */
	r = cat_exec(c,
	             "WITH ins AS (INSERT INTO server_secret (id, secret) VALUES (1, $1::bytea)"
	             " ON CONFLICT (id) DO NOTHING RETURNING secret)"
	             " SELECT encode(secret, 'hex') FROM ins UNION ALL"
	             " SELECT encode(secret, 'hex') FROM server_secret WHERE id = 1 LIMIT 1",
	             1, params, err);
	if (r == NULL)
		goto out;
	if (PQntuples(r) != 1 || PQgetlength(r, 0, 0) != 64) {
		PQclear(r);
		fl_err_set(err, FL_ERR_INTERNAL, "server secret is missing or malformed");
		goto out;
	}
	for (int i = 0; i < 32; i++) {
		unsigned v;

		sscanf(PQgetvalue(r, 0, 0) + 2 * i, "%2x", &v);
		db->secret[i] = (unsigned char)v;
	}
	db->have_secret = true;
	PQclear(r);
	rc = 0;
out:
	cat_conn_put(db, c);
	return rc;
}
