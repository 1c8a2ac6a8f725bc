/* vend.h - credential vending and remote-signing settings for table
 * responses (X-Iceberg-Access-Delegation), with a per-process cache of
 * vended credentials.
 *
 * DESIGN §4: vended credentials come from STS AssumeRole with a session
 * policy limited to the table's location; they are cached per (warehouse,
 * table location, access) until 80% of their lifetime has passed.  The
 * delegation header is a hint on loads (a warehouse without STS answers
 * without credentials, logged once per table and counted in /metrics) and
 * a demand on GET …/credentials (a 4xx naming the cause). */
#ifndef SRV_VEND_H
#define SRV_VEND_H

#include <jansson.h>

#include "catalog.h"
#include "io/profile.h"
#include "policy.h"
#include "sts.h"
#include "srv.h"

struct srv_vend;

/* A cache of at most cap credentials; NULL when out of memory. */
struct srv_vend *srv_vend_new(size_t cap);
void srv_vend_free(struct srv_vend *v);

/* The cache itself (keyed by warehouse id, location and access level).
 * srv_vend_cached copies the entry for key into *out and returns true when
 * less than 80% of its lifetime (fetched → expires_at_ms) has passed at
 * now; a stale entry is dropped.  srv_vend_remember stores creds fetched
 * at fetched, replacing the entry for key or, when full, the least
 * recently used one.  Thread-safe. */
bool srv_vend_cached(struct srv_vend *v, const char *key, int64_t now, struct st_sts_creds *out);
void srv_vend_remember(struct srv_vend *v, const char *key, const struct st_sts_creds *c,
                       int64_t fetched);

/* The caller's access to the objects of table ns.table in warehouse wh,
 * as authorization decides it (srv_access_level): read-write, read, or a
 * FL_ERR_FORBIDDEN error when the caller may not even read the table. */
int srv_object_access(struct srv_req *r, const char *wh, const struct cat_ns *ns, const char *table,
                      enum st_access *out, struct fl_err *err) FL_MUST_CHECK;
enum srv_vend_mode {
	SRV_VEND_HINT, /* load/create/register: honour the header if possible */
	SRV_VEND_DEMAND, /* GET …/credentials: credentials or a 4xx */
};

/* The "config" object and "storage-credentials" array of a table response
 * for the table ns.table at location in wh (new references; *creds is NULL
 * when none are vended).  A file warehouse, and a request without
 * X-Iceberg-Access-Delegation, get an empty config.  Otherwise an s3
 * warehouse gets its endpoint, region and addressing style; with
 * "vended-credentials" requested (or in DEMAND mode) and an STS role
 * configured, also short-lived keys; with "remote-signing" requested and
 * enabled, the signer settings.  STS failures are returned as errors. */
int srv_vend_table(struct srv_req *r, const struct cat_warehouse *wh, const struct cat_ns *ns,
                   const char *table, const char *location, enum srv_vend_mode mode,
                   json_t **config, json_t **creds, struct fl_err *err) FL_MUST_CHECK;

/* Whether a load's extras (srv_vend_table in SRV_VEND_HINT mode) are an
 * empty config: not an s3 warehouse, or no X-Iceberg-Access-Delegation.
 * Known from the table's storage type and r alone, before its warehouse
 * is looked up. */
bool srv_vend_nothing(struct srv_req *r, const char *storage_type);

/* The warehouse's own S3 keys (st_profile_credentials) in *keys, which the
 * caller wipes and frees with srv_server_keys_free.  FL_ERR_UNAVAILABLE
 * naming the variable or file (never a value) when they cannot be read. */
int srv_server_keys(const struct cat_warehouse *wh, struct st_creds **keys,
                    struct fl_err *err) FL_MUST_CHECK;
void srv_server_keys_free(struct st_creds *keys);

/* The longest table location vending and signing accept, NUL included. */
#define SRV_LOCATION_MAX 1024

/* The "location" of a stored metadata JSON text, copied into out. */
int srv_metadata_location(const char *metadata, char *out, size_t cap,
                          struct fl_err *err) FL_MUST_CHECK;
/* The location of a loaded table (cat_table_bytes_location: parsed once
 * per version), or NULL with FL_ERR_INTERNAL when it has no usable one,
 * worded as srv_metadata_location words it. */
const char *srv_table_location(const struct cat_table_bytes *t, struct fl_err *err);

#endif
