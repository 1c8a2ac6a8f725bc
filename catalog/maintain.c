/* maintain.c - table maintenance run by the catalog itself: snapshot expiry
 * with the deletion of the files it frees, and orphan cleanup.
 *
 * Expiry commits through the commit engine like any client (DESIGN §3):
 * the plan (meta/expire.c) is computed under the table's row lock by
 * cat_table_append, so it is judged on exactly the state it changes and
 * cannot lose a race.  Only after that commit are files deleted, and only
 * files that no snapshot of the committed metadata reaches:
 *   kept     every list, manifest and live file (entries not DELETED) of
 *            the snapshots the new metadata still holds;
 *   freed    the lists of the removed snapshots, their manifests that are
 *            not kept, and every file those manifests name that is not kept.
 * A snapshot committed after ours can only reach files of kept snapshots or
 * new ones, so deleting the freed files is safe.  A freed list or manifest
 * that is already gone (an earlier run stopped half-way) is skipped; any
 * other read failure stops before anything is deleted.  Deletion order is
 * data and delete files, then manifests, then lists, so a run that stops
 * half-way leaves only unreferenced files, which orphan cleanup collects.
 *
 * Orphan cleanup deletes the objects under the table location that no
 * snapshot, metadata file or statistics file references and that are older
 * than the table's floe.orphan-grace (ISO-8601 duration, default P3D), so
 * that the files of a write still in flight are never touched.
 *
 * Compaction (bin-pack) is planned here: per partition (spec id and
 * partition tuple) the live data files smaller than 75% of the table's
 * write.target-file-size-bytes (default 512 MiB), when a partition has two
 * or more.  Tables with delete files (position, equality, deletion
 * vectors) and v3 tables (whose rows' _row_id must survive) are refused as
 * not yet supported.  Only the plan (--dry-run) exists in this build; the
 * rewrite and its `replace` commit do not yet. */
#include "catalog.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "clock.h"
#include "avro/reader.h"
#include "iceberg/reachable.h"
#include "tablemeta.h"

static int nomem(struct fl_err *err)
{
	return fl_err_set(err, FL_ERR_NOMEM, "out of memory");
}

/* ---- expiry ------------------------------------------------------------- */

struct expire_run {
	int64_t now_ms;
	json_t *base; /* the state the plan was made on (under the lock) */
	json_t *removed; /* snapshot ids */
	json_t *updates;
};

static int build_expire(void *arg, const json_t *current, json_t **updates, struct fl_err *err)
{
	struct expire_run *x = arg;

	json_decref(x->base);
	json_decref(x->removed);
	json_decref(x->updates);
	x->base = x->removed = x->updates = NULL;
	if (cat_meta_expire_plan(current, x->now_ms, &x->updates, &x->removed, err) != 0)
		return -1;
	x->base = json_deep_copy(current);
	if (x->base == NULL)
		return nomem(err);
	*updates = json_incref(x->updates);
	return 0;
}

static bool is_removed(const json_t *removed, json_int_t id)
{
	size_t i;
	const json_t *v;

	json_array_foreach(removed, i, v)
	{
		if (json_integer_value(v) == id)
			return true;
	}
	return false;
}

/* Counts and bytes of what a run removes, by kind. */
struct tally {
	json_int_t lists, manifests, data, deletes, bytes;
};

/* Appends the keys of set that keep does not hold to uris. */
static int collect(const json_t *set, const json_t *keep, json_t *uris)
{
	const char *k;
	json_t *v;

	json_object_foreach((json_t *)set, k, v)
	{
		if (keep != NULL && json_object_get(keep, k) != NULL)
			continue;
		if (json_array_append_new(uris, json_string(k)) != 0)
			return -1;
	}
	return 0;
}

static int delete_all(struct st_io *io, const json_t *uris, struct fl_err *err)
{
	size_t n = json_array_size(uris);
	const char **v;
	int rc;

	if (n == 0)
		return 0;
	v = calloc(n, sizeof(*v));
	if (v == NULL)
		return nomem(err);
	for (size_t i = 0; i < n; i++)
		v[i] = json_string_value(json_array_get(uris, i));
	rc = st_io_delete_many(io, v, n, err);
	free(v);
	return rc;
}

/* The freed files of the snapshots in `removed` (of `before`) that the
 * snapshots of `after` do not reach; deletes them unless dry_run. */
static int free_files(struct st_io *io, const json_t *before, const json_t *after,
                      const json_t *removed, bool dry_run, struct tally *t, struct fl_err *err)
{
	struct st_reachable kept = {.io = io, .live_only = true};
	struct st_reachable gone = {.io = io, .missing_ok = true};
	json_t *files = json_array(), *manifests = json_array(), *lists = json_array();
	const char *k;
	json_t *v;
	size_t i;
	const json_t *s;
	int rc = -1;

	kept.lists = json_object();
	kept.manifests = json_object();
	kept.files = json_object();
	gone.lists = json_object();
	gone.manifests = json_object();
	gone.files = json_object();
	if (files == NULL || manifests == NULL || lists == NULL || kept.lists == NULL ||
	    kept.manifests == NULL || kept.files == NULL || gone.lists == NULL ||
	    gone.manifests == NULL || gone.files == NULL) {
		nomem(err);
		goto out;
	}
	json_array_foreach(json_object_get(after, "snapshots"), i, s)
	{
		const char *list = json_string_value(json_object_get(s, "manifest-list"));

		if (list != NULL && st_reachable_add(&kept, list, err) != 0)
			goto out;
	}
	gone.skip = kept.manifests;
	json_array_foreach(json_object_get(before, "snapshots"), i, s)
	{
		const char *list = json_string_value(json_object_get(s, "manifest-list"));

		if (list == NULL ||
		    !is_removed(removed, json_integer_value(json_object_get(s, "snapshot-id"))))
			continue;
		if (st_reachable_add(&gone, list, err) != 0)
			goto out;
	}
	if (collect(gone.files, kept.files, files) != 0 ||
	    collect(gone.manifests, kept.manifests, manifests) != 0 ||
	    collect(gone.lists, kept.lists, lists) != 0) {
		nomem(err);
		goto out;
	}
	json_array_foreach(files, i, s)
	{
		json_t *info = json_object_get(gone.files, json_string_value(s));

		if (json_integer_value(json_array_get(info, 1)) == 0)
			t->data++;
		else
			t->deletes++;
		t->bytes += json_integer_value(json_array_get(info, 0));
	}
	json_object_foreach(gone.manifests, k, v)
	{
		if (json_object_get(kept.manifests, k) == NULL)
			t->bytes += json_integer_value(v);
	}
	json_array_foreach(lists, i, s)
	{
		uint64_t size = 0;
		struct fl_err ignored;

		if (st_io_stat(io, json_string_value(s), &size, &ignored) == 0)
			t->bytes += (json_int_t)size;
	}
	t->manifests += (json_int_t)json_array_size(manifests);
	t->lists += (json_int_t)json_array_size(lists);
	if (!dry_run && (delete_all(io, files, err) != 0 || delete_all(io, manifests, err) != 0 ||
	                 delete_all(io, lists, err) != 0))
		goto out;
	rc = 0;
out:
	json_decref(files);
	json_decref(manifests);
	json_decref(lists);
	json_decref(kept.lists);
	json_decref(kept.manifests);
	json_decref(kept.files);
	json_decref(gone.lists);
	json_decref(gone.manifests);
	json_decref(gone.files);
	return rc;
}

/* The metadata as it will be once the plan's updates apply, for a dry run:
 * the snapshots that stay. */
static json_t *without(const json_t *meta, const json_t *removed)
{
	json_t *copy = json_deep_copy(meta), *kept = json_array(), *s;
	size_t i;

	if (copy == NULL || kept == NULL)
		goto fail;
	json_array_foreach(json_object_get(meta, "snapshots"), i, s)
	{
		if (!is_removed(removed, json_integer_value(json_object_get(s, "snapshot-id"))) &&
		    json_array_append(kept, s) != 0)
			goto fail;
	}
	if (json_object_set_new(copy, "snapshots", kept) != 0) {
		kept = NULL;
		goto fail;
	}
	return copy;
fail:
	json_decref(copy);
	json_decref(kept);
	return NULL;
}

static json_t *report_new(const char *action, const char *table, bool dry_run)
{
	return json_pack("{s:s, s:s, s:b}", "action", action, "table", table, "dry-run", dry_run);
}

static int report_tally(json_t *r, const struct tally *t)
{
	int bad = 0;

	bad |= json_object_set_new(r, "data-files-removed", json_integer(t->data));
	bad |= json_object_set_new(r, "delete-files-removed", json_integer(t->deletes));
	bad |= json_object_set_new(r, "manifests-removed", json_integer(t->manifests));
	bad |= json_object_set_new(r, "manifest-lists-removed", json_integer(t->lists));
	bad |= json_object_set_new(r, "files-removed",
	                           json_integer(t->data + t->deletes + t->manifests + t->lists));
	bad |= json_object_set_new(r, "bytes-removed", json_integer(t->bytes));
	bad |= json_object_set_new(r, "files-added", json_integer(0));
	bad |= json_object_set_new(r, "bytes-added", json_integer(0));
	return bad ? -1 : 0;
}

int cat_maintain_expire(struct cat_db *db, const struct cat_warehouse *wh, const struct cat_ns *ns,
                        const char *name, const struct cat_limits *lim, int64_t now_ms,
                        bool dry_run, json_t **report, struct fl_err *err)
{
	struct expire_run x = {.now_ms = now_ms};
	struct cat_change ch = {.ns = *ns, .name = name};
	struct tally t = {0};
	char tbuf[520], nsbuf[520], type[16], *mloc = NULL, *text = NULL;
	json_t *after = NULL, *r = NULL, *refs;
	size_t i;
	const json_t *u;
	int rc = -1;

	snprintf(tbuf, sizeof(tbuf), "%s.%s", cat_ns_str(ns, nsbuf, sizeof(nsbuf)), name);
	if (wh->io == NULL)
		return fl_err_set(err, FL_ERR_INTERNAL, "no storage handle for the warehouse");
	if (dry_run) {
		if (cat_table_load(db, NULL, wh->name, ns, name, &mloc, &text, type, err) != 0)
			goto out;
		x.base = json_loads(text, 0, NULL);
		if (x.base == NULL) {
			fl_err_set(err, FL_ERR_INTERNAL, "stored metadata is not JSON");
			goto out;
		}
		if (cat_meta_expire_plan(x.base, now_ms, &x.updates, &x.removed, err) != 0)
			goto out;
		after = without(x.base, x.removed);
	} else {
		if (cat_table_append(db, wh, &ch, build_expire, &x, lim, NULL, err) != 0)
			goto out;
		after = json_loads(ch.metadata, 0, NULL);
	}
	if (after == NULL) {
		nomem(err);
		goto out;
	}
	if (json_array_size(x.removed) > 0 &&
	    free_files(wh->io, x.base, after, x.removed, dry_run, &t, err) != 0) {
		fl_err_prefix(err, "table %s: expired %zu snapshots, then", tbuf,
		              json_array_size(x.removed));
		goto out;
	}
	r = report_new("expire", tbuf, dry_run);
	refs = json_array();
	if (r == NULL || refs == NULL || json_object_set_new(r, "refs-removed", refs) != 0) {
		json_decref(refs);
		nomem(err);
		goto out;
	}
	json_array_foreach(x.updates, i, u)
	{
		const char *ref = json_string_value(json_object_get(u, "ref-name"));

		if (ref != NULL && json_array_append_new(refs, json_string(ref)) != 0) {
			nomem(err);
			goto out;
		}
	}
	if (json_object_set_new(r, "snapshots-removed",
	                        json_integer((json_int_t)json_array_size(x.removed))) != 0 ||
	    json_object_set(r, "snapshot-ids", x.removed) != 0 || report_tally(r, &t) != 0) {
		nomem(err);
		goto out;
	}
	*report = r;
	r = NULL;
	rc = 0;
out:
	cat_changes_free(&ch, 1);
	json_decref(x.base);
	json_decref(x.removed);
	json_decref(x.updates);
	json_decref(after);
	json_decref(r);
	free(mloc);
	free(text);
	return rc;
}

/* ---- orphan cleanup ------------------------------------------------------ */

#define DEFAULT_ORPHAN_GRACE_S (3 * 86400)
#define MIN_ORPHAN_GRACE_S 3600 /* below this an in-flight write could be hit */
#define MAX_ORPHAN_GRACE_S (100LL * 366 * 86400) /* keeps the cutoff in range */
#define ORPHAN_SAMPLE 20

/* Every file the metadata references: the reachable files of every snapshot
 * (all entries, DELETED ones too: cheap insurance), the metadata files of
 * the log and the current one, statistics files. */
static int referenced(struct st_io *io, const json_t *meta, const char *mloc, json_t *refs,
                      struct fl_err *err)
{
	struct st_reachable r = {.io = io, .lists = refs, .manifests = refs, .files = refs};
	static const char *const stats[] = {"statistics", "partition-statistics"};
	size_t i;
	const json_t *s;

	if (mloc != NULL && json_object_set_new(refs, mloc, json_true()) != 0)
		return nomem(err);
	json_array_foreach(json_object_get(meta, "snapshots"), i, s)
	{
		const char *list = json_string_value(json_object_get(s, "manifest-list"));

		if (list != NULL && st_reachable_add(&r, list, err) != 0)
			return -1;
	}
	json_array_foreach(json_object_get(meta, "metadata-log"), i, s)
	{
		const char *f = json_string_value(json_object_get(s, "metadata-file"));

		if (f != NULL && json_object_set_new(refs, f, json_true()) != 0)
			return nomem(err);
	}
	for (size_t k = 0; k < 2; k++) {
		json_array_foreach(json_object_get(meta, stats[k]), i, s)
		{
			const char *f = json_string_value(json_object_get(s, "statistics-path"));

			if (f != NULL && json_object_set_new(refs, f, json_true()) != 0)
				return nomem(err);
		}
	}
	return 0;
}

struct orphan_walk {
	const json_t *refs;
	int64_t before_ms; /* only objects modified before this */
	json_t *found; /* uri -> size */
	json_int_t listed;
};

static int orphan_cb(void *arg, const char *uri, uint64_t size, int64_t mtime_ms,
                     struct fl_err *err)
{
	struct orphan_walk *w = arg;

	w->listed++;
	if (json_object_get(w->refs, uri) != NULL || mtime_ms >= w->before_ms)
		return 0;
	if (json_object_set_new(w->found, uri, json_integer((json_int_t)size)) != 0)
		return nomem(err);
	return 0;
}

/* The table's metadata and its location, loaded fresh. */
static int load_meta(struct cat_db *db, const struct cat_warehouse *wh, const struct cat_ns *ns,
                     const char *name, char **mloc, json_t **meta, struct fl_err *err)
{
	char *text = NULL, type[16];

	*mloc = NULL;
	if (cat_table_load(db, NULL, wh->name, ns, name, mloc, &text, type, err) != 0)
		return -1;
	*meta = json_loads(text, 0, NULL);
	free(text);
	if (*meta == NULL)
		return fl_err_set(err, FL_ERR_INTERNAL, "stored metadata is not JSON");
	return 0;
}

int cat_maintain_orphans(struct cat_db *db, const struct cat_warehouse *wh, const struct cat_ns *ns,
                         const char *name, int64_t now_ms, bool dry_run, json_t **report,
                         struct fl_err *err)
{
	struct orphan_walk w = {0};
	char tbuf[520], nsbuf[520], *mloc = NULL, *mloc2 = NULL;
	json_t *meta = NULL, *meta2 = NULL, *refs = json_object(), *doomed = json_array();
	json_t *sample = json_array(), *r = NULL, *v;
	const char *grace_s, *location, *k;
	int64_t grace = DEFAULT_ORPHAN_GRACE_S;
	json_int_t bytes = 0;
	int rc = -1;

	snprintf(tbuf, sizeof(tbuf), "%s.%s", cat_ns_str(ns, nsbuf, sizeof(nsbuf)), name);
	if (refs == NULL || doomed == NULL || sample == NULL) {
		nomem(err);
		goto out;
	}
	if (wh->io == NULL) {
		fl_err_set(err, FL_ERR_INTERNAL, "no storage handle for the warehouse");
		goto out;
	}
	if (load_meta(db, wh, ns, name, &mloc, &meta, err) != 0)
		goto out;
	grace_s = json_string_value(
	        json_object_get(json_object_get(meta, "properties"), "floe.orphan-grace"));
	if (grace_s != NULL && (grace = fl_duration_parse(grace_s)) < 0) {
		fl_err_set(
		        err, FL_ERR_BAD_REQUEST,
		        "table %s: floe.orphan-grace '%.40s' is not a duration (e.g. P3D, PT12H)",
		        tbuf, grace_s);
		goto out;
	}
	if (grace < MIN_ORPHAN_GRACE_S)
		grace = MIN_ORPHAN_GRACE_S;
	if (grace > MAX_ORPHAN_GRACE_S)
		grace = MAX_ORPHAN_GRACE_S;
	location = json_string_value(json_object_get(meta, "location"));
	if (location == NULL) {
		fl_err_set(err, FL_ERR_INTERNAL, "table %s has no location", tbuf);
		goto out;
	}
	if (referenced(wh->io, meta, mloc, refs, err) != 0)
		goto fail;
	w.refs = refs;
	w.before_ms = now_ms - grace * 1000;
	w.found = json_object();
	if (w.found == NULL) {
		nomem(err);
		goto out;
	}
	if (st_io_list(wh->io, location, orphan_cb, &w, err) != 0)
		goto fail;
	/* A commit may have landed while we listed (add_files can reference
	 * an old file): judge the candidates against the newest metadata too. */
	if (load_meta(db, wh, ns, name, &mloc2, &meta2, err) != 0)
		goto out;
	if (strcmp(mloc, mloc2) != 0 && referenced(wh->io, meta2, mloc2, refs, err) != 0)
		goto fail;
	json_object_foreach(w.found, k, v)
	{
		if (json_object_get(refs, k) != NULL)
			continue;
		bytes += json_integer_value(v);
		if (json_array_append_new(doomed, json_string(k)) != 0 ||
		    (json_array_size(sample) < ORPHAN_SAMPLE &&
		     json_array_append_new(sample, json_string(k)) != 0)) {
			nomem(err);
			goto out;
		}
	}
	if (!dry_run && delete_all(wh->io, doomed, err) != 0)
		goto fail;
	r = report_new("orphans", tbuf, dry_run);
	if (r == NULL ||
	    json_object_set_new(r, "grace-seconds", json_integer((json_int_t)grace)) != 0 ||
	    json_object_set_new(r, "objects-listed", json_integer(w.listed)) != 0 ||
	    json_object_set_new(r, "files-removed",
	                        json_integer((json_int_t)json_array_size(doomed))) != 0 ||
	    json_object_set_new(r, "bytes-removed", json_integer(bytes)) != 0 ||
	    json_object_set_new(r, "files-added", json_integer(0)) != 0 ||
	    json_object_set_new(r, "bytes-added", json_integer(0)) != 0 ||
	    json_object_set(r, "sample", sample) != 0) {
		nomem(err);
		goto out;
	}
	*report = r;
	r = NULL;
	rc = 0;
	goto out;
fail:
	fl_err_prefix(err, "table %s: orphan cleanup", tbuf);
out:
	free(mloc);
	free(mloc2);
	json_decref(meta);
	json_decref(meta2);
	json_decref(refs);
	json_decref(doomed);
	json_decref(sample);
	json_decref(w.found);
	json_decref(r);
	return rc;
}

/* ---- compaction plan ------------------------------------------------------ */

#define DEFAULT_TARGET_FILE_BYTES ((json_int_t)512 << 20)
#define MAX_MANIFEST_READ ((size_t)64 << 20)

/* write.target-file-size-bytes, or the default when absent. */
static int target_bytes(const json_t *meta, const char *table, json_int_t *out, struct fl_err *err)
{
	const char *s = json_string_value(json_object_get(json_object_get(meta, "properties"),
	                                                  "write.target-file-size-bytes"));
	char *end = NULL;
	long long v;

	*out = DEFAULT_TARGET_FILE_BYTES;
	if (s == NULL)
		return 0;
	v = strtoll(s, &end, 10);
	if (end == s || *end != '\0' || v <= 0)
		return fl_err_set(
		        err, FL_ERR_BAD_REQUEST,
		        "table %s: write.target-file-size-bytes '%.40s' is not a positive "
		        "integer",
		        table, s);
	*out = (json_int_t)v;
	return 0;
}

static const json_t *current_snapshot(const json_t *meta)
{
	json_int_t id = json_integer_value(json_object_get(meta, "current-snapshot-id"));
	size_t i;
	const json_t *s;

	json_array_foreach(json_object_get(meta, "snapshots"), i, s)
	{
		if (json_integer_value(json_object_get(s, "snapshot-id")) == id)
			return s;
	}
	return NULL;
}

/* Adds the live entries of one manifest to groups: "<spec id>|<partition
 * JSON>" -> {spec-id, partition, files: [[uri, size]], bytes} for the data
 * files under threshold.  Delete content anywhere refuses the table. */
static int plan_manifest(struct st_io *io, const json_t *mf, const char *table,
                         json_int_t threshold, json_t *groups, struct fl_err *err)
{
	const char *uri = json_string_value(json_object_get(mf, "manifest_path"));
	json_int_t spec_id = json_integer_value(json_object_get(mf, "partition_spec_id"));
	json_t *entries = NULL, *e;
	size_t i;
	int rc = -1;

	if (uri == NULL)
		return fl_err_set(err, FL_ERR_BAD_REQUEST,
		                  "table %s: a manifest list entry lacks manifest_path", table);
	if (st_avro_read_all(io, uri, MAX_MANIFEST_READ, NULL, &entries, err) != 0)
		return -1;
	json_array_foreach(entries, i, e)
	{
		const json_t *df = json_object_get(e, "data_file");
		const char *path = json_string_value(json_object_get(df, "file_path"));
		json_int_t size = json_integer_value(json_object_get(df, "file_size_in_bytes"));
		char *key = NULL, *pj;
		json_t *g;

		if (json_integer_value(json_object_get(e, "status")) == 2)
			continue;
		if (json_integer_value(json_object_get(df, "content")) != 0 ||
		    json_integer_value(json_object_get(mf, "content")) != 0) {
			fl_err_set(
			        err, FL_ERR_UNSUPPORTED,
			        "table %s has position/equality delete files or deletion vectors; "
			        "compaction that applies them is not yet supported",
			        table);
			goto out;
		}
		if (path == NULL) {
			fl_err_set(err, FL_ERR_BAD_REQUEST,
			           "manifest %.200s: entry %zu lacks file_path", uri, i);
			goto out;
		}
		if (size >= threshold)
			continue;
		pj = json_dumps(json_object_get(df, "partition"),
		                JSON_COMPACT | JSON_SORT_KEYS | JSON_ENCODE_ANY);
		if (pj != NULL && (key = malloc(strlen(pj) + 24)) != NULL)
			snprintf(key, strlen(pj) + 24, "%" JSON_INTEGER_FORMAT "|%s", spec_id, pj);
		if (key == NULL) {
			free(pj);
			nomem(err);
			goto out;
		}
		free(pj);
		g = json_object_get(groups, key);
		if (g == NULL) {
			g = json_pack("{s:I, s:O?, s:[], s:I}", "spec-id", spec_id, "partition",
			              json_object_get(df, "partition"), "files", "bytes",
			              (json_int_t)0);
			if (g == NULL || json_object_set_new(groups, key, g) != 0) {
				free(key);
				nomem(err);
				goto out;
			}
		}
		free(key);
		if (json_array_append_new(json_object_get(g, "files"),
		                          json_pack("[s,I]", path, size)) != 0 ||
		    json_object_set_new(
		            g, "bytes",
		            json_integer(json_integer_value(json_object_get(g, "bytes")) + size)) !=
		            0) {
			nomem(err);
			goto out;
		}
	}
	rc = 0;
out:
	json_decref(entries);
	return rc;
}

int cat_maintain_compact(struct cat_db *db, const struct cat_warehouse *wh, const struct cat_ns *ns,
                         const char *name, bool dry_run, json_t **report, struct fl_err *err)
{
	char tbuf[520], nsbuf[520], *mloc = NULL;
	json_t *meta = NULL, *list = NULL, *groups = json_object(), *plan = json_array(), *r = NULL;
	json_t *g, *mf;
	const json_t *snap;
	const char *k;
	json_int_t target, removed = 0, bytes = 0, added = 0, parts = 0;
	size_t i;
	int rc = -1;

	snprintf(tbuf, sizeof(tbuf), "%s.%s", cat_ns_str(ns, nsbuf, sizeof(nsbuf)), name);
	if (groups == NULL || plan == NULL) {
		nomem(err);
		goto out;
	}
	if (wh->io == NULL) {
		fl_err_set(err, FL_ERR_INTERNAL, "no storage handle for the warehouse");
		goto out;
	}
	if (load_meta(db, wh, ns, name, &mloc, &meta, err) != 0 ||
	    target_bytes(meta, tbuf, &target, err) != 0)
		goto out;
	if (json_integer_value(json_object_get(meta, "format-version")) >= 3) {
		fl_err_set(err, FL_ERR_UNSUPPORTED,
		           "table %s is format v3: compaction that keeps _row_id and "
		           "_last_updated_sequence_number is not yet supported",
		           tbuf);
		goto out;
	}
	snap = current_snapshot(meta);
	if (snap != NULL) {
		const char *luri = json_string_value(json_object_get(snap, "manifest-list"));

		if (luri == NULL) {
			fl_err_set(err, FL_ERR_BAD_REQUEST,
			           "table %s: the current snapshot has no manifest-list", tbuf);
			goto out;
		}
		if (st_avro_read_all(wh->io, luri, MAX_MANIFEST_READ, NULL, &list, err) != 0)
			goto fail;
		json_array_foreach(list, i, mf)
		{
			if (plan_manifest(wh->io, mf, tbuf, target / 4 * 3, groups, err) != 0)
				goto fail;
		}
	}
	json_object_foreach(groups, k, g)
	{
		size_t n = json_array_size(json_object_get(g, "files"));
		json_int_t b = json_integer_value(json_object_get(g, "bytes"));

		if (n < 2)
			continue;
		parts++;
		removed += (json_int_t)n;
		bytes += b;
		added += (b + target - 1) / target;
		if (json_object_set_new(g, "files-removed", json_integer((json_int_t)n)) != 0 ||
		    json_object_del(g, "files") != 0 || json_array_append(plan, g) != 0) {
			nomem(err);
			goto out;
		}
	}
	if (!dry_run && removed > 0) {
		fl_err_set(err, FL_ERR_UNSUPPORTED,
		           "table %s: compaction would rewrite %" JSON_INTEGER_FORMAT
		           " files in %" JSON_INTEGER_FORMAT
		           " partitions, but the rewrite is not yet implemented in this build "
		           "(--dry-run shows the plan)",
		           tbuf, removed, parts);
		goto out;
	}
	r = report_new("compact", tbuf, dry_run);
	if (r == NULL ||
	    json_object_set_new(r, "target-file-size-bytes", json_integer(target)) != 0 ||
	    json_object_set_new(r, "files-removed", json_integer(dry_run ? removed : 0)) != 0 ||
	    json_object_set_new(r, "files-added", json_integer(dry_run ? added : 0)) != 0 ||
	    json_object_set_new(r, "bytes-removed", json_integer(dry_run ? bytes : 0)) != 0 ||
	    json_object_set_new(r, "bytes-added", json_integer(0)) != 0 ||
	    json_object_set_new(r, "partitions", json_integer(dry_run ? parts : 0)) != 0 ||
	    json_object_set(r, "plan", plan) != 0) {
		nomem(err);
		goto out;
	}
	*report = r;
	r = NULL;
	rc = 0;
	goto out;
fail:
	fl_err_prefix(err, "table %s: compaction plan", tbuf);
out:
	free(mloc);
	json_decref(meta);
	json_decref(list);
	json_decref(groups);
	json_decref(plan);
	json_decref(r);
	return rc;
}
