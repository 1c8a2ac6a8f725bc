/* rle.h - the Parquet RLE / bit-packed hybrid encoding (parquet-format
 * Encodings.md, "Run Length Encoding / Bit-Packing Hybrid (RLE = 3)"),
 * used for definition levels and dictionary indices: an encoder and a
 * bounded streaming decoder.
 *
 * Both handle the run sequence only: callers add or strip the 4-byte
 * length prefix (data page v1 levels) or the 1-byte bit width (dictionary
 * indices). */
#ifndef ST_RLE_H
#define ST_RLE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "base/buf.h"
#include "err.h"

/* Appends n values, each < 2^bit_width (bit_width 1..32).  -1 when out of
 * memory (out may then hold a partial encoding). */
int st_rle_encode_u32(struct st_buf *out, const uint32_t *v, size_t n, int bit_width) FL_MUST_CHECK;
int st_rle_encode_u8(struct st_buf *out, const uint8_t *v, size_t n, int bit_width) FL_MUST_CHECK;

/* Bits needed for values 0..max_value (0 for max_value 0). */
int st_bit_width(uint32_t max_value);

/* A decoder over a borrowed run sequence; no allocation.  A bit-packed run
 * cut short by the end of the input yields only the whole values present
 * (writers pad the last group, but some trim it). */
struct st_rle_reader {
	const uint8_t *p, *end;
	int width;
	bool packed; /* inside a bit-packed run */
	uint64_t left; /* values left in the current run */
	uint32_t value; /* the RLE run's value */
	uint64_t bit; /* next bit of the bit-packed run, from p */
};

/* Starts decoding the n bytes at p as values of bit_width bits (0..32;
 * width 0 means every value is 0 and needs no bytes). */
void st_rle_reader_init(struct st_rle_reader *r, const uint8_t *p, size_t n, int bit_width);

/* Reads the next value into *v; -1 when the runs are exhausted or
 * malformed (the caller names the column and page). */
int st_rle_next(struct st_rle_reader *r, uint32_t *v) FL_MUST_CHECK;

#endif
