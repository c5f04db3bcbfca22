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
	t = p[0] & APTIX_STORED_TYPE;
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

/*
 * Append len bytes of data to out, deflated unless that does not save
 * more than 8 bytes (or the data is under 64 bytes): then set the raw
 * flag in out->ptr[0].
 */
static int put_body(aptix_buf *out, const void *data, size_t len)
{
	size_t at = out->len, clen = len - 9;

	if (len >= 64 && len < (size_t)1 << 31 &&
	    aptix_buf_grow(out, clen) == 0 &&
	    deflate_into((unsigned char *)out->ptr + at, &clen, data,
			 len) == 0) {
		out->len = at + clen;
		out->ptr[out->len] = '\0';
		return 0;
	}
	/* Stored raw: compression would not pay for its inflate cost. */
	out->ptr[0] |= (char)APTIX_STORED_RAW;
	aptix_buf_put(out, data, len);
	return aptix_buf_oom(out) ? APTIX_ERROR : 0;
}

static int encode_plain(aptix_buf *out, aptix_otype type, const void *data,
			size_t len)
{
	unsigned char hdr[12];
	size_t hlen;

	hdr[0] = (unsigned char)type;
	hlen = 1 + put_varint(hdr + 1, len);
	aptix_buf_clear(out);
	aptix_buf_put(out, hdr, hlen);
	return put_body(out, data, len);
}

static int check_encoded(const aptix_buf *val, aptix_otype type,
			 const void *data, size_t len,
			 aptix_stored_base_fn base_fn, void *payload)
{
	aptix_buf back = APTIX_BUF_INIT;
	aptix_otype t;
	int ok = aptix_stored_decode_with(&back, &t, val->ptr, val->len,
					  base_fn, payload) == 0 &&
		t == type && back.len == len && !memcmp(back.ptr, data, len);

	aptix_buf_release(&back);
	return ok;
}

int aptix_stored_encode(aptix_buf *out, aptix_otype type, const void *data,
			size_t len)
{
	aptix_buf packed = APTIX_BUF_INIT;
	unsigned char hdr[24];
	size_t hlen;
	int r;

	if ((type != APTIX_OBJ_TURN && type != APTIX_OBJ_SESSION) ||
	    aptix__pack_json(&packed, data, len) < 0)
		goto plain;
	hdr[0] = (unsigned char)(type | APTIX_STORED_PACKED);
	hlen = 1 + put_varint(hdr + 1, len);
	hlen += put_varint(hdr + hlen, packed.len);
	aptix_buf_clear(out);
	aptix_buf_put(out, hdr, hlen);
	if ((r = put_body(out, packed.ptr, packed.len)) < 0) {
		aptix_buf_release(&packed);
		return r;
	}
	aptix_buf_release(&packed);
	if (check_encoded(out, type, data, len, NULL, NULL))
		return 0;
plain:
	aptix_buf_release(&packed);
	return encode_plain(out, type, data, len);
}

static int cmp_splice(const void *a, const void *b)
{
	const aptix_stored_splice *x = a, *y = b;

	return x->at < y->at ? -1 : x->at > y->at;
}

int aptix_stored_encode_spliced(aptix_buf *out, const void *data,
				size_t len, aptix_stored_splice *sp,
				size_t n, aptix_stored_base_fn base_fn,
				void *payload)
{
	aptix_buf rest = APTIX_BUF_INIT;
	unsigned char hdr[24];
	size_t i, hlen, pos = 0;
	const char *d = data;
	int r;

	if (!n || n > APTIX_STORED_MAX_SPLICES)
		return aptix_stored_encode(out, APTIX_OBJ_BLOB, data, len);
	qsort(sp, n, sizeof(*sp), cmp_splice);
	for (i = 0; i < n; i++) {
		if (sp[i].at < pos || sp[i].len > len - sp[i].at)
			goto plain;	/* overlapping: the caller's bug */
		aptix_buf_put(&rest, d + pos, sp[i].at - pos);
		pos = sp[i].at + sp[i].len;
	}
	aptix_buf_put(&rest, d + pos, len - pos);
	hdr[0] = (unsigned char)(APTIX_OBJ_BLOB | APTIX_STORED_PACKED);
	hlen = 1 + put_varint(hdr + 1, len);
	hlen += put_varint(hdr + hlen, n);
	aptix_buf_clear(out);
	aptix_buf_put(out, hdr, hlen);
	for (i = 0, pos = 0; i < n; i++) {
		/* where in the rest the escaped base goes */
		size_t at = sp[i].at - pos;

		aptix_buf_put(out, sp[i].base.id, APTIX_OID_RAWSZ);
		hlen = put_varint(hdr, at);
		hdr[hlen++] = (unsigned char)sp[i].kind;
		aptix_buf_put(out, hdr, hlen);
		pos += sp[i].len;
	}
	hlen = put_varint(hdr, rest.len);
	aptix_buf_put(out, hdr, hlen);
	if ((r = put_body(out, rest.ptr, rest.len)) < 0) {
		aptix_buf_release(&rest);
		return r;
	}
	aptix_buf_release(&rest);
	if (check_encoded(out, APTIX_OBJ_BLOB, data, len, base_fn, payload))
		return 0;
plain:
	aptix_buf_release(&rest);
	return encode_plain(out, APTIX_OBJ_BLOB, data, len);
}

/* Inflate (or copy) the body of len bytes at p into out, of size bytes. */
static int get_body(aptix_buf *out, int raw, const unsigned char *p,
		    size_t plen, size_t size)
{
	aptix_buf_clear(out);
	if (raw) {
		if (plen != size)
			return APTIX_ECORRUPT;
		return aptix_buf_put(out, p, size);
	}
	/* deflate expands at most 1032:1: never allocate a damaged size */
	if (size / 1032 > plen)
		return APTIX_ECORRUPT;
	if (aptix_buf_grow(out, size) < 0)
		return APTIX_ERROR;
	if (inflate_into((unsigned char *)out->ptr, size, p, plen) < 0)
		return APTIX_ECORRUPT;
	out->len = size;
	out->ptr[size] = '\0';
	return 0;
}

int aptix__get_varint(uint64_t *v, const unsigned char **p,
		      const unsigned char *end)
{
	int shift = 0;

	*v = 0;
	while (*p < end && shift < 64) {
		unsigned char c = *(*p)++;

		*v |= (uint64_t)(c & 0x7f) << shift;
		if (!(c & 0x80))
			return 0;
		shift += 7;
	}
	return -1;
}

static int decode_packed(aptix_buf *out, const unsigned char *p,
			 const unsigned char *end, int raw, size_t size)
{
	aptix_buf packed = APTIX_BUF_INIT;
	uint64_t plen;
	int r;

	if (aptix__get_varint(&plen, &p, end) < 0 || plen > SIZE_MAX / 2)
		return APTIX_ECORRUPT;
	if ((r = get_body(&packed, raw, p, (size_t)(end - p),
			  (size_t)plen)) == 0 &&
	    (aptix__unpack_json(out, packed.ptr, packed.len) < 0 ||
	     out->len != size))
		r = APTIX_ECORRUPT;
	aptix_buf_release(&packed);
	return r;
}

static int decode_spliced(aptix_buf *out, const unsigned char *p,
			  const unsigned char *end, int raw, size_t size,
			  aptix_stored_base_fn base_fn, void *payload)
{
	aptix_buf rest = APTIX_BUF_INIT, base = APTIX_BUF_INIT,
		esc = APTIX_BUF_INIT;
	const unsigned char *sp;
	uint64_t n, at, rlen, pos = 0;
	size_t i;
	int r = APTIX_ECORRUPT;

	if (aptix__get_varint(&n, &p, end) < 0 || !n ||
	    n > APTIX_STORED_MAX_SPLICES)
		return APTIX_ECORRUPT;
	sp = p;
	for (i = 0; i < n; i++) {
		if ((size_t)(end - p) < APTIX_OID_RAWSZ + 2)
			return APTIX_ECORRUPT;
		p += APTIX_OID_RAWSZ;
		if (aptix__get_varint(&at, &p, end) < 0 || p >= end || *p > 1)
			return APTIX_ECORRUPT;
		p++;
	}
	if (aptix__get_varint(&rlen, &p, end) < 0 || rlen > size)
		return APTIX_ECORRUPT;
	if ((r = get_body(&rest, raw, p, (size_t)(end - p),
			  (size_t)rlen)) < 0)
		goto done;
	aptix_buf_clear(out);
	for (i = 0; i < n; i++) {
		aptix_oid id;
		int kind;

		memcpy(id.id, sp, APTIX_OID_RAWSZ);
		sp += APTIX_OID_RAWSZ;
		aptix__get_varint(&at, &sp, end);
		kind = *sp++;
		r = APTIX_ECORRUPT;
		if (at > rlen - pos)
			goto done;
		aptix_buf_put(out, rest.ptr + pos, (size_t)at);
		pos += at;
		if (base_fn(&base, &id, payload) < 0) {
			r = APTIX_ENOTFOUND;
			aptix_error_set(APTIX_ERROR_ODB, "base blob '%s' of a "
					"stored object is missing or corrupt",
					aptix_oid_hex(&id));
			goto done;
		}
		r = APTIX_ECORRUPT;
		if (aptix__json_escape(&esc, base.ptr, base.len, kind) < 0)
			goto done;
		aptix_buf_put(out, esc.ptr, esc.len);
	}
	aptix_buf_put(out, rest.ptr + pos, (size_t)(rlen - pos));
	r = aptix_buf_oom(out) ? APTIX_ERROR :
		out->len == size ? 0 : APTIX_ECORRUPT;
done:
	aptix_buf_release(&rest);
	aptix_buf_release(&base);
	aptix_buf_release(&esc);
	return r;
}

int aptix_stored_decode_with(aptix_buf *out, aptix_otype *type,
			     const void *val, size_t vlen,
			     aptix_stored_base_fn base_fn, void *payload)
{
	const unsigned char *p = val;
	size_t size, hlen;
	int r, raw;

	if ((r = aptix_stored_header(type, &size, &hlen, val, vlen)) < 0)
		return r;
	raw = (p[0] & APTIX_STORED_RAW) != 0;
	if (!(p[0] & APTIX_STORED_PACKED)) {
		r = get_body(out, raw, p + hlen, vlen - hlen, size);
	} else if (*type != APTIX_OBJ_BLOB) {
		r = decode_packed(out, p + hlen, p + vlen, raw, size);
	} else if (!base_fn) {
		aptix_error_set(APTIX_ERROR_ODB, "stored object is spliced "
				"and no reader of its base was given");
		return APTIX_ECORRUPT;
	} else {
		r = decode_spliced(out, p + hlen, p + vlen, raw, size,
				   base_fn, payload);
		if (r == APTIX_ENOTFOUND) {	/* a base: said so */
			aptix_buf_clear(out);
			return APTIX_ECORRUPT;
		}
	}
	if (r == APTIX_ECORRUPT) {
		aptix_buf_clear(out);
		aptix_error_set(APTIX_ERROR_ZLIB, "stored object is corrupt "
				"or truncated");
	}
	return r;
}

int aptix_stored_decode(aptix_buf *out, aptix_otype *type, const void *val,
			size_t vlen)
{
	return aptix_stored_decode_with(out, type, val, vlen, NULL, NULL);
}

int aptix_stored_is_spliced(const void *val, size_t vlen)
{
	const unsigned char *p = val;

	return vlen && (p[0] & APTIX_STORED_TYPE) == APTIX_OBJ_BLOB &&
		(p[0] & APTIX_STORED_PACKED);
}

int aptix_stored_splice_bases(aptix_oid *out, size_t max, const void *val,
			      size_t vlen)
{
	const unsigned char *p = val, *end = p + vlen;
	uint64_t v, n;
	size_t i;

	if (!aptix_stored_is_spliced(val, vlen))
		return 0;
	p++;
	if (aptix__get_varint(&v, &p, end) < 0 || aptix__get_varint(&n, &p, end) < 0 ||
	    n > APTIX_STORED_MAX_SPLICES)
		return APTIX_ECORRUPT;
	for (i = 0; i < n; i++) {
		if ((size_t)(end - p) < APTIX_OID_RAWSZ + 2)
			return APTIX_ECORRUPT;
		if (i < max)
			memcpy(out[i].id, p, APTIX_OID_RAWSZ);
		p += APTIX_OID_RAWSZ;
		if (aptix__get_varint(&v, &p, end) < 0 || p >= end)
			return APTIX_ECORRUPT;
		p++;
	}
	return (int)n;
}
