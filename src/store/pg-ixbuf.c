/*
 * src/store/pg-ixbuf.c - the index records a transaction of the
 * PostgreSQL backend writes, kept until it reads what it cannot answer
 * from them or commits, then written in multi-row INSERTs.
 *
 * A session's index records are a few puts (its record, its parent's
 * children, its conversation, the timeline) and gets of what the same
 * transaction often just wrote (the parent's record, the conversation):
 * as one statement each, a push of 10,000 sessions made 80,000 round
 * trips. Here a put is kept (the newest value of each key: a key is
 * written once by the flush, so ON CONFLICT DO UPDATE never meets it
 * twice), a get of a kept key is answered from it, and everything is
 * written before a statement that must see it (an iteration, a delete)
 * and before COMMIT. What the transaction reads is what it would read
 * with every put sent at once.
 */
#include "util/common.h"
#include "store/pg.h"
#include "aptix/sys/index_backend.h"
#include <libpq-fe.h>

#define INT2OID 21
#define BYTEAOID 17
#define FLUSH_ROWS 1000
#define FLUSH_BYTES (8u << 20)

struct ix_ent {
	int tbl;
	aptix_buf key, val;
};

struct pg_ixbuf {
	struct ix_ent *v;
	size_t n, alloc;
	size_t *slots;		/* index + 1 into v; 0: empty */
	size_t nslots;
};

static uint64_t hash_of(int tbl, const void *key, size_t klen)
{
	const unsigned char *p = key;
	uint64_t h = 1469598103934665603ull ^ (uint64_t)tbl;
	size_t i;

	for (i = 0; i < klen; i++)
		h = (h ^ p[i]) * 1099511628211ull;
	return h;
}

/* The slot of (tbl, key): its entry's, or the empty one it would take. */
static size_t *slot_of(struct pg_ixbuf *b, int tbl, const void *key,
		       size_t klen)
{
	size_t i = (size_t)hash_of(tbl, key, klen) & (b->nslots - 1);

	for (;; i = (i + 1) & (b->nslots - 1)) {
		const struct ix_ent *e;

		if (!b->slots[i])
			return &b->slots[i];
		e = &b->v[b->slots[i] - 1];
		if (e->tbl == tbl && e->key.len == klen &&
		    !memcmp(e->key.ptr, key, klen))
			return &b->slots[i];
	}
}

static int rehash(struct pg_ixbuf *b)
{
	size_t n = b->nslots ? b->nslots * 2 : 256, i;
	size_t *old = b->slots, oldn = b->nslots;

	if (!(b->slots = aptix__calloc(n, sizeof(*b->slots)))) {
		b->slots = old;
		return APTIX_ERROR;
	}
	b->nslots = n;
	for (i = 0; i < oldn; i++)
		if (old[i]) {
			const struct ix_ent *e = &b->v[old[i] - 1];

			*slot_of(b, e->tbl, e->key.ptr, e->key.len) = old[i];
		}
	free(old);
	return 0;
}

int aptix__pg_ixbuf_put(struct pg_ixbuf **bp, int tbl, const void *key,
			size_t klen, const void *val, size_t vlen)
{
	struct pg_ixbuf *b = *bp;
	struct ix_ent *e;
	size_t *s;

	if (!b && !(b = *bp = aptix__calloc(1, sizeof(*b))))
		return APTIX_ERROR;
	if ((b->n + 1) * 2 > b->nslots && rehash(b) < 0)
		return APTIX_ERROR;
	s = slot_of(b, tbl, key, klen);
	if (*s)
		return aptix_buf_set(&b->v[*s - 1].val, val, vlen) < 0 ?
			APTIX_ERROR : 0;
	if (aptix__grow(&b->v, &b->alloc, b->n, sizeof(*b->v), 64) < 0)
		return APTIX_ERROR;
	e = &b->v[b->n];
	e->tbl = tbl;
	aptix_buf_init(&e->key, 0);
	aptix_buf_init(&e->val, 0);
	if (aptix_buf_set(&e->key, key, klen) < 0 ||
	    aptix_buf_set(&e->val, val, vlen) < 0) {
		aptix_buf_release(&e->key);
		aptix_buf_release(&e->val);
		return APTIX_ERROR;
	}
	*s = ++b->n;
	return 0;
}

int aptix__pg_ixbuf_get(const struct pg_ixbuf *b, int tbl, const void *key,
			size_t klen, const aptix_buf **val)
{
	size_t *s;

	if (!b || !b->n)
		return 0;
	s = slot_of((struct pg_ixbuf *)b, tbl, key, klen);
	if (!*s)
		return 0;
	*val = &b->v[*s - 1].val;
	return 1;
}

static void clear(struct pg_ixbuf *b)
{
	size_t i;

	for (i = 0; i < b->n; i++) {
		aptix_buf_release(&b->v[i].key);
		aptix_buf_release(&b->v[i].val);
	}
	b->n = 0;
	memset(b->slots, 0, b->nslots * sizeof(*b->slots));
}

void aptix__pg_ixbuf_free(struct pg_ixbuf *b)
{
	if (!b)
		return;
	clear(b);
	free(b->v);
	free(b->slots);
	free(b);
}

/* Rows [at, at + k) as one INSERT of three arrays. */
static int flush_rows(struct aptix_pg_txn *t, const struct pg_ixbuf *b,
		      size_t at, size_t k)
{
	aptix_buf tbls = APTIX_BUF_INIT, keys = APTIX_BUF_INIT,
		  vals = APTIX_BUF_INIT;
	const char *pv[3];
	int lens[3], r;
	size_t i;
	PGresult *res = NULL;

	aptix__pg_array_header(&tbls, k, INT2OID);
	aptix__pg_array_header(&keys, k, BYTEAOID);
	aptix__pg_array_header(&vals, k, BYTEAOID);
	for (i = at; i < at + k; i++) {
		unsigned char t2[2];

		t2[0] = (unsigned char)((unsigned)b->v[i].tbl >> 8);
		t2[1] = (unsigned char)b->v[i].tbl;
		aptix__pg_array_elem(&tbls, t2, 2);
		aptix__pg_array_elem(&keys, b->v[i].key.ptr, b->v[i].key.len);
		aptix__pg_array_elem(&vals, b->v[i].val.ptr, b->v[i].val.len);
	}
	r = aptix_buf_oom(&tbls) || aptix_buf_oom(&keys) ||
		aptix_buf_oom(&vals) ? APTIX_ERROR : 0;
	pv[0] = tbls.ptr, lens[0] = (int)tbls.len;
	pv[1] = keys.ptr, lens[1] = (int)keys.len;
	pv[2] = vals.ptr, lens[2] = (int)vals.len;
	if (r == 0)
		r = aptix__pg_exec(&res, t, "INSERT INTO aptix_index (tbl, key, "
				   "val) SELECT * FROM unnest($1::int2[], "
				   "$2::bytea[], $3::bytea[]) ON CONFLICT "
				   "(org, tbl, key) DO UPDATE SET val = "
				   "EXCLUDED.val", 3, pv, lens);
	PQclear(res);
	aptix_buf_release(&tbls);
	aptix_buf_release(&keys);
	aptix_buf_release(&vals);
	return r;
}

/*
 * Timeline records first, then the sessions' locators, then the rest (a
 * stable reordering; the buffer is cleared after the flush, so its
 * slots need not follow): the schema's trigger reads the conversation
 * of a session's locator from its timeline record, and that of its
 * parent's child record through its locator (schema.sql,
 * aptix_index_conv), so that they are private with it.
 */
static int flush_rank(int tbl)
{
	return tbl == APTIX_INDEX_TIMELINE ? 0 :
		tbl == APTIX_INDEX_SESSIONS ? 1 : 2;
}

static int order_for_flush(struct pg_ixbuf *b)
{
	struct ix_ent *tmp;
	size_t i, n = 0;
	int rank;

	for (i = 1; i < b->n &&
	     flush_rank(b->v[i - 1].tbl) <= flush_rank(b->v[i].tbl); i++)
		;
	if (i >= b->n)
		return 0;
	if (!(tmp = aptix__calloc(b->n, sizeof(*tmp))))
		return APTIX_ERROR;
	for (rank = 0; rank < 3; rank++)
		for (i = 0; i < b->n; i++)
			if (flush_rank(b->v[i].tbl) == rank)
				tmp[n++] = b->v[i];
	memcpy(b->v, tmp, b->n * sizeof(*tmp));
	free(tmp);
	return 0;
}

int aptix__pg_ixbuf_flush(struct aptix_pg_txn *t)
{
	struct pg_ixbuf *b = t->ix;
	size_t at = 0, k, bytes;
	int r = b ? order_for_flush(b) : 0;

	while (b && r == 0 && at < b->n) {
		for (k = 0, bytes = 0; at + k < b->n && k < FLUSH_ROWS &&
		     (k == 0 || bytes < FLUSH_BYTES); k++)
			bytes += b->v[at + k].val.len + b->v[at + k].key.len;
		r = flush_rows(t, b, at, k);
		at += k;
	}
	if (b && r == 0)
		clear(b);
	return r;
}
