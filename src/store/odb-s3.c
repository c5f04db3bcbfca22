/*
 * src/store/odb-s3.c - an object backend that keeps large objects on
 * S3-compatible storage and the others in the backend it wraps.
 *
 * It takes the place of a storage backend's object domain (be->odb):
 * a stored value (objects-format.md, "Storage") of s3.threshold bytes
 * or more that names no base goes to S3 under "<org>/<id in hex>" with
 * a create-only PUT (If-None-Match: *), and the inner backend keeps, in
 * the same row and transaction it would have kept the value, a marker:
 *
 *   0x1e 0x01 <SHA-256 of the value: 32> <length: 8, big-endian>
 *   <the value's first bytes: its flags-and-type byte and size varint>
 *
 * No stored value starts with 0x1e (its low 5 bits are no object type).
 * The header kept at the end answers read_header without S3. Every read
 * of a marker fetches the value and re-hashes it: a value missing from
 * S3 or altered there is an error naming the object (and so an fsck
 * finding). A value that names bases (a delta) stays inline, so that a
 * marker never hides a base the inner backend must check; its bases may
 * be on S3 (they are read through this backend).
 *
 * The PUT runs before the caller's transaction (prepare_stored, which
 * the transaction layer calls before it opens one): a slow S3 never
 * holds a PostgreSQL transaction open. The markers it made are kept
 * until the next prepare, and the writes in the transaction use them;
 * a value written without one (never prepared, or another thread's
 * prepare came between) is PUT there, as before. A PUT again (a
 * transaction run again, a retried command) meets 412, and the object
 * there is fetched and checked instead. A 412 on a value whose bytes
 * differ (another aptix compressed the same object differently) is
 * accepted when those bytes decode to the object; the marker then
 * describes them. Keys carry the org, so that a 412 never tells one org
 * what another stores.
 *
 * The S3 client (credentials from the environment) is made at the first
 * object that needs it, so that a store whose large objects are not
 * touched works without them.
 */
#include "util/common.h"
#include <ctype.h>
#include <pthread.h>
#include "http/s3.h"
#include "object/zstream.h"
#include "store/odb-s3.h"
#include "store/backend-vtables.h"
#include "aptix/sys/odb_backend.h"

#define MARK0 0x1e
#define MARK_VERSION 1
#define MARK_FIXED (2 + APTIX_OID_RAWSZ + 8)
#define MARK_HDR_MAX 11

struct s3_odb {
	aptix_odb_backend parent;
	aptix_odb_backend *inner;
	aptix_backend *be;
	void (*inner_free)(aptix_backend *b);
	pthread_mutex_t lock;
	aptix_s3 *s3;		/* NULL until first needed */
	char *url, *bucket, *region, *org;
	char *where;		/* <url>/<bucket>/<org>/, for messages */
	size_t threshold;
	/* the values the last prepare put, with their markers (lock) */
	struct put_done {
		aptix_oid id;
		aptix_buf mark;
	} *done;
	size_t ndone, adone;
};

/* What a marker says. */
struct mark {
	aptix_oid sha;
	uint64_t len;
	const unsigned char *hdr;
	size_t hlen;
};

#define S3_OF(b) ((struct s3_odb *)(void *)(b))

int aptix__odb_s3_is_marker(const void *val, size_t len)
{
	const unsigned char *p = val;

	return len > MARK_FIXED && p[0] == MARK0;
}

static int parse_mark(struct mark *m, const aptix_oid *id, const void *val,
		      size_t len)
{
	const unsigned char *p = val;

	if (len <= MARK_FIXED || len > MARK_FIXED + MARK_HDR_MAX ||
	    p[1] != MARK_VERSION) {
		aptix_error_set(APTIX_ERROR_ODB, "object '%s': its note of "
				"where it is on S3 is damaged",
				aptix_oid_hex(id));
		return APTIX_ECORRUPT;
	}
	memcpy(m->sha.id, p + 2, APTIX_OID_RAWSZ);
	m->len = aptix__get_be64(p + 2 + APTIX_OID_RAWSZ);
	m->hdr = p + MARK_FIXED;
	m->hlen = len - MARK_FIXED;
	return 0;
}

static int make_mark(aptix_buf *out, const aptix_oid *sha, const void *val,
		     size_t len)
{
	unsigned char fixed[MARK_FIXED];
	aptix_otype type;
	size_t size, hlen;
	int r;

	if ((r = aptix_stored_header(&type, &size, &hlen, val, len)) < 0)
		return r;
	fixed[0] = MARK0;
	fixed[1] = MARK_VERSION;
	memcpy(fixed + 2, sha->id, APTIX_OID_RAWSZ);
	aptix__put_be64(fixed + 2 + APTIX_OID_RAWSZ, (uint64_t)len);
	aptix_buf_clear(out);
	aptix_buf_put(out, fixed, sizeof(fixed));
	aptix_buf_put(out, val, hlen);
	return aptix_buf_oom(out) ? APTIX_ERROR : 0;
}

static int client(aptix_s3 **out, struct s3_odb *s)
{
	int r = 0;

	pthread_mutex_lock(&s->lock);
	if (!s->s3)
		r = aptix__s3_new(&s->s3, s->url, s->bucket, s->region);
	*out = s->s3;
	pthread_mutex_unlock(&s->lock);
	return r;
}

static int key_of(aptix_buf *key, struct s3_odb *s, const aptix_oid *id)
{
	const unsigned char *o = (const unsigned char *)s->org;

	aptix_buf_clear(key);
	for (; *o; o++) {
		if (isalnum(*o) || *o == '-' || *o == '_' || *o == '.')
			aptix_buf_putc(key, (char)*o);
		else
			aptix_buf_printf(key, "%%%02X", *o);
	}
	aptix_buf_printf(key, "/%s", aptix_oid_hex(id));
	return aptix_buf_oom(key) ? APTIX_ERROR : 0;
}

/* The prefix of a failure about id: "object '<id>' on S3 (<url>): ". */
static void s3_error(struct s3_odb *s, const aptix_oid *id, int r,
		     const char *what)
{
	char *cause = aptix__strdup(aptix_error_last()->message);

	aptix_error_set(APTIX_ERROR_ODB, "object '%s' %s (%s%s)%s%s",
			aptix_oid_hex(id), what, s->where, aptix_oid_hex(id),
			r == APTIX_ENOTFOUND ? "" : ": ",
			r == APTIX_ENOTFOUND || !cause ? "" : cause);
	free(cause);
}

/* The value a marker names, fetched into out and checked. */
static int fetch(aptix_buf *out, struct s3_odb *s, const aptix_oid *id,
		 const struct mark *m)
{
	aptix_buf key = APTIX_BUF_INIT;
	aptix_s3 *c;
	aptix_oid got;
	int r;

	if ((r = client(&c, s)) < 0) {
		s3_error(s, id, r, "cannot be read from S3");
		return r;
	}
	if ((r = key_of(&key, s, id)) == 0)
		r = aptix__s3_get(out, c, key.ptr, (size_t)m->len + 1);
	aptix_buf_release(&key);
	if (r == APTIX_ENOTFOUND) {
		s3_error(s, id, r, "is missing from S3");
		return APTIX_ERROR;
	}
	if (r < 0) {
		s3_error(s, id, r, "cannot be read from S3");
		return r;
	}
	if ((r = aptix_sha256(&got, out->ptr, out->len)) < 0)
		return r;
	if (out->len != m->len || aptix_oid_cmp(&got, &m->sha)) {
		aptix_error_set(APTIX_ERROR_ODB, "object '%s' on S3 (%s%s) "
				"was altered: %zu bytes hashing to %.12s..., "
				"not the %llu bytes stored", aptix_oid_hex(id),
				s->where, aptix_oid_hex(id), out->len,
				aptix_oid_hex(&got),
				(unsigned long long)m->len);
		aptix_buf_clear(out);
		return APTIX_ERROR;
	}
	return 0;
}

/* out holds what the inner backend keeps for id: the value it stands for. */
static int resolve(aptix_buf *out, struct s3_odb *s, const aptix_oid *id)
{
	aptix_buf mark = APTIX_BUF_INIT;
	struct mark m;
	int r;

	if (!aptix__odb_s3_is_marker(out->ptr, out->len))
		return 0;
	mark = *out;
	aptix_buf_init(out, 0);
	if ((r = parse_mark(&m, id, mark.ptr, mark.len)) == 0)
		r = fetch(out, s, id, &m);
	aptix_buf_release(&mark);
	return r;
}

static int s3_read_stored(aptix_buf *out, aptix_odb_backend *b,
			  aptix_backend_txn *tx, const aptix_oid *id)
{
	struct s3_odb *s = S3_OF(b);
	int r = s->inner->read_stored(out, s->inner, tx, id);

	return r < 0 ? r : resolve(out, s, id);
}

static int s3_read(aptix_buf *out, aptix_otype *type, aptix_odb_backend *b,
		   const aptix_oid *id)
{
	return aptix__odb_read_decoded(out, type, b, id);
}

static int s3_read_header(size_t *size, aptix_otype *type,
			  aptix_odb_backend *b, const aptix_oid *id)
{
	struct s3_odb *s = S3_OF(b);
	aptix_buf val = APTIX_BUF_INIT;
	const unsigned char *p;
	struct mark m;
	size_t hlen, n;
	int r = s->inner->read_stored(&val, s->inner, NULL, id);

	p = (const unsigned char *)val.ptr;
	n = val.len;
	if (r == 0 && aptix__odb_s3_is_marker(p, n) &&
	    (r = parse_mark(&m, id, p, n)) == 0) {
		p = m.hdr;
		n = m.hlen;
	}
	if (r == 0)
		r = aptix_stored_header(type, size, &hlen, p, n);
	aptix_buf_release(&val);
	return r;
}

/* Does id's value go to S3? */
static int offloaded(const struct s3_odb *s, const void *val, size_t len)
{
	return len >= s->threshold && !aptix_stored_needs_bases(val, len) &&
		!aptix__odb_s3_is_marker(val, len);
}

/*
 * S3 had an object under id's key already (412): keep it when it is
 * this value, or another encoding of the same object; *sha and mark
 * then describe it.
 */
static int check_existing(aptix_buf *mark, struct s3_odb *s,
			  const aptix_oid *id, const aptix_oid *sha)
{
	aptix_buf there = APTIX_BUF_INIT, data = APTIX_BUF_INIT;
	aptix_buf key = APTIX_BUF_INIT;
	aptix_oid got, oid;
	aptix_otype type;
	int r;

	if ((r = key_of(&key, s, id)) == 0)
		r = aptix__s3_get(&there, s->s3, key.ptr, 0);
	aptix_buf_release(&key);
	if (r < 0) {
		s3_error(s, id, r, "was on S3 already and cannot be read");
		goto done;
	}
	if ((r = aptix_sha256(&got, there.ptr, there.len)) < 0)
		goto done;
	if (!aptix_oid_cmp(&got, sha))
		goto done;	/* the same bytes: this very PUT, replayed */
	if (aptix_stored_needs_bases(there.ptr, there.len) ||
	    aptix_stored_decode(&data, &type, there.ptr, there.len) < 0 ||
	    aptix_object_hash(&oid, type, data.ptr, data.len) < 0 ||
	    aptix_oid_cmp(&oid, id)) {
		aptix_error_set(APTIX_ERROR_ODB, "object '%s': S3 holds "
				"other bytes under its key (%s%s)",
				aptix_oid_hex(id), s->where,
				aptix_oid_hex(id));
		r = APTIX_ERROR;
		goto done;
	}
	r = make_mark(mark, &got, there.ptr, there.len);
done:
	aptix_buf_release(&there);
	aptix_buf_release(&data);
	return r;
}

/* Put val on S3 and make the marker the inner backend keeps instead. */
static int offload(aptix_buf *mark, struct s3_odb *s, const aptix_oid *id,
		   const void *val, size_t len)
{
	aptix_buf key = APTIX_BUF_INIT;
	aptix_oid sha;
	aptix_s3 *c;
	int r;

	if ((r = client(&c, s)) < 0) {
		s3_error(s, id, r, "cannot be stored on S3");
		return r;
	}
	if ((r = aptix_sha256(&sha, val, len)) < 0 ||
	    (r = make_mark(mark, &sha, val, len)) < 0 ||
	    (r = key_of(&key, s, id)) < 0)
		goto done;
	r = aptix__s3_put(c, key.ptr, val, len, aptix_oid_hex(&sha));
	if (r < 0)
		s3_error(s, id, r, "cannot be stored on S3");
	else if (r == 1)
		r = check_existing(mark, s, id, &sha);
done:
	aptix_buf_release(&key);
	return r;
}

/* The marker of id that a prepare made, into mark: 1; else 0. */
static int prepared(aptix_buf *mark, struct s3_odb *s, const aptix_oid *id)
{
	size_t i;
	int r = 0;

	pthread_mutex_lock(&s->lock);
	for (i = 0; i < s->ndone && !r; i++)
		if (!aptix_oid_cmp(&s->done[i].id, id))
			r = aptix_buf_set(mark, s->done[i].mark.ptr,
					  s->done[i].mark.len) < 0 ?
				APTIX_ERROR : 1;
	pthread_mutex_unlock(&s->lock);
	return r;
}

/* val on S3 and its marker in mark: as prepared, else put now. */
static int offload_once(aptix_buf *mark, struct s3_odb *s,
			const aptix_oid *id, const void *val, size_t len)
{
	int r = prepared(mark, s, id);

	return r != 0 ? (r < 0 ? r : 0) : offload(mark, s, id, val, len);
}

static void forget_prepared(struct s3_odb *s)
{
	size_t i;

	for (i = 0; i < s->ndone; i++)
		aptix_buf_release(&s->done[i].mark);
	s->ndone = 0;
}

static int remember(struct s3_odb *s, const aptix_oid *id,
		    const aptix_buf *mark)
{
	int r;

	pthread_mutex_lock(&s->lock);
	r = aptix__grow(&s->done, &s->adone, s->ndone, sizeof(*s->done), 8);
	if (r == 0) {
		s->done[s->ndone].id = *id;
		aptix_buf_init(&s->done[s->ndone].mark, 0);
		r = aptix_buf_set(&s->done[s->ndone].mark, mark->ptr,
				  mark->len) < 0 ? APTIX_ERROR : 0;
		s->ndone++;
	}
	pthread_mutex_unlock(&s->lock);
	return r;
}

static int inner_has(struct s3_odb *s, aptix_backend_txn *tx,
		     const aptix_oid *id);

static int s3_prepare_stored(aptix_odb_backend *b, const aptix_oid *ids,
			     const void *const *vals, const size_t *lens,
			     size_t n)
{
	struct s3_odb *s = S3_OF(b);
	aptix_buf mark = APTIX_BUF_INIT;
	size_t i;
	int r = 0;

	pthread_mutex_lock(&s->lock);
	forget_prepared(s);
	pthread_mutex_unlock(&s->lock);
	for (i = 0; i < n && r == 0; i++) {
		if (!offloaded(s, vals[i], lens[i]))
			continue;
		/* kept already: nothing to put (read in a transaction of
		 * its own, short) */
		if ((r = inner_has(s, NULL, &ids[i])) != 0) {
			r = r < 0 ? r : 0;
			continue;
		}
		if ((r = offload(&mark, s, &ids[i], vals[i], lens[i])) == 0)
			r = remember(s, &ids[i], &mark);
	}
	aptix_buf_release(&mark);
	return r;
}

/* 1 when the inner backend has id (in tx), 0 when not. */
static int inner_has(struct s3_odb *s, aptix_backend_txn *tx,
		     const aptix_oid *id)
{
	aptix_buf tmp = APTIX_BUF_INIT;
	unsigned char have = 0;
	int r;

	if (s->inner->exists_many) {
		r = s->inner->exists_many(s->inner, tx, id, 1, &have);
		return r < 0 ? r : have;
	}
	r = s->inner->read_stored(&tmp, s->inner, tx, id);
	aptix_buf_release(&tmp);
	return aptix__found(r);
}

static int s3_write_stored(aptix_odb_backend *b, aptix_backend_txn *tx,
			   const aptix_oid *id, const void *val, size_t len)
{
	struct s3_odb *s = S3_OF(b);
	aptix_buf mark = APTIX_BUF_INIT;
	int r;

	if (!offloaded(s, val, len))
		return s->inner->write_stored(s->inner, tx, id, val, len);
	if ((r = inner_has(s, tx, id)) != 0)
		return r < 0 ? r : 0;
	if ((r = offload_once(&mark, s, id, val, len)) == 0)
		r = s->inner->write_stored(s->inner, tx, id, mark.ptr,
					   mark.len);
	aptix_buf_release(&mark);
	return r;
}

static int s3_write_stored_many(aptix_odb_backend *b, aptix_backend_txn *tx,
				const aptix_oid *ids, const void *const *vals,
				const size_t *lens, size_t n)
{
	struct s3_odb *s = S3_OF(b);
	aptix_buf *marks = NULL;
	const void **v2 = NULL;
	size_t *l2 = NULL, i;
	int r = 0, has;

	for (i = 0; i < n && !offloaded(s, vals[i], lens[i]); i++)
		;
	if (i == n)	/* nothing for S3: the common case */
		return s->inner->write_stored_many(s->inner, tx, ids, vals,
						   lens, n);
	marks = aptix__calloc(n, sizeof(*marks));
	v2 = aptix__calloc(n, sizeof(*v2));
	l2 = aptix__calloc(n, sizeof(*l2));
	if (!marks || !v2 || !l2)
		r = APTIX_ERROR;
	for (i = 0; i < n && r == 0; i++) {
		aptix_buf_init(&marks[i], 0);
		v2[i] = vals[i];
		l2[i] = lens[i];
		if (!offloaded(s, vals[i], lens[i]))
			continue;
		/* there already: the inner backend keeps what it has */
		if ((has = inner_has(s, tx, &ids[i])) != 0) {
			r = has < 0 ? has : 0;
			continue;
		}
		if ((r = offload_once(&marks[i], s, &ids[i], vals[i],
				      lens[i])) < 0)
			break;
		v2[i] = marks[i].ptr;
		l2[i] = marks[i].len;
	}
	if (r == 0)
		r = s->inner->write_stored_many(s->inner, tx, ids, v2, l2, n);
	for (i = 0; marks && i < n; i++)
		aptix_buf_release(&marks[i]);
	free(marks);
	free(v2);
	free(l2);
	return r;
}

struct many {
	struct s3_odb *s;
	aptix_buf val;
	int (*cb)(const aptix_oid *id, const void *val, size_t len,
		  void *payload);
	void *payload;
};

static int many_cb(const aptix_oid *id, const void *val, size_t len,
		   void *payload)
{
	struct many *m = payload;
	struct mark mk;
	int r;

	if (!aptix__odb_s3_is_marker(val, len))
		return m->cb(id, val, len, m->payload);
	if ((r = parse_mark(&mk, id, val, len)) < 0 ||
	    (r = fetch(&m->val, m->s, id, &mk)) < 0)
		return r;
	return m->cb(id, m->val.ptr, m->val.len, m->payload);
}

static int s3_read_stored_many(aptix_odb_backend *b, aptix_backend_txn *tx,
			       const aptix_oid *ids, size_t n,
			       int (*cb)(const aptix_oid *id, const void *val,
					 size_t len, void *payload),
			       void *payload)
{
	struct s3_odb *s = S3_OF(b);
	struct many m = { s, APTIX_BUF_INIT, cb, payload };
	int r = s->inner->read_stored_many(s->inner, tx, ids, n, many_cb, &m);

	aptix_buf_release(&m.val);
	return r;
}

static int s3_write(aptix_odb_backend *b, const aptix_oid *id,
		    const void *data, size_t len, aptix_otype type)
{
	struct s3_odb *s = S3_OF(b);

	if (s->inner->exists(s->inner, id) == 1)
		return 0;
	return aptix__odb_write_encoded(s->be, b, id, data, len, type);
}

static int s3_exists(aptix_odb_backend *b, const aptix_oid *id)
{
	struct s3_odb *s = S3_OF(b);

	return s->inner->exists(s->inner, id);
}

static int s3_exists_prefix(aptix_oid *out, int *count, aptix_odb_backend *b,
			    const aptix_oid *prefix, size_t hexlen)
{
	struct s3_odb *s = S3_OF(b);

	return s->inner->exists_prefix(out, count, s->inner, prefix, hexlen);
}

static int s3_foreach(aptix_odb_backend *b, aptix_odb_foreach_cb cb,
		      void *payload)
{
	struct s3_odb *s = S3_OF(b);

	return s->inner->foreach(s->inner, cb, payload);
}

static int s3_exists_many(aptix_odb_backend *b, aptix_backend_txn *tx,
			  const aptix_oid *ids, size_t n, unsigned char *have)
{
	struct s3_odb *s = S3_OF(b);

	return s->inner->exists_many(s->inner, tx, ids, n, have);
}

static void s3_odb_free(struct s3_odb *s)
{
	if (!s)
		return;
	aptix__s3_free(s->s3);
	forget_prepared(s);
	free(s->done);
	pthread_mutex_destroy(&s->lock);
	free(s->url);
	free(s->bucket);
	free(s->region);
	free(s->org);
	free(s->where);
	free(s);
}

/* The storage backend's free: its own, then the wrapper's. */
static void backend_free(aptix_backend *be)
{
	struct s3_odb *s = S3_OF(be->odb);

	be->odb = s->inner;
	be->free = s->inner_free;
	be->free(be);
	s3_odb_free(s);
}

/* "<url>/<bucket>/<org, as in a key>/" */
static char *where_of(struct s3_odb *s)
{
	aptix_buf w = APTIX_BUF_INIT, key = APTIX_BUF_INIT;
	size_t n = strlen(s->url);
	aptix_oid zero;

	memset(&zero, 0, sizeof(zero));
	while (n && s->url[n - 1] == '/')
		n--;
	if (key_of(&key, s, &zero) == 0)
		aptix_buf_printf(&w, "%.*s/%s/%.*s", (int)n, s->url, s->bucket,
				 (int)(key.len - APTIX_OID_HEXSZ), key.ptr);
	aptix_buf_release(&key);
	return aptix_buf_detach(&w);
}

int aptix__odb_s3_wrap(aptix_backend *be, const struct aptix_s3_location *loc,
		       const char *org)
{
	aptix_odb_backend *in = be->odb;
	struct s3_odb *s;

	if (!in || !in->read_stored || !in->write_stored || !in->foreach ||
	    !in->exists) {
		aptix_error_set(APTIX_ERROR_ODB, "the '%s' backend's objects "
				"cannot be kept on S3", be->name);
		return APTIX_EINVALID;
	}
	if (!(s = aptix__calloc(1, sizeof(*s))))
		return APTIX_ERROR;
	pthread_mutex_init(&s->lock, NULL);
	s->url = aptix__strdup(loc->url);
	s->bucket = aptix__strdup(loc->bucket);
	s->region = loc->region ? aptix__strdup(loc->region) : NULL;
	s->org = aptix__strdup(org && *org ? org : "default");
	if (s->url && s->bucket && s->org)
		s->where = where_of(s);
	if (!s->where || (loc->region && !s->region)) {
		s3_odb_free(s);
		return APTIX_ERROR;
	}
	s->threshold = loc->threshold ? loc->threshold : 1;
	s->inner = in;
	s->be = be;
	s->inner_free = be->free;
	s->parent.version = APTIX_ODB_BACKEND_VERSION;
	s->parent.read = s3_read;
	s->parent.read_header = s3_read_header;
	s->parent.write = s3_write;
	s->parent.exists = s3_exists;
	s->parent.exists_prefix = in->exists_prefix ? s3_exists_prefix : NULL;
	s->parent.foreach = s3_foreach;
	s->parent.read_stored = s3_read_stored;
	s->parent.write_stored = s3_write_stored;
	s->parent.exists_many = in->exists_many ? s3_exists_many : NULL;
	s->parent.read_stored_many = in->read_stored_many ?
		s3_read_stored_many : NULL;
	s->parent.write_stored_many = in->write_stored_many ?
		s3_write_stored_many : NULL;
	s->parent.prepare_stored = s3_prepare_stored;
	be->odb = &s->parent;
	be->free = backend_free;
	return 0;
}

/* Meta key key into out; 0 when absent (out empty). */
static int meta(aptix_buf *out, aptix_backend *be, const char *key)
{
	int r = be->meta_get(out, be, NULL, key);

	if (r == APTIX_ENOTFOUND) {
		aptix_error_clear();
		aptix_buf_clear(out);
		return 0;
	}
	return r;
}

int aptix__odb_s3_from_meta(aptix_backend *be, const char *org)
{
	aptix_buf url = APTIX_BUF_INIT, bucket = APTIX_BUF_INIT;
	aptix_buf region = APTIX_BUF_INIT, thr = APTIX_BUF_INIT;
	struct aptix_s3_location loc;
	char *end = NULL;
	int r;

	if ((r = meta(&url, be, "s3.url")) < 0 || !url.len ||
	    (r = meta(&bucket, be, "s3.bucket")) < 0 ||
	    (r = meta(&region, be, "s3.region")) < 0 ||
	    (r = meta(&thr, be, "s3.threshold")) < 0)
		goto done;
	memset(&loc, 0, sizeof(loc));
	loc.url = url.ptr;
	loc.bucket = bucket.ptr;
	loc.region = region.len ? region.ptr : NULL;
	loc.threshold = thr.len ? (size_t)strtoull(thr.ptr, &end, 10) : 0;
	if (thr.len && (*end || !loc.threshold)) {
		aptix_error_set(APTIX_ERROR_ODB, "the store's s3.threshold "
				"'%s' is not a number of bytes", thr.ptr);
		r = APTIX_ECORRUPT;
		goto done;
	}
	if (!thr.len)
		loc.threshold = APTIX_S3_THRESHOLD_DEFAULT;
	r = aptix__odb_s3_wrap(be, &loc, org);
done:
	aptix_buf_release(&url);
	aptix_buf_release(&bucket);
	aptix_buf_release(&region);
	aptix_buf_release(&thr);
	return r;
}

/*
 * 0 when be (in tx, or outside any with tx NULL) names no S3 location
 * or loc's; APTIX_EINVALID when another.
 */
static int other_location(aptix_backend *be, aptix_backend_txn *tx,
			  const struct aptix_s3_location *loc)
{
	aptix_buf url = APTIX_BUF_INIT, bucket = APTIX_BUF_INIT;
	int r = be->meta_get(&url, be, tx, "s3.url");

	if (r == 0)
		r = be->meta_get(&bucket, be, tx, "s3.bucket");
	if (r == 0 && (strcmp(url.ptr, loc->url) ||
		       strcmp(bucket.ptr, loc->bucket))) {
		aptix_error_set(APTIX_ERROR_REPOSITORY, "the shared store "
				"keeps its large objects in the bucket '%s' of "
				"%s already", bucket.ptr, url.ptr);
		r = APTIX_EINVALID;
	} else if (r == APTIX_ENOTFOUND) {
		aptix_error_clear();
		r = 0;
	}
	aptix_buf_release(&url);
	aptix_buf_release(&bucket);
	return r;
}

static int setloc_fn(aptix_backend_txn *tx, void *payload)
{
	const struct aptix_s3_location *loc = payload;
	aptix_backend *be = tx->backend;
	char thr[32];
	int r = other_location(be, tx, loc);

	if (r < 0)
		return r;
	snprintf(thr, sizeof(thr), "%zu", loc->threshold ?
		 loc->threshold : APTIX_S3_THRESHOLD_DEFAULT);
	if ((r = be->meta_put(tx, "s3.url", loc->url)) == 0 &&
	    (r = be->meta_put(tx, "s3.bucket", loc->bucket)) == 0 &&
	    (r = be->meta_put(tx, "s3.threshold", thr)) == 0 &&
	    loc->region && *loc->region)
		r = be->meta_put(tx, "s3.region", loc->region);
	return r;
}

int aptix__odb_s3_set_location(aptix_backend *be,
			       const struct aptix_s3_location *loc)
{
	int r = aptix__s3_check(loc->url, loc->bucket, loc->region);

	return r < 0 ? r : be->transaction(be, setloc_fn, (void *)loc);
}

int aptix__odb_s3_check_location(aptix_backend *be,
				 const struct aptix_s3_location *loc)
{
	int r = aptix__s3_check(loc->url, loc->bucket, loc->region);

	return r < 0 ? r : other_location(be, NULL, loc);
}
