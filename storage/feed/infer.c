/* infer.c - schema inference over sample rows (rules in infer.h; output is
 * the Iceberg spec's schema JSON, "Appendix C: JSON serialization",
 * Schemas).
 *
 * Each column holds a kind in a small lattice: NONE (no evidence) below
 * everything, LONG below DOUBLE, everything below STRING; joining two
 * kinds that are not ordered gives STRING.  A value's kind is decided by
 * st_cast_text itself, so a schema inferred here always accepts the sample
 * it came from.
 *
 * Invariants: n <= max_columns; names are unique, non-empty, NUL-terminated
 * copies; a call that returns FL_ERR_BAD_REQUEST changed nothing. */
#include "infer.h"

#include <stdio.h>
#include <string.h>
#include <strings.h>
#include <sys/types.h>

#include "cast.h"
#include "json.h"

enum kind { K_NONE, K_LONG, K_DOUBLE, K_BOOLEAN, K_DATE, K_TIMESTAMP, K_TIMESTAMPTZ, K_STRING };

static const char *const kind_names[] = {
        [K_NONE] = "string",
        [K_LONG] = "long",
        [K_DOUBLE] = "double",
        [K_BOOLEAN] = "boolean",
        [K_DATE] = "date",
        [K_TIMESTAMP] = "timestamp",
        [K_TIMESTAMPTZ] = "timestamptz",
        [K_STRING] = "string",
};

struct column {
	char *name;
	enum kind k;
};

struct st_infer {
	const struct st_alloc *alloc;
	size_t max_columns;
	struct column *cols;
	size_t n, cap;
	bool named; /* columns fixed by a header or the first row */
	size_t rows;
};

static int nomem(struct fl_err *err)
{
	return fl_err_set(err, FL_ERR_NOMEM, "infer: out of memory");
}

int st_infer_open(const struct st_alloc *alloc, size_t max_columns, struct st_infer **out,
                  struct fl_err *err)
{
	struct st_infer *s = st_calloc(alloc, 1, sizeof(*s));

	if (s == NULL)
		return nomem(err);
	s->alloc = alloc;
	s->max_columns = max_columns ? max_columns : ST_INFER_DEFAULT_MAX_COLUMNS;
	*out = s;
	return 0;
}

static enum kind join(enum kind a, enum kind b)
{
	if (a == K_NONE || a == b)
		return b;
	if (b == K_NONE)
		return a;
	if ((a == K_LONG && b == K_DOUBLE) || (a == K_DOUBLE && b == K_LONG))
		return K_DOUBLE;
	return K_STRING;
}

static bool casts(enum st_type_id id, const char *p, size_t n)
{
	struct st_type t = {.id = id};
	struct st_value v;
	struct fl_err e;

	return st_cast_text(&t, p, n, NULL, NULL, &v, &e) == 0;
}

/* The kinds a string can be, past the numbers and booleans. */
static enum kind classify_temporal(const char *p, size_t n)
{
	if (casts(ST_TYPE_DATE, p, n))
		return K_DATE;
	if (casts(ST_TYPE_TIMESTAMP, p, n))
		return K_TIMESTAMP;
	if (casts(ST_TYPE_TIMESTAMPTZ, p, n))
		return K_TIMESTAMPTZ;
	return K_STRING;
}

static enum kind classify_text(const char *p, size_t n)
{
	bool word = n > 0 && ((p[0] >= 'A' && p[0] <= 'Z') || (p[0] >= 'a' && p[0] <= 'z') ||
	                      ((p[0] == '-' || p[0] == '+') && n > 1 &&
	                       ((p[1] >= 'A' && p[1] <= 'Z') || (p[1] >= 'a' && p[1] <= 'z'))));

	if (n == 0)
		return K_NONE;
	if (casts(ST_TYPE_LONG, p, n))
		return K_LONG;
	if (word) {
		if ((n == 3 && memcmp(p, "NaN", 3) == 0) ||
		    (n == 8 && memcmp(p, "Infinity", 8) == 0) ||
		    (n == 9 && memcmp(p, "-Infinity", 9) == 0))
			return K_DOUBLE;
	} else if (casts(ST_TYPE_DOUBLE, p, n)) {
		/* Integers past the long range are text, not a rounded double. */
		bool integral = true;

		for (size_t i = 0; i < n && integral; i++)
			integral = (p[i] >= '0' && p[i] <= '9') ||
			           (i == 0 && (p[i] == '-' || p[i] == '+'));
		return integral ? K_STRING : K_DOUBLE;
	}
	if ((n == 4 && strncasecmp(p, "true", 4) == 0) ||
	    (n == 5 && strncasecmp(p, "false", 5) == 0))
		return K_BOOLEAN;
	return classify_temporal(p, n);
}

static int reserve(struct st_infer *s, size_t extra, struct fl_err *err)
{
	size_t cap;
	struct column *c;

	if (extra > s->max_columns || s->n > s->max_columns - extra)
		return fl_err_set(err, FL_ERR_TOO_LARGE, "more than %zu columns (max_columns)",
		                  s->max_columns);
	if (s->n + extra <= s->cap)
		return 0;
	cap = s->cap ? s->cap : 8;
	while (cap < s->n + extra)
		cap *= 2;
	c = st_realloc(s->alloc, s->cols, cap * sizeof(*c));
	if (c == NULL)
		return nomem(err);
	s->cols = c;
	s->cap = cap;
	return 0;
}

static int add_column(struct st_infer *s, const char *name, size_t len, struct fl_err *err)
{
	char *copy = st_memdup(s->alloc, name, len);

	if (copy == NULL)
		return nomem(err);
	s->cols[s->n].name = copy;
	s->cols[s->n].k = K_NONE;
	s->n++;
	return 0;
}

static ssize_t find(const struct st_infer *s, const char *name, size_t len)
{
	for (size_t i = 0; i < s->n; i++)
		if (strlen(s->cols[i].name) == len && memcmp(s->cols[i].name, name, len) == 0)
			return (ssize_t)i;
	return -1;
}

int st_infer_csv_header(struct st_infer *s, const struct st_csv_record *hdr, struct fl_err *err)
{
	if (s->named)
		return fl_err_set(err, FL_ERR_INTERNAL, "infer: the header must come first");
	if (hdr->error != NULL)
		return fl_err_set(err, FL_ERR_BAD_REQUEST, "csv header: %s", hdr->error);
	if (!hdr->utf8_valid)
		return fl_err_set(err, FL_ERR_BAD_REQUEST, "csv header is not valid UTF-8");
	for (size_t i = 0; i < hdr->n_fields; i++) {
		const struct st_csv_field *f = &hdr->fields[i];

		if (f->len == 0)
			return fl_err_set(err, FL_ERR_BAD_REQUEST,
			                  "csv header: column %zu has no name", i + 1);
		if (memchr(f->p, '\0', f->len) != NULL)
			return fl_err_set(err, FL_ERR_BAD_REQUEST,
			                  "csv header: column %zu has a NUL byte in its name",
			                  i + 1);
		for (size_t j = 0; j < i; j++)
			if (hdr->fields[j].len == f->len &&
			    memcmp(hdr->fields[j].p, f->p, f->len) == 0)
				return fl_err_set(err, FL_ERR_BAD_REQUEST,
				                  "csv header: column name \"%.64s\" appears twice",
				                  f->p);
	}
	if (reserve(s, hdr->n_fields, err) != 0)
		return -1;
	for (size_t i = 0; i < hdr->n_fields; i++)
		if (add_column(s, hdr->fields[i].p, hdr->fields[i].len, err) != 0)
			return -1;
	s->named = true;
	return 0;
}

int st_infer_csv_row(struct st_infer *s, const struct st_csv_record *rec, struct fl_err *err)
{
	if (rec->error != NULL)
		return fl_err_set(err, FL_ERR_BAD_REQUEST, "csv record: %s", rec->error);
	if (!rec->utf8_valid)
		return fl_err_set(err, FL_ERR_BAD_REQUEST,
		                  "csv record at line %llu is not valid UTF-8",
		                  (unsigned long long)rec->line);
	if (!s->named) {
		char name[32];

		if (reserve(s, rec->n_fields, err) != 0)
			return -1;
		for (size_t i = 0; i < rec->n_fields; i++) {
			snprintf(name, sizeof(name), "column_%zu", i + 1);
			if (add_column(s, name, strlen(name), err) != 0)
				return -1;
		}
		s->named = true;
	}
	if (rec->n_fields != s->n)
		return fl_err_set(err, FL_ERR_BAD_REQUEST,
		                  "csv record at line %llu has %zu fields, expected %zu",
		                  (unsigned long long)rec->line, rec->n_fields, s->n);
	for (size_t i = 0; i < s->n; i++)
		s->cols[i].k =
		        join(s->cols[i].k, classify_text(rec->fields[i].p, rec->fields[i].len));
	s->rows++;
	return 0;
}

static enum kind classify_json(const json_t *v)
{
	switch (json_typeof(v)) {
	case JSON_INTEGER: return K_LONG;
	case JSON_REAL: return K_DOUBLE;
	case JSON_TRUE:
	case JSON_FALSE: return K_BOOLEAN;
	case JSON_STRING: return classify_temporal(json_string_value(v), json_string_length(v));
	default: return K_NONE;
	}
}

int st_infer_json_object(struct st_infer *s, const json_t *obj, struct fl_err *err)
{
	const char *k;
	json_t *v;
	size_t fresh = 0;

	if (!json_is_object(obj))
		return fl_err_set(err, FL_ERR_BAD_REQUEST, "infer: expected a JSON object");
	/* Check everything first, so a refused object teaches nothing. */
	json_object_foreach((json_t *)obj, k, v)
	{
		size_t len = strlen(k);

		if (json_is_object(v) || json_is_array(v))
			return fl_err_set(
			        err, FL_ERR_BAD_REQUEST,
			        "key \"%.64s\" holds a nested %s; feeds take flat objects", k,
			        json_is_object(v) ? "object" : "array");
		if (len == 0)
			return fl_err_set(err, FL_ERR_BAD_REQUEST,
			                  "an empty key cannot name a column");
		if (find(s, k, len) < 0)
			fresh++;
	}
	if (reserve(s, fresh, err) != 0)
		return -1;
	json_object_foreach((json_t *)obj, k, v)
	{
		size_t len = strlen(k);
		ssize_t i = find(s, k, len);

		if (i < 0) {
			if (add_column(s, k, len, err) != 0)
				return -1;
			i = (ssize_t)s->n - 1;
		}
		s->cols[i].k = join(s->cols[i].k, classify_json(v));
	}
	s->named = true;
	s->rows++;
	return 0;
}

size_t st_infer_rows(const struct st_infer *s)
{
	return s->rows;
}

int st_infer_schema(const struct st_infer *s, json_t **out, struct fl_err *err)
{
	json_t *schema = NULL, *fields;

	if (s->n == 0)
		return fl_err_set(err, FL_ERR_BAD_REQUEST,
		                  "infer: no columns to infer a schema from");
	schema = json_pack("{s:s, s:i, s:[]}", "type", "struct", "schema-id", 0, "fields");
	if (schema == NULL)
		return nomem(err);
	fields = json_object_get(schema, "fields");
	for (size_t i = 0; i < s->n; i++) {
		json_t *f =
		        json_pack("{s:I, s:s, s:b, s:s}", "id", (json_int_t)(i + 1), "name",
		                  s->cols[i].name, "required", 0, "type", kind_names[s->cols[i].k]);

		if (f == NULL || json_array_append_new(fields, f) != 0) {
			json_decref(schema);
			return nomem(err);
		}
	}
	*out = schema;
	return 0;
}

static enum kind kind_of_name(const char *t)
{
	for (size_t i = K_LONG; i < sizeof(kind_names) / sizeof(kind_names[0]); i++)
		if (strcmp(kind_names[i], t) == 0)
			return (enum kind)i;
	return K_STRING;
}

const char *st_infer_join_type(const char *a, const char *b)
{
	if (a == NULL)
		return b;
	return kind_names[join(kind_of_name(a), kind_of_name(b))];
}

void st_infer_free(struct st_infer *s)
{
	if (s == NULL)
		return;
	for (size_t i = 0; i < s->n; i++)
		st_free(s->alloc, s->cols[i].name);
	st_free(s->alloc, s->cols);
	st_free(s->alloc, s);
}
