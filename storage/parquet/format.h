/* format.h - the parquet.thrift enum values that the writer (parquet.c) and
 * the reader (reader.c) share: physical types, repetition, encodings, page
 * types, codecs, converted types and the LogicalType union's members, as
 * apache/parquet-format's parquet.thrift numbers them.  Internal to
 * storage/parquet/. */
#ifndef ST_PARQUET_FORMAT_H
#define ST_PARQUET_FORMAT_H

enum {
	PT_BOOLEAN = 0,
	PT_INT32 = 1,
	PT_INT64 = 2,
	PT_INT96 = 3,
	PT_FLOAT = 4,
	PT_DOUBLE = 5,
	PT_BYTE_ARRAY = 6,
	PT_FLBA = 7,
	PT_NONE = -1
};
enum { REP_REQUIRED = 0, REP_OPTIONAL = 1, REP_REPEATED = 2 };
enum {
	ENC_PLAIN = 0,
	ENC_PLAIN_DICTIONARY = 2,
	ENC_RLE = 3,
	ENC_BIT_PACKED = 4,
	ENC_DELTA_BINARY_PACKED = 5,
	ENC_DELTA_LENGTH_BYTE_ARRAY = 6,
	ENC_DELTA_BYTE_ARRAY = 7,
	ENC_RLE_DICTIONARY = 8,
	ENC_BYTE_STREAM_SPLIT = 9
};
enum { PAGE_DATA = 0, PAGE_INDEX = 1, PAGE_DICTIONARY = 2, PAGE_DATA_V2 = 3 };
enum { CODEC_UNCOMPRESSED = 0, CODEC_SNAPPY = 1, CODEC_GZIP = 2, CODEC_ZSTD = 6 };
enum {
	CT_NONE = -1,
	CT_UTF8 = 0,
	CT_ENUM = 4,
	CT_DECIMAL = 5,
	CT_DATE = 6,
	CT_TIME_MILLIS = 7,
	CT_TIME_MICROS = 8,
	CT_TIMESTAMP_MILLIS = 9,
	CT_TIMESTAMP_MICROS = 10,
	CT_UINT_8 = 11,
	CT_UINT_16 = 12,
	CT_UINT_32 = 13,
	CT_UINT_64 = 14,
	CT_INT_8 = 15,
	CT_INT_16 = 16,
	CT_INT_32 = 17,
	CT_INT_64 = 18,
	CT_JSON = 19,
	CT_BSON = 20,
	CT_INTERVAL = 21
};
/* LogicalType union members. */
enum {
	LT_NONE = 0,
	LT_STRING = 1,
	LT_MAP = 2,
	LT_LIST = 3,
	LT_ENUM = 4,
	LT_DECIMAL = 5,
	LT_DATE = 6,
	LT_TIME = 7,
	LT_TIMESTAMP = 8,
	LT_INTEGER = 10,
	LT_UNKNOWN = 11,
	LT_JSON = 12,
	LT_BSON = 13,
	LT_UUID = 14,
	LT_FLOAT16 = 15
};
enum { UNIT_NONE = 0, UNIT_MILLIS = 1, UNIT_MICROS = 2, UNIT_NANOS = 3 };

#endif
