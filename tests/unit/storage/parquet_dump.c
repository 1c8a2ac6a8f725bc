/* parquet_dump.c - prints a Parquet file as NDJSON through the reader in
 * storage/parquet/reader.c, for the node tests that compare it with what
 * the writer meant (write_samples' NAME.rows.json) and with DuckDB's own
 * reading of files DuckDB wrote.
 *
 * Usage: parquet_dump [--batch N] [--mapping FILE] FILE.parquet
 *        parquet_dump --check [--batch N] [--mapping FILE] FILE...
 * (each file is read in ranges through storage/io, st_parquet_source_io)
 *
 * Line 1: {"columns":[{"path","field_id","type","optional"}...],"rows":N}
 * for the projected (readable) columns; then one JSON array per row in the
 * forms write_samples uses: boolean, int, date and time as JSON numbers;
 * long and the timestamps as decimal strings; float and double as numbers
 * (or "NaN", "Infinity", "-Infinity"); decimals as exact strings with the
 * scale's digits; strings as strings; uuids 8-4-4-4-12 in lower case;
 * fixed and binary as upper-case hex.  Leaves that cannot be read are
 * listed on stderr.  Exit 1 with "parquet_dump: <error>" on failure.
 *
 * --check reads every file whole, batch by batch, the same way, but formats
 * no value, and prints one line per file instead: {"file"} when it read, {"file","error"} when not;
 * exit 0.  One process for many files: the corrupt-file test feeds it 200. */
#include <inttypes.h>
#include <jansson.h>
#include <limits.h>
#include <math.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "decimal_text.h"
#include "iceberg/name_mapping.h"
#include "parquet/reader.h"

static json_t *dec_json(const uint8_t dec[16], int scale)
{
	char out[72];

	decimal_text(dec, scale, out);
	return json_string(out);
}

static json_t *real_json(double d)
{
	if (isnan(d))
		return json_string("NaN");
	if (isinf(d))
		return json_string(d > 0 ? "Infinity" : "-Infinity");
	return json_real(d);
}

static json_t *hex_json(const uint8_t *p, size_t n, bool uuid)
{
	static const char up[] = "0123456789ABCDEF", low[] = "0123456789abcdef";
	char *s = malloc(3 * n + 8);
	size_t k = 0;
	json_t *j;

	for (size_t i = 0; i < n; i++) {
		if (uuid && (i == 4 || i == 6 || i == 8 || i == 10))
			s[k++] = '-';
		s[k++] = (uuid ? low : up)[p[i] >> 4];
		s[k++] = (uuid ? low : up)[p[i] & 15];
	}
	s[k] = '\0';
	j = json_string(s);
	free(s);
	return j;
}

static json_t *value_json(const struct st_type *t, const struct st_value *v)
{
	char s[32];

	if (v->null)
		return json_null();
	switch (t->id) {
	case ST_TYPE_BOOLEAN: return json_boolean(v->v.b);
	case ST_TYPE_INT:
	case ST_TYPE_DATE: return json_integer(v->v.i);
	case ST_TYPE_TIME: return json_integer(v->v.l);
	case ST_TYPE_LONG:
	case ST_TYPE_TIMESTAMP:
	case ST_TYPE_TIMESTAMPTZ:
	case ST_TYPE_TIMESTAMP_NS:
	case ST_TYPE_TIMESTAMPTZ_NS:
		snprintf(s, sizeof(s), "%" PRId64, v->v.l);
		return json_string(s);
	case ST_TYPE_FLOAT: return real_json(v->v.f);
	case ST_TYPE_DOUBLE: return real_json(v->v.d);
	case ST_TYPE_DECIMAL: return dec_json(v->v.dec, t->scale);
	case ST_TYPE_STRING: return json_stringn((const char *)v->v.bin.p, v->v.bin.len);
	case ST_TYPE_UUID: return hex_json(v->v.bin.p, v->v.bin.len, true);
	default: return hex_json(v->v.bin.p, v->v.bin.len, false);
	}
}

static char *slurp(const char *path, size_t *n)
{
	FILE *f = fopen(path, "rb");
	char *p = NULL;
	long len;

	if (f == NULL || fseek(f, 0, SEEK_END) != 0 || (len = ftell(f)) < 0 ||
	    fseek(f, 0, SEEK_SET) != 0 || (p = malloc((size_t)len + 1)) == NULL ||
	    fread(p, 1, (size_t)len, f) != (size_t)len) {
		fprintf(stderr, "parquet_dump: cannot read %s\n", path);
		exit(1);
	}
	fclose(f);
	*n = (size_t)len;
	return p;
}

/* The leaves it cannot read (on stderr), then line 1: the projected columns
 * and the row count. */
static void print_head(struct st_parquet_reader *r)
{
	json_t *head, *cols;
	char *line;

	for (size_t i = 0; i < st_parquet_reader_n_leaves(r); i++) {
		const struct st_parquet_leaf *l = st_parquet_reader_leaf(r, i);

		if (!l->readable)
			fprintf(stderr, "parquet_dump: skipping %s: %s\n", l->path, l->why);
	}
	head = json_object();
	cols = json_array();
	for (size_t j = 0;; j++) {
		size_t li = st_parquet_reader_projected_leaf(r, j);
		const struct st_parquet_leaf *l;
		char tn[64];

		if (li == SIZE_MAX)
			break;
		l = st_parquet_reader_leaf(r, li);
		st_type_format(&l->type, tn, sizeof(tn));
		json_array_append_new(cols, json_pack("{s:s,s:i,s:s,s:b}", "path", l->path,
		                                      "field_id", (json_int_t)l->field_id, "type",
		                                      tn, "optional", l->optional));
	}
	json_object_set_new(head, "columns", cols);
	json_object_set_new(head, "rows", json_integer(st_parquet_reader_num_rows(r)));
	line = json_dumps(head, JSON_COMPACT);
	puts(line);
	free(line);
	json_decref(head);
}

/* Reads one file through the storage layer (file://) in ranges, as compaction
 * does; prints it unless check.  0, or -1 with err set. */
static int dump(const char *path, const struct st_parquet_reader_opts *o, bool check,
                struct fl_err *err)
{
	struct st_parquet_source src;
	struct st_parquet_reader *r = NULL;
	const struct st_parquet_batch *b;
	struct st_profile prof = {.type = ST_STORAGE_FILE, .location = "file:///"};
	struct st_parquet_io_ctx ioc;
	struct st_io *io = NULL;
	char uri[PATH_MAX + 8], abs[PATH_MAX];
	char *line;
	int rc = -1;

	if (realpath(path, abs) == NULL)
		return fl_err_set(err, FL_ERR_NOT_FOUND, "cannot open %s", path);
	snprintf(uri, sizeof(uri), "file://%s", abs);
	if (st_io_open(&prof, &io, err) != 0 || st_parquet_source_io(&src, &ioc, io, uri, err) != 0)
		goto out;
	if (st_parquet_reader_open(&src, o, &r, err) != 0)
		goto out;
	if (!check)
		print_head(r);
	for (;;) {
		if (st_parquet_reader_next(r, &b, err) != 0)
			goto out;
		if (b == NULL)
			break;
		for (size_t i = 0; i < b->n_rows && !check; i++) {
			json_t *row = json_array();

			for (size_t j = 0; j < b->n_columns; j++) {
				const struct st_parquet_leaf *l = st_parquet_reader_leaf(
				        r, st_parquet_reader_projected_leaf(r, j));

				json_array_append_new(row, value_json(&l->type, &b->columns[j][i]));
			}
			line = json_dumps(row, JSON_COMPACT | JSON_REAL_PRECISION(17));
			puts(line);
			free(line);
			json_decref(row);
		}
	}
	rc = 0;
out:
	st_parquet_reader_free(r);
	st_io_release(io);
	return rc;
}

int main(int argc, char **argv)
{
	struct st_parquet_reader_opts o = {0};
	struct st_name_mapping *mapping = NULL;
	struct fl_err err = {0};
	bool check = false;
	int a = 1, rc = 1;

	while (a < argc && strncmp(argv[a], "--", 2) == 0) {
		if (strcmp(argv[a], "--check") == 0) {
			check = true;
			a++;
			continue;
		}
		if (a + 1 >= argc)
			break;
		if (strcmp(argv[a], "--batch") == 0) {
			o.batch_rows = strtoul(argv[a + 1], NULL, 10);
		} else if (strcmp(argv[a], "--mapping") == 0) {
			size_t n;
			char *text = slurp(argv[a + 1], &n);

			if (st_name_mapping_parse(text, n, &mapping, &err) != 0) {
				fprintf(stderr, "parquet_dump: %s\n", err.msg);
				return 1;
			}
			free(text);
			o.name_mapping = mapping;
		} else {
			break;
		}
		a += 2;
	}
	if (check ? a >= argc : a + 1 != argc) {
		fprintf(stderr,
		        "usage: parquet_dump [--batch N] [--mapping FILE] FILE.parquet\n"
		        "       parquet_dump --check [--batch N] [--mapping FILE] FILE...\n");
		return 2;
	}
	if (!check) {
		rc = dump(argv[a], &o, false, &err) == 0 ? 0 : 1;
		if (rc != 0)
			fprintf(stderr, "parquet_dump: %s\n", err.msg);
	} else {
		for (rc = 0; a < argc; a++) {
			json_t *res = json_pack("{s:s}", "file", argv[a]);
			char *line;

			if (dump(argv[a], &o, true, &err) != 0)
				json_object_set_new(res, "error", json_string(err.msg));
			line = json_dumps(res, JSON_COMPACT);
			puts(line);
			free(line);
			json_decref(res);
		}
	}
	st_name_mapping_free(mapping);
	return rc;
}
