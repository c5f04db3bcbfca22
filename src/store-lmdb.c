/*
 * src/store-lmdb.c - the LMDB implementation of the store backend.
 *
 * Every LMDB call of the library lives here. One environment per process
 * and store; a read transaction is renewed for each call so that readers
 * always see the last commit and never pin old pages for long; a write
 * is one short transaction, replayed after growing the map when it fills.
 */
#include "common.h"
#include "aptix/sys/store_backend.h"
#include "env.h"
#include <lmdb.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <unistd.h>

#define INITIAL_MAPSIZE ((size_t)64 << 20)
#define MAX_MAPSIZE_DEFAULT ((size_t)1 << 40)
/* Less free space than this after a short write: the disk is full. */
#define DISK_FULL_SLACK ((uint64_t)1 << 20)

static const char *const table_names[APTIX_TABLE__COUNT] = {
	"meta", "objects", "refs", "reflog", "sessions", "children",
	"conversations", "running", "rag", "timeline"
};

typedef struct {
	aptix_store parent;
	MDB_env *env;
	MDB_dbi dbi[APTIX_TABLE__COUNT];
	MDB_txn *rtxn;		/* reused read transaction */
	int rtxn_live;
	int iter_depth;		/* iterations running on rtxn */
	size_t max_mapsize;
	char *dir;
} lmdb_store;

struct aptix_store_wtxn {
	lmdb_store *st;
	MDB_txn *txn;
	int map_full;
};

static int lmdb_error(int rc, const char *what)
{
	if (rc == MDB_NOTFOUND)
		return APTIX_ENOTFOUND;
	if (rc == MDB_MAP_FULL || rc == MDB_TXN_FULL || rc == ENOSPC ||
	    rc == EDQUOT) {
		aptix_error_set(APTIX_ERROR_LMDB, "%s: %s", what,
				rc == ENOSPC || rc == EDQUOT ?
				"no space left on device" :
				"store is full");
		return APTIX_EFULL;
	}
	if (rc == MDB_CORRUPTED || rc == MDB_PAGE_NOTFOUND ||
	    rc == MDB_INVALID || rc == MDB_VERSION_MISMATCH) {
		aptix_error_set(APTIX_ERROR_LMDB, "%s: store is corrupt: %s",
				what, mdb_strerror(rc));
		return APTIX_ECORRUPT;
	}
	aptix_error_set(APTIX_ERROR_LMDB, "%s: %s", what, mdb_strerror(rc));
	return APTIX_ERROR;
}

/* Begin (or renew) the read transaction, following a map grown by others. */
static int rtxn_begin(lmdb_store *st)
{
	int rc, retried = 0;

	/*
	 * Reads made by an iteration's callback use the iteration's
	 * snapshot: resetting the transaction would pull it from under
	 * the cursor.
	 */
	if (st->iter_depth && st->rtxn_live)
		return 0;
	if (st->rtxn_live) {
		mdb_txn_reset(st->rtxn);
		st->rtxn_live = 0;
	}
	for (;;) {
		if (st->rtxn)
			rc = mdb_txn_renew(st->rtxn);
		else
			rc = mdb_txn_begin(st->env, NULL, MDB_RDONLY, &st->rtxn);
		if (rc == MDB_MAP_RESIZED) {
			if (st->rtxn) {
				mdb_txn_abort(st->rtxn);
				st->rtxn = NULL;
			}
			rc = mdb_env_set_mapsize(st->env, 0);
			if (rc)
				return lmdb_error(rc, "cannot resize map");
			continue;
		}
		if (rc == MDB_READERS_FULL && !retried++) {
			/* slots of dead processes: free them, try again */
			mdb_reader_check(st->env, NULL);
			continue;
		}
		if (rc) {
			if (st->rtxn) {
				mdb_txn_abort(st->rtxn);
				st->rtxn = NULL;
			}
			return lmdb_error(rc, "cannot begin read transaction");
		}
		st->rtxn_live = 1;
		return 0;
	}
}

static void rtxn_end(lmdb_store *st)
{
	if (st->rtxn_live && !st->iter_depth) {
		mdb_txn_reset(st->rtxn);
		st->rtxn_live = 0;
	}
}

static int st_peek(const void **val, size_t *vlen, aptix_store *s,
		   aptix_table t, const void *key, size_t klen)
{
	lmdb_store *st = (lmdb_store *)s;
	MDB_val k = { klen, (void *)key }, v;
	int rc;

	if ((rc = rtxn_begin(st)) < 0)
		return rc;
	rc = mdb_get(st->rtxn, st->dbi[t], &k, &v);
	if (rc) {
		rtxn_end(st);
		return rc == MDB_NOTFOUND ? APTIX_ENOTFOUND :
			lmdb_error(rc, "cannot read store");
	}
	*val = v.mv_data;
	*vlen = v.mv_size;
	return 0;
}

static int st_get(aptix_buf *out, aptix_store *s, aptix_table t,
		  const void *key, size_t klen)
{
	const void *v = NULL;
	size_t vlen = 0;
	int rc = st_peek(&v, &vlen, s, t, key, klen);

	if (rc == 0)
		rc = aptix_buf_set(out, v, vlen);
	rtxn_end((lmdb_store *)s);
	return rc;
}

static int cursor_walk(MDB_txn *txn, MDB_dbi dbi, const void *start,
		       size_t slen, int reverse, aptix_store_iter_cb cb,
		       void *payload)
{
	MDB_cursor *c;
	MDB_val k, v;
	int rc, r = 0;
	MDB_cursor_op op;

	rc = mdb_cursor_open(txn, dbi, &c);
	if (rc)
		return lmdb_error(rc, "cannot open cursor");
	if (!start) {
		op = reverse ? MDB_LAST : MDB_FIRST;
		rc = mdb_cursor_get(c, &k, &v, op);
	} else {
		k.mv_size = slen;
		k.mv_data = (void *)start;
		rc = mdb_cursor_get(c, &k, &v, MDB_SET_RANGE);
		if (reverse) {
			if (rc == MDB_NOTFOUND)
				rc = mdb_cursor_get(c, &k, &v, MDB_LAST);
			else if (!rc && (k.mv_size != slen ||
				 memcmp(k.mv_data, start, slen)))
				rc = mdb_cursor_get(c, &k, &v, MDB_PREV);
		}
	}
	while (rc == 0) {
		r = cb(k.mv_data, k.mv_size, v.mv_data, v.mv_size, payload);
		if (r)
			break;
		rc = mdb_cursor_get(c, &k, &v, reverse ? MDB_PREV : MDB_NEXT);
	}
	mdb_cursor_close(c);
	if (r == APTIX_ITEROVER)
		return 0;
	if (r)
		return r;
	if (rc && rc != MDB_NOTFOUND)
		return lmdb_error(rc, "cannot iterate store");
	return 0;
}

static int st_iter_dir(aptix_store *s, aptix_table t, const void *start,
		       size_t slen, int reverse, aptix_store_iter_cb cb,
		       void *payload)
{
	lmdb_store *st = (lmdb_store *)s;
	int rc;

	if ((rc = rtxn_begin(st)) < 0)
		return rc;
	st->iter_depth++;
	rc = cursor_walk(st->rtxn, st->dbi[t], start, slen, reverse, cb,
			 payload);
	st->iter_depth--;
	rtxn_end(st);
	return rc;
}

static int st_iter(aptix_store *s, aptix_table t, const void *start,
		   size_t slen, aptix_store_iter_cb cb, void *payload)
{
	return st_iter_dir(s, t, start, slen, 0, cb, payload);
}

static int st_iter_rev(aptix_store *s, aptix_table t, const void *start,
		       size_t slen, aptix_store_iter_cb cb, void *payload)
{
	return st_iter_dir(s, t, start, slen, 1, cb, payload);
}

static int w_get(aptix_buf *out, aptix_store_wtxn *w, aptix_table t,
		 const void *key, size_t klen)
{
	MDB_val k = { klen, (void *)key }, v;
	int rc = mdb_get(w->txn, w->st->dbi[t], &k, &v);

	if (rc)
		return rc == MDB_NOTFOUND ? APTIX_ENOTFOUND :
			lmdb_error(rc, "cannot read store");
	return aptix_buf_set(out, v.mv_data, v.mv_size);
}

static int w_put(aptix_store_wtxn *w, aptix_table t, const void *key,
		 size_t klen, const void *val, size_t vlen)
{
	MDB_val k = { klen, (void *)key }, v = { vlen, (void *)val };
	int rc;

	if (klen == 0 || klen > 511) {
		aptix_error_set(APTIX_ERROR_LMDB, "key of %zu bytes is invalid",
				klen);
		return APTIX_EINVALID;
	}
	rc = mdb_put(w->txn, w->st->dbi[t], &k, &v, 0);
	if (rc == MDB_MAP_FULL || rc == MDB_TXN_FULL)
		w->map_full = 1;
	return rc ? lmdb_error(rc, "cannot write to store") : 0;
}

static int w_del(aptix_store_wtxn *w, aptix_table t, const void *key,
		 size_t klen)
{
	MDB_val k = { klen, (void *)key };
	int rc = mdb_del(w->txn, w->st->dbi[t], &k, NULL);

	if (rc == MDB_MAP_FULL || rc == MDB_TXN_FULL)
		w->map_full = 1;
	if (rc == MDB_NOTFOUND)
		return APTIX_ENOTFOUND;
	return rc ? lmdb_error(rc, "cannot delete from store") : 0;
}

static int w_iter_rev(aptix_store_wtxn *w, aptix_table t, const void *start,
		      size_t slen, aptix_store_iter_cb cb, void *payload)
{
	return cursor_walk(w->txn, w->st->dbi[t], start, slen, 1, cb,
			   payload);
}

static int grow_map(lmdb_store *st)
{
	MDB_envinfo info;
	size_t next;
	int rc;

	mdb_env_info(st->env, &info);
	next = info.me_mapsize * 2;
	if (info.me_mapsize >= st->max_mapsize) {
		aptix_error_set(APTIX_ERROR_LMDB,
				"store is full: it reached its maximum size "
				"of %zu MiB", st->max_mapsize >> 20);
		return APTIX_EFULL;
	}
	if (next > st->max_mapsize)
		next = st->max_mapsize;
	rc = mdb_env_set_mapsize(st->env, next);
	return rc ? lmdb_error(rc, "cannot grow the store map") : 0;
}

/*
 * LMDB reports a short write (what a full file system gives) as EIO:
 * tell it from a real I/O error by the space left where the store is.
 */
static int disk_is_full(const lmdb_store *st)
{
	struct statvfs sv;

	if (statvfs(st->dir, &sv) < 0)
		return 0;
	return (uint64_t)sv.f_bavail * sv.f_frsize < DISK_FULL_SLACK;
}

static int st_write(aptix_store *s, aptix_store_write_fn fn, void *payload)
{
	lmdb_store *st = (lmdb_store *)s;
	aptix_store_wtxn w;
	int rc, r;

	rtxn_end(st);
	for (;;) {
		memset(&w, 0, sizeof(w));
		w.st = st;
		rc = mdb_txn_begin(st->env, NULL, 0, &w.txn);
		if (rc == MDB_MAP_RESIZED) {
			if ((rc = mdb_env_set_mapsize(st->env, 0)))
				return lmdb_error(rc, "cannot resize map");
			continue;
		}
		if (rc)
			return lmdb_error(rc, "cannot begin write transaction");
		r = fn(&w, payload);
		if (r) {
			mdb_txn_abort(w.txn);
			if (w.map_full) {
				if ((r = grow_map(st)) < 0)
					return r;
				continue;
			}
			return r;
		}
		rc = mdb_txn_commit(w.txn);
		if (rc == MDB_MAP_FULL) {
			if ((r = grow_map(st)) < 0)
				return r;
			continue;
		}
		if (rc == EIO && disk_is_full(st))
			rc = ENOSPC;
		if (rc)
			return lmdb_error(rc, "cannot commit to store");
		return 0;
	}
}

static int st_disk_usage(uint64_t *out, aptix_store *s)
{
	lmdb_store *st = (lmdb_store *)s;
	aptix_buf path = APTIX_BUF_INIT;
	struct stat sb;
	int r = 0;

	aptix_buf_printf(&path, "%s/data.mdb", st->dir);
	if (stat(path.ptr, &sb) < 0) {
		aptix_error_set_os("cannot stat '%s'", path.ptr);
		r = APTIX_ERROR;
	} else {
		*out = (uint64_t)sb.st_blocks * 512;
	}
	aptix_buf_release(&path);
	return r;
}

static void st_free(aptix_store *s)
{
	lmdb_store *st = (lmdb_store *)s;

	if (!st)
		return;
	if (st->rtxn)
		mdb_txn_abort(st->rtxn);
	if (st->env)
		mdb_env_close(st->env);
	free(st->dir);
	free(st);
}

static int open_tables(lmdb_store *st, int create)
{
	MDB_txn *txn;
	int rc, i, missing = 0;

	rc = mdb_txn_begin(st->env, NULL, create ? 0 : MDB_RDONLY, &txn);
	if (rc)
		return lmdb_error(rc, "cannot open store");
	for (i = 0; i < APTIX_TABLE__COUNT; i++) {
		rc = mdb_dbi_open(txn, table_names[i], create ? MDB_CREATE : 0,
				  &st->dbi[i]);
		if (rc == MDB_NOTFOUND && !create) {
			missing = 1;
			break;
		}
		if (rc) {
			mdb_txn_abort(txn);
			return lmdb_error(rc, "cannot open store table");
		}
	}
	if (missing) {
		mdb_txn_abort(txn);
		return APTIX_ENOTFOUND;
	}
	rc = mdb_txn_commit(txn);
	return rc ? lmdb_error(rc, "cannot open store") : 0;
}

int aptix_store_lmdb_open(aptix_store **out, const char *dir, unsigned flags)
{
	lmdb_store *st;
	aptix_buf path = APTIX_BUF_INIT;
	const char *max_env = aptix_env__get(APTIX_ENV_STORE_MAX_MB);
	struct stat sb;
	int rc, r;

	*out = NULL;
	aptix_buf_printf(&path, "%s/data.mdb", dir);
	if (!(flags & APTIX_STORE_CREATE) && stat(path.ptr, &sb) < 0) {
		aptix_error_set(APTIX_ERROR_REPOSITORY,
				"not an aptix store: '%s'", dir);
		aptix_buf_release(&path);
		return APTIX_ENOTFOUND;
	}
	aptix_buf_release(&path);

	if (!(st = aptix__calloc(1, sizeof(*st))))
		return APTIX_ERROR;
	st->parent.version = APTIX_STORE_BACKEND_VERSION;
	st->parent.get = st_get;
	st->parent.peek = st_peek;
	st->parent.iter = st_iter;
	st->parent.iter_rev = st_iter_rev;
	st->parent.write = st_write;
	st->parent.wget = w_get;
	st->parent.wput = w_put;
	st->parent.wdel = w_del;
	st->parent.witer_rev = w_iter_rev;
	st->parent.disk_usage = st_disk_usage;
	st->parent.free = st_free;
	st->max_mapsize = MAX_MAPSIZE_DEFAULT;
	if (max_env && *max_env) {
		unsigned long mb = strtoul(max_env, NULL, 10);

		if (mb)
			st->max_mapsize = (size_t)mb << 20;
	}
	if (!(st->dir = aptix__strdup(dir))) {
		free(st);
		return APTIX_ERROR;
	}
	if ((rc = mdb_env_create(&st->env))) {
		r = lmdb_error(rc, "cannot create LMDB environment");
		goto fail;
	}
	mdb_env_set_maxdbs(st->env, APTIX_TABLE__COUNT + 4);
	mdb_env_set_mapsize(st->env, INITIAL_MAPSIZE < st->max_mapsize ?
			    INITIAL_MAPSIZE : st->max_mapsize);
	rc = mdb_env_open(st->env, dir, MDB_NOTLS | MDB_NORDAHEAD, 0600);
	if (rc) {
		if (rc == ENOENT || rc == ENOTDIR) {
			aptix_error_set(APTIX_ERROR_REPOSITORY,
					"not an aptix store: '%s'", dir);
			r = APTIX_ENOTFOUND;
		} else if (rc == EACCES) {
			aptix_error_set(APTIX_ERROR_REPOSITORY,
					"cannot open store '%s': %s", dir,
					mdb_strerror(rc));
			r = APTIX_ERROR;
		} else {
			r = lmdb_error(rc, "cannot open store");
		}
		goto fail;
	}
	/*
	 * A process that exits without closing the environment (a fatal
	 * error, a kill) leaves its reader slot taken; while other processes
	 * keep the lock file open, nothing frees it, and once all the slots
	 * (126) are taken every command fails with MDB_READERS_FULL. Free
	 * the slots of dead processes now.
	 */
	mdb_reader_check(st->env, NULL);
	r = open_tables(st, 0);
	if (r == APTIX_ENOTFOUND)
		r = open_tables(st, 1);
	if (r < 0)
		goto fail;
	*out = &st->parent;
	return 0;
fail:
	st_free(&st->parent);
	return r;
}
