/* idempotency.c - Idempotency-Key records.
 *
 * Claiming inserts the key inside the caller's transaction.  A concurrent
 * request with the same key blocks on the unique index until the first
 * transaction ends: after a COMMIT it finds the stored response and replays
 * it; after a ROLLBACK (a 5xx, never stored) its own insert succeeds and it
 * executes.  Expired records are treated as absent and removed by cat_idem_gc. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "clock.h"
#include "db_int.h"

static void hex(const unsigned char *p, size_t n, char *out)
{
	static const char d[] = "0123456789abcdef";

	out[0] = '\\';
	out[1] = 'x';
	for (size_t i = 0; i < n; i++) {
		out[2 + 2 * i] = d[p[i] >> 4];
		out[3 + 2 * i] = d[p[i] & 15];
	}
	out[2 + 2 * n] = '\0';
}

void cat_idem_free(struct cat_idem *r)
{
	free(r->content_type);
	free(r->etag);
	free(r->body);
	free(r->metadata_location);
	memset(r, 0, sizeof(*r));
}

/* One round trip: a new key is inserted; an expired record of the key is
 * replaced in place (as if deleted first); a live one is left alone and
 * returns no row.  A concurrent claim of the key blocks here until its
 * transaction ends. */
static const char claim_sql[] =
        "INSERT INTO idempotency_record (key, method, route, fingerprint, expires_at)"
        " VALUES ($1::uuid, $2, $3, $4::bytea, now() + make_interval(secs => $5::bigint))"
        " ON CONFLICT (key) DO UPDATE SET method = EXCLUDED.method, route = EXCLUDED.route,"
        " fingerprint = EXCLUDED.fingerprint, status = NULL, content_type = NULL,"
        " etag = NULL, body = NULL, metadata_location = NULL, created_at = now(),"
        " expires_at = EXCLUDED.expires_at"
        " WHERE idempotency_record.expires_at < now() RETURNING key";

void cat_claim_free(struct cat_claim *cl)
{
	if (cl == NULL)
		return;
	cat_idem_free(&cl->rec);
	free(cl->key);
	free(cl->method);
	free(cl->route);
	free(cl);
}

int cat_idem_claim_defer(struct cat_tx *tx, const char *key, const char *method, const char *route,
                         const unsigned char fp[32], int64_t lifetime_s, struct fl_err *err)
{
	struct cat_claim *cl = calloc(1, sizeof(*cl));

	if (cl == NULL || (cl->key = strdup(key)) == NULL ||
	    (cl->method = strdup(method)) == NULL || (cl->route = strdup(route)) == NULL) {
		cat_claim_free(cl);
		return fl_err_set(err, FL_ERR_NOMEM, "out of memory");
	}
	hex(fp, 32, cl->fph);
	snprintf(cl->life, sizeof(cl->life), "%lld", (long long)lifetime_s);
	cl->params[0] = cl->key;
	cl->params[1] = cl->method;
	cl->params[2] = cl->route;
	cl->params[3] = cl->fph;
	cl->params[4] = cl->life;
	cat_tx_claim_set(tx, cl);
	return 0;
}

struct cat_pipe_q cat_claim_q(struct cat_conn *c, struct cat_claim *cl)
{
	/* Named once prepared (cat_prepared); unnamed until then. */
	return (struct cat_pipe_q){
	        .sql = claim_sql,
	        .stmt = cat_prepared(c, claim_sql, cl->stmt),
	        .n = 5,
	        .params = cl->params,
	};
}

/* The stored response of the key, once the claim found a live record. */
static int claim_record(struct cat_conn *c, struct cat_claim *cl, struct fl_err *err)
{
	struct cat_idem *out = &cl->rec;
	PGresult *r = cat_exec(
	        c,
	        "SELECT method, route, fingerprint = $2::bytea, status, content_type, etag, body,"
	        " metadata_location FROM idempotency_record WHERE key = $1::uuid",
	        2, (const char *const[]){cl->key, cl->fph}, err);

	if (r == NULL)
		return -1;
	if (PQntuples(r) != 1 || PQgetisnull(r, 0, 3)) {
		PQclear(r);
		return fl_err_set(err, FL_ERR_UNAVAILABLE, "idempotency key %s is busy; retry",
		                  cl->key);
	}
	if (strcmp(PQgetvalue(r, 0, 0), cl->method) != 0 ||
	    strcmp(PQgetvalue(r, 0, 1), cl->route) != 0 || strcmp(PQgetvalue(r, 0, 2), "t") != 0) {
		fl_err_set(err, FL_ERR_UNPROCESSABLE,
		           "Idempotency-Key %s was already used for a different request (%s %s)",
		           cl->key, PQgetvalue(r, 0, 0), PQgetvalue(r, 0, 1));
		PQclear(r);
		return -1;
	}
	out->status = (int)cat_i64(PQgetvalue(r, 0, 3));
	/* Every stored part is copied, or the claim fails: a replay missing
	 * one would answer something else than was answered. */
	if ((!PQgetisnull(r, 0, 4) && (out->content_type = strdup(PQgetvalue(r, 0, 4))) == NULL) ||
	    (!PQgetisnull(r, 0, 5) && (out->etag = strdup(PQgetvalue(r, 0, 5))) == NULL) ||
	    (!PQgetisnull(r, 0, 7) &&
	     (out->metadata_location = strdup(PQgetvalue(r, 0, 7))) == NULL))
		goto nomem;
	if (!PQgetisnull(r, 0, 6)) {
		size_t n;
		unsigned char *b = PQunescapeBytea((const unsigned char *)PQgetvalue(r, 0, 6), &n);

		if (b == NULL)
			goto nomem;
		out->body = malloc(n + 1);
		if (out->body != NULL) {
			memcpy(out->body, b, n);
			out->body[n] = '\0';
			out->body_len = n;
		}
		PQfreemem(b);
		if (out->body == NULL)
			goto nomem;
	}
	PQclear(r);
	return 0;
nomem:
	PQclear(r);
	cat_idem_free(out);
	return fl_err_set(err, FL_ERR_NOMEM, "out of memory");
}

int cat_claim_judge(struct cat_conn *c, struct cat_claim *cl, PGresult *r)
{
	r = cat_result(c, r, &cl->err);
	if (r != NULL) {
		bool claimed = PQntuples(r) == 1;

		PQclear(r);
		if (claimed || claim_record(c, cl, &cl->err) == 0)
			cl->state = claimed ? CAT_CLAIMED : CAT_CLAIM_RECORD;
	}
	if (cl->state == CAT_CLAIM_PENDING)
		cl->state = CAT_CLAIM_FAILED;
	return cl->state == CAT_CLAIMED ? 0 : -1;
}

int cat_claim_stop(const struct cat_claim *cl, struct fl_err *err)
{
	if (cl->state == CAT_CLAIMED)
		return 0;
	if (cl->state == CAT_CLAIM_FAILED)
		*err = cl->err;
	else
		fl_err_set(err, FL_ERR_CONFLICT,
		           "Idempotency-Key %s has a stored response, which is replayed", cl->key);
	return -1;
}

int cat_idem_claimed(struct cat_tx *tx, struct cat_idem *out, struct fl_err *err)
{
	int64_t t0 = fl_mono_ns();
	struct cat_claim *cl = cat_tx_claim(tx);
	int rc;

	memset(out, 0, sizeof(*out));
	if (cl == NULL)
		return 0; /* nothing deferred */
	/* No statement carried it: sent now, on its own (timed as a claim). */
	if (cl->state == CAT_CLAIM_PENDING) {
		(void)cat_tx_conn(tx);
		cat_tx_idem_time(tx, fl_mono_ns() - t0);
	}
	rc = cl->state == CAT_CLAIM_RECORD ? 0 : cat_claim_stop(cl, err);
	if (rc == 0) /* the stored response, handed over (once) */
		*out = cl->rec;
	memset(&cl->rec, 0, sizeof(cl->rec));
	return rc;
}

bool cat_idem_stopped(struct cat_tx *tx)
{
	struct cat_claim *cl = tx != NULL ? cat_tx_claim(tx) : NULL;

	return cl != NULL && (cl->state == CAT_CLAIM_RECORD || cl->state == CAT_CLAIM_FAILED);
}

int cat_idem_claim(struct cat_tx *tx, const char *key, const char *method, const char *route,
                   const unsigned char fp[32], int64_t lifetime_s, struct cat_idem *out,
                   struct fl_err *err)
{
	if (cat_idem_claim_defer(tx, key, method, route, fp, lifetime_s, err) != 0)
		return -1;
	return cat_idem_claimed(tx, out, err);
}

int cat_idem_store_commit(struct cat_tx *tx, const char *key, int status, const char *content_type,
                          const char *etag, const char *body, size_t n,
                          const char *metadata_location, struct fl_err *err)
{
	char st[16];
	/* A NULL parameter is SQL NULL: the body of a record by reference. */
	const char *params[6] = {key,
	                         st,
	                         content_type,
	                         etag,
	                         metadata_location ? NULL : body ? body : "",
	                         metadata_location};
	const int lengths[6] = {0, 0, 0, 0, (int)n, 0};
	const int formats[6] = {0, 0, 0, 0, 1, 0};
	const struct cat_pipe_q q = {
	        .sql = "UPDATE idempotency_record SET status = $2::int, content_type = $3,"
	               " etag = $4, body = $5, metadata_location = $6 WHERE key = $1::uuid",
	        .n = 6,
	        .params = params,
	        .lengths = lengths,
	        .formats = formats,
	};

	snprintf(st, sizeof(st), "%d", status);
	/* Timed with the COMMIT it rides with. */
	if (cat_tx_commit_after(tx, &q, err) != 0) {
		if (err->kind != FL_ERR_COMMIT_STATE_UNKNOWN)
			fl_err_prefix(err, "cannot store the idempotency record");
		return -1;
	}
	return 0;
}

int cat_idem_gc(struct cat_db *db, long *n, struct fl_err *err)
{
	struct cat_conn *c;
	PGresult *r;

	if (cat_conn_get(db, &c, err) != 0)
		return -1;
	r = cat_exec(c, "DELETE FROM idempotency_record WHERE expires_at < now()", 0, NULL, err);
	cat_conn_put(db, c);
	if (r == NULL)
		return -1;
	*n = strtol(PQcmdTuples(r), NULL, 10);
	PQclear(r);
	return 0;
}
