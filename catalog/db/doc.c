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
#include <stdint.h>
#include <string.h>
#include <zstd.h>

#include "b64.h"
#include "db_int.h"

#define PACK_PREFIX "zstd:"
#define PACK_PREFIX_LEN 5
#define PACK_MIN 1024
/* zstd's level 1: ~0.8 GB/s here, and ~8x on the benchmarks' documents. */
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
	size_t n, cap, zn, packed;

	*owned = NULL;
	if (text == NULL || (n = strlen(text)) < PACK_MIN || strstr(text, "floe.maintenance.") ||
	    (cctx = thread_ctx(&cctx_key, make_cctx, free_cctx)) == NULL)
		return text;
	cap = ZSTD_compressBound(n);
	if ((z = malloc(cap)) == NULL)
		return text;
	zn = ZSTD_compressCCtx(cctx, z, cap, text, n, PACK_LEVEL);
	/* The packed text's length, its NUL aside (fl_b64url_encode). */
	packed = ZSTD_isError(zn) ? SIZE_MAX : PACK_PREFIX_LEN + (4 * zn + 2) / 3;
	/* A failure leaves the text as it is: it is stored either way. */
	if (packed < n && (*owned = malloc(packed + 1)) != NULL) {
		memcpy(*owned, PACK_PREFIX, PACK_PREFIX_LEN);
		fl_b64url_encode(z, zn, *owned + PACK_PREFIX_LEN);
	}
	free(z);
	return *owned != NULL ? *owned : text;
}

int cat_doc_open(const char *v, size_t len, struct cat_doc_frame *f, struct fl_err *err)
{
	size_t cap;
	unsigned long long size;

	f->z = NULL;
	f->zn = f->size = 0;
	if (!cat_doc_packed(v, len))
		return fl_err_set(err, FL_ERR_INTERNAL, "stored metadata is not a packed document");
	cap = (len - PACK_PREFIX_LEN) * 3 / 4 + 3;
	if ((f->z = malloc(cap)) == NULL)
		return fl_err_set(err, FL_ERR_NOMEM, "out of memory");
	if (fl_b64_decode(v + PACK_PREFIX_LEN, len - PACK_PREFIX_LEN, f->z, cap, &f->zn) != 0) {
		cat_doc_close(f);
		return fl_err_set(err, FL_ERR_INTERNAL,
		                  "stored metadata: a packed document that is not base64url");
	}
	size = ZSTD_getFrameContentSize(f->z, f->zn);
	if (size == ZSTD_CONTENTSIZE_ERROR || size == ZSTD_CONTENTSIZE_UNKNOWN || size == 0 ||
	    size > UNPACK_MAX) {
		cat_doc_close(f);
		return fl_err_set(err, FL_ERR_INTERNAL,
		                  "stored metadata: a packed document without a valid zstd frame");
	}
	f->size = (size_t)size;
	return 0;
}

int cat_doc_inflate(struct cat_doc_frame *f, char *dst, struct fl_err *err)
{
	ZSTD_DCtx *dctx = thread_ctx(&dctx_key, make_dctx, free_dctx);
	size_t got = dctx != NULL ? ZSTD_decompressDCtx(dctx, dst, f->size, f->z, f->zn) : 0;
	bool ok = dctx != NULL && !ZSTD_isError(got) && got == f->size &&
	          memchr(dst, '\0', got) == NULL;

	cat_doc_close(f);
	if (dctx == NULL)
		return fl_err_set(err, FL_ERR_NOMEM, "out of memory");
	/* A document is text: a NUL inside would cut it short for its readers. */
	if (!ok)
		return fl_err_set(err, FL_ERR_INTERNAL,
		                  "stored metadata: a packed document that does not unpack (%s)",
		                  ZSTD_isError(got) ? ZSTD_getErrorName(got)
		                                    : "wrong size or a NUL");
	return 0;
}

void cat_doc_close(struct cat_doc_frame *f)
{
	free(f->z);
	f->z = NULL;
}

int cat_doc_unpack(const char *v, size_t len, char **out, size_t *out_len, struct fl_err *err)
{
	struct cat_doc_frame f;
	char *t;

	*out = NULL;
	if (cat_doc_open(v, len, &f, err) != 0)
		return -1;
	if ((t = malloc(f.size + 1)) == NULL) {
		cat_doc_close(&f);
		return fl_err_set(err, FL_ERR_NOMEM, "out of memory");
	}
	if (cat_doc_inflate(&f, t, err) != 0) {
		free(t);
		return -1;
	}
	t[f.size] = '\0';
	*out = t;
	*out_len = f.size;
	return 0;
}
