/* avro.c - Avro object container file writer.
 *
 * Bytes produced (Avro 1.11 specification, "Object Container Files"):
 *
 *   header:  'O' 'b' 'j' 0x01
 *            file metadata as an Avro map<bytes>: long count N, then N pairs
 *            (string key, bytes value), then long 0.  Keys: avro.schema (the
 *            caller's JSON, verbatim), avro.codec ("null" | "deflate"),
 *            then the caller's keys in the order given.
 *            16-byte sync marker
 *   blocks:  long object count, long byte size of the (compressed) data,
 *            the data, the 16-byte sync marker
 *
 * Integers are zig-zag varints ("Binary Encoding" / "Primitive Types").  For
 * deflate each block's data is compressed independently as raw RFC 1951
 * (zlib windowBits -15, Z_FINISH): the spec's "deflate" codec has no zlib
 * header or checksum.
 *
 * Invariants: the header is in the sink before the first datum; `block`
 * holds whole datums only after end_record; once `failed` is set nothing
 * more reaches the sink. */
#include "avro.h"

#include <limits.h>
#include <string.h>
#include <sys/random.h>
#include <zlib.h>

#define DEFAULT_BLOCK_BYTES (64 * 1024)

struct st_avro_writer {
	const struct st_alloc *alloc;
	struct st_sink sink;
	enum st_avro_codec codec;
	uint8_t sync[16];
	size_t block_bytes;
	struct st_buf block; /* encoded datums of the open block */
	struct st_buf frame; /* block header + compressed data, sent in one write */
	uint64_t block_count;
	uint64_t written; /* bytes accepted by the sink */
	bool zinit;
	z_stream zs;
	bool failed; /* a datum append ran out of memory */
	bool broken; /* the sink or codec failed: the file is unusable */
};

static int sink_put(struct st_avro_writer *w, const struct st_buf *b, struct fl_err *err)
{
	if (w->sink.write(w->sink.ctx, b->data, b->len, err) != 0) {
		w->broken = true;
		return fl_err_prefix(err, "avro: writing %zu bytes", b->len);
	}
	w->written += b->len;
	return 0;
}

static int put_bytes(struct st_buf *b, const void *p, size_t n)
{
	if (st_buf_put_zigzag(b, (int64_t)n) != 0)
		return -1;
	return st_buf_append(b, p, n);
}

void st_avro_writer_free(struct st_avro_writer *w)
{
	if (w == NULL)
		return;
	if (w->zinit)
		deflateEnd(&w->zs);
	st_buf_free(&w->block);
	st_buf_free(&w->frame);
	st_free(w->alloc, w);
}

static int write_header(struct st_avro_writer *w, const struct st_avro_writer_opts *o,
                        struct fl_err *err)
{
	static const uint8_t magic[4] = {'O', 'b', 'j', 1};
	const char *codec = o->codec == ST_AVRO_CODEC_DEFLATE ? "deflate" : "null";
	struct st_buf *h = &w->frame;

	if (st_buf_append(h, magic, sizeof(magic)) != 0 ||
	    st_buf_put_zigzag(h, (int64_t)(o->n_meta + 2)) != 0 ||
	    put_bytes(h, "avro.schema", strlen("avro.schema")) != 0 ||
	    put_bytes(h, o->schema_json, strlen(o->schema_json)) != 0 ||
	    put_bytes(h, "avro.codec", strlen("avro.codec")) != 0 ||
	    put_bytes(h, codec, strlen(codec)) != 0)
		goto nomem;
	for (size_t i = 0; i < o->n_meta; i++) {
		if (put_bytes(h, o->meta[i].key, strlen(o->meta[i].key)) != 0 ||
		    put_bytes(h, o->meta[i].value, o->meta[i].len) != 0)
			goto nomem;
	}
	if (st_buf_put_zigzag(h, 0) != 0 || st_buf_append(h, w->sync, sizeof(w->sync)) != 0)
		goto nomem;
	if (sink_put(w, h, err) != 0)
		return -1;
	st_buf_reset(h);
	return 0;
nomem:
	return fl_err_set(err, FL_ERR_NOMEM, "avro: out of memory writing the header");
}

int st_avro_writer_open(const struct st_avro_writer_opts *o, struct st_avro_writer **out,
                        struct fl_err *err)
{
	struct st_avro_writer *w = NULL;
	int level;

	if (o->schema_json == NULL || o->schema_json[0] == '\0')
		return fl_err_set(err, FL_ERR_BAD_REQUEST, "avro: a schema is required");
	if (o->sink.write == NULL)
		return fl_err_set(err, FL_ERR_BAD_REQUEST, "avro: a sink is required");
	if (o->codec != ST_AVRO_CODEC_NULL && o->codec != ST_AVRO_CODEC_DEFLATE)
		return fl_err_set(err, FL_ERR_BAD_REQUEST, "avro: unknown codec %d", (int)o->codec);
	for (size_t i = 0; i < o->n_meta; i++) {
		/* The spec reserves the avro. prefix; a second avro.codec
		 * would also make readers pick either value. */
		if (o->meta[i].key == NULL || strncmp(o->meta[i].key, "avro.", 5) == 0)
			return fl_err_set(err, FL_ERR_BAD_REQUEST,
			                  "avro: metadata key %s is reserved",
			                  o->meta[i].key ? o->meta[i].key : "(null)");
	}

	w = st_calloc(o->alloc, 1, sizeof(*w));
	if (w == NULL)
		return fl_err_set(err, FL_ERR_NOMEM, "avro: out of memory");
	w->alloc = o->alloc;
	w->sink = o->sink;
	w->codec = o->codec;
	w->block_bytes = o->block_bytes ? o->block_bytes : DEFAULT_BLOCK_BYTES;
	st_buf_init(&w->block, o->alloc);
	st_buf_init(&w->frame, o->alloc);
	if (o->sync != NULL) {
		memcpy(w->sync, o->sync, sizeof(w->sync));
	} else if (getrandom(w->sync, sizeof(w->sync), 0) != (ssize_t)sizeof(w->sync)) {
		fl_err_set(err, FL_ERR_INTERNAL, "avro: no random bytes for the sync marker");
		goto fail;
	}
	if (w->codec == ST_AVRO_CODEC_DEFLATE) {
		w->zs.zalloc = st_alloc_hook_zlib;
		w->zs.zfree = st_alloc_hook_free;
		w->zs.opaque = (void *)o->alloc;
		level = o->deflate_level ? o->deflate_level : Z_DEFAULT_COMPRESSION;
		if (deflateInit2(&w->zs, level, Z_DEFLATED, -15, 8, Z_DEFAULT_STRATEGY) != Z_OK) {
			fl_err_set(err, FL_ERR_NOMEM, "avro: cannot start deflate");
			goto fail;
		}
		w->zinit = true;
	}
	if (write_header(w, o, err) != 0)
		goto fail;
	*out = w;
	return 0;
fail:
	st_avro_writer_free(w);
	return -1;
}

static void enc_fail(struct st_avro_writer *w, int rc)
{
	if (rc != 0)
		w->failed = true;
}

void st_avro_write_int(struct st_avro_writer *w, int32_t v)
{
	enc_fail(w, st_buf_put_zigzag(&w->block, v));
}

void st_avro_write_long(struct st_avro_writer *w, int64_t v)
{
	enc_fail(w, st_buf_put_zigzag(&w->block, v));
}

void st_avro_write_bool(struct st_avro_writer *w, bool v)
{
	enc_fail(w, st_buf_put_u8(&w->block, v ? 1 : 0));
}

void st_avro_write_float(struct st_avro_writer *w, float v)
{
	uint32_t u;

	memcpy(&u, &v, sizeof(u));
	enc_fail(w, st_buf_put_le32(&w->block, u));
}

void st_avro_write_double(struct st_avro_writer *w, double v)
{
	uint64_t u;

	memcpy(&u, &v, sizeof(u));
	enc_fail(w, st_buf_put_le64(&w->block, u));
}

void st_avro_write_bytes(struct st_avro_writer *w, const void *p, size_t n)
{
	enc_fail(w, put_bytes(&w->block, p, n));
}

void st_avro_write_string(struct st_avro_writer *w, const char *s)
{
	enc_fail(w, put_bytes(&w->block, s, strlen(s)));
}

void st_avro_write_fixed(struct st_avro_writer *w, const void *p, size_t n)
{
	enc_fail(w, st_buf_append(&w->block, p, n));
}

void st_avro_write_union(struct st_avro_writer *w, int branch)
{
	enc_fail(w, st_buf_put_zigzag(&w->block, branch));
}

void st_avro_write_array_start(struct st_avro_writer *w, size_t n)
{
	if (n > 0)
		enc_fail(w, st_buf_put_zigzag(&w->block, (int64_t)n));
}

void st_avro_write_array_end(struct st_avro_writer *w)
{
	enc_fail(w, st_buf_put_zigzag(&w->block, 0));
}

static int encode_block(struct st_avro_writer *w, struct fl_err *err)
{
	const uint8_t *data = w->block.data;
	size_t len = w->block.len;
	struct st_buf *f = &w->frame;

	if (w->block_count == 0)
		return 0;
	st_buf_reset(f);
	if (w->codec == ST_AVRO_CODEC_DEFLATE) {
		/* Compress into the tail of `frame`, leaving room in front for
		 * the two varints, so the block leaves in a single write. */
		uLong bound = deflateBound(&w->zs, (uLong)len);
		size_t head = 20;

		if (len > UINT_MAX || bound > UINT_MAX)
			return fl_err_set(err, FL_ERR_TOO_LARGE, "avro: block of %zu bytes", len);
		if (st_buf_reserve(f, head + bound) != 0)
			return fl_err_set(err, FL_ERR_NOMEM, "avro: out of memory compressing");
		if (deflateReset(&w->zs) != Z_OK)
			goto zfail;
		w->zs.next_in = (Bytef *)(uintptr_t)data;
		w->zs.avail_in = (uInt)len;
		w->zs.next_out = f->data + head;
		w->zs.avail_out = (uInt)bound;
		if (deflate(&w->zs, Z_FINISH) != Z_STREAM_END)
			goto zfail;
		len = w->zs.total_out;
		/* Build the header in `block` (now free) and splice. */
		st_buf_reset(&w->block);
		if (st_buf_put_zigzag(&w->block, (int64_t)w->block_count) != 0 ||
		    st_buf_put_zigzag(&w->block, (int64_t)len) != 0)
			return fl_err_set(err, FL_ERR_NOMEM, "avro: out of memory");
		memmove(f->data + w->block.len, f->data + head, len);
		memcpy(f->data, w->block.data, w->block.len);
		f->len = w->block.len + len;
		if (st_buf_append(f, w->sync, sizeof(w->sync)) != 0)
			return fl_err_set(err, FL_ERR_NOMEM, "avro: out of memory");
	} else {
		if (st_buf_put_zigzag(f, (int64_t)w->block_count) != 0 ||
		    st_buf_put_zigzag(f, (int64_t)len) != 0 || st_buf_append(f, data, len) != 0 ||
		    st_buf_append(f, w->sync, sizeof(w->sync)) != 0)
			return fl_err_set(err, FL_ERR_NOMEM, "avro: out of memory");
	}
	if (sink_put(w, f, err) != 0)
		return -1;
	st_buf_reset(&w->block);
	st_buf_reset(f);
	w->block_count = 0;
	return 0;
zfail:
	w->broken = true;
	return fl_err_set(err, FL_ERR_INTERNAL, "avro: deflate failed");
}

/* Any failure while a block leaves may have consumed the block or sent part
 * of it, so the writer refuses all later calls. */
static int flush_block(struct st_avro_writer *w, struct fl_err *err)
{
	if (encode_block(w, err) != 0) {
		w->broken = true;
		return -1;
	}
	return 0;
}

int st_avro_writer_end_record(struct st_avro_writer *w, struct fl_err *err)
{
	if (w->broken)
		return fl_err_set(err, FL_ERR_IO, "avro: the writer failed earlier");
	if (w->failed) {
		/* The partial datum must not reach a block. */
		w->broken = true;
		return fl_err_set(err, FL_ERR_NOMEM, "avro: out of memory encoding a record");
	}
	w->block_count++;
	if (w->block.len >= w->block_bytes)
		return flush_block(w, err);
	return 0;
}

int st_avro_writer_close(struct st_avro_writer *w, uint64_t *bytes, struct fl_err *err)
{
	int rc = -1;

	if (w->broken || w->failed) {
		fl_err_set(err, w->failed ? FL_ERR_NOMEM : FL_ERR_IO,
		           "avro: the writer failed earlier");
		goto out;
	}
	if (flush_block(w, err) != 0)
		goto out;
	if (bytes != NULL)
		*bytes = w->written;
	rc = 0;
out:
	st_avro_writer_free(w);
	return rc;
}
