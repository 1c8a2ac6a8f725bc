/* inprocess.h - the in-process implementation of the write path's
 * committer interface (storage/ingest/committer.h): loads, creates and
 * commits through this catalog's own functions, the commit under the
 * table's row lock, so it never loses a race and needs no retries. */
#ifndef CAT_INPROCESS_H
#define CAT_INPROCESS_H

#include "catalog.h"
#include "ingest/committer.h"

/* A committer for table ns.name of wh (copied; wh is borrowed and must
 * outlive it).  With tx, every call runs inside that transaction, so the
 * caller can add its own rows to the commit's transaction and commit them
 * together (cat_tx_commit); without, each call is its own transaction.
 * actor goes into the commit events (NULL = Floe itself). */
int cat_committer_open(struct cat_db *db, struct cat_tx *tx, const struct cat_warehouse *wh,
                       const struct cat_ns *ns, const char *name, const struct cat_limits *lim,
                       const char *actor, struct st_committer **out,
                       struct fl_err *err) FL_MUST_CHECK;

#endif
