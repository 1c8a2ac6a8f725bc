/* fuzz_s3list.c - st_s3_list_parse (storage/io/s3util.c), the ListObjectsV2
 * page parser under orphan cleanup and S3 feeds: what it names is what
 * they may delete or ingest.
 *
 * Byte 0 even: the rest is an answer from the store, any bytes.  Byte 0
 * odd: the rest is split on '\n' into keys (NUL bytes dropped), written as
 * S3 writes a page (each key escaped by st_xml_escape, in <Contents> with a
 * size and a time), truncated with a token when byte 0 has bit 1 set.
 *
 * Invariants: success, or FL_ERR_IO with a message and no token; every key
 * reported is NUL-free and was unescaped from inside the input; a written
 * page reads back as exactly its keys, in order, with its token. */
#include <string.h>

#include "buf.h"
#include "fuzz.h"
#include "io/s3_int.h"

struct seen {
	const char *const *want; /* written keys, or NULL */
	size_t nwant, n;
};

static int on_key(void *arg, const char *key, uint64_t size, int64_t mtime_ms, struct fl_err *err)
{
	struct seen *s = arg;

	(void)err;
	(void)mtime_ms;
	if (s->want != NULL) {
		FUZZ_CHECK(s->n < s->nwant && strcmp(key, s->want[s->n]) == 0);
		FUZZ_CHECK(size == 7);
	}
	s->n++;
	return 0;
}

static void check(const char *xml, size_t n, struct seen *s)
{
	struct fl_err err = {0};
	char *next = NULL;

	if (st_s3_list_parse(xml, n, on_key, s, &next, &err) != 0) {
		FUZZ_CHECK(err.kind == FL_ERR_IO || err.kind == FL_ERR_NOMEM);
		FUZZ_CHECK(err.msg[0] != '\0' && next == NULL);
		FUZZ_CHECK(s->want == NULL);
	}
	free(next);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct seen s = {0};
	struct fl_buf page = FL_BUF_INIT;
	const char *keys[64];
	char *copy;
	size_t nk = 0;

	if (size == 0)
		return 0;
	if ((data[0] & 1) == 0) {
		copy = malloc(size > 1 ? size - 1 : 1); /* exact: ASan sees a read past it */
		FUZZ_CHECK(copy != NULL);
		memcpy(copy, data + 1, size - 1);
		check(copy, size - 1, &s);
		free(copy);
		return 0;
	}
	/* The keys: the input's lines, NUL bytes dropped. */
	copy = malloc(size);
	FUZZ_CHECK(copy != NULL);
	keys[nk++] = copy;
	for (size_t i = 1, j = 0; i <= size; i++) {
		char c = i < size ? (char)data[i] : '\0';

		if (i < size && c == '\0')
			continue;
		copy[j++] = c == '\n' ? '\0' : c;
		if (c == '\n' && nk < 64)
			keys[nk++] = copy + j;
	}
	FUZZ_CHECK(fl_buf_puts(&page, "<?xml version=\"1.0\"?><ListBucketResult>") == 0);
	if (data[0] & 2)
		FUZZ_CHECK(fl_buf_puts(&page, "<IsTruncated>true</IsTruncated>") == 0);
	for (size_t i = 0; i < nk; i++)
		FUZZ_CHECK(fl_buf_puts(&page, "<Contents><Key>") == 0 &&
		           st_xml_escape(&page, keys[i]) == 0 &&
		           fl_buf_puts(&page, "</Key><LastModified>2026-01-02T03:04:05.678Z"
		                              "</LastModified><Size>7</Size></Contents>") == 0);
	if (data[0] & 2)
		FUZZ_CHECK(fl_buf_puts(&page, "<NextContinuationToken>t&amp;1"
		                              "</NextContinuationToken>") == 0);
	FUZZ_CHECK(fl_buf_puts(&page, "</ListBucketResult>") == 0);
	s.want = keys;
	s.nwant = nk;
	check(page.data, page.len, &s);
	FUZZ_CHECK(s.n == nk);
	fl_buf_free(&page);
	free(copy);
	return 0;
}
