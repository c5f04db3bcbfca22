/*
 * src/util/utf8.c - the one UTF-8 well-formedness check (RFC 3629, Table 3-7
 * of the Unicode standard): no overlong forms, no surrogates, nothing
 * beyond U+10FFFF.
 */
#include "util/common.h"
#include "aptix/buf.h"

size_t aptix_utf8_seqlen(const unsigned char *s, size_t avail)
{
	size_t n, i;

	if (!avail)
		return 0;
	if (s[0] < 0x80)
		return 1;
	if (s[0] >= 0xc2 && s[0] <= 0xdf)
		n = 2;
	else if (s[0] >= 0xe0 && s[0] <= 0xef)
		n = 3;
	else if (s[0] >= 0xf0 && s[0] <= 0xf4)
		n = 4;
	else
		return 0;
	if (n > avail)
		return 0;
	for (i = 1; i < n; i++)
		if ((s[i] & 0xc0) != 0x80)
			return 0;
	if ((s[0] == 0xe0 && s[1] < 0xa0) || (s[0] == 0xed && s[1] > 0x9f) ||
	    (s[0] == 0xf0 && s[1] < 0x90) || (s[0] == 0xf4 && s[1] > 0x8f))
		return 0;
	return n;
}

size_t aptix_utf8_cut(const char *s, size_t len, size_t max)
{
	size_t n = max;

	if (len <= max)
		return len;
	while (n && ((unsigned char)s[n] & 0xc0) == 0x80)
		n--;
	return n;
}

int aptix_utf8_valid(const char *s, size_t len)
{
	const unsigned char *p = (const unsigned char *)s;
	size_t i = 0, n;

	while (i < len) {
		if (!p[i] || !(n = aptix_utf8_seqlen(p + i, len - i)))
			return 0;
		i += n;
	}
	return 1;
}

/* Bytes at s that must be escaped (0: none; else how many). */
static size_t path_escape_len(const unsigned char *s, size_t avail)
{
	size_t n;

	if (s[0] < 0x20 || s[0] == 0x7f || s[0] == '"' || s[0] == '\\')
		return 1;
	if (s[0] < 0x80)
		return 0;
	if (!(n = aptix_utf8_seqlen(s, avail)))
		return 1;
	return s[0] == 0xc2 && s[1] <= 0x9f ? 2 : 0;	/* C1 */
}

int aptix_buf_put_path(aptix_buf *b, const char *path)
{
	static const char named[] = "abtnvfr";
	const unsigned char *s = (const unsigned char *)path;
	size_t len = strlen(path), i, n, start = 0;
	int quote = 0;

	for (i = 0; i < len && !quote; i += n ? n : 1) {
		quote = path_escape_len(s + i, len - i) > 0;
		n = aptix_utf8_seqlen(s + i, len - i);
	}
	if (!quote)
		return aptix_buf_put(b, path, len);
	aptix_buf_putc(b, '"');
	for (i = 0; i < len; i += n) {
		size_t k, esc = path_escape_len(s + i, len - i);

		n = aptix_utf8_seqlen(s + i, len - i);
		if (!esc) {
			n = n ? n : 1;
			continue;
		}
		aptix_buf_put(b, path + start, i - start);
		for (k = 0; k < esc; k++) {
			unsigned char c = s[i + k];

			if (c >= 7 && c <= 13)
				aptix_buf_printf(b, "\\%c", named[c - 7]);
			else if (c == '"' || c == '\\')
				aptix_buf_printf(b, "\\%c", c);
			else
				aptix_buf_printf(b, "\\%03o", c);
		}
		n = esc;
		start = i + n;
	}
	aptix_buf_put(b, path + start, len - start);
	aptix_buf_putc(b, '"');
	return aptix_buf_oom(b) ? APTIX_ERROR : 0;
}
