/* meta_test.c - helpers shared by the catalog/meta unit tests (see meta_test.h). */
#include "meta_test.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

json_t *tm_json(const char *text)
{
	char *s = strdup(text);
	json_error_t je;
	json_t *v;

	assert_non_null(s);
	for (char *p = s; *p; p++) {
		if (*p == '\'')
			*p = '"';
	}
	v = json_loads(s, JSON_REJECT_DUPLICATES | JSON_DECODE_ANY, &je);
	if (v == NULL)
		fail_msg("bad test JSON at column %d: %s\n%s", je.column, je.text, s);
	free(s);
	return v;
}

/* Splits *p at the next sep (replaced by NUL); NULL when nothing is left. */
static char *next_part(char **p, char sep)
{
	char *start = *p, *end;

	if (start == NULL || *start == '\0')
		return NULL;
	end = strchr(start, sep);
	if (end != NULL) {
		*end = '\0';
		*p = end + 1;
	} else {
		*p = NULL;
	}
	return start;
}

json_t *tm_get(const json_t *doc, const char *path)
{
	char buf[256], *rest = buf, *part;
	json_t *cur = (json_t *)doc;

	snprintf(buf, sizeof(buf), "%s", path);
	while (cur != NULL && (part = next_part(&rest, '/')) != NULL) {
		if (json_is_array(cur))
			cur = json_array_get(cur, strtoul(part, NULL, 10));
		else
			cur = json_object_get(cur, part);
	}
	return cur;
}

static void check_one(const json_t *doc, char *c)
{
	char *eq = strchr(c, '='), *hash = strchr(c, '#');
	json_t *v;

	if (c[0] == '!') {
		if (tm_get(doc, c + 1) != NULL)
			fail_msg("expected nothing at %s", c + 1);
		return;
	}
	if (eq != NULL) {
		json_t *want;
		char *got, *exp;

		*eq = '\0';
		v = tm_get(doc, c);
		want = tm_json(eq + 1);
		if (v == NULL || !json_equal(v, want)) {
			got = v ? json_dumps(v, JSON_ENCODE_ANY | JSON_COMPACT)
			        : strdup("(absent)");
			exp = json_dumps(want, JSON_ENCODE_ANY | JSON_COMPACT);
			print_error("at %s: got %s, expected %s\n", c, got, exp);
			free(got);
			free(exp);
			json_decref(want);
			fail();
		}
		json_decref(want);
		return;
	}
	if (hash != NULL) {
		size_t n;

		*hash = '\0';
		v = tm_get(doc, c);
		if (v == NULL)
			fail_msg("nothing at %s", c);
		n = json_is_array(v) ? json_array_size(v) : json_object_size(v);
		if (n != strtoul(hash + 1, NULL, 10))
			fail_msg("at %s: %zu members, expected %s", c, n, hash + 1);
		return;
	}
	fail_msg("bad check '%s'", c);
}

void tm_check(const json_t *doc, const char *checks)
{
	char *buf, *rest, *c;

	if (checks == NULL)
		return;
	buf = strdup(checks);
	assert_non_null(buf);
	rest = buf;
	while ((c = next_part(&rest, ';')) != NULL) {
		while (*c == ' ')
			c++;
		if (*c)
			check_one(doc, c);
	}
	free(buf);
}

json_t *tm_table(int fv)
{
	char req[1024];
	struct fl_err err = {0};
	json_t *r, *out = NULL;

	snprintf(req, sizeof(req),
	         "{'name':'t','schema':{'type':'struct','schema-id':0,'identifier-field-ids':[1],"
	         "'fields':[{'id':1,'name':'id','required':true,'type':'long'},"
	         "{'id':2,'name':'data','required':false,'type':'string'},"
	         "{'id':3,'name':'ts','required':false,'type':'timestamptz'}]},"
	         "'properties':{'format-version':'%d'}}",
	         fv);
	r = tm_json(req);
	if (cat_meta_create(r, TM_LOCATION, TM_UUID, TM_NOW, &out, &err) != 0)
		fail_msg("tm_table: %s", err.msg);
	json_decref(r);
	return out;
}

json_t *tm_apply_ok(const json_t *base, const char *updates, int64_t now_ms)
{
	struct fl_err err = {0};
	json_t *u = tm_json(updates), *out = NULL;
	bool changed = false;

	if (cat_meta_apply(base, "s3://bucket/wh/ns/t/metadata/00000-a.metadata.json", u, now_ms,
	                   1000, &out, &changed, &err) != 0)
		fail_msg("apply failed: %s", err.msg);
	json_decref(u);
	if (cat_meta_validate(out, &err) != 0)
		fail_msg("result does not validate: %s", err.msg);
	return out;
}

void tm_err_is(const struct fl_err *err, enum fl_err_kind kind, const char *want)
{
	if (err->kind != kind)
		fail_msg("error kind %s, expected %s: %s", fl_err_kind_name(err->kind),
		         fl_err_kind_name(kind), err->msg);
	if (want != NULL && strstr(err->msg, want) == NULL)
		fail_msg("error message '%s' does not contain '%s'", err->msg, want);
}
