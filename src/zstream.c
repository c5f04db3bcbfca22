/*
 * src/zstream.c - encoding of stored objects (see zstream.h).
 */
#include "common.h"
#include "zstream.h"
#include <zlib.h>

int aptix_zlib_level = 1;

static size_t put_varint(unsigned char *p, uint64_t v)
{
	size_t n = 0;

	do {
		p[n] = (unsigned char)(v & 0x7f);
		v >>= 7;
		if (v)
			p[n] |= 0x80;
		n++;
	} while (v);
	return n;
}

int aptix_stored_header(aptix_otype *type, size_t *size, size_t *hdrlen,
			const void *val, size_t vlen)
{
	const unsigned char *p = val;
	uint64_t v = 0;
	size_t i;
	int t;

	if (vlen < 2)
		goto corrupt;
	t = p[0] & 0x7f;
	if (t < APTIX_OBJ_BLOB || t > APTIX_OBJ_SESSION)
		goto corrupt;
	for (i = 1;; i++) {
		if (i >= vlen || i > 10)
			goto corrupt;
		v |= (uint64_t)(p[i] & 0x7f) << (7 * (i - 1));
		if (!(p[i] & 0x80))
			break;
	}
	if (v > SIZE_MAX / 2)
		goto corrupt;
	*type = (aptix_otype)t;
	*size = (size_t)v;
	*hdrlen = i + 1;
	return 0;
corrupt:
	aptix_error_set(APTIX_ERROR_ODB, "stored object header is corrupt");
	return APTIX_ECORRUPT;
}

int aptix_stored_encode(aptix_buf *out, aptix_otype type, const void *data,
			size_t len)
{
	unsigned char hdr[12];
	size_t hlen;
	uLongf clen;
	int zr;

	hdr[0] = (unsigned char)type;
	hlen = 1 + put_varint(hdr + 1, len);
	aptix_buf_clear(out);
	clen = compressBound((uLong)len);
	if (len >= 64 && len < (size_t)1 << 31 &&
	    aptix_buf_grow(out, hlen + clen) == 0) {
		zr = compress2((Bytef *)out->ptr + hlen, &clen, data,
			       (uLong)len, aptix_zlib_level);
		if (zr == Z_OK && clen + 8 < len) {
			memcpy(out->ptr, hdr, hlen);
			out->len = hlen + clen;
			out->ptr[out->len] = '\0';
			return 0;
		}
	}
	/* Stored raw: compression would not pay for its inflate cost. */
	hdr[0] |= APTIX_STORED_RAW;
	aptix_buf_clear(out);
	aptix_buf_put(out, hdr, hlen);
	aptix_buf_put(out, data, len);
	return aptix_buf_oom(out) ? APTIX_ERROR : 0;
}

int aptix_stored_decode(aptix_buf *out, aptix_otype *type, const void *val,
			size_t vlen)
{
	const unsigned char *p = val;
	size_t size, hlen;
	uLongf dlen;
	int r, zr;

	if ((r = aptix_stored_header(type, &size, &hlen, val, vlen)) < 0)
		return r;
	aptix_buf_clear(out);
	if (p[0] & APTIX_STORED_RAW) {
		if (vlen - hlen != size)
			goto corrupt;
		return aptix_buf_put(out, p + hlen, size);
	}
	if (aptix_buf_grow(out, size) < 0)
		return APTIX_ERROR;
	dlen = (uLongf)size;
	zr = uncompress((Bytef *)out->ptr, &dlen, p + hlen,
			(uLong)(vlen - hlen));
	if (zr != Z_OK || dlen != size)
		goto corrupt;
	out->len = size;
	out->ptr[size] = '\0';
	return 0;
corrupt:
	aptix_buf_clear(out);
	aptix_error_set(APTIX_ERROR_ZLIB, "stored object is corrupt or "
			"truncated");
	return APTIX_ECORRUPT;
}
