/* reader.c - Avro object container file reader.
 *
 * Bytes consumed (Avro 1.11 specification, "Object Container Files"):
 *
 *   header:  'O' 'b' 'j' 0x01, the file metadata as an Avro map<bytes>, the
 *            16-byte sync marker
 *   blocks:  long object count, long byte size, that many (compressed)
 *            bytes, the sync marker again
 *
 * The schema in avro.schema is compiled once into a graph of `struct node`
 * (named types referenced later, or recursively, point at their one
 * definition), and each datum is decoded by walking it ("Binary Encoding").
 *
 * Invariants: every read goes through a `struct cur`, which never moves
 * past its end; `nodes` owns every node, so cycles need no special freeing;
 * once `failed` is set, `err` holds the first error and nothing more is
 * decoded; a datum creates at most max_values jansson values and nests at
 * most max_depth levels, so a hostile file cannot make the reader loop or
 * allocate without consuming input in proportion. */
#include "reader.h"

#include <inttypes.h>
#include <limits.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <zlib.h>

#include "io/io.h"
#include "json.h"

#define DEFAULT_DEPTH 64
#define DEFAULT_VALUES ((size_t)4 << 20)
#define DEFAULT_BLOCK_BYTES ((size_t)64 << 20)
#define MAX_META 1024 /* header entries */
#define MAX_NAMED 4096 /* named types in one schema */
#define EMPTY_DATUMS 4096 /* datums allowed beyond one per block byte (zero-size datums) */

enum kind {
	K_NULL,
	K_BOOLEAN,
	K_INT,
	K_LONG,
	K_FLOAT,
	K_DOUBLE,
	K_BYTES,
	K_STRING,
	K_RECORD,
	K_ENUM,
	K_ARRAY,
	K_MAP,
	K_UNION,
	K_FIXED,
};

struct node {
	enum kind kind;
	char *fullname; /* named types; owned */
	size_t n; /* record fields, enum symbols, union branches; fixed size */
	struct node **sub; /* record field types, union branches; [0] array items / map values */
	const char **names; /* record field names, enum symbols (borrowed from the schema JSON) */
};

struct meta {
	char *key;
	const uint8_t *value; /* into the caller's buffer */
	size_t len;
};

struct cur {
	const uint8_t *p;
	size_t len;
	size_t pos;
};

struct st_avro_reader {
	const struct st_alloc *alloc;
	int max_depth;
	size_t max_values;
	size_t max_block_bytes;
	struct cur file;
	struct meta *meta;
	size_t n_meta;
	json_t *schema_json;
	struct node **nodes; /* every node, for freeing */
	size_t n_nodes, cap_nodes;
	struct node **named; /* the named ones, to resolve references */
	size_t n_named, cap_named;
	struct node *root;
	bool deflate;
	uint8_t sync[16];
	struct cur block; /* the current block's (inflated) datums */
	bool in_block;
	int64_t block_left; /* datums not yet decoded in the current block */
	struct st_buf inflated;
	struct st_buf scratch; /* base64 text */
	size_t values_left; /* budget of the datum being decoded */
	bool failed;
	struct fl_err err;
};

/* ---- cursor ------------------------------------------------------------ */

/* Records the first error and returns -1.  Being variadic it is never inlined,
 * so gcc cannot see the -1: the locals a read_* helper fills are initialised
 * at declaration, or -O3 warns that they may be used uninitialized. */
static int fail(struct st_avro_reader *r, enum fl_err_kind kind, const char *fmt, ...)
        FL_PRINTF(3, 4);

static int fail(struct st_avro_reader *r, enum fl_err_kind kind, const char *fmt, ...)
{
	va_list ap;

	if (r->failed)
		return -1;
	r->failed = true;
	r->err.kind = kind;
	va_start(ap, fmt);
	vsnprintf(r->err.msg, sizeof(r->err.msg), fmt, ap);
	va_end(ap);
	return -1;
}

static int nomem(struct st_avro_reader *r)
{
	return fail(r, FL_ERR_NOMEM, "avro: out of memory");
}

/* Offsets in messages are file offsets in the header and block-relative
 * ones inside a block. */
static int read_long(struct st_avro_reader *r, struct cur *c, int64_t *out)
{
	uint64_t v = 0;

	for (int shift = 0; shift < 70; shift += 7) {
		uint8_t b;

		if (c->pos >= c->len)
			return fail(r, FL_ERR_BAD_REQUEST, "avro: truncated varint at offset %zu",
			            c->pos);
		b = c->p[c->pos++];
		if (shift == 63 && (b & 0x7e) != 0)
			return fail(r, FL_ERR_BAD_REQUEST,
			            "avro: varint longer than 64 bits at offset %zu", c->pos - 1);
		v |= (uint64_t)(b & 0x7f) << shift;
		if ((b & 0x80) == 0) {
			*out = st_zigzag_decode(v);
			return 0;
		}
	}
	return fail(r, FL_ERR_BAD_REQUEST, "avro: varint longer than 10 bytes at offset %zu",
	            c->pos);
}

static int read_int(struct st_avro_reader *r, struct cur *c, int32_t *out)
{
	int64_t v;

	if (read_long(r, c, &v) != 0)
		return -1;
	if (v < INT32_MIN || v > INT32_MAX)
		return fail(r, FL_ERR_BAD_REQUEST,
		            "avro: int %" PRId64 " out of range at offset %zu", v, c->pos);
	*out = (int32_t)v;
	return 0;
}

static int read_raw(struct st_avro_reader *r, struct cur *c, size_t n, const uint8_t **out)
{
	if (n > c->len - c->pos)
		return fail(r, FL_ERR_BAD_REQUEST,
		            "avro: %zu bytes needed at offset %zu, %zu remain", n, c->pos,
		            c->len - c->pos);
	*out = c->p + c->pos;
	c->pos += n;
	return 0;
}

/* A length-prefixed bytes or string value. */
static int read_bytes(struct st_avro_reader *r, struct cur *c, const uint8_t **p, size_t *n)
{
	int64_t len = 0;

	if (read_long(r, c, &len) != 0)
		return -1;
	if (len < 0 || (uint64_t)len > c->len - c->pos)
		return fail(r, FL_ERR_BAD_REQUEST,
		            "avro: length %" PRId64 " at offset %zu exceeds the %zu bytes left",
		            len, c->pos, c->len - c->pos);
	*n = (size_t)len;
	*p = c->p + c->pos;
	c->pos += (size_t)len;
	return 0;
}

/* The item count of one array or map block (negative counts carry a byte
 * size, which is checked and otherwise ignored).  0 ends the sequence. */
static int read_block_count(struct st_avro_reader *r, struct cur *c, int64_t *out)
{
	int64_t n = 0, size = 0;

	if (read_long(r, c, &n) != 0)
		return -1;
	if (n < 0) {
		if (n == INT64_MIN)
			return fail(r, FL_ERR_BAD_REQUEST, "avro: block count out of range");
		n = -n;
		if (read_long(r, c, &size) != 0)
			return -1;
		if (size < 0 || (uint64_t)size > c->len - c->pos)
			return fail(r, FL_ERR_BAD_REQUEST,
			            "avro: block size %" PRId64 " at offset %zu is out of range",
			            size, c->pos);
	}
	*out = n;
	return 0;
}

/* ---- schema ------------------------------------------------------------ */

static struct node *node_new(struct st_avro_reader *r, enum kind k)
{
	struct node *n;

	if (r->n_nodes == r->cap_nodes) {
		size_t cap = r->cap_nodes ? 2 * r->cap_nodes : 32;
		struct node **v = st_realloc(r->alloc, r->nodes, cap * sizeof(*v));

		if (v == NULL)
			return NULL;
		r->nodes = v;
		r->cap_nodes = cap;
	}
	n = st_calloc(r->alloc, 1, sizeof(*n));
	if (n == NULL)
		return NULL;
	n->kind = k;
	r->nodes[r->n_nodes++] = n;
	return n;
}

static const struct {
	const char *name;
	enum kind kind;
} primitives[] = {
        {"null", K_NULL},   {"boolean", K_BOOLEAN}, {"int", K_INT},     {"long", K_LONG},
        {"float", K_FLOAT}, {"double", K_DOUBLE},   {"bytes", K_BYTES}, {"string", K_STRING},
};

static int primitive_kind(const char *s, enum kind *out)
{
	for (size_t i = 0; i < sizeof(primitives) / sizeof(primitives[0]); i++) {
		if (strcmp(s, primitives[i].name) == 0) {
			*out = primitives[i].kind;
			return 0;
		}
	}
	return -1;
}

static struct node *find_named(struct st_avro_reader *r, const char *fullname)
{
	for (size_t i = 0; i < r->n_named; i++) {
		if (strcmp(r->named[i]->fullname, fullname) == 0)
			return r->named[i];
	}
	return NULL;
}

/* ns + "." + name, or name alone when it already has a dot or ns is empty. */
static char *join_name(struct st_avro_reader *r, const char *ns, const char *name)
{
	size_t a, b;
	char *s;

	if (strchr(name, '.') != NULL || ns == NULL || ns[0] == '\0')
		return st_strdup(r->alloc, name);
	a = strlen(ns);
	b = strlen(name);
	s = st_malloc(r->alloc, a + b + 2);
	if (s == NULL)
		return NULL;
	memcpy(s, ns, a);
	s[a] = '.';
	memcpy(s + a + 1, name, b + 1);
	return s;
}

/* A type given by name: a primitive or an earlier (or enclosing) named
 * type, looked up in the enclosing namespace first. */
static struct node *resolve(struct st_avro_reader *r, const char *name, const char *ns)
{
	enum kind k;
	struct node *n;
	char *full;

	if (primitive_kind(name, &k) == 0) {
		n = node_new(r, k);
		if (n == NULL)
			nomem(r);
		return n;
	}
	full = join_name(r, ns, name);
	if (full == NULL) {
		nomem(r);
		return NULL;
	}
	n = find_named(r, full);
	st_free(r->alloc, full);
	if (n == NULL)
		n = find_named(r, name);
	if (n == NULL)
		fail(r, FL_ERR_BAD_REQUEST, "avro: schema names unknown type \"%.64s\"", name);
	return n;
}

static struct node *compile(struct st_avro_reader *r, const json_t *s, const char *ns, int depth);

/* Registers a named type (record, enum, fixed) under its full name; *ns_len
 * receives the length of the namespace its children inherit (the prefix of
 * n->fullname before its last dot). */
static int name_node(struct st_avro_reader *r, struct node *n, const json_t *s, const char *ns,
                     size_t *ns_len)
{
	const char *name = json_string_value(json_object_get(s, "name"));
	const char *own_ns = json_string_value(json_object_get(s, "namespace"));
	const char *dot;

	if (name == NULL || name[0] == '\0')
		return fail(r, FL_ERR_BAD_REQUEST, "avro: schema has a named type without a name");
	if (r->n_named >= MAX_NAMED)
		return fail(r, FL_ERR_BAD_REQUEST, "avro: schema has more than %d named types",
		            MAX_NAMED);
	if (r->n_named == r->cap_named) {
		size_t cap = r->cap_named ? 2 * r->cap_named : 16;
		struct node **v = st_realloc(r->alloc, r->named, cap * sizeof(*v));

		if (v == NULL)
			return nomem(r);
		r->named = v;
		r->cap_named = cap;
	}
	n->fullname = join_name(r, own_ns != NULL ? own_ns : ns, name);
	if (n->fullname == NULL)
		return nomem(r);
	if (find_named(r, n->fullname) != NULL)
		return fail(r, FL_ERR_BAD_REQUEST, "avro: schema defines \"%.64s\" twice",
		            n->fullname);
	r->named[r->n_named++] = n;
	dot = strrchr(n->fullname, '.');
	*ns_len = dot != NULL ? (size_t)(dot - n->fullname) : 0;
	return 0;
}

static int compile_record(struct st_avro_reader *r, struct node *n, const json_t *s, const char *ns,
                          int depth)
{
	const json_t *fields = json_object_get(s, "fields");
	size_t ns_len, i;
	const json_t *f;
	char *child_ns = NULL;
	int rc = -1;

	if (name_node(r, n, s, ns, &ns_len) != 0)
		return -1;
	if (!json_is_array(fields))
		return fail(r, FL_ERR_BAD_REQUEST, "avro: record %.64s has no fields array",
		            n->fullname);
	child_ns = st_memdup(r->alloc, n->fullname, ns_len);
	if (child_ns == NULL)
		return nomem(r);
	n->n = json_array_size(fields);
	if (n->n > 0) {
		n->sub = st_calloc(r->alloc, n->n, sizeof(*n->sub));
		n->names = st_calloc(r->alloc, n->n, sizeof(*n->names));
		if (n->sub == NULL || n->names == NULL) {
			nomem(r);
			goto out;
		}
	}
	json_array_foreach(fields, i, f)
	{
		n->names[i] = json_string_value(json_object_get(f, "name"));
		if (n->names[i] == NULL) {
			fail(r, FL_ERR_BAD_REQUEST, "avro: record %.64s: field %zu has no name",
			     n->fullname, i);
			goto out;
		}
		n->sub[i] = compile(r, json_object_get(f, "type"), child_ns, depth + 1);
		if (n->sub[i] == NULL)
			goto out;
	}
	rc = 0;
out:
	st_free(r->alloc, child_ns);
	return rc;
}

static int compile_enum(struct st_avro_reader *r, struct node *n, const json_t *s, const char *ns)
{
	const json_t *syms = json_object_get(s, "symbols");
	size_t ns_len, i;
	const json_t *v;

	if (name_node(r, n, s, ns, &ns_len) != 0)
		return -1;
	if (!json_is_array(syms) || json_array_size(syms) == 0)
		return fail(r, FL_ERR_BAD_REQUEST, "avro: enum %.64s has no symbols", n->fullname);
	n->n = json_array_size(syms);
	n->names = st_calloc(r->alloc, n->n, sizeof(*n->names));
	if (n->names == NULL)
		return nomem(r);
	json_array_foreach(syms, i, v)
	{
		n->names[i] = json_string_value(v);
		if (n->names[i] == NULL)
			return fail(r, FL_ERR_BAD_REQUEST,
			            "avro: enum %.64s: symbol %zu is not a string", n->fullname, i);
	}
	return 0;
}

static struct node *compile_object(struct st_avro_reader *r, const json_t *s, const char *ns,
                                   int depth)
{
	const json_t *t = json_object_get(s, "type");
	const char *type = json_string_value(t);
	struct node *n;
	enum kind k;

	if (t != NULL && type == NULL) /* {"type": {...}} or {"type": [...]}: the inner schema */
		return compile(r, t, ns, depth + 1);
	if (type == NULL) {
		fail(r, FL_ERR_BAD_REQUEST, "avro: schema object has no type");
		return NULL;
	}
	if (primitive_kind(type, &k) == 0) {
		n = node_new(r, k); /* a logicalType, if any, is ignored */
		if (n == NULL)
			nomem(r);
		return n;
	}
	if (strcmp(type, "record") == 0 || strcmp(type, "error") == 0)
		k = K_RECORD;
	else if (strcmp(type, "enum") == 0)
		k = K_ENUM;
	else if (strcmp(type, "array") == 0)
		k = K_ARRAY;
	else if (strcmp(type, "map") == 0)
		k = K_MAP;
	else if (strcmp(type, "fixed") == 0)
		k = K_FIXED;
	else
		return resolve(r, type, ns);
	n = node_new(r, k);
	if (n == NULL) {
		nomem(r);
		return NULL;
	}
	switch (k) {
	case K_RECORD:
		if (compile_record(r, n, s, ns, depth) != 0)
			return NULL;
		break;
	case K_ENUM:
		if (compile_enum(r, n, s, ns) != 0)
			return NULL;
		break;
	case K_ARRAY:
	case K_MAP:
		n->sub = st_calloc(r->alloc, 1, sizeof(*n->sub));
		if (n->sub == NULL) {
			nomem(r);
			return NULL;
		}
		n->n = 1;
		n->sub[0] = compile(r, json_object_get(s, k == K_ARRAY ? "items" : "values"), ns,
		                    depth + 1);
		if (n->sub[0] == NULL)
			return NULL;
		break;
	case K_FIXED: {
		const json_t *size = json_object_get(s, "size");
		size_t ns_len;

		if (name_node(r, n, s, ns, &ns_len) != 0)
			return NULL;
		if (!json_is_integer(size) || json_integer_value(size) < 0 ||
		    json_integer_value(size) > INT32_MAX) {
			fail(r, FL_ERR_BAD_REQUEST, "avro: fixed %.64s has no valid size",
			     n->fullname);
			return NULL;
		}
		n->n = (size_t)json_integer_value(size);
		break;
	}
	default: break;
	}
	return n;
}

static struct node *compile(struct st_avro_reader *r, const json_t *s, const char *ns, int depth)
{
	struct node *n;
	size_t i;
	const json_t *b;

	if (depth > r->max_depth) {
		fail(r, FL_ERR_BAD_REQUEST, "avro: schema nests deeper than %d", r->max_depth);
		return NULL;
	}
	if (json_is_string(s))
		return resolve(r, json_string_value(s), ns);
	if (json_is_object(s))
		return compile_object(r, s, ns, depth);
	if (!json_is_array(s) || json_array_size(s) == 0) {
		fail(r, FL_ERR_BAD_REQUEST, "avro: schema is not a type, an object or a union");
		return NULL;
	}
	n = node_new(r, K_UNION);
	if (n == NULL) {
		nomem(r);
		return NULL;
	}
	n->n = json_array_size(s);
	n->sub = st_calloc(r->alloc, n->n, sizeof(*n->sub));
	if (n->sub == NULL) {
		nomem(r);
		return NULL;
	}
	json_array_foreach(s, i, b)
	{
		n->sub[i] = compile(r, b, ns, depth + 1);
		if (n->sub[i] == NULL)
			return NULL;
	}
	return n;
}

/* ---- datums ------------------------------------------------------------ */

static const char b64[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";

static json_t *base64_value(struct st_avro_reader *r, const uint8_t *p, size_t n)
{
	size_t out_len = (n + 2) / 3 * 4, j = 0;
	json_t *v;

	st_buf_reset(&r->scratch);
	if (st_buf_reserve(&r->scratch, out_len + 1) != 0) {
		nomem(r);
		return NULL;
	}
	for (size_t i = 0; i < n; i += 3) {
		uint32_t x = (uint32_t)p[i] << 16;
		size_t left = n - i;

		if (left > 1)
			x |= (uint32_t)p[i + 1] << 8;
		if (left > 2)
			x |= p[i + 2];
		r->scratch.data[j++] = (uint8_t)b64[(x >> 18) & 63];
		r->scratch.data[j++] = (uint8_t)b64[(x >> 12) & 63];
		r->scratch.data[j++] = left > 1 ? (uint8_t)b64[(x >> 6) & 63] : '=';
		r->scratch.data[j++] = left > 2 ? (uint8_t)b64[x & 63] : '=';
	}
	v = json_stringn_nocheck((const char *)r->scratch.data, out_len);
	if (v == NULL)
		nomem(r);
	return v;
}

static int b64_index(uint8_t c)
{
	const char *p = c != 0 ? strchr(b64, c) : NULL;

	return p != NULL ? (int)(p - b64) : -1;
}

int st_avro_base64_decode(const char *s, size_t n, struct st_buf *out, struct fl_err *err)
{
	if (n % 4 != 0)
		return fl_err_set(err, FL_ERR_BAD_REQUEST,
		                  "base64: length %zu is not a multiple of 4", n);
	if (st_buf_reserve(out, n / 4 * 3) != 0)
		return fl_err_set(err, FL_ERR_NOMEM, "base64: out of memory");
	for (size_t i = 0; i < n; i += 4) {
		int v[4];
		int pad = 0;
		uint32_t x;

		for (int k = 0; k < 4; k++) {
			uint8_t c = (uint8_t)s[i + k];

			if (c == '=' && i + 4 == n && k >= 2) {
				v[k] = 0;
				pad++;
				continue;
			}
			v[k] = b64_index(c);
			if (v[k] < 0 || pad > 0)
				return fl_err_set(err, FL_ERR_BAD_REQUEST,
				                  "base64: bad character at offset %zu",
				                  i + (size_t)k);
		}
		x = (uint32_t)v[0] << 18 | (uint32_t)v[1] << 12 | (uint32_t)v[2] << 6 |
		    (uint32_t)v[3];
		out->data[out->len++] = (uint8_t)(x >> 16);
		if (pad < 2)
			out->data[out->len++] = (uint8_t)(x >> 8);
		if (pad < 1)
			out->data[out->len++] = (uint8_t)x;
	}
	return 0;
}

static json_t *real_value(struct st_avro_reader *r, double d)
{
	json_t *v;

	if (isnan(d))
		v = json_string("NaN");
	else if (isinf(d))
		v = json_string(d > 0 ? "Infinity" : "-Infinity");
	else
		v = json_real(d);
	if (v == NULL)
		nomem(r);
	return v;
}

static json_t *decode(struct st_avro_reader *r, struct cur *c, const struct node *n, int depth);

static json_t *decode_record(struct st_avro_reader *r, struct cur *c, const struct node *n,
                             int depth)
{
	json_t *obj = json_object();

	if (obj == NULL) {
		nomem(r);
		return NULL;
	}
	for (size_t i = 0; i < n->n; i++) {
		json_t *v = decode(r, c, n->sub[i], depth + 1);

		if (v == NULL || json_object_set_new(obj, n->names[i], v) != 0) {
			if (v != NULL)
				nomem(r);
			json_decref(obj);
			return NULL;
		}
	}
	return obj;
}

static json_t *decode_seq(struct st_avro_reader *r, struct cur *c, const struct node *n, int depth)
{
	bool is_map = n->kind == K_MAP;
	json_t *out = is_map ? json_object() : json_array();
	int64_t count;

	if (out == NULL) {
		nomem(r);
		return NULL;
	}
	for (;;) {
		if (read_block_count(r, c, &count) != 0)
			goto fail;
		if (count == 0)
			break;
		for (int64_t k = 0; k < count; k++) {
			const uint8_t *key = NULL;
			size_t key_len = 0;
			json_t *v;
			int rc;

			/* Every item costs a value, so the budget bounds a huge
			 * count of zero-byte items. */
			if (r->values_left == 0) {
				fail(r, FL_ERR_BAD_REQUEST, "avro: datum has more than %zu values",
				     r->max_values);
				goto fail;
			}
			if (is_map) {
				if (read_bytes(r, c, &key, &key_len) != 0)
					goto fail;
				if (!fl_utf8_valid((const char *)key, key_len)) {
					fail(r, FL_ERR_BAD_REQUEST,
					     "avro: map key at offset %zu is not UTF-8", c->pos);
					goto fail;
				}
			}
			v = decode(r, c, n->sub[0], depth + 1);
			if (v == NULL)
				goto fail;
			if (is_map)
				rc = json_object_setn_new_nocheck(out, (const char *)key, key_len,
				                                  v);
			else
				rc = json_array_append_new(out, v);
			if (rc != 0) {
				nomem(r);
				goto fail;
			}
		}
	}
	return out;
fail:
	json_decref(out);
	return NULL;
}

static json_t *decode(struct st_avro_reader *r, struct cur *c, const struct node *n, int depth)
{
	const uint8_t *p = NULL;
	size_t len = 0;
	int64_t l = 0;
	int32_t i = 0;
	json_t *v = NULL;

	if (depth > r->max_depth) {
		fail(r, FL_ERR_BAD_REQUEST, "avro: datum nests deeper than %d", r->max_depth);
		return NULL;
	}
	if (r->values_left == 0) {
		fail(r, FL_ERR_BAD_REQUEST, "avro: datum has more than %zu values", r->max_values);
		return NULL;
	}
	r->values_left--;
	switch (n->kind) {
	case K_NULL: v = json_null(); break;
	case K_BOOLEAN:
		if (read_raw(r, c, 1, &p) != 0)
			return NULL;
		if (p[0] > 1) {
			fail(r, FL_ERR_BAD_REQUEST, "avro: boolean byte %u at offset %zu", p[0],
			     c->pos - 1);
			return NULL;
		}
		v = json_boolean(p[0]);
		break;
	case K_INT:
		if (read_int(r, c, &i) != 0)
			return NULL;
		v = json_integer(i);
		break;
	case K_LONG:
		if (read_long(r, c, &l) != 0)
			return NULL;
		v = json_integer(l);
		break;
	case K_FLOAT: {
		uint32_t u;
		float f;

		if (read_raw(r, c, 4, &p) != 0)
			return NULL;
		u = (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 |
		    (uint32_t)p[3] << 24;
		memcpy(&f, &u, 4);
		return real_value(r, f);
	}
	case K_DOUBLE: {
		uint64_t u = 0;
		double d;

		if (read_raw(r, c, 8, &p) != 0)
			return NULL;
		for (int k = 7; k >= 0; k--)
			u = u << 8 | p[k];
		memcpy(&d, &u, 8);
		return real_value(r, d);
	}
	case K_BYTES:
		if (read_bytes(r, c, &p, &len) != 0)
			return NULL;
		return base64_value(r, p, len);
	case K_FIXED:
		if (read_raw(r, c, n->n, &p) != 0)
			return NULL;
		return base64_value(r, p, n->n);
	case K_STRING:
		if (read_bytes(r, c, &p, &len) != 0)
			return NULL;
		if (!fl_utf8_valid((const char *)p, len)) {
			fail(r, FL_ERR_BAD_REQUEST, "avro: string at offset %zu is not UTF-8",
			     c->pos);
			return NULL;
		}
		v = json_stringn_nocheck((const char *)p, len);
		break;
	case K_ENUM:
		if (read_int(r, c, &i) != 0)
			return NULL;
		if (i < 0 || (size_t)i >= n->n) {
			fail(r, FL_ERR_BAD_REQUEST, "avro: enum %.64s has no symbol %" PRId32,
			     n->fullname, i);
			return NULL;
		}
		v = json_string(n->names[i]);
		break;
	case K_UNION:
		if (read_long(r, c, &l) != 0)
			return NULL;
		if (l < 0 || (uint64_t)l >= n->n) {
			fail(r, FL_ERR_BAD_REQUEST,
			     "avro: union branch %" PRId64 " of %zu at offset %zu", l, n->n,
			     c->pos);
			return NULL;
		}
		r->values_left++; /* the branch's value stands for the union */
		return decode(r, c, n->sub[l], depth + 1);
	case K_RECORD: return decode_record(r, c, n, depth);
	case K_ARRAY:
	case K_MAP: return decode_seq(r, c, n, depth);
	}
	if (v == NULL)
		nomem(r);
	return v;
}

/* ---- header and blocks ------------------------------------------------- */

void st_avro_reader_free(struct st_avro_reader *r)
{
	if (r == NULL)
		return;
	for (size_t i = 0; i < r->n_meta; i++)
		st_free(r->alloc, r->meta[i].key);
	st_free(r->alloc, r->meta);
	for (size_t i = 0; i < r->n_nodes; i++) {
		st_free(r->alloc, r->nodes[i]->fullname);
		st_free(r->alloc, r->nodes[i]->sub);
		st_free(r->alloc, r->nodes[i]->names);
		st_free(r->alloc, r->nodes[i]);
	}
	st_free(r->alloc, r->nodes);
	st_free(r->alloc, r->named);
	json_decref(r->schema_json);
	st_buf_free(&r->inflated);
	st_buf_free(&r->scratch);
	st_free(r->alloc, r);
}

static int read_header_meta(struct st_avro_reader *r)
{
	struct cur *c = &r->file;
	int64_t count;

	for (;;) {
		if (read_block_count(r, c, &count) != 0)
			return -1;
		if (count == 0)
			return 0;
		if (count > MAX_META || r->n_meta + (size_t)count > MAX_META)
			return fail(r, FL_ERR_BAD_REQUEST,
			            "avro: header has more than %d metadata entries", MAX_META);
		for (int64_t k = 0; k < count; k++) {
			struct meta *m;
			const uint8_t *key = NULL;
			size_t key_len = 0;
			struct meta *v =
			        st_realloc(r->alloc, r->meta, (r->n_meta + 1) * sizeof(*v));

			if (v == NULL)
				return nomem(r);
			r->meta = v;
			m = &r->meta[r->n_meta];
			if (read_bytes(r, c, &key, &key_len) != 0 ||
			    read_bytes(r, c, &m->value, &m->len) != 0)
				return -1;
			if (memchr(key, 0, key_len) != NULL ||
			    !fl_utf8_valid((const char *)key, key_len))
				return fail(r, FL_ERR_BAD_REQUEST,
				            "avro: header key at offset %zu is not a UTF-8 string",
				            c->pos);
			m->key = st_memdup(r->alloc, key, key_len);
			if (m->key == NULL)
				return nomem(r);
			r->n_meta++;
			for (size_t i = 0; i + 1 < r->n_meta; i++) {
				if (strcmp(r->meta[i].key, m->key) == 0)
					return fail(r, FL_ERR_BAD_REQUEST,
					            "avro: header key %.64s appears twice", m->key);
			}
		}
	}
}

static int meta_is(const uint8_t *v, size_t len, const char *s)
{
	return len == strlen(s) && memcmp(v, s, len) == 0;
}

static int parse_header(struct st_avro_reader *r)
{
	const uint8_t *p = NULL;
	size_t len = 0;
	json_error_t je;

	if (r->file.len < 4 || memcmp(r->file.p, "Obj\x01", 4) != 0)
		return fail(r, FL_ERR_BAD_REQUEST, "avro: not an object container file (magic)");
	r->file.pos = 4;
	if (read_header_meta(r) != 0 || read_raw(r, &r->file, 16, &p) != 0)
		return -1;
	memcpy(r->sync, p, 16);
	p = st_avro_reader_meta_get(r, "avro.codec", &len);
	if (p != NULL && meta_is(p, len, "deflate"))
		r->deflate = true;
	else if (p != NULL && !meta_is(p, len, "null"))
		return fail(r, FL_ERR_UNSUPPORTED, "avro: codec \"%.*s\" is not supported",
		            (int)(len > 32 ? 32 : len), (const char *)p);
	p = st_avro_reader_meta_get(r, "avro.schema", &len);
	if (p == NULL)
		return fail(r, FL_ERR_BAD_REQUEST, "avro: header has no avro.schema");
	/* A schema may be a bare string ("int"), so not fl_json_parse, which
	 * wants an object or array; the depth is checked first all the same. */
	if (fl_json_depth((const char *)p, len) > 4 * r->max_depth)
		return fail(r, FL_ERR_BAD_REQUEST, "avro: avro.schema nests deeper than %d",
		            4 * r->max_depth);
	r->schema_json =
	        json_loadb((const char *)p, len, JSON_DECODE_ANY | JSON_REJECT_DUPLICATES, &je);
	if (r->schema_json == NULL)
		return fail(r, FL_ERR_BAD_REQUEST, "avro: avro.schema is not JSON: %s at column %d",
		            je.text, je.column);
	r->root = compile(r, r->schema_json, "", 0);
	return r->root != NULL ? 0 : -1;
}

int st_avro_reader_open(const void *data, size_t len, const struct st_avro_reader_opts *opts,
                        struct st_avro_reader **out, struct fl_err *err)
{
	static const struct st_avro_reader_opts defaults = {0};
	struct st_avro_reader *r;

	if (opts == NULL)
		opts = &defaults;
	r = st_calloc(opts->alloc, 1, sizeof(*r));
	if (r == NULL)
		return fl_err_set(err, FL_ERR_NOMEM, "avro: out of memory");
	r->alloc = opts->alloc;
	r->max_depth = opts->max_depth > 0 ? opts->max_depth : DEFAULT_DEPTH;
	r->max_values = opts->max_values > 0 ? opts->max_values : DEFAULT_VALUES;
	r->max_block_bytes =
	        opts->max_block_bytes > 0 ? opts->max_block_bytes : DEFAULT_BLOCK_BYTES;
	r->file.p = data;
	r->file.len = data != NULL ? len : 0;
	st_buf_init(&r->inflated, r->alloc);
	st_buf_init(&r->scratch, r->alloc);
	if (parse_header(r) != 0) {
		if (err != NULL)
			*err = r->err;
		st_avro_reader_free(r);
		return -1;
	}
	*out = r;
	return 0;
}

/* Inflates one raw-deflate block into r->inflated, at most max_block_bytes. */
static int inflate_block(struct st_avro_reader *r, const uint8_t *p, size_t n)
{
	z_stream zs = {0};
	int zrc;
	int rc = -1;

	if (n > UINT_MAX)
		return fail(r, FL_ERR_BAD_REQUEST, "avro: block of %zu bytes is too large", n);

	zs.zalloc = st_alloc_hook_zlib;
	zs.zfree = st_alloc_hook_free;
	zs.opaque = (void *)r->alloc;
	if (inflateInit2(&zs, -15) != Z_OK)
		return nomem(r);
	st_buf_reset(&r->inflated);
	zs.next_in = (Bytef *)p;
	zs.avail_in = (uInt)n;
	for (;;) {
		size_t room;
		uInt avail;

		if (r->inflated.cap - r->inflated.len < 4096) {
			if (r->inflated.len >= r->max_block_bytes) {
				fail(r, FL_ERR_BAD_REQUEST,
				     "avro: block inflates to more than %zu bytes",
				     r->max_block_bytes);
				goto out;
			}
			if (st_buf_reserve(&r->inflated,
			                   r->inflated.len < 16384 ? 16384 : r->inflated.len) !=
			    0) {
				nomem(r);
				goto out;
			}
		}
		room = r->inflated.cap - r->inflated.len;
		avail = room > UINT_MAX ? UINT_MAX : (uInt)room;
		zs.next_out = r->inflated.data + r->inflated.len;
		zs.avail_out = avail;
		zrc = inflate(&zs, Z_NO_FLUSH);
		r->inflated.len += avail - zs.avail_out;
		if (zrc == Z_STREAM_END)
			break;
		if (zrc == Z_MEM_ERROR) {
			nomem(r);
			goto out;
		}
		if (zrc == Z_BUF_ERROR || (zrc == Z_OK && zs.avail_in == 0 && zs.avail_out != 0)) {
			fail(r, FL_ERR_BAD_REQUEST, "avro: deflate block is truncated");
			goto out;
		}
		if (zrc != Z_OK) {
			fail(r, FL_ERR_BAD_REQUEST, "avro: deflate block is corrupt (%s)",
			     zs.msg != NULL ? zs.msg : "unknown");
			goto out;
		}
	}
	if (r->inflated.len > r->max_block_bytes) {
		fail(r, FL_ERR_BAD_REQUEST, "avro: block inflates to more than %zu bytes",
		     r->max_block_bytes);
		goto out;
	}
	rc = 0;
out:
	inflateEnd(&zs);
	return rc;
}

/* Finishes the current block (all bytes used, sync marker matches) and
 * opens the next; sets *end when the file has no more blocks. */
static int next_block(struct st_avro_reader *r, bool *end)
{
	struct cur *c = &r->file;
	const uint8_t *p = NULL;
	int64_t count = 0, size = 0;

	if (r->in_block) {
		if (r->block.pos != r->block.len)
			return fail(r, FL_ERR_BAD_REQUEST,
			            "avro: block ending before offset %zu has %zu unread bytes",
			            c->pos, r->block.len - r->block.pos);
		if (read_raw(r, c, 16, &p) != 0)
			return -1;
		if (memcmp(p, r->sync, 16) != 0)
			return fail(r, FL_ERR_BAD_REQUEST,
			            "avro: sync marker mismatch at offset %zu", c->pos - 16);
		r->in_block = false;
	}
	if (c->pos == c->len) {
		*end = true;
		return 0;
	}
	if (read_long(r, c, &count) != 0 || read_long(r, c, &size) != 0)
		return -1;
	if (count < 0 || size < 0 || (uint64_t)size > c->len - c->pos)
		return fail(r, FL_ERR_BAD_REQUEST,
		            "avro: block at offset %zu has count %" PRId64 " and size %" PRId64
		            " (%zu bytes left)",
		            c->pos, count, size, c->len - c->pos);
	p = c->p + c->pos;
	c->pos += (size_t)size;
	r->block.pos = 0;
	if (r->deflate) {
		if (inflate_block(r, p, (size_t)size) != 0)
			return -1;
		r->block.p = r->inflated.data;
		r->block.len = r->inflated.len;
	} else {
		if ((size_t)size > r->max_block_bytes)
			return fail(r, FL_ERR_BAD_REQUEST,
			            "avro: block of %" PRId64 " bytes is too large", size);
		r->block.p = p;
		r->block.len = (size_t)size;
	}
	/* Datums of zero bytes are legal (a null schema) but a count far
	 * beyond the block's bytes only makes the caller loop. */
	if ((uint64_t)count > r->block.len + EMPTY_DATUMS)
		return fail(r, FL_ERR_BAD_REQUEST,
		            "avro: block of %zu bytes claims %" PRId64 " datums", r->block.len,
		            count);
	r->block_left = count;
	r->in_block = true;
	*end = false;
	return 0;
}

int st_avro_reader_next(struct st_avro_reader *r, json_t **out, struct fl_err *err)
{
	json_t *v;

	while (!r->failed && r->block_left == 0) {
		bool end = false;

		if (next_block(r, &end) != 0)
			break;
		if (end) {
			*out = NULL;
			return 0;
		}
	}
	if (r->failed) {
		if (err != NULL)
			*err = r->err;
		return -1;
	}
	r->values_left = r->max_values;
	v = decode(r, &r->block, r->root, 0);
	if (v == NULL) {
		if (err != NULL)
			*err = r->err;
		return -1;
	}
	r->block_left--;
	*out = v;
	return 0;
}

size_t st_avro_reader_meta_count(const struct st_avro_reader *r)
{
	return r->n_meta;
}

void st_avro_reader_meta_at(const struct st_avro_reader *r, size_t i, const char **key,
                            const uint8_t **value, size_t *len)
{
	*key = r->meta[i].key;
	*value = r->meta[i].value;
	*len = r->meta[i].len;
}

const uint8_t *st_avro_reader_meta_get(const struct st_avro_reader *r, const char *key, size_t *len)
{
	for (size_t i = 0; i < r->n_meta; i++) {
		if (strcmp(r->meta[i].key, key) == 0) {
			*len = r->meta[i].len;
			return r->meta[i].value;
		}
	}
	*len = 0;
	return NULL;
}

const json_t *st_avro_reader_schema(const struct st_avro_reader *r)
{
	return r->schema_json;
}

int st_avro_read_all(struct st_io *io, const char *uri, size_t max,
                     const struct st_avro_reader_opts *opts, json_t **out, struct fl_err *err)
{
	char *data = NULL;
	size_t len = 0;
	struct st_avro_reader *r = NULL;
	json_t *all = NULL, *rec = NULL;
	int rc = -1;

	if (st_io_read(io, uri, max, &data, &len, err) != 0)
		return fl_err_prefix(err, "reading %.200s", uri);
	if (st_avro_reader_open(data, len, opts, &r, err) != 0)
		goto fail;
	all = json_array();
	if (all == NULL) {
		fl_err_set(err, FL_ERR_NOMEM, "out of memory");
		goto fail;
	}
	for (;;) {
		if (st_avro_reader_next(r, &rec, err) != 0)
			goto fail;
		if (rec == NULL)
			break;
		if (json_array_append_new(all, rec) != 0) {
			fl_err_set(err, FL_ERR_NOMEM, "out of memory");
			goto fail;
		}
	}
	*out = all;
	all = NULL;
	rc = 0;
	goto out;
fail:
	fl_err_prefix(err, "%.200s", uri);
out:
	json_decref(all);
	st_avro_reader_free(r);
	free(data);
	return rc;
}
