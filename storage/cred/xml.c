/* xml.c - element text by name, bounded, for STS and S3 XML. */
#include "xml.h"

#include <stdbool.h>
#include <stdint.h>
#include <string.h>

/* Where an end tag "</tag>" starts at or after from, or NULL. */
static const char *find_end(const char *p, const char *end, const char *tag, size_t tl)
{
	for (; p + tl + 3 <= end; p++)
		if (p[0] == '<' && p[1] == '/' && memcmp(p + 2, tag, tl) == 0 && p[2 + tl] == '>')
			return p;
	return NULL;
}

/* Appends code point cp as UTF-8; false when it does not fit or is invalid. */
static bool put_utf8(char *out, size_t cap, size_t *o, uint32_t cp)
{
	unsigned char b[4];
	size_t n;

	if (cp == 0 || (cp >= 0xD800 && cp <= 0xDFFF) || cp > 0x10FFFF)
		return false;
	if (cp < 0x80) {
		b[0] = (unsigned char)cp;
		n = 1;
	} else if (cp < 0x800) {
		b[0] = (unsigned char)(0xC0 | (cp >> 6));
		b[1] = (unsigned char)(0x80 | (cp & 63));
		n = 2;
	} else if (cp < 0x10000) {
		b[0] = (unsigned char)(0xE0 | (cp >> 12));
		b[1] = (unsigned char)(0x80 | ((cp >> 6) & 63));
		b[2] = (unsigned char)(0x80 | (cp & 63));
		n = 3;
	} else {
		b[0] = (unsigned char)(0xF0 | (cp >> 18));
		b[1] = (unsigned char)(0x80 | ((cp >> 12) & 63));
		b[2] = (unsigned char)(0x80 | ((cp >> 6) & 63));
		b[3] = (unsigned char)(0x80 | (cp & 63));
		n = 4;
	}
	if (*o + n >= cap)
		return false;
	memcpy(out + *o, b, n);
	*o += n;
	return true;
}

/* Decodes the entity at p (after '&') up to ';'; returns the bytes consumed
 * after '&' or 0 when unknown. */
static size_t entity(const char *p, const char *end, char *out, size_t cap, size_t *o)
{
	static const struct {
		const char *name;
		char c;
	} named[] = {{"amp;", '&'}, {"lt;", '<'}, {"gt;", '>'}, {"quot;", '"'}, {"apos;", '\''}};
	uint32_t cp = 0;
	size_t i = 1;
	bool hexa;

	for (size_t k = 0; k < sizeof(named) / sizeof(named[0]); k++) {
		size_t l = strlen(named[k].name);

		if ((size_t)(end - p) >= l && memcmp(p, named[k].name, l) == 0) {
			if (*o + 1 >= cap)
				return 0;
			out[(*o)++] = named[k].c;
			return l;
		}
	}
	if (p >= end || p[0] != '#')
		return 0;
	hexa = p + 1 < end && (p[1] == 'x' || p[1] == 'X');
	i = hexa ? 2 : 1;
	for (; p + i < end && p[i] != ';' && i < 10; i++) {
		char c = p[i];
		int d = c >= '0' && c <= '9'           ? c - '0'
		        : hexa && c >= 'a' && c <= 'f' ? c - 'a' + 10
		        : hexa && c >= 'A' && c <= 'F' ? c - 'A' + 10
		                                       : -1;
		if (d < 0)
			return 0;
		cp = cp * (hexa ? 16 : 10) + (uint32_t)d;
	}
	if (p + i >= end || p[i] != ';' || i == (hexa ? 2u : 1u) || !put_utf8(out, cap, o, cp))
		return 0;
	return i + 1;
}

int st_xml_next(const char *xml, size_t n, size_t *pos, const char *tag, char *out, size_t cap,
                struct fl_err *err)
{
	const char *end = xml + n, *p = xml + *pos, *text, *close;
	size_t tl = strlen(tag), o = 0;

	for (;; p++) {
		if (p + tl + 2 > end)
			return 0;
		if (p[0] == '<' && memcmp(p + 1, tag, tl) == 0 &&
		    (p[1 + tl] == '>' || p[1 + tl] == ' ' || p[1 + tl] == '/' ||
		     p[1 + tl] == '\t' || p[1 + tl] == '\n' || p[1 + tl] == '\r'))
			break;
	}
	text = memchr(p, '>', (size_t)(end - p));
	if (text == NULL)
		return fl_err_set(err, FL_ERR_BAD_REQUEST, "XML element <%s> is not terminated",
		                  tag);
	if (text[-1] == '/') {
		out[0] = '\0';
		*pos = (size_t)(text + 1 - xml);
		return 1;
	}
	text++;
	close = find_end(text, end, tag, tl);
	if (close == NULL)
		return fl_err_set(err, FL_ERR_BAD_REQUEST, "XML element <%s> has no end tag", tag);
	for (const char *q = text; q < close; q++) {
		if (*q == '<')
			return fl_err_set(err, FL_ERR_BAD_REQUEST,
			                  "XML element <%s> holds markup, not text", tag);
		if (*q == '&') {
			size_t used = entity(q + 1, close, out, cap, &o);

			if (used == 0)
				return fl_err_set(err, FL_ERR_BAD_REQUEST,
				                  "XML element <%s>: unknown entity or too long",
				                  tag);
			q += used;
			continue;
		}
		if (*q == '\0' || o + 1 >= cap)
			return fl_err_set(err, FL_ERR_BAD_REQUEST,
			                  "XML element <%s>: text longer than %zu bytes", tag,
			                  cap - 1);
		out[o++] = *q;
	}
	out[o] = '\0';
	*pos = (size_t)(close + tl + 3 - xml);
	return 1;
}
