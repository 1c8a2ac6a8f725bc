/* addfile.h - Parquet objects added to a table as they are ("add files"):
 * checked against the table schema, copied into the table's data folder,
 * and described with the metrics a manifest needs, read from the file.
 *
 * The check: every column of the file maps to a column of the table by its
 * Parquet field id, else by the table's schema.name-mapping.default, else by
 * its name; a column the table lacks refuses the file (or, with
 * new-columns ignore, is left for readers to ignore); every column of the
 * table must be readable from the file as its type or as a type Iceberg
 * promotes to it (int -> long, float -> double, a wider decimal), a
 * required column must be present and hold no null.  A refused file is
 * FL_ERR_BAD_REQUEST naming the file, the column and the reason, so a feed
 * dead-letters it whole.  Files are copied (never referenced in place), so
 * expiry and orphan cleanup own them like any data file.  Not thread-safe
 * per call; calls are independent. */
#ifndef ST_ADDFILE_H
#define ST_ADDFILE_H

#include <jansson.h>
#include <stdbool.h>

#include "err.h"
#include "ingest.h"
#include "io/io.h"

struct st_addfile_opts {
	const json_t *schema; /* the table's current schema (flat, primitive fields) */
	const json_t *spec; /* the default partition spec: must be unpartitioned */
	const char *name_mapping; /* schema.name-mapping.default, or NULL */
	bool ignore_new_columns; /* a file column the table lacks is not a refusal */
	struct st_io *io; /* the table's storage (borrowed) */
	const char *data_uri; /* "<table location>/data" */
};

/* Checks, measures and copies the n local Parquet files into data_uri,
 * filling res as st_ingest_run does (files with their metrics, rows_ok,
 * bytes in and out; schema = a copy of o->schema).  res->needs_mapping is
 * set when a file lacks field ids and the table has no name mapping: the
 * commit must add one (st_addfile_name_mapping).  On failure nothing is
 * left behind and res is empty. */
int st_addfile_run(const struct st_addfile_opts *o, const char *const *inputs, size_t n,
                   struct st_ingest_result *res, struct fl_err *err) FL_MUST_CHECK;

/* A schema for a table created from the Parquet file at path: its columns
 * in file order, ids from 1, required where the file has no nulls by
 * definition.  FL_ERR_BAD_REQUEST for a nested or unreadable column. */
int st_addfile_infer_schema(const char *path, json_t **schema, struct fl_err *err) FL_MUST_CHECK;

/* The name mapping of schema (its columns' names to their ids) as the JSON
 * text of schema.name-mapping.default; malloc'd, NULL when out of memory. */
char *st_addfile_name_mapping(const json_t *schema);

#endif
