/* addfile.c - Parquet objects added as data files (see addfile.h).
 *
 * Each file is opened twice at most: once without a name mapping to learn
 * whether it carries field ids, then (when it does not) with the table's
 * mapping, or one made from the schema's column names.  One pass over its
 * rows, projected on the table schema, yields value, null and NaN counts
 * and the bounds (truncate(16) for strings and binary, as the writer
 * does); the bytes are then copied to the data folder unchanged. */
#include "addfile.h"

#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "base/buf.h"
#include "iceberg/bounds.h"
#include "iceberg/name_mapping.h"
#include "parquet/reader.h"
#include "iceberg/rewrite.h"
#include "uuid.h"

#define TRUNCATE 16

static int nomem(struct fl_err *err)
{
	return fl_err_set(err, FL_ERR_NOMEM, "out of memory");
}

static int fd_read_at(void *ctx, uint64_t off, void *p, size_t n, struct fl_err *err)
{
	int fd = *(int *)ctx;
	size_t done = 0;

	while (done < n) {
		ssize_t r = pread(fd, (char *)p + done, n - done, (off_t)(off + done));

		if (r <= 0)
			return fl_err_set(err, FL_ERR_IO, "cannot read the Parquet file: %s",
			                  r == 0 ? "short read" : strerror(errno));
		done += (size_t)r;
	}
	return 0;
}

static int open_reader(const char *path, int *fd, const struct st_name_mapping *mapping,
                       struct st_parquet_reader **r, struct fl_err *err);

int st_addfile_infer_schema(const char *path, json_t **schema, struct fl_err *err)
{
	struct st_parquet_reader *r = NULL;
	json_t *fields = json_array(), *s = NULL;
	int fd = open(path, O_RDONLY | O_CLOEXEC), rc = -1;

	if (fd < 0 || fields == NULL) {
		fl_err_set(err, fd < 0 ? FL_ERR_BAD_REQUEST : FL_ERR_NOMEM,
		           "cannot open %.200s: %s", path, strerror(errno));
		goto out;
	}
	if (open_reader(path, &fd, NULL, &r, err) != 0) {
		fl_err_prefix(err, "%.200s", path);
		goto out;
	}
	for (size_t l = 0; l < st_parquet_reader_n_leaves(r); l++) {
		const struct st_parquet_leaf *lf = st_parquet_reader_leaf(r, l);
		char type[64];

		if (!lf->readable || strchr(lf->path, '.') != NULL) {
			fl_err_set(
			        err, FL_ERR_BAD_REQUEST,
			        "%.200s: column '%.100s' is nested or unreadable; a table is created "
			        "from flat, primitive columns only",
			        path, lf->path);
			goto out;
		}
		st_type_format(&lf->type, type, sizeof(type));
		if (json_array_append_new(fields, json_pack("{s:I, s:s, s:b, s:s}", "id",
		                                            (json_int_t)(l + 1), "name", lf->path,
		                                            "required", !lf->optional, "type",
		                                            type)) != 0) {
			nomem(err);
			goto out;
		}
	}
	s = json_pack("{s:s, s:i, s:O}", "type", "struct", "schema-id", 0, "fields", fields);
	if (s == NULL) {
		nomem(err);
		goto out;
	}
	*schema = s;
	rc = 0;
out:
	st_parquet_reader_free(r);
	json_decref(fields);
	if (fd >= 0)
		close(fd);
	return rc;
}

char *st_addfile_name_mapping(const json_t *schema)
{
	json_t *m = json_array(), *f;
	size_t i;
	char *s;

	if (m == NULL)
		return NULL;
	json_array_foreach(json_object_get(schema, "fields"), i, f)
	{
		if (json_array_append_new(m, json_pack("{s:O, s:[O]}", "field-id",
		                                       json_object_get(f, "id"), "names",
		                                       json_object_get(f, "name"))) != 0) {
			json_decref(m);
			return NULL;
		}
	}
	s = json_dumps(m, JSON_COMPACT);
	json_decref(m);
	return s;
}

/* Per column: counts and bounds as the rows go by. */
struct stat_col {
	int64_t nulls, nans;
	bool has;
	struct st_value lo, hi;
	struct st_buf lob, hib; /* own the bytes of lo and hi */
};

static int keep_value(struct st_value *dst, struct st_buf *b, const struct st_type *t,
                      const struct st_value *v)
{
	*dst = *v;
	if (t->id == ST_TYPE_STRING || t->id == ST_TYPE_BINARY || t->id == ST_TYPE_FIXED ||
	    t->id == ST_TYPE_UUID) {
		st_buf_reset(b);
		if (st_buf_append(b, v->v.bin.p, v->v.bin.len) != 0)
			return -1;
		dst->v.bin.p = b->data;
	}
	return 0;
}

/* One file being measured. */
struct measure {
	const struct st_parquet_column *cols;
	size_t ncols;
	struct stat_col *st;
	int64_t *sizes; /* each column's bytes in the file; -1: not in it */
	int64_t rows;
};

static int measure_row(void *arg, int64_t pos, const struct st_value *row, struct fl_err *err)
{
	struct measure *m = arg;

	(void)pos;
	m->rows++;
	for (size_t c = 0; c < m->ncols; c++) {
		const struct st_type *t = &m->cols[c].type;
		struct stat_col *s = &m->st[c];
		const struct st_value *v = &row[c];

		if (v->null) {
			s->nulls++;
			continue;
		}
		if ((t->id == ST_TYPE_FLOAT && isnan(v->v.f)) ||
		    (t->id == ST_TYPE_DOUBLE && isnan(v->v.d))) {
			s->nans++;
			continue;
		}
		if (!s->has || st_value_compare(t, v, &s->lo) < 0)
			if (keep_value(&s->lo, &s->lob, t, v) != 0)
				return nomem(err);
		if (!s->has || st_value_compare(t, v, &s->hi) > 0)
			if (keep_value(&s->hi, &s->hib, t, v) != 0)
				return nomem(err);
		s->has = true;
	}
	return 0;
}

/* The metrics of a measured file (columns in schema order). */
static int metrics_of(const struct measure *m, int64_t size, struct st_parquet_metrics *out,
                      struct fl_err *err)
{
	struct st_buf b;

	memset(out, 0, sizeof(*out));
	out->record_count = m->rows;
	out->file_size = size;
	out->columns = calloc(m->ncols ? m->ncols : 1, sizeof(*out->columns));
	if (out->columns == NULL)
		return nomem(err);
	out->n_columns = m->ncols;
	st_buf_init(&b, NULL);
	for (size_t c = 0; c < m->ncols; c++) {
		struct st_column_metrics *cm = &out->columns[c];
		const struct st_type *t = &m->cols[c].type;
		const struct stat_col *s = &m->st[c];
		bool has_upper = false;
		size_t len;

		cm->field_id = m->cols[c].field_id;
		cm->column_size = m->sizes[c];
		cm->value_count = m->rows;
		cm->null_count = s->nulls;
		cm->nan_count = st_type_is_floating(t) ? s->nans : -1;
		if (!s->has)
			continue;
		st_buf_reset(&b);
		if (st_value_serialize(t, &s->lo, &b) != 0)
			goto oom;
		len = st_bound_lower_len(t, b.data, b.len, TRUNCATE);
		cm->lower = malloc(len ? len : 1);
		if (cm->lower == NULL)
			goto oom;
		memcpy(cm->lower, b.data, len);
		cm->lower_len = len;
		cm->has_lower = true;
		st_buf_reset(&b);
		if (st_value_serialize(t, &s->hi, &b) != 0)
			goto oom;
		{
			struct st_buf up;

			st_buf_init(&up, NULL);
			if (st_bound_upper(t, b.data, b.len, TRUNCATE, &up, &has_upper) != 0) {
				st_buf_free(&up);
				goto oom;
			}
			if (has_upper) {
				cm->upper = up.data;
				cm->upper_len = up.len;
				cm->has_upper = true;
			} else {
				st_buf_free(&up);
			}
		}
	}
	st_buf_free(&b);
	return 0;
oom:
	st_buf_free(&b);
	st_parquet_metrics_free(out);
	return nomem(err);
}

/* Opens path's reader; with_mapping: with the table's (or a made) mapping. */
static int open_reader(const char *path, int *fd, const struct st_name_mapping *mapping,
                       struct st_parquet_reader **r, struct fl_err *err)
{
	struct st_parquet_reader_opts ro = {.name_mapping = mapping};
	struct st_parquet_source src = {.read_at = fd_read_at, .ctx = fd};
	struct stat st;

	if (fstat(*fd, &st) != 0)
		return fl_err_set(err, FL_ERR_IO, "cannot stat: %s", strerror(errno));
	src.size = (uint64_t)st.st_size;
	return st_parquet_reader_open(&src, &ro, r, err);
}

/* Checks one file against the schema and measures it. */
static int check_file(const struct st_addfile_opts *o, const char *path,
                      const struct st_parquet_column *cols, const struct st_parquet_want *want,
                      size_t ncols, const struct st_name_mapping *mapping, bool *used_mapping,
                      struct st_parquet_metrics *m, struct fl_err *err)
{
	struct st_parquet_reader *r = NULL;
	struct measure ms = {.cols = cols, .ncols = ncols};
	struct st_value *row = NULL;
	struct stat st;
	bool ids = true;
	int fd = open(path, O_RDONLY | O_CLOEXEC), rc = -1;

	if (fd < 0)
		return fl_err_set(err, FL_ERR_BAD_REQUEST, "cannot open %.200s: %s", path,
		                  strerror(errno));
	ms.st = calloc(ncols ? ncols : 1, sizeof(*ms.st));
	ms.sizes = calloc(ncols ? ncols : 1, sizeof(*ms.sizes));
	if (ms.st == NULL || ms.sizes == NULL) {
		nomem(err);
		goto out;
	}
	for (size_t c = 0; c < ncols; c++) {
		st_buf_init(&ms.st[c].lob, NULL);
		st_buf_init(&ms.st[c].hib, NULL);
	}
	if (open_reader(path, &fd, NULL, &r, err) != 0)
		goto bad;
	for (size_t l = 0; l < st_parquet_reader_n_leaves(r); l++)
		ids = ids && st_parquet_reader_leaf(r, l)->field_id >= 0;
	if (!ids) {
		st_parquet_reader_free(r);
		r = NULL;
		if (open_reader(path, &fd, mapping, &r, err) != 0)
			goto bad;
		*used_mapping = true;
	}
	for (size_t l = 0; l < st_parquet_reader_n_leaves(r); l++) {
		const struct st_parquet_leaf *lf = st_parquet_reader_leaf(r, l);
		size_t c = 0;

		while (c < ncols && cols[c].field_id != lf->field_id)
			c++;
		if (c == ncols && !o->ignore_new_columns) {
			fl_err_set(
			        err, FL_ERR_BAD_REQUEST,
			        "column '%.100s' is not in the table schema (new columns are not "
			        "added from Parquet files; with new-columns ignore it is left out)",
			        lf->path);
			goto bad;
		}
		if (c < ncols && !lf->readable) {
			fl_err_set(err, FL_ERR_BAD_REQUEST, "column '%.100s' cannot be read: %s",
			           lf->path, lf->why ? lf->why : "unsupported");
			goto bad;
		}
	}
	for (size_t c = 0; c < ncols; c++) {
		size_t l = 0;

		while (l < st_parquet_reader_n_leaves(r) &&
		       st_parquet_reader_leaf(r, l)->field_id != cols[c].field_id)
			l++;
		if (cols[c].required && l == st_parquet_reader_n_leaves(r)) {
			fl_err_set(err, FL_ERR_BAD_REQUEST,
			           "required column '%.100s' is missing from the file",
			           cols[c].name);
			goto bad;
		}
		ms.sizes[c] = l < st_parquet_reader_n_leaves(r)
		                      ? st_parquet_reader_leaf(r, l)->compressed_size
		                      : -1;
	}
	if (st_parquet_reader_project(r, want, ncols, err) != 0)
		goto bad;
	row = calloc(ncols ? ncols : 1, sizeof(*row));
	if (row == NULL) {
		nomem(err);
		goto out;
	}
	for (;;) {
		const struct st_parquet_batch *b;

		if (st_parquet_reader_next(r, &b, err) != 0)
			goto bad;
		if (b == NULL)
			break;
		for (size_t k = 0; k < b->n_rows; k++) {
			st_parquet_batch_row(b, k, row);
			if (measure_row(&ms, 0, row, err) != 0)
				goto bad;
		}
	}
	for (size_t c = 0; c < ncols; c++) {
		if (cols[c].required && ms.st[c].nulls > 0) {
			fl_err_set(err, FL_ERR_BAD_REQUEST,
			           "required column '%.100s' holds %lld nulls", cols[c].name,
			           (long long)ms.st[c].nulls);
			goto bad;
		}
	}
	if (fstat(fd, &st) != 0) {
		fl_err_set(err, FL_ERR_IO, "cannot stat %.200s: %s", path, strerror(errno));
		goto out;
	}
	rc = metrics_of(&ms, (int64_t)st.st_size, m, err);
	goto out;
bad:
	if (err->kind == FL_ERR_IO || err->kind == FL_ERR_TOO_LARGE)
		err->kind = FL_ERR_BAD_REQUEST; /* a local file: unreadable means poison */
	fl_err_prefix(err, "%.200s", path);
out:
	for (size_t c = 0; ms.st != NULL && c < ncols; c++) {
		st_buf_free(&ms.st[c].lob);
		st_buf_free(&ms.st[c].hib);
	}
	free(ms.st);
	free(ms.sizes);
	free(row);
	st_parquet_reader_free(r);
	close(fd);
	return rc;
}

int st_addfile_run(const struct st_addfile_opts *o, const char *const *inputs, size_t n,
                   struct st_ingest_result *res, struct fl_err *err)
{
	struct st_parquet_column *cols = NULL;
	struct st_parquet_want *want = NULL;
	struct st_name_mapping *mapping = NULL;
	char *made = NULL;
	const char *mtext = o->name_mapping;
	bool used_mapping = false;
	size_t ncols = 0;
	int rc = -1;

	memset(res, 0, sizeof(*res));
	if (json_array_size(json_object_get(o->spec, "fields")) > 0)
		return fl_err_set(
		        err, FL_ERR_BAD_REQUEST,
		        "adding Parquet files to a partitioned table is not yet supported");
	if (st_rewrite_columns(o->schema, &cols, &want, &ncols, err) != 0)
		goto out;
	if (mtext == NULL) {
		made = st_addfile_name_mapping(o->schema);
		if (made == NULL) {
			nomem(err);
			goto out;
		}
		mtext = made;
	}
	if (st_name_mapping_parse(mtext, strlen(mtext), &mapping, err) != 0) {
		fl_err_prefix(err, "schema.name-mapping.default");
		goto out;
	}
	res->files = calloc(n ? n : 1, sizeof(*res->files));
	res->schema = json_deep_copy(o->schema);
	if (res->files == NULL || res->schema == NULL) {
		nomem(err);
		goto out;
	}
	if (st_io_mkdirs(o->io, o->data_uri, err) != 0)
		goto out;
	for (size_t k = 0; k < n; k++) {
		struct st_ingest_file *f = &res->files[res->n_files];
		char uuid[FL_UUID_STR];
		size_t len = strlen(o->data_uri) + sizeof(uuid) + 16;

		if (check_file(o, inputs[k], cols, want, ncols, mapping, &used_mapping, &f->m,
		               err) != 0)
			goto out;
		fl_uuid_v7(uuid);
		f->uri = malloc(len);
		if (f->uri == NULL) {
			st_parquet_metrics_free(&f->m);
			nomem(err);
			goto out;
		}
		snprintf(f->uri, len, "%s/%s-add.parquet", o->data_uri, uuid);
		if (st_io_upload(o->io, inputs[k], f->uri, err) != 0) {
			free(f->uri);
			f->uri = NULL;
			st_parquet_metrics_free(&f->m);
			goto out;
		}
		res->n_files++;
		res->rows_ok += (uint64_t)f->m.record_count;
		res->bytes_in += (uint64_t)f->m.file_size;
		res->bytes_out += (uint64_t)f->m.file_size;
	}
	res->needs_mapping = used_mapping && o->name_mapping == NULL;
	rc = 0;
out:
	if (rc != 0) {
		st_ingest_result_discard(o->io, res);
		st_ingest_result_free(res);
	}
	st_name_mapping_free(mapping);
	free(made);
	free(cols);
	free(want);
	return rc;
}
