/* data_file.h - what a manifest records about one data or delete file
 * (Iceberg spec "Manifests", data_file struct, field ids 100-145).
 *
 * The Parquet writer produces the metrics half (st_column_metrics); the
 * caller adds path, partition tuple and the rest.  Pointers are borrowed:
 * the manifest writer copies what it needs before returning. */
#ifndef ST_DATA_FILE_H
#define ST_DATA_FILE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "iceberg/types.h"

enum st_file_content {
	ST_CONTENT_DATA = 0,
	ST_CONTENT_POSITION_DELETES = 1,
	ST_CONTENT_EQUALITY_DELETES = 2,
};

/* Metrics of one column (by Iceberg field id).  -1 means "not recorded"
 * and the key is left out of that map; bounds are single-value serialized
 * (types.h) and already truncated. */
struct st_column_metrics {
	int32_t field_id;
	int64_t column_size; /* compressed bytes of the column's chunks, headers included */
	int64_t value_count; /* values including nulls and NaNs */
	int64_t null_count;
	int64_t nan_count; /* float and double only; -1 otherwise */
	bool has_lower;
	bool has_upper;
	uint8_t *lower;
	size_t lower_len;
	uint8_t *upper;
	size_t upper_len;
};

struct st_data_file {
	enum st_file_content content;
	const char *file_path;
	const char *file_format; /* "PARQUET", "AVRO" or "ORC" */
	const struct st_value *partition; /* one value per partition field, in spec order */
	int64_t record_count;
	int64_t file_size_in_bytes;
	const struct st_column_metrics *columns;
	size_t n_columns;
	const int64_t *split_offsets; /* ascending row-group offsets */
	size_t n_split_offsets;
	const int32_t *equality_ids; /* equality deletes only */
	size_t n_equality_ids;
	bool has_sort_order_id;
	int32_t sort_order_id;
	const uint8_t *key_metadata; /* NULL: none */
	size_t key_metadata_len;
	/* v3 only; ignored when writing a v2 manifest. */
	bool has_first_row_id; /* new files leave it null: it is inherited */
	int64_t first_row_id;
	const char *referenced_data_file; /* deletion vectors; NULL: none */
	bool has_content_offset; /* deletion vectors: Puffin blob offset and size */
	int64_t content_offset;
	int64_t content_size_in_bytes;
};

#endif
