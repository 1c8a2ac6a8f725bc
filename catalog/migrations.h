/* migrations.h - the SQL migrations embedded at build time (migrations/embed.py). */
#ifndef CAT_MIGRATIONS_H
#define CAT_MIGRATIONS_H

struct cat_migration {
	int version; /* 1, 2, ... without gaps */
	const char *name; /* "0001_init" */
	const char *sql;
};

extern const struct cat_migration cat_migrations[];
extern const int cat_migration_count;

#endif
