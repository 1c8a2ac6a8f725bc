/* rest.h - a small Iceberg REST catalog client (libcurl), enough for
 * `floe ingest --catalog-uri`: discover the prefix, load, create and commit
 * tables.  It speaks to any catalog that follows the spec (Floe, Polaris,
 * Lakekeeper, …).  One client per thread. */
#ifndef ST_REST_H
#define ST_REST_H

#include <jansson.h>

#include <stdint.h>

#include "err.h"
#include "ingest/committer.h"

struct st_rest;

/* Connects to uri (e.g. http://127.0.0.1:8181): GET /v1/config?warehouse=…
 * to learn the prefix.  token may be NULL (no Authorization header). */
int st_rest_open(const char *uri, const char *warehouse, const char *token, struct st_rest **out,
                 struct fl_err *err) FL_MUST_CHECK;
void st_rest_close(struct st_rest *c);

/* GET …/tables/{t}: *metadata (new reference) and *metadata_location
 * (malloc'd).  FL_ERR_NO_SUCH_TABLE / FL_ERR_NO_SUCH_NAMESPACE on 404. */
int st_rest_load_table(struct st_rest *c, const char *const *ns, int nlevels, const char *name,
                       json_t **metadata, char **metadata_location,
                       struct fl_err *err) FL_MUST_CHECK;

/* POST …/tables with {name, schema, properties?}: the new table's metadata. */
int st_rest_create_table(struct st_rest *c, const char *const *ns, int nlevels, const char *name,
                         const json_t *schema, const json_t *properties, json_t **metadata,
                         char **metadata_location, struct fl_err *err) FL_MUST_CHECK;

/* POST …/tables/{t} with requirements and updates, sending idempotency_key
 * (may be NULL).  409 → FL_ERR_COMMIT_FAILED; 500/502/503/504 and transport
 * failures after the request was sent → FL_ERR_COMMIT_STATE_UNKNOWN; 422
 * (the Idempotency-Key was used with another body) → FL_ERR_UNPROCESSABLE;
 * other 4xx → FL_ERR_BAD_REQUEST with the server's message. */
int st_rest_commit(struct st_rest *c, const char *const *ns, int nlevels, const char *name,
                   const json_t *requirements, const json_t *updates, const char *idempotency_key,
                   json_t **metadata, char **metadata_location, struct fl_err *err) FL_MUST_CHECK;

/* The storage settings that came with the last table the client loaded,
 * created or refreshed credentials for (every request sends
 * X-Iceberg-Access-Delegation: vended-credentials): the response's
 * "config" overlaid with the "storage-credentials" entry whose prefix is
 * the longest match of the table location.  A new reference; an empty
 * object when the catalog sent none. */
json_t *st_rest_storage(struct st_rest *c);

/* GET …/tables/{t}/credentials: the entry best matching location, overlaid
 * on st_rest_storage (which it then replaces).  *config is a new
 * reference.  FL_ERR_BAD_REQUEST when none matches or the catalog refuses. */
int st_rest_load_credentials(struct st_rest *c, const char *const *ns, int nlevels,
                             const char *name, const char *location, json_t **config,
                             struct fl_err *err) FL_MUST_CHECK;

/* The "config" of the storage credential in creds (a StorageCredential
 * array) whose prefix is the longest one location starts with at a '/'
 * boundary; NULL when none.  Borrowed.  Pure. */
json_t *st_rest_pick_credentials(const json_t *creds, const char *location);

/* The REST implementation of the write path's committer
 * (ingest/committer.h) for table ns.name of the catalog at uri: connects
 * (st_rest_open), then load / create / io / commit as committer.h says;
 * vended credentials are fetched again when they expire within refresh_s
 * seconds.  Close it through its ops. */
int st_rest_committer_open(const char *uri, const char *warehouse, const char *token,
                           const char *const *ns, int nlevels, const char *name, int64_t refresh_s,
                           struct st_committer **out, struct fl_err *err) FL_MUST_CHECK;

#endif
