/* buf.c - growable buffer; capacity doubles, contents stay NUL-terminated. */
#include "buf.h"

#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int fl_buf_reserve(struct fl_buf *b, size_t extra)
{
	size_t need, cap;
	char *p;

	if (extra > SIZE_MAX - b->len - 1)
		return -1;
	need = b->len + extra + 1;
	if (need <= b->cap)
		return 0;
	cap = b->cap ? b->cap : 256;
	while (cap < need)
		cap = cap > SIZE_MAX / 2 ? need : cap * 2;
	p = realloc(b->data, cap);
	if (p == NULL)
		return -1;
	b->data = p;
	b->cap = cap;
	return 0;
}

int fl_buf_append(struct fl_buf *b, const void *p, size_t n)
{
	if (fl_buf_reserve(b, n) != 0)
		return -1;
	if (n > 0)
		memcpy(b->data + b->len, p, n);
	b->len += n;
	b->data[b->len] = '\0';
	return 0;
}

int fl_buf_puts(struct fl_buf *b, const char *s)
{
	return fl_buf_append(b, s, strlen(s));
}

int fl_buf_printf(struct fl_buf *b, const char *fmt, ...)
{
	va_list ap;
	int n;

	va_start(ap, fmt);
	n = vsnprintf(NULL, 0, fmt, ap);
	va_end(ap);
	if (n < 0 || fl_buf_reserve(b, (size_t)n) != 0)
		return -1;
	va_start(ap, fmt);
	vsnprintf(b->data + b->len, (size_t)n + 1, fmt, ap);
	va_end(ap);
	b->len += (size_t)n;
	return 0;
}

void fl_buf_reset(struct fl_buf *b)
{
	b->len = 0;
	if (b->data != NULL)
		b->data[0] = '\0';
}

void fl_buf_free(struct fl_buf *b)
{
	free(b->data);
	b->data = NULL;
	b->len = b->cap = 0;
}

char *fl_buf_steal(struct fl_buf *b)
{
	char *p = b->data;

	b->data = NULL;
	b->len = b->cap = 0;
	return p;
}
