/* decimal_text.h - an unscaled decimal (16-byte big-endian two's
 * complement, iceberg/types.h) as exact text with `scale` fractional digits,
 * e.g. "-0.05": the form write_samples and parquet_dump print and the node
 * tests compare.  For test programs only. */
#ifndef TEST_DECIMAL_TEXT_H
#define TEST_DECIMAL_TEXT_H

#include <stdint.h>

/* out must hold 72 bytes (39 digits, sign, point, NUL). */
static inline void decimal_text(const uint8_t dec[16], int scale, char out[72])
{
	__extension__ typedef unsigned __int128 u128;
	u128 u = 0;
	char digits[64];
	int n = 0, k = 0;
	int neg = dec[0] & 0x80;

	for (int i = 0; i < 16; i++)
		u = (u << 8) | dec[i];
	if (neg)
		u = (u128)0 - u;
	do {
		digits[n++] = (char)('0' + (int)(u % 10));
		u /= 10;
	} while (u != 0 || n <= scale);
	if (neg)
		out[k++] = '-';
	for (int i = n - 1; i >= 0; i--) {
		out[k++] = digits[i];
		if (i == scale && scale > 0)
			out[k++] = '.';
	}
	out[k] = '\0';
}

#endif
