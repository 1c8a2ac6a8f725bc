/* viewmeta.h - the view-metadata builder (Iceberg view spec, format
 * version 1): a view's metadata from a CreateViewRequest, the requirements
 * of a CommitViewRequest, and its updates.  Pure jansson; no SQL, no IO.
 * Every function is thread-safe (no shared state). */
#ifndef CAT_META_VIEWMETA_H
#define CAT_META_VIEWMETA_H

#include <jansson.h>
#include <stdint.h>

#include "err.h"

/* Builds the metadata of a new view from a CreateViewRequest (name, schema,
 * view-version, properties; location already resolved by the caller):
 * schema-id 0, version-id 1 made current with one version-log entry.
 * *out is a new reference.  FL_ERR_BAD_REQUEST naming the bad member. */
int cat_viewmeta_create(const json_t *req, const char *location, const char *uuid, json_t **out,
                        struct fl_err *err) FL_MUST_CHECK;

/* Checks the requirements of a CommitViewRequest against base: only
 * assert-view-uuid exists; a mismatch is FL_ERR_COMMIT_FAILED, an unknown
 * or malformed requirement FL_ERR_BAD_REQUEST. */
int cat_viewmeta_check_requirements(const json_t *base, const json_t *requirements,
                                    struct fl_err *err) FL_MUST_CHECK;

/* Applies ViewUpdates to a copy of base (assign-uuid, upgrade-format-version,
 * add-schema, set-location, set-properties, remove-properties,
 * add-view-version, set-current-view-version; -1 ids mean "last added in
 * this change").  *out is a new reference; base is not changed.
 * FL_ERR_BAD_REQUEST for an unknown action or an invalid update. */
int cat_viewmeta_apply(const json_t *base, const json_t *updates, json_t **out,
                       struct fl_err *err) FL_MUST_CHECK;

/* Checks a stored view metadata document (register-view): the fields
 * required by the view spec, format version 1, every schema and version
 * well formed, the current version and every version's schema present.
 * FL_ERR_BAD_REQUEST naming the first problem. */
int cat_viewmeta_validate(const json_t *metadata, struct fl_err *err) FL_MUST_CHECK;

#endif
