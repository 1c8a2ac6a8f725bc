/* libpq.c - the cat_libpq table, filled from CAT_LIBPQ_SONAME (the SONAME
 * of the libpq the build found; see meson.build) on first use, and the
 * functions that answer for NULL without it. */
#define CAT_LIBPQ_TABLE
#include "libpq.h"

#include <stddef.h>
#include <stdlib.h>

#include "dl.h"
#include "libcrypto.h"

struct cat_libpq cat_pq;

static const struct fl_dl_sym pq_syms[] = {
#define CAT_LIBPQ_SYM(f) {#f, offsetof(struct cat_libpq, f)},
        CAT_LIBPQ_FUNCS(CAT_LIBPQ_SYM)
#undef CAT_LIBPQ_SYM
};

/* After libcrypto, which it links: OpenSSL starts without an exit handler
 * (libcrypto.c). */
static struct fl_dl_lib pq_lib =
        FL_DL_LIB_AFTER(&fl_crypto_lib, CAT_LIBPQ_SONAME, pq_syms, &cat_pq, NULL);

int cat_libpq_load(struct fl_err *err)
{
	return fl_dl_lib_load(&pq_lib, err);
}

/* A non-NULL connection or result came from the loaded library. */

void cat_pq_clear(PGresult *r)
{
	if (r != NULL)
		cat_pq.PQclear(r);
}

void cat_pq_finish(PGconn *c)
{
	if (c != NULL)
		cat_pq.PQfinish(c);
}

void cat_pq_freemem(void *p)
{
	if (p != NULL)
		cat_pq.PQfreemem(p);
}

void cat_pq_conninfo_free(PQconninfoOption *o)
{
	if (o != NULL)
		cat_pq.PQconninfoFree(o);
}

ConnStatusType cat_pq_status(const PGconn *c)
{
	return c != NULL ? cat_pq.PQstatus(c) : CONNECTION_BAD;
}

char *cat_pq_error_message(const PGconn *c)
{
	/* cat_pg_connect's NULL: its text is not shown, it may hold a password. */
	static char nulconn[] = "the database URL is not a valid PostgreSQL URL or connection "
	                        "string (percent-encode @ % / : and spaces in its user name and "
	                        "password), or out of memory\n";

	if (c != NULL)
		return cat_pq.PQerrorMessage(c);
	/* A failed load's message is written before its state (dl.c). */
	if (__atomic_load_n(&pq_lib.state, __ATOMIC_ACQUIRE) == -1)
		return pq_lib.err.msg;
	return nulconn;
}

ExecStatusType cat_pq_result_status(const PGresult *r)
{
	return r != NULL ? cat_pq.PQresultStatus(r) : PGRES_FATAL_ERROR;
}

char *cat_pq_result_error_message(const PGresult *r)
{
	static char empty[] = "";

	return r != NULL ? cat_pq.PQresultErrorMessage(r) : empty;
}
