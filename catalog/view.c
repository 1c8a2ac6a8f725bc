/* view.c - the view operations that judge metadata: create, register,
 * load and commit.
 *
 * A view follows the table commit invariant (commit.c, DESIGN §3): its
 * metadata file <location>/metadata/<NNNNN>-<uuid>.metadata.json is written
 * create-exclusive and fsynced before the row's pointer moves, the pointer
 * moves by compare-and-swap on the row version under the row lock, and a
 * definite failure deletes the file again.  A view's location obeys the
 * table rules (inside the warehouse, overlapping no other location), so a
 * request cannot make the server write elsewhere.  The metadata itself is built by
 * meta/view.c (viewmeta.h). */
#include <stdlib.h>
#include <string.h>

#include "clock.h"
#include "commit_int.h"
#include "db/db_int.h"
#include "json.h"
#include "uuid.h"
#include "viewmeta.h"

/* FL_ERR_ALREADY_EXISTS when a table or a view has the name (judged before
 * the location, which would otherwise be refused as overlapping theirs). */
static int name_free(struct cat_conn *c, const struct cat_warehouse *wh, const struct cat_ns *ns,
                     const char *nsid, const char *name, struct fl_err *err)
{
	struct cat_row row = {0};
	char buf[300];
	int table = cat_row_lock(c, wh->id, ns, name, NULL, &row, err), view = 0;

	cat_row_free(&row);
	if (table == 0)
		view = cat_view_exists(c, nsid, name, err);
	if (table < 0 || view < 0)
		return -1;
	if (table > 0 || view > 0)
		return fl_err_set(err, FL_ERR_ALREADY_EXISTS, "%s %s.%.200s already exists",
		                  table > 0 ? "table" : "view", cat_ns_str(ns, buf, sizeof(buf)),
		                  name);
	return 0;
}

int cat_view_create(struct cat_db *db, struct cat_tx *tx, const struct cat_warehouse *wh,
                    const struct cat_ns *ns, const json_t *req, char **metadata_location,
                    char **metadata, struct fl_err *err)
{
	const char *name = json_string_value(json_object_get(req, "name"));
	const char *given = json_string_value(json_object_get(req, "location"));
	char nsid[24], uuid[FL_UUID_STR], *location = NULL, *path = NULL, *text = NULL;
	struct cat_written w = {.io = wh->io};
	struct cat_scope sc;
	json_t *meta = NULL;
	bool ok = false;

	if (name == NULL)
		return fl_err_set(err, FL_ERR_BAD_REQUEST, "CreateViewRequest: name is required");
	location = cat_create_location(wh, ns, name, given);
	if (location == NULL)
		return fl_err_set(err, FL_ERR_NOMEM, "out of memory");
	fl_uuid_v4(uuid);
	/* Judge the request before touching the database. */
	if (cat_viewmeta_create(req, location, uuid, &meta, err) != 0) {
		free(location);
		return -1;
	}
	if (cat_scope_begin(db, tx, true, &sc, err) != 0) {
		free(location);
		json_decref(meta);
		return -1;
	}
	/* Serialize with other creates in the warehouse before looking for the
	 * name, so that a racing create finds the winner and answers 409. */
	if (cat_warehouse_lock(sc.c, wh->id, err) != 0 ||
	    cat_namespace_id(sc.c, wh->id, ns, nsid, sizeof(nsid), err) != 0 ||
	    name_free(sc.c, wh, ns, nsid, name, err) != 0 ||
	    cat_location_check(sc.c, wh, location, NULL, err) != 0 ||
	    cat_write_metadata(meta, 0, &w, &path, &text, err) != 0 ||
	    cat_view_row_insert(sc.c, wh->id, nsid, uuid, name, location, path, text, 0, err) != 0)
		goto out;
	*metadata_location = path;
	*metadata = text;
	path = text = NULL;
	ok = true;
out:
	if (cat_scope_end(&sc, ok, err) != 0 && ok) {
		ok = false;
		free(*metadata_location);
		free(*metadata);
	}
	cat_written_done(&w, !ok && err->kind != FL_ERR_COMMIT_STATE_UNKNOWN);
	json_decref(meta);
	free(location);
	free(path);
	free(text);
	return ok ? 0 : -1;
}

int cat_view_register(struct cat_db *db, struct cat_tx *tx, const struct cat_warehouse *wh,
                      const struct cat_ns *ns, const char *name, const char *metadata_location,
                      const struct cat_limits *lim, char **metadata, struct fl_err *err)
{
	char nsid[24], id[FL_UUID_STR], *text = NULL;
	struct cat_scope sc;
	json_t *meta = NULL;
	const char *loc;
	bool ok = false;

	if (cat_metadata_read(wh, metadata_location, lim->max_metadata_bytes, "register-view",
	                      &meta, err) != 0)
		return -1;
	if (cat_viewmeta_validate(meta, err) != 0) {
		json_decref(meta);
		return fl_err_prefix(err, "register-view: %.150s", metadata_location);
	}
	loc = json_string_value(json_object_get(meta, "location"));
	text = fl_json_dump(meta, NULL);
	if (text == NULL) {
		json_decref(meta);
		return fl_err_set(err, FL_ERR_NOMEM, "out of memory");
	}
	if (cat_scope_begin(db, tx, true, &sc, err) != 0) {
		json_decref(meta);
		free(text);
		return -1;
	}
	fl_uuid_v4(id);
	if (cat_warehouse_lock(sc.c, wh->id, err) != 0 ||
	    cat_namespace_id(sc.c, wh->id, ns, nsid, sizeof(nsid), err) != 0 ||
	    name_free(sc.c, wh, ns, nsid, name, err) != 0 ||
	    cat_location_check(sc.c, wh, loc, NULL, err) != 0 ||
	    cat_view_row_insert(sc.c, wh->id, nsid, id, name, loc, metadata_location, text,
	                        cat_file_version(metadata_location), err) != 0)
		goto out;
	ok = true;
out:
	if (cat_scope_end(&sc, ok, err) != 0)
		ok = false;
	if (ok)
		*metadata = text;
	else
		free(text);
	json_decref(meta);
	return ok ? 0 : -1;
}
/* FL_ERR_BAD_REQUEST when a set-properties update sets a value longer than
 * CAT_PROPERTY_VALUE_MAX (the builder checks the rest of its shape). */
static int long_property(const json_t *updates, struct fl_err *err)
{
	const json_t *u;
	char what[64];
	size_t i;

	json_array_foreach(updates, i, u)
	{
		const char *a = json_string_value(json_object_get(u, "action"));

		if (a == NULL || strcmp(a, "set-properties") != 0)
			continue;
		snprintf(what, sizeof(what), "updates[%zu] (set-properties)", i);
		if (cat_property_values_check(json_object_get(u, "updates"), what, err) != 0)
			return -1;
	}
	return 0;
}

int cat_view_commit(struct cat_db *db, struct cat_tx *tx, const struct cat_warehouse *wh,
                    struct cat_change *ch, const struct cat_limits *lim, struct fl_err *err)
{
	char *path = NULL, *text = NULL;
	const char *location;
	struct cat_written w = {.io = wh->io, .max_bytes = lim->max_metadata_bytes};
	struct cat_row row = {0};
	json_t *base = NULL, *meta = NULL;
	struct cat_scope sc;
	bool ok = false;

	if (long_property(ch->updates, err) != 0)
		return -1;
	if (json_array_size(ch->updates) > lim->max_updates)
		return fl_err_set(err, FL_ERR_BAD_REQUEST,
		                  "CommitViewRequest: %zu updates exceed the limit of %zu "
		                  "(max-commit-updates)",
		                  json_array_size(ch->updates), lim->max_updates);
	if (cat_scope_begin(db, tx, true, &sc, err) != 0)
		return -1;
	if (cat_view_row_get(sc.c, wh->id, &ch->ns, ch->name, true, &row, err) != 0)
		goto out;
	base = json_loads(row.metadata, 0, NULL);
	if (base == NULL) {
		fl_err_set(err, FL_ERR_INTERNAL, "stored view metadata is not JSON");
		goto out;
	}
	if (cat_viewmeta_check_requirements(base, ch->requirements, err) != 0 ||
	    cat_viewmeta_apply(base, ch->updates, &meta, err) != 0)
		goto out;
	location = json_string_value(json_object_get(meta, "location"));
	if ((location == NULL || strcmp(location, row.location) != 0) &&
	    cat_location_check(sc.c, wh, location ? location : "", row.id, err) != 0)
		goto out;
	if (cat_write_metadata(meta, row.version + 1, &w, &path, &text, err) != 0 ||
	    cat_view_row_move(sc.c, row.id, row.version, path, text, location, err) != 0)
		goto out;
	cat_scope_touched(&sc, row.id); /* cached loads of the view end */
	ch->metadata_location = path;
	ch->metadata = text;
	path = text = NULL;
	ok = true;
out:
	if (cat_scope_end(&sc, ok, err) != 0 && ok) {
		ok = false;
		cat_changes_free(ch, 1);
	}
	cat_written_done(&w, !ok && err->kind != FL_ERR_COMMIT_STATE_UNKNOWN);
	cat_row_free(&row);
	json_decref(base);
	json_decref(meta);
	free(path);
	free(text);
	return ok ? 0 : -1;
}
