/* test_entry.c - manifest entries decoded by the Avro reader and turned back
 * into the writer's structs (storage/iceberg/entry.c): a v3 data entry with
 * every field (metrics, bounds, key metadata, split offsets, sort order,
 * first_row_id) and a deletion-vector entry written again as EXISTING decode
 * to the same data_file; null snapshot ids and sequence numbers are
 * inherited from the manifest list record; a map in Avro's own form is read
 * too; malformed values are refused naming the field; every allocation
 * failing in turn is FL_ERR_NOMEM and leaks nothing. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "avro/reader.h"
#include "failalloc.h"
#include "iceberg/entry.h"
#include "iceberg/manifest.h"

static const char schema[] = "{\"type\":\"struct\",\"schema-id\":0,\"fields\":[]}";

/* Writes the entries with the given content and decodes them back. */
static json_t *round_trip(enum st_manifest_content content, const struct st_manifest_entry *e,
                          size_t n)
{
	struct st_manifest_opts o = {0};
	struct st_manifest_writer *w;
	struct st_manifest_file mf;
	struct st_avro_reader *r;
	struct fl_err err = {0};
	struct st_buf out;
	json_t *all = json_array(), *rec;

	st_buf_init(&out, NULL);
	o.format_version = 3;
	o.content = content;
	o.schema_json = schema;
	o.spec_id = 0;
	o.snapshot_id = 77;
	o.codec = ST_AVRO_CODEC_NULL;
	st_sink_to_buf(&o.sink, &out);
	assert_int_equal(st_manifest_writer_open(&o, &w, &err), 0);
	for (size_t i = 0; i < n; i++) {
		if (st_manifest_writer_add(w, &e[i], &err) != 0)
			fail_msg("%s", err.msg);
	}
	assert_int_equal(st_manifest_writer_close(w, &mf, &err), 0);
	st_manifest_file_release(&mf, NULL);
	assert_int_equal(st_avro_reader_open(out.data, out.len, NULL, &r, &err), 0);
	for (;;) {
		assert_int_equal(st_avro_reader_next(r, &rec, &err), 0);
		if (rec == NULL)
			break;
		json_array_append_new(all, rec);
	}
	st_avro_reader_free(r);
	st_buf_free(&out);
	return all;
}

static void test_data_entry(void **state)
{
	static const uint8_t lo[] = {1, 0, 0, 0}, hi[] = {9, 0, 0, 0}, key[] = {0xde, 0xad};
	static const int64_t splits[] = {4, 1000};
	struct st_column_metrics cols[2] = {
	        {1, 100, 10, 0, -1, true, true, (uint8_t *)lo, 4, (uint8_t *)hi, 4},
	        {2, 50, 10, 3, 1, false, false, NULL, 0, NULL, 0},
	};
	struct st_data_file f = {0};
	struct st_manifest_entry e = {0};
	struct st_entry_copy c;
	struct fl_err err = {0};
	json_t *first, *second, *list_rec;

	(void)state;
	f.content = ST_CONTENT_DATA;
	f.file_path = "file:///t/data/a.parquet";
	f.file_format = "PARQUET";
	f.record_count = 10;
	f.file_size_in_bytes = 1234;
	f.columns = cols;
	f.n_columns = 2;
	f.split_offsets = splits;
	f.n_split_offsets = 2;
	f.has_sort_order_id = true;
	f.sort_order_id = 1;
	f.key_metadata = key;
	f.key_metadata_len = 2;
	f.has_first_row_id = true;
	f.first_row_id = 500;
	e.status = ST_ENTRY_ADDED; /* snapshot id and sequence numbers inherited */
	e.file = &f;
	first = round_trip(ST_MANIFEST_DATA, &e, 1);
	list_rec = json_pack("{s:I, s:I}", "added_snapshot_id", (json_int_t)77, "sequence_number",
	                     (json_int_t)5);
	if (st_entry_copy_from_json(json_array_get(first, 0), list_rec, NULL, &c, &err) != 0)
		fail_msg("%s", err.msg);
	assert_true(c.entry.has_snapshot_id && c.entry.snapshot_id == 77);
	assert_true(c.entry.sequence_number == 5 && c.entry.file_sequence_number == 5);
	c.entry.status = ST_ENTRY_EXISTING;
	second = round_trip(ST_MANIFEST_DATA, &c.entry, 1);
	assert_true(json_equal(json_object_get(json_array_get(first, 0), "data_file"),
	                       json_object_get(json_array_get(second, 0), "data_file")));
	assert_int_equal(json_integer_value(json_object_get(json_array_get(second, 0), "status")),
	                 0);
	assert_int_equal(
	        json_integer_value(json_object_get(json_array_get(second, 0), "sequence_number")),
	        5);
	st_entry_copy_free(&c);

	/* Every allocation failing in turn: FL_ERR_NOMEM, nothing left behind. */
	for (long n = 1;; n++) {
		struct failalloc fa;
		int rc;

		failalloc_init(&fa, n);
		rc = st_entry_copy_from_json(json_array_get(first, 0), list_rec, &fa.alloc, &c,
		                             &err);
		if (rc == 0)
			st_entry_copy_free(&c);
		else
			assert_int_equal(err.kind, FL_ERR_NOMEM);
		assert_int_equal(fa.live, 0);
		if (!fa.failed)
			break;
		assert_int_equal(rc, -1);
	}

	/* Nothing to inherit from: refused. */
	json_object_del(list_rec, "sequence_number");
	assert_int_equal(
	        st_entry_copy_from_json(json_array_get(first, 0), list_rec, NULL, &c, &err), -1);
	assert_non_null(strstr(err.msg, "sequence_number"));
	/* A bound that is not base64; a map in Avro's own form. */
	{
		json_t *bad = json_deep_copy(json_array_get(first, 0));
		json_t *df = json_object_get(bad, "data_file");

		json_object_set_new(list_rec, "sequence_number", json_integer(5));
		json_object_set_new(df, "lower_bounds",
		                    json_pack("[{s:i, s:s}]", "key", 1, "value", "!!"));
		assert_int_equal(st_entry_copy_from_json(bad, list_rec, NULL, &c, &err), -1);
		assert_non_null(strstr(err.msg, "lower_bounds"));
		json_object_set_new(df, "lower_bounds", json_null());
		json_object_set_new(df, "value_counts", json_pack("{s:i}", "7", 42));
		assert_int_equal(st_entry_copy_from_json(bad, list_rec, NULL, &c, &err), 0);
		assert_int_equal(c.file.n_columns, 3);
		assert_true(c.cols[2].field_id == 7 && c.cols[2].value_count == 42);
		st_entry_copy_free(&c);
		json_decref(bad);
	}
	json_decref(list_rec);
	json_decref(first);
	json_decref(second);
}

static void test_dv_entry(void **state)
{
	struct st_data_file f = {0};
	struct st_manifest_entry e = {0};
	struct st_entry_copy c;
	struct fl_err err = {0};
	json_t *first, *second;

	(void)state;
	f.content = ST_CONTENT_POSITION_DELETES;
	f.file_path = "file:///t/data/dv.puffin";
	f.file_format = "PUFFIN";
	f.record_count = 3;
	f.file_size_in_bytes = 300;
	f.referenced_data_file = "file:///t/data/a.parquet";
	f.has_content_offset = true;
	f.content_offset = 4;
	f.content_size_in_bytes = 40;
	e.status = ST_ENTRY_ADDED;
	e.has_snapshot_id = e.has_sequence_number = e.has_file_sequence_number = true;
	e.snapshot_id = 3;
	e.sequence_number = 4;
	e.file_sequence_number = 4;
	e.file = &f;
	first = round_trip(ST_MANIFEST_DELETES, &e, 1);
	assert_int_equal(st_entry_copy_from_json(json_array_get(first, 0), NULL, NULL, &c, &err),
	                 0);
	c.entry.status = ST_ENTRY_DELETED;
	second = round_trip(ST_MANIFEST_DELETES, &c.entry, 1);
	assert_true(json_equal(json_object_get(json_array_get(first, 0), "data_file"),
	                       json_object_get(json_array_get(second, 0), "data_file")));
	st_entry_copy_free(&c);
	json_decref(first);
	json_decref(second);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	        cmocka_unit_test(test_data_entry),
	        cmocka_unit_test(test_dv_entry),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
