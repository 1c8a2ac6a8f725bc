/* handlers.h - one handler per route; each file holds one OpenAPI tag's
 * handlers (h_config.c, h_namespaces.c, h_warehouses.c, h_ops.c).
 *
 * A handler reads the request, calls the catalog, and answers through
 * reply.h.  On failure it returns -1 with err set and the caller answers with
 * the error model. */
#ifndef SRV_HANDLERS_H
#define SRV_HANDLERS_H

#include "srv.h"

/* The largest metrics report accepted (reports are stored). */
#define SRV_REPORT_MAX_BYTES 65536

int srv_h_config(struct srv_req *r, struct fl_err *err);
int srv_h_ns_list(struct srv_req *r, struct fl_err *err);
int srv_h_ns_create(struct srv_req *r, struct fl_err *err);
int srv_h_ns_load(struct srv_req *r, struct fl_err *err);
int srv_h_ns_exists(struct srv_req *r, struct fl_err *err);
int srv_h_ns_drop(struct srv_req *r, struct fl_err *err);
int srv_h_ns_properties(struct srv_req *r, struct fl_err *err);
int srv_h_tbl_list(struct srv_req *r, struct fl_err *err);
int srv_h_tbl_create(struct srv_req *r, struct fl_err *err);
int srv_h_tbl_register(struct srv_req *r, struct fl_err *err);
int srv_h_tbl_load(struct srv_req *r, struct fl_err *err);
int srv_h_tbl_exists(struct srv_req *r, struct fl_err *err);
int srv_h_tbl_commit(struct srv_req *r, struct fl_err *err);
/* Answers the replay of a keyed commit whose record keeps the metadata
 * location it wrote (cat_idem): its CommitTableResponse, marked
 * Idempotent-Replayed.  On a worker thread. */
int srv_replay_commit(struct srv_req *r, const char *metadata_location, struct fl_err *err);
int srv_h_tbl_drop(struct srv_req *r, struct fl_err *err);
int srv_h_tbl_unregister(struct srv_req *r, struct fl_err *err);
int srv_h_tbl_rename(struct srv_req *r, struct fl_err *err);
/* h_views.c: the Iceberg view routes */
int srv_h_view_list(struct srv_req *r, struct fl_err *err);
int srv_h_view_create(struct srv_req *r, struct fl_err *err);
int srv_h_view_register(struct srv_req *r, struct fl_err *err);
int srv_h_view_load(struct srv_req *r, struct fl_err *err);
int srv_h_view_exists(struct srv_req *r, struct fl_err *err);
int srv_h_view_commit(struct srv_req *r, struct fl_err *err);
int srv_h_view_drop(struct srv_req *r, struct fl_err *err);
int srv_h_view_rename(struct srv_req *r, struct fl_err *err);
int srv_h_tbl_metrics(struct srv_req *r, struct fl_err *err);
int srv_h_tbl_credentials(struct srv_req *r, struct fl_err *err);
int srv_h_tbl_sign(struct srv_req *r, struct fl_err *err);
int srv_h_s3_sign(struct srv_req *r, struct fl_err *err);
int srv_h_transactions(struct srv_req *r, struct fl_err *err);
int srv_h_wh_list(struct srv_req *r, struct fl_err *err);
int srv_h_wh_create(struct srv_req *r, struct fl_err *err);
int srv_h_wh_get(struct srv_req *r, struct fl_err *err);
int srv_h_wh_update(struct srv_req *r, struct fl_err *err);
int srv_h_wh_delete(struct srv_req *r, struct fl_err *err);
int srv_h_healthz(struct srv_req *r, struct fl_err *err);
int srv_h_readyz(struct srv_req *r, struct fl_err *err);
int srv_h_metrics(struct srv_req *r, struct fl_err *err);
int srv_h_openapi(struct srv_req *r, struct fl_err *err);
/* h_access.c: the token endpoint and the access management API */
int srv_h_oauth_tokens(struct srv_req *r, struct fl_err *err);
int srv_h_principal_list(struct srv_req *r, struct fl_err *err);
int srv_h_principal_create(struct srv_req *r, struct fl_err *err);
int srv_h_principal_get(struct srv_req *r, struct fl_err *err);
int srv_h_principal_delete(struct srv_req *r, struct fl_err *err);
int srv_h_principal_rotate(struct srv_req *r, struct fl_err *err);
int srv_h_principal_roles(struct srv_req *r, struct fl_err *err);
int srv_h_principal_assign(struct srv_req *r, struct fl_err *err);
int srv_h_principal_unassign(struct srv_req *r, struct fl_err *err);
int srv_h_role_list(struct srv_req *r, struct fl_err *err);
int srv_h_role_create(struct srv_req *r, struct fl_err *err);
int srv_h_role_get(struct srv_req *r, struct fl_err *err);
int srv_h_role_delete(struct srv_req *r, struct fl_err *err);
int srv_h_grant_list(struct srv_req *r, struct fl_err *err);
int srv_h_grant_add(struct srv_req *r, struct fl_err *err);
int srv_h_grant_revoke(struct srv_req *r, struct fl_err *err);
/* h_feeds.c: the feed management API */
int srv_h_feed_list(struct srv_req *r, struct fl_err *err);
int srv_h_feed_create(struct srv_req *r, struct fl_err *err);
int srv_h_feed_get(struct srv_req *r, struct fl_err *err);
int srv_h_feed_pause(struct srv_req *r, struct fl_err *err);
int srv_h_feed_resume(struct srv_req *r, struct fl_err *err);
int srv_h_feed_delete(struct srv_req *r, struct fl_err *err);
int srv_h_feed_push(struct srv_req *r, struct fl_err *err);
int srv_h_feed_replay(struct srv_req *r, struct fl_err *err);
/* h_maintenance.c: a table's maintenance runs and their outcomes */
int srv_h_maint_request(struct srv_req *r, struct fl_err *err);
int srv_h_maint_status(struct srv_req *r, struct fl_err *err);

/* The warehouse name of the request: its prefix, or the default warehouse;
 * FL_ERR_BAD_REQUEST when there is neither. */
int srv_warehouse_name(struct srv_req *r, const char **name, struct fl_err *err) FL_MUST_CHECK;

/* Shared by handlers: resolves r->prefix (or the default warehouse). */
int srv_warehouse(struct srv_req *r, struct cat_warehouse *wh, struct fl_err *err) FL_MUST_CHECK;

/* Before a catalog mutation's idempotency transaction begins: looks its
 * warehouse up (from the cache, or read and cached) and keeps it for the
 * request (r->wh_pre), so that srv_warehouse never reads it inside the
 * transaction.  A lookup that fails keeps nothing: the handler meets and
 * reports the error itself. */
void srv_warehouse_prefetch(struct srv_req *r);

/* Sets wh->io (from srv_warehouse) to the warehouse's storage handle, held
 * until the request ends. */
int srv_warehouse_io(struct srv_req *r, struct cat_warehouse *wh, struct fl_err *err) FL_MUST_CHECK;

/* Parses a pageSize query value (NULL = keep *page) and caps it at
 * max-page-size. */
int srv_page_size(struct srv_req *r, const char *value, long *page,
                  struct fl_err *err) FL_MUST_CHECK;

/* A properties map of a create or an update: at most max-properties string
 * values, keys of 1 to 4 * max-identifier-bytes bytes, values of at most
 * CAT_PROPERTY_VALUE_MAX bytes; else FL_ERR_BAD_REQUEST naming which. */
int srv_check_properties(struct srv_req *r, const json_t *props, const char *what,
                         struct fl_err *err) FL_MUST_CHECK;
/* Checks an identifier name (h_tables.c): non-empty, valid UTF-8, within
 * max-identifier-bytes; `what` names it in the message. */
int srv_check_name(struct srv_req *r, const char *name, const char *what,
                   struct fl_err *err) FL_MUST_CHECK;

/* A TableIdentifier {namespace:[…], name} into ns/name (levels in the
 * arena), with the same checks as paths; `what` names it in messages. */
int srv_identifier(struct srv_req *r, const json_t *id, const char *what, struct cat_ns *ns,
                   const char **name, struct fl_err *err) FL_MUST_CHECK;

/* listTables / listViews (views set): one page of the namespace's names
 * (h_tables.c). */
int srv_list_entries(struct srv_req *r, bool views, struct fl_err *err) FL_MUST_CHECK;

/* renameTable / renameView (views set): RenameTableRequest, authorized as
 * table-write on the source and table-create in the destination namespace
 * (h_tables.c). */
int srv_rename_entry(struct srv_req *r, bool views, struct fl_err *err) FL_MUST_CHECK;

/* Splits r->namespace_raw on 0x1F into levels in the arena, checking the
 * identifier limits. */
int srv_namespace(struct srv_req *r, const char *raw, struct cat_ns *ns,
                  struct fl_err *err) FL_MUST_CHECK;

#endif
