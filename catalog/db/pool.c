/* pool.c - a fixed pool of libpq connections.
 *
 * Invariants: a connection is used by one thread between cat_conn_get and
 * cat_conn_put; `in_use` counts the busy ones.  A connection found broken is
 * closed and reopened on a later get, no more often than its backoff allows
 * (100 ms doubling to 5 s), so an outage costs one failed connect per
 * connection per backoff period rather than one per request.  Messages never
 * carry the conninfo string (it may hold a password). */
#include "db_int.h"

#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "clock.h"

#define POOL_WAIT_S 5
#define BACKOFF_MIN_NS 100000000LL
#define BACKOFF_MAX_NS 5000000000LL

/* The session's settings, in one round trip (a pipeline, each SET its own
 * implicit transaction so that one refused does not undo the others):
 * requests are short, and a stuck statement must not hold a row lock
 * forever; metadata and stored responses are JSON of up to hundreds of KB
 * written on every commit, under the row lock, which lz4 compresses for
 * TOAST about 4x faster than the default pglz (a server built without lz4
 * refuses that one and keeps pglz).  Failures here are not errors: the
 * connection works without them, and a broken one shows at its first use. */
static const char *const session_sets[] = {
        "SET statement_timeout = '30s'",
        "SET lock_timeout = '10s'",
        "SET default_toast_compression = 'lz4'",
};
#define NSETS (sizeof(session_sets) / sizeof(session_sets[0]))

/* Queues the SETs, each with its sync, on pg in pipeline mode; returns the
 * number of syncs queued. */
static size_t settings_send(PGconn *pg)
{
	size_t syncs = 0;

	for (size_t i = 0; i < NSETS; i++) {
		if (PQsendQueryParams(pg, session_sets[i], 0, NULL, NULL, NULL, NULL, 0) != 1 ||
		    PQpipelineSync(pg) != 1)
			break;
		syncs++;
	}
	return syncs;
}

/* Reads what settings_send queued: each SET gives its result and a NULL,
 * each sync its own result. */
static void settings_drain(PGconn *pg, size_t syncs)
{
	size_t nulls = 0;
	PGresult *r;

	while (syncs > 0 && nulls <= 2 * NSETS) {
		r = PQgetResult(pg);
		if (r == NULL) {
			nulls++;
			if (PQstatus(pg) != CONNECTION_OK)
				break;
			continue;
		}
		if (PQresultStatus(r) == PGRES_PIPELINE_SYNC)
			syncs--;
		PQclear(r);
	}
}

static void session_settings(PGconn *pg)
{
	if (PQenterPipelineMode(pg) != 1)
		return;
	settings_drain(pg, settings_send(pg));
	PQexitPipelineMode(pg);
}

/* The settings of a connection opened by cat_db_open_oneshot, before its
 * first statement that does not carry them in its own pipeline. */
static void settings_due(struct cat_conn *c)
{
	if (c->settings_pending) {
		c->settings_pending = false;
		session_settings(c->pg);
	}
}

/* Whether a comma-separated host (or hostaddr) list names only this
 * machine: localhost, a 127/8 or ::1 literal, or (hosts only) a Unix socket
 * directory.  Empty is libpq's default: a Unix socket for a host, nothing
 * for a hostaddr. */
static bool loopback_list(const char *list, bool sockets)
{
	char item[256];
	unsigned char a[16];

	if (list == NULL || list[0] == '\0')
		return true;
	while (*list != '\0') {
		size_t n = strcspn(list, ",");

		if (n == 0 || n >= sizeof(item))
			return false;
		memcpy(item, list, n);
		item[n] = '\0';
		if (!((sockets && (item[0] == '/' || item[0] == '@')) ||
		      strcmp(item, "localhost") == 0 ||
		      (inet_pton(AF_INET, item, a) == 1 && a[0] == 127) ||
		      (inet_pton(AF_INET6, item, a) == 1 && memcmp(a, &in6addr_loopback, 16) == 0)))
			return false;
		list += n + (list[n] == ',');
	}
	return true;
}

/* PQconnectdb(conninfo), except that a server on this machine is reached
 * without negotiating encryption that protects nothing there: unless the
 * conninfo or the environment chooses, sslmode=allow (plain first, TLS only
 * if the server refuses plain) and gssencmode=disable, which save the
 * SSLRequest round trip and the Kerberos credential probe on every
 * connection -- felt by short-lived commands such as floe ingest.  Remote
 * servers keep libpq's defaults. */
/* False for a URL whose authority holds more than one '@': an unescaped '@'
 * in the password, which libpq would take for part of the host name (and
 * quote in its error). */
static bool one_userinfo(const char *conninfo)
{
	const char *a = NULL, *end;
	int ats = 0;

	if (strncmp(conninfo, "postgresql://", 13) == 0)
		a = conninfo + 13;
	else if (strncmp(conninfo, "postgres://", 11) == 0)
		a = conninfo + 11;
	if (a == NULL)
		return true; /* keyword=value: libpq's parse has judged it */
	end = a + strcspn(a, "/?");
	for (; a < end; a++)
		ats += *a == '@';
	return ats <= 1;
}

PGconn *cat_pg_connect(const char *conninfo)
{
	PQconninfoOption *opts, *o;
	const char *kw[64], *val[64], *host = NULL, *addr = NULL;
	/* A service file may choose too: then libpq decides alone. */
	bool ssl_chosen = getenv("PGSSLMODE") || getenv("PGREQUIRESSL") || getenv("PGSERVICE"),
	     gss_chosen = getenv("PGGSSENCMODE") || getenv("PGSERVICE");
	size_t n = 0;
	PGconn *pg;
	struct fl_err err;

	if (cat_libpq_load(&err) != 0)
		return NULL;
	/* libpq's parse errors quote the text they stumble on, the password
	 * included: a string it cannot parse is not handed to it. */
	opts = PQconninfoParse(conninfo, NULL);
	if (opts == NULL || !one_userinfo(conninfo)) {
		PQconninfoFree(opts);
		return NULL;
	}
	for (o = opts; o->keyword != NULL && n + 3 < sizeof(kw) / sizeof(kw[0]); o++) {
		if (o->val == NULL)
			continue;
		if (strcmp(o->keyword, "host") == 0)
			host = o->val;
		else if (strcmp(o->keyword, "hostaddr") == 0)
			addr = o->val;
		else if (strncmp(o->keyword, "ssl", 3) == 0 ||
		         strcmp(o->keyword, "requiressl") == 0)
			ssl_chosen = true;
		else if (strcmp(o->keyword, "gssencmode") == 0)
			gss_chosen = true;
		else if (strcmp(o->keyword, "service") == 0)
			ssl_chosen = gss_chosen = true;
		kw[n] = o->keyword;
		val[n++] = o->val;
	}
	if (o->keyword != NULL) { /* more options than kw holds: leave it to libpq */
		PQconninfoFree(opts);
		return PQconnectdb(conninfo);
	}
	if (loopback_list(host && host[0] ? host : getenv("PGHOST"), true) &&
	    loopback_list(addr && addr[0] ? addr : getenv("PGHOSTADDR"), false)) {
		if (!ssl_chosen) {
			kw[n] = "sslmode";
			val[n++] = "allow";
		}
		if (!gss_chosen) {
			kw[n] = "gssencmode";
			val[n++] = "disable";
		}
	}
	kw[n] = NULL;
	val[n] = NULL;
	pg = PQconnectdbParams(kw, val, 0);
	PQconninfoFree(opts);
	return pg;
}

/* Sets c->own_pid when the server names the backend the connection's
 * start named, for the listener's current epoch (cat_db_own_backend). */
static void backend_check(struct cat_db *db, struct cat_conn *c)
{
	unsigned epoch = atomic_load(&db->listen_epoch);
	PGresult *r = PQexec(c->pg, "SELECT pg_backend_pid()");
	int pid = PQbackendPID(c->pg);

	if (PQresultStatus(r) == PGRES_TUPLES_OK && PQntuples(r) == 1 && pid > 0 &&
	    strtol(PQgetvalue(r, 0, 0), NULL, 10) == pid)
		atomic_store(&c->own_pid, pid);
	else
		atomic_store(&c->own_pid, 0);
	atomic_store(&c->pid_epoch, epoch);
	PQclear(r);
}

static void conn_close(struct cat_conn *c)
{
	atomic_store(&c->own_pid, 0);
	atomic_store(&c->pid_epoch, 0); /* checked again once reopened */
	PQfinish(c->pg);
	c->pg = NULL;
}

bool cat_db_own_backend(struct cat_db *db, int pid)
{
	unsigned epoch = atomic_load(&db->listen_epoch);

	for (int i = 0; pid > 0 && db->conns != NULL && i < db->size; i++)
		if (atomic_load(&db->conns[i].own_pid) == pid &&
		    atomic_load(&db->conns[i].pid_epoch) == epoch)
			return true;
	return false;
}

static int conn_open(struct cat_db *db, struct cat_conn *c, struct fl_err *err)
{
	int64_t now = fl_mono_ns();

	if (now < c->retry_at_ns)
		return fl_err_set(err, FL_ERR_UNAVAILABLE, "database unavailable (reconnecting)");
	c->nstmts = 0; /* a new session has no prepared statements */
	c->pipe_nprep = 0;
	c->pipe_prep_sync = false;
	c->pg = cat_pg_connect(db->conninfo);
	if (PQstatus(c->pg) != CONNECTION_OK) {
		char msg[160];

		/* libpq's message names host and port; a string it could not
		 * parse, whose error might quote the password, never reached it
		 * (cat_pg_connect). */
		snprintf(msg, sizeof(msg), "%s", PQerrorMessage(c->pg));
		msg[strcspn(msg, "\n")] = '\0';
		PQfinish(c->pg);
		c->pg = NULL;
		c->backoff_ns = c->backoff_ns ? c->backoff_ns * 2 : BACKOFF_MIN_NS;
		if (c->backoff_ns > BACKOFF_MAX_NS)
			c->backoff_ns = BACKOFF_MAX_NS;
		c->retry_at_ns = now + c->backoff_ns;
		return fl_err_set(err, FL_ERR_UNAVAILABLE, "database unavailable: %s", msg);
	}
	c->backoff_ns = 0;
	c->retry_at_ns = 0;
	/* A short-lived command sends them with its first pipeline instead. */
	c->settings_pending = db->settings_deferred;
	if (!c->settings_pending)
		session_settings(c->pg);
	return 0;
}

static int db_open(const char *conninfo, int size, bool defer, struct cat_db **out,
                   struct fl_err *err)
{
	struct cat_db *db = calloc(1, sizeof(*db));
	struct cat_conn *c;

	if (db == NULL)
		return fl_err_set(err, FL_ERR_NOMEM, "out of memory");
	db->settings_deferred = defer;
	db->conninfo = strdup(conninfo);
	db->conns = calloc((size_t)size, sizeof(*db->conns));
	if (db->conninfo == NULL || db->conns == NULL) {
		/* Nothing else is set up yet (cat_db_close would end the locks). */
		free(db->conns);
		free(db->conninfo);
		free(db);
		return fl_err_set(err, FL_ERR_NOMEM, "out of memory");
	}
	db->size = size;
	db->inline_max = CAT_INLINE_DEFAULT;
	db->read_max = (size_t)1 << 30; /* as large as the column could hold */
	db->bases = cat_base_cache_new(); /* NULL: commits go without it */
	db->gates = cat_gates_new(); /* likewise */
	pthread_mutex_init(&db->mu, NULL);
	pthread_cond_init(&db->cv, NULL);
	pthread_mutex_init(&db->load_mu, NULL);
	pthread_cond_init(&db->load_cv, NULL);
	if (cat_conn_get(db, &c, err) != 0) {
		cat_db_close(db);
		return -1;
	}
	cat_conn_put(db, c);
	*out = db;
	return 0;
}

int cat_db_open(const char *conninfo, int size, struct cat_db **out, struct fl_err *err)
{
	return db_open(conninfo, size, false, out, err);
}

void cat_db_oneshot(struct cat_db *db)
{
	for (int i = 0; i < db->size; i++)
		db->conns[i].unprepared = true;
}

int cat_db_open_oneshot(const char *conninfo, struct cat_db **out, struct fl_err *err)
{
	struct cat_db *db = NULL;
	int rc;

	/* Deferred only for the first connection: cat_db_open connects it. */
	rc = db_open(conninfo, 1, true, &db, err);
	if (rc == 0) {
		db->settings_deferred = false;
		cat_db_oneshot(db);
		*out = db;
	}
	return rc;
}

int cat_db_enable_cache(struct cat_db *db, size_t max_bytes, struct fl_err *err)
{
	return cat_cache_start(db, max_bytes, err);
}

void cat_db_close(struct cat_db *db)
{
	if (db == NULL)
		return;
	if (db->conns != NULL)
		cat_db_loaders_stop(db);
	cat_cache_stop(db->cache);
	cat_base_cache_free(db->bases);
	cat_gates_free(db->gates);
	for (int i = 0; i < db->size; i++)
		if (db->conns[i].pg != NULL)
			conn_close(&db->conns[i]);
	if (db->conns != NULL) {
		pthread_mutex_destroy(&db->mu);
		pthread_cond_destroy(&db->cv);
		pthread_mutex_destroy(&db->load_mu);
		pthread_cond_destroy(&db->load_cv);
	}
	free(db->conns);
	free(db->conninfo);
	free(db);
}

static const char *const stage_names[CAT_STAGE_N] = {"gate",  "lock",   "requirements", "build",
                                                     "write", "update", "idempotency",  "commit"};

const char *cat_stage_name(enum cat_stage s)
{
	return s < CAT_STAGE_N ? stage_names[s] : "other";
}

void cat_db_on_stage(struct cat_db *db, cat_stage_fn fn, void *arg)
{
	db->on_stage_arg = arg;
	db->on_stage = fn;
}

void cat_db_set_metadata_inline(struct cat_db *db, size_t max_inline, cat_storage_fn storage_fn,
                                void *arg)
{
	db->inline_max = max_inline;
	db->storage_fn = storage_fn;
	db->storage_arg = arg;
}

const char *cat_db_inline_text(const struct cat_db *db, const char *text)
{
	return text != NULL && strnlen(text, db->inline_max + 1) > db->inline_max ? NULL : text;
}

void cat_stage_done(struct cat_db *db, enum cat_stage stage, int64_t *t0)
{
	int64_t now = fl_mono_ns();

	if (db->on_stage != NULL)
		db->on_stage(db->on_stage_arg, stage, now - *t0);
	*t0 = now;
}

void cat_db_stats(struct cat_db *db, int *in_use, int *idle, int *waiting)
{
	pthread_mutex_lock(&db->mu);
	*in_use = db->in_use;
	*idle = db->size - db->in_use;
	*waiting = db->waiting;
	pthread_mutex_unlock(&db->mu);
}

int cat_conn_get(struct cat_db *db, struct cat_conn **out, struct fl_err *err)
{
	struct cat_conn *c = NULL;
	struct timespec until;

	if (fl_may_wait(err) != 0)
		return -1;
	clock_gettime(CLOCK_REALTIME, &until);
	until.tv_sec += POOL_WAIT_S;
	pthread_mutex_lock(&db->mu);
	for (;;) {
		/* Prefer a connected idle connection over an unconnected one. */
		for (int i = 0; i < db->size; i++) {
			struct cat_conn *k = &db->conns[i];

			if (!k->busy && (c == NULL || (c->pg == NULL && k->pg != NULL)))
				c = k;
		}
		if (c != NULL)
			break;
		db->waiting++;
		int rc = pthread_cond_timedwait(&db->cv, &db->mu, &until);
		db->waiting--;
		if (rc == ETIMEDOUT) {
			pthread_mutex_unlock(&db->mu);
			return fl_err_set(err, FL_ERR_UNAVAILABLE,
			                  "all %d database connections are busy; retry later",
			                  db->size);
		}
	}
	c->busy = true;
	db->in_use++;
	pthread_mutex_unlock(&db->mu);

	if (c->pg != NULL && PQstatus(c->pg) != CONNECTION_OK)
		conn_close(c);
	if (c->pg == NULL && conn_open(db, c, err) != 0) {
		cat_conn_put(db, c);
		return -1;
	}
	/* Once per connection and listener connection (none without a cache). */
	if (atomic_load(&c->pid_epoch) != atomic_load(&db->listen_epoch) && !c->settings_pending)
		backend_check(db, c);
	*out = c;
	return 0;
}

void cat_conn_put(struct cat_db *db, struct cat_conn *c)
{
	if (c->pg != NULL &&
	    (PQstatus(c->pg) != CONNECTION_OK || PQtransactionStatus(c->pg) != PQTRANS_IDLE))
		conn_close(c);
	pthread_mutex_lock(&db->mu);
	c->busy = false;
	db->in_use--;
	pthread_cond_signal(&db->cv);
	pthread_mutex_unlock(&db->mu);
}

/* Where a statement named on a connection stands (cat_conn.stmt_state). */
enum cat_stmt_state {
	STMT_WANTED, /* to be prepared by the next pipeline */
	STMT_SENT, /* its preparation was sent; if no result came, it stays so (a
	            * second Parse of one that exists would fail, and abort an open
	            * transaction) until the connection is opened again */
	STMT_READY,
	STMT_REFUSED, /* PostgreSQL would not prepare it: it runs unnamed */
};

/* As db_int.h says. */
const char *cat_prepared(struct cat_conn *c, const char *sql, char name[16])
{
	int i;

	if (c->unprepared)
		return NULL;
	for (i = 0; i < c->nstmts; i++) {
		if (c->stmts[i] == sql) {
			if (c->stmt_state[i] != STMT_READY)
				return NULL;
			snprintf(name, 16, "s%d", i);
			return name;
		}
	}
	if (c->nstmts < CAT_STMT_CACHE) {
		c->stmt_state[c->nstmts] = STMT_WANTED;
		c->stmts[c->nstmts++] = sql;
	}
	return NULL;
}

/* Whether the k statements of q, run from a state inside a transaction
 * block or not (open), leave no block open (when they succeed; a failure
 * that skips a COMMIT leaves the block aborted, where a preparation fails
 * harmlessly). */
static bool ends_outside_block(bool open, int k, const struct cat_pipe_q *q)
{
	for (int i = 0; i < k; i++) {
		if (q[i].sql == NULL)
			continue;
		if (strcmp(q[i].sql, "BEGIN") == 0)
			open = true;
		else if (strcmp(q[i].sql, "COMMIT") == 0 || strcmp(q[i].sql, "ROLLBACK") == 0)
			open = false;
	}
	return !open;
}

/* Whether a statement on c waits for its preparation. */
static bool wanted(const struct cat_conn *c)
{
	for (int i = 0; i < c->nstmts; i++)
		if (c->stmt_state[i] == STMT_WANTED)
			return true;
	return false;
}

/* Queues the preparation of every wanted statement behind the k statements
 * of q, after a sync of their own: in an implicit transaction of their own,
 * so that whatever happens to them (a lock wait that times out, an error)
 * touches none of the pipeline's statements.  Only when the pipeline leaves
 * no transaction block open: a failed Parse inside one would abort it.  False
 * when libpq refused. */
static bool prepares_send(struct cat_conn *c, bool open, int k, const struct cat_pipe_q *q)
{
	char name[16];

	c->pipe_nprep = 0;
	if (!wanted(c) || !ends_outside_block(open, k, q))
		return true;
	if (PQpipelineSync(c->pg) != 1)
		return false;
	c->pipe_prep_sync = true;
	for (int i = 0; i < c->nstmts; i++) {
		if (c->stmt_state[i] != STMT_WANTED)
			continue;
		snprintf(name, sizeof(name), "s%d", i);
		if (PQsendPrepare(c->pg, name, c->stmts[i], 0, NULL) != 1)
			return false;
		c->stmt_state[i] = STMT_SENT;
		c->pipe_prep[c->pipe_nprep++] = (unsigned char)i;
	}
	return true;
}

/* Whether a failed preparation is worth trying again: anything but a
 * statement PostgreSQL cannot take (SQLSTATE classes 42, syntax or access
 * rule, and 0A, not supported), which then runs unnamed on this connection.
 * A lock timeout, a cancel or a lack of resources passes. */
static bool prepare_again(const PGresult *r)
{
	const char *state = PQresultErrorField(r, PG_DIAG_SQLSTATE);

	return state == NULL || (strncmp(state, "42", 2) != 0 && strncmp(state, "0A", 2) != 0);
}

/* Reads the sync and the results of the preparations prepares_send queued.
 * False when one never came (the connection is lost). */
static bool prepares_recv(struct cat_conn *c)
{
	PGresult *r;
	bool ok = true;

	if (c->pipe_prep_sync) {
		c->pipe_prep_sync = false;
		r = PQgetResult(c->pg);
		ok = PQresultStatus(r) == PGRES_PIPELINE_SYNC;
		PQclear(r);
	}
	for (int j = 0; ok && j < c->pipe_nprep; j++) {
		unsigned char *st = &c->stmt_state[c->pipe_prep[j]];
		PGresult *more;

		if ((r = PQgetResult(c->pg)) == NULL) {
			ok = false;
			break;
		}
		if (PQresultStatus(r) == PGRES_COMMAND_OK)
			*st = STMT_READY;
		else if (PQresultStatus(r) == PGRES_PIPELINE_ABORTED || prepare_again(r))
			*st = STMT_WANTED;
		else
			*st = STMT_REFUSED;
		PQclear(r);
		while ((more = PQgetResult(c->pg)) != NULL)
			PQclear(more);
	}
	c->pipe_nprep = 0;
	return ok;
}

/* r when it succeeded; otherwise NULL with err set as cat_exec says. */
static PGresult *checked(struct cat_conn *c, PGresult *r, struct fl_err *err)
{
	ExecStatusType st = PQresultStatus(r);
	const char *state;

	if (st == PGRES_COMMAND_OK || st == PGRES_TUPLES_OK)
		return r;
	state = r ? PQresultErrorField(r, PG_DIAG_SQLSTATE) : NULL;
	if (PQstatus(c->pg) != CONNECTION_OK || state == NULL || strncmp(state, "08", 2) == 0 ||
	    strncmp(state, "57P", 3) == 0) {
		fl_err_set(err, FL_ERR_UNAVAILABLE, "database connection lost");
	} else if (strcmp(state, "23505") == 0) {
		fl_err_set(err, FL_ERR_ALREADY_EXISTS, "already exists");
	} else if (strcmp(state, "40001") == 0 || strcmp(state, "40P01") == 0 ||
	           strcmp(state, "55P03") == 0 || strcmp(state, "57014") == 0) {
		fl_err_set(err, FL_ERR_UNAVAILABLE, "database busy (%s); retry", state);
	} else {
		char msg[160];

		snprintf(msg, sizeof(msg), "%s", PQresultErrorMessage(r));
		msg[strcspn(msg, "\n")] = '\0';
		fl_err_set(err, FL_ERR_INTERNAL, "database error %s: %s", state, msg);
	}
	PQclear(r);
	return NULL;
}

PGresult *cat_result(struct cat_conn *c, PGresult *r, struct fl_err *err)
{
	return checked(c, r, err);
}

PGresult *cat_exec(struct cat_conn *c, const char *sql, int n, const char *const *params,
                   struct fl_err *err)
{
	char name[16];
	const char *stmt;

	settings_due(c);
	stmt = n > 0 ? cat_prepared(c, sql, name) : NULL;
	/* Unnamed, with whatever preparations are wanted riding behind (the
	 * COMMIT of BEGIN ... COMMIT carries those of the statements between). */
	if (stmt == NULL && (n > 0 || wanted(c)) && !c->unprepared) {
		PGresult *r;
		const struct cat_pipe_q q = {.sql = sql, .n = n, .params = params};

		(void)cat_pipeline(c, 1, &q, &r);
		return checked(c, r, err);
	}
	return checked(c,
	               stmt ? PQexecPrepared(c->pg, stmt, n, params, NULL, NULL, 0)
	                    : PQexecParams(c->pg, sql, n, NULL, params, NULL, NULL, 0),
	               err);
}

bool cat_pipeline_send(struct cat_conn *c, int k, const struct cat_pipe_q *q)
{
	bool open;
	int i;

	c->pipe_set_syncs = 0;
	c->pipe_mid_syncs = 0;
	c->pipe_nprep = 0;
	c->pipe_prep_sync = false;
	open = PQtransactionStatus(c->pg) != PQTRANS_IDLE;
	if (k > 64 || PQenterPipelineMode(c->pg) != 1)
		return false;
	/* Pending session settings ride in front, each in its own sync. */
	if (c->settings_pending) {
		c->settings_pending = false;
		c->pipe_set_syncs = settings_send(c->pg);
	}
	for (i = 0; i < k; i++) {
		if ((q[i].stmt ? PQsendQueryPrepared(c->pg, q[i].stmt, q[i].n, q[i].params,
		                                     q[i].lengths, q[i].formats, 0)
		               : PQsendQueryParams(c->pg, q[i].sql, q[i].n, NULL, q[i].params,
		                                   q[i].lengths, q[i].formats, 0)) != 1)
			break;
		if (q[i].sync && i + 1 < k) {
			if (PQpipelineSync(c->pg) != 1)
				break;
			c->pipe_mid_syncs |= (uint64_t)1 << i;
		}
	}
	if (i == k && prepares_send(c, open, k, q) && PQpipelineSync(c->pg) == 1)
		return true;
	/* A connection left in pipeline mode is not idle: cat_conn_put drops it. */
	(void)PQexitPipelineMode(c->pg);
	return false;
}

bool cat_pipeline_recv(struct cat_conn *c, int k, PGresult **res)
{
	bool synced = false;
	PGresult *r;
	int i;

	for (i = 0; i < k; i++)
		res[i] = NULL;
	settings_drain(c->pg, c->pipe_set_syncs);
	c->pipe_set_syncs = 0;
	/* Each statement's result, then NULL; then the sync.  A lost
	 * connection ends the sequence early. */
	for (i = 0; i < k; i++) {
		while ((r = PQgetResult(c->pg)) != NULL) {
			if (res[i] == NULL)
				res[i] = r;
			else
				PQclear(r);
		}
		if (res[i] == NULL)
			goto out;
		if (c->pipe_mid_syncs & ((uint64_t)1 << i)) {
			r = PQgetResult(c->pg);
			synced = PQresultStatus(r) == PGRES_PIPELINE_SYNC;
			PQclear(r);
			if (!synced)
				goto out;
		}
	}
	if (!prepares_recv(c))
		goto out;
	r = PQgetResult(c->pg);
	synced = PQresultStatus(r) == PGRES_PIPELINE_SYNC;
	PQclear(r);
out:
	/* A connection left in pipeline mode is not idle: cat_conn_put drops it. */
	return PQexitPipelineMode(c->pg) == 1 && synced;
}

bool cat_exec_send(struct cat_conn *c, const char *sql, int n, const char *const *params)
{
	char name[16];
	const struct cat_pipe_q q = {
	        .sql = sql,
	        .stmt = n > 0 ? cat_prepared(c, sql, name) : NULL,
	        .n = n,
	        .params = params,
	};

	return cat_pipeline_send(c, 1, &q);
}

PGresult *cat_exec_recv(struct cat_conn *c, struct fl_err *err)
{
	PGresult *r;

	/* A sync that never came shows at the connection's next use. */
	(void)cat_pipeline_recv(c, 1, &r);
	return checked(c, r, err);
}

bool cat_pipeline(struct cat_conn *c, int k, const struct cat_pipe_q *q, PGresult **res)
{
	if (!cat_pipeline_send(c, k, q)) {
		for (int i = 0; i < k; i++)
			res[i] = NULL;
		return false;
	}
	return cat_pipeline_recv(c, k, res);
}

PGresult *cat_exec_begin(struct cat_conn *c, const char *sql, int n, const char *const *params,
                         struct fl_err *err)
{
	char name[16];
	const struct cat_pipe_q q[2] = {
	        {.sql = "BEGIN"},
	        {.sql = sql,
	         .stmt = n > 0 ? cat_prepared(c, sql, name) : NULL,
	         .n = n,
	         .params = params},
	};
	PGresult *res[2];
	bool synced = cat_pipeline(c, 2, q, res);
	int bad = -1;

	/* The first failure is the cause; later ones say "aborted". */
	for (int i = 0; i < 2 && bad < 0; i++)
		if (res[i] != NULL && PQresultStatus(res[i]) != PGRES_COMMAND_OK &&
		    PQresultStatus(res[i]) != PGRES_TUPLES_OK)
			bad = i;
	if (!synced || bad >= 0) {
		PGresult *cause = bad >= 0 ? res[bad] : NULL;

		for (int i = 0; i < 2; i++)
			if (res[i] != cause)
				PQclear(res[i]);
		return checked(c, cause, err);
	}
	PQclear(res[0]);
	return res[1];
}

int cat_exec_script(struct cat_conn *c, const char *sql, struct fl_err *err)
{
	PGresult *r;

	settings_due(c);
	r = checked(c, PQexec(c->pg, sql), err);
	if (r == NULL)
		return -1;
	PQclear(r);
	return 0;
}

int cat_exec_cmd(struct cat_conn *c, const char *sql, struct fl_err *err)
{
	PGresult *r = cat_exec(c, sql, 0, NULL, err);

	if (r == NULL)
		return -1;
	PQclear(r);
	return 0;
}

int cat_db_ready(struct cat_db *db, struct fl_err *err)
{
	struct cat_conn *c;
	PGresult *r;
	int v, rc = -1;

	if (cat_conn_get(db, &c, err) != 0)
		return -1;
	r = cat_exec(c, "SELECT coalesce(max(version), 0) FROM schema_migrations", 0, NULL, err);
	if (r == NULL)
		goto out;
	v = (int)cat_i64(PQgetvalue(r, 0, 0));
	PQclear(r);
	if (v != cat_schema_version()) {
		fl_err_set(err, FL_ERR_UNAVAILABLE,
		           "database schema is at version %d, this binary needs %d", v,
		           cat_schema_version());
		goto out;
	}
	rc = 0;
out:
	cat_conn_put(db, c);
	return rc;
}
