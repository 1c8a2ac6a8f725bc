/* test_router.c - path splitting and route matching, with a struct srv_req
 * built on an arena: no daemon and no network.
 *
 * Every row of srv_routes is exercised by building a concrete path from its
 * template, with and without the {prefix} segment. */
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

#include "router.h"

/* ---- srv_path_split ---- */

struct split_case {
	const char *raw;
	int max;
	int rc;
	enum fl_err_kind kind; /* on failure */
	const char *msg_has; /* on failure */
	int n; /* on success */
	const char *segs[5]; /* on success */
};

static const struct split_case split_cases[] = {
        {"/", 32, 0, 0, NULL, 0, {NULL}},
        {"/healthz", 32, 0, 0, NULL, 1, {"healthz"}},
        {"/v1/config", 32, 0, 0, NULL, 2, {"v1", "config"}},
        {"/v1/a%2Fb/x", 32, 0, 0, NULL, 3, {"v1", "a/b", "x"}},
        {"/v1/ns/a%1Fb",
         32,
         0,
         0,
         NULL,
         3,
         {"v1", "ns",
          "a\x1f"
          "b"}},
        {"/%25/+", 32, 0, 0, NULL, 2, {"%", "+"}}, /* '+' is data in a path */
        {"/a%20b", 32, 0, 0, NULL, 1, {"a b"}},
        {"/%2F", 32, 0, 0, NULL, 1, {"/"}},
        {"/a/b/c", 3, 0, 0, NULL, 3, {"a", "b", "c"}},
        {"", 32, -1, FL_ERR_BAD_REQUEST, "must start with '/'", 0, {NULL}},
        {"v1/config", 32, -1, FL_ERR_BAD_REQUEST, "must start with '/'", 0, {NULL}},
        {"%2Fv1", 32, -1, FL_ERR_BAD_REQUEST, "must start with '/'", 0, {NULL}},
        {"//", 32, -1, FL_ERR_NOT_FOUND, "empty path segment", 0, {NULL}},
        {"/v1//config", 32, -1, FL_ERR_NOT_FOUND, "empty path segment", 0, {NULL}},
        {"/v1/config/", 32, -1, FL_ERR_NOT_FOUND, "empty path segment", 0, {NULL}},
        {"//v1", 32, -1, FL_ERR_NOT_FOUND, "empty path segment", 0, {NULL}},
        {"/a/b/c/d", 3, -1, FL_ERR_NOT_FOUND, "more than 3 segments", 0, {NULL}},
        {"/v1/%zz",
         32,
         -1,
         FL_ERR_BAD_REQUEST,
         "path segment 2: invalid percent-encoding",
         0,
         {NULL}},
        {"/%2", 32, -1, FL_ERR_BAD_REQUEST, "path segment 1: invalid percent-encoding", 0, {NULL}},
        {"/a/b%",
         32,
         -1,
         FL_ERR_BAD_REQUEST,
         "path segment 2: invalid percent-encoding",
         0,
         {NULL}},
        {"/a/%00",
         32,
         -1,
         FL_ERR_BAD_REQUEST,
         "path segment 2: invalid percent-encoding",
         0,
         {NULL}},
};

static void test_split_table(void **state)
{
	for (size_t i = 0; i < sizeof(split_cases) / sizeof(split_cases[0]); i++) {
		const struct split_case *c = &split_cases[i];
		struct fl_arena *a = fl_arena_new();
		char *segs[SRV_MAX_SEGS];
		struct fl_err err = {0};
		int n = -7, rc;

		assert_non_null(a);
		rc = srv_path_split(a, c->raw, segs, c->max, &n, &err);
		if (rc != c->rc)
			fail_msg("split(\"%s\") returned %d (%s), want %d", c->raw, rc, err.msg,
			         c->rc);
		if (rc != 0) {
			if (err.kind != c->kind || strstr(err.msg, c->msg_has) == NULL)
				fail_msg("split(\"%s\"): %s \"%s\", want %s containing \"%s\"",
				         c->raw, fl_err_kind_name(err.kind), err.msg,
				         fl_err_kind_name(c->kind), c->msg_has);
			assert_int_equal(n, -7);
		} else {
			assert_int_equal(n, c->n);
			for (int k = 0; k < n; k++)
				assert_string_equal(segs[k], c->segs[k]);
		}
		fl_arena_free(a);
	}
}

static void test_split_max_segments(void **state)
{
	char raw[2 * SRV_MAX_SEGS + 8];
	struct fl_arena *a = fl_arena_new();
	char *segs[SRV_MAX_SEGS];
	struct fl_err err;
	int n;

	assert_non_null(a);
	for (int i = 0; i < SRV_MAX_SEGS; i++)
		memcpy(raw + 2 * i, "/s", 2);
	raw[2 * SRV_MAX_SEGS] = '\0';
	assert_int_equal(srv_path_split(a, raw, segs, SRV_MAX_SEGS, &n, &err), 0);
	assert_int_equal(n, SRV_MAX_SEGS);
	assert_string_equal(segs[SRV_MAX_SEGS - 1], "s");
	memcpy(raw + 2 * SRV_MAX_SEGS, "/s", 3);
	assert_int_equal(srv_path_split(a, raw, segs, SRV_MAX_SEGS, &n, &err), -1);
	assert_int_equal(err.kind, FL_ERR_NOT_FOUND);
	fl_arena_free(a);
}

/* ---- srv_route_match ---- */

/* Splits raw and matches it for method into *r (which owns arena a). */
static int route(struct srv_req *r, struct fl_arena *a, const char *method, const char *raw,
                 char *allow, size_t allow_cap, struct fl_err *err)
{
	memset(r, 0, sizeof(*r));
	r->arena = a;
	r->method = method;
	r->raw_path = raw;
	snprintf(r->id, sizeof(r->id), "test");
	if (srv_path_split(a, raw, r->segs, SRV_MAX_SEGS, &r->nsegs, err) != 0)
		return -1;
	return srv_route_match(r, allow, allow_cap, err);
}

/* Index of the route with this method and template, or -1. */
static int find_route(const char *method, const char *tpl)
{
	for (int i = 0; i < srv_route_count; i++)
		if (strcmp(srv_routes[i].method, method) == 0 &&
		    strcmp(srv_routes[i].path, tpl) == 0)
			return i;
	return -1;
}

/* Builds a concrete path from a template: {prefix} becomes wh (or is dropped
 * when wh is NULL), other parameters get recognisable values. */
static void instantiate(const char *tpl, const char *wh, char *out, size_t cap)
{
	size_t o = 0;

	out[0] = '\0';
	for (const char *p = tpl; *p == '/';) {
		const char *s = p + 1, *e = strchr(s, '/');
		size_t len = e ? (size_t)(e - s) : strlen(s);
		const char *val = NULL;
		char lit[64];

		p = s + len;
		if (len == 8 && strncmp(s, "{prefix}", 8) == 0) {
			if (wh == NULL)
				continue;
			val = wh;
		} else if (len == 11 && strncmp(s, "{namespace}", 11) == 0) {
			val = "ns1";
		} else if (s[0] == '{') {
			val = "thing";
		} else {
			snprintf(lit, sizeof(lit), "%.*s", (int)len, s);
			val = lit;
		}
		o += (size_t)snprintf(out + o, cap - o, "/%s", val);
		assert_true(o < cap);
	}
}

static void test_every_route_matches_itself(void **state)
{
	for (int k = 0; k < srv_route_count; k++) {
		const struct srv_route *rt = &srv_routes[k];
		bool has_prefix = strstr(rt->path, "{prefix}") != NULL;
		/* Only /v1/ routes may leave the prefix out (the default
		 * warehouse); the management API always names the warehouse. */
		bool optional = !has_prefix || strncmp(rt->path, "/v1/", 4) == 0;

		for (int with = optional ? 0 : 1; with <= (has_prefix ? 1 : 0); with++) {
			struct fl_arena *a = fl_arena_new();
			struct srv_req r;
			struct fl_err err = {0};
			char path[256], allow[64];

			assert_non_null(a);
			instantiate(rt->path, with ? "wh1" : NULL, path, sizeof(path));
			if (route(&r, a, rt->method, path, allow, sizeof(allow), &err) != 0)
				fail_msg("%s %s (from %s) did not match: %s", rt->method, path,
				         rt->path, err.msg);
			if (r.route != rt)
				fail_msg("%s %s matched %s %s, want %s", rt->method, path,
				         r.route->method, r.route->path, rt->path);
			assert_int_equal(srv_route_index(r.route), k);
			assert_false(r.head);
			if (with)
				assert_string_equal(r.prefix, "wh1");
			else
				assert_null(r.prefix);
			if (strstr(rt->path, "{namespace}") != NULL)
				assert_string_equal(r.namespace_raw, "ns1");
			else
				assert_null(r.namespace_raw);
			/* {view} binds like {table}: views are authorized as tables. */
			if (strstr(rt->path, "{table}") != NULL ||
			    strstr(rt->path, "{view}") != NULL)
				assert_string_equal(r.table, "thing");
			else
				assert_null(r.table);
			if (strstr(rt->path, "{name}") != NULL)
				assert_string_equal(r.name, "thing");
			else
				assert_null(r.name);
			fl_arena_free(a);
		}
	}
	assert_int_equal(srv_route_index(NULL), srv_route_count);
}

struct match_case {
	const char *method;
	const char *raw;
	/* Expected route (method + template), or NULL for an error. */
	const char *route_method;
	const char *route_tpl;
	const char *prefix, *ns, *name;
	bool head;
	enum fl_err_kind kind; /* when route_tpl is NULL */
	const char *allow; /* for 405 */
};

#define NS "/v1/{prefix}/namespaces"
#define NS1 "/v1/{prefix}/namespaces/{namespace}"
#define NSP "/v1/{prefix}/namespaces/{namespace}/properties"
#define WH "/management/v1/warehouses"
#define WH1 "/management/v1/warehouses/{name}"

static const struct match_case match_cases[] = {
        {"GET", "/v1/config", "GET", "/v1/config", NULL, NULL, NULL, false, 0, NULL},
        {"GET", "/v1/namespaces", "GET", NS, NULL, NULL, NULL, false, 0, NULL},
        {"GET", "/v1/wh/namespaces", "GET", NS, "wh", NULL, NULL, false, 0, NULL},
        {"POST", "/v1/namespaces", "POST", NS, NULL, NULL, NULL, false, 0, NULL},
        {"POST", "/v1/wh/namespaces", "POST", NS, "wh", NULL, NULL, false, 0, NULL},
        {"GET", "/v1/namespaces/a", "GET", NS1, NULL, "a", NULL, false, 0, NULL},
        {"GET", "/v1/wh/namespaces/a", "GET", NS1, "wh", "a", NULL, false, 0, NULL},
        {"HEAD", "/v1/namespaces/a", "HEAD", NS1, NULL, "a", NULL, false, 0, NULL},
        {"DELETE", "/v1/wh/namespaces/a", "DELETE", NS1, "wh", "a", NULL, false, 0, NULL},
        {"POST", "/v1/namespaces/a/properties", "POST", NSP, NULL, "a", NULL, false, 0, NULL},
        {"POST", "/v1/wh/namespaces/a/properties", "POST", NSP, "wh", "a", NULL, false, 0, NULL},
        /* Parameters are decoded: %1F separates levels, %2F is data. */
        {"GET", "/v1/namespaces/a%1Fb", "GET", NS1, NULL,
         "a\x1f"
         "b",
         NULL, false, 0, NULL},
        {"GET", "/v1/namespaces/a%2Fb", "GET", NS1, NULL, "a/b", NULL, false, 0, NULL},
        {"GET", "/v1/w%20h/namespaces/x", "GET", NS1, "w h", "x", NULL, false, 0, NULL},
        /* A namespace literally named "namespaces" (or another reserved word). */
        {"GET", "/v1/namespaces/namespaces", "GET", NS1, NULL, "namespaces", NULL, false, 0, NULL},
        {"GET", "/v1/wh/namespaces/namespaces", "GET", NS1, "wh", "namespaces", NULL, false, 0,
         NULL},
        {"POST", "/v1/namespaces/namespaces/properties", "POST", NSP, NULL, "namespaces", NULL,
         false, 0, NULL},
        {"GET", "/v1/namespaces/config", "GET", NS1, NULL, "config", NULL, false, 0, NULL},
        {"GET", "/v1/namespaces/properties", "GET", NS1, NULL, "properties", NULL, false, 0, NULL},
        /* A warehouse named like a route word that is not reserved. */
        {"GET", "/v1/v1/namespaces", "GET", NS, "v1", NULL, NULL, false, 0, NULL},
        {"GET", "/v1/properties/namespaces", "GET", NS, "properties", NULL, NULL, false, 0, NULL},
        /* Routes whose second segment is a reserved word. */
        {"POST", "/v1/tables/rename", "POST", "/v1/{prefix}/tables/rename", NULL, NULL, NULL, false,
         0, NULL},
        {"POST", "/v1/wh/tables/rename", "POST", "/v1/{prefix}/tables/rename", "wh", NULL, NULL,
         false, 0, NULL},
        {"POST", "/v1/transactions/commit", "POST", "/v1/{prefix}/transactions/commit", NULL, NULL,
         NULL, false, 0, NULL},
        {"GET", "/v1/namespaces/tables/tables", "GET", NS1 "/tables", NULL, "tables", NULL, false,
         0, NULL},
        /* Management API. */
        {"GET", "/management/v1/warehouses", "GET", WH, NULL, NULL, NULL, false, 0, NULL},
        {"POST", "/management/v1/warehouses", "POST", WH, NULL, NULL, NULL, false, 0, NULL},
        {"GET", "/management/v1/warehouses/w", "GET", WH1, NULL, NULL, "w", false, 0, NULL},
        {"DELETE", "/management/v1/warehouses/w", "DELETE", WH1, NULL, NULL, "w", false, 0, NULL},
        {"PUT", "/management/v1/warehouses/w", "PUT", WH1, NULL, NULL, "w", false, 0, NULL},
        {"GET", "/management/v1/warehouses/namespaces", "GET", WH1, NULL, NULL, "namespaces", false,
         0, NULL},
        /* HEAD falls back to the GET route and marks the request. */
        {"HEAD", "/healthz", "GET", "/healthz", NULL, NULL, NULL, true, 0, NULL},
        {"HEAD", "/v1/config", "GET", "/v1/config", NULL, NULL, NULL, true, 0, NULL},
        {"HEAD", "/v1/wh/namespaces", "GET", NS, "wh", NULL, NULL, true, 0, NULL},
        {"HEAD", "/management/v1/warehouses/w", "GET", WH1, NULL, NULL, "w", true, 0, NULL},
        {"HEAD", "/openapi.yaml", "GET", "/openapi.yaml", NULL, NULL, NULL, true, 0, NULL},
        /* 404: no template matches. */
        {"GET", "/", NULL, NULL, NULL, NULL, NULL, false, FL_ERR_NOT_FOUND, NULL},
        {"GET", "/v1", NULL, NULL, NULL, NULL, NULL, false, FL_ERR_NOT_FOUND, NULL},
        {"GET", "/v2/config", NULL, NULL, NULL, NULL, NULL, false, FL_ERR_NOT_FOUND, NULL},
        {"GET", "/v1/wh", NULL, NULL, NULL, NULL, NULL, false, FL_ERR_NOT_FOUND, NULL},
        {"GET", "/v1/wh/config", NULL, NULL, NULL, NULL, NULL, false, FL_ERR_NOT_FOUND, NULL},
        {"GET", "/v1/config/x", NULL, NULL, NULL, NULL, NULL, false, FL_ERR_NOT_FOUND, NULL},
        {"GET", "/v1/namespaces/a/b", NULL, NULL, NULL, NULL, NULL, false, FL_ERR_NOT_FOUND, NULL},
        {"GET", "/v1/a/b/namespaces", NULL, NULL, NULL, NULL, NULL, false, FL_ERR_NOT_FOUND, NULL},
        {"GET", "/V1/config", NULL, NULL, NULL, NULL, NULL, false, FL_ERR_NOT_FOUND, NULL},
        {"GET", "/healthz/x", NULL, NULL, NULL, NULL, NULL, false, FL_ERR_NOT_FOUND, NULL},
        {"GET", "/management/v1", NULL, NULL, NULL, NULL, NULL, false, FL_ERR_NOT_FOUND, NULL},
        {"GET", "/v1/namespaces/a/bogus", NULL, NULL, NULL, NULL, NULL, false, FL_ERR_NOT_FOUND,
         NULL},
        {"GET", "/v1/wh/namespaces/a/bogus/x", NULL, NULL, NULL, NULL, NULL, false,
         FL_ERR_NOT_FOUND, NULL},
        /* A reserved word is never a warehouse name. */
        {"GET", "/v1/tables/namespaces", NULL, NULL, NULL, NULL, NULL, false, FL_ERR_NOT_FOUND,
         NULL},
        {"GET", "/v1/config/namespaces", NULL, NULL, NULL, NULL, NULL, false, FL_ERR_NOT_FOUND,
         NULL},
        {"HEAD", "/nothing", NULL, NULL, NULL, NULL, NULL, false, FL_ERR_NOT_FOUND, NULL},
        /* 405 with the Allow list, in table order. */
        {"PUT", "/v1/namespaces", NULL, NULL, NULL, NULL, NULL, false, FL_ERR_METHOD_NOT_ALLOWED,
         "GET, HEAD, POST"},
        {"DELETE", "/v1/wh/namespaces", NULL, NULL, NULL, NULL, NULL, false,
         FL_ERR_METHOD_NOT_ALLOWED, "GET, HEAD, POST"},
        {"PATCH", "/v1/namespaces/a", NULL, NULL, NULL, NULL, NULL, false,
         FL_ERR_METHOD_NOT_ALLOWED, "GET, HEAD, DELETE"},
        {"POST", "/v1/namespaces/a", NULL, NULL, NULL, NULL, NULL, false, FL_ERR_METHOD_NOT_ALLOWED,
         "GET, HEAD, DELETE"},
        {"GET", "/v1/namespaces/a/properties", NULL, NULL, NULL, NULL, NULL, false,
         FL_ERR_METHOD_NOT_ALLOWED, "POST"},
        {"HEAD", "/v1/namespaces/a/properties", NULL, NULL, NULL, NULL, NULL, false,
         FL_ERR_METHOD_NOT_ALLOWED, "POST"},
        {"DELETE", "/v1/config", NULL, NULL, NULL, NULL, NULL, false, FL_ERR_METHOD_NOT_ALLOWED,
         "GET, HEAD"},
        {"POST", "/healthz", NULL, NULL, NULL, NULL, NULL, false, FL_ERR_METHOD_NOT_ALLOWED,
         "GET, HEAD"},
        {"DELETE", "/management/v1/warehouses", NULL, NULL, NULL, NULL, NULL, false,
         FL_ERR_METHOD_NOT_ALLOWED, "GET, HEAD, POST"},
        {"PATCH", "/management/v1/warehouses/w", NULL, NULL, NULL, NULL, NULL, false,
         FL_ERR_METHOD_NOT_ALLOWED, "GET, HEAD, PUT, DELETE"},
        {"get", "/v1/config", NULL, NULL, NULL, NULL, NULL, false, FL_ERR_METHOD_NOT_ALLOWED,
         "GET, HEAD"},
};

/* Fails unless a bound parameter is what the case wants (NULL = unbound). */
static void expect_param(const struct match_case *c, const char *what, const char *got,
                         const char *want)
{
	if (want == NULL ? got != NULL : (got == NULL || strcmp(got, want) != 0))
		fail_msg("%s %s: %s is \"%s\", want \"%s\"", c->method, c->raw, what,
		         got ? got : "(null)", want ? want : "(null)");
}

static void test_match_table(void **state)
{
	for (size_t i = 0; i < sizeof(match_cases) / sizeof(match_cases[0]); i++) {
		const struct match_case *c = &match_cases[i];
		struct fl_arena *a = fl_arena_new();
		struct srv_req r;
		struct fl_err err = {0};
		char allow[64];
		int rc;

		assert_non_null(a);
		if (c->route_tpl != NULL && find_route(c->route_method, c->route_tpl) < 0)
			fail_msg("no route %s %s in srv_routes", c->route_method, c->route_tpl);
		memset(allow, '#', sizeof(allow));
		rc = route(&r, a, c->method, c->raw, allow, sizeof(allow), &err);
		if (c->route_tpl == NULL) {
			if (rc == 0)
				fail_msg("%s %s matched %s %s, want %s", c->method, c->raw,
				         r.route->method, r.route->path, fl_err_kind_name(c->kind));
			if (err.kind != c->kind)
				fail_msg("%s %s: %s (%s), want %s", c->method, c->raw,
				         fl_err_kind_name(err.kind), err.msg,
				         fl_err_kind_name(c->kind));
			if (c->allow != NULL) {
				assert_string_equal(allow, c->allow);
				assert_non_null(strstr(err.msg, c->allow));
				assert_non_null(strstr(err.msg, c->method));
			}
			fl_arena_free(a);
			continue;
		}
		if (rc != 0)
			fail_msg("%s %s: %s", c->method, c->raw, err.msg);
		if (r.route != &srv_routes[find_route(c->route_method, c->route_tpl)])
			fail_msg("%s %s matched %s %s, want %s %s", c->method, c->raw,
			         r.route->method, r.route->path, c->route_method, c->route_tpl);
		assert_int_equal(r.head, c->head);
		expect_param(c, "prefix", r.prefix, c->prefix);
		expect_param(c, "namespace", r.namespace_raw, c->ns);
		expect_param(c, "name", r.name, c->name);
		fl_arena_free(a);
	}
}

static void test_not_found_message(void **state)
{
	struct fl_arena *a = fl_arena_new();
	struct srv_req r;
	struct fl_err err;
	char allow[64];

	assert_non_null(a);
	assert_int_equal(route(&r, a, "GET", "/v9/x", allow, sizeof(allow), &err), -1);
	assert_int_equal(err.kind, FL_ERR_NOT_FOUND);
	assert_string_equal(err.msg, "no route for GET /v9/x");
	assert_string_equal(allow, "");
	assert_null(r.route);
	fl_arena_free(a);
}

static void test_allow_small_buffer(void **state)
{
	/* A short Allow buffer truncates at a method boundary, never overflows. */
	for (size_t cap = 1; cap <= 24; cap++) {
		struct fl_arena *a = fl_arena_new();
		struct srv_req r;
		struct fl_err err;
		char allow[32];

		assert_non_null(a);
		memset(allow, '#', sizeof(allow));
		assert_int_equal(route(&r, a, "PUT", "/v1/namespaces/a", allow, cap, &err), -1);
		assert_int_equal(err.kind, FL_ERR_METHOD_NOT_ALLOWED);
		assert_non_null(memchr(allow, '\0', cap));
		for (size_t k = cap; k < sizeof(allow); k++)
			assert_int_equal(allow[k], '#');
		assert_true(strncmp("GET, HEAD, DELETE", allow, strlen(allow)) == 0);
		fl_arena_free(a);
	}
}

static void test_reserved_prefix(void **state)
{
	static const char *const reserved[] = {"namespaces", "tables", "transactions",
	                                       "views",      "config", "oauth"};
	static const char *const plain[] = {"",           "wh",         "default",
	                                    "Namespaces", "namespace",  "v1",
	                                    "properties", "management", "config2"};

	for (size_t i = 0; i < sizeof(reserved) / sizeof(reserved[0]); i++)
		assert_true(srv_is_reserved_prefix(reserved[i]));
	for (size_t i = 0; i < sizeof(plain) / sizeof(plain[0]); i++)
		if (srv_is_reserved_prefix(plain[i]))
			fail_msg("\"%s\" should not be reserved", plain[i]);
}

static void test_table_sane(void **state)
{
	/* No two rows share method and template (the second could never match),
	 * every row has a handler, and every template starts with '/'. */
	for (int i = 0; i < srv_route_count; i++) {
		assert_non_null(srv_routes[i].handler);
		assert_int_equal(srv_routes[i].path[0], '/');
		for (int k = 0; k < i; k++)
			if (strcmp(srv_routes[i].method, srv_routes[k].method) == 0 &&
			    strcmp(srv_routes[i].path, srv_routes[k].path) == 0)
				fail_msg("duplicate route %s %s", srv_routes[i].method,
				         srv_routes[i].path);
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	        cmocka_unit_test(test_split_table),
	        cmocka_unit_test(test_split_max_segments),
	        cmocka_unit_test(test_every_route_matches_itself),
	        cmocka_unit_test(test_match_table),
	        cmocka_unit_test(test_not_found_message),
	        cmocka_unit_test(test_allow_small_buffer),
	        cmocka_unit_test(test_reserved_prefix),
	        cmocka_unit_test(test_table_sane),
	};

	return cmocka_run_group_tests_name("server/router", tests, NULL, NULL);
}
