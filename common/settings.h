/* settings.h - one declarative table drives flags, environment, --help and
 * validation.
 *
 * A program declares `static const struct fl_setting table[]` where each row
 * names a setting, its type, default, bounds, environment variable and help,
 * and the offset of its field in the program's config struct.  Resolution
 * order: default, then environment, then command-line flag.  Any invalid
 * value stops loading with a message naming the setting and what is allowed. */
#ifndef FL_SETTINGS_H
#define FL_SETTINGS_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "err.h"

enum fl_setting_type {
	FL_SET_INT, /* int64_t, bounded by [min, max] */
	FL_SET_STR, /* char * (malloc'd, owned by the config), length <= max */
	FL_SET_BOOL, /* int: true/false/1/0/yes/no/on/off */
	FL_SET_SECONDS, /* int64_t seconds: "30", "30m", "PT30M"; bounded by [min, max] */
	FL_SET_ENUM, /* char *; one of the '|'-separated choices */
};

struct fl_setting {
	const char *name; /* flag is --name */
	enum fl_setting_type type;
	const char *def; /* textual default; NULL = unset (STR only) */
	int64_t min, max; /* INT/SECONDS bounds; STR: max length */
	const char *choices; /* ENUM only */
	const char *env; /* FLOE_… */
	size_t offset; /* of the field in the config struct */
	const char *help;
};

/* Fills cfg from defaults, then getenv, then argv[*argi…] flags of the form
 * --name=value or --name value (stops at the first non-flag and advances
 * *argi).  STR fields receive malloc'd copies.  Returns -1 with a message
 * naming the setting on an unknown flag or an invalid value. */
int fl_settings_load(const struct fl_setting *t, size_t n, void *cfg, int argc, char **argv,
                     int *argi, struct fl_err *err) FL_MUST_CHECK;

/* Applies one textual value to one setting (the same validation). */
int fl_settings_set(const struct fl_setting *s, void *cfg, const char *value, const char *source,
                    struct fl_err *err) FL_MUST_CHECK;

/* The row named by the len bytes at name, or NULL. */
const struct fl_setting *fl_settings_find(const struct fl_setting *t, size_t n, const char *name,
                                          size_t len);

/* Prints the table as help text: flag, env, default, bounds, help. */
void fl_settings_help(const struct fl_setting *t, size_t n, FILE *f);

/* Frees the STR/ENUM fields that load allocated. */
void fl_settings_free(const struct fl_setting *t, size_t n, void *cfg);

#endif
