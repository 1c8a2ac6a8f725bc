/* test_rle.c - the RLE / bit-packed hybrid encoder and decoder
 * (storage/parquet/rle.c): the byte examples of parquet-format
 * Encodings.md, round trips through a decoder written here from that
 * document and through the product's decoder, and the decoder on
 * truncated and malformed runs. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "parquet/rle.h"

/* Decodes n values; returns bytes consumed, or 0 on malformed input. */
static size_t decode(const uint8_t *p, size_t len, int width, uint32_t *out, size_t n)
{
	size_t pos = 0, got = 0;

	while (got < n) {
		uint64_t h = 0;
		int shift = 0;

		do {
			if (pos >= len)
				return 0;
			h |= (uint64_t)(p[pos] & 0x7f) << shift;
			shift += 7;
		} while (p[pos++] & 0x80);
		if (h & 1) {
			size_t count = (h >> 1) * 8;
			uint64_t acc = 0;
			int bits = 0;

			for (size_t k = 0; k < count; k++) {
				while (bits < width) {
					if (pos >= len)
						return 0;
					acc |= (uint64_t)p[pos++] << bits;
					bits += 8;
				}
				if (got < n)
					out[got++] = (uint32_t)(acc & ((1ULL << width) - 1));
				acc >>= width;
				bits -= width;
			}
		} else {
			size_t count = h >> 1;
			uint32_t v = 0;

			for (int k = 0; k < (width + 7) / 8; k++) {
				if (pos >= len)
					return 0;
				v |= (uint32_t)p[pos++] << (8 * k);
			}
			if (count == 0)
				return 0;
			for (size_t k = 0; k < count && got < n; k++)
				out[got++] = v;
		}
	}
	return pos;
}

static void test_spec_example(void **state)
{
	/* Encodings.md: 0..7 bit-packed at width 3 = header 0x03 then
	 * 10001000 11000110 11111010. */
	static const uint32_t v[] = {0, 1, 2, 3, 4, 5, 6, 7};
	static const uint8_t want[] = {0x03, 0x88, 0xc6, 0xfa};
	struct st_buf b;

	(void)state;
	st_buf_init(&b, NULL);
	assert_int_equal(st_rle_encode_u32(&b, v, 8, 3), 0);
	assert_int_equal(b.len, sizeof(want));
	assert_memory_equal(b.data, want, sizeof(want));
	st_buf_free(&b);
}

static void test_rle_run_bytes(void **state)
{
	uint8_t ones[100];
	uint32_t big[10];
	struct st_buf b;

	(void)state;
	memset(ones, 1, sizeof(ones));
	st_buf_init(&b, NULL);
	assert_int_equal(st_rle_encode_u8(&b, ones, 100, 1), 0);
	/* one run: varint(100 << 1) = c8 01, value 01 */
	assert_int_equal(b.len, 3);
	assert_int_equal(b.data[0], 0xc8);
	assert_int_equal(b.data[1], 0x01);
	assert_int_equal(b.data[2], 0x01);
	st_buf_reset(&b);
	for (int i = 0; i < 10; i++)
		big[i] = 0x123456;
	assert_int_equal(st_rle_encode_u32(&b, big, 10, 21), 0);
	/* value in ceil(21/8) = 3 bytes, little-endian */
	assert_int_equal(b.len, 4);
	assert_int_equal(b.data[0], 20);
	assert_int_equal(b.data[1], 0x56);
	assert_int_equal(b.data[2], 0x34);
	assert_int_equal(b.data[3], 0x12);
	st_buf_free(&b);
}

static void test_alternating_bits(void **state)
{
	static const uint8_t v[] = {0, 1, 0, 1, 0, 1, 0, 1, 1};
	struct st_buf b;

	(void)state;
	st_buf_init(&b, NULL);
	assert_int_equal(st_rle_encode_u8(&b, v, 9, 1), 0);
	/* two groups (the second padded): header 0x05, 0xaa, 0x01 */
	assert_int_equal(b.len, 3);
	assert_int_equal(b.data[0], 0x05);
	assert_int_equal(b.data[1], 0xaa);
	assert_int_equal(b.data[2], 0x01);
	st_buf_free(&b);
}

static uint64_t rng = 88172645463325252ULL;

static uint32_t next_rand(void)
{
	rng ^= rng << 13;
	rng ^= rng >> 7;
	rng ^= rng << 17;
	return (uint32_t)rng;
}

static void test_round_trips(void **state)
{
	static const int widths[] = {1, 2, 3, 5, 7, 8, 9, 13, 16, 20, 31, 32};
	static const size_t lengths[] = {0, 1, 7, 8, 9, 15, 16, 17, 63, 100, 1000, 4099};
	uint32_t *in = malloc(4099 * sizeof(*in)), *out = malloc(4099 * sizeof(*out));

	(void)state;
	for (size_t wi = 0; wi < sizeof(widths) / sizeof(widths[0]); wi++) {
		int w = widths[wi];
		uint32_t mask = w == 32 ? UINT32_MAX : (1u << w) - 1;

		for (size_t li = 0; li < sizeof(lengths) / sizeof(lengths[0]); li++) {
			for (int pattern = 0; pattern < 4; pattern++) {
				size_t n = lengths[li];
				struct st_buf b;

				for (size_t i = 0; i < n; i++) {
					switch (pattern) {
					case 0: in[i] = next_rand() & mask; break;
					case 1: in[i] = mask; break;
					/* runs of 1..12 */
					case 2:
						in[i] = (uint32_t)((i / (1 + i % 12)) & mask);
						break;
					default:
						in[i] = (next_rand() % 3 == 0 ? next_rand() : 1) &
						        mask;
						break;
					}
				}
				st_buf_init(&b, NULL);
				assert_int_equal(st_rle_encode_u32(&b, in, n, w), 0);
				if (n > 0) {
					struct st_rle_reader r;

					assert_int_equal(decode(b.data, b.len, w, out, n), b.len);
					assert_memory_equal(in, out, n * sizeof(*in));
					memset(out, 0, n * sizeof(*out));
					st_rle_reader_init(&r, b.data, b.len, w);
					for (size_t i = 0; i < n; i++)
						assert_int_equal(st_rle_next(&r, &out[i]), 0);
					assert_memory_equal(in, out, n * sizeof(*in));
				} else {
					assert_int_equal(b.len, 0);
				}
				st_buf_free(&b);
			}
		}
	}
	free(in);
	free(out);
}

static void test_decoder_bounds(void **state)
{
	/* An RLE run of 3 x 5 at width 3, then a bit-packed run cut to one
	 * byte: (1, 2) and the half of a third value, which must not appear. */
	static const uint8_t runs[] = {0x06, 0x05, 0x03, 0x11};
	/* A run whose value does not fit the width. */
	static const uint8_t wide[] = {0x04, 0x09};
	/* A varint that never ends. */
	static const uint8_t endless[] = {0x80, 0x80, 0x80};
	struct st_rle_reader r;
	uint32_t v;

	(void)state;
	st_rle_reader_init(&r, runs, sizeof(runs), 3);
	for (int i = 0; i < 3; i++) {
		assert_int_equal(st_rle_next(&r, &v), 0);
		assert_int_equal(v, 5);
	}
	assert_int_equal(st_rle_next(&r, &v), 0);
	assert_int_equal(v, 1);
	assert_int_equal(st_rle_next(&r, &v), 0);
	assert_int_equal(v, 2);
	assert_int_equal(st_rle_next(&r, &v), -1);
	st_rle_reader_init(&r, wide, sizeof(wide), 3);
	assert_int_equal(st_rle_next(&r, &v), -1);
	st_rle_reader_init(&r, endless, sizeof(endless), 3);
	assert_int_equal(st_rle_next(&r, &v), -1);
	st_rle_reader_init(&r, NULL, 0, 1);
	assert_int_equal(st_rle_next(&r, &v), -1);
	/* Width 0: every value is 0 without any bytes. */
	st_rle_reader_init(&r, NULL, 0, 0);
	assert_int_equal(st_rle_next(&r, &v), 0);
	assert_int_equal(v, 0);
	st_rle_reader_init(&r, runs, sizeof(runs), 33);
	assert_int_equal(st_rle_next(&r, &v), -1);
}

static void test_bit_width(void **state)
{
	(void)state;
	assert_int_equal(st_bit_width(0), 0);
	assert_int_equal(st_bit_width(1), 1);
	assert_int_equal(st_bit_width(2), 2);
	assert_int_equal(st_bit_width(3), 2);
	assert_int_equal(st_bit_width(4), 3);
	assert_int_equal(st_bit_width(255), 8);
	assert_int_equal(st_bit_width(256), 9);
	assert_int_equal(st_bit_width(UINT32_MAX), 32);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	        cmocka_unit_test(test_spec_example),     cmocka_unit_test(test_rle_run_bytes),
	        cmocka_unit_test(test_alternating_bits), cmocka_unit_test(test_round_trips),
	        cmocka_unit_test(test_bit_width),        cmocka_unit_test(test_decoder_bounds),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
