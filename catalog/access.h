/* access.h - principals, roles and grants (DESIGN §6), and client secrets.
 *
 * A principal is a client (its name is the OAuth client id; only a salted
 * PBKDF2 hash of its secret is stored) or an external subject (an OIDC
 * issuer's iss + sub).  Principals hold roles; roles hold grants of a
 * privilege on a resource: a warehouse by name ("*" = every warehouse and the
 * management API), optionally a namespace (levels; covering everything below
 * it) and optionally a table in that namespace.  The catalog stores and
 * returns these; what a privilege allows is decided by the server.
 *
 * Every function is thread-safe and uses a pooled connection of its own.
 * Unknown principals, roles or grants are FL_ERR_NOT_FOUND; JSON results are
 * new references owned by the caller. */
#ifndef CAT_ACCESS_H
#define CAT_ACCESS_H

#include <jansson.h>
#include <stdbool.h>
#include <stdint.h>

#include "catalog.h"

/* ---- client secrets ---- */

/* A new random secret (43 base64url characters, 256 bits) into out[64]. */
int cat_secret_new(char out[64], struct fl_err *err) FL_MUST_CHECK;

/* Hashes secret as "pbkdf2-sha256$<iterations>$<salt b64>$<hash b64>" into a
 * malloc'd string (*out).  Slow on purpose (hundreds of milliseconds). */
int cat_secret_hash(const char *secret, char **out, struct fl_err *err) FL_MUST_CHECK;

/* True when secret matches the stored hash string (constant-time compare);
 * false for a malformed hash. */
bool cat_secret_verify(const char *secret, const char *stored);

/* ---- principals ---- */

/* What authorization needs of one principal:
 * {name, kind, secret-version: 16 hex digits of SHA-256 over the stored
 *  secret hash (changes with every rotation, and differs for a principal
 *  deleted and created again; "" hashed for external principals),
 *  grants: [{warehouse, namespace: [levels]|null, table: name|null, privilege}]}.
 * Looked up as a client by name (issuer == NULL) or as an external
 * principal by issuer + subject. */
int cat_principal_access(struct cat_db *db, const char *name_or_subject, const char *issuer,
                         json_t **out, struct fl_err *err) FL_MUST_CHECK;

/* The stored secret hash of client `name` (malloc'd).  FL_ERR_NOT_FOUND for
 * an unknown or external principal. */
int cat_principal_secret(struct cat_db *db, const char *name, char **hash,
                         struct fl_err *err) FL_MUST_CHECK;

/* Creates a principal: a client with secret_hash, or (secret_hash NULL) an
 * external subject of issuer.  FL_ERR_ALREADY_EXISTS when the name (or the
 * issuer + subject) is taken.  *out = its JSON (no secret). */
int cat_principal_create(struct cat_db *db, const char *name, const char *secret_hash,
                         const char *issuer, const char *subject, json_t **out,
                         struct fl_err *err) FL_MUST_CHECK;

/* Creates client `name` holding the admin role unless some principal holds
 * that role already (*created = false then; nothing changes).  Serialized
 * by an advisory lock, so replicas starting together create one admin. */
int cat_principal_bootstrap(struct cat_db *db, const char *name, const char *secret_hash,
                            bool *created, struct fl_err *err) FL_MUST_CHECK;

/* {principals: [...]} sorted by name; one principal with its roles. */
int cat_principal_list(struct cat_db *db, json_t **out, struct fl_err *err) FL_MUST_CHECK;
int cat_principal_get(struct cat_db *db, const char *name, json_t **out,
                      struct fl_err *err) FL_MUST_CHECK;

/* Deletes (revokes) a principal and its role assignments. */
int cat_principal_delete(struct cat_db *db, const char *name, struct fl_err *err) FL_MUST_CHECK;

/* Replaces a client's secret hash and sets its rotation time to now; tokens
 * issued before it stop being accepted.  FL_ERR_BAD_REQUEST for an external
 * principal. */
int cat_principal_rotate(struct cat_db *db, const char *name, const char *secret_hash,
                         struct fl_err *err) FL_MUST_CHECK;

/* Assigns / unassigns a role (assigning twice is not an error). */
int cat_principal_role_set(struct cat_db *db, const char *principal, const char *role, bool assign,
                           struct fl_err *err) FL_MUST_CHECK;

/* ---- roles and grants ---- */

/* FL_ERR_ALREADY_EXISTS when the name is taken. */
int cat_role_create(struct cat_db *db, const char *name, json_t **out,
                    struct fl_err *err) FL_MUST_CHECK;
/* {roles: [...]}; one role with its grants and principals. */
int cat_role_list(struct cat_db *db, json_t **out, struct fl_err *err) FL_MUST_CHECK;
int cat_role_get(struct cat_db *db, const char *name, json_t **out,
                 struct fl_err *err) FL_MUST_CHECK;
/* FL_ERR_CONFLICT for a built-in role. */
int cat_role_delete(struct cat_db *db, const char *name, struct fl_err *err) FL_MUST_CHECK;

/* Adds a grant to role (ns may be NULL; table needs ns).  Adding an
 * existing grant returns it.  *out = {id, warehouse, namespace, table,
 * privilege}. */
int cat_grant_add(struct cat_db *db, const char *role, const char *warehouse,
                  const struct cat_ns *ns, const char *table, const char *privilege, json_t **out,
                  struct fl_err *err) FL_MUST_CHECK;
/* {grants: [...]} of role, by id. */
int cat_grant_list(struct cat_db *db, const char *role, json_t **out,
                   struct fl_err *err) FL_MUST_CHECK;
/* Removes grant id of role. */
int cat_grant_revoke(struct cat_db *db, const char *role, int64_t id,
                     struct fl_err *err) FL_MUST_CHECK;

#endif
