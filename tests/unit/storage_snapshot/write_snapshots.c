/* write_snapshots.c - writes a small Iceberg table through three appends
 * with the snapshot builder (storage/iceberg/snapshot.c), for the node
 * tests in tests/integration/write-path-snapshot/ to read with independent
 * readers (python3-avro, avsc, icebird).
 *
 * Usage: write_snapshots DIR FORMAT_VERSION null|deflate
 *        write_snapshots DIR FORMAT_VERSION null|deflate --parent LIST_URI ID SEQ
 *
 * The table lives at file://DIR: Parquet data files under data/, manifests
 * and manifest lists under metadata/.  The third append first builds on a
 * stale parent (snapshot 1), as if its commit had then failed with a 409,
 * and is rebuilt on snapshot 2 as attempt 2, reusing its manifest.  Prints
 * one JSON object: location, format_version, schema, the three Snapshot
 * JSONs (as a catalog would commit them), the stale attempt's list, the
 * rows written (id, name, v) and next_row_id.
 *
 * With --parent it makes one append (the first batch) on top of a parent
 * snapshot written by someone else (its list at LIST_URI, snapshot id ID,
 * sequence number SEQ, summary unknown, so the totals are recomputed from
 * its files) and prints {snapshot, manifest, rows}. */
#include <inttypes.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/sink.h"
#include "iceberg/snapshot.h"
#include "io/io.h"
#include "parquet/parquet.h"

#include "tio.h"

static const char schema_text[] =
        "{\"type\":\"struct\",\"schema-id\":0,\"fields\":["
        "{\"id\":1,\"name\":\"id\",\"required\":true,\"type\":\"long\"},"
        "{\"id\":2,\"name\":\"name\",\"required\":false,\"type\":\"string\"},"
        "{\"id\":3,\"name\":\"v\",\"required\":false,\"type\":\"double\"}]}";

static const struct st_parquet_column cols[] = {
        {"id", 1, {ST_TYPE_LONG, 0, 0, 0}, true, ST_METRICS_DEFAULT, 0},
        {"name", 2, {ST_TYPE_STRING, 0, 0, 0}, false, ST_METRICS_DEFAULT, 0},
        {"v", 3, {ST_TYPE_DOUBLE, 0, 0, 0}, false, ST_METRICS_DEFAULT, 0},
};

static void die(const char *what, const struct fl_err *err)
{
	fprintf(stderr, "write_snapshots: %s: %s\n", what, err ? err->msg : "");
	exit(1);
}

static int64_t next_id = 1;

/* One Parquet file of n rows at <location>/data/<name>; fills *df and *m. */
static void write_data_file(const char *dir, const char *location, const char *name, int n,
                            json_t *rows, struct st_parquet_metrics *m, struct st_data_file *df,
                            char *uri, size_t cap)
{
	struct st_parquet_opts o = {0};
	struct st_parquet_writer *w;
	struct st_file_sink f;
	struct fl_err err = {0};
	char path[512];

	snprintf(path, sizeof(path), "%s/data/%s", dir, name);
	snprintf(uri, cap, "%s/data/%s", location, name);
	if (st_file_sink_open(&f, path, &err) != 0)
		die(path, &err);
	o.columns = cols;
	o.n_columns = 3;
	o.iceberg_schema_json = schema_text;
	o.codec = ST_PARQUET_ZSTD;
	o.sink = f.sink;
	if (st_parquet_writer_open(&o, &w, &err) != 0)
		die(path, &err);
	for (int i = 0; i < n; i++, next_id++) {
		struct st_value row[3];
		char s[32];

		memset(row, 0, sizeof(row));
		snprintf(s, sizeof(s), "n%" PRId64, next_id);
		row[0].v.l = next_id;
		row[1].null = next_id % 7 == 0;
		row[1].v.bin.p = (const uint8_t *)s;
		row[1].v.bin.len = strlen(s);
		row[2].v.d = (double)next_id * 0.5;
		if (st_parquet_writer_write_row(w, row, &err) != 0)
			die(path, &err);
		json_array_append_new(rows, json_pack("[I,o,f]", (json_int_t)next_id,
		                                      row[1].null ? json_null() : json_string(s),
		                                      row[2].v.d));
	}
	if (st_parquet_writer_close(w, m, &err) != 0 || st_file_sink_close(&f, &err) != 0)
		die(path, &err);
	st_parquet_metrics_to_data_file(m, df);
	df->file_path = uri;
}

static int append_on_foreign(const struct st_snapshot_table *t, const char *dir,
                             const char *location, const char *list, int64_t id, int64_t seq)
{
	struct st_parquet_metrics m = {0};
	struct st_data_file df = {0};
	char uri[700];
	struct st_snapshot_manifest *man;
	struct st_snapshot_parent p = {0};
	struct st_snapshot_opts o = {0};
	struct fl_err err = {0};
	json_t *rows = json_array(), *snap, *out;

	write_data_file(dir, location, "f-0.parquet", 12, rows, &m, &df, uri, sizeof(uri));
	if (st_snapshot_manifest_write(t, id + 1, &df, 1, &man, &err) != 0)
		die("manifest", &err);
	p.snapshot_id = id;
	p.manifest_list = list;
	o.table = t;
	o.parent = &p;
	o.snapshot_id = id + 1;
	o.sequence_number = seq + 1;
	o.timestamp_ms = 1760000000000;
	o.first_row_id = 500;
	o.attempt = 1;
	o.manifest = man;
	if (st_snapshot_build(&o, &snap, &err) != 0)
		die("snapshot", &err);
	out = json_pack("{s:o,s:s,s:o}", "snapshot", snap, "manifest", man->path, "rows", rows);
	if (out == NULL || json_dumpf(out, stdout, JSON_COMPACT) != 0)
		die("stdout", NULL);
	putchar('\n');
	json_decref(out);
	st_snapshot_manifest_free(man);
	st_parquet_metrics_free(&m);
	return 0;
}

int main(int argc, char **argv)
{
	static const int rows_per_file[3][2] = {{40, 25}, {30, 0}, {20, 15}};
	struct st_snapshot_table t = {0};
	struct st_snapshot_manifest *man[3];
	json_t *out = json_object(), *rows = json_array(), *snaps = json_array(), *schema, *spec;
	char location[600], meta[640], dir_meta[640];
	struct fl_err err = {0};
	int64_t next_row_id = 0, seq = 0;
	const json_t *parent = NULL;

	if ((argc != 4 && (argc != 8 || strcmp(argv[4], "--parent") != 0)) ||
	    (strcmp(argv[2], "2") != 0 && strcmp(argv[2], "3") != 0)) {
		fprintf(stderr,
		        "usage: write_snapshots DIR 2|3 null|deflate [--parent URI ID SEQ]\n");
		return 2;
	}
	snprintf(location, sizeof(location), "file://%s", argv[1]);
	snprintf(meta, sizeof(meta), "%s/metadata", location);
	snprintf(dir_meta, sizeof(dir_meta), "%s/data", location);
	if (st_io_mkdirs(tio(), meta, &err) != 0 || st_io_mkdirs(tio(), dir_meta, &err) != 0)
		die("mkdirs", &err);
	schema = json_loads(schema_text, 0, NULL);
	spec = json_pack("{s:i,s:[]}", "spec-id", 0, "fields");
	t.format_version = argv[2][0] == '3' ? 3 : 2; /* checked above */
	t.schema = schema;
	t.schema_id = 0;
	t.spec = spec;
	t.spec_id = 0;
	t.metadata_dir = meta;
	t.io = tio();
	t.codec = strcmp(argv[3], "deflate") == 0 ? ST_AVRO_CODEC_DEFLATE : ST_AVRO_CODEC_NULL;

	if (argc == 8) {
		int rc = append_on_foreign(&t, argv[1], location, argv[5],
		                           strtoll(argv[6], NULL, 10), strtoll(argv[7], NULL, 10));

		json_decref(out);
		json_decref(rows);
		json_decref(snaps);
		json_decref(schema);
		json_decref(spec);
		return rc;
	}
	for (int b = 0; b < 3; b++) {
		struct st_parquet_metrics m[2] = {{0}};
		struct st_data_file df[2];
		char uris[2][700];
		size_t n = 0;
		struct st_snapshot_parent p = {0};
		struct st_snapshot_opts o = {0};
		json_t *snap, *extra;

		for (int k = 0; k < 2; k++) {
			char name[64];

			if (rows_per_file[b][k] == 0)
				continue;
			memset(&df[n], 0, sizeof(df[n]));
			snprintf(name, sizeof(name), "b%d-%d.parquet", b + 1, k);
			write_data_file(argv[1], location, name, rows_per_file[b][k], rows, &m[n],
			                &df[n], uris[n], sizeof(uris[n]));
			n++;
		}
		if (st_snapshot_manifest_write(&t, 1000 + b, df, n, &man[b], &err) != 0)
			die("manifest", &err);
		extra = json_pack("{s:s}", "floe.batch-id",
		                  b == 0   ? "batch-a"
		                  : b == 1 ? "batch-b"
		                           : "batch-c");
		o.table = &t;
		o.snapshot_id = 1000 + b;
		o.timestamp_ms = 1760000000000 + b;
		o.manifest = man[b];
		o.extra_summary = extra;
		o.attempt = 1;
		if (b == 2) {
			/* attempt 1 on the stale parent (snapshot 1000) */
			const json_t *stale = json_array_get(snaps, 0);

			p.snapshot_id = json_integer_value(json_object_get(stale, "snapshot-id"));
			p.manifest_list =
			        json_string_value(json_object_get(stale, "manifest-list"));
			p.summary = json_object_get(stale, "summary");
			o.parent = &p;
			o.sequence_number = 2;
			o.first_row_id =
			        json_integer_value(json_object_get(stale, "first-row-id")) +
			        json_integer_value(json_object_get(stale, "added-rows"));
			if (st_snapshot_build(&o, &snap, &err) != 0)
				die("stale attempt", &err);
			json_object_set_new(out, "stale_attempt", snap);
			o.attempt = 2;
		}
		if (parent != NULL) {
			p.snapshot_id = json_integer_value(json_object_get(parent, "snapshot-id"));
			p.manifest_list =
			        json_string_value(json_object_get(parent, "manifest-list"));
			p.summary = json_object_get(parent, "summary");
			o.parent = &p;
		}
		o.sequence_number = ++seq;
		o.first_row_id = next_row_id;
		if (st_snapshot_build(&o, &snap, &err) != 0)
			die("snapshot", &err);
		if (t.format_version >= 3)
			next_row_id += json_integer_value(json_object_get(snap, "added-rows"));
		json_array_append_new(snaps, snap);
		parent = snap;
		json_decref(extra);
		for (size_t k = 0; k < n; k++)
			st_parquet_metrics_free(&m[k]);
	}
	json_object_set_new(out, "location", json_string(location));
	json_object_set_new(out, "format_version", json_integer(t.format_version));
	json_object_set_new(out, "schema", schema);
	json_object_set_new(out, "snapshots", snaps);
	json_object_set_new(out, "rows", rows);
	json_object_set_new(out, "next_row_id", json_integer(next_row_id));
	json_object_set_new(out, "manifests",
	                    json_pack("[s,s,s]", man[0]->path, man[1]->path, man[2]->path));
	if (json_dumpf(out, stdout, JSON_COMPACT) != 0)
		die("stdout", NULL);
	putchar('\n');
	for (int b = 0; b < 3; b++)
		st_snapshot_manifest_free(man[b]);
	json_decref(out);
	json_decref(spec);
	return 0;
}
