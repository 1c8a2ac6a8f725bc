/* tx.c - transactions that span several catalog calls.
 *
 * A struct cat_tx pins one pooled connection inside BEGIN … COMMIT.  Catalog
 * functions take an optional tx: with one, they run inside it under a
 * savepoint (so a failed call leaves the outer transaction usable); without
 * one, they open and close their own.  The server uses this to write an
 * idempotency record in the same transaction as the mutation it records. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "buf.h"
#include "clock.h"
#include "db_int.h"

struct cat_after {
	struct cat_after *next;
	cat_after_fn fn;
	void *arg;
};

/* Runs and frees a list of after-commit work. */
static void after_run(struct cat_after **list, bool committed)
{
	while (*list != NULL) {
		struct cat_after *a = *list;

		*list = a->next;
		a->fn(a->arg, committed);
		free(a);
	}
}

struct cat_tx {
	struct cat_after *after;
	struct cat_db *db;
	struct cat_conn *c;
	struct cat_touched touched;
	bool timed; /* a table commit ran in it: time its COMMIT */
	int64_t idem_ns; /* cat_tx_idem_time */
	/* Savepoints of scopes that ended well, not yet released: RELEASE is
	 * sent with the next savepoint command instead of in a round trip of
	 * its own (COMMIT releases whatever is left). */
	int unreleased;
	/* BEGIN was sent: it rides with the first statement (cat_tx_exec). */
	bool begun;
	struct cat_claim *claim; /* deferred with the BEGIN (db_int.h) */
};

/* The judged claim, when there is one: a transaction whose key is not
 * this request's runs nothing. */
static int claim_check(const struct cat_tx *tx, struct fl_err *err)
{
	return tx->claim != NULL ? cat_claim_stop(tx->claim, err) : 0;
}

/* Sends the deferred BEGIN on its own (with the deferred claim, judged
 * here), for a use that cannot carry it; then the claim's outcome. */
static int tx_started(struct cat_tx *tx, struct fl_err *err)
{
	struct cat_pipe_q q[2] = {{.sql = "BEGIN"}};
	PGresult *res[2];

	if (tx->begun)
		return claim_check(tx, err);
	tx->begun = true;
	if (tx->claim == NULL)
		return cat_exec_cmd(tx->c, "BEGIN", err);
	q[1] = cat_claim_q(tx->c, tx->claim);
	(void)cat_pipeline(tx->c, 2, q, res);
	PQclear(res[0]);
	(void)cat_claim_judge(tx->c, tx->claim, res[1]);
	return claim_check(tx, err);
}

/* Runs cmd (a savepoint command) in tx, after the RELEASE of every
 * savepoint left by scopes that ended well, in one round trip.  Scopes
 * nest, so those savepoints are the newest ones: releasing them first makes
 * cmd act on the savepoint it would have found had they been released at
 * once. */
static int savepoint_cmd(struct cat_tx *tx, const char *cmd, struct fl_err *err)
{
	struct fl_buf b = FL_BUF_INIT;
	int rc = 0;

	/* A deferred claim is judged before anything runs under it. */
	if (tx->claim != NULL && tx_started(tx, err) != 0)
		return -1;
	if (!tx->begun)
		rc = fl_buf_puts(&b, "BEGIN; ");
	tx->begun = true;
	for (int i = 0; i < tx->unreleased && rc == 0; i++)
		rc = fl_buf_puts(&b, "RELEASE SAVEPOINT cat_call; ");
	if (rc != 0 || fl_buf_puts(&b, cmd) != 0) {
		fl_buf_free(&b);
		return fl_err_set(err, FL_ERR_NOMEM, "out of memory");
	}
	tx->unreleased = 0;
	rc = cat_exec_script(tx->c, b.data, err);
	fl_buf_free(&b);
	return rc;
}

static void touched_add(struct cat_touched *t, const char *id)
{
	if (t->n == CAT_TOUCH_MAX) {
		t->overflow = true;
		return;
	}
	snprintf(t->ids[t->n++], sizeof(t->ids[0]), "%s", id);
}

static bool touched_none(const struct cat_touched *t)
{
	return t->n == 0 && !t->overflow;
}

/* Appends to q the statement that notifies floe_table of each changed
 * table (or "*": all of them) in a transaction of its own that does not
 * wait for its WAL record to be flushed (the statement's implicit one, or
 * the rest of a pipeline's).  Table ids are ours (uuids): anything else is
 * sent as "*". */
static int notify_sql(struct fl_buf *q, const struct cat_touched *t)
{
	int rc = fl_buf_puts(q, "SELECT set_config('synchronous_commit', 'off', true)");

	for (int i = 0; i < (t->overflow ? 1 : t->n); i++) {
		const char *id = t->overflow ? "*" : t->ids[i];

		if (strspn(id, "0123456789abcdefABCDEF-") != strlen(id))
			id = "*";
		rc |= fl_buf_printf(q, ", pg_notify('floe_table', '%s')", id);
	}
	return rc;
}

/* Sends notify_sql on c; true when it committed (a failed one leaves c not
 * idle, which the pool drops). */
static bool notify_on(struct cat_conn *c, const struct cat_touched *t)
{
	struct fl_buf q = FL_BUF_INIT;
	struct fl_err ignored;
	bool ok = false;

	if (notify_sql(&q, t) == 0 && PQstatus(c->pg) == CONNECTION_OK &&
	    PQtransactionStatus(c->pg) == PQTRANS_IDLE)
		ok = cat_exec_script(c, q.data, &ignored) == 0;
	fl_buf_free(&q);
	return ok;
}

/* notify_on with a connection of the pool. */
static bool notify_pooled(struct cat_db *db, const struct cat_touched *t)
{
	struct cat_conn *c;
	struct fl_err ignored;
	bool ok;

	if (cat_conn_get(db, &c, &ignored) != 0)
		return false;
	ok = notify_on(c, t);
	cat_conn_put(db, c);
	return ok;
}

/* Ends the use of c after its COMMIT (or its unknown outcome): drops the
 * tables it changed from this process's cache (when committed, a
 * single-table commit's table takes the version it wrote instead: struct
 * cat_fresh), returns c to the pool, and
 * tells the other processes' cache listeners (cache.c), before the caller
 * answers its client; sent says the COMMIT carried the notification behind
 * it already (commit_notify).  The notification follows the COMMIT, not in
 * it: PostgreSQL serializes the COMMITs of all notifying transactions of a
 * cluster on one lock held through their WAL flush (PreCommit_Notify), so
 * notifying inside every commit allowed one commit per WAL flush, whatever
 * the number of clients.  Sent on c when it is usable, else on another
 * connection of the pool (best effort: a listener that lost its connection
 * flushes all anyway). */
static void put_and_notify(struct cat_db *db, struct cat_conn *c, struct cat_touched *t, bool sent,
                           bool committed)
{
	sent = sent || touched_none(t);
	if (t->overflow)
		cat_cache_invalidate(db->cache, "*");
	for (int i = 0; i < t->n; i++) {
		if (committed && !t->overflow && t->fresh != NULL &&
		    strcmp(t->fresh->table_id, t->ids[i]) == 0)
			cat_cache_committed(db->cache, t->fresh);
		else
			cat_cache_invalidate(db->cache, t->ids[i]);
	}
	cat_fresh_free(t->fresh);
	t->fresh = NULL;
	if (!sent)
		sent = notify_on(c, t);
	cat_conn_put(db, c);
	if (!sent)
		(void)notify_pooled(db, t);
	t->n = 0;
	t->overflow = false;
}

void cat_scope_notified(struct cat_scope *s)
{
	s->notified = true;
}

void cat_scope_touched(struct cat_scope *s, const char *table_id)
{
	touched_add(s->outer ? &s->outer->touched : &s->touched, table_id);
}

void cat_scope_fresh(struct cat_scope *s, struct cat_fresh *f)
{
	struct cat_touched *t = s->outer ? &s->outer->touched : &s->touched;

	if (t->fresh != NULL) {
		cat_fresh_free(f);
		return;
	}
	t->fresh = f;
}

int cat_db_notify_all(struct cat_db *db)
{
	const struct cat_touched all = {.overflow = true};

	return notify_pooled(db, &all) ? 0 : -1;
}

int cat_tx_begin(struct cat_db *db, struct cat_tx **out, struct fl_err *err)
{
	struct cat_tx *tx = calloc(1, sizeof(*tx));

	if (tx == NULL)
		return fl_err_set(err, FL_ERR_NOMEM, "out of memory");
	tx->db = db;
	if (cat_conn_get(db, &tx->c, err) != 0) {
		free(tx);
		return -1;
	}
	*out = tx;
	return 0;
}

PGresult *cat_tx_exec(struct cat_tx *tx, const char *sql, int n, const char *const *params,
                      struct fl_err *err)
{
	char name[16];
	struct cat_pipe_q q[3] = {{.sql = "BEGIN"}};
	PGresult *res[3];

	if (tx->begun)
		return claim_check(tx, err) != 0 ? NULL : cat_exec(tx->c, sql, n, params, err);
	tx->begun = true;
	if (tx->claim == NULL)
		return cat_exec_begin(tx->c, sql, n, params, err);
	/* BEGIN, the claim and sql in one round trip; sql's result counts
	 * only when the key is this request's. */
	q[1] = cat_claim_q(tx->c, tx->claim);
	q[2] = (struct cat_pipe_q){.sql = sql,
	                           .stmt = n > 0 ? cat_prepared(tx->c, sql, name) : NULL,
	                           .n = n,
	                           .params = params};
	(void)cat_pipeline(tx->c, 3, q, res);
	PQclear(res[0]);
	if (cat_claim_judge(tx->c, tx->claim, res[1]) != 0) {
		PQclear(res[2]);
		(void)claim_check(tx, err);
		return NULL;
	}
	return cat_result(tx->c, res[2], err);
}

/* Judges the result of COMMIT (NULL when none came), whose failure means
 * "maybe applied" unless the server said no; clears it. */
static int commit_result(struct cat_conn *c, PGresult *r, struct fl_err *err)
{
	int ok = PQresultStatus(r) == PGRES_COMMAND_OK;

	/* COMMIT of an aborted transaction answers ROLLBACK: definitely not applied. */
	if (ok && strcmp(PQcmdStatus(r), "ROLLBACK") == 0) {
		PQclear(r);
		return fl_err_set(err, FL_ERR_INTERNAL, "transaction was rolled back");
	}
	PQclear(r);
	if (ok)
		return 0;
	if (PQstatus(c->pg) != CONNECTION_OK)
		return fl_err_set(
		        err, FL_ERR_COMMIT_STATE_UNKNOWN,
		        "database connection lost during COMMIT; the change may or may not have been applied");
	return fl_err_set(err, FL_ERR_COMMIT_STATE_UNKNOWN, "COMMIT failed: %.150s",
	                  PQerrorMessage(c->pg));
}

/* COMMIT, then the notification of the tables it changed (t), in one
 * round trip: PostgreSQL runs the notification only once the COMMIT has
 * completed (its WAL flushed), and not at all when the COMMIT fails.
 * *sent says whether the notification went out. */
static int commit_notify(struct cat_conn *c, const struct cat_touched *t, bool *sent,
                         struct fl_err *err)
{
	struct fl_buf q = FL_BUF_INIT;
	PGresult *r, *first = NULL;
	int n = 0, ok = 0;

	*sent = false;
	if (touched_none(t) || fl_buf_puts(&q, "COMMIT; ") != 0 || notify_sql(&q, t) != 0) {
		fl_buf_free(&q);
		return commit_result(c, PQexec(c->pg, "COMMIT"), err);
	}
	if (PQsendQuery(c->pg, q.data) == 1) {
		while ((r = PQgetResult(c->pg)) != NULL) {
			if (n++ == 0) {
				first = r;
				continue;
			}
			ok += PQresultStatus(r) == PGRES_TUPLES_OK;
			PQclear(r);
		}
	}
	fl_buf_free(&q);
	*sent = n == 2 && ok == 1;
	return commit_result(c, first, err);
}

/* last, then COMMIT (then the notification of t, as commit_notify), in
 * one round trip.  A failure of last is definite (the COMMIT after it is
 * not run); an answer missing after last was sent is not: the COMMIT may
 * have run. */
static int commit_after(struct cat_conn *c, const struct cat_pipe_q *last,
                        const struct cat_touched *t, bool *sent, struct fl_err *err)
{
	struct fl_buf nq = FL_BUF_INIT;
	struct cat_pipe_q q[3] = {*last, {.sql = "COMMIT"}};
	PGresult *res[3];
	ExecStatusType st;
	char name[16];
	int k = 2;

	/* Named once prepared (cat_prepared): last runs once per keyed
	 * mutation and is not worth parsing and planning each time. */
	if (q[0].stmt == NULL && q[0].n > 0)
		q[0].stmt = cat_prepared(c, q[0].sql, name);
	if (!touched_none(t) && notify_sql(&nq, t) == 0)
		q[k++].sql = nq.data;
	(void)cat_pipeline(c, k, q, res);
	fl_buf_free(&nq);
	*sent = k == 3 && PQresultStatus(res[2]) == PGRES_TUPLES_OK;
	if (k == 3)
		PQclear(res[2]);
	st = PQresultStatus(res[0]);
	/* An error that libpq made up for a lost connection says nothing. */
	if (res[0] != NULL && st != PGRES_COMMAND_OK && st != PGRES_TUPLES_OK &&
	    PQstatus(c->pg) == CONNECTION_OK) {
		char msg[160];

		snprintf(msg, sizeof(msg), "%s", PQresultErrorMessage(res[0]));
		msg[strcspn(msg, "\n")] = '\0';
		PQclear(res[0]);
		PQclear(res[1]);
		if (PQtransactionStatus(c->pg) == PQTRANS_INERROR)
			PQclear(PQexec(c->pg, "ROLLBACK"));
		return fl_err_set(err, FL_ERR_INTERNAL, "the statement before COMMIT failed: %s",
		                  msg);
	}
	PQclear(res[0]);
	return commit_result(c, res[1], err);
}

/* Commits tx (with last before the COMMIT when not NULL), runs its
 * after-commit work and frees it. */
static int tx_commit(struct cat_tx *tx, const struct cat_pipe_q *last, struct fl_err *err)
{
	int64_t t0 = fl_mono_ns();
	bool sent = false;
	int rc = 0;

	/* Nothing is committed under a key that is not this request's. */
	if (tx->claim != NULL && tx_started(tx, err) != 0) {
		cat_tx_abort(tx);
		return -1;
	}
	if (last != NULL)
		rc = tx_started(tx, err) != 0 ? -1
		                              : commit_after(tx->c, last, &tx->touched, &sent, err);
	else if (tx->begun) /* nothing ran: nothing to commit */
		rc = commit_notify(tx->c, &tx->touched, &sent, err);
	if (tx->timed) {
		int64_t t1 = t0 - tx->idem_ns;

		cat_stage_done(tx->db, CAT_STAGE_COMMIT, &t0);
		cat_stage_done(tx->db, CAT_STAGE_IDEMPOTENCY, &t1);
	}
	after_run(&tx->after, rc == 0);
	/* Even an unknown outcome may have applied: invalidate either way. */
	put_and_notify(tx->db, tx->c, &tx->touched, sent, rc == 0);
	cat_claim_free(tx->claim);
	free(tx);
	return rc;
}

int cat_tx_commit(struct cat_tx *tx, struct fl_err *err)
{
	return tx_commit(tx, NULL, err);
}

int cat_tx_commit_after(struct cat_tx *tx, const struct cat_pipe_q *last, struct fl_err *err)
{
	return tx_commit(tx, last, err);
}

void cat_tx_abort(struct cat_tx *tx)
{
	if (tx == NULL)
		return;
	after_run(&tx->after, false);
	cat_fresh_free(tx->touched.fresh);
	if (tx->begun && PQstatus(tx->c->pg) == CONNECTION_OK)
		PQclear(PQexec(tx->c->pg, "ROLLBACK"));
	cat_conn_put(tx->db, tx->c);
	cat_claim_free(tx->claim);
	free(tx);
}

void cat_tx_claim_set(struct cat_tx *tx, struct cat_claim *cl)
{
	cat_claim_free(tx->claim);
	tx->claim = cl;
}

struct cat_claim *cat_tx_claim(struct cat_tx *tx)
{
	return tx->claim;
}

/* Appends fn to a list of after-commit work. */
static void after_add(struct cat_after **tail, cat_after_fn fn, void *arg)
{
	struct cat_after *a = malloc(sizeof(*a));

	if (a == NULL) {
		fn(arg, false); /* best effort work: skipped, never run early */
		return;
	}
	a->next = NULL;
	a->fn = fn;
	a->arg = arg;
	while (*tail != NULL)
		tail = &(*tail)->next;
	*tail = a;
}

void cat_scope_after_commit(struct cat_scope *s, cat_after_fn fn, void *arg)
{
	after_add(s->outer != NULL ? &s->outer->after : &s->after, fn, arg);
}

void cat_tx_after_end(struct cat_tx *tx, cat_after_fn fn, void *arg)
{
	after_add(&tx->after, fn, arg);
}

void cat_scope_timed(struct cat_scope *s)
{
	if (s->outer != NULL)
		s->outer->timed = true;
	else
		s->timed = true;
}

void cat_tx_idem_time(struct cat_tx *tx, int64_t ns)
{
	tx->idem_ns += ns;
}

struct cat_conn *cat_tx_conn(struct cat_tx *tx)
{
	struct fl_err ignored;

	/* A BEGIN that fails has lost the connection: the caller's statement
	 * fails the same way and reports it. */
	if (tx_started(tx, &ignored) != 0)
		ignored.kind = FL_ERR_NONE;
	return tx->c;
}

static void scope_init(struct cat_scope *s, struct cat_db *db, struct cat_tx *tx, bool write)
{
	s->db = db;
	s->outer = tx;
	s->write = write;
	s->savepoint_due = false;
	s->prefix_sent = 0;
	s->claim_at = -1;
	s->timed = false;
	s->notified = false;
	s->after = NULL;
	s->touched.n = 0;
	s->touched.overflow = false;
	s->touched.fresh = NULL;
}

int cat_scope_begin(struct cat_db *db, struct cat_tx *tx, bool write, struct cat_scope *s,
                    struct fl_err *err)
{
	scope_init(s, db, tx, write);
	if (tx != NULL) {
		s->c = tx->c;
		return write ? savepoint_cmd(tx, "SAVEPOINT cat_call", err) : tx_started(tx, err);
	}
	if (cat_conn_get(db, &s->c, err) != 0)
		return -1;
	if (write && cat_exec_cmd(s->c, "BEGIN", err) != 0) {
		cat_conn_put(db, s->c);
		return -1;
	}
	return 0;
}

int cat_scope_begin_ahead(struct cat_db *db, struct cat_tx *tx, struct cat_scope *s,
                          struct fl_err *err)
{
	/* A read scope, opened lazily; inside a transaction that has sent
	 * nothing yet, its deferred BEGIN and claim ride in front as well
	 * (cat_scope_prefix), else the claim's outcome comes first. */
	if (tx != NULL && !tx->begun) {
		scope_init(s, db, tx, false);
		s->c = tx->c;
	} else if (cat_scope_begin(db, tx, false, s, err) != 0) {
		return -1;
	}
	s->write = true;
	s->savepoint_due = true;
	return 0;
}

int cat_scope_prefix(struct cat_scope *s, struct cat_pipe_q *q)
{
	struct cat_tx *tx = s->outer;
	int k = 0;

	if (!s->savepoint_due)
		return 0;
	s->savepoint_due = false;
	if (tx == NULL) {
		q[k++] = (struct cat_pipe_q){.sql = "BEGIN"};
		return k;
	}
	if (!tx->begun) {
		/* Nothing sent yet: no savepoint to release, and the claim is
		 * judged from its result (cat_scope_prefix_judge). */
		tx->begun = true;
		q[k++] = (struct cat_pipe_q){.sql = "BEGIN"};
		if (tx->claim != NULL) {
			s->claim_at = k;
			q[k++] = cat_claim_q(tx->c, tx->claim);
		}
	}
	/* As savepoint_cmd: the RELEASEs left by scopes that ended well first. */
	for (; tx->unreleased > 0 && k < 7; tx->unreleased--)
		q[k++] = (struct cat_pipe_q){.sql = "RELEASE SAVEPOINT cat_call"};
	q[k++] = (struct cat_pipe_q){.sql = "SAVEPOINT cat_call"};
	return k;
}

int cat_scope_prefix_judge(struct cat_scope *s, PGresult **res, int k, struct fl_err *err)
{
	int at = s->claim_at, rc = 0;

	s->claim_at = -1;
	for (int i = 0; i < k; i++) {
		if (i == at) {
			/* Judged even when its result never came (a lost
			 * connection), so that the claim is never left pending. */
			if (cat_claim_judge(s->c, s->outer->claim, res[i]) != 0 && rc == 0)
				rc = claim_check(s->outer, err);
		} else if (rc == 0 && PQresultStatus(res[i]) != PGRES_COMMAND_OK) {
			PQclear(cat_result(s->c, res[i], err));
			rc = -1;
		} else {
			PQclear(res[i]);
		}
	}
	return rc;
}

int cat_scope_end(struct cat_scope *s, bool ok, struct fl_err *err)
{
	bool sent = false;
	int rc = ok ? 0 : -1;

	/* Opened lazily and never used: nothing ran in it, nothing to end. */
	if (s->savepoint_due)
		s->write = false;
	if (s->outer != NULL) {
		if (s->write && ok) {
			s->outer->unreleased++;
		} else if (s->write) {
			struct fl_err ignored;

			/* When this fails the outer transaction is broken: its COMMIT says so. */
			if (savepoint_cmd(
			            s->outer,
			            "ROLLBACK TO SAVEPOINT cat_call; RELEASE SAVEPOINT cat_call",
			            &ignored) != 0)
				ignored.kind = FL_ERR_NONE;
		}
		return rc;
	}
	if (s->write) {
		if (ok) {
			int64_t t0 = fl_mono_ns();

			rc = commit_notify(s->c, &s->touched, &sent, err);
			if (s->timed)
				cat_stage_done(s->db, CAT_STAGE_COMMIT, &t0);
		} else {
			if (PQstatus(s->c->pg) == CONNECTION_OK)
				PQclear(PQexec(s->c->pg, "ROLLBACK"));
			s->touched.n = 0; /* rolled back: nothing changed */
			s->touched.overflow = false;
		}
	}
	/* A read scope touches a table only by a statement that committed by
	 * itself (an optimistic commit's pointer move), which may have sent
	 * the notification behind it. */
	put_and_notify(s->db, s->c, &s->touched, sent || s->notified, rc == 0);
	after_run(&s->after, s->write && rc == 0);
	return rc;
}
