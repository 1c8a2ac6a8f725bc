/* ingest.c - feed files to Parquet data files.
 *
 * One pass over the inputs (two when evolving, to learn the new columns
 * first).  Per record: the reader's own verdict (malformed CSV, bad JSON,
 * invalid UTF-8), the field count against the header, a cast of every value
 * to its column's Iceberg type, the required-column check, and the Parquet
 * writer's own checks.  A record that fails any of them is rejected as a
 * whole: in strict mode the run fails and deletes what it wrote; in
 * dead-letter mode the record's exact input bytes are appended to the
 * dead-letter file and the reason to its ".errors.ndjson" sidecar.
 *
 * Invariants: a record is either in exactly one Parquet file or in the
 * dead-letter file, never both and never neither; memory is bounded by one
 * record plus the Parquet writer's row group. */
#include "ingest.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "feed/cast.h"
#include "feed/csv.h"
#include "feed/infer.h"
#include "feed/ndjson.h"
#include "iceberg/transform.h"
#include "json.h"
#include "uuid.h"
#include "base/workq.h"

#define DEFAULT_TARGET_FILE_BYTES (512ULL << 20)

struct col {
	const char *name;
	int32_t id;
	struct st_type type;
	bool required;
	bool key; /* an upsert key column: null is refused */
};

struct part_field {
	size_t col; /* source column */
	struct st_transform tr;
	struct st_type type; /* the transform's result type */
};

/* A data file created with its first row group: the Parquet writer's
 * magic, all it writes at open, waits in head until then, so that a run
 * writes nothing before its gate (st_ingest_opts.gate) has passed, and a
 * gate that waits for the batch's identity overlaps the first row group's
 * read.  Allocated apart from struct output, which moves. */
struct lazy_file {
	struct run *r;
	const char *uri;
	struct st_io_writer *file; /* NULL until the first row group */
	uint8_t head[8];
	size_t head_len;
};

/* One open Parquet file, for one partition tuple. */
struct output {
	struct st_parquet_writer *w;
	struct lazy_file *lazy;
	char *uri;
	uint8_t *key; /* the serialized partition tuple: identity of this output */
	size_t key_len;
	struct st_value *tuple; /* copies; bytes live in key */
	int64_t *order; /* with row_order: its rows' ordinals among the rows written */
	size_t norder, caporder;
};

/* Open files at most; past this all are finished (and new ones started as
 * rows arrive), which bounds memory by row groups × this. */
#define MAX_OPEN_OUTPUTS 16

struct run {
	const struct st_ingest_opts *o;
	struct st_ingest_result *res;
	json_t *schema; /* what is written: the table's schema, maybe evolved */
	struct col *cols;
	size_t ncols;
	struct st_parquet_column *pcols;
	char *schema_json;
	char batch[FL_UUID_STR];
	unsigned file_seq;
	/* Partitioning: one entry per spec field, and the files being written,
	 * one per partition tuple seen recently. */
	struct part_field *pf;
	size_t npf;
	struct output *outs;
	size_t nouts;
	struct st_workq *workq; /* the encoders of every output (threads > 1) */
	struct st_value *tuple; /* the current row's partition tuple */
	struct st_buf key; /* its serialized form */
	/* The row being assembled. */
	struct st_value *row;
	struct st_cast_scratch scratch;
	/* Dead letters, opened on the first rejected record. */
	FILE *dl;
	FILE *dle;
	/* Progress: inputs finished so far and their bytes. */
	struct st_ingest_progress prog;
	uint64_t bytes_done;
	bool gated; /* o->gate has passed */
	bool gate_failed; /* ... or failed, with gate_err, which the run reports */
	struct fl_err gate_err;
};

/* Calls o->gate before the run's first byte is written. */
static int pass_gate(struct run *r, struct fl_err *err)
{
	if (r->gated || r->o->gate == NULL)
		return 0;
	if (r->gate_failed || r->o->gate(r->o->gate_ctx, &r->gate_err) != 0) {
		r->gate_failed = true;
		*err = r->gate_err;
		return -1;
	}
	r->gated = true;
	return 0;
}

/* Reads the schema's fields into cols; nested types are refused. */
static int load_columns(struct run *r, struct fl_err *err)
{
	json_t *fields = json_object_get(r->schema, "fields"), *f;
	size_t i;

	if (!json_is_array(fields) || json_array_size(fields) == 0)
		return fl_err_set(err, FL_ERR_BAD_REQUEST, "the table schema has no fields");
	free(r->cols);
	r->ncols = json_array_size(fields);
	r->cols = calloc(r->ncols, sizeof(*r->cols));
	if (r->cols == NULL)
		return fl_err_set(err, FL_ERR_NOMEM, "out of memory");
	json_array_foreach(fields, i, f)
	{
		struct col *c = &r->cols[i];
		const char *type = json_string_value(json_object_get(f, "type"));

		c->name = json_string_value(json_object_get(f, "name"));
		c->id = (int32_t)json_integer_value(json_object_get(f, "id"));
		c->required = json_is_true(json_object_get(f, "required"));
		for (size_t k = 0; k < r->o->n_key_ids; k++)
			c->key = c->key || r->o->key_ids[k] == c->id;
		if (c->name == NULL)
			return fl_err_set(err, FL_ERR_BAD_REQUEST, "schema field %zu has no name",
			                  i);
		if (type == NULL)
			return fl_err_set(
			        err, FL_ERR_UNSUPPORTED,
			        "column '%.100s' has a nested type; ingest writes primitive columns only",
			        c->name);
		if (st_type_parse(type, &c->type, err) != 0)
			return fl_err_prefix(err, "column '%.100s'", c->name);
	}
	return 0;
}

static int find_col(const struct run *r, const char *name, size_t len)
{
	for (size_t i = 0; i < r->ncols; i++)
		if (strlen(r->cols[i].name) == len && memcmp(r->cols[i].name, name, len) == 0)
			return (int)i;
	return -1;
}

/* Appends an optional column named name (len bytes) of type to the schema. */
static int evolve_add(struct run *r, const char *name, size_t len, const char *type,
                      struct fl_err *err)
{
	json_t *fields = json_object_get(r->schema, "fields");
	json_t *f =
	        json_pack("{s:I, s:s%, s:b, s:s}", "id", (json_int_t)(r->res->last_column_id + 1),
	                  "name", name, len, "required", 0, "type", type);

	if (f == NULL || json_array_append_new(fields, f) != 0)
		return fl_err_set(err, FL_ERR_NOMEM, "out of memory");
	r->res->last_column_id++;
	r->res->evolved = true;
	return load_columns(r, err);
}

static int unknown_column(struct run *r, const char *name, size_t len, const char *file,
                          struct fl_err *err)
{
	switch (r->o->new_columns) {
	case ST_NEW_COLUMNS_IGNORE: return 0;
	case ST_NEW_COLUMNS_EVOLVE: return evolve_add(r, name, len, "string", err);
	case ST_NEW_COLUMNS_REJECT: break;
	}
	return fl_err_set(
	        err, FL_ERR_BAD_REQUEST,
	        "%s: input column '%.*s' is not in the table schema (use --new-columns ignore or evolve)",
	        file, (int)(len > 100 ? 100 : len), name);
}

/* ---- inputs ---- */

struct input {
	int fd;
	struct st_fd_source src;
	struct st_csv_reader *csv;
	struct st_ndjson_reader *nd;
};

static int input_open(struct run *r, const char *path, struct input *in, struct fl_err *err)
{
	struct stat st;

	memset(in, 0, sizeof(*in));
	in->fd = open(path, O_RDONLY | O_CLOEXEC);
	if (in->fd < 0)
		return fl_err_set(err, FL_ERR_BAD_REQUEST, "cannot open %.200s: %s", path,
		                  strerror(errno));
	if (fstat(in->fd, &st) == 0)
		r->res->bytes_in += (uint64_t)st.st_size;
	st_fd_source_init(&in->src, in->fd, path);
	if (r->o->format == ST_INGEST_CSV) {
		struct st_csv_opts co = {
		        .source = &in->src.source, .delimiter = r->o->delimiter, .header = true};

		if (st_csv_reader_open(&co, &in->csv, err) != 0)
			goto fail;
	} else {
		struct st_ndjson_opts no = {.source = &in->src.source};

		if (st_ndjson_reader_open(&no, &in->nd, err) != 0)
			goto fail;
	}
	return 0;
fail:
	close(in->fd);
	in->fd = -1;
	return -1;
}

static void input_close(struct input *in)
{
	st_csv_reader_free(in->csv);
	st_ndjson_reader_free(in->nd);
	if (in->fd >= 0)
		close(in->fd);
	memset(in, 0, sizeof(*in));
	in->fd = -1;
}

/* Reports progress every 4096 records (the callback decides what to show);
 * in = the input being read. */
static void tick(struct run *r, const struct input *in)
{
	if (r->o->progress == NULL || (++r->prog.records & 4095) != 0)
		return;
	r->prog.bytes_read = r->bytes_done + in->src.bytes_read;
	r->o->progress(r->o->progress_ctx, &r->prog);
}

/* The inputs' total size, for progress (unreadable ones count 0: opening
 * them reports the error). */
static void progress_start(struct run *r, const char *const *inputs, size_t n)
{
	struct stat st;

	for (size_t k = 0; k < n && r->o->progress != NULL; k++)
		if (stat(inputs[k], &st) == 0)
			r->prog.bytes_total += (uint64_t)st.st_size;
}

/* Feeds one input's rows to inf when it has columns the schema lacks;
 * *any = whether it has.  Rows the inference refuses are skipped (the write
 * pass rejects them by the usual rules). */
static int infer_input(struct run *r, struct input *in, struct st_infer *inf, bool *any,
                       struct fl_err *err)
{
	int got;

	if (in->csv != NULL) {
		const struct st_csv_record *h = st_csv_reader_header(in->csv), *rec;

		for (size_t i = 0; h != NULL && i < h->n_fields; i++)
			*any = *any || find_col(r, h->fields[i].p, h->fields[i].len) < 0;
		if (!*any || st_infer_csv_header(inf, h, err) != 0)
			return *any ? -1 : 0;
		while ((got = st_csv_reader_next(in->csv, &rec, err)) == 0 && rec != NULL)
			if (rec->error == NULL && st_infer_csv_row(inf, rec, err) != 0) {
				if (err->kind != FL_ERR_BAD_REQUEST)
					return -1;
				fl_err_clear(err);
			}
		return got;
	}
	const struct st_ndjson_record *rec;

	while ((got = st_ndjson_reader_next(in->nd, &rec, err)) == 0 && rec != NULL) {
		const char *key;
		json_t *v;

		if (rec->obj == NULL)
			continue;
		json_object_foreach(rec->obj, key, v)
		{
			*any = *any || find_col(r, key, strlen(key)) < 0;
		}
		if (st_infer_json_object(inf, rec->obj, err) != 0) {
			if (err->kind != FL_ERR_BAD_REQUEST)
				return -1;
			fl_err_clear(err);
		}
	}
	return got;
}

/* Adds to found (name -> type) the columns of one input's inferred schema
 * that the table lacks, joining their types with those other inputs gave. */
static int note_new_columns(struct run *r, json_t *found, const json_t *inferred,
                            struct fl_err *err)
{
	size_t i;
	json_t *f;

	json_array_foreach(json_object_get(inferred, "fields"), i, f)
	{
		const char *name = json_string_value(json_object_get(f, "name"));
		const char *type = json_string_value(json_object_get(f, "type"));

		if (name == NULL || type == NULL || find_col(r, name, strlen(name)) >= 0)
			continue;
		type = st_infer_join_type(json_string_value(json_object_get(found, name)), type);
		if (json_object_set_new(found, name, json_string(type)) != 0)
			return fl_err_set(err, FL_ERR_NOMEM, "out of memory");
	}
	return 0;
}

/* Evolve mode: reads the inputs once before writing and adds every column
 * the schema lacks, typed from the values seen for it in all the inputs
 * (the inference's rules: long, double, boolean, date, timestamp,
 * timestamptz; disagreeing inputs widen, and string is the fallback), in
 * the order first seen. */
static int prescan(struct run *r, const char *const *inputs, size_t n, struct fl_err *err)
{
	json_t *found = json_object(), *t;
	const char *name;
	int rc = -1;

	if (found == NULL)
		return fl_err_set(err, FL_ERR_NOMEM, "out of memory");
	for (size_t k = 0; k < n; k++) {
		struct st_infer *inf = NULL;
		json_t *inferred = NULL;
		struct input in;
		bool any = false;
		int frc;

		if (input_open(r, inputs[k], &in, err) != 0)
			goto out;
		frc = st_infer_open(NULL, 0, &inf, err);
		if (frc == 0)
			frc = infer_input(r, &in, inf, &any, err);
		if (frc == 0 && any && st_infer_rows(inf) + (in.csv != NULL) > 0)
			frc = st_infer_schema(inf, &inferred, err);
		if (frc == 0 && inferred != NULL)
			frc = note_new_columns(r, found, inferred, err);
		json_decref(inferred);
		st_infer_free(inf);
		r->res->bytes_in = 0;
		input_close(&in);
		if (frc != 0) {
			fl_err_prefix(err, "%.200s", inputs[k]);
			goto out;
		}
	}
	json_object_foreach(found, name, t)
	{
		if (evolve_add(r, name, strlen(name), json_string_value(t), err) != 0)
			goto out;
	}
	rc = 0;
out:
	json_decref(found);
	return rc;
}

/* ---- Parquet output ---- */

/* The sink of a lazy file: creates it, once its gate has passed, when more
 * than the head arrives. */
static int lazy_write(void *ctx, const void *p, size_t n, struct fl_err *err)
{
	struct lazy_file *lf = ctx;
	struct st_io_writer *file = NULL;
	struct st_sink *sink;

	if (lf->file == NULL) {
		if (lf->head_len + n <= sizeof(lf->head)) {
			memcpy(lf->head + lf->head_len, p, n);
			lf->head_len += n;
			return 0;
		}
		if (pass_gate(lf->r, err) != 0 ||
		    st_io_writer_open(lf->r->o->io, lf->uri, &file, err) != 0)
			return -1;
		lf->file = file;
		sink = st_io_writer_sink(file);
		if (lf->head_len > 0 && sink->write(sink->ctx, lf->head, lf->head_len, err) != 0)
			return -1;
	}
	sink = st_io_writer_sink(lf->file);
	return sink->write(sink->ctx, p, n, err);
}

/* Frees lf, deleting its file if it was created. */
static void lazy_abort(struct lazy_file *lf)
{
	if (lf != NULL)
		st_io_writer_abort(lf->file);
	free(lf);
}

static void output_drop(struct output *o)
{
	free(o->uri);
	free(o->key);
	free(o->tuple);
	free(o->order);
	memset(o, 0, sizeof(*o));
}

/* Notes that the row just written to o is the rows_ok-th written. */
static int note_order(struct run *r, struct output *o, struct fl_err *err)
{
	if (o->norder == o->caporder) {
		size_t cap = o->caporder ? o->caporder * 2 : 1024;
		int64_t *grown = realloc(o->order, cap * sizeof(*grown));

		if (grown == NULL)
			return fl_err_set(err, FL_ERR_NOMEM, "out of memory");
		o->order = grown;
		o->caporder = cap;
	}
	o->order[o->norder++] = (int64_t)r->res->rows_ok;
	return 0;
}

/* Opens a new Parquet file for the current row's partition tuple. */
static int output_open(struct run *r, struct output *o, struct fl_err *err)
{
	struct st_parquet_opts po = {0};
	int n;

	memset(o, 0, sizeof(*o));
	n = snprintf(NULL, 0, "%s/%s-%05u.parquet", r->o->data_uri, r->batch, r->file_seq);
	o->uri = malloc((size_t)n + 1);
	o->key = malloc(r->key.len ? r->key.len : 1);
	o->tuple = calloc(r->npf ? r->npf : 1, sizeof(*o->tuple));
	if (o->uri == NULL || o->key == NULL || o->tuple == NULL) {
		output_drop(o);
		return fl_err_set(err, FL_ERR_NOMEM, "out of memory");
	}
	snprintf(o->uri, (size_t)n + 1, "%s/%s-%05u.parquet", r->o->data_uri, r->batch,
	         r->file_seq++);
	if (r->key.len > 0)
		memcpy(o->key, r->key.data, r->key.len);
	o->key_len = r->key.len;
	/* The tuple's bytes must outlive the row: point them into our key copy. */
	for (size_t i = 0, off = 0; i < r->npf; i++) {
		o->tuple[i] = r->tuple[i];
		off++; /* the null flag */
		if (!r->tuple[i].null) {
			uint32_t len;

			memcpy(&len, o->key + off, 4);
			off += 4;
			if (r->pf[i].type.id == ST_TYPE_STRING ||
			    r->pf[i].type.id == ST_TYPE_BINARY ||
			    r->pf[i].type.id == ST_TYPE_FIXED || r->pf[i].type.id == ST_TYPE_UUID)
				o->tuple[i].v.bin.p = o->key + off;
			off += len;
		}
	}
	o->lazy = calloc(1, sizeof(*o->lazy));
	if (o->lazy == NULL) {
		output_drop(o);
		return fl_err_set(err, FL_ERR_NOMEM, "out of memory");
	}
	o->lazy->r = r;
	o->lazy->uri = o->uri;
	po.columns = r->pcols;
	po.n_columns = r->ncols;
	po.iceberg_schema_json = r->schema_json;
	po.codec = r->o->codec;
	po.compression_level = r->o->compression_level;
	/* Strings reach the writer only through the cast, which validated them
	 * (or the CSV reader did): skip the writer's own UTF-8 pass. */
	po.utf8_checked = true;
	/* Partitioned runs keep up to MAX_OPEN_OUTPUTS files open: share the
	 * row-group budget between them so memory stays bounded. */
	po.row_group_bytes = r->o->row_group_bytes;
	if (r->npf > 0 && po.row_group_bytes > 0)
		po.row_group_bytes = po.row_group_bytes / MAX_OPEN_OUTPUTS > (1u << 20)
		                             ? po.row_group_bytes / MAX_OPEN_OUTPUTS
		                             : (1u << 20);
	po.sink.write = lazy_write;
	po.sink.ctx = o->lazy;
	po.workq = r->workq;
	if (st_parquet_writer_open(&po, &o->w, err) != 0) {
		lazy_abort(o->lazy);
		output_drop(o);
		return -1;
	}
	return 0;
}

/* Finishes o's file and records it in the result. */
static int output_close(struct run *r, struct output *o, struct fl_err *err)
{
	struct st_ingest_file *grown, *f;
	struct st_parquet_metrics m = {0};
	struct fl_err ignored;
	int rc;

	rc = st_parquet_writer_close(o->w, &m, err);
	o->w = NULL;
	/* The footer is more than the head: a closed writer made its file. */
	if (rc == 0 && o->lazy->file == NULL)
		rc = fl_err_set(err, FL_ERR_INTERNAL, "ingest: %s was never created", o->uri);
	if (rc != 0) {
		lazy_abort(o->lazy);
	} else {
		if (st_io_writer_close_pending(o->lazy->file, NULL, r->o->pending, err) != 0)
			rc = -1;
		free(o->lazy);
	}
	o->lazy = NULL;
	grown = rc == 0 ? realloc(r->res->files, sizeof(*grown) * (r->res->n_files + 1)) : NULL;
	if (rc != 0 || grown == NULL) {
		if (rc == 0 && st_io_delete(r->o->io, o->uri, &ignored) != 0)
			ignored.kind = FL_ERR_NONE;
		st_parquet_metrics_free(&m);
		output_drop(o);
		return rc != 0 ? -1 : fl_err_set(err, FL_ERR_NOMEM, "out of memory");
	}
	r->res->files = grown;
	f = &grown[r->res->n_files++];
	memset(f, 0, sizeof(*f));
	f->uri = o->uri;
	f->m = m;
	f->partition = r->npf ? o->tuple : NULL;
	f->n_partition = r->npf;
	f->partition_bytes = o->key;
	f->order = o->order;
	r->res->bytes_out += (uint64_t)m.file_size;
	if (r->npf == 0) {
		free(o->tuple);
		free(o->key);
		f->partition_bytes = NULL;
	}
	memset(o, 0, sizeof(*o));
	return 0;
}

static int outputs_close_all(struct run *r, struct fl_err *err)
{
	int rc = 0;

	for (size_t i = 0; i < r->nouts; i++)
		if (r->outs[i].w != NULL && output_close(r, &r->outs[i], err) != 0)
			rc = -1;
	r->nouts = 0;
	return rc;
}

/* Computes the row's partition tuple and its key; 0, or -1 on OOM. */
static int partition_key(struct run *r, struct fl_err *err)
{
	st_buf_reset(&r->key);
	for (size_t i = 0; i < r->npf; i++) {
		struct st_value *t = &r->tuple[i];
		size_t at;
		uint32_t len;

		st_transform_apply(&r->pf[i].tr, &r->cols[r->pf[i].col].type, &r->row[r->pf[i].col],
		                   t);
		if (st_buf_append(&r->key, t->null ? "\0" : "\1", 1) != 0)
			return fl_err_set(err, FL_ERR_NOMEM, "out of memory");
		if (t->null)
			continue;
		at = r->key.len;
		if (st_buf_append(&r->key, "\0\0\0\0", 4) != 0 ||
		    st_value_serialize(&r->pf[i].type, t, &r->key) != 0)
			return fl_err_set(err, FL_ERR_NOMEM, "out of memory");
		len = (uint32_t)(r->key.len - at - 4);
		memcpy(r->key.data + at, &len, 4);
	}
	return 0;
}

/* The output for the current row's partition, opened when new. */
static struct output *output_for_row(struct run *r, struct fl_err *err)
{
	for (size_t i = 0; i < r->nouts; i++)
		if (r->outs[i].key_len == r->key.len &&
		    (r->key.len == 0 || memcmp(r->outs[i].key, r->key.data, r->key.len) == 0))
			return &r->outs[i];
	if (r->nouts == MAX_OPEN_OUTPUTS && outputs_close_all(r, err) != 0)
		return NULL;
	if (output_open(r, &r->outs[r->nouts], err) != 0)
		return NULL;
	return &r->outs[r->nouts++];
}

/* ---- rejected records ---- */

static int reject(struct run *r, const char *file, uint64_t line, const char *raw, size_t raw_len,
                  const char *reason, struct fl_err *err)
{
	json_t *e;
	char *s;

	if (r->o->on_error == ST_ON_ERROR_STRICT)
		return fl_err_set(err, FL_ERR_BAD_REQUEST, "%s:%llu: %s", file,
		                  (unsigned long long)line, reason);
	if (r->dl == NULL) {
		size_t n;

		if (pass_gate(r, err) != 0)
			return -1;
		n = strlen(r->o->dead_letter_path) + 16;

		r->res->dead_letter_errors = malloc(n);
		if (r->res->dead_letter_errors == NULL)
			return fl_err_set(err, FL_ERR_NOMEM, "out of memory");
		snprintf(r->res->dead_letter_errors, n, "%s.errors.ndjson", r->o->dead_letter_path);
		/* The file is named after the batch: a rerun of the same batch
		 * (after a crash) rewrites it rather than adding duplicates. */
		r->dl = fopen(r->o->dead_letter_path, "wb");
		r->dle = fopen(r->res->dead_letter_errors, "wb");
		if (r->dl == NULL || r->dle == NULL)
			return fl_err_set(err, FL_ERR_IO,
			                  "cannot open the dead-letter file %.200s: %s",
			                  r->o->dead_letter_path, strerror(errno));
	}
	e = json_pack("{s:s, s:I, s:s}", "file", file, "line", (json_int_t)line, "reason", reason);
	s = e ? json_dumps(e, JSON_COMPACT | JSON_ENSURE_ASCII) : NULL;
	json_decref(e);
	if (s == NULL)
		return fl_err_set(err, FL_ERR_NOMEM, "out of memory");
	/* A record without its terminator (the last line of a file) gets one, so
	 * the dead-letter file stays one record per line. */
	if (fwrite(raw, 1, raw_len, r->dl) != raw_len ||
	    ((raw_len == 0 || raw[raw_len - 1] != '\n') && fputc('\n', r->dl) == EOF) ||
	    fprintf(r->dle, "%s\n", s) < 0) {
		free(s);
		return fl_err_set(err, FL_ERR_IO, "cannot write the dead-letter file: %s",
		                  strerror(errno));
	}
	free(s);
	r->res->rows_bad++;
	return 0;
}

/* ---- rows ---- */

static int scratch_reserve(struct run *r, size_t need, struct fl_err *err)
{
	if (r->scratch.cap >= need)
		return 0;
	uint8_t *p = realloc(r->scratch.p, need);

	if (p == NULL)
		return fl_err_set(err, FL_ERR_NOMEM, "out of memory");
	r->scratch.p = p;
	r->scratch.cap = need;
	return 0;
}

/* An empty error for the per-row and per-value calls: the kind and the
 * message's first byte, not all 260 bytes that `= {0}` zeroes each time
 * (which showed in the ingest profile). */
static void err_empty(struct fl_err *e)
{
	e->kind = FL_ERR_NONE;
	e->msg[0] = '\0';
}

/* Writes r->row; 1 = written, 0 = rejected by the writer (reason in why). */
static int emit(struct run *r, char *why, size_t why_cap, struct fl_err *err)
{
	struct fl_err werr;
	uint64_t target =
	        r->o->target_file_bytes ? r->o->target_file_bytes : DEFAULT_TARGET_FILE_BYTES;

	err_empty(&werr);

	for (size_t i = 0; i < r->ncols; i++) {
		if (r->row[i].null && r->cols[i].key) {
			snprintf(
			        why, why_cap,
			        "key column '%.100s' is missing or null; an upsert row needs its key",
			        r->cols[i].name);
			return 0;
		}
		if (r->row[i].null && r->cols[i].required) {
			snprintf(why, why_cap, "required column '%.100s' is missing or null",
			         r->cols[i].name);
			return 0;
		}
	}
	struct output *o;

	if (partition_key(r, err) != 0 || (o = output_for_row(r, err)) == NULL)
		return -1;
	if (st_parquet_writer_write_row(o->w, r->row, &werr) != 0) {
		if (werr.kind != FL_ERR_BAD_REQUEST) {
			*err = werr;
			return -1;
		}
		snprintf(why, why_cap, "%s", werr.msg);
		return 0;
	}
	if (r->o->row_order && note_order(r, o, err) != 0)
		return -1;
	r->res->rows_ok++;
	/* With encoders at work the size is an upper bound until settled: the
	 * roll happens at exactly the row it would without them. */
	if (st_parquet_writer_size(o->w) >= target && r->workq != NULL &&
	    st_parquet_writer_settle(o->w, err) != 0)
		return -1;
	if (st_parquet_writer_size(o->w) >= target) {
		/* Roll: finish this file; the next row of the partition opens another. */
		size_t idx = (size_t)(o - r->outs);

		if (output_close(r, o, err) != 0)
			return -1;
		r->outs[idx] = r->outs[--r->nouts];
		memset(&r->outs[r->nouts], 0, sizeof(r->outs[0]));
	}
	return 1;
}

static int cast_cell(struct run *r, size_t c, const char *p, size_t len, bool quoted, char *why,
                     size_t why_cap)
{
	/* The CSV reader validated every field's UTF-8 (invalid records never
	 * get here), so neither the cast nor the Parquet writer checks again. */
	struct st_cast_opts co = {.tz_assume_utc = r->o->tz_assume_utc, .utf8_checked = true};
	const char *marker = r->o->null_marker;
	struct fl_err cerr;

	err_empty(&cerr);

	/* An empty unquoted field, or the configured marker, is null; a quoted
	 * empty field is an empty string. */
	if ((!quoted && len == 0 && (marker == NULL || marker[0] == '\0')) ||
	    (!quoted && marker != NULL && marker[0] != '\0' && strlen(marker) == len &&
	     memcmp(p, marker, len) == 0) ||
	    (len == 0 && r->cols[c].type.id != ST_TYPE_STRING &&
	     r->cols[c].type.id != ST_TYPE_BINARY)) {
		r->row[c].null = true;
		return 1;
	}
	if (st_cast_text(&r->cols[c].type, p, len, &co, &r->scratch, &r->row[c], &cerr) != 0) {
		snprintf(why, why_cap, "column '%.60s': %s", r->cols[c].name, cerr.msg);
		return 0;
	}
	r->row[c].null = false;
	return 1;
}

static int run_csv(struct run *r, const char *file, struct input *in, struct fl_err *err)
{
	const struct st_csv_record *rec, *h;
	int *map = NULL;
	size_t nh = 0;
	char why[400];
	int got, rc = -1;

	h = st_csv_reader_header(in->csv);
	if (h == NULL || h->n_fields == 0)
		return 0; /* an empty file: nothing to read */
	nh = h->n_fields;
	map = malloc(sizeof(int) * (nh ? nh : 1));
	if (map == NULL)
		return fl_err_set(err, FL_ERR_NOMEM, "out of memory");
	for (size_t i = 0; i < nh; i++) {
		map[i] = find_col(r, h->fields[i].p, h->fields[i].len);
		if (map[i] < 0 && r->o->new_columns == ST_NEW_COLUMNS_REJECT) {
			(void)unknown_column(r, h->fields[i].p, h->fields[i].len, file, err);
			goto out;
		}
		for (size_t k = 0; k < i; k++) {
			if (map[k] >= 0 && map[k] == map[i]) {
				fl_err_set(err, FL_ERR_BAD_REQUEST,
				           "%s: column '%.100s' appears twice in the header", file,
				           r->cols[map[i]].name);
				goto out;
			}
		}
	}
	while ((got = st_csv_reader_next(in->csv, &rec, err)) == 0 && rec != NULL) {
		int ok = 1;

		if (rec->error != NULL) {
			snprintf(why, sizeof(why), "%s", rec->error);
			ok = 0;
		} else if (!rec->utf8_valid) {
			snprintf(why, sizeof(why), "the record is not valid UTF-8");
			ok = 0;
		} else if (rec->n_fields != nh) {
			snprintf(why, sizeof(why), "expected %zu fields as in the header, got %zu",
			         nh, rec->n_fields);
			ok = 0;
		}
		if (ok) {
			if (scratch_reserve(r, rec->raw_len + 16 * r->ncols + 64, err) != 0)
				goto out;
			r->scratch.used = 0;
			for (size_t c = 0; c < r->ncols; c++)
				r->row[c].null = true;
			for (size_t i = 0; i < nh && ok; i++)
				if (map[i] >= 0)
					ok = cast_cell(r, (size_t)map[i], rec->fields[i].p,
					               rec->fields[i].len, rec->fields[i].quoted,
					               why, sizeof(why));
		}
		if (ok) {
			ok = emit(r, why, sizeof(why), err);
			if (ok < 0)
				goto out;
		}
		if (!ok && reject(r, file, rec->line, rec->raw, rec->raw_len, why, err) != 0)
			goto out;
		tick(r, in);
	}
	rc = got < 0 ? -1 : 0;
out:
	free(map);
	return rc;
}

static int run_ndjson(struct run *r, const char *file, struct input *in, struct fl_err *err)
{
	struct st_cast_opts co = {.tz_assume_utc = r->o->tz_assume_utc};
	const struct st_ndjson_record *rec;
	char why[400];
	int got;

	while ((got = st_ndjson_reader_next(in->nd, &rec, err)) == 0 && rec != NULL) {
		const char *key;
		json_t *v;
		int ok = 1;

		if (rec->error != NULL) {
			snprintf(why, sizeof(why), "%s", rec->error);
			ok = 0;
		}
		if (ok) {
			if (scratch_reserve(r, rec->raw_len + 16 * r->ncols + 64, err) != 0)
				return -1;
			r->scratch.used = 0;
			for (size_t c = 0; c < r->ncols; c++)
				r->row[c].null = true;
			json_object_foreach(rec->obj, key, v)
			{
				int c = find_col(r, key, strlen(key));
				struct fl_err cerr = {0};

				if (!ok)
					break;
				if (c < 0) {
					if (r->o->new_columns == ST_NEW_COLUMNS_REJECT)
						return unknown_column(r, key, strlen(key), file,
						                      err);
					continue;
				}
				co.json_reals_are_ints = rec->ints_as_reals;
				if (st_cast_json(&r->cols[c].type, v, &co, &r->scratch, &r->row[c],
				                 &cerr) != 0) {
					snprintf(why, sizeof(why), "column '%.60s': %s",
					         r->cols[c].name, cerr.msg);
					ok = 0;
				}
			}
		}
		if (ok) {
			ok = emit(r, why, sizeof(why), err);
			if (ok < 0)
				return -1;
		}
		if (!ok && reject(r, file, rec->line, rec->raw, rec->raw_len, why, err) != 0)
			return -1;
		tick(r, in);
	}
	return got < 0 ? -1 : 0;
}

static int prepare_output(struct run *r, struct fl_err *err)
{
	r->pcols = calloc(r->ncols, sizeof(*r->pcols));
	r->row = calloc(r->ncols, sizeof(*r->row));
	r->schema_json = fl_json_dump(r->schema, NULL);
	if (r->pcols == NULL || r->row == NULL || r->schema_json == NULL)
		return fl_err_set(err, FL_ERR_NOMEM, "out of memory");
	for (size_t i = 0; i < r->ncols; i++) {
		r->pcols[i].name = r->cols[i].name;
		r->pcols[i].field_id = r->cols[i].id;
		r->pcols[i].type = r->cols[i].type;
		r->pcols[i].required = r->cols[i].required;
	}
	r->outs = calloc(MAX_OPEN_OUTPUTS, sizeof(*r->outs));
	if (r->outs == NULL)
		return fl_err_set(err, FL_ERR_NOMEM, "out of memory");
	{
		json_t *fields = json_object_get(r->o->spec, "fields"), *f;
		size_t i;

		r->npf = json_array_size(fields);
		r->pf = calloc(r->npf ? r->npf : 1, sizeof(*r->pf));
		r->tuple = calloc(r->npf ? r->npf : 1, sizeof(*r->tuple));
		if (r->pf == NULL || r->tuple == NULL)
			return fl_err_set(err, FL_ERR_NOMEM, "out of memory");
		json_array_foreach(fields, i, f)
		{
			json_int_t src = json_integer_value(json_object_get(f, "source-id"));
			const char *tr = json_string_value(json_object_get(f, "transform"));
			size_t c;

			for (c = 0; c < r->ncols && r->cols[c].id != src; c++)
				;
			if (c == r->ncols || tr == NULL)
				return fl_err_set(
				        err, FL_ERR_BAD_REQUEST,
				        "partition field %zu: source column %lld is not a primitive column of the schema",
				        i, (long long)src);
			r->pf[i].col = c;
			if (st_transform_parse(tr, &r->cols[c].type, &r->pf[i].tr, &r->pf[i].type,
			                       err) != 0)
				return -1;
		}
	}
	return st_io_mkdirs(r->o->io, r->o->data_uri, err);
}

int st_ingest_run(const struct st_ingest_opts *o, const char *const *inputs, size_t n,
                  struct st_ingest_result *res, struct fl_err *err)
{
	struct run r = {.o = o, .res = res};
	int rc = -1;

	memset(res, 0, sizeof(*res));
	res->last_column_id = o->last_column_id;
	if (o->io == NULL)
		return fl_err_set(err, FL_ERR_INTERNAL, "ingest: no storage handle");
	if (o->on_error == ST_ON_ERROR_DEAD_LETTER && o->dead_letter_path == NULL)
		return fl_err_set(err, FL_ERR_BAD_REQUEST,
		                  "dead-letter mode needs a dead-letter path");
	r.schema = json_deep_copy(o->schema);
	if (r.schema == NULL)
		return fl_err_set(err, FL_ERR_NOMEM, "out of memory");
	fl_uuid_v7(r.batch);
	if (o->threads > 1 && st_workq_open(o->threads - 1, &r.workq, err) != 0)
		goto out;
	if (load_columns(&r, err) != 0)
		goto out;
	if (o->new_columns == ST_NEW_COLUMNS_EVOLVE && prescan(&r, inputs, n, err) != 0)
		goto out;
	if (prepare_output(&r, err) != 0)
		goto out;
	progress_start(&r, inputs, n);
	for (size_t k = 0; k < n; k++) {
		struct input in;
		int frc;

		if (input_open(&r, inputs[k], &in, err) != 0)
			goto out;
		frc = o->format == ST_INGEST_CSV ? run_csv(&r, inputs[k], &in, err)
		                                 : run_ndjson(&r, inputs[k], &in, err);
		r.bytes_done += in.src.bytes_read;
		input_close(&in);
		if (frc != 0)
			goto out;
		if (o->progress != NULL) {
			r.prog.bytes_read = r.bytes_done;
			o->progress(o->progress_ctx, &r.prog);
		}
	}
	if (outputs_close_all(&r, err) != 0)
		goto out;
	if (r.dl != NULL && (fflush(r.dl) != 0 || fsync(fileno(r.dl)) != 0 || fflush(r.dle) != 0)) {
		fl_err_set(err, FL_ERR_IO, "cannot write the dead-letter file: %s",
		           strerror(errno));
		goto out;
	}
	res->schema = r.schema;
	r.schema = NULL;
	rc = 0;
out:
	for (size_t i = 0; i < r.nouts; i++) {
		st_parquet_writer_free(r.outs[i].w);
		lazy_abort(r.outs[i].lazy);
		output_drop(&r.outs[i]);
	}
	free(r.outs);
	st_workq_free(r.workq); /* after the writers: they wait for their tasks */
	free(r.pf);
	free(r.tuple);
	st_buf_free(&r.key);
	if (r.dl != NULL)
		fclose(r.dl);
	if (r.dle != NULL)
		fclose(r.dle);
	if (rc != 0) {
		st_ingest_result_discard(o->io, res);
		st_ingest_result_free(res);
		if (r.gate_failed)
			*err = r.gate_err; /* not as the writer that met it words it */
	}
	json_decref(r.schema);
	free(r.cols);
	free(r.pcols);
	free(r.row);
	free(r.schema_json);
	free(r.scratch.p);
	return rc;
}

void st_ingest_result_discard(struct st_io *io, struct st_ingest_result *res)
{
	const char **uris;
	struct fl_err ignored;

	if (res->n_files == 0)
		return;
	uris = calloc(res->n_files, sizeof(*uris));
	if (uris == NULL)
		return;
	for (size_t i = 0; i < res->n_files; i++)
		uris[i] = res->files[i].uri;
	/* Best effort: an orphan data file is harmless, the commit never named it. */
	if (st_io_delete_many(io, uris, res->n_files, &ignored) != 0)
		ignored.kind = FL_ERR_NONE;
	free(uris);
}

void st_ingest_result_free(struct st_ingest_result *res)
{
	for (size_t i = 0; i < res->n_files; i++) {
		free(res->files[i].uri);
		free(res->files[i].partition);
		free(res->files[i].partition_bytes);
		free(res->files[i].order);
		st_parquet_metrics_free(&res->files[i].m);
	}
	free(res->files);
	json_decref(res->schema);
	free(res->dead_letter_errors);
	memset(res, 0, sizeof(*res));
}
