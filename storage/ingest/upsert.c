/* upsert.c - copy-on-write upserts (see upsert.h for the contract).
 *
 * A key is the single-value serialization of each key column, each behind
 * a 4-byte length, in hex: the key of a JSON object mapping every batch key
 * to its last row in the batch (its place in the input, and its file: a
 * partitioned table's batch files interleave the input).  Pruning compares the key
 * columns' manifest bounds with the batch's sorted values per column in
 * their serialized form (little-endian signed numbers, unsigned bytes for
 * strings, binary and uuids; truncated string bounds stay conservative);
 * a file is a candidate when every key column has some batch value inside
 * its bounds, which is a superset of the files that hold a batch key.
 *
 * A key's map value is its last row's tag (row_tag) times two, plus one
 * when that row is a delete (cdc_field): a delete row is never kept, and
 * its file is rewritten without it.
 *
 * Invariants: a batch row that is its key's last and no delete is in
 * exactly one file of the snapshot (its own file, or its file rewritten
 * without the rows a later row replaces); no other batch row is in any; a
 * table row whose key the batch holds is in no file of the snapshot; every
 * other live row is in exactly one (its file kept, or its file's rewrite). */
#include "upsert.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "avro/reader.h"
#include "base/buf.h"
#include "iceberg/deletes.h"
#include "iceberg/entry.h"
#include "iceberg/name_mapping.h"
#include "iceberg/rewrite.h"
#include "json.h"

#define MAX_KEYS 16
#define MAX_MANIFEST_READ ((size_t)64 << 20)

static int nomem(struct fl_err *err)
{
	return fl_err_set(err, FL_ERR_NOMEM, "out of memory");
}

struct sval {
	uint8_t *p;
	size_t n;
};

struct keycol {
	int32_t id;
	const char *name;
	size_t idx; /* in the schema's fields */
	struct st_type type;
	struct sval *vals; /* the batch's values, sorted and distinct after open */
	size_t n, cap;
};

/* A live file that was a candidate, across attempts. */
struct cached {
	bool match; /* holds a batch key */
	bool rewritten; /* out holds its survivors */
	bool used; /* the last plan used out */
	struct st_rewrite_out out;
	char *dels; /* the delete files applied to out, one per line; NULL: none */
	int64_t deleted; /* rows they removed */
	int64_t keydel; /* rows a batch delete removed (cdc_field) */
	json_t *ids; /* v3: hex key -> _row_id of each row of it a batch row replaced */
};

struct st_upsert {
	struct st_upsert_opts o; /* o.data_uri points at data_uri */
	char *data_uri;
	json_t *schema;
	struct keycol keys[MAX_KEYS];
	size_t nk;
	size_t key_pos[MAX_KEYS]; /* positions of the key columns in a full row */
	size_t proj_pos[MAX_KEYS]; /* ... in a row of the key projection: 0..nk-1 */
	struct st_parquet_want want[MAX_KEYS + 1]; /* the keys, then the cdc field */
	bool cdc; /* want[nk] is the cdc field */
	json_t *map; /* hex key -> its last batch row's row_tag * 2 + (a delete) */
	struct st_buf kb;
	char *hex;
	size_t hexcap;
	/* the batch's files after de-duplication */
	const struct st_ingest_result *res;
	int64_t *base; /* ordinal of each res file's first row */
	int64_t *losers; /* rows of each res file a later row replaces */
	struct st_rewrite_out bout; /* rewritten batch files */
	size_t *bout_from; /* res file each bout file came from */
	/* v3, the last plan: hex key -> the _row_id a batch row takes over
	 * from the table row it replaces (the least of a key's rows), and the
	 * batch's files written again to carry them (lout, each from res file
	 * lout_from[k]) in place of the batch files k (batch_file) with lin[k]
	 * set, which the snapshot then leaves out */
	json_t *rid;
	struct st_rewrite_out lout;
	size_t *lout_from;
	bool *lin;
	json_t *cur_ids; /* the table file being rewritten: its cached ids */
	/* candidates seen by plans: path -> index into cache */
	json_t *cache_idx;
	struct cached *cache;
	size_t ncache;
	/* the live delete files of the state planned on: {content, path, seq,
	 * spec, part (the partition as JSON text), ref, ids, m, e}: m indexes
	 * delm, the delete manifests read ({mf: list record, entries}), e the
	 * entries */
	json_t *dels, *delm;
	/* the table file being rewritten: the rows its deletes remove */
	struct st_parquet_column *cols; /* the schema's, the rows' order */
	struct st_parquet_want *cwant;
	size_t ncols;
	struct st_posset gone;
	struct st_eqdeletes eq;
	int64_t cur_seq, cur_deleted, cur_keydel;
	/* the scan in progress */
	size_t cur_file;
	int64_t ordinal;
	bool scan_match;
	const size_t *pos; /* key positions in the rows of the scan */
	struct st_upsert_stats st;
};

int st_upsert_key_ids(const json_t *schema, int32_t *ids, size_t cap, size_t *n, struct fl_err *err)
{
	const json_t *arr = json_object_get(schema, "identifier-field-ids"), *v;
	size_t i;

	*n = 0;
	if (!json_is_array(arr))
		return 0;
	if (json_array_size(arr) > cap)
		return fl_err_set(err, FL_ERR_BAD_REQUEST,
		                  "the schema has %zu identifier fields; upsert takes at most %zu",
		                  json_array_size(arr), cap);
	json_array_foreach(arr, i, v) ids[(*n)++] = (int32_t)json_integer_value(v);
	return 0;
}

/* ---- keys ---- */

/* Appends one value's key part; -1 when out of memory. */
static int key_part(struct st_buf *b, const struct st_type *t, const struct st_value *v)
{
	size_t at = b->len;
	uint32_t len;

	if (v->null)
		return st_buf_append(b, "\xff\xff\xff\xff", 4);
	if (st_buf_append(b, "\0\0\0\0", 4) != 0 || st_value_serialize(t, v, b) != 0)
		return -1;
	len = (uint32_t)(b->len - at - 4);
	memcpy(b->data + at, &len, 4);
	return 0;
}

/* The hex key of row (key columns at u->pos); NULL when out of memory. */
static const char *key_of(struct st_upsert *u, const struct st_value *row)
{
	static const char digits[] = "0123456789abcdef";

	st_buf_reset(&u->kb);
	for (size_t k = 0; k < u->nk; k++)
		if (key_part(&u->kb, &u->keys[k].type, &row[u->pos[k]]) != 0)
			return NULL;
	if (u->hexcap < u->kb.len * 2 + 1) {
		char *h = realloc(u->hex, u->kb.len * 2 + 1);

		if (h == NULL)
			return NULL;
		u->hex = h;
		u->hexcap = u->kb.len * 2 + 1;
	}
	for (size_t i = 0; i < u->kb.len; i++) {
		u->hex[2 * i] = digits[u->kb.data[i] >> 4];
		u->hex[2 * i + 1] = digits[u->kb.data[i] & 15];
	}
	u->hex[u->kb.len * 2] = '\0';
	return u->hex;
}

/* Compares two serialized values of t (Iceberg order); decimals, floats
 * and unknown widths compare equal (they never prune). */
static int ser_cmp(const struct st_type *t, const uint8_t *a, size_t an, const uint8_t *b,
                   size_t bn)
{
	switch (t->id) {
	case ST_TYPE_BOOLEAN:
	case ST_TYPE_INT:
	case ST_TYPE_DATE:
	case ST_TYPE_LONG:
	case ST_TYPE_TIME:
	case ST_TYPE_TIMESTAMP:
	case ST_TYPE_TIMESTAMPTZ: {
		int64_t x = 0, y = 0;

		if ((an != 1 && an != 4 && an != 8) || (bn != 1 && bn != 4 && bn != 8))
			return 0;
		/* little-endian, sign-extended (an int bound of a promoted long) */
		for (size_t i = an; i-- > 0;)
			x = (int64_t)((uint64_t)x << 8) | a[i];
		for (size_t i = bn; i-- > 0;)
			y = (int64_t)((uint64_t)y << 8) | b[i];
		if (an < 8 && t->id != ST_TYPE_BOOLEAN && (a[an - 1] & 0x80))
			x |= (int64_t)(~(uint64_t)0 << (8 * an));
		if (bn < 8 && t->id != ST_TYPE_BOOLEAN && (b[bn - 1] & 0x80))
			y |= (int64_t)(~(uint64_t)0 << (8 * bn));
		return x < y ? -1 : x > y;
	}
	case ST_TYPE_STRING:
	case ST_TYPE_BINARY:
	case ST_TYPE_FIXED:
	case ST_TYPE_UUID: {
		int c = memcmp(a, b, an < bn ? an : bn);

		return c != 0 ? c : an < bn ? -1 : an > bn;
	}
	default: return 0;
	}
}

static bool prunable(const struct st_type *t)
{
	return t->id != ST_TYPE_DECIMAL && !st_type_is_floating(t);
}

static int cmp_sval(const void *a, const void *b, void *type)
{
	const struct sval *x = a, *y = b;

	return ser_cmp(type, x->p, x->n, y->p, y->n);
}

/* Notes the key columns' values of a batch row, for pruning. */
static int note_values(struct st_upsert *u, const struct st_value *row)
{
	for (size_t k = 0; k < u->nk; k++) {
		struct keycol *c = &u->keys[k];
		struct st_buf b;

		if (row[u->pos[k]].null || !prunable(&c->type))
			continue;
		if (c->n == c->cap) {
			size_t cap = c->cap ? c->cap * 2 : 256;
			struct sval *v = realloc(c->vals, cap * sizeof(*v));

			if (v == NULL)
				return -1;
			c->vals = v;
			c->cap = cap;
		}
		st_buf_init(&b, NULL);
		if (st_value_serialize(&c->type, &row[u->pos[k]], &b) != 0 ||
		    st_buf_append(&b, "", 1) != 0) {
			st_buf_free(&b);
			return -1;
		}
		c->vals[c->n].p = b.data;
		c->vals[c->n].n = b.len - 1;
		c->n++;
	}
	return 0;
}

static void sort_values(struct st_upsert *u)
{
	for (size_t k = 0; k < u->nk; k++) {
		struct keycol *c = &u->keys[k];
		size_t w = 0;

		qsort_r(c->vals, c->n, sizeof(*c->vals), cmp_sval, &c->type);
		for (size_t i = 0; i < c->n; i++) {
			if (w > 0 && ser_cmp(&c->type, c->vals[w - 1].p, c->vals[w - 1].n,
			                     c->vals[i].p, c->vals[i].n) == 0) {
				free(c->vals[i].p);
				continue;
			}
			c->vals[w++] = c->vals[i];
		}
		c->n = w;
	}
}

/* ---- the batch's own rows: the last of a key wins ---- */

/* The place in the input of row pos of batch file i: the ingest's record
 * of it (a partitioned table's files interleave the input's rows), else
 * its place in the files' order (one file at a time: the input's order). */
static int64_t input_ordinal(const struct st_upsert *u, size_t i, int64_t pos)
{
	const struct st_ingest_file *f = &u->res->files[i];

	return f->order != NULL && pos < f->m.record_count ? f->order[pos] : u->base[i] + pos;
}

/* The map's value for row pos of batch file i: its input ordinal and its
 * file, so that a loser's file can be found. */
static json_int_t row_tag(const struct st_upsert *u, size_t i, int64_t pos)
{
	return (json_int_t)input_ordinal(u, i, pos) * (json_int_t)u->res->n_files + (json_int_t)i;
}

/* Whether the cdc field's value v (of type t) says delete. */
static bool is_delete(const struct st_type *t, const struct st_value *v)
{
	if (v->null)
		return false;
	if (t->id == ST_TYPE_BOOLEAN)
		return v->v.b;
	return v->v.bin.len > 0 && (v->v.bin.p[0] == 'D' || v->v.bin.p[0] == 'd');
}

static int batch_row(void *arg, int64_t pos, const struct st_value *row, struct fl_err *err)
{
	struct st_upsert *u = arg;
	const char *k = key_of(u, row);
	json_int_t mine = row_tag(u, u->cur_file, pos), nf = (json_int_t)u->res->n_files;
	bool del = u->cdc && is_delete(&u->want[u->nk].type, &row[u->nk]);
	json_t *old;

	u->ordinal++;
	if (k == NULL || note_values(u, row) != 0)
		return nomem(err);
	if (del) /* never written, whichever row of its key is last */
		u->losers[u->cur_file]++;
	old = json_object_get(u->map, k);
	if (old != NULL) {
		json_int_t theirs = json_integer_value(old);

		if (theirs / 2 > mine) { /* a row later in the input is noted already */
			if (!del)
				u->losers[u->cur_file]++;
			return 0;
		}
		if (theirs % 2 == 0)
			u->losers[theirs / 2 % nf]++;
	}
	if (json_object_set_new(u->map, k, json_integer(mine * 2 + del)) != 0)
		return nomem(err);
	return 0;
}

/* Rewriting a batch file: keep the rows that are their key's last and no
 * delete. */
static int keep_winner(void *arg, int64_t pos, const struct st_value *row, bool *keep,
                       struct fl_err *err)
{
	struct st_upsert *u = arg;
	const char *k = key_of(u, row);

	if (k == NULL)
		return nomem(err);
	*keep = json_integer_value(json_object_get(u->map, k)) == row_tag(u, u->cur_file, pos) * 2;
	return 0;
}

/* Rewriting a table file: keep the rows that no delete removed and whose
 * key the batch does not hold. */
static int keep_unreplaced(void *arg, int64_t pos, const struct st_value *row, bool *keep,
                           struct fl_err *err)
{
	struct st_upsert *u = arg;
	const char *k;
	const json_t *v;

	if (st_posset_has(&u->gone, pos) || st_eqdeletes_match(&u->eq, row, u->cur_seq)) {
		u->cur_deleted++;
		*keep = false;
		return 0;
	}
	k = key_of(u, row);
	if (k == NULL)
		return nomem(err);
	v = json_object_get(u->map, k);
	*keep = v == NULL;
	if (v != NULL && json_integer_value(v) % 2 == 1)
		u->cur_keydel++;
	else if (v != NULL && u->cur_ids != NULL && !row[u->ncols].null) {
		/* Replaced: the batch's row of this key takes its _row_id. */
		const json_t *had = json_object_get(u->cur_ids, k);

		if ((had == NULL || json_integer_value(had) > row[u->ncols].v.l) &&
		    json_object_set_new(u->cur_ids, k, json_integer(row[u->ncols].v.l)) != 0)
			return nomem(err);
	}
	return 0;
}

/* Writing a batch file again with the _row_id of the table rows its rows
 * replace. */
static int carried_id(void *arg, int64_t pos, const struct st_value *row, struct st_value *id,
                      struct fl_err *err)
{
	struct st_upsert *u = arg;
	const char *k = key_of(u, row);
	const json_t *v;

	(void)pos;
	if (k == NULL)
		return nomem(err);
	v = json_object_get(u->rid, k);
	if (v != NULL) {
		id->null = false;
		id->v.l = json_integer_value(v);
	}
	return 0;
}

static int match_row(void *arg, int64_t pos, const struct st_value *row, struct fl_err *err)
{
	struct st_upsert *u = arg;
	const char *k = key_of(u, row);

	(void)pos;
	if (k == NULL)
		return nomem(err);
	if (json_object_get(u->map, k) != NULL)
		u->scan_match = true;
	return 0;
}

static void rewrite_opts(struct st_upsert *u, const struct st_name_mapping *mapping,
                         struct st_rewrite_opts *ro)
{
	memset(ro, 0, sizeof(*ro));
	ro->io = u->o.io;
	ro->schema = u->schema;
	ro->mapping = mapping;
	ro->data_uri = u->o.data_uri;
	ro->tag = "upsert";
	ro->codec = u->o.codec;
	ro->compression_level = u->o.compression_level;
	ro->target_file_bytes = u->o.target_file_bytes;
	ro->arg = u;
}

static int setup_keys(struct st_upsert *u, struct fl_err *err)
{
	int32_t ids[MAX_KEYS];
	const json_t *fields = json_object_get(u->schema, "fields"), *f = NULL;
	size_t n, i;

	if (st_upsert_key_ids(u->schema, ids, MAX_KEYS, &n, err) != 0)
		return -1;
	if (n == 0)
		return fl_err_set(err, FL_ERR_BAD_REQUEST,
		                  "upsert needs a key: the table's schema has no identifier fields "
		                  "(identifier-field-ids)");
	for (size_t k = 0; k < n; k++) {
		struct keycol *c = &u->keys[k];
		const char *type = NULL;

		json_array_foreach(fields, i, f)
		{
			if (json_integer_value(json_object_get(f, "id")) == ids[k])
				break;
		}
		if (f != NULL && i < json_array_size(fields))
			type = json_string_value(json_object_get(f, "type"));
		if (type == NULL)
			return fl_err_set(
			        err, FL_ERR_BAD_REQUEST,
			        "identifier field %d is not a primitive column of the schema",
			        (int)ids[k]);
		c->id = ids[k];
		c->idx = i;
		c->name = json_string_value(json_object_get(f, "name"));
		if (st_type_parse(type, &c->type, err) != 0)
			return -1;
		u->key_pos[k] = i;
		u->proj_pos[k] = k;
		u->want[k].field_id = c->id;
		u->want[k].type = c->type;
	}
	u->nk = n;
	return 0;
}

int st_upsert_cdc_field(const json_t *schema, const char *cdc_field, const json_t **field,
                        struct fl_err *err)
{
	const json_t *fields = json_object_get(schema, "fields"), *f = NULL, *id;
	const char *type;
	size_t i;

	json_array_foreach(fields, i, f)
	{
		const char *fn = json_string_value(json_object_get(f, "name"));

		if (fn != NULL && strcmp(fn, cdc_field) == 0)
			break;
	}
	if (i == json_array_size(fields))
		return fl_err_set(err, FL_ERR_BAD_REQUEST,
		                  "cdc field %.200s is not a top-level column of the table",
		                  cdc_field);
	json_array_foreach(json_object_get(schema, "identifier-field-ids"), i, id)
	{
		if (json_equal(id, json_object_get(f, "id")))
			return fl_err_set(
			        err, FL_ERR_BAD_REQUEST,
			        "cdc field %.200s is a key column; it must be another one",
			        cdc_field);
	}
	type = json_string_value(json_object_get(f, "type"));
	if (type == NULL || (strcmp(type, "string") != 0 && strcmp(type, "boolean") != 0))
		return fl_err_set(err, FL_ERR_BAD_REQUEST,
		                  "cdc field %.200s must be a string or boolean column", cdc_field);
	*field = f;
	return 0;
}

/* The cdc field: want[nk], read beside the keys in the batch's scan. */
static int setup_cdc(struct st_upsert *u, struct fl_err *err)
{
	const json_t *f;

	if (st_upsert_cdc_field(u->schema, u->o.cdc_field, &f, err) != 0)
		return -1;
	u->want[u->nk].field_id = (int32_t)json_integer_value(json_object_get(f, "id"));
	if (st_type_parse(json_string_value(json_object_get(f, "type")), &u->want[u->nk].type,
	                  err) != 0)
		return -1;
	u->cdc = true;
	return 0;
}

/* Batch file k as open leaves the batch (k < res n: res file k, which a
 * file with a replaced row no longer is: bout holds its rewrite; then bout
 * file k - res n): its uri, metrics (m may be NULL) and res origin; false
 * for a res file that was rewritten. */
static bool batch_file(const struct st_upsert *u, size_t k, const char **uri,
                       const struct st_parquet_metrics **m, size_t *from)
{
	size_t nf = u->res->n_files;
	const struct st_parquet_metrics *mm;

	if (k < nf && u->losers[k] > 0)
		return false;
	*uri = k < nf ? u->res->files[k].uri : u->bout.files[k - nf].uri;
	mm = k < nf ? &u->res->files[k].m : &u->bout.files[k - nf].m;
	*from = k < nf ? k : u->bout_from[k - nf];
	if (m != NULL)
		*m = mm;
	return true;
}

void st_upsert_finish(struct st_upsert *u, bool committed, bool keep)
{
	if (u == NULL)
		return;
	for (size_t i = 0; i < u->ncache; i++) {
		if (!keep && (!committed || !u->cache[i].used))
			st_rewrite_out_discard(u->o.io, &u->cache[i].out);
		st_rewrite_out_free(&u->cache[i].out);
		free(u->cache[i].dels);
		json_decref(u->cache[i].ids);
	}
	/* The batch's files whose lineage copies the snapshot names instead. */
	if (!keep && committed && u->lout.n > 0) {
		struct fl_err ignored;

		const char *uri;
		size_t from;

		for (size_t k = 0; k < u->res->n_files + u->bout.n; k++)
			if (u->lin[k] && batch_file(u, k, &uri, NULL, &from) &&
			    st_io_delete(u->o.io, uri, &ignored) != 0)
				ignored.kind = FL_ERR_NONE;
	}
	if (!keep && !committed)
		st_rewrite_out_discard(u->o.io, &u->lout);
	st_rewrite_out_free(&u->lout);
	free(u->lout_from);
	free(u->lin);
	json_decref(u->rid);
	json_decref(u->dels);
	json_decref(u->delm);
	st_eqdeletes_free(&u->eq);
	st_posset_free(&u->gone);
	free(u->cols);
	free(u->cwant);
	if (!keep && !committed)
		st_rewrite_out_discard(u->o.io, &u->bout);
	st_rewrite_out_free(&u->bout);
	for (size_t k = 0; k < u->nk; k++) {
		for (size_t i = 0; i < u->keys[k].n; i++)
			free(u->keys[k].vals[i].p);
		free(u->keys[k].vals);
	}
	free(u->cache);
	json_decref(u->cache_idx);
	json_decref(u->map);
	json_decref(u->schema);
	st_buf_free(&u->kb);
	free(u->hex);
	free(u->base);
	free(u->losers);
	free(u->bout_from);
	free(u->data_uri);
	free(u);
}

/* Writes batch file uri (of res file i) again with ro into out, and i as
 * the origin of each file it wrote into *from (out->n entries). */
static int rewrite_batch_file(const struct st_rewrite_opts *ro, const char *uri, size_t i,
                              struct st_rewrite_out *out, size_t **from, struct fl_err *err)
{
	size_t before = out->n;
	size_t *grown;

	if (st_rewrite_run(ro, uri, out, err) != 0)
		return -1;
	grown = realloc(*from, sizeof(*grown) * (out->n ? out->n : 1));
	if (grown == NULL)
		return nomem(err);
	*from = grown;
	for (size_t k = before; k < out->n; k++)
		grown[k] = i;
	return 0;
}

int st_upsert_open(const struct st_upsert_opts *o, const struct st_ingest_result *res,
                   struct st_upsert **out, struct fl_err *err)
{
	struct st_upsert *u = calloc(1, sizeof(*u));
	struct st_rewrite_opts ro;
	size_t nf = res->n_files;

	if (u == NULL)
		return nomem(err);
	u->o = *o;
	u->data_uri = strdup(o->data_uri);
	u->o.data_uri = u->data_uri;
	u->res = res;
	u->schema = json_incref((json_t *)o->schema);
	u->map = json_object();
	u->cache_idx = json_object();
	u->base = calloc(nf ? nf : 1, sizeof(*u->base));
	u->losers = calloc(nf ? nf : 1, sizeof(*u->losers));
	u->rid = json_object();
	st_buf_init(&u->kb, NULL);
	if (u->map == NULL || u->cache_idx == NULL || u->base == NULL || u->losers == NULL ||
	    u->data_uri == NULL || u->rid == NULL) {
		nomem(err);
		goto fail;
	}
	if (setup_keys(u, err) != 0 || (o->cdc_field != NULL && setup_cdc(u, err) != 0) ||
	    st_rewrite_columns(u->schema, &u->cols, &u->cwant, &u->ncols, err) != 0)
		goto fail;
	st_eqdeletes_init(&u->eq, u->cols, u->ncols, NULL);
	/* Every batch key, its last row winning. */
	u->pos = u->proj_pos;
	for (size_t i = 0; i < nf; i++) {
		u->base[i] = u->ordinal;
		u->cur_file = i;
		if (st_rewrite_scan(o->io, res->files[i].uri, NULL, u->want, u->nk + u->cdc,
		                    batch_row, u, err) != 0)
			goto fail;
	}
	sort_values(u);
	if (u->cdc) {
		const char *k;
		const json_t *v;

		json_object_foreach(u->map, k, v) u->st.deleted_keys += json_integer_value(v) % 2;
	}
	u->st.batch_rows = (int64_t)json_object_size(u->map) - u->st.deleted_keys;
	/* The batch's files holding replaced rows, written again without them. */
	rewrite_opts(u, NULL, &ro);
	ro.keep = keep_winner;
	u->pos = u->key_pos;
	for (size_t i = 0; i < nf; i++) {
		struct fl_err ignored;

		if (u->losers[i] == 0)
			continue;
		u->cur_file = i;
		if (rewrite_batch_file(&ro, res->files[i].uri, i, &u->bout, &u->bout_from, err) !=
		    0)
			goto fail;
		/* never committed: the rewrite replaces it */
		if (st_io_delete(o->io, res->files[i].uri, &ignored) != 0)
			ignored.kind = FL_ERR_NONE;
	}
	u->lin = calloc(nf + u->bout.n + 1, sizeof(*u->lin));
	if (u->lin == NULL) {
		nomem(err);
		goto fail;
	}
	*out = u;
	return 0;
fail:
	st_upsert_finish(u, false, false);
	return -1;
}

/* ---- the plan on the current state ---- */

/* The bound of field id in a manifest entry's map (decoded into b); false
 * when absent or undecodable (then it does not prune). */
static bool bound_of(const json_t *df, const char *map, int32_t id, struct st_buf *b)
{
	const json_t *kv;
	size_t i;
	struct fl_err ignored;

	json_array_foreach(json_object_get(df, map), i, kv)
	{
		const char *v = json_string_value(json_object_get(kv, "value"));

		if (json_integer_value(json_object_get(kv, "key")) != id || v == NULL)
			continue;
		st_buf_reset(b);
		return st_avro_base64_decode(v, strlen(v), b, &ignored) == 0;
	}
	return false;
}

/* Whether a data file may hold a batch key, by its key columns' bounds. */
static bool candidate(struct st_upsert *u, const json_t *df)
{
	struct st_buf lo, hi;
	bool may = true;

	st_buf_init(&lo, NULL);
	st_buf_init(&hi, NULL);
	for (size_t k = 0; k < u->nk && may; k++) {
		const struct keycol *c = &u->keys[k];
		bool hl, hh;
		size_t a = 0, z = c->n;

		if (!prunable(&c->type))
			continue;
		hl = bound_of(df, "lower_bounds", c->id, &lo);
		hh = bound_of(df, "upper_bounds", c->id, &hi);
		if (!hl && !hh)
			continue;
		/* the first batch value >= lower */
		while (hl && a < z) {
			size_t m = (a + z) / 2;

			if (ser_cmp(&c->type, c->vals[m].p, c->vals[m].n, lo.data, lo.len) < 0)
				a = m + 1;
			else
				z = m;
		}
		may = a < c->n &&
		      (!hh || ser_cmp(&c->type, c->vals[a].p, c->vals[a].n, hi.data, hi.len) <= 0);
	}
	st_buf_free(&lo);
	st_buf_free(&hi);
	return may;
}

/* The cache slot of path, created when new (*fresh says so). */
static struct cached *cache_of(struct st_upsert *u, const char *path, bool *fresh)
{
	json_t *i = json_object_get(u->cache_idx, path);
	struct cached *grown;

	*fresh = i == NULL;
	if (i != NULL)
		return &u->cache[json_integer_value(i)];
	grown = realloc(u->cache, sizeof(*grown) * (u->ncache + 1));
	if (grown == NULL)
		return NULL;
	u->cache = grown;
	memset(&grown[u->ncache], 0, sizeof(*grown));
	if (json_object_set_new(u->cache_idx, path, json_integer((json_int_t)u->ncache)) != 0)
		return NULL;
	return &u->cache[u->ncache++];
}

/* A live entry of a dropped manifest, with its partition tuple. */
struct carried {
	struct st_entry_copy c;
	struct st_value *partition;
};

/* What the snapshot writes for one partition spec: the current spec's
 * manifest adds the batch's files, and a file is rewritten in the spec it
 * was written for (its rows' partition tuple is that spec's). */
struct spec_plan {
	struct st_snapshot_table t; /* the table, with this spec */
	enum st_manifest_content content; /* data, or (dangling deletes) deletes */
	struct st_data_file *add;
	size_t nadd, capadd;
	struct carried *kept, *del;
	size_t nkept, ndel;
};

struct plan {
	struct spec_plan *s; /* s[0]: the current spec */
	size_t ns;
	json_t *held; /* the entries arrays the copies point into */
};

static int add_file(struct spec_plan *p, const struct st_data_file *df, struct fl_err *err)
{
	if (p->nadd == p->capadd) {
		size_t cap = p->capadd ? p->capadd * 2 : 16;
		struct st_data_file *g = realloc(p->add, cap * sizeof(*g));

		if (g == NULL)
			return nomem(err);
		p->add = g;
		p->capadd = cap;
	}
	p->add[p->nadd++] = *df;
	return 0;
}

static void carried_free(struct carried *c)
{
	st_entry_copy_free(&c->c);
	free(c->partition);
}

static void plan_free(struct plan *p)
{
	for (size_t k = 0; k < p->ns; k++) {
		struct spec_plan *sp = &p->s[k];

		for (size_t i = 0; i < sp->nkept; i++)
			carried_free(&sp->kept[i]);
		for (size_t i = 0; i < sp->ndel; i++)
			carried_free(&sp->del[i]);
		free(sp->kept);
		free(sp->del);
		free(sp->add);
	}
	free(p->s);
	json_decref(p->held);
}

/* The plan of the manifest of partition spec id and content (appended,
 * the table t with that spec of current, the first time); NULL with err
 * set. */
static struct spec_plan *spec_plan_of(struct plan *p, const struct st_snapshot_table *t,
                                      const json_t *current, json_int_t id,
                                      enum st_manifest_content content, struct fl_err *err)
{
	struct st_snapshot_table with;
	struct spec_plan *g;

	for (size_t k = 0; k < p->ns; k++) {
		if (p->s[k].t.spec_id == id && p->s[k].content == content)
			return &p->s[k];
	}
	if (!st_snapshot_table_with_spec(t, current, (int32_t)id, &with)) {
		fl_err_set(err, FL_ERR_BAD_REQUEST,
		           "upsert: a manifest names partition spec %" JSON_INTEGER_FORMAT
		           ", which the table's metadata lacks",
		           id);
		return NULL;
	}
	g = realloc(p->s, sizeof(*g) * (p->ns + 1));
	if (g == NULL) {
		nomem(err);
		return NULL;
	}
	p->s = g;
	g = &p->s[p->ns++];
	memset(g, 0, sizeof(*g));
	g->t = with;
	g->content = content;
	return g;
}

/* Reads one manifest of the current list; *drop = it holds a batch key. */
static int scan_manifest(struct st_upsert *u, const struct st_name_mapping *mapping,
                         const json_t *mf, json_t **entries, bool *drop, struct fl_err *err)
{
	const char *uri = json_string_value(json_object_get(mf, "manifest_path"));
	const json_t *e;
	size_t i;

	*drop = false;
	if (uri == NULL)
		return fl_err_set(err, FL_ERR_BAD_REQUEST,
		                  "a manifest list entry lacks manifest_path");
	if (st_avro_read_all(u->o.io, uri, MAX_MANIFEST_READ, NULL, entries, err) != 0)
		return -1;
	json_array_foreach(*entries, i, e)
	{
		const json_t *df = json_object_get(e, "data_file");
		const char *path = json_string_value(json_object_get(df, "file_path"));
		struct cached *c;
		bool fresh;

		if (json_integer_value(json_object_get(e, "status")) == 2)
			continue;
		if (json_integer_value(json_object_get(df, "content")) != 0)
			return fl_err_set(err, FL_ERR_BAD_REQUEST,
			                  "manifest %.200s: a data manifest holds a delete file",
			                  uri);
		if (path == NULL)
			return fl_err_set(err, FL_ERR_BAD_REQUEST,
			                  "manifest %.200s: entry %zu lacks file_path", uri, i);
		if (!candidate(u, df)) {
			u->st.files_pruned++;
			continue;
		}
		c = cache_of(u, path, &fresh);
		if (c == NULL)
			return nomem(err);
		if (fresh) {
			u->scan_match = false;
			u->pos = u->proj_pos;
			if (st_rewrite_scan(u->o.io, path, mapping, u->want, u->nk, match_row, u,
			                    err) != 0)
				return -1;
			c->match = u->scan_match;
			u->st.files_read++;
		}
		*drop = *drop || c->match;
	}
	return 0;
}

/* An entry's long field, else the manifest list record's. */
static json_int_t or_else(const json_t *v, const json_t *dflt)
{
	return json_is_integer(v) ? json_integer_value(v) : json_integer_value(dflt);
}

/* The partition tuple of a manifest entry as JSON text, to compare. */
static json_t *part_text(const json_t *df)
{
	char *t = json_dumps(json_object_get(df, "partition"),
	                     JSON_COMPACT | JSON_SORT_KEYS | JSON_ENCODE_ANY);
	json_t *v = t != NULL ? json_string(t) : NULL;

	free(t);
	return v;
}

/* The one data file a position delete file references when its entry does
 * not name it (a v2 writer's): equal lower and upper bounds of its
 * file_path column, as Iceberg Java reads them; NULL (also for a bound
 * that is no UTF-8 text) when it may reference several. */
static json_t *bounds_ref(const json_t *df)
{
	struct st_buf lo, hi;
	json_t *ref = NULL;

	st_buf_init(&lo, NULL);
	st_buf_init(&hi, NULL);
	if (bound_of(df, "lower_bounds", ST_FIELD_DELETE_FILE_PATH, &lo) &&
	    bound_of(df, "upper_bounds", ST_FIELD_DELETE_FILE_PATH, &hi) && lo.len == hi.len &&
	    lo.len > 0 && memcmp(lo.data, hi.data, lo.len) == 0)
		ref = json_stringn((const char *)lo.data, lo.len);
	st_buf_free(&lo);
	st_buf_free(&hi);
	return ref;
}

/* Collects the live delete files of one delete manifest into u->dels. */
static int collect_deletes(struct st_upsert *u, const json_t *mf, struct fl_err *err)
{
	const char *uri = json_string_value(json_object_get(mf, "manifest_path"));
	json_t *entries = NULL, *e;
	size_t i, m;
	int rc = -1;

	if (uri == NULL)
		return fl_err_set(err, FL_ERR_BAD_REQUEST,
		                  "a manifest list entry lacks manifest_path");
	if (st_avro_read_all(u->o.io, uri, MAX_MANIFEST_READ, NULL, &entries, err) != 0)
		return -1;
	m = json_array_size(u->delm);
	if (json_array_append_new(u->delm, json_pack("{s:O, s:O}", "mf", mf, "entries", entries)) !=
	    0) {
		nomem(err);
		goto out;
	}
	json_array_foreach(entries, i, e)
	{
		const json_t *df = json_object_get(e, "data_file");
		const char *path = json_string_value(json_object_get(df, "file_path"));
		const char *fmt = json_string_value(json_object_get(df, "file_format"));
		json_int_t content = json_integer_value(json_object_get(df, "content"));
		json_t *ref, *d;

		if (json_integer_value(json_object_get(e, "status")) == 2)
			continue;
		if (path == NULL || (content != 1 && content != 2)) {
			fl_err_set(err, FL_ERR_BAD_REQUEST,
			           "manifest %.200s: entry %zu is not a delete file with a path",
			           uri, i);
			goto out;
		}
		ref = json_incref(json_object_get(df, "referenced_data_file"));
		if (!json_is_string(ref) && content == 1) {
			json_decref(ref);
			ref = bounds_ref(df);
		}
		d = json_pack("{s:I, s:s, s:I, s:I, s:o, s:o?, s:O?, s:b, s:O?, s:O?, s:I, s:I}",
		              "content", content, "path", path, "seq",
		              or_else(json_object_get(e, "sequence_number"),
		                      json_object_get(mf, "sequence_number")),
		              "spec", json_integer_value(json_object_get(mf, "partition_spec_id")),
		              "part", part_text(df), "ref", ref, "ids",
		              json_object_get(df, "equality_ids"), "dv",
		              (fmt != NULL && strcasecmp(fmt, "puffin") == 0) ||
		                      json_is_integer(json_object_get(df, "content_offset")),
		              "off", json_object_get(df, "content_offset"), "len",
		              json_object_get(df, "content_size_in_bytes"), "m", (json_int_t)m, "e",
		              (json_int_t)i);
		if (d == NULL || json_array_append_new(u->dels, d) != 0) {
			nomem(err);
			goto out;
		}
	}
	rc = 0;
out:
	json_decref(entries);
	return rc;
}

/* Whether partition spec id of the metadata has no fields. */
static bool unpartitioned(const json_t *current, json_int_t id)
{
	const json_t *spec =
	        fl_json_find_int(json_object_get(current, "partition-specs"), "spec-id", id);

	return spec != NULL && json_array_size(json_object_get(spec, "fields")) == 0;
}

/* Reads the deletes that apply to data file e of manifest mf into u->gone
 * and u->eq (st_pos_delete_applies, st_eq_delete_applies), and their paths
 * into *sig, one per line (NULL: none). */
static int read_deletes(struct st_upsert *u, const json_t *current, const json_t *mf,
                        const json_t *e, char **sig, struct fl_err *err)
{
	const json_t *df = json_object_get(e, "data_file"), *d;
	const char *path = json_string_value(json_object_get(df, "file_path"));
	json_int_t seq = or_else(json_object_get(e, "sequence_number"),
	                         json_object_get(mf, "sequence_number"));
	json_int_t spec = json_integer_value(json_object_get(mf, "partition_spec_id"));
	json_t *part = part_text(df);
	struct st_buf names;
	size_t i;
	int rc = -1;

	*sig = NULL;
	st_buf_init(&names, NULL);
	st_posset_free(&u->gone);
	st_posset_init(&u->gone, json_integer_value(json_object_get(df, "record_count")), NULL);
	st_eqdeletes_free(&u->eq);
	u->cur_seq = seq;
	if (part == NULL) {
		nomem(err);
		goto out;
	}
	json_array_foreach(u->dels, i, d)
	{
		const char *uri = json_string_value(json_object_get(d, "path"));
		const char *ref = json_string_value(json_object_get(d, "ref"));
		json_int_t dseq = json_integer_value(json_object_get(d, "seq"));
		json_int_t dspec = json_integer_value(json_object_get(d, "spec"));
		bool same = dspec == spec && json_equal(json_object_get(d, "part"), part);

		if (json_integer_value(json_object_get(d, "content")) == 1) {
			struct st_parquet_source src;
			struct st_parquet_io_ctx ictx;

			if (!st_pos_delete_applies(same, seq, dseq) ||
			    (ref != NULL && strcmp(ref, path) != 0))
				continue;
			if (json_is_true(json_object_get(d, "dv"))) {
				/* A vector names its file (referenced_data_file). */
				if (ref == NULL)
					continue;
				if (st_dv_read(u->o.io, uri,
				               json_integer_value(json_object_get(d, "off")),
				               json_integer_value(json_object_get(d, "len")), 0,
				               &u->gone, err) != 0)
					goto out;
			} else if (st_parquet_source_io(&src, &ictx, u->o.io, uri, err) != 0 ||
			           st_pos_deletes_for(&src, NULL, path, &u->gone, err) != 0) {
				fl_err_prefix(err, "position delete file %.200s", uri);
				goto out;
			}
		} else {
			const json_t *ids = json_object_get(d, "ids"), *v;
			int32_t id[ST_EQSET_MAX_FIELDS];
			size_t k;

			if (!st_eq_delete_applies(same, unpartitioned(current, dspec), seq, dseq))
				continue;
			json_array_foreach(ids, k, v)
			{
				if (k < ST_EQSET_MAX_FIELDS)
					id[k] = (int32_t)json_integer_value(v);
			}
			if (st_eqdeletes_add(&u->eq, u->o.io, uri, id, json_array_size(ids), dseq,
			                     err) != 0)
				goto out;
		}
		if (st_buf_append(&names, uri, strlen(uri)) != 0 ||
		    st_buf_append(&names, "\n", 1) != 0) {
			nomem(err);
			goto out;
		}
	}
	st_posset_finish(&u->gone);
	if (names.len > 0) {
		*sig = strndup((const char *)names.data, names.len);
		if (*sig == NULL) {
			nomem(err);
			goto out;
		}
	}
	rc = 0;
out:
	json_decref(part);
	st_buf_free(&names);
	return rc;
}

/* Writes the survivors of table file e into c->out: once across attempts,
 * again when the deletes that apply to it changed meanwhile (a delete
 * committed since the last attempt).  On v3 they keep their lineage (the
 * file's first_row_id, inherited or not, is lin->first_row_id). */
static int rewrite_table_file(struct st_upsert *u, const json_t *current,
                              const struct st_name_mapping *mapping, const json_t *mf,
                              const json_t *e, const struct st_data_file *lin, struct cached *c,
                              struct fl_err *err)
{
	const char *path =
	        json_string_value(json_object_get(json_object_get(e, "data_file"), "file_path"));
	struct st_parquet_reader_opts ro_eq = {.name_mapping = mapping};
	struct st_rewrite_opts ro;
	char *sig = NULL;
	int rc = -1;

	u->eq.ropts = &ro_eq;
	if (read_deletes(u, current, mf, e, &sig, err) != 0)
		goto out;
	if (c->rewritten && (sig == NULL) == (c->dels == NULL) &&
	    (sig == NULL || strcmp(sig, c->dels) == 0)) {
		rc = 0;
		goto out;
	}
	if (c->rewritten) {
		st_rewrite_out_discard(u->o.io, &c->out);
		memset(&c->out, 0, sizeof(c->out));
		c->rewritten = false;
	}
	rewrite_opts(u, mapping, &ro);
	ro.keep = keep_unreplaced;
	ro.lineage = u->o.format_version >= 3;
	ro.has_first_row_id = lin->has_first_row_id;
	ro.first_row_id = lin->first_row_id;
	ro.data_seq = u->cur_seq;
	u->pos = u->key_pos;
	u->cur_deleted = 0;
	u->cur_keydel = 0;
	json_decref(c->ids);
	c->ids = NULL;
	if (ro.lineage && (c->ids = json_object()) == NULL) {
		nomem(err);
		goto out;
	}
	u->cur_ids = c->ids;
	if (st_rewrite_run(&ro, path, &c->out, err) != 0)
		goto out;
	c->rewritten = true;
	c->deleted = u->cur_deleted;
	c->keydel = u->cur_keydel;
	free(c->dels);
	c->dels = sig;
	sig = NULL;
	rc = 0;
out:
	free(sig);
	st_posset_free(&u->gone);
	st_eqdeletes_free(&u->eq);
	u->eq.ropts = NULL;
	u->cur_ids = NULL;
	return rc;
}

/* Sorts the live entries of a dropped manifest into kept and rewritten,
 * in the plan of the manifest's partition spec. */
static int split_manifest(struct st_upsert *u, const struct st_snapshot_table *t0,
                          const json_t *current, const struct st_name_mapping *mapping,
                          const json_t *mf, const json_t *entries, struct plan *plan,
                          struct fl_err *err)
{
	size_t n = json_array_size(entries), i;
	const json_t *e, *mfrid = json_object_get(mf, "first_row_id");
	json_int_t frid_next = json_integer_value(mfrid);
	struct spec_plan *p = spec_plan_of(
	        plan, t0, current, json_integer_value(json_object_get(mf, "partition_spec_id")),
	        ST_MANIFEST_DATA, err);
	const struct st_snapshot_table *t = p != NULL ? &p->t : NULL;
	struct carried *g;

	if (p == NULL)
		return -1;
	g = realloc(p->kept, sizeof(*g) * (p->nkept + n + 1));
	if (g == NULL)
		return nomem(err);
	p->kept = g;
	g = realloc(p->del, sizeof(*g) * (p->ndel + n + 1));
	if (g == NULL)
		return nomem(err);
	p->del = g;
	json_array_foreach(entries, i, e)
	{
		const char *path = json_string_value(
		        json_object_get(json_object_get(e, "data_file"), "file_path"));
		json_t *ci = json_object_get(u->cache_idx, path);
		struct cached *c = ci ? &u->cache[json_integer_value(ci)] : NULL;
		const json_t *edf = json_object_get(e, "data_file");
		const json_t *frid = json_object_get(edf, "first_row_id");
		struct carried *ec;
		size_t n_part;
		bool has_frid = json_is_integer(frid) || json_is_integer(mfrid);
		json_int_t my_frid = json_is_integer(frid) ? json_integer_value(frid) : frid_next;

		/* Spec "First Row ID Inheritance": a null first_row_id is the
		 * manifest's plus the records of the files before it that had
		 * none (as compaction counts them). */
		if (!json_is_integer(frid) && json_is_integer(mfrid))
			frid_next += json_integer_value(json_object_get(edf, "record_count"));
		if (json_integer_value(json_object_get(e, "status")) == 2)
			continue;
		ec = c != NULL && c->match ? &p->del[p->ndel++] : &p->kept[p->nkept++];
		memset(ec, 0, sizeof(*ec));
		if (st_entry_copy_from_json(e, mf, NULL, &ec->c, err) != 0 ||
		    st_snapshot_partition_parse(
		            t, json_object_get(json_object_get(e, "data_file"), "partition"),
		            &ec->partition, &n_part, err) != 0)
			return -1;
		ec->c.file.partition = ec->partition;
		if (t->format_version >= 3) {
			ec->c.file.has_first_row_id = has_frid;
			ec->c.file.first_row_id = has_frid ? my_frid : 0;
		}
		if (c == NULL || !c->match)
			continue;
		if (rewrite_table_file(u, current, mapping, mf, e, &ec->c.file, c, err) != 0)
			return -1;
		c->used = true;
		u->st.files_rewritten++;
		u->st.rows_deleted += c->deleted;
		u->st.replaced_rows += c->out.rows_read - c->out.rows_kept - c->deleted - c->keydel;
		u->st.key_deleted_rows += c->keydel;
		for (size_t k = 0; k < c->out.n; k++) {
			struct st_data_file df = {0};

			st_parquet_metrics_to_data_file(&c->out.files[k].m, &df);
			df.file_path = c->out.files[k].uri;
			df.partition = ec->partition;
			if (add_file(p, &df, err) != 0)
				return -1;
		}
	}
	return 0;
}

/* The _row_id of every table row the plan replaces goes to the batch row
 * that replaces it (v3): the batch's files holding such rows are written
 * again with it (the rest of their rows inherit theirs).  A plan after a
 * lost race that finds the same ids keeps the copies it has. */
static int carry_row_ids(struct st_upsert *u, struct fl_err *err)
{
	size_t nf = u->res->n_files, nb = nf + u->bout.n;
	struct st_rewrite_opts ro;
	const char *k, *uri;
	const json_t *v;
	json_t *rid = json_object();
	bool *need = NULL;
	size_t from;
	int rc = -1;

	if (rid == NULL)
		return nomem(err);
	for (size_t i = 0; i < u->ncache; i++) {
		if (!u->cache[i].used || u->cache[i].ids == NULL)
			continue;
		json_object_foreach(u->cache[i].ids, k, v)
		{
			const json_t *had = json_object_get(rid, k);

			if ((had == NULL || json_integer_value(had) > json_integer_value(v)) &&
			    json_object_set(rid, k, (json_t *)v) != 0)
				goto nomem;
		}
	}
	if (json_equal(rid, u->rid)) {
		json_decref(rid);
		return 0;
	}
	st_rewrite_out_discard(u->o.io, &u->lout);
	memset(u->lin, 0, sizeof(*u->lin) * nb);
	json_object_clear(u->rid);
	need = calloc(nf + 1, sizeof(*need));
	if (need == NULL)
		goto nomem;
	json_object_foreach(rid, k, v)
	{
		json_int_t tag = json_integer_value(json_object_get(u->map, k));

		need[tag / 2 % (json_int_t)nf] = true;
	}
	rewrite_opts(u, NULL, &ro);
	ro.lineage = true;
	ro.row_id = carried_id;
	u->pos = u->key_pos;
	json_decref(u->rid);
	u->rid = rid; /* carried_id reads it */
	rid = NULL;
	for (size_t b = 0; b < nb; b++) {
		if (!batch_file(u, b, &uri, NULL, &from) || !need[from])
			continue;
		if (rewrite_batch_file(&ro, uri, from, &u->lout, &u->lout_from, err) != 0)
			goto out;
		u->lin[b] = true;
	}
	rc = 0;
	goto out;
nomem:
	nomem(err);
out:
	if (rc != 0 && u->rid != NULL) { /* no copy holds the ids */
		st_rewrite_out_discard(u->o.io, &u->lout);
		memset(u->lin, 0, sizeof(*u->lin) * nb);
		json_object_clear(u->rid);
	}
	json_decref(rid);
	free(need);
	return rc;
}

/* The batch's files in the current spec's plan, before the files it
 * already holds (the rewrites of table files). */
static int add_batch_files(struct st_upsert *u, struct spec_plan *p, struct fl_err *err)
{
	size_t had = p->nadd, nb = u->res->n_files + u->bout.n;
	struct st_data_file *all;

	for (size_t i = 0; i < nb + u->lout.n; i++) {
		const struct st_parquet_metrics *m;
		struct st_data_file df = {0};
		const char *uri;
		size_t from;

		if (i < nb && (u->lin[i] || !batch_file(u, i, &uri, &m, &from)))
			continue;
		if (i >= nb) {
			uri = u->lout.files[i - nb].uri;
			m = &u->lout.files[i - nb].m;
			from = u->lout_from[i - nb];
		}
		st_parquet_metrics_to_data_file(m, &df);
		df.file_path = uri;
		df.partition = u->res->files[from].partition;
		if (add_file(p, &df, err) != 0)
			return -1;
	}
	if (had == 0 || had == p->nadd)
		return 0;
	/* batch files first, as before the table's rewrites */
	all = malloc(sizeof(*all) * p->nadd);
	if (all == NULL)
		return nomem(err);
	memcpy(all, p->add + had, sizeof(*all) * (p->nadd - had));
	memcpy(all + (p->nadd - had), p->add, sizeof(*all) * had);
	memcpy(p->add, all, sizeof(*all) * p->nadd);
	free(all);
	return 0;
}

/* The delete files that apply to one data file only (a deletion vector, a
 * position delete file with referenced_data_file) whose file the plan
 * rewrites: its copy has them applied, so they leave with it, as DELETED
 * entries of a delete manifest per spec that carries the other live
 * entries of their manifests (EXISTING); those manifests join dropped. */
static int drop_dangling(struct st_upsert *u, const struct st_snapshot_table *t,
                         const json_t *current, struct plan *plan, json_t *dropped,
                         struct fl_err *err)
{
	json_t *gone = json_object(); /* manifest index -> {entry index: true} */
	const json_t *d, *v;
	size_t i, m;
	char key[24];
	int rc = -1;

	if (gone == NULL)
		return nomem(err);
	json_array_foreach(u->dels, i, d)
	{
		const char *ref = json_string_value(json_object_get(d, "ref"));
		const json_t *ci = ref != NULL ? json_object_get(u->cache_idx, ref) : NULL;
		json_t *es;

		if (ci == NULL || !u->cache[json_integer_value(ci)].used)
			continue;
		snprintf(key, sizeof(key), "%" JSON_INTEGER_FORMAT,
		         json_integer_value(json_object_get(d, "m")));
		es = json_object_get(gone, key);
		if (es == NULL && json_object_set_new(gone, key, es = json_object()) != 0)
			goto nomem;
		snprintf(key, sizeof(key), "%" JSON_INTEGER_FORMAT,
		         json_integer_value(json_object_get(d, "e")));
		if (json_object_set_new(es, key, json_true()) != 0)
			goto nomem;
	}
	json_array_foreach(u->delm, m, v)
	{
		const json_t *mf = json_object_get(v, "mf"),
		             *entries = json_object_get(v, "entries"), *e, *es;
		struct spec_plan *p;
		struct carried *g;
		size_t n = json_array_size(entries), k;

		snprintf(key, sizeof(key), "%zu", m);
		es = json_object_get(gone, key);
		if (es == NULL)
			continue;
		p = spec_plan_of(plan, t, current,
		                 json_integer_value(json_object_get(mf, "partition_spec_id")),
		                 ST_MANIFEST_DELETES, err);
		if (p == NULL)
			goto out;
		g = realloc(p->kept, sizeof(*g) * (p->nkept + n + 1));
		if (g == NULL)
			goto nomem;
		p->kept = g;
		g = realloc(p->del, sizeof(*g) * (p->ndel + n + 1));
		if (g == NULL)
			goto nomem;
		p->del = g;
		json_array_foreach(entries, k, e)
		{
			struct carried *ec;
			size_t n_part;

			if (json_integer_value(json_object_get(e, "status")) == 2)
				continue;
			snprintf(key, sizeof(key), "%zu", k);
			ec = json_object_get(es, key) != NULL ? &p->del[p->ndel++]
			                                      : &p->kept[p->nkept++];
			memset(ec, 0, sizeof(*ec));
			if (st_entry_copy_from_json(e, mf, NULL, &ec->c, err) != 0 ||
			    st_snapshot_partition_parse(
			            &p->t,
			            json_object_get(json_object_get(e, "data_file"), "partition"),
			            &ec->partition, &n_part, err) != 0)
				goto out;
			ec->c.file.partition = ec->partition;
		}
		u->st.dangling_deletes += (int64_t)json_object_size(es);
		if (json_array_append(dropped, json_object_get(mf, "manifest_path")) != 0)
			goto nomem;
	}
	rc = 0;
	goto out;
nomem:
	nomem(err);
out:
	json_decref(gone);
	return rc;
}

/* Writes a manifest per spec plan into *out (n = plan->ns, in order);
 * none is left behind on failure. */
static int write_manifests(const struct plan *plan, int64_t snapshot_id,
                           struct st_snapshot_manifest **out, size_t *n, struct fl_err *err)
{
	size_t k, w = 0;

	for (k = 0; k < plan->ns; k++) {
		const struct spec_plan *p = &plan->s[k];
		struct st_manifest_entry *kept, *del;
		int rc;

		/* Only the current spec's can be empty: a batch of deletes
		 * that match no row of it. */
		if (p->nadd + p->nkept + p->ndel == 0)
			continue;
		kept = calloc(p->nkept + 1, sizeof(*kept));
		del = calloc(p->ndel + 1, sizeof(*del));
		if (kept == NULL || del == NULL) {
			free(kept);
			free(del);
			nomem(err);
			break;
		}
		/* The copies moved as the arrays grew: point them at their files now. */
		for (size_t i = 0; i < p->nkept; i++) {
			kept[i] = p->kept[i].c.entry;
			kept[i].file = &p->kept[i].c.file;
		}
		for (size_t i = 0; i < p->ndel; i++) {
			del[i] = p->del[i].c.entry;
			del[i].file = &p->del[i].c.file;
		}
		rc = st_snapshot_manifest_write_rewrite(&p->t, snapshot_id, p->content, p->add,
		                                        p->nadd, kept, p->nkept, del, p->ndel,
		                                        &out[w], err);
		free(kept);
		free(del);
		if (rc != 0)
			break;
		w++;
	}
	if (k == plan->ns) {
		*n = w;
		return 0;
	}
	while (w-- > 0) {
		struct fl_err ignored;

		if (st_io_delete(plan->s[0].t.io, out[w]->path, &ignored) != 0)
			ignored.kind = FL_ERR_NONE;
		st_snapshot_manifest_free(out[w]);
		out[w] = NULL;
	}
	return -1;
}

int st_upsert_plan(struct st_upsert *u, const struct st_snapshot_table *t, const json_t *current,
                   int64_t snapshot_id, struct st_snapshot_manifest ***manifests, size_t *n,
                   json_t **drop, struct fl_err *err)
{
	const json_t *cur = json_object_get(current, "current-snapshot-id"), *snap = NULL, *mf;
	const char *mtext = json_string_value(json_object_get(
	        json_object_get(current, "properties"), "schema.name-mapping.default"));
	struct st_name_mapping *mapping = NULL;
	struct plan p = {0};
	struct st_snapshot_manifest **out = NULL;
	json_t *list = NULL, *dropped = json_array();
	size_t i;
	int rc = -1;

	p.held = json_array();
	p.s = calloc(1, sizeof(*p.s));
	if (dropped == NULL || p.held == NULL || p.s == NULL) {
		nomem(err);
		goto out;
	}
	p.ns = 1;
	p.s[0].t = *t;
	{
		int64_t rows = u->st.batch_rows, keys = u->st.deleted_keys;

		memset(&u->st, 0, sizeof(u->st));
		u->st.batch_rows = rows;
		u->st.deleted_keys = keys;
	}
	for (i = 0; i < u->ncache; i++)
		u->cache[i].used = false;
	if (mtext != NULL && st_name_mapping_parse(mtext, strlen(mtext), &mapping, err) != 0) {
		fl_err_prefix(err, "schema.name-mapping.default");
		goto out;
	}
	if (json_is_integer(cur) && json_integer_value(cur) != -1)
		snap = fl_json_find_int(json_object_get(current, "snapshots"), "snapshot-id",
		                        json_integer_value(cur));
	if (snap != NULL) {
		const char *luri = json_string_value(json_object_get(snap, "manifest-list"));

		if (luri == NULL) {
			fl_err_set(err, FL_ERR_BAD_REQUEST,
			           "the current snapshot has no manifest-list");
			goto out;
		}
		if (st_avro_read_all(u->o.io, luri, MAX_MANIFEST_READ, NULL, &list, err) != 0)
			goto out;
	}
	/* The delete files first: a file rewritten must lose the rows they
	 * remove, or its copy (of a newer sequence number) would bring them
	 * back. */
	json_decref(u->dels);
	json_decref(u->delm);
	u->dels = json_array();
	u->delm = json_array();
	if (u->dels == NULL || u->delm == NULL) {
		nomem(err);
		goto out;
	}
	json_array_foreach(list, i, mf)
	{
		if (json_integer_value(json_object_get(mf, "content")) != 0 &&
		    collect_deletes(u, mf, err) != 0)
			goto out;
	}
	json_array_foreach(list, i, mf)
	{
		json_t *entries = NULL;
		bool d;

		if (json_integer_value(json_object_get(mf, "content")) != 0)
			continue;
		if (scan_manifest(u, mapping, mf, &entries, &d, err) != 0) {
			json_decref(entries);
			goto out;
		}
		if (json_array_append_new(p.held, entries) != 0) {
			nomem(err);
			goto out;
		}
		if (!d)
			continue;
		if (json_array_append_new(dropped, json_string(json_string_value(json_object_get(
		                                           mf, "manifest_path")))) != 0) {
			nomem(err);
			goto out;
		}
		if (split_manifest(u, t, current, mapping, mf, entries, &p, err) != 0)
			goto out;
	}
	if (carry_row_ids(u, err) != 0 || add_batch_files(u, &p.s[0], err) != 0 ||
	    drop_dangling(u, t, current, &p, dropped, err) != 0)
		goto out;
	out = calloc(p.ns, sizeof(*out));
	if (out == NULL) {
		nomem(err);
		goto out;
	}
	if (write_manifests(&p, snapshot_id, out, n, err) != 0)
		goto out;
	*manifests = out;
	out = NULL;
	*drop = dropped;
	dropped = NULL;
	rc = 0;
out:
	free(out);
	plan_free(&p);
	json_decref(list);
	json_decref(dropped);
	st_name_mapping_free(mapping);
	return rc;
}

void st_upsert_stats(const struct st_upsert *u, struct st_upsert_stats *s)
{
	*s = u->st;
}
