/* policy.c - S3 table locations and per-table IAM session policies.
 *
 * The policy (IAM JSON policy grammar, version 2012-10-17), keys in this
 * order, compact:
 *   {"Version":"2012-10-17","Statement":[
 *    {"Sid":"TableObjects","Effect":"Allow","Action":[…],
 *     "Resource":["arn:aws:s3:::BUCKET/PREFIX/" WILDCARD]},
 *    {"Sid":"TableList","Effect":"Allow","Action":["s3:ListBucket"],
 *     "Resource":["arn:aws:s3:::BUCKET"],
 *     "Condition":{"StringLike":{"s3:prefix":["PREFIX/","PREFIX/" WILDCARD]}}},
 *    {"Sid":"BucketLocation","Effect":"Allow","Action":["s3:GetBucketLocation"],
 *     "Resource":["arn:aws:s3:::BUCKET"]}]}
 * where WILDCARD is the character '*'.  Actions on objects: s3:GetObject for read; read-write adds s3:PutObject,
 * s3:DeleteObject and s3:AbortMultipartUpload. */
#include "policy.h"

#include "io/profile.h"

#include <jansson.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

/* STS limits a packed inline session policy to 2048 characters. */
#define POLICY_MAX 2048

const char *st_access_name(enum st_access a)
{
	return a == ST_ACCESS_READ ? "read" : "read-write";
}

int st_s3_loc_parse(const char *uri, struct st_s3_loc *out, struct fl_err *err)
{
	struct st_s3_loc loc;
	const char *p;
	size_t pl;

	if (st_s3_uri_split(uri, loc.bucket, sizeof(loc.bucket), &p, err) != 0)
		return -1;
	pl = strlen(p);
	while (pl > 0 && p[pl - 1] == '/')
		pl--;
	if (pl >= sizeof(loc.prefix))
		return fl_err_set(err, FL_ERR_BAD_REQUEST, "location '%.100s…' is too long", uri);
	for (size_t i = 0; i < pl;) {
		const char *e = memchr(p + i, '/', pl - i);
		size_t sl = e ? (size_t)(e - (p + i)) : pl - i;

		if (sl == 0 || (sl == 1 && p[i] == '.') ||
		    (sl == 2 && p[i] == '.' && p[i + 1] == '.'))
			return fl_err_set(err, FL_ERR_BAD_REQUEST,
			                  "location '%.200s' has an empty, '.' or '..' segment",
			                  uri);
		i += sl + 1;
	}
	for (size_t i = 0; i < pl; i++)
		if ((unsigned char)p[i] < 0x20 || p[i] == 127 || p[i] == '\\')
			return fl_err_set(err, FL_ERR_BAD_REQUEST,
			                  "location '%.200s' holds a control byte or backslash",
			                  uri);
	memcpy(loc.prefix, p, pl);
	loc.prefix[pl] = '\0';
	*out = loc;
	return 0;
}

/* Appends s to an array; false when out of memory. */
static bool add(json_t *arr, json_t *v)
{
	return v != NULL && json_array_append_new(arr, v) == 0;
}

static json_t *strs(const char *const *v, size_t n)
{
	json_t *a = json_array();

	for (size_t i = 0; a != NULL && i < n; i++)
		if (!add(a, json_string(v[i]))) {
			json_decref(a);
			return NULL;
		}
	return a;
}

int st_policy_session(const struct st_s3_loc *loc, enum st_access a, char **out, size_t *len,
                      struct fl_err *err)
{
	static const char *const read_actions[] = {"s3:GetObject"};
	static const char *const write_actions[] = {"s3:GetObject", "s3:PutObject",
	                                            "s3:DeleteObject", "s3:AbortMultipartUpload"};
	char objects[1200], bucket[96], p1[1100], p2[1100];
	const char *pv[2] = {p1, p2}, *rv[1];
	json_t *doc = NULL, *st;
	char *s = NULL;
	int rc = -1;

	if (loc->prefix[0] == '\0')
		return fl_err_set(
		        err, FL_ERR_BAD_REQUEST,
		        "cannot vend credentials for s3://%s: a table location must name a "
		        "key prefix, not a whole bucket",
		        loc->bucket);
	if (strpbrk(loc->prefix, "*?") != NULL || strstr(loc->prefix, "${") != NULL)
		return fl_err_set(
		        err, FL_ERR_BAD_REQUEST,
		        "cannot vend credentials for s3://%s/%.200s: the location holds an "
		        "IAM wildcard ('*', '?' or '${') that would widen the policy",
		        loc->bucket, loc->prefix);
	snprintf(objects, sizeof(objects), "arn:aws:s3:::%s/%s/*", loc->bucket, loc->prefix);
	snprintf(bucket, sizeof(bucket), "arn:aws:s3:::%s", loc->bucket);
	snprintf(p1, sizeof(p1), "%s/", loc->prefix);
	snprintf(p2, sizeof(p2), "%s/*", loc->prefix);
	doc = json_object();
	st = json_array();
	if (doc == NULL || st == NULL ||
	    json_object_set_new(doc, "Version", json_string("2012-10-17")) != 0 ||
	    json_object_set_new(doc, "Statement", st) != 0)
		goto nomem;
	rv[0] = objects;
	if (!add(st,
	         json_pack("{s:s,s:s,s:o,s:o}", "Sid", "TableObjects", "Effect", "Allow", "Action",
	                   a == ST_ACCESS_READ ? strs(read_actions, 1) : strs(write_actions, 4),
	                   "Resource", strs(rv, 1))))
		goto nomem;
	rv[0] = bucket;
	if (!add(st, json_pack("{s:s,s:s,s:[s],s:o,s:{s:{s:o}}}", "Sid", "TableList", "Effect",
	                       "Allow", "Action", "s3:ListBucket", "Resource", strs(rv, 1),
	                       "Condition", "StringLike", "s3:prefix", strs(pv, 2))) ||
	    !add(st, json_pack("{s:s,s:s,s:[s],s:o}", "Sid", "BucketLocation", "Effect", "Allow",
	                       "Action", "s3:GetBucketLocation", "Resource", strs(rv, 1))))
		goto nomem;
	s = json_dumps(doc, JSON_COMPACT);
	if (s == NULL)
		goto nomem;
	if (strlen(s) > POLICY_MAX) {
		fl_err_set(err, FL_ERR_TOO_LARGE,
		           "the session policy for s3://%s/%.100s… is %zu bytes; STS accepts %d",
		           loc->bucket, loc->prefix, strlen(s), POLICY_MAX);
		free(s);
		goto out;
	}
	*len = strlen(s);
	*out = s;
	rc = 0;
	goto out;
nomem:
	fl_err_set(err, FL_ERR_NOMEM, "out of memory");
out:
	json_decref(doc);
	return rc;
}
