/* test_manifest.c - manifest and manifest-list writers
 * (storage/iceberg/manifest.c, manifest_list.c): the summary a manifest
 * hands to its list, refusals, v3 row-id assignment, and the whole write
 * path (Parquet -> manifest -> list) with every allocation failed in turn.
 * The Avro content itself is decoded by python3-avro and avsc in
 * tests/integration/write-path/. */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

#include "failalloc.h"
#include "iceberg/manifest.h"
#include "iceberg/manifest_list.h"
#include "parquet/parquet.h"

static const struct st_partition_field spec[] = {
        {1000, 1, "id_bucket", "bucket[4]", {ST_TYPE_INT, 0, 0, 0}},
        {1001, 2, "d", "identity", {ST_TYPE_DOUBLE, 0, 0, 0}},
        {1002, 3, "s", "identity", {ST_TYPE_STRING, 0, 0, 0}},
};

static const char table_schema[] = "{\"type\":\"struct\",\"schema-id\":0,\"fields\":[]}";

static void opts_init(struct st_manifest_opts *o, struct st_buf *out, const struct st_alloc *a)
{
	memset(o, 0, sizeof(*o));
	o->format_version = 2;
	o->content = ST_MANIFEST_DATA;
	o->schema_json = table_schema;
	o->schema_id = 0;
	o->spec_id = 1;
	o->spec = spec;
	o->n_spec = 3;
	o->snapshot_id = 99;
	o->codec = ST_AVRO_CODEC_DEFLATE;
	o->alloc = a;
	st_sink_to_buf(&o->sink, out);
}

static void part(struct st_value p[3], int bucket, double d, const char *s)
{
	memset(p, 0, 3 * sizeof(*p));
	p[0].null = bucket < 0;
	p[0].v.i = bucket;
	p[1].v.d = d;
	p[2].null = s == NULL;
	if (s) {
		p[2].v.bin.p = (const uint8_t *)s;
		p[2].v.bin.len = strlen(s);
	}
}

static void test_summary(void **state)
{
	struct st_manifest_opts o;
	struct st_manifest_writer *w;
	struct st_manifest_file mf;
	struct fl_err err = {0};
	struct st_buf out;
	struct st_value p[4][3];
	struct st_data_file f[4];
	static const uint8_t lo_d[] = {0, 0, 0, 0, 0, 0, 0xf8, 0xbf},
	                     hi_d[] = {0, 0, 0,    0,
	                               0, 0, 0x59, 0x40}; /* 100.0, from the deleted entry */

	(void)state;
	st_buf_init(&out, NULL);
	opts_init(&o, &out, NULL);
	assert_int_equal(st_manifest_writer_open(&o, &w, &err), 0);
	part(p[0], 2, 4.5, "m");
	part(p[1], -1, NAN, "b");
	part(p[2], 0, -1.5, "x");
	part(p[3], 3, 100.0, NULL); /* deleted: still in the partition summary */
	for (int i = 0; i < 4; i++) {
		struct st_manifest_entry e = {0};

		memset(&f[i], 0, sizeof(f[i]));
		f[i].file_path = "file:///t/data/f.parquet";
		f[i].file_format = "PARQUET";
		f[i].partition = p[i];
		f[i].record_count = 10 * (i + 1);
		f[i].file_size_in_bytes = 1000;
		e.file = &f[i];
		e.status = i < 2 ? ST_ENTRY_ADDED : i == 2 ? ST_ENTRY_EXISTING : ST_ENTRY_DELETED;
		if (i >= 2) {
			e.has_snapshot_id = true;
			e.snapshot_id = 5;
			e.has_sequence_number = true;
			e.sequence_number = i == 2 ? 6 : 2; /* the deleted one does not count */
			e.has_file_sequence_number = true;
			e.file_sequence_number = e.sequence_number;
		}
		assert_int_equal(st_manifest_writer_add(w, &e, &err), 0);
	}
	assert_int_equal(st_manifest_writer_close(w, &mf, &err), 0);
	assert_int_equal(mf.manifest_length, (int64_t)out.len);
	assert_memory_equal(out.data, "Obj\x01", 4);
	assert_int_equal(mf.partition_spec_id, 1);
	assert_int_equal(mf.content, ST_MANIFEST_DATA);
	assert_int_equal(mf.sequence_number, ST_SEQ_UNASSIGNED);
	assert_int_equal(mf.min_sequence_number, 6);
	assert_int_equal(mf.added_snapshot_id, 99);
	assert_int_equal(mf.added_files_count, 2);
	assert_int_equal(mf.existing_files_count, 1);
	assert_int_equal(mf.deleted_files_count, 1);
	assert_int_equal(mf.added_rows_count, 30);
	assert_int_equal(mf.existing_rows_count, 30);
	assert_int_equal(mf.deleted_rows_count, 40);
	assert_int_equal(mf.n_partitions, 3);
	/* bucket: a null seen; 0..3 */
	assert_true(mf.partitions[0].contains_null);
	assert_false(mf.partitions[0].has_contains_nan);
	assert_int_equal(mf.partitions[0].lower_len, 4);
	assert_int_equal(mf.partitions[0].lower[0], 0);
	assert_int_equal(mf.partitions[0].upper[0], 3);
	/* double: NaN seen but never a bound */
	assert_false(mf.partitions[1].contains_null);
	assert_true(mf.partitions[1].has_contains_nan);
	assert_true(mf.partitions[1].contains_nan);
	assert_memory_equal(mf.partitions[1].lower, lo_d, 8);
	assert_memory_equal(mf.partitions[1].upper, hi_d, 8);
	/* string */
	assert_true(mf.partitions[2].contains_null);
	assert_int_equal(mf.partitions[2].lower_len, 1);
	assert_int_equal(mf.partitions[2].lower[0], 'b');
	assert_int_equal(mf.partitions[2].upper[0], 'x');
	st_manifest_file_release(&mf, NULL);
	st_buf_free(&out);
}

static void test_refusals(void **state)
{
	struct st_manifest_opts o;
	struct st_manifest_writer *w = NULL;
	struct st_manifest_file mf;
	struct fl_err err = {0};
	struct st_buf out;
	struct st_value p[3];
	struct st_data_file f = {0};
	struct st_manifest_entry e = {0};

	(void)state;
	st_buf_init(&out, NULL);
	opts_init(&o, &out, NULL);
	o.format_version = 1;
	assert_int_equal(st_manifest_writer_open(&o, &w, &err), -1);
	assert_int_equal(err.kind, FL_ERR_BAD_REQUEST);
	assert_null(w);
	o.format_version = 3;
	assert_int_equal(st_manifest_writer_open(&o, &w, &err), 0);
	part(p, 1, 1.0, "a");
	f.file_path = "file:///t/data/x.parquet";
	f.file_format = "PARQUET";
	f.content = ST_CONTENT_POSITION_DELETES;
	f.partition = p;
	e.file = &f;
	e.status = ST_ENTRY_ADDED;
	assert_int_equal(st_manifest_writer_add(w, &e, &err), -1);
	assert_int_equal(err.kind, FL_ERR_BAD_REQUEST);
	assert_non_null(strstr(err.msg, "x.parquet"));
	f.content = ST_CONTENT_DATA;
	f.partition = NULL;
	assert_int_equal(st_manifest_writer_add(w, &e, &err), -1);
	assert_non_null(strstr(err.msg, "partition"));
	f.partition = p;
	p[2].v.bin.p = (const uint8_t *)"\xff";
	p[2].v.bin.len = 1;
	assert_int_equal(st_manifest_writer_add(w, &e, &err), -1);
	assert_non_null(strstr(err.msg, "UTF-8"));
	part(p, 1, 1.0, "a");
	f.record_count = -1;
	assert_int_equal(st_manifest_writer_add(w, &e, &err), -1);
	f.record_count = 3;
	assert_int_equal(st_manifest_writer_add(w, &e, &err), 0);
	assert_int_equal(st_manifest_writer_close(w, &mf, &err), 0);
	assert_int_equal(mf.added_files_count, 1);
	assert_int_equal(mf.added_rows_count, 3);
	st_manifest_file_release(&mf, NULL);
	st_buf_free(&out);
}

static bool contains(const struct st_buf *b, const char *s)
{
	return memmem(b->data, b->len, s, strlen(s)) != NULL;
}

static void test_avro_names(void **state)
{
	static const struct st_partition_field odd[] = {
	        {1000, 1, "1st field-\xc3\xa9", "identity", {ST_TYPE_INT, 0, 0, 0}},
	        {1001, 2, "ok_name2", "identity", {ST_TYPE_INT, 0, 0, 0}},
	        {1002, 3, "ns", "identity", {ST_TYPE_TIMESTAMPTZ_NS, 0, 0, 0}},
	};
	struct st_manifest_opts o;
	struct st_manifest_writer *w;
	struct st_manifest_file mf;
	struct fl_err err = {0};
	struct st_buf out;

	(void)state;
	st_buf_init(&out, NULL);
	opts_init(&o, &out, NULL);
	o.spec = odd;
	o.n_spec = 3;
	o.codec = ST_AVRO_CODEC_NULL;
	assert_int_equal(st_manifest_writer_open(&o, &w, &err), 0);
	assert_int_equal(st_manifest_writer_close(w, &mf, &err), 0);
	/* the Avro schema gets valid names; the partition-spec keeps the real one */
	assert_true(
	        contains(&out, "{\"name\":\"_1st_x20field_x2D_xE9\",\"type\":[\"null\",\"int\"]"));
	assert_true(contains(&out, "{\"name\":\"ok_name2\",\"type\""));
	assert_true(contains(&out, "\"type\":[\"null\",{\"type\":\"long\",\"logicalType\":"
	                           "\"timestamp-nanos\",\"adjust-to-utc\":true}]"));
	assert_true(contains(&out, "[{\"name\":\"1st field-\xc3\xa9\",\"transform\":\"identity\","
	                           "\"source-id\":1,\"field-id\":1000}"));
	st_manifest_file_release(&mf, NULL);
	st_buf_free(&out);
}

static void test_list_row_ids(void **state)
{
	struct st_manifest_list_opts o = {0};
	struct st_manifest_list_writer *w;
	struct fl_err err = {0};
	struct st_buf out;
	struct st_manifest_file mf[4];
	int64_t next = 0;
	uint64_t len = 0;

	(void)state;
	st_buf_init(&out, NULL);
	o.format_version = 3;
	o.snapshot_id = 7;
	o.sequence_number = 4;
	o.first_row_id = 1000;
	o.codec = ST_AVRO_CODEC_NULL;
	st_sink_to_buf(&o.sink, &out);
	assert_int_equal(st_manifest_list_writer_open(&o, &w, &err), 0);
	memset(mf, 0, sizeof(mf));
	for (int i = 0; i < 4; i++) {
		mf[i].manifest_path = "file:///t/metadata/m.avro";
		mf[i].sequence_number = ST_SEQ_UNASSIGNED;
		mf[i].min_sequence_number = ST_SEQ_UNASSIGNED;
		mf[i].added_rows_count = 10;
		mf[i].existing_rows_count = 5;
	}
	mf[1].has_first_row_id = true; /* carried over from an earlier snapshot */
	mf[1].first_row_id = 17;
	mf[2].content = ST_MANIFEST_DELETES; /* delete manifests get no row ids */
	for (int i = 0; i < 4; i++)
		assert_int_equal(st_manifest_list_writer_add(w, &mf[i], &err), 0);
	mf[0].manifest_path = NULL;
	assert_int_equal(st_manifest_list_writer_add(w, &mf[0], &err), -1);
	assert_int_equal(err.kind, FL_ERR_BAD_REQUEST);
	assert_int_equal(st_manifest_list_writer_close(w, &len, &next, &err), 0);
	/* manifests 0 and 3 were assigned 1000 and 1015 */
	assert_int_equal(next, 1030);
	assert_int_equal(len, out.len);
	st_buf_free(&out);

	o.format_version = 4;
	assert_int_equal(st_manifest_list_writer_open(&o, &w, &err), -1);
	assert_int_equal(err.kind, FL_ERR_BAD_REQUEST);
	assert_non_null(st_manifest_list_schema(2));
	assert_null(st_manifest_list_schema(1));
}

/* Parquet file -> manifest entry -> manifest list, all from one allocator. */
static int write_path(const struct st_alloc *a, enum st_avro_codec codec, struct fl_err *err)
{
	static const struct st_parquet_column cols[] = {
	        {"id", 1, {ST_TYPE_INT, 0, 0, 0}, true, ST_METRICS_DEFAULT, 0},
	        {"d", 2, {ST_TYPE_DOUBLE, 0, 0, 0}, false, ST_METRICS_DEFAULT, 0},
	        {"s", 3, {ST_TYPE_STRING, 0, 0, 0}, false, ST_METRICS_DEFAULT, 0},
	};
	struct st_parquet_opts po = {0};
	struct st_parquet_writer *pw;
	struct st_parquet_metrics m = {0};
	struct st_manifest_opts mo;
	struct st_manifest_writer *mw = NULL;
	struct st_manifest_file mf = {0};
	struct st_manifest_list_opts lo = {0};
	struct st_manifest_list_writer *lw = NULL;
	struct st_buf pq, man, list;
	struct st_value p[3];
	struct st_data_file f = {0};
	struct st_manifest_entry e = {0};
	int rc = -1;

	st_buf_init(&pq, a);
	st_buf_init(&man, a);
	st_buf_init(&list, a);
	po.columns = cols;
	po.n_columns = 3;
	po.iceberg_schema_json = table_schema;
	po.alloc = a;
	st_sink_to_buf(&po.sink, &pq);
	if (st_parquet_writer_open(&po, &pw, err) != 0)
		goto out;
	for (int r = 0; r < 50; r++) {
		struct st_value row[3] = {{0}};
		char s[40];

		row[0].v.i = r;
		row[1].v.d = r / 3.0;
		snprintf(s, sizeof(s), "row-%02d-abcdefghijklmnop", r);
		row[2].v.bin.p = (const uint8_t *)s;
		row[2].v.bin.len = strlen(s);
		row[2].null = r % 7 == 0;
		if (st_parquet_writer_write_row(pw, row, err) != 0) {
			st_parquet_writer_free(pw);
			goto out;
		}
	}
	if (st_parquet_writer_close(pw, &m, err) != 0)
		goto out;

	opts_init(&mo, &man, a);
	mo.codec = codec;
	if (st_manifest_writer_open(&mo, &mw, err) != 0)
		goto out;
	part(p, 1, 2.0, "s");
	st_parquet_metrics_to_data_file(&m, &f);
	f.file_path = "file:///t/data/0.parquet";
	f.partition = p;
	e.file = &f;
	e.status = ST_ENTRY_ADDED;
	if (st_manifest_writer_add(mw, &e, err) != 0)
		goto out;
	rc = st_manifest_writer_close(mw, &mf, err);
	mw = NULL;
	if (rc != 0)
		goto out;
	rc = -1;
	mf.manifest_path = "file:///t/metadata/m0.avro";

	lo.format_version = 3;
	lo.snapshot_id = 99;
	lo.sequence_number = 1;
	lo.codec = codec;
	lo.alloc = a;
	st_sink_to_buf(&lo.sink, &list);
	if (st_manifest_list_writer_open(&lo, &lw, err) != 0)
		goto out;
	if (st_manifest_list_writer_add(lw, &mf, err) != 0)
		goto out;
	rc = st_manifest_list_writer_close(lw, NULL, NULL, err);
	lw = NULL;
out:
	st_manifest_writer_free(mw);
	st_manifest_list_writer_free(lw);
	st_manifest_file_release(&mf, a);
	st_parquet_metrics_free(&m);
	st_buf_free(&pq);
	st_buf_free(&man);
	st_buf_free(&list);
	return rc;
}

static void test_write_path_alloc_failures(void **state)
{
	(void)state;
	for (int codec = 0; codec < 2; codec++) {
		long k;

		for (k = 1;; k++) {
			struct failalloc fa;
			struct fl_err err = {0};
			int rc;

			failalloc_init(&fa, k);
			rc = write_path(&fa.alloc, (enum st_avro_codec)codec, &err);
			assert_int_equal(fa.live, 0);
			if (!fa.failed) {
				assert_int_equal(rc, 0);
				break;
			}
			assert_int_equal(rc, -1);
			assert_int_equal(err.kind, FL_ERR_NOMEM);
		}
		print_message("avro codec %d: %ld allocations failed in turn\n", codec, k - 1);
		assert_true(k > 50);
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	        cmocka_unit_test(test_summary),
	        cmocka_unit_test(test_refusals),
	        cmocka_unit_test(test_avro_names),
	        cmocka_unit_test(test_list_row_ids),
	        cmocka_unit_test(test_write_path_alloc_failures),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
