/* fuzz_ndjson.c - the NDJSON reader (storage/feed/ndjson.c) on arbitrary
 * bytes.
 *
 * The first byte picks max_line_bytes and max_depth.  Invariants: each
 * record has an object or an error, never both; an object is a JSON object
 * no deeper than the limit; raw bytes are a line of the input (within the
 * limit) and line numbers grow strictly; reading one byte at a time gives
 * the same records. */
#include <string.h>

#include "base/buf.h"
#include "fuzz.h"
#include "json.h"
#include "ndjson.h"

struct trickle {
	struct st_source source;
	const uint8_t *p;
	size_t len, pos, step;
};

static int trickle_read(void *ctx, void *p, size_t cap, size_t *got, struct fl_err *err)
{
	struct trickle *t = ctx;
	size_t n = t->len - t->pos;

	(void)err;
	if (n > t->step)
		n = t->step;
	if (n > cap)
		n = cap;
	if (n > 0)
		memcpy(p, t->p + t->pos, n);
	t->pos += n;
	*got = n;
	return 0;
}

static int depth_of(const json_t *v)
{
	int max = 0;
	const char *k;
	json_t *m;

	if (json_is_object(v)) {
		json_object_foreach((json_t *)v, k, m)
		{
			int d = depth_of(m);

			if (d > max)
				max = d;
		}
		return max + 1;
	}
	if (json_is_array(v)) {
		for (size_t i = 0; i < json_array_size(v); i++) {
			int d = depth_of(json_array_get(v, i));

			if (d > max)
				max = d;
		}
		return max + 1;
	}
	return 0;
}

static void read_all(const uint8_t *p, size_t n, size_t step, size_t max_line, int max_depth,
                     struct st_buf *log)
{
	struct trickle t = {{trickle_read, &t}, p, n, 0, step};
	struct st_ndjson_opts o = {0};
	struct st_ndjson_reader *r;
	const struct st_ndjson_record *rec;
	struct fl_err err = {0};
	uint64_t last = 0, number = 0;
	size_t lines = 1;

	for (size_t i = 0; i < n; i++)
		lines += p[i] == '\n';
	o.source = &t.source;
	o.max_line_bytes = max_line;
	o.max_depth = max_depth;
	FUZZ_CHECK(st_ndjson_reader_open(&o, &r, &err) == 0);
	for (;;) {
		FUZZ_CHECK(st_ndjson_reader_next(r, &rec, &err) == 0);
		if (rec == NULL)
			break;
		FUZZ_CHECK(rec->number == ++number);
		FUZZ_CHECK(rec->line > last && rec->line <= lines);
		last = rec->line;
		FUZZ_CHECK(rec->raw_len > 0 && rec->raw_len <= max_line);
		FUZZ_CHECK(rec->raw_truncated || memmem(p, n, rec->raw, rec->raw_len) != NULL);
		FUZZ_CHECK((rec->obj == NULL) != (rec->error == NULL));
		FUZZ_CHECK(st_buf_append(log, &rec->line, sizeof(rec->line)) == 0);
		if (rec->obj != NULL) {
			char *d;

			FUZZ_CHECK(json_is_object(rec->obj));
			FUZZ_CHECK(depth_of(rec->obj) <= max_depth);
			d = json_dumps(rec->obj, JSON_COMPACT | JSON_ENCODE_ANY);
			FUZZ_CHECK(d != NULL);
			FUZZ_CHECK(st_buf_append(log, d, strlen(d)) == 0);
			free(d);
		} else {
			FUZZ_CHECK(strncmp(rec->error, "line ", 5) == 0);
			FUZZ_CHECK(st_buf_append(log, rec->error, strlen(rec->error)) == 0);
		}
		FUZZ_CHECK(st_buf_put_u8(log, 0) == 0);
	}
	st_ndjson_reader_free(r);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct st_buf a, b;
	size_t max_line;
	int max_depth;

	if (size < 1)
		return 0;
	max_line = (data[0] & 1) ? 16 : 65536;
	max_depth = 1 + ((data[0] >> 1) & 7);
	st_buf_init(&a, NULL);
	st_buf_init(&b, NULL);
	read_all(data + 1, size - 1, SIZE_MAX, max_line, max_depth, &a);
	read_all(data + 1, size - 1, 1 + (data[0] >> 4), max_line, max_depth, &b);
	FUZZ_CHECK(a.len == b.len && (a.len == 0 || memcmp(a.data, b.data, a.len) == 0));
	st_buf_free(&a);
	st_buf_free(&b);
	return 0;
}
