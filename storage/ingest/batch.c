/* batch.c - one batch of feed files into one table snapshot, exactly once,
 * through a committer (see batch.h for the contract).
 *
 * Order of work: load the table (creating it from the first input's
 * inferred schema when asked), look for the batch in the history, write the
 * Parquet files for the current schema, write the manifest once, then let
 * the committer call build() on the state the commit applies to; build
 * writes a manifest list on that parent and returns add-snapshot +
 * set-snapshot-ref (and add-schema when columns were added).  The snapshot
 * id is fixed for the whole batch because the manifest's entries name it. */
#include "batch.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "libcrypto.h"
#include "clock.h"
#include "random.h"
#include "feed/csv.h"
#include "feed/infer.h"
#include "feed/ndjson.h"
#include "iceberg/data_writer.h"
#include "io/io.h"
#include "json.h"
#include "addfile.h"
#include "upsert.h"

/* Everything one batch run knows. */
struct run {
	const struct st_batch_opts *o;
	struct st_committer *c;
	struct st_io *io; /* from the committer: refreshed before each write */
	/* The syncs of what the run writes, made together before the commit
	 * that refers to it (io.h). */
	struct st_io_pending *pending;
	const char *const *inputs;
	size_t n;
	const char *batch_id;
	int64_t snapshot_id;
	struct st_snapshot_manifest *manifest;
	/* upsert (st_upsert_plan): the snapshot's further manifests (data
	 * manifests of older partition specs; delete manifests of the
	 * deletes it removes, but the first) and that first delete manifest
	 * (st_snapshot_opts.removed_deletes) */
	struct st_snapshot_manifest **more;
	size_t n_more;
	struct st_snapshot_manifest *removed;
	int attempt;
	int plans; /* upsert plans made (after_plan) */
	struct st_batch_result *out;
	int32_t key_ids[16]; /* upsert: the schema's identifier fields */
	size_t n_key_ids;
	struct st_upsert *up; /* upsert: the batch's keys and the rewrites */
	json_t *drop; /* upsert: the manifests the last plan dropped */
	/* The gate before anything is written: decided once (gate()). */
	const json_t *meta; /* the version the batch is written against */
	bool gated;
	int gate_rc;
	struct fl_err gate_err;
};

static const json_t *current_schema(const json_t *meta)
{
	return fl_json_find_int(json_object_get(meta, "schemas"), "schema-id",
	                        json_integer_value(json_object_get(meta, "current-schema-id")));
}

static const json_t *default_spec(const json_t *meta)
{
	return fl_json_find_int(json_object_get(meta, "partition-specs"), "spec-id",
	                        json_integer_value(json_object_get(meta, "default-spec-id")));
}

static const char *prop(const json_t *meta, const char *key)
{
	return json_string_value(json_object_get(json_object_get(meta, "properties"), key));
}

bool st_batch_in_history(const json_t *meta, const char *batch_id, int64_t *snapshot)
{
	json_t *snaps = json_object_get(meta, "snapshots"), *s;
	size_t i;

	json_array_foreach(snaps, i, s)
	{
		const char *b = json_string_value(
		        json_object_get(json_object_get(s, "summary"), "floe.batch-id"));

		if (b != NULL && strcmp(b, batch_id) == 0) {
			*snapshot = json_integer_value(json_object_get(s, "snapshot-id"));
			return true;
		}
	}
	return false;
}

static int cmp_str(const void *a, const void *b)
{
	return strcmp(*(const char *const *)a, *(const char *const *)b);
}

int st_batch_identity(const char *const *inputs, size_t n, char out[65], struct fl_err *err)
{
	EVP_MD_CTX *all;
	unsigned char h[32], buf[65536];
	unsigned int hl;
	const char **sorted;
	int rc = -1;

	/* Usually the first use of libcrypto in an ingest: a missing one is
	 * this batch's error. */
	if (fl_libcrypto_load(err) != 0)
		return -1;
	all = EVP_MD_CTX_new();
	sorted = malloc(sizeof(char *) * (n ? n : 1));
	if (all == NULL || sorted == NULL) {
		fl_err_set(err, FL_ERR_NOMEM, "out of memory");
		goto out;
	}
	memcpy(sorted, inputs, sizeof(char *) * n);
	qsort(sorted, n, sizeof(char *), cmp_str);
	EVP_DigestInit_ex(all, EVP_sha256(), NULL);
	for (size_t k = 0; k < n; k++) {
		char real[PATH_MAX], size[32];
		EVP_MD_CTX *one = EVP_MD_CTX_new();
		struct stat st;
		ssize_t got;
		int fd = open(sorted[k], O_RDONLY | O_CLOEXEC);

		if (fd < 0 || fstat(fd, &st) != 0 || realpath(sorted[k], real) == NULL ||
		    one == NULL) {
			fl_err_set(err, FL_ERR_BAD_REQUEST, "cannot read %.200s: %s", sorted[k],
			           strerror(errno));
			if (fd >= 0)
				close(fd);
			EVP_MD_CTX_free(one);
			goto out;
		}
		EVP_DigestInit_ex(one, EVP_sha256(), NULL);
		while ((got = read(fd, buf, sizeof(buf))) > 0)
			EVP_DigestUpdate(one, buf, (size_t)got);
		close(fd);
		EVP_DigestFinal_ex(one, h, &hl);
		EVP_MD_CTX_free(one);
		snprintf(size, sizeof(size), "%lld", (long long)st.st_size);
		EVP_DigestUpdate(all, real, strlen(real) + 1);
		EVP_DigestUpdate(all, size, strlen(size) + 1);
		EVP_DigestUpdate(all, h, sizeof(h));
	}
	EVP_DigestFinal_ex(all, h, &hl);
	for (int i = 0; i < 32; i++)
		snprintf(out + 2 * i, 3, "%02x", h[i]);
	rc = 0;
out:
	EVP_MD_CTX_free(all);
	free(sorted);
	return rc;
}

static enum st_parquet_codec codec_of(const struct st_batch_opts *o, const json_t *meta)
{
	const char *c = o->codec == NULL || strcmp(o->codec, "table") == 0
	                        ? prop(meta, "write.parquet.compression-codec")
	                        : o->codec;

	if (c == NULL || strcmp(c, "zstd") == 0)
		return ST_PARQUET_ZSTD;
	if (strcmp(c, "snappy") == 0)
		return ST_PARQUET_SNAPPY;
	if (strcmp(c, "gzip") == 0)
		return ST_PARQUET_GZIP;
	return ST_PARQUET_UNCOMPRESSED;
}

/* Infers a schema from the first readable rows of the first input (a
 * Parquet input: from its columns). */
static int infer_schema(const struct run *j, json_t **schema, struct fl_err *err)
{
	if (j->o->format == ST_INGEST_PARQUET)
		return st_addfile_infer_schema(j->inputs[0], schema, err);
	struct st_infer *inf = NULL;
	struct st_fd_source src;
	int fd = open(j->inputs[0], O_RDONLY | O_CLOEXEC), rc = -1, got;

	if (fd < 0)
		return fl_err_set(err, FL_ERR_BAD_REQUEST, "cannot open %.200s: %s", j->inputs[0],
		                  strerror(errno));
	st_fd_source_init(&src, fd, j->inputs[0]);
	if (st_infer_open(NULL, 0, &inf, err) != 0)
		goto out;
	if (j->o->format == ST_INGEST_CSV) {
		struct st_csv_opts co = {.source = &src.source,
		                         .delimiter = j->o->delimiter ? j->o->delimiter : ',',
		                         .header = true};
		struct st_csv_reader *r = NULL;
		const struct st_csv_record *rec;

		if (st_csv_reader_open(&co, &r, err) != 0)
			goto out;
		got = 0;
		if (st_csv_reader_header(r) == NULL ||
		    st_infer_csv_header(inf, st_csv_reader_header(r), err) != 0)
			got = -1;
		for (int k = 0; got == 0 && k < 10000; k++) {
			if (st_csv_reader_next(r, &rec, err) != 0)
				got = -1;
			else if (rec == NULL)
				break;
			else if (rec->error == NULL && st_infer_csv_row(inf, rec, err) != 0)
				got = -1;
		}
		st_csv_reader_free(r);
	} else {
		struct st_ndjson_opts no = {.source = &src.source};
		struct st_ndjson_reader *r = NULL;
		const struct st_ndjson_record *rec;

		if (st_ndjson_reader_open(&no, &r, err) != 0)
			goto out;
		got = 0;
		for (int k = 0; k < 10000 && got == 0; k++) {
			if (st_ndjson_reader_next(r, &rec, err) != 0)
				got = -1;
			else if (rec == NULL)
				break;
			else if (rec->obj != NULL && st_infer_json_object(inf, rec->obj, err) != 0)
				got = -1;
		}
		st_ndjson_reader_free(r);
	}
	if (got < 0)
		goto out;
	rc = st_infer_schema(inf, schema, err);
out:
	st_infer_free(inf);
	close(fd);
	return rc;
}

/* Names the dead-letter file after the batch and creates its directory
 * (dead-letter mode); "" when rows are not dead-lettered and the table has
 * no local place for them. */
static int dead_letter_prepare(struct run *j, struct fl_err *err)
{
	const struct st_batch_opts *o = j->o;
	const char *location = json_string_value(json_object_get(j->meta, "location"));
	char *dl = j->out->dead_letter_path, dir[PATH_MAX];
	size_t dlcap = sizeof(j->out->dead_letter_path);

	if (o->dead_letter_dir != NULL && o->dead_letter_dir[0] != '\0')
		snprintf(dl, dlcap, "%s/%.16s.rejected", o->dead_letter_dir, j->batch_id);
	else if (location != NULL && strncmp(location, "file://", 7) == 0)
		snprintf(dl, dlcap, "%s/dead-letter/%.16s.rejected", location + 7, j->batch_id);
	else
		dl[0] = '\0';
	if (o->on_error != ST_ON_ERROR_DEAD_LETTER || dl[0] == '\0')
		return 0;
	snprintf(dir, sizeof(dir), "%s", dl);
	*strrchr(dir, '/') = '\0';
	if (mkdir(dir, 0755) != 0 && errno != EEXIST)
		return fl_err_set(err, FL_ERR_IO, "cannot create %s: %s", dir, strerror(errno));
	return 0;
}

/* What the gate decides: 0 write, 1 the batch is already committed, -1 an
 * error (the identity's own, which then wins over the read's). */
static int gate_decide(struct run *j, struct fl_err *err)
{
	const struct st_batch_opts *o = j->o;

	if (o->await_id != NULL && o->await_id(o->await_ctx, err) != 0)
		return -1;
	if (j->batch_id[0] == '\0' || strlen(j->batch_id) > 64)
		return fl_err_set(err, FL_ERR_BAD_REQUEST, "a batch id must be 1-64 characters");
	if (st_batch_in_history(j->meta, j->batch_id, &j->out->snapshot_id)) {
		j->out->already = true;
		return 1;
	}
	return dead_letter_prepare(j, err);
}

/* The gate before the batch's first byte is written: its identity is
 * known (awaited when it is computed beside the read), the batch is not
 * in the history of the version read, and its dead-letter file has a
 * place.  Decided once; err is set again on every call that returns -1. */
static int gate(struct run *j, struct fl_err *err)
{
	if (!j->gated) {
		j->gated = true;
		j->gate_rc = gate_decide(j, &j->gate_err);
	}
	if (j->gate_rc < 0)
		*err = j->gate_err;
	return j->gate_rc;
}

/* The ingest's view of the gate: an already committed batch stops the run
 * before it writes anything (st_batch_run then reports it as such). */
static int ingest_gate(void *ctx, struct fl_err *err)
{
	struct run *j = ctx;
	int rc = gate(j, err);

	if (rc > 0)
		return fl_err_set(err, FL_ERR_CONFLICT, "batch %.64s is already committed",
		                  j->batch_id);
	return rc;
}

/* Writes the Parquet files for this table's current schema. */
static int write_data(struct run *j, const json_t *meta, struct fl_err *err)
{
	const struct st_batch_opts *o = j->o;
	const char *location = json_string_value(json_object_get(meta, "location"));
	const char *tfs = prop(meta, "write.target-file-size-bytes");
	const char *rgs = prop(meta, "write.parquet.row-group-size-bytes");
	const json_t *schema = current_schema(meta);
	char data_uri[PATH_MAX];
	enum st_parquet_codec codec = codec_of(o, meta);
	int level;

	if (location == NULL || schema == NULL)
		return fl_err_set(err, FL_ERR_INTERNAL,
		                  "table metadata has no location or current schema");
	if (st_data_level(codec, meta, &level, err) != 0)
		return -1;
	snprintf(data_uri, sizeof(data_uri), "%s/data", location);
	if ((o->dead_letter_dir == NULL || o->dead_letter_dir[0] == '\0') &&
	    strncmp(location, "file://", 7) != 0 && o->on_error == ST_ON_ERROR_DEAD_LETTER)
		return fl_err_set(
		        err, FL_ERR_BAD_REQUEST,
		        "a dead-letter directory is required for a table on object storage");
	if (o->format == ST_INGEST_PARQUET) {
		struct st_addfile_opts ao = {
		        .schema = schema,
		        .spec = default_spec(meta),
		        .name_mapping = prop(meta, "schema.name-mapping.default"),
		        .ignore_new_columns = o->new_columns == ST_NEW_COLUMNS_IGNORE,
		        .io = j->io,
		        .data_uri = data_uri,
		};

		return st_addfile_run(&ao, j->inputs, j->n, &j->out->res, err);
	}
	struct st_ingest_opts io = {
	        .schema = schema,
	        .spec = default_spec(meta),
	        .last_column_id = json_integer_value(json_object_get(meta, "last-column-id")),
	        .format = o->format,
	        .delimiter = o->delimiter ? o->delimiter : ',',
	        .null_marker = o->null_marker,
	        .on_error = o->on_error,
	        .new_columns = o->new_columns,
	        .io = j->io,
	        .pending = j->pending,
	        .data_uri = data_uri,
	        .codec = codec,
	        .compression_level = level,
	        .target_file_bytes = o->target_file_bytes > 0 ? o->target_file_bytes
	                             : tfs != NULL            ? strtoull(tfs, NULL, 10)
	                                                      : 0,
	        /* Memory is bounded by the open row groups (`threads` of them
	         * per file); 16 MiB of buffered values (~150,000 gencsv rows,
	         * DuckDB writes 122,880) keeps a run far under 256 MB of RSS and
	         * gives the encoder threads row groups to overlap. */
	        .row_group_bytes = rgs != NULL ? (size_t)strtoull(rgs, NULL, 10) : (size_t)16 << 20,
	        .tz_assume_utc = o->tz_assume_utc,
	        .key_ids = j->key_ids,
	        .n_key_ids = j->n_key_ids,
	        .threads = o->threads,
	        .progress = o->progress,
	        .progress_ctx = o->progress_ctx,
	        .gate = ingest_gate,
	        .gate_ctx = j,
	        .dead_letter_path = j->out->dead_letter_path,
	        .row_order = o->upsert,
	};
	return st_ingest_run(&io, j->inputs, j->n, &j->out->res, err);
}

/* The schema id the evolved schema will get (the builder reuses an identical
 * schema, which cannot exist: it has a column the current one lacks). */
static int64_t next_schema_id(const json_t *meta)
{
	json_t *s;
	size_t i;
	int64_t max = -1;

	json_array_foreach(json_object_get(meta, "schemas"), i, s)
	{
		int64_t id = json_integer_value(json_object_get(s, "schema-id"));

		if (id > max)
			max = id;
	}
	return max + 1;
}

/* Deletes the manifests this run wrote (never committed) and forgets
 * them. */
static void discard_manifests(struct run *j)
{
	struct fl_err ignored;

	if (j->manifest != NULL && st_io_delete(j->io, j->manifest->path, &ignored) != 0)
		ignored.kind = FL_ERR_NONE;
	st_snapshot_manifest_free(j->manifest);
	j->manifest = NULL;
	for (size_t i = 0; i < j->n_more; i++) {
		if (st_io_delete(j->io, j->more[i]->path, &ignored) != 0)
			ignored.kind = FL_ERR_NONE;
		st_snapshot_manifest_free(j->more[i]);
	}
	free(j->more);
	j->more = NULL;
	j->n_more = 0;
	if (j->removed != NULL && st_io_delete(j->io, j->removed->path, &ignored) != 0)
		ignored.kind = FL_ERR_NONE;
	st_snapshot_manifest_free(j->removed);
	j->removed = NULL;
}

/* The updates of one commit attempt on top of meta. */
static int make_updates(struct run *j, const json_t *meta, json_t **out, struct fl_err *err)
{
	struct st_ingest_result *res = &j->out->res;
	const json_t *schema = res->evolved ? res->schema : current_schema(meta);
	int64_t schema_id =
	        res->evolved ? next_schema_id(meta)
	                     : json_integer_value(json_object_get(meta, "current-schema-id"));
	const char *location = json_string_value(json_object_get(meta, "location"));
	char mdir[PATH_MAX], n[24];
	json_t *schema_copy = NULL, *snapshot = NULL, *updates = NULL, *extra = NULL;
	int64_t cur = json_integer_value(json_object_get(meta, "current-snapshot-id"));
	int rc = -1;

	snprintf(mdir, sizeof(mdir), "%s/metadata", location);
	if (res->evolved) {
		schema_copy = json_deep_copy(schema);
		if (schema_copy == NULL)
			goto nomem;
		json_object_set_new(schema_copy, "schema-id", json_integer(schema_id));
		schema = schema_copy;
	}
	struct st_snapshot_table t = {
	        .format_version = (int)json_integer_value(json_object_get(meta, "format-version")),
	        .schema = schema,
	        .schema_id = (int32_t)schema_id,
	        .spec = default_spec(meta),
	        .spec_id = (int32_t)json_integer_value(json_object_get(meta, "default-spec-id")),
	        .metadata_dir = mdir,
	        .io = j->io,
	        .pending = j->pending,
	        .codec = ST_AVRO_CODEC_DEFLATE,
	};
	if (j->up != NULL) {
		/* Planned again on every state the commit may apply to. */
		struct st_snapshot_manifest **ms;
		size_t nm;

		discard_manifests(j);
		json_decref(j->drop);
		j->drop = NULL;
		if (st_upsert_plan(j->up, &t, meta, j->snapshot_id, &ms, &nm, &j->drop, err) != 0)
			goto out;
		/* ms[0] is the snapshot's manifest (the current spec's, when the
		 * batch adds or removes files of it): the rest go in more, but
		 * the first delete manifest, the snapshot's removed deletes.
		 * None: deletes that match nothing, a snapshot that adds no
		 * file. */
		j->manifest = nm > 0 ? ms[0] : NULL;
		if (nm > 0)
			memmove(ms, ms + 1, (nm - 1) * sizeof(*ms));
		j->more = ms;
		j->n_more = nm > 0 ? nm - 1 : 0;
		for (size_t k = 0; k < j->n_more; k++) {
			if (ms[k]->file.content != ST_MANIFEST_DELETES)
				continue;
			j->removed = ms[k];
			memmove(ms + k, ms + k + 1, (j->n_more - k - 1) * sizeof(*ms));
			j->n_more--;
			break;
		}
		if (j->o->after_plan != NULL)
			j->o->after_plan(j->o->after_plan_ctx, j->plans++);
	} else if (j->manifest == NULL) {
		struct st_data_file *files =
		        calloc(res->n_files ? res->n_files : 1, sizeof(*files));

		if (files == NULL)
			goto nomem;
		for (size_t i = 0; i < res->n_files; i++) {
			st_parquet_metrics_to_data_file(&res->files[i].m, &files[i]);
			files[i].file_path = res->files[i].uri;
			files[i].partition = res->files[i].partition;
		}
		rc = st_snapshot_manifest_write(&t, j->snapshot_id, files, res->n_files,
		                                &j->manifest, err);
		free(files);
		if (rc != 0)
			goto out;
		rc = -1;
	}
	const json_t *psnap =
	        cur > 0 || (cur == 0 && json_object_get(meta, "current-snapshot-id") != NULL)
	                ? fl_json_find_int(json_object_get(meta, "snapshots"), "snapshot-id", cur)
	                : NULL;
	struct st_snapshot_parent parent = {0};
	if (psnap != NULL) {
		parent.snapshot_id = cur;
		parent.manifest_list = json_string_value(json_object_get(psnap, "manifest-list"));
		parent.summary = json_object_get(psnap, "summary");
	}
	snprintf(n, sizeof(n), "%llu", (unsigned long long)res->rows_bad);
	extra = json_pack("{s:s, s:s}", "floe.batch-id", j->batch_id, "floe.rows-dead-lettered", n);
	if (extra == NULL ||
	    (j->o->watermark != NULL &&
	     json_object_set_new(extra, "floe.watermark", json_string(j->o->watermark)) != 0))
		goto nomem;
	size_t n_drop = json_array_size(j->drop);
	const char **drop = calloc(n_drop + 1, sizeof(*drop));

	if (drop == NULL)
		goto nomem;
	for (size_t i = 0; i < n_drop; i++)
		drop[i] = json_string_value(json_array_get(j->drop, i));
	if (j->up != NULL) {
		struct st_upsert_stats us;

		st_upsert_stats(j->up, &us);
		snprintf(n, sizeof(n), "%lld", (long long)us.replaced_rows);
		if (json_object_set_new(extra, "floe.rows-replaced", json_string(n)) != 0) {
			free(drop);
			goto nomem;
		}
		snprintf(n, sizeof(n), "%lld", (long long)us.key_deleted_rows);
		if (j->o->cdc_field != NULL &&
		    json_object_set_new(extra, "floe.rows-deleted-by-key", json_string(n)) != 0) {
			free(drop);
			goto nomem;
		}
	}
	struct st_snapshot_opts so = {
	        .table = &t,
	        .parent = psnap ? &parent : NULL,
	        .snapshot_id = j->snapshot_id,
	        .sequence_number =
	                json_integer_value(json_object_get(meta, "last-sequence-number")) + 1,
	        .timestamp_ms = fl_now_ms(),
	        .first_row_id = json_integer_value(json_object_get(meta, "next-row-id")),
	        .attempt = ++j->attempt,
	        .manifest = j->manifest,
	        .more = (const struct st_snapshot_manifest *const *)j->more,
	        .n_more = j->n_more,
	        .extra_summary = extra,
	        .drop_manifests = drop,
	        .n_drop = n_drop,
	        .removed_deletes = j->removed,
	        .operation = n_drop > 0 ? "overwrite" : NULL,
	};
	rc = st_snapshot_build(&so, &snapshot, err);
	free(drop);
	if (rc != 0) {
		rc = -1;
		goto out;
	}
	rc = -1;
	updates = json_array();
	if (updates == NULL)
		goto nomem;
	if (res->evolved) {
		json_array_append_new(
		        updates, json_pack("{s:s, s:O}", "action", "add-schema", "schema", schema));
		json_array_append_new(updates, json_pack("{s:s, s:i}", "action",
		                                         "set-current-schema", "schema-id", -1));
	}
	if (res->needs_mapping && prop(meta, "schema.name-mapping.default") == NULL) {
		/* Added files name their columns only: readers map them by name. */
		char *mapping = st_addfile_name_mapping(schema);

		if (mapping == NULL)
			goto nomem;
		json_array_append_new(updates,
		                      json_pack("{s:s, s:{s:s}}", "action", "set-properties",
		                                "updates", "schema.name-mapping.default", mapping));
		free(mapping);
	}
	json_array_append_new(
	        updates, json_pack("{s:s, s:O}", "action", "add-snapshot", "snapshot", snapshot));
	json_array_append_new(updates,
	                      json_pack("{s:s, s:s, s:s, s:I}", "action", "set-snapshot-ref",
	                                "ref-name", "main", "type", "branch", "snapshot-id",
	                                (json_int_t)j->snapshot_id));
	*out = updates;
	updates = NULL;
	rc = 0;
	goto out;
nomem:
	fl_err_set(err, FL_ERR_NOMEM, "out of memory");
out:
	json_decref(schema_copy);
	json_decref(snapshot);
	json_decref(updates);
	json_decref(extra);
	return rc;
}

/* Upsert: reads the batch's keys and drops the rows a later one replaces. */
static int upsert_open(struct run *j, const json_t *meta, struct fl_err *err)
{
	struct st_ingest_result *res = &j->out->res;
	const char *location = json_string_value(json_object_get(meta, "location"));
	const char *tfs = prop(meta, "write.target-file-size-bytes");
	char data_uri[PATH_MAX];
	enum st_parquet_codec codec = codec_of(j->o, meta);
	int level;

	if (st_data_level(codec, meta, &level, err) != 0)
		return -1;
	snprintf(data_uri, sizeof(data_uri), "%s/data", location);
	struct st_upsert_opts uo = {
	        .io = j->io,
	        .schema = res->schema,
	        .format_version = (int)json_integer_value(json_object_get(meta, "format-version")),
	        .data_uri = data_uri,
	        .codec = codec,
	        .compression_level = level,
	        .target_file_bytes = j->o->target_file_bytes > 0 ? j->o->target_file_bytes
	                             : tfs != NULL               ? strtoull(tfs, NULL, 10)
	                                                         : 0,
	        .cdc_field = j->o->cdc_field,
	};
	return st_upsert_open(&uo, res, &j->up, err);
}

/* The committer's build step: nothing when the batch is already there. */
static int build(void *arg, const json_t *current, json_t **updates, struct fl_err *err)
{
	struct run *j = arg;

	if (st_batch_in_history(current, j->batch_id, &j->out->snapshot_id)) {
		j->out->already = true;
		*updates = json_array();
		return *updates ? 0 : fl_err_set(err, FL_ERR_NOMEM, "out of memory");
	}
	/* The manifest list is written now: with fresh credentials. */
	if (j->c->ops->io(j->c, current, &j->io, err) != 0 ||
	    make_updates(j, current, updates, err) != 0)
		return -1;
	/* Everything the commit refers to is durable before it is sent: the
	 * data files, the manifest and the manifest list, synced together. */
	if (st_io_pending_sync(j->pending, err) != 0) {
		json_decref(*updates);
		*updates = NULL;
		return -1;
	}
	return 0;
}

/* Makes the columns o->key name the inferred schema's identifier fields
 * (required, as the spec asks of them). */
static int set_key(const struct st_batch_opts *o, json_t *schema, struct fl_err *err)
{
	json_t *fields = json_object_get(schema, "fields"), *ids = json_array(), *f = NULL;
	size_t i;

	if (ids == NULL)
		return fl_err_set(err, FL_ERR_NOMEM, "out of memory");
	for (size_t k = 0; k < o->n_key; k++) {
		const char *type = NULL;

		json_array_foreach(fields, i, f)
		{
			const char *name = json_string_value(json_object_get(f, "name"));

			if (name != NULL && strcmp(name, o->key[k]) == 0)
				break;
		}
		if (f == NULL || i == json_array_size(fields)) {
			json_decref(ids);
			return fl_err_set(err, FL_ERR_BAD_REQUEST,
			                  "key column '%.100s' is not in the first input's columns",
			                  o->key[k]);
		}
		type = json_string_value(json_object_get(f, "type"));
		if (type != NULL && (strcmp(type, "double") == 0 || strcmp(type, "float") == 0)) {
			json_decref(ids);
			return fl_err_set(err, FL_ERR_BAD_REQUEST,
			                  "key column '%.100s' holds %s values; a key must not be "
			                  "float or double",
			                  o->key[k], type);
		}
		if (json_object_set_new(f, "required", json_true()) != 0 ||
		    json_array_append(ids, json_object_get(f, "id")) != 0) {
			json_decref(ids);
			return fl_err_set(err, FL_ERR_NOMEM, "out of memory");
		}
	}
	if (json_object_set_new(schema, "identifier-field-ids", ids) != 0)
		return fl_err_set(err, FL_ERR_NOMEM, "out of memory");
	return 0;
}

/* Loads the table, creating it from the inputs when asked (a concurrent
 * creator winning is fine: load what it made). */
static int load_or_create(struct st_committer *c, struct run *j, json_t **meta, struct fl_err *err)
{
	json_t *schema = NULL;
	int rc;

	if (c->ops->load(c, meta, err) == 0)
		return 0;
	if (err->kind != FL_ERR_NO_SUCH_TABLE || !j->o->create)
		return -1;
	fl_err_clear(err);
	if (infer_schema(j, &schema, err) != 0)
		return -1;
	if (j->o->n_key > 0 && set_key(j->o, schema, err) != 0) {
		json_decref(schema);
		return -1;
	}
	rc = c->ops->create(c, schema, meta, err);
	json_decref(schema);
	if (rc != 0 && err->kind == FL_ERR_ALREADY_EXISTS) {
		fl_err_clear(err);
		rc = c->ops->load(c, meta, err);
	}
	return rc;
}

int st_batch_run(struct st_committer *c, const struct st_batch_opts *o, const char *const *inputs,
                 size_t n, const char *batch_id, struct st_batch_result *out, struct fl_err *err)
{
	struct run j = {.o = o, .c = c, .inputs = inputs, .n = n, .batch_id = batch_id, .out = out};
	json_t *meta = NULL;
	int rc = -1, g;

	if (n == 0 || batch_id == NULL ||
	    (o->await_id == NULL && (batch_id[0] == '\0' || strlen(batch_id) > 64)))
		return fl_err_set(err, FL_ERR_BAD_REQUEST,
		                  n == 0 ? "a batch needs at least one input"
		                         : "a batch id must be 1-64 characters");
	j.snapshot_id = fl_random_id();
	if (st_io_pending_new(&j.pending, err) != 0 || load_or_create(c, &j, &meta, err) != 0 ||
	    c->ops->io(c, meta, &j.io, err) != 0)
		goto out;
	j.meta = meta;
	/* The gate is passed now, unless CSV or NDJSON rows can be read while
	 * the identity is still being computed: then the first row group (or
	 * the first dead letter) passes it. */
	if ((o->await_id == NULL || o->format == ST_INGEST_PARQUET || o->upsert) &&
	    (g = gate(&j, err)) != 0) {
		rc = g > 0 ? 0 : -1;
		goto out;
	}
	if (o->upsert) {
		if (st_upsert_key_ids(current_schema(meta), j.key_ids, 16, &j.n_key_ids, err) != 0)
			goto out;
		if (j.n_key_ids == 0) {
			fl_err_set(err, FL_ERR_BAD_REQUEST,
			           "upsert needs a key: table %.200s has no identifier fields "
			           "(schema identifier-field-ids)",
			           json_string_value(json_object_get(meta, "location")));
			goto out;
		}
	}
	if (write_data(&j, meta, err) != 0) {
		/* A rerun of a committed batch is reported so, whatever stopped
		 * its read (the run wrote nothing before the gate). */
		struct fl_err gerr;

		g = gate(&j, &gerr);
		if (g > 0)
			rc = 0;
		else if (g < 0)
			*err = gerr;
		goto out;
	}
	/* A run that wrote nothing did not meet the gate. */
	if ((g = gate(&j, err)) != 0) {
		rc = g > 0 ? 0 : -1;
		goto out;
	}
	if (out->res.rows_ok == 0) {
		rc = 0;
		goto out;
	}
	if (o->upsert && upsert_open(&j, meta, err) != 0) {
		st_ingest_result_discard(j.io, &out->res);
		goto out;
	}
	if (c->ops->commit(c, batch_id, o->retries, build, &j, err) != 0) {
		if (err->kind != FL_ERR_COMMIT_STATE_UNKNOWN) {
			st_ingest_result_discard(j.io, &out->res);
			discard_manifests(&j);
			st_upsert_finish(j.up, false, false);
		} else {
			st_upsert_finish(j.up, true, true);
		}
		j.up = NULL;
		goto out;
	}
	if (out->already) {
		/* A concurrent run of the same batch won: ours is not needed. */
		st_ingest_result_discard(j.io, &out->res);
		discard_manifests(&j);
	} else {
		out->snapshot_id = j.snapshot_id;
		out->committed = true;
	}
	st_upsert_finish(j.up, out->committed, false);
	j.up = NULL;
	rc = 0;
out:
	st_upsert_finish(j.up, false, false);
	json_decref(j.drop);
	st_snapshot_manifest_free(j.manifest);
	for (size_t i = 0; i < j.n_more; i++)
		st_snapshot_manifest_free(j.more[i]);
	free(j.more);
	st_snapshot_manifest_free(j.removed);
	st_io_pending_free(j.pending);
	json_decref(meta);
	return rc;
}

void st_batch_result_free(struct st_batch_result *r)
{
	if (r != NULL)
		st_ingest_result_free(&r->res);
}
