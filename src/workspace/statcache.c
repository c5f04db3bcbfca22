/*
 * src/workspace/statcache.c - the stat cache of src/workspace/statcache.h.
 *
 * git's index trusts a file's cached hash while its stat data (size,
 * mtime and ctime in nanoseconds, inode, device) is unchanged, and
 * refuses to trust an entry whose mtime is not older than the index
 * file itself ("racy git", Documentation/technical/racy-git.txt): the
 * file may have changed again within the same timestamp tick after it
 * was hashed. Both rules are kept here, and one more: an entry whose
 * mtime is within RACY_SLACK_NS of the scan's start is not saved at all
 * (file systems stamp with a coarse clock, so a change right after the
 * hash can keep the same mtime); such a file is simply hashed again
 * next time.
 *
 * The cache is a file beside data.mdb, not an LMDB table: a status or
 * a dry run may then use it without a write transaction, and a damaged
 * or missing cache costs a re-hash, nothing else. It is derived data:
 * reindex, fsck and salvage ignore it.
 */
#include "util/common.h"
#include "workspace/statcache.h"

#include <fcntl.h>
#include <time.h>
#include <unistd.h>

#define STATCACHE_MAGIC "aptix stat cache 1\n"
#define RACY_SLACK_NS ((int64_t)2000000000)
/* A cache larger than this is ignored (files.max-count bounds it). */
#define STATCACHE_MAX (64 << 20)

struct sc_entry {
	char *path;
	uint64_t size, ino, dev;
	int64_t mtime, ctime;
	char sha[65];
	int used;
};

struct aptix__statcache {
	char *file;
	int64_t written_ns;	/* the cache file's mtime */
	int64_t now_ns;
	struct sc_entry *old, *fresh;
	size_t nold, nfresh, afresh;
	int dirty;
};

static int64_t ts_ns(const struct timespec *ts)
{
	return (int64_t)ts->tv_sec * 1000000000 + ts->tv_nsec;
}

static void fill(struct sc_entry *e, const struct stat *st)
{
	e->size = (uint64_t)st->st_size;
	e->ino = (uint64_t)st->st_ino;
	e->dev = (uint64_t)st->st_dev;
	e->mtime = ts_ns(&st->st_mtim);
	e->ctime = ts_ns(&st->st_ctim);
}

static int entry_cmp(const void *a, const void *b)
{
	return strcmp(((const struct sc_entry *)a)->path,
		      ((const struct sc_entry *)b)->path);
}

static int is_hex64(const char *s)
{
	size_t i;

	for (i = 0; i < 64; i++)
		if (!((s[i] >= '0' && s[i] <= '9') ||
		      (s[i] >= 'a' && s[i] <= 'f')))
			return 0;
	return s[64] == ' ';
}

/*
 * Parse "<sha> <size> <mtime> <ctime> <ino> <dev> <path>\0" records:
 * 0, 1 when malformed, or APTIX_ERROR (out of memory).
 */
static int parse(struct aptix__statcache *c, const char *p, const char *end)
{
	size_t alloc = 0;

	while (p < end) {
		const char *nul = memchr(p, '\0', (size_t)(end - p));
		struct sc_entry e;
		uint64_t n[5];	/* size, mtime, ctime, ino, dev */
		size_t i;
		char *q;

		if (!nul || nul - p < 66 || !is_hex64(p))
			return 1;
		memset(&e, 0, sizeof(e));
		memcpy(e.sha, p, 64);
		errno = 0;
		q = (char *)p + 64;
		for (i = 0; i < ARRAY_SIZE(n); i++) {
			if (*q != ' ')
				return 1;
			n[i] = i == 1 || i == 2 ?
				(uint64_t)strtoll(q + 1, &q, 10) :
				strtoull(q + 1, &q, 10);
		}
		if (*q != ' ' || errno || q + 1 >= nul)
			return 1;
		e.size = n[0];
		e.mtime = (int64_t)n[1];
		e.ctime = (int64_t)n[2];
		e.ino = n[3];
		e.dev = n[4];
		if (aptix__grow(&c->old, &alloc, c->nold, sizeof(*c->old),
				64) < 0)
			return APTIX_ERROR;
		if (!(e.path = aptix__strdup(q + 1)))
			return APTIX_ERROR;
		c->old[c->nold++] = e;
		p = nul + 1;
	}
	return 0;
}

static void drop_old(struct aptix__statcache *c)
{
	size_t i;

	for (i = 0; i < c->nold; i++)
		free(c->old[i].path);
	free(c->old);
	c->old = NULL;
	c->nold = 0;
}

int aptix__statcache_load(struct aptix__statcache **out, const char *path,
			  int64_t now_ns)
{
	struct aptix__statcache *c;
	aptix_buf data = APTIX_BUF_INIT;
	struct stat st;
	size_t m = sizeof(STATCACHE_MAGIC) - 1;
	int fd, r = 0;

	*out = NULL;
	if (!(c = aptix__calloc(1, sizeof(*c))))
		return APTIX_ERROR;
	if (!(c->file = aptix__strdup(path))) {
		free(c);
		return APTIX_ERROR;
	}
	c->now_ns = now_ns;
	fd = open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
	if (fd >= 0 && fstat(fd, &st) == 0 && S_ISREG(st.st_mode) &&
	    st.st_size <= STATCACHE_MAX) {
		c->written_ns = ts_ns(&st.st_mtim);
		/* one an older aptix made 0644: written again, 0600 */
		if (st.st_mode & 077)
			c->dirty = 1;
		if (aptix_buf_read_fd(&data, fd) == 0 && data.len >= m &&
		    !memcmp(data.ptr, STATCACHE_MAGIC, m))
			r = parse(c, data.ptr + m, data.ptr + data.len);
		else
			r = 1;
		if (r == APTIX_ERROR) {
			aptix_buf_release(&data);
			close(fd);
			aptix__statcache_free(c);
			return APTIX_ERROR;
		}
		if (r == 1)
			drop_old(c);	/* malformed: start afresh */
		else if (c->nold)
			qsort(c->old, c->nold, sizeof(*c->old), entry_cmp);
	}
	if (fd >= 0)
		close(fd);
	aptix_buf_release(&data);
	aptix_error_clear();
	*out = c;
	return 0;
}

const char *aptix__statcache_get(struct aptix__statcache *c,
				 const char *path, const struct stat *st)
{
	struct sc_entry key, now, *e;

	if (!c || !c->nold)
		return NULL;
	memset(&key, 0, sizeof(key));
	key.path = (char *)path;
	e = bsearch(&key, c->old, c->nold, sizeof(*c->old), entry_cmp);
	if (!e)
		return NULL;
	fill(&now, st);
	if (e->size != now.size || e->mtime != now.mtime ||
	    e->ctime != now.ctime || e->ino != now.ino || e->dev != now.dev)
		return NULL;
	/* racy: changed in the tick the cache was written in, or after */
	if (e->mtime >= c->written_ns)
		return NULL;
	e->used = 1;
	return e->sha;
}

int aptix__statcache_put(struct aptix__statcache *c, const char *path,
			 const struct stat *st, const char *sha256)
{
	struct sc_entry *e;

	if (!c)
		return 0;
	c->dirty = 1;
	if (aptix__grow(&c->fresh, &c->afresh, c->nfresh, sizeof(*c->fresh),
			64) < 0)
		return APTIX_ERROR;
	e = &c->fresh[c->nfresh];
	memset(e, 0, sizeof(*e));
	if (!(e->path = aptix__strdup(path)))
		return APTIX_ERROR;
	fill(e, st);
	memcpy(e->sha, sha256, 64);
	e->used = 1;
	c->nfresh++;
	return 0;
}

static void put_entry(aptix_buf *b, const struct sc_entry *e)
{
	aptix_buf_printf(b, "%s %llu %lld %lld %llu %llu ", e->sha,
			 (unsigned long long)e->size, (long long)e->mtime,
			 (long long)e->ctime, (unsigned long long)e->ino,
			 (unsigned long long)e->dev);
	aptix_buf_puts(b, e->path);
	aptix_buf_putc(b, '\0');
}

void aptix__statcache_save(struct aptix__statcache *c)
{
	aptix_buf b = APTIX_BUF_INIT, tmp = APTIX_BUF_INIT;
	struct sc_entry **v = NULL;
	size_t i, n = 0;
	int fd = -1, ok = 0;

	if (!c)
		return;
	for (i = 0; i < c->nold; i++)
		if (!c->old[i].used)
			c->dirty = 1;	/* an entry to forget */
	if (!c->dirty)
		return;
	if (!(v = aptix__calloc(c->nold + c->nfresh + 1, sizeof(*v))))
		goto done;
	for (i = 0; i < c->nold; i++)
		if (c->old[i].used)
			v[n++] = &c->old[i];
	for (i = 0; i < c->nfresh; i++)
		if (c->fresh[i].mtime < c->now_ns - RACY_SLACK_NS)
			v[n++] = &c->fresh[i];
	aptix_buf_puts(&b, STATCACHE_MAGIC);
	for (i = 0; i < n; i++)
		put_entry(&b, v[i]);
	aptix_buf_printf(&tmp, "%s.tmp%ld", c->file, (long)getpid());
	if (aptix_buf_oom(&b) || aptix_buf_oom(&tmp))
		goto done;
	/* file names are the user's: 0600, as the store's other files */
	fd = open(tmp.ptr, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC |
		  O_NOFOLLOW, 0600);
	if (fd < 0 || fchmod(fd, 0600) < 0)
		goto done;
	for (i = 0; i < b.len;) {
		ssize_t w = write(fd, b.ptr + i, b.len - i);

		if (w < 0 && errno == EINTR)
			continue;
		if (w <= 0)
			goto done;
		i += (size_t)w;
	}
	if (close(fd) < 0) {
		fd = -1;
		goto done;
	}
	fd = -1;
	ok = rename(tmp.ptr, c->file) == 0;
done:
	if (fd >= 0)
		close(fd);
	if (!ok && tmp.len)
		unlink(tmp.ptr);
	free(v);
	aptix_buf_release(&b);
	aptix_buf_release(&tmp);
	aptix_error_clear();
}

void aptix__statcache_free(struct aptix__statcache *c)
{
	size_t i;

	if (!c)
		return;
	drop_old(c);
	for (i = 0; i < c->nfresh; i++)
		free(c->fresh[i].path);
	free(c->fresh);
	free(c->file);
	free(c);
}
