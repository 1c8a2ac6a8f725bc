/* doc.c - a metadata document as table_entry.metadata stores it.
 *
 * PostgreSQL compresses a long text itself (lz4, migration 0006), but it
 * decompresses and sends the whole text to every reader: on a loadTable
 * miss that is most of the work, ~35 µs of CPU for a 20 KB document
 * against ~15 µs for 7 KB (BENCHMARKS, twenty-fifth pass).  So the catalog
 * stores a document packed: "zstd:" and the unpadded base64url of a zstd
 * frame of its text, a sixth to a third of its size, which PostgreSQL keeps
 * and sends as it is; the readers in this directory unpack it.  A stored
 * value that begins with '{' is a document as it is (every row written
 * before migration 0010, and these):
 *   - a document that names a floe.maintenance.* property.  The maintenance
 *     scheduler reads those properties in SQL (maintenance.c), and filters
 *     on the name first; base64url has no '.', so a packed document can
 *     never match that filter, and never holds such a property;
 *   - a document shorter than PACK_MIN bytes, or one packing would not
 *     shrink.
 * Views' documents are stored the same way. */
#include <pthread.h>
#include <string.h>
#include <zstd.h>

#include "b64.h"
#include "db_int.h"

#define PACK_PREFIX "zstd:"
#define PACK_PREFIX_LEN 5
#define PACK_MIN 1024
/* zstd's level 1: ~0.6 GB/s here, and ~8x on the benchmarks' documents. */
#define PACK_LEVEL 1
/* No stored document unpacks to more (the inline limit's maximum). */
#define UNPACK_MAX ((size_t)1 << 30)

/* One compression and one decompression context per thread, kept: a
 * context made for each call costs about as much as the call itself. */
static pthread_once_t keys_once = PTHREAD_ONCE_INIT;
static pthread_key_t cctx_key, dctx_key;
static bool keys_ok;

static void free_cctx(void *p)
{
	ZSTD_freeCCtx(p);
}

static void free_dctx(void *p)
{
	ZSTD_freeDCtx(p);
}

static void keys_init(void)
{
	keys_ok = pthread_key_create(&cctx_key, free_cctx) == 0 &&
	          pthread_key_create(&dctx_key, free_dctx) == 0;
}

/* The calling thread's context of key (made by make on first use). */
static void *thread_ctx(pthread_key_t *key, void *(*make)(void), void (*drop)(void *))
{
	void *ctx;

	if (pthread_once(&keys_once, keys_init) != 0 || !keys_ok)
		return NULL;
	ctx = pthread_getspecific(*key);
	if (ctx == NULL && (ctx = make()) != NULL && pthread_setspecific(*key, ctx) != 0) {
		drop(ctx);
		ctx = NULL;
	}
	return ctx;
}

static void *make_cctx(void)
{
	return ZSTD_createCCtx();
}

static void *make_dctx(void)
{
	return ZSTD_createDCtx();
}

bool cat_doc_packed(const char *v, size_t len)
{
	return len >= PACK_PREFIX_LEN && memcmp(v, PACK_PREFIX, PACK_PREFIX_LEN) == 0;
}

const char *cat_doc_pack(const char *text, char **owned)
{
	ZSTD_CCtx *cctx;
	unsigned char *z;
	size_t n, cap, zn;

	*owned = NULL;
	if (text == NULL || (n = strlen(text)) < PACK_MIN || strstr(text, "floe.maintenance.") ||
	    (cctx = thread_ctx(&cctx_key, make_cctx, free_cctx)) == NULL)
		return text;
	cap = ZSTD_compressBound(n);
	if ((z = malloc(cap)) == NULL)
		return text;
	zn = ZSTD_compressCCtx(cctx, z, cap, text, n, PACK_LEVEL);
	/* A failure leaves the text as it is: it is stored either way. */
	if (!ZSTD_isError(zn) && PACK_PREFIX_LEN + (4 * zn + 2) / 3 < n &&
	    (*owned = malloc(PACK_PREFIX_LEN + (4 * zn + 2) / 3 + 1)) != NULL) {
		memcpy(*owned, PACK_PREFIX, PACK_PREFIX_LEN);
		fl_b64url_encode(z, zn, *owned + PACK_PREFIX_LEN);
	}
	free(z);
	return *owned != NULL ? *owned : text;
}

int cat_doc_unpack(const char *v, size_t len, char **out, size_t *out_len, struct fl_err *err)
{
	ZSTD_DCtx *dctx = thread_ctx(&dctx_key, make_dctx, free_dctx);
	unsigned char *z;
	unsigned long long size;
	size_t zn, got;
	char *t;

	*out = NULL;
	if (!cat_doc_packed(v, len))
		return fl_err_set(err, FL_ERR_INTERNAL, "stored metadata is not a packed document");
	if (dctx == NULL || (z = malloc((len - PACK_PREFIX_LEN) * 3 / 4 + 3)) == NULL)
		return fl_err_set(err, FL_ERR_NOMEM, "out of memory");
	if (fl_b64_decode(v + PACK_PREFIX_LEN, len - PACK_PREFIX_LEN, z,
	                  (len - PACK_PREFIX_LEN) * 3 / 4 + 3, &zn) != 0) {
		free(z);
		return fl_err_set(err, FL_ERR_INTERNAL,
		                  "stored metadata: a packed document that is not base64url");
	}
	size = ZSTD_getFrameContentSize(z, zn);
	if (size == ZSTD_CONTENTSIZE_ERROR || size == ZSTD_CONTENTSIZE_UNKNOWN || size == 0 ||
	    size > UNPACK_MAX) {
		free(z);
		return fl_err_set(err, FL_ERR_INTERNAL,
		                  "stored metadata: a packed document without a valid zstd frame");
	}
	if ((t = malloc((size_t)size + 1)) == NULL) {
		free(z);
		return fl_err_set(err, FL_ERR_NOMEM, "out of memory");
	}
	got = ZSTD_decompressDCtx(dctx, t, (size_t)size, z, zn);
	free(z);
	/* A document is text: a NUL inside would cut it short for its readers. */
	if (ZSTD_isError(got) || got != size || memchr(t, '\0', got) != NULL) {
		free(t);
		return fl_err_set(err, FL_ERR_INTERNAL,
		                  "stored metadata: a packed document that does not unpack (%s)",
		                  ZSTD_isError(got) ? ZSTD_getErrorName(got)
		                                    : "wrong size or a NUL");
	}
	t[got] = '\0';
	*out = t;
	*out_len = got;
	return 0;
}
