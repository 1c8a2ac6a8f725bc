/* entry.h - a manifest entry read back from a manifest (st_avro_read_all's
 * JSON form) turned into the struct the manifest writer takes, with every
 * data_file field it had: path, format, partition, counts, column sizes,
 * value, null and NaN counts, bounds, split offsets, sort order and v3
 * first row id (not key metadata: Floe writes no encrypted files).  This is what a rewrite of a manifest needs to carry a file as
 * EXISTING (or DELETED) without losing the metrics later scans prune on.
 * Not shared between threads; calls are independent. */
#ifndef ST_ENTRY_H
#define ST_ENTRY_H

#include <jansson.h>

#include "err.h"
#include "iceberg/manifest.h"
#include "iceberg/snapshot.h"

/* One entry and the memory it points into (owned). */
struct st_entry_copy {
	struct st_manifest_entry e; /* e.file points at df */
	struct st_data_file df;
	struct st_column_metrics *cols;
	size_t n_cols;
	struct st_value *partition;
	int64_t *splits;
};

/* Fills *out from entry (one element of a manifest read with
 * st_avro_read_all) of the manifest that list_rec (its manifest list
 * record) describes: snapshot id and sequence numbers are the entry's, or
 * inherited from list_rec when null (spec "Sequence Number Inheritance").
 * The partition is parsed for table's spec (st_snapshot_partition_parse);
 * string values and the file path point into entry, which must outlive
 * out.  FL_ERR_BAD_REQUEST naming the field for a malformed entry;
 * FL_ERR_NOMEM.  Release with st_entry_copy_free (also after a failure). */
int st_entry_copy_parse(const struct st_snapshot_table *table, const json_t *list_rec,
                        const json_t *entry, struct st_entry_copy *out,
                        struct fl_err *err) FL_MUST_CHECK;

/* Releases what st_entry_copy_parse allocated; accepts a zeroed struct. */
void st_entry_copy_free(struct st_entry_copy *c);

#endif
