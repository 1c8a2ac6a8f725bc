/* reachable.c - walks a snapshot's manifest list and manifests and records
 * every file they name (see reachable.h).
 *
 * Manifest entries (spec "Manifests"): status 0 EXISTING, 1 ADDED,
 * 2 DELETED; data_file.file_path, file_size_in_bytes and content (absent
 * in v1: data).  A manifest is read once per set: a manifest already in
 * r->manifests has had its files added. */
#include "iceberg/reachable.h"

#include <inttypes.h>
#include <string.h>

#include "avro/reader.h"

#define DEFAULT_READ_BYTES ((size_t)64 << 20)

static int nomem(struct fl_err *err)
{
	return fl_err_set(err, FL_ERR_NOMEM, "out of memory");
}

static int read_manifest(struct st_reachable *r, const char *uri, struct fl_err *err)
{
	size_t max = r->max_read_bytes ? r->max_read_bytes : DEFAULT_READ_BYTES;
	json_t *entries = NULL, *e;
	size_t i;
	int rc = -1;

	if (st_avro_read_all(r->io, uri, max, NULL, &entries, err) != 0) {
		if (err->kind != FL_ERR_NOT_FOUND || !r->missing_ok)
			return -1;
		r->missing++;
		return 0;
	}
	json_array_foreach(entries, i, e)
	{
		const json_t *df = json_object_get(e, "data_file");
		const json_t *status = json_object_get(e, "status");
		const char *path = json_string_value(json_object_get(df, "file_path"));
		const json_t *size = json_object_get(df, "file_size_in_bytes");
		const json_t *content = json_object_get(df, "content");

		if (path == NULL || !json_is_integer(status) || !json_is_integer(size)) {
			fl_err_set(err, FL_ERR_BAD_REQUEST,
			           "manifest %.200s: entry %zu lacks status, file_path or "
			           "file_size_in_bytes",
			           uri, i);
			goto out;
		}
		if (r->live_only && json_integer_value(status) == 2)
			continue;
		if (json_object_set_new(r->files, path,
		                        json_pack("[I,I]", json_integer_value(size),
		                                  json_is_integer(content)
		                                          ? json_integer_value(content)
		                                          : (json_int_t)0)) != 0) {
			nomem(err);
			goto out;
		}
	}
	rc = 0;
out:
	json_decref(entries);
	return rc;
}

int st_reachable_add(struct st_reachable *r, const char *list_uri, struct fl_err *err)
{
	size_t max = r->max_read_bytes ? r->max_read_bytes : DEFAULT_READ_BYTES;
	json_t *list = NULL, *m;
	size_t i;
	int rc = -1;

	if (json_object_set_new(r->lists, list_uri, json_integer(0)) != 0)
		return nomem(err);
	if (st_avro_read_all(r->io, list_uri, max, NULL, &list, err) != 0) {
		if (err->kind != FL_ERR_NOT_FOUND || !r->missing_ok)
			return -1;
		r->missing++;
		return 0;
	}
	json_array_foreach(list, i, m)
	{
		const char *path = json_string_value(json_object_get(m, "manifest_path"));
		const json_t *len = json_object_get(m, "manifest_length");

		if (path == NULL || !json_is_integer(len)) {
			fl_err_set(err, FL_ERR_BAD_REQUEST,
			           "manifest list %.200s: manifest %zu lacks manifest_path or "
			           "manifest_length",
			           list_uri, i);
			goto out;
		}
		if (json_object_get(r->manifests, path) != NULL ||
		    (r->skip != NULL && json_object_get(r->skip, path) != NULL))
			continue;
		if (json_object_set_new(r->manifests, path,
		                        json_integer(json_integer_value(len))) != 0) {
			nomem(err);
			goto out;
		}
		if (read_manifest(r, path, err) != 0)
			goto out;
	}
	rc = 0;
out:
	json_decref(list);
	return rc;
}
