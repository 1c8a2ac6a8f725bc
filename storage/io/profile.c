/* profile.c - parsing and validating storage profiles (see profile.h).
 *
 * Invariant: a profile that parses names no secret; the keys it refers to
 * are read only by st_profile_credentials, into caller memory. */
#include "profile.h"

#include <ctype.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "clock.h"
#include "json.h"

#define WHAT "storage-profile"

/* Keys a client might try to pass a secret with: refused with a hint. */
static const char *const secret_keys[] = {"access-key-id",        "secret-access-key",
                                          "session-token",        "s3.access-key-id",
                                          "s3.secret-access-key", "s3.session-token"};

static const char *const file_keys[] = {"type", "location"};
static const char *const s3_keys[] = {"type",
                                      "location",
                                      "endpoint",
                                      "region",
                                      "path-style-access",
                                      "access-key-id-env",
                                      "secret-access-key-env",
                                      "session-token-env",
                                      "credentials-file",
                                      "sts-role-arn",
                                      "sts-endpoint",
                                      "sts-external-id",
                                      "credential-lifetime",
                                      "remote-signing"};

static int check_keys(const json_t *j, const char *const *keys, size_t n, const char *type,
                      struct fl_err *err)
{
	const char *k;
	json_t *v;

	json_object_foreach((json_t *)j, k, v)
	{
		size_t i;

		for (i = 0; i < sizeof(secret_keys) / sizeof(*secret_keys); i++)
			if (strcmp(k, secret_keys[i]) == 0)
				return fl_err_set(
				        err, FL_ERR_BAD_REQUEST,
				        WHAT
				        ": key '%s' is refused: secrets are never stored; name an environment variable with access-key-id-env / secret-access-key-env, or a credentials-file",
				        k);
		for (i = 0; i < n && strcmp(k, keys[i]) != 0; i++)
			;
		if (i == n)
			return fl_err_set(err, FL_ERR_BAD_REQUEST,
			                  WHAT ": unknown key '%.100s' for type %s", k, type);
	}
	return 0;
}

/* Copies the optional string member key into out (cap bytes) when present. */
static int opt_str(const json_t *j, const char *key, char *out, size_t cap, struct fl_err *err)
{
	const char *s = NULL;

	if (fl_json_get_str(j, key, false, WHAT, &s, err) != 0)
		return -1;
	if (s == NULL)
		return 0;
	if (strlen(s) >= cap)
		return fl_err_set(err, FL_ERR_BAD_REQUEST, WHAT ": %s is longer than %zu bytes",
		                  key, cap - 1);
	snprintf(out, cap, "%s", s);
	return 0;
}

/* A variable a profile may name: shaped like one, and none whose value
 * is a secret of Floe's own or of libpq's (the profile is written by a
 * warehouse admin, and its credentials go to the endpoint it names). */
static bool env_name_ok(const char *s)
{
	static const char *const own[] = {"FLOE_DATABASE_URL", "FLOE_BOOTSTRAP_CLIENT_SECRET",
	                                  "FLOE_TOKEN_SIGNING_KEY", "DATABASE_URL"};

	for (size_t i = 0; i < sizeof(own) / sizeof(own[0]); i++)
		if (strcmp(s, own[i]) == 0)
			return false;
	if (strncmp(s, "PG", 2) == 0)
		return false;
	if (!(isalpha((unsigned char)s[0]) || s[0] == '_'))
		return false;
	for (; *s; s++)
		if (!(isalnum((unsigned char)*s) || *s == '_'))
			return false;
	return true;
}

static bool bucket_ok(const char *b, size_t n)
{
	if (n < 3 || n > 63)
		return false;
	for (size_t i = 0; i < n; i++)
		if (!(islower((unsigned char)b[i]) || isdigit((unsigned char)b[i]) || b[i] == '-' ||
		      b[i] == '.'))
			return false;
	return b[0] != '-' && b[0] != '.' && b[n - 1] != '-' && b[n - 1] != '.';
}

int st_s3_uri_split(const char *uri, char *bucket, size_t bucket_cap, const char **key,
                    struct fl_err *err)
{
	const char *b, *slash;
	size_t n;

	if (strncmp(uri, "s3://", 5) != 0)
		return fl_err_set(err, FL_ERR_BAD_REQUEST, "%.200s is not an s3:// location", uri);
	b = uri + 5;
	slash = strchr(b, '/');
	n = slash ? (size_t)(slash - b) : strlen(b);
	if (!bucket_ok(b, n) || n >= bucket_cap)
		return fl_err_set(err, FL_ERR_BAD_REQUEST,
		                  "%.200s: '%.*s' is not a valid bucket name (3-63 of a-z 0-9 . -)",
		                  uri, (int)(n > 63 ? 63 : n), b);
	memcpy(bucket, b, n);
	bucket[n] = '\0';
	*key = slash ? slash + 1 : b + n;
	return 0;
}

/* "http(s)://host[:port]" without path, query or user info. */
static int endpoint_norm(const char *key, char *ep, struct fl_err *err)
{
	size_t n = strlen(ep);
	const char *host;

	while (n > 0 && ep[n - 1] == '/')
		ep[--n] = '\0';
	if (strncmp(ep, "http://", 7) == 0)
		host = ep + 7;
	else if (strncmp(ep, "https://", 8) == 0)
		host = ep + 8;
	else
		return fl_err_set(err, FL_ERR_BAD_REQUEST,
		                  WHAT ": %s must start with http:// or https://", key);
	if (*host == '\0' || strpbrk(host, "/?#@ \t\r\n\\") != NULL)
		return fl_err_set(err, FL_ERR_BAD_REQUEST,
		                  WHAT ": %s must be scheme://host[:port] without a path", key);
	return 0;
}

static int parse_file(const json_t *j, struct st_profile *p, struct fl_err *err)
{
	if (check_keys(j, file_keys, sizeof(file_keys) / sizeof(*file_keys), "file", err) != 0)
		return -1;
	if (strncmp(p->location, "file:///", 8) != 0 || strlen(p->location) <= 8 ||
	    strstr(p->location, "/../") != NULL || strstr(p->location, "/./") != NULL)
		return fl_err_set(
		        err, FL_ERR_BAD_REQUEST,
		        WHAT
		        ": a file warehouse needs an absolute location like file:///var/lib/floe/wh");
	return 0;
}

static int parse_s3(const json_t *j, struct st_profile *p, struct fl_err *err)
{
	const char *key, *lifetime = NULL;
	const char *envs[3] = {"access-key-id-env", "secret-access-key-env", "session-token-env"};
	char *env_out[3] = {p->access_key_id_env, p->secret_access_key_env, p->session_token_env};

	if (check_keys(j, s3_keys, sizeof(s3_keys) / sizeof(*s3_keys), "s3", err) != 0)
		return -1;
	if (strncmp(p->location, "s3://", 5) != 0)
		return fl_err_set(err, FL_ERR_BAD_REQUEST,
		                  WHAT
		                  ": an s3 warehouse needs a location like s3://bucket/prefix");
	if (st_s3_uri_split(p->location, p->bucket, sizeof(p->bucket), &key, err) != 0)
		return fl_err_prefix(err, WHAT ": location");
	snprintf(p->prefix, sizeof(p->prefix), "%s", key);
	if (strstr(p->location + 5, "//") != NULL || strstr(key, "/../") != NULL ||
	    strncmp(key, "../", 3) == 0 || strstr(key, "/./") != NULL || strcmp(key, "..") == 0 ||
	    key[0] == '/')
		return fl_err_set(err, FL_ERR_BAD_REQUEST,
		                  WHAT ": location must not contain empty, '.' or '..' segments");
	if (opt_str(j, "endpoint", p->endpoint, sizeof(p->endpoint), err) != 0 ||
	    opt_str(j, "region", p->region, sizeof(p->region), err) != 0 ||
	    opt_str(j, "credentials-file", p->credentials_file, sizeof(p->credentials_file), err) !=
	            0 ||
	    opt_str(j, "sts-role-arn", p->sts_role_arn, sizeof(p->sts_role_arn), err) != 0 ||
	    opt_str(j, "sts-endpoint", p->sts_endpoint, sizeof(p->sts_endpoint), err) != 0 ||
	    opt_str(j, "sts-external-id", p->sts_external_id, sizeof(p->sts_external_id), err) !=
	            0 ||
	    fl_json_get_bool(j, "path-style-access", false, WHAT, &p->path_style, err) != 0 ||
	    fl_json_get_bool(j, "remote-signing", false, WHAT, &p->remote_signing, err) != 0 ||
	    fl_json_get_str(j, "credential-lifetime", false, WHAT, &lifetime, err) != 0)
		return -1;
	for (int i = 0; i < 3; i++) {
		if (opt_str(j, envs[i], env_out[i], 128, err) != 0)
			return -1;
		if (json_object_get(j, envs[i]) != NULL && !env_name_ok(env_out[i]))
			return fl_err_set(
			        err, FL_ERR_BAD_REQUEST,
			        WHAT
			        ": %s must name an environment variable ([A-Za-z_][A-Za-z0-9_]*) "
			        "other than Floe's own secrets and libpq's PG*",
			        envs[i]);
	}
	if (p->credentials_file[0] != '\0') {
		if (json_object_get(j, "access-key-id-env") != NULL ||
		    json_object_get(j, "secret-access-key-env") != NULL ||
		    json_object_get(j, "session-token-env") != NULL)
			return fl_err_set(
			        err, FL_ERR_BAD_REQUEST,
			        WHAT ": give either credentials-file or the -env keys, not both");
		if (p->credentials_file[0] != '/')
			return fl_err_set(err, FL_ERR_BAD_REQUEST,
			                  WHAT ": credentials-file must be an absolute path");
	} else {
		if (p->access_key_id_env[0] == '\0')
			snprintf(p->access_key_id_env, 128, "AWS_ACCESS_KEY_ID");
		if (p->secret_access_key_env[0] == '\0')
			snprintf(p->secret_access_key_env, 128, "AWS_SECRET_ACCESS_KEY");
	}
	if (p->endpoint[0] != '\0' && endpoint_norm("endpoint", p->endpoint, err) != 0)
		return -1;
	if (p->sts_endpoint[0] != '\0' && endpoint_norm("sts-endpoint", p->sts_endpoint, err) != 0)
		return -1;
	if (p->region[0] == '\0')
		snprintf(p->region, sizeof(p->region), "us-east-1");
	for (const char *c = p->region; *c; c++)
		if (!(islower((unsigned char)*c) || isdigit((unsigned char)*c) || *c == '-'))
			return fl_err_set(err, FL_ERR_BAD_REQUEST,
			                  WHAT
			                  ": region '%.63s' is not a region name like us-east-1",
			                  p->region);
	if (p->sts_role_arn[0] != '\0' && strncmp(p->sts_role_arn, "arn:", 4) != 0)
		return fl_err_set(err, FL_ERR_BAD_REQUEST,
		                  WHAT
		                  ": sts-role-arn must be an ARN (arn:aws:iam::ACCOUNT:role/NAME)");
	if (p->sts_external_id[0] != '\0' && p->sts_role_arn[0] == '\0')
		return fl_err_set(err, FL_ERR_BAD_REQUEST,
		                  WHAT ": sts-external-id needs sts-role-arn");
	p->credential_lifetime_s = 3600;
	if (lifetime != NULL) {
		p->credential_lifetime_s = fl_duration_parse(lifetime);
		if (p->credential_lifetime_s < 900 || p->credential_lifetime_s > 43200)
			return fl_err_set(
			        err, FL_ERR_BAD_REQUEST,
			        WHAT
			        ": credential-lifetime must be an ISO-8601 duration between PT15M and PT12H (STS limits), like PT1H");
	}
	return 0;
}

int st_profile_parse(const json_t *j, struct st_profile *out, json_t **norm, struct fl_err *err)
{
	struct st_profile *p;
	const char *type = NULL, *loc = NULL;
	size_t n;
	int rc;

	if (!json_is_object(j))
		return fl_err_set(err, FL_ERR_BAD_REQUEST, WHAT " must be an object");
	if (fl_json_get_str(j, "type", true, WHAT, &type, err) != 0 ||
	    fl_json_get_str(j, "location", true, WHAT, &loc, err) != 0)
		return -1;
	n = strlen(loc);
	while (n > 0 && loc[n - 1] == '/')
		n--;
	if (n >= ST_PROFILE_LOCATION_MAX)
		return fl_err_set(err, FL_ERR_BAD_REQUEST, WHAT ": location is too long");
	p = calloc(1, sizeof(*p));
	if (p == NULL)
		return fl_err_set(err, FL_ERR_NOMEM, "out of memory");
	memcpy(p->location, loc, n);
	if (strcmp(type, "file") == 0) {
		p->type = ST_STORAGE_FILE;
		rc = parse_file(j, p, err);
	} else if (strcmp(type, "s3") == 0) {
		p->type = ST_STORAGE_S3;
		rc = parse_s3(j, p, err);
	} else {
		rc = fl_err_set(err, FL_ERR_BAD_REQUEST,
		                WHAT ": type '%.40s' is not supported (file, s3)", type);
	}
	if (rc == 0 && norm != NULL) {
		*norm = json_deep_copy(j);
		if (*norm == NULL)
			rc = fl_err_set(err, FL_ERR_NOMEM, "out of memory");
		else
			json_object_set_new(*norm, "location", json_stringn(loc, n));
	}
	if (rc == 0)
		*out = *p;
	free(p);
	return rc;
}

/* Copies the value of one "name = value" line of an ini file when name
 * matches; values are trimmed of blanks and quotes. */
static void ini_value(const char *line, const char *name, char *out, size_t cap)
{
	size_t n = strlen(name), len;
	const char *v;

	while (*line == ' ' || *line == '\t')
		line++;
	if (strncmp(line, name, n) != 0)
		return;
	v = line + n;
	while (*v == ' ' || *v == '\t')
		v++;
	if (*v != '=')
		return;
	v++;
	while (*v == ' ' || *v == '\t' || *v == '"')
		v++;
	len = strcspn(v, "\"\r\n \t");
	if (len < cap) {
		memcpy(out, v, len);
		out[len] = '\0';
	}
}

static int from_file(const struct st_profile *p, struct st_creds *c, struct fl_err *err)
{
	char line[8192];
	FILE *f = fopen(p->credentials_file, "re");

	if (f == NULL)
		return fl_err_set(err, FL_ERR_BAD_REQUEST,
		                  "credentials-file %.200s cannot be read: %s", p->credentials_file,
		                  strerror(errno));
	while (fgets(line, sizeof(line), f) != NULL) {
		ini_value(line, "aws_access_key_id", c->access_key_id, sizeof(c->access_key_id));
		ini_value(line, "aws_secret_access_key", c->secret_access_key,
		          sizeof(c->secret_access_key));
		ini_value(line, "aws_session_token", c->session_token, sizeof(c->session_token));
	}
	fclose(f);
	if (c->access_key_id[0] == '\0' || c->secret_access_key[0] == '\0')
		return fl_err_set(
		        err, FL_ERR_BAD_REQUEST,
		        "credentials-file %.200s has no aws_access_key_id and aws_secret_access_key lines",
		        p->credentials_file);
	return 0;
}

static int from_env(const char *name, bool required, char *out, size_t cap, struct fl_err *err)
{
	const char *v = name[0] ? getenv(name) : NULL;

	if (v == NULL || v[0] == '\0') {
		if (!required)
			return 0;
		return fl_err_set(
		        err, FL_ERR_BAD_REQUEST,
		        "environment variable %.100s (named by the storage profile) is not set in the Floe process",
		        name);
	}
	if (strlen(v) >= cap)
		return fl_err_set(err, FL_ERR_BAD_REQUEST,
		                  "environment variable %.100s holds a value that is too long",
		                  name);
	snprintf(out, cap, "%s", v);
	return 0;
}

int st_profile_credentials(const struct st_profile *p, struct st_creds *out, struct fl_err *err)
{
	struct st_creds *c = calloc(1, sizeof(*c));
	int rc;

	if (c == NULL)
		return fl_err_set(err, FL_ERR_NOMEM, "out of memory");
	if (p->credentials_file[0] != '\0')
		rc = from_file(p, c, err);
	else
		rc = from_env(p->access_key_id_env, true, c->access_key_id,
		              sizeof(c->access_key_id), err) != 0 ||
		                     from_env(p->secret_access_key_env, true, c->secret_access_key,
		                              sizeof(c->secret_access_key), err) != 0 ||
		                     from_env(p->session_token_env, false, c->session_token,
		                              sizeof(c->session_token), err) != 0
		             ? -1
		             : 0;
	if (rc == 0)
		*out = *c;
	memset(c, 0, sizeof(*c));
	free(c);
	return rc;
}
