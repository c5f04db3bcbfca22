/*
 * src/index/index-recency.c - the conversations by last update: the
 * index's recency table (aptix/index.h,
 * aptix_index_conversations_by_recency).
 *
 * A listing of the most recently updated conversations (`sessions -n
 * 20`, the page's list and graph, app-server's list) read every
 * conversation record and sorted them: its cost grew with the store. The
 * recency table keeps one key a conversation record, in the order the
 * listings show them (objects-format.md, "The recency index"):
 *
 *   be64 (2^64 - 1 - updated ms), conversation id   -> ""
 *   "s"                                              -> u8 version 1
 *
 * so that the newest come first in ascending key order, ties by id
 * (what the listings sorted by). index.c keeps it in the same write as
 * the conversation record (aptix_index__recency_move: a rewritten record
 * whose update time changed moves its key, a deleted one loses it), and
 * reindex rebuilds it. A listing then reads what it shows: the keys of
 * a page, and the record of each.
 *
 * The state key "s" says the table covers every conversation: a new
 * store writes it with its first conversation, reindex with the rest. A
 * store indexed before the table existed has none, and is listed by
 * reading every record until `aptix reindex`. A key whose record says
 * another time (or is gone) is stale, left by a writer that did not
 * keep the table: the listing skips it and fsck names it.
 */
#include "util/common.h"
#include "index/index.h"
#include "aptix/index.h"
#include "aptix/refs.h"
#include "aptix/sys/index_backend.h"

#define RECENCY_VERSION 1
#define KEY_MAX (8 + APTIX_CONV_MAXLEN)
#define BATCH 64

/* The key of a conversation updated at ms; its length. */
static size_t recency_key(unsigned char key[KEY_MAX], int64_t at,
			  const char *conv)
{
	size_t n = strlen(conv);

	if (n > APTIX_CONV_MAXLEN)
		n = APTIX_CONV_MAXLEN;
	aptix__put_be64(key, UINT64_MAX - (uint64_t)(at < 0 ? 0 : at));
	memcpy(key + 8, conv, n);
	return 8 + n;
}

static int64_t key_time(const unsigned char *key)
{
	return (int64_t)(UINT64_MAX - aptix__get_be64(key));
}

/* A conversation record other than conv's (the walk's payload)? */
static int other_conv_cb(const void *key, size_t klen,
			 const void *val UNUSED, size_t vlen UNUSED,
			 void *payload)
{
	const char *conv = payload;

	if (klen == strlen(conv) && !memcmp(key, conv, klen))
		return 0;
	return 1;
}

/*
 * A conversation's first record was just written: when the store has no
 * other, the table covers every conversation from now on.
 */
static int maybe_start(aptix_index_backend *ix, aptix_backend_txn *tx,
		       const char *conv)
{
	aptix_buf v = APTIX_BUF_INIT;
	unsigned char state = RECENCY_VERSION;
	int r = ix->get(&v, ix, tx, APTIX_INDEX_RECENCY, "s", 1);

	aptix_buf_release(&v);
	if (r != APTIX_ENOTFOUND)
		return r;
	r = ix->iterate(ix, tx, APTIX_INDEX_CONVS, NULL, 0,
			APTIX_INDEX_ITER_REVERSE, other_conv_cb,
			(void *)conv);
	if (r < 0)
		return r;
	return r == 1 ? 0 : ix->put(ix, tx, APTIX_INDEX_RECENCY, "s", 1,
				    &state, 1);
}

int aptix_index__recency_move(aptix_backend_txn *tx, const char *conv,
			      int had, int64_t old_at, int has,
			      int64_t new_at)
{
	aptix_index_backend *ix = tx->backend->index;
	unsigned char okey[KEY_MAX], nkey[KEY_MAX];
	size_t olen = recency_key(okey, old_at, conv);
	size_t nlen = recency_key(nkey, new_at, conv);
	int r = 0;

	if (had && has && olen == nlen && !memcmp(okey, nkey, nlen))
		return 0;	/* where it was */
	if (had && (r = ix->del(ix, tx, APTIX_INDEX_RECENCY, okey,
				olen)) == APTIX_ENOTFOUND) {
		aptix_error_clear();	/* an older store's */
		r = 0;
	}
	if (r < 0 || !has)
		return r;
	if ((r = ix->put(ix, tx, APTIX_INDEX_RECENCY, nkey, nlen, "", 0)) < 0)
		return r;
	return had ? 0 : maybe_start(ix, tx, conv);
}

int aptix_index__recency_seal(aptix_backend_txn *tx)
{
	aptix_index_backend *ix = tx->backend->index;
	unsigned char state = RECENCY_VERSION;

	return ix->put(ix, tx, APTIX_INDEX_RECENCY, "s", 1, &state, 1);
}

/* Whether the table covers every conversation (its state is there). */
static int recency_ready(aptix_index_backend *ix)
{
	aptix_buf v = APTIX_BUF_INIT;
	int r = ix->get(&v, ix, NULL, APTIX_INDEX_RECENCY, "s", 1);

	if (r == 0 && (v.len < 1 || (unsigned char)v.ptr[0] !=
		       RECENCY_VERSION))
		r = APTIX_ENOTFOUND;	/* another version: not read */
	aptix_buf_release(&v);
	return aptix__found(r);
}

/* The records of every conversation, sorted: a store without the table. */
struct all_convs {
	aptix_conv_info *v;
	size_t n, alloc;
};

static int all_cb(const aptix_conv_info *ci, void *payload)
{
	struct all_convs *a = payload;

	if (aptix__grow(&a->v, &a->alloc, a->n, sizeof(*a->v), 64) < 0)
		return APTIX_ERROR;
	a->v[a->n++] = *ci;
	return 0;
}

static int by_recency(const void *a, const void *b)
{
	const aptix_conv_info *x = a, *y = b;
	int64_t tx = x->updated_at < 0 ? 0 : x->updated_at;
	int64_t ty = y->updated_at < 0 ? 0 : y->updated_at;

	if (tx != ty)
		return tx > ty ? -1 : 1;
	return strcmp(x->id, y->id);
}

static int scan_sorted(aptix_repo *repo, const aptix_conv_info *after,
		       aptix_conv_info_cb cb, void *payload)
{
	struct all_convs a = { NULL, 0, 0 };
	size_t i;
	int r = aptix_index_foreach_conversation(repo, all_cb, &a);

	if (!r && a.n)
		qsort(a.v, a.n, sizeof(*a.v), by_recency);
	for (i = 0; !r && i < a.n; i++)
		if (!after || by_recency(&a.v[i], after) > 0)
			r = cb(&a.v[i], payload);
	free(a.v);
	return r == APTIX_ITEROVER ? 0 : r;
}

/* A batch of keys, copied out of the walk (cb may read or write). */
struct batch {
	unsigned char key[BATCH][KEY_MAX];
	size_t len[BATCH];
	size_t n;
	const unsigned char *skip;	/* the key the batch starts after */
	size_t skiplen;
};

static int batch_cb(const void *key, size_t klen, const void *val UNUSED,
		    size_t vlen UNUSED, void *payload)
{
	struct batch *b = payload;

	if (klen < 9 || klen > KEY_MAX)
		return 0;	/* the state */
	if (b->skip && klen == b->skiplen && !memcmp(key, b->skip, klen))
		return 0;
	memcpy(b->key[b->n], key, klen);
	b->len[b->n++] = klen;
	return b->n == BATCH ? APTIX_ITEROVER : 0;
}

/*
 * The record of a key, into ci: 0; 1 when the key is stale (no record,
 * or one of another time).
 */
static int key_record(aptix_conv_info *ci, aptix_repo *repo,
		      const unsigned char *key, size_t klen)
{
	char id[APTIX_CONV_MAXLEN + 1];
	int r;

	memcpy(id, key + 8, klen - 8);
	id[klen - 8] = '\0';
	r = aptix_index_conversation(ci, repo, id);
	if (r == APTIX_ENOTFOUND) {
		aptix_error_clear();
		return 1;
	}
	if (r < 0)
		return r;
	return (ci->updated_at < 0 ? 0 : ci->updated_at) != key_time(key);
}

/*
 * Each key from the one after after (NULL: the first) to fn, in batches
 * copied out of the walk (fn may read or write); fn's ITEROVER stops.
 */
typedef int (*key_fn)(const unsigned char *key, size_t klen, void *ctx);

static int walk_keys(aptix_repo *repo, const aptix_conv_info *after,
		     key_fn fn, void *ctx)
{
	aptix_index_backend *ix = repo->backend->index;
	unsigned char start[KEY_MAX];
	size_t slen = 0, i;
	struct batch *b;
	int r = 0;

	if (!(b = aptix__calloc(1, sizeof(*b))))
		return APTIX_ERROR;
	if (after) {
		slen = recency_key(start, after->updated_at, after->id);
		b->skip = start;
		b->skiplen = slen;
	}
	for (;;) {
		b->n = 0;
		r = ix->iterate(ix, NULL, APTIX_INDEX_RECENCY,
				b->skip ? start : NULL, slen, 0, batch_cb, b);
		if (r == APTIX_ITEROVER)
			r = 0;
		for (i = 0; !r && i < b->n; i++)
			r = fn(b->key[i], b->len[i], ctx);
		if (r || b->n < BATCH)
			break;
		slen = b->len[BATCH - 1];
		memcpy(start, b->key[BATCH - 1], slen);
		b->skip = start;
		b->skiplen = slen;
	}
	free(b);
	return r == APTIX_ITEROVER ? 0 : r;
}

struct emit {
	aptix_repo *repo;
	aptix_conv_info_cb cb;
	void *payload;
};

static int emit_key(const unsigned char *key, size_t klen, void *ctx)
{
	struct emit *e = ctx;
	aptix_conv_info ci;
	int r = key_record(&ci, e->repo, key, klen);

	if (r == 1)
		return 0;	/* stale: skipped */
	return r < 0 ? r : e->cb(&ci, e->payload);
}

int aptix_index_conversations_by_recency(aptix_repo *repo,
					 const aptix_conv_info *after,
					 aptix_conv_info_cb cb,
					 void *payload)
{
	struct emit e;
	int r;

	APTIX_ASSERT_ARG(repo);
	APTIX_ASSERT_ARG(cb);
	if ((r = recency_ready(repo->backend->index)) < 0)
		return r;
	if (!r)
		return scan_sorted(repo, after, cb, payload);
	e.repo = repo;
	e.cb = cb;
	e.payload = payload;
	return walk_keys(repo, after, emit_key, &e);
}

/* --- fsck ---------------------------------------------------------------- */

struct check {
	aptix_repo *repo;
	aptix_index_recency_problem_fn problem;
	void *payload;
	size_t problems;
	int ready;
};

static void problem(struct check *c, const char *fmt, const char *id,
		    int64_t at)
{
	char msg[256];

	snprintf(msg, sizeof(msg), fmt, id, (long long)at);
	c->problems++;
	c->problem(msg, c->payload);
}

/* Every record has its key (when the table covers them all). */
static int check_conv_cb(const aptix_conv_info *ci, void *payload)
{
	struct check *c = payload;
	aptix_index_backend *ix = c->repo->backend->index;
	unsigned char key[KEY_MAX];
	aptix_buf v = APTIX_BUF_INIT;
	size_t klen = recency_key(key, ci->updated_at, ci->id);
	int r = ix->get(&v, ix, NULL, APTIX_INDEX_RECENCY, key, klen);

	aptix_buf_release(&v);
	if (r == APTIX_ENOTFOUND) {
		aptix_error_clear();
		problem(c, "conversation '%s' (updated %lld) is missing from "
			"the recency index", ci->id, ci->updated_at);
		return 0;
	}
	return r;
}

/* Every key has its record, of that time. */
static int check_key(const unsigned char *key, size_t klen, void *ctx)
{
	struct check *c = ctx;
	char id[APTIX_CONV_MAXLEN + 1];
	aptix_conv_info ci;
	int r = key_record(&ci, c->repo, key, klen);

	memcpy(id, key + 8, klen - 8);
	id[klen - 8] = '\0';
	if (r == 1)
		problem(c, "the recency index lists conversation '%s' at "
			"%lld, which its record does not say", id,
			key_time(key));
	return r < 0 ? r : 0;
}

int aptix_index_check_recency(aptix_repo *repo, aptix_index_recency_problem_fn fn,
			      void *payload)
{
	aptix_index_backend *ix;
	struct check c;
	int r;

	APTIX_ASSERT_ARG(repo);
	APTIX_ASSERT_ARG(fn);
	ix = repo->backend->index;
	memset(&c, 0, sizeof(c));
	c.repo = repo;
	c.problem = fn;
	c.payload = payload;
	if ((r = recency_ready(ix)) <= 0)
		return r;	/* none to check: listings scan */
	if ((r = aptix_index_foreach_conversation(repo, check_conv_cb,
						  &c)) < 0 ||
	    (r = walk_keys(repo, NULL, check_key, &c)) < 0)
		return r;
	return c.problems > INT32_MAX ? INT32_MAX : (int)c.problems;
}
