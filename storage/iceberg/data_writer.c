/* data_writer.c - one new Parquet data file of a table (see data_writer.h).
 * Invariant: a file becomes visible only through st_data_writer_close
 * succeeding; every other path aborts the store's writer. */
#include "iceberg/data_writer.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "uuid.h"

enum st_parquet_codec st_data_codec(const char *name)
{
	if (name == NULL)
		return ST_PARQUET_ZSTD;
	if (strcasecmp(name, "snappy") == 0)
		return ST_PARQUET_SNAPPY;
	if (strcasecmp(name, "gzip") == 0)
		return ST_PARQUET_GZIP;
	if (strcasecmp(name, "uncompressed") == 0 || strcasecmp(name, "none") == 0)
		return ST_PARQUET_UNCOMPRESSED;
	return ST_PARQUET_ZSTD;
}

int st_data_level(enum st_parquet_codec codec, const json_t *meta, int *level, struct fl_err *err)
{
	const char *v = json_string_value(json_object_get(json_object_get(meta, "properties"),
	                                                  "write.parquet.compression-level"));
	int max = codec == ST_PARQUET_ZSTD ? 22 : codec == ST_PARQUET_GZIP ? 9 : 0;
	char *end;
	long l;

	*level = 0;
	if (v == NULL || max == 0)
		return 0;
	errno = 0;
	l = strtol(v, &end, 10);
	if (errno != 0 || end == v || *end != '\0' || l < 1 || l > max)
		return fl_err_set(err, FL_ERR_BAD_REQUEST,
		                  "table property write.parquet.compression-level is '%.40s': "
		                  "expected an integer from 1 to %d for %s",
		                  v, max, codec == ST_PARQUET_ZSTD ? "zstd" : "gzip");
	*level = (int)l;
	return 0;
}

int st_data_writer_open(const struct st_data_writer_opts *o, struct st_data_writer *dw,
                        struct fl_err *err)
{
	struct st_parquet_opts po = {0};
	char uuid[FL_UUID_STR];
	size_t len = strlen(o->dir_uri) + strlen(o->tag) + sizeof(uuid) + 16;

	memset(dw, 0, sizeof(*dw));
	fl_uuid_v7(uuid);
	dw->uri = malloc(len);
	if (dw->uri == NULL)
		return fl_err_set(err, FL_ERR_NOMEM, "out of memory");
	snprintf(dw->uri, len, "%s/%s-%s.parquet", o->dir_uri, uuid, o->tag);
	if (st_io_writer_open(o->io, dw->uri, &dw->file, err) != 0)
		goto fail;
	po.columns = o->columns;
	po.n_columns = o->n_columns;
	po.iceberg_schema_json = o->schema_json;
	po.codec = o->codec;
	po.compression_level = o->compression_level;
	po.sink = *st_io_writer_sink(dw->file);
	if (st_parquet_writer_open(&po, &dw->w, err) != 0)
		goto fail;
	return 0;
fail:
	st_data_writer_abort(dw);
	return -1;
}

int st_data_writer_close(struct st_data_writer *dw, char **uri, struct st_parquet_metrics *m,
                         struct fl_err *err)
{
	int rc;

	memset(m, 0, sizeof(*m));
	rc = st_parquet_writer_close(dw->w, m, err);
	dw->w = NULL;
	if (rc != 0)
		st_io_writer_abort(dw->file);
	else
		rc = st_io_writer_close(dw->file, NULL, err);
	dw->file = NULL;
	if (rc != 0) {
		st_parquet_metrics_free(m);
		st_data_writer_abort(dw);
		return -1;
	}
	*uri = dw->uri;
	dw->uri = NULL;
	return 0;
}

void st_data_writer_abort(struct st_data_writer *dw)
{
	if (dw->w != NULL)
		st_parquet_writer_free(dw->w);
	st_io_writer_abort(dw->file);
	free(dw->uri);
	memset(dw, 0, sizeof(*dw));
}
