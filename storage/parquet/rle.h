/* rle.h - the Parquet RLE / bit-packed hybrid encoding (parquet-format
 * Encodings.md, "Run Length Encoding / Bit-Packing Hybrid (RLE = 3)"),
 * used for definition levels and dictionary indices.
 *
 * Output is the run sequence only: callers add the 4-byte length prefix
 * (data page v1 levels) or the 1-byte bit width (dictionary indices). */
#ifndef ST_RLE_H
#define ST_RLE_H

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

#endif
