/* fuzz_avro_reader.c - libFuzzer target for the Avro container reader
 * (storage/avro/reader.c): any bytes, as a whole file.  Invariants: the
 * reader never crashes, leaks or reads outside the input; a failure always
 * names its kind; every decoded datum serializes as JSON; the header
 * entries it reports are inside the input. */
#include <jansson.h>
#include <string.h>

#include "avro/reader.h"
#include "fuzz.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct st_avro_reader_opts o = {0};
	struct st_avro_reader *r = NULL;
	struct fl_err err = {0};
	struct st_buf b;
	json_t *v;

	/* The input as base64 text, too. */
	st_buf_init(&b, NULL);
	if (st_avro_base64_decode((const char *)data, size, &b, &err) == 0)
		FUZZ_CHECK(b.len <= size / 4 * 3);
	st_buf_free(&b);

	o.max_values = 100000;
	o.max_block_bytes = 1 << 20;
	if (st_avro_reader_open(data, size, &o, &r, &err) != 0) {
		FUZZ_CHECK(err.kind != FL_ERR_NONE && err.msg[0] != '\0');
		return 0;
	}
	for (size_t i = 0; i < st_avro_reader_meta_count(r); i++) {
		const char *key;
		const uint8_t *val;
		size_t len;

		st_avro_reader_meta_at(r, i, &key, &val, &len);
		FUZZ_CHECK(val >= data && val + len <= data + size);
		FUZZ_CHECK(st_avro_reader_meta_get(r, key, &len) != NULL);
	}
	FUZZ_CHECK(st_avro_reader_schema(r) != NULL);
	for (int n = 0; n < 100000; n++) {
		char *s;

		if (st_avro_reader_next(r, &v, &err) != 0) {
			FUZZ_CHECK(err.kind != FL_ERR_NONE);
			break;
		}
		if (v == NULL)
			break;
		s = json_dumps(v, JSON_ENCODE_ANY | JSON_COMPACT);
		FUZZ_CHECK(s != NULL);
		free(s);
		json_decref(v);
	}
	st_avro_reader_free(r);
	return 0;
}
