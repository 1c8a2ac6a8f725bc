/* test_snapshot.c - the snapshot builder (storage/iceberg/snapshot.c) on a
 * real directory: three appends in a row and what their lists hold, a
 * retry on a new parent that reuses the manifest, totals recomputed from a
 * foreign parent's files (with delete manifests), v3 row ids, partitioned
 * specs, a replace (compaction), a manifest rewrite, refusals, and every allocation failed in turn.  Lists and
 * manifests are read back with storage/avro/reader.c; the node tests in
 * tests/integration/write-path-snapshot/ read them with other readers. */
#include <inttypes.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "avro/reader.h"
#include "iceberg/manifest.h"
#include "iceberg/manifest_list.h"
#include "iceberg/snapshot.h"
#include "io/io.h"

#include "jfail.h"
#include "tio.h"

static const char schema_text[] =
        "{\"type\":\"struct\",\"schema-id\":0,\"fields\":["
        "{\"id\":1,\"name\":\"id\",\"required\":true,\"type\":\"long\"},"
        "{\"id\":2,\"name\":\"s\",\"required\":false,\"type\":\"string\"},"
        "{\"id\":3,\"name\":\"nested\",\"required\":false,\"type\":{\"type\":\"struct\","
        "\"fields\":[{\"id\":4,\"name\":\"ts\",\"required\":false,\"type\":\"timestamp\"}]}}]}";

struct fixture {
	char dir[64]; /* the table directory */
	char meta_uri[128]; /* file://<dir>/metadata */
	json_t *schema;
	json_t *spec;
	struct st_snapshot_table t;
};

static void fixture_init(struct fixture *f, int version)
{
	struct fl_err err = {0};

	memset(f, 0, sizeof(*f));
	snprintf(f->dir, sizeof(f->dir), "/tmp/floe-snap-XXXXXX");
	assert_non_null(mkdtemp(f->dir));
	snprintf(f->meta_uri, sizeof(f->meta_uri), "file://%s/metadata/", f->dir);
	assert_int_equal(st_io_mkdirs(tio(), f->meta_uri, &err), 0);
	f->schema = json_loads(schema_text, 0, NULL);
	assert_non_null(f->schema);
	f->spec = json_pack("{s:i,s:[]}", "spec-id", 0, "fields");
	f->t.format_version = version;
	f->t.schema = f->schema;
	f->t.schema_id = 0;
	f->t.spec = f->spec;
	f->t.spec_id = 0;
	f->t.metadata_dir = f->meta_uri;
	f->t.io = tio();
	f->t.codec = ST_AVRO_CODEC_DEFLATE;
}

static void fixture_done(struct fixture *f)
{
	char uri[128];
	struct fl_err err = {0};

	snprintf(uri, sizeof(uri), "file://%s", f->dir);
	assert_int_equal(st_io_delete_tree(tio(), uri, &err), 0);
	json_decref(f->schema);
	json_decref(f->spec);
}

/* Counts the files in <dir>/metadata whose name ends with suffix. */
static int count_files(const struct fixture *f, const char *suffix)
{
	char cmd[256];
	FILE *p;
	int n = -1;

	snprintf(cmd, sizeof(cmd), "ls %s/metadata | grep -c -- '%s$'", f->dir, suffix);
	p = popen(cmd, "r");
	assert_non_null(p);
	assert_int_equal(fscanf(p, "%d", &n), 1);
	pclose(p);
	return n;
}

/* All records of an Avro file, and its header key `key` (if not NULL). */
static json_t *read_all(const char *uri, const char *key, char *val, size_t cap)
{
	char *data;
	size_t len;
	struct fl_err err = {0};
	struct st_avro_reader *r;
	json_t *all = json_array(), *v;

	if (st_io_read(tio(), uri, 1 << 24, &data, &len, &err) != 0)
		fail_msg("%s", err.msg);
	assert_int_equal(st_avro_reader_open(data, len, NULL, &r, &err), 0);
	if (key != NULL) {
		size_t n;
		const uint8_t *p = st_avro_reader_meta_get(r, key, &n);

		assert_non_null(p);
		assert_true(n < cap);
		memcpy(val, p, n);
		val[n] = '\0';
	}
	for (;;) {
		assert_int_equal(st_avro_reader_next(r, &v, &err), 0);
		if (v == NULL)
			break;
		json_array_append_new(all, v);
	}
	st_avro_reader_free(r);
	free(data);
	return all;
}

static const char *sget(const json_t *summary, const char *key)
{
	const char *s = json_string_value(json_object_get(summary, key));

	if (s == NULL)
		fail_msg("summary has no %s", key);
	return s;
}

static int64_t iget(const json_t *o, const char *key)
{
	const json_t *v = json_object_get(o, key);

	if (!json_is_integer(v))
		fail_msg("%s is not an integer", key);
	return json_integer_value(v);
}

/* n data files of the batch `batch`: paths, rows and sizes vary. */
static void make_files(struct st_data_file *files, char paths[][96], size_t n, int batch,
                       const struct st_value *parts, size_t n_parts)
{
	for (size_t i = 0; i < n; i++) {
		memset(&files[i], 0, sizeof(files[i]));
		snprintf(paths[i], 96, "file:///warehouse/t/data/b%d-%zu.parquet", batch, i);
		files[i].content = ST_CONTENT_DATA;
		files[i].file_path = paths[i];
		files[i].file_format = "PARQUET";
		files[i].record_count = 10 * batch + (int64_t)i;
		files[i].file_size_in_bytes = 1000 * batch + (int64_t)i;
		files[i].partition = n_parts ? &parts[i * n_parts] : NULL;
	}
}

/* Appends `n` files as snapshot `id` on top of `parent` (a Snapshot JSON
 * or NULL); returns the new Snapshot JSON. */
static json_t *append(struct fixture *f, int64_t id, const json_t *parent, int batch, size_t n,
                      int64_t first_row_id, const json_t *extra)
{
	struct st_data_file files[4];
	char paths[4][96];
	struct st_snapshot_manifest *m;
	struct st_snapshot_parent p;
	struct st_snapshot_opts o = {0};
	struct fl_err err = {0};
	json_t *snap;

	make_files(files, paths, n, batch, NULL, 0);
	if (st_snapshot_manifest_write(&f->t, id, files, n, &m, &err) != 0)
		fail_msg("%s", err.msg);
	o.table = &f->t;
	if (parent != NULL) {
		p.snapshot_id = iget(parent, "snapshot-id");
		p.manifest_list = json_string_value(json_object_get(parent, "manifest-list"));
		p.summary = json_object_get(parent, "summary");
		o.parent = &p;
	}
	o.snapshot_id = id;
	o.sequence_number = parent ? iget(parent, "sequence-number") + 1 : 1;
	o.timestamp_ms = 1700000000000 + id;
	o.first_row_id = first_row_id;
	o.attempt = 1;
	o.manifest = m;
	o.extra_summary = extra;
	if (st_snapshot_build(&o, &snap, &err) != 0)
		fail_msg("%s", err.msg);
	st_snapshot_manifest_free(m);
	return snap;
}

static void test_three_appends(void **state)
{
	struct fixture f;
	json_t *s[3], *extra, *list, *entries;
	char meta[64];
	int64_t records = 0, size = 0;

	(void)state;
	fixture_init(&f, 2);
	extra = json_pack("{s:s}", "floe.batch-id", "b-1");
	s[0] = append(&f, 101, NULL, 1, 2, 0, extra);
	s[1] = append(&f, 102, s[0], 2, 3, 0, NULL);
	s[2] = append(&f, 103, s[1], 3, 1, 0, NULL);
	json_decref(extra);
	for (int i = 0; i < 3; i++) {
		const json_t *sum = json_object_get(s[i], "summary");
		int n = i == 0 ? 2 : i == 1 ? 3 : 1;
		int64_t rec = 0, sz = 0;
		char want[32];

		for (int k = 0; k < n; k++) {
			rec += 10 * (i + 1) + k;
			sz += 1000 * (i + 1) + k;
		}
		records += rec;
		size += sz;
		assert_int_equal(iget(s[i], "snapshot-id"), 101 + i);
		assert_int_equal(iget(s[i], "sequence-number"), i + 1);
		assert_int_equal(iget(s[i], "timestamp-ms"), 1700000000101 + i);
		assert_int_equal(iget(s[i], "schema-id"), 0);
		if (i == 0)
			assert_null(json_object_get(s[i], "parent-snapshot-id"));
		else
			assert_int_equal(iget(s[i], "parent-snapshot-id"), 100 + i);
		assert_null(json_object_get(s[i], "first-row-id"));
		assert_null(json_object_get(s[i], "added-rows"));
		assert_string_equal(sget(sum, "operation"), "append");
		snprintf(want, sizeof(want), "%d", n);
		assert_string_equal(sget(sum, "added-data-files"), want);
		snprintf(want, sizeof(want), "%" PRId64, rec);
		assert_string_equal(sget(sum, "added-records"), want);
		snprintf(want, sizeof(want), "%" PRId64, sz);
		assert_string_equal(sget(sum, "added-files-size"), want);
		assert_string_equal(sget(sum, "changed-partition-count"), "1");
		snprintf(want, sizeof(want), "%" PRId64, records);
		assert_string_equal(sget(sum, "total-records"), want);
		snprintf(want, sizeof(want), "%" PRId64, size);
		assert_string_equal(sget(sum, "total-files-size"), want);
		snprintf(want, sizeof(want), "%d", i == 0 ? 2 : i == 1 ? 5 : 6);
		assert_string_equal(sget(sum, "total-data-files"), want);
		assert_string_equal(sget(sum, "total-delete-files"), "0");
		assert_string_equal(sget(sum, "total-position-deletes"), "0");
		assert_string_equal(sget(sum, "total-equality-deletes"), "0");
		/* the extra key only where it was given */
		assert_true((json_object_get(sum, "floe.batch-id") != NULL) == (i == 0));
		/* the list is named snap-<id>-<attempt>-<uuid>.avro in the metadata dir */
		snprintf(want, sizeof(want), "/metadata/snap-%d-1-", 101 + i);
		assert_non_null(
		        strstr(json_string_value(json_object_get(s[i], "manifest-list")), want));
	}
	assert_string_equal(sget(json_object_get(s[0], "summary"), "floe.batch-id"), "b-1");

	/* the third list: the new manifest first, then the parent's, newest first */
	list = read_all(json_string_value(json_object_get(s[2], "manifest-list")),
	                "parent-snapshot-id", meta, sizeof(meta));
	assert_string_equal(meta, "102");
	assert_int_equal(json_array_size(list), 3);
	for (int k = 0; k < 3; k++) {
		const json_t *mf = json_array_get(list, (size_t)k);

		assert_int_equal(iget(mf, "sequence_number"), 3 - k);
		assert_int_equal(iget(mf, "min_sequence_number"), 3 - k);
		assert_int_equal(iget(mf, "added_snapshot_id"), 103 - k);
		assert_int_equal(iget(mf, "added_files_count"), k == 0 ? 1 : k == 1 ? 3 : 2);
		assert_int_equal(iget(mf, "existing_files_count"), 0);
		assert_int_equal(iget(mf, "content"), 0);
		assert_true(json_is_array(json_object_get(mf, "partitions")));
	}
	assert_int_equal(count_files(&f, "-m0.avro"), 3);
	assert_int_equal(count_files(&f, ".avro"), 6);

	/* the new manifest: ADDED entries of snapshot 103 inheriting their
	 * sequence numbers */
	entries = read_all(
	        json_string_value(json_object_get(json_array_get(list, 0), "manifest_path")),
	        "format-version", meta, sizeof(meta));
	assert_string_equal(meta, "2");
	assert_int_equal(json_array_size(entries), 1);
	assert_int_equal(iget(json_array_get(entries, 0), "status"), 1);
	assert_int_equal(iget(json_array_get(entries, 0), "snapshot_id"), 103);
	assert_true(json_is_null(json_object_get(json_array_get(entries, 0), "sequence_number")));
	assert_string_equal(
	        json_string_value(json_object_get(
	                json_object_get(json_array_get(entries, 0), "data_file"), "file_path")),
	        "file:///warehouse/t/data/b3-0.parquet");
	json_decref(entries);
	json_decref(list);
	for (int i = 0; i < 3; i++)
		json_decref(s[i]);
	fixture_done(&f);
}

static void test_retry(void **state)
{
	struct fixture f;
	struct st_data_file files[2];
	char paths[2][96];
	struct st_snapshot_manifest *m;
	struct st_snapshot_parent p = {0};
	struct st_snapshot_opts o = {0};
	struct fl_err err = {0};
	json_t *base, *other, *first, *second, *list, *bad;

	(void)state;
	fixture_init(&f, 2);
	base = append(&f, 1, NULL, 1, 1, 0, NULL);
	make_files(files, paths, 2, 5, NULL, 0);
	assert_int_equal(st_snapshot_manifest_write(&f.t, 7, files, 2, &m, &err), 0);
	o.table = &f.t;
	p.snapshot_id = 1;
	p.manifest_list = json_string_value(json_object_get(base, "manifest-list"));
	p.summary = json_object_get(base, "summary");
	o.parent = &p;
	o.snapshot_id = 7;
	o.sequence_number = 2;
	o.timestamp_ms = 5;
	o.attempt = 1;
	o.manifest = m;
	assert_int_equal(st_snapshot_build(&o, &first, &err), 0);

	/* someone else commits snapshot 2 first: our commit gets a 409 */
	other = append(&f, 2, base, 2, 3, 0, NULL);
	p.snapshot_id = 2;
	p.manifest_list = json_string_value(json_object_get(other, "manifest-list"));
	p.summary = json_object_get(other, "summary");
	o.sequence_number = 3;
	o.attempt = 2;
	assert_int_equal(st_snapshot_build(&o, &second, &err), 0);
	assert_int_equal(iget(second, "parent-snapshot-id"), 2);
	assert_int_equal(iget(second, "sequence-number"), 3);
	assert_non_null(
	        strstr(json_string_value(json_object_get(second, "manifest-list")), "/snap-7-2-"));
	/* 1 + 3 + 2 files; 10 + 20+21+22 + 50+51 rows */
	assert_string_equal(sget(json_object_get(second, "summary"), "total-data-files"), "6");
	assert_string_equal(sget(json_object_get(second, "summary"), "total-records"), "174");
	list = read_all(json_string_value(json_object_get(second, "manifest-list")), NULL, NULL, 0);
	assert_int_equal(json_array_size(list), 3);
	assert_string_equal(
	        json_string_value(json_object_get(json_array_get(list, 0), "manifest_path")),
	        m->path);
	assert_int_equal(iget(json_array_get(list, 0), "sequence_number"), 3);
	assert_int_equal(iget(json_array_get(list, 1), "sequence_number"), 2);
	assert_int_equal(iget(json_array_get(list, 2), "sequence_number"), 1);
	json_decref(list);
	/* the manifest was written once: base, ours, other */
	assert_int_equal(count_files(&f, "-m0.avro"), 3);

	/* on a parent that already holds our manifest: the earlier attempt landed */
	bad = json_pack("{s:I,s:s,s:I,s:o}", "snapshot-id", (json_int_t)7, "manifest-list",
	                json_string_value(json_object_get(second, "manifest-list")),
	                "sequence-number", (json_int_t)3, "summary",
	                json_incref(json_object_get(second, "summary")));
	p.snapshot_id = 8;
	p.manifest_list = json_string_value(json_object_get(bad, "manifest-list"));
	assert_int_equal(st_snapshot_build(&o, &first, &err), -1);
	assert_int_equal(err.kind, FL_ERR_CONFLICT);
	json_decref(bad);
	json_decref(first);
	json_decref(second);
	json_decref(other);
	json_decref(base);
	st_snapshot_manifest_free(m);
	fixture_done(&f);
}

/* A parent written by "another engine": a data manifest and a delete
 * manifest (position and equality deletes), and no totals in its summary. */
static void write_foreign_parent(struct fixture *f, char *list_uri, size_t cap)
{
	static const uint8_t key[] = {0xca, 0xfe, 0x00, 0x01};
	struct st_manifest_file mf[2];
	char muri[2][160];
	struct fl_err err = {0};

	for (int k = 0; k < 2; k++) {
		struct st_manifest_opts mo = {0};
		struct st_manifest_writer *w;
		struct st_buf b;

		st_buf_init(&b, NULL);
		mo.format_version = 2;
		mo.content = k ? ST_MANIFEST_DELETES : ST_MANIFEST_DATA;
		mo.schema_json = schema_text;
		mo.snapshot_id = 50;
		mo.codec = ST_AVRO_CODEC_NULL;
		st_sink_to_buf(&mo.sink, &b);
		assert_int_equal(st_manifest_writer_open(&mo, &w, &err), 0);
		for (int i = 0; i < 3; i++) {
			static const int32_t eq_ids[] = {1};
			struct st_data_file df = {0};
			struct st_manifest_entry e = {0};
			char path[64];

			snprintf(path, sizeof(path), "file:///w/t/data/foreign-%d-%d.parquet", k,
			         i);
			df.file_path = path;
			df.file_format = "PARQUET";
			df.record_count = 100 + i;
			df.file_size_in_bytes = 10000 + i;
			if (k == 1) {
				df.content = i == 2 ? ST_CONTENT_EQUALITY_DELETES
				                    : ST_CONTENT_POSITION_DELETES;
				df.equality_ids = i == 2 ? eq_ids : NULL;
				df.n_equality_ids = i == 2 ? 1 : 0;
			}
			e.file = &df;
			/* one EXISTING entry from an older snapshot; the third data
			 * file is DELETED and must not count */
			e.status = i == 0 ? ST_ENTRY_EXISTING
			                  : (k == 0 && i == 2 ? ST_ENTRY_DELETED : ST_ENTRY_ADDED);
			if (e.status != ST_ENTRY_ADDED) {
				e.has_snapshot_id = true;
				e.snapshot_id = 40;
				e.has_sequence_number = e.has_file_sequence_number = true;
				e.sequence_number = e.file_sequence_number = 4;
			}
			assert_int_equal(st_manifest_writer_add(w, &e, &err), 0);
		}
		assert_int_equal(st_manifest_writer_close(w, &mf[k], &err), 0);
		snprintf(muri[k], sizeof(muri[k]), "%sforeign-%d.avro", f->meta_uri, k);
		assert_int_equal(st_io_write_new(tio(), muri[k], b.data, b.len, &err), 0);
		mf[k].manifest_path = muri[k];
		st_buf_free(&b);
	}
	mf[0].key_metadata = key;
	mf[0].key_metadata_len = sizeof(key);
	{
		struct st_manifest_list_opts lo = {0};
		struct st_manifest_list_writer *lw;
		struct st_buf b;

		st_buf_init(&b, NULL);
		lo.format_version = 2;
		lo.snapshot_id = 50;
		lo.sequence_number = 5;
		lo.codec = ST_AVRO_CODEC_DEFLATE;
		st_sink_to_buf(&lo.sink, &b);
		assert_int_equal(st_manifest_list_writer_open(&lo, &lw, &err), 0);
		assert_int_equal(st_manifest_list_writer_add(lw, &mf[0], &err), 0);
		assert_int_equal(st_manifest_list_writer_add(lw, &mf[1], &err), 0);
		assert_int_equal(st_manifest_list_writer_close(lw, NULL, NULL, &err), 0);
		snprintf(list_uri, cap, "%sforeign-list.avro", f->meta_uri);
		assert_int_equal(st_io_write_new(tio(), list_uri, b.data, b.len, &err), 0);
		st_buf_free(&b);
	}
	st_manifest_file_release(&mf[0], NULL);
	st_manifest_file_release(&mf[1], NULL);
}

static void test_recompute(void **state)
{
	static const char *const keys[] = {"total-records",          "total-files-size",
	                                   "total-data-files",       "total-delete-files",
	                                   "total-position-deletes", "total-equality-deletes"};
	/* data: EXISTING 100 + ADDED 101 (the DELETED 102 does not count);
	 * deletes: pos 100 + 101, eq 102; sizes 10000 + 10001 + 10000..10002 */
	static const char *const want[] = {"201", "50004", "2", "3", "201", "102"};
	struct fixture f;
	char list_uri[192];
	json_t *parent_summaries[3];

	(void)state;
	fixture_init(&f, 2);
	write_foreign_parent(&f, list_uri, sizeof(list_uri));
	parent_summaries[0] = NULL;
	parent_summaries[1] = json_pack("{s:s,s:s}", "operation", "append", "total-records", "x1");
	/* present totals are trusted, even when they disagree with the files */
	parent_summaries[2] = json_pack(
	        "{s:s,s:s,s:s,s:s,s:s,s:s,s:s}", "operation", "append", "total-records", "1000",
	        "total-files-size", "2000", "total-data-files", "30", "total-delete-files", "4",
	        "total-position-deletes", "50", "total-equality-deletes", "60");
	for (int c = 0; c < 3; c++) {
		json_t *parent =
		        json_pack("{s:I,s:s,s:I}", "snapshot-id", (json_int_t)50, "manifest-list",
		                  list_uri, "sequence-number", (json_int_t)5);
		json_t *s, *list;
		const json_t *sum;

		if (parent_summaries[c] != NULL)
			json_object_set_new(parent, "summary", parent_summaries[c]);
		s = append(&f, 60 + c, parent, 1, 1, 0, NULL); /* +10 rows, +1000 bytes */
		sum = json_object_get(s, "summary");
		for (int k = 0; k < 6; k++) {
			int64_t base =
			        c < 2 ? strtoll(want[k], NULL, 10)
			              : strtoll(sget(parent_summaries[2], keys[k]), NULL, 10);
			int64_t add = k == 0 ? 10 : k == 1 ? 1000 : k == 2 ? 1 : 0;
			char buf[32];

			snprintf(buf, sizeof(buf), "%" PRId64, base + add);
			if (strcmp(sget(sum, keys[k]), buf) != 0)
				fail_msg("case %d: %s is %s, want %s", c, keys[k],
				         sget(sum, keys[k]), buf);
		}
		/* carried as read: sequence numbers, counts, content, key metadata */
		list = read_all(json_string_value(json_object_get(s, "manifest-list")), NULL, NULL,
		                0);
		assert_int_equal(json_array_size(list), 3);
		assert_int_equal(iget(json_array_get(list, 1), "sequence_number"), 5);
		assert_int_equal(iget(json_array_get(list, 1), "min_sequence_number"), 4);
		assert_int_equal(iget(json_array_get(list, 1), "existing_files_count"), 1);
		assert_int_equal(iget(json_array_get(list, 1), "deleted_files_count"), 1);
		assert_int_equal(iget(json_array_get(list, 1), "deleted_rows_count"), 102);
		assert_string_equal(
		        json_string_value(json_object_get(json_array_get(list, 1), "key_metadata")),
		        "yv4AAQ==");
		assert_int_equal(iget(json_array_get(list, 2), "content"), 1);
		assert_true(json_is_null(json_object_get(json_array_get(list, 2), "key_metadata")));
		json_decref(list);
		json_decref(s);
		json_decref(parent);
	}
	fixture_done(&f);
}

static void test_v3_row_ids(void **state)
{
	struct fixture f;
	json_t *s[3], *list;
	int64_t next = 1000;

	(void)state;
	fixture_init(&f, 3);
	for (int i = 0; i < 3; i++) {
		s[i] = append(&f, 201 + i, i ? s[i - 1] : NULL, i + 1, (size_t)(i + 1), next, NULL);
		assert_int_equal(iget(s[i], "first-row-id"), next);
		/* only the new manifest has no first_row_id: added-rows is its rows */
		assert_int_equal(
		        iget(s[i], "added-rows"),
		        strtoll(sget(json_object_get(s[i], "summary"), "added-records"), NULL, 10));
		next += iget(s[i], "added-rows");
	}
	list = read_all(json_string_value(json_object_get(s[2], "manifest-list")), NULL, NULL, 0);
	assert_int_equal(json_array_size(list), 3);
	/* newest first: 1000 + 10 + (20 + 21) = 1051, then 1010, then 1000 */
	assert_int_equal(iget(json_array_get(list, 0), "first_row_id"), 1051);
	assert_int_equal(iget(json_array_get(list, 1), "first_row_id"), 1010);
	assert_int_equal(iget(json_array_get(list, 2), "first_row_id"), 1000);
	assert_int_equal(next, 1051 + 30 + 31 + 32);
	json_decref(list);
	for (int i = 0; i < 3; i++)
		json_decref(s[i]);
	fixture_done(&f);
}

/* A snapshot with a further manifest of an older spec (an upsert that
 * rewrites a file in the spec it was written for): both are listed, the
 * summary counts both, each gets its own row ids, and a further manifest
 * without a manifest, or of another snapshot, is refused. */
static void test_more_manifests(void **state)
{
	struct fixture f;
	struct st_data_file files[3];
	char paths[3][96];
	struct st_value parts[1] = {{.v.l = 7}};
	struct st_snapshot_table old;
	struct st_snapshot_manifest *m, *more[1], *other;
	struct st_snapshot_opts o = {0};
	struct fl_err err = {0};
	json_t *old_spec, *snap, *list, *sum;

	(void)state;
	fixture_init(&f, 3);
	old_spec = json_pack("{s:i, s:[{s:i, s:i, s:s, s:s}]}", "spec-id", 1, "fields", "source-id",
	                     1, "field-id", 1000, "name", "id", "transform", "identity");
	old = f.t;
	old.spec = old_spec;
	old.spec_id = 1;
	make_files(files, paths, 2, 1, NULL, 0);
	assert_int_equal(st_snapshot_manifest_write(&f.t, 31, files, 2, &m, &err), 0);
	make_files(files, paths, 1, 2, parts, 1);
	assert_int_equal(st_snapshot_manifest_write(&old, 31, files, 1, &more[0], &err), 0);
	assert_int_equal(st_snapshot_manifest_write(&old, 32, files, 1, &other, &err), 0);
	o.table = &f.t;
	o.snapshot_id = 31;
	o.sequence_number = 1;
	o.timestamp_ms = 1700000000031;
	o.first_row_id = 500;
	o.attempt = 1;
	o.more = (const struct st_snapshot_manifest *const *)&other;
	o.n_more = 1;
	assert_int_equal(st_snapshot_build(&o, &snap, &err), -1);
	assert_non_null(strstr(err.msg, "beside its manifest"));
	o.manifest = m;
	assert_int_equal(st_snapshot_build(&o, &snap, &err), -1);
	assert_non_null(strstr(err.msg, "is not of snapshot 31"));
	o.more = (const struct st_snapshot_manifest *const *)more;
	assert_int_equal(st_snapshot_build(&o, &snap, &err), 0);
	sum = json_object_get(snap, "summary");
	/* rows 10 + 11, then 20; sizes 1000 + 1001, then 2000 */
	assert_string_equal(sget(sum, "added-data-files"), "3");
	assert_string_equal(sget(sum, "added-records"), "41");
	assert_string_equal(sget(sum, "added-files-size"), "4001");
	assert_string_equal(sget(sum, "total-data-files"), "3");
	assert_string_equal(sget(sum, "total-records"), "41");
	assert_string_equal(sget(sum, "changed-partition-count"), "2");
	assert_int_equal(iget(snap, "added-rows"), 41);
	list = read_all(json_string_value(json_object_get(snap, "manifest-list")), NULL, NULL, 0);
	assert_int_equal(json_array_size(list), 2);
	assert_int_equal(iget(json_array_get(list, 0), "partition_spec_id"), 0);
	assert_int_equal(iget(json_array_get(list, 0), "first_row_id"), 500);
	assert_int_equal(iget(json_array_get(list, 1), "partition_spec_id"), 1);
	assert_int_equal(iget(json_array_get(list, 1), "first_row_id"), 521);
	json_decref(list);
	json_decref(snap);
	st_snapshot_manifest_free(m);
	st_snapshot_manifest_free(more[0]);
	st_snapshot_manifest_free(other);
	json_decref(old_spec);
	fixture_done(&f);
}

static void test_partitioned(void **state)
{
	struct fixture f;
	struct st_value parts[4][2];
	struct st_data_file files[4];
	char paths[4][96];
	struct st_snapshot_manifest *m;
	struct st_snapshot_opts o = {0};
	struct fl_err err = {0};
	json_t *snap, *list, *entries, *bad_spec;
	const json_t *ps;
	static const char *const s[] = {"b", "a", "b", NULL};

	(void)state;
	fixture_init(&f, 2);
	json_decref(f.spec);
	f.spec = json_pack("{s:i,s:[{s:i,s:i,s:s,s:s},{s:i,s:i,s:s,s:s}]}", "spec-id", 3, "fields",
	                   "field-id", 1000, "source-id", 2, "name", "s", "transform", "identity",
	                   "field-id", 1001, "source-id", 4, "name", "ts_day", "transform", "day");
	f.t.spec = f.spec;
	f.t.spec_id = 3;
	memset(parts, 0, sizeof(parts));
	for (int i = 0; i < 4; i++) {
		parts[i][0].null = s[i] == NULL;
		if (s[i] != NULL) {
			parts[i][0].v.bin.p = (const uint8_t *)s[i];
			parts[i][0].v.bin.len = 1;
		}
		parts[i][1].v.i = 19000 + (i == 2); /* b/19000, a/19000, b/19001, null/19000 */
	}
	make_files(files, paths, 4, 1, &parts[0][0], 2);
	assert_int_equal(st_snapshot_manifest_write(&f.t, 9, files, 4, &m, &err), 0);
	assert_int_equal(m->changed_partitions, 4);
	st_snapshot_manifest_free(m);
	parts[2][1].v.i = 19000; /* now b/19000 twice */
	assert_int_equal(st_snapshot_manifest_write(&f.t, 9, files, 4, &m, &err), 0);
	assert_int_equal(m->changed_partitions, 3);
	o.table = &f.t;
	o.snapshot_id = 9;
	o.sequence_number = 1;
	o.attempt = 1;
	o.manifest = m;
	assert_int_equal(st_snapshot_build(&o, &snap, &err), 0);
	assert_string_equal(sget(json_object_get(snap, "summary"), "changed-partition-count"), "3");
	list = read_all(json_string_value(json_object_get(snap, "manifest-list")), NULL, NULL, 0);
	assert_int_equal(iget(json_array_get(list, 0), "partition_spec_id"), 3);
	ps = json_object_get(json_array_get(list, 0), "partitions");
	assert_int_equal(json_array_size(ps), 2);
	assert_true(json_is_true(json_object_get(json_array_get(ps, 0), "contains_null")));
	assert_string_equal(
	        json_string_value(json_object_get(json_array_get(ps, 0), "lower_bound")),
	        "YQ=="); /* "a" */
	assert_string_equal(
	        json_string_value(json_object_get(json_array_get(ps, 0), "upper_bound")),
	        "Yg=="); /* "b" */
	entries = read_all(m->path, NULL, NULL, 0);
	assert_string_equal(
	        json_string_value(json_object_get(
	                json_object_get(json_object_get(json_array_get(entries, 1), "data_file"),
	                                "partition"),
	                "s")),
	        "a");
	assert_int_equal(
	        iget(json_object_get(json_object_get(json_array_get(entries, 1), "data_file"),
	                             "partition"),
	             "ts_day"),
	        19000);
	json_decref(entries);
	json_decref(list);
	json_decref(snap);
	st_snapshot_manifest_free(m);

	/* a source that is not a primitive field; a transform nobody knows */
	bad_spec = json_pack("{s:i,s:[{s:i,s:i,s:s,s:s}]}", "spec-id", 4, "fields", "field-id",
	                     1000, "source-id", 3, "name", "n", "transform", "identity");
	f.t.spec = bad_spec;
	assert_int_equal(st_snapshot_manifest_write(&f.t, 9, files, 4, &m, &err), -1);
	assert_non_null(strstr(err.msg, "not a primitive field"));
	json_object_set_new(json_array_get(json_object_get(bad_spec, "fields"), 0), "source-id",
	                    json_integer(1));
	json_object_set_new(json_array_get(json_object_get(bad_spec, "fields"), 0), "transform",
	                    json_string("zorder"));
	assert_int_equal(st_snapshot_manifest_write(&f.t, 9, files, 4, &m, &err), -1);
	assert_non_null(strstr(err.msg, "unknown transform zorder"));
	json_decref(bad_spec);
	fixture_done(&f);
}

/* A replace that rewrites manifests in part: kept entries EXISTING with
 * their own snapshot ids and sequence numbers, between the ADDED and the
 * DELETED ones; removed delete files in a delete manifest of their own,
 * counted in the summary. */
static void test_rewrite_in_part(void **state)
{
	struct fixture f;
	json_t *s[2], *list, *entries, *snap, *rec;
	struct st_data_file old[4], out = {0}, pd = {0};
	char paths[4][96];
	struct st_manifest_entry e[4], pde = {0};
	struct st_snapshot_manifest *m, *rd;
	struct st_snapshot_parent p;
	struct st_snapshot_opts o = {0};
	struct fl_err err = {0};
	const char *drop[2];

	(void)state;
	fixture_init(&f, 2);
	s[0] = append(&f, 101, NULL, 1, 2, 0, NULL);
	s[1] = append(&f, 102, s[0], 2, 2, 0, NULL);
	list = read_all(json_string_value(json_object_get(s[1], "manifest-list")), NULL, NULL, 0);
	drop[0] = json_string_value(json_object_get(json_array_get(list, 0), "manifest_path"));
	drop[1] = json_string_value(json_object_get(json_array_get(list, 1), "manifest_path"));
	make_files(old, paths, 2, 1, NULL, 0);
	make_files(old + 2, paths + 2, 2, 2, NULL, 0);
	for (int i = 0; i < 4; i++) {
		memset(&e[i], 0, sizeof(e[i]));
		e[i].file = &old[i];
		e[i].has_snapshot_id = true;
		e[i].snapshot_id = i < 2 ? 101 : 102;
		e[i].has_sequence_number = e[i].has_file_sequence_number = true;
		e[i].sequence_number = e[i].file_sequence_number = i < 2 ? 1 : 2;
	}
	out.content = ST_CONTENT_DATA;
	out.file_path = "file:///warehouse/t/data/compact.parquet";
	out.file_format = "PARQUET";
	out.record_count = 30;
	out.file_size_in_bytes = 3000;
	/* files 0 and 2 stay (EXISTING), 1 and 3 are rewritten */
	{
		struct st_manifest_entry kept[2] = {e[0], e[2]}, gone[2] = {e[1], e[3]};

		if (st_snapshot_manifest_write_rewrite(&f.t, 103, ST_MANIFEST_DATA, &out, 1, kept,
		                                       2, gone, 2, &m, &err) != 0)
			fail_msg("%s", err.msg);
		/* a kept delete file in a data manifest is refused */
		pd.content = ST_CONTENT_POSITION_DELETES;
		pd.file_path = "file:///warehouse/t/data/pd.parquet";
		pd.file_format = "PARQUET";
		pd.record_count = 5;
		pd.file_size_in_bytes = 100;
		pde.file = &pd;
		pde.has_snapshot_id = pde.has_sequence_number = pde.has_file_sequence_number = true;
		pde.snapshot_id = 102;
		pde.sequence_number = pde.file_sequence_number = 2;
		assert_int_not_equal(st_snapshot_manifest_write_rewrite(&f.t, 103, ST_MANIFEST_DATA,
		                                                        &out, 1, &pde, 1, NULL, 0,
		                                                        &rd, &err),
		                     0);
		assert_int_equal(err.kind, FL_ERR_BAD_REQUEST);
	}
	if (st_snapshot_manifest_write_removed_deletes(&f.t, 103, &pde, 1, &rd, &err) != 0)
		fail_msg("%s", err.msg);
	entries = read_all(m->path, NULL, NULL, 0);
	assert_int_equal(json_array_size(entries), 5);
	assert_int_equal(iget(json_array_get(entries, 0), "status"), 1);
	for (size_t i = 1; i < 5; i++) {
		rec = json_array_get(entries, i);
		assert_int_equal(iget(rec, "status"), i < 3 ? 0 : 2);
		/* an EXISTING entry keeps its snapshot; a DELETED one names the
		 * snapshot that deleted it; both keep their sequence numbers */
		assert_int_equal(iget(rec, "snapshot_id"), i >= 3 ? 103 : i % 2 == 1 ? 101 : 102);
		assert_int_equal(iget(rec, "sequence_number"), i % 2 == 1 ? 1 : 2);
	}
	json_decref(entries);
	p.snapshot_id = 102;
	p.manifest_list = json_string_value(json_object_get(s[1], "manifest-list"));
	p.summary = json_object_get(s[1], "summary");
	o.table = &f.t;
	o.parent = &p;
	o.snapshot_id = 103;
	o.sequence_number = 3;
	o.timestamp_ms = 1700000000103;
	o.attempt = 1;
	o.manifest = m;
	o.drop_manifests = drop;
	o.n_drop = 2;
	o.removed_deletes = rd;
	if (st_snapshot_build(&o, &snap, &err) != 0)
		fail_msg("%s", err.msg);
	rec = json_object_get(snap, "summary");
	assert_string_equal(sget(rec, "operation"), "replace");
	assert_string_equal(sget(rec, "deleted-data-files"), "2");
	assert_string_equal(sget(rec, "removed-delete-files"), "1");
	assert_string_equal(sget(rec, "removed-position-deletes"), "5");
	assert_string_equal(sget(rec, "total-data-files"), "3");
	{
		/* A copy-on-write upsert names its operation; the rest is the same. */
		json_t *snap2;

		o.operation = "overwrite";
		o.attempt = 2;
		if (st_snapshot_build(&o, &snap2, &err) != 0)
			fail_msg("%s", err.msg);
		rec = json_object_get(snap2, "summary");
		assert_string_equal(sget(rec, "operation"), "overwrite");
		assert_string_equal(sget(rec, "deleted-data-files"), "2");
		assert_string_equal(sget(rec, "total-data-files"), "3");
		json_decref(snap2);
	}
	json_decref(list);
	list = read_all(json_string_value(json_object_get(snap, "manifest-list")), NULL, NULL, 0);
	assert_int_equal(json_array_size(list), 2);
	assert_int_equal(iget(json_array_get(list, 0), "existing_files_count"), 2);
	assert_int_equal(iget(json_array_get(list, 1), "content"), 1);
	assert_int_equal(iget(json_array_get(list, 1), "deleted_files_count"), 1);
	json_decref(list);
	json_decref(snap);
	st_snapshot_manifest_free(m);
	st_snapshot_manifest_free(rd);
	json_decref(s[0]);
	json_decref(s[1]);
	fixture_done(&f);
}

/* A replace (compaction) on top of three appends: the manifests of the
 * first two are dropped, the new manifest holds the rewritten file ADDED
 * and the four old ones DELETED with their sequence numbers, the summary
 * counts both (Appendix F) and the totals subtract; a manifest that is no
 * longer in the parent's list is a conflict.  Then partition tuples parse
 * from a manifest entry's record. */
static void test_replace(void **state)
{
	struct fixture f;
	json_t *s[3], *list, *entries, *snap, *rec;
	struct st_data_file old[4], out = {0};
	char paths[4][96];
	struct st_manifest_entry del[4];
	struct st_snapshot_manifest *m;
	struct st_snapshot_parent p;
	struct st_snapshot_opts o = {0};
	struct fl_err err = {0};
	const char *drop[2], *gone[1] = {"file:///nowhere/m.avro"};
	struct st_value *vals;
	size_t nv;

	(void)state;
	fixture_init(&f, 2);
	s[0] = append(&f, 101, NULL, 1, 2, 0, NULL);
	s[1] = append(&f, 102, s[0], 2, 2, 0, NULL);
	s[2] = append(&f, 103, s[1], 3, 2, 0, NULL);
	list = read_all(json_string_value(json_object_get(s[2], "manifest-list")), NULL, NULL, 0);
	assert_int_equal(json_array_size(list), 3);
	/* newest first: batch 3, 2, 1 */
	drop[0] = json_string_value(json_object_get(json_array_get(list, 1), "manifest_path"));
	drop[1] = json_string_value(json_object_get(json_array_get(list, 2), "manifest_path"));
	make_files(old, paths, 2, 1, NULL, 0);
	make_files(old + 2, paths + 2, 2, 2, NULL, 0);
	for (int i = 0; i < 4; i++) {
		memset(&del[i], 0, sizeof(del[i]));
		del[i].file = &old[i];
		del[i].has_snapshot_id = true;
		del[i].snapshot_id = i < 2 ? 101 : 102;
		del[i].has_sequence_number = del[i].has_file_sequence_number = true;
		del[i].sequence_number = del[i].file_sequence_number = i < 2 ? 1 : 2;
	}
	out.content = ST_CONTENT_DATA;
	out.file_path = "file:///warehouse/t/data/compact.parquet";
	out.file_format = "PARQUET";
	out.record_count = 62;
	out.file_size_in_bytes = 5000;
	/* a deleted entry without its sequence number is refused */
	del[3].has_sequence_number = false;
	assert_int_not_equal(
	        st_snapshot_manifest_write_replace(&f.t, 104, &out, 1, del, 4, &m, &err), 0);
	assert_int_equal(err.kind, FL_ERR_BAD_REQUEST);
	del[3].has_sequence_number = true;
	if (st_snapshot_manifest_write_replace(&f.t, 104, &out, 1, del, 4, &m, &err) != 0)
		fail_msg("%s", err.msg);
	assert_int_equal(m->removed_files_size, 6002);
	p.snapshot_id = 103;
	p.manifest_list = json_string_value(json_object_get(s[2], "manifest-list"));
	p.summary = json_object_get(s[2], "summary");
	o.table = &f.t;
	o.parent = &p;
	o.snapshot_id = 104;
	o.sequence_number = 4;
	o.timestamp_ms = 1700000000104;
	o.attempt = 1;
	o.manifest = m;
	o.drop_manifests = gone;
	o.n_drop = 1;
	assert_int_not_equal(st_snapshot_build(&o, &snap, &err), 0);
	assert_int_equal(err.kind, FL_ERR_CONFLICT);
	o.drop_manifests = drop;
	o.n_drop = 2;
	if (st_snapshot_build(&o, &snap, &err) != 0)
		fail_msg("%s", err.msg);
	rec = json_object_get(snap, "summary");
	assert_string_equal(sget(rec, "operation"), "replace");
	assert_string_equal(sget(rec, "added-data-files"), "1");
	assert_string_equal(sget(rec, "added-records"), "62");
	assert_string_equal(sget(rec, "added-files-size"), "5000");
	assert_string_equal(sget(rec, "deleted-data-files"), "4");
	assert_string_equal(sget(rec, "deleted-records"), "62");
	assert_string_equal(sget(rec, "removed-files-size"), "6002");
	assert_string_equal(sget(rec, "total-records"), "123");
	assert_string_equal(sget(rec, "total-files-size"), "11001");
	assert_string_equal(sget(rec, "total-data-files"), "3");
	json_decref(list);
	list = read_all(json_string_value(json_object_get(snap, "manifest-list")), NULL, NULL, 0);
	assert_int_equal(json_array_size(list), 2);
	assert_string_equal(
	        json_string_value(json_object_get(json_array_get(list, 0), "manifest_path")),
	        m->path);
	assert_int_equal(iget(json_array_get(list, 0), "added_files_count"), 1);
	assert_int_equal(iget(json_array_get(list, 0), "deleted_files_count"), 4);
	assert_int_equal(iget(json_array_get(list, 0), "deleted_rows_count"), 62);
	entries = read_all(m->path, NULL, NULL, 0);
	assert_int_equal(json_array_size(entries), 5);
	assert_int_equal(iget(json_array_get(entries, 0), "status"), 1);
	for (size_t i = 1; i < 5; i++) {
		rec = json_array_get(entries, i);
		assert_int_equal(iget(rec, "status"), 2);
		assert_int_equal(iget(rec, "snapshot_id"), 104); /* the replace's */
		assert_int_equal(iget(rec, "sequence_number"), i < 3 ? 1 : 2);
		assert_int_equal(iget(rec, "file_sequence_number"), i < 3 ? 1 : 2);
	}
	json_decref(entries);
	json_decref(list);
	json_decref(snap);
	st_snapshot_manifest_free(m);

	/* partition tuples from a decoded record: identity on s (string) */
	json_decref(f.spec);
	f.spec = json_pack("{s:i,s:[{s:i,s:i,s:s,s:s}]}", "spec-id", 1, "fields", "field-id", 1000,
	                   "source-id", 2, "name", "s", "transform", "identity");
	f.t.spec = f.spec;
	rec = json_pack("{s:s}", "s", "eu");
	assert_int_equal(st_snapshot_partition_parse(&f.t, rec, &vals, &nv, &err), 0);
	assert_int_equal(nv, 1);
	assert_false(vals[0].null);
	assert_int_equal(vals[0].v.bin.len, 2);
	assert_memory_equal(vals[0].v.bin.p, "eu", 2);
	free(vals);
	json_object_set_new(rec, "s", json_null());
	assert_int_equal(st_snapshot_partition_parse(&f.t, rec, &vals, &nv, &err), 0);
	assert_true(vals[0].null);
	free(vals);
	json_object_set_new(rec, "s", json_integer(3));
	assert_int_not_equal(st_snapshot_partition_parse(&f.t, rec, &vals, &nv, &err), 0);
	assert_int_equal(err.kind, FL_ERR_BAD_REQUEST);
	json_decref(rec);
	for (int i = 0; i < 3; i++)
		json_decref(s[i]);
	fixture_done(&f);
}

/* Partition tuples of binary, fixed, uuid and decimal values: written to a
 * manifest, read back and parsed, they are the values written (a negative
 * decimal sign-extended); wrong lengths and text that is not base64 are
 * refused. */
static void test_partition_bytes(void **state)
{
	static const uint8_t uuid[16] = {0x12, 0x34, 0x56, 0x78, 0x9a, 0xbc, 0xde, 0xf0,
	                                 0x0f, 0xed, 0xcb, 0xa9, 0x87, 0x65, 0x43, 0x21};
	static const uint8_t bin[] = {0, 1, 2, 0xff, 0};
	static const uint8_t fix[3] = {'a', 0, 'z'};
	static const int64_t dec[] = {12345, -98765, 0};
	struct fixture f;
	struct st_value parts[3][4], *vals;
	struct st_data_file files[3];
	char paths[3][96];
	struct st_snapshot_manifest *m;
	struct fl_err err = {0};
	json_t *entries, *rec;
	size_t nv;

	(void)state;
	fixture_init(&f, 2);
	json_decref(f.schema);
	f.schema = json_loads(
	        "{\"type\":\"struct\",\"schema-id\":0,\"fields\":["
	        "{\"id\":1,\"name\":\"amount\",\"required\":false,\"type\":\"decimal(12, 2)\"},"
	        "{\"id\":2,\"name\":\"u\",\"required\":false,\"type\":\"uuid\"},"
	        "{\"id\":3,\"name\":\"b\",\"required\":false,\"type\":\"binary\"},"
	        "{\"id\":4,\"name\":\"f\",\"required\":false,\"type\":\"fixed[3]\"}]}",
	        0, NULL);
	assert_non_null(f.schema);
	f.t.schema = f.schema;
	json_decref(f.spec);
	f.spec = json_pack("{s:i,s:[{s:i,s:i,s:s,s:s},{s:i,s:i,s:s,s:s},{s:i,s:i,s:s,s:s},"
	                   "{s:i,s:i,s:s,s:s}]}",
	                   "spec-id", 0, "fields", "field-id", 1000, "source-id", 1, "name",
	                   "amount", "transform", "identity", "field-id", 1001, "source-id", 2,
	                   "name", "u", "transform", "identity", "field-id", 1002, "source-id", 3,
	                   "name", "b", "transform", "identity", "field-id", 1003, "source-id", 4,
	                   "name", "f", "transform", "identity");
	f.t.spec = f.spec;
	memset(parts, 0, sizeof(parts));
	for (int i = 0; i < 3; i++) {
		st_value_set_decimal(&parts[i][0], dec[i]);
		parts[i][1].v.bin.p = uuid;
		parts[i][1].v.bin.len = 16;
		parts[i][2].v.bin.p = bin;
		parts[i][2].v.bin.len = i == 2 ? 0 : sizeof(bin) - (size_t)i; /* empty is a value */
		parts[i][3].v.bin.p = fix;
		parts[i][3].v.bin.len = 3;
	}
	parts[2][1].null = true;
	make_files(files, paths, 3, 1, &parts[0][0], 4);
	assert_int_equal(st_snapshot_manifest_write(&f.t, 9, files, 3, &m, &err), 0);
	entries = read_all(m->path, NULL, NULL, 0);
	assert_int_equal(json_array_size(entries), 3);
	for (size_t i = 0; i < 3; i++) {
		rec = json_object_get(json_object_get(json_array_get(entries, i), "data_file"),
		                      "partition");
		if (st_snapshot_partition_parse(&f.t, rec, &vals, &nv, &err) != 0)
			fail_msg("%s", err.msg);
		assert_int_equal(nv, 4);
		for (size_t k = 0; k < 4; k++) {
			const struct st_value *a = &vals[k], *b = &parts[i][k];

			assert_int_equal(a->null, b->null);
			if (a->null)
				continue;
			if (k == 0) {
				assert_memory_equal(a->v.dec, b->v.dec, 16);
			} else {
				assert_int_equal(a->v.bin.len, b->v.bin.len);
				if (b->v.bin.len > 0)
					assert_memory_equal(a->v.bin.p, b->v.bin.p, b->v.bin.len);
			}
		}
		free(vals);
	}
	json_decref(entries);
	st_snapshot_manifest_free(m);

	/* lengths that do not fit, and text that is not base64 */
	{
		static const char *const bad[][2] = {
		        {"u", "AAEC"}, /* 3 bytes for a uuid */
		        {"f", "AAEC/w=="}, /* 4 bytes for fixed[3] */
		        {"amount", ""}, /* a decimal of no bytes */
		        {"amount", "AAECAwQFBgcICQoLDA0ODxA="}, /* 17 bytes */
		        {"b", "not base64!"},
		};

		for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
			rec = json_pack("{s:s,s:s,s:s,s:s}", "amount", "MDk=", "u",
			                "EjRWeJq83vAP7cuph2VDIQ==", "b", "", "f", "YQB6");
			json_object_set_new(rec, bad[i][0], json_string(bad[i][1]));
			assert_int_equal(st_snapshot_partition_parse(&f.t, rec, &vals, &nv, &err),
			                 -1);
			assert_int_equal(err.kind, FL_ERR_BAD_REQUEST);
			assert_non_null(strstr(err.msg, bad[i][0]));
			json_decref(rec);
		}
		rec = json_pack("{s:s,s:s,s:s,s:s}", "amount", "MDk=", "u",
		                "EjRWeJq83vAP7cuph2VDIQ==", "b", "", "f", "YQB6");
		assert_int_equal(st_snapshot_partition_parse(&f.t, rec, &vals, &nv, &err), 0);
		assert_int_equal(vals[0].v.dec[15], 0x39); /* 12345 = 0x3039 */
		assert_int_equal(vals[0].v.dec[14], 0x30);
		assert_int_equal(vals[0].v.dec[0], 0);
		assert_int_equal(vals[2].v.bin.len, 0);
		free(vals);
		json_decref(rec);
	}
	fixture_done(&f);
}

/* Manifest rewrite: three v3 appends (the last with column metrics, split
 * offsets and a sort order) merged into one manifest.  Every entry comes
 * back EXISTING with its snapshot id and sequence numbers made explicit,
 * its data_file unchanged but for first_row_id, which is the inherited
 * one; the replace snapshot lists the merged manifest alone and keeps the
 * totals.  Mixed specs, and merged manifests without drops, are refused. */
static void test_merge(void **state)
{
	struct fixture f;
	json_t *s[3], *list, *after, *snap, *rec, *before = json_object(), *merged;
	const json_t *recs[3];
	struct st_data_file files[2];
	char paths[2][96];
	struct st_column_metrics cols[2];
	uint8_t lo[8] = {1, 0, 0, 0, 0, 0, 0, 0}, hi[8] = {9, 0, 0, 0, 0, 0, 0, 0};
	int64_t splits[2] = {4, 1000};
	struct st_snapshot_manifest *m, *out = NULL;
	const struct st_snapshot_manifest *mm[1];
	struct st_snapshot_parent p;
	struct st_snapshot_opts o = {0};
	struct fl_err err = {0};
	const char *drop[3];
	int64_t n = 0, frid;
	size_t i, k;

	(void)state;
	fixture_init(&f, 3);
	s[0] = append(&f, 101, NULL, 1, 2, 0, NULL);
	s[1] = append(&f, 102, s[0], 2, 2, iget(s[0], "added-rows"), NULL);
	/* the third append by hand: files with metrics */
	make_files(files, paths, 2, 3, NULL, 0);
	memset(cols, 0, sizeof(cols));
	cols[0] = (struct st_column_metrics){.field_id = 1,
	                                     .column_size = 40,
	                                     .value_count = 30,
	                                     .null_count = 0,
	                                     .nan_count = -1,
	                                     .has_lower = true,
	                                     .has_upper = true,
	                                     .lower = lo,
	                                     .lower_len = 8,
	                                     .upper = hi,
	                                     .upper_len = 8};
	cols[1] = (struct st_column_metrics){.field_id = 2,
	                                     .column_size = 22,
	                                     .value_count = 30,
	                                     .null_count = 3,
	                                     .nan_count = -1};
	for (i = 0; i < 2; i++) {
		files[i].columns = cols;
		files[i].n_columns = 2;
		files[i].split_offsets = splits;
		files[i].n_split_offsets = 2;
		files[i].has_sort_order_id = true;
		files[i].sort_order_id = 0;
	}
	if (st_snapshot_manifest_write(&f.t, 103, files, 2, &m, &err) != 0)
		fail_msg("%s", err.msg);
	p.snapshot_id = 102;
	p.manifest_list = json_string_value(json_object_get(s[1], "manifest-list"));
	p.summary = json_object_get(s[1], "summary");
	o.table = &f.t;
	o.parent = &p;
	o.snapshot_id = 103;
	o.sequence_number = 3;
	o.timestamp_ms = 1700000000103;
	o.first_row_id = iget(s[1], "first-row-id") + iget(s[1], "added-rows");
	o.attempt = 1;
	o.manifest = m;
	if (st_snapshot_build(&o, &s[2], &err) != 0)
		fail_msg("%s", err.msg);
	st_snapshot_manifest_free(m);

	/* what each file is before: its data_file and inherited lineage */
	list = read_all(json_string_value(json_object_get(s[2], "manifest-list")), NULL, NULL, 0);
	assert_int_equal(json_array_size(list), 3);
	json_array_foreach(list, i, rec)
	{
		json_t *es = read_all(json_string_value(json_object_get(rec, "manifest_path")),
		                      NULL, NULL, 0),
		       *e;

		recs[i] = rec;
		drop[i] = json_string_value(json_object_get(rec, "manifest_path"));
		frid = iget(rec, "first_row_id");
		json_array_foreach(es, k, e)
		{
			json_t *df = json_object_get(e, "data_file");

			assert_true(json_is_null(json_object_get(df, "first_row_id")));
			json_object_set_new(
			        before, json_string_value(json_object_get(df, "file_path")),
			        json_pack("{s:O, s:I, s:I, s:I}", "data_file", df, "snapshot",
			                  (json_int_t)iget(rec, "added_snapshot_id"), "seq",
			                  (json_int_t)iget(rec, "sequence_number"), "frid",
			                  (json_int_t)frid));
			frid += iget(df, "record_count");
		}
		json_decref(es);
	}
	assert_int_equal(json_object_size(before), 6);

	if (st_snapshot_manifest_merge(&f.t, 104, recs, 3, &out, &n, &err) != 0)
		fail_msg("%s", err.msg);
	assert_non_null(out);
	assert_int_equal(n, 6);
	assert_int_equal(out->file.existing_files_count, 6);
	assert_int_equal(out->file.added_files_count, 0);
	assert_int_equal(out->file.added_snapshot_id, 104);
	assert_int_equal(out->file.min_sequence_number, 1);
	merged = read_all(out->path, NULL, NULL, 0);
	assert_int_equal(json_array_size(merged), 6);
	json_array_foreach(merged, i, rec)
	{
		json_t *df = json_object_get(rec, "data_file"), *want, *copy;
		const char *path = json_string_value(json_object_get(df, "file_path"));

		want = json_object_get(before, path);
		assert_non_null(want);
		assert_int_equal(iget(rec, "status"), 0);
		assert_int_equal(iget(rec, "snapshot_id"), iget(want, "snapshot"));
		assert_int_equal(iget(rec, "sequence_number"), iget(want, "seq"));
		assert_int_equal(iget(rec, "file_sequence_number"), iget(want, "seq"));
		assert_int_equal(iget(df, "first_row_id"), iget(want, "frid"));
		copy = json_deep_copy(df);
		json_object_set_new(copy, "first_row_id", json_null());
		if (!json_equal(copy, json_object_get(want, "data_file"))) {
			char *a = json_dumps(copy, JSON_SORT_KEYS),
			     *b = json_dumps(json_object_get(want, "data_file"), JSON_SORT_KEYS);

			fail_msg("data_file changed:\n%s\n%s", a, b);
		}
		json_decref(copy);
	}

	/* the replace: the merged manifest alone, totals kept */
	mm[0] = out;
	p.snapshot_id = 103;
	p.manifest_list = json_string_value(json_object_get(s[2], "manifest-list"));
	p.summary = json_object_get(s[2], "summary");
	o.manifest = NULL;
	o.snapshot_id = 104;
	o.sequence_number = 4;
	o.first_row_id = iget(s[2], "first-row-id") + iget(s[2], "added-rows");
	o.merged = mm;
	o.n_merged = 1;
	o.drop_manifests = NULL;
	o.n_drop = 0;
	assert_int_not_equal(st_snapshot_build(&o, &snap, &err), 0);
	assert_int_equal(err.kind, FL_ERR_BAD_REQUEST);
	o.drop_manifests = drop;
	o.n_drop = 3;
	if (st_snapshot_build(&o, &snap, &err) != 0)
		fail_msg("%s", err.msg);
	rec = json_object_get(snap, "summary");
	assert_string_equal(sget(rec, "operation"), "replace");
	assert_string_equal(sget(rec, "total-data-files"), "6");
	assert_string_equal(sget(rec, "total-records"),
	                    sget(json_object_get(s[2], "summary"), "total-records"));
	/* A list of its own: recs (and drop) point into list, and are used again below. */
	after = read_all(json_string_value(json_object_get(snap, "manifest-list")), NULL, NULL, 0);
	assert_int_equal(json_array_size(after), 1);
	assert_string_equal(
	        json_string_value(json_object_get(json_array_get(after, 0), "manifest_path")),
	        out->path);
	assert_int_equal(iget(json_array_get(after, 0), "sequence_number"), 4);
	json_decref(after);
	json_decref(snap);

	/* manifests of another spec are refused */
	f.t.spec_id = 7;
	assert_int_not_equal(st_snapshot_manifest_merge(&f.t, 105, recs, 3, &m, &n, &err), 0);
	assert_int_equal(err.kind, FL_ERR_BAD_REQUEST);
	f.t.spec_id = 0;

	st_snapshot_manifest_free(out);
	json_decref(merged);
	json_decref(list);
	json_decref(before);
	for (i = 0; i < 3; i++)
		json_decref(s[i]);
	fixture_done(&f);
}

static void test_refusals(void **state)
{
	struct fixture f;
	struct st_data_file files[1];
	char paths[1][96];
	struct st_snapshot_manifest *m = NULL, *m2 = NULL;
	struct st_snapshot_parent p = {0};
	struct st_snapshot_opts o = {0};
	struct fl_err err = {0};
	json_t *snap = NULL, *extra;
	char missing[192];

	(void)state;
	fixture_init(&f, 2);
	make_files(files, paths, 1, 1, NULL, 0);
	assert_int_equal(st_snapshot_manifest_write(&f.t, 9, files, 0, &m, &err), -1);
	assert_non_null(strstr(err.msg, "needs data files"));
	files[0].content = ST_CONTENT_POSITION_DELETES;
	assert_int_equal(st_snapshot_manifest_write(&f.t, 9, files, 1, &m, &err), -1);
	assert_non_null(strstr(err.msg, "delete file"));
	files[0].content = ST_CONTENT_DATA;
	f.t.format_version = 1;
	assert_int_equal(st_snapshot_manifest_write(&f.t, 9, files, 1, &m, &err), -1);
	assert_non_null(strstr(err.msg, "format version 1"));
	f.t.format_version = 2;
	assert_null(m);
	assert_int_equal(st_snapshot_manifest_write(&f.t, 9, files, 1, &m, &err), 0);
	assert_int_equal(st_snapshot_manifest_write(&f.t, 10, files, 1, &m2, &err), 0);

	o.table = &f.t;
	o.snapshot_id = 9;
	o.sequence_number = 1;
	o.attempt = 1;
	o.manifest = m;
	o.attempt = 0;
	assert_int_equal(st_snapshot_build(&o, &snap, &err), -1);
	assert_non_null(strstr(err.msg, "attempt 0"));
	o.attempt = 1;
	o.manifest = m2;
	assert_int_equal(st_snapshot_build(&o, &snap, &err), -1);
	assert_non_null(strstr(err.msg, "belongs to snapshot 10"));
	o.manifest = m;
	o.sequence_number = 0;
	assert_int_equal(st_snapshot_build(&o, &snap, &err), -1);
	o.sequence_number = 1;
	extra = json_pack("{s:s}", "total-records", "5");
	o.extra_summary = extra;
	assert_int_equal(st_snapshot_build(&o, &snap, &err), -1);
	assert_non_null(strstr(err.msg, "total-records is computed"));
	json_decref(extra);
	extra = json_pack("{s:i}", "floe.n", 5);
	o.extra_summary = extra;
	assert_int_equal(st_snapshot_build(&o, &snap, &err), -1);
	assert_non_null(strstr(err.msg, "floe.n is not a string"));
	json_decref(extra);
	o.extra_summary = NULL;
	o.parent = &p;
	p.snapshot_id = 3;
	assert_int_equal(st_snapshot_build(&o, &snap, &err), -1);
	assert_non_null(strstr(err.msg, "has no manifest list"));
	snprintf(missing, sizeof(missing), "%snope.avro", f.meta_uri);
	p.manifest_list = missing;
	assert_int_equal(st_snapshot_build(&o, &snap, &err), -1);
	assert_int_equal(err.kind, FL_ERR_NOT_FOUND);
	assert_non_null(strstr(err.msg, "nope.avro"));
	/* a parent list that is not Avro */
	{
		struct fl_err e2 = {0};

		assert_int_equal(st_io_write_new(tio(), missing, "Obj\x01junk", 8, &e2), 0);
	}
	assert_int_equal(st_snapshot_build(&o, &snap, &err), -1);
	assert_int_equal(err.kind, FL_ERR_BAD_REQUEST);
	assert_non_null(strstr(err.msg, "nope.avro"));
	assert_null(snap);
	/* no new files: a snapshot that only carries the parent's manifests */
	o.parent = NULL;
	o.manifest = NULL;
	assert_int_equal(st_snapshot_build(&o, &snap, &err), 0);
	assert_null(json_object_get(json_object_get(snap, "summary"), "added-data-files"));
	assert_string_equal(sget(json_object_get(snap, "summary"), "total-data-files"), "0");
	json_decref(snap);
	st_snapshot_manifest_free(m);
	st_snapshot_manifest_free(m2);
	fixture_done(&f);
}

/* Manifest, then a build on a parent with two manifests, with each
 * allocation (storage's and jansson's) failed in turn. */
static void test_alloc_failures(void **state)
{
	struct fixture f;
	json_t *s0, *s1, *extra;
	struct st_data_file files[3];
	char paths[3][96];
	long n;
	bool done = false;

	(void)state;
	fixture_init(&f, 3);
	s0 = append(&f, 1, NULL, 1, 2, 0, NULL);
	s1 = append(&f, 2, s0, 2, 2, 20, NULL);
	make_files(files, paths, 3, 3, NULL, 0);
	extra = json_pack("{s:s}", "floe.batch-id", "x");
	for (n = 1; !done && n < 100000; n++) {
		struct failalloc fa;
		struct st_snapshot_table t = f.t;
		struct st_snapshot_manifest *m = NULL;
		struct st_snapshot_parent p = {0};
		struct st_snapshot_opts o = {0};
		struct fl_err err = {0};
		json_t *snap = NULL;
		int rc;

		failalloc_init(&fa, n);
		jfail_install(&fa);
		t.alloc = &fa.alloc;
		rc = st_snapshot_manifest_write(&t, 3, files, 3, &m, &err);
		if (rc == 0) {
			p.snapshot_id = 2;
			p.manifest_list = json_string_value(json_object_get(s1, "manifest-list"));
			p.summary = NULL; /* recomputed: reads the parent's manifests too */
			o.table = &t;
			o.parent = &p;
			o.snapshot_id = 3;
			o.sequence_number = 3;
			o.first_row_id = 100;
			o.attempt = 1;
			o.manifest = m;
			o.extra_summary = extra;
			rc = st_snapshot_build(&o, &snap, &err);
		}
		if (rc == 0)
			assert_string_equal(sget(json_object_get(snap, "summary"), "total-records"),
			                    "155"); /* 10+11 + 20+21 + 30+31+32 */
		json_decref(snap);
		st_snapshot_manifest_free(m);
		jfail_remove();
		if (!fa.failed) {
			assert_int_equal(rc, 0);
			done = true;
		} else if (rc != -1 && !jfail_hit) {
			fail_msg("failing allocation %ld went unreported", n);
		}
		if (fa.live != 0 || jfail_live != 0)
			fail_msg("failing allocation %ld leaks %ld + %ld blocks", n, fa.live,
			         jfail_live);
	}
	assert_true(done);
	assert_true(n > 100);
	json_decref(extra);
	json_decref(s0);
	json_decref(s1);
	fixture_done(&f);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	        cmocka_unit_test(test_three_appends),   cmocka_unit_test(test_retry),
	        cmocka_unit_test(test_recompute),       cmocka_unit_test(test_v3_row_ids),
	        cmocka_unit_test(test_partitioned),     cmocka_unit_test(test_refusals),
	        cmocka_unit_test(test_replace),         cmocka_unit_test(test_alloc_failures),
	        cmocka_unit_test(test_rewrite_in_part), cmocka_unit_test(test_merge),
	        cmocka_unit_test(test_partition_bytes), cmocka_unit_test(test_more_manifests),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
