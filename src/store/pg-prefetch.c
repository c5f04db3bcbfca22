/*
 * src/store/pg-prefetch.c - index records a transaction of the
 * PostgreSQL backend read ahead in one statement (the index backend's
 * prefetch slot, aptix/sys/index_backend.h), and kept true to its own
 * puts and deletes until it asks again.
 *
 * Adding a session to the search index asks, for each of its words, the
 * word's own record (a get) and the block it belongs in (the last record
 * at or before a key: a seek). One statement each was two round trips a
 * distinct word: a turn of 100 words made 400. The search index asks
 * them ahead, a window of words at a time; the answers are read in one
 * statement each for the gets and the seeks, then kept here, and every
 * put or delete of the transaction updates them:
 *
 *  - a get of key k: a put of k is its value; a delete of k, absent;
 *  - a seek from x, whose answer is a (the last key <= x): a put of k
 *    with a < k <= x (or no a) makes k the answer; a put of a its new
 *    value; a delete of a leaves the answer unknown (the next record
 *    down is not known), and the seek goes to the server.
 *
 * An answer not kept (another key, another table, a seek that was not
 * asked ahead) is read from the server as before.
 */
#include "util/common.h"
#include "store/pg.h"
#include "aptix/sys/index_backend.h"
#include <libpq-fe.h>

#define INT2OID 21
#define BYTEAOID 17

struct pf_ent {
	unsigned kind;		/* APTIX_INDEX_PREFETCH_* */
	int known;		/* 0: ask the server */
	int found;		/* a record (get), an answer (seek) */
	aptix_buf key;		/* what was asked */
	aptix_buf at;		/* seek: the answer's key */
	aptix_buf val;
};

struct pg_prefetch {
	int tbl;
	struct pf_ent *v;
	size_t n, alloc;
};

static void ent_release(struct pf_ent *e)
{
	aptix_buf_release(&e->key);
	aptix_buf_release(&e->at);
	aptix_buf_release(&e->val);
}

/* Forget the answers of kind (those of the other kind stay). */
static void forget(struct pg_prefetch *pf, unsigned kind)
{
	size_t i, n = 0;

	for (i = 0; i < pf->n; i++) {
		if (pf->v[i].kind == kind)
			ent_release(&pf->v[i]);
		else
			pf->v[n++] = pf->v[i];
	}
	pf->n = n;
}

void aptix__pg_prefetch_free(struct pg_prefetch *pf)
{
	if (!pf)
		return;
	forget(pf, APTIX_INDEX_PREFETCH_GET);
	forget(pf, APTIX_INDEX_PREFETCH_SEEK);
	free(pf->v);
	free(pf);
}

static int key_cmp(const void *a, size_t alen, const void *b, size_t blen)
{
	int c = memcmp(a, b, alen < blen ? alen : blen);

	return c ? c : (alen > blen) - (alen < blen);
}

static const char *const pf_sql[2] = {
	"SELECT u.i, a.val FROM unnest($2::bytea[]) WITH ORDINALITY "
	"AS u(k, i) JOIN aptix_index a ON a.tbl = $1::int2 AND a.key = u.k",
	"SELECT u.i, s.key, s.val FROM unnest($2::bytea[]) WITH ORDINALITY "
	"AS u(k, i) CROSS JOIN LATERAL (SELECT key, val FROM aptix_index "
	"WHERE tbl = $1::int2 AND key <= u.k ORDER BY key DESC LIMIT 1) s"
};

/* The rows of the statement into the entries from first on. */
static int take_rows(struct pg_prefetch *pf, size_t first, PGresult *res,
		     unsigned kind)
{
	int i, rows = PQntuples(res);

	for (i = 0; i < rows; i++) {
		/* results are binary: the ordinality is a be64 */
		uint64_t at = PQgetlength(res, i, 0) == 8 ? aptix__get_be64(
			(const unsigned char *)PQgetvalue(res, i, 0)) : 0;
		struct pf_ent *e;
		int c = kind == APTIX_INDEX_PREFETCH_GET ? 1 : 2;

		if (at < 1 || at > pf->n - first)
			continue;
		e = &pf->v[first + at - 1];
		e->found = 1;
		if (kind == APTIX_INDEX_PREFETCH_SEEK)
			aptix_buf_set(&e->at, PQgetvalue(res, i, 1),
				      (size_t)PQgetlength(res, i, 1));
		aptix_buf_set(&e->val, PQgetvalue(res, i, c),
			      (size_t)PQgetlength(res, i, c));
		if (aptix_buf_oom(&e->at) || aptix_buf_oom(&e->val))
			return APTIX_ERROR;
	}
	return 0;
}

int aptix__pg_prefetch(struct aptix_pg_txn *t, int tbl, unsigned kind,
		       const aptix_buf *keys, size_t n)
{
	struct pg_prefetch *pf = t->pf;
	aptix_buf arr = APTIX_BUF_INIT;
	const char *pv[2];
	int lens[2], r;
	unsigned char t2[2];
	size_t i, first;
	PGresult *res = NULL;

	if (kind > APTIX_INDEX_PREFETCH_SEEK) {
		aptix_error_set(APTIX_ERROR_INVALID, "unknown prefetch kind "
				"%u", kind);
		return APTIX_EINVALID;
	}
	if (pf && pf->tbl != tbl) {
		forget(pf, APTIX_INDEX_PREFETCH_GET);
		forget(pf, APTIX_INDEX_PREFETCH_SEEK);
	}
	if (pf)
		forget(pf, kind);
	if (!n)
		return 0;
	if (!pf && !(pf = t->pf = aptix__calloc(1, sizeof(*pf))))
		return APTIX_ERROR;
	pf->tbl = tbl;
	/* what the transaction put is in the table before it is read */
	if ((r = aptix__pg_ixbuf_flush(t)) < 0)
		return r;
	first = pf->n;
	aptix__pg_array_header(&arr, n, BYTEAOID);
	for (i = 0; i < n; i++) {
		struct pf_ent *e;

		if (aptix__grow(&pf->v, &pf->alloc, pf->n, sizeof(*pf->v),
				64) < 0)
			break;
		e = &pf->v[pf->n++];
		memset(e, 0, sizeof(*e));
		e->kind = kind;
		aptix_buf_init(&e->key, 0);
		aptix_buf_init(&e->at, 0);
		aptix_buf_init(&e->val, 0);
		if (aptix_buf_set(&e->key, keys[i].ptr, keys[i].len) < 0)
			break;
		aptix__pg_array_elem(&arr, keys[i].ptr, keys[i].len);
	}
	r = i < n || aptix_buf_oom(&arr) ? APTIX_ERROR : 0;
	t2[0] = (unsigned char)((unsigned)tbl >> 8);
	t2[1] = (unsigned char)tbl;
	pv[0] = (const char *)t2, lens[0] = 2;
	pv[1] = arr.ptr, lens[1] = (int)arr.len;
	if (r == 0)
		r = aptix__pg_exec(&res, t, pf_sql[kind], 2, pv, lens);
	if (r == 0)
		r = take_rows(pf, first, res, kind);
	for (i = first; r == 0 && i < pf->n; i++)
		pf->v[i].known = 1;
	if (r < 0)
		forget(pf, kind);
	PQclear(res);
	aptix_buf_release(&arr);
	return r;
}

/*
 * A kept answer: 1 with *key (seek) and *val, 0 when there is none, -1
 * when it is not known (ask the server).
 */
static int lookup(const struct pg_prefetch *pf, int tbl, unsigned kind,
		  const void *key, size_t klen, const aptix_buf **at,
		  const aptix_buf **val)
{
	size_t i;

	if (!pf || pf->tbl != tbl)
		return -1;
	for (i = 0; i < pf->n; i++) {
		const struct pf_ent *e = &pf->v[i];

		if (e->kind != kind || !e->known || e->key.len != klen ||
		    memcmp(e->key.ptr, key, klen))
			continue;
		*at = &e->at;
		*val = &e->val;
		return e->found;
	}
	return -1;
}

int aptix__pg_prefetched_get(const struct pg_prefetch *pf, int tbl,
			     const void *key, size_t klen,
			     const aptix_buf **val)
{
	const aptix_buf *at;

	return lookup(pf, tbl, APTIX_INDEX_PREFETCH_GET, key, klen, &at, val);
}

int aptix__pg_prefetched_seek(const struct pg_prefetch *pf, int tbl,
			      const void *key, size_t klen,
			      const aptix_buf **at, const aptix_buf **val)
{
	return lookup(pf, tbl, APTIX_INDEX_PREFETCH_SEEK, key, klen, at, val);
}

/* e's answer is now key, val (the answer unknown when it cannot say). */
static void answer_is(struct pf_ent *e, const void *key, size_t klen,
		      const void *val, size_t vlen)
{
	e->found = 1;
	if ((e->kind == APTIX_INDEX_PREFETCH_SEEK &&
	     aptix_buf_set(&e->at, key, klen) < 0) ||
	    aptix_buf_set(&e->val, val, vlen) < 0)
		e->known = 0;
}

/*
 * The kept answers after a put of key (val) or its delete (val NULL):
 * a get of key is it, or absent; a seek whose answer is key gets its
 * value, or (deleted) is not known any more; a seek from at or above a
 * put key whose answer is below it (or none) has it for answer.
 */
static void update(struct pg_prefetch *pf, int tbl, const void *key,
		   size_t klen, const void *val, size_t vlen)
{
	size_t i;

	if (!pf || pf->tbl != tbl)
		return;
	for (i = 0; i < pf->n; i++) {
		struct pf_ent *e = &pf->v[i];
		int seek = e->kind == APTIX_INDEX_PREFETCH_SEEK;
		const aptix_buf *a = seek ? &e->at : &e->key;
		int is_a = (!seek || e->found) &&
			!key_cmp(a->ptr, a->len, key, klen);

		if (!e->known)
			continue;
		if (!val && is_a && seek)
			e->known = 0;	/* the next record down: ask */
		else if (!val && is_a)
			e->found = 0;
		else if (val && (is_a || (seek &&
			 key_cmp(key, klen, e->key.ptr, e->key.len) <= 0 &&
			 (!e->found ||
			  key_cmp(e->at.ptr, e->at.len, key, klen) < 0))))
			answer_is(e, key, klen, val, vlen);
	}
}

void aptix__pg_prefetch_put(struct pg_prefetch *pf, int tbl, const void *key,
			    size_t klen, const void *val, size_t vlen)
{
	update(pf, tbl, key, klen, val ? val : "", vlen);
}

void aptix__pg_prefetch_del(struct pg_prefetch *pf, int tbl, const void *key,
			    size_t klen)
{
	update(pf, tbl, key, klen, NULL, 0);
}
