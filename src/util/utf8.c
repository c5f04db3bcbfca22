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
