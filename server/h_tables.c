/* h_tables.c - the Iceberg table routes: create, register, load, exists,
 * list, commit, multi-table transactions, drop, rename, metrics reports and
 * credentials.
 *
 * loadTable answers with the stored metadata bytes spliced into the
 * LoadTableResult, so the hot read path parses no JSON.  Its ETag is a hash
 * of the metadata location: a new commit always writes a new file. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "libcrypto.h"
#include "auth.h"
#include "buf.h"
#include "clock.h"
#include "handlers.h"
#include "io/io.h"
#include "json.h"
#include "log.h"
#include "metrics.h"
#include "reply.h"
#include "vend.h"

static int nomem(struct fl_err *err)
{
	return fl_err_set(err, FL_ERR_NOMEM, "out of memory");
}

int srv_check_name(struct srv_req *r, const char *name, const char *what, struct fl_err *err)
{
	size_t n = strlen(name);

	if (n == 0)
		return fl_err_set(err, FL_ERR_BAD_REQUEST, "%s must not be empty", what);
	if ((int64_t)n > r->ctx->cfg->max_identifier_bytes)
		return fl_err_set(
		        err, FL_ERR_BAD_REQUEST,
		        "%s of %zu bytes exceeds the limit of %lld (max-identifier-bytes)", what, n,
		        (long long)r->ctx->cfg->max_identifier_bytes);
	if (!fl_utf8_valid(name, n))
		return fl_err_set(err, FL_ERR_BAD_REQUEST, "%s is not valid UTF-8 text", what);
	return 0;
}

/* The warehouse, namespace and table of the path. */
static int path_table(struct srv_req *r, struct cat_warehouse *wh, struct cat_ns *ns,
                      struct fl_err *err)
{
	if (srv_namespace(r, r->namespace_raw, ns, err) != 0 ||
	    (r->table != NULL && srv_check_name(r, r->table, "table name", err) != 0))
		return -1;
	return srv_warehouse(r, wh, err);
}

/* The ETag of a LoadTableResult: the SHA-256 of its metadata file's location
 * and snapshot mode (the refs-only body differs from the full one).  For the
 * full body, location_sha256 is that hash when the caller has it (the
 * catalog keeps it beside each version it reads), else NULL. */
static void etag_of(const char *metadata_location, const unsigned char *location_sha256, bool refs,
                    char out[40])
{
	unsigned char h[32];
	unsigned int hl = 0;
	EVP_MD_CTX *md;

	memset(h, 0, sizeof(h));
	if (!refs && location_sha256 != NULL) {
		memcpy(h, location_sha256, sizeof(h));
	} else if ((md = EVP_MD_CTX_new()) != NULL) {
		if (EVP_DigestInit_ex(md, EVP_sha256(), NULL) == 1 &&
		    EVP_DigestUpdate(md, metadata_location, strlen(metadata_location)) == 1 &&
		    EVP_DigestUpdate(md, refs ? "?snapshots=refs" : "", refs ? 15 : 0) == 1)
			EVP_DigestFinal_ex(md, h, &hl);
		EVP_MD_CTX_free(md);
	}
	out[0] = '"';
	/* Hex by table: this runs on every loadTable. */
	for (int i = 0; i < 16; i++) {
		out[1 + 2 * i] = "0123456789abcdef"[h[i] >> 4];
		out[2 + 2 * i] = "0123456789abcdef"[h[i] & 15];
	}
	out[33] = '"';
	out[34] = '\0';
}

/* Appends s as a JSON string, the bytes json_dumps would write. */
static int put_json_string(struct fl_buf *b, const char *s)
{
	size_t n;
	char *q = fl_json_dump_string(s, &n);
	int rc = q == NULL ? -1 : fl_buf_append(b, q, n);

	free(q);
	return rc;
}

/* The members that follow "metadata" in a LoadTableResult: ,"key":value for
 * each of extra (none when NULL), as text into b. */
static int extras_text(struct fl_buf *b, const json_t *extra)
{
	const char *k;
	json_t *v;
	int rc = 0;

	if (extra == NULL)
		return 0;
	json_object_foreach((json_t *)extra, k, v)
	{
		char *q = json_dumps(v, JSON_COMPACT | JSON_ENCODE_ANY);

		rc |= q == NULL || fl_buf_printf(b, ",\"%s\":%s", k, q) != 0;
		free(q);
	}
	return rc ? -1 : 0;
}

/* The bytes of a LoadTableResult (see reply_table) into b: mloc (NULL for
 * none), the metadata text of mlen bytes, and the rendered extras. */
static int table_body(struct fl_buf *b, const char *mloc, const char *metadata, size_t mlen,
                      const char *extras, size_t elen)
{
	/* One allocation for the whole body (loadTable bodies are often tens of KB). */
	int rc = fl_buf_reserve(b, mlen + elen + (mloc ? 2 * strlen(mloc) : 0) + 64) != 0;

	if (mloc != NULL)
		rc |= fl_buf_puts(b, "{\"metadata-location\":") != 0 ||
		      put_json_string(b, mloc) != 0 || fl_buf_puts(b, ",") != 0;
	else
		rc |= fl_buf_puts(b, "{") != 0;
	rc |= fl_buf_puts(b, "\"metadata\":") != 0 || fl_buf_append(b, metadata, mlen) != 0 ||
	      fl_buf_append(b, extras, elen) != 0 || fl_buf_puts(b, "}") != 0;
	return rc ? -1 : 0;
}

/* extra without vended keys: what an idempotency record may keep (a replay
 * answers without credentials; GET …/credentials gives fresh ones).  NULL
 * when out of memory. */
static json_t *without_secrets(const json_t *extra)
{
	static const char *const secret[] = {"s3.access-key-id", "s3.secret-access-key",
	                                     "s3.session-token", "s3.session-token-expires-at-ms"};
	json_t *out, *cfg;

	out = json_deep_copy(extra);
	if (out == NULL)
		return NULL;
	json_object_del(out, "storage-credentials");
	cfg = json_object_get(out, "config");
	for (size_t i = 0; i < sizeof(secret) / sizeof(secret[0]); i++)
		json_object_del(cfg, secret[i]);
	return out;
}

/* LoadTableResult around the metadata text (mlen bytes); extra holds
 * "config" and "storage-credentials" (NULL for a CommitTableResponse), or
 * extras is its rendering (then extra is NULL).  mloc_sha256 as for
 * etag_of. */
static int reply_table_text(struct srv_req *r, const char *mloc, const unsigned char *mloc_sha256,
                            const char *metadata, size_t mlen, bool refs, const json_t *extra,
                            const char *extras, struct fl_err *err)
{
	struct fl_buf b = FL_BUF_INIT, ex = FL_BUF_INIT;
	char etag[40];
	size_t elen;
	int rc = 0;

	if (r->tx != NULL && json_object_get(extra, "storage-credentials") != NULL) {
		json_t *clean = without_secrets(extra);
		struct fl_buf kept = FL_BUF_INIT;

		rc = clean == NULL || extras_text(&ex, clean) != 0 ||
		     table_body(&kept, mloc, metadata, mlen, ex.data ? ex.data : "", ex.len) != 0;
		json_decref(clean);
		fl_buf_reset(&ex);
		r->idem_body = rc == 0 ? fl_arena_strdup(r->arena, kept.data) : NULL;
		r->idem_len = kept.len;
		fl_buf_free(&kept);
		if (r->idem_body == NULL) {
			fl_buf_free(&ex);
			return nomem(err);
		}
	}
	if (extras == NULL) {
		rc = extras_text(&ex, extra);
		extras = ex.data ? ex.data : "";
		elen = ex.len;
	} else {
		elen = strlen(extras);
	}
	rc = rc != 0 || table_body(&b, mloc, metadata, mlen, extras, elen) != 0;
	fl_buf_free(&ex);
	if (rc != 0) {
		fl_buf_free(&b);
		return nomem(err);
	}
	if (mloc != NULL)
		etag_of(mloc, mloc_sha256, refs, etag);
	size_t n = b.len;
	if (srv_reply_table(r, fl_buf_steal(&b), n, mloc ? etag : NULL) != 0)
		return nomem(err);
	return 0;
}

static int reply_table(struct srv_req *r, const char *mloc, const char *metadata,
                       const json_t *extra, struct fl_err *err)
{
	return reply_table_text(r, mloc, NULL, metadata, strlen(metadata), false, extra, NULL, err);
}

/* {"config", "storage-credentials"?} of a table response (vend.h).  A file
 * warehouse gets an empty config: DuckDB treats unknown schemes as S3 and
 * fails on a non-empty one.  location: the table's, which an S3 warehouse
 * needs to scope what it vends ("" elsewhere). */
static int table_extras(struct srv_req *r, const struct cat_warehouse *wh, const struct cat_ns *ns,
                        const char *table, const char *location, enum srv_vend_mode mode,
                        json_t **out, struct fl_err *err)
{
	json_t *cfg = NULL, *creds = NULL, *o;

	if (srv_vend_table(r, wh, ns, table, location, mode, &cfg, &creds, err) != 0)
		return -1;
	o = json_object();
	if (o == NULL || json_object_set_new(o, "config", cfg) != 0 ||
	    (creds != NULL && json_object_set_new(o, "storage-credentials", creds) != 0)) {
		json_decref(o);
		return nomem(err);
	}
	*out = o;
	return 0;
}

/* table_extras of a table whose metadata text is in hand (create,
 * register): parsed for its location only in an S3 warehouse. */
static int table_extras_of_text(struct srv_req *r, const struct cat_warehouse *wh,
                                const struct cat_ns *ns, const char *table, const char *metadata,
                                json_t **out, struct fl_err *err)
{
	char loc[SRV_LOCATION_MAX] = "";

	if (wh->profile.type == ST_STORAGE_S3 &&
	    srv_metadata_location(metadata, loc, sizeof(loc), err) != 0)
		return -1;
	return table_extras(r, wh, ns, table, loc, SRV_VEND_HINT, out, err);
}

/* The extras of a loaded table in a warehouse known only by name and
 * storage type (the loadTable query): file warehouses need no lookup, and
 * the location is the one kept with the bytes (parsed once per version). */
static int table_extras_by_type(struct srv_req *r, const struct cat_table_bytes *t,
                                const struct cat_ns *ns, const char *table, enum srv_vend_mode mode,
                                json_t **out, struct fl_err *err)
{
	struct cat_warehouse wh;
	const char *loc = "";

	if (strcmp(t->storage_type, "file") == 0) {
		*out = json_pack("{s:{}}", "config");
		return *out != NULL ? 0 : nomem(err);
	}
	if (srv_warehouse(r, &wh, err) != 0 ||
	    (wh.profile.type == ST_STORAGE_S3 && (loc = srv_table_location(t, err)) == NULL))
		return -1;
	return table_extras(r, &wh, ns, table, loc, mode, out, err);
}

/* Path namespace and table without a warehouse lookup (the load query joins it). */
static int path_names(struct srv_req *r, struct cat_ns *ns, const char **wh, struct fl_err *err)
{
	if (srv_namespace(r, r->namespace_raw, ns, err) != 0 ||
	    srv_check_name(r, r->table, "table name", err) != 0)
		return -1;
	return srv_warehouse_name(r, wh, err);
}

int srv_list_entries(struct srv_req *r, bool views, struct fl_err *err)
{
	const char *token = NULL, *size = NULL;
	struct cat_warehouse wh;
	struct cat_ns ns;
	long page = (long)r->ctx->cfg->max_page_size;
	json_t *out;
	int rc;

	if (srv_query(r, "pageToken", &token, err) != 0 ||
	    srv_query(r, "pageSize", &size, err) != 0 || srv_page_size(r, size, &page, err) != 0 ||
	    path_table(r, &wh, &ns, err) != 0)
		return -1;
	if (token != NULL && token[0] == '\0')
		token = NULL;
	if ((views ? cat_view_list : cat_table_list)(r->ctx->db, r->tx, wh.id, &ns, token, page,
	                                             &out, err) != 0)
		return -1;
	srv_auth_filter(r, wh.name, json_object_get(out, "identifiers"), true);
	if (json_is_null(json_object_get(out, "next-page-token")))
		json_object_del(out, "next-page-token");
	rc = srv_reply_ok(r, out);
	json_decref(out);
	return rc == 0 ? 0 : nomem(err);
}

int srv_h_tbl_list(struct srv_req *r, struct fl_err *err)
{
	return srv_list_entries(r, false, err);
}

int srv_h_tbl_create(struct srv_req *r, struct fl_err *err)
{
	static const char what[] = "CreateTableRequest";
	json_t *body, *schema = NULL, *props = NULL, *v = NULL, *extra = NULL;
	const char *name = NULL, *loc = NULL;
	char *mloc = NULL, *meta = NULL;
	struct cat_warehouse wh;
	struct cat_ns ns;
	bool stage = false;
	int rc;

	if (srv_body_json(r, &body, err) != 0 ||
	    fl_json_get_str(body, "name", true, what, &name, err) != 0 ||
	    fl_json_get_obj(body, "schema", true, what, &schema, err) != 0 ||
	    fl_json_get_str(body, "location", false, what, &loc, err) != 0 ||
	    fl_json_get_obj(body, "partition-spec", false, what, &v, err) != 0 ||
	    fl_json_get_obj(body, "write-order", false, what, &v, err) != 0 ||
	    fl_json_get_bool(body, "stage-create", false, what, &stage, err) != 0 ||
	    fl_json_get_obj(body, "properties", false, what, &props, err) != 0 ||
	    srv_check_name(r, name, "table name", err) != 0)
		return -1;
	if (props != NULL && srv_check_properties(r, props, what, err) != 0)
		return -1;
	if (path_table(r, &wh, &ns, err) != 0 || srv_warehouse_io(r, &wh, err) != 0 ||
	    cat_table_create(r->ctx->db, r->tx, &wh, &ns, body, stage, &mloc, &meta, srv_actor(r),
	                     err) != 0)
		return -1;
	rc = table_extras_of_text(r, &wh, &ns, name, meta, &extra, err);
	if (rc == 0)
		rc = reply_table(r, mloc, meta, extra, err);
	json_decref(extra);
	free(mloc);
	free(meta);
	return rc;
}

int srv_h_tbl_register(struct srv_req *r, struct fl_err *err)
{
	static const char what[] = "RegisterTableRequest";
	const char *name = NULL, *mloc = NULL;
	struct cat_limits lim = {(size_t)r->ctx->cfg->max_commit_updates,
	                         (size_t)r->ctx->cfg->max_metadata_bytes};
	struct cat_warehouse wh;
	struct cat_ns ns;
	bool overwrite = false;
	char *meta = NULL;
	json_t *body, *extra = NULL;
	int rc;

	if (srv_body_json(r, &body, err) != 0 ||
	    fl_json_get_str(body, "name", true, what, &name, err) != 0 ||
	    fl_json_get_str(body, "metadata-location", true, what, &mloc, err) != 0 ||
	    fl_json_get_bool(body, "overwrite", false, what, &overwrite, err) != 0 ||
	    srv_check_name(r, name, "table name", err) != 0 || path_table(r, &wh, &ns, err) != 0 ||
	    srv_warehouse_io(r, &wh, err) != 0 ||
	    cat_table_register(r->ctx->db, r->tx, &wh, &ns, name, mloc, overwrite, &lim, &meta,
	                       srv_actor(r), err) != 0)
		return -1;
	rc = table_extras_of_text(r, &wh, &ns, name, meta, &extra, err);
	if (rc == 0)
		rc = reply_table(r, mloc, meta, extra, err);
	json_decref(extra);
	free(meta);
	return rc;
}

int srv_h_tbl_load(struct srv_req *r, struct fl_err *err)
{
	const char *snapshots = NULL, *inm, *wh;
	/* t: what is sent; full: when that is the refs-only form, the
	 * version's whole bytes, which a worker that runs this again reuses. */
	struct cat_table_bytes t = {0}, full = {0};
	struct cat_ns ns;
	char etag[40];
	json_t *extra = NULL;
	bool refs, plain;
	int rc = -1;

	if (srv_query(r, "snapshots", &snapshots, err) != 0)
		return -1;
	if (snapshots != NULL && strcmp(snapshots, "all") != 0 && strcmp(snapshots, "refs") != 0)
		return fl_err_set(err, FL_ERR_BAD_REQUEST,
		                  "snapshots must be 'all' or 'refs', got '%.40s'", snapshots);
	/* The bytes are the cache's own (no copy until the body is built).  A
	 * miss parks the request while a loader reads the table; on the
	 * handler's second run the bytes are in r->loaded, or, when that read
	 * found nothing, the table is read here, which words the error. */
	if (path_names(r, &ns, &wh, err) != 0)
		return -1;
	if (r->loaded.hold != NULL) {
		t = r->loaded;
		r->loaded.hold = NULL;
	} else if (srv_can_park(r) && !cat_table_cached(r->ctx->db, wh, &ns, r->table, &t)) {
		return srv_park_table_load(r, wh, &ns, r->table);
	} else if (t.hold == NULL &&
	           cat_table_load_bytes(r->ctx->db, r->tx, wh, &ns, r->table, &t, err) != 0) {
		return -1;
	}
	refs = snapshots != NULL && strcmp(snapshots, "refs") == 0;
	etag_of(t.metadata_location, t.location_sha256, refs, etag);
	inm = srv_header(r, "If-None-Match");
	if (inm != NULL && strstr(inm, etag + 1) != NULL) {
		rc = srv_reply_not_modified(r, etag, inm) == 0 ? 0 : nomem(err);
		goto out;
	}
	/* The refs-only form is made once per cached version and kept with it
	 * (a large one by a worker, which runs this again). */
	if (refs) {
		full = t;
		if (cat_table_bytes_refs(r->ctx->db, &full, &t, err) != 0) {
			t = full;
			full.hold = NULL;
			goto out;
		}
	}
	/* With nothing to vend or sign (a file warehouse, or no delegation
	 * asked) the answer is the cache's block and needs no lookup;
	 * otherwise its extras are made and it is built per request. */
	plain = srv_vend_nothing(r, t.storage_type);
	/* A large answer to be coded is coded by a worker, which runs this
	 * again (and a version's coded copy is then kept for the next ones):
	 * decided before the extras are made, which the worker would do
	 * again. */
	if (srv_reply_codes_later(r, &t, plain)) {
		fl_err_set(err, FL_ERR_WOULD_BLOCK, "the coded answer is made by a worker");
		goto out;
	}
	if (!plain && table_extras_by_type(r, &t, &ns, r->table, SRV_VEND_HINT, &extra, err) != 0)
		goto out;
	/* Such an answer is the cache's whole block (or the refs form's),
	 * sent without a copy. */
	if (plain) {
		rc = srv_reply_table_held(r, &t, etag) == 0 ? 0 : nomem(err);
		goto out;
	}
	rc = reply_table_text(r, t.metadata_location, t.location_sha256, t.metadata, t.metadata_len,
	                      refs, extra, NULL, err);
out:
	json_decref(extra);
	/* Extras that would wait (httpd.c) are made by a worker, which runs
	 * this again: it answers with the same bytes. */
	if (full.hold != NULL && rc != 0 && err->kind == FL_ERR_WOULD_BLOCK) {
		cat_table_bytes_release(t.hold);
		t = full;
	} else {
		cat_table_bytes_release(full.hold);
	}
	if (rc != 0 && err->kind == FL_ERR_WOULD_BLOCK)
		r->loaded = t;
	else
		cat_table_bytes_release(t.hold);
	return rc;
}

int srv_h_tbl_exists(struct srv_req *r, struct fl_err *err)
{
	struct cat_ns ns;
	struct cat_table_bytes t = {0};
	char *mloc = NULL, *meta = NULL, type[16];
	const char *wh;

	if (path_names(r, &ns, &wh, err) != 0)
		return -1;
	/* A table in the loadTable cache exists (as a load would answer);
	 * else it is read, by a worker when this is an HTTP thread. */
	if (r->tx == NULL && cat_table_cached(r->ctx->db, wh, &ns, r->table, &t))
		cat_table_bytes_release(t.hold);
	else if (cat_table_load(r->ctx->db, r->tx, wh, &ns, r->table, &mloc, &meta, type, err) != 0)
		return -1;
	free(mloc);
	free(meta);
	return srv_reply_no_content(r) == 0 ? 0 : nomem(err);
}

int srv_h_tbl_drop(struct srv_req *r, struct fl_err *err)
{
	const char *purge = NULL;
	struct cat_warehouse wh;
	struct cat_ns ns;
	bool p = false;

	if (srv_query(r, "purgeRequested", &purge, err) != 0)
		return -1;
	/* PyIceberg sends Python's spelling: "True" / "False". */
	if (purge != NULL) {
		if (strcasecmp(purge, "true") == 0)
			p = true;
		else if (strcasecmp(purge, "false") != 0)
			return fl_err_set(err, FL_ERR_BAD_REQUEST,
			                  "purgeRequested must be true or false, got '%.20s'",
			                  purge);
	}
	if (path_table(r, &wh, &ns, err) != 0 ||
	    cat_table_drop(r->ctx->db, r->tx, wh.id, &ns, r->table, p, err) != 0)
		return -1;
	return srv_reply_no_content(r) == 0 ? 0 : nomem(err);
}

/* POST …/tables/{table}/unregister: the table leaves the catalog and its
 * files stay (the opposite of register); 200 {metadata-location, metadata}
 * of its last version. */
int srv_h_tbl_unregister(struct srv_req *r, struct fl_err *err)
{
	struct fl_buf b = FL_BUF_INIT;
	struct cat_warehouse wh;
	struct cat_ns ns;
	char *mloc = NULL, *meta = NULL;
	int rc = -1;

	if (path_table(r, &wh, &ns, err) != 0 || srv_warehouse_io(r, &wh, err) != 0 ||
	    cat_table_unregister(r->ctx->db, r->tx, &wh, &ns, r->table, &mloc, &meta, err) != 0)
		return -1;
	if (table_body(&b, mloc, meta, strlen(meta), "", 0) != 0 ||
	    srv_reply_bytes(r, "application/json", b.data, b.len) != 0)
		nomem(err);
	else
		rc = 0;
	fl_buf_free(&b);
	free(mloc);
	free(meta);
	return rc;
}

int srv_identifier(struct srv_req *r, const json_t *id, const char *what, struct cat_ns *ns,
                   const char **name, struct fl_err *err)
{
	json_t *levels = NULL, *v;
	const char **lv;
	char where[160];
	size_t i;

	if (!json_is_object(id))
		return fl_err_set(err, FL_ERR_BAD_REQUEST, "%s must be an object {namespace, name}",
		                  what);
	if (fl_json_get_arr(id, "namespace", true, what, &levels, err) != 0 ||
	    fl_json_get_str(id, "name", true, what, name, err) != 0)
		return -1;
	snprintf(where, sizeof(where), "%s.name", what);
	if (srv_check_name(r, *name, where, err) != 0)
		return -1;
	if (json_array_size(levels) == 0 ||
	    (int64_t)json_array_size(levels) > r->ctx->cfg->max_namespace_levels)
		return fl_err_set(err, FL_ERR_BAD_REQUEST,
		                  "%s: namespace must have 1 to %lld levels", what,
		                  (long long)r->ctx->cfg->max_namespace_levels);
	lv = fl_arena_alloc(r->arena, sizeof(char *) * json_array_size(levels));
	if (lv == NULL)
		return nomem(err);
	json_array_foreach(levels, i, v)
	{
		if (!json_is_string(v) || json_string_length(v) == 0)
			return fl_err_set(err, FL_ERR_BAD_REQUEST,
			                  "%s.namespace[%zu] must be a non-empty string", what, i);
		snprintf(where, sizeof(where), "%s.namespace[%zu]", what, i);
		if (srv_check_name(r, json_string_value(v), where, err) != 0)
			return -1;
		lv[i] = json_string_value(v);
	}
	ns->levels = lv;
	ns->n = (int)json_array_size(levels);
	return 0;
}

int srv_rename_entry(struct srv_req *r, bool views, struct fl_err *err)
{
	static const char what[] = "RenameTableRequest";
	json_t *body, *src = NULL, *dst = NULL;
	struct cat_ns sns, dns;
	const char *sname, *dname;
	struct cat_warehouse wh;

	if (srv_body_json(r, &body, err) != 0 ||
	    fl_json_get_obj(body, "source", true, what, &src, err) != 0 ||
	    fl_json_get_obj(body, "destination", true, what, &dst, err) != 0 ||
	    srv_identifier(r, src, "RenameTableRequest source", &sns, &sname, err) != 0 ||
	    srv_identifier(r, dst, "RenameTableRequest destination", &dns, &dname, err) != 0 ||
	    srv_warehouse(r, &wh, err) != 0 ||
	    srv_authorize(r, SRV_PRIV_TABLE_WRITE, wh.name, &sns, sname, err) != 0 ||
	    srv_authorize(r, SRV_PRIV_TABLE_CREATE, wh.name, &dns, NULL, err) != 0 ||
	    (views ? cat_view_rename : cat_table_rename)(r->ctx->db, r->tx, wh.id, &sns, sname,
	                                                 &dns, dname, err) != 0)
		return -1;
	return srv_reply_no_content(r) == 0 ? 0 : nomem(err);
}

int srv_h_tbl_rename(struct srv_req *r, struct fl_err *err)
{
	return srv_rename_entry(r, false, err);
}

int srv_h_tbl_metrics(struct srv_req *r, struct fl_err *err)
{
	struct cat_warehouse wh;
	struct cat_ns ns;
	const char *type = NULL;
	json_t *body;

	/* A report is stored: it gets a bound of its own, not the body's. */
	if (r->body.len > SRV_REPORT_MAX_BYTES)
		return fl_err_set(err, FL_ERR_TOO_LARGE,
		                  "ReportMetricsRequest of %zu bytes exceeds the limit of %d bytes",
		                  r->body.len, SRV_REPORT_MAX_BYTES);
	if (srv_body_json(r, &body, err) != 0 ||
	    fl_json_get_str(body, "report-type", true, "ReportMetricsRequest", &type, err) != 0)
		return -1;
	if (strcmp(type, "scan-report") != 0 && strcmp(type, "commit-report") != 0)
		return fl_err_set(
		        err, FL_ERR_BAD_REQUEST,
		        "ReportMetricsRequest: unknown report-type '%.40s' (scan-report or "
		        "commit-report)",
		        type);
	if (path_table(r, &wh, &ns, err) != 0 ||
	    cat_table_report(r->ctx->db, r->tx, wh.id, &ns, r->table, body, err) != 0)
		return -1;
	return srv_reply_no_content(r) == 0 ? 0 : nomem(err);
}

int srv_h_tbl_credentials(struct srv_req *r, struct fl_err *err)
{
	struct cat_ns ns;
	struct cat_table_bytes t = {0};
	json_t *extra = NULL, *v = NULL, *creds;
	const char *wh;
	int rc = -1;

	if (path_names(r, &ns, &wh, err) != 0 ||
	    cat_table_load_bytes(r->ctx->db, r->tx, wh, &ns, r->table, &t, err) != 0)
		return -1;
	/* A file warehouse has nothing to vend: an empty list, not an error. */
	if (table_extras_by_type(r, &t, &ns, r->table, SRV_VEND_DEMAND, &extra, err) != 0)
		goto out;
	creds = json_object_get(extra, "storage-credentials");
	v = creds != NULL ? json_pack("{s:O}", "storage-credentials", creds)
	                  : json_pack("{s:[]}", "storage-credentials");
	if (v == NULL) {
		nomem(err);
		goto out;
	}
	rc = srv_reply_ok(r, v) == 0 ? 0 : nomem(err);
out:
	json_decref(v);
	json_decref(extra);
	cat_table_bytes_release(t.hold);
	return rc;
}

static const char *commit_result(enum fl_err_kind k)
{
	if (k == FL_ERR_NONE)
		return "ok";
	if (k == FL_ERR_COMMIT_FAILED || k == FL_ERR_ALREADY_EXISTS)
		return "conflict";
	if (k == FL_ERR_COMMIT_STATE_UNKNOWN || k == FL_ERR_UNAVAILABLE || k == FL_ERR_INTERNAL ||
	    k == FL_ERR_IO)
		return "unknown";
	return "rejected";
}

/* Parses {requirements, updates} of one change. */
static int change_body(const json_t *o, const char *what, struct cat_change *c, struct fl_err *err)
{
	json_t *reqs = NULL, *ups = NULL;

	if (fl_json_get_arr(o, "requirements", true, what, &reqs, err) != 0 ||
	    fl_json_get_arr(o, "updates", true, what, &ups, err) != 0)
		return -1;
	c->requirements = reqs;
	c->updates = ups;
	return 0;
}

static int run_commit(struct srv_req *r, struct cat_warehouse *wh, struct cat_change *ch, int n,
                      struct fl_err *err)
{
	struct cat_limits lim = {(size_t)r->ctx->cfg->max_commit_updates,
	                         (size_t)r->ctx->cfg->max_metadata_bytes};
	int64_t t0 = fl_mono_ns();
	int rc = cat_commit(r->ctx->db, r->tx, wh, ch, n, &lim, r->id, srv_actor(r), err);

	if (rc != 0 && cat_idem_stopped(r->tx))
		return rc; /* answered by its key (httpd.c): no outcome of its own */
	srv_metrics_commit(r->ctx->metrics, commit_result(rc == 0 ? FL_ERR_NONE : err->kind),
	                   fl_mono_ns() - t0);
	return rc;
}

int srv_h_tbl_commit(struct srv_req *r, struct fl_err *err)
{
	struct cat_change ch = {0};
	struct cat_warehouse wh;
	json_t *body;
	int rc;

	if (srv_body_json(r, &body, err) != 0 ||
	    change_body(body, "CommitTableRequest", &ch, err) != 0 ||
	    path_table(r, &wh, &ch.ns, err) != 0 || srv_warehouse_io(r, &wh, err) != 0)
		return -1;
	ch.name = r->table;
	if (run_commit(r, &wh, &ch, 1, err) != 0)
		return -1;
	/* CommitTableResponse: the stored bytes, spliced, with the new ETag. */
	rc = reply_table(r, ch.metadata_location, ch.metadata, NULL, err);
	/* Its idempotency record keeps the location, not these bytes again
	 * (out of memory here: the bytes, as any other record). */
	if (rc == 0 && r->tx != NULL)
		r->idem_ref = fl_arena_strdup(r->arena, ch.metadata_location);
	cat_changes_free(&ch, 1);
	return rc;
}

/* The answer is rebuilt as the commit made it: {"metadata-location",
 * "metadata"} around the text of the file it wrote, which is also the
 * table's stored text while that version is current (then read from the
 * cache or PostgreSQL, not storage), with the ETag of that location.  Once
 * the file is gone (expired with its snapshots, or trimmed from the
 * metadata log) the answer is the table's current version, which the
 * Iceberg spec allows a replay ("may reflect a newer state of the
 * catalog"); a table dropped since is 404, as a new request would be. */
int srv_replay_commit(struct srv_req *r, const char *metadata_location, struct fl_err *err)
{
	struct cat_table_bytes t = {0};
	struct cat_warehouse wh;
	struct cat_ns ns;
	struct fl_err ferr = {0};
	const char *mloc = metadata_location, *meta;
	char *text = NULL;
	size_t mlen;
	int rc = -1;

	if (path_table(r, &wh, &ns, err) != 0 ||
	    cat_table_load_bytes(r->ctx->db, NULL, wh.name, &ns, r->table, &t, err) != 0)
		return -1;
	meta = t.metadata;
	mlen = t.metadata_len;
	if (strcmp(t.metadata_location, metadata_location) != 0) {
		if (srv_warehouse_io(r, &wh, &ferr) == 0 &&
		    st_io_read(wh.io, metadata_location, (size_t)r->ctx->cfg->max_metadata_bytes,
		               &text, &mlen, &ferr) == 0) {
			meta = text;
		} else {
			fl_log(FL_LOG_INFO, r->id,
			       "replay of a commit: %s; answering the table's current version",
			       ferr.msg);
			mloc = t.metadata_location;
			mlen = t.metadata_len;
		}
	}
	if (reply_table_text(r, mloc, NULL, meta, mlen, false, NULL, NULL, err) == 0 &&
	    srv_reply_replayed(r, err) == 0)
		rc = 0;
	free(text);
	cat_table_bytes_release(t.hold);
	return rc;
}

int srv_h_transactions(struct srv_req *r, struct fl_err *err)
{
	static const char what[] = "CommitTransactionRequest";
	json_t *body, *changes = NULL, *c;
	struct cat_change *ch;
	struct cat_warehouse wh;
	size_t i, n;

	if (srv_body_json(r, &body, err) != 0 ||
	    fl_json_get_arr(body, "table-changes", true, what, &changes, err) != 0)
		return -1;
	n = json_array_size(changes);
	if (n == 0)
		return fl_err_set(err, FL_ERR_BAD_REQUEST, "%s: table-changes is empty", what);
	if ((int64_t)n > r->ctx->cfg->max_commit_tables)
		return fl_err_set(
		        err, FL_ERR_BAD_REQUEST,
		        "%s: %zu table changes exceed the limit of %lld (max-commit-tables)", what,
		        n, (long long)r->ctx->cfg->max_commit_tables);
	ch = fl_arena_alloc(r->arena, sizeof(*ch) * n);
	if (ch == NULL)
		return nomem(err);
	json_array_foreach(changes, i, c)
	{
		json_t *id = NULL;
		char where[48], idwhere[64];

		snprintf(where, sizeof(where), "table-changes[%zu]", i);
		snprintf(idwhere, sizeof(idwhere), "%s.identifier", where);
		if (fl_json_get_obj(c, "identifier", true, where, &id, err) != 0 ||
		    srv_identifier(r, id, idwhere, &ch[i].ns, &ch[i].name, err) != 0 ||
		    change_body(c, where, &ch[i], err) != 0)
			return -1;
	}
	if (srv_warehouse(r, &wh, err) != 0)
		return -1;
	for (i = 0; i < n; i++)
		if (srv_authorize(r, SRV_PRIV_TABLE_WRITE, wh.name, &ch[i].ns, ch[i].name, err) !=
		    0)
			return -1;
	if (srv_warehouse_io(r, &wh, err) != 0 || run_commit(r, &wh, ch, (int)n, err) != 0)
		return -1;
	cat_changes_free(ch, (int)n);
	return srv_reply_no_content(r) == 0 ? 0 : nomem(err);
}
