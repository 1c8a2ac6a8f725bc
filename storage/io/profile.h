/* profile.h - a warehouse's storage profile: where its objects live and how
 * Floe reaches them.
 *
 * The profile is the JSON object a warehouse is created with
 * ("storage-profile").  Two types:
 *
 *   {"type": "file", "location": "file:///abs/dir"}
 *   {"type": "s3", "location": "s3://BUCKET/PREFIX", "endpoint": "http://H:P",
 *    "region": "us-east-1", "path-style-access": true,
 *    "access-key-id-env": "VAR", "secret-access-key-env": "VAR",
 *    "session-token-env": "VAR", "credentials-file": "/path",
 *    "sts-role-arn": "arn:…", "sts-endpoint": "http://H:P",
 *    "sts-external-id": "…", "credential-lifetime": "PT1H",
 *    "remote-signing": false}
 *
 * Secrets never sit in the profile: it names the environment variables of
 * the Floe process (or a file) that hold the server's keys, and they are
 * read when an IO handle is opened (st_profile_credentials).  A profile is
 * therefore safe to store, return and log.  Unknown keys are refused so a
 * typo never silently drops a setting. */
#ifndef ST_PROFILE_H
#define ST_PROFILE_H

#include <jansson.h>
#include <stdbool.h>
#include <stdint.h>

#include "err.h"

enum st_storage_type { ST_STORAGE_FILE, ST_STORAGE_S3 };

#define ST_PROFILE_LOCATION_MAX 1024

struct st_profile {
	enum st_storage_type type;
	char location[ST_PROFILE_LOCATION_MAX]; /* normalised: no trailing '/' */
	/* s3 only (empty strings when absent). */
	char bucket[64];
	char prefix[ST_PROFILE_LOCATION_MAX]; /* key prefix, no leading/trailing '/' */
	char endpoint[512]; /* scheme://host[:port], no trailing '/'; "" = AWS */
	char region[64]; /* default "us-east-1" */
	bool path_style;
	char access_key_id_env[128]; /* default "AWS_ACCESS_KEY_ID" */
	char secret_access_key_env[128]; /* default "AWS_SECRET_ACCESS_KEY" */
	char session_token_env[128]; /* optional */
	char credentials_file[512]; /* alternative to the -env keys */
	char sts_role_arn[256];
	char sts_endpoint[512];
	char sts_external_id[256];
	int64_t credential_lifetime_s; /* default 3600, 900..43200 */
	bool remote_signing;
};

/* The server's own keys, resolved at use time.  Never log or return. */
struct st_creds {
	char access_key_id[128];
	char secret_access_key[256];
	char session_token[4096]; /* "" when none */
};

/* Validates the JSON profile j and fills *out.  Every problem is
 * FL_ERR_BAD_REQUEST naming the key ("storage-profile: unknown key 'x'").
 * When norm is not NULL, *norm is a new reference to the profile as it
 * should be stored (the location without a trailing '/').  *out is
 * untouched on failure. */
int st_profile_parse(const json_t *j, struct st_profile *out, json_t **norm,
                     struct fl_err *err) FL_MUST_CHECK;

/* Reads the server's keys for an s3 profile from the process environment
 * or the credentials file (AWS ini style: aws_access_key_id,
 * aws_secret_access_key, aws_session_token; sections are ignored).  A
 * missing variable or file is FL_ERR_BAD_REQUEST naming the variable or
 * path (never a value). Thread-safe (getenv only). */
int st_profile_credentials(const struct st_profile *p, struct st_creds *out,
                           struct fl_err *err) FL_MUST_CHECK;

/* Splits "s3://bucket/key/…" into bucket and key (no leading '/').  The
 * bucket must be a valid S3 bucket name; FL_ERR_BAD_REQUEST otherwise. */
int st_s3_uri_split(const char *uri, char *bucket, size_t bucket_cap, const char **key,
                    struct fl_err *err) FL_MUST_CHECK;

#endif
