/* maintain_run.c - one maintenance action by name, the policy's action
 * list, and the measure of a table's shape for /metrics (maintenance.h).
 * `floe maintain`, the daemon's caretaker and the management endpoint run
 * actions through here, so they behave alike. */
#include "maintenance.h"

#include <stdlib.h>
#include <string.h>

#include "avro/reader.h"
#include "clock.h"

#define MAX_AVRO_READ ((size_t)64 << 20)

static const char *const actions[] = {"expire", "orphans", "compact", "manifests"};
#define NACTIONS (sizeof(actions) / sizeof(actions[0]))

bool cat_maintain_known(const char *action)
{
	for (size_t i = 0; i < NACTIONS; i++) {
		if (strcmp(action, actions[i]) == 0)
			return true;
	}
	return false;
}

int cat_maintain_action(struct cat_db *db, const struct cat_warehouse *wh, const struct cat_ns *ns,
                        const char *name, const struct cat_limits *lim, const char *action,
                        bool dry_run, unsigned pause_ms, json_t **report, struct fl_err *err)
{
	if (strcmp(action, "expire") == 0)
		return cat_maintain_expire(db, wh, ns, name, lim, fl_now_ms(), dry_run, report,
		                           err);
	if (strcmp(action, "orphans") == 0)
		return cat_maintain_orphans(db, wh, ns, name, fl_now_ms(), dry_run, report, err);
	if (strcmp(action, "compact") == 0)
		return cat_maintain_compact(db, wh, ns, name, lim, pause_ms, dry_run, report, err);
	if (strcmp(action, "manifests") == 0)
		return cat_maintain_manifests(db, wh, ns, name, lim, pause_ms, dry_run, report,
		                              err);
	return fl_err_set(
	        err, FL_ERR_BAD_REQUEST,
	        "unknown maintenance action '%.40s' (expire, orphans, compact, manifests)", action);
}

int cat_maintain_actions_parse(const char *list, json_t **out, struct fl_err *err)
{
	bool want[NACTIONS] = {false};
	const char *p = list;
	json_t *arr;

	while (*p != '\0') {
		const char *e;
		size_t len, k;

		while (*p == ' ')
			p++;
		e = p + strcspn(p, ",");
		len = (size_t)(e - p);
		while (len > 0 && p[len - 1] == ' ')
			len--;
		for (k = 0; k < NACTIONS; k++) {
			if (strlen(actions[k]) == len && strncmp(p, actions[k], len) == 0)
				break;
		}
		if (k == NACTIONS)
			return fl_err_set(err, FL_ERR_BAD_REQUEST,
			                  "unknown maintenance action '%.*s' (expire, orphans, "
			                  "compact, manifests)",
			                  (int)(len > 40 ? 40 : len), p);
		want[k] = true;
		p = *e == ',' ? e + 1 : e;
	}
	arr = json_array();
	if (arr == NULL)
		return fl_err_set(err, FL_ERR_NOMEM, "out of memory");
	for (size_t k = 0; k < NACTIONS; k++) {
		if (want[k] && json_array_append_new(arr, json_string(actions[k])) != 0) {
			json_decref(arr);
			return fl_err_set(err, FL_ERR_NOMEM, "out of memory");
		}
	}
	*out = arr;
	return 0;
}

/* Counts the live data files of one manifest per partition key. */
static int measure_manifest(struct st_io *io, const json_t *mf, json_t *parts,
                            struct cat_maint_shape *s, struct fl_err *err)
{
	const char *uri = json_string_value(json_object_get(mf, "manifest_path"));
	json_int_t spec = json_integer_value(json_object_get(mf, "partition_spec_id"));
	json_t *entries = NULL, *e;
	size_t i;

	if (json_integer_value(json_object_get(mf, "content")) != 0)
		return 0;
	if (uri == NULL)
		return fl_err_set(err, FL_ERR_BAD_REQUEST, "a manifest list entry lacks its path");
	if (st_avro_read_all(io, uri, MAX_AVRO_READ, NULL, &entries, err) != 0)
		return -1;
	json_array_foreach(entries, i, e)
	{
		const json_t *df = json_object_get(e, "data_file");
		char *pj, *key;
		size_t len;
		json_int_t n;

		if (json_integer_value(json_object_get(e, "status")) == 2)
			continue;
		s->data_files++;
		s->data_bytes += json_integer_value(json_object_get(df, "file_size_in_bytes"));
		pj = json_dumps(json_object_get(df, "partition"),
		                JSON_COMPACT | JSON_SORT_KEYS | JSON_ENCODE_ANY);
		len = pj != NULL ? strlen(pj) + 24 : 0;
		key = pj != NULL ? malloc(len) : NULL;
		if (key == NULL) {
			free(pj);
			json_decref(entries);
			return fl_err_set(err, FL_ERR_NOMEM, "out of memory");
		}
		snprintf(key, len, "%" JSON_INTEGER_FORMAT "|%s", spec, pj);
		free(pj);
		n = json_integer_value(json_object_get(parts, key)) + 1;
		if (json_object_set_new(parts, key, json_integer(n)) != 0) {
			free(key);
			json_decref(entries);
			return fl_err_set(err, FL_ERR_NOMEM, "out of memory");
		}
		free(key);
		if (n > s->max_files_per_partition)
			s->max_files_per_partition = n;
	}
	json_decref(entries);
	return 0;
}

int cat_maintain_measure(struct cat_db *db, const struct cat_warehouse *wh, const struct cat_ns *ns,
                         const char *name, struct fl_err *err)
{
	struct cat_maint_shape s = {0};
	char *mloc = NULL, *text = NULL, type[16];
	json_t *meta = NULL, *list = NULL, *parts = json_object(), *mf, *snap;
	json_int_t cur;
	size_t i;
	int rc = -1;

	if (parts == NULL)
		return fl_err_set(err, FL_ERR_NOMEM, "out of memory");
	if (cat_table_load(db, NULL, wh->name, ns, name, &mloc, &text, type, err) != 0)
		goto out;
	meta = json_loads(text, 0, NULL);
	if (meta == NULL) {
		fl_err_set(err, FL_ERR_INTERNAL, "stored metadata is not JSON");
		goto out;
	}
	s.snapshots = (int64_t)json_array_size(json_object_get(meta, "snapshots"));
	cur = json_integer_value(json_object_get(meta, "current-snapshot-id"));
	json_array_foreach(json_object_get(meta, "snapshots"), i, snap)
	{
		const char *luri = json_string_value(json_object_get(snap, "manifest-list"));
		size_t k;

		if (json_integer_value(json_object_get(snap, "snapshot-id")) != cur || luri == NULL)
			continue;
		if (st_avro_read_all(wh->io, luri, MAX_AVRO_READ, NULL, &list, err) != 0)
			goto out;
		json_array_foreach(list, k, mf)
		{
			if (measure_manifest(wh->io, mf, parts, &s, err) != 0)
				goto out;
		}
		break;
	}
	s.partitions = (int64_t)json_object_size(parts);
	rc = cat_maint_shape_put(db, wh, ns, name, &s, err);
out:
	free(mloc);
	free(text);
	json_decref(meta);
	json_decref(list);
	json_decref(parts);
	return rc;
}
