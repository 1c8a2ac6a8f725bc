/* warehouse.c - warehouses: a name, a storage profile and a root location.
 *
 * The warehouse name is the REST `prefix`.  The storage profile
 * (storage/io/profile.h) is stored as validated JSON with the location
 * without a trailing '/'; it names environment variables or a file for the
 * server's keys, never the keys themselves. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "db_int.h"
#include "io/profile.h"
#include "json.h"
#include "uuid.h"

#define WH_COLS \
	"id, name, storage_profile::text, to_char(created_at AT TIME ZONE 'UTC', 'YYYY-MM-DD\"T\"HH24:MI:SS.MS\"Z\"'), properties::text"

/* Validation lives with the storage code (storage/io/profile.c); the
 * catalog stores the normalised JSON, which names no secret. */
static int check_profile(const json_t *profile, json_t **norm, struct fl_err *err)
{
	struct st_profile p;

	return st_profile_parse(profile, &p, norm, err);
}

/* The warehouse JSON from a row of WH_COLS starting at column `at`. */
static json_t *row_json_at(PGresult *r, int i, int at)
{
	json_t *profile = json_loads(PQgetvalue(r, i, at + 2), 0, NULL);
	json_t *props = json_loads(PQgetvalue(r, i, at + 4), 0, NULL);

	return json_pack("{s:s, s:s, s:o, s:s, s:o}", "id", PQgetvalue(r, i, at), "name",
	                 PQgetvalue(r, i, at + 1), "storage-profile",
	                 profile ? profile : json_object(), "created-at", PQgetvalue(r, i, at + 3),
	                 "properties", props ? props : json_object());
}

static json_t *row_json(PGresult *r, int i)
{
	return row_json_at(r, i, 0);
}

static int insert(struct cat_db *db, const char *name, const json_t *profile, bool if_absent,
                  json_t **out, struct fl_err *err)
{
	char id[FL_UUID_STR];
	char *prof = NULL;
	struct cat_conn *c;
	PGresult *r;
	int rc = -1;

	fl_uuid_v4(id);
	prof = fl_json_dump(profile, NULL);
	if (prof == NULL)
		return fl_err_set(err, FL_ERR_NOMEM, "out of memory");
	if (cat_conn_get(db, &c, err) != 0) {
		free(prof);
		return -1;
	}
	const char *params[3] = {id, name, prof};
	r = cat_exec(
	        c,
	        if_absent
	                ? "INSERT INTO warehouse (id, name, storage_profile) VALUES ($1, $2, $3::jsonb)"
	                  " ON CONFLICT (name) DO NOTHING RETURNING " WH_COLS
	                : "INSERT INTO warehouse (id, name, storage_profile) VALUES ($1, $2, $3::jsonb)"
	                  " RETURNING " WH_COLS,
	        3, params, err);
	if (r == NULL) {
		if (err->kind == FL_ERR_ALREADY_EXISTS)
			fl_err_set(err, FL_ERR_ALREADY_EXISTS, "warehouse '%s' already exists",
			           name);
		goto out;
	}
	if (out != NULL)
		*out = PQntuples(r) == 1 ? row_json(r, 0) : json_null();
	PQclear(r);
	rc = 0;
out:
	cat_conn_put(db, c);
	free(prof);
	return rc;
}

int cat_warehouse_create(struct cat_db *db, const json_t *req, json_t **out, struct fl_err *err)
{
	const char *name = NULL;
	json_t *profile = NULL, *norm = NULL;
	int rc;

	if (fl_json_get_str(req, "name", true, "CreateWarehouseRequest", &name, err) != 0 ||
	    fl_json_get_obj(req, "storage-profile", true, "CreateWarehouseRequest", &profile,
	                    err) != 0)
		return -1;
	if (name[0] == '\0' || strlen(name) > 255 || strpbrk(name, "/\x1f") != NULL)
		return fl_err_set(err, FL_ERR_BAD_REQUEST,
		                  "warehouse name must be 1-255 bytes without '/' or 0x1F");
	if (check_profile(profile, &norm, err) != 0)
		return -1;
	rc = insert(db, name, norm, false, out, err);
	json_decref(norm);
	return rc;
}

int cat_warehouse_ensure(struct cat_db *db, const char *name, const char *location,
                         struct fl_err *err)
{
	json_t *prof =
	        json_pack("{s:s, s:s}", "type", strncmp(location, "s3://", 5) == 0 ? "s3" : "file",
	                  "location", location);
	json_t *norm = NULL;
	int rc;

	if (prof == NULL)
		return fl_err_set(err, FL_ERR_NOMEM, "out of memory");
	rc = check_profile(prof, &norm, err);
	json_decref(prof);
	if (rc != 0)
		return fl_err_prefix(err, "default warehouse '%s'", name);
	rc = insert(db, name, norm, true, NULL, err);
	json_decref(norm);
	return rc;
}

static int query_one(struct cat_db *db, struct cat_tx *tx, const char *name, PGresult **res,
                     struct fl_err *err)
{
	const char *params[1] = {name};
	struct cat_scope sc;
	PGresult *r;

	if (cat_scope_begin(db, tx, false, &sc, err) != 0)
		return -1;
	r = cat_exec(sc.c, "SELECT " WH_COLS " FROM warehouse WHERE name = $1", 1, params, err);
	(void)cat_scope_end(&sc, true, err);
	if (r == NULL)
		return -1;
	if (PQntuples(r) == 0) {
		PQclear(r);
		return fl_err_set(err, FL_ERR_NO_SUCH_WAREHOUSE,
		                  "warehouse '%.200s' does not exist", name);
	}
	*res = r;
	return 0;
}

/* *out from a row of WH_COLS starting at column `at`. */
static int warehouse_of(PGresult *r, int at, const char *name, struct cat_warehouse *out,
                        struct fl_err *err)
{
	json_t *prof = json_loads(PQgetvalue(r, 0, at + 2), 0, NULL);
	int rc = -1;

	if (prof == NULL) {
		fl_err_set(err, FL_ERR_INTERNAL,
		           "warehouse '%.200s': stored storage profile is not JSON", name);
		goto out;
	}
	if (st_profile_parse(prof, &out->profile, NULL, err) != 0) {
		fl_err_prefix(err, "warehouse '%.200s'", name);
		goto out;
	}
	snprintf(out->id, sizeof(out->id), "%s", PQgetvalue(r, 0, at));
	snprintf(out->name, sizeof(out->name), "%s", PQgetvalue(r, 0, at + 1));
	snprintf(out->location, sizeof(out->location), "%s", out->profile.location);
	snprintf(out->storage_type, sizeof(out->storage_type), "%s",
	         out->profile.type == ST_STORAGE_S3 ? "s3" : "file");
	out->io = NULL;
	rc = 0;
out:
	json_decref(prof);
	return rc;
}

int cat_warehouse_get(struct cat_db *db, struct cat_tx *tx, const char *name,
                      struct cat_warehouse *out, struct fl_err *err)
{
	PGresult *r;
	int rc;

	if (query_one(db, tx, name, &r, err) != 0)
		return -1;
	rc = warehouse_of(r, 0, name, out, err);
	PQclear(r);
	return rc;
}

int cat_warehouse_get_ready(struct cat_db *db, const char *name, struct cat_warehouse *out,
                            bool *ready, struct fl_err *err)
{
	const char *params[1] = {name};
	const struct cat_pipe_q q = {
	        /* One row whatever the warehouse: the schema version, then the
	         * warehouse's columns or NULLs.  On a database not migrated yet
	         * the tables are missing and the statement fails. */
	        .sql = "SELECT v.v, " WH_COLS " FROM (SELECT coalesce(max(version), 0) AS v"
	               " FROM schema_migrations) v LEFT JOIN warehouse ON name = $1",
	        .n = 1,
	        .params = params,
	};
	struct cat_conn *c;
	PGresult *r = NULL;
	int rc = -1;

	*ready = false;
	if (cat_conn_get(db, &c, err) != 0)
		return -1;
	/* A pipeline, so that pending session settings travel with it. */
	if (!cat_pipeline(c, 1, &q, &r)) {
		/* Not migrated (or gone): the caller migrates and asks again. */
		if (PQstatus(c->pg) == CONNECTION_OK)
			rc = 0;
		else
			fl_err_set(err, FL_ERR_UNAVAILABLE, "database connection lost");
		goto out;
	}
	if (PQresultStatus(r) != PGRES_TUPLES_OK || PQntuples(r) != 1 ||
	    cat_i64(PQgetvalue(r, 0, 0)) != cat_schema_version()) {
		rc = 0;
		goto out;
	}
	*ready = true;
	if (PQgetisnull(r, 0, 1))
		fl_err_set(err, FL_ERR_NO_SUCH_WAREHOUSE, "warehouse '%.200s' does not exist",
		           name);
	else
		rc = warehouse_of(r, 1, name, out, err);
out:
	PQclear(r);
	cat_conn_put(db, c);
	return rc;
}

int cat_warehouse_get_json(struct cat_db *db, const char *name, json_t **out, struct fl_err *err)
{
	PGresult *r;

	if (query_one(db, NULL, name, &r, err) != 0)
		return -1;
	*out = row_json(r, 0);
	PQclear(r);
	return 0;
}

int cat_warehouse_list(struct cat_db *db, json_t **out, struct fl_err *err)
{
	struct cat_conn *c;
	PGresult *r;
	json_t *arr;

	if (cat_conn_get(db, &c, err) != 0)
		return -1;
	r = cat_exec(c, "SELECT " WH_COLS " FROM warehouse ORDER BY name", 0, NULL, err);
	cat_conn_put(db, c);
	if (r == NULL)
		return -1;
	arr = json_array();
	for (int i = 0; i < PQntuples(r); i++)
		json_array_append_new(arr, row_json(r, i));
	PQclear(r);
	*out = json_pack("{s:o}", "warehouses", arr);
	return 0;
}

int cat_warehouse_update_profile(struct cat_db *db, const char *name, const json_t *profile,
                                 json_t **out, struct fl_err *err)
{
	json_t *norm = NULL;
	char *prof = NULL;
	struct cat_conn *c = NULL;
	PGresult *r = NULL;
	int rc = -1;

	if (check_profile(profile, &norm, err) != 0)
		return -1;
	prof = fl_json_dump(norm, NULL);
	json_decref(norm);
	if (prof == NULL)
		return fl_err_set(err, FL_ERR_NOMEM, "out of memory");
	if (cat_conn_get(db, &c, err) != 0)
		goto out;
	const char *params[2] = {name, prof};
	/* One statement: the row is locked, the namespace check and the update
	 * see the same state. */
	r = cat_exec(
	        c,
	        "WITH w AS (SELECT id, storage_profile->>'type' = $2::jsonb->>'type'"
	        "   AND storage_profile->>'location' = $2::jsonb->>'location' AS same_root,"
	        "   EXISTS (SELECT 1 FROM namespace n WHERE n.warehouse_id = warehouse.id) AS busy"
	        "   FROM warehouse WHERE name = $1 FOR UPDATE),"
	        " u AS (UPDATE warehouse SET storage_profile = $2::jsonb"
	        "   WHERE id IN (SELECT id FROM w WHERE same_root OR NOT busy) RETURNING " WH_COLS
	        ")"
	        " SELECT (SELECT count(*) FROM w), u.* FROM (SELECT 1) one LEFT JOIN u ON true",
	        2, params, err);
	if (r == NULL)
		goto out;
	if (cat_i64(PQgetvalue(r, 0, 0)) == 0) {
		fl_err_set(err, FL_ERR_NO_SUCH_WAREHOUSE, "warehouse '%.200s' does not exist",
		           name);
		goto out;
	}
	if (PQgetisnull(r, 0, 1)) {
		fl_err_set(
		        err, FL_ERR_CONFLICT,
		        "warehouse '%.200s' holds namespaces: its storage type and location cannot change (its tables live there); other settings can",
		        name);
		goto out;
	}
	*out = row_json_at(r, 0, 1);
	rc = *out != NULL ? 0 : fl_err_set(err, FL_ERR_NOMEM, "out of memory");
out:
	PQclear(r);
	if (c != NULL)
		cat_conn_put(db, c);
	free(prof);
	return rc;
}

int cat_warehouse_delete(struct cat_db *db, const char *name, struct fl_err *err)
{
	const char *params[1] = {name};
	struct cat_conn *c;
	PGresult *r;
	int rc = -1;

	if (cat_conn_get(db, &c, err) != 0)
		return -1;
	r = cat_exec(
	        c,
	        "WITH w AS (SELECT id, EXISTS (SELECT 1 FROM namespace n WHERE n.warehouse_id = warehouse.id) AS busy"
	        "   FROM warehouse WHERE name = $1 FOR UPDATE),"
	        " d AS (DELETE FROM warehouse WHERE id IN (SELECT id FROM w WHERE NOT busy) RETURNING id)"
	        " SELECT (SELECT count(*) FROM w), (SELECT count(*) FROM d)",
	        1, params, err);
	if (r == NULL)
		goto out;
	if (cat_i64(PQgetvalue(r, 0, 0)) == 0)
		fl_err_set(err, FL_ERR_NO_SUCH_WAREHOUSE, "warehouse '%.200s' does not exist",
		           name);
	else if (cat_i64(PQgetvalue(r, 0, 1)) == 0)
		fl_err_set(err, FL_ERR_CONFLICT,
		           "warehouse '%.200s' is not empty: drop its namespaces first", name);
	else
		rc = 0;
	PQclear(r);
out:
	cat_conn_put(db, c);
	return rc;
}

int cat_warehouse_update_properties(struct cat_db *db, const char *name, const json_t *props,
                                    json_t **out, struct fl_err *err)
{
	char *text = fl_json_dump(props, NULL);
	const char *params[2] = {name, text};
	struct cat_conn *c = NULL;
	PGresult *r = NULL;
	int rc = -1;

	if (text == NULL)
		return fl_err_set(err, FL_ERR_NOMEM, "out of memory");
	if (cat_conn_get(db, &c, err) != 0)
		goto out;
	r = cat_exec(c,
	             "UPDATE warehouse SET properties = $2::jsonb, updated_at = now()"
	             " WHERE name = $1 RETURNING " WH_COLS,
	             2, params, err);
	if (r == NULL)
		goto out;
	if (PQntuples(r) == 0) {
		fl_err_set(err, FL_ERR_NO_SUCH_WAREHOUSE, "warehouse '%.200s' does not exist",
		           name);
		goto out;
	}
	*out = row_json(r, 0);
	rc = *out != NULL ? 0 : fl_err_set(err, FL_ERR_NOMEM, "out of memory");
out:
	PQclear(r);
	if (c != NULL)
		cat_conn_put(db, c);
	free(text);
	return rc;
}
