/* table.c - the SQL of tables and views: rows, locations, events, lists,
 * drops, renames and metrics reports.  Tables and views share table_entry
 * (kind TABLE or VIEW) and its unique (namespace, name) index, so a view and
 * a table can never have the same name in a namespace.
 *
 * A table row carries its current metadata JSON beside its location, most
 * often packed (doc.c: every reader here unpacks it), so
 * loadTable is one indexed read (namespace by levels, then table by name)
 * and never touches object storage; except a document larger than the
 * inline limit (cat_db_set_metadata_inline), which only its file holds:
 * a read that misses the cache then reads that file. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "buf.h"
#include "db_int.h"
#include "io/io.h"
#include "json.h"

void cat_row_free(struct cat_row *row)
{
	free(row->metadata_location);
	free(row->metadata);
	free(row->location);
	memset(row, 0, sizeof(*row));
}

static char *dup_or_null(PGresult *r, int row, int col)
{
	return PQgetisnull(r, row, col) ? NULL : strdup(PQgetvalue(r, row, col));
}

/* The document stored at row, col of r, unpacked (doc.c) into *out, which
 * is NULL for a NULL; -1 with err set. */
static int doc_of_row(PGresult *r, int row, int col, char **out, struct fl_err *err)
{
	const char *v = PQgetvalue(r, row, col);
	size_t len = (size_t)PQgetlength(r, row, col), n;

	*out = NULL;
	if (PQgetisnull(r, row, col))
		return 0;
	if (cat_doc_packed(v, len))
		return cat_doc_unpack(v, len, out, &n, err);
	return (*out = strdup(v)) != NULL ? 0 : fl_err_set(err, FL_ERR_NOMEM, "out of memory");
}

/* The shared bytes of the version stored at row of r (its location in
 * column mloc, its document, not NULL, in column meta); NULL with err set. */
static struct cat_shared *shared_of_row(PGresult *r, int row, int mloc, int meta,
                                        struct fl_err *err)
{
	const char *v = PQgetvalue(r, row, meta);
	size_t len = (size_t)PQgetlength(r, row, meta);
	struct cat_doc_frame f = {0};
	struct cat_shared *sh;
	bool packed = cat_doc_packed(v, len);

	/* A packed document is unpacked straight into the shared bytes. */
	if (packed && cat_doc_open(v, len, &f, err) != 0)
		return NULL;
	sh = cat_shared_new(PQgetvalue(r, row, mloc), packed ? NULL : v, packed ? f.size : len);
	if (sh == NULL) {
		cat_doc_close(&f);
		fl_err_set(err, FL_ERR_NOMEM, "out of memory");
	} else if (packed && cat_doc_inflate(&f, sh->meta, err) != 0) {
		cat_table_bytes_release(sh);
		sh = NULL;
	}
	return sh;
}

/* The row of a table by name, with sql (FOR UPDATE or not), on c or as
 * a statement of tx. */
static int row_select_in(struct cat_conn *c, struct cat_tx *tx, const char *sql, const char *wh_id,
                         const struct cat_ns *ns, const char *name, const char *known_location,
                         struct cat_row *row, struct fl_err *err)
{
	char *arr = cat_text_array(ns, ns->n);
	const char *params[4] = {wh_id, arr, name, known_location};
	int n = known_location != NULL ? 4 : 3;
	PGresult *r;
	int found;

	if (arr == NULL)
		return fl_err_set(err, FL_ERR_NOMEM, "out of memory");
	r = tx != NULL ? cat_tx_exec(tx, sql, n, params, err) : cat_exec(c, sql, n, params, err);
	free(arr);
	if (r == NULL)
		return -1;
	found = PQntuples(r) == 1;
	if (found) {
		snprintf(row->id, sizeof(row->id), "%s", PQgetvalue(r, 0, 0));
		snprintf(row->ns_id, sizeof(row->ns_id), "%s", PQgetvalue(r, 0, 1));
		row->metadata_location = dup_or_null(r, 0, 2);
		row->location = dup_or_null(r, 0, 4);
		row->version = cat_i64(PQgetvalue(r, 0, 5));
		/* metadata is NULL for a version the caller holds (known_location)
		 * and for a document only its file holds (cat_row_text). */
		if (doc_of_row(r, 0, 3, &row->metadata, err) != 0) {
			PQclear(r);
			cat_row_free(row);
			return -1;
		}
		if (row->metadata_location == NULL || row->location == NULL) {
			PQclear(r);
			cat_row_free(row);
			return fl_err_set(err, FL_ERR_INTERNAL, "table row is incomplete");
		}
	}
	PQclear(r);
	return found;
}

static int row_select(struct cat_conn *c, const char *sql, const char *wh_id,
                      const struct cat_ns *ns, const char *name, const char *known_location,
                      struct cat_row *row, struct fl_err *err)
{
	return row_select_in(c, NULL, sql, wh_id, ns, name, known_location, row, err);
}

/* The four reads of a table row by name: locked (FOR UPDATE) or not, with
 * its metadata or without it when the row still points at the version the
 * caller holds ($4). */
#define ROW_FULL \
	"SELECT t.id, t.namespace_id, t.metadata_location, t.metadata, t.location, t.version"
#define ROW_KNOWN                                           \
	"SELECT t.id, t.namespace_id, t.metadata_location," \
	" CASE WHEN t.metadata_location = $4 THEN NULL ELSE t.metadata END, t.location, t.version"
#define ROW_WHERE                                                       \
	" FROM table_entry t JOIN namespace n ON n.id = t.namespace_id" \
	" WHERE n.warehouse_id = $1 AND n.levels = $2::text[] AND t.name = $3 AND t.kind = 'TABLE'"

static const char *const row_sql[2][2] = {
        {ROW_FULL ROW_WHERE, ROW_KNOWN ROW_WHERE},
        {ROW_FULL ROW_WHERE " FOR UPDATE OF t", ROW_KNOWN ROW_WHERE " FOR UPDATE OF t"},
};

int cat_row_lock(struct cat_conn *c, const char *wh_id, const struct cat_ns *ns, const char *name,
                 const char *known_location, struct cat_row *row, struct fl_err *err)
{
	return row_select(c, row_sql[1][known_location != NULL], wh_id, ns, name, known_location,
	                  row, err);
}

int cat_row_read(struct cat_conn *c, const char *wh_id, const struct cat_ns *ns, const char *name,
                 const char *known_location, struct cat_row *row, struct fl_err *err)
{
	return row_select(c, row_sql[0][known_location != NULL], wh_id, ns, name, known_location,
	                  row, err);
}

int cat_row_read_tx(struct cat_tx *tx, const char *wh_id, const struct cat_ns *ns, const char *name,
                    const char *known_location, struct cat_row *row, struct fl_err *err)
{
	return row_select_in(NULL, tx, row_sql[0][known_location != NULL], wh_id, ns, name,
	                     known_location, row, err);
}

int cat_metadata_file_text(struct cat_db *db, const struct cat_warehouse *wh,
                           const char *metadata_location, char **out, size_t *len,
                           struct fl_err *err)
{
	struct cat_warehouse own;
	const struct cat_warehouse *w = wh;
	int rc;

	if (wh->io == NULL) {
		own = *wh;
		if ((db->storage_fn != NULL ? db->storage_fn(db->storage_arg, &own, err)
		                            : st_io_open(&own.profile, &own.io, err)) != 0)
			return fl_err_prefix(err, "warehouse '%.200s'", wh->name);
		w = &own;
	}
	rc = st_io_read(w->io, metadata_location, db->read_max, out, len, err);
	if (w == &own)
		st_io_release(own.io);
	if (rc == 0) {
		atomic_fetch_add(&db->file_reads, 1);
		atomic_fetch_add(&db->file_read_bytes, (unsigned long)*len);
		return 0;
	}
	/* The file a row names exists before the row names it: gone, it is
	 * the catalog's fault, not the client's (a 404 would say "no table"). */
	if (err->kind == FL_ERR_NOT_FOUND)
		err->kind = FL_ERR_INTERNAL;
	return fl_err_prefix(err, "the table's metadata file %.300s", metadata_location);
}

int cat_row_text(struct cat_db *db, const struct cat_warehouse *wh, struct cat_row *row,
                 const char *known_location, struct fl_err *err)
{
	size_t n;

	if (row->metadata != NULL ||
	    (known_location != NULL && strcmp(known_location, row->metadata_location) == 0))
		return 0;
	return cat_metadata_file_text(db, wh, row->metadata_location, &row->metadata, &n, err);
}

int cat_file_text_by_name(struct cat_db *db, struct cat_tx *tx, const char *wh_name,
                          const char *mloc, char **text, size_t *len, struct fl_err *err)
{
	struct cat_warehouse wh;

	if (cat_warehouse_get(db, tx, wh_name, &wh, err) != 0)
		return -1;
	return cat_metadata_file_text(db, &wh, mloc, text, len, err);
}

/* The shared bytes of a row read by warehouse name whose text only its
 * file holds. */
static struct cat_shared *shared_from_file(struct cat_db *db, struct cat_tx *tx,
                                           const char *wh_name, const char *mloc,
                                           struct fl_err *err)
{
	struct cat_shared *sh = NULL;
	char *text = NULL;
	size_t len = 0;

	if (cat_file_text_by_name(db, tx, wh_name, mloc, &text, &len, err) != 0)
		return NULL;
	sh = cat_shared_new(mloc, text, len);
	free(text);
	if (sh == NULL)
		fl_err_set(err, FL_ERR_NOMEM, "out of memory");
	return sh;
}

static void stat_text(int64_t v, char *buf, size_t cap, const char **out)
{
	if (v < 0) {
		*out = NULL;
		return;
	}
	snprintf(buf, cap, "%lld", (long long)v);
	*out = buf;
}

int cat_row_insert(struct cat_conn *c, const char *wh_id, const char *ns_id, const char *id,
                   const char *name, const char *location, const char *metadata_location,
                   const char *metadata, int64_t version, const struct cat_row_stats *st,
                   struct fl_err *err)
{
	char a[24], b[24], d[24], v[24], *packed;
	const char *doc = cat_doc_pack(metadata, &packed);
	const char *params[11] = {id, wh_id, ns_id, name, location, metadata_location, doc};
	PGresult *r;

	stat_text(st->records, a, sizeof(a), &params[7]);
	stat_text(st->files, b, sizeof(b), &params[8]);
	stat_text(st->bytes, d, sizeof(d), &params[9]);
	snprintf(v, sizeof(v), "%lld", (long long)version);
	params[10] = v;
	r = cat_exec(
	        c,
	        "INSERT INTO table_entry (id, warehouse_id, namespace_id, name, kind, location,"
	        " metadata_location, metadata, version, last_commit_at, total_records,"
	        " total_data_files, total_files_size)"
	        " VALUES ($1, $2, $3::bigint, $4, 'TABLE', $5, $6, $7, $11::bigint, now(), $8, $9, $10)",
	        11, params, err);
	free(packed);
	if (r == NULL) {
		if (err->kind == FL_ERR_ALREADY_EXISTS)
			fl_err_set(err, FL_ERR_ALREADY_EXISTS,
			           "table or view '%.200s' already exists", name);
		return -1;
	}
	PQclear(r);
	return 0;
}

int cat_view_row_insert(struct cat_conn *c, const char *wh_id, const char *ns_id, const char *id,
                        const char *name, const char *location, const char *metadata_location,
                        const char *metadata, int64_t version, struct fl_err *err)
{
	char v[24], *packed;
	const char *doc = cat_doc_pack(metadata, &packed);
	const char *params[8] = {id, wh_id, ns_id, name, location, metadata_location, doc, v};
	PGresult *r;

	snprintf(v, sizeof(v), "%lld", (long long)version);
	r = cat_exec(
	        c,
	        "INSERT INTO table_entry (id, warehouse_id, namespace_id, name, kind, location,"
	        " metadata_location, metadata, version)"
	        " VALUES ($1, $2, $3::bigint, $4, 'VIEW', $5, $6, $7, $8::bigint)",
	        8, params, err);
	free(packed);

	if (r == NULL) {
		if (err->kind == FL_ERR_ALREADY_EXISTS)
			fl_err_set(err, FL_ERR_ALREADY_EXISTS,
			           "table or view '%.200s' already exists", name);
		return -1;
	}
	PQclear(r);
	return 0;
}

int cat_view_row_move(struct cat_conn *c, const char *id, int64_t expected,
                      const char *metadata_location, const char *metadata, const char *location,
                      struct fl_err *err)
{
	char v[24], nv[24], *packed;
	const char *doc = cat_doc_pack(metadata, &packed);
	const char *params[6] = {id, v, nv, metadata_location, doc, location};
	PGresult *r;
	int n;

	snprintf(v, sizeof(v), "%lld", (long long)expected);
	snprintf(nv, sizeof(nv), "%lld", (long long)expected + 1);
	r = cat_exec(c,
	             "UPDATE table_entry SET metadata_location = $4, metadata = $5, location = $6,"
	             " version = $3::bigint, updated_at = now()"
	             " WHERE id = $1 AND version = $2::bigint AND kind = 'VIEW' RETURNING id",
	             6, params, err);
	free(packed);
	if (r == NULL)
		return -1;
	n = PQntuples(r);
	PQclear(r);
	if (n != 1)
		return fl_err_set(err, FL_ERR_COMMIT_FAILED, "view was changed concurrently");
	return 0;
}

/* The parameters of a pointer move: those of m ($1-$14) and, when ns_id
 * is not NULL, the expected version and namespace ($15, $16).  Freed with
 * move_params_free once sent. */
struct move_params {
	char v[24], a[24], b[24], d[24], snap[24], ev[24];
	char *arr, *packed;
	const char *p[16];
	int n;
};

static void move_params_free(struct move_params *mp)
{
	free(mp->arr);
	free(mp->packed);
}

static int move_params(struct move_params *mp, const struct cat_row_move *m, const char *ns_id,
                       int64_t expected, struct fl_err *err)
{
	mp->packed = NULL;
	mp->arr = cat_text_array(m->ns, m->ns->n);
	if (mp->arr == NULL)
		return fl_err_set(err, FL_ERR_NOMEM, "out of memory");
	snprintf(mp->v, sizeof(mp->v), "%lld", (long long)m->version);
	mp->p[0] = m->id;
	mp->p[1] = m->metadata_location;
	mp->p[2] = cat_doc_pack(m->metadata, &mp->packed);
	mp->p[3] = mp->v;
	mp->p[4] = m->location;
	stat_text(m->stats->records, mp->a, sizeof(mp->a), &mp->p[5]);
	stat_text(m->stats->files, mp->b, sizeof(mp->b), &mp->p[6]);
	stat_text(m->stats->bytes, mp->d, sizeof(mp->d), &mp->p[7]);
	snprintf(mp->snap, sizeof(mp->snap), "%lld", (long long)m->snapshot_id);
	snprintf(mp->ev, sizeof(mp->ev), "%lld", (long long)expected);
	mp->p[8] = mp->arr;
	mp->p[9] = m->name;
	mp->p[10] = m->snapshot_id >= 0 ? mp->snap : NULL;
	mp->p[11] = m->operation;
	mp->p[12] = m->request_id;
	mp->p[13] = m->actor;
	mp->p[14] = mp->ev;
	mp->p[15] = ns_id;
	mp->n = ns_id != NULL ? 16 : 14;
	return 0;
}

/* Runs sql, an UPDATE of the row with the commit event, with the
 * parameters of move_params.  The number of rows moved (0 or 1). */
static int row_move(struct cat_conn *c, const char *sql, const struct cat_row_move *m,
                    const char *ns_id, int64_t expected, struct fl_err *err)
{
	struct move_params mp;
	PGresult *r;
	int n;

	if (move_params(&mp, m, ns_id, expected, err) != 0)
		return -1;
	r = cat_exec(c, sql, mp.n, mp.p, err);
	move_params_free(&mp);
	if (r == NULL)
		return -1;
	n = PQntuples(r);
	PQclear(r);
	return n;
}

int cat_row_move(struct cat_conn *c, const struct cat_row_move *m, struct fl_err *err)
{
	int n = row_move(
	        c,
	        "WITH u AS (UPDATE table_entry SET metadata_location = $2, metadata = $3,"
	        "   version = $4::bigint, location = $5, updated_at = now(), last_commit_at = now(),"
	        "   total_records = $6::bigint, total_data_files = $7::bigint, total_files_size = $8::bigint"
	        "   WHERE id = $1 RETURNING id, warehouse_id),"
	        " e AS (INSERT INTO commit_event (table_id, warehouse_id, namespace, table_name, version,"
	        "   metadata_location, snapshot_id, operation, request_id, actor)"
	        "   SELECT id, warehouse_id, $9::text[], $10, $4::bigint, $2, $11::bigint, $12, $13, $14"
	        "   FROM u)"
	        " SELECT id FROM u",
	        m, NULL, 0, err);

	if (n < 0)
		return -1;
	if (n != 1)
		return fl_err_set(err, FL_ERR_COMMIT_FAILED, "table was dropped concurrently");
	return 0;
}

/* The row keeps its id through a rename, so the name and namespace are
 * compared too: a commit never lands on a table renamed under it.  The
 * location is compared too (a move never changes it: commit.c takes the
 * locked path for that), so a move judged on a version the row is not read
 * for still moves only that version's row.  One array: the statement cache
 * is keyed by the text's address. */
static const char move_if_sql[] =
        "WITH u AS (UPDATE table_entry SET metadata_location = $2, metadata = $3,"
        "   version = $4::bigint, location = $5, updated_at = now(), last_commit_at = now(),"
        "   total_records = $6::bigint, total_data_files = $7::bigint, total_files_size = $8::bigint"
        "   WHERE id = $1 AND version = $15::bigint AND namespace_id = $16::bigint"
        "   AND name = $10 AND kind = 'TABLE' AND location = $5 RETURNING id, warehouse_id),"
        " e AS (INSERT INTO commit_event (table_id, warehouse_id, namespace, table_name, version,"
        "   metadata_location, snapshot_id, operation, request_id, actor)"
        "   SELECT id, warehouse_id, $9::text[], $10, $4::bigint, $2, $11::bigint, $12, $13, $14"
        "   FROM u)"
        " SELECT id FROM u";

/* n, the outcome of a move; a move that committed by itself (autocommit)
 * and lost its connection may have been applied. */
static int move_outcome(struct cat_conn *c, int n, bool autocommit, struct fl_err *err)
{
	if (n < 0 && autocommit && PQstatus(c->pg) != CONNECTION_OK)
		return fl_err_set(err, FL_ERR_COMMIT_STATE_UNKNOWN,
		                  "database connection lost during the commit; the change may "
		                  "or may not have been applied");
	return n;
}

int cat_row_move_if(struct cat_conn *c, const struct cat_row_move *m, const char *ns_id,
                    int64_t expected, struct fl_err *err)
{
	/* Outside a transaction the statement commits by itself. */
	bool autocommit = PQtransactionStatus(c->pg) == PQTRANS_IDLE;

	return move_outcome(c, row_move(c, move_if_sql, m, ns_id, expected, err), autocommit, err);
}

/* The notification of a move (tx.c, notify_sql), sent only when the row
 * has the version the move wrote. */
static const char move_notify_sql[] =
        "SELECT set_config('synchronous_commit', 'off', true), pg_notify('floe_table', $1)"
        " FROM table_entry WHERE id = $1::uuid AND version = $2::bigint";

int cat_row_move_if_notify(struct cat_conn *c, const struct cat_row_move *m, const char *ns_id,
                           int64_t expected, bool *notified, struct fl_err *err)
{
	char mname[16], nname[16];
	struct move_params mp;
	PGresult *res[2], *r;
	bool ok;
	int n = -1;

	*notified = false;
	if (PQtransactionStatus(c->pg) != PQTRANS_IDLE)
		return fl_err_set(err, FL_ERR_INTERNAL,
		                  "a pointer move with its notification needs no transaction");
	if (move_params(&mp, m, ns_id, expected, err) != 0)
		return -1;
	const char *np[2] = {m->id, mp.v};
	const struct cat_pipe_q q[2] = {
	        {.sql = move_if_sql,
	         .stmt = cat_prepared(c, move_if_sql, mname),
	         .n = mp.n,
	         .params = mp.p,
	         .sync = true},
	        {.sql = move_notify_sql,
	         .stmt = cat_prepared(c, move_notify_sql, nname),
	         .n = 2,
	         .params = np},
	};

	ok = cat_pipeline(c, 2, q, res);
	move_params_free(&mp);
	r = cat_result(c, res[0], err); /* a result that never came: connection lost */
	if (r != NULL)
		n = PQntuples(r);
	PQclear(r);
	*notified = ok && PQresultStatus(res[1]) == PGRES_TUPLES_OK && PQntuples(res[1]) == 1;
	PQclear(res[1]);
	return move_outcome(c, n, true, err);
}

int cat_row_move_if_send(struct cat_scope *s, const struct cat_row_move *m, const char *ns_id,
                         int64_t expected, struct fl_err *err)
{
	struct cat_pipe_q q[9], move;
	struct move_params mp;
	char name[16];
	int k;
	bool sent;

	if (!s->write || (!s->savepoint_due && PQtransactionStatus(s->c->pg) != PQTRANS_INTRANS))
		return fl_err_set(err, FL_ERR_INTERNAL,
		                  "a pointer move sent ahead needs a transaction");
	if (move_params(&mp, m, ns_id, expected, err) != 0)
		return -1;
	/* Named once prepared (cat_prepared); the scope's due statements
	 * are taken only once nothing can fail before the send. */
	move = (struct cat_pipe_q){.sql = move_if_sql,
	                           .stmt = cat_prepared(s->c, move_if_sql, name),
	                           .n = mp.n,
	                           .params = mp.p};
	k = cat_scope_prefix(s, q);
	q[k] = move;
	sent = cat_pipeline_send(s->c, k + 1, q);
	move_params_free(&mp);
	if (!sent) {
		PGresult *none[9] = {NULL};

		/* The prefix is judged as lost: a claim in it is never left pending. */
		(void)cat_scope_prefix_judge(s, none, k, err);
		return fl_err_set(err, FL_ERR_UNAVAILABLE, "database connection lost");
	}
	s->prefix_sent = k;
	return 0;
}

int cat_row_move_if_recv(struct cat_scope *s, struct fl_err *err)
{
	PGresult *res[9], *r;
	int k = s->prefix_sent, n = -1;

	s->prefix_sent = 0;
	/* A sync that never came shows at the connection's next use. */
	(void)cat_pipeline_recv(s->c, k + 1, res);
	/* The first failure is the cause; the statements after it say "aborted". */
	if (cat_scope_prefix_judge(s, res, k, err) != 0) {
		PQclear(res[k]);
		return -1;
	}
	if ((r = cat_result(s->c, res[k], err)) != NULL) {
		n = PQntuples(r);
		PQclear(r);
	}
	return n;
}

/* Appends the n bytes at s as one quoted element of a text[] literal that
 * b is building after its "{" (a comma first unless it is the first). */
static int text_array_add(struct fl_buf *b, const char *s, size_t n)
{
	if (fl_buf_puts(b, b->len > 1 ? ",\"" : "\"") != 0)
		return -1;
	for (size_t k = 0; k < n; k++)
		if (((s[k] == '"' || s[k] == '\\') && fl_buf_append(b, "\\", 1) != 0) ||
		    fl_buf_append(b, s + k, 1) != 0)
			return -1;
	return fl_buf_puts(b, "\"");
}

int cat_location_check(struct cat_conn *c, const struct cat_warehouse *wh, const char *location,
                       const char *exclude_id, struct fl_err *err)
{
	size_t wl = strlen(wh->location), ll = strlen(location);
	struct fl_buf anc = FL_BUF_INIT;
	char *lo = NULL, *hi = NULL;
	PGresult *r = NULL;
	int rc = -1;

	/* The ancestors below cost ~ll bytes each: bound ll first. */
	if (ll > CAT_LOCATION_MAX)
		return fl_err_set(err, FL_ERR_BAD_REQUEST,
		                  "table location of %zu bytes exceeds the limit of %d bytes", ll,
		                  CAT_LOCATION_MAX);
	if (ll <= wl || strncmp(location, wh->location, wl) != 0 || location[wl] != '/' ||
	    location[ll - 1] == '/' || strstr(location + wl, "/../") != NULL ||
	    strstr(location + wl, "//") != NULL)
		return fl_err_set(
		        err, FL_ERR_BAD_REQUEST,
		        "table location %.200s must lie inside the warehouse location %.200s",
		        location, wh->location);
	/* The ancestors of location inside the warehouse, and location itself,
	 * as a text[] literal: a table at any of them would contain this one. */
	if (fl_buf_puts(&anc, "{") != 0)
		goto nomem;
	for (size_t i = wl + 1; i <= ll; i++)
		if ((i == ll || location[i] == '/') && text_array_add(&anc, location, i) != 0)
			goto nomem;
	if (fl_buf_puts(&anc, "}") != 0)
		goto nomem;
	lo = malloc(ll + 2);
	hi = malloc(ll + 2);
	if (lo == NULL || hi == NULL)
		goto nomem;
	/* Locations strictly below: [location + "/", location + "0"), as '0'
	 * follows '/' in byte order. */
	memcpy(lo, location, ll);
	memcpy(hi, location, ll);
	lo[ll] = '/';
	hi[ll] = '0';
	lo[ll + 1] = hi[ll + 1] = '\0';
	if (cat_warehouse_lock(c, wh->id, err) != 0)
		goto out;
	const char *params[5] = {wh->id, exclude_id, anc.data, lo, hi};
	r = cat_exec(
	        c,
	        "SELECT name, location FROM table_entry WHERE warehouse_id = $1"
	        " AND ($2::uuid IS NULL OR id <> $2::uuid)"
	        " AND (location = ANY($3::text[]) OR (location >= $4 AND location < $5)) LIMIT 1",
	        5, params, err);
	if (r == NULL)
		goto out;
	if (PQntuples(r) > 0) {
		fl_err_set(err, FL_ERR_BAD_REQUEST,
		           "table location %.150s overlaps the location of table '%.60s' (%.150s)",
		           location, PQgetvalue(r, 0, 0), PQgetvalue(r, 0, 1));
		goto out;
	}
	rc = 0;
	goto out;
nomem:
	fl_err_set(err, FL_ERR_NOMEM, "out of memory");
out:
	PQclear(r);
	fl_buf_free(&anc);
	free(lo);
	free(hi);
	return rc;
}

int cat_event_insert(struct cat_conn *c, const char *table_id, const char *wh_id,
                     const struct cat_ns *ns, const char *name, int64_t version,
                     const char *metadata_location, int64_t snapshot_id, const char *operation,
                     const char *request_id, const char *actor, struct fl_err *err)
{
	char *arr = cat_text_array(ns, ns->n), v[24], s[24];
	const char *params[10] = {table_id,
	                          wh_id,
	                          arr,
	                          name,
	                          v,
	                          metadata_location,
	                          snapshot_id >= 0 ? s : NULL,
	                          operation,
	                          request_id,
	                          actor};
	PGresult *r;

	if (arr == NULL)
		return fl_err_set(err, FL_ERR_NOMEM, "out of memory");
	snprintf(v, sizeof(v), "%lld", (long long)version);
	snprintf(s, sizeof(s), "%lld", (long long)snapshot_id);
	r = cat_exec(
	        c,
	        "INSERT INTO commit_event (table_id, warehouse_id, namespace, table_name, version,"
	        " metadata_location, snapshot_id, operation, request_id, actor)"
	        " VALUES ($1, $2, $3::text[], $4, $5::bigint, $6, $7::bigint, $8, $9, $10)",
	        10, params, err);
	free(arr);
	if (r == NULL)
		return -1;
	PQclear(r);
	return 0;
}

int cat_warehouse_lock(struct cat_conn *c, const char *wh_id, struct fl_err *err)
{
	const char *params[1] = {wh_id};
	PGresult *r = cat_exec(c, "SELECT pg_advisory_xact_lock(hashtext($1))", 1, params, err);

	if (r == NULL)
		return -1;
	PQclear(r);
	return 0;
}

/* Distinguishes a missing table (or view) from a missing namespace for the
 * message. */
static int not_found(struct cat_conn *c, const char *wh_id, const struct cat_ns *ns,
                     const char *name, bool view, struct fl_err *err)
{
	char id[24], buf[300];

	if (cat_namespace_id(c, wh_id, ns, id, sizeof(id), err) != 0)
		return -1;
	return fl_err_set(err, view ? FL_ERR_NO_SUCH_VIEW : FL_ERR_NO_SUCH_TABLE,
	                  "%s %s.%.200s does not exist", view ? "view" : "table",
	                  cat_ns_str(ns, buf, sizeof(buf)), name);
}

int cat_view_row_get(struct cat_conn *c, const char *wh_id, const struct cat_ns *ns,
                     const char *name, bool lock, struct cat_row *row, struct fl_err *err)
{
	int found = row_select(
	        c,
	        lock ? "SELECT t.id, t.namespace_id, t.metadata_location, t.metadata, t.location,"
	               " t.version FROM table_entry t JOIN namespace n ON n.id = t.namespace_id"
	               " WHERE n.warehouse_id = $1 AND n.levels = $2::text[] AND t.name = $3"
	               " AND t.kind = 'VIEW' FOR UPDATE OF t"
	             : "SELECT t.id, t.namespace_id, t.metadata_location, t.metadata, t.location,"
	               " t.version FROM table_entry t JOIN namespace n ON n.id = t.namespace_id"
	               " WHERE n.warehouse_id = $1 AND n.levels = $2::text[] AND t.name = $3"
	               " AND t.kind = 'VIEW'",
	        wh_id, ns, name, NULL, row, err);

	if (found == 0)
		(void)not_found(c, wh_id, ns, name, true, err);
	return found > 0 ? 0 : -1;
}

int cat_view_exists(struct cat_conn *c, const char *ns_id, const char *name, struct fl_err *err)
{
	const char *params[2] = {ns_id, name};
	PGresult *r = cat_exec(c,
	                       "SELECT 1 FROM table_entry WHERE namespace_id = $1::bigint"
	                       " AND name = $2 AND kind = 'VIEW'",
	                       2, params, err);
	int n;

	if (r == NULL)
		return -1;
	n = PQntuples(r);
	PQclear(r);
	return n > 0;
}

/* The cache key of a table or view: warehouse NUL levels (each ended by
 * 0x1f) NUL name, and a view's one more NUL.  Names hold no NUL and are
 * never empty, so a table's key never ends with one: a view never answers
 * for a table of the same name, nor the other way round. */
static char *entry_key(const char *wh, const struct cat_ns *ns, const char *name, bool view,
                       size_t *len)
{
	struct fl_buf b = FL_BUF_INIT;
	int rc = fl_buf_append(&b, wh, strlen(wh) + 1);

	for (int i = 0; i < ns->n && rc == 0; i++)
		rc = fl_buf_append(&b, ns->levels[i], strlen(ns->levels[i])) |
		     fl_buf_append(&b, "\x1f", 1);
	if (rc != 0 || fl_buf_append(&b, "", 1) != 0 || fl_buf_puts(&b, name) != 0 ||
	    (view && fl_buf_append(&b, "", 1) != 0)) {
		fl_buf_free(&b);
		return NULL;
	}
	*len = b.len;
	return fl_buf_steal(&b);
}

char *cat_table_key(const char *wh, const struct cat_ns *ns, const char *name, size_t *len)
{
	return entry_key(wh, ns, name, false, len);
}

/* ---- loadTable misses, read together ----
 *
 * Under load many requests miss the cache at once, each paying a statement
 * of its own.  Instead a miss joins a queue, and CAT_LOAD_READERS loader threads
 * (started on the first miss) each take up to LOAD_BATCH queued requests,
 * the oldest, and read them all with one statement.  A request is taken
 * only by a read that starts after it was queued, so a client still reads
 * its own writes; the loader notes the cache's invalidation number before
 * the statement, as a single read does.  A request the batch did not find,
 * or a batch that failed, is read again alone, which gives the precise
 * error.
 *
 * A request is answered through its done function, on the loader thread:
 * a waiting worker (load_batched) is woken; a parked HTTP request
 * (cat_table_load_queue) is resumed, so that no HTTP worker is held while
 * PostgreSQL reads, and a batch can hold every connection that missed, not
 * only as many as there are workers. */

#define LOAD_BATCH 64
/* cat_prepared knows a statement by its address: one array, one name. */
static const char load_batch_sql[] =
        "SELECT k.i, r.* FROM unnest($1::text[], $2::text[], $3::text[])"
        " WITH ORDINALITY AS k(wh, ns, name, i), LATERAL ("
        "SELECT t.metadata_location, t.metadata, w.storage_profile->>'type', t.id, t.version,"
        " t.namespace_id FROM warehouse w JOIN namespace n ON n.warehouse_id = w.id"
        " JOIN table_entry t ON t.namespace_id = n.id WHERE w.name = k.wh"
        " AND n.levels = k.ns::text[] AND t.name = k.name AND t.kind = 'TABLE' OFFSET 0) r";

struct cat_load_wait {
	struct cat_load_wait *next;
	/* Runs once, on the loader thread, when the read is over: found says
	 * whether sh (a reference, then the done function's) and type are set. */
	void (*done)(struct cat_db *db, struct cat_load_wait *w, bool found);
	const char *wh, *name; /* the caller's, valid until done */
	char *key, *levels; /* the cache key; the levels as a text[] literal */
	size_t key_len;
	struct cat_shared *sh;
	char type[16];
	/* A waiting worker's (load_batched). */
	pthread_cond_t cv;
	int state; /* 0 queued or being read, 1 found, -1 read it alone */
	/* A parked request's (cat_table_load_queue). */
	cat_load_done_fn *fn;
	void *arg;
};

/* Reads the n requests of w in one statement: found[i] says whether w[i]
 * got its bytes (sh) and type.  Runs without load_mu; the caller then
 * publishes the outcome under it. */
static void load_batch(struct cat_db *db, struct cat_load_wait **w, int n, bool *found)
{
	const char *whs[LOAD_BATCH], *levels[LOAD_BATCH], *names[LOAD_BATCH];
	int same[LOAD_BATCH], slot[LOAD_BATCH], m = 0;
	struct cat_ns a = {whs, 0}, b = {levels, 0}, c = {names, 0};
	char *pa = NULL, *pb = NULL, *pc = NULL;
	unsigned long gen = cat_cache_generation(db->cache);
	struct fl_err err = {0};
	struct cat_conn *conn = NULL;
	PGresult *r = NULL;

	/* A table asked for more than once (a hot table's readers, right after
	 * a commit) is read once: same[i] is its first request. */
	for (int i = 0; i < n; i++) {
		found[i] = false;
		same[i] = i;
		for (int j = 0; j < i && same[i] == i; j++)
			if (w[j]->key_len == w[i]->key_len &&
			    memcmp(w[j]->key, w[i]->key, w[i]->key_len) == 0)
				same[i] = j;
		if (same[i] != i)
			continue;
		whs[m] = w[i]->wh;
		levels[m] = w[i]->levels;
		names[m] = w[i]->name;
		slot[m++] = i;
	}
	a.n = b.n = c.n = m;
	pa = cat_text_array(&a, m);
	pb = cat_text_array(&b, m);
	pc = cat_text_array(&c, m);
	if (pa == NULL || pb == NULL || pc == NULL || cat_conn_get(db, &conn, &err) != 0)
		goto out;
	const char *params[3] = {pa, pb, pc};
	char name[16];
	/* The single read of cat_table_load once per request (OFFSET 0 keeps
	 * it a per-request index probe instead of one join of all of them).
	 * PostgreSQL would plan it anew on every run (a custom plan costs less
	 * than the generic one for fewer than 10 names, so it never switches),
	 * which took ~0.25 ms against ~0.1 ms of execution: the generic plan
	 * (the same nested loop of index probes) is forced for this statement
	 * alone, with SET LOCAL in its own transaction, in one round trip. */
	const struct cat_pipe_q q[4] = {
	        {.sql = "BEGIN"},
	        {.sql = "SET LOCAL plan_cache_mode = force_generic_plan"},
	        {.sql = load_batch_sql,
	         .stmt = cat_prepared(conn, load_batch_sql, name),
	         .n = 3,
	         .params = params},
	        {.sql = "COMMIT"},
	};
	PGresult *res[4];
	bool ok = cat_pipeline(conn, 4, q, res);

	for (int i = 0; i < 4; i++)
		ok = ok && res[i] != NULL &&
		     PQresultStatus(res[i]) == (i == 2 ? PGRES_TUPLES_OK : PGRES_COMMAND_OK);
	for (int i = 0; i < 4; i++)
		if (i != 2 || !ok)
			PQclear(res[i]);
	r = ok ? res[2] : NULL;
	/* A failed transaction leaves the connection not idle: put drops it. */
	cat_conn_put(db, conn);
	for (int j = 0; r != NULL && j < PQntuples(r); j++) {
		long k = strtol(PQgetvalue(r, j, 0), NULL, 10) - 1;
		struct cat_load_wait *x;
		int i;

		if (k < 0 || k >= m || found[slot[k]])
			continue;
		i = slot[k];
		x = w[i];
		/* A document only its file holds is read here, the connection
		 * back in the pool; one that cannot be is read again alone. */
		x->sh = PQgetisnull(r, j, 2)
		                ? shared_from_file(db, NULL, x->wh, PQgetvalue(r, j, 1), &err)
		                : shared_of_row(r, j, 1, 2, &err);
		if (x->sh == NULL)
			continue;
		cat_shared_row(x->sh, PQgetvalue(r, j, 4), PQgetvalue(r, j, 6),
		               cat_i64(PQgetvalue(r, j, 5)));
		snprintf(x->type, sizeof(x->type), "%s", PQgetvalue(r, j, 3));
		found[i] = true;
		cat_cache_put(db->cache, gen, x->key, x->key_len, PQgetvalue(r, j, 4), x->sh,
		              x->type);
	}
	for (int i = 0; i < n; i++)
		if (same[i] != i && found[same[i]]) {
			w[i]->sh = cat_shared_ref(w[same[i]]->sh);
			memcpy(w[i]->type, w[same[i]]->type, 16);
			found[i] = true;
		}
out:
	PQclear(r);
	free(pa);
	free(pb);
	free(pc);
}

/* A loader: takes the oldest queued requests, reads them, answers each;
 * once stopping, it leaves when the queue is empty. */
static void *loader_main(void *arg)
{
	struct cat_db *db = arg;
	struct cat_load_wait *batch[LOAD_BATCH];
	bool found[LOAD_BATCH];

	/* Started from an HTTP worker, whose name it would otherwise keep. */
	pthread_setname_np(pthread_self(), "floe-loader");

	pthread_mutex_lock(&db->load_mu);
	for (;;) {
		struct cat_load_wait **pp = &db->load_queue;
		size_t len = 0;
		int n = 0;

		while (db->load_queue == NULL && !db->load_stop)
			pthread_cond_wait(&db->load_cv, &db->load_mu);
		if (db->load_queue == NULL)
			break;
		for (struct cat_load_wait *q = db->load_queue; q != NULL; q = q->next)
			len++;
		for (; len > LOAD_BATCH; len--) /* the queue is newest first */
			pp = &(*pp)->next;
		for (struct cat_load_wait *q = *pp; q != NULL; q = q->next)
			batch[n++] = q;
		*pp = NULL;
		pthread_mutex_unlock(&db->load_mu);
		load_batch(db, batch, n, found);
		/* Counted before the answers go out, so that a client that has its
		 * answer never sees its load still waiting in /metrics. */
		pthread_mutex_lock(&db->load_mu);
		db->load_reads++;
		db->load_loads += (unsigned long)n;
		cat_cache_missed(db->cache, (unsigned long)n);
		db->load_waiting -= (size_t)n;
		pthread_mutex_unlock(&db->load_mu);
		for (int i = 0; i < n; i++)
			batch[i]->done(db, batch[i], found[i]);
		pthread_mutex_lock(&db->load_mu);
	}
	pthread_mutex_unlock(&db->load_mu);
	return NULL;
}

/* Queues w (load_mu held), starting the loaders on first use; -1 when
 * they cannot be started or are stopping. */
static int load_enqueue(struct cat_db *db, struct cat_load_wait *w)
{
	if (db->load_stop)
		return -1;
	while (db->loaders < CAT_LOAD_READERS &&
	       pthread_create(&db->loader[db->loaders], NULL, loader_main, db) == 0)
		db->loaders++;
	if (db->loaders == 0)
		return -1;
	w->next = db->load_queue;
	db->load_queue = w;
	db->load_waiting++;
	pthread_cond_signal(&db->load_cv);
	return 0;
}

void cat_db_loaders_stop(struct cat_db *db)
{
	pthread_mutex_lock(&db->load_mu);
	db->load_stop = true;
	pthread_cond_broadcast(&db->load_cv);
	pthread_mutex_unlock(&db->load_mu);
	for (int i = 0; i < db->loaders; i++)
		pthread_join(db->loader[i], NULL);
	db->loaders = 0;
}

/* A waiting worker's answer, published under the lock: the waiter leaves
 * (and its request, on its stack, ends) only once it sees its state. */
static void wake_waiter(struct cat_db *db, struct cat_load_wait *w, bool found)
{
	pthread_mutex_lock(&db->load_mu);
	w->state = found ? 1 : -1;
	pthread_cond_signal(&w->cv);
	pthread_mutex_unlock(&db->load_mu);
}

/* 1 with the table read in a batch; 0 when it must be read alone. */
static int load_batched(struct cat_db *db, const char *wh, const struct cat_ns *ns,
                        const char *name, char *key, size_t key_len, struct cat_shared **sh,
                        char type[16])
{
	struct cat_load_wait me = {
	        .done = wake_waiter, .wh = wh, .name = name, .key = key, .key_len = key_len};

	/* A thread that may not wait reads alone, where fl_may_wait stops it. */
	if (fl_no_wait)
		return 0;
	me.levels = cat_text_array(ns, ns->n);
	if (me.levels == NULL)
		return 0;
	pthread_cond_init(&me.cv, NULL);
	pthread_mutex_lock(&db->load_mu);
	if (load_enqueue(db, &me) != 0)
		me.state = -1;
	while (me.state == 0)
		pthread_cond_wait(&me.cv, &db->load_mu);
	pthread_mutex_unlock(&db->load_mu);
	pthread_cond_destroy(&me.cv);
	free(me.levels);
	if (me.state != 1)
		return 0;
	*sh = me.sh;
	memcpy(type, me.type, 16);
	return 1;
}

/* A parked request's answer: its bytes handed over, then the entry freed. */
static void answer_parked(struct cat_db *db, struct cat_load_wait *w, bool found)
{
	struct cat_table_bytes t = {0};

	(void)db;
	if (found) {
		cat_shared_bytes(w->sh, &t);
		memcpy(t.storage_type, w->type, 16);
	}
	w->fn(w->arg, found ? &t : NULL);
	free(w->key);
	free(w->levels);
	free(w);
}

int cat_table_load_queue(struct cat_db *db, const char *wh_name, const struct cat_ns *ns,
                         const char *name, cat_load_done_fn *fn, void *arg)
{
	struct cat_load_wait *w;
	int rc = -1;

	if (db->cache == NULL || (w = calloc(1, sizeof(*w))) == NULL)
		return -1;
	*w = (struct cat_load_wait){
	        .done = answer_parked, .wh = wh_name, .name = name, .fn = fn, .arg = arg};
	w->key = cat_table_key(wh_name, ns, name, &w->key_len);
	w->levels = cat_text_array(ns, ns->n);
	if (w->key != NULL && w->levels != NULL) {
		pthread_mutex_lock(&db->load_mu);
		rc = load_enqueue(db, w);
		pthread_mutex_unlock(&db->load_mu);
	}
	if (rc != 0) {
		free(w->key);
		free(w->levels);
		free(w);
	}
	return rc;
}

bool cat_table_cached(struct cat_db *db, const char *wh_name, const struct cat_ns *ns,
                      const char *name, struct cat_table_bytes *out)
{
	struct cat_shared *sh = NULL;
	size_t key_len;
	char *key;
	int hit;

	if (db->cache == NULL || (key = cat_table_key(wh_name, ns, name, &key_len)) == NULL)
		return false;
	hit = cat_cache_get(db->cache, key, key_len, &sh, out->storage_type);
	free(key);
	if (hit)
		cat_shared_bytes(sh, out);
	return hit;
}

/* The hot read of a table (a view): one round trip, one index probe per
 * level of the hierarchy.  Two arrays: the statement cache knows a
 * statement by its address. */
#define LOAD_SQL(kind)                                                                           \
	"SELECT t.metadata_location, t.metadata, w.storage_profile->>'type', t.id, t.version,"   \
	" t.namespace_id FROM warehouse w"                                                       \
	" JOIN namespace n ON n.warehouse_id = w.id JOIN table_entry t ON t.namespace_id = n.id" \
	" WHERE w.name = $1 AND n.levels = $2::text[] AND t.name = $3 AND t.kind = '" kind "'"
static const char load_table_sql[] = LOAD_SQL("TABLE");
static const char load_view_sql[] = LOAD_SQL("VIEW");

/* What load_shared notes of a row whose text only its file holds. */
struct file_row {
	char *mloc;
	char id[40], ns_id[24], type[16];
	int64_t version;
};

static int file_row(PGresult *r, struct file_row *f, struct fl_err *err)
{
	snprintf(f->id, sizeof(f->id), "%s", PQgetvalue(r, 0, 3));
	snprintf(f->ns_id, sizeof(f->ns_id), "%s", PQgetvalue(r, 0, 5));
	snprintf(f->type, sizeof(f->type), "%s", PQgetvalue(r, 0, 2));
	f->version = cat_i64(PQgetvalue(r, 0, 4));
	f->mloc = strdup(PQgetvalue(r, 0, 0));
	return f->mloc != NULL ? 0 : fl_err_set(err, FL_ERR_NOMEM, "out of memory");
}

/* The row of a table (view false) or view as shared bytes: from the
 * cache, a batch of misses (tables only: views are loaded far less often)
 * or a read of its own (see cat_table_load). */
static int load_shared(struct cat_db *db, struct cat_tx *tx, const char *wh_name,
                       const struct cat_ns *ns, const char *name, bool view, struct cat_shared **sh,
                       char storage_type[16], struct fl_err *err)
{
	char *arr = NULL, *key = NULL;
	size_t key_len = 0;
	unsigned long gen = 0;
	struct file_row later = {0};
	struct cat_scope sc;
	PGresult *r = NULL;
	int rc = -1;

	/* Inside a transaction the caller must see its own uncommitted state. */
	if (tx == NULL && db->cache != NULL) {
		key = entry_key(wh_name, ns, name, view, &key_len);
		if (key != NULL && (cat_cache_get(db->cache, key, key_len, sh, storage_type) ||
		                    (!view && load_batched(db, wh_name, ns, name, key, key_len, sh,
		                                           storage_type)))) {
			free(key);
			return 0;
		}
		gen = cat_cache_generation(db->cache);
	}
	arr = cat_text_array(ns, ns->n);
	if (arr == NULL) {
		free(key);
		return fl_err_set(err, FL_ERR_NOMEM, "out of memory");
	}
	if (cat_scope_begin(db, tx, false, &sc, err) != 0) {
		free(arr);
		free(key);
		return -1;
	}
	const char *params[3] = {wh_name, arr, name};
	r = cat_exec(sc.c, view ? load_view_sql : load_table_sql, 3, params, err);
	if (key != NULL)
		cat_cache_missed(db->cache, 1);
	if (r == NULL)
		goto out;
	if (PQntuples(r) == 0) {
		const char *p1[1] = {wh_name};
		PGresult *w =
		        cat_exec(sc.c, "SELECT id FROM warehouse WHERE name = $1", 1, p1, err);

		if (w != NULL && PQntuples(w) == 0)
			fl_err_set(err, FL_ERR_NO_SUCH_WAREHOUSE,
			           "warehouse '%.200s' does not exist", wh_name);
		else if (w != NULL)
			(void)not_found(sc.c, PQgetvalue(w, 0, 0), ns, name, view, err);
		PQclear(w);
		goto out;
	}
	if (PQgetisnull(r, 0, 1)) {
		/* Only its file holds it: read once the connection is back. */
		rc = file_row(r, &later, err);
		goto out;
	}
	if ((*sh = shared_of_row(r, 0, 0, 1, err)) == NULL)
		goto out;
	cat_shared_row(*sh, PQgetvalue(r, 0, 3), PQgetvalue(r, 0, 5), cat_i64(PQgetvalue(r, 0, 4)));
	snprintf(storage_type, 16, "%s", PQgetvalue(r, 0, 2));
	if (key != NULL)
		cat_cache_put(db->cache, gen, key, key_len, PQgetvalue(r, 0, 3), *sh, storage_type);
	rc = 0;
out:
	PQclear(r);
	free(arr);
	(void)cat_scope_end(&sc, true, err);
	if (rc == 0 && later.mloc != NULL) {
		*sh = shared_from_file(db, tx, wh_name, later.mloc, err);
		rc = *sh != NULL ? 0 : -1;
		if (rc == 0) {
			cat_shared_row(*sh, later.id, later.ns_id, later.version);
			snprintf(storage_type, 16, "%s", later.type);
			if (key != NULL)
				cat_cache_put(db->cache, gen, key, key_len, later.id, *sh,
				              storage_type);
		}
	}
	free(later.mloc);
	free(key);
	return rc;
}

int cat_table_load(struct cat_db *db, struct cat_tx *tx, const char *wh_name,
                   const struct cat_ns *ns, const char *name, char **metadata_location,
                   char **metadata, char storage_type[16], struct fl_err *err)
{
	struct cat_shared *sh = NULL;
	char *mloc, *meta;

	if (load_shared(db, tx, wh_name, ns, name, false, &sh, storage_type, err) != 0)
		return -1;
	mloc = strdup(sh->mloc);
	meta = strndup(sh->meta, sh->meta_len);
	cat_table_bytes_release(sh);
	if (mloc == NULL || meta == NULL) {
		free(mloc);
		free(meta);
		return fl_err_set(err, FL_ERR_NOMEM, "out of memory");
	}
	*metadata_location = mloc;
	*metadata = meta;
	return 0;
}

int cat_table_load_bytes(struct cat_db *db, struct cat_tx *tx, const char *wh_name,
                         const struct cat_ns *ns, const char *name, struct cat_table_bytes *out,
                         struct fl_err *err)
{
	struct cat_shared *sh = NULL;

	if (load_shared(db, tx, wh_name, ns, name, false, &sh, out->storage_type, err) != 0)
		return -1;
	cat_shared_bytes(sh, out);
	return 0;
}

int cat_view_load_bytes(struct cat_db *db, struct cat_tx *tx, const char *wh_name,
                        const struct cat_ns *ns, const char *name, struct cat_table_bytes *out,
                        struct fl_err *err)
{
	struct cat_shared *sh = NULL;

	if (load_shared(db, tx, wh_name, ns, name, true, &sh, out->storage_type, err) != 0)
		return -1;
	cat_shared_bytes(sh, out);
	return 0;
}

/* The names of the tables (view false) or views of a namespace, a page. */
static int list_entries(struct cat_db *db, struct cat_tx *tx, const char *wh_id,
                        const struct cat_ns *ns, bool view, const char *page_token, long page_size,
                        json_t **out, struct fl_err *err)
{
	json_t *cursor = NULL, *ids = NULL, *levels = NULL, *next = json_null();
	char nsid[24], limit[24];
	const char *after = NULL;
	struct cat_scope sc;
	bool began = false;
	PGresult *r = NULL;
	int rc = -1;

	if (page_token != NULL) {
		if (cat_page_token_parse(db, page_token, &cursor, err) != 0)
			goto out;
		after = json_string_value(json_object_get(cursor, "t"));
		if (after == NULL) {
			fl_err_set(err, FL_ERR_BAD_REQUEST,
			           "invalid pageToken: it was issued for another listing");
			goto out;
		}
	}
	if (cat_scope_begin(db, tx, false, &sc, err) != 0)
		goto out;
	began = true;
	if (cat_namespace_id(sc.c, wh_id, ns, nsid, sizeof(nsid), err) != 0)
		goto out;
	snprintf(limit, sizeof(limit), "%ld", page_size + 1);
	const char *params[4] = {nsid, after, limit, view ? "VIEW" : "TABLE"};
	r = cat_exec(sc.c,
	             "SELECT name FROM table_entry WHERE namespace_id = $1::bigint AND kind = $4"
	             " AND ($2::text IS NULL OR name > $2) ORDER BY name LIMIT $3::bigint",
	             4, params, err);
	if (r == NULL)
		goto out;
	levels = json_array();
	for (int i = 0; i < ns->n; i++)
		json_array_append_new(levels, json_string(ns->levels[i]));
	ids = json_array();
	for (int i = 0; i < PQntuples(r) && i < page_size; i++)
		json_array_append_new(ids, json_pack("{s:O, s:s}", "namespace", levels, "name",
		                                     PQgetvalue(r, i, 0)));
	if (PQntuples(r) > page_size) {
		json_t *cur = json_pack("{s:s}", "t", PQgetvalue(r, (int)page_size - 1, 0));
		char *tok = cur ? cat_page_token_make(db, cur) : NULL;

		json_decref(cur);
		if (tok == NULL) {
			fl_err_set(err, FL_ERR_NOMEM, "out of memory");
			goto out;
		}
		json_decref(next);
		next = json_string(tok);
		free(tok);
	}
	*out = json_pack("{s:O, s:O}", "identifiers", ids, "next-page-token", next);
	rc = 0;
out:
	if (began)
		(void)cat_scope_end(&sc, true, err);
	PQclear(r);
	json_decref(cursor);
	json_decref(ids);
	json_decref(levels);
	json_decref(next);
	return rc;
}

int cat_table_list(struct cat_db *db, struct cat_tx *tx, const char *wh_id, const struct cat_ns *ns,
                   const char *page_token, long page_size, json_t **out, struct fl_err *err)
{
	return list_entries(db, tx, wh_id, ns, false, page_token, page_size, out, err);
}

int cat_view_list(struct cat_db *db, struct cat_tx *tx, const char *wh_id, const struct cat_ns *ns,
                  const char *page_token, long page_size, json_t **out, struct fl_err *err)
{
	return list_entries(db, tx, wh_id, ns, true, page_token, page_size, out, err);
}

/* Locks an existing table's (or view's) row; FL_ERR_NO_SUCH_TABLE / _VIEW
 * (or _NAMESPACE) when there is none. */
static int lock_existing(struct cat_conn *c, const char *wh_id, const struct cat_ns *ns,
                         const char *name, bool view, struct cat_row *row, struct fl_err *err)
{
	int found;

	if (view)
		return cat_view_row_get(c, wh_id, ns, name, true, row, err);
	found = cat_row_lock(c, wh_id, ns, name, NULL, row, err);
	if (found == 0)
		(void)not_found(c, wh_id, ns, name, false, err);
	return found > 0 ? 0 : -1;
}

/* Drops a table (with purge, a job deletes its files) or a view.  With
 * wh, *mloc and *metadata get the last version's location and text, read
 * under the row lock (an unregistered table's last state). */
static int drop_entry(struct cat_db *db, struct cat_tx *tx, const char *wh_id,
                      const struct cat_ns *ns, const char *name, bool view, bool purge,
                      const struct cat_warehouse *wh, char **mloc, char **metadata,
                      struct fl_err *err)
{
	struct cat_row row = {0};
	struct cat_scope sc;
	PGresult *r;
	bool ok = false;
	int rc;

	if (cat_scope_begin(db, tx, true, &sc, err) != 0)
		return -1;
	if (lock_existing(sc.c, wh_id, ns, name, view, &row, err) != 0 ||
	    (wh != NULL && cat_row_text(db, wh, &row, NULL, err) != 0))
		goto out;
	const char *p1[1] = {row.id};
	r = cat_exec(sc.c, "DELETE FROM table_entry WHERE id = $1", 1, p1, err);
	if (r == NULL)
		goto out;
	PQclear(r);
	cat_scope_touched(&sc, row.id);
	if (!view) {
		/* A purge deletes the files; otherwise they stay, and orphan
		 * cleanup of a later table at the same place must keep them
		 * (migration 0011). */
		const char *p2[2] = {wh_id, row.location};

		r = cat_exec(sc.c,
		             purge ? "INSERT INTO maintenance_job (kind, warehouse_id, location)"
		                     " VALUES ('purge', $1, $2)"
		                   : "INSERT INTO retired_location (warehouse_id, location)"
		                     " VALUES ($1::uuid, $2)",
		             2, p2, err);
		if (r == NULL)
			goto out;
		PQclear(r);
	}
	ok = true;
out:
	rc = cat_scope_end(&sc, ok, err);
	if (rc == 0 && ok && wh != NULL) {
		*mloc = row.metadata_location;
		*metadata = row.metadata;
		row.metadata_location = row.metadata = NULL;
	}
	cat_row_free(&row);
	return rc;
}

int cat_table_drop(struct cat_db *db, struct cat_tx *tx, const char *wh_id, const struct cat_ns *ns,
                   const char *name, bool purge, struct fl_err *err)
{
	return drop_entry(db, tx, wh_id, ns, name, false, purge, NULL, NULL, NULL, err);
}

int cat_table_unregister(struct cat_db *db, struct cat_tx *tx, const struct cat_warehouse *wh,
                         const struct cat_ns *ns, const char *name, char **mloc, char **metadata,
                         struct fl_err *err)
{
	return drop_entry(db, tx, wh->id, ns, name, false, false, wh, mloc, metadata, err);
}

int cat_view_drop(struct cat_db *db, struct cat_tx *tx, const char *wh_id, const struct cat_ns *ns,
                  const char *name, struct fl_err *err)
{
	return drop_entry(db, tx, wh_id, ns, name, true, false, NULL, NULL, NULL, err);
}

/* Renames a table or a view (the location stays). */
static int rename_entry(struct cat_db *db, struct cat_tx *tx, const char *wh_id,
                        const struct cat_ns *from_ns, const char *from, const struct cat_ns *to_ns,
                        const char *to, bool view, struct fl_err *err)
{
	struct cat_row row = {0};
	char nsid[24], buf[300];
	struct cat_scope sc;
	PGresult *r;
	bool ok = false;

	if (cat_scope_begin(db, tx, true, &sc, err) != 0)
		return -1;
	if (lock_existing(sc.c, wh_id, from_ns, from, view, &row, err) != 0)
		goto out;
	if (cat_namespace_id(sc.c, wh_id, to_ns, nsid, sizeof(nsid), err) != 0)
		goto out;
	const char *params[3] = {row.id, nsid, to};
	r = cat_exec(
	        sc.c,
	        "UPDATE table_entry SET namespace_id = $2::bigint, name = $3, updated_at = now() WHERE id = $1",
	        3, params, err);
	if (r == NULL) {
		if (err->kind == FL_ERR_ALREADY_EXISTS)
			fl_err_set(err, FL_ERR_ALREADY_EXISTS,
			           "table or view %s.%.200s already exists",
			           cat_ns_str(to_ns, buf, sizeof(buf)), to);
		goto out;
	}
	PQclear(r);
	cat_scope_touched(&sc, row.id);
	ok = true;
out:
	cat_row_free(&row);
	return cat_scope_end(&sc, ok, err);
}

int cat_table_rename(struct cat_db *db, struct cat_tx *tx, const char *wh_id,
                     const struct cat_ns *from_ns, const char *from, const struct cat_ns *to_ns,
                     const char *to, struct fl_err *err)
{
	return rename_entry(db, tx, wh_id, from_ns, from, to_ns, to, false, err);
}

int cat_view_rename(struct cat_db *db, struct cat_tx *tx, const char *wh_id,
                    const struct cat_ns *from_ns, const char *from, const struct cat_ns *to_ns,
                    const char *to, struct fl_err *err)
{
	return rename_entry(db, tx, wh_id, from_ns, from, to_ns, to, true, err);
}

int cat_table_report(struct cat_db *db, struct cat_tx *tx, const char *wh_id,
                     const struct cat_ns *ns, const char *name, const json_t *report,
                     struct fl_err *err)
{
	struct cat_row row = {0};
	struct cat_scope sc;
	char *text = NULL;
	PGresult *r;
	bool ok = false;

	if (cat_scope_begin(db, tx, true, &sc, err) != 0)
		return -1;
	/* A share lock would do, but the row lock keeps one code path. */
	if (lock_existing(sc.c, wh_id, ns, name, false, &row, err) != 0)
		goto out;
	text = fl_json_dump(report, NULL);
	if (text == NULL) {
		fl_err_set(err, FL_ERR_NOMEM, "out of memory");
		goto out;
	}
	const char *params[2] = {row.id, text};
	r = cat_exec(sc.c, "INSERT INTO metrics_report (table_id, report) VALUES ($1, $2::jsonb)",
	             2, params, err);
	if (r == NULL)
		goto out;
	PQclear(r);
	ok = true;
out:
	free(text);
	cat_row_free(&row);
	return cat_scope_end(&sc, ok, err);
}

int cat_table_stats(struct cat_db *db, int limit, void (*fn)(const struct cat_table_stat *, void *),
                    void *arg, struct fl_err *err)
{
	char lim[16];
	const char *params[1] = {lim};
	struct cat_conn *c;
	PGresult *r;

	snprintf(lim, sizeof(lim), "%d", limit);
	if (cat_conn_get(db, &c, err) != 0)
		return -1;
	r = cat_exec(c,
	             "SELECT w.name, array_to_string(n.levels, '.'), t.name,"
	             " coalesce(t.total_records, -1), coalesce(t.total_data_files, -1),"
	             " coalesce(t.total_files_size, -1),"
	             " coalesce(extract(epoch FROM now() - t.last_commit_at), -1)"
	             " FROM table_entry t JOIN namespace n ON n.id = t.namespace_id"
	             " JOIN warehouse w ON w.id = t.warehouse_id WHERE t.kind = 'TABLE'"
	             " ORDER BY w.name, n.levels, t.name LIMIT $1::int",
	             1, params, err);
	cat_conn_put(db, c);
	if (r == NULL)
		return -1;
	for (int i = 0; i < PQntuples(r); i++) {
		struct cat_table_stat st = {
		        .warehouse = PQgetvalue(r, i, 0),
		        .ns = PQgetvalue(r, i, 1),
		        .name = PQgetvalue(r, i, 2),
		        .total_records = cat_i64(PQgetvalue(r, i, 3)),
		        .total_data_files = cat_i64(PQgetvalue(r, i, 4)),
		        .total_files_size = cat_i64(PQgetvalue(r, i, 5)),
		        .seconds_since_commit = strtod(PQgetvalue(r, i, 6), NULL),
		};
		fn(&st, arg);
	}
	PQclear(r);
	return 0;
}

int cat_table_find_by_object(struct cat_db *db, const char *object, struct cat_table_ref *out,
                             int max, int *found, struct fl_err *err)
{
	size_t ol = strlen(object), start;
	struct fl_buf anc = FL_BUF_INIT;
	struct cat_scope sc;
	PGresult *r = NULL;
	int rc = -1, n;

	*found = 0;
	if (strncmp(object, "s3://", 5) != 0 || (start = strcspn(object + 5, "/") + 5) >= ol)
		return fl_err_set(err, FL_ERR_BAD_REQUEST, "'%.200s' names no object", object);
	/* Every proper ancestor of the object below its bucket, as text[]; none
	 * longer than a table location can be (CAT_LOCATION_MAX), so that a
	 * deep path costs no more than a shallow one. */
	if (fl_buf_puts(&anc, "{") != 0)
		goto nomem;
	for (size_t i = start + 1; i < ol && i <= CAT_LOCATION_MAX; i++)
		if (object[i] == '/' && text_array_add(&anc, object, i) != 0)
			goto nomem;
	if (fl_buf_puts(&anc, "}") != 0)
		goto nomem;
	if (cat_scope_begin(db, NULL, false, &sc, err) != 0)
		goto out;
	const char *params[1] = {anc.data};
	r = cat_exec(sc.c,
	             "SELECT w.name, t.location, array_to_json(n.levels)::text, t.name"
	             " FROM table_entry t JOIN warehouse w ON w.id = t.warehouse_id"
	             " JOIN namespace n ON n.id = t.namespace_id WHERE t.kind = 'TABLE'"
	             " AND t.location = ANY($1::text[]) ORDER BY length(t.location) DESC LIMIT 8",
	             1, params, err);
	if (cat_scope_end(&sc, r != NULL, err) != 0 || r == NULL)
		goto out;
	n = PQntuples(r);
	for (int i = 0; i < n && *found < max; i++) {
		snprintf(out[*found].warehouse, sizeof(out[*found].warehouse), "%s",
		         PQgetvalue(r, i, 0));
		snprintf(out[*found].location, sizeof(out[*found].location), "%s",
		         PQgetvalue(r, i, 1));
		snprintf(out[*found].namespace_json, sizeof(out[*found].namespace_json), "%s",
		         PQgetvalue(r, i, 2));
		snprintf(out[*found].name, sizeof(out[*found].name), "%s", PQgetvalue(r, i, 3));
		(*found)++;
	}
	rc = 0;
	goto out;
nomem:
	fl_err_set(err, FL_ERR_NOMEM, "out of memory");
out:
	PQclear(r);
	fl_buf_free(&anc);
	return rc;
}
