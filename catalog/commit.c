/* commit.c - the commit engine: every change to a table's metadata goes
 * through here and the builder it calls (meta/).
 *
 * The invariant (DESIGN §3), in one PostgreSQL transaction:
 *   1. lock the table rows, in a fixed order (namespace levels, then name),
 *      so concurrent multi-table commits cannot deadlock;
 *   2. check every requirement against the locked metadata (409 on failure);
 *   3. apply the updates with the builder (400 when invalid);
 *   4. write <metadata dir>/<NNNNN>-<uuid>.metadata.json (create-exclusive,
 *      fsynced) before the pointer moves;
 *   5. move the pointer, store the metadata beside it, insert the commit
 *      event; the caller's idempotency record rides in the same transaction;
 *   6. COMMIT.  A definite failure deletes the files written in step 4; an
 *      unknown COMMIT outcome keeps them and is reported as such (500).
 * A 409 therefore always means "not applied", and a 2xx "applied once".
 *
 * A single-table commit that neither creates the table nor moves it runs
 * steps 1-4 optimistically (commit_try), as DESIGN §3 allows: it reads the
 * row without a lock (from basecache.c when this process holds the
 * version; not at all on its first try when the loadTable cache holds a
 * version with its row), judges, builds and writes the file, and step 5
 * becomes a compare-and-swap on the version read, so the row lock is held
 * for that statement and the COMMIT only.  When the version moved, the
 * unused file is deleted and the commit is judged again on the new state
 * (a stale client gets its 409 as before); after OPTIMISTIC_TRIES it takes
 * the row lock first (commit_locked), as every other commit does. */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "buf.h"
#include "clock.h"
#include "commit_int.h"
#include "db/db_int.h"
#include "iceberg/snapshot.h"
#include "io/io.h"
#include "json.h"
#include "tablemeta.h"
#include "uuid.h"

void cat_changes_free(struct cat_change *c, int n)
{
	for (int i = 0; i < n; i++) {
		free(c[i].metadata_location);
		free(c[i].metadata);
		c[i].metadata_location = c[i].metadata = NULL;
	}
}

/* Appends one path segment, escaping what a file system or URI would
 * misread ('/', '%', '\', control bytes, and "." / ".." as whole segments). */
static int append_segment(struct fl_buf *b, const char *s)
{
	static const char hex[] = "0123456789ABCDEF";
	bool dots = strcmp(s, ".") == 0 || strcmp(s, "..") == 0;

	if (fl_buf_puts(b, "/") != 0)
		return -1;
	for (const unsigned char *p = (const unsigned char *)s; *p; p++) {
		if (*p < 0x20 || *p == 0x7f || *p == '/' || *p == '%' || *p == '\\' ||
		    (dots && *p == '.')) {
			char e[3] = {'%', hex[*p >> 4], hex[*p & 15]};

			if (fl_buf_append(b, e, 3) != 0)
				return -1;
		} else if (fl_buf_append(b, p, 1) != 0) {
			return -1;
		}
	}
	return 0;
}

char *cat_default_location(const struct cat_warehouse *wh, const struct cat_ns *ns,
                           const char *name)
{
	struct fl_buf b = FL_BUF_INIT;

	if (fl_buf_puts(&b, wh->location) != 0)
		goto fail;
	for (int i = 0; i < ns->n; i++)
		if (append_segment(&b, ns->levels[i]) != 0)
			goto fail;
	if (append_segment(&b, name) != 0)
		goto fail;
	return fl_buf_steal(&b);
fail:
	fl_buf_free(&b);
	return NULL;
}

char *cat_create_location(const struct cat_warehouse *wh, const struct cat_ns *ns, const char *name,
                          const char *given)
{
	size_t n;

	if (given == NULL || given[0] == '\0')
		return cat_default_location(wh, ns, name);
	n = strlen(given);
	while (n > 0 && given[n - 1] == '/')
		n--;
	return strndup(given, n);
}

/* The file name of metadata version `version` of a table. */
static char *metadata_file(const json_t *meta, int64_t version)
{
	const json_t *props = json_object_get(meta, "properties");
	const char *dir = json_string_value(json_object_get(props, "write.metadata.path"));
	char name[CAT_META_FILE_NAME_MAX];
	struct fl_buf b = FL_BUF_INIT;

	cat_meta_metadata_file_name(version, name);
	if (dir != NULL && dir[0] != '\0') {
		size_t n = strlen(dir);

		while (n > 1 && dir[n - 1] == '/')
			n--;
		if (fl_buf_append(&b, dir, n) != 0 || fl_buf_printf(&b, "/%s", name) != 0)
			goto fail;
	} else if (fl_buf_printf(&b, "%s/metadata/%s", cat_meta_location(meta), name) != 0) {
		goto fail;
	}
	return fl_buf_steal(&b);
fail:
	fl_buf_free(&b);
	return NULL;
}

static void row_stats(const json_t *meta, struct cat_row_stats *st)
{
	const json_t *sum = cat_meta_current_summary(meta);
	const char *keys[3] = {"total-records", "total-data-files", "total-files-size"};
	int64_t *dst[3] = {&st->records, &st->files, &st->bytes};

	for (int i = 0; i < 3; i++) {
		const char *v = json_string_value(json_object_get(sum, keys[i]));

		*dst[i] = v ? strtoll(v, NULL, 10) : -1;
	}
}

/* The operation of the snapshot a commit made current, for the event. */
static const char *operation(const json_t *meta)
{
	const json_t *sum = cat_meta_current_summary(meta);
	const char *op = json_string_value(json_object_get(sum, "operation"));

	return op ? op : "metadata";
}

static int written_add(struct cat_written *w, const char *p)
{
	char **grown = realloc(w->paths, sizeof(char *) * (size_t)(w->n + 1));

	if (grown == NULL)
		return -1;
	w->paths = grown;
	w->paths[w->n] = strdup(p);
	if (w->paths[w->n] == NULL)
		return -1;
	w->n++;
	return 0;
}

void cat_written_done(struct cat_written *w, bool remove)
{
	for (int i = 0; i < w->n; i++) {
		struct fl_err ignored;

		/* Best effort: an orphan metadata file is harmless, a lost one is not. */
		if (remove && st_io_delete(w->io, w->paths[i], &ignored) != 0)
			ignored.kind = FL_ERR_NONE;
		free(w->paths[i]);
	}
	free(w->paths);
	w->paths = NULL;
	w->n = 0;
}

static bool under(const char *uri, const char *dir);

/* write.metadata.path, when set, must be the table's location or lie under
 * it: the location is checked to be inside the warehouse, and the property
 * must not let a client make the server write files anywhere else. */
static int metadata_dir_check(const json_t *meta, struct fl_err *err)
{
	const char *dir = json_string_value(
	        json_object_get(json_object_get(meta, "properties"), "write.metadata.path"));
	const char *loc = cat_meta_location(meta);
	size_t n = loc != NULL ? strlen(loc) : 0;

	while (n > 0 && loc[n - 1] == '/')
		n--;
	if (dir == NULL || dir[0] == '\0' || under(dir, loc) ||
	    (n > 0 && strncmp(dir, loc, n) == 0 && strspn(dir + n, "/") == strlen(dir + n)))
		return 0;
	return fl_err_set(err, FL_ERR_BAD_REQUEST,
	                  "write.metadata.path '%.200s' must lie under the location '%.200s'", dir,
	                  loc != NULL ? loc : "");
}

/* The text and the new file's name of version `version` of meta, the name
 * recorded in w; nothing is written yet (metadata_put).  The snapshots that
 * prev (the memo of the base's text, or NULL) holds are copied from it;
 * *next (when next is not NULL) receives the memo of the new text, or NULL. */
static int metadata_text_memo(const json_t *meta, int64_t version, const struct fl_json_memo *prev,
                              struct fl_json_memo **next, struct cat_written *w, char **path,
                              char **text, size_t *len, struct fl_err *err)
{
	char *t, *p;

	if (next != NULL)
		*next = NULL;
	if (w->io == NULL)
		return fl_err_set(err, FL_ERR_INTERNAL, "no storage handle for the warehouse");
	if (metadata_dir_check(meta, err) != 0)
		return -1;
	t = fl_json_dump_memo(meta, cat_meta_shared_arrays, prev, next, len);
	/* A document past the bound is refused before anything is written:
	 * every later load and commit would read it whole. */
	if (t != NULL && w->max_bytes > 0 && *len > w->max_bytes) {
		free(t);
		if (next != NULL) {
			fl_json_memo_unref(*next);
			*next = NULL;
		}
		return fl_err_set(err, FL_ERR_TOO_LARGE,
		                  "the new metadata of %zu bytes exceeds the limit of %zu bytes "
		                  "(max-metadata-bytes)",
		                  *len, w->max_bytes);
	}
	p = metadata_file(meta, version);
	if (t == NULL || p == NULL || written_add(w, p) != 0) {
		free(t);
		free(p);
		if (next != NULL) {
			fl_json_memo_unref(*next);
			*next = NULL;
		}
		return fl_err_set(err, FL_ERR_NOMEM, "out of memory");
	}
	*path = p;
	*text = t;
	return 0;
}

static int metadata_text(const json_t *meta, int64_t version, struct cat_written *w, char **path,
                         char **text, size_t *len, struct fl_err *err)
{
	return metadata_text_memo(meta, version, NULL, NULL, w, path, text, len, err);
}

/* Writes the file metadata_text named, durable when this returns; on
 * failure w forgets the name (and path and text are freed, set to NULL). */
static int metadata_put(struct cat_written *w, char **path, char **text, size_t len,
                        struct fl_err *err)
{
	if (st_io_write_new(w->io, *path, *text, len, err) == 0)
		return 0;
	w->n--;
	free(w->paths[w->n]);
	free(*text);
	free(*path);
	*path = *text = NULL;
	return -1;
}

int cat_write_metadata(const json_t *meta, int64_t version, struct cat_written *w, char **path,
                       char **text, struct fl_err *err)
{
	char *p, *t;
	size_t n;

	if (metadata_text(meta, version, w, &p, &t, &n, err) != 0 ||
	    metadata_put(w, &p, &t, n, err) != 0)
		return -1;
	*path = p;
	*text = t;
	return 0;
}

static char *table_str(const struct cat_ns *ns, const char *name, char *buf, size_t cap)
{
	char nsb[300];

	snprintf(buf, cap, "%s.%.200s", cat_ns_str(ns, nsb, sizeof(nsb)), name);
	return buf;
}

/* FL_ERR_ALREADY_EXISTS when a view has the name a new table would take. */
static int no_view(struct cat_conn *c, const char *nsid, const struct cat_ns *ns, const char *name,
                   struct fl_err *err)
{
	char buf[520];
	int n = cat_view_exists(c, nsid, name, err);

	if (n > 0)
		return fl_err_set(err, FL_ERR_ALREADY_EXISTS, "view %s already exists",
		                  table_str(ns, name, buf, sizeof(buf)));
	return n;
}

int cat_metadata_read(const struct cat_warehouse *wh, const char *metadata_location,
                      size_t max_bytes, const char *what, json_t **out, struct fl_err *err)
{
	size_t wl = strlen(wh->location), n;
	char *raw = NULL;
	int rc;

	if (strncmp(metadata_location, wh->location, wl) != 0 || metadata_location[wl] != '/')
		return fl_err_set(err, FL_ERR_BAD_REQUEST,
		                  "%s: metadata-location %.200s is outside the warehouse %.200s",
		                  what, metadata_location, wh->location);
	if (st_io_read(wh->io, metadata_location, max_bytes, &raw, &n, err) != 0) {
		if (err->kind == FL_ERR_NOT_FOUND)
			err->kind = FL_ERR_BAD_REQUEST;
		return fl_err_prefix(err, "%s", what);
	}
	rc = fl_json_parse(raw, n, 1000, out, err);
	free(raw);
	return rc != 0 ? fl_err_prefix(err, "%s: %.150s", what, metadata_location) : 0;
}

int64_t cat_file_version(const char *location)
{
	const char *base = strrchr(location, '/');
	int64_t v = 0;

	base = base ? base + 1 : location;
	for (int i = 0; base[i] >= '0' && base[i] <= '9' && i < 18; i++)
		v = v * 10 + (base[i] - '0');
	return v;
}

int cat_table_create(struct cat_db *db, struct cat_tx *tx, const struct cat_warehouse *wh,
                     const struct cat_ns *ns, const json_t *req, bool stage,
                     char **metadata_location, char **metadata, const char *actor,
                     struct fl_err *err)
{
	const char *name = json_string_value(json_object_get(req, "name"));
	const char *given = json_string_value(json_object_get(req, "location"));
	char nsid[24], uuid[FL_UUID_STR], tbuf[520], *location = NULL, *path = NULL, *text = NULL;
	struct cat_written w = {.io = wh->io};
	struct cat_row row = {0};
	struct cat_row_stats st;
	struct cat_scope sc;
	json_t *meta = NULL;
	bool ok = false;
	int found;

	location = cat_create_location(wh, ns, name, given);
	if (location == NULL)
		return fl_err_set(err, FL_ERR_NOMEM, "out of memory");
	if (cat_scope_begin(db, tx, !stage, &sc, err) != 0) {
		free(location);
		return -1;
	}
	/* Serialize with other creates in the warehouse before looking for the
	 * name, so that a racing create finds the winner and answers 409. */
	if (!stage && cat_warehouse_lock(sc.c, wh->id, err) != 0)
		goto out;
	if (cat_namespace_id(sc.c, wh->id, ns, nsid, sizeof(nsid), err) != 0)
		goto out;
	found = cat_row_lock(sc.c, wh->id, ns, name, NULL, &row, err);
	if (found != 0) {
		if (found > 0)
			fl_err_set(err, FL_ERR_ALREADY_EXISTS, "table %s already exists",
			           table_str(ns, name, tbuf, sizeof(tbuf)));
		goto out;
	}
	if (no_view(sc.c, nsid, ns, name, err) != 0 ||
	    cat_location_check(sc.c, wh, location, NULL, err) != 0)
		goto out;
	fl_uuid_v4(uuid);
	if (cat_meta_create(req, location, uuid, fl_now_ms(), &meta, err) != 0)
		goto out;
	{
		/* Engines write data and manifests before the first commit; a local
		 * warehouse must have the folders ready (DuckDB does not create them). */
		struct fl_buf d = FL_BUF_INIT;
		int rc = fl_buf_printf(&d, "%s/metadata", location) != 0 ||
		         st_io_mkdirs(wh->io, d.data, err) != 0;

		fl_buf_reset(&d);
		rc = rc || fl_buf_printf(&d, "%s/data", location) != 0 ||
		     st_io_mkdirs(wh->io, d.data, err) != 0;
		fl_buf_free(&d);
		if (rc) {
			if (err->kind == FL_ERR_NONE)
				fl_err_set(err, FL_ERR_NOMEM, "out of memory");
			goto out;
		}
	}
	if (stage) {
		*metadata = fl_json_dump(meta, NULL);
		*metadata_location = NULL;
		ok = *metadata != NULL;
		if (!ok)
			fl_err_set(err, FL_ERR_NOMEM, "out of memory");
		goto out;
	}
	if (cat_write_metadata(meta, 0, &w, &path, &text, err) != 0)
		goto out;
	row_stats(meta, &st);
	if (cat_row_insert(sc.c, wh->id, nsid, uuid, name, location, path,
	                   cat_db_inline_text(db, text), 0, &st, err) != 0 ||
	    cat_event_insert(sc.c, uuid, wh->id, ns, name, 0, path, -1, "create", NULL, actor,
	                     err) != 0)
		goto out;
	*metadata_location = path;
	*metadata = text;
	path = text = NULL;
	ok = true;
out:
	if (cat_scope_end(&sc, ok, err) != 0 && ok) {
		ok = false;
		if (!stage) {
			free(*metadata_location);
			free(*metadata);
		}
	}
	cat_written_done(&w, !ok && err->kind != FL_ERR_COMMIT_STATE_UNKNOWN);
	cat_row_free(&row);
	json_decref(meta);
	free(location);
	free(path);
	free(text);
	return ok ? 0 : -1;
}

int cat_table_register(struct cat_db *db, struct cat_tx *tx, const struct cat_warehouse *wh,
                       const struct cat_ns *ns, const char *name, const char *metadata_location,
                       bool overwrite, const struct cat_limits *lim, char **metadata,
                       const char *actor, struct fl_err *err)
{
	char nsid[24], id[FL_UUID_STR], tbuf[520], *text = NULL;
	struct cat_row row = {0};
	struct cat_row_stats st;
	struct cat_scope sc;
	json_t *meta = NULL;
	const char *loc;
	int64_t fver;
	bool ok = false;
	int found;

	if (cat_metadata_read(wh, metadata_location, lim->max_metadata_bytes, "register-table",
	                      &meta, err) != 0)
		return -1;
	if (cat_meta_validate(meta, err) != 0) {
		json_decref(meta);
		return fl_err_prefix(err, "register-table: %.150s", metadata_location);
	}
	loc = cat_meta_location(meta);
	fver = cat_file_version(metadata_location);
	if (cat_scope_begin(db, tx, true, &sc, err) != 0) {
		json_decref(meta);
		return -1;
	}
	if (cat_warehouse_lock(sc.c, wh->id, err) != 0)
		goto out;
	if (cat_namespace_id(sc.c, wh->id, ns, nsid, sizeof(nsid), err) != 0)
		goto out;
	found = cat_row_lock(sc.c, wh->id, ns, name, NULL, &row, err);
	if (found < 0)
		goto out;
	if (found > 0 && !overwrite) {
		fl_err_set(err, FL_ERR_ALREADY_EXISTS, "table %s already exists",
		           table_str(ns, name, tbuf, sizeof(tbuf)));
		goto out;
	}
	if ((!found && no_view(sc.c, nsid, ns, name, err) != 0) ||
	    cat_location_check(sc.c, wh, loc, found ? row.id : NULL, err) != 0)
		goto out;
	text = fl_json_dump(meta, NULL);
	if (text == NULL) {
		fl_err_set(err, FL_ERR_NOMEM, "out of memory");
		goto out;
	}
	row_stats(meta, &st);
	if (found) {
		if (fver <= row.version)
			fver = row.version + 1;
		struct cat_row_move mv = {
		        .id = row.id,
		        .metadata_location = metadata_location,
		        .metadata = cat_db_inline_text(db, text),
		        .version = fver,
		        .location = loc,
		        .stats = &st,
		        .ns = ns,
		        .name = name,
		        .snapshot_id = cat_meta_current_snapshot_id(meta),
		        .operation = "register",
		        .request_id = NULL,
		        .actor = actor,
		};
		if (cat_row_move(sc.c, &mv, err) != 0)
			goto out;
		cat_scope_touched(&sc, row.id);
	} else {
		fl_uuid_v4(id);
		if (cat_row_insert(sc.c, wh->id, nsid, id, name, loc, metadata_location,
		                   cat_db_inline_text(db, text), fver, &st, err) != 0 ||
		    cat_event_insert(sc.c, id, wh->id, ns, name, fver, metadata_location,
		                     cat_meta_current_snapshot_id(meta), "register", NULL, actor,
		                     err) != 0)
			goto out;
	}
	ok = true;
out:
	if (cat_scope_end(&sc, ok, err) != 0)
		ok = false;
	if (ok)
		*metadata = text;
	else
		free(text);
	cat_row_free(&row);
	json_decref(meta);
	return ok ? 0 : -1;
}

static int cmp_change(const struct cat_change *a, const struct cat_change *b)
{
	for (int i = 0; i < a->ns.n && i < b->ns.n; i++) {
		int c = strcmp(a->ns.levels[i], b->ns.levels[i]);

		if (c != 0)
			return c;
	}
	if (a->ns.n != b->ns.n)
		return a->ns.n < b->ns.n ? -1 : 1;
	return strcmp(a->name, b->name);
}

static bool has_create(const json_t *reqs)
{
	size_t i;
	json_t *v;

	json_array_foreach((json_t *)reqs, i, v)
	{
		if (json_is_string(json_object_get(v, "type")) &&
		    strcmp(json_string_value(json_object_get(v, "type")), "assert-create") == 0)
			return true;
	}
	return false;
}

static bool has_action(const json_t *updates, const char *action)
{
	size_t i;
	json_t *v;

	json_array_foreach((json_t *)updates, i, v)
	{
		const char *a = json_string_value(json_object_get(v, "action"));

		if (a != NULL && strcmp(a, action) == 0)
			return true;
	}
	return false;
}

/* The shape of each update action: its required member and that member's
 * JSON type.  Checked before anything else so that a malformed update is a
 * 400 even when a requirement would fail too (Java rejects such a request
 * while deserializing it). */
struct action_shape {
	const char *action;
	const char *member;
	json_type type;
};

/* clang-format off */
static const struct action_shape action_shapes[] = {
	{"assign-uuid", "uuid", JSON_STRING},
	{"upgrade-format-version", "format-version", JSON_INTEGER},
	{"add-schema", "schema", JSON_OBJECT},
	{"set-current-schema", "schema-id", JSON_INTEGER},
	{"add-spec", "spec", JSON_OBJECT},
	{"set-default-spec", "spec-id", JSON_INTEGER},
	{"add-sort-order", "sort-order", JSON_OBJECT},
	{"set-default-sort-order", "sort-order-id", JSON_INTEGER},
	{"add-snapshot", "snapshot", JSON_OBJECT},
	{"set-snapshot-ref", "ref-name", JSON_STRING},
	{"remove-snapshots", "snapshot-ids", JSON_ARRAY},
	{"remove-snapshot-ref", "ref-name", JSON_STRING},
	{"set-location", "location", JSON_STRING},
	{"set-properties", "updates", JSON_OBJECT},
	{"remove-properties", "removals", JSON_ARRAY},
	{"set-statistics", "statistics", JSON_OBJECT},
	{"remove-statistics", "snapshot-id", JSON_INTEGER},
	{"set-partition-statistics", "partition-statistics", JSON_OBJECT},
	{"remove-partition-statistics", "snapshot-id", JSON_INTEGER},
	{"remove-partition-specs", "spec-ids", JSON_ARRAY},
	{"remove-schemas", "schema-ids", JSON_ARRAY},
	{"add-encryption-key", "encryption-key", JSON_OBJECT},
	{"remove-encryption-key", "key-id", JSON_STRING},
};
/* clang-format on */

static int check_actions(const json_t *updates, struct fl_err *err)
{
	size_t i;
	json_t *u;

	json_array_foreach((json_t *)updates, i, u)
	{
		const char *a = NULL, *k, *s;
		const struct action_shape *shape = NULL;
		json_t *m = NULL;
		const json_t *v;
		char what[96];
		int64_t n64;
		int rc;

		snprintf(what, sizeof(what), "updates[%zu]", i);
		if (fl_json_get_str(u, "action", true, what, &a, err) != 0)
			return -1;
		for (size_t n = 0; n < sizeof(action_shapes) / sizeof(action_shapes[0]); n++)
			if (strcmp(a, action_shapes[n].action) == 0)
				shape = &action_shapes[n];
		if (shape == NULL)
			return fl_err_set(err, FL_ERR_BAD_REQUEST,
			                  "updates[%zu]: unknown action '%.60s'", i, a);
		/* The member the action carries, of its type: the message names both. */
		snprintf(what, sizeof(what), "updates[%zu] (%s)", i, a);
		switch (shape->type) {
		case JSON_STRING:
			rc = fl_json_get_str(u, shape->member, true, what, &s, err);
			break;
		case JSON_INTEGER:
			rc = fl_json_get_int(u, shape->member, true, what, &n64, err);
			break;
		case JSON_OBJECT:
			rc = fl_json_get_obj(u, shape->member, true, what, &m, err);
			break;
		default: rc = fl_json_get_arr(u, shape->member, true, what, &m, err); break;
		}
		if (rc != 0)
			return -1;
		/* Property values are strings; removals are strings. */
		if (strcmp(a, "set-properties") == 0) {
			json_object_foreach((json_t *)m, k, v)
			{
				if (!json_is_string(v))
					return fl_err_set(
					        err, FL_ERR_BAD_REQUEST,
					        "updates[%zu] (set-properties): the value of "
					        "'%.60s' must be a string",
					        i, k);
			}
			if (cat_property_values_check(m, what, err) != 0)
				return -1;
		} else if (strcmp(a, "remove-properties") == 0) {
			size_t x;

			json_array_foreach((json_t *)m, x, v) if (!json_is_string(v)) return fl_err_set(
			        err, FL_ERR_BAD_REQUEST,
			        "updates[%zu] (remove-properties): removals[%zu] must be a string",
			        i, x);
		}
	}
	return 0;
}

int cat_property_values_check(const json_t *props, const char *what, struct fl_err *err)
{
	const char *k;
	json_t *v;

	json_object_foreach((json_t *)props, k, v)
	{
		if (json_string_length(v) > CAT_PROPERTY_VALUE_MAX)
			return fl_err_set(
			        err, FL_ERR_BAD_REQUEST,
			        "%s: the value of '%.60s' is %zu bytes, over the limit of %d", what,
			        k, json_string_length(v), CAT_PROPERTY_VALUE_MAX);
	}
	return 0;
}

/* True when uri lies under dir ("dir/..."), dir with or without its '/',
 * and no ".." segment leads back out. */
static bool under(const char *uri, const char *dir)
{
	size_t n;

	if (uri == NULL || dir == NULL)
		return false;
	n = strlen(dir);
	while (n > 0 && dir[n - 1] == '/')
		n--;
	if (n == 0 || strncmp(uri, dir, n) != 0 || uri[n] != '/' || uri[n + 1] == '\0')
		return false;
	for (const char *p = uri + n; (p = strstr(p, "/..")) != NULL; p += 3) {
		if (p[3] == '/' || p[3] == '\0')
			return false;
	}
	return true;
}

/* PyIceberg appends to v3 tables without added-rows (it sends first-row-id
 * only, rest-spec-and-clients.md §B.1), which Java's builder cannot take.
 * Floe counts the rows from the snapshot's own manifest list, as Java's
 * writer does (st_snapshot_added_rows), and hands the builder a copy of the
 * updates with added-rows filled in; *out is a new reference to updates
 * itself when nothing is missing.  The list must lie under the table's
 * location (or write.metadata.path), so a request cannot make the server
 * read other files.  Runs under the row lock: the format version and the
 * location are those of the locked state and of the updates before the
 * snapshot.  At most FILL_MAX snapshots a commit are counted, since each is a
 * read under the lock (a client appends one or two a commit). */
#define FILL_MAX 64

/* The snapshot of update u if it is a v3 add-snapshot whose added-rows Floe
 * must count (NULL otherwise), following the format version *fv and the
 * location *loc through the updates before it. */
static const json_t *unfilled(const json_t *u, json_int_t *fv, const char **loc)
{
	const char *action = json_string_value(json_object_get(u, "action"));
	const json_t *snap = json_object_get(u, "snapshot");

	if (action == NULL)
		return NULL;
	if (strcmp(action, "upgrade-format-version") == 0) {
		if (json_integer_value(json_object_get(u, "format-version")) > *fv)
			*fv = json_integer_value(json_object_get(u, "format-version"));
		return NULL;
	}
	if (strcmp(action, "set-location") == 0) {
		*loc = json_string_value(json_object_get(u, "location"));
		return NULL;
	}
	if (strcmp(action, "add-snapshot") != 0 || *fv < 3 || !json_is_object(snap) ||
	    json_object_get(snap, "added-rows") != NULL)
		return NULL;
	/* Without these the builder names what is missing. */
	if (!json_is_integer(json_object_get(snap, "first-row-id")) ||
	    !json_is_string(json_object_get(snap, "manifest-list")))
		return NULL;
	return snap;
}

static int fill_added_rows(struct st_io *io, const json_t *base, json_t *updates, json_t **out,
                           struct fl_err *err)
{
	const json_t *props = json_object_get(base, "properties");
	const char *loc0 = json_string_value(json_object_get(base, "location")), *loc = loc0;
	const char *mdir = json_string_value(json_object_get(props, "write.metadata.path"));
	json_int_t fv0 = json_integer_value(json_object_get(base, "format-version")), fv = fv0;
	json_t *copy = NULL, *u;
	const json_t *snap;
	size_t i, n = 0;

	json_array_foreach(updates, i, u)
	{
		if (unfilled(u, &fv, &loc) != NULL && ++n > FILL_MAX)
			return fl_err_set(
			        err, FL_ERR_BAD_REQUEST,
			        "updates[%zu] (add-snapshot): more than %d snapshots in one "
			        "commit have no added-rows (Floe reads each one's manifest "
			        "list to count them); send added-rows",
			        i, FILL_MAX);
	}
	fv = fv0;
	loc = loc0;
	json_array_foreach(updates, i, u)
	{
		struct st_snapshot_table t = {.io = io};
		const char *list;
		int64_t added = 0;

		if ((snap = unfilled(u, &fv, &loc)) == NULL)
			continue;
		list = json_string_value(json_object_get(snap, "manifest-list"));
		if (!under(list, loc) && !under(list, mdir)) {
			json_decref(copy);
			return fl_err_set(
			        err, FL_ERR_BAD_REQUEST,
			        "updates[%zu] (add-snapshot): snapshot %" PRId64
			        " has no added-rows, and its manifest-list %.120s lies outside the "
			        "table location and write.metadata.path",
			        i,
			        (int64_t)json_integer_value(json_object_get(snap, "snapshot-id")),
			        list);
		}
		if (st_snapshot_added_rows(
		            &t, list, json_integer_value(json_object_get(snap, "first-row-id")),
		            &added, err) != 0) {
			json_decref(copy);
			/* A list that is missing or malformed is the request's fault. */
			if (err->kind == FL_ERR_NOT_FOUND)
				err->kind = FL_ERR_BAD_REQUEST;
			return fl_err_prefix(
			        err,
			        "updates[%zu] (add-snapshot): snapshot without added-rows, "
			        "which Floe computes from its manifest list",
			        i);
		}
		if (copy == NULL && (copy = json_deep_copy(updates)) == NULL)
			return fl_err_set(err, FL_ERR_NOMEM, "out of memory");
		if (json_object_set_new(json_object_get(json_array_get(copy, i), "snapshot"),
		                        "added-rows", json_integer(added)) != 0) {
			json_decref(copy);
			return fl_err_set(err, FL_ERR_NOMEM, "out of memory");
		}
	}
	*out = copy != NULL ? copy : json_incref(updates);
	return 0;
}

/* write.metadata.delete-after-commit.enabled (Java TableProperties): the
 * metadata files the new version's metadata-log no longer lists (trimmed
 * by write.metadata.previous-versions-max) are added to *out, to be deleted
 * once the commit is durable.  Nothing when the property is not "true". */
static int stale_files(const json_t *base, const char *base_file, const json_t *meta,
                       struct cat_written *out)
{
	const char *on = json_string_value(json_object_get(
	        json_object_get(meta, "properties"), "write.metadata.delete-after-commit.enabled"));
	const json_t *olog = json_object_get(base, "metadata-log");
	const json_t *nlog = json_object_get(meta, "metadata-log");
	size_t n = json_array_size(olog);

	if (on == NULL || strcasecmp(on, "true") != 0)
		return 0;
	for (size_t i = 0; i <= n; i++) {
		const char *f = i < n ? json_string_value(json_object_get(json_array_get(olog, i),
		                                                          "metadata-file"))
		                      : base_file;
		bool kept = false;

		for (size_t j = 0; f != NULL && j < json_array_size(nlog) && !kept; j++) {
			const char *g = json_string_value(
			        json_object_get(json_array_get(nlog, j), "metadata-file"));

			kept = g != NULL && strcmp(g, f) == 0;
		}
		if (f != NULL && !kept && written_add(out, f) != 0)
			return -1;
	}
	return 0;
}

/* After-commit work of cat_commit: deletes the stale files once committed. */
static void stale_delete(void *arg, bool committed)
{
	struct cat_written *w = arg;

	cat_written_done(w, committed);
	free(w);
}

/* The version a commit wrote, to be kept in the base cache once it is
 * committed (base_keep). */
struct base_kept {
	struct cat_base_cache *bases;
	char *key;
	size_t key_len;
	char id[40];
	int64_t version;
	char *location;
	json_t *doc;
	struct fl_json_memo *memo; /* holds the text */
};

static void base_kept_run(void *arg, bool committed)
{
	struct base_kept *k = arg;

	if (committed)
		cat_base_put(k->bases, k->key, k->key_len, k->id, k->version, k->location, NULL,
		             k->doc, k->memo);
	free(k->key);
	free(k->location);
	json_decref(k->doc);
	fl_json_memo_unref(k->memo);
	free(k);
}

/* A NULL-safe record of version `version` (location, doc, and memo, the
 * dump of doc that wrote its text, taken over) of table id for
 * base_kept_run; NULL when out of memory, the memo included (the cache is
 * best effort).  doc must not be modified from now on. */
static struct base_kept *base_kept_new(struct cat_db *db, const char *key, size_t key_len,
                                       const char *id, int64_t version, const char *location,
                                       json_t *doc, struct fl_json_memo *memo)
{
	struct base_kept *k = memo != NULL ? calloc(1, sizeof(*k)) : NULL;

	if (k == NULL) {
		fl_json_memo_unref(memo);
		return NULL;
	}
	k->bases = db->bases;
	k->memo = memo;
	k->key = malloc(key_len);
	k->key_len = key_len;
	k->location = strdup(location);
	if (k->key == NULL || k->location == NULL) {
		base_kept_run(k, false);
		return NULL;
	}
	memcpy(k->key, key, key_len);
	snprintf(k->id, sizeof(k->id), "%s", id);
	k->version = version;
	k->doc = json_incref(doc);
	return k;
}

/* A commit that changes nothing answers the state it judged (copies in
 * ch), and writes nothing. */
static int answer_unchanged(struct cat_change *ch, const struct cat_row *row, struct fl_err *err)
{
	ch->metadata_location = strdup(row->metadata_location);
	ch->metadata = strdup(row->metadata);
	return ch->metadata && ch->metadata_location
	               ? 0
	               : fl_err_set(err, FL_ERR_NOMEM, "out of memory");
}

/* The pointer move of a commit on row to the new metadata (path, text, meta). */
static struct cat_row_move move_of(const struct cat_db *db, const struct cat_row *row,
                                   const struct cat_change *ch, const char *path, const char *text,
                                   const json_t *meta, const struct cat_row_stats *st,
                                   const char *request_id, const char *actor)
{
	return (struct cat_row_move){
	        .id = row->id,
	        .metadata_location = path,
	        .metadata = cat_db_inline_text(db, text),
	        .version = row->version + 1,
	        .location = cat_meta_location(meta),
	        .stats = st,
	        .ns = &ch->ns,
	        .name = ch->name,
	        .snapshot_id = cat_meta_current_snapshot_id(meta),
	        .operation = operation(meta),
	        .request_id = request_id,
	        .actor = actor,
	};
}

/* A table row its caller has locked in this scope already, with its
 * parsed metadata (borrowed). */
struct locked_row {
	const struct cat_row *row;
	json_t *base;
};

/* One change under its row lock: requirements, builder, file, pointer.
 * The row is locked here unless the caller holds it (locked != NULL). */
static int commit_one(struct cat_scope *sc, const struct cat_warehouse *wh, struct cat_change *ch,
                      const struct cat_limits *lim, size_t *budget, const char *request_id,
                      const char *actor, struct cat_written *w, struct cat_written *stale,
                      const struct locked_row *locked, struct fl_err *err)
{
	char tbuf[520], nsid[24], *path = NULL, *text = NULL, *defloc = NULL;
	struct cat_row own = {0};
	const struct cat_row *row = locked != NULL ? locked->row : &own;
	json_t *base = NULL, *meta = NULL, *updates = NULL, *filled = NULL;
	struct cat_row_stats st;
	struct cat_conn *c = sc->c;
	bool changed = false;
	int found, rc = -1;
	int64_t t0 = fl_mono_ns();

	if (locked != NULL) {
		found = 1;
		base = json_incref(locked->base);
	} else {
		found = cat_row_lock(c, wh->id, &ch->ns, ch->name, NULL, &own, err);
		if (found < 0 || (found > 0 && cat_row_text(sc->db, wh, &own, NULL, err) != 0))
			goto out;
		cat_stage_done(sc->db, CAT_STAGE_LOCK, &t0);
	}
	if (found == 0 && !has_create(ch->requirements)) {
		if (cat_namespace_id(c, wh->id, &ch->ns, nsid, sizeof(nsid), err) == 0)
			fl_err_set(err, FL_ERR_NO_SUCH_TABLE, "table %s does not exist",
			           table_str(&ch->ns, ch->name, tbuf, sizeof(tbuf)));
		goto out;
	}
	if (found > 0 && base == NULL) {
		json_error_t je;

		base = json_loads(row->metadata, 0, &je);
		if (base == NULL) {
			fl_err_set(err, FL_ERR_INTERNAL, "stored metadata of %s is not JSON",
			           table_str(&ch->ns, ch->name, tbuf, sizeof(tbuf)));
			goto out;
		}
	}
	if (found > 0 && has_create(ch->requirements)) {
		fl_err_set(err, FL_ERR_ALREADY_EXISTS, "table %s already exists",
		           table_str(&ch->ns, ch->name, tbuf, sizeof(tbuf)));
		goto out;
	}
	if (json_array_size(ch->updates) > *budget) {
		/* The limit counts the updates of all the commit's tables together. */
		fl_err_set(err, FL_ERR_BAD_REQUEST,
		           "commit has more than %zu updates (max-commit-updates, counted across "
		           "its tables): table %s brings %zu with %zu left",
		           lim->max_updates, table_str(&ch->ns, ch->name, tbuf, sizeof(tbuf)),
		           json_array_size(ch->updates), *budget);
		goto out;
	}
	*budget -= json_array_size(ch->updates);
	updates = json_incref((json_t *)ch->updates);
	if (base == NULL) {
		/* A stage-create commit: the namespace must exist, and a table
		 * without set-location gets the default location. */
		if (cat_namespace_id(c, wh->id, &ch->ns, nsid, sizeof(nsid), err) != 0 ||
		    no_view(c, nsid, &ch->ns, ch->name, err) != 0)
			goto out;
		if (!has_action(ch->updates, "set-location")) {
			defloc = cat_default_location(wh, &ch->ns, ch->name);
			json_decref(updates);
			updates = json_array();
			if (defloc == NULL || updates == NULL ||
			    json_array_append_new(updates,
			                          json_pack("{s:s, s:s}", "action", "set-location",
			                                    "location", defloc)) != 0 ||
			    json_array_extend(updates, (json_t *)ch->updates) != 0) {
				fl_err_set(err, FL_ERR_NOMEM, "out of memory");
				goto out;
			}
		}
	}
	/* Requirements are judged first, on the locked state, as the Java
	 * reference does: a stale client gets its 409 even when its updates
	 * would not apply to the newer state.  An unknown update action is
	 * rejected before that (the spec requires a 400 for it whatever else
	 * the request says). */
	if (check_actions(ch->updates, err) != 0 ||
	    cat_meta_check_requirements(base, ch->requirements, err) != 0) {
		fl_err_prefix(err, "table %s", table_str(&ch->ns, ch->name, tbuf, sizeof(tbuf)));
		goto out;
	}
	cat_stage_done(sc->db, CAT_STAGE_REQUIREMENTS, &t0);
	if (fill_added_rows(wh->io, base, updates, &filled, err) != 0 ||
	    cat_meta_apply(base, found ? row->metadata_location : NULL, filled, fl_now_ms(),
	                   lim->max_updates, &meta, &changed, err) != 0) {
		fl_err_prefix(err, "table %s", table_str(&ch->ns, ch->name, tbuf, sizeof(tbuf)));
		goto out;
	}
	cat_stage_done(sc->db, CAT_STAGE_BUILD, &t0);
	if (found > 0 && !changed) {
		rc = answer_unchanged(ch, row, err);
		goto out;
	}
	if ((found == 0 || strcmp(cat_meta_location(meta), row->location) != 0) &&
	    cat_location_check(c, wh, cat_meta_location(meta), found ? row->id : NULL, err) != 0)
		goto out;
	if (found > 0 && stale_files(base, row->metadata_location, meta, stale) != 0) {
		fl_err_set(err, FL_ERR_NOMEM, "out of memory");
		goto out;
	}
	if (cat_write_metadata(meta, found ? row->version + 1 : 0, w, &path, &text, err) != 0)
		goto out;
	cat_stage_done(sc->db, CAT_STAGE_WRITE, &t0);
	row_stats(meta, &st);
	if (found) {
		/* The pointer and the commit event in one round trip. */
		struct cat_row_move mv =
		        move_of(sc->db, row, ch, path, text, meta, &st, request_id, actor);

		if (cat_row_move(c, &mv, err) != 0)
			goto out;
		cat_scope_touched(sc, row->id);
	} else {
		const char *uuid = cat_meta_uuid(meta);

		if (cat_row_insert(c, wh->id, nsid, uuid, ch->name, cat_meta_location(meta), path,
		                   cat_db_inline_text(sc->db, text), 0, &st, err) != 0 ||
		    cat_event_insert(c, uuid, wh->id, &ch->ns, ch->name, 0, path,
		                     cat_meta_current_snapshot_id(meta), "create", request_id,
		                     actor, err) != 0)
			goto out;
	}
	cat_stage_done(sc->db, CAT_STAGE_UPDATE, &t0);
	cat_scope_timed(sc);
	ch->metadata_location = path;
	ch->metadata = text;
	path = text = NULL;
	rc = 0;
out:
	cat_row_free(&own);
	json_decref(base);
	json_decref(meta);
	json_decref(updates);
	json_decref(filled);
	free(path);
	free(text);
	free(defloc);
	return rc;
}

/* From this size on, a commit's metadata file is written while PostgreSQL
 * runs the pointer move (move_ahead): writing, syncing and storing a large
 * document each take milliseconds, and a contended table's commits follow
 * one another only as fast as one of them gets through both.  A commit
 * inside a transaction (under an Idempotency-Key) sends its move ahead at
 * any size: its COMMIT is a round trip of its own anyway, the savepoint
 * rides with the move, and the move's round trip is spent writing the
 * file (pg_rtt_bench.sh: ~0.3 ms less per commit at 1.4-3.5 ms of RTT). */
#define AHEAD_BYTES (64 * 1024)

/* The move of mv sent ahead of its file, in sc (a transaction of its own
 * or a savepoint of the outer one): PostgreSQL runs the UPDATE, taking the
 * row lock, while the file is written and synced here; the COMMIT that
 * makes the move visible comes after both (the scope's end, or the outer
 * transaction's), so the file is durable before the pointer moves, as
 * ever.  Returns what cat_row_move_if returns; -1 with the file's error
 * when the file could not be written, and the caller then rolls the
 * scope back. */
static int move_ahead(struct cat_db *db, struct cat_scope *sc, const struct cat_row_move *mv,
                      const char *ns_id, int64_t expected, struct cat_written *w, char **path,
                      char **text, size_t len, int64_t *t0, struct fl_err *err)
{
	struct fl_err ferr = {0};
	int moved, put;

	if (cat_row_move_if_send(sc, mv, ns_id, expected, err) != 0)
		return -1;
	put = metadata_put(w, path, text, len, &ferr);
	cat_stage_done(db, CAT_STAGE_WRITE, t0);
	moved = cat_row_move_if_recv(sc, err);
	cat_stage_done(db, CAT_STAGE_UPDATE, t0);
	if (put != 0) {
		*err = ferr;
		return -1;
	}
	return moved;
}

/* From this size on, the version an uncontended commit writes is kept in
 * the base cache like a contended one's: parsing the text again would
 * take the next commit ~0.7 ms at this size and ~8 ms at 700 KB (jansson
 * parsed 80-100 MB/s beside a single writer: BENCHMARKS.md, twenty-fourth
 * pass), while keeping a written version copies nothing.  Below it,
 * across many tables that commit now and then, the entries would only
 * push each other out of BASE_SLOTS. */
#define KEEP_BYTES (64 * 1024)

/* How often a single-table commit is tried optimistically before it takes
 * the row lock for its requirements, builder and file (commit_locked).  The
 * bound keeps a table that changes faster than a commit can be built from
 * starving one writer: its last try waits in line for the lock. */
#define OPTIMISTIC_TRIES 3

/* One optimistic try of a single-table commit (DESIGN §3 allows it): the
 * row is read without a lock; the requirements are judged, the new metadata
 * built and its file written and fsynced against what was read; then the
 * pointer moves in one statement only if the row still has the version
 * read (cat_row_move_if), which holds the row lock for that statement and
 * the rest of the transaction only.  Without an outer transaction that
 * statement commits by itself.  The guarantees are those of the locked
 * path: a requirement that fails on a committed state is a 409 and nothing
 * is applied; the file is durable before the pointer moves.  0 = done,
 * -1 = failed (err set); otherwise nothing was applied and a file written
 * is deleted again, being referenced by nothing: TRY_RACED when the row
 * changed under the try, TRY_LOCKED when the change needs the locked path
 * (a missing table, a new location, too many updates), which then reports
 * it exactly as before. */
enum { TRY_RACED = 1, TRY_LOCKED = 2 };
static int commit_try(struct cat_db *db, struct cat_tx *tx, const struct cat_warehouse *wh,
                      struct cat_change *ch, const struct cat_limits *lim, bool may_hold,
                      const char *request_id, const char *actor, struct fl_err *err)
{
	char tbuf[520], *path = NULL, *text = NULL, *key, *kloc = NULL;
	struct cat_written w = {.io = wh->io, .max_bytes = lim->max_metadata_bytes};
	struct cat_written *stale = NULL;
	struct base_kept *kept = NULL;
	struct cat_row row = {0};
	struct cat_table_bytes held = {0};
	struct fl_json_memo *memo = NULL, *next_memo = NULL;
	struct cat_meta_ids *ids = NULL;
	const char *known;
	json_t *base = NULL, *meta = NULL, *filled = NULL;
	struct cat_row_stats st;
	struct cat_scope sc;
	size_t key_len = 0;
	bool changed = false, fetched = false, ahead, held_row = false, large = false, keep = false;
	int64_t t0 = fl_mono_ns();
	int found, moved = 0, rc = -1;
	size_t len;

	/* A version this process holds parsed is neither fetched nor parsed. */
	key = cat_table_key(wh->id, &ch->ns, ch->name, &key_len);
	if (!cat_base_get(db->bases, key, key_len, &kloc, NULL, &base, &memo))
		kloc = NULL;
	/* Else the loadTable cache may hold the text of the row's version (a
	 * commit leaves the version it wrote there): the row is then read
	 * without its metadata, which PostgreSQL would detoast and send again. */
	if (kloc == NULL || may_hold)
		(void)cat_table_cached(db, wh->name, &ch->ns, ch->name, &held);
	if (kloc != NULL && held.hold != NULL &&
	    (held.hold->version < 0 || strcmp(kloc, held.metadata_location) != 0)) {
		/* Only the row of the version held parsed may stand for it (a
		 * location names one version); the text is not needed. */
		cat_table_bytes_release(held.hold);
		memset(&held, 0, sizeof(held));
	}
	known = kloc != NULL ? kloc : held.metadata_location;
	if (may_hold && held.hold != NULL && held.hold->version >= 0) {
		/* The row is not read: the version the loadTable cache holds (the
		 * one this process committed or read last) stands for it.  The
		 * move's compare-and-swap names that version, so a row that moved
		 * meanwhile is not moved; a requirement or an update that fails on
		 * it is judged again on a read row (TRY_RACED, then may_hold is
		 * false), so an answer never rests on a version that may be old.
		 * Inside a transaction the move, sent ahead, carries the deferred
		 * BEGIN and Idempotency-Key claim (cat_scope_prefix): a key that is
		 * not this request's fails the move, and its file is deleted. */
		held_row = true;
		found = 1;
		snprintf(row.id, sizeof(row.id), "%s", held.hold->row_id);
		snprintf(row.ns_id, sizeof(row.ns_id), "%s", held.hold->ns_id);
		row.version = held.hold->version;
		row.metadata_location = strdup(held.metadata_location);
		if (row.metadata_location == NULL) {
			fl_err_set(err, FL_ERR_NOMEM, "out of memory");
			goto out;
		} /* row.location: the held version's, once it is parsed */
	} else if (tx != NULL) {
		/* As the transaction's first statement it carries the deferred
		 * BEGIN and Idempotency-Key claim (tx.c). */
		found = cat_row_read_tx(tx, wh->id, &ch->ns, ch->name, known, &row, err);
	} else {
		if (cat_scope_begin(db, NULL, false, &sc, err) != 0)
			goto out;
		found = cat_row_read(sc.c, wh->id, &ch->ns, ch->name, known, &row, err);
		(void)cat_scope_end(&sc, true, err); /* a read scope: nothing to commit */
	}
	if (found <= 0) {
		rc = found < 0 ? -1 : TRY_LOCKED;
		goto out;
	}
	if (!held_row && cat_row_text(db, wh, &row, known, err) != 0)
		goto out;
	cat_stage_done(db, CAT_STAGE_LOCK, &t0);
	if (row.metadata == NULL && held.hold != NULL && !held_row) {
		/* Unchanged since the cache took it: the same text (a location
		 * names one immutable version), parsed as a fetched one would be. */
		row.metadata = strndup(held.metadata, held.metadata_len);
		if (row.metadata == NULL) {
			fl_err_set(err, FL_ERR_NOMEM, "out of memory");
			goto out;
		}
	}
	if (held_row && kloc == NULL) {
		/* The held text is parsed where it is, not copied: a held try
		 * neither keeps it (the base cache) nor answers from it. */
		large = held.metadata_len >= KEEP_BYTES;
		base = json_loadb(held.metadata, held.metadata_len, 0, NULL);
		fetched = base != NULL;
	} else if (row.metadata != NULL) {
		json_decref(base);
		large = strnlen(row.metadata, KEEP_BYTES) == KEEP_BYTES;
		base = json_loads(row.metadata, 0, NULL);
		fetched = base != NULL;
	} else if (kloc == NULL || strcmp(kloc, row.metadata_location) != 0) {
		fl_err_set(err, FL_ERR_NOMEM, "out of memory");
		goto out;
	} /* else the version held parsed is the row's: its text is copied only if needed */
	if (base == NULL || json_array_size(ch->updates) > lim->max_updates) {
		rc = TRY_LOCKED;
		goto out;
	}
	if (held_row) {
		const char *loc = json_string_value(json_object_get(base, "location"));

		if (loc == NULL)
			goto judge_again;
		if ((row.location = strdup(loc)) == NULL) {
			fl_err_set(err, FL_ERR_NOMEM, "out of memory");
			goto out;
		}
	}
	if (check_actions(ch->updates, err) != 0) {
		fl_err_prefix(err, "table %s", table_str(&ch->ns, ch->name, tbuf, sizeof(tbuf)));
		goto out;
	}
	if (cat_meta_check_requirements(base, ch->requirements, err) != 0) {
		if (held_row && err->kind == FL_ERR_COMMIT_FAILED)
			goto judge_again;
		fl_err_prefix(err, "table %s", table_str(&ch->ns, ch->name, tbuf, sizeof(tbuf)));
		goto out;
	}
	cat_stage_done(db, CAT_STAGE_REQUIREMENTS, &t0);
	/* The version written here is kept for the next commit (base_kept_run)
	 * when the table is contended (kloc: the base cache holds it) or when
	 * its base took long to parse (KEEP_BYTES): a writer that commits to a
	 * large table again and again then neither fetches nor parses. */
	keep = kloc != NULL || large;
	/* A base this process wrote (it has the memo of that dump) is the
	 * builder's own output: its snapshots are not checked one by one again,
	 * and their ids come with the memo.  The new version's ids go with its
	 * memo when it is kept. */
	if (fill_added_rows(wh->io, base, (json_t *)ch->updates, &filled, err) != 0 ||
	    (!fetched && memo != NULL
	             ? cat_meta_apply_kept(base, fl_json_memo_attached(memo), row.metadata_location,
	                                   filled, fl_now_ms(), lim->max_updates, &meta,
	                                   keep ? &ids : NULL, &changed, err)
	             : cat_meta_apply(base, row.metadata_location, filled, fl_now_ms(),
	                              lim->max_updates, &meta, &changed, err)) != 0) {
		if (held_row && err->kind == FL_ERR_BAD_REQUEST)
			goto judge_again;
		fl_err_prefix(err, "table %s", table_str(&ch->ns, ch->name, tbuf, sizeof(tbuf)));
		goto out;
	}
	cat_stage_done(db, CAT_STAGE_BUILD, &t0);
	if (!changed && held_row)
		goto judge_again; /* answered from the row's own version */
	if (!changed) {
		/* The held text, unless it went meanwhile: then the locked path answers. */
		json_t *doc = NULL;
		char *loc = NULL;

		if (row.metadata == NULL &&
		    (!cat_base_get(db->bases, key, key_len, &loc, &row.metadata, &doc, NULL) ||
		     strcmp(loc, row.metadata_location) != 0)) {
			rc = TRY_LOCKED;
		} else {
			rc = answer_unchanged(ch, &row, err);
		}
		json_decref(doc);
		free(loc);
		goto out;
	}
	if (strcmp(cat_meta_location(meta), row.location) != 0) {
		rc = TRY_LOCKED;
		goto out;
	}
	stale = malloc(sizeof(*stale));
	if (stale != NULL)
		*stale = w; /* the same storage, no files yet */
	if (stale == NULL || stale_files(base, row.metadata_location, meta, stale) != 0) {
		fl_err_set(err, FL_ERR_NOMEM, "out of memory");
		goto out;
	}
	/* A kept version keeps the memo of the new text for the next commit,
	 * whose dump then copies the snapshots this one shares with it instead
	 * of writing them again. */
	if (metadata_text_memo(meta, row.version + 1, fetched ? NULL : memo,
	                       keep ? &next_memo : NULL, &w, &path, &text, &len, err) != 0)
		goto out;
	if (next_memo != NULL && ids != NULL) {
		fl_json_memo_attach(next_memo, ids, cat_meta_ids_free);
		ids = NULL;
	}
	ahead = len >= AHEAD_BYTES || tx != NULL;
	if (!ahead) {
		if (metadata_put(&w, &path, &text, len, err) != 0)
			goto out;
		cat_stage_done(db, CAT_STAGE_WRITE, &t0);
	}
	row_stats(meta, &st);
	struct cat_row_move mv = move_of(db, &row, ch, path, text, meta, &st, request_id, actor);
	/* Noted before the move is sent (db_int.h, struct cat_fresh). */
	unsigned long generation = cat_cache_generation(db->cache);
	/* Sent ahead, the move needs a transaction (or a savepoint of the
	 * outer one) that can still be rolled back when the file fails: its
	 * BEGIN (SAVEPOINT) rides in front of the move. */
	if ((ahead ? cat_scope_begin_ahead(db, tx, &sc, err)
	           : cat_scope_begin(db, tx, false, &sc, err)) != 0)
		goto out;
	if (ahead) {
		moved = move_ahead(db, &sc, &mv, row.ns_id, row.version, &w, &path, &text, len, &t0,
		                   err);
	} else if (tx == NULL) {
		/* The move commits by itself: its notification rides behind it. */
		bool notified;

		moved = cat_row_move_if_notify(sc.c, &mv, row.ns_id, row.version, &notified, err);
		if (notified)
			cat_scope_notified(&sc);
	} else {
		moved = cat_row_move_if(sc.c, &mv, row.ns_id, row.version, err);
	}
	/* The version written here is the base of the next tries, kept once
	 * it is committed (so that they neither fetch nor parse it).  meta is
	 * built, not parsed, but it is the document that text serializes. */
	if (moved == 1 && keep) {
		kept = base_kept_new(db, key, key_len, row.id, row.version + 1, path, meta,
		                     next_memo);
		next_memo = NULL; /* taken over */
	}
	if (moved == 1 && (tx != NULL || ahead)) {
		/* The COMMIT of the scope or of the outer transaction makes it
		 * durable and visible. */
		cat_scope_touched(&sc, row.id);
		cat_scope_timed(&sc);
		cat_scope_after_commit(&sc, stale_delete, stale);
		stale = NULL;
		if (kept != NULL)
			cat_scope_after_commit(&sc, base_kept_run, kept);
		kept = NULL;
	}
	/* Committed by the statement itself; an unknown outcome may have applied. */
	if (tx == NULL && !ahead && (moved == 1 || err->kind == FL_ERR_COMMIT_STATE_UNKNOWN))
		cat_scope_touched(&sc, row.id);
	/* The reloads this commit causes find the version it wrote. */
	if (moved == 1)
		cat_scope_fresh(&sc, cat_fresh_new(db, wh->name, wh->storage_type, &ch->ns,
		                                   ch->name, row.id, row.ns_id, row.version + 1,
		                                   path, text, len, generation));
	if (!ahead)
		(void)cat_scope_end(&sc, true, err); /* a read scope: nothing to commit */
	else if (cat_scope_end(&sc, moved >= 0, err) != 0 && moved >= 0)
		moved = -1; /* the COMMIT failed: err says whether it may have applied */
	if (moved < 0)
		goto out;
	if (moved == 0) {
		rc = TRY_RACED;
		goto out;
	}
	if (!ahead)
		cat_stage_done(db, CAT_STAGE_UPDATE, &t0);
	if (stale != NULL) { /* committed by the statement itself */
		stale_delete(stale, true);
		stale = NULL;
	}
	if (kept != NULL) { /* likewise */
		base_kept_run(kept, true);
		kept = NULL;
	}
	ch->metadata_location = path;
	ch->metadata = text;
	path = text = NULL;
	rc = 0;
	goto out;
judge_again:
	fl_err_clear(err);
	rc = TRY_RACED;
out:
	/* A table whose commits conflict keeps the version read for the next
	 * try.  Only a committed version is kept: one this commit wrote joins
	 * after its COMMIT (base_kept_run), not before, when it would push out
	 * the version the other readers see.  A version read for a commit
	 * that does not conflict is not kept: its text would be copied, which
	 * across many tables costs more than the parse it would save (the
	 * version that commit writes may be kept: KEEP_BYTES). */
	if (fetched && !held_row &&
	    (rc == TRY_RACED || (rc < 0 && err->kind == FL_ERR_COMMIT_FAILED)))
		cat_base_put(db->bases, key, key_len, row.id, row.version, row.metadata_location,
		             row.metadata, base, NULL);
	/* Not applied: the file is referenced by nothing (best effort, as ever). */
	cat_written_done(&w, rc > 0 || (rc < 0 && err->kind != FL_ERR_COMMIT_STATE_UNKNOWN));
	if (stale != NULL) {
		cat_written_done(stale, false);
		free(stale);
	}
	if (kept != NULL)
		base_kept_run(kept, false);
	cat_row_free(&row);
	if (held.hold != NULL)
		cat_table_bytes_release(held.hold);
	fl_json_memo_unref(memo);
	fl_json_memo_unref(next_memo);
	cat_meta_ids_free(ids);
	json_decref(base);
	json_decref(meta);
	json_decref(filled);
	free(path);
	free(text);
	free(key);
	free(kloc);
	return rc;
}

/* The commit under row locks taken first, in a fixed order (DESIGN §3). */
static int commit_locked(struct cat_db *db, struct cat_tx *tx, const struct cat_warehouse *wh,
                         struct cat_change *changes, int n, const struct cat_limits *lim,
                         const char *request_id, const char *actor, struct fl_err *err)
{
	struct cat_written w = {.io = wh->io, .max_bytes = lim->max_metadata_bytes};
	struct cat_written *stale = NULL;
	struct cat_scope sc;
	size_t budget = lim->max_updates;
	int *order = NULL;
	bool ok = false;

	if (n <= 0)
		return fl_err_set(err, FL_ERR_BAD_REQUEST,
		                  "a commit needs at least one table change");
	order = malloc(sizeof(int) * (size_t)n);
	stale = malloc(sizeof(*stale));
	if (order == NULL || stale == NULL) {
		free(order);
		free(stale);
		return fl_err_set(err, FL_ERR_NOMEM, "out of memory");
	}
	*stale = w; /* the same storage, no files yet */
	/* Insertion sort of indices: n is small and bounded by the body size. */
	for (int i = 0; i < n; i++) {
		int j = i;

		while (j > 0 && cmp_change(&changes[order[j - 1]], &changes[i]) > 0) {
			order[j] = order[j - 1];
			j--;
		}
		if (j > 0 && cmp_change(&changes[order[j - 1]], &changes[i]) == 0) {
			char tbuf[520];

			free(order);
			free(stale);
			return fl_err_set(
			        err, FL_ERR_BAD_REQUEST, "table %s appears twice in one commit",
			        table_str(&changes[i].ns, changes[i].name, tbuf, sizeof(tbuf)));
		}
		order[j] = i;
	}
	if (cat_scope_begin(db, tx, true, &sc, err) != 0) {
		free(order);
		free(stale);
		return -1;
	}
	/* Creates and location changes serialize on the warehouse lock; taking
	 * it before any row lock keeps the lock order fixed (no deadlock), and
	 * it makes a racing create see the winner's row (409, not an overlap). */
	for (int k = 0; k < n; k++) {
		if (has_create(changes[k].requirements) ||
		    has_action(changes[k].updates, "set-location")) {
			if (cat_warehouse_lock(sc.c, wh->id, err) != 0)
				goto out;
			break;
		}
	}
	for (int k = 0; k < n; k++)
		if (commit_one(&sc, wh, &changes[order[k]], lim, &budget, request_id, actor, &w,
		               stale, NULL, err) != 0)
			goto out;
	/* Registered only now: a failed change rolls the whole commit back. */
	cat_scope_after_commit(&sc, stale_delete, stale);
	stale = NULL;
	ok = true;
out:
	if (cat_scope_end(&sc, ok, err) != 0)
		ok = false;
	if (!ok)
		cat_changes_free(changes, n);
	cat_written_done(&w, !ok && err->kind != FL_ERR_COMMIT_STATE_UNKNOWN);
	if (stale != NULL) {
		cat_written_done(stale, false);
		free(stale);
	}
	free(order);
	return ok ? 0 : -1;
}

/* Whether the change's requirements fail on the version of the table this
 * process holds parsed (the one it committed last, on a contended table).
 * Such a try is almost always stale, and it needs the gate only for its row
 * read, which on a hot table held every fresh try queued behind it: it
 * leaves the gate first, and commit_try judges it as ever, on the row's own
 * version (a version this process does not hold sends it on without the
 * gate, which PostgreSQL's compare-and-swap makes safe). */
static bool stale_on_held_version(struct cat_db *db, const char *key, size_t key_len,
                                  const struct cat_change *ch)
{
	struct fl_err ignored = {0};
	char *loc = NULL;
	json_t *base = NULL;
	bool stale = false;

	if (key != NULL && cat_base_get(db->bases, key, key_len, &loc, NULL, &base, NULL))
		stale = cat_meta_check_requirements(base, ch->requirements, &ignored) != 0;
	json_decref(base);
	free(loc);
	return stale;
}

static void gate_leave(void *gate, bool committed)
{
	(void)committed;
	cat_gate_leave(gate);
}

int cat_commit(struct cat_db *db, struct cat_tx *tx, const struct cat_warehouse *wh,
               struct cat_change *changes, int n, const struct cat_limits *lim,
               const char *request_id, const char *actor, struct fl_err *err)
{
	/* Creates and location changes serialize on the warehouse lock, and a
	 * multi-table commit judges all its requirements under all its locks:
	 * those keep the locked path. */
	struct cat_gate *gate = NULL;
	int rc = TRY_LOCKED;

	if (n == 1 && !has_create(changes[0].requirements) &&
	    !has_action(changes[0].updates, "set-location")) {
		size_t key_len = 0;
		char *key = cat_table_key(wh->id, &changes[0].ns, changes[0].name, &key_len);
		int64_t t0 = fl_mono_ns();

		/* Held until the change is committed (or not): the next try of this
		 * process starts from the version this one leaves. */
		gate = cat_gate_enter(db->gates, key, key_len);
		cat_stage_done(db, CAT_STAGE_GATE, &t0);
		/* A try on the held version would fail on it: the row is read. */
		bool stale = stale_on_held_version(db, key, key_len, &changes[0]);
		if (stale) {
			cat_gate_leave(gate);
			gate = NULL;
		}
		free(key);
		for (int k = 0; k < OPTIMISTIC_TRIES; k++) {
			rc = commit_try(db, tx, wh, &changes[0], lim, k == 0 && !stale, request_id,
			                actor, err);
			if (rc <= 0)
				break;
			fl_err_clear(err);
			if (rc == TRY_LOCKED)
				break;
		}
	}
	if (rc > 0)
		rc = commit_locked(db, tx, wh, changes, n, lim, request_id, actor, err);
	/* A change applied in the caller's transaction is committed only when
	 * that ends: the gate stays closed until then.  Anything else (a 409,
	 * an error, a change committed here) opens it now. */
	if (gate != NULL && tx != NULL && rc == 0)
		cat_tx_after_end(tx, gate_leave, gate);
	else
		cat_gate_leave(gate);
	return rc;
}

int cat_table_append(struct cat_db *db, const struct cat_warehouse *wh, struct cat_change *ch,
                     cat_append_fn build, void *arg, const struct cat_limits *lim,
                     const char *request_id, struct fl_err *err)
{
	return cat_table_append_tx(db, NULL, wh, ch, build, arg, NULL, lim, request_id, NULL, err);
}

int cat_table_append_tx(struct cat_db *db, struct cat_tx *tx, const struct cat_warehouse *wh,
                        struct cat_change *ch, cat_append_fn build, void *arg,
                        const struct cat_known *known, const struct cat_limits *lim,
                        const char *request_id, const char *actor, struct fl_err *err)
{
	struct cat_written w = {.io = wh->io, .max_bytes = lim->max_metadata_bytes};
	struct cat_written *stale = malloc(sizeof(*stale));
	struct cat_row row = {0};
	struct locked_row locked;
	struct cat_scope sc;
	int64_t t0;
	json_t *base = NULL, *updates = NULL, *reqs = json_array();
	size_t budget = lim->max_updates;
	char tbuf[520], nsid[24];
	bool ok = false;
	int found;

	if (reqs == NULL || stale == NULL) {
		json_decref(reqs);
		free(stale);
		return fl_err_set(err, FL_ERR_NOMEM, "out of memory");
	}
	*stale = w;
	if (cat_scope_begin(db, tx, true, &sc, err) != 0) {
		json_decref(reqs);
		free(stale);
		return -1;
	}
	t0 = fl_mono_ns();
	found = cat_row_lock(sc.c, wh->id, &ch->ns, ch->name, known ? known->location : NULL, &row,
	                     err);
	if (found > 0)
		cat_stage_done(db, CAT_STAGE_LOCK, &t0);
	if (found <= 0) {
		if (found == 0 &&
		    cat_namespace_id(sc.c, wh->id, &ch->ns, nsid, sizeof(nsid), err) == 0)
			fl_err_set(err, FL_ERR_NO_SUCH_TABLE, "table %s does not exist",
			           table_str(&ch->ns, ch->name, tbuf, sizeof(tbuf)));
		goto out;
	}
	if (cat_row_text(db, wh, &row, known ? known->location : NULL, err) != 0)
		goto out;
	if (row.metadata == NULL) {
		/* Still the version the caller read: its text (for the row's
		 * uses below) and its parsed document are reused. */
		row.metadata = strdup(known->text);
		base = json_incref(known->meta);
		if (row.metadata == NULL) {
			fl_err_set(err, FL_ERR_NOMEM, "out of memory");
			goto out;
		}
	} else if ((base = json_loads(row.metadata, 0, NULL)) == NULL) {
		fl_err_set(err, FL_ERR_INTERNAL, "stored metadata is not JSON");
		goto out;
	}
	if (build(arg, base, &updates, err) != 0)
		goto out;
	ch->requirements = reqs;
	ch->updates = updates;
	/* The row lock is held: commit_one judges exactly the state build saw. */
	locked = (struct locked_row){&row, base};
	if (commit_one(&sc, wh, ch, lim, &budget, request_id, actor, &w, stale, &locked, err) != 0)
		goto out;
	cat_scope_after_commit(&sc, stale_delete, stale);
	stale = NULL;
	ok = true;
out:
	if (cat_scope_end(&sc, ok, err) != 0)
		ok = false;
	if (!ok)
		cat_changes_free(ch, 1);
	cat_written_done(&w, !ok && err->kind != FL_ERR_COMMIT_STATE_UNKNOWN);
	ch->requirements = ch->updates = NULL;
	if (stale != NULL) {
		cat_written_done(stale, false);
		free(stale);
	}
	cat_row_free(&row);
	json_decref(base);
	json_decref(updates);
	json_decref(reqs);
	return ok ? 0 : -1;
}
