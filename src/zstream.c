/*
 * src/zstream.c - encoding of stored objects (see zstream.h).
 */
#include "common.h"
#include "zstream.h"
#include "env.h"
#include <zlib.h>
#include <pthread.h>

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
 * more than compressing a small object. They are freed when the thread
 * exits.
 */
struct zstate {
	z_stream d, i;
	int dlevel;		/* level d was set up with, -1: none */
	int iready;
};

static pthread_once_t zstate_once = PTHREAD_ONCE_INIT;
static pthread_key_t zstate_key;
static int zstate_key_ok;

static void zstate_free(void *p)
{
	struct zstate *z = p;

	if (z->dlevel >= 0)
		deflateEnd(&z->d);
	if (z->iready)
		inflateEnd(&z->i);
	free(z);
}

static void zstate_init(void)
{
	zstate_key_ok = pthread_key_create(&zstate_key, zstate_free) == 0;
}

static struct zstate *zstate(void)
{
	struct zstate *z;

	pthread_once(&zstate_once, zstate_init);
	if (!zstate_key_ok)
		return NULL;
	if ((z = pthread_getspecific(zstate_key)))
		return z;
	if (!(z = aptix__calloc(1, sizeof(*z))))
		return NULL;
	z->dlevel = -1;
	if (pthread_setspecific(zstate_key, z)) {
		free(z);
		return NULL;
	}
	return z;
}

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
	struct zstate *z = zstate();
	int level = zlib_level();

	if (!z)
		return -1;
	if (z->dlevel != level) {
		if (z->dlevel >= 0)
			deflateEnd(&z->d);
		memset(&z->d, 0, sizeof(z->d));
		if (deflateInit(&z->d, level) != Z_OK) {
			z->dlevel = -1;
			return -1;
		}
		z->dlevel = level;
	} else if (deflateReset(&z->d) != Z_OK) {
		return -1;
	}
	z->d.next_in = (Bytef *)in;
	z->d.avail_in = (uInt)inlen;
	z->d.next_out = out;
	z->d.avail_out = (uInt)*outlen;
	if (deflate(&z->d, Z_FINISH) != Z_STREAM_END)
		return -1;
	*outlen = z->d.total_out;
	return 0;
}

static int inflate_into(unsigned char *out, size_t outlen, const void *in,
			size_t inlen)
{
	struct zstate *z = zstate();
	int zr;

	if (!z)
		return -1;
	if (!z->iready) {
		memset(&z->i, 0, sizeof(z->i));
		if (inflateInit(&z->i) != Z_OK)
			return -1;
		z->iready = 1;
	} else if (inflateReset(&z->i) != Z_OK) {
		return -1;
	}
	z->i.next_in = (Bytef *)in;
	z->i.avail_in = (uInt)inlen;
	z->i.next_out = out;
	z->i.avail_out = (uInt)outlen;
	zr = inflate(&z->i, Z_FINISH);
	if (zr != Z_STREAM_END || z->i.total_out != outlen ||
	    z->i.avail_in != 0)
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
