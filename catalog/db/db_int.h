/* db_int.h - what catalog/db/ files share: pooled connections and query helpers. */
#ifndef CAT_DB_INT_H
#define CAT_DB_INT_H

#include <libpq-fe.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdlib.h>

#include "catalog.h"

struct cat_conn {
	PGconn *pg;
	bool busy;
	int64_t retry_at_ns; /* no reconnect attempt before this (backoff) */
	int64_t backoff_ns;
};

struct cat_db {
	char *conninfo;
	int size;
	struct cat_conn *conns;
	pthread_mutex_t mu;
	pthread_cond_t cv;
	int in_use;
	int waiting;
	unsigned char secret[32];
	bool have_secret;
};

/* Takes a connected connection from the pool, waiting up to a few seconds for
 * one to be free.  FL_ERR_UNAVAILABLE when the database cannot be reached. */
int cat_conn_get(struct cat_db *db, struct cat_conn **out, struct fl_err *err) FL_MUST_CHECK;

/* Returns c to the pool; a broken connection, or one left inside a
 * transaction, is closed so the next user starts clean. */
void cat_conn_put(struct cat_db *db, struct cat_conn *c);

/* Runs sql with text parameters.  Returns the result (PQclear it) when its
 * status is PGRES_COMMAND_OK or PGRES_TUPLES_OK; otherwise NULL with err set:
 * FL_ERR_UNAVAILABLE for a lost connection, FL_ERR_ALREADY_EXISTS for a
 * unique violation (SQLSTATE 23505), FL_ERR_INTERNAL otherwise. */
PGresult *cat_exec(struct cat_conn *c, const char *sql, int n, const char *const *params,
                   struct fl_err *err);

/* Runs a statement whose result is not needed (BEGIN, COMMIT, …). */
int cat_exec_cmd(struct cat_conn *c, const char *sql, struct fl_err *err) FL_MUST_CHECK;

/* Formats levels as a PostgreSQL text[] literal ({"a","b\"c"}) into a malloc'd
 * string, quoting every element. */
char *cat_text_array(const struct cat_ns *ns, int n);

/* Parses a text[] value of a result into a JSON array of strings. */
json_t *cat_parse_text_array(const char *s);

/* A result column known to hold an integer. */
static inline int64_t cat_i64(const char *s)
{
	return strtoll(s, NULL, 10);
}

/* Page tokens: opaque, signed with the server secret (pagetoken.c). */
char *cat_page_token_make(const struct cat_db *db, const json_t *cursor);
int cat_page_token_parse(const struct cat_db *db, const char *token, json_t **cursor,
                         struct fl_err *err) FL_MUST_CHECK;

#endif
