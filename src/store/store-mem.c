/*
 * src/store/store-mem.c - a store backend in memory
 * (aptix_store_memory_new, aptix/sys/store_backend.h).
 *
 * For embedders that want a repository without files (tests, a
 * throwaway session), and as the second implementation of the store
 * slots: the backend conformance suite (t/unit/check_backend.c) runs
 * the same tests on it and on LMDB, so that what the library relies on
 * is what the slots promise, not what LMDB happens to do.
 *
 * Each table is an array of entries sorted as LMDB sorts keys (memcmp
 * of the common length, then the shorter first). A write runs its
 * callback under the write side of a lock, changing the tables in
 * place and keeping an undo log: a callback that fails is undone, so a
 * write is atomic; readers take the read side, so they see the store
 * before or after a write, never during. Reads from the writing thread
 * itself (a callback that reads the store) see the write's changes.
 */
#include "util/common.h"
#include "aptix/sys/store_backend.h"
#include <pthread.h>
#include <string.h>

struct entry {
	unsigned char *key, *val;
	size_t klen, vlen;
};

struct table {
	struct entry *v;
	size_t n, alloc;
};

/* What a write changed, to put back if it fails. */
struct undo {
	aptix_table t;
	struct entry old;	/* key; val NULL when the key was absent */
	int had;
};

typedef struct mem_store {
	aptix_store parent;
	struct table tables[APTIX_TABLE__COUNT];
	pthread_rwlock_t lock;
	pthread_mutex_t writer;
	pthread_t writer_thread;
	int writing;		/* under writer: a write is running */
} mem_store;

struct aptix_store_wtxn {
	mem_store *st;
	struct undo *log;
	size_t n, alloc;
};

static int key_cmp(const void *a, size_t al, const void *b, size_t bl)
{
	int c = memcmp(a, b, al < bl ? al : bl);

	return c ? c : al < bl ? -1 : al > bl;
}

/* The index of the first entry >= key (n when none). */
static size_t lower_bound(const struct table *tb, const void *key,
			  size_t klen)
{
	size_t lo = 0, hi = tb->n;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (key_cmp(tb->v[mid].key, tb->v[mid].klen, key, klen) < 0)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo;
}

static struct entry *find(struct table *tb, const void *key, size_t klen)
{
	size_t i = lower_bound(tb, key, klen);

	if (i < tb->n && !key_cmp(tb->v[i].key, tb->v[i].klen, key, klen))
		return &tb->v[i];
	return NULL;
}

/* Does this thread run the write (it holds the lock already)? */
static int in_write(mem_store *st)
{
	int yes;

	pthread_mutex_lock(&st->writer);
	yes = st->writing && pthread_equal(st->writer_thread, pthread_self());
	pthread_mutex_unlock(&st->writer);
	return yes;
}

static int rlock(mem_store *st)
{
	if (in_write(st))
		return 0;
	pthread_rwlock_rdlock(&st->lock);
	return 1;
}

static void runlock(mem_store *st, int locked)
{
	if (locked)
		pthread_rwlock_unlock(&st->lock);
}

static int check_table(aptix_table t)
{
	if ((unsigned)t >= APTIX_TABLE__COUNT) {
		aptix_error_set(APTIX_ERROR_INVALID, "no table %d", (int)t);
		return APTIX_EINVALID;
	}
	return 0;
}

static int get_locked(aptix_buf *out, mem_store *st, aptix_table t,
		      const void *key, size_t klen)
{
	struct entry *e;

	if (check_table(t) < 0)
		return APTIX_EINVALID;
	if (!(e = find(&st->tables[t], key, klen))) {
		return APTIX_ENOTFOUND;	/* as LMDB's: no message */
	}
	return aptix_buf_set(out, e->val, e->vlen) < 0 ? aptix_error_oom() : 0;
}

static int m_get(aptix_buf *out, aptix_store *s, aptix_table t,
		 const void *key, size_t klen)
{
	mem_store *st = (mem_store *)s;
	int locked = rlock(st), r = get_locked(out, st, t, key, klen);

	runlock(st, locked);
	return r;
}

static int m_view(aptix_store *s, aptix_table t, const void *key,
		  size_t klen, aptix_store_view_cb cb, void *payload)
{
	mem_store *st = (mem_store *)s;
	struct entry *e;
	int locked, r;

	if (check_table(t) < 0)
		return APTIX_EINVALID;
	locked = rlock(st);
	if (!(e = find(&st->tables[t], key, klen))) {
		r = APTIX_ENOTFOUND;
	} else {
		r = cb(e->val, e->vlen, payload);
	}
	runlock(st, locked);
	return r;
}

/*
 * Walk t from start up (or down: from the last key <= start). The
 * callback may write only through a write of its own thread, which
 * holds the lock already; entries are copied out before each call so
 * that such a write cannot pull them from under it.
 */
static int walk(mem_store *st, aptix_table t, const void *start, size_t slen,
		int reverse, aptix_store_iter_cb cb, void *payload)
{
	struct table *tb = &st->tables[t];
	aptix_buf k = APTIX_BUF_INIT, v = APTIX_BUF_INIT;
	size_t i;
	int r = 0;

	if (!reverse) {
		i = start ? lower_bound(tb, start, slen) : 0;
	} else if (!start) {
		i = tb->n;
	} else {
		i = lower_bound(tb, start, slen);
		if (i < tb->n && !key_cmp(tb->v[i].key, tb->v[i].klen, start,
					  slen))
			i++;
	}
	for (;;) {
		if (reverse ? i == 0 : i >= tb->n)
			break;
		if (reverse)
			i--;
		if (aptix_buf_set(&k, tb->v[i].key, tb->v[i].klen) < 0 ||
		    aptix_buf_set(&v, tb->v[i].val, tb->v[i].vlen) < 0) {
			r = aptix_error_oom();
			break;
		}
		if ((r = cb(k.ptr, k.len, v.ptr, v.len, payload)) != 0)
			break;
		/* where the key is now, should the callback have written */
		i = lower_bound(tb, k.ptr, k.len);
		if (!reverse && i < tb->n &&
		    !key_cmp(tb->v[i].key, tb->v[i].klen, k.ptr, k.len))
			i++;
	}
	aptix_buf_release(&k);
	aptix_buf_release(&v);
	return r == APTIX_ITEROVER ? 0 : r;
}

static int m_iter(aptix_store *s, aptix_table t, const void *start,
		  size_t slen, int reverse, aptix_store_iter_cb cb,
		  void *payload)
{
	mem_store *st = (mem_store *)s;
	int locked, r;

	if (check_table(t) < 0)
		return APTIX_EINVALID;
	locked = rlock(st);
	r = walk(st, t, start, slen, reverse, cb, payload);
	runlock(st, locked);
	return r;
}

static void entry_free(struct entry *e)
{
	free(e->key);
	free(e->val);
}

/* Set (val non-NULL) or remove key in t, without undo. */
static int apply(mem_store *st, aptix_table t, const void *key, size_t klen,
		 const void *val, size_t vlen)
{
	struct table *tb = &st->tables[t];
	size_t i = lower_bound(tb, key, klen);
	int found = i < tb->n &&
		!key_cmp(tb->v[i].key, tb->v[i].klen, key, klen);
	unsigned char *nv = NULL, *nk = NULL;

	if (val && !(nv = aptix__malloc(vlen ? vlen : 1)))
		return APTIX_ERROR;
	if (val)
		memcpy(nv, val, vlen);
	if (!val) {
		if (found) {
			entry_free(&tb->v[i]);
			memmove(tb->v + i, tb->v + i + 1,
				(tb->n - i - 1) * sizeof(*tb->v));
			tb->n--;
		}
		return 0;
	}
	if (found) {
		free(tb->v[i].val);
		tb->v[i].val = nv;
		tb->v[i].vlen = vlen;
		return 0;
	}
	if (!(nk = aptix__malloc(klen))) {
		free(nv);
		return APTIX_ERROR;
	}
	memcpy(nk, key, klen);
	if (aptix__grow(&tb->v, &tb->alloc, tb->n, sizeof(*tb->v), 16) < 0) {
		free(nk);
		free(nv);
		return APTIX_ERROR;
	}
	memmove(tb->v + i + 1, tb->v + i, (tb->n - i) * sizeof(*tb->v));
	tb->v[i].key = nk;
	tb->v[i].klen = klen;
	tb->v[i].val = nv;
	tb->v[i].vlen = vlen;
	tb->n++;
	return 0;
}

/* Note what key in t holds now, before a change of it. */
static int log_undo(aptix_store_wtxn *w, aptix_table t, const void *key,
		    size_t klen)
{
	struct entry *e = find(&w->st->tables[t], key, klen);
	struct undo *u;

	if (aptix__grow(&w->log, &w->alloc, w->n, sizeof(*w->log), 16) < 0)
		return APTIX_ERROR;
	u = &w->log[w->n];
	memset(u, 0, sizeof(*u));
	u->t = t;
	u->had = !!e;
	if (!(u->old.key = aptix__malloc(klen)))
		return APTIX_ERROR;
	memcpy(u->old.key, key, klen);
	u->old.klen = klen;
	if (e) {
		if (!(u->old.val = aptix__malloc(e->vlen ? e->vlen : 1))) {
			free(u->old.key);
			return APTIX_ERROR;
		}
		memcpy(u->old.val, e->val, e->vlen);
		u->old.vlen = e->vlen;
	}
	w->n++;
	return 0;
}

static int w_get(aptix_buf *out, aptix_store_wtxn *w, aptix_table t,
		 const void *key, size_t klen)
{
	return get_locked(out, w->st, t, key, klen);
}

static int w_put(aptix_store_wtxn *w, aptix_table t, const void *key,
		 size_t klen, const void *val, size_t vlen)
{
	int r;

	if (check_table(t) < 0)
		return APTIX_EINVALID;
	if (klen == 0 || klen > 511) {
		aptix_error_set(APTIX_ERROR_INVALID, "key of %zu bytes is "
				"invalid", klen);
		return APTIX_EINVALID;
	}
	if ((r = log_undo(w, t, key, klen)) < 0)
		return r;
	return apply(w->st, t, key, klen, val ? val : "", vlen);
}

static int w_del(aptix_store_wtxn *w, aptix_table t, const void *key,
		 size_t klen)
{
	int r;

	if (check_table(t) < 0)
		return APTIX_EINVALID;
	if (!find(&w->st->tables[t], key, klen)) {
		return APTIX_ENOTFOUND;	/* as LMDB's: no message */
	}
	if ((r = log_undo(w, t, key, klen)) < 0)
		return r;
	return apply(w->st, t, key, klen, NULL, 0);
}

static int w_iter_rev(aptix_store_wtxn *w, aptix_table t, const void *start,
		      size_t slen, aptix_store_iter_cb cb, void *payload)
{
	if (check_table(t) < 0)
		return APTIX_EINVALID;
	return walk(w->st, t, start, slen, 1, cb, payload);
}

/* Put back, newest first, what a failed write changed. */
static void undo_all(aptix_store_wtxn *w)
{
	while (w->n) {
		struct undo *u = &w->log[--w->n];

		/* the old value fits: no allocation can fail but a copy */
		if (apply(w->st, u->t, u->old.key, u->old.klen,
			  u->had ? u->old.val : NULL, u->old.vlen) < 0)
			aptix_error_clear();
		entry_free(&u->old);
	}
}

static void forget_undo(aptix_store_wtxn *w)
{
	size_t i;

	for (i = 0; i < w->n; i++)
		entry_free(&w->log[i].old);
	free(w->log);
}

static int m_write(aptix_store *s, aptix_store_write_fn fn, void *payload)
{
	mem_store *st = (mem_store *)s;
	aptix_store_wtxn w;
	int r;

	if (in_write(st)) {
		aptix_error_set(APTIX_ERROR_INVALID, "a write inside a write "
				"of the same store");
		return APTIX_EINVALID;
	}
	memset(&w, 0, sizeof(w));
	w.st = st;
	pthread_rwlock_wrlock(&st->lock);
	pthread_mutex_lock(&st->writer);
	st->writing = 1;
	st->writer_thread = pthread_self();
	pthread_mutex_unlock(&st->writer);
	r = fn(&w, payload);
	if (r < 0)
		undo_all(&w);
	pthread_mutex_lock(&st->writer);
	st->writing = 0;
	pthread_mutex_unlock(&st->writer);
	pthread_rwlock_unlock(&st->lock);
	forget_undo(&w);
	return r < 0 ? r : 0;
}

static int m_readonly(aptix_store *s)
{
	(void)s;
	return 0;
}

static int m_disk_usage(uint64_t *out, aptix_store *s)
{
	(void)s;
	*out = 0;	/* nothing on disk */
	return 0;
}

static int m_count(uint64_t *out, aptix_store *s, aptix_table t)
{
	mem_store *st = (mem_store *)s;
	int locked;

	if (check_table(t) < 0)
		return APTIX_EINVALID;
	locked = rlock(st);
	*out = st->tables[t].n;
	runlock(st, locked);
	return 0;
}

static void m_free(aptix_store *s)
{
	mem_store *st = (mem_store *)s;
	size_t t, i;

	if (!st)
		return;
	for (t = 0; t < APTIX_TABLE__COUNT; t++) {
		for (i = 0; i < st->tables[t].n; i++)
			entry_free(&st->tables[t].v[i]);
		free(st->tables[t].v);
	}
	pthread_rwlock_destroy(&st->lock);
	pthread_mutex_destroy(&st->writer);
	free(st);
}

int aptix_store_memory_new(aptix_store **out)
{
	mem_store *st;

	APTIX_ASSERT_ARG(out);
	*out = NULL;
	if (!(st = aptix__calloc(1, sizeof(*st))))
		return APTIX_ERROR;
	if (pthread_rwlock_init(&st->lock, NULL) != 0) {
		free(st);
		return aptix_error_oom();
	}
	if (pthread_mutex_init(&st->writer, NULL) != 0) {
		pthread_rwlock_destroy(&st->lock);
		free(st);
		return aptix_error_oom();
	}
	st->parent.version = APTIX_STORE_BACKEND_VERSION;
	st->parent.get = m_get;
	st->parent.view = m_view;
	st->parent.iter = m_iter;
	st->parent.write = m_write;
	st->parent.wget = w_get;
	st->parent.wput = w_put;
	st->parent.wdel = w_del;
	st->parent.witer_rev = w_iter_rev;
	st->parent.readonly = m_readonly;
	st->parent.disk_usage = m_disk_usage;
	st->parent.count = m_count;
	st->parent.free = m_free;
	*out = &st->parent;
	return 0;
}
