/* settings.c - resolving the settings table (defaults < env < flags). */
#include "settings.h"

#include <errno.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "clock.h"

static void *field(const struct fl_setting *s, void *cfg)
{
	return (char *)cfg + s->offset;
}

static int set_str(char **dst, const char *v)
{
	char *p = v ? strdup(v) : NULL;

	if (v != NULL && p == NULL)
		return -1;
	free(*dst);
	*dst = p;
	return 0;
}

static bool enum_has(const char *choices, const char *v)
{
	size_t vl = strlen(v);

	for (const char *p = choices; *p != '\0';) {
		const char *bar = strchr(p, '|');
		size_t l = bar ? (size_t)(bar - p) : strlen(p);

		if (l == vl && strncmp(p, v, l) == 0)
			return true;
		p += l + (bar ? 1 : 0);
	}
	return false;
}
/* How much of a refused value a message quotes: another option given where
 * a value was due ("--port --database-url=postgresql://u:pw@h") is quoted up
 * to its '=', so that what follows (a password, a token) is not. */
static int shown(const char *value)
{
	return (int)(strncmp(value, "--", 2) == 0 ? strcspn(value, "=") : strlen(value));
}

int fl_settings_set(const struct fl_setting *s, void *cfg, const char *value, const char *source,
                    struct fl_err *err)
{
	switch (s->type) {
	case FL_SET_INT: {
		char *end;
		long long v;

		errno = 0;
		v = strtoll(value, &end, 10);
		/* Digits only (an optional '-'): no spaces, no '+', no surprises. */
		if (errno != 0 || end == value || *end != '\0' || v < s->min || v > s->max ||
		    !(value[0] == '-' || (value[0] >= '0' && value[0] <= '9')))
			return fl_err_set(
			        err, FL_ERR_BAD_REQUEST,
			        "setting %s (%s): '%.*s' is not an integer in [%lld, %lld]",
			        s->name, source, shown(value), value, (long long)s->min,
			        (long long)s->max);
		*(int64_t *)field(s, cfg) = v;
		return 0;
	}
	case FL_SET_SECONDS: {
		int64_t v = fl_duration_parse(value);

		if (v < s->min || v > s->max)
			return fl_err_set(
			        err, FL_ERR_BAD_REQUEST,
			        "setting %s (%s): '%.*s' is not a duration between %llds and %llds (e.g. 90, 30m, PT30M)",
			        s->name, source, shown(value), value, (long long)s->min,
			        (long long)s->max);
		*(int64_t *)field(s, cfg) = v;
		return 0;
	}
	case FL_SET_BOOL: {
		static const char *const yes[] = {"1", "true", "yes", "on"};
		static const char *const no[] = {"0", "false", "no", "off"};

		for (int i = 0; i < 4; i++) {
			if (strcasecmp(value, yes[i]) == 0) {
				*(int *)field(s, cfg) = 1;
				return 0;
			}
			if (strcasecmp(value, no[i]) == 0) {
				*(int *)field(s, cfg) = 0;
				return 0;
			}
		}
		return fl_err_set(err, FL_ERR_BAD_REQUEST,
		                  "setting %s (%s): '%.*s' is not a boolean (true|false)", s->name,
		                  source, shown(value), value);
	}
	case FL_SET_STR:
		if ((int64_t)strlen(value) > s->max)
			return fl_err_set(err, FL_ERR_BAD_REQUEST,
			                  "setting %s (%s): longer than %lld bytes", s->name,
			                  source, (long long)s->max);
		if (set_str(field(s, cfg), value) != 0)
			return fl_err_set(err, FL_ERR_NOMEM, "setting %s: out of memory", s->name);
		return 0;
	case FL_SET_ENUM:
		if (!enum_has(s->choices, value))
			return fl_err_set(err, FL_ERR_BAD_REQUEST,
			                  "setting %s (%s): '%.*s' is not one of %s", s->name,
			                  source, shown(value), value, s->choices);
		if (set_str(field(s, cfg), value) != 0)
			return fl_err_set(err, FL_ERR_NOMEM, "setting %s: out of memory", s->name);
		return 0;
	}
	return fl_err_set(err, FL_ERR_INTERNAL, "setting %s: unknown type", s->name);
}

const struct fl_setting *fl_settings_find(const struct fl_setting *t, size_t n, const char *name,
                                          size_t len)
{
	for (size_t i = 0; i < n; i++)
		if (strlen(t[i].name) == len && strncmp(t[i].name, name, len) == 0)
			return &t[i];
	return NULL;
}

int fl_settings_load(const struct fl_setting *t, size_t n, void *cfg, int argc, char **argv,
                     int *argi, struct fl_err *err)
{
	for (size_t i = 0; i < n; i++) {
		const char *env;

		if (t[i].def != NULL && fl_settings_set(&t[i], cfg, t[i].def, "default", err) != 0)
			return -1;
		env = t[i].env ? getenv(t[i].env) : NULL;
		if (env != NULL && fl_settings_set(&t[i], cfg, env, t[i].env, err) != 0)
			return -1;
	}
	while (*argi < argc) {
		const char *a = argv[*argi], *name, *eq, *value;
		const struct fl_setting *s;
		size_t len;

		if (strncmp(a, "--", 2) != 0 || a[2] == '\0')
			break;
		name = a + 2;
		eq = strchr(name, '=');
		len = eq ? (size_t)(eq - name) : strlen(name);
		s = fl_settings_find(t, n, name, len);
		if (s == NULL)
			return fl_err_set(err, FL_ERR_BAD_REQUEST,
			                  "unknown option --%.*s (see --help)", (int)len, name);
		if (eq != NULL) {
			value = eq + 1;
		} else if (s->type == FL_SET_BOOL) {
			value = "true";
		} else {
			if (*argi + 1 >= argc)
				return fl_err_set(err, FL_ERR_BAD_REQUEST,
				                  "option --%s needs a value", s->name);
			value = argv[++*argi];
		}
		if (fl_settings_set(s, cfg, value, "flag", err) != 0)
			return -1;
		++*argi;
	}
	return 0;
}

void fl_settings_help(const struct fl_setting *t, size_t n, FILE *f)
{
	for (size_t i = 0; i < n; i++) {
		const struct fl_setting *s = &t[i];

		fprintf(f, "  --%s", s->name);
		if (s->type != FL_SET_BOOL)
			fprintf(f, "=%s",
			        s->type == FL_SET_ENUM      ? s->choices
			        : s->type == FL_SET_STR     ? "TEXT"
			        : s->type == FL_SET_SECONDS ? "DURATION"
			                                    : "N");
		fprintf(f, "\n      %s\n      env %s", s->help, s->env);
		if (s->def != NULL)
			fprintf(f, "; default %s", s->def[0] ? s->def : "\"\"");
		if (s->type == FL_SET_INT || s->type == FL_SET_SECONDS)
			fprintf(f, "; range %lld..%lld", (long long)s->min, (long long)s->max);
		fprintf(f, "\n");
	}
}

void fl_settings_free(const struct fl_setting *t, size_t n, void *cfg)
{
	for (size_t i = 0; i < n; i++) {
		if (t[i].type == FL_SET_STR || t[i].type == FL_SET_ENUM) {
			char **p = field(&t[i], cfg);

			free(*p);
			*p = NULL;
		}
	}
}
