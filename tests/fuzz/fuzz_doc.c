/* fuzz_doc.c - a stored metadata value as catalog/db/doc.c reads it.
 *
 * The input, as the stored value: whether or not it is a packed document,
 * cat_doc_unpack either refuses it with a message or returns text of the
 * length it says, with no NUL inside.  Prefixed with "zstd:" it reaches the
 * base64url and zstd layers.  As a document (when it holds no NUL), what
 * cat_doc_pack stores unpacks to it again, or is the text itself. */
#include <string.h>

#include "db/db_int.h"
#include "fuzz.h"

static void unpack_checked(const char *v, size_t len)
{
	struct fl_err err = {0};
	char *out = NULL;
	size_t n = 0;

	if (cat_doc_unpack(v, len, &out, &n, &err) == 0) {
		FUZZ_CHECK(out != NULL && strlen(out) == n);
		free(out);
	} else {
		FUZZ_CHECK(out == NULL && err.msg[0] != '\0');
	}
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char *v = malloc(size + 6), *owned = NULL;
	const char *stored;

	if (v == NULL)
		return 0;
	memcpy(v, data, size);
	v[size] = '\0';
	unpack_checked(v, size);
	memcpy(v, "zstd:", 5);
	memcpy(v + 5, data, size);
	v[size + 5] = '\0';
	unpack_checked(v, size + 5);
	if (memchr(data, '\0', size) == NULL) {
		memcpy(v, data, size);
		v[size] = '\0';
		stored = cat_doc_pack(v, &owned);
		FUZZ_CHECK(stored == v || stored == owned);
		if (owned != NULL) {
			struct fl_err err = {0};
			char *out = NULL;
			size_t n = 0;

			FUZZ_CHECK(cat_doc_unpack(owned, strlen(owned), &out, &n, &err) == 0);
			FUZZ_CHECK(n == size && memcmp(out, data, size) == 0);
			free(out);
			free(owned);
		}
	}
	free(v);
	return 0;
}
