/* maintain_manifests.c - manifest rewrite: merges the small manifests of
 * the current snapshot, per partition spec and content (data and delete
 * manifests apart), into manifests toward the table's
 * commit.manifest.target-size-bytes (default 8 MiB, as Java's).
 *
 * Plan: the manifests of one spec and content smaller than the target are
 * the candidates (every manifest of it when it has more than
 * commit.manifest.min-count-to-merge, default 100); with two or more, they
 * are packed in list order into bins whose summed manifest lengths stay
 * within the target, and every bin of two or more becomes one manifest
 * (storage/iceberg/snapshot.h st_snapshot_manifest_merge): live entries
 * EXISTING with their snapshot id, sequence numbers and v3 first_row_id,
 * DELETED entries dropped.  Lengths are those the list records.
 *
 * Commit: one `replace` snapshot (summary keys manifests-created,
 * manifests-replaced, manifests-kept, entries-processed, as Java's
 * RewriteManifests writes them) built under the row lock on the then
 * current state: appends since the plan are carried; when a commit since
 * removed a manifest the run merged, the new manifests are deleted and the
 * plan is made again on the new state (at most MAX_ROUNDS times).  The
 * replaced manifests stay on storage while older snapshots reference them;
 * snapshot expiry deletes them. */
#include "catalog.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "avro/reader.h"
#include "clock.h"
#include "random.h"
#include "iceberg/snapshot.h"
#include "maintain_int.h"

#define DEFAULT_TARGET_MANIFEST_BYTES ((json_int_t)8 << 20)
#define DEFAULT_MIN_COUNT_TO_MERGE 100
#define MAX_LIST_READ ((size_t)64 << 20)
#define MAX_ROUNDS 3

struct mrun {
	const char *table; /* "ns.name", for messages */
	struct st_io *io;
	json_t *meta; /* the state the plan was made on */
	json_t *list; /* its current manifest list, decoded */
	json_int_t target, min_count;
	json_t *bins; /* [[list record, ...], ...]: each becomes one manifest */
	json_int_t replaced, kept, bytes_removed, bytes_added, entries;
	/* the merge and its commit */
	char *mdir;
	int64_t snapshot_id;
	int attempt;
	struct st_snapshot_manifest **merged;
	size_t n_merged;
	json_t *committed;
};

static int nomem(struct fl_err *err)
{
	return fl_err_set(err, FL_ERR_NOMEM, "out of memory");
}

static void merged_free(struct mrun *m)
{
	for (size_t i = 0; i < m->n_merged; i++)
		st_snapshot_manifest_free(m->merged[i]);
	free(m->merged);
	m->merged = NULL;
	m->n_merged = 0;
}

/* Deletes the manifests an uncommitted round wrote, best effort. */
static void discard(struct mrun *m)
{
	struct fl_err ignored;

	for (size_t i = 0; i < m->n_merged; i++) {
		if (st_io_delete(m->io, m->merged[i]->path, &ignored) != 0)
			ignored.kind = FL_ERR_NONE;
	}
	merged_free(m);
}

static void round_reset(struct mrun *m)
{
	json_decref(m->meta);
	json_decref(m->list);
	json_decref(m->bins);
	m->meta = m->list = m->bins = NULL;
	m->replaced = m->kept = m->bytes_removed = m->bytes_added = m->entries = 0;
	merged_free(m);
}

/* Packs the candidates of one spec and content (list records, in list
 * order) into bins; bins of two or more go to m->bins. */
static int pack(struct mrun *m, const json_t *cands, struct fl_err *err)
{
	json_t *bin = NULL, *rec;
	json_int_t sum = 0;
	size_t i;

	for (i = 0; i <= json_array_size(cands); i++) {
		json_int_t len = 0;

		rec = json_array_get(cands, i);
		if (rec != NULL)
			len = json_integer_value(json_object_get(rec, "manifest_length"));
		if (bin != NULL && (rec == NULL || sum + len > m->target)) {
			if (json_array_size(bin) >= 2) {
				if (json_array_append(m->bins, bin) != 0)
					goto fail;
				m->replaced += (json_int_t)json_array_size(bin);
				m->bytes_removed += sum;
			}
			json_decref(bin);
			bin = NULL;
			sum = 0;
		}
		if (rec == NULL)
			break;
		if (bin == NULL && (bin = json_array()) == NULL)
			goto fail;
		if (json_array_append(bin, rec) != 0)
			goto fail;
		sum += len;
	}
	return 0;
fail:
	json_decref(bin);
	return nomem(err);
}

/* The bins of the current manifest list. */
static int plan(struct mrun *m, struct fl_err *err)
{
	json_t *groups = json_object(), *counts = json_object(), *rec, *g;
	const char *k;
	size_t i;
	int rc = -1;

	m->bins = json_array();
	if (groups == NULL || counts == NULL || m->bins == NULL) {
		nomem(err);
		goto out;
	}
	json_array_foreach(m->list, i, rec)
	{
		char key[48];
		json_int_t c;

		snprintf(key, sizeof(key), "%" JSON_INTEGER_FORMAT "/%" JSON_INTEGER_FORMAT,
		         json_integer_value(json_object_get(rec, "partition_spec_id")),
		         json_integer_value(json_object_get(rec, "content")));
		c = json_integer_value(json_object_get(counts, key));
		if (json_object_set_new(counts, key, json_integer(c + 1)) != 0) {
			nomem(err);
			goto out;
		}
	}
	json_array_foreach(m->list, i, rec)
	{
		char key[48];
		bool all;

		if (json_string_value(json_object_get(rec, "manifest_path")) == NULL) {
			fl_err_set(err, FL_ERR_BAD_REQUEST,
			           "table %s: a manifest list entry lacks manifest_path", m->table);
			goto out;
		}
		snprintf(key, sizeof(key), "%" JSON_INTEGER_FORMAT "/%" JSON_INTEGER_FORMAT,
		         json_integer_value(json_object_get(rec, "partition_spec_id")),
		         json_integer_value(json_object_get(rec, "content")));
		all = json_integer_value(json_object_get(counts, key)) > m->min_count;
		if (!all &&
		    json_integer_value(json_object_get(rec, "manifest_length")) >= m->target)
			continue;
		g = json_object_get(groups, key);
		if (g == NULL && (json_object_set_new(groups, key, json_array()) != 0 ||
		                  (g = json_object_get(groups, key)) == NULL)) {
			nomem(err);
			goto out;
		}
		if (json_array_append(g, rec) != 0) {
			nomem(err);
			goto out;
		}
	}
	json_object_foreach(groups, k, g)
	{
		if (json_array_size(g) >= 2 && pack(m, g, err) != 0)
			goto out;
	}
	m->kept = (json_int_t)json_array_size(m->list) - m->replaced;
	rc = 0;
out:
	json_decref(groups);
	json_decref(counts);
	return rc;
}

/* The table as the snapshot builder sees it, with partition spec spec_id. */
static int table_of(const struct mrun *m, json_int_t spec_id, struct st_snapshot_table *t,
                    struct fl_err *err)
{
	json_int_t sid = json_integer_value(json_object_get(m->meta, "current-schema-id"));

	memset(t, 0, sizeof(*t));
	t->format_version = (int)json_integer_value(json_object_get(m->meta, "format-version"));
	t->schema = fl_json_find_int(json_object_get(m->meta, "schemas"), "schema-id", sid);
	t->schema_id = (int32_t)sid;
	t->spec = fl_json_find_int(json_object_get(m->meta, "partition-specs"), "spec-id", spec_id);
	t->spec_id = (int32_t)spec_id;
	t->metadata_dir = m->mdir;
	t->io = m->io;
	t->codec = ST_AVRO_CODEC_DEFLATE;
	if (t->schema == NULL)
		return fl_err_set(err, FL_ERR_INTERNAL, "table %s: the current schema is missing",
		                  m->table);
	if (t->spec == NULL)
		return fl_err_set(err, FL_ERR_BAD_REQUEST,
		                  "table %s: partition spec %" JSON_INTEGER_FORMAT " is missing",
		                  m->table, spec_id);
	return 0;
}

/* Writes one manifest per bin. */
static int merge_all(struct mrun *m, struct fl_err *err)
{
	size_t nb = json_array_size(m->bins), i;
	const json_t **recs = NULL;
	json_t *bin;
	int rc = -1;

	m->merged = calloc(nb ? nb : 1, sizeof(*m->merged));
	if (m->merged == NULL)
		return nomem(err);
	json_array_foreach(m->bins, i, bin)
	{
		struct st_snapshot_table t;
		struct st_snapshot_manifest *out = NULL;
		int64_t n = 0;
		size_t k;

		free(recs);
		recs = calloc(json_array_size(bin), sizeof(*recs));
		if (recs == NULL) {
			nomem(err);
			goto out;
		}
		for (k = 0; k < json_array_size(bin); k++)
			recs[k] = json_array_get(bin, k);
		if (table_of(m, json_integer_value(json_object_get(recs[0], "partition_spec_id")),
		             &t, err) != 0 ||
		    st_snapshot_manifest_merge(&t, m->snapshot_id, recs, k, &out, &n, err) != 0) {
			fl_err_prefix(err, "table %s: manifest rewrite", m->table);
			goto out;
		}
		m->entries += n;
		if (out != NULL) {
			m->merged[m->n_merged++] = out;
			m->bytes_added += out->file.manifest_length;
		}
	}
	rc = 0;
out:
	free(recs);
	return rc;
}

/* Under the row lock: the replace on top of the current state. */
static int build(void *arg, const json_t *current, json_t **updates, struct fl_err *err)
{
	struct mrun *m = arg;
	const json_t *snap = cat_mt_head(current);
	const char **drop = NULL;
	json_t *snapshot = NULL, *extra = NULL, *bin, *rec;
	struct st_snapshot_parent parent = {0};
	struct st_snapshot_table t;
	size_t nd = 0, i, k;
	json_int_t listed = 0;
	int rc = -1;

	if (snap == NULL)
		return fl_err_set(err, FL_ERR_CONFLICT,
		                  "table %s: manifest rewrite aborted: the table has no current "
		                  "snapshot any more",
		                  m->table);
	if (json_integer_value(json_object_get(current, "format-version")) !=
	    json_integer_value(json_object_get(m->meta, "format-version")))
		return fl_err_set(err, FL_ERR_CONFLICT,
		                  "table %s: manifest rewrite aborted: the table was upgraded",
		                  m->table);
	if (table_of(m, json_integer_value(json_object_get(current, "default-spec-id")), &t, err) !=
	    0)
		return -1;
	drop = calloc((size_t)m->replaced + 1, sizeof(*drop));
	if (drop == NULL)
		return nomem(err);
	json_array_foreach(m->bins, i, bin)
	{
		json_array_foreach(bin, k, rec) drop[nd++] =
		        json_string_value(json_object_get(rec, "manifest_path"));
	}
	parent.snapshot_id = json_integer_value(json_object_get(snap, "snapshot-id"));
	parent.manifest_list = json_string_value(json_object_get(snap, "manifest-list"));
	parent.summary = json_object_get(snap, "summary");
	/* manifests-kept counts the current list, appends since the plan too. */
	if (parent.snapshot_id ==
	    json_integer_value(json_object_get(cat_mt_head(m->meta), "snapshot-id"))) {
		listed = (json_int_t)json_array_size(m->list);
	} else {
		json_t *cur = NULL;

		if (parent.manifest_list == NULL ||
		    st_avro_read_all(m->io, parent.manifest_list, MAX_LIST_READ, NULL, &cur, err) !=
		            0) {
			if (parent.manifest_list == NULL)
				fl_err_set(err, FL_ERR_BAD_REQUEST,
				           "table %s: the current snapshot has no manifest-list",
				           m->table);
			goto out;
		}
		listed = (json_int_t)json_array_size(cur);
		json_decref(cur);
	}
	extra = json_object();
	if (extra == NULL) {
		nomem(err);
		goto out;
	}
	{
		char v[4][24];
		json_int_t nums[4] = {(json_int_t)m->n_merged, m->replaced, listed - m->replaced,
		                      m->entries};
		const char *keys[4] = {"manifests-created", "manifests-replaced", "manifests-kept",
		                       "entries-processed"};

		for (int j = 0; j < 4; j++) {
			snprintf(v[j], sizeof(v[j]), "%" JSON_INTEGER_FORMAT, nums[j]);
			if (json_object_set_new(extra, keys[j], json_string(v[j])) != 0) {
				nomem(err);
				goto out;
			}
		}
	}
	struct st_snapshot_opts so = {
	        .table = &t,
	        .parent = &parent,
	        .snapshot_id = m->snapshot_id,
	        .sequence_number =
	                json_integer_value(json_object_get(current, "last-sequence-number")) + 1,
	        .timestamp_ms = fl_now_ms(),
	        .first_row_id = json_integer_value(json_object_get(current, "next-row-id")),
	        .attempt = ++m->attempt,
	        .extra_summary = extra,
	        .drop_manifests = drop,
	        .n_drop = nd,
	        .merged = (const struct st_snapshot_manifest *const *)m->merged,
	        .n_merged = m->n_merged,
	};
	if (st_snapshot_build(&so, &snapshot, err) != 0) {
		fl_err_prefix(err, "table %s: manifest rewrite", m->table);
		goto out;
	}
	*updates = json_pack("[{s:s, s:O}, {s:s, s:s, s:s, s:I}]", "action", "add-snapshot",
	                     "snapshot", snapshot, "action", "set-snapshot-ref", "ref-name", "main",
	                     "type", "branch", "snapshot-id", (json_int_t)m->snapshot_id);
	if (*updates == NULL) {
		nomem(err);
		goto out;
	}
	json_decref(m->committed);
	m->committed = json_incref(snapshot);
	m->kept = listed - m->replaced;
	rc = 0;
out:
	json_decref(snapshot);
	json_decref(extra);
	free(drop);
	return rc;
}

/* Loads the table and its current list, and plans. */
static int load_and_plan(struct cat_db *db, const struct cat_warehouse *wh, const struct cat_ns *ns,
                         const char *name, struct mrun *m, struct fl_err *err)
{
	char *mloc = NULL, *text = NULL, type[16];
	const json_t *snap;
	const char *luri;

	if (cat_table_load(db, NULL, wh->name, ns, name, &mloc, &text, type, err) != 0)
		return -1;
	m->meta = json_loads(text, 0, NULL);
	free(mloc);
	free(text);
	if (m->meta == NULL)
		return fl_err_set(err, FL_ERR_INTERNAL, "stored metadata is not JSON");
	if (cat_mt_int_prop(m->meta, m->table, "commit.manifest.target-size-bytes",
	                    DEFAULT_TARGET_MANIFEST_BYTES, &m->target, err) != 0 ||
	    cat_mt_int_prop(m->meta, m->table, "commit.manifest.min-count-to-merge",
	                    DEFAULT_MIN_COUNT_TO_MERGE, &m->min_count, err) != 0)
		return -1;
	snap = cat_mt_head(m->meta);
	if (snap == NULL) {
		m->list = json_array();
		m->bins = json_array();
		return m->list == NULL || m->bins == NULL ? nomem(err) : 0;
	}
	luri = json_string_value(json_object_get(snap, "manifest-list"));
	if (luri == NULL)
		return fl_err_set(err, FL_ERR_BAD_REQUEST,
		                  "table %s: the current snapshot has no manifest-list", m->table);
	if (st_avro_read_all(m->io, luri, MAX_LIST_READ, NULL, &m->list, err) != 0)
		return fl_err_prefix(err, "table %s: manifest rewrite", m->table);
	return plan(m, err);
}

static json_t *report(const struct mrun *m, bool dry_run)
{
	json_t *r = json_pack(
	        "{s:s, s:s, s:b, s:I, s:I, s:I, s:I, s:I, s:I, s:I, s:I, s:I}", "action",
	        "manifests", "table", m->table, "dry-run", dry_run, "target-size-bytes", m->target,
	        "manifests-replaced", m->replaced, "manifests-created",
	        dry_run ? (json_int_t)json_array_size(m->bins) : (json_int_t)m->n_merged,
	        "manifests-kept", m->kept, "entries-processed", m->entries, "files-removed",
	        m->replaced, "bytes-removed", m->bytes_removed, "files-added",
	        dry_run ? (json_int_t)json_array_size(m->bins) : (json_int_t)m->n_merged,
	        "bytes-added", m->bytes_added);

	if (r != NULL && m->committed != NULL &&
	    json_object_set(r, "snapshot-id", json_object_get(m->committed, "snapshot-id")) != 0) {
		json_decref(r);
		return NULL;
	}
	return r;
}

int cat_maintain_manifests(struct cat_db *db, const struct cat_warehouse *wh,
                           const struct cat_ns *ns, const char *name, const struct cat_limits *lim,
                           unsigned pause_ms, bool dry_run, json_t **out, struct fl_err *err)
{
	struct mrun m = {.io = wh->io};
	char tbuf[520], nsbuf[520];
	json_t *r;
	int rc = -1;

	snprintf(tbuf, sizeof(tbuf), "%s.%s", cat_ns_str(ns, nsbuf, sizeof(nsbuf)), name);
	m.table = tbuf;
	if (wh->io == NULL)
		return fl_err_set(err, FL_ERR_INTERNAL, "no storage handle for the warehouse");
	for (int round = 1;; round++) {
		struct cat_change ch = {.ns = *ns, .name = name};
		const char *loc;

		round_reset(&m);
		if (load_and_plan(db, wh, ns, name, &m, err) != 0)
			goto out;
		if (dry_run || json_array_size(m.bins) == 0)
			break;
		loc = json_string_value(json_object_get(m.meta, "location"));
		if (loc == NULL) {
			fl_err_set(err, FL_ERR_INTERNAL, "table %s has no location", tbuf);
			goto out;
		}
		free(m.mdir);
		m.mdir = malloc(strlen(loc) + 16);
		if (m.mdir == NULL) {
			nomem(err);
			goto out;
		}
		snprintf(m.mdir, strlen(loc) + 16, "%s/metadata", loc);
		m.snapshot_id = fl_random_id();
		m.attempt = 0;
		if (merge_all(&m, err) != 0) {
			discard(&m);
			goto out;
		}
		if (pause_ms > 0 && round == 1) {
			struct timespec ts = {pause_ms / 1000, (long)(pause_ms % 1000) * 1000000L};

			nanosleep(&ts, NULL);
		}
		rc = cat_table_append(db, wh, &ch, build, &m, lim, NULL, err);
		cat_changes_free(&ch, 1);
		if (rc == 0)
			break;
		if (err->kind != FL_ERR_COMMIT_STATE_UNKNOWN)
			discard(&m);
		/* A commit since the plan removed a manifest this round merged:
		 * plan again on the new state. */
		if (err->kind != FL_ERR_CONFLICT || round >= MAX_ROUNDS)
			goto out;
		rc = -1;
		fl_err_clear(err);
	}
	r = report(&m, dry_run);
	if (r == NULL) {
		nomem(err);
		rc = -1;
		goto out;
	}
	*out = r;
	rc = 0;
out:
	round_reset(&m);
	json_decref(m.committed);
	free(m.mdir);
	return rc;
}
