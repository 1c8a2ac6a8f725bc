/* manifest.c - manifest writer.
 *
 * Bytes produced: an Avro object container file (storage/avro/avro.c) whose
 * header carries avro.schema = the manifest_entry schema built at open,
 * "schema" (table schema JSON), "schema-id", "partition-spec" (JSON array of
 * the spec's fields), "partition-spec-id", "format-version" and "content"
 * ("data" | "deletes"); each datum is one manifest_entry (apache/iceberg
 * format/spec.md, "Manifests", v2 and v3 columns).
 *
 * The data_file fields keep the order and record names of the Java writer
 * (r2, r102 partition, kNNN_vMMM map entries) and the spec's field ids.
 * Maps with int keys are Avro arrays of {key, value} records tagged
 * "logicalType":"map", as the spec requires for non-string keys.  Fields
 * the spec deprecates (105, 106, 107, 111) are not written.
 *
 * Invariants: `parts` holds one summary per spec field; a summary's
 * min/max values point into its own min_store/max_store buffers. */
#include "manifest.h"

#include <inttypes.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "iceberg/bounds.h"

struct part_stat {
	struct st_partition_field field; /* name and transform are owned copies */
	bool contains_null;
	bool contains_nan;
	bool has_bounds;
	struct st_value min, max;
	struct st_buf min_store, max_store;
};

struct st_manifest_writer {
	const struct st_alloc *alloc;
	struct st_avro_writer *avro;
	int format_version;
	enum st_manifest_content content;
	int32_t spec_id;
	int64_t snapshot_id;
	struct part_stat *parts;
	size_t n_parts;
	int32_t added_files, existing_files, deleted_files;
	int64_t added_rows, existing_rows, deleted_rows;
	int64_t min_seq; /* ST_SEQ_UNASSIGNED until a live entry carries one */
	bool broken; /* an entry reached the file but not the summary */
};

static int json_str(struct st_buf *b, const char *s)
{
	if (st_buf_put_u8(b, '"') != 0)
		return -1;
	for (; *s; s++) {
		unsigned char c = (unsigned char)*s;
		char esc[8];

		if (c == '"' || c == '\\') {
			esc[0] = '\\';
			esc[1] = (char)c;
			if (st_buf_append(b, esc, 2) != 0)
				return -1;
		} else if (c < 0x20) {
			snprintf(esc, sizeof(esc), "\\u%04x", c);
			if (st_buf_append(b, esc, 6) != 0)
				return -1;
		} else if (st_buf_put_u8(b, c) != 0) {
			return -1;
		}
	}
	return st_buf_put_u8(b, '"');
}

static int puts_b(struct st_buf *b, const char *s)
{
	return st_buf_append(b, s, strlen(s));
}

static bool ascii_alpha(uint32_t c)
{
	return (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || c == '_';
}

/* A partition field name as a quoted Avro name ([A-Za-z_][A-Za-z0-9_]*),
 * escaped the way the Java AvroSchemaUtil.sanitize does for ASCII: a
 * leading digit d becomes "_d", any other character "_x" + its code point
 * in upper-case hex.  Unlike Java, non-ASCII letters are escaped too,
 * because the Avro specification does not allow them.  The partition-spec
 * header keeps the real name. */
static int avro_name(struct st_buf *b, const char *name)
{
	const unsigned char *p = (const unsigned char *)name;
	char tmp[16];

	if (st_buf_put_u8(b, '"') != 0)
		return -1;
	for (size_t i = 0; p[i] != '\0';) {
		uint32_t c = p[i];
		size_t len = 1;

		if (c >= 0xf0 && p[i + 1] && p[i + 2] && p[i + 3]) {
			c = ((c & 0x07) << 18) | ((uint32_t)(p[i + 1] & 0x3f) << 12) |
			    ((uint32_t)(p[i + 2] & 0x3f) << 6) | (p[i + 3] & 0x3f);
			len = 4;
		} else if (c >= 0xe0 && p[i + 1] && p[i + 2]) {
			c = ((c & 0x0f) << 12) | ((uint32_t)(p[i + 1] & 0x3f) << 6) |
			    (p[i + 2] & 0x3f);
			len = 3;
		} else if (c >= 0xc0 && p[i + 1]) {
			c = ((c & 0x1f) << 6) | (p[i + 1] & 0x3f);
			len = 2;
		}
		if (ascii_alpha(c) || (i > 0 && c >= '0' && c <= '9')) {
			if (st_buf_put_u8(b, (uint8_t)c) != 0)
				return -1;
		} else {
			if (c >= '0' && c <= '9')
				snprintf(tmp, sizeof(tmp), "_%c", (char)c);
			else
				snprintf(tmp, sizeof(tmp), "_x%X", (unsigned)c);
			if (puts_b(b, tmp) != 0)
				return -1;
		}
		i += len;
	}
	return st_buf_put_u8(b, '"');
}

static int printf_b(struct st_buf *b, const char *fmt, ...) FL_PRINTF(2, 3);

static int printf_b(struct st_buf *b, const char *fmt, ...)
{
	char tmp[160];
	va_list ap;
	int n;

	va_start(ap, fmt);
	n = vsnprintf(tmp, sizeof(tmp), fmt, ap);
	va_end(ap);
	if (n < 0 || (size_t)n >= sizeof(tmp))
		return -1;
	return st_buf_append(b, tmp, (size_t)n);
}

/* The Avro type of a partition value (spec "Avro" type mapping).  Named
 * fixed types carry the field id so that two fields never redefine one. */
static int avro_type(struct st_buf *b, const struct st_partition_field *f)
{
	const struct st_type *t = &f->type;

	switch (t->id) {
	case ST_TYPE_BOOLEAN: return puts_b(b, "\"boolean\"");
	case ST_TYPE_INT: return puts_b(b, "\"int\"");
	case ST_TYPE_LONG: return puts_b(b, "\"long\"");
	case ST_TYPE_FLOAT: return puts_b(b, "\"float\"");
	case ST_TYPE_DOUBLE: return puts_b(b, "\"double\"");
	case ST_TYPE_DATE: return puts_b(b, "{\"type\":\"int\",\"logicalType\":\"date\"}");
	case ST_TYPE_TIME: return puts_b(b, "{\"type\":\"long\",\"logicalType\":\"time-micros\"}");
	case ST_TYPE_TIMESTAMP:
	case ST_TYPE_TIMESTAMPTZ:
	case ST_TYPE_TIMESTAMP_NS:
	case ST_TYPE_TIMESTAMPTZ_NS:
		return printf_b(
		        b,
		        "{\"type\":\"long\",\"logicalType\":\"timestamp-%s\","
		        "\"adjust-to-utc\":%s}",
		        t->id == ST_TYPE_TIMESTAMP_NS || t->id == ST_TYPE_TIMESTAMPTZ_NS ? "nanos"
		                                                                         : "micros",
		        t->id == ST_TYPE_TIMESTAMPTZ || t->id == ST_TYPE_TIMESTAMPTZ_NS ? "true"
		                                                                        : "false");
	case ST_TYPE_STRING: return puts_b(b, "\"string\"");
	case ST_TYPE_BINARY: return puts_b(b, "\"bytes\"");
	case ST_TYPE_UUID:
		return printf_b(b,
		                "{\"type\":\"fixed\",\"name\":\"uuid_fixed_%" PRId32
		                "\",\"size\":16,"
		                "\"logicalType\":\"uuid\"}",
		                f->field_id);
	case ST_TYPE_FIXED:
		return printf_b(
		        b, "{\"type\":\"fixed\",\"name\":\"fixed_%u_%" PRId32 "\",\"size\":%u}",
		        t->length, f->field_id, t->length);
	case ST_TYPE_DECIMAL:
		return printf_b(b,
		                "{\"type\":\"fixed\",\"name\":\"decimal_%d_%d_%" PRId32
		                "\",\"size\":%d,"
		                "\"logicalType\":\"decimal\",\"precision\":%d,\"scale\":%d}",
		                t->precision, t->scale, f->field_id, st_decimal_bytes(t->precision),
		                t->precision, t->scale);
	}
	return -1;
}

/* One optional map<int, V> field as an array of key/value records. */
static int map_field(struct st_buf *b, const char *name, int id, int kid, int vid,
                     const char *vtype, const char *doc)
{
	return printf_b(b, "{\"name\":\"%s\",\"type\":[\"null\",{\"type\":\"array\",\"items\":",
	                name) ||
	       printf_b(b, "{\"type\":\"record\",\"name\":\"k%d_v%d\",\"fields\":[", kid, vid) ||
	       printf_b(b, "{\"name\":\"key\",\"type\":\"int\",\"field-id\":%d},", kid) ||
	       printf_b(b, "{\"name\":\"value\",\"type\":\"%s\",\"field-id\":%d}]},", vtype, vid) ||
	       printf_b(b, "\"logicalType\":\"map\"}],\"doc\":\"%s\",\"default\":null,", doc) ||
	       printf_b(b, "\"field-id\":%d},", id);
}

static int entry_schema(struct st_buf *b, const struct st_manifest_writer *w)
{
	if (puts_b(b, "{\"type\":\"record\",\"name\":\"manifest_entry\",\"fields\":["
	              "{\"name\":\"status\",\"type\":\"int\",\"field-id\":0},"
	              "{\"name\":\"snapshot_id\",\"type\":[\"null\",\"long\"],\"default\":null,"
	              "\"field-id\":1},"
	              "{\"name\":\"sequence_number\",\"type\":[\"null\",\"long\"],\"default\":null,"
	              "\"field-id\":3},"
	              "{\"name\":\"file_sequence_number\",\"type\":[\"null\",\"long\"],"
	              "\"default\":null,\"field-id\":4},"
	              "{\"name\":\"data_file\",\"type\":{\"type\":\"record\",\"name\":\"r2\","
	              "\"fields\":["
	              "{\"name\":\"content\",\"type\":\"int\",\"doc\":\"Contents of the file: "
	              "0=data, 1=position deletes, 2=equality deletes\",\"field-id\":134},"
	              "{\"name\":\"file_path\",\"type\":\"string\",\"doc\":\"Location URI with FS "
	              "scheme\",\"field-id\":100},"
	              "{\"name\":\"file_format\",\"type\":\"string\",\"doc\":\"File format name: "
	              "avro, orc, or parquet\",\"field-id\":101},"
	              "{\"name\":\"partition\",\"type\":{\"type\":\"record\",\"name\":\"r102\","
	              "\"fields\":[") != 0)
		return -1;
	for (size_t i = 0; i < w->n_parts; i++) {
		const struct st_partition_field *f = &w->parts[i].field;

		if ((i > 0 && puts_b(b, ",") != 0) || puts_b(b, "{\"name\":") != 0 ||
		    avro_name(b, f->name) != 0 || puts_b(b, ",\"type\":[\"null\",") != 0 ||
		    avro_type(b, f) != 0 ||
		    printf_b(b, "],\"default\":null,\"field-id\":%" PRId32 "}", f->field_id) != 0)
			return -1;
	}
	if (puts_b(b,
	           "]},\"doc\":\"Partition data tuple, schema based on the partition spec\","
	           "\"field-id\":102},"
	           "{\"name\":\"record_count\",\"type\":\"long\",\"doc\":\"Number of records in "
	           "the file\",\"field-id\":103},"
	           "{\"name\":\"file_size_in_bytes\",\"type\":\"long\",\"doc\":\"Total file size "
	           "in bytes\",\"field-id\":104},") != 0 ||
	    map_field(b, "column_sizes", 108, 117, 118, "long",
	              "Map of column id to total size on disk") != 0 ||
	    map_field(b, "value_counts", 109, 119, 120, "long",
	              "Map of column id to total count, including null and NaN") != 0 ||
	    map_field(b, "null_value_counts", 110, 121, 122, "long",
	              "Map of column id to null value count") != 0 ||
	    map_field(b, "nan_value_counts", 137, 138, 139, "long",
	              "Map of column id to number of NaN values in the column") != 0 ||
	    map_field(b, "lower_bounds", 125, 126, 127, "bytes",
	              "Map of column id to lower bound") != 0 ||
	    map_field(b, "upper_bounds", 128, 129, 130, "bytes",
	              "Map of column id to upper bound") != 0 ||
	    puts_b(b,
	           "{\"name\":\"key_metadata\",\"type\":[\"null\",\"bytes\"],\"doc\":\"Encryption "
	           "key metadata blob\",\"default\":null,\"field-id\":131},"
	           "{\"name\":\"split_offsets\",\"type\":[\"null\",{\"type\":\"array\",\"items\":"
	           "\"long\",\"element-id\":133}],\"doc\":\"Splittable offsets\",\"default\":null,"
	           "\"field-id\":132},"
	           "{\"name\":\"equality_ids\",\"type\":[\"null\",{\"type\":\"array\",\"items\":"
	           "\"int\",\"element-id\":136}],\"doc\":\"Equality comparison field IDs\","
	           "\"default\":null,\"field-id\":135},"
	           "{\"name\":\"sort_order_id\",\"type\":[\"null\",\"int\"],\"doc\":\"Sort order "
	           "ID\",\"default\":null,\"field-id\":140}") != 0)
		return -1;
	if (w->format_version >= 3 &&
	    puts_b(b,
	           ",{\"name\":\"first_row_id\",\"type\":[\"null\",\"long\"],\"doc\":\"Starting "
	           "row ID to assign to new rows\",\"default\":null,\"field-id\":142},"
	           "{\"name\":\"referenced_data_file\",\"type\":[\"null\",\"string\"],\"doc\":"
	           "\"Fully qualified location (URI with FS scheme) of a data file that all deletes "
	           "reference\",\"default\":null,\"field-id\":143},"
	           "{\"name\":\"content_offset\",\"type\":[\"null\",\"long\"],\"doc\":\"The offset "
	           "in the file where the content starts\",\"default\":null,\"field-id\":144},"
	           "{\"name\":\"content_size_in_bytes\",\"type\":[\"null\",\"long\"],\"doc\":\"The "
	           "length of referenced content stored in the file\",\"default\":null,"
	           "\"field-id\":145}") != 0)
		return -1;
	if (puts_b(b, "]},\"field-id\":2}]}") != 0 || st_buf_put_u8(b, 0) != 0)
		return -1;
	b->len--; /* keep the NUL out of the length; the schema is used as a C string */
	return 0;
}

static int spec_json(struct st_buf *b, const struct st_manifest_writer *w)
{
	if (puts_b(b, "[") != 0)
		return -1;
	for (size_t i = 0; i < w->n_parts; i++) {
		const struct st_partition_field *f = &w->parts[i].field;

		if ((i > 0 && puts_b(b, ",") != 0) || puts_b(b, "{\"name\":") != 0 ||
		    json_str(b, f->name) != 0 || puts_b(b, ",\"transform\":") != 0 ||
		    json_str(b, f->transform) != 0 ||
		    printf_b(b, ",\"source-id\":%" PRId32 ",\"field-id\":%" PRId32 "}",
		             f->source_id, f->field_id) != 0)
			return -1;
	}
	return puts_b(b, "]");
}

void st_manifest_writer_free(struct st_manifest_writer *w)
{
	if (w == NULL)
		return;
	st_avro_writer_free(w->avro);
	for (size_t i = 0; i < w->n_parts; i++) {
		st_free(w->alloc, (char *)w->parts[i].field.name);
		st_free(w->alloc, (char *)w->parts[i].field.transform);
		st_buf_free(&w->parts[i].min_store);
		st_buf_free(&w->parts[i].max_store);
	}
	st_free(w->alloc, w->parts);
	st_free(w->alloc, w);
}

static int check_spec(const struct st_manifest_opts *o, struct fl_err *err)
{
	if (o->format_version != 2 && o->format_version != 3)
		return fl_err_set(err, FL_ERR_BAD_REQUEST,
		                  "manifest: format version %d is not supported (2 or 3)",
		                  o->format_version);
	if (o->schema_json == NULL)
		return fl_err_set(err, FL_ERR_BAD_REQUEST,
		                  "manifest: the table schema is required");
	for (size_t i = 0; i < o->n_spec; i++) {
		const struct st_partition_field *f = &o->spec[i];

		if (f->name == NULL || f->name[0] == '\0' || f->transform == NULL)
			return fl_err_set(
			        err, FL_ERR_BAD_REQUEST,
			        "manifest: partition field %zu needs a name and transform", i);
		if ((f->type.id == ST_TYPE_DECIMAL &&
		     (f->type.precision < 1 || f->type.precision > 38)) ||
		    (f->type.id == ST_TYPE_FIXED && f->type.length == 0))
			return fl_err_set(err, FL_ERR_BAD_REQUEST,
			                  "manifest: partition field %s has an invalid type",
			                  f->name);
	}
	return 0;
}

int st_manifest_writer_open(const struct st_manifest_opts *o, struct st_manifest_writer **out,
                            struct fl_err *err)
{
	struct st_manifest_writer *w = NULL;
	struct st_buf schema, spec;
	char spec_id[16], schema_id[16], version[4];
	struct st_avro_meta meta[6];
	struct st_avro_writer_opts ao = {0};
	const char *content = o->content == ST_MANIFEST_DELETES ? "deletes" : "data";
	size_t n = 0;
	int rc = -1;

	st_buf_init(&schema, o->alloc);
	st_buf_init(&spec, o->alloc);
	if (check_spec(o, err) != 0)
		return -1;
	w = st_calloc(o->alloc, 1, sizeof(*w));
	if (w == NULL)
		goto nomem;
	w->alloc = o->alloc;
	w->format_version = o->format_version;
	w->content = o->content;
	w->spec_id = o->spec_id;
	w->snapshot_id = o->snapshot_id;
	w->min_seq = ST_SEQ_UNASSIGNED;
	if (o->n_spec > 0) {
		w->parts = st_calloc(o->alloc, o->n_spec, sizeof(*w->parts));
		if (w->parts == NULL)
			goto nomem;
	}
	for (size_t i = 0; i < o->n_spec; i++) {
		struct part_stat *p = &w->parts[i];

		st_buf_init(&p->min_store, o->alloc);
		st_buf_init(&p->max_store, o->alloc);
		w->n_parts++;
		p->field = o->spec[i];
		p->field.name = NULL;
		p->field.transform = NULL;
		p->field.name = st_strdup(o->alloc, o->spec[i].name);
		p->field.transform = st_strdup(o->alloc, o->spec[i].transform);
		if (p->field.name == NULL || p->field.transform == NULL)
			goto nomem;
	}
	if (entry_schema(&schema, w) != 0 || spec_json(&spec, w) != 0)
		goto nomem;
	snprintf(spec_id, sizeof(spec_id), "%" PRId32, o->spec_id);
	snprintf(schema_id, sizeof(schema_id), "%" PRId32, o->schema_id);
	snprintf(version, sizeof(version), "%d", o->format_version);
	meta[n++] = (struct st_avro_meta){"schema", o->schema_json, strlen(o->schema_json)};
	if (o->schema_id >= 0)
		meta[n++] = (struct st_avro_meta){"schema-id", schema_id, strlen(schema_id)};
	meta[n++] = (struct st_avro_meta){"partition-spec", spec.data, spec.len};
	meta[n++] = (struct st_avro_meta){"partition-spec-id", spec_id, strlen(spec_id)};
	meta[n++] = (struct st_avro_meta){"format-version", version, strlen(version)};
	meta[n++] = (struct st_avro_meta){"content", content, strlen(content)};
	ao.schema_json = (const char *)schema.data;
	ao.codec = o->codec;
	ao.meta = meta;
	ao.n_meta = n;
	ao.sync = o->sync;
	ao.sink = o->sink;
	ao.alloc = o->alloc;
	if (st_avro_writer_open(&ao, &w->avro, err) != 0) {
		fl_err_prefix(err, "manifest");
		goto out;
	}
	*out = w;
	w = NULL;
	rc = 0;
	goto out;
nomem:
	fl_err_set(err, FL_ERR_NOMEM, "manifest: out of memory");
out:
	st_buf_free(&schema);
	st_buf_free(&spec);
	st_manifest_writer_free(w);
	return rc;
}

static bool is_nan(const struct st_type *t, const struct st_value *v)
{
	return (t->id == ST_TYPE_FLOAT && isnan(v->v.f)) ||
	       (t->id == ST_TYPE_DOUBLE && isnan(v->v.d));
}

static bool is_bytes_type(const struct st_type *t)
{
	return t->id == ST_TYPE_STRING || t->id == ST_TYPE_BINARY || t->id == ST_TYPE_FIXED ||
	       t->id == ST_TYPE_UUID;
}

static int keep_value(struct st_value *dst, struct st_buf *store, const struct st_type *t,
                      const struct st_value *src)
{
	*dst = *src;
	if (!is_bytes_type(t))
		return 0;
	st_buf_reset(store);
	/* One spare byte so that an empty value still has storage. */
	if (st_buf_reserve(store, src->v.bin.len + 1) != 0 ||
	    st_buf_append(store, src->v.bin.p, src->v.bin.len) != 0)
		return -1;
	dst->v.bin.p = store->data;
	return 0;
}

/* True when the unscaled value fits the Avro fixed size of its precision:
 * the bytes in front of it only repeat the sign. */
static bool decimal_fits(const struct st_value *v, int precision)
{
	int n = st_decimal_bytes(precision);
	uint8_t ext = (v->v.dec[16 - n] & 0x80) ? 0xff : 0x00;

	for (int i = 0; i < 16 - n; i++) {
		if (v->v.dec[i] != ext)
			return false;
	}
	return true;
}

static int check_partition(const struct st_manifest_writer *w, const struct st_data_file *f,
                           struct fl_err *err)
{
	for (size_t i = 0; i < w->n_parts; i++) {
		const struct st_partition_field *pf = &w->parts[i].field;
		const struct st_value *v = &f->partition[i];

		if (v->null)
			continue;
		if ((pf->type.id == ST_TYPE_UUID && v->v.bin.len != 16) ||
		    (pf->type.id == ST_TYPE_FIXED && v->v.bin.len != pf->type.length))
			return fl_err_set(err, FL_ERR_BAD_REQUEST,
			                  "manifest: %s: partition value %s has length %zu",
			                  f->file_path, pf->name, v->v.bin.len);
		if ((pf->type.id == ST_TYPE_STRING || pf->type.id == ST_TYPE_BINARY) &&
		    v->v.bin.p == NULL && v->v.bin.len > 0)
			return fl_err_set(err, FL_ERR_BAD_REQUEST,
			                  "manifest: %s: partition value %s has no bytes",
			                  f->file_path, pf->name);
		if (pf->type.id == ST_TYPE_STRING && !st_utf8_valid(v->v.bin.p, v->v.bin.len))
			return fl_err_set(err, FL_ERR_BAD_REQUEST,
			                  "manifest: %s: partition value %s is not valid UTF-8",
			                  f->file_path, pf->name);
		if (pf->type.id == ST_TYPE_DECIMAL && !decimal_fits(v, pf->type.precision))
			return fl_err_set(
			        err, FL_ERR_BAD_REQUEST,
			        "manifest: %s: partition value %s does not fit decimal(%d, %d)",
			        f->file_path, pf->name, pf->type.precision, pf->type.scale);
	}
	return 0;
}

static int update_summaries(struct st_manifest_writer *w, const struct st_data_file *f)
{
	for (size_t i = 0; i < w->n_parts; i++) {
		struct part_stat *p = &w->parts[i];
		const struct st_type *t = &p->field.type;
		const struct st_value *v = &f->partition[i];

		if (v->null) {
			p->contains_null = true;
			continue;
		}
		if (is_nan(t, v)) {
			p->contains_nan = true;
			continue;
		}
		if (!p->has_bounds || st_value_compare(t, v, &p->min) < 0) {
			if (keep_value(&p->min, &p->min_store, t, v) != 0)
				return -1;
		}
		if (!p->has_bounds || st_value_compare(t, v, &p->max) > 0) {
			if (keep_value(&p->max, &p->max_store, t, v) != 0)
				return -1;
		}
		p->has_bounds = true;
	}
	return 0;
}

static void put_partition_value(struct st_avro_writer *a, const struct st_partition_field *pf,
                                const struct st_value *v)
{
	const struct st_type *t = &pf->type;

	if (v->null) {
		st_avro_write_union(a, 0);
		return;
	}
	st_avro_write_union(a, 1);
	switch (t->id) {
	case ST_TYPE_BOOLEAN: st_avro_write_bool(a, v->v.b); break;
	case ST_TYPE_INT:
	case ST_TYPE_DATE: st_avro_write_int(a, v->v.i); break;
	case ST_TYPE_LONG:
	case ST_TYPE_TIME:
	case ST_TYPE_TIMESTAMP:
	case ST_TYPE_TIMESTAMPTZ:
	case ST_TYPE_TIMESTAMP_NS:
	case ST_TYPE_TIMESTAMPTZ_NS: st_avro_write_long(a, v->v.l); break;
	case ST_TYPE_FLOAT: st_avro_write_float(a, v->v.f); break;
	case ST_TYPE_DOUBLE: st_avro_write_double(a, v->v.d); break;
	case ST_TYPE_DECIMAL: {
		int n = st_decimal_bytes(t->precision);

		st_avro_write_fixed(a, v->v.dec + 16 - n, (size_t)n);
		break;
	}
	case ST_TYPE_STRING:
	case ST_TYPE_BINARY: st_avro_write_bytes(a, v->v.bin.p, v->v.bin.len); break;
	case ST_TYPE_UUID:
	case ST_TYPE_FIXED: st_avro_write_fixed(a, v->v.bin.p, v->v.bin.len); break;
	}
}

enum metric_kind { M_SIZE, M_VALUES, M_NULLS, M_NANS, M_LOWER, M_UPPER };

static bool metric_present(const struct st_column_metrics *c, enum metric_kind k)
{
	switch (k) {
	case M_SIZE: return c->column_size >= 0;
	case M_VALUES: return c->value_count >= 0;
	case M_NULLS: return c->null_count >= 0;
	case M_NANS: return c->nan_count >= 0;
	case M_LOWER: return c->has_lower;
	case M_UPPER: return c->has_upper;
	}
	return false;
}

/* One optional map<int, long|bytes>: null when no column has the metric. */
static void put_metric_map(struct st_avro_writer *a, const struct st_data_file *f,
                           enum metric_kind k)
{
	size_t n = 0;

	for (size_t i = 0; i < f->n_columns; i++)
		n += metric_present(&f->columns[i], k);
	if (n == 0) {
		st_avro_write_union(a, 0);
		return;
	}
	st_avro_write_union(a, 1);
	st_avro_write_array_start(a, n);
	for (size_t i = 0; i < f->n_columns; i++) {
		const struct st_column_metrics *c = &f->columns[i];

		if (!metric_present(c, k))
			continue;
		st_avro_write_int(a, c->field_id);
		switch (k) {
		case M_SIZE: st_avro_write_long(a, c->column_size); break;
		case M_VALUES: st_avro_write_long(a, c->value_count); break;
		case M_NULLS: st_avro_write_long(a, c->null_count); break;
		case M_NANS: st_avro_write_long(a, c->nan_count); break;
		case M_LOWER: st_avro_write_bytes(a, c->lower, c->lower_len); break;
		case M_UPPER: st_avro_write_bytes(a, c->upper, c->upper_len); break;
		}
	}
	st_avro_write_array_end(a);
}

static void put_opt_long(struct st_avro_writer *a, bool has, int64_t v)
{
	st_avro_write_union(a, has ? 1 : 0);
	if (has)
		st_avro_write_long(a, v);
}

static int check_entry(const struct st_manifest_writer *w, const struct st_manifest_entry *e,
                       struct fl_err *err)
{
	const struct st_data_file *f = e->file;

	if (f == NULL || f->file_path == NULL || f->file_format == NULL)
		return fl_err_set(err, FL_ERR_BAD_REQUEST,
		                  "manifest: an entry needs a file with a path and format");
	if ((unsigned)e->status > ST_ENTRY_DELETED)
		return fl_err_set(err, FL_ERR_BAD_REQUEST, "manifest: %s: bad status %d",
		                  f->file_path, (int)e->status);
	if ((f->content == ST_CONTENT_DATA) != (w->content == ST_MANIFEST_DATA) ||
	    (unsigned)f->content > ST_CONTENT_EQUALITY_DELETES)
		return fl_err_set(err, FL_ERR_BAD_REQUEST,
		                  "manifest: %s: file content %d does not belong in a %s manifest",
		                  f->file_path, (int)f->content,
		                  w->content == ST_MANIFEST_DATA ? "data" : "deletes");
	if (f->content == ST_CONTENT_EQUALITY_DELETES && f->n_equality_ids == 0)
		return fl_err_set(err, FL_ERR_BAD_REQUEST,
		                  "manifest: %s: equality deletes need equality_ids", f->file_path);
	if (w->n_parts > 0 && f->partition == NULL)
		return fl_err_set(err, FL_ERR_BAD_REQUEST,
		                  "manifest: %s: the partition tuple is missing", f->file_path);
	if (f->record_count < 0 || f->file_size_in_bytes < 0)
		return fl_err_set(err, FL_ERR_BAD_REQUEST,
		                  "manifest: %s: negative record count or size", f->file_path);
	return check_partition(w, f, err);
}

int st_manifest_writer_add(struct st_manifest_writer *w, const struct st_manifest_entry *e,
                           struct fl_err *err)
{
	struct st_avro_writer *a = w->avro;
	const struct st_data_file *f = e->file;

	if (w->broken)
		return fl_err_set(err, FL_ERR_NOMEM, "manifest: the writer failed earlier");
	if (check_entry(w, e, err) != 0)
		return -1;
	st_avro_write_int(a, (int32_t)e->status);
	put_opt_long(a, true, e->has_snapshot_id ? e->snapshot_id : w->snapshot_id);
	put_opt_long(a, e->has_sequence_number, e->sequence_number);
	put_opt_long(a, e->has_file_sequence_number, e->file_sequence_number);

	st_avro_write_int(a, (int32_t)f->content);
	st_avro_write_string(a, f->file_path);
	st_avro_write_string(a, f->file_format);
	for (size_t i = 0; i < w->n_parts; i++)
		put_partition_value(a, &w->parts[i].field, &f->partition[i]);
	st_avro_write_long(a, f->record_count);
	st_avro_write_long(a, f->file_size_in_bytes);
	put_metric_map(a, f, M_SIZE);
	put_metric_map(a, f, M_VALUES);
	put_metric_map(a, f, M_NULLS);
	put_metric_map(a, f, M_NANS);
	put_metric_map(a, f, M_LOWER);
	put_metric_map(a, f, M_UPPER);
	st_avro_write_union(a, f->key_metadata != NULL ? 1 : 0);
	if (f->key_metadata != NULL)
		st_avro_write_bytes(a, f->key_metadata, f->key_metadata_len);
	st_avro_write_union(a, f->n_split_offsets > 0 ? 1 : 0);
	if (f->n_split_offsets > 0) {
		st_avro_write_array_start(a, f->n_split_offsets);
		for (size_t i = 0; i < f->n_split_offsets; i++)
			st_avro_write_long(a, f->split_offsets[i]);
		st_avro_write_array_end(a);
	}
	st_avro_write_union(a, f->n_equality_ids > 0 ? 1 : 0);
	if (f->n_equality_ids > 0) {
		st_avro_write_array_start(a, f->n_equality_ids);
		for (size_t i = 0; i < f->n_equality_ids; i++)
			st_avro_write_int(a, f->equality_ids[i]);
		st_avro_write_array_end(a);
	}
	st_avro_write_union(a, f->has_sort_order_id ? 1 : 0);
	if (f->has_sort_order_id)
		st_avro_write_int(a, f->sort_order_id);
	if (w->format_version >= 3) {
		put_opt_long(a, f->has_first_row_id, f->first_row_id);
		st_avro_write_union(a, f->referenced_data_file != NULL ? 1 : 0);
		if (f->referenced_data_file != NULL)
			st_avro_write_string(a, f->referenced_data_file);
		put_opt_long(a, f->has_content_offset, f->content_offset);
		put_opt_long(a, f->has_content_offset, f->content_size_in_bytes);
	}
	if (st_avro_writer_end_record(a, err) != 0)
		return fl_err_prefix(err, "manifest: %s", f->file_path);
	if (update_summaries(w, f) != 0) {
		w->broken = true;
		return fl_err_set(err, FL_ERR_NOMEM, "manifest: out of memory");
	}

	switch (e->status) {
	case ST_ENTRY_ADDED:
		w->added_files++;
		w->added_rows += f->record_count;
		break;
	case ST_ENTRY_EXISTING:
		w->existing_files++;
		w->existing_rows += f->record_count;
		break;
	case ST_ENTRY_DELETED:
		w->deleted_files++;
		w->deleted_rows += f->record_count;
		break;
	}
	/* Like the Java ManifestWriter: the lowest explicit data sequence
	 * number of a live entry; inherited ones come from this snapshot. */
	if (e->status != ST_ENTRY_DELETED && e->has_sequence_number &&
	    (w->min_seq == ST_SEQ_UNASSIGNED || e->sequence_number < w->min_seq))
		w->min_seq = e->sequence_number;
	return 0;
}

static int summarize(const struct st_manifest_writer *w, struct st_manifest_file *mf)
{
	if (w->n_parts == 0)
		return 0;
	mf->partitions = st_calloc(w->alloc, w->n_parts, sizeof(*mf->partitions));
	if (mf->partitions == NULL)
		return -1;
	mf->n_partitions = w->n_parts;
	for (size_t i = 0; i < w->n_parts; i++) {
		const struct part_stat *p = &w->parts[i];
		struct st_field_summary *s = &mf->partitions[i];
		struct st_buf b;

		s->contains_null = p->contains_null;
		s->has_contains_nan = st_type_is_floating(&p->field.type);
		s->contains_nan = p->contains_nan;
		if (!p->has_bounds)
			continue;
		st_buf_init(&b, w->alloc);
		if (st_value_serialize(&p->field.type, &p->min, &b) != 0 ||
		    st_buf_put_u8(&b, 0) != 0)
			goto fail;
		s->lower = b.data;
		s->lower_len = b.len - 1;
		s->has_lower = true;
		st_buf_init(&b, w->alloc);
		if (st_value_serialize(&p->field.type, &p->max, &b) != 0 ||
		    st_buf_put_u8(&b, 0) != 0)
			goto fail;
		s->upper = b.data;
		s->upper_len = b.len - 1;
		s->has_upper = true;
		continue;
	fail:
		st_buf_free(&b);
		return -1;
	}
	return 0;
}

int st_manifest_writer_close(struct st_manifest_writer *w, struct st_manifest_file *mf,
                             struct fl_err *err)
{
	struct st_manifest_file r = {0};
	uint64_t len = 0;
	int rc = -1;

	if (w->broken) {
		fl_err_set(err, FL_ERR_NOMEM, "manifest: the writer failed earlier");
		goto out;
	}
	if (st_avro_writer_close(w->avro, &len, err) != 0) {
		w->avro = NULL;
		fl_err_prefix(err, "manifest");
		goto out;
	}
	w->avro = NULL;
	r.manifest_length = (int64_t)len;
	r.partition_spec_id = w->spec_id;
	r.content = w->content;
	r.sequence_number = ST_SEQ_UNASSIGNED;
	r.min_sequence_number = w->min_seq;
	r.added_snapshot_id = w->snapshot_id;
	r.added_files_count = w->added_files;
	r.existing_files_count = w->existing_files;
	r.deleted_files_count = w->deleted_files;
	r.added_rows_count = w->added_rows;
	r.existing_rows_count = w->existing_rows;
	r.deleted_rows_count = w->deleted_rows;
	if (summarize(w, &r) != 0) {
		st_manifest_file_release(&r, w->alloc);
		fl_err_set(err, FL_ERR_NOMEM, "manifest: out of memory");
		goto out;
	}
	*mf = r;
	rc = 0;
out:
	st_manifest_writer_free(w);
	return rc;
}
