/* fuzz_router.c - srv_path_split and srv_route_match on arbitrary paths.
 *
 * The first byte chooses the method and the size of the Allow buffer; the
 * rest is the raw path.  Invariants: split segments are non-empty and at
 * most SRV_MAX_SEGS; a match binds a route of the request's method (or GET
 * for HEAD) and never a reserved word as the warehouse prefix; a miss is
 * 404 or 405 with a NUL-terminated Allow list inside its buffer. */
#include <string.h>

#include "fuzz.h"
#include "router.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static const char *const methods[] = {"GET", "HEAD", "POST", "PUT", "DELETE", "PATCH"};
	struct fl_arena *a;
	struct srv_req r;
	struct fl_err err = {0};
	char *raw, *allow;
	size_t allow_cap;
	int rc;

	if (size == 0)
		return 0;
	a = fl_arena_new();
	FUZZ_CHECK(a != NULL);
	memset(&r, 0, sizeof(r));
	r.arena = a;
	r.method = methods[data[0] % 6];
	allow_cap = 1 + (size_t)(data[0] >> 3) * 2; /* 1..63 */
	raw = malloc(size);
	allow = malloc(allow_cap);
	FUZZ_CHECK(raw != NULL && allow != NULL);
	memcpy(raw, data + 1, size - 1);
	raw[size - 1] = '\0';
	r.raw_path = raw;

	rc = srv_path_split(a, raw, r.segs, SRV_MAX_SEGS, &r.nsegs, &err);
	if (rc != 0) {
		FUZZ_CHECK(err.kind == FL_ERR_BAD_REQUEST || err.kind == FL_ERR_NOT_FOUND);
		goto out;
	}
	FUZZ_CHECK(r.nsegs >= 0 && r.nsegs <= SRV_MAX_SEGS);
	for (int i = 0; i < r.nsegs; i++)
		FUZZ_CHECK(r.segs[i][0] != '\0');

	rc = srv_route_match(&r, allow, allow_cap, &err);
	FUZZ_CHECK(memchr(allow, '\0', allow_cap) != NULL);
	if (rc == 0) {
		FUZZ_CHECK(r.route != NULL);
		FUZZ_CHECK(srv_route_index(r.route) >= 0 &&
		           srv_route_index(r.route) < srv_route_count);
		if (r.head && strcmp(r.method, "HEAD") == 0)
			FUZZ_CHECK(strcmp(r.route->method, "GET") == 0);
		else
			FUZZ_CHECK(strcmp(r.route->method, r.method) == 0);
		FUZZ_CHECK(r.prefix == NULL || !srv_is_reserved_prefix(r.prefix));
		/* Exactly the template's parameters are bound. */
		FUZZ_CHECK((r.namespace_raw != NULL) ==
		           (strstr(r.route->path, "{namespace}") != NULL));
		/* {view} binds r.table too: one name slot for tables and views. */
		FUZZ_CHECK((r.table != NULL) == (strstr(r.route->path, "{table}") != NULL ||
		                                 strstr(r.route->path, "{view}") != NULL));
		FUZZ_CHECK((r.name != NULL) == (strstr(r.route->path, "{name}") != NULL));
		if (strstr(r.route->path, "{prefix}") == NULL)
			FUZZ_CHECK(r.prefix == NULL);
	} else {
		FUZZ_CHECK(err.kind == FL_ERR_NOT_FOUND || err.kind == FL_ERR_METHOD_NOT_ALLOWED);
		if (err.kind == FL_ERR_NOT_FOUND)
			FUZZ_CHECK(allow[0] == '\0');
	}
out:
	free(allow);
	free(raw);
	fl_arena_free(a);
	return 0;
}
