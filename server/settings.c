/* settings.c - every setting of the floe program, in one table.
 *
 * The table drives flags (--name), environment (FLOE_*), `floe help` and
 * validation; nothing else declares a setting. */
#include <stddef.h>

#include "settings.h"
#include "srv.h"

#define OFF(f) offsetof(struct srv_config, f)

/* clang-format off */
static const struct fl_setting srv_settings[] = {
	{"host", FL_SET_STR, "127.0.0.1", 0, 64, NULL, "FLOE_HOST", OFF(host),
	 "IPv4 address to listen on"},
	{"port", FL_SET_INT, "8181", 0, 65535, NULL, "FLOE_PORT", OFF(port),
	 "TCP port to listen on (0 = pick a free one and log it)"},
	{"data-dir", FL_SET_STR, "./.floe", 0, 1024, NULL, "FLOE_DATA_DIR", OFF(data_dir),
	 "directory for the embedded PostgreSQL cluster and the default file warehouse"},
	{"database-url", FL_SET_STR, "", 0, 4096, NULL, "FLOE_DATABASE_URL", OFF(database_url),
	 "PostgreSQL connection URL; empty = run an embedded cluster in data-dir"},
	{"warehouse", FL_SET_STR, "default", 0, 255, NULL, "FLOE_WAREHOUSE", OFF(warehouse),
	 "name of the warehouse created at start and used by prefix-less routes (empty = none)"},
	{"warehouse-location", FL_SET_STR, "", 0, 1000, NULL, "FLOE_WAREHOUSE_LOCATION", OFF(warehouse_location),
	 "storage root of that warehouse; empty = file://<data-dir>/warehouse"},
	{"threads", FL_SET_INT, "0", 0, 256, NULL, "FLOE_THREADS", OFF(threads),
	 "worker threads for requests that wait on PostgreSQL or storage (0 = db-pool-size minus 4, at least 4)"},
	{"http-threads", FL_SET_INT, "0", 0, 64, NULL, "FLOE_HTTP_THREADS", OFF(http_threads),
	 "threads that read requests and answer those served from memory (0 = one per CPU)"},
	{"db-pool-size", FL_SET_INT, "20", 1, 512, NULL, "FLOE_DB_POOL_SIZE", OFF(db_pool_size),
	 "PostgreSQL connections in the pool"},
	{"table-cache-bytes", FL_SET_INT, "268435456", 0, 68719476736, NULL, "FLOE_TABLE_CACHE_BYTES", OFF(table_cache_bytes),
	 "memory for cached loadTable and loadView metadata, in bytes (0 = no cache)"},
	{"metadata-inline-max-bytes", FL_SET_INT, "262144", 0, 1073741824, NULL, "FLOE_METADATA_INLINE_MAX_BYTES", OFF(metadata_inline_max_bytes),
	 "largest table metadata kept in PostgreSQL beside its row; larger is read from its file"},
	{"response-compress-min-bytes", FL_SET_INT, "1024", 0, 1073741824, NULL, "FLOE_RESPONSE_COMPRESS_MIN_BYTES", OFF(response_compress_min_bytes),
	 "smallest response body sent gzip- or zstd-coded to a client whose Accept-Encoding asks for it (0 = never coded)"},
	{"max-body-bytes", FL_SET_INT, "8388608", 1024, 1073741824, NULL, "FLOE_MAX_BODY_BYTES", OFF(max_body_bytes),
	 "largest accepted request body"},
	{"max-json-depth", FL_SET_INT, "64", 4, 1000, NULL, "FLOE_MAX_JSON_DEPTH", OFF(max_json_depth),
	 "deepest accepted JSON nesting"},
	{"max-identifier-bytes", FL_SET_INT, "255", 1, 4096, NULL, "FLOE_MAX_IDENTIFIER_BYTES", OFF(max_identifier_bytes),
	 "longest namespace level or table name, in bytes"},
	{"max-namespace-levels", FL_SET_INT, "16", 1, 64, NULL, "FLOE_MAX_NAMESPACE_LEVELS", OFF(max_namespace_levels),
	 "deepest namespace nesting"},
	{"max-properties", FL_SET_INT, "1000", 1, 100000, NULL, "FLOE_MAX_PROPERTIES", OFF(max_properties),
	 "most properties on one namespace"},
	{"max-page-size", FL_SET_INT, "1000", 1, 100000, NULL, "FLOE_MAX_PAGE_SIZE", OFF(max_page_size),
	 "largest page a list call returns (also the size when pageSize is absent)"},
	{"max-commit-updates", FL_SET_INT, "10000", 1, 1000000, NULL, "FLOE_MAX_COMMIT_UPDATES", OFF(max_commit_updates),
	 "most updates in one commit, across all its tables"},
	{"max-commit-tables", FL_SET_INT, "100", 1, 10000, NULL, "FLOE_MAX_COMMIT_TABLES", OFF(max_commit_tables),
	 "most tables in one multi-table transaction"},
	{"max-metadata-bytes", FL_SET_INT, "67108864", 4096, 1073741824, NULL, "FLOE_MAX_METADATA_BYTES", OFF(max_metadata_bytes),
	 "largest metadata file register-table reads"},
	{"idempotency-key-lifetime", FL_SET_SECONDS, "PT30M", 60, 604800, NULL, "FLOE_IDEMPOTENCY_KEY_LIFETIME", OFF(idempotency_lifetime),
	 "how long an Idempotency-Key is remembered (advertised in /v1/config)"},
	{"log-level", FL_SET_ENUM, "info", 0, 0, "debug|info|warn|error", "FLOE_LOG_LEVEL", OFF(log_level),
	 "least severe log level written"},
	{"pg-bin-dir", FL_SET_STR, "", 0, 1024, NULL, "FLOE_PG_BIN_DIR", OFF(pg_bin_dir),
	 "directory of initdb/pg_ctl for the embedded cluster; empty = find it"},
	{"shutdown-grace", FL_SET_SECONDS, "30", 0, 3600, NULL, "FLOE_SHUTDOWN_GRACE", OFF(shutdown_grace),
	 "how long SIGTERM waits for in-flight requests"},
	{"auth", FL_SET_ENUM, "auto", 0, 0, "auto|none|token", "FLOE_AUTH", OFF(auth),
	 "none or token; auto = none when listening on a loopback address, else token"},
	{"token-signing-key", FL_SET_STR, "", 0, 1024, NULL, "FLOE_TOKEN_SIGNING_KEY", OFF(token_signing_key),
	 "PEM private key (RSA 2048+ or EC P-256) that signs Floe's tokens; empty = an ephemeral key"},
	{"token-verify-keys", FL_SET_STR, "", 0, 8192, NULL, "FLOE_TOKEN_VERIFY_KEYS", OFF(token_verify_keys),
	 "comma-separated PEM files of earlier signing keys whose tokens are still accepted"},
	{"token-lifetime", FL_SET_SECONDS, "3600", 1, 86400, NULL, "FLOE_TOKEN_LIFETIME", OFF(token_lifetime),
	 "lifetime of the tokens Floe issues"},
	{"token-issuer", FL_SET_STR, "floe", 1, 255, NULL, "FLOE_TOKEN_ISSUER", OFF(token_issuer),
	 "iss of the tokens Floe issues (and expects back)"},
	{"token-audience", FL_SET_STR, "floe", 1, 255, NULL, "FLOE_TOKEN_AUDIENCE", OFF(token_audience),
	 "aud of the tokens Floe issues (and expects back)"},
	{"token-clock-skew", FL_SET_SECONDS, "30", 0, 600, NULL, "FLOE_TOKEN_CLOCK_SKEW", OFF(token_clock_skew),
	 "clock skew allowed when checking exp, nbf and iat"},
	{"oidc-issuer", FL_SET_STR, "", 0, 255, NULL, "FLOE_OIDC_ISSUER", OFF(oidc_issuer),
	 "iss of an external OIDC issuer whose tokens are accepted; empty = none"},
	{"oidc-audience", FL_SET_STR, "", 0, 255, NULL, "FLOE_OIDC_AUDIENCE", OFF(oidc_audience),
	 "aud the external issuer's tokens must carry (required with oidc-issuer)"},
	{"oidc-jwks", FL_SET_STR, "", 0, 2048, NULL, "FLOE_OIDC_JWKS", OFF(oidc_jwks),
	 "the external issuer's keys: a JWKS file path or an http(s) URL"},
	{"oidc-jwks-refresh", FL_SET_SECONDS, "60", 1, 86400, NULL, "FLOE_OIDC_JWKS_REFRESH", OFF(oidc_jwks_refresh),
	 "least time between two JWKS fetches (one is made on an unknown kid)"},
	{"auth-cache-ttl", FL_SET_SECONDS, "5", 0, 3600, NULL, "FLOE_AUTH_CACHE_TTL", OFF(auth_cache_ttl),
	 "how long a principal's grants are trusted when change notifications (NOTIFY floe_auth) are not received"},
	{"auth-max-failures", FL_SET_INT, "10", 1, 100000, NULL, "FLOE_AUTH_MAX_FAILURES", OFF(auth_max_failures),
	 "failed token requests per client id and per address per minute before 429"},
	{"bootstrap-client-id", FL_SET_STR, "", 0, 255, NULL, "FLOE_BOOTSTRAP_CLIENT_ID", OFF(bootstrap_client_id),
	 "client id of the first admin, created at start when no admin exists"},
	{"bootstrap-client-secret", FL_SET_STR, "", 0, 255, NULL, "FLOE_BOOTSTRAP_CLIENT_SECRET", OFF(bootstrap_client_secret),
	 "secret of that first admin (16 bytes at least)"},
	{"metrics-public", FL_SET_BOOL, "false", 0, 0, NULL, "FLOE_METRICS_PUBLIC", OFF(metrics_public),
	 "serve /metrics without a token (for a Prometheus inside a trusted network)"},
	{"maintenance-workers", FL_SET_INT, "1", 0, 16, NULL, "FLOE_MAINTENANCE_WORKERS", OFF(maintenance_workers),
	 "threads that run table maintenance (scheduled by table policies, or requested); 0 = none on this replica; at most (db-pool-size - 1) / 2"},
	{"maintenance-poll", FL_SET_SECONDS, "PT30S", 1, 86400, NULL, "FLOE_MAINTENANCE_POLL", OFF(maintenance_poll),
	 "how often the maintenance workers look for due tables and queued jobs"},
};
/* clang-format on */

#define NSETTINGS (sizeof(srv_settings) / sizeof(srv_settings[0]))

int srv_config_load(struct srv_config *cfg, int argc, char **argv, int *argi, struct fl_err *err)
{
	return fl_settings_load(srv_settings, NSETTINGS, cfg, argc, argv, argi, err);
}

void srv_config_help(FILE *f)
{
	fl_settings_help(srv_settings, NSETTINGS, f);
}

void srv_config_free(struct srv_config *cfg)
{
	fl_settings_free(srv_settings, NSETTINGS, cfg);
}

const struct fl_setting *srv_config_find(const char *name, size_t len)
{
	return fl_settings_find(srv_settings, NSETTINGS, name, len);
}
