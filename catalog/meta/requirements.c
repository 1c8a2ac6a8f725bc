/* requirements.c - TableRequirement checks of a commit (REST spec
 * TableRequirement; Java UpdateRequirement.validate).
 *
 * All requirements are checked for shape before any is evaluated, so that
 * a malformed one is a 400 even when an earlier one would fail; then each is
 * evaluated in order and the first that does not hold is the 409.
 * Invariant: base is only read. */
#include "tablemeta.h"

#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>

enum req_kind {
	RQ_CREATE,
	RQ_UUID,
	RQ_REF,
	RQ_LAST_FIELD,
	RQ_SCHEMA,
	RQ_LAST_PARTITION,
	RQ_SPEC,
	RQ_ORDER,
};

/* The integer requirements: the request field and the metadata field it
 * is compared with. */
static const struct {
	const char *type;
	enum req_kind kind;
	const char *field; /* in the requirement */
	const char *meta; /* in the metadata */
} kinds[] = {
        {"assert-create", RQ_CREATE, NULL, NULL},
        {"assert-table-uuid", RQ_UUID, "uuid", "table-uuid"},
        {"assert-ref-snapshot-id", RQ_REF, "snapshot-id", NULL},
        {"assert-last-assigned-field-id", RQ_LAST_FIELD, "last-assigned-field-id",
         "last-column-id"},
        {"assert-current-schema-id", RQ_SCHEMA, "current-schema-id", "current-schema-id"},
        {"assert-last-assigned-partition-id", RQ_LAST_PARTITION, "last-assigned-partition-id",
         "last-partition-id"},
        {"assert-default-spec-id", RQ_SPEC, "default-spec-id", "default-spec-id"},
        {"assert-default-sort-order-id", RQ_ORDER, "default-sort-order-id",
         "default-sort-order-id"},
};

/* Index into kinds of a well-formed requirement, or -1 with err set. */
static int req_parse(const json_t *r, size_t i, struct fl_err *err)
{
	const char *type;
	const json_t *v;

	if (!json_is_object(r))
		return fl_err_set(err, FL_ERR_BAD_REQUEST, "requirements[%zu] must be an object",
		                  i);
	type = json_string_value(json_object_get(r, "type"));
	if (type == NULL)
		return fl_err_set(err, FL_ERR_BAD_REQUEST,
		                  "requirements[%zu]: missing required string field 'type'", i);
	for (int k = 0; k < (int)(sizeof(kinds) / sizeof(kinds[0])); k++) {
		if (strcmp(type, kinds[k].type) != 0)
			continue;
		switch (kinds[k].kind) {
		case RQ_CREATE: return k;
		case RQ_UUID:
			if (!json_is_string(json_object_get(r, "uuid")))
				return fl_err_set(
				        err, FL_ERR_BAD_REQUEST,
				        "requirements[%zu] %s: field 'uuid' must be a string", i,
				        type);
			return k;
		case RQ_REF:
			if (!json_is_string(json_object_get(r, "ref")))
				return fl_err_set(
				        err, FL_ERR_BAD_REQUEST,
				        "requirements[%zu] %s: field 'ref' must be a string", i,
				        type);
			/* the key is required; null means "the ref must not exist" */
			v = json_object_get(r, "snapshot-id");
			if (v == NULL || !(json_is_null(v) || json_is_integer(v)))
				return fl_err_set(
				        err, FL_ERR_BAD_REQUEST,
				        "requirements[%zu] %s: field 'snapshot-id' must be an integer or null",
				        i, type);
			return k;
		default:
			if (!json_is_integer(json_object_get(r, kinds[k].field)))
				return fl_err_set(
				        err, FL_ERR_BAD_REQUEST,
				        "requirements[%zu] %s: field '%s' must be an integer", i,
				        type, kinds[k].field);
			return k;
		}
	}
	return fl_err_set(err, FL_ERR_BAD_REQUEST,
	                  "requirements[%zu]: unknown requirement type '%.64s'", i, type);
}

static int failed(struct fl_err *err, const char *type, const char *fmt, ...) FL_PRINTF(3, 4);

/* A 409 naming the requirement and what was found. */
static int failed(struct fl_err *err, const char *type, const char *fmt, ...)
{
	char msg[200];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	return fl_err_set(err, FL_ERR_COMMIT_FAILED, "requirement %s failed: %s", type, msg);
}

static void int_str(const json_t *v, char buf[24])
{
	if (json_is_integer(v))
		snprintf(buf, 24, "%" JSON_INTEGER_FORMAT, json_integer_value(v));
	else
		snprintf(buf, 24, "%s", "none");
}

/* Java: a ref that exists must be at snapshot-id (which must then not be
 * null); a ref that does not exist must be expected as null. */
static int check_ref(const json_t *base, const json_t *r, const char *type, struct fl_err *err)
{
	const char *name = json_string_value(json_object_get(r, "ref"));
	const json_t *want = json_object_get(r, "snapshot-id");
	const json_t *refs = json_object_get(base, "refs"), *ref = json_object_get(refs, name);
	const json_t *have;
	char hs[24], ws[24], what[200];

	if (ref == NULL && refs == NULL && strcmp(name, "main") == 0 &&
	    cat_meta_current_snapshot_id(base) >= 0)
		ref = base; /* legacy document without refs: main is the current snapshot */
	have = ref == base ? json_object_get(base, "current-snapshot-id")
	                   : json_object_get(ref, "snapshot-id");
	int_str(have, hs);
	int_str(want, ws);
	if (ref != NULL) {
		const char *t =
		        ref == base ? NULL : json_string_value(json_object_get(ref, "type"));
		const char *kind = t != NULL && strcmp(t, "tag") == 0 ? "tag" : "branch";

		snprintf(what, sizeof(what), "%s %.100s", kind, name);
		if (json_is_null(want))
			return failed(err, type,
			              "%s was created concurrently (it is at %s, expected none)",
			              what, hs);
		if (json_integer_value(want) != json_integer_value(have))
			return failed(err, type, "%s is at %s, expected %s", what, hs, ws);
		return 0;
	}
	if (!json_is_null(want)) {
		snprintf(what, sizeof(what), "%.100s", name);
		return failed(err, type, "branch or tag %s is missing, expected %s", what, ws);
	}
	return 0;
}

int cat_meta_check_requirements(const json_t *base, const json_t *requirements, struct fl_err *err)
{
	bool create = false, other = false;
	size_t i;
	json_t *r;

	if (requirements == NULL || json_is_null(requirements))
		return 0;
	if (!json_is_array(requirements))
		return fl_err_set(err, FL_ERR_BAD_REQUEST, "'requirements' must be an array");
	json_array_foreach(requirements, i, r)
	{
		int k = req_parse(r, i, err);

		if (k < 0)
			return -1;
		if (kinds[k].kind == RQ_CREATE)
			create = true;
		else
			other = true;
	}
	if (create && other)
		return fl_err_set(
		        err, FL_ERR_BAD_REQUEST,
		        "invalid create requirements: assert-create must be the only requirement");
	json_array_foreach(requirements, i, r)
	{
		int k = req_parse(r, i, err);
		const char *type;
		const json_t *want, *have;
		char hs[24], ws[24];

		if (k < 0)
			return -1;
		type = kinds[k].type;

		if (kinds[k].kind == RQ_CREATE) {
			if (base != NULL)
				return failed(err, type, "the table already exists");
			continue;
		}
		if (base == NULL)
			return failed(err, type, "the table does not exist");
		switch (kinds[k].kind) {
		case RQ_UUID: {
			const char *w = json_string_value(json_object_get(r, "uuid"));
			const char *h = cat_meta_uuid(base);

			if (h == NULL || strcasecmp(w, h) != 0)
				return failed(err, type, "table uuid is %s, expected %s",
				              h ? h : "none", w);
			break;
		}
		case RQ_REF:
			if (check_ref(base, r, type, err) < 0)
				return -1;
			break;
		default:
			want = json_object_get(r, kinds[k].field);
			have = json_object_get(base, kinds[k].meta);
			if (!json_is_integer(have) ||
			    json_integer_value(have) != json_integer_value(want)) {
				int_str(have, hs);
				int_str(want, ws);
				return fl_err_set(err, FL_ERR_COMMIT_FAILED,
				                  "requirement %s failed: %s is %s, expected %s",
				                  type, kinds[k].meta, hs, ws);
			}
			break;
		}
	}
	return 0;
}
