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
 * Compaction (bin-pack): per partition (spec id and partition tuple) the
 * live data files smaller than 75% of the table's
 * write.target-file-size-bytes (default 512 MiB), when a partition has two
 * or more, are read with the Parquet reader and written again toward the
 * target size; one `replace` snapshot drops the manifests that held them
 * (only manifests whose every live file is rewritten) and adds one whose
 * entries are the new files ADDED and the old ones DELETED.  It is built
 * under the row lock on the then current state, so a concurrent append is
 * carried, and a concurrent commit that removed a dropped manifest aborts
 * the run.  Tables with delete files (position, equality, deletion
 * vectors) and v3 tables (whose rows' _row_id must survive) are refused as
 * not yet supported. */
#include "catalog.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "clock.h"
#include <openssl/rand.h>
#include <strings.h>
#include <time.h>

#include "avro/reader.h"
#include "iceberg/name_mapping.h"
#include "iceberg/snapshot.h"
#include "parquet/parquet.h"
#include "parquet/reader.h"
#include "uuid.h"
#include "iceberg/reachable.h"
#include "iceberg/rewrite.h"
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

/* ---- compaction ---------------------------------------------------------- */

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

static const json_t *by_id(const json_t *arr, const char *key, json_int_t id)
{
	size_t i;
	const json_t *s;

	json_array_foreach(arr, i, s)
	{
		if (json_integer_value(json_object_get(s, key)) == id)
			return s;
	}
	return NULL;
}

static const json_t *current_snapshot(const json_t *meta)
{
	const json_t *id = json_object_get(meta, "current-snapshot-id");

	if (!json_is_integer(id) || json_integer_value(id) == -1)
		return NULL;
	return by_id(json_object_get(meta, "snapshots"), "snapshot-id", json_integer_value(id));
}

struct compact {
	const char *table; /* "ns.name", for messages */
	struct st_io *io;
	json_t *meta; /* the state the plan was made on */
	json_int_t target, threshold, spec_id;
	json_t *groups; /* "<spec id>|<partition JSON>" -> {spec-id, partition, files} */
	json_t *mlive; /* manifest path -> [live entries, entries chosen] */
	json_t *drop; /* manifest paths the replace leaves out */
	json_t *plan; /* the chosen groups, each {spec-id, partition, files: [entry]} */
	json_int_t removed, bytes_removed, added, bytes_added, parts, skipped;
	/* the rewrite and its commit */
	struct st_snapshot_table t;
	char *mdir;
	int64_t snapshot_id;
	int attempt;
	struct st_snapshot_manifest *manifest;
	json_t *written; /* URIs of the new data files */
	json_t *committed; /* the snapshot committed */
};

/* An entry's long field, else the manifest list's fallback. */
static json_int_t or_else(const json_t *v, const json_t *dflt)
{
	return json_is_integer(v) ? json_integer_value(v) : json_integer_value(dflt);
}

/* Adds the live entries of one manifest (a record of the current list) to
 * the groups; delete content anywhere refuses the table. */
static int plan_manifest(struct compact *c, const json_t *mf, struct fl_err *err)
{
	const char *uri = json_string_value(json_object_get(mf, "manifest_path"));
	json_int_t spec_id = json_integer_value(json_object_get(mf, "partition_spec_id"));
	json_int_t live = 0;
	json_t *entries = NULL, *e;
	size_t i;
	int rc = -1;

	if (uri == NULL)
		return fl_err_set(err, FL_ERR_BAD_REQUEST,
		                  "table %s: a manifest list entry lacks manifest_path", c->table);
	if (st_avro_read_all(c->io, uri, MAX_MANIFEST_READ, NULL, &entries, err) != 0)
		return -1;
	json_array_foreach(entries, i, e)
	{
		const json_t *df = json_object_get(e, "data_file");
		const char *path = json_string_value(json_object_get(df, "file_path"));
		json_int_t size = json_integer_value(json_object_get(df, "file_size_in_bytes"));
		char *key = NULL, *pj;
		json_t *g, *f;

		if (json_integer_value(json_object_get(e, "status")) == 2)
			continue;
		live++;
		if (json_integer_value(json_object_get(df, "content")) != 0 ||
		    json_integer_value(json_object_get(mf, "content")) != 0) {
			fl_err_set(
			        err, FL_ERR_UNSUPPORTED,
			        "table %s has position/equality delete files or deletion vectors; "
			        "compaction that applies them is not yet supported",
			        c->table);
			goto out;
		}
		if (path == NULL) {
			fl_err_set(err, FL_ERR_BAD_REQUEST,
			           "manifest %.200s: entry %zu lacks file_path", uri, i);
			goto out;
		}
		if (size >= c->threshold || spec_id != c->spec_id)
			continue;
		pj = json_dumps(json_object_get(df, "partition"),
		                JSON_COMPACT | JSON_SORT_KEYS | JSON_ENCODE_ANY);
		if (pj != NULL && (key = malloc(strlen(pj) + 24)) != NULL)
			snprintf(key, strlen(pj) + 24, "%" JSON_INTEGER_FORMAT "|%s", spec_id, pj);
		free(pj);
		g = key != NULL ? json_object_get(c->groups, key) : NULL;
		if (key != NULL && g == NULL) {
			g = json_pack("{s:I, s:O?, s:[]}", "spec-id", spec_id, "partition",
			              json_object_get(df, "partition"), "files");
			if (g != NULL && json_object_set_new(c->groups, key, g) != 0)
				g = NULL;
		}
		free(key);
		f = json_pack("{s:s, s:I, s:I, s:s?, s:I, s:I, s:I, s:s}", "path", path, "size",
		              size, "records",
		              json_integer_value(json_object_get(df, "record_count")), "format",
		              json_string_value(json_object_get(df, "file_format")), "snapshot",
		              or_else(json_object_get(e, "snapshot_id"),
		                      json_object_get(mf, "added_snapshot_id")),
		              "seq",
		              or_else(json_object_get(e, "sequence_number"),
		                      json_object_get(mf, "sequence_number")),
		              "fseq",
		              or_else(json_object_get(e, "file_sequence_number"),
		                      json_object_get(mf, "sequence_number")),
		              "manifest", uri);
		if (g == NULL || f == NULL ||
		    json_array_append_new(json_object_get(g, "files"), f) != 0) {
			nomem(err);
			goto out;
		}
	}
	if (json_object_set_new(c->mlive, uri, json_pack("[I,I]", live, (json_int_t)0)) != 0) {
		nomem(err);
		goto out;
	}
	rc = 0;
out:
	json_decref(entries);
	return rc;
}

static json_int_t group_bytes(const json_t *files)
{
	json_int_t b = 0;
	size_t i;
	const json_t *f;

	json_array_foreach(files, i, f) b += json_integer_value(json_object_get(f, "size"));
	return b;
}

/* Chooses the partitions with two or more small files, then the manifests
 * whose every live file is chosen: those are dropped whole, and their
 * files are what gets rewritten.  A chosen file that shares a manifest with
 * a file that stays is skipped (rewriting it would need that manifest
 * rewritten with the others as EXISTING, which this build does not do). */
static int choose(struct compact *c, struct fl_err *err)
{
	const char *k;
	json_t *g, *f, *m;
	size_t i;

	json_object_foreach(c->groups, k, g)
	{
		if (json_array_size(json_object_get(g, "files")) < 2)
			continue;
		json_array_foreach(json_object_get(g, "files"), i, f)
		{
			m = json_object_get(c->mlive,
			                    json_string_value(json_object_get(f, "manifest")));
			json_array_set_new(
			        m, 1, json_integer(json_integer_value(json_array_get(m, 1)) + 1));
		}
	}
	json_object_foreach(c->mlive, k, m)
	{
		if (json_integer_value(json_array_get(m, 1)) > 0 &&
		    json_integer_value(json_array_get(m, 1)) ==
		            json_integer_value(json_array_get(m, 0)) &&
		    json_array_append_new(c->drop, json_string(k)) != 0)
			return nomem(err);
	}
	json_object_foreach(c->groups, k, g)
	{
		json_t *files = json_object_get(g, "files"), *keep;

		if (json_array_size(files) < 2)
			continue;
		keep = json_array();
		if (keep == NULL)
			return nomem(err);
		json_array_foreach(files, i, f)
		{
			m = json_object_get(c->mlive,
			                    json_string_value(json_object_get(f, "manifest")));
			if (json_integer_value(json_array_get(m, 1)) !=
			    json_integer_value(json_array_get(m, 0)))
				c->skipped++;
			else if (json_array_append(keep, f) != 0) {
				json_decref(keep);
				return nomem(err);
			}
		}
		if (json_array_size(keep) == 0) {
			json_decref(keep);
			continue;
		}
		c->parts++;
		c->removed += (json_int_t)json_array_size(keep);
		c->bytes_removed += group_bytes(keep);
		if (json_object_set_new(g, "files", keep) != 0 ||
		    json_array_append(c->plan, g) != 0)
			return nomem(err);
	}
	return 0;
}

static enum st_parquet_codec table_codec(const json_t *meta)
{
	const char *s = json_string_value(json_object_get(json_object_get(meta, "properties"),
	                                                  "write.parquet.compression-codec"));

	if (s == NULL)
		return ST_PARQUET_ZSTD;
	if (strcasecmp(s, "snappy") == 0)
		return ST_PARQUET_SNAPPY;
	if (strcasecmp(s, "gzip") == 0)
		return ST_PARQUET_GZIP;
	if (strcasecmp(s, "uncompressed") == 0)
		return ST_PARQUET_UNCOMPRESSED;
	return ST_PARQUET_ZSTD;
}

/* The writer's columns and the reader's projection from the schema (flat,
 * primitive fields), as every copy-on-write rewrite takes them. */
static int schema_columns(const struct compact *c, struct st_parquet_column **cols,
                          struct st_parquet_want **want, size_t *n, struct fl_err *err)
{
	if (st_rewrite_columns(c->t.schema, cols, want, n, err) != 0)
		return fl_err_prefix(err, "table %s: compaction", c->table);
	return 0;
}

/* The new files of one partition, written with the schema's columns. */
struct rewrite {
	struct compact *c;
	const struct st_parquet_column *cols;
	size_t ncols;
	char *schema_json;
	enum st_parquet_codec codec;
	const struct st_name_mapping *mapping; /* schema.name-mapping.default; may be NULL */
	struct st_io_writer *file;
	struct st_parquet_writer *w;
	char *uri;
	/* what was written: parallel arrays */
	struct st_data_file *files;
	struct st_parquet_metrics *ms;
	size_t n;
	json_int_t group_added, group_bytes;
};

static int rewrite_open(struct rewrite *rw, struct fl_err *err)
{
	struct st_parquet_opts po = {0};
	char uuid[FL_UUID_STR];
	const char *loc = json_string_value(json_object_get(rw->c->meta, "location"));
	size_t len;

	fl_uuid_v4(uuid);
	len = strlen(loc) + sizeof(uuid) + 32;
	rw->uri = malloc(len);
	if (rw->uri == NULL)
		return nomem(err);
	snprintf(rw->uri, len, "%s/data/%s-compact.parquet", loc, uuid);
	if (st_io_writer_open(rw->c->io, rw->uri, &rw->file, err) != 0)
		goto fail;
	po.columns = rw->cols;
	po.n_columns = rw->ncols;
	po.iceberg_schema_json = rw->schema_json;
	po.codec = rw->codec;
	po.sink = *st_io_writer_sink(rw->file);
	if (st_parquet_writer_open(&po, &rw->w, err) != 0) {
		st_io_writer_abort(rw->file);
		rw->file = NULL;
		goto fail;
	}
	return 0;
fail:
	free(rw->uri);
	rw->uri = NULL;
	return -1;
}

/* Finishes the open file and records it with the partition values. */
static int rewrite_close(struct rewrite *rw, const struct st_value *part, struct fl_err *err)
{
	struct st_parquet_metrics m = {0};
	void *grown;
	int rc = st_parquet_writer_close(rw->w, &m, err);

	rw->w = NULL;
	if (rc != 0)
		st_io_writer_abort(rw->file);
	else
		rc = st_io_writer_close(rw->file, NULL, err);
	rw->file = NULL;
	if (rc == 0 && json_array_append_new(rw->c->written, json_string(rw->uri)) != 0)
		rc = nomem(err);
	free(rw->uri);
	rw->uri = NULL;
	if (rc != 0) {
		st_parquet_metrics_free(&m);
		return -1;
	}
	grown = realloc(rw->ms, sizeof(*rw->ms) * (rw->n + 1));
	if (grown != NULL)
		rw->ms = grown;
	grown = grown != NULL ? realloc(rw->files, sizeof(*rw->files) * (rw->n + 1)) : NULL;
	if (grown == NULL) {
		st_parquet_metrics_free(&m);
		return nomem(err);
	}
	rw->files = grown;
	rw->ms[rw->n] = m;
	memset(&rw->files[rw->n], 0, sizeof(rw->files[rw->n]));
	st_parquet_metrics_to_data_file(&rw->ms[rw->n], &rw->files[rw->n]);
	rw->files[rw->n].file_path = json_string_value(
	        json_array_get(rw->c->written, json_array_size(rw->c->written) - 1));
	rw->files[rw->n].partition = part;
	rw->group_added++;
	rw->group_bytes += m.file_size;
	rw->n++;
	return 0;
}

/* One row of a group into the open file, rolled at the target size. */
struct group_write {
	struct rewrite *rw;
	const struct st_value *part;
};

static int write_group_row(void *arg, int64_t pos, const struct st_value *row, struct fl_err *err)
{
	struct group_write *gw = arg;
	struct rewrite *rw = gw->rw;

	(void)pos;
	if (rw->w == NULL && rewrite_open(rw, err) != 0)
		return -1;
	if (st_parquet_writer_write_row(rw->w, row, err) != 0)
		return -1;
	if (st_parquet_writer_size(rw->w) >= (uint64_t)rw->c->target &&
	    rewrite_close(rw, gw->part, err) != 0)
		return -1;
	return 0;
}

/* Streams the rows of every file of group g into new files rolled at the
 * target size. */
static int rewrite_group(struct rewrite *rw, const json_t *g, const struct st_value *part,
                         const struct st_parquet_want *want, struct fl_err *err)
{
	struct group_write gw = {rw, part};
	size_t i;
	const json_t *f;

	json_array_foreach(json_object_get(g, "files"), i, f)
	{
		const char *uri = json_string_value(json_object_get(f, "path"));

		if (st_rewrite_scan(rw->c->io, uri, rw->mapping, want, rw->ncols, write_group_row,
		                    &gw, err) != 0)
			return -1;
	}
	if (rw->w != NULL && rewrite_close(rw, part, err) != 0)
		return -1;
	return 0;
}

/* Under the row lock: the replace on top of the current state.  A commit
 * since the plan that left the dropped manifests in place (an append) is
 * simply carried; one that removed or rewrote them aborts the run. */
static int build_compact(void *arg, const json_t *current, json_t **updates, struct fl_err *err)
{
	struct compact *c = arg;
	const json_t *snap = current_snapshot(current);
	const char **drop = NULL;
	json_t *snapshot = NULL;
	struct st_snapshot_parent parent = {0};
	size_t nd = json_array_size(c->drop);
	int rc = -1;

	if (snap == NULL)
		return fl_err_set(err, FL_ERR_CONFLICT,
		                  "table %s: compaction aborted: the table has no current snapshot "
		                  "any more",
		                  c->table);
	if (json_integer_value(json_object_get(current, "format-version")) != c->t.format_version)
		return fl_err_set(err, FL_ERR_CONFLICT,
		                  "table %s: compaction aborted: the table was upgraded meanwhile",
		                  c->table);
	drop = calloc(nd, sizeof(*drop));
	if (drop == NULL)
		return nomem(err);
	for (size_t i = 0; i < nd; i++)
		drop[i] = json_string_value(json_array_get(c->drop, i));
	parent.snapshot_id = json_integer_value(json_object_get(snap, "snapshot-id"));
	parent.manifest_list = json_string_value(json_object_get(snap, "manifest-list"));
	parent.summary = json_object_get(snap, "summary");
	struct st_snapshot_opts so = {
	        .table = &c->t,
	        .parent = &parent,
	        .snapshot_id = c->snapshot_id,
	        .sequence_number =
	                json_integer_value(json_object_get(current, "last-sequence-number")) + 1,
	        .timestamp_ms = fl_now_ms(),
	        .attempt = ++c->attempt,
	        .manifest = c->manifest,
	        .drop_manifests = drop,
	        .n_drop = nd,
	};
	if (st_snapshot_build(&so, &snapshot, err) != 0) {
		if (err->kind == FL_ERR_CONFLICT)
			fl_err_prefix(err,
			              "table %s: compaction aborted, a concurrent commit removed "
			              "files it rewrote",
			              c->table);
		goto out;
	}
	*updates = json_pack("[{s:s, s:O}, {s:s, s:s, s:s, s:I}]", "action", "add-snapshot",
	                     "snapshot", snapshot, "action", "set-snapshot-ref", "ref-name", "main",
	                     "type", "branch", "snapshot-id", (json_int_t)c->snapshot_id);
	if (*updates == NULL) {
		nomem(err);
		goto out;
	}
	json_decref(c->committed);
	c->committed = json_incref(snapshot);
	rc = 0;
out:
	json_decref(snapshot);
	free(drop);
	return rc;
}

/* Rewrites the plan's files and writes the replace manifest (once). */
static int rewrite_all(struct compact *c, struct fl_err *err)
{
	struct st_parquet_column *cols = NULL;
	struct st_parquet_want *want = NULL;
	struct st_value **parts = NULL;
	struct st_data_file *dfs = NULL;
	struct st_manifest_entry *del = NULL;
	struct rewrite rw = {.c = c, .codec = table_codec(c->meta)};
	struct st_name_mapping *mapping = NULL;
	const char *mapping_text = json_string_value(json_object_get(
	        json_object_get(c->meta, "properties"), "schema.name-mapping.default"));
	size_t ncols = 0, np = json_array_size(c->plan), nd = 0, i;
	json_t *g;
	int rc = -1;

	if (schema_columns(c, &cols, &want, &ncols, err) != 0)
		goto out;
	if (mapping_text != NULL &&
	    st_name_mapping_parse(mapping_text, strlen(mapping_text), &mapping, err) != 0) {
		fl_err_prefix(err, "table %s: schema.name-mapping.default", c->table);
		goto out;
	}
	rw.mapping = mapping;
	rw.cols = cols;
	rw.ncols = ncols;
	rw.schema_json = json_dumps(c->t.schema, JSON_COMPACT);
	parts = calloc(np ? np : 1, sizeof(*parts));
	dfs = calloc((size_t)c->removed, sizeof(*dfs));
	del = calloc((size_t)c->removed, sizeof(*del));
	if (rw.schema_json == NULL || parts == NULL || dfs == NULL || del == NULL) {
		nomem(err);
		goto out;
	}
	json_array_foreach(c->plan, i, g)
	{
		size_t nparts, k;
		const json_t *f;

		if (st_snapshot_partition_parse(&c->t, json_object_get(g, "partition"), &parts[i],
		                                &nparts, err) != 0) {
			fl_err_prefix(err, "table %s", c->table);
			goto out;
		}
		rw.group_added = rw.group_bytes = 0;
		if (rewrite_group(&rw, g, parts[i], want, err) != 0) {
			fl_err_prefix(err, "table %s: rewriting", c->table);
			goto out;
		}
		if (json_object_set_new(g, "files-added", json_integer(rw.group_added)) != 0 ||
		    json_object_set_new(g, "bytes-added", json_integer(rw.group_bytes)) != 0) {
			nomem(err);
			goto out;
		}
		json_array_foreach(json_object_get(g, "files"), k, f)
		{
			dfs[nd].content = ST_CONTENT_DATA;
			dfs[nd].file_path = json_string_value(json_object_get(f, "path"));
			dfs[nd].file_format = json_string_value(json_object_get(f, "format"));
			if (dfs[nd].file_format == NULL)
				dfs[nd].file_format = "PARQUET";
			dfs[nd].partition = parts[i];
			dfs[nd].record_count = json_integer_value(json_object_get(f, "records"));
			dfs[nd].file_size_in_bytes = json_integer_value(json_object_get(f, "size"));
			del[nd].file = &dfs[nd];
			del[nd].has_snapshot_id = true;
			del[nd].snapshot_id = json_integer_value(json_object_get(f, "snapshot"));
			del[nd].has_sequence_number = true;
			del[nd].sequence_number = json_integer_value(json_object_get(f, "seq"));
			del[nd].has_file_sequence_number = true;
			del[nd].file_sequence_number =
			        json_integer_value(json_object_get(f, "fseq"));
			nd++;
		}
	}
	c->added = (json_int_t)rw.n;
	for (i = 0; i < rw.n; i++)
		c->bytes_added += rw.files[i].file_size_in_bytes;
	if (st_snapshot_manifest_write_replace(&c->t, c->snapshot_id, rw.files, rw.n, del, nd,
	                                       &c->manifest, err) != 0) {
		fl_err_prefix(err, "table %s: compaction manifest", c->table);
		goto out;
	}
	rc = 0;
out:
	if (rw.w != NULL)
		st_parquet_writer_free(rw.w);
	if (rw.file != NULL)
		st_io_writer_abort(rw.file);
	free(rw.uri);
	for (i = 0; i < rw.n; i++)
		st_parquet_metrics_free(&rw.ms[i]);
	free(rw.ms);
	free(rw.files);
	for (i = 0; parts != NULL && i < np; i++)
		free(parts[i]);
	free(parts);
	free(dfs);
	free(del);
	free(cols);
	free(want);
	free(rw.schema_json);
	st_name_mapping_free(mapping);
	return rc;
}

/* Deletes what an uncommitted run wrote, best effort. */
static void compact_discard(struct compact *c)
{
	struct fl_err ignored;

	if (c->manifest != NULL && st_io_delete(c->io, c->manifest->path, &ignored) != 0)
		ignored.kind = FL_ERR_NONE;
	if (delete_all(c->io, c->written, &ignored) != 0)
		ignored.kind = FL_ERR_NONE;
}

static int compact_setup(struct compact *c, struct fl_err *err)
{
	const char *loc = json_string_value(json_object_get(c->meta, "location"));
	json_int_t sid = json_integer_value(json_object_get(c->meta, "current-schema-id"));
	size_t len;

	if (loc == NULL)
		return fl_err_set(err, FL_ERR_INTERNAL, "table %s has no location", c->table);
	len = strlen(loc) + 16;
	c->mdir = malloc(len);
	if (c->mdir == NULL)
		return nomem(err);
	snprintf(c->mdir, len, "%s/metadata", loc);
	c->spec_id = json_integer_value(json_object_get(c->meta, "default-spec-id"));
	c->t.format_version = (int)json_integer_value(json_object_get(c->meta, "format-version"));
	c->t.schema = by_id(json_object_get(c->meta, "schemas"), "schema-id", sid);
	c->t.schema_id = (int32_t)sid;
	c->t.spec = by_id(json_object_get(c->meta, "partition-specs"), "spec-id", c->spec_id);
	c->t.spec_id = (int32_t)c->spec_id;
	c->t.metadata_dir = c->mdir;
	c->t.io = c->io;
	c->t.codec = ST_AVRO_CODEC_DEFLATE;
	if (c->t.schema == NULL)
		return fl_err_set(err, FL_ERR_INTERNAL, "table %s: the current schema is missing",
		                  c->table);
	do {
		if (RAND_bytes((unsigned char *)&c->snapshot_id, sizeof(c->snapshot_id)) != 1)
			c->snapshot_id = fl_now_ms();
		c->snapshot_id &= INT64_MAX;
	} while (c->snapshot_id == 0);
	return 0;
}

static void compact_free(struct compact *c)
{
	json_decref(c->meta);
	json_decref(c->groups);
	json_decref(c->mlive);
	json_decref(c->drop);
	json_decref(c->plan);
	json_decref(c->written);
	json_decref(c->committed);
	st_snapshot_manifest_free(c->manifest);
	free(c->mdir);
}

/* The report's numbers, per partition and in all. */
static json_t *compact_report(struct compact *c, bool dry_run)
{
	json_t *r = report_new("compact", c->table, dry_run), *g;
	size_t i;
	int bad = r == NULL;

	json_array_foreach(c->plan, i, g)
	{
		json_int_t b = group_bytes(json_object_get(g, "files"));

		if (dry_run) {
			json_int_t est = (b + c->target - 1) / c->target;

			c->added += est;
			c->bytes_added += b;
			bad |= json_object_set_new(g, "files-added", json_integer(est));
			bad |= json_object_set_new(g, "bytes-added", json_integer(b));
		}
		bad |= json_object_set_new(
		        g, "files-removed",
		        json_integer((json_int_t)json_array_size(json_object_get(g, "files"))));
		bad |= json_object_set_new(g, "bytes-removed", json_integer(b));
		bad |= json_object_del(g, "files");
	}
	if (!bad) {
		bad |= json_object_set_new(r, "target-file-size-bytes", json_integer(c->target));
		bad |= json_object_set_new(r, "files-removed", json_integer(c->removed));
		bad |= json_object_set_new(r, "files-added", json_integer(c->added));
		bad |= json_object_set_new(r, "bytes-removed", json_integer(c->bytes_removed));
		bad |= json_object_set_new(r, "bytes-added", json_integer(c->bytes_added));
		bad |= json_object_set_new(r, "partitions", json_integer(c->parts));
		bad |= json_object_set_new(r, "files-skipped", json_integer(c->skipped));
		bad |= json_object_set(r, "plan", c->plan);
		if (c->committed != NULL)
			bad |= json_object_set(r, "snapshot-id",
			                       json_object_get(c->committed, "snapshot-id"));
	}
	if (bad) {
		json_decref(r);
		return NULL;
	}
	return r;
}

int cat_maintain_compact(struct cat_db *db, const struct cat_warehouse *wh, const struct cat_ns *ns,
                         const char *name, const struct cat_limits *lim, unsigned pause_ms,
                         bool dry_run, json_t **report, struct fl_err *err)
{
	struct compact c = {.io = wh->io};
	struct cat_change ch = {.ns = *ns, .name = name};
	char tbuf[520], nsbuf[520], *mloc = NULL;
	json_t *list = NULL, *mf, *r;
	const json_t *snap;
	size_t i;
	int rc = -1;

	snprintf(tbuf, sizeof(tbuf), "%s.%s", cat_ns_str(ns, nsbuf, sizeof(nsbuf)), name);
	c.table = tbuf;
	c.groups = json_object();
	c.mlive = json_object();
	c.drop = json_array();
	c.plan = json_array();
	c.written = json_array();
	if (c.groups == NULL || c.mlive == NULL || c.drop == NULL || c.plan == NULL ||
	    c.written == NULL) {
		nomem(err);
		goto out;
	}
	if (wh->io == NULL) {
		fl_err_set(err, FL_ERR_INTERNAL, "no storage handle for the warehouse");
		goto out;
	}
	if (load_meta(db, wh, ns, name, &mloc, &c.meta, err) != 0 ||
	    target_bytes(c.meta, tbuf, &c.target, err) != 0)
		goto out;
	c.threshold = c.target / 4 * 3;
	if (json_integer_value(json_object_get(c.meta, "format-version")) >= 3) {
		fl_err_set(err, FL_ERR_UNSUPPORTED,
		           "table %s is format v3: compaction that keeps _row_id and "
		           "_last_updated_sequence_number is not yet supported",
		           tbuf);
		goto out;
	}
	if (compact_setup(&c, err) != 0)
		goto out;
	snap = current_snapshot(c.meta);
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
			if (plan_manifest(&c, mf, err) != 0)
				goto fail;
		}
	}
	if (choose(&c, err) != 0)
		goto out;
	if (!dry_run && c.removed > 0) {
		if (rewrite_all(&c, err) != 0) {
			compact_discard(&c);
			goto out;
		}
		if (pause_ms > 0) {
			struct timespec ts = {pause_ms / 1000, (long)(pause_ms % 1000) * 1000000L};

			nanosleep(&ts, NULL);
		}
		if (cat_table_append(db, wh, &ch, build_compact, &c, lim, NULL, err) != 0) {
			if (err->kind != FL_ERR_COMMIT_STATE_UNKNOWN)
				compact_discard(&c);
			goto out;
		}
	}
	r = compact_report(&c, dry_run);
	if (r == NULL) {
		nomem(err);
		goto out;
	}
	*report = r;
	rc = 0;
	goto out;
fail:
	fl_err_prefix(err, "table %s: compaction plan", tbuf);
out:
	cat_changes_free(&ch, 1);
	free(mloc);
	json_decref(list);
	compact_free(&c);
	return rc;
}
