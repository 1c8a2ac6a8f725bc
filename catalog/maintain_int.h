/* maintain_int.h - small metadata helpers shared by the maintenance actions
 * (maintain.c, maintain_manifests.c); not part of the catalog's API. */
#ifndef CAT_MAINTAIN_INT_H
#define CAT_MAINTAIN_INT_H

#include <jansson.h>

#include "err.h"
#include "json.h"

/* The current snapshot of table metadata meta, or NULL when it has none. */
const json_t *cat_mt_head(const json_t *meta);

/* Table property key of meta as a positive integer into *out, or dflt when
 * absent.  FL_ERR_BAD_REQUEST naming the table and the property when it is
 * not a positive integer. */
int cat_mt_int_prop(const json_t *meta, const char *table, const char *key, json_int_t dflt,
                    json_int_t *out, struct fl_err *err) FL_MUST_CHECK;

#endif
