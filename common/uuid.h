/* uuid.h - UUID generation (v4 random, v7 time-ordered) and validation. */
#ifndef FL_UUID_H
#define FL_UUID_H

#include <stdbool.h>

#define FL_UUID_STR 37 /* 36 characters and the NUL */

/* Writes a random (v4) UUID in lower-case canonical form. Thread-safe. */
void fl_uuid_v4(char out[FL_UUID_STR]);

/* Writes a v7 UUID: 48-bit Unix milliseconds then random bits. Thread-safe. */
void fl_uuid_v7(char out[FL_UUID_STR]);

/* True when s is a canonical 8-4-4-4-12 hex UUID (either case). */
bool fl_uuid_valid(const char *s);

/* True when s is a valid UUID whose version nibble is 7 and variant is RFC 4122. */
bool fl_uuid_is_v7(const char *s);

#endif
