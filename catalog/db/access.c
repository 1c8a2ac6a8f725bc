/* access.c - principals, roles, grants and role assignments in PostgreSQL.
 *
 * Results are built as JSON by PostgreSQL itself (json_build_object), so each
 * call is one statement and one json_loads.  Secrets never reach this file;
 * only their hashes do, and no query returns a hash except
 * cat_principal_secret. */
#include <stdio.h>
#include <string.h>

#include "access.h"
#include "db_int.h"

#define PRINCIPAL_JSON                                                                                \
	"json_build_object('name', p.name, 'kind', p.kind, 'issuer', p.issuer, 'subject', p.subject," \
	" 'created-at', to_char(p.created_at AT TIME ZONE 'UTC', 'YYYY-MM-DD\"T\"HH24:MI:SS\"Z\"'),"  \
	" 'rotated-at', coalesce(floor(extract(epoch FROM p.rotated_at))::bigint, 0),"                \
	" 'roles', coalesce((SELECT json_agg(r.name ORDER BY r.name) FROM principal_role pr"          \
	"   JOIN role r ON r.id = pr.role_id WHERE pr.principal_id = p.id), '[]'))"

#define GRANT_JSON                                                                          \
	"json_build_object('id', g.id, 'warehouse', g.warehouse, 'namespace', g.namespace," \
	" 'table', g.table_name, 'privilege', g.privilege)"

/* Runs sql (returning at most one row with one JSON text column, or none).
 * No row is FL_ERR_NOT_FOUND with the message what (when what != NULL;
 * otherwise *out = NULL).  out may be NULL when the value is not needed. */
static int run(struct cat_db *db, const char *sql, int n, const char *const *params,
               const char *what, json_t **out, struct fl_err *err)
{
	struct cat_conn *c;
	PGresult *r;
	json_t *v = NULL;
	int rc = -1;

	if (cat_conn_get(db, &c, err) != 0)
		return -1;
	r = cat_exec(c, sql, n, params, err);
	if (r == NULL)
		goto out;
	if (PQntuples(r) == 0 || PQnfields(r) == 0 || PQgetisnull(r, 0, 0)) {
		if (what != NULL) {
			fl_err_set(err, FL_ERR_NOT_FOUND, "%s", what);
			goto out;
		}
	} else if (out != NULL) {
		v = json_loads(PQgetvalue(r, 0, 0), JSON_DECODE_ANY, NULL);
		if (v == NULL) {
			fl_err_set(err, FL_ERR_INTERNAL, "database returned invalid JSON");
			goto out;
		}
	}
	if (out != NULL)
		*out = v;
	v = NULL;
	rc = 0;
out:
	PQclear(r);
	json_decref(v);
	cat_conn_put(db, c);
	return rc;
}

static const char *missing(char *buf, size_t cap, const char *kind, const char *name)
{
	snprintf(buf, cap, "%s '%.200s' does not exist", kind, name);
	return buf;
}

int cat_principal_access(struct cat_db *db, const char *name_or_subject, const char *issuer,
                         json_t **out, struct fl_err *err)
{
	const char *params[2] = {name_or_subject, issuer};

	return run(
	        db,
	        "SELECT json_build_object('name', p.name, 'kind', p.kind,"
	        " 'secret-version', left(encode(sha256(convert_to(coalesce(p.secret_hash, ''), 'UTF8')),"
	        "   'hex'), 16),"
	        " 'grants', coalesce((SELECT json_agg(json_build_object('warehouse', g.warehouse,"
	        "   'namespace', g.namespace, 'table', g.table_name, 'privilege', g.privilege))"
	        "   FROM principal_role pr JOIN role_grant g ON g.role_id = pr.role_id"
	        "   WHERE pr.principal_id = p.id), '[]'))::text"
	        " FROM principal p WHERE CASE WHEN $2::text IS NULL THEN p.kind = 'client' AND p.name = $1"
	        "   ELSE p.kind = 'external' AND p.issuer = $2 AND p.subject = $1 END",
	        2, params, "unknown principal", out, err);
}

int cat_principal_secret(struct cat_db *db, const char *name, char **hash, struct fl_err *err)
{
	const char *params[1] = {name};
	struct cat_conn *c;
	PGresult *r;
	int rc = -1;

	if (cat_conn_get(db, &c, err) != 0)
		return -1;
	r = cat_exec(
	        c,
	        "SELECT secret_hash, coalesce(floor(extract(epoch FROM rotated_at))::bigint, 0)"
	        " FROM principal WHERE name = $1 AND kind = 'client'",
	        1, params, err);
	if (r == NULL)
		goto out;
	if (PQntuples(r) != 1) {
		fl_err_set(err, FL_ERR_NOT_FOUND, "unknown client");
		goto out;
	}
	*hash = strdup(PQgetvalue(r, 0, 0));
	if (*hash == NULL) {
		fl_err_set(err, FL_ERR_NOMEM, "out of memory");
		goto out;
	}
	rc = 0;
out:
	PQclear(r);
	cat_conn_put(db, c);
	return rc;
}

int cat_principal_create(struct cat_db *db, const char *name, const char *secret_hash,
                         const char *issuer, const char *subject, json_t **out, struct fl_err *err)
{
	const char *params[4] = {name, secret_hash, issuer, subject};
	int rc;

	rc = run(
	        db,
	        "WITH p AS (INSERT INTO principal (name, kind, secret_hash, issuer, subject)"
	        " VALUES ($1, CASE WHEN $2::text IS NULL THEN 'external' ELSE 'client' END, $2, $3, $4)"
	        " RETURNING *) SELECT " PRINCIPAL_JSON "::text FROM p",
	        4, params, NULL, out, err);
	if (rc != 0 && err->kind == FL_ERR_ALREADY_EXISTS)
		fl_err_set(err, FL_ERR_ALREADY_EXISTS,
		           subject ? "principal '%.200s' or that issuer and subject already exists"
		                   : "principal '%.200s' already exists",
		           name);
	return rc;
}

int cat_principal_bootstrap(struct cat_db *db, const char *name, const char *secret_hash,
                            bool *created, struct fl_err *err)
{
	const char *params[2] = {name, secret_hash};
	struct cat_scope sc;
	PGresult *r = NULL;
	bool ok = false;

	if (cat_scope_begin(db, NULL, true, &sc, err) != 0)
		return -1;
	/* One bootstrap at a time across replicas; the key is arbitrary but fixed. */
	r = cat_exec(sc.c, "SELECT pg_advisory_xact_lock(7046016001)", 0, NULL, err);
	if (r == NULL)
		goto out;
	PQclear(r);
	r = cat_exec(
	        sc.c,
	        "WITH have AS (SELECT 1 FROM principal_role pr JOIN role r ON r.id = pr.role_id"
	        "   WHERE r.name = 'admin' LIMIT 1),"
	        " p AS (INSERT INTO principal (name, kind, secret_hash)"
	        "   SELECT $1, 'client', $2 WHERE NOT EXISTS (SELECT 1 FROM have) RETURNING id)"
	        " INSERT INTO principal_role (principal_id, role_id)"
	        "   SELECT p.id, r.id FROM p, role r WHERE r.name = 'admin' RETURNING 1",
	        2, params, err);
	if (r == NULL)
		goto out;
	*created = PQntuples(r) == 1;
	ok = true;
out:
	PQclear(r);
	if (!ok && err->kind == FL_ERR_ALREADY_EXISTS)
		fl_err_set(err, FL_ERR_ALREADY_EXISTS,
		           "principal '%.200s' exists but holds no admin role", name);
	return cat_scope_end(&sc, ok, err);
}

int cat_principal_list(struct cat_db *db, json_t **out, struct fl_err *err)
{
	return run(db,
	           "SELECT json_build_object('principals', coalesce(json_agg(" PRINCIPAL_JSON
	           " ORDER BY p.name), '[]'))::text FROM principal p",
	           0, NULL, NULL, out, err);
}

int cat_principal_get(struct cat_db *db, const char *name, json_t **out, struct fl_err *err)
{
	const char *params[1] = {name};
	char msg[256];

	return run(db, "SELECT " PRINCIPAL_JSON "::text FROM principal p WHERE p.name = $1", 1,
	           params, missing(msg, sizeof(msg), "principal", name), out, err);
}

int cat_principal_delete(struct cat_db *db, const char *name, struct fl_err *err)
{
	const char *params[1] = {name};
	char msg[256];

	return run(db, "DELETE FROM principal WHERE name = $1 RETURNING '1'", 1, params,
	           missing(msg, sizeof(msg), "principal", name), NULL, err);
}

int cat_principal_rotate(struct cat_db *db, const char *name, const char *secret_hash,
                         struct fl_err *err)
{
	const char *params[2] = {name, secret_hash};
	json_t *kind = NULL;
	char msg[256];
	int rc;

	rc = run(db,
	         "WITH old AS (SELECT id, kind FROM principal WHERE name = $1),"
	         " u AS (UPDATE principal p SET secret_hash = $2, rotated_at = now()"
	         "   FROM old WHERE p.id = old.id AND old.kind = 'client' RETURNING p.id)"
	         " SELECT to_json(old.kind)::text FROM old",
	         2, params, missing(msg, sizeof(msg), "principal", name), &kind, err);
	if (rc == 0 &&
	    strcmp(json_string_value(kind) ? json_string_value(kind) : "", "client") != 0)
		rc = fl_err_set(err, FL_ERR_BAD_REQUEST,
		                "principal '%.200s' is an external subject and has no secret",
		                name);
	json_decref(kind);
	return rc;
}

int cat_principal_role_set(struct cat_db *db, const char *principal, const char *role, bool assign,
                           struct fl_err *err)
{
	const char *params[2] = {principal, role};
	json_t *v = NULL;
	const char *p, *rl;
	int rc;

	rc = run(db,
	         assign ? "WITH p AS (SELECT id FROM principal WHERE name = $1),"
	                  " r AS (SELECT id FROM role WHERE name = $2),"
	                  " i AS (INSERT INTO principal_role SELECT p.id, r.id FROM p, r"
	                  "   ON CONFLICT DO NOTHING)"
	                  " SELECT json_build_object('p', EXISTS (SELECT 1 FROM p),"
	                  "   'r', EXISTS (SELECT 1 FROM r))::text"
	                : "WITH p AS (SELECT id FROM principal WHERE name = $1),"
	                  " r AS (SELECT id FROM role WHERE name = $2),"
	                  " d AS (DELETE FROM principal_role pr USING p, r"
	                  "   WHERE pr.principal_id = p.id AND pr.role_id = r.id RETURNING 1)"
	                  " SELECT json_build_object('p', EXISTS (SELECT 1 FROM p),"
	                  "   'r', EXISTS (SELECT 1 FROM r), 'd', EXISTS (SELECT 1 FROM d))::text",
	         2, params, NULL, &v, err);
	if (rc != 0)
		return -1;
	p = json_is_true(json_object_get(v, "p")) ? NULL : "principal";
	rl = json_is_true(json_object_get(v, "r")) ? NULL : "role";
	if (p != NULL || rl != NULL)
		rc = fl_err_set(err, FL_ERR_NOT_FOUND, "%s '%.200s' does not exist", p ? p : rl,
		                p ? principal : role);
	else if (!assign && !json_is_true(json_object_get(v, "d")))
		rc = fl_err_set(err, FL_ERR_NOT_FOUND,
		                "principal '%.200s' does not hold role '%.200s'", principal, role);
	json_decref(v);
	return rc;
}

int cat_role_create(struct cat_db *db, const char *name, json_t **out, struct fl_err *err)
{
	const char *params[1] = {name};
	int rc;

	rc = run(db,
	         "WITH r AS (INSERT INTO role (name) VALUES ($1) RETURNING *)"
	         " SELECT json_build_object('name', r.name, 'builtin', r.builtin)::text FROM r",
	         1, params, NULL, out, err);
	if (rc != 0 && err->kind == FL_ERR_ALREADY_EXISTS)
		fl_err_set(err, FL_ERR_ALREADY_EXISTS, "role '%.200s' already exists", name);
	return rc;
}

#define ROLE_JSON                                                                                 \
	"json_build_object('name', r.name, 'builtin', r.builtin,"                                 \
	" 'grants', coalesce((SELECT json_agg(" GRANT_JSON " ORDER BY g.id) FROM role_grant g"    \
	"   WHERE g.role_id = r.id), '[]'),"                                                      \
	" 'principals', coalesce((SELECT json_agg(p.name ORDER BY p.name) FROM principal_role pr" \
	"   JOIN principal p ON p.id = pr.principal_id WHERE pr.role_id = r.id), '[]'))"

int cat_role_list(struct cat_db *db, json_t **out, struct fl_err *err)
{
	return run(db,
	           "SELECT json_build_object('roles', coalesce(json_agg(" ROLE_JSON
	           " ORDER BY r.name), '[]'))::text FROM role r",
	           0, NULL, NULL, out, err);
}

int cat_role_get(struct cat_db *db, const char *name, json_t **out, struct fl_err *err)
{
	const char *params[1] = {name};
	char msg[256];

	return run(db, "SELECT " ROLE_JSON "::text FROM role r WHERE r.name = $1", 1, params,
	           missing(msg, sizeof(msg), "role", name), out, err);
}

int cat_role_delete(struct cat_db *db, const char *name, struct fl_err *err)
{
	const char *params[1] = {name};
	json_t *v = NULL;
	char msg[256];
	int rc;

	rc = run(db,
	         "WITH old AS (SELECT id, builtin FROM role WHERE name = $1),"
	         " d AS (DELETE FROM role r USING old WHERE r.id = old.id AND NOT old.builtin)"
	         " SELECT to_json(old.builtin)::text FROM old",
	         1, params, missing(msg, sizeof(msg), "role", name), &v, err);
	if (rc == 0 && json_is_true(v))
		rc = fl_err_set(err, FL_ERR_CONFLICT,
		                "role '%.200s' is built in and cannot be deleted", name);
	json_decref(v);
	return rc;
}

int cat_grant_add(struct cat_db *db, const char *role, const char *warehouse,
                  const struct cat_ns *ns, const char *table, const char *privilege, json_t **out,
                  struct fl_err *err)
{
	char *arr = ns ? cat_text_array(ns, ns->n) : NULL, msg[256];
	const char *params[5] = {role, warehouse, arr, table, privilege};
	int rc;

	if (ns != NULL && arr == NULL)
		return fl_err_set(err, FL_ERR_NOMEM, "out of memory");
	rc = run(
	        db,
	        "WITH r AS (SELECT id FROM role WHERE name = $1),"
	        " i AS (INSERT INTO role_grant (role_id, warehouse, namespace, table_name, privilege)"
	        "   SELECT r.id, $2, $3::text[], $4, $5 FROM r ON CONFLICT DO NOTHING RETURNING *)"
	        " SELECT " GRANT_JSON "::text FROM (SELECT * FROM i UNION ALL"
	        "   SELECT g.* FROM role_grant g, r WHERE g.role_id = r.id AND g.warehouse = $2"
	        "   AND g.namespace IS NOT DISTINCT FROM $3::text[]"
	        "   AND g.table_name IS NOT DISTINCT FROM $4 AND g.privilege = $5) g LIMIT 1",
	        5, params, missing(msg, sizeof(msg), "role", role), out, err);
	free(arr);
	return rc;
}

int cat_grant_list(struct cat_db *db, const char *role, json_t **out, struct fl_err *err)
{
	const char *params[1] = {role};
	char msg[256];

	return run(db,
	           "SELECT json_build_object('grants', coalesce((SELECT json_agg(" GRANT_JSON
	           " ORDER BY g.id) FROM role_grant g WHERE g.role_id = r.id), '[]'))::text"
	           " FROM role r WHERE r.name = $1",
	           1, params, missing(msg, sizeof(msg), "role", role), out, err);
}

int cat_grant_revoke(struct cat_db *db, const char *role, int64_t id, struct fl_err *err)
{
	char idt[24], msg[256];
	const char *params[2] = {role, idt};

	snprintf(idt, sizeof(idt), "%lld", (long long)id);
	snprintf(msg, sizeof(msg), "role '%.200s' has no grant %lld", role, (long long)id);
	return run(db,
	           "DELETE FROM role_grant g USING role r WHERE g.role_id = r.id AND r.name = $1"
	           " AND g.id = $2::bigint RETURNING '1'",
	           2, params, msg, NULL, err);
}
