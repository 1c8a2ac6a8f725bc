/* name_mapping.c - the Iceberg name mapping: parsed once into the JSON
 * tree (checked), looked up by walking it one path name per level.
 *
 * Invariant: after st_name_mapping_parse every level is an array of
 * objects whose "names" is an array of strings, "field-id" (when present)
 * an integer in int32 range and "fields" (when present) a checked level;
 * no name appears twice in one level. */
#include "iceberg/name_mapping.h"

#include <jansson.h>
#include <string.h>

#include "json.h"

#define MAX_DEPTH 32

struct st_name_mapping {
	json_t *root;
};

static int check_level(const json_t *level, int depth, struct fl_err *err)
{
	size_t i, j, k, l;
	json_t *e, *e2;

	if (!json_is_array(level))
		return fl_err_set(err, FL_ERR_BAD_REQUEST, "name mapping: a level is not a list");
	if (depth > MAX_DEPTH)
		return fl_err_set(err, FL_ERR_BAD_REQUEST, "name mapping: nested deeper than %d",
		                  MAX_DEPTH);
	json_array_foreach(level, i, e)
	{
		json_t *names = json_object_get(e, "names");
		json_t *id = json_object_get(e, "field-id");
		json_t *fields = json_object_get(e, "fields");
		json_t *n;

		if (!json_is_object(e) || !json_is_array(names))
			return fl_err_set(err, FL_ERR_BAD_REQUEST,
			                  "name mapping: entry %zu has no names list", i);
		if (id != NULL && !json_is_null(id) &&
		    (!json_is_integer(id) || json_integer_value(id) < 0 ||
		     json_integer_value(id) > INT32_MAX))
			return fl_err_set(err, FL_ERR_BAD_REQUEST,
			                  "name mapping: entry %zu has a bad field-id", i);
		json_array_foreach(names, j, n)
		{
			if (!json_is_string(n))
				return fl_err_set(err, FL_ERR_BAD_REQUEST,
				                  "name mapping: entry %zu has a name that is "
				                  "not a string",
				                  i);
			/* The same name twice in a level would make lookups ambiguous. */
			for (k = 0; k <= i; k++) {
				json_t *other = json_object_get(json_array_get(level, k), "names");

				json_array_foreach(other, l, e2)
				{
					if ((k < i || l < j) && json_is_string(e2) &&
					    strcmp(json_string_value(e2), json_string_value(n)) ==
					            0)
						return fl_err_set(err, FL_ERR_BAD_REQUEST,
						                  "name mapping: name %s is mapped "
						                  "twice",
						                  json_string_value(n));
				}
			}
		}
		if (fields != NULL && !json_is_null(fields) &&
		    check_level(fields, depth + 1, err) != 0)
			return -1;
	}
	return 0;
}

int st_name_mapping_parse(const char *s, size_t len, struct st_name_mapping **out,
                          struct fl_err *err)
{
	struct st_name_mapping *m;
	json_t *root = NULL;

	if (fl_json_parse(s, len, 2 * MAX_DEPTH + 4, &root, err) != 0)
		return fl_err_prefix(err, "name mapping");
	if (check_level(root, 0, err) != 0) {
		json_decref(root);
		return -1;
	}
	m = malloc(sizeof(*m));
	if (m == NULL) {
		json_decref(root);
		return fl_err_set(err, FL_ERR_NOMEM, "name mapping: out of memory");
	}
	m->root = root;
	*out = m;
	return 0;
}

int32_t st_name_mapping_find(const struct st_name_mapping *m, const char *const *names, size_t n)
{
	const json_t *level = m ? m->root : NULL;

	for (size_t d = 0; d < n && level != NULL; d++) {
		const json_t *hit = NULL;
		size_t i, j;
		json_t *e, *name;

		json_array_foreach(level, i, e)
		{
			json_array_foreach(json_object_get(e, "names"), j, name)
			{
				if (strcmp(json_string_value(name), names[d]) == 0)
					hit = e;
			}
		}
		if (hit == NULL)
			return -1;
		if (d + 1 == n) {
			json_t *id = json_object_get(hit, "field-id");

			return json_is_integer(id) ? (int32_t)json_integer_value(id) : -1;
		}
		level = json_object_get(hit, "fields");
		if (json_is_null(level))
			level = NULL;
	}
	return -1;
}

void st_name_mapping_free(struct st_name_mapping *m)
{
	if (m == NULL)
		return;
	json_decref(m->root);
	free(m);
}
