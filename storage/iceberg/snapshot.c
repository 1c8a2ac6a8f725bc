/* snapshot.c - the append snapshot builder.
 *
 * Files produced (apache/iceberg format/spec.md):
 *   <metadata dir>/<uuid>-m0.avro: one manifest (manifest.c) of the new data
 *     files, all ADDED, snapshot_id set, sequence numbers null so that they
 *     inherit the list's ("Sequence Number Inheritance"); written once.
 *   <metadata dir>/snap-<id>-<attempt>-<uuid>.avro: the manifest list
 *     (manifest_list.c): the new manifest first, with sequence numbers
 *     ST_SEQ_UNASSIGNED (= this snapshot's), then each manifest of the
 *     parent's list as read with avro/reader.c, re-encoded in this format
 *     version's schema with its own sequence numbers, counts, partition
 *     summaries, key_metadata and first_row_id.
 * And the Snapshot JSON of an add-snapshot update ("Snapshots", Appendix F).
 *
 * Invariants: a carried manifest's pointers (path, bounds, key metadata)
 * live in the parent's decoded records or in buffers owned by `struct
 * carried` until the list is written; totals are the parent's totals plus
 * the added counts, every one computed the same way whether the parent
 * summary had it or it was recomputed from the parent's files. */
#include "snapshot.h"

#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "avro/reader.h"
#include "base/sink.h"
#include "iceberg/entry.h"
#include "iceberg/manifest.h"
#include "io/io.h"
#include "json.h"
#include "uuid.h"

#define DEFAULT_READ_BYTES ((size_t)64 << 20)
#define MAX_SCHEMA_DEPTH 32 /* struct nesting searched for a partition source */

/* ---- helpers ----------------------------------------------------------- */

static size_t read_bound(const struct st_snapshot_table *t)
{
	return t->max_read_bytes > 0 ? t->max_read_bytes : DEFAULT_READ_BYTES;
}

/* Strings from json_dumps come from jansson's allocator. */
static void json_text_free(char *s)
{
	json_free_t f = NULL;

	json_get_alloc_funcs(NULL, &f);
	if (s != NULL && f != NULL)
		f(s);
}

/* dir + "/" + name1 + name2, without doubling the slash. */
static char *join_path(const struct st_alloc *a, const char *dir, const char *name1,
                       const char *name2)
{
	size_t d = strlen(dir), n1 = strlen(name1), n2 = strlen(name2);
	char *s;

	while (d > 0 && dir[d - 1] == '/')
		d--;
	s = st_malloc(a, d + 1 + n1 + n2 + 1);
	if (s == NULL)
		return NULL;
	memcpy(s, dir, d);
	s[d] = '/';
	memcpy(s + d + 1, name1, n1);
	memcpy(s + d + 1 + n1, name2, n2 + 1);
	return s;
}

/* *acc += v; -1 (and *acc unchanged) on overflow. */
static int add_checked(int64_t *acc, int64_t v)
{
	int64_t r;

	if (__builtin_add_overflow(*acc, v, &r))
		return -1;
	*acc = r;
	return 0;
}

static int check_table(const struct st_snapshot_table *t, struct fl_err *err)
{
	if (t == NULL || (t->format_version != 2 && t->format_version != 3))
		return fl_err_set(err, FL_ERR_BAD_REQUEST,
		                  "snapshot: format version %d is not supported (2 or 3)",
		                  t != NULL ? t->format_version : 0);
	if (t->metadata_dir == NULL || t->metadata_dir[0] == '\0')
		return fl_err_set(err, FL_ERR_BAD_REQUEST,
		                  "snapshot: the metadata dir is required");
	if (!json_is_object(t->schema))
		return fl_err_set(err, FL_ERR_BAD_REQUEST,
		                  "snapshot: the table schema must be a JSON object");
	return 0;
}

/* ---- partition spec ---------------------------------------------------- */

/* The schema field with id `id`, searching nested structs. */
static const json_t *find_field(const json_t *fields, int64_t id, int depth)
{
	size_t i;
	const json_t *f;

	if (depth > MAX_SCHEMA_DEPTH || !json_is_array(fields))
		return NULL;
	json_array_foreach(fields, i, f)
	{
		const json_t *type = json_object_get(f, "type");
		const json_t *found;

		if (json_integer_value(json_object_get(f, "id")) == id &&
		    json_is_integer(json_object_get(f, "id")))
			return f;
		if (json_is_object(type)) {
			found = find_field(json_object_get(type, "fields"), id, depth + 1);
			if (found != NULL)
				return found;
		}
	}
	return NULL;
}

/* The result type of a transform (spec "Partition Transforms"); day is a
 * date, as the Java and Python writers type it. */
static int result_type(const char *transform, const struct st_type *src, struct st_type *out)
{
	if (strcmp(transform, "identity") == 0 || strcmp(transform, "void") == 0 ||
	    strncmp(transform, "truncate[", 9) == 0) {
		*out = *src;
		return 0;
	}
	memset(out, 0, sizeof(*out));
	if (strncmp(transform, "bucket[", 7) == 0 || strcmp(transform, "year") == 0 ||
	    strcmp(transform, "month") == 0 || strcmp(transform, "hour") == 0) {
		out->id = ST_TYPE_INT;
		return 0;
	}
	if (strcmp(transform, "day") == 0) {
		out->id = ST_TYPE_DATE;
		return 0;
	}
	return -1;
}

/* The spec's fields as the manifest writer wants them; names and
 * transforms borrowed from the spec JSON. */
static int spec_parse(const struct st_snapshot_table *t, struct st_partition_field **out,
                      size_t *n_out, struct fl_err *err)
{
	const json_t *fields = t->spec != NULL ? json_object_get(t->spec, "fields") : NULL;
	struct st_partition_field *pf;
	size_t n, i;
	const json_t *f;

	*out = NULL;
	*n_out = 0;
	if (fields == NULL)
		return 0;
	if (!json_is_array(fields))
		return fl_err_set(err, FL_ERR_BAD_REQUEST,
		                  "snapshot: partition spec fields must be an array");
	n = json_array_size(fields);
	if (n == 0)
		return 0;
	pf = st_calloc(t->alloc, n, sizeof(*pf));
	if (pf == NULL)
		return fl_err_set(err, FL_ERR_NOMEM, "snapshot: out of memory");
	json_array_foreach(fields, i, f)
	{
		const json_t *fid = json_object_get(f, "field-id"),
		             *sid = json_object_get(f, "source-id");
		const char *name = json_string_value(json_object_get(f, "name"));
		const char *transform = json_string_value(json_object_get(f, "transform"));
		const json_t *src;
		const char *src_type;
		struct st_type st;

		if (!json_is_integer(fid) || !json_is_integer(sid) || name == NULL ||
		    transform == NULL) {
			fl_err_set(
			        err, FL_ERR_BAD_REQUEST,
			        "snapshot: partition field %zu needs field-id, source-id, name and "
			        "transform",
			        i);
			goto fail;
		}
		src = find_field(json_object_get(t->schema, "fields"), json_integer_value(sid), 0);
		src_type = json_string_value(json_object_get(src, "type"));
		if (src_type == NULL) {
			fl_err_set(
			        err, FL_ERR_BAD_REQUEST,
			        "snapshot: partition field %s: source field %" JSON_INTEGER_FORMAT
			        " is not a primitive field of the schema",
			        name, json_integer_value(sid));
			goto fail;
		}
		if (st_type_parse(src_type, &st, err) != 0) {
			fl_err_prefix(err, "snapshot: partition field %s", name);
			goto fail;
		}
		if (result_type(transform, &st, &pf[i].type) != 0) {
			fl_err_set(err, FL_ERR_BAD_REQUEST,
			           "snapshot: partition field %s: unknown transform %.64s", name,
			           transform);
			goto fail;
		}
		pf[i].field_id = (int32_t)json_integer_value(fid);
		pf[i].source_id = (int32_t)json_integer_value(sid);
		pf[i].name = name;
		pf[i].transform = transform;
	}
	*out = pf;
	*n_out = n;
	return 0;
fail:
	st_free(t->alloc, pf);
	return -1;
}

static bool bytes_valued(enum st_type_id id)
{
	return id == ST_TYPE_BINARY || id == ST_TYPE_FIXED || id == ST_TYPE_UUID ||
	       id == ST_TYPE_DECIMAL;
}

/* A bytes-valued partition value (base64 text, as avro/reader.h decodes
 * bytes and fixed) into v: its bytes at *tail, which advances; a decimal's
 * big-endian two's complement sign-extended into v->v.dec.  False when the
 * text does not decode or the length does not fit the type. */
static bool bytes_value(const struct st_type *type, const json_t *x, struct st_value *v,
                        uint8_t **tail, struct st_buf *b)
{
	struct fl_err ignored;

	st_buf_reset(b);
	if (!json_is_string(x) ||
	    st_avro_base64_decode(json_string_value(x), json_string_length(x), b, &ignored) != 0)
		return false;
	switch (type->id) {
	case ST_TYPE_DECIMAL:
		if (b->len == 0 || b->len > sizeof(v->v.dec))
			return false;
		memset(v->v.dec, (b->data[0] & 0x80) ? 0xff : 0, sizeof(v->v.dec));
		memcpy(v->v.dec + sizeof(v->v.dec) - b->len, b->data, b->len);
		return true;
	case ST_TYPE_UUID:
		if (b->len != 16)
			return false;
		break;
	case ST_TYPE_FIXED:
		if (b->len != type->length)
			return false;
		break;
	default: break;
	}
	if (b->len > 0)
		memcpy(*tail, b->data, b->len);
	v->v.bin.p = *tail;
	v->v.bin.len = b->len;
	*tail += b->len;
	return true;
}

bool st_snapshot_table_with_spec(const struct st_snapshot_table *t, const json_t *meta, int32_t id,
                                 struct st_snapshot_table *out)
{
	const json_t *spec =
	        fl_json_find_int(json_object_get(meta, "partition-specs"), "spec-id", id);

	if (spec == NULL)
		return false;
	*out = *t;
	out->spec = spec;
	out->spec_id = id;
	return true;
}

int st_snapshot_partition_parse(const struct st_snapshot_table *t, const json_t *rec,
                                struct st_value **out, size_t *n_out, struct fl_err *err)
{
	struct st_partition_field *spec = NULL;
	struct st_value *v = NULL;
	struct st_buf b;
	uint8_t *tail;
	size_t n = 0, room = 0;
	int rc = -1;

	*out = NULL;
	*n_out = 0;
	st_buf_init(&b, t->alloc);
	if (spec_parse(t, &spec, &n, err) != 0)
		return -1;
	if (n == 0)
		return 0;
	/* Room for the decoded bytes after the values, so that one st_free
	 * releases both: base64 decodes to at most 3 bytes per 4. */
	for (size_t i = 0; i < n; i++) {
		const json_t *x = json_object_get(rec, spec[i].name);

		if (bytes_valued(spec[i].type.id) && json_is_string(x))
			room += json_string_length(x) / 4 * 3 + 3;
	}
	v = st_calloc(t->alloc, 1, n * sizeof(*v) + room);
	if (v == NULL) {
		fl_err_set(err, FL_ERR_NOMEM, "snapshot: out of memory");
		goto out;
	}
	tail = (uint8_t *)(v + n);
	for (size_t i = 0; i < n; i++) {
		const json_t *x = json_object_get(rec, spec[i].name);
		bool ok;

		if (x == NULL || json_is_null(x)) {
			v[i].null = true;
			continue;
		}
		switch (spec[i].type.id) {
		case ST_TYPE_BOOLEAN:
			ok = json_is_boolean(x);
			v[i].v.b = json_is_true(x);
			break;
		case ST_TYPE_INT:
		case ST_TYPE_DATE:
			ok = json_is_integer(x) && json_integer_value(x) >= INT32_MIN &&
			     json_integer_value(x) <= INT32_MAX;
			v[i].v.i = (int32_t)json_integer_value(x);
			break;
		case ST_TYPE_LONG:
		case ST_TYPE_TIME:
		case ST_TYPE_TIMESTAMP:
		case ST_TYPE_TIMESTAMPTZ:
		case ST_TYPE_TIMESTAMP_NS:
		case ST_TYPE_TIMESTAMPTZ_NS:
			ok = json_is_integer(x);
			v[i].v.l = json_integer_value(x);
			break;
		case ST_TYPE_FLOAT:
		case ST_TYPE_DOUBLE:
			ok = json_is_number(x);
			if (spec[i].type.id == ST_TYPE_FLOAT)
				v[i].v.f = (float)json_number_value(x);
			else
				v[i].v.d = json_number_value(x);
			break;
		case ST_TYPE_STRING:
			ok = json_is_string(x);
			v[i].v.bin.p = (const uint8_t *)json_string_value(x);
			v[i].v.bin.len = json_string_length(x);
			break;
		case ST_TYPE_BINARY:
		case ST_TYPE_FIXED:
		case ST_TYPE_UUID:
		case ST_TYPE_DECIMAL: ok = bytes_value(&spec[i].type, x, &v[i], &tail, &b); break;
		default:
			fl_err_set(err, FL_ERR_UNSUPPORTED,
			           "snapshot: partition field %s: its type is not supported here",
			           spec[i].name);
			goto out;
		}
		if (!ok) {
			fl_err_set(err, FL_ERR_BAD_REQUEST,
			           "snapshot: partition field %s: the value does not fit its type",
			           spec[i].name);
			goto out;
		}
	}
	*out = v;
	*n_out = n;
	v = NULL;
	rc = 0;
out:
	st_buf_free(&b);
	st_free(t->alloc, v);
	st_free(t->alloc, spec);
	return rc;
}

static bool value_equal(const struct st_type *t, const struct st_value *a, const struct st_value *b)
{
	if (a->null || b->null)
		return a->null == b->null;
	if (t->id == ST_TYPE_FLOAT && (isnan(a->v.f) || isnan(b->v.f)))
		return isnan(a->v.f) && isnan(b->v.f);
	if (t->id == ST_TYPE_DOUBLE && (isnan(a->v.d) || isnan(b->v.d)))
		return isnan(a->v.d) && isnan(b->v.d);
	return st_value_compare(t, a, b) == 0;
}

/* Distinct partition tuples among the files (Java's changed-partition-count). */
static int64_t count_partitions(const struct st_partition_field *spec, size_t n_spec,
                                const struct st_data_file *files, size_t n)
{
	int64_t count = 0;

	for (size_t i = 0; i < n; i++) {
		bool seen = false;

		for (size_t j = 0; j < i && !seen; j++) {
			bool same = true;

			for (size_t k = 0; k < n_spec && same; k++)
				same = value_equal(&spec[k].type, &files[i].partition[k],
				                   &files[j].partition[k]);
			seen = same;
		}
		count += !seen;
	}
	return count;
}

/* ---- the new manifest -------------------------------------------------- */

void st_snapshot_manifest_free(struct st_snapshot_manifest *m)
{
	if (m == NULL)
		return;
	st_manifest_file_release(&m->file, m->alloc);
	st_free(m->alloc, m->path);
	st_free(m->alloc, m);
}

int st_snapshot_manifest_write(const struct st_snapshot_table *t, int64_t snapshot_id,
                               const struct st_data_file *files, size_t n,
                               struct st_snapshot_manifest **out, struct fl_err *err)
{
	return st_snapshot_manifest_write_replace(t, snapshot_id, files, n, NULL, 0, out, err);
}

int st_snapshot_manifest_write_replace(const struct st_snapshot_table *t, int64_t snapshot_id,
                                       const struct st_data_file *files, size_t n,
                                       const struct st_manifest_entry *deleted, size_t n_deleted,
                                       struct st_snapshot_manifest **out, struct fl_err *err)
{
	return st_snapshot_manifest_write_rewrite(t, snapshot_id, ST_MANIFEST_DATA, files, n, NULL,
	                                          0, deleted, n_deleted, out, err);
}

int st_snapshot_manifest_write_removed_deletes(const struct st_snapshot_table *t,
                                               int64_t snapshot_id,
                                               const struct st_manifest_entry *deleted,
                                               size_t n_deleted, struct st_snapshot_manifest **out,
                                               struct fl_err *err)
{
	return st_snapshot_manifest_write_rewrite(t, snapshot_id, ST_MANIFEST_DELETES, NULL, 0,
	                                          NULL, 0, deleted, n_deleted, out, err);
}

/* An EXISTING or DELETED entry must say where it came from. */
static int check_carried(const struct st_manifest_entry *e, enum st_manifest_content content,
                         const char *what, struct fl_err *err)
{
	if (e->file == NULL ||
	    (e->file->content == ST_CONTENT_DATA) != (content == ST_MANIFEST_DATA) ||
	    !e->has_snapshot_id || !e->has_sequence_number)
		return fl_err_set(err, FL_ERR_BAD_REQUEST,
		                  "snapshot: a %s file needs a %s file, its snapshot id and its "
		                  "sequence number",
		                  what, content == ST_MANIFEST_DATA ? "data" : "delete");
	return 0;
}

int st_snapshot_manifest_write_rewrite(const struct st_snapshot_table *t, int64_t snapshot_id,
                                       enum st_manifest_content content,
                                       const struct st_data_file *files, size_t n,
                                       const struct st_manifest_entry *kept, size_t n_kept,
                                       const struct st_manifest_entry *deleted, size_t n_deleted,
                                       struct st_snapshot_manifest **out, struct fl_err *err)
{
	struct st_partition_field *spec = NULL;
	size_t n_spec = 0;
	struct st_manifest_opts mo = {0};
	struct st_manifest_writer *w = NULL;
	struct st_snapshot_manifest *m = NULL;
	struct st_buf buf;
	char *schema = NULL;
	char uuid[FL_UUID_STR];
	int rc = -1;

	if (check_table(t, err) != 0)
		return -1;
	st_buf_init(&buf, t->alloc);
	if (n + n_kept + n_deleted == 0 || (n > 0 && files == NULL) ||
	    (n > 0 && content != ST_MANIFEST_DATA))
		return fl_err_set(err, FL_ERR_BAD_REQUEST, "snapshot: a manifest needs data files");
	for (size_t i = 0; i < n; i++) {
		if (files[i].content != ST_CONTENT_DATA)
			return fl_err_set(
			        err, FL_ERR_BAD_REQUEST,
			        "snapshot: %.200s is a delete file; an append adds data files",
			        files[i].file_path != NULL ? files[i].file_path : "(no path)");
	}
	if (spec_parse(t, &spec, &n_spec, err) != 0)
		return -1;
	m = st_calloc(t->alloc, 1, sizeof(*m));
	if (m == NULL)
		goto nomem;
	m->alloc = t->alloc;
	schema = fl_json_dump(t->schema, NULL);
	if (schema == NULL)
		goto nomem;
	m->snapshot_id = snapshot_id;
	fl_uuid_v4(uuid);
	m->path = join_path(t->alloc, t->metadata_dir, uuid, "-m0.avro");
	if (m->path == NULL)
		goto nomem;
	mo.format_version = t->format_version;
	mo.content = content;
	mo.schema_json = schema;
	mo.schema_id = t->schema_id;
	mo.spec_id = t->spec_id;
	mo.spec = spec;
	mo.n_spec = n_spec;
	mo.snapshot_id = snapshot_id;
	mo.codec = t->codec;
	mo.alloc = t->alloc;
	st_sink_to_buf(&mo.sink, &buf);
	if (st_manifest_writer_open(&mo, &w, err) != 0)
		goto fail;
	for (size_t i = 0; i < n; i++) {
		struct st_manifest_entry e = {0};

		e.status = ST_ENTRY_ADDED;
		e.file = &files[i];
		if (st_manifest_writer_add(w, &e, err) != 0)
			goto fail;
		if (__builtin_add_overflow(m->added_files_size, files[i].file_size_in_bytes,
		                           &m->added_files_size)) {
			fl_err_set(err, FL_ERR_BAD_REQUEST, "snapshot: file sizes overflow");
			goto fail;
		}
	}
	for (size_t i = 0; i < n_kept; i++) {
		struct st_manifest_entry e = kept[i];

		e.status = ST_ENTRY_EXISTING;
		if (check_carried(&e, content, "kept", err) != 0 ||
		    st_manifest_writer_add(w, &e, err) != 0)
			goto fail;
	}
	for (size_t i = 0; i < n_deleted; i++) {
		struct st_manifest_entry e = deleted[i];

		e.status = ST_ENTRY_DELETED;
		if (check_carried(&e, content, "removed", err) != 0)
			goto fail;
		/* Spec "Manifests": snapshot_id is the snapshot where the file
		 * was "deleted if status is 2" (Java's removedDataFiles and its
		 * expiry's incremental cleanup read it so); the sequence
		 * numbers stay the file's. */
		e.snapshot_id = snapshot_id;
		if (st_manifest_writer_add(w, &e, err) != 0)
			goto fail;
		if (__builtin_add_overflow(m->removed_files_size, e.file->file_size_in_bytes,
		                           &m->removed_files_size)) {
			fl_err_set(err, FL_ERR_BAD_REQUEST, "snapshot: file sizes overflow");
			goto fail;
		}
		if (e.file->content == ST_CONTENT_EQUALITY_DELETES)
			m->removed_eq_deletes += e.file->record_count;
	}
	m->changed_partitions = count_partitions(spec, n_spec, files, n);
	rc = st_manifest_writer_close(w, &m->file, err);
	w = NULL;
	if (rc != 0)
		goto fail;
	m->file.manifest_path = m->path;
	if (st_io_write_new_pending(t->io, m->path, buf.data, buf.len, t->pending, err) != 0) {
		fl_err_prefix(err, "snapshot: manifest");
		goto fail;
	}
	*out = m;
	m = NULL;
	rc = 0;
	goto out;
nomem:
	fl_err_set(err, FL_ERR_NOMEM, "snapshot: out of memory");
fail:
	rc = -1;
out:
	st_manifest_writer_free(w);
	st_snapshot_manifest_free(m);
	json_text_free(schema);
	st_free(t->alloc, spec);
	st_buf_free(&buf);
	return rc;
}

/* ---- the parent's manifest list ---------------------------------------- */

/* One manifest of the parent's list, ready for the list writer. */
struct carried {
	struct st_manifest_file mf;
	struct st_buf key; /* key_metadata bytes */
};

struct parent {
	json_t *records; /* the decoded list: mf pointers point into it */
	struct carried *c;
	size_t n;
	/* Totals recomputed from the list's counts. */
	int64_t data_files, delete_files, records_count;
	bool has_deletes;
	const struct st_alloc *alloc;
};

static void parent_free(struct parent *p)
{
	for (size_t i = 0; i < p->n; i++) {
		st_manifest_file_release(&p->c[i].mf, p->alloc);
		st_buf_free(&p->c[i].key);
	}
	st_free(p->alloc, p->c);
	json_decref(p->records);
	memset(p, 0, sizeof(*p));
}

/* Reads a whole Avro file and decodes all its records into *out. */
static int read_avro(const struct st_snapshot_table *t, const char *uri, json_t **out,
                     struct fl_err *err)
{
	struct st_avro_reader_opts ro = {0};

	ro.alloc = t->alloc;
	if (st_avro_read_all(t->io, uri, read_bound(t), &ro, out, err) != 0)
		return fl_err_prefix(err, "snapshot");
	return 0;
}

/* An integer field (name, or the v1 name alt); null or absent gives dflt
 * unless required. */
static int get_long(const json_t *rec, const char *name, const char *alt, bool required,
                    int64_t dflt, int64_t *out, struct fl_err *err)
{
	const json_t *v = json_object_get(rec, name);

	if (v == NULL && alt != NULL)
		v = json_object_get(rec, alt);
	if (v == NULL || json_is_null(v)) {
		if (required)
			return fl_err_set(err, FL_ERR_BAD_REQUEST, "%s is missing", name);
		*out = dflt;
		return 0;
	}
	if (!json_is_integer(v))
		return fl_err_set(err, FL_ERR_BAD_REQUEST, "%s is not an integer", name);
	*out = json_integer_value(v);
	return 0;
}

static int get_int(const json_t *rec, const char *name, const char *alt, bool required,
                   int32_t *out, struct fl_err *err)
{
	int64_t v = 0;

	if (get_long(rec, name, alt, required, 0, &v, err) != 0)
		return -1;
	if (v < INT32_MIN || v > INT32_MAX)
		return fl_err_set(err, FL_ERR_BAD_REQUEST, "%s is out of range", name);
	*out = (int32_t)v;
	return 0;
}

/* Decodes an optional base64 bytes field into b (non-NULL data even when
 * empty); *has tells whether it was present. */
static int get_bytes(const json_t *rec, const char *name, struct st_buf *b, bool *has,
                     struct fl_err *err)
{
	const json_t *v = json_object_get(rec, name);

	*has = false;
	if (v == NULL || json_is_null(v))
		return 0;
	if (!json_is_string(v))
		return fl_err_set(err, FL_ERR_BAD_REQUEST, "%s is not bytes", name);
	if (st_buf_reserve(b, 1) != 0)
		return fl_err_set(err, FL_ERR_NOMEM, "out of memory");
	if (st_avro_base64_decode(json_string_value(v), json_string_length(v), b, err) != 0)
		return fl_err_prefix(err, "%s", name);
	*has = true;
	return 0;
}

static int convert_partitions(const json_t *parts, struct st_manifest_file *mf,
                              const struct st_alloc *a, struct fl_err *err)
{
	size_t i;
	const json_t *s;

	if (parts == NULL || json_is_null(parts))
		return 0;
	if (!json_is_array(parts))
		return fl_err_set(err, FL_ERR_BAD_REQUEST, "partitions is not an array");
	if (json_array_size(parts) == 0)
		return 0;
	mf->partitions = st_calloc(a, json_array_size(parts), sizeof(*mf->partitions));
	if (mf->partitions == NULL)
		return fl_err_set(err, FL_ERR_NOMEM, "out of memory");
	json_array_foreach(parts, i, s)
	{
		struct st_field_summary *fs = &mf->partitions[i];
		const json_t *cn = json_object_get(s, "contains_null");
		const json_t *nan = json_object_get(s, "contains_nan");
		struct st_buf lo, hi;

		mf->n_partitions++;
		if (!json_is_boolean(cn))
			return fl_err_set(err, FL_ERR_BAD_REQUEST,
			                  "partitions[%zu].contains_null is not a boolean", i);
		fs->contains_null = json_is_true(cn);
		if (json_is_boolean(nan)) {
			fs->has_contains_nan = true;
			fs->contains_nan = json_is_true(nan);
		}
		/* Decoded straight into buffers that the summary then owns, so
		 * st_manifest_file_release frees them. */
		st_buf_init(&lo, a);
		st_buf_init(&hi, a);
		if (get_bytes(s, "lower_bound", &lo, &fs->has_lower, err) != 0) {
			st_buf_free(&lo);
			return -1;
		}
		fs->lower = lo.data;
		fs->lower_len = lo.len;
		if (get_bytes(s, "upper_bound", &hi, &fs->has_upper, err) != 0) {
			st_buf_free(&hi);
			return -1;
		}
		fs->upper = hi.data;
		fs->upper_len = hi.len;
	}
	return 0;
}

/* One manifest_file record of the parent list.  Names are those of the v2
 * and v3 schemas, with the v1 names of the file counts as fallbacks; v1
 * lists have no content or sequence numbers, which the spec defines as
 * data and 0. */
static int convert(const json_t *rec, struct carried *c, const struct st_alloc *a,
                   struct fl_err *err)
{
	struct st_manifest_file *mf = &c->mf;
	int32_t content = 0;
	bool has_key = false;
	const json_t *frid;

	mf->manifest_path = json_string_value(json_object_get(rec, "manifest_path"));
	if (mf->manifest_path == NULL)
		return fl_err_set(err, FL_ERR_BAD_REQUEST, "manifest_path is missing");
	if (get_long(rec, "manifest_length", NULL, true, 0, &mf->manifest_length, err) != 0 ||
	    get_int(rec, "partition_spec_id", NULL, true, &mf->partition_spec_id, err) != 0 ||
	    get_int(rec, "content", NULL, false, &content, err) != 0 ||
	    get_long(rec, "sequence_number", NULL, false, 0, &mf->sequence_number, err) != 0 ||
	    get_long(rec, "min_sequence_number", NULL, false, 0, &mf->min_sequence_number, err) !=
	            0 ||
	    get_long(rec, "added_snapshot_id", NULL, true, 0, &mf->added_snapshot_id, err) != 0 ||
	    get_int(rec, "added_files_count", "added_data_files_count", false,
	            &mf->added_files_count, err) != 0 ||
	    get_int(rec, "existing_files_count", "existing_data_files_count", false,
	            &mf->existing_files_count, err) != 0 ||
	    get_int(rec, "deleted_files_count", "deleted_data_files_count", false,
	            &mf->deleted_files_count, err) != 0 ||
	    get_long(rec, "added_rows_count", NULL, false, 0, &mf->added_rows_count, err) != 0 ||
	    get_long(rec, "existing_rows_count", NULL, false, 0, &mf->existing_rows_count, err) !=
	            0 ||
	    get_long(rec, "deleted_rows_count", NULL, false, 0, &mf->deleted_rows_count, err) != 0)
		return -1;
	if (content != ST_MANIFEST_DATA && content != ST_MANIFEST_DELETES)
		return fl_err_set(err, FL_ERR_BAD_REQUEST, "content %" PRId32 " is unknown",
		                  content);
	mf->content = (enum st_manifest_content)content;
	if (mf->sequence_number < 0 || mf->min_sequence_number < 0)
		return fl_err_set(err, FL_ERR_BAD_REQUEST, "sequence numbers must not be negative");
	if (convert_partitions(json_object_get(rec, "partitions"), mf, a, err) != 0)
		return -1;
	if (get_bytes(rec, "key_metadata", &c->key, &has_key, err) != 0)
		return -1;
	if (has_key) {
		mf->key_metadata = c->key.data;
		mf->key_metadata_len = c->key.len;
	}
	frid = json_object_get(rec, "first_row_id");
	if (frid != NULL && !json_is_null(frid)) {
		if (!json_is_integer(frid))
			return fl_err_set(err, FL_ERR_BAD_REQUEST,
			                  "first_row_id is not an integer");
		mf->has_first_row_id = true;
		mf->first_row_id = json_integer_value(frid);
	}
	return 0;
}

static int parent_load(const struct st_snapshot_table *t, const char *uri, struct parent *p,
                       struct fl_err *err)
{
	size_t i;
	const json_t *rec;

	p->alloc = t->alloc;
	if (read_avro(t, uri, &p->records, err) != 0)
		return -1;
	if (json_array_size(p->records) == 0)
		return 0;
	p->c = st_calloc(t->alloc, json_array_size(p->records), sizeof(*p->c));
	if (p->c == NULL)
		return fl_err_set(err, FL_ERR_NOMEM, "snapshot: out of memory");
	json_array_foreach(p->records, i, rec)
	{
		struct carried *c = &p->c[i];
		const struct st_manifest_file *mf = &c->mf;
		bool bad;

		st_buf_init(&c->key, t->alloc);
		p->n++;
		if (convert(rec, c, t->alloc, err) != 0)
			return fl_err_prefix(err, "snapshot: manifest list %.200s: manifest %zu",
			                     uri, i);
		if (mf->content == ST_MANIFEST_DATA) {
			bad = add_checked(&p->data_files, mf->added_files_count) ||
			      add_checked(&p->data_files, mf->existing_files_count) ||
			      add_checked(&p->records_count, mf->added_rows_count) ||
			      add_checked(&p->records_count, mf->existing_rows_count);
		} else {
			bad = add_checked(&p->delete_files, mf->added_files_count) ||
			      add_checked(&p->delete_files, mf->existing_files_count);
			p->has_deletes = true;
		}
		if (bad)
			return fl_err_set(err, FL_ERR_BAD_REQUEST,
			                  "snapshot: manifest list %.200s: counts overflow", uri);
	}
	return 0;
}

int st_snapshot_added_rows(const struct st_snapshot_table *t, const char *uri, int64_t first,
                           int64_t *added, struct fl_err *err)
{
	struct parent p = {0};
	int64_t end = first, unnumbered = 0;
	int rc = -1;

	if (first < 0)
		return fl_err_set(err, FL_ERR_BAD_REQUEST,
		                  "snapshot: first-row-id %" PRId64 " must not be negative", first);
	if (parent_load(t, uri, &p, err) != 0)
		goto out;
	for (size_t i = 0; i < p.n; i++) {
		const struct st_manifest_file *mf = &p.c[i].mf;
		int64_t rows = 0, span_end = 0;

		if (mf->content != ST_MANIFEST_DATA)
			continue;
		if (mf->added_rows_count < 0 || mf->existing_rows_count < 0 ||
		    add_checked(&rows, mf->added_rows_count) ||
		    add_checked(&rows, mf->existing_rows_count)) {
			fl_err_set(
			        err, FL_ERR_BAD_REQUEST,
			        "snapshot: manifest list %.200s: manifest %zu has bad row counts",
			        uri, i);
			goto out;
		}
		if (!mf->has_first_row_id) {
			if (add_checked(&unnumbered, rows))
				goto overflow;
		} else if (mf->first_row_id >= first) {
			span_end = mf->first_row_id;
			if (add_checked(&span_end, rows))
				goto overflow;
			if (span_end > end)
				end = span_end;
		}
	}
	if (add_checked(&unnumbered, end - first))
		goto overflow;
	*added = unnumbered;
	rc = 0;
	goto out;
overflow:
	fl_err_set(err, FL_ERR_BAD_REQUEST, "snapshot: manifest list %.200s: row ids overflow",
	           uri);
out:
	parent_free(&p);
	return rc;
}

/* Live-file sums over the parent's manifests, for totals the parent
 * summary lacks: sizes of data and delete files, position- and
 * equality-delete record counts. */
static int parent_scan(const struct st_snapshot_table *t, const struct parent *p, bool sizes,
                       int64_t *size, int64_t *pos, int64_t *eq, struct fl_err *err)
{
	*size = *pos = *eq = 0;
	for (size_t i = 0; i < p->n; i++) {
		const char *uri = p->c[i].mf.manifest_path;
		json_t *entries = NULL;
		size_t k;
		const json_t *e;

		if (!sizes && p->c[i].mf.content == ST_MANIFEST_DATA)
			continue;
		if (read_avro(t, uri, &entries, err) != 0)
			return -1;
		json_array_foreach(entries, k, e)
		{
			const json_t *df = json_object_get(e, "data_file");
			int64_t status = 0, content = 0, records = 0, bytes = 0;

			if (get_long(e, "status", NULL, true, 0, &status, err) != 0 ||
			    get_long(df, "content", NULL, false, 0, &content, err) != 0 ||
			    get_long(df, "record_count", NULL, true, 0, &records, err) != 0 ||
			    get_long(df, "file_size_in_bytes", NULL, true, 0, &bytes, err) != 0) {
				json_decref(entries);
				return fl_err_prefix(err, "snapshot: %.200s: entry %zu", uri, k);
			}
			if (status == ST_ENTRY_DELETED)
				continue;
			if (add_checked(size, bytes) ||
			    (content == ST_CONTENT_POSITION_DELETES && add_checked(pos, records)) ||
			    (content == ST_CONTENT_EQUALITY_DELETES && add_checked(eq, records))) {
				json_decref(entries);
				return fl_err_set(err, FL_ERR_BAD_REQUEST,
				                  "snapshot: %.200s: sums overflow", uri);
			}
		}
		json_decref(entries);
	}
	return 0;
}

/* ---- the summary ------------------------------------------------------- */

enum total {
	T_RECORDS,
	T_FILES_SIZE,
	T_DATA_FILES,
	T_DELETE_FILES,
	T_POS_DELETES,
	T_EQ_DELETES,
	N_TOTALS
};

static const char *const total_keys[N_TOTALS] = {
        "total-records",      "total-files-size",       "total-data-files",
        "total-delete-files", "total-position-deletes", "total-equality-deletes",
};

static const char *const computed_keys[] = {
        "operation",
        "added-data-files",
        "added-records",
        "added-files-size",
        "changed-partition-count",
        "total-records",
        "total-files-size",
        "total-data-files",
        "total-delete-files",
        "total-position-deletes",
        "total-equality-deletes",
        "deleted-data-files",
        "deleted-records",
        "removed-files-size",
        "removed-delete-files",
        "removed-position-deletes",
        "removed-equality-deletes",
};

/* A summary value: a decimal string of a non-negative long. */
static bool summary_long(const json_t *summary, const char *key, int64_t *out)
{
	const char *s = json_string_value(json_object_get(summary, key));
	char *end;
	long long v;

	if (s == NULL || s[0] < '0' || s[0] > '9')
		return false;
	errno = 0;
	v = strtoll(s, &end, 10);
	if (errno != 0 || *end != '\0')
		return false;
	*out = v;
	return true;
}

static int compute_totals(const struct st_snapshot_opts *o, const struct parent *p,
                          const int64_t added[N_TOTALS], int64_t out[N_TOTALS], struct fl_err *err)
{
	int64_t base[N_TOTALS] = {0};
	bool have[N_TOTALS] = {false};
	bool need_scan = false, need_sizes = false;

	if (o->parent != NULL) {
		for (int k = 0; k < N_TOTALS; k++)
			have[k] = summary_long(o->parent->summary, total_keys[k], &base[k]);
		if (!have[T_RECORDS])
			base[T_RECORDS] = p->records_count;
		if (!have[T_DATA_FILES])
			base[T_DATA_FILES] = p->data_files;
		if (!have[T_DELETE_FILES])
			base[T_DELETE_FILES] = p->delete_files;
		need_sizes = !have[T_FILES_SIZE];
		need_scan = need_sizes ||
		            (p->has_deletes && (!have[T_POS_DELETES] || !have[T_EQ_DELETES]));
	}
	if (need_scan) {
		int64_t size, pos, eq;

		if (parent_scan(o->table, p, need_sizes, &size, &pos, &eq, err) != 0)
			return -1;
		if (!have[T_FILES_SIZE])
			base[T_FILES_SIZE] = size;
		if (!have[T_POS_DELETES])
			base[T_POS_DELETES] = pos;
		if (!have[T_EQ_DELETES])
			base[T_EQ_DELETES] = eq;
	}
	for (int k = 0; k < N_TOTALS; k++) {
		if (__builtin_add_overflow(base[k], added[k], &out[k]))
			return fl_err_set(err, FL_ERR_BAD_REQUEST, "snapshot: %s overflows",
			                  total_keys[k]);
	}
	return 0;
}

static int put_long_str(json_t *obj, const char *key, int64_t v)
{
	char s[24];

	snprintf(s, sizeof(s), "%" PRId64, v);
	return json_object_set_new(obj, key, json_string(s));
}

static int check_extra(const json_t *extra, struct fl_err *err)
{
	const char *key;
	const json_t *v;

	if (extra == NULL)
		return 0;
	if (!json_is_object(extra))
		return fl_err_set(err, FL_ERR_BAD_REQUEST,
		                  "snapshot: extra summary properties must be an object");
	json_object_foreach((json_t *)extra, key, v)
	{
		if (!json_is_string(v))
			return fl_err_set(err, FL_ERR_BAD_REQUEST,
			                  "snapshot: summary property %.64s is not a string", key);
		for (size_t i = 0; i < sizeof(computed_keys) / sizeof(computed_keys[0]); i++) {
			if (strcmp(key, computed_keys[i]) == 0)
				return fl_err_set(
				        err, FL_ERR_BAD_REQUEST,
				        "snapshot: summary property %s is computed by the "
				        "snapshot builder",
				        key);
		}
	}
	return 0;
}

/* The counts of the snapshot's manifests of one content, the first
 * (manifest, or removed_deletes) and those of more, added together into
 * *sum; NULL when there is none. */
static const struct st_snapshot_manifest *sum_counts(const struct st_snapshot_opts *o,
                                                     const struct st_snapshot_manifest *first,
                                                     struct st_snapshot_manifest *sum)
{
	bool any = false;

	if (first == NULL)
		return NULL;
	*sum = *first;
	for (size_t i = 0; i < o->n_more; i++) {
		const struct st_snapshot_manifest *m = o->more[i];

		if (m->file.content != first->file.content)
			continue;
		any = true;
		sum->file.added_files_count += m->file.added_files_count;
		sum->file.deleted_files_count += m->file.deleted_files_count;
		sum->file.added_rows_count += m->file.added_rows_count;
		sum->file.deleted_rows_count += m->file.deleted_rows_count;
		sum->added_files_size += m->added_files_size;
		sum->removed_files_size += m->removed_files_size;
		sum->removed_eq_deletes += m->removed_eq_deletes;
		sum->changed_partitions += m->changed_partitions;
	}
	return any ? sum : first;
}

/* m, rd: the counts of the new data manifests and of the removed delete
 * files (sum_counts). */
static json_t *make_summary(const struct st_snapshot_opts *o, const struct st_snapshot_manifest *m,
                            const struct st_snapshot_manifest *rd, const int64_t totals[N_TOTALS])
{
	json_t *s = json_object();
	const char *key;
	json_t *v;
	int bad = s == NULL;

	if (!bad)
		bad = json_object_set_new(s, "operation",
		                          json_string(o->operation != NULL ? o->operation
		                                      : o->n_drop > 0      ? "replace"
		                                                           : "append"));
	if (!bad && m != NULL)
		bad = put_long_str(s, "added-data-files", m->file.added_files_count) ||
		      put_long_str(s, "added-records", m->file.added_rows_count) ||
		      put_long_str(s, "added-files-size", m->added_files_size);
	if (!bad && m != NULL && m->file.deleted_files_count > 0)
		bad = put_long_str(s, "deleted-data-files", m->file.deleted_files_count) ||
		      put_long_str(s, "deleted-records", m->file.deleted_rows_count);
	if (!bad && ((m != NULL && m->file.deleted_files_count > 0) || rd != NULL))
		bad = put_long_str(s, "removed-files-size",
		                   (m != NULL ? m->removed_files_size : 0) +
		                           (rd != NULL ? rd->removed_files_size : 0));
	if (!bad && rd != NULL)
		bad = put_long_str(s, "removed-delete-files", rd->file.deleted_files_count) ||
		      put_long_str(s, "removed-position-deletes",
		                   rd->file.deleted_rows_count - rd->removed_eq_deletes) ||
		      (rd->removed_eq_deletes > 0 &&
		       put_long_str(s, "removed-equality-deletes", rd->removed_eq_deletes));
	if (!bad)
		bad = put_long_str(s, "changed-partition-count",
		                   m != NULL ? m->changed_partitions : 0);
	for (int k = 0; k < N_TOTALS && !bad; k++)
		bad = put_long_str(s, total_keys[k], totals[k]);
	if (!bad && o->extra_summary != NULL) {
		json_object_foreach((json_t *)o->extra_summary, key, v)
		{
			if (json_object_set(s, key, v) != 0) {
				bad = 1;
				break;
			}
		}
	}
	if (bad) {
		json_decref(s);
		return NULL;
	}
	return s;
}

/* ---- the snapshot ------------------------------------------------------ */

static int check_opts(const struct st_snapshot_opts *o, struct fl_err *err)
{
	if (o == NULL || check_table(o->table, err) != 0)
		return o == NULL ? fl_err_set(err, FL_ERR_BAD_REQUEST, "snapshot: no options") : -1;
	if (o->attempt < 1)
		return fl_err_set(err, FL_ERR_BAD_REQUEST,
		                  "snapshot: attempt %d; attempts count from 1", o->attempt);
	if (o->sequence_number < 1)
		return fl_err_set(err, FL_ERR_BAD_REQUEST,
		                  "snapshot: sequence number %" PRId64 " must be positive",
		                  o->sequence_number);
	if (o->table->format_version >= 3 && o->first_row_id < 0)
		return fl_err_set(err, FL_ERR_BAD_REQUEST,
		                  "snapshot: first-row-id %" PRId64 " must not be negative",
		                  o->first_row_id);
	if (o->parent != NULL &&
	    (o->parent->manifest_list == NULL || o->parent->manifest_list[0] == '\0'))
		return fl_err_set(err, FL_ERR_BAD_REQUEST,
		                  "snapshot: parent snapshot %" PRId64 " has no manifest list",
		                  o->parent->snapshot_id);
	if (o->parent != NULL && o->parent->snapshot_id == o->snapshot_id)
		return fl_err_set(err, FL_ERR_BAD_REQUEST,
		                  "snapshot: snapshot %" PRId64 " cannot be its own parent",
		                  o->snapshot_id);
	if (o->manifest != NULL && o->manifest->snapshot_id != o->snapshot_id)
		return fl_err_set(err, FL_ERR_BAD_REQUEST,
		                  "snapshot: the manifest belongs to snapshot %" PRId64
		                  ", not %" PRId64,
		                  o->manifest->snapshot_id, o->snapshot_id);
	for (size_t i = 0; i < o->n_more; i++) {
		const struct st_snapshot_manifest *m = o->more[i];
		bool data = m != NULL && m->file.content == ST_MANIFEST_DATA;

		if (m == NULL || m->snapshot_id != o->snapshot_id ||
		    (data ? o->manifest == NULL : o->removed_deletes == NULL))
			return fl_err_set(
			        err, FL_ERR_BAD_REQUEST,
			        "snapshot: further manifest %zu is not of snapshot %" PRId64
			        " beside its manifest or removed delete files",
			        i, o->snapshot_id);
	}
	if (o->removed_deletes != NULL &&
	    (o->removed_deletes->snapshot_id != o->snapshot_id || o->n_drop == 0 ||
	     o->removed_deletes->file.content != ST_MANIFEST_DELETES))
		return fl_err_set(err, FL_ERR_BAD_REQUEST,
		                  "snapshot: removed delete files belong to a replace of this "
		                  "snapshot, in a delete manifest");
	for (size_t i = 0; i < o->n_merged; i++) {
		if (o->merged[i] == NULL || o->merged[i]->snapshot_id != o->snapshot_id)
			return fl_err_set(err, FL_ERR_BAD_REQUEST,
			                  "snapshot: merged manifest %zu does not belong to "
			                  "snapshot %" PRId64,
			                  i, o->snapshot_id);
	}
	if (o->n_merged > 0 && o->n_drop == 0)
		return fl_err_set(err, FL_ERR_BAD_REQUEST,
		                  "snapshot: merged manifests must replace manifests");
	return check_extra(o->extra_summary, err);
}

static bool dropped(const struct st_snapshot_opts *o, const char *path)
{
	for (size_t i = 0; i < o->n_drop; i++) {
		if (strcmp(o->drop_manifests[i], path) == 0)
			return true;
	}
	return false;
}

/* Every manifest a replace drops must be in the parent's list: else a
 * commit since the plan has removed or rewritten it, and its files may no
 * longer be live. */
static int check_dropped(const struct st_snapshot_opts *o, const struct parent *p,
                         struct fl_err *err)
{
	for (size_t i = 0; i < o->n_drop; i++) {
		size_t k = 0;

		while (k < p->n && strcmp(p->c[k].mf.manifest_path, o->drop_manifests[i]) != 0)
			k++;
		if (k == p->n)
			return fl_err_set(err, FL_ERR_CONFLICT,
			                  "snapshot: manifest %.200s is no longer in the current "
			                  "snapshot: files it held were removed or rewritten since",
			                  o->drop_manifests[i]);
		/* Dropping deletes resurrects rows unless the replace removes
		 * them on purpose (their data files are rewritten) or merges
		 * them into a new manifest. */
		if (p->c[k].mf.content != ST_MANIFEST_DATA && o->removed_deletes == NULL &&
		    o->n_merged == 0)
			return fl_err_set(err, FL_ERR_BAD_REQUEST,
			                  "snapshot: manifest %.200s holds delete files",
			                  o->drop_manifests[i]);
	}
	return 0;
}

static int write_list(const struct st_snapshot_opts *o, const struct parent *p, const char *path,
                      int64_t *next_row_id, struct fl_err *err)
{
	struct st_manifest_list_opts lo = {0};
	struct st_manifest_list_writer *w = NULL;
	struct st_buf buf;
	int rc = -1;

	st_buf_init(&buf, o->table->alloc);
	lo.format_version = o->table->format_version;
	lo.snapshot_id = o->snapshot_id;
	lo.has_parent = o->parent != NULL;
	lo.parent_snapshot_id = o->parent != NULL ? o->parent->snapshot_id : 0;
	lo.sequence_number = o->sequence_number;
	lo.first_row_id = o->first_row_id;
	lo.codec = o->table->codec;
	lo.alloc = o->table->alloc;
	st_sink_to_buf(&lo.sink, &buf);
	if (st_manifest_list_writer_open(&lo, &w, err) != 0)
		goto out;
	if (o->manifest != NULL && st_manifest_list_writer_add(w, &o->manifest->file, err) != 0)
		goto out;
	for (size_t i = 0; i < o->n_more; i++) {
		if (st_manifest_list_writer_add(w, &o->more[i]->file, err) != 0)
			goto out;
	}
	if (o->removed_deletes != NULL &&
	    st_manifest_list_writer_add(w, &o->removed_deletes->file, err) != 0)
		goto out;
	for (size_t i = 0; i < o->n_merged; i++) {
		if (st_manifest_list_writer_add(w, &o->merged[i]->file, err) != 0)
			goto out;
	}
	for (size_t i = 0; i < p->n; i++) {
		if (!dropped(o, p->c[i].mf.manifest_path) &&
		    st_manifest_list_writer_add(w, &p->c[i].mf, err) != 0)
			goto out;
	}
	rc = st_manifest_list_writer_close(w, NULL, next_row_id, err);
	w = NULL;
	if (rc != 0)
		goto out;
	rc = st_io_write_new_pending(o->table->io, path, buf.data, buf.len, o->table->pending, err);
	if (rc != 0)
		fl_err_prefix(err, "snapshot: manifest list");
out:
	st_manifest_list_writer_free(w);
	st_buf_free(&buf);
	return rc;
}

/* Whether the parent's list already holds new manifest m: an earlier
 * attempt of this snapshot was committed (FL_ERR_CONFLICT). */
static bool already_listed(const struct st_snapshot_opts *o, const struct parent *p,
                           const struct st_snapshot_manifest *m, struct fl_err *err)
{
	for (size_t i = 0; i < p->n; i++) {
		if (strcmp(p->c[i].mf.manifest_path, m->path) == 0) {
			fl_err_set(
			        err, FL_ERR_CONFLICT,
			        "snapshot: parent snapshot %" PRId64
			        " already holds manifest %.200s: an earlier attempt was committed",
			        o->parent->snapshot_id, m->path);
			return true;
		}
	}
	return false;
}

int st_snapshot_build(const struct st_snapshot_opts *o, json_t **snapshot, struct fl_err *err)
{
	struct st_snapshot_manifest sum, rsum;
	const struct st_snapshot_manifest *m, *rd;
	struct parent p = {0};
	int64_t added[N_TOTALS] = {0}, totals[N_TOTALS];
	int64_t next_row_id = 0;
	char uuid[FL_UUID_STR], name[96], tail[FL_UUID_STR + 8];
	char *path = NULL;
	json_t *snap = NULL, *summary = NULL;
	int rc = -1;

	if (check_opts(o, err) != 0)
		return -1;
	if (o->parent != NULL && parent_load(o->table, o->parent->manifest_list, &p, err) != 0)
		goto out;
	if ((o->manifest != NULL && already_listed(o, &p, o->manifest, err)) ||
	    (o->n_merged > 0 && already_listed(o, &p, o->merged[0], err)))
		goto out;
	if (o->n_drop > 0 && (o->parent == NULL || check_dropped(o, &p, err) != 0)) {
		if (o->parent == NULL)
			fl_err_set(err, FL_ERR_BAD_REQUEST, "snapshot: a replace needs a parent");
		goto out;
	}
	m = sum_counts(o, o->manifest, &sum);
	rd = sum_counts(o, o->removed_deletes, &rsum);
	if (m != NULL) {
		added[T_RECORDS] = m->file.added_rows_count - m->file.deleted_rows_count;
		added[T_FILES_SIZE] = m->added_files_size - m->removed_files_size;
		added[T_DATA_FILES] =
		        (int64_t)m->file.added_files_count - m->file.deleted_files_count;
	}
	if (rd != NULL) {
		added[T_FILES_SIZE] -= rd->removed_files_size;
		added[T_DELETE_FILES] = -(int64_t)rd->file.deleted_files_count;
		added[T_POS_DELETES] = -(rd->file.deleted_rows_count - rd->removed_eq_deletes);
		added[T_EQ_DELETES] = -rd->removed_eq_deletes;
	}
	if (compute_totals(o, &p, added, totals, err) != 0)
		goto out;
	fl_uuid_v4(uuid);
	snprintf(name, sizeof(name), "snap-%" PRId64 "-%d-", o->snapshot_id, o->attempt);
	snprintf(tail, sizeof(tail), "%s.avro", uuid);
	path = join_path(o->table->alloc, o->table->metadata_dir, name, tail);
	if (path == NULL) {
		fl_err_set(err, FL_ERR_NOMEM, "snapshot: out of memory");
		goto out;
	}
	if (write_list(o, &p, path, &next_row_id, err) != 0)
		goto out;

	summary = make_summary(o, m, rd, totals);
	snap = json_object();
	if (summary == NULL || snap == NULL ||
	    json_object_set_new(snap, "snapshot-id", json_integer(o->snapshot_id)) != 0 ||
	    (o->parent != NULL && json_object_set_new(snap, "parent-snapshot-id",
	                                              json_integer(o->parent->snapshot_id)) != 0) ||
	    json_object_set_new(snap, "sequence-number", json_integer(o->sequence_number)) != 0 ||
	    json_object_set_new(snap, "timestamp-ms", json_integer(o->timestamp_ms)) != 0 ||
	    json_object_set_new(snap, "manifest-list", json_string(path)) != 0 ||
	    json_object_set_new(snap, "schema-id", json_integer(o->table->schema_id)) != 0 ||
	    json_object_set(snap, "summary", summary) != 0 ||
	    (o->table->format_version >= 3 &&
	     (json_object_set_new(snap, "first-row-id", json_integer(o->first_row_id)) != 0 ||
	      json_object_set_new(snap, "added-rows",
	                          json_integer(next_row_id - o->first_row_id)) != 0))) {
		fl_err_set(err, FL_ERR_NOMEM, "snapshot: out of memory");
		goto out;
	}
	*snapshot = snap;
	snap = NULL;
	rc = 0;
out:
	json_decref(summary);
	json_decref(snap);
	st_free(o->table->alloc, path);
	parent_free(&p);
	return rc;
}

/* ---- manifest rewrite -------------------------------------------------- */

/* The live entries of a manifest being merged, kept until the merged
 * manifest is written (their strings point into the decoded manifests). */
struct merging {
	json_t *decoded; /* every manifest read, kept alive */
	struct st_entry_copy *copies;
	struct st_value **parts;
	struct st_manifest_entry *kept;
	size_t n, cap;
	const struct st_alloc *alloc;
};

static void merging_free(struct merging *g)
{
	for (size_t i = 0; i < g->n; i++) {
		st_entry_copy_free(&g->copies[i]);
		st_free(g->alloc, g->parts[i]);
	}
	st_free(g->alloc, g->copies);
	st_free(g->alloc, g->parts);
	st_free(g->alloc, g->kept);
	json_decref(g->decoded);
}

static int merging_grow(struct merging *g)
{
	size_t cap = g->cap ? g->cap * 2 : 64;
	void *c = st_realloc(g->alloc, g->copies, cap * sizeof(*g->copies));

	if (c == NULL)
		return -1;
	g->copies = c;
	c = st_realloc(g->alloc, g->parts, cap * sizeof(*g->parts));
	if (c == NULL)
		return -1;
	g->parts = c;
	g->cap = cap;
	return 0;
}

/* Adds the live entries of the manifest that list record rec describes
 * (iceberg/entry.h carries every field). */
static int merge_one(const struct st_snapshot_table *t, const json_t *rec, struct merging *g,
                     struct fl_err *err)
{
	const char *uri = json_string_value(json_object_get(rec, "manifest_path"));
	const json_t *frid = json_object_get(rec, "first_row_id"), *e;
	int64_t next_row_id = json_integer_value(frid);
	json_t *all = NULL;
	size_t i;

	if (uri == NULL)
		return fl_err_set(err, FL_ERR_BAD_REQUEST, "snapshot: a manifest lacks its path");
	if (read_avro(t, uri, &all, err) != 0)
		return -1;
	if (json_array_append_new(g->decoded, all) != 0)
		return fl_err_set(err, FL_ERR_NOMEM, "snapshot: out of memory");
	json_array_foreach(all, i, e)
	{
		struct st_entry_copy c;
		struct st_value *part = NULL;
		size_t np = 0;

		if (g->n == g->cap && merging_grow(g) != 0)
			return fl_err_set(err, FL_ERR_NOMEM, "snapshot: out of memory");
		if (st_entry_copy_from_json(e, rec, t->alloc, &c, err) != 0)
			return fl_err_prefix(err, "snapshot: manifest %.200s: entry %zu", uri, i);
		/* spec "First Row ID Inheritance": a data file without one
		 * gets the manifest's plus the rows of the files before it
		 * that had none (DELETED ones too); an EXISTING entry must
		 * carry it. */
		if (t->format_version >= 3 && json_is_integer(frid) &&
		    c.file.content == ST_CONTENT_DATA && !c.file.has_first_row_id) {
			c.file.has_first_row_id = true;
			c.file.first_row_id = next_row_id;
			next_row_id += c.file.record_count;
		}
		if (c.entry.status == ST_ENTRY_DELETED) {
			st_entry_copy_free(&c);
			continue;
		}
		if (st_snapshot_partition_parse(
		            t, json_object_get(json_object_get(e, "data_file"), "partition"), &part,
		            &np, err) != 0) {
			st_entry_copy_free(&c);
			return fl_err_prefix(err, "snapshot: manifest %.200s: entry %zu", uri, i);
		}
		g->copies[g->n] = c;
		g->parts[g->n] = part;
		g->n++;
	}
	return 0;
}

int st_snapshot_manifest_merge(const struct st_snapshot_table *t, int64_t snapshot_id,
                               const json_t *const *records, size_t n,
                               struct st_snapshot_manifest **out, int64_t *entries,
                               struct fl_err *err)
{
	struct merging g = {.alloc = t->alloc};
	int32_t content = 0;
	int rc = -1;

	if (check_table(t, err) != 0)
		return -1;
	if (n == 0)
		return fl_err_set(err, FL_ERR_BAD_REQUEST, "snapshot: no manifests to merge");
	for (size_t i = 0; i < n; i++) {
		int32_t spec_id = -1, c = 0;

		if (get_int(records[i], "partition_spec_id", NULL, true, &spec_id, err) != 0 ||
		    get_int(records[i], "content", NULL, false, &c, err) != 0)
			return fl_err_prefix(err, "snapshot: manifest %zu to merge", i);
		if (i == 0)
			content = c;
		if (spec_id != t->spec_id || c != content ||
		    (c != ST_MANIFEST_DATA && c != ST_MANIFEST_DELETES))
			return fl_err_set(
			        err, FL_ERR_BAD_REQUEST,
			        "snapshot: manifests merged together must share partition "
			        "spec %" PRId32 " and one content",
			        t->spec_id);
	}
	g.decoded = json_array();
	if (g.decoded == NULL) {
		fl_err_set(err, FL_ERR_NOMEM, "snapshot: out of memory");
		goto out;
	}
	for (size_t i = 0; i < n; i++) {
		if (merge_one(t, records[i], &g, err) != 0)
			goto out;
	}
	*entries = (int64_t)g.n;
	if (g.n == 0) {
		*out = NULL;
		rc = 0;
		goto out;
	}
	g.kept = st_calloc(t->alloc, g.n, sizeof(*g.kept));
	if (g.kept == NULL) {
		fl_err_set(err, FL_ERR_NOMEM, "snapshot: out of memory");
		goto out;
	}
	for (size_t i = 0; i < g.n; i++) {
		g.copies[i].file.partition = g.parts[i];
		g.kept[i] = g.copies[i].entry;
		g.kept[i].file = &g.copies[i].file;
	}
	rc = st_snapshot_manifest_write_rewrite(t, snapshot_id, (enum st_manifest_content)content,
	                                        NULL, 0, g.kept, g.n, NULL, 0, out, err);
out:
	merging_free(&g);
	return rc;
}
