/* entry.h - a manifest entry as st_avro_read_all decodes it (avro/reader.h),
 * turned back into the manifest writer's structs (manifest.h, data_file.h),
 * so that a rewrite of a manifest can carry its entries as EXISTING or
 * DELETED with every field intact: metrics maps, bounds, key metadata,
 * split offsets, equality ids, sort order id and the v3 fields
 * (apache/iceberg format/spec.md "Manifests").
 *
 * Maps are read in both forms writers use: Iceberg's array of {key, value}
 * records and an Avro map (string keys).  Snapshot id and sequence numbers
 * that the entry leaves null are inherited from its manifest list record
 * (spec "Sequence Number Inheritance"), as an EXISTING or DELETED entry
 * must carry them.  Strings (paths, format) are borrowed from the decoded
 * record, which must outlive the copy; everything else is owned by it. */
#ifndef ST_ENTRY_H
#define ST_ENTRY_H

#include <jansson.h>

#include "base/alloc.h"
#include "err.h"
#include "iceberg/data_file.h"
#include "iceberg/manifest.h"

struct st_entry_copy {
	struct st_manifest_entry entry; /* entry.file points at file */
	struct st_data_file file; /* partition and first_row_id are the caller's to set */
	struct st_column_metrics *cols;
	int64_t *splits;
	int32_t *eq_ids;
	uint8_t *key_metadata;
	const struct st_alloc *alloc;
};

/* Fills *out from rec (a manifest_entry record) and list_rec (its manifest
 * list record), allocating from a (NULL: the C library).  The status is the entry's; the caller sets EXISTING or
 * DELETED.  FL_ERR_BAD_REQUEST naming the field for a value of the wrong
 * type, a bound that is not base64, or a snapshot id or sequence number
 * that neither gives; FL_ERR_NOMEM.  On failure *out holds nothing to
 * free. */
int st_entry_copy_from_json(const json_t *rec, const json_t *list_rec, const struct st_alloc *a,
                            struct st_entry_copy *out, struct fl_err *err) FL_MUST_CHECK;

/* Releases what the copy owns; accepts a zeroed copy. */
void st_entry_copy_free(struct st_entry_copy *c);

#endif
