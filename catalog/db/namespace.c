/* namespace.c - namespaces: nested levels and string properties.
 *
 * A namespace is a row (warehouse, levels text[]) unique per warehouse; its
 * parent is the row with all but the last level.  Creating a child takes a
 * share lock on the parent row and dropping takes an exclusive one, so a drop
 * cannot slip between a child's existence check and its insert. */
#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "buf.h"
#include "db_int.h"
#include "json.h"

const char *cat_ns_str(const struct cat_ns *ns, char *buf, size_t cap)
{
	size_t o = 0;

	buf[0] = '\0';
	for (int i = 0; i < ns->n && o + 1 < cap; i++) {
		int w = snprintf(buf + o, cap - o, "%s%.64s", i ? "." : "", ns->levels[i]);

		if (w < 0)
			break;
		o += (size_t)w;
	}
	return buf;
}

char *cat_text_array(const struct cat_ns *ns, int n)
{
	struct fl_buf b = FL_BUF_INIT;
	int ok = fl_buf_puts(&b, "{") == 0;

	for (int i = 0; ok && i < n; i++) {
		const char *s = ns->levels[i];

		ok = fl_buf_puts(&b, i ? ",\"" : "\"") == 0;
		for (; ok && *s; s++) {
			if ((*s == '"' || *s == '\\') && fl_buf_append(&b, "\\", 1) != 0)
				ok = 0;
			if (ok && fl_buf_append(&b, s, 1) != 0)
				ok = 0;
		}
		ok = ok && fl_buf_puts(&b, "\"") == 0;
	}
	if (!ok || fl_buf_puts(&b, "}") != 0) {
		fl_buf_free(&b);
		return NULL;
	}
	return fl_buf_steal(&b);
}

json_t *cat_parse_text_array(const char *s)
{
	json_t *arr = json_array();
	struct fl_buf b = FL_BUF_INIT;

	if (*s++ != '{')
		goto fail;
	while (*s && *s != '}') {
		fl_buf_reset(&b);
		if (*s == '"') {
			for (s++; *s && *s != '"'; s++) {
				if (*s == '\\' && s[1])
					s++;
				if (fl_buf_append(&b, s, 1) != 0)
					goto fail;
			}
			if (*s++ != '"')
				goto fail;
		} else {
			for (; *s && *s != ',' && *s != '}'; s++)
				if (fl_buf_append(&b, s, 1) != 0)
					goto fail;
		}
		json_array_append_new(arr, json_stringn(b.data ? b.data : "", b.len));
		if (*s == ',')
			s++;
	}
	fl_buf_free(&b);
	return arr;
fail:
	fl_buf_free(&b);
	json_decref(arr);
	return NULL;
}

static json_t *ns_json(const struct cat_ns *ns)
{
	json_t *a = json_array();

	for (int i = 0; i < ns->n; i++)
		json_array_append_new(a, json_string(ns->levels[i]));
	return a;
}

static json_t *ns_result(const struct cat_ns *ns, const char *props_text)
{
	json_t *p = json_loads(props_text, 0, NULL);

	return json_pack("{s:o, s:o}", "namespace", ns_json(ns), "properties",
	                 p ? p : json_object());
}

static int no_such(const struct cat_ns *ns, int n, struct fl_err *err)
{
	char b[300];
	struct cat_ns part = {ns->levels, n};

	return fl_err_set(err, FL_ERR_NO_SUCH_NAMESPACE, "namespace %s does not exist",
	                  cat_ns_str(&part, b, sizeof(b)));
}

/* Locks the namespace row of the first n levels of ns (share or update);
 * 1 = found (id in *id if given), 0 = absent, -1 = error. */
static int lock_row(struct cat_conn *c, const char *wh, const struct cat_ns *ns, int n,
                    bool exclusive, char *id, size_t id_cap, char **props, struct fl_err *err)
{
	char *arr = cat_text_array(ns, n);
	const char *params[2] = {wh, arr};
	PGresult *r;
	int found;

	if (arr == NULL)
		return fl_err_set(err, FL_ERR_NOMEM, "out of memory");
	r = cat_exec(
	        c,
	        exclusive
	                ? "SELECT id, properties::text FROM namespace WHERE warehouse_id = $1 AND levels = $2::text[] FOR UPDATE"
	                : "SELECT id, properties::text FROM namespace WHERE warehouse_id = $1 AND levels = $2::text[] FOR SHARE",
	        2, params, err);
	free(arr);
	if (r == NULL)
		return -1;
	found = PQntuples(r) == 1;
	if (found && id != NULL)
		snprintf(id, id_cap, "%s", PQgetvalue(r, 0, 0));
	if (found && props != NULL)
		*props = strdup(PQgetvalue(r, 0, 1));
	PQclear(r);
	return found;
}

int cat_namespace_create(struct cat_db *db, struct cat_tx *tx, const char *wh_id,
                         const struct cat_ns *ns, const json_t *props, json_t **out,
                         struct fl_err *err)
{
	char *arr = NULL, *ptext = NULL, name[300];
	struct cat_scope sc;
	PGresult *r;
	bool ok = false;

	arr = cat_text_array(ns, ns->n);
	ptext = props ? fl_json_dump(props, NULL) : strdup("{}");
	if (arr == NULL || ptext == NULL) {
		free(arr);
		free(ptext);
		return fl_err_set(err, FL_ERR_NOMEM, "out of memory");
	}
	if (cat_scope_begin(db, tx, true, &sc, err) != 0)
		goto out_free;
	if (ns->n > 1) {
		int found = lock_row(sc.c, wh_id, ns, ns->n - 1, false, NULL, 0, NULL, err);

		if (found < 0)
			goto out;
		if (found == 0) {
			no_such(ns, ns->n - 1, err);
			fl_err_prefix(err, "cannot create %s", cat_ns_str(ns, name, sizeof(name)));
			goto out;
		}
	}
	const char *params[3] = {wh_id, arr, ptext};
	r = cat_exec(sc.c,
	             "INSERT INTO namespace (warehouse_id, levels, properties)"
	             " VALUES ($1, $2::text[], $3::jsonb) RETURNING properties::text",
	             3, params, err);
	if (r == NULL) {
		if (err->kind == FL_ERR_ALREADY_EXISTS)
			fl_err_set(err, FL_ERR_ALREADY_EXISTS, "namespace %s already exists",
			           cat_ns_str(ns, name, sizeof(name)));
		goto out;
	}
	*out = ns_result(ns, PQgetvalue(r, 0, 0));
	PQclear(r);
	ok = true;
out:
	if (cat_scope_end(&sc, ok, err) != 0 && ok) {
		json_decref(*out);
		ok = false;
	}
out_free:
	free(arr);
	free(ptext);
	return ok ? 0 : -1;
}

int cat_namespace_id(struct cat_conn *c, const char *wh_id, const struct cat_ns *ns, char *id,
                     size_t cap, struct fl_err *err)
{
	int found = lock_row(c, wh_id, ns, ns->n, false, id, cap, NULL, err);

	if (found == 0)
		return no_such(ns, ns->n, err);
	return found < 0 ? -1 : 0;
}

int cat_namespace_load(struct cat_db *db, struct cat_tx *tx, const char *wh_id,
                       const struct cat_ns *ns, json_t **out, struct fl_err *err)
{
	char *arr = cat_text_array(ns, ns->n);
	const char *params[2] = {wh_id, arr};
	struct cat_scope sc;
	PGresult *r;

	if (arr == NULL)
		return fl_err_set(err, FL_ERR_NOMEM, "out of memory");
	if (cat_scope_begin(db, tx, false, &sc, err) != 0) {
		free(arr);
		return -1;
	}
	r = cat_exec(
	        sc.c,
	        "SELECT properties::text FROM namespace WHERE warehouse_id = $1 AND levels = $2::text[]",
	        2, params, err);
	(void)cat_scope_end(&sc, true, err);
	free(arr);
	if (r == NULL)
		return -1;
	if (PQntuples(r) == 0) {
		PQclear(r);
		return no_such(ns, ns->n, err);
	}
	*out = ns_result(ns, PQgetvalue(r, 0, 0));
	PQclear(r);
	return 0;
}
/* "2 namespaces and 1 table": the non-zero counts of r's row (namespaces,
 * tables, views), for the error that refuses to drop a namespace. */
static void held_str(const PGresult *r, char *buf, size_t cap)
{
	static const char *const kind[3] = {"namespace", "table", "view"};
	int64_t c[3];
	int n = 0, k = 0;
	size_t at = 0;

	for (int i = 0; i < 3; i++)
		n += (c[i] = cat_i64(PQgetvalue(r, 0, i))) > 0;
	buf[0] = '\0';
	for (int i = 0; i < 3 && at < cap; i++) {
		if (c[i] <= 0)
			continue;
		k++;
		at += (size_t)snprintf(buf + at, cap - at, "%s%" PRId64 " %s%s",
		                       k == 1   ? ""
		                       : k == n ? " and "
		                                : ", ",
		                       c[i], kind[i], c[i] == 1 ? "" : "s");
	}
}

int cat_namespace_drop(struct cat_db *db, struct cat_tx *tx, const char *wh_id,
                       const struct cat_ns *ns, struct fl_err *err)
{
	char id[32], *arr = NULL, name[300], depth[16];
	struct cat_scope sc;
	PGresult *r;
	int found;
	bool ok = false;

	if (cat_scope_begin(db, tx, true, &sc, err) != 0)
		return -1;
	found = lock_row(sc.c, wh_id, ns, ns->n, true, id, sizeof(id), NULL, err);
	if (found <= 0) {
		if (found == 0)
			no_such(ns, ns->n, err);
		goto out;
	}
	arr = cat_text_array(ns, ns->n);
	snprintf(depth, sizeof(depth), "%d", ns->n);
	const char *params[4] = {wh_id, arr, depth, id};
	r = cat_exec(
	        sc.c,
	        "SELECT (SELECT count(*) FROM namespace WHERE warehouse_id = $1"
	        "         AND cardinality(levels) > $3::int AND levels[1:$3::int] = $2::text[]),"
	        "       (SELECT count(*) FROM table_entry WHERE namespace_id = $4::bigint AND kind = 'TABLE'),"
	        "       (SELECT count(*) FROM table_entry WHERE namespace_id = $4::bigint AND kind = 'VIEW')",
	        4, params, err);
	if (r == NULL)
		goto out;
	if (cat_i64(PQgetvalue(r, 0, 0)) + cat_i64(PQgetvalue(r, 0, 1)) +
	            cat_i64(PQgetvalue(r, 0, 2)) >
	    0) {
		char held[128];

		held_str(r, held, sizeof(held));
		fl_err_set(err, FL_ERR_NAMESPACE_NOT_EMPTY,
		           "namespace %s is not empty: it holds %s",
		           cat_ns_str(ns, name, sizeof(name)), held);
		PQclear(r);
		goto out;
	}
	PQclear(r);
	const char *p1[1] = {id};
	r = cat_exec(sc.c, "DELETE FROM namespace WHERE id = $1::bigint", 1, p1, err);
	if (r == NULL)
		goto out;
	PQclear(r);
	ok = true;
out:
	free(arr);
	return cat_scope_end(&sc, ok, err);
}

int cat_namespace_update_props(struct cat_db *db, struct cat_tx *tx, const char *wh_id,
                               const struct cat_ns *ns, const json_t *removals,
                               const json_t *updates, long max_props, json_t **out,
                               struct fl_err *err)
{
	json_t *props = NULL, *updated = json_array(), *removed = json_array(),
	       *missing = json_array();
	char id[32], *ptext = NULL, *newtext = NULL;
	struct cat_scope sc;
	bool began = false, ok = false;
	const char *k;
	json_t *v;
	size_t i;
	int found;

	/* Contradictions are the client's error whatever the stored state. */
	json_array_foreach((json_t *)removals, i, v)
	{
		if (json_object_get(updates, json_string_value(v)) != NULL) {
			fl_err_set(err, FL_ERR_UNPROCESSABLE,
			           "property '%.200s' is both set and removed in one request",
			           json_string_value(v));
			goto out;
		}
	}
	if (cat_scope_begin(db, tx, true, &sc, err) != 0)
		goto out;
	began = true;
	found = lock_row(sc.c, wh_id, ns, ns->n, true, id, sizeof(id), &ptext, err);
	if (found <= 0) {
		if (found == 0)
			no_such(ns, ns->n, err);
		goto out;
	}
	props = ptext ? json_loads(ptext, 0, NULL) : NULL;
	if (props == NULL) {
		fl_err_set(err, FL_ERR_INTERNAL, "stored namespace properties are not JSON");
		goto out;
	}
	json_array_foreach((json_t *)removals, i, v)
	{
		const char *key = json_string_value(v);

		if (json_object_get(props, key) != NULL) {
			json_object_del(props, key);
			json_array_append(removed, v);
		} else {
			json_array_append(missing, v);
		}
	}
	json_object_foreach((json_t *)updates, k, v)
	{
		json_object_set(props, k, v);
		json_array_append_new(updated, json_string(k));
	}
	if ((long)json_object_size(props) > max_props) {
		fl_err_set(
		        err, FL_ERR_BAD_REQUEST,
		        "namespace would have %zu properties, over the limit of %ld (max-properties)",
		        json_object_size(props), max_props);
		goto out;
	}
	newtext = fl_json_dump(props, NULL);
	const char *params[2] = {id, newtext};
	PGresult *r = cat_exec(sc.c,
	                       "UPDATE namespace SET properties = $2::jsonb, updated_at = now()"
	                       " WHERE id = $1::bigint",
	                       2, params, err);
	if (r == NULL)
		goto out;
	PQclear(r);
	ok = true;
out:
	if (began && cat_scope_end(&sc, ok, err) != 0)
		ok = false;
	if (ok)
		*out = json_pack("{s:O, s:O, s:O}", "updated", updated, "removed", removed,
		                 "missing", missing);
	json_decref(props);
	json_decref(updated);
	json_decref(removed);
	json_decref(missing);
	free(ptext);
	free(newtext);
	return ok ? 0 : -1;
}

int cat_namespace_list(struct cat_db *db, struct cat_tx *tx, const char *wh_id,
                       const struct cat_ns *parent, const char *page_token, long page_size,
                       json_t **out, struct fl_err *err)
{
	json_t *cursor = NULL, *list = NULL, *next = json_null();
	char *parr = NULL, *carr = NULL, depth[16], child[16], limit[24];
	struct cat_scope sc;
	bool began = false;
	PGresult *r = NULL;
	int rc = -1;

	if (page_token != NULL) {
		size_t i;
		json_t *v;

		if (cat_page_token_parse(db, page_token, &cursor, err) != 0)
			goto out;
		/* The cursor is the last returned namespace; it must sit under this parent. */
		if (!json_is_array(cursor) || (int)json_array_size(cursor) != parent->n + 1)
			goto bad_token;
		json_array_foreach(cursor, i, v)
		{
			if (!json_is_string(v) ||
			    (i < (size_t)parent->n &&
			     strcmp(json_string_value(v), parent->levels[i]) != 0))
				goto bad_token;
		}
	}
	if (cat_scope_begin(db, tx, false, &sc, err) != 0)
		goto out;
	began = true;
	if (parent->n > 0) {
		int found = lock_row(sc.c, wh_id, parent, parent->n, false, NULL, 0, NULL, err);

		if (found <= 0) {
			if (found == 0)
				no_such(parent, parent->n, err);
			goto out;
		}
	}
	parr = cat_text_array(parent, parent->n);
	if (cursor != NULL) {
		const char *lv[64];
		size_t i;
		json_t *v;
		struct cat_ns cns = {lv, (int)json_array_size(cursor)};

		if (cns.n > 64)
			goto bad_token;
		json_array_foreach(cursor, i, v) lv[i] = json_string_value(v);
		carr = cat_text_array(&cns, cns.n);
	}
	snprintf(depth, sizeof(depth), "%d", parent->n);
	snprintf(child, sizeof(child), "%d", parent->n + 1);
	snprintf(limit, sizeof(limit), "%ld", page_size + 1);
	const char *params[6] = {wh_id, child, depth, parr, carr, limit};
	r = cat_exec(
	        sc.c,
	        "SELECT levels FROM namespace WHERE warehouse_id = $1 AND cardinality(levels) = $2::int"
	        " AND ($3::int = 0 OR levels[1:$3::int] = $4::text[])"
	        " AND ($5::text[] IS NULL OR levels > $5::text[])"
	        " ORDER BY levels LIMIT $6::bigint",
	        6, params, err);
	if (r == NULL)
		goto out;
	list = json_array();
	for (int i = 0; i < PQntuples(r) && i < page_size; i++) {
		json_t *lv = cat_parse_text_array(PQgetvalue(r, i, 0));

		if (lv == NULL) {
			fl_err_set(err, FL_ERR_INTERNAL, "unreadable namespace levels");
			goto out;
		}
		json_array_append_new(list, lv);
	}
	if (PQntuples(r) > page_size) {
		char *tok =
		        cat_page_token_make(db, json_array_get(list, json_array_size(list) - 1));

		if (tok == NULL) {
			fl_err_set(err, FL_ERR_NOMEM, "out of memory");
			goto out;
		}
		json_decref(next);
		next = json_string(tok);
		free(tok);
	}
	*out = json_pack("{s:O, s:O}", "namespaces", list, "next-page-token", next);
	rc = 0;
	goto out;
bad_token:
	fl_err_set(err, FL_ERR_BAD_REQUEST, "invalid pageToken: it was issued for another listing");
out:
	if (began)
		(void)cat_scope_end(&sc, true, err);
	PQclear(r);
	json_decref(cursor);
	json_decref(list);
	json_decref(next);
	free(parr);
	free(carr);
	return rc;
}
