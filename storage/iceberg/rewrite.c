/* rewrite.c - row scans and copy-on-write rewrites of Parquet data files
 * (see rewrite.h).  Memory: one row group of the input (the reader's
 * bound) plus the writer's row group. */
#include "iceberg/rewrite.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "iceberg/data_writer.h"

#define DEFAULT_TARGET_FILE_BYTES (512ULL << 20)

static int nomem(struct fl_err *err)
{
	return fl_err_set(err, FL_ERR_NOMEM, "out of memory");
}

int st_rewrite_columns(const json_t *schema, struct st_parquet_column **cols,
                       struct st_parquet_want **want, size_t *n, struct fl_err *err)
{
	const json_t *fields = json_object_get(schema, "fields"), *f;
	size_t i;

	*n = json_array_size(fields);
	*cols = calloc(*n ? *n : 1, sizeof(**cols));
	*want = calloc(*n ? *n : 1, sizeof(**want));
	if (*cols == NULL || *want == NULL)
		return nomem(err);
	json_array_foreach(fields, i, f)
	{
		const char *type = json_string_value(json_object_get(f, "type"));

		(*cols)[i].name = json_string_value(json_object_get(f, "name"));
		(*cols)[i].field_id = (int32_t)json_integer_value(json_object_get(f, "id"));
		(*cols)[i].required = json_is_true(json_object_get(f, "required"));
		if (type == NULL || (*cols)[i].name == NULL)
			return fl_err_set(
			        err, FL_ERR_UNSUPPORTED,
			        "column %zu has a nested type; rewriting nested columns is "
			        "not yet supported",
			        i);
		if (st_type_parse(type, &(*cols)[i].type, err) != 0)
			return fl_err_prefix(err, "column %s", (*cols)[i].name);
		(*want)[i].field_id = (*cols)[i].field_id;
		(*want)[i].type = (*cols)[i].type;
		(*want)[i].required = (*cols)[i].required;
	}
	return 0;
}

int st_rewrite_scan(struct st_io *io, const char *uri, const struct st_name_mapping *mapping,
                    const struct st_parquet_want *want, size_t n, st_rewrite_row_fn fn, void *arg,
                    struct fl_err *err)
{
	struct st_parquet_reader_opts ro = {.name_mapping = mapping};
	struct st_parquet_source src;
	struct st_parquet_io_ctx ictx;
	struct st_parquet_reader *r = NULL;
	const struct st_parquet_batch *b;
	struct st_value *row = calloc(n ? n : 1, sizeof(*row));
	int64_t pos = 0;
	int rc = -1;

	if (row == NULL)
		return nomem(err);
	if (st_parquet_source_io(&src, &ictx, io, uri, err) != 0 ||
	    st_parquet_reader_open(&src, &ro, &r, err) != 0)
		goto bad;
	/* A column without a field id would read as nulls: never rewrite such
	 * a file (its values would be lost). */
	for (size_t l = 0; l < st_parquet_reader_n_leaves(r); l++) {
		if (st_parquet_reader_leaf(r, l)->field_id < 0) {
			fl_err_set(
			        err, FL_ERR_UNSUPPORTED,
			        "column %.100s has no field id and the table's name mapping does "
			        "not name it; rewriting such files (compaction, upsert) is not yet "
			        "supported",
			        st_parquet_reader_leaf(r, l)->path);
			goto bad;
		}
	}
	if (st_parquet_reader_project(r, want, n, err) != 0)
		goto bad;
	for (;;) {
		if (st_parquet_reader_next(r, &b, err) != 0)
			goto bad;
		if (b == NULL)
			break;
		for (size_t k = 0; k < b->n_rows; k++) {
			st_parquet_batch_row(b, k, row);
			if (fn(arg, pos++, row, err) != 0)
				goto out;
		}
	}
	rc = 0;
	goto out;
bad:
	fl_err_prefix(err, "%.200s", uri);
out:
	st_parquet_reader_free(r);
	free(row);
	return rc;
}

/* One rewrite in progress. */
struct rw {
	const struct st_rewrite_opts *o;
	struct st_rewrite_out *out;
	size_t first; /* out->n when the call began */
	struct st_data_writer_opts dwo;
	struct st_data_writer dw; /* the open file, if any */
	struct st_value *row; /* with lineage: the row, its lineage filled in */
	size_t n;
};

static int rw_close(struct rw *w, struct fl_err *err)
{
	struct st_parquet_metrics m;
	struct st_rewrite_file *grown;
	char *uri = NULL;

	if (st_data_writer_close(&w->dw, &uri, &m, err) != 0)
		return -1;
	grown = realloc(w->out->files, sizeof(*grown) * (w->out->n + 1));
	if (grown == NULL) {
		struct fl_err ignored;

		if (st_io_delete(w->o->io, uri, &ignored) != 0)
			ignored.kind = FL_ERR_NONE;
		st_parquet_metrics_free(&m);
		free(uri);
		return nomem(err);
	}
	w->out->files = grown;
	grown[w->out->n].uri = uri;
	grown[w->out->n].m = m;
	w->out->n++;
	return 0;
}

static int rw_row(void *arg, int64_t pos, const struct st_value *row, struct fl_err *err)
{
	struct rw *w = arg;
	uint64_t target =
	        w->o->target_file_bytes ? w->o->target_file_bytes : DEFAULT_TARGET_FILE_BYTES;
	bool keep = true;

	if (w->o->lineage) {
		struct st_value *id = &w->row[w->n - 2], *seq = &w->row[w->n - 1];

		memcpy(w->row, row, w->n * sizeof(*row));
		if (w->o->has_first_row_id && id->null) {
			id->null = false;
			id->v.l = w->o->first_row_id + pos;
		}
		if (w->o->has_first_row_id && seq->null) {
			seq->null = false;
			seq->v.l = w->o->data_seq;
		}
		row = w->row;
	}
	w->out->rows_read++;
	if (w->o->keep != NULL && w->o->keep(w->o->arg, pos, row, &keep, err) != 0)
		return -1;
	if (!keep)
		return 0;
	if (w->o->lineage && w->o->row_id != NULL && w->row[w->n - 2].null &&
	    w->o->row_id(w->o->arg, pos, w->row, &w->row[w->n - 2], err) != 0)
		return -1;
	if (w->dw.w == NULL && st_data_writer_open(&w->dwo, &w->dw, err) != 0)
		return -1;
	if (st_parquet_writer_write_row(w->dw.w, row, err) != 0)
		return -1;
	w->out->rows_kept++;
	if (st_parquet_writer_size(w->dw.w) >= target)
		return rw_close(w, err);
	return 0;
}

int st_rewrite_run(const struct st_rewrite_opts *o, const char *uri, struct st_rewrite_out *out,
                   struct fl_err *err)
{
	struct st_parquet_column *cols = NULL;
	struct st_parquet_want *want = NULL;
	struct rw w = {.o = o, .out = out, .first = out->n};
	char *schema_json = NULL;
	size_t n = 0;
	int rc = -1;

	if (st_rewrite_columns(o->schema, &cols, &want, &n, err) != 0)
		goto out;
	if (o->lineage) {
		struct st_parquet_column *gc = realloc(cols, (n + 2) * sizeof(*gc));
		struct st_parquet_want *gw =
		        gc != NULL ? realloc(want, (n + 2) * sizeof(*gw)) : NULL;

		if (gc != NULL)
			cols = gc;
		if (gw != NULL)
			want = gw;
		w.row = gw != NULL ? calloc(n + 2, sizeof(*w.row)) : NULL;
		if (w.row == NULL) {
			nomem(err);
			goto out;
		}
		for (size_t k = n; k < n + 2; k++) {
			memset(&cols[k], 0, sizeof(cols[k]));
			cols[k].name = k == n ? "_row_id" : "_last_updated_sequence_number";
			cols[k].field_id = k == n ? ST_FIELD_ROW_ID : ST_FIELD_LAST_UPDATED;
			cols[k].type.id = ST_TYPE_LONG;
			want[k] = (struct st_parquet_want){cols[k].field_id, cols[k].type, false};
		}
		n += 2;
		w.n = n;
	}
	schema_json = json_dumps(o->schema, JSON_COMPACT);
	if (schema_json == NULL) {
		nomem(err);
		goto out;
	}
	w.dwo = (struct st_data_writer_opts){.io = o->io,
	                                     .dir_uri = o->data_uri,
	                                     .tag = o->tag,
	                                     .columns = cols,
	                                     .n_columns = n,
	                                     .schema_json = schema_json,
	                                     .codec = o->codec,
	                                     .compression_level = o->compression_level};
	if (st_rewrite_scan(o->io, uri, o->mapping, want, n, rw_row, &w, err) != 0)
		goto out;
	if (w.dw.w != NULL && rw_close(&w, err) != 0)
		goto out;
	rc = 0;
out:
	st_data_writer_abort(&w.dw);
	if (rc != 0) {
		/* Drop what this call wrote; earlier calls' files stay. */
		struct fl_err ignored;

		while (out->n > w.first) {
			struct st_rewrite_file *f = &out->files[--out->n];

			if (st_io_delete(o->io, f->uri, &ignored) != 0)
				ignored.kind = FL_ERR_NONE;
			free(f->uri);
			st_parquet_metrics_free(&f->m);
		}
	}
	free(schema_json);
	free(cols);
	free(want);
	free(w.row);
	return rc;
}

void st_rewrite_out_discard(struct st_io *io, struct st_rewrite_out *out)
{
	struct fl_err ignored;

	for (size_t i = 0; i < out->n; i++)
		if (st_io_delete(io, out->files[i].uri, &ignored) != 0)
			ignored.kind = FL_ERR_NONE;
	st_rewrite_out_free(out);
}

void st_rewrite_out_free(struct st_rewrite_out *out)
{
	for (size_t i = 0; i < out->n; i++) {
		free(out->files[i].uri);
		st_parquet_metrics_free(&out->files[i].m);
	}
	free(out->files);
	memset(out, 0, sizeof(*out));
}
