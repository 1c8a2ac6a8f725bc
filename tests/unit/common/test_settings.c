/* test_settings.c - the settings table: each type's validation and messages,
 * then resolution order (default < environment < flag) and flag syntax. */
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "settings.h"

struct cfg {
	int64_t num;
	char *name;
	int flag;
	int64_t grace;
	char *level;
	char *opt; /* STR without a default */
};

#define OFF(f) offsetof(struct cfg, f)

/* clang-format off */
static const struct fl_setting table[] = {
	{"num", FL_SET_INT, "10", 1, 100, NULL, "FLT_NUM", OFF(num), "a number"},
	{"name", FL_SET_STR, "dflt", 0, 8, NULL, "FLT_NAME", OFF(name), "a name"},
	{"flag", FL_SET_BOOL, "false", 0, 0, NULL, "FLT_FLAG", OFF(flag), "a switch"},
	{"grace", FL_SET_SECONDS, "30", 0, 172800, NULL, "FLT_GRACE", OFF(grace), "a duration"},
	{"level", FL_SET_ENUM, "info", 0, 0, "debug|info|warn|error", "FLT_LEVEL", OFF(level), "a level"},
	{"opt", FL_SET_STR, NULL, 0, 100, NULL, "FLT_OPT", OFF(opt), "optional text"},
};
/* clang-format on */
#define NT (sizeof(table) / sizeof(table[0]))

enum { S_NUM, S_NAME, S_FLAG, S_GRACE, S_LEVEL };

struct set_case {
	int setting;
	const char *value;
	bool ok;
	int64_t want_int; /* INT, BOOL, SECONDS */
	const char *want_str; /* STR, ENUM; on failure: text the message must contain */
};

static const struct set_case set_cases[] = {
        /* INT: bounds are inclusive; anything but a whole decimal is refused. */
        {S_NUM, "1", true, 1, NULL},
        {S_NUM, "100", true, 100, NULL},
        {S_NUM, "42", true, 42, NULL},
        {S_NUM, "0", false, 0, "setting num (test): '0' is not an integer in [1, 100]"},
        {S_NUM, "101", false, 0, "setting num (test): '101' is not an integer in [1, 100]"},
        {S_NUM, "-1", false, 0, "[1, 100]"},
        {S_NUM, "abc", false, 0, "'abc' is not an integer in [1, 100]"},
        {S_NUM, "", false, 0, "is not an integer"},
        {S_NUM, "5x", false, 0, "is not an integer"},
        {S_NUM, "5.0", false, 0, "is not an integer"},
        {S_NUM, "99999999999999999999999", false, 0, "is not an integer"},
        /* STR: max is a length in bytes. */
        {S_NAME, "", true, 0, ""},
        {S_NAME, "12345678", true, 0, "12345678"},
        {S_NAME, "123456789", false, 0, "setting name (test): longer than 8 bytes"},
        /* BOOL spellings, case-insensitive. */
        {S_FLAG, "true", true, 1, NULL},
        {S_FLAG, "TRUE", true, 1, NULL},
        {S_FLAG, "1", true, 1, NULL},
        {S_FLAG, "yes", true, 1, NULL},
        {S_FLAG, "On", true, 1, NULL},
        {S_FLAG, "false", true, 0, NULL},
        {S_FLAG, "False", true, 0, NULL},
        {S_FLAG, "0", true, 0, NULL},
        {S_FLAG, "no", true, 0, NULL},
        {S_FLAG, "OFF", true, 0, NULL},
        {S_FLAG, "maybe", false, 0, "setting flag (test): 'maybe' is not a boolean (true|false)"},
        {S_FLAG, "", false, 0, "is not a boolean"},
        {S_FLAG, "2", false, 0, "is not a boolean"},
        {S_FLAG, "tru", false, 0, "is not a boolean"},
        /* SECONDS: plain, short units and ISO-8601, bounded. */
        {S_GRACE, "90", true, 90, NULL},
        {S_GRACE, "30m", true, 1800, NULL},
        {S_GRACE, "PT30M", true, 1800, NULL},
        {S_GRACE, "P1DT2H", true, 93600, NULL},
        {S_GRACE, "0", true, 0, NULL},
        {S_GRACE, "P2D", true, 172800, NULL},
        {S_GRACE, "P2DT1S", false, 0, "between 0s and 172800s"},
        {S_GRACE, "garbage", false, 0,
         "setting grace (test): 'garbage' is not a duration between 0s and 172800s"},
        {S_GRACE, "", false, 0, "is not a duration"},
        {S_GRACE, "-5", false, 0, "is not a duration"},
        {S_GRACE, "P1M", false, 0, "is not a duration"},
        /* ENUM: exact match against the choices. */
        {S_LEVEL, "debug", true, 0, "debug"},
        {S_LEVEL, "error", true, 0, "error"},
        {S_LEVEL, "warn", true, 0, "warn"},
        {S_LEVEL, "WARN", false, 0, "'WARN' is not one of debug|info|warn|error"},
        {S_LEVEL, "inf", false, 0, "setting level (test): 'inf' is not one of"},
        {S_LEVEL, "infos", false, 0, "is not one of"},
        {S_LEVEL, "", false, 0, "is not one of"},
        {S_LEVEL, "debug|info", false, 0, "is not one of"},
};

static void test_set_table(void **state)
{
	for (size_t i = 0; i < sizeof(set_cases) / sizeof(set_cases[0]); i++) {
		const struct set_case *c = &set_cases[i];
		const struct fl_setting *s = &table[c->setting];
		struct cfg cfg = {.num = -99, .flag = -99, .grace = -99};
		struct fl_err err = {0};
		int rc = fl_settings_set(s, &cfg, c->value, "test", &err);

		if (!c->ok) {
			if (rc == 0)
				fail_msg("%s = \"%s\" was accepted", s->name, c->value);
			assert_int_equal(err.kind, FL_ERR_BAD_REQUEST);
			if (strstr(err.msg, c->want_str) == NULL)
				fail_msg("%s = \"%s\": message \"%s\" lacks \"%s\"", s->name,
				         c->value, err.msg, c->want_str);
			/* The field is untouched on failure. */
			assert_int_equal(cfg.num, -99);
			assert_int_equal(cfg.flag, -99);
			assert_int_equal(cfg.grace, -99);
			assert_null(cfg.name);
			assert_null(cfg.level);
			continue;
		}
		if (rc != 0)
			fail_msg("%s = \"%s\" rejected: %s", s->name, c->value, err.msg);
		switch (s->type) {
		case FL_SET_INT: assert_int_equal(cfg.num, c->want_int); break;
		case FL_SET_BOOL: assert_int_equal(cfg.flag, c->want_int); break;
		case FL_SET_SECONDS: assert_int_equal(cfg.grace, c->want_int); break;
		case FL_SET_STR: assert_string_equal(cfg.name, c->want_str); break;
		case FL_SET_ENUM: assert_string_equal(cfg.level, c->want_str); break;
		}
		fl_settings_free(table, NT, &cfg);
	}
}

static void clear_env(void)
{
	for (size_t i = 0; i < NT; i++)
		unsetenv(table[i].env);
}

/* Loads with argv (NULL-terminated list after the program name). */
static int load(struct cfg *cfg, int *argi, struct fl_err *err, char **argv)
{
	int argc = 0;

	while (argv[argc] != NULL)
		argc++;
	memset(cfg, 0, sizeof(*cfg));
	*argi = 1;
	return fl_settings_load(table, NT, cfg, argc, argv, argi, err);
}

static void test_defaults(void **state)
{
	char *argv[] = {"prog", NULL};
	struct cfg cfg;
	struct fl_err err;
	int argi;

	clear_env();
	assert_int_equal(load(&cfg, &argi, &err, argv), 0);
	assert_int_equal(argi, 1);
	assert_int_equal(cfg.num, 10);
	assert_string_equal(cfg.name, "dflt");
	assert_int_equal(cfg.flag, 0);
	assert_int_equal(cfg.grace, 30);
	assert_string_equal(cfg.level, "info");
	assert_null(cfg.opt);
	fl_settings_free(table, NT, &cfg);
	assert_null(cfg.name);
	assert_null(cfg.level);
}

static void test_env_overrides_default(void **state)
{
	char *argv[] = {"prog", NULL};
	struct cfg cfg;
	struct fl_err err;
	int argi;

	clear_env();
	setenv("FLT_NUM", "77", 1);
	setenv("FLT_NAME", "envname", 1);
	setenv("FLT_FLAG", "yes", 1);
	setenv("FLT_GRACE", "PT1M", 1);
	setenv("FLT_LEVEL", "debug", 1);
	setenv("FLT_OPT", "x", 1);
	assert_int_equal(load(&cfg, &argi, &err, argv), 0);
	assert_int_equal(cfg.num, 77);
	assert_string_equal(cfg.name, "envname");
	assert_int_equal(cfg.flag, 1);
	assert_int_equal(cfg.grace, 60);
	assert_string_equal(cfg.level, "debug");
	assert_string_equal(cfg.opt, "x");
	fl_settings_free(table, NT, &cfg);
	clear_env();
}

static void test_bad_env_names_variable(void **state)
{
	char *argv[] = {"prog", NULL};
	struct cfg cfg;
	struct fl_err err;
	int argi;

	clear_env();
	setenv("FLT_NUM", "1000", 1);
	assert_int_equal(load(&cfg, &argi, &err, argv), -1);
	assert_string_equal(err.msg, "setting num (FLT_NUM): '1000' is not an integer in [1, 100]");
	fl_settings_free(table, NT, &cfg);
	clear_env();
}

static void test_flags(void **state)
{
	char *argv[] = {"prog",   "--num=3",      "--name", "fromflag", "--flag", "--grace",
	                "P1DT2H", "--level=warn", "serve",  "--num=4",  NULL};
	struct cfg cfg;
	struct fl_err err;
	int argi;

	clear_env();
	setenv("FLT_NUM", "50", 1);
	setenv("FLT_NAME", "envname", 1);
	assert_int_equal(load(&cfg, &argi, &err, argv), 0);
	/* Flags beat the environment; parsing stops at the first non-flag. */
	assert_int_equal(cfg.num, 3);
	assert_string_equal(cfg.name, "fromflag");
	assert_int_equal(cfg.flag, 1);
	assert_int_equal(cfg.grace, 93600);
	assert_string_equal(cfg.level, "warn");
	assert_int_equal(argi, 8);
	assert_string_equal(argv[argi], "serve");
	fl_settings_free(table, NT, &cfg);
	clear_env();
}

static void test_flag_forms(void **state)
{
	static const struct {
		const char *args[4];
		int64_t num;
		int flag;
		int argi;
	} cases[] = {
	        {{"--num=1", NULL}, 1, 0, 2},
	        {{"--num", "1", NULL}, 1, 0, 3},
	        {{"--flag", NULL}, 10, 1, 2},
	        {{"--flag=false", NULL}, 10, 0, 2},
	        {{"--flag=on", "--num", "9", NULL}, 9, 1, 4},
	        /* "--" alone and a lone "-x" end the flags. */
	        {{"--", "--num=5", NULL}, 10, 0, 1},
	        {{"-n", NULL}, 10, 0, 1},
	        /* The last of repeated flags wins. */
	        {{"--num=2", "--num=6", NULL}, 6, 0, 3},
	};

	clear_env();
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		char *argv[6] = {"prog"};
		struct cfg cfg;
		struct fl_err err;
		int argi;

		for (int k = 0; cases[i].args[k] != NULL; k++)
			argv[k + 1] = (char *)cases[i].args[k];
		if (load(&cfg, &argi, &err, argv) != 0)
			fail_msg("case %zu (%s) failed: %s", i, cases[i].args[0], err.msg);
		assert_int_equal(cfg.num, cases[i].num);
		assert_int_equal(cfg.flag, cases[i].flag);
		assert_int_equal(argi, cases[i].argi);
		fl_settings_free(table, NT, &cfg);
	}
}

static void test_flag_errors(void **state)
{
	static const struct {
		const char *args[4];
		const char *msg;
	} cases[] = {
	        {{"--nope", NULL}, "unknown option --nope (see --help)"},
	        {{"--nope=1", NULL}, "unknown option --nope (see --help)"},
	        {{"--nu=1", NULL}, "unknown option --nu (see --help)"},
	        {{"--numx", NULL}, "unknown option --numx (see --help)"},
	        {{"--num", NULL}, "option --num needs a value"},
	        {{"--flag", "--grace", NULL}, "option --grace needs a value"},
	        {{"--num=", NULL}, "setting num (flag): '' is not an integer in [1, 100]"},
	        {{"--num", "200", NULL}, "setting num (flag): '200' is not an integer in [1, 100]"},
	        {{"--grace=forever", NULL},
	         "setting grace (flag): 'forever' is not a duration between 0s and 172800s"},
	        {{"--level=loud", NULL},
	         "setting level (flag): 'loud' is not one of debug|info|warn|error"},
	        {{"--name=waytoolongname", NULL}, "setting name (flag): longer than 8 bytes"},
	        {{"--flag=maybe", NULL}, "setting flag (flag): 'maybe' is not a boolean"},
	};

	clear_env();
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		char *argv[6] = {"prog"};
		struct cfg cfg;
		struct fl_err err = {0};
		int argi;

		for (int k = 0; cases[i].args[k] != NULL; k++)
			argv[k + 1] = (char *)cases[i].args[k];
		if (load(&cfg, &argi, &err, argv) == 0)
			fail_msg("case %zu (%s) was accepted", i, cases[i].args[0]);
		assert_int_equal(err.kind, FL_ERR_BAD_REQUEST);
		if (strstr(err.msg, cases[i].msg) == NULL)
			fail_msg("case %zu: message \"%s\" lacks \"%s\"", i, err.msg, cases[i].msg);
		fl_settings_free(table, NT, &cfg);
	}
}

static void test_help(void **state)
{
	char *text = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&text, &len);

	assert_non_null(f);
	fl_settings_help(table, NT, f);
	fclose(f);
	assert_non_null(strstr(text, "--num=N"));
	assert_non_null(strstr(text, "env FLT_NUM; default 10; range 1..100"));
	assert_non_null(strstr(text, "--level=debug|info|warn|error"));
	assert_non_null(strstr(text, "--grace=DURATION"));
	assert_non_null(strstr(text, "--name=TEXT"));
	assert_non_null(strstr(text, "  --flag\n"));
	assert_non_null(strstr(text, "a switch"));
	free(text);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	        cmocka_unit_test(test_set_table),
	        cmocka_unit_test(test_defaults),
	        cmocka_unit_test(test_env_overrides_default),
	        cmocka_unit_test(test_bad_env_names_variable),
	        cmocka_unit_test(test_flags),
	        cmocka_unit_test(test_flag_forms),
	        cmocka_unit_test(test_flag_errors),
	        cmocka_unit_test(test_help),
	};

	return cmocka_run_group_tests_name("common/settings", tests, NULL, NULL);
}
