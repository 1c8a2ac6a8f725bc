/* libpq.h - libpq, loaded on first use (see common/dl.h for why).
 *
 * libpq and the chain it links (Kerberos, LDAP, SASL, GnuTLS, ...: 22 of
 * the 29 libraries a linked floe maps) cost every process ~8 ms of the
 * dynamic loader before main, which a command that never opens a database
 * connection -- `floe ingest --catalog-uri`, `floe version` -- should not
 * pay.  Files that call libpq include this header instead of <libpq-fe.h>:
 * each PQ function they name becomes a call through struct cat_libpq, whose
 * fields are typed from libpq's own prototypes, so every call is still
 * checked against the real header.
 *
 * Who loads it: cat_pg_connect (every connection Floe opens) calls
 * cat_libpq_load first.  Every other function takes a connection or a
 * result, which exists only once the library is loaded -- except the ones
 * cleanup paths call with NULL (PQclear, PQfinish, PQfreemem,
 * PQconninfoFree) and the ones callers ask of a connection that may be NULL
 * (PQstatus, PQerrorMessage, PQresultStatus, PQresultErrorMessage): those
 * answer for NULL as libpq does, without the library, and a NULL
 * connection's PQerrorMessage says why the library could not be loaded when
 * that is the reason. */
#ifndef CAT_LIBPQ_H
#define CAT_LIBPQ_H

#include <libpq-fe.h>

#include "err.h"

#define CAT_LIBPQ_FUNCS(X)      \
	X(PQbackendPID)         \
	X(PQclear)              \
	X(PQcmdStatus)          \
	X(PQcmdTuples)          \
	X(PQconnectdb)          \
	X(PQconnectdbParams)    \
	X(PQconninfoFree)       \
	X(PQconninfoParse)      \
	X(PQconsumeInput)       \
	X(PQenterPipelineMode)  \
	X(PQerrorMessage)       \
	X(PQexec)               \
	X(PQexecParams)         \
	X(PQexecPrepared)       \
	X(PQexitPipelineMode)   \
	X(PQfinish)             \
	X(PQfreemem)            \
	X(PQgetResult)          \
	X(PQgetisnull)          \
	X(PQgetlength)          \
	X(PQgetvalue)           \
	X(PQnfields)            \
	X(PQnotifies)           \
	X(PQntuples)            \
	X(PQpipelineSync)       \
	X(PQresultErrorField)   \
	X(PQresultErrorMessage) \
	X(PQresultStatus)       \
	X(PQsendPrepare)        \
	X(PQsendQuery)          \
	X(PQsendQueryParams)    \
	X(PQsendQueryPrepared)  \
	X(PQsocket)             \
	X(PQstatus)             \
	X(PQtransactionStatus)  \
	X(PQunescapeBytea)

struct cat_libpq {
#define CAT_LIBPQ_FIELD(f) __typeof__(&f) f;
	CAT_LIBPQ_FUNCS(CAT_LIBPQ_FIELD)
#undef CAT_LIBPQ_FIELD
};

/* Filled by the first successful cat_libpq_load; read-only after. */
extern struct cat_libpq cat_pq;

/* Loads libpq (CAT_LIBPQ_SONAME, the build's) the first time; 0, or -1 with
 * FL_ERR_UNAVAILABLE naming the library and the loader's reason (remembered:
 * later calls answer the same at once).  Thread-safe. */
int cat_libpq_load(struct fl_err *err) FL_MUST_CHECK;

/* The functions that accept NULL (see above). */
void cat_pq_clear(PGresult *r);
void cat_pq_finish(PGconn *c);
void cat_pq_freemem(void *p);
void cat_pq_conninfo_free(PQconninfoOption *o);
ConnStatusType cat_pq_status(const PGconn *c);
char *cat_pq_error_message(const PGconn *c);
ExecStatusType cat_pq_result_status(const PGresult *r);
char *cat_pq_result_error_message(const PGresult *r);

#ifndef CAT_LIBPQ_TABLE
#define PQbackendPID (*cat_pq.PQbackendPID)
#define PQclear cat_pq_clear
#define PQcmdStatus (*cat_pq.PQcmdStatus)
#define PQcmdTuples (*cat_pq.PQcmdTuples)
#define PQconnectdb (*cat_pq.PQconnectdb)
#define PQconnectdbParams (*cat_pq.PQconnectdbParams)
#define PQconninfoFree cat_pq_conninfo_free
#define PQconninfoParse (*cat_pq.PQconninfoParse)
#define PQconsumeInput (*cat_pq.PQconsumeInput)
#define PQenterPipelineMode (*cat_pq.PQenterPipelineMode)
#define PQerrorMessage cat_pq_error_message
#define PQexec (*cat_pq.PQexec)
#define PQexecParams (*cat_pq.PQexecParams)
#define PQexecPrepared (*cat_pq.PQexecPrepared)
#define PQexitPipelineMode (*cat_pq.PQexitPipelineMode)
#define PQfinish cat_pq_finish
#define PQfreemem cat_pq_freemem
#define PQgetResult (*cat_pq.PQgetResult)
#define PQgetisnull (*cat_pq.PQgetisnull)
#define PQgetlength (*cat_pq.PQgetlength)
#define PQgetvalue (*cat_pq.PQgetvalue)
#define PQnfields (*cat_pq.PQnfields)
#define PQnotifies (*cat_pq.PQnotifies)
#define PQntuples (*cat_pq.PQntuples)
#define PQpipelineSync (*cat_pq.PQpipelineSync)
#define PQresultErrorField (*cat_pq.PQresultErrorField)
#define PQresultErrorMessage cat_pq_result_error_message
#define PQresultStatus cat_pq_result_status
#define PQsendPrepare (*cat_pq.PQsendPrepare)
#define PQsendQuery (*cat_pq.PQsendQuery)
#define PQsendQueryParams (*cat_pq.PQsendQueryParams)
#define PQsendQueryPrepared (*cat_pq.PQsendQueryPrepared)
#define PQsocket (*cat_pq.PQsocket)
#define PQstatus cat_pq_status
#define PQtransactionStatus (*cat_pq.PQtransactionStatus)
#define PQunescapeBytea (*cat_pq.PQunescapeBytea)
#endif

#endif
