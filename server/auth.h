/* auth.h - who is calling (authentication) and what they may do
 * (authorization), DESIGN §6.
 *
 * Modes (setting auth): "none" serves every route without identity; "token"
 * requires a Bearer token on every route whose privilege is not
 * SRV_PRIV_PUBLIC.  Tokens are Floe's own (issued by POST /v1/oauth/tokens,
 * signed RS256/ES256) or an external OIDC issuer's (keys from a JWKS).
 *
 * Authorization: a principal's roles hold grants of privileges on a
 * warehouse, a namespace (and everything below it) or a table.  A route's
 * privilege column (router.c) names what it needs; the resource comes from
 * the route parameters, or — for routes whose resources are in the body
 * (create namespace, rename, transactions) — from the handler, which calls
 * srv_authorize for each.  A caller that may see anything at or below a
 * namespace may also load and list it; lists show only what the caller may
 * see (srv_auth_visible).
 *
 * Hot path: a verified token is cached (by SHA-256 of its text, until its
 * exp) and a principal's grants are cached until the access data changes
 * (in this process, or anywhere as announced by NOTIFY floe_auth; for at
 * most auth-cache-ttl seconds while those notifications are unavailable),
 * so an authorized request with a known token costs two hash lookups. */
#ifndef SRV_AUTH_H
#define SRV_AUTH_H

#include <stdbool.h>

#include "router.h"
#include "srv.h"

struct srv_auth;
struct srv_principal;

/* Reads the auth settings: the mode (logging a warning for "none" on a
 * non-loopback address), the signing and verifying keys (generating an
 * ephemeral key, with a warning, when none is configured), the external
 * issuer's JWKS.  Fails on an unreadable or unsuitable key file. */
int srv_auth_start(const struct srv_config *cfg, struct cat_db *db, struct srv_auth **out,
                   struct fl_err *err) FL_MUST_CHECK;
void srv_auth_free(struct srv_auth *a);

/* True when requests must carry a token (mode token). */
bool srv_auth_enabled(const struct srv_auth *a);

/* Whether the Authorization header hdr carries a Bearer token that is
 * refused as it stands (signature, issuer, audience, expiry): 1 with the
 * reason in err.  0 for any other header, a token that verifies, or one that
 * cannot be judged without waiting.  Cheap for a known token (the cache
 * srv_auth_request uses, which a verified token fills); httpd.c asks before
 * it reads a body.  Looks at no principal. */
int srv_auth_token_refused(struct srv_auth *a, const char *hdr, struct fl_err *err);

/* Authenticates the request (when its route is not public and the mode is
 * token) and checks the route's privilege on the resource named by its path.
 * FL_ERR_NOT_AUTHORIZED (401) for a missing, invalid or unknown token or
 * principal; FL_ERR_FORBIDDEN (403) when the principal lacks the privilege.
 * The reason is logged; the token never is. */
int srv_auth_request(struct srv_req *r, struct fl_err *err) FL_MUST_CHECK;

/* Checks priv on a resource of warehouse wh (NULL = the global scope of the
 * management API), namespace ns (NULL or n = 0 = the warehouse itself) and
 * table (NULL = the namespace).  Always 0 with auth none.  FL_ERR_FORBIDDEN
 * names the privilege and the resource. */
int srv_authorize(struct srv_req *r, enum srv_priv priv, const char *wh, const struct cat_ns *ns,
                  const char *table, struct fl_err *err) FL_MUST_CHECK;

/* Whether the caller may see the namespace (table NULL) or table: some
 * grant covers it or (for a namespace) lies below it.  Always true with
 * auth none. */
bool srv_auth_visible(struct srv_req *r, const char *wh, const struct cat_ns *ns,
                      const char *table);

/* Removes from arr (a JSON array of namespaces, each an array of levels, or
 * of table identifiers {namespace, name}) what the caller may not see. */
void srv_auth_filter(struct srv_req *r, const char *wh, json_t *arr, bool tables);

enum srv_access { SRV_ACCESS_NONE, SRV_ACCESS_READ, SRV_ACCESS_READ_WRITE };

/* The caller's access to a table, for credential vending and remote
 * signing: READ_WRITE when it holds table-write on it, READ when it holds
 * table-read, NONE otherwise.  READ_WRITE with auth none. */
enum srv_access srv_access_level(struct srv_req *r, const char *wh, const struct cat_ns *ns,
                                 const char *table);

/* The acting principal's name for audit records; NULL with auth none. */
const char *srv_actor(struct srv_req *r);

/* Issues a token for client_credentials (POST /v1/oauth/tokens): checks the
 * secret against its stored hash, counting failures per client id and per
 * address (FL_ERR_TOO_MANY_REQUESTS with *retry_after seconds once the bound
 * is reached).  A wrong id or secret is FL_ERR_NOT_AUTHORIZED.  *out is the
 * token response object (a new reference). */
int srv_auth_token(struct srv_req *r, const char *client_id, const char *secret, const char *scope,
                   json_t **out, int *retry_after, struct fl_err *err) FL_MUST_CHECK;

/* Whether name is a known privilege ("read", "write", "all", "table-read", …). */
bool srv_auth_privilege_known(const char *name);

/* Forgets every cached principal (after a management change), so a revoke
 * takes effect on the next request. */
void srv_auth_changed(struct srv_auth *a);

/* Creates the first admin principal (client id + secret) unless an admin
 * exists; *created says which.  Checks the id's characters and the secret's
 * length (16 bytes at least). */
int srv_auth_bootstrap(struct cat_db *db, const char *client_id, const char *secret, bool *created,
                       struct fl_err *err) FL_MUST_CHECK;

/* The external issuer configured (oidc-issuer), or NULL. */
const char *srv_auth_external_issuer(const struct srv_auth *a);

#endif
