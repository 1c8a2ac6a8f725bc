/* test_settings_table.c - the floe program's settings table: the documented
 * defaults, bounds and messages, environment and flag overrides. */
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "srv.h"

extern char **environ;

/* Removes every FLOE_* variable so the defaults are what the table says,
 * whatever the environment of the test run. */
static void clear_floe_env(void)
{
	for (;;) {
		char name[256];
		size_t n;
		char **e;

		for (e = environ; *e != NULL; e++)
			if (strncmp(*e, "FLOE_", 5) == 0)
				break;
		if (*e == NULL)
			return;
		n = strcspn(*e, "=");
		assert_true(n < sizeof(name));
		memcpy(name, *e, n);
		name[n] = '\0';
		unsetenv(name);
	}
}

static int load(struct srv_config *cfg, char **argv, int *argi, struct fl_err *err)
{
	int argc = 0;

	while (argv[argc] != NULL)
		argc++;
	memset(cfg, 0, sizeof(*cfg));
	*argi = 1;
	return srv_config_load(cfg, argc, argv, argi, err);
}

static void test_defaults(void **state)
{
	char *argv[] = {"floe", NULL};
	struct srv_config cfg;
	struct fl_err err;
	int argi;

	clear_floe_env();
	if (load(&cfg, argv, &argi, &err) != 0)
		fail_msg("defaults rejected: %s", err.msg);
	assert_int_equal(argi, 1);
	assert_string_equal(cfg.host, "127.0.0.1");
	assert_int_equal(cfg.port, 8181);
	assert_string_equal(cfg.data_dir, "./.floe");
	assert_string_equal(cfg.database_url, "");
	assert_string_equal(cfg.warehouse, "default");
	assert_string_equal(cfg.warehouse_location, "");
	assert_int_equal(cfg.threads, 0);
	assert_int_equal(cfg.http_threads, 0);
	assert_int_equal(cfg.db_pool_size, 20);
	assert_int_equal(cfg.max_body_bytes, 8388608);
	assert_int_equal(cfg.max_json_depth, 64);
	assert_int_equal(cfg.max_identifier_bytes, 255);
	assert_int_equal(cfg.max_namespace_levels, 16);
	assert_int_equal(cfg.max_properties, 1000);
	assert_int_equal(cfg.max_page_size, 1000);
	assert_int_equal(cfg.max_commit_updates, 10000);
	assert_int_equal(cfg.max_commit_tables, 100);
	assert_int_equal(cfg.max_metadata_bytes, 67108864);
	assert_int_equal(cfg.idempotency_lifetime, 1800);
	assert_string_equal(cfg.log_level, "info");
	assert_string_equal(cfg.pg_bin_dir, "");
	assert_int_equal(cfg.shutdown_grace, 30);
	srv_config_free(&cfg);
	assert_null(cfg.host);
	assert_null(cfg.log_level);
}

static void test_bad_values_name_the_setting(void **state)
{
	static const struct {
		const char *arg;
		const char *msg;
	} cases[] = {
	        {"--port=abc", "setting port (flag): 'abc' is not an integer in [0, 65535]"},
	        {"--port=70000", "setting port (flag): '70000' is not an integer in [0, 65535]"},
	        {"--port=-1", "setting port (flag): '-1' is not an integer in [0, 65535]"},
	        {"--threads=-1", "setting threads (flag): '-1' is not an integer in [0, 256]"},
	        {"--http-threads=65",
	         "setting http-threads (flag): '65' is not an integer in [0, 64]"},
	        {"--max-json-depth=3",
	         "setting max-json-depth (flag): '3' is not an integer in [4, 1000]"},
	        {"--max-body-bytes=1", "max-body-bytes"},
	        {"--log-level=verbose",
	         "setting log-level (flag): 'verbose' is not one of debug|info|warn|error"},
	        {"--shutdown-grace=2h",
	         "setting shutdown-grace (flag): '2h' is not a duration between 0s and 3600s"},
	        {"--shutdown-grace=soon", "setting shutdown-grace"},
	        {"--idempotency-key-lifetime=30s",
	         "setting idempotency-key-lifetime (flag): '30s' is not a duration between 60s and 604800s"},
	        {"--max-commit-tables=0",
	         "setting max-commit-tables (flag): '0' is not an integer in [1, 10000]"},
	        {"--bogus=1", "unknown option --bogus"},
	        {"--port", "option --port needs a value"},
	};

	clear_floe_env();
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		char *argv[] = {"floe", (char *)cases[i].arg, NULL};
		struct srv_config cfg;
		struct fl_err err = {0};
		int argi;

		if (load(&cfg, argv, &argi, &err) == 0)
			fail_msg("%s was accepted", cases[i].arg);
		assert_int_equal(err.kind, FL_ERR_BAD_REQUEST);
		if (strstr(err.msg, cases[i].msg) == NULL)
			fail_msg("%s: message \"%s\" lacks \"%s\"", cases[i].arg, err.msg,
			         cases[i].msg);
		srv_config_free(&cfg);
	}
}

static void test_env_and_flags(void **state)
{
	char *argv[] = {"floe",  "--port", "0", "--shutdown-grace=PT1M", "--log-level=debug",
	                "serve", NULL};
	struct srv_config cfg;
	struct fl_err err;
	int argi;

	clear_floe_env();
	setenv("FLOE_THREADS", "16", 1);
	setenv("FLOE_PORT", "9000", 1);
	setenv("FLOE_DATABASE_URL", "postgresql:///floe_test", 1);
	setenv("FLOE_IDEMPOTENCY_KEY_LIFETIME", "P1D", 1);
	if (load(&cfg, argv, &argi, &err) != 0)
		fail_msg("rejected: %s", err.msg);
	assert_int_equal(cfg.threads, 16);
	assert_int_equal(cfg.port, 0); /* the flag beats FLOE_PORT */
	assert_string_equal(cfg.database_url, "postgresql:///floe_test");
	assert_int_equal(cfg.idempotency_lifetime, 86400);
	assert_int_equal(cfg.shutdown_grace, 60);
	assert_string_equal(cfg.log_level, "debug");
	assert_int_equal(argi, 5);
	srv_config_free(&cfg);
	clear_floe_env();
}

static void test_bad_env_names_variable(void **state)
{
	char *argv[] = {"floe", NULL};
	struct srv_config cfg;
	struct fl_err err;
	int argi;

	clear_floe_env();
	setenv("FLOE_THREADS", "many", 1);
	assert_int_equal(load(&cfg, argv, &argi, &err), -1);
	assert_string_equal(err.msg,
	                    "setting threads (FLOE_THREADS): 'many' is not an integer in [0, 256]");
	srv_config_free(&cfg);
	clear_floe_env();
}

static void test_help_lists_every_setting(void **state)
{
	static const char *const names[] = {"--host=",
	                                    "--port=",
	                                    "--data-dir=",
	                                    "--database-url=",
	                                    "--warehouse=",
	                                    "--warehouse-location=",
	                                    "--threads=",
	                                    "--db-pool-size=",
	                                    "--max-body-bytes=",
	                                    "--max-json-depth=",
	                                    "--max-identifier-bytes=",
	                                    "--max-namespace-levels=",
	                                    "--max-properties=",
	                                    "--max-page-size=",
	                                    "--log-level=",
	                                    "--pg-bin-dir=",
	                                    "--shutdown-grace=",
	                                    "env FLOE_PORT; default 8181; range 0..65535"};
	char *text = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&text, &len);

	assert_non_null(f);
	srv_config_help(f);
	fclose(f);
	for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++)
		if (strstr(text, names[i]) == NULL)
			fail_msg("help lacks \"%s\"", names[i]);
	free(text);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	        cmocka_unit_test(test_defaults),
	        cmocka_unit_test(test_bad_values_name_the_setting),
	        cmocka_unit_test(test_env_and_flags),
	        cmocka_unit_test(test_bad_env_names_variable),
	        cmocka_unit_test(test_help_lists_every_setting),
	};

	return cmocka_run_group_tests_name("server/settings_table", tests, NULL, NULL);
}
