/* xml.h - a small bounded scanner for the flat XML that S3 and STS speak.
 *
 * It is not an XML parser: it finds elements by name and returns their text
 * content.  That is all STS responses (<AccessKeyId>…) and S3 DeleteObjects
 * bodies (<Key>…) need.  Markup inside the text (nested elements, CDATA,
 * comments) is an error rather than something to guess about.  Pure. */
#ifndef ST_XML_H
#define ST_XML_H

#include <stddef.h>

#include "err.h"

/* Finds the next element named tag (no namespace prefix; attributes are
 * skipped) at or after *pos in the n bytes at xml, and copies its text with
 * the five predefined entities and numeric references decoded into out
 * (cap bytes including the NUL).  Returns 1 and moves *pos past the end tag
 * when found, 0 when there is no further such element, -1 with
 * FL_ERR_BAD_REQUEST when the element is unterminated, holds markup, an
 * unknown entity or more than cap - 1 bytes. */
int st_xml_next(const char *xml, size_t n, size_t *pos, const char *tag, char *out, size_t cap,
                struct fl_err *err) FL_MUST_CHECK;

#endif
