/*
 * src/util/base64.c - RFC 4648 base64 (see base64.h).
 */
#include "util/common.h"
#include "util/base64.h"

static const char alphabet[] =
	"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";

int aptix_base64_encode(aptix_buf *out, const void *data, size_t len)
{
	const unsigned char *p = data;
	char q[4];
	size_t i;

	for (i = 0; i + 2 < len; i += 3) {
		q[0] = alphabet[p[i] >> 2];
		q[1] = alphabet[((p[i] & 3) << 4) | (p[i + 1] >> 4)];
		q[2] = alphabet[((p[i + 1] & 15) << 2) | (p[i + 2] >> 6)];
		q[3] = alphabet[p[i + 2] & 63];
		aptix_buf_put(out, q, 4);
	}
	if (i < len) {
		q[0] = alphabet[p[i] >> 2];
		q[1] = alphabet[((p[i] & 3) << 4) |
				(i + 1 < len ? p[i + 1] >> 4 : 0)];
		q[2] = i + 1 < len ? alphabet[(p[i + 1] & 15) << 2] : '=';
		q[3] = '=';
		aptix_buf_put(out, q, 4);
	}
	return aptix_buf_oom(out) ? aptix_error_oom() : 0;
}

static int sextet(char c)
{
	const char *at = c ? strchr(alphabet, c) : NULL;

	return at ? (int)(at - alphabet) : -1;
}

int aptix_base64_decode(aptix_buf *out, const char *text, size_t len)
{
	unsigned char b[3];
	int v[4], k;
	size_t i, pad;

	if (len % 4)
		goto bad;
	for (i = 0; i < len; i += 4) {
		pad = i + 4 == len ? (text[i + 3] == '=') +
			(text[i + 2] == '=') : 0;
		for (k = 0; k < 4; k++)
			if ((v[k] = k >= 4 - (int)pad ? 0 : sextet(text[i + k]))
			    < 0)
				goto bad;
		b[0] = (unsigned char)(v[0] << 2 | v[1] >> 4);
		b[1] = (unsigned char)((v[1] & 15) << 4 | v[2] >> 2);
		b[2] = (unsigned char)((v[2] & 3) << 6 | v[3]);
		aptix_buf_put(out, b, 3 - pad);
	}
	return aptix_buf_oom(out) ? aptix_error_oom() : 0;
bad:
	aptix_error_set(APTIX_ERROR_INVALID, "malformed base64");
	return APTIX_EINVALID;
}
