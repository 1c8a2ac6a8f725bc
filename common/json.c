/* json.c - strict parsing over jansson.
 *
 * jansson's own depth bound is a compile-time 2048; the configured bound is
 * checked first by a bracket scan that skips string contents, so a hostile
 * body never reaches the recursive parser at a depth we did not allow. */
#include "json.h"

#include <stdatomic.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

int fl_json_depth(const char *s, size_t len)
{
	int depth = 0, max = 0;
	bool in_str = false;

	for (size_t i = 0; i < len; i++) {
		char c = s[i];

		if (in_str) {
			if (c == '\\')
				i++;
			else if (c == '"')
				in_str = false;
			continue;
		}
		if (c == '"') {
			in_str = true;
		} else if (c == '{' || c == '[') {
			if (++depth > max)
				max = depth;
		} else if (c == '}' || c == ']') {
			depth--;
		}
	}
	return max;
}

int fl_json_parse(const char *s, size_t len, int max_depth, json_t **out, struct fl_err *err)
{
	json_error_t je;
	json_t *v;
	int depth;

	if (len == 0)
		return fl_err_set(err, FL_ERR_BAD_REQUEST, "request body is empty; expected JSON");
	depth = fl_json_depth(s, len);
	if (depth > max_depth)
		return fl_err_set(err, FL_ERR_BAD_REQUEST,
		                  "JSON nesting depth %d exceeds the limit of %d (max-json-depth)",
		                  depth, max_depth);
	v = json_loadb(s, len, JSON_REJECT_DUPLICATES, &je);
	if (v == NULL)
		return fl_err_set(err, FL_ERR_BAD_REQUEST,
		                  "malformed JSON at line %d column %d: %s", je.line, je.column,
		                  je.text);
	*out = v;
	return 0;
}

static const char *type_name(const json_t *v)
{
	switch (json_typeof(v)) {
	case JSON_OBJECT: return "object";
	case JSON_ARRAY: return "array";
	case JSON_STRING: return "string";
	case JSON_INTEGER: return "integer";
	case JSON_REAL: return "number";
	case JSON_TRUE:
	case JSON_FALSE: return "boolean";
	case JSON_NULL: return "null";
	}
	return "?";
}

/* Fetches key; 1 = found with the wanted type, 0 = absent (or null) and
 * optional, -1 = error set. */
static int member(const json_t *obj, const char *key, bool required, const char *what,
                  json_type want, const char *want_name, json_t **v, struct fl_err *err)
{
	if (!json_is_object(obj))
		return fl_err_set(err, FL_ERR_BAD_REQUEST, "%s must be a JSON object", what);
	*v = json_object_get(obj, key);
	if (*v == NULL || json_is_null(*v)) {
		if (required)
			return fl_err_set(err, FL_ERR_BAD_REQUEST,
			                  "%s: missing required field '%s'", what, key);
		return 0;
	}
	if (json_typeof(*v) != want && !(want == JSON_TRUE && json_is_boolean(*v)))
		return fl_err_set(err, FL_ERR_BAD_REQUEST, "%s: field '%s' must be %s, got %s",
		                  what, key, want_name, type_name(*v));
	return 1;
}

int fl_json_get_str(const json_t *obj, const char *key, bool required, const char *what,
                    const char **out, struct fl_err *err)
{
	json_t *v;
	int r = member(obj, key, required, what, JSON_STRING, "a string", &v, err);

	if (r == 1)
		*out = json_string_value(v);
	return r < 0 ? -1 : 0;
}

int fl_json_get_int(const json_t *obj, const char *key, bool required, const char *what,
                    int64_t *out, struct fl_err *err)
{
	json_t *v;
	int r = member(obj, key, required, what, JSON_INTEGER, "an integer", &v, err);

	if (r == 1)
		*out = (int64_t)json_integer_value(v);
	return r < 0 ? -1 : 0;
}

int fl_json_get_bool(const json_t *obj, const char *key, bool required, const char *what, bool *out,
                     struct fl_err *err)
{
	json_t *v;
	int r = member(obj, key, required, what, JSON_TRUE, "a boolean", &v, err);

	if (r == 1)
		*out = json_is_true(v);
	return r < 0 ? -1 : 0;
}

int fl_json_get_obj(const json_t *obj, const char *key, bool required, const char *what,
                    json_t **out, struct fl_err *err)
{
	json_t *v;
	int r = member(obj, key, required, what, JSON_OBJECT, "an object", &v, err);

	if (r == 1)
		*out = v;
	return r < 0 ? -1 : 0;
}

int fl_json_get_arr(const json_t *obj, const char *key, bool required, const char *what,
                    json_t **out, struct fl_err *err)
{
	json_t *v;
	int r = member(obj, key, required, what, JSON_ARRAY, "an array", &v, err);

	if (r == 1)
		*out = v;
	return r < 0 ? -1 : 0;
}

int fl_json_check_str_map(const json_t *obj, const char *what, struct fl_err *err)
{
	const char *k;
	json_t *v;

	json_object_foreach((json_t *)obj, k, v)
	{
		if (!json_is_string(v))
			return fl_err_set(err, FL_ERR_BAD_REQUEST,
			                  "%s: value of '%s' must be a string, got %s", what, k,
			                  type_name(v));
	}
	return 0;
}

json_t *fl_json_find_int(const json_t *arr, const char *key, json_int_t id)
{
	size_t i;
	json_t *v;

	json_array_foreach(arr, i, v)
	{
		if (json_integer_value(json_object_get(v, key)) == id)
			return v;
	}
	return NULL;
}

/* ---- dumping ----
 *
 * fl_json_dump writes what json_dumps(v, JSON_COMPACT | JSON_ENCODE_ANY)
 * writes, byte for byte (a unit test compares the two on random documents
 * and on table metadata), about three times faster: one pass into one
 * growing buffer, runs of plain string bytes copied whole, and no table of
 * the containers being written, which jansson keeps to refuse cycles (a
 * depth bound refuses them here).  Every commit writes its table's whole
 * metadata this way, so its cost grows with the table.  Reals, which table
 * metadata does not hold, are written by jansson itself. */

#define DUMP_MAX_DEPTH 2048

/* Where one element of a memo's arrays lies in its text. */
struct memo_span {
	const json_t *v;
	size_t off, len;
};

struct fl_json_memo {
	atomic_int refs;
	json_t *doc; /* keeps the elements alive */
	char *text;
	size_t len;
	struct memo_span *spans; /* the arrays' elements, array by array */
	size_t n;
	void *attached; /* the owner's, freed with attached_free */
	void (*attached_free)(void *);
};

/* The most arrays one memo covers (fl_json_dump_memo's keys). */
#define MEMO_MAX_ARRAYS 4

/* The text comes from jansson's allocator, as json_dumps' does: whoever
 * frees it with json_get_alloc_funcs' free (or free(), the default) still
 * may, and a test that fails jansson's allocations fails these too.  The
 * elements of the arrays in arr are copied from prev where it holds them
 * (cursor: where the last one was found) and recorded in spans, those of
 * arr[k] from first[k] on. */
struct dump {
	char *p;
	size_t n, cap;
	json_malloc_t alloc;
	json_free_t free;
	const json_t *arr[MEMO_MAX_ARRAYS];
	size_t first[MEMO_MAX_ARRAYS], narr;
	const struct fl_json_memo *prev;
	size_t cursor, misses;
	struct memo_span *spans;
};

/* Elements written anew before prev is given up: a document that shares
 * few of them with prev would otherwise search all of prev for each. */
#define MEMO_MAX_MISSES 64

static bool dump_room(struct dump *d, size_t k)
{
	size_t cap = d->cap ? d->cap : 1024;
	char *p;

	if (d->cap - d->n >= k)
		return true;
	while (cap - d->n < k) {
		if (cap > SIZE_MAX / 2)
			return false;
		cap *= 2;
	}
	if (d->alloc == malloc && d->free == free) {
		p = realloc(d->p, cap); /* jansson's default: a large text grows in place */
		if (p == NULL)
			return false;
	} else {
		p = d->alloc(cap);
		if (p == NULL)
			return false;
		if (d->n > 0)
			memcpy(p, d->p, d->n);
		if (d->p != NULL)
			d->free(d->p);
	}
	d->p = p;
	d->cap = cap;
	return true;
}

static bool dump_put(struct dump *d, const char *s, size_t k)
{
	if (!dump_room(d, k))
		return false;
	memcpy(d->p + d->n, s, k);
	d->n += k;
	return true;
}

/* A string's bytes between quotes: '"', '\\' and the controls escaped as
 * jansson escapes them (\n style where JSON has one, else \u00XX in capitals),
 * every other byte as it is. */
static bool dump_string(struct dump *d, const char *s, size_t n)
{
	static const char hex[] = "0123456789ABCDEF";
	/* The escapes JSON has a letter for (0: the six-byte \u00XX form). */
	static const char letter[256] = {['"'] = '"',  ['\\'] = '\\', ['\b'] = 'b', ['\f'] = 'f',
	                                 ['\n'] = 'n', ['\r'] = 'r',  ['\t'] = 't'};
	size_t i = 0;

	if (!dump_room(d, n + 2))
		return false;
	d->p[d->n++] = '"';
	while (i < n) {
		size_t j = i;
		unsigned char c;
		char e[6] = {'\\', 'u', '0', '0'};
		size_t el = 2;

		while (j < n && (unsigned char)s[j] >= 0x20 && s[j] != '"' && s[j] != '\\')
			j++;
		if (!dump_put(d, s + i, j - i))
			return false;
		if (j == n)
			break;
		c = (unsigned char)s[j];
		if (letter[c] != 0) {
			e[1] = letter[c];
		} else {
			e[4] = hex[c >> 4];
			e[5] = hex[c & 15];
			el = 6;
		}
		if (!dump_put(d, e, el))
			return false;
		i = j + 1;
	}
	return dump_put(d, "\"", 1);
}

static bool dump_int(struct dump *d, json_int_t v)
{
	char buf[24], *q = buf + sizeof(buf);
	/* Negated in unsigned arithmetic, so the most negative value works too. */
	unsigned long long u = v < 0 ? 0ULL - (unsigned long long)v : (unsigned long long)v;

	do {
		*--q = (char)('0' + u % 10);
		u /= 10;
	} while (u != 0);
	if (v < 0)
		*--q = '-';
	return dump_put(d, q, (size_t)(buf + sizeof(buf) - q));
}

static bool dump_value(struct dump *d, const json_t *v, int depth);

/* Where prev's text holds e, or NULL.  Elements mostly keep their order
 * from one version to the next (new ones appended, old ones dropped from
 * the front), so the search starts where the last one was found. */
static const struct memo_span *memo_find(struct dump *d, const json_t *e)
{
	const struct fl_json_memo *m = d->prev;

	if (m == NULL)
		return NULL;
	for (size_t j = 0, k = d->cursor; j < m->n; j++, k++) {
		if (k >= m->n)
			k = 0;
		if (m->spans[k].v == e) {
			d->cursor = k + 1;
			return &m->spans[k];
		}
	}
	if (++d->misses > MEMO_MAX_MISSES)
		d->prev = NULL;
	return NULL;
}

/* How many elements of arr from i on prev's text holds one after another
 * from its span k on (k holding element i): they are copied as one run. */
static size_t memo_run(const struct dump *d, const json_t *arr, size_t i, size_t k)
{
	const struct memo_span *s = d->prev->spans;
	size_t n = json_array_size(arr), r = 1;

	/* Adjacent in the text: one comma apart, so the same array. */
	while (i + r < n && k + r < d->prev->n && s[k + r].v == json_array_get(arr, i + r) &&
	       s[k + r].off == s[k + r - 1].off + s[k + r - 1].len + 1)
		r++;
	return r;
}

/* Elements i.. of memoized array arr, whose spans start at first: a run
 * that prev's text holds is copied whole, else element i is written; their
 * places are recorded for the next memo.  Returns how many were written,
 * 0 when out of memory. */
static size_t dump_elements(struct dump *d, const json_t *arr, size_t i, size_t first, int depth)
{
	const json_t *e = json_array_get(arr, i);
	const struct memo_span *hit = memo_find(d, e);
	size_t off = d->n, r = 1;

	if (hit == NULL) {
		if (!dump_value(d, e, depth))
			return 0;
		if (d->spans != NULL)
			d->spans[first + i] = (struct memo_span){e, off, d->n - off};
		return 1;
	}
	size_t k = (size_t)(hit - d->prev->spans);
	const struct memo_span *last;

	r = memo_run(d, arr, i, k);
	last = &d->prev->spans[k + r - 1];
	if (!dump_put(d, d->prev->text + hit->off, last->off + last->len - hit->off))
		return 0;
	d->cursor = k + r;
	if (d->spans != NULL)
		for (size_t j = 0; j < r; j++)
			d->spans[first + i + j] = (struct memo_span){
			        hit[j].v, hit[j].off - hit->off + off, hit[j].len};
	return r;
}

/* Which of the memoized arrays v is, or -1. */
static int memo_array(const struct dump *d, const json_t *v)
{
	for (size_t k = 0; k < d->narr; k++)
		if (d->arr[k] == v)
			return (int)k;
	return -1;
}

static bool dump_value(struct dump *d, const json_t *v, int depth)
{
	if (depth > DUMP_MAX_DEPTH)
		return false;
	switch (json_typeof(v)) {
	case JSON_OBJECT: {
		bool first = true;

		if (!dump_put(d, "{", 1))
			return false;
		for (void *it = json_object_iter((json_t *)v); it != NULL;
		     it = json_object_iter_next((json_t *)v, it)) {
			if ((!first && !dump_put(d, ",", 1)) ||
			    !dump_string(d, json_object_iter_key(it),
			                 json_object_iter_key_len(it)) ||
			    !dump_put(d, ":", 1) ||
			    !dump_value(d, json_object_iter_value(it), depth + 1))
				return false;
			first = false;
		}
		return dump_put(d, "}", 1);
	}
	case JSON_ARRAY: {
		size_t n = json_array_size(v), r;
		int k = depth == 1 ? memo_array(d, v) : -1;

		if (!dump_put(d, "[", 1))
			return false;
		for (size_t i = 0; i < n; i += r) {
			if (i > 0 && !dump_put(d, ",", 1))
				return false;
			r = k >= 0 ? dump_elements(d, v, i, d->first[k], depth + 1)
			           : dump_value(d, json_array_get(v, i), depth + 1);
			if (r == 0)
				return false;
		}
		return dump_put(d, "]", 1);
	}
	case JSON_STRING: return dump_string(d, json_string_value(v), json_string_length(v));
	case JSON_INTEGER: return dump_int(d, json_integer_value(v));
	case JSON_REAL: {
		char *r = json_dumps(v, JSON_COMPACT | JSON_ENCODE_ANY);
		bool ok = r != NULL && dump_put(d, r, strlen(r));

		if (r != NULL)
			d->free(r); /* jansson's allocator, as for the text itself */
		return ok;
	}
	case JSON_TRUE: return dump_put(d, "true", 4);
	case JSON_FALSE: return dump_put(d, "false", 5);
	case JSON_NULL: return dump_put(d, "null", 4);
	}
	return false;
}

/* The text written (ok) NUL-terminated, its length in *len; or NULL, the
 * text freed. */
static char *dump_end(struct dump *d, bool ok, size_t *len)
{
	if (!ok || !dump_put(d, "", 1)) {
		if (d->p != NULL)
			d->free(d->p);
		return NULL;
	}
	if (len != NULL)
		*len = d->n - 1;
	return d->p;
}

/* Writes v into d (set up but for its allocator), with room for reserve
 * bytes from the start, and returns the text, or NULL with nothing left
 * allocated but d->spans. */
static char *dump_run(struct dump *d, const json_t *v, size_t reserve, size_t *len)
{
	json_get_alloc_funcs(&d->alloc, &d->free);
	if (reserve > 0 && !dump_room(d, reserve))
		return NULL;
	return dump_end(d, v != NULL && dump_value(d, v, 0), len);
}

char *fl_json_dump(const json_t *v, size_t *len)
{
	struct dump d = {0};

	return dump_run(&d, v, 0, len);
}

char *fl_json_dump_string(const char *s, size_t *len)
{
	struct dump d = {0};

	json_get_alloc_funcs(&d.alloc, &d.free);
	return dump_end(&d, dump_string(&d, s, strlen(s)), len);
}

char *fl_json_dump_memo(const json_t *v, const char *const *keys, const struct fl_json_memo *prev,
                        struct fl_json_memo **memo, size_t *len)
{
	struct dump d = {0};
	struct fl_json_memo *m = NULL;
	size_t n = 0;

	if (memo != NULL)
		*memo = NULL;
	for (size_t k = 0; json_is_object(v) && keys[k] != NULL && d.narr < MEMO_MAX_ARRAYS; k++) {
		const json_t *arr = json_object_get(v, keys[k]);

		if (json_is_array(arr) && memo_array(&d, arr) < 0) {
			d.first[d.narr] = n;
			d.arr[d.narr++] = arr;
			n += json_array_size(arr);
		}
	}
	d.prev = prev;
	/* Spans of each element when a memo is asked for; none is best effort. */
	if (memo != NULL && n > 0)
		d.spans = malloc(n * sizeof(*d.spans));
	/* Room for about prev's size at once: the next version's text is
	 * mostly prev's, and growing to it would copy it several times. */
	if (dump_run(&d, v, prev != NULL ? prev->len + prev->len / 8 + 1024 : 0, len) == NULL) {
		free(d.spans);
		return NULL;
	}
	if (memo != NULL && (n == 0 || d.spans != NULL) && (m = calloc(1, sizeof(*m))) != NULL &&
	    (m->text = malloc(d.n)) != NULL) {
		memcpy(m->text, d.p, d.n);
		m->len = d.n - 1;
		m->spans = d.spans;
		m->n = d.spans != NULL ? n : 0;
		m->doc = json_incref((json_t *)v);
		atomic_init(&m->refs, 1);
		*memo = m;
		d.spans = NULL;
	} else {
		free(m);
	}
	free(d.spans);
	return d.p;
}

struct fl_json_memo *fl_json_memo_ref(struct fl_json_memo *m)
{
	if (m != NULL)
		atomic_fetch_add(&m->refs, 1);
	return m;
}

void fl_json_memo_unref(struct fl_json_memo *m)
{
	if (m == NULL || atomic_fetch_sub(&m->refs, 1) != 1)
		return;
	json_decref(m->doc);
	free(m->text);
	free(m->spans);
	if (m->attached_free != NULL)
		m->attached_free(m->attached);
	free(m);
}

void fl_json_memo_attach(struct fl_json_memo *m, void *p, void (*free_fn)(void *))
{
	if (m->attached_free != NULL)
		m->attached_free(m->attached);
	m->attached = p;
	m->attached_free = free_fn;
}

void *fl_json_memo_attached(const struct fl_json_memo *m)
{
	return m != NULL ? m->attached : NULL;
}

const char *fl_json_memo_text(const struct fl_json_memo *m, size_t *len)
{
	if (len != NULL)
		*len = m->len;
	return m->text;
}

void fl_json_decref(void *v)
{
	json_decref(v);
}

bool fl_utf8_valid(const char *s, size_t n)
{
	const unsigned char *p = (const unsigned char *)s, *end = p + n;

	while (p < end) {
		unsigned c = *p;
		size_t len;
		unsigned cp;

		/* ASCII runs, eight bytes at a time: most feed data is ASCII. */
		if (c < 0x80) {
			uint64_t w;

			while ((size_t)(end - p) >= 8) {
				memcpy(&w, p, 8);
				if (w & 0x8080808080808080ULL)
					break;
				p += 8;
			}
			while (p < end && *p < 0x80)
				p++;
			continue;
		}
		if (c >= 0xc2 && c <= 0xdf) {
			len = 2;
			cp = c & 0x1f;
		} else if (c >= 0xe0 && c <= 0xef) {
			len = 3;
			cp = c & 0x0f;
		} else if (c >= 0xf0 && c <= 0xf4) {
			len = 4;
			cp = c & 0x07;
		} else {
			return false;
		}
		if ((size_t)(end - p) < len)
			return false;
		for (size_t i = 1; i < len; i++) {
			if ((p[i] & 0xc0) != 0x80)
				return false;
			cp = cp << 6 | (p[i] & 0x3f);
		}
		if ((len == 3 && (cp < 0x800 || (cp >= 0xd800 && cp <= 0xdfff))) ||
		    (len == 4 && (cp < 0x10000 || cp > 0x10ffff)))
			return false;
		p += len;
	}
	return true;
}
