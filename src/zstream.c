/*
 * src/zstream.c - encoding of stored objects (see zstream.h).
 */
#include "common.h"
#include "zstream.h"
#include "env.h"
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

/*
 * One deflate and one inflate stream per thread, reset between objects:
 * setting a stream up allocates and clears some 300 KiB, which costs
 * more than compressing a small object.
 */
static _Thread_local z_stream dstream, istream;
static _Thread_local int dstream_level = -1, istream_ready;

/*
 * APTIX_ZLIB_LEVEL (one digit, 0-9) overrides aptix_zlib_level, for
 * `make bench`; read once per thread.
 */
static _Thread_local int env_level = -2;

static int zlib_level(void)
{
	if (env_level == -2) {
		const char *e = aptix_env__get(APTIX_ENV_ZLIB_LEVEL);

		env_level = e && e[0] >= '0' && e[0] <= '9' && !e[1] ?
			e[0] - '0' : -1;
	}
	return env_level >= 0 ? env_level : aptix_zlib_level;
}

static int deflate_into(unsigned char *out, size_t *outlen, const void *in,
			size_t inlen)
{
	int level = zlib_level();

	if (dstream_level != level) {
		if (dstream_level >= 0)
			deflateEnd(&dstream);
		memset(&dstream, 0, sizeof(dstream));
		if (deflateInit(&dstream, level) != Z_OK) {
			dstream_level = -1;
			return -1;
		}
		dstream_level = level;
	} else if (deflateReset(&dstream) != Z_OK) {
		return -1;
	}
	dstream.next_in = (Bytef *)in;
	dstream.avail_in = (uInt)inlen;
	dstream.next_out = out;
	dstream.avail_out = (uInt)*outlen;
	if (deflate(&dstream, Z_FINISH) != Z_STREAM_END)
		return -1;
	*outlen = dstream.total_out;
	return 0;
}

static int inflate_into(unsigned char *out, size_t outlen, const void *in,
			size_t inlen)
{
	int zr;

	if (!istream_ready) {
		memset(&istream, 0, sizeof(istream));
		if (inflateInit(&istream) != Z_OK)
			return -1;
		istream_ready = 1;
	} else if (inflateReset(&istream) != Z_OK) {
		return -1;
	}
	istream.next_in = (Bytef *)in;
	istream.avail_in = (uInt)inlen;
	istream.next_out = out;
	istream.avail_out = (uInt)outlen;
	zr = inflate(&istream, Z_FINISH);
	if (zr != Z_STREAM_END || istream.total_out != outlen ||
	    istream.avail_in != 0)
		return -1;
	return 0;
}

int aptix_stored_encode(aptix_buf *out, aptix_otype type, const void *data,
			size_t len)
{
	unsigned char hdr[12];
	size_t hlen;
	size_t clen;

	hdr[0] = (unsigned char)type;
	hlen = 1 + put_varint(hdr + 1, len);
	aptix_buf_clear(out);
	clen = len - 9;	/* it must save more than 8 bytes */
	if (len >= 64 && len < (size_t)1 << 31 &&
	    aptix_buf_grow(out, hlen + clen) == 0) {
		if (deflate_into((unsigned char *)out->ptr + hlen, &clen,
				 data, len) == 0) {
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
	int r;

	if ((r = aptix_stored_header(type, &size, &hlen, val, vlen)) < 0)
		return r;
	aptix_buf_clear(out);
	if (p[0] & APTIX_STORED_RAW) {
		if (vlen - hlen != size)
			goto corrupt;
		return aptix_buf_put(out, p + hlen, size);
	}
	/* deflate expands at most 1032:1: never allocate a damaged size */
	if (size / 1032 > vlen - hlen)
		goto corrupt;
	if (aptix_buf_grow(out, size) < 0)
		return APTIX_ERROR;
	if (inflate_into((unsigned char *)out->ptr, size, p + hlen,
			 vlen - hlen) < 0)
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
