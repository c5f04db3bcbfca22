/*
 * src/object/zstream.c - encoding of stored objects (see zstream.h).
 */
#include "util/common.h"
#include "object/zstream.h"
#include "util/env.h"
#include <zlib.h>
#include <pthread.h>

int aptix_zlib_level = 1;
int aptix_zlib_small_level = 6;

size_t aptix__varint_encode(unsigned char *p, uint64_t v)
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
	if (t < APTIX_OBJ_BLOB || t > APTIX_OBJ_TOOL_RESULT)
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
	z_stream d[2], i;	/* d[0] for small objects, d[1] others */
	int dlevel[2];		/* level d[k] was set up with, -1: none */
	int iready;
};

/*
 * Objects up to SMALL bytes (with their dictionary) are deflated with a
 * hash table of 2^(SMALL_MEM + 7) entries instead of zlib's default
 * 2^15: a reset clears the table, and clearing 64 KiB for a 600-byte
 * turn cost more than compressing it (measured: t/perf/fixed.sh). The
 * output is as small within a few bytes at these sizes. They are also
 * deflated at aptix_zlib_small_level (6): a turn's payloads are a few
 * KiB, where level 6 costs some 60,000 instructions a turn more than
 * level 1 (0.3% of a turn) and stores them 7% smaller; larger contents
 * (files) keep aptix_zlib_level (1), where speed matters more.
 */
#define SMALL 16384
#define SMALL_MEM 5

static pthread_once_t zstate_once = PTHREAD_ONCE_INIT;
static pthread_key_t zstate_key;
static int zstate_key_ok;

static void zstate_free(void *p)
{
	struct zstate *z = p;

	if (z->dlevel[0] >= 0)
		deflateEnd(&z->d[0]);
	if (z->dlevel[1] >= 0)
		deflateEnd(&z->d[1]);
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
	z->dlevel[0] = z->dlevel[1] = -1;
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

static int zlib_level(int small)
{
	if (env_level == -2) {
		const char *e = aptix_env__get(APTIX_ENV_ZLIB_LEVEL);

		env_level = e && e[0] >= '0' && e[0] <= '9' && !e[1] ?
			e[0] - '0' : -1;
	}
	return env_level >= 0 ? env_level : small ? aptix_zlib_small_level :
		aptix_zlib_level;
}

static int deflate_into(unsigned char *out, size_t *outlen, const void *in,
			size_t inlen, const aptix_buf *dict)
{
	struct zstate *z = zstate();
	int level, k;
	z_stream *d;

	if (!z)
		return -1;
	k = inlen + (dict ? dict->len : 0) > SMALL;
	level = zlib_level(!k);
	d = &z->d[k];
	if (z->dlevel[k] != level) {
		if (z->dlevel[k] >= 0)
			deflateEnd(d);
		memset(d, 0, sizeof(*d));
		if (deflateInit2(d, level, Z_DEFLATED, MAX_WBITS,
				 k ? 8 : SMALL_MEM, Z_DEFAULT_STRATEGY) != Z_OK) {
			z->dlevel[k] = -1;
			return -1;
		}
		z->dlevel[k] = level;
	} else if (deflateReset(d) != Z_OK) {
		return -1;
	}
	if (dict && deflateSetDictionary(d, (const Bytef *)dict->ptr,
					 (uInt)dict->len) != Z_OK)
		return -1;
	d->next_in = (Bytef *)in;
	d->avail_in = (uInt)inlen;
	d->next_out = out;
	d->avail_out = (uInt)*outlen;
	if (deflate(d, Z_FINISH) != Z_STREAM_END)
		return -1;
	*outlen = d->total_out;
	return 0;
}

/*
 * A stream deflated against a dictionary asks for it (Z_NEED_DICT, and
 * its Adler-32 must match); one that was not, when a dictionary is
 * given, or the other way round, is corrupt.
 */
static int inflate_into(unsigned char *out, size_t outlen, const void *in,
			size_t inlen, const aptix_buf *dict)
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
	if (zr == Z_NEED_DICT) {
		if (!dict || inflateSetDictionary(&z->i, (const Bytef *)
						  dict->ptr, (uInt)dict->len)
		    != Z_OK)
			return -1;
		dict = NULL;
		zr = inflate(&z->i, Z_FINISH);
	}
	if (dict || zr != Z_STREAM_END || z->i.total_out != outlen ||
	    z->i.avail_in != 0)
		return -1;
	return 0;
}

/*
 * What was deflated against a dictionary inflates back with it: the
 * check of the one step a based value adds to the value without (whose
 * packing or splices were checked already).
 */
static int check_body(const aptix_buf *out, size_t at, const void *data,
		      size_t len, const aptix_buf *dict)
{
	unsigned char *back = aptix__malloc(len ? len : 1);
	int ok = back && inflate_into(back, len, out->ptr + at,
				      out->len - at, dict) == 0 &&
		!memcmp(back, data, len);

	free(back);
	return ok ? 0 : back ? APTIX_EINVALID : APTIX_ERROR;
}

/*
 * Append len bytes of data to out, deflated unless that does not save
 * more than 8 bytes (or the data is under 64 bytes): then set the raw
 * flag in out->ptr[0]. With a dictionary (a based value) the body is
 * always deflated, against it.
 */
static int put_body(aptix_buf *out, const void *data, size_t len,
		    const aptix_buf *dict)
{
	size_t at = out->len, clen = dict ? len + len / 1000 + 64 : len - 9;

	if ((dict || len >= 64) && len < (size_t)1 << 31 &&
	    aptix_buf_grow(out, clen) == 0 &&
	    deflate_into((unsigned char *)out->ptr + at, &clen, data,
			 len, dict) == 0) {
		out->len = at + clen;
		out->ptr[out->len] = '\0';
		return dict ? check_body(out, at, data, len, dict) : 0;
	}
	if (dict)
		return aptix_buf_oom(out) ? APTIX_ERROR : APTIX_EINVALID;
	/* Stored raw: compression would not pay for its inflate cost. */
	out->ptr[0] |= (char)APTIX_STORED_RAW;
	aptix_buf_put(out, data, len);
	return aptix_buf_oom(out) ? APTIX_ERROR : 0;
}

int aptix_stored_dict_text(aptix_buf *out, aptix_otype type,
			   const void *content, size_t len)
{
	aptix_buf_clear(out);
	if ((type != APTIX_OBJ_TURN && type != APTIX_OBJ_SESSION) ||
	    aptix__pack_json(out, content, len) < 0) {
		aptix_error_clear();
		if (aptix_buf_set(out, content, len) < 0)
			return APTIX_ERROR;
	}
	if (out->len > APTIX_STORED_DICT_MAX)
		aptix_buf_truncate(out, APTIX_STORED_DICT_MAX);
	return 0;
}

/*
 * The header of a value: flags and type, content size, the base of a
 * based value.
 */
static void put_header(aptix_buf *out, int flags, size_t size,
		       const aptix_stored_base *base)
{
	unsigned char hdr[12];
	size_t hlen;

	hdr[0] = (unsigned char)(flags | (base ? APTIX_STORED_BASED : 0));
	hlen = 1 + aptix__varint_encode(hdr + 1, size);
	aptix_buf_clear(out);
	aptix_buf_put(out, hdr, hlen);
	if (base)
		aptix_buf_put(out, base->id.id, APTIX_OID_RAWSZ);
}

/* A turn or session packed when pack is set and it packs, else plain. */
static int encode_one(aptix_buf *out, aptix_otype type, const void *data,
		      size_t len, int pack, const aptix_stored_base *base,
		      const aptix_buf *dict)
{
	aptix_buf packed = APTIX_BUF_INIT;
	unsigned char v[10];
	int r;

	if (pack && (type == APTIX_OBJ_TURN || type == APTIX_OBJ_SESSION) &&
	    aptix__pack_json(&packed, data, len) == 0) {
		put_header(out, type | APTIX_STORED_PACKED, len, base);
		aptix_buf_put(out, v, aptix__varint_encode(v, packed.len));
		r = put_body(out, packed.ptr, packed.len, dict);
	} else {
		aptix_error_clear();
		put_header(out, type, len, base);
		r = put_body(out, data, len, dict);
	}
	aptix_buf_release(&packed);
	return r;
}

/* Bases for a check: the dictionary's from memory, others by fn. */
struct check_bases {
	const aptix_stored_base *base;
	aptix_stored_base_fn fn;
	void *payload;
};

static int check_base_fn(aptix_buf *out, const aptix_oid *id,
			 aptix_otype type, int splice, void *payload)
{
	struct check_bases *cb = payload;

	if (cb->base && !splice && !aptix_oid_cmp(id, &cb->base->id))
		return type == cb->base->type ?
			aptix_buf_set(out, cb->base->content, cb->base->len) :
			APTIX_ECORRUPT;
	return cb->fn ? cb->fn(out, id, type, splice, cb->payload) :
		APTIX_ENOTFOUND;
}

static int check_encoded(const aptix_buf *val, aptix_otype type,
			 const void *data, size_t len,
			 const aptix_stored_base *base,
			 aptix_stored_base_fn base_fn, void *payload)
{
	aptix_buf back = APTIX_BUF_INIT;
	struct check_bases cb = { base, base_fn, payload };
	aptix_otype t;
	int ok = aptix_stored_decode_with(&back, &t, val->ptr, val->len,
					  check_base_fn, &cb) == 0 &&
		t == type && back.len == len && !memcmp(back.ptr, data, len);

	aptix_buf_release(&back);
	aptix_error_clear();
	return ok;
}

/*
 * Keep the based value in alt instead of out when it is at most seven
 * eighths of out's size: a dictionary that saves less than an eighth is
 * not worth the base's read on every read of the value (a read of at
 * most a few KiB: the base's inflate costs about what the value's
 * does). Prose deflated against the parent's answer saves 10-20%
 * (t/perf/store.sh: 13%), which a threshold of a quarter threw away.
 * (What alt adds to out, the deflate against the dictionary, was
 * checked by put_body.)
 */
static void keep_smaller(aptix_buf *out, aptix_buf *alt)
{
	aptix_buf t;

	if (alt->len * 8 <= out->len * 7) {
		t = *out;
		*out = *alt;
		*alt = t;
	}
}

int aptix_stored_encode_against(aptix_buf *out, aptix_otype type,
				const void *data, size_t len,
				const aptix_stored_base *base)
{
	aptix_buf dict = APTIX_BUF_INIT, alt = APTIX_BUF_INIT;
	int r = encode_one(out, type, data, len, 1, NULL, NULL);

	if (r == 0 && (out->ptr[0] & APTIX_STORED_PACKED) &&
	    !check_encoded(out, type, data, len, NULL, NULL, NULL))
		r = encode_one(out, type, data, len, 0, NULL, NULL);
	if (r < 0 || !base || base->type != type || !base->len)
		return r;
	if (aptix_stored_dict_text(&dict, type, base->content,
				   base->len) == 0 &&
	    encode_one(&alt, type, data, len, 1, base, &dict) == 0)
		keep_smaller(out, &alt);
	aptix_error_clear();
	aptix_buf_release(&dict);
	aptix_buf_release(&alt);
	return aptix_buf_oom(out) ? APTIX_ERROR : 0;
}

int aptix_stored_encode(aptix_buf *out, aptix_otype type, const void *data,
			size_t len)
{
	return aptix_stored_encode_against(out, type, data, len, NULL);
}

static int cmp_splice(const void *a, const void *b)
{
	const aptix_stored_splice *x = a, *y = b;

	return x->at < y->at ? -1 : x->at > y->at;
}

/* The spliced form of data: header, splices, the rest's length and body. */
static int encode_splices(aptix_buf *out, size_t len,
			  const aptix_stored_splice *sp, size_t n,
			  const aptix_buf *rest,
			  const aptix_stored_base *base, const aptix_buf *dict)
{
	unsigned char hdr[24];
	size_t i, hlen, pos = 0;

	put_header(out, APTIX_OBJ_BLOB | APTIX_STORED_PACKED, len, base);
	hlen = aptix__varint_encode(hdr, n);
	aptix_buf_put(out, hdr, hlen);
	for (i = 0; i < n; i++) {
		/* where in the rest the escaped base goes */
		size_t at = sp[i].at - pos;

		aptix_buf_put(out, sp[i].base.id, APTIX_OID_RAWSZ);
		hlen = aptix__varint_encode(hdr, at);
		hdr[hlen++] = (unsigned char)sp[i].kind;
		aptix_buf_put(out, hdr, hlen);
		pos += sp[i].len;
	}
	hlen = aptix__varint_encode(hdr, rest->len);
	aptix_buf_put(out, hdr, hlen);
	return put_body(out, rest->ptr, rest->len, dict);
}

int aptix_stored_encode_spliced(aptix_buf *out, const void *data,
				size_t len, aptix_stored_splice *sp,
				size_t n, const aptix_stored_base *base,
				aptix_stored_base_fn base_fn, void *payload)
{
	aptix_buf rest = APTIX_BUF_INIT, dict = APTIX_BUF_INIT,
		alt = APTIX_BUF_INIT;
	size_t i, pos = 0;
	const char *d = data;
	int r;

	if (base && base->type != APTIX_OBJ_BLOB)
		base = NULL;
	if (!n || n > APTIX_STORED_MAX_SPLICES)
		return aptix_stored_encode_against(out, APTIX_OBJ_BLOB, data,
						   len, base);
	qsort(sp, n, sizeof(*sp), cmp_splice);
	for (i = 0; i < n; i++) {
		if (sp[i].at < pos || sp[i].len > len - sp[i].at)
			goto plain;	/* overlapping: the caller's bug */
		aptix_buf_put(&rest, d + pos, sp[i].at - pos);
		pos = sp[i].at + sp[i].len;
	}
	aptix_buf_put(&rest, d + pos, len - pos);
	if ((r = encode_splices(out, len, sp, n, &rest, NULL, NULL)) < 0)
		goto done;
	if (!check_encoded(out, APTIX_OBJ_BLOB, data, len, NULL, base_fn,
			   payload))
		goto plain;
	if (base && base->len &&
	    aptix_stored_dict_text(&dict, APTIX_OBJ_BLOB, base->content,
				   base->len) == 0 &&
	    encode_splices(&alt, len, sp, n, &rest, base, &dict) == 0)
		keep_smaller(out, &alt);
	aptix_error_clear();
	r = aptix_buf_oom(out) ? APTIX_ERROR : 0;
	goto done;
plain:
	r = aptix_stored_encode_against(out, APTIX_OBJ_BLOB, data, len, base);
done:
	aptix_buf_release(&rest);
	aptix_buf_release(&dict);
	aptix_buf_release(&alt);
	return r;
}

/* Inflate (or copy) the body of len bytes at p into out, of size bytes. */
static int get_body(aptix_buf *out, int raw, const unsigned char *p,
		    size_t plen, size_t size, const aptix_buf *dict)
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
	if (inflate_into((unsigned char *)out->ptr, size, p, plen, dict) < 0)
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
			 const unsigned char *end, int raw, size_t size,
			 const aptix_buf *dict)
{
	aptix_buf packed = APTIX_BUF_INIT;
	uint64_t plen;
	int r;

	if (aptix__get_varint(&plen, &p, end) < 0 || plen > SIZE_MAX / 2)
		return APTIX_ECORRUPT;
	if ((r = get_body(&packed, raw, p, (size_t)(end - p),
			  (size_t)plen, dict)) == 0 &&
	    (aptix__unpack_json(out, packed.ptr, packed.len) < 0 ||
	     out->len != size))
		r = APTIX_ECORRUPT;
	aptix_buf_release(&packed);
	return r;
}

static int decode_spliced(aptix_buf *out, const unsigned char *p,
			  const unsigned char *end, int raw, size_t size,
			  const aptix_buf *dict, aptix_stored_base_fn base_fn,
			  void *payload)
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
			  (size_t)rlen, dict)) < 0)
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
		/* at: where in the body, ascending (objects-format.md) */
		if (at < pos || at > rlen)
			goto done;
		aptix_buf_put(out, rest.ptr + pos, (size_t)(at - pos));
		pos = at;
		if (base_fn(&base, &id, APTIX_OBJ_BLOB, 1, payload) < 0) {
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

/*
 * How deep bases may nest while a value is read (a based value's base
 * may be spliced, a splice's base based: a response against the
 * previous response, which is spliced against its answer, which is
 * based on an earlier answer). Writers never go deeper than that; a
 * damaged or crafted store that loops stops here.
 */
#define MAX_BASE_DEPTH 8
static _Thread_local int base_depth;

/* The dictionary of a based value: its base's text (base_fn reads it). */
static int read_dict(aptix_buf *dict, aptix_otype type,
		     const unsigned char *id, aptix_stored_base_fn base_fn,
		     void *payload)
{
	aptix_buf content = APTIX_BUF_INIT;
	aptix_oid base;
	int r;

	memcpy(base.id, id, APTIX_OID_RAWSZ);
	if (!base_fn) {
		aptix_error_set(APTIX_ERROR_ODB, "stored object is deflated "
				"against a base and no reader of its base was "
				"given");
		return APTIX_ECORRUPT;
	}
	if ((r = base_fn(&content, &base, type, 0, payload)) < 0) {
		aptix_buf_release(&content);
		aptix_error_set(APTIX_ERROR_ODB, "base object '%s' of a stored "
				"object is missing or corrupt",
				aptix_oid_hex(&base));
		return APTIX_ECORRUPT;
	}
	r = aptix_stored_dict_text(dict, type, content.ptr, content.len);
	aptix_buf_release(&content);
	return r;
}

static int decode_value(aptix_buf *out, aptix_otype *type, const void *val,
			size_t vlen, aptix_stored_base_fn base_fn,
			void *payload)
{
	const unsigned char *p = val;
	aptix_buf dict = APTIX_BUF_INIT;
	size_t size, hlen;
	int r, raw;

	if ((r = aptix_stored_header(type, &size, &hlen, val, vlen)) < 0)
		return r;
	raw = (p[0] & APTIX_STORED_RAW) != 0;
	if (p[0] & APTIX_STORED_BASED) {
		/* a raw body has no use for a dictionary */
		if (raw || vlen - hlen < APTIX_OID_RAWSZ + 1)
			goto corrupt;
		if ((r = read_dict(&dict, *type, p + hlen, base_fn,
				   payload)) < 0) {
			aptix_buf_clear(out);
			return r;
		}
		hlen += APTIX_OID_RAWSZ;
	}
	if (!(p[0] & APTIX_STORED_PACKED)) {
		r = get_body(out, raw, p + hlen, vlen - hlen, size,
			     dict.len ? &dict : NULL);
	} else if (*type != APTIX_OBJ_BLOB) {
		r = decode_packed(out, p + hlen, p + vlen, raw, size,
				  dict.len ? &dict : NULL);
	} else if (!base_fn) {
		aptix_buf_release(&dict);
		aptix_error_set(APTIX_ERROR_ODB, "stored object is spliced "
				"and no reader of its base was given");
		return APTIX_ECORRUPT;
	} else {
		r = decode_spliced(out, p + hlen, p + vlen, raw, size,
				   dict.len ? &dict : NULL, base_fn, payload);
		if (r == APTIX_ENOTFOUND) {	/* a base: said so */
			aptix_buf_release(&dict);
			aptix_buf_clear(out);
			return APTIX_ECORRUPT;
		}
	}
	aptix_buf_release(&dict);
	if (r != APTIX_ECORRUPT)
		return r;
corrupt:
	aptix_buf_clear(out);
	aptix_error_set(APTIX_ERROR_ZLIB, "stored object is corrupt or "
			"truncated");
	return APTIX_ECORRUPT;
}

int aptix_stored_decode_with(aptix_buf *out, aptix_otype *type,
			     const void *val, size_t vlen,
			     aptix_stored_base_fn base_fn, void *payload)
{
	int r;

	if (base_depth >= MAX_BASE_DEPTH) {
		aptix_buf_clear(out);
		aptix_error_set(APTIX_ERROR_ODB, "stored object's bases nest "
				"deeper than %d", MAX_BASE_DEPTH);
		return APTIX_ECORRUPT;
	}
	base_depth++;
	r = decode_value(out, type, val, vlen, base_fn, payload);
	base_depth--;
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

int aptix_stored_based_on(aptix_oid *out, const void *val, size_t vlen)
{
	const unsigned char *p = val;
	aptix_otype type;
	size_t size, hlen;

	if (!vlen || !(p[0] & APTIX_STORED_BASED))
		return 0;
	if (aptix_stored_header(&type, &size, &hlen, val, vlen) < 0 ||
	    vlen - hlen < APTIX_OID_RAWSZ)
		return APTIX_ECORRUPT;
	memcpy(out->id, p + hlen, APTIX_OID_RAWSZ);
	return 1;
}

int aptix_stored_needs_bases(const void *val, size_t vlen)
{
	const unsigned char *p = val;

	return vlen && ((p[0] & APTIX_STORED_BASED) ||
			aptix_stored_is_spliced(val, vlen));
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
	if (aptix__get_varint(&v, &p, end) < 0)
		return APTIX_ECORRUPT;
	if (*(const unsigned char *)val & APTIX_STORED_BASED) {
		if ((size_t)(end - p) < APTIX_OID_RAWSZ)
			return APTIX_ECORRUPT;
		p += APTIX_OID_RAWSZ;
	}
	if (aptix__get_varint(&n, &p, end) < 0 ||
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

int aptix_stored_bases(aptix_oid out[APTIX_STORED_MAX_SPLICES + 1],
		       const void *val, size_t vlen)
{
	int n;

	if (!aptix_stored_needs_bases(val, vlen))
		return 0;
	n = aptix_stored_splice_bases(out, APTIX_STORED_MAX_SPLICES, val,
				      vlen);
	if (n >= 0 && aptix_stored_based_on(&out[n], val, vlen) == 1)
		n++;
	return n;
}
