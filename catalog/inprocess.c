/* inprocess.c - the in-process committer (see inprocess.h).
 *
 * Exactly once comes from the batch layer's build step, which runs under the
 * row lock here: a batch already in the history builds nothing.  The version
 * loaded last is kept: when the locked row still points at it, the commit
 * neither reads its metadata again nor parses it again. */
#include "inprocess.h"

#include <stdlib.h>
#include <string.h>

struct cat_committer {
	struct st_committer base; /* first: the interface pointer is this struct's */
	struct cat_db *db;
	struct cat_tx *tx;
	const struct cat_warehouse *wh;
	struct cat_limits lim;
	char *actor;
	char **levels; /* copies, one block */
	int nlevels;
	char *name;
	char *known_location, *known_text; /* the version loaded last */
	json_t *known_meta;
};

static struct cat_ns ns_of(const struct cat_committer *k)
{
	struct cat_ns ns = {(const char *const *)k->levels, k->nlevels};

	return ns;
}

static void forget(struct cat_committer *k)
{
	free(k->known_location);
	free(k->known_text);
	json_decref(k->known_meta);
	k->known_location = k->known_text = NULL;
	k->known_meta = NULL;
}

/* Parses the version read (mloc and text, taken) and keeps it as known. */
static int parse_meta(struct cat_committer *k, char *mloc, char *text, json_t **meta,
                      struct fl_err *err)
{
	json_t *m = json_loads(text, 0, NULL);

	forget(k);
	if (m == NULL) {
		free(mloc);
		free(text);
		return fl_err_set(err, FL_ERR_INTERNAL, "stored metadata is not JSON");
	}
	k->known_location = mloc;
	k->known_text = text;
	k->known_meta = json_incref(m);
	*meta = m;
	return 0;
}

static int load(struct st_committer *c, json_t **meta, struct fl_err *err)
{
	struct cat_committer *k = (struct cat_committer *)c;
	struct cat_ns ns = ns_of(k);
	char *mloc = NULL, *text = NULL, type[16];

	if (cat_table_load(k->db, k->tx, k->wh->name, &ns, k->name, &mloc, &text, type, err) != 0)
		return -1;
	return parse_meta(k, mloc, text, meta, err);
}

static int create(struct st_committer *c, const json_t *schema, json_t **meta, struct fl_err *err)
{
	struct cat_committer *k = (struct cat_committer *)c;
	struct cat_ns ns = ns_of(k);
	char *mloc = NULL, *text = NULL;
	json_t *req = json_pack("{s:s, s:O}", "name", k->name, "schema", schema);
	int rc;

	if (req == NULL)
		return fl_err_set(err, FL_ERR_NOMEM, "out of memory");
	rc = cat_table_create(k->db, k->tx, k->wh, &ns, req, false, &mloc, &text, k->actor, err);
	json_decref(req);
	if (rc != 0)
		return -1;
	return parse_meta(k, mloc, text, meta, err);
}

static int io(struct st_committer *c, const json_t *meta, struct st_io **out, struct fl_err *err)
{
	struct cat_committer *k = (struct cat_committer *)c;

	(void)meta;
	if (k->wh->io == NULL)
		return fl_err_set(err, FL_ERR_INTERNAL, "no storage handle for warehouse %s",
		                  k->wh->name);
	*out = k->wh->io;
	return 0;
}

static int commit(struct st_committer *c, const char *batch_id, int retries,
                  st_commit_build_fn build, void *arg, struct fl_err *err)
{
	struct cat_committer *k = (struct cat_committer *)c;
	struct cat_change ch = {.ns = ns_of(k), .name = k->name};
	struct cat_known known = {k->known_location, k->known_text, k->known_meta};
	int rc;

	(void)batch_id;
	(void)retries; /* under the row lock there is no conflict to retry */
	rc = cat_table_append_tx(k->db, k->tx, k->wh, &ch, build, arg,
	                         k->known_meta != NULL ? &known : NULL, &k->lim, NULL, k->actor,
	                         err);
	cat_changes_free(&ch, 1);
	return rc;
}

static void close_committer(struct st_committer *c)
{
	struct cat_committer *k = (struct cat_committer *)c;

	if (k == NULL)
		return;
	forget(k);
	free(k->actor);
	free(k->levels);
	free(k->name);
	free(k);
}

static const struct st_committer_ops ops = {
        .load = load,
        .create = create,
        .io = io,
        .commit = commit,
        .close = close_committer,
};

int cat_committer_open(struct cat_db *db, struct cat_tx *tx, const struct cat_warehouse *wh,
                       const struct cat_ns *ns, const char *name, const struct cat_limits *lim,
                       const char *actor, struct st_committer **out, struct fl_err *err)
{
	struct cat_committer *k = calloc(1, sizeof(*k));

	if (k == NULL)
		return fl_err_set(err, FL_ERR_NOMEM, "out of memory");
	k->levels = st_committer_levels_dup(ns->levels, ns->n);
	k->name = strdup(name);
	k->actor = actor ? strdup(actor) : NULL;
	if (k->levels == NULL || k->name == NULL || (actor != NULL && k->actor == NULL)) {
		close_committer(&k->base);
		return fl_err_set(err, FL_ERR_NOMEM, "out of memory");
	}
	k->nlevels = ns->n;
	k->base.ops = &ops;
	k->db = db;
	k->tx = tx;
	k->wh = wh;
	k->lim = *lim;
	*out = &k->base;
	return 0;
}
