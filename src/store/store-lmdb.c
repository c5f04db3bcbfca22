/*
 * src/store/store-lmdb.c - the LMDB implementation of the store backend.
 *
 * Every LMDB call of the library lives here. One environment per process
 * and store: opening a store that this process has open already shares
 * its environment (LMDB forbids two in one process). Each thread has its
 * own read transaction, renewed for each call so that readers always see
 * the last commit and never pin old pages for long; a write is one short
 * transaction, replayed after growing the map when it fills.
 *
 * Growing the map (mdb_env_set_mapsize) is only allowed while no
 * transaction of the process is live: every transaction runs under the
 * read side of a lock whose write side the grower takes. A thread never
 * waits for that lock while it holds LMDB's writer mutex (a write
 * transaction is aborted first), so the two cannot deadlock.
 *
 * A store whose files the user cannot write (a read-only mount, another
 * user's files) is opened read-only: reads work, writes fail with a
 * clear error.
 *
 * A damaged data.mdb need not kill the process. liblmdb trusts the file:
 * a page number past the end of a truncated file is a SIGBUS, a damaged
 * page a SIGSEGV or a failed assertion (abort). So (1) opening checks
 * the file against the meta page LMDB will use (its last page must be
 * in the file); (2) every LMDB call, and every callback that reads a
 * value in the map, runs under a guard: a SIGSEGV or SIGBUS whose
 * address lies in this store's map, or an LMDB assertion (through
 * mdb_env_set_assert), jumps back to the guard (siglongjmp), which
 * returns APTIX_ECORRUPT. This is sound because such a fault is a read
 * of the map by code that holds no lock and is in no allocator: LMDB's
 * read paths only compute on the map, and a callback only copies or
 * parses a value. A fault anywhere else (a bug, not a damaged file) is
 * not contained: the handler gives it to the previous disposition. The
 * handler is installed only when the program asks for it
 * (aptix_fault_guard_install(): the aptix command does, first thing);
 * the library itself never touches a signal disposition. After
 * a contained fault the read transaction is reset (that writes only the
 * reader slot) and a write transaction aborted (that frees memory and
 * unlocks the writer mutex); the store then refuses writes, as its
 * pages cannot be trusted. (3) A value is handed to a callback only
 * when it lies inside the file. fsck's page walk (lmdb-file.c) reads
 * the file with pread, not the map, so it cannot fault at all.
 * Compaction (aptix purge) copies the environment without its free
 * pages (mdb_env_copy2 with MDB_CP_COMPACT) into a directory beside it,
 * under a write transaction so that nothing commits meanwhile, then
 * renames the copy over data.mdb and removes lock.mdb (the next opener
 * makes a fresh one for the new file). It refuses while another process
 * has the environment open: LMDB's processes hold a shared fcntl lock
 * on the first byte of lock.mdb as long as they have it open.
 *
 * Values in append order (store format 4). Objects and session records
 * are keyed by SHA-256 ids, so they land on random pages of their
 * B-trees, and a tree grown by random inserts keeps its leaves about
 * 69% full; a value too large for half a page took whole overflow pages
 * besides. So a value of 64 bytes or more of the objects table, and of
 * 1,024 bytes or more of the sessions and timeline tables (session
 * records; see table_logged), is kept in the table "values" instead, as
 * pieces of at most 2,000 bytes (under LMDB's node limit: never an
 * overflow page) under consecutive be64
 * sequence numbers, appended (MDB_APPEND fills each page before starting
 * the next); the record in its own table is then a pointer: the byte
 * 0x00, the varint number of the first piece, the varint length. No
 * value of these tables starts with 0x00 (an object starts with its type,
 * 1 to 3; a session record with its version, 1 or more; the timeline's
 * values of formats 4 and older are empty), so stores of
 * older formats, whose values are all in place, read as they are. The
 * pieces of a value go with its record: replaced or deleted in the same
 * transaction. The values table is an implementation detail of this
 * backend: the slots above hand out whole values.
 *
 * Shared pieces (store format 5) packed values one after the other in
 * pieces of APTIX_LMDB_PIECE bytes, the table's last piece filled up by
 * the next write: a write read and rewrote bytes another had committed,
 * one lost piece lost every value with bytes in it, a value that went
 * left zeroed bytes in the pieces it shared that nothing recorded, and
 * nothing checked a value's bytes. Such stores still read as they are
 * (a pointer of three varints), and a value of theirs that goes is
 * still zeroed where it shares a piece.
 *
 * Checksummed values of their own (store format 6): each value again
 * has pieces of its own, appended, never written again, deleted with
 * their record (so that compaction gets their pages back), and its
 * pointer ends with the CRC-32 of the value (0x00, first, length, the
 * size of the first piece, be32 CRC; the first piece fills what is left
 * of its page: see page_room): a damaged or lost piece loses that value alone (and the values
 * based on it), and is reported, never read as another value. reindex
 * moves every value of an older store into this form (st_relayout).
 */
#include "util/common.h"
#include "aptix/sys/store_backend.h"
#include "aptix/repo.h"
#include "util/env.h"
#include "store/lmdb-file.h"
#include "object/zstream.h"
#include <lmdb.h>
#include <zlib.h>
#include <fcntl.h>
#include <inttypes.h>
#include <pthread.h>
#include <sched.h>
#include <setjmp.h>
#include <signal.h>
#include <stdio.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <unistd.h>

#define INITIAL_MAPSIZE ((size_t)64 << 20)
#define MAX_MAPSIZE_DEFAULT ((size_t)1 << 40)
/* Less free space than this after a short write: the disk is full. */
#define DISK_FULL_SLACK ((uint64_t)1 << 20)
/* Values in append order (see above): the smallest one, a piece's most. */
#define LOGGED_MIN 64
#define LOGGED_MIN_SESSIONS 1024
#define PIECE_MAX APTIX_LMDB_PIECE_MAX
#define VALUES_TABLE "values"
#define LOGGED_FORMAT 6
/*
 * A value this large is refused as "store is full" when it would leave
 * less than RESERVE_PAGES below the store's size limit: the last pages
 * are kept for small writes, so that a turn whose payloads do not fit
 * can still be recorded, failed, without them (run.c's fall_back).
 */
#define LARGE_VALUE ((size_t)16 << 10)
#define RESERVE_PAGES 64
/*
 * The pages of the map that reads made resident count in the process's
 * memory, with the ones the kernel maps around each fault: past this
 * many bytes they are let go (see map_note_reads).
 */
#define MAP_RESIDENT_MAX ((uint64_t)16 << 20)
#define MAP_CHECK_EVERY 256

/*
 * Functions called under a guard that change their locals: kept out of
 * the guard's frame, so that a siglongjmp can clobber none of them.
 */
#if defined(__GNUC__)
# define NOINLINE __attribute__((noinline))
#else
# define NOINLINE
#endif

static const char *const table_names[APTIX_TABLE__COUNT] = {
	"meta", "objects", "refs", "reflog", "sessions", "children",
	"conversations", "running", "rag", "timeline", "purged", "search",
	"recency", "imports"
};

/*
 * Tables added after the first stores were made: a read-only store
 * without one reads as if it were empty (a writable one gets it).
 */
static int table_optional(int t)
{
	return t == APTIX_TABLE_PURGED || t == APTIX_TABLE_SEARCH ||
		t == APTIX_TABLE_RECENCY || t == APTIX_TABLE_IMPORTS;
}

/*
 * The tables whose larger values live in the values table: the size
 * from which a value goes there, or 0 for none. A session record is
 * read by every listing (log reads thousands), and a second lookup for
 * each doubled the cost of `log --all`: records stay in place unless
 * they are large (one that holds a rolling summary's base, some 4 KB
 * every 32 turns, which took overflow pages).
 */
static size_t table_logged(int t)
{
	return t == APTIX_TABLE_OBJECTS ? LOGGED_MIN :
		t == APTIX_TABLE_SESSIONS || t == APTIX_TABLE_TIMELINE ?
		LOGGED_MIN_SESSIONS : 0;
}

/*
 * Keys that grow (a reflog's sequence, the timeline's time) are appended
 * when they are the table's last: pages then fill up. A refused append
 * (not the last key) changes nothing, and the put is made again as usual.
 */
static int table_grows(int t)
{
	return t == APTIX_TABLE_REFLOG || t == APTIX_TABLE_TIMELINE;
}

static int put_in_order(MDB_txn *txn, MDB_dbi dbi, int t, MDB_val *k,
			MDB_val *v)
{
	int rc = MDB_KEYEXIST;

	if (table_grows(t))
		rc = mdb_put(txn, dbi, k, v, MDB_APPEND);
	if (rc == MDB_KEYEXIST)
		rc = mdb_put(txn, dbi, k, v, 0);
	return rc;
}

/* The read state of one thread on one store. */
struct reader {
	struct lmdb_store *st;
	MDB_txn *txn;		/* reused read transaction */
	int live;		/* txn is live (and the map lock held) */
	int iter_depth;		/* iterations running on txn */
	int held;		/* read-side holds of the map lock */
	unsigned reads;		/* records read since map_note_reads looked */
	struct reader *prev, *next;
};

typedef struct lmdb_store {
	aptix_store parent;
	MDB_env *env;
	MDB_dbi dbi[APTIX_TABLE__COUNT];
	unsigned char absent[APTIX_TABLE__COUNT];	/* optional, missing */
	MDB_dbi values;			/* the pieces of logged values */
	int values_absent;		/* a read-only store of format < 4 */
	int compacted;			/* the files were replaced: read only */
	int lock_fd;			/* lock.mdb, once other_process ran */
	size_t max_mapsize;
	char *dir;
	int readonly;
	pthread_rwlock_t maplock;	/* read: a txn is live; write: resize */
	pthread_key_t key;		/* -> struct reader of this thread */
	pthread_mutex_t lock;		/* readers, refs */
	struct reader *readers;
	/* the process-wide registry of open stores */
	int refs;
	dev_t dev;
	ino_t ino;
	pid_t pid;
	struct lmdb_store *next_open;
	/* the map, for the fault guard and the value check (0: unknown) */
	char *map_lo, *map_hi;
	uint32_t psize;			/* its page size (0: unknown) */
	uint64_t other_pages;	/* resident file pages besides the map */
	uint64_t file_size;	/* data.mdb's size when last seen: atomic */
	volatile int damaged;		/* a fault was contained: no writes */
	struct aptix_store_wtxn *wtx;	/* the write running, in its thread */
	uint64_t replaced_look;	/* when a read last looked (ms): atomic */
} lmdb_store;

struct aptix_store_wtxn {
	lmdb_store *st;
	MDB_txn *txn;
	int map_full;
	uint64_t next_piece;	/* the values table's next key */
	int have_next;		/* next_piece is known */
	size_t room;		/* bytes left on the table's last page */
	int defer_sync;		/* no flush of its own (w_defer_sync) */
	int format_noted;	/* the meta format says LOGGED_FORMAT */
};

/* --- Containing faults on a damaged file ------------------------------ */

struct guard {
	sigjmp_buf jb;
	struct guard *prev;
	const char *lo, *hi;	/* the map (NULL: unknown) */
	int cb_depth;		/* callbacks running when it was pushed */
	int sig;		/* the signal, or 0 */
	char why[240];		/* the assertion */
};

static __thread struct guard *guard_top;
/* Callbacks (ours) running under guards: see on_fault. */
static __thread int cb_depth;
static struct sigaction old_segv, old_bus;
/* the guard's handlers are in place (aptix_fault_guard_install) */
static int handler_installed;
static pthread_mutex_t handler_lock = PTHREAD_MUTEX_INITIALIZER;

static void on_fault(int sig, siginfo_t *si, void *uc)
{
	struct guard *g = guard_top;
	const char *a = si ? (const char *)si->si_addr : NULL;
	struct sigaction *old = sig == SIGBUS ? &old_bus : &old_segv;

	/*
	 * Inside LMDB (no callback of ours running since the guard was
	 * pushed) any fault is a read steered by a damaged page; inside a
	 * callback only a read of the map is.
	 */
	if (g && (cb_depth == g->cb_depth || !g->lo ||
		  (a >= g->lo && a < g->hi))) {
		guard_top = g->prev;
		cb_depth = g->cb_depth;
		g->sig = sig;
		siglongjmp(g->jb, 1);
	}
	/* Not a read of a store's map: what would have happened anyway. */
	if ((old->sa_flags & SA_SIGINFO) && old->sa_sigaction) {
		old->sa_sigaction(sig, si, uc);
	} else if (old->sa_handler != SIG_DFL &&
		   old->sa_handler != SIG_IGN) {
		old->sa_handler(sig);
	} else {
		signal(sig, SIG_DFL);	/* the fault happens again, fatally */
	}
}

/*
 * The handlers are the caller's to install: the library never changes a
 * signal disposition on its own (an embedder may have handlers of its
 * own: a JVM, a sanitizer, a crash reporter). Without them a damaged
 * file's fault is fatal, as in any LMDB program.
 */
int aptix_fault_guard_install(void)
{
	struct sigaction sa;
	int r = 0;

	memset(&sa, 0, sizeof(sa));
	sa.sa_sigaction = on_fault;
	/* NODEFER: the guard's sigsetjmp need not save the mask */
	sa.sa_flags = SA_SIGINFO | SA_NODEFER | SA_ONSTACK;
	sigemptyset(&sa.sa_mask);
	pthread_mutex_lock(&handler_lock);
	if (!handler_installed) {
		if (sigaction(SIGSEGV, &sa, &old_segv) < 0) {
			aptix_error_set_os("cannot install the fault guard");
			r = APTIX_ERROR;
		} else if (sigaction(SIGBUS, &sa, &old_bus) < 0) {
			aptix_error_set_os("cannot install the fault guard");
			r = APTIX_ERROR;
			sigaction(SIGSEGV, &old_segv, NULL);
		} else {
			handler_installed = 1;
		}
	}
	pthread_mutex_unlock(&handler_lock);
	return r;
}

void aptix_fault_guard_remove(void)
{
	pthread_mutex_lock(&handler_lock);
	if (handler_installed) {
		sigaction(SIGSEGV, &old_segv, NULL);
		sigaction(SIGBUS, &old_bus, NULL);
		handler_installed = 0;
	}
	pthread_mutex_unlock(&handler_lock);
}

static void on_assert(MDB_env *env, const char *msg)
{
	struct guard *g = guard_top;

	(void)env;
	if (!g)
		return;		/* LMDB prints it and aborts */
	guard_top = g->prev;
	cb_depth = g->cb_depth;
	snprintf(g->why, sizeof(g->why), "%s", msg);
	siglongjmp(g->jb, 1);
}

static void guard_push(struct guard *g, const lmdb_store *st)
{
	g->prev = guard_top;
	g->lo = st->map_lo;
	g->hi = st->map_hi;
	g->cb_depth = cb_depth;
	g->sig = 0;
	g->why[0] = '\0';
	guard_top = g;
}

static void guard_pop(struct guard *g)
{
	guard_top = g->prev;
}

/*
 * GUARD(g, st): true on entry; after a contained fault control comes
 * back to it once more with the guard popped, and it is false.
 */
#define GUARD(g, st) (guard_push(&(g), (st)), sigsetjmp((g).jb, 0) == 0)

/*
 * A fault was contained, or a meta page is damaged: the store refuses
 * writes. Set by a reader's thread, read by a writer's: atomic.
 */
static void mark_damaged(lmdb_store *st)
{
	__atomic_store_n(&st->damaged, 1, __ATOMIC_RELEASE);
}

/* The error of a contained fault. */
static int fault_error(lmdb_store *st, const struct guard *g,
		       const char *what)
{
	const char *why = g->sig == SIGBUS ? "a page is missing from the "
		"file (was it truncated?)" : g->sig ? "a page reference is "
		"invalid" : g->why;

	mark_damaged(st);
	aptix_error_set(APTIX_ERROR_LMDB, "%s: store is corrupt: %s; run "
			"'aptix fsck', and 'aptix salvage <dir>' to copy what "
			"is readable", what, why);
	return APTIX_ECORRUPT;
}

/*
 * The map's address range, from /proc/self/maps (the mapping of
 * data.mdb): what the fault handler and in_file() compare with. Left
 * unknown (NULL) where there is no /proc.
 */
static void find_map(lmdb_store *st)
{
	FILE *f = fopen("/proc/self/maps", "re");
	char line[512];
	MDB_stat ms;

	st->map_lo = st->map_hi = NULL;
	st->psize = mdb_env_stat(st->env, &ms) ? 0 : ms.ms_psize;
	if (!f)
		return;
	while (fgets(line, sizeof(line), f)) {
		unsigned long lo, hi, off, ino;
		char *end;

		lo = strtoul(line, &end, 16);
		if (*end != '-')
			continue;
		hi = strtoul(end + 1, &end, 16);
		if (!strchr(end, ':'))
			continue;
		/* perms offset dev inode path */
		if (sscanf(end, " %*s %lx %*s %lu", &off, &ino) != 2)
			continue;
		if (off == 0 && ino == (unsigned long)st->ino && ino &&
		    strstr(line, "/data.mdb")) {
			st->map_lo = (char *)lo;
			st->map_hi = (char *)hi;
			break;
		}
	}
	fclose(f);
}

/* The file pages resident in the process (bytes), or 0 when unknown. */
static uint64_t file_resident(void)
{
	char buf[128];
	unsigned long size, resident, shared;
	ssize_t n;
	int fd = open("/proc/self/statm", O_RDONLY | O_CLOEXEC);

	if (fd < 0)
		return 0;
	n = read(fd, buf, sizeof(buf) - 1);
	close(fd);
	if (n <= 0)
		return 0;
	buf[n] = '\0';
	if (sscanf(buf, "%lu %lu %lu", &size, &resident, &shared) != 3)
		return 0;
	return (uint64_t)shared * (uint64_t)sysconf(_SC_PAGESIZE);
}

/*
 * A walk of a large store reads its pages through the map: each becomes
 * resident, with those the kernel maps around it, and stays so, so the
 * process would hold as much of data.mdb as it ever read (700 MB for a
 * `log --all` of a million sessions). As git unmaps pack windows past
 * core.packedGitLimit, every MAP_CHECK_EVERY records an iteration
 * reads, the file pages resident are looked at, and past
 * MAP_RESIDENT_MAX more than the rest of the process has, the map's are
 * dropped (MADV_DONTNEED). Only the walks that read each page once
 * count: those of the timeline, the children index, the refs and the
 * reflogs, whose records are read in key order, in place, and iter_all (st_iter_all:
 * the values table in its order). Lookups, or iter's walk of the
 * objects (whose values are in the values table, at random places)
 * would fault each page in again, at many times the cost (fsck
 * --connectivity-only of a million sessions took 2.4 times as long
 * that way, before it used iter_all).
 * The map is read-only and shared: nothing is lost, a page read again
 * is mapped again from the page cache, and pointers into the map stay
 * valid. Called with a read transaction live (the map cannot move).
 */
static void map_note_reads(lmdb_store *st, struct reader *r, unsigned n)
{
#ifdef MADV_DONTNEED
	uint64_t res, other;

	if ((r->reads += n) < MAP_CHECK_EVERY || !st->map_lo)
		return;
	r->reads = 0;
	res = file_resident();
	other = __atomic_load_n(&st->other_pages, __ATOMIC_RELAXED);
	if (!res || res <= other + MAP_RESIDENT_MAX)
		return;
	if (madvise(st->map_lo, (size_t)(st->map_hi - st->map_lo),
		    MADV_DONTNEED) == 0)
		__atomic_store_n(&st->other_pages, file_resident(),
				 __ATOMIC_RELAXED);
#else
	(void)st;
	(void)r;
	(void)n;
#endif
}

/* Threads read and refresh it at once: relaxed atomics, a size only. */
static uint64_t file_size(const lmdb_store *st)
{
	return __atomic_load_n(&st->file_size, __ATOMIC_RELAXED);
}

static void refresh_file_size(lmdb_store *st)
{
	struct stat sb;
	int fd;

	if (mdb_env_get_fd(st->env, &fd) == 0 && fstat(fd, &sb) == 0)
		__atomic_store_n(&st->file_size, (uint64_t)sb.st_size,
				 __ATOMIC_RELAXED);
}

/*
 * A value LMDB returned lies inside the file (else it is damage). In a
 * write transaction a value outside the map is on a dirty page (memory
 * of the transaction), and that is fine.
 */
static int in_file(lmdb_store *st, const void *p, size_t len, int writing)
{
	const char *c = p;

	if (!st->map_lo || !len)
		return 1;
	if (writing && (c < st->map_lo || c >= st->map_hi))
		return 1;
	if (c < st->map_lo || c > st->map_hi ||
	    len > (size_t)(st->map_hi - c))
		return 0;
	if ((uint64_t)(c - st->map_lo) + len <= file_size(st))
		return 1;
	refresh_file_size(st);	/* another process made it grow? */
	return (uint64_t)(c - st->map_lo) + len <= file_size(st);
}

static int outside_file(void)
{
	aptix_error_set(APTIX_ERROR_LMDB, "store is corrupt: a value lies "
			"outside data.mdb");
	return APTIX_ECORRUPT;
}

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

static void map_rdlock(struct reader *r)
{
	if (r->held++ == 0)
		pthread_rwlock_rdlock(&r->st->maplock);
}

static void map_rdunlock(struct reader *r)
{
	if (--r->held == 0)
		pthread_rwlock_unlock(&r->st->maplock);
}

/*
 * Follow a map grown by another process, or grow it: only with no live
 * transaction in the process. size 0: adopt the size on disk.
 */
static int set_mapsize(struct reader *r, size_t size)
{
	lmdb_store *st = r->st;
	int rc;

	if (r->held) {
		aptix_error_set(APTIX_ERROR_LMDB, "cannot resize the store map "
				"while this thread reads it");
		return APTIX_EFULL;
	}
	pthread_rwlock_wrlock(&st->maplock);
	rc = mdb_env_set_mapsize(st->env, size);
	find_map(st);
	pthread_rwlock_unlock(&st->maplock);
	return rc ? lmdb_error(rc, "cannot resize map") : 0;
}

static void reader_destroy(void *p)
{
	struct reader *r = p;
	lmdb_store *st = r->st;

	/* not while store_reopen closes the environment of r->txn */
	map_rdlock(r);
	pthread_mutex_lock(&st->lock);
	if (r->prev)
		r->prev->next = r->next;
	else
		st->readers = r->next;
	if (r->next)
		r->next->prev = r->prev;
	pthread_mutex_unlock(&st->lock);
	if (r->txn)
		mdb_txn_abort(r->txn);
	while (r->held)
		map_rdunlock(r);
	free(r);
}

static struct reader *reader_of(lmdb_store *st)
{
	struct reader *r = pthread_getspecific(st->key);

	if (r)
		return r;
	if (!(r = aptix__calloc(1, sizeof(*r))))
		return NULL;
	r->st = st;
	if (pthread_setspecific(st->key, r)) {
		free(r);
		aptix_error_set(APTIX_ERROR_OS, "cannot set thread state");
		return NULL;
	}
	pthread_mutex_lock(&st->lock);
	r->next = st->readers;
	if (r->next)
		r->next->prev = r;
	st->readers = r;
	pthread_mutex_unlock(&st->lock);
	return r;
}

/*
 * The meta page a transaction starts from, checked in the map: the file
 * can be damaged under a running process (a server runs for days), and
 * LMDB would then read an empty or a wrong tree, or fail an assertion.
 */
/* One look at the meta page LMDB picks, under the guard. */
static int meta_look(lmdb_store *st)
{
	struct guard g;
	int rc;

	if (!GUARD(g, st))
		return fault_error(st, &g, "cannot begin read transaction");
	rc = aptix_lmdb_map_meta_check((const unsigned char *)st->map_lo,
				       st->psize);
	guard_pop(&g);
	return rc;
}

static int meta_check(lmdb_store *st)
{
	int rc = 0, tries;

	if (!st->map_lo || !st->psize)
		return 0;
	/*
	 * A commit (another thread's, another process's) may be writing
	 * the meta page being read, and a page read half written is not
	 * damaged: a damaged page fails every look, a torn read does not.
	 */
	for (tries = 0; tries < 3; tries++) {
		if ((rc = meta_look(st)) == 0) {
			if (tries)
				aptix_error_clear();
			return 0;
		}
		if (rc != APTIX_ECORRUPT || __atomic_load_n(&st->damaged,
							   __ATOMIC_ACQUIRE))
			return rc;	/* a contained fault */
		sched_yield();
	}
	mark_damaged(st);
	return rc;
}

static int replaced_since_open(const lmdb_store *st);
static int store_reopen(struct reader *r, int wait);

/*
 * A process that runs for long (a server) follows a compaction by
 * another process (see store_reopen): its reads look for a replaced
 * file at most once a second, and reopen it when no transaction is live
 * in the process (else the next look does).
 */
static void reads_follow_compaction(struct reader *r)
{
	lmdb_store *st = r->st;
	struct timespec ts;
	uint64_t now, last;

	if (r->held || st->readonly || st->compacted ||
	    clock_gettime(CLOCK_MONOTONIC_COARSE, &ts) < 0)
		return;
	now = (uint64_t)ts.tv_sec * 1000 + (uint64_t)ts.tv_nsec / 1000000;
	last = __atomic_load_n(&st->replaced_look, __ATOMIC_RELAXED);
	if (now - last < 1000 ||
	    !__atomic_compare_exchange_n(&st->replaced_look, &last, now, 0,
					 __ATOMIC_RELAXED, __ATOMIC_RELAXED))
		return;
	if (replaced_since_open(st) && store_reopen(r, 0) < 0)
		aptix_error_clear();	/* the old file still reads */
}

/* Begin (or renew) this thread's read transaction. */
static int rtxn_begin(lmdb_store *st, struct reader **out)
{
	struct reader *r = reader_of(st);
	int rc, retried = 0;

	if (!(*out = r))
		return APTIX_ERROR;
	/*
	 * Reads made by an iteration's callback use the iteration's
	 * snapshot: resetting the transaction would pull it from under
	 * the cursor.
	 */
	if (r->iter_depth && r->live)
		return 0;
	if (r->live) {
		mdb_txn_reset(r->txn);
		r->live = 0;
		map_rdunlock(r);
	}
	reads_follow_compaction(r);
	for (;;) {
		map_rdlock(r);
		if (r->txn)
			rc = mdb_txn_renew(r->txn);
		else
			rc = mdb_txn_begin(st->env, NULL, MDB_RDONLY, &r->txn);
		if (rc == 0) {
			r->live = 1;
			if ((rc = meta_check(st)) < 0) {
				mdb_txn_reset(r->txn);
				r->live = 0;
				map_rdunlock(r);
			}
			return rc;
		}
		if (r->txn) {
			mdb_txn_abort(r->txn);
			r->txn = NULL;
		}
		map_rdunlock(r);
		if (rc == MDB_MAP_RESIZED) {
			if ((rc = set_mapsize(r, 0)) < 0)
				return rc;
			continue;
		}
		if (rc == MDB_READERS_FULL && !retried++) {
			/* slots of dead processes: free them, try again */
			mdb_reader_check(st->env, NULL);
			continue;
		}
		return lmdb_error(rc, "cannot begin read transaction");
	}
}

static void rtxn_end(struct reader *r)
{
	if (r && r->live && !r->iter_depth) {
		mdb_txn_reset(r->txn);
		r->live = 0;
		map_rdunlock(r);
	}
}

/* --- Values in append order (see the file comment) -------------------- */

static int corrupt_pointer(void)
{
	aptix_error_set(APTIX_ERROR_LMDB, "store is corrupt: a record points "
			"into the values table with a malformed pointer");
	return APTIX_ECORRUPT;
}

static int missing_piece(uint64_t first, size_t i, size_t n)
{
	aptix_error_set(APTIX_ERROR_LMDB, "store is corrupt: piece %zu of "
			"%zu of the value (values table, key %" PRIu64 ") is "
			"missing or of the wrong size", i + 1, n, first + i);
	return APTIX_ECORRUPT;
}

/*
 * A record of a logged table: 1 with the pointer's fields when it
 * points into the values table, 0 when it holds its value, ECORRUPT
 * when it starts as a pointer but is none.
 */
static int read_pointer(struct aptix_lmdb_ptr *p, const void *rec,
			size_t rlen)
{
	int r = aptix_lmdb__read_pointer(p, rec, rlen);

	return r < 0 ? corrupt_pointer() : r;
}

static size_t piece_count(size_t len)
{
	return (len + PIECE_MAX - 1) / PIECE_MAX;
}

/* Piece num of the values table, into *v: 0, MDB_NOTFOUND, or another. */
static int get_piece(MDB_txn *txn, MDB_dbi values, uint64_t num, MDB_val *v)
{
	unsigned char kb[8];
	MDB_val k = { 8, kb };

	aptix__put_be64(kb, num);
	return mdb_get(txn, values, &k, v);
}

/* zlib's CRC-32 of a value of any length (crc32 takes a uInt). */
static uint32_t value_crc(const void *val, size_t len)
{
	const unsigned char *p = val;
	uLong crc = crc32(0L, Z_NULL, 0);

	while (len) {
		uInt n = len > (1u << 30) ? (1u << 30) : (uInt)len;

		crc = crc32(crc, p, n);
		p += n;
		len -= n;
	}
	return (uint32_t)crc;
}

/* A value of format 6 whose bytes are not those its pointer names. */
static int check_crc(const struct aptix_lmdb_ptr *p, const MDB_val *v)
{
	if (!p->has_crc || value_crc(v->mv_data, v->mv_size) == p->crc)
		return 0;
	aptix_error_set(APTIX_ERROR_LMDB, "store is corrupt: the value in "
			"pieces %" PRIu64 "-%" PRIu64 " of the values table "
			"fails its checksum", p->first,
			p->first + aptix_lmdb__ptr_pieces(p) - 1);
	return APTIX_ECORRUPT;
}

/*
 * The value a record of a logged table stands for, in *out: the record
 * itself, or its pieces (one piece: as LMDB gives it, in the map; more:
 * copied into tmp). Runs under the caller's guard.
 */
static NOINLINE int resolve(lmdb_store *st, MDB_txn *txn, int writing,
		   const MDB_val *rec, MDB_val *out, aptix_buf *tmp)
{
	MDB_val v;
	struct aptix_lmdb_ptr p;
	size_t i, n, start, len;
	int r = read_pointer(&p, rec->mv_data, rec->mv_size);
	int rc;

	if (r <= 0) {
		*out = *rec;
		return r;
	}
	n = aptix_lmdb__ptr_pieces(&p);
	if (st->values_absent)
		return missing_piece(p.first, 0, n);
	aptix_buf_clear(tmp);
	for (i = 0, r = 0; i < n && r == 0; i++) {
		rc = get_piece(txn, st->values, p.first + i, &v);
		if (rc && rc != MDB_NOTFOUND)
			r = lmdb_error(rc, "cannot read store");
		else if (rc || aptix_lmdb__ptr_piece(&p, i, v.mv_size, &start,
						     &len) < 0)
			r = missing_piece(p.first, i, n);
		else if (!in_file(st, v.mv_data, v.mv_size, writing))
			r = outside_file();
		else if (n == 1) {	/* as LMDB gives it, in the map */
			out->mv_data = (char *)v.mv_data + start;
			out->mv_size = len;
			return check_crc(&p, out);
		} else if (aptix_buf_put(tmp, (char *)v.mv_data + start,
					 len) < 0)
			r = APTIX_ERROR;
	}
	out->mv_data = tmp->ptr;
	out->mv_size = tmp->len;
	return r ? r : check_crc(&p, out);
}

/*
 * Values fill their pages (format 6): a value's first piece takes what
 * is left on the values table's last leaf page, its next ones 2,000
 * bytes (two fill a page but for 44 bytes). The room left is read from
 * the page's header (LMDB 0.9: lower and upper bounds of its free space
 * at bytes 12 and 14) while the page is still in the map, that is
 * before this write changes it, and then kept by counting what the
 * write appends, as LMDB lays it out: a node of 8 bytes of header, the
 * 8-byte key and the data, rounded up to an even size, and its 2-byte
 * slot. Counting wrong costs room, never a value: a piece that does not
 * fit starts the next page.
 */
#define PAGE_HDR 16
#define NODE_COST(d) ((8 + 8 + (d) + 1) / 2 * 2 + 2)
#define PIECE_LEAST 64

static size_t page_room(const lmdb_store *st, const void *data)
{
	const char *c = data;
	const unsigned char *pg;
	uint16_t lower, upper;

	if (!st->map_lo || !st->psize || c < st->map_lo || c >= st->map_hi)
		return 0;
	pg = (const unsigned char *)st->map_lo +
		(size_t)(c - st->map_lo) / st->psize * st->psize;
	memcpy(&lower, pg + 12, 2);
	memcpy(&upper, pg + 14, 2);
	return upper > lower && upper <= st->psize ? upper - lower : 0;
}

/* The values table's next key, found once per write transaction. */
static int next_piece(aptix_store_wtxn *w, uint64_t *out)
{
	MDB_cursor *c;
	MDB_val k, v;
	int rc;

	if (!w->have_next) {
		if ((rc = mdb_cursor_open(w->txn, w->st->values, &c)))
			return lmdb_error(rc, "cannot open cursor");
		rc = mdb_cursor_get(c, &k, &v, MDB_LAST);
		mdb_cursor_close(c);
		if (rc == MDB_NOTFOUND)
			w->next_piece = 0;
		else if (rc)
			return lmdb_error(rc, "cannot read store");
		else if (k.mv_size != 8 ||
			 aptix__get_be64(k.mv_data) == UINT64_MAX) {
			aptix_error_set(APTIX_ERROR_LMDB, "store is corrupt: "
					"the last key of the values table is "
					"not a piece's");
			return APTIX_ECORRUPT;
		}
		else
			w->next_piece = aptix__get_be64(k.mv_data) + 1;
		w->room = rc == 0 ? page_room(w->st, v.mv_data) : 0;
		w->have_next = 1;
	}
	*out = w->next_piece;
	return 0;
}

/*
 * The first pointer a store gets raises its format to 6 (pieces of a
 * value's own with a checksum; 5 shared pieces, 4 had pieces of their
 * own and no checksum) in the same write, so that an older aptix
 * refuses the store ("upgrade aptix") instead of calling its records
 * corrupt. (The format names the layout
 * of the whole store; this is the one place that knows this part.)
 */
static int note_format(aptix_store_wtxn *w)
{
	static const char key[] = "format";
	MDB_val k = { sizeof(key) - 1, (void *)key }, v;
	char cur[16], fmt[16];
	int rc;

	if (w->format_noted)
		return 0;
	rc = mdb_get(w->txn, w->st->dbi[APTIX_TABLE_META], &k, &v);
	if (rc == 0 && v.mv_size < sizeof(cur)) {
		memcpy(cur, v.mv_data, v.mv_size);
		cur[v.mv_size] = '\0';
		if (strtol(cur, NULL, 10) < LOGGED_FORMAT) {
			snprintf(fmt, sizeof(fmt), "%d", LOGGED_FORMAT);
			v.mv_data = fmt;
			v.mv_size = strlen(fmt);
			rc = mdb_put(w->txn, w->st->dbi[APTIX_TABLE_META], &k,
				     &v, 0);
		}
	} else if (rc == MDB_NOTFOUND) {
		rc = 0;		/* being made: init writes the format */
	}
	if (rc == MDB_MAP_FULL || rc == MDB_TXN_FULL)
		w->map_full = 1;
	if (rc && rc != MDB_BAD_VALSIZE)
		return lmdb_error(rc, "cannot write to store");
	w->format_noted = 1;
	return 0;
}

static int piece_error(aptix_store_wtxn *w, int rc, const char *what)
{
	if (rc == MDB_MAP_FULL || rc == MDB_TXN_FULL)
		w->map_full = 1;
	return lmdb_error(rc, what);
}

/*
 * Drop the value the record at k points to, if it is a pointer: a piece
 * that holds only its bytes is deleted (every piece of formats 4 and 6);
 * in one it shares (format 5, not yet reindexed) its bytes are zeroed,
 * so that none of them stays in the tree.
 */
static NOINLINE int drop_pieces(aptix_store_wtxn *w, MDB_dbi dbi, MDB_val *k)
{
	unsigned char kb[8];
	MDB_val pk = { 8, kb }, old, pv;
	struct aptix_lmdb_ptr p;
	aptix_buf tmp = APTIX_BUF_INIT;
	size_t i, n, start, len;
	int rc = mdb_get(w->txn, dbi, k, &old), r;

	if (rc == MDB_NOTFOUND)
		return 0;
	if (rc)
		return lmdb_error(rc, "cannot read store");
	if ((r = read_pointer(&p, old.mv_data, old.mv_size)) < 0)
		aptix_error_clear();	/* damaged: nothing it names is kept */
	if (r <= 0)
		return 0;
	n = aptix_lmdb__ptr_pieces(&p);
	for (i = 0, r = 0; i < n && !r; i++) {
		aptix__put_be64(kb, p.first + i);
		rc = mdb_get(w->txn, w->st->values, &pk, &pv);
		if (rc == MDB_NOTFOUND)
			continue;
		if (rc) {
			r = lmdb_error(rc, "cannot read store");
			break;
		}
		if (aptix_lmdb__ptr_piece(&p, i, pv.mv_size, &start,
					  &len) < 0)
			continue;	/* damaged: other values may share it */
		if (start == 0 && len == pv.mv_size) {
			rc = mdb_del(w->txn, w->st->values, &pk, NULL);
			if (rc && rc != MDB_NOTFOUND)
				r = piece_error(w, rc, "cannot delete from "
						"store");
			continue;
		}
		aptix_buf_clear(&tmp);
		if (aptix_buf_put(&tmp, pv.mv_data, pv.mv_size) < 0) {
			r = APTIX_ERROR;
			break;
		}
		memset(tmp.ptr + start, 0, len);
		pv.mv_data = tmp.ptr;
		rc = mdb_put(w->txn, w->st->values, &pk, &pv, 0);
		if (rc)
			r = piece_error(w, rc, "cannot write to store");
	}
	aptix_buf_release(&tmp);
	return r;
}

/*
 * Is there room for a large value above the reserve? (The pages the
 * last commit used, against the size limit: an estimate, since this
 * transaction may reuse free pages, and one that errs on the safe side.)
 * When there is none, the map is marked full: st_write grows it, or
 * says that the store is full.
 */
static int room_for(aptix_store_wtxn *w, size_t vlen)
{
	MDB_envinfo info;
	MDB_stat stat;
	uint64_t limit, need;

	if (mdb_env_info(w->st->env, &info) || mdb_env_stat(w->st->env, &stat))
		return 1;
	limit = info.me_mapsize / stat.ms_psize;
	if (w->st->max_mapsize / stat.ms_psize < limit)
		limit = w->st->max_mapsize / stat.ms_psize;
	need = (uint64_t)info.me_last_pgno + 1 + RESERVE_PAGES +
		piece_count(vlen) / 2 + 1;
	if (need <= limit)
		return 1;
	w->map_full = 1;
	lmdb_error(MDB_MAP_FULL, "cannot write to store");
	return 0;
}

/*
 * Append a value to the values table in pieces of its own (format 6):
 * no piece holds bytes of another value, and none is ever written again
 * (a value that goes takes its pieces with it). *first: where it starts.
 */
static int append_value(aptix_store_wtxn *w, const void *val, size_t vlen,
			uint64_t *first, size_t *head)
{
	unsigned char kb[8];
	MDB_val pk = { 8, kb }, v;
	const char *p = val;
	size_t left = vlen;
	int rc;

	*first = w->next_piece;
	*head = 0;
	while (left) {
		v.mv_size = left < PIECE_MAX ? left : PIECE_MAX;
		/* the room left on the page, when it is worth a piece */
		if (!*head && w->room >= NODE_COST(PIECE_LEAST) &&
		    NODE_COST(v.mv_size) > w->room)
			v.mv_size = w->room - NODE_COST(0);
		if (NODE_COST(v.mv_size) > w->room)
			w->room = w->st->psize > PAGE_HDR ?
				w->st->psize - PAGE_HDR : 0;
		w->room -= NODE_COST(v.mv_size) <= w->room ?
			NODE_COST(v.mv_size) : w->room;
		v.mv_data = (void *)p;
		aptix__put_be64(kb, w->next_piece);
		rc = mdb_put(w->txn, w->st->values, &pk, &v, MDB_APPEND);
		if (rc)
			return piece_error(w, rc, "cannot write to store");
		w->next_piece++;
		if (!*head)
			*head = v.mv_size;
		p += v.mv_size;
		left -= v.mv_size;
	}
	return 0;
}

/* Put a value of a logged table: its pieces, then the pointer to them. */
static NOINLINE int put_logged(aptix_store_wtxn *w, int t, MDB_val *k,
			       const void *val, size_t vlen)
{
	MDB_dbi dbi = w->st->dbi[t];
	MDB_val v;
	aptix_buf ptr = APTIX_BUF_INIT;
	uint64_t first = 0;
	size_t head = 0;
	unsigned char crc[4];
	int rc = 0, r;

	/*
	 * The next number is known before the old pieces go: a record that
	 * replaces the newest value does not hand its numbers to new bytes
	 * (a copy of the old pieces may still lie on a free page, where
	 * salvage could meet it).
	 */
	if (vlen >= table_logged(t) && (r = next_piece(w, &first)) < 0)
		return r;
	if ((r = drop_pieces(w, dbi, k)) < 0)
		return r;
	if (vlen < table_logged(t)) {
		v.mv_size = vlen;
		v.mv_data = (void *)val;
		rc = put_in_order(w->txn, dbi, t, k, &v);
		goto done;
	}
	if (vlen >= LARGE_VALUE && !room_for(w, vlen))
		return APTIX_EFULL;
	if ((r = note_format(w)) < 0 ||
	    (r = append_value(w, val, vlen, &first, &head)) < 0)
		return r;
	aptix__put_be32(crc, value_crc(val, vlen));
	aptix_buf_put(&ptr, "", 1);	/* APTIX_LMDB_PTR_MARK */
	aptix__put_varint(&ptr, first);
	aptix__put_varint(&ptr, vlen);
	aptix__put_varint(&ptr, head);
	aptix_buf_put(&ptr, crc, 4);
	if (aptix_buf_oom(&ptr)) {
		aptix_buf_release(&ptr);
		return APTIX_ERROR;
	}
	v.mv_size = ptr.len;
	v.mv_data = ptr.ptr;
	rc = put_in_order(w->txn, dbi, t, k, &v);
	aptix_buf_release(&ptr);
done:
	if (rc == MDB_MAP_FULL || rc == MDB_TXN_FULL)
		w->map_full = 1;
	return rc ? lmdb_error(rc, "cannot write to store") : 0;
}

static int st_view(aptix_store *s, aptix_table t, const void *key,
		   size_t klen, aptix_store_view_cb cb, void *payload)
{
	lmdb_store *st = (lmdb_store *)s;
	MDB_val k = { klen, (void *)key }, v;
	aptix_buf tmp = APTIX_BUF_INIT;
	struct reader *r;
	struct guard g;
	int rc;

	if (st->absent[t])
		return APTIX_ENOTFOUND;
	if ((rc = rtxn_begin(st, &r)) < 0)
		return rc;
	if (GUARD(g, st)) {
		rc = mdb_get(r->txn, st->dbi[t], &k, &v);
		if (rc)
			rc = rc == MDB_NOTFOUND ? APTIX_ENOTFOUND :
				lmdb_error(rc, "cannot read store");
		else if (!in_file(st, v.mv_data, v.mv_size, 0))
			rc = outside_file();
		else if (table_logged(t) &&
			 (rc = resolve(st, r->txn, 0, &v, &v, &tmp)) < 0)
			;
		else {
			cb_depth++;
			rc = cb(v.mv_data, v.mv_size, payload);
			cb_depth--;
		}
		guard_pop(&g);
	} else {
		rc = fault_error(st, &g, "cannot read store");
	}
	rtxn_end(r);
	aptix_buf_release(&tmp);
	return rc;
}

static int copy_cb(const void *val, size_t vlen, void *payload)
{
	return aptix_buf_set(payload, val, vlen);
}

static int st_get(aptix_buf *out, aptix_store *s, aptix_table t,
		  const void *key, size_t klen)
{
	return st_view(s, t, key, klen, copy_cb, out);
}

/*
 * writing: c belongs to a write transaction (see in_file); logged: the
 * table's records may point into the values table (tmp: for values of
 * several pieces).
 */
/*
 * The pieces a read walk resolves are read in a second read transaction
 * of the same snapshot: LMDB fails every later call of a transaction
 * that met a damaged page (MDB_BAD_TXN), and a damaged piece must cost
 * its value, not the rest of the walk. When that transaction fails, the
 * next value gets a fresh one; when no second one of the same snapshot
 * can be had (a write committed in between), the walk's own is used.
 */
struct piece_txn {
	MDB_txn *txn;
	int off;	/* use the walk's own */
};

static MDB_txn *piece_txn(lmdb_store *st, MDB_txn *walk,
			  struct piece_txn *pt)
{
	if (pt->off)
		return walk;
	if (!pt->txn &&
	    mdb_txn_begin(st->env, NULL, MDB_RDONLY, &pt->txn) != 0)
		pt->txn = NULL;
	if (pt->txn && mdb_txn_id(pt->txn) != mdb_txn_id(walk)) {
		mdb_txn_abort(pt->txn);
		pt->txn = NULL;
	}
	if (!pt->txn)
		pt->off = 1;
	return pt->txn ? pt->txn : walk;
}

static int cursor_walk_unguarded(lmdb_store *st, MDB_cursor *c, int writing,
				 aptix_table t, int logged, aptix_buf *tmp,
				 struct piece_txn *pt,
				 const void *start, size_t slen, int reverse,
				 aptix_store_iter_cb cb, void *payload)
{
	MDB_val k, v, val;
	MDB_txn *vtxn = mdb_cursor_txn(c);
	struct reader *rd = NULL;
	/*
	 * the tables a walk of the history (and of reachability) reads in
	 * order, values in place
	 */
	int trim = !writing && (t == APTIX_TABLE_TIMELINE ||
				t == APTIX_TABLE_CHILDREN ||
				t == APTIX_TABLE_REFS ||
				t == APTIX_TABLE_REFLOG);
	int rc, r = 0, stepped = 0;
	MDB_cursor_op op;

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
		if (!in_file(st, k.mv_data, k.mv_size, writing) ||
		    !in_file(st, v.mv_data, v.mv_size, writing))
			return outside_file();
		val = v;
		if (logged && !writing)
			vtxn = piece_txn(st, mdb_cursor_txn(c), pt);
		/*
		 * Pieces missing or damaged: the record as stored, which
		 * no reader takes for a value (none starts with 0x00), so
		 * that one damaged value does not end the walk.
		 */
		if (logged && (r = resolve(st, vtxn, writing, &v, &val,
					   tmp)) == APTIX_ECORRUPT) {
			aptix_error_clear();
			val = v;
			if (pt->txn) {	/* it may have met a damaged page */
				mdb_txn_abort(pt->txn);
				pt->txn = NULL;
			}
		} else if (r < 0) {
			return r;
		}
		cb_depth++;
		r = cb(k.mv_data, k.mv_size, val.mv_data, val.mv_size,
		       payload);
		cb_depth--;
		if (r)
			break;
		if (trim && stepped++ &&
		    (rd || (rd = pthread_getspecific(st->key))))
			map_note_reads(st, rd, 1);
		rc = mdb_cursor_get(c, &k, &v, reverse ? MDB_PREV : MDB_NEXT);
	}
	if (r == APTIX_ITEROVER)
		return 0;
	if (r)
		return r;
	if (rc && rc != MDB_NOTFOUND)
		return lmdb_error(rc, "cannot iterate store");
	return 0;
}

static int cursor_walk(lmdb_store *st, MDB_txn *txn, int writing,
		       aptix_table t, const void *start, size_t slen,
		       int reverse, aptix_store_iter_cb cb, void *payload)
{
	aptix_buf tmp = APTIX_BUF_INIT;
	MDB_cursor *volatile c = NULL;
	MDB_cursor *opened;
	struct piece_txn pt = { NULL, 0 };
	struct guard g;
	int rc;

	if (GUARD(g, st)) {
		/* opening reads pages too: a table's record in the main tree */
		rc = mdb_cursor_open(txn, st->dbi[t], &opened);
		if (rc) {
			rc = lmdb_error(rc, "cannot open cursor");
		} else {
			c = opened;
			rc = cursor_walk_unguarded(st, c, writing, t,
						   !!table_logged(t), &tmp,
						   &pt, start, slen, reverse,
						   cb, payload);
		}
		guard_pop(&g);
	} else {
		rc = fault_error(st, &g, "cannot iterate store");
	}
	if (c)
		mdb_cursor_close(c);	/* frees memory, reads no page */
	if (pt.txn)
		mdb_txn_abort(pt.txn);	/* likewise */
	aptix_buf_release(&tmp);
	return rc;
}

static int st_iter(aptix_store *s, aptix_table t, const void *start,
		   size_t slen, int reverse, aptix_store_iter_cb cb,
		   void *payload)
{
	lmdb_store *st = (lmdb_store *)s;
	struct reader *r;
	int rc;

	if (st->absent[t])
		return 0;
	if ((rc = rtxn_begin(st, &r)) < 0)
		return rc;
	r->iter_depth++;
	rc = cursor_walk(st, r->txn, 0, t, start, slen, reverse, cb,
			 payload);
	r->iter_depth--;
	rtxn_end(r);
	return rc;
}

/* --- Every record, values in the order of the file --------------------- */

/*
 * st_iter_all: a walk of every record of a table that reads each page
 * of the file once. The table's records come in key order, as iter
 * gives them, and each key goes to key_cb; a value kept in place (or of
 * an older format) goes to val_cb at once, as iter resolves it. A value
 * of its own in the values table (format 6: its pieces its own, its
 * pointer with the CRC) is only noted: the number of its record by the
 * key of its first piece (an array over the values table's keys, 8
 * bytes a key). Then the values table is read in its own order, each
 * noted value given as its first piece comes, its other pieces being
 * the next keys. So no value costs a lookup, and the pages of both
 * tables are read in one sweep each instead of a page fault for each
 * value (the values table is filled in the order of the writes, the
 * records by their ids), and the pages read are let go of every few
 * MB (map_note_reads): a walk of a million sessions held 1.3 GB of the
 * file and now holds tens of MB.
 * A value whose pieces are missing or fail the CRC comes as the byte
 * 0x00 (which no reader takes for a value, as iter's damaged ones).
 */
#define NOTED_MULTI 0x80000000u	/* num: a value of several pieces */
#define NOTED_SPAN(n) ((n) * 4 + 65536)	/* most keys of the array */

struct noted_walk {
	lmdb_store *st;
	struct reader *rd;
	aptix_store_numbered_cb key_cb, val_cb;
	void *payload;
	uint64_t lo, hi;	/* the values table's first and last keys */
	uint32_t *num;		/* by key - lo: 1 + the record's number */
	uint32_t *crc;		/* by key - lo: its value's CRC-32 */
	struct aptix_lmdb_ptr *multi;	/* of several pieces, by first */
	size_t nmulti, amulti;
	size_t noted;		/* values noted, not given yet */
	aptix_buf tmp;
	struct piece_txn pt;
	MDB_cursor *cs[2];	/* the table's, the values table's */
};

static const unsigned char damaged_value[1] = { APTIX_LMDB_PTR_MARK };

static int noted_give(struct noted_walk *w, aptix_store_numbered_cb cb,
		      uint64_t n, const MDB_val *k, const void *val,
		      size_t vlen)
{
	int r;

	cb_depth++;
	r = cb(n, k ? k->mv_data : NULL, k ? k->mv_size : 0, val, vlen,
	       w->payload);
	cb_depth--;
	map_note_reads(w->st, w->rd, 1);
	return r;
}

/* The array over the values table's keys, when it is not too large. */
static int noted_alloc(struct noted_walk *w, MDB_txn *txn, MDB_dbi dbi)
{
	MDB_cursor *c;
	MDB_val k, v;
	MDB_stat ms;
	size_t span;
	int rc;

	if (w->st->values_absent || mdb_stat(txn, dbi, &ms) ||
	    mdb_cursor_open(txn, w->st->values, &c))
		return 0;
	rc = mdb_cursor_get(c, &k, &v, MDB_FIRST);
	if (!rc && k.mv_size == 8)
		w->lo = aptix__get_be64(k.mv_data);
	if (!rc)
		rc = mdb_cursor_get(c, &k, &v, MDB_LAST);
	if (!rc && k.mv_size == 8)
		w->hi = aptix__get_be64(k.mv_data);
	mdb_cursor_close(c);
	if (rc || w->hi < w->lo || ms.ms_entries >= NOTED_MULTI - 1 ||
	    w->hi - w->lo >= NOTED_SPAN((uint64_t)ms.ms_entries))
		return 0;
	span = (size_t)(w->hi - w->lo + 1);
	w->num = calloc(span, sizeof(*w->num));
	w->crc = malloc(span * sizeof(*w->crc));
	if (!w->num || !w->crc) {
		free(w->num);
		free(w->crc);
		w->num = w->crc = NULL;
	}
	return 0;
}

/* Note record n's value for the second sweep: 1, or 0 (give it now). */
static int noted_add(struct noted_walk *w, uint64_t n, const MDB_val *rec)
{
	struct aptix_lmdb_ptr p;
	size_t at;

	if (!w->num || n + 1 >= NOTED_MULTI ||
	    aptix_lmdb__read_pointer(&p, rec->mv_data, rec->mv_size) != 1 ||
	    !p.has_crc || p.off || p.first < w->lo || p.first > w->hi ||
	    w->num[p.first - w->lo])
		return 0;
	at = (size_t)(p.first - w->lo);
	if (aptix_lmdb__ptr_pieces(&p) > 1) {
		if (w->nmulti == w->amulti) {
			size_t a = w->amulti ? w->amulti * 2 : 64;
			void *m = realloc(w->multi, a * sizeof(*w->multi));

			if (!m)
				return 0;
			w->multi = m;
			w->amulti = a;
		}
		w->multi[w->nmulti++] = p;
		w->num[at] = (uint32_t)(n + 1) | NOTED_MULTI;
	} else {
		w->num[at] = (uint32_t)(n + 1);
	}
	w->crc[at] = p.crc;
	w->noted++;
	return 1;
}

/* The first sweep: the table's records in key order. */
static NOINLINE int noted_keys(struct noted_walk *w, MDB_cursor *c, int t)
{
	MDB_val k, v, val;
	uint64_t n = 0;
	int rc, r = 0;

	for (rc = mdb_cursor_get(c, &k, &v, MDB_FIRST); rc == 0 && !r;
	     rc = mdb_cursor_get(c, &k, &v, MDB_NEXT), n++) {
		if (!in_file(w->st, k.mv_data, k.mv_size, 0) ||
		    !in_file(w->st, v.mv_data, v.mv_size, 0))
			return outside_file();
		if (w->key_cb)
			r = noted_give(w, w->key_cb, n, &k, NULL, 0);
		if (r || !w->val_cb || noted_add(w, n, &v))
			continue;
		val = v;
		if (table_logged(t) &&
		    (r = resolve(w->st, piece_txn(w->st, mdb_cursor_txn(c),
						  &w->pt), 0, &v, &val,
				 &w->tmp)) == APTIX_ECORRUPT) {
			aptix_error_clear();
			val = v;	/* as iter gives it */
			if (w->pt.txn) {
				mdb_txn_abort(w->pt.txn);
				w->pt.txn = NULL;
			}
		} else if (r < 0) {
			return r;
		}
		r = noted_give(w, w->val_cb, n, &k, val.mv_data, val.mv_size);
	}
	if (r)
		return r;
	return rc && rc != MDB_NOTFOUND ?
		lmdb_error(rc, "cannot iterate store") : 0;
}

static int multi_cmp(const void *a, const void *b)
{
	uint64_t x = ((const struct aptix_lmdb_ptr *)a)->first;
	uint64_t y = ((const struct aptix_lmdb_ptr *)b)->first;

	return x < y ? -1 : x > y;
}

/*
 * A value of several pieces, its first at the cursor: its pieces into
 * w->tmp, the cursor left on the key after them (*rc as
 * mdb_cursor_get's). 1; 0 when one is missing or of the wrong size (the
 * cursor then on the key that is not it); < 0 on error.
 */
static int noted_pieces(struct noted_walk *w, MDB_cursor *c, uint64_t first,
			int *rc)
{
	struct aptix_lmdb_ptr key, *p;
	MDB_val k, v;
	size_t i, n, start, len;

	memset(&key, 0, sizeof(key));
	key.first = first;
	p = bsearch(&key, w->multi, w->nmulti, sizeof(*w->multi), multi_cmp);
	if (!p)
		return 0;
	n = aptix_lmdb__ptr_pieces(p);
	aptix_buf_clear(&w->tmp);
	for (i = 0; i < n; i++) {
		if ((*rc = mdb_cursor_get(c, &k, &v, MDB_GET_CURRENT)) != 0)
			return 0;
		if (!in_file(w->st, v.mv_data, v.mv_size, 0))
			return outside_file();
		if (k.mv_size != 8 || aptix__get_be64(k.mv_data) != first + i ||
		    aptix_lmdb__ptr_piece(p, i, v.mv_size, &start, &len) < 0)
			return 0;
		if (aptix_buf_put(&w->tmp, (char *)v.mv_data + start, len) < 0)
			return APTIX_ERROR;
		*rc = mdb_cursor_get(c, &k, &v, MDB_NEXT);
	}
	return 1;
}

/* Give the value of record n (NULL: damaged) if its CRC is crc. */
static int noted_check(struct noted_walk *w, uint64_t n, const void *val,
		       size_t vlen, uint32_t crc)
{
	if (!val || !vlen || value_crc(val, vlen) != crc)
		return noted_give(w, w->val_cb, n, NULL, damaged_value, 1);
	return noted_give(w, w->val_cb, n, NULL, val, vlen);
}

/* The second sweep: the values table in its order, from w->lo. */
static NOINLINE int noted_values(struct noted_walk *w, MDB_cursor *c)
{
	unsigned char kb[8];
	MDB_val k = { 8, kb }, v;
	uint64_t at;
	uint32_t e;
	int rc, r = 0;

	aptix__put_be64(kb, w->lo);
	rc = mdb_cursor_get(c, &k, &v, MDB_SET_RANGE);
	while (rc == 0 && !r && w->noted) {
		if (!in_file(w->st, v.mv_data, v.mv_size, 0))
			return outside_file();
		if (k.mv_size != 8 || aptix__get_be64(k.mv_data) > w->hi)
			break;
		at = aptix__get_be64(k.mv_data) - w->lo;
		e = w->num[at];
		w->num[at] = 0;
		if (!e) {
			rc = mdb_cursor_get(c, &k, &v, MDB_NEXT);
			continue;
		}
		w->noted--;
		if (!(e & NOTED_MULTI)) {
			r = noted_check(w, e - 1, v.mv_data, v.mv_size,
					w->crc[at]);
			rc = mdb_cursor_get(c, &k, &v, MDB_NEXT);
			continue;
		}
		if ((r = noted_pieces(w, c, w->lo + at, &rc)) < 0)
			return r;
		r = noted_check(w, (e & ~NOTED_MULTI) - 1, r ? w->tmp.ptr :
				NULL, w->tmp.len, w->crc[at]);
		if (rc == 0)
			rc = mdb_cursor_get(c, &k, &v, MDB_GET_CURRENT);
	}
	if (r)
		return r;
	if (rc && rc != MDB_NOTFOUND)
		return lmdb_error(rc, "cannot iterate store");
	/* values whose first piece was not there */
	for (at = 0; w->noted && at <= w->hi - w->lo && !r; at++)
		if ((e = w->num[at] & ~NOTED_MULTI) != 0) {
			w->noted--;
			r = noted_give(w, w->val_cb, e - 1, NULL,
				       damaged_value, 1);
		}
	return r;
}

/* Both sweeps, under the guard. */
static NOINLINE int noted_walk_unguarded(struct noted_walk *w, int t)
{
	MDB_cursor **cs = w->cs;
	MDB_txn *txn = w->rd->txn;
	int rc;

	if (w->val_cb && table_logged(t) && (rc = noted_alloc(w, txn,
							      w->st->dbi[t])) < 0)
		return rc;
	if ((rc = mdb_cursor_open(txn, w->st->dbi[t], &cs[0])) != 0)
		return lmdb_error(rc, "cannot open cursor");
	if ((rc = noted_keys(w, cs[0], t)) != 0 || !w->noted)
		return rc;
	if (w->nmulti)
		qsort(w->multi, w->nmulti, sizeof(*w->multi), multi_cmp);
	if ((rc = mdb_cursor_open(txn, w->st->values, &cs[1])) != 0)
		return lmdb_error(rc, "cannot open cursor");
	return noted_values(w, cs[1]);
}

static int st_iter_all(aptix_store *s, aptix_table t,
		       aptix_store_numbered_cb key_cb,
		       aptix_store_numbered_cb val_cb, void *payload)
{
	lmdb_store *st = (lmdb_store *)s;
	struct noted_walk w;
	struct guard g;
	int rc;

	if (st->absent[t])
		return 0;
	memset(&w, 0, sizeof(w));
	w.st = st;
	w.key_cb = key_cb;
	w.val_cb = val_cb;
	w.payload = payload;
	aptix_buf_init(&w.tmp, 0);
	if ((rc = rtxn_begin(st, &w.rd)) < 0)
		return rc;
	w.rd->iter_depth++;
	if (GUARD(g, st)) {
		rc = noted_walk_unguarded(&w, t);
		guard_pop(&g);
	} else {
		rc = fault_error(st, &g, "cannot iterate store");
	}
	if (w.cs[0])
		mdb_cursor_close(w.cs[0]);	/* frees memory, reads no page */
	if (w.cs[1])
		mdb_cursor_close(w.cs[1]);
	if (w.pt.txn)
		mdb_txn_abort(w.pt.txn);
	w.rd->iter_depth--;
	rtxn_end(w.rd);
	free(w.num);
	free(w.crc);
	free(w.multi);
	aptix_buf_release(&w.tmp);
	return rc == APTIX_ITEROVER ? 0 : rc;
}

static int w_get(aptix_buf *out, aptix_store_wtxn *w, aptix_table t,
		 const void *key, size_t klen)
{
	MDB_val k = { klen, (void *)key }, v;
	struct guard g;
	int rc;

	if (!GUARD(g, w->st))
		return fault_error(w->st, &g, "cannot read store");
	rc = mdb_get(w->txn, w->st->dbi[t], &k, &v);
	if (rc)
		rc = rc == MDB_NOTFOUND ? APTIX_ENOTFOUND :
			lmdb_error(rc, "cannot read store");
	else if (!in_file(w->st, v.mv_data, v.mv_size, 1))
		rc = outside_file();
	else if (table_logged(t) &&
		 (rc = resolve(w->st, w->txn, 1, &v, &v, out)) < 0)
		;
	else if (table_logged(t) && v.mv_data == out->ptr)
		rc = 0;		/* pieces, put together in out */
	else
		rc = aptix_buf_set(out, v.mv_data, v.mv_size);
	guard_pop(&g);
	return rc;
}

static int w_put(aptix_store_wtxn *w, aptix_table t, const void *key,
		 size_t klen, const void *val, size_t vlen)
{
	MDB_val k = { klen, (void *)key }, v = { vlen, (void *)val };
	struct guard g;
	int rc;

	if (klen == 0 || klen > 511) {
		aptix_error_set(APTIX_ERROR_LMDB, "key of %zu bytes is invalid",
				klen);
		return APTIX_EINVALID;
	}
	if (!GUARD(g, w->st))
		return fault_error(w->st, &g, "cannot write to store");
	if (table_logged(t)) {
		rc = put_logged(w, t, &k, val, vlen);
		guard_pop(&g);
		return rc;
	}
	rc = put_in_order(w->txn, w->st->dbi[t], t, &k, &v);
	guard_pop(&g);
	if (rc == MDB_MAP_FULL || rc == MDB_TXN_FULL)
		w->map_full = 1;
	return rc ? lmdb_error(rc, "cannot write to store") : 0;
}

static int w_del(aptix_store_wtxn *w, aptix_table t, const void *key,
		 size_t klen)
{
	MDB_val k = { klen, (void *)key };
	struct guard g;
	int rc, r;

	if (!GUARD(g, w->st))
		return fault_error(w->st, &g, "cannot delete from store");
	if (table_logged(t) && (r = drop_pieces(w, w->st->dbi[t], &k)) < 0) {
		guard_pop(&g);
		return r;
	}
	rc = mdb_del(w->txn, w->st->dbi[t], &k, NULL);
	guard_pop(&g);
	if (rc == MDB_MAP_FULL || rc == MDB_TXN_FULL)
		w->map_full = 1;
	if (rc == MDB_NOTFOUND)
		return APTIX_ENOTFOUND;
	return rc ? lmdb_error(rc, "cannot delete from store") : 0;
}

/*
 * Flushes (issue 21, item 4). LMDB's commit writes the pages, flushes
 * them (fdatasync), then writes the meta page that makes them current,
 * synchronously (an O_DSYNC descriptor): two flushes, so that the meta
 * page never reaches the disk before the pages it names. The
 * environment is opened with MDB_NOMETASYNC instead, which writes the
 * meta page without waiting, and a commit that must be durable flushes
 * once more after it (mdb_env_sync): still two. A deferred write skips
 * that last flush: its pages are on disk before its meta page is even
 * written (the first flush, kept), so a power loss can only lose the
 * meta page, that is go back to the commit before (LMDB keeps that
 * commit's pages until two commits later: ACI, not D), and the next
 * commit's first flush takes the meta page to disk with it, before
 * that commit's own meta page is written. A turn's claim before the
 * network is such a write: nobody is told it is committed, and the
 * turn's commit after the network makes both durable. A turn then
 * flushes three times instead of four.
 */
static void w_defer_sync(aptix_store_wtxn *w)
{
	w->defer_sync = 1;
}

static int w_iter_rev(aptix_store_wtxn *w, aptix_table t, const void *start,
		      size_t slen, aptix_store_iter_cb cb, void *payload)
{
	return cursor_walk(w->st, w->txn, 1, t, start, slen, 1, cb, payload);
}

static int grow_map(struct reader *r)
{
	lmdb_store *st = r->st;
	MDB_envinfo info;
	size_t next;

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
	return set_mapsize(r, next);
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

/*
 * Another process compacted the store (gc, reindex) after this one had
 * opened it: its data file is no longer the one the store's directory
 * names, and a write to it would be lost. Compaction refuses while
 * another process has the store open, so this is a process that opened
 * it during the copy and then waited for the writer's lock. Checked with
 * the writer's lock held: no compaction can replace the file between
 * the check and the commit.
 */
static int replaced_since_open(const lmdb_store *st)
{
	aptix_buf path = APTIX_BUF_INIT;
	struct stat sb;
	int r;

	/* atomic: a read looks while another thread may reopen (env_switch) */
	dev_t dev = __atomic_load_n(&st->dev, __ATOMIC_RELAXED);
	ino_t ino = __atomic_load_n(&st->ino, __ATOMIC_RELAXED);

	if (!ino)
		return 0;
	aptix_buf_printf(&path, "%s/data.mdb", st->dir);
	r = !aptix_buf_oom(&path) && stat(path.ptr, &sb) == 0 &&
		(sb.st_dev != dev || sb.st_ino != ino);
	aptix_buf_release(&path);
	return r;
}

static int st_write(aptix_store *s, aptix_store_write_fn fn, void *payload)
{
	lmdb_store *st = (lmdb_store *)s;
	aptix_store_wtxn w;
	struct reader *volatile r = reader_of(st);
	struct guard g;
	int rc, ret;

	if (!r)
		return APTIX_ERROR;
	if (__atomic_load_n(&st->damaged, __ATOMIC_ACQUIRE)) {
		aptix_error_set(APTIX_ERROR_LMDB, "cannot write to store '%s': "
				"it is damaged (a read found corrupt pages); "
				"run 'aptix fsck'", st->dir);
		return APTIX_ECORRUPT;
	}
	if (st->readonly) {
		aptix_error_set(APTIX_ERROR_REPOSITORY, "cannot write to store "
				"'%s': it is read-only", st->dir);
		return APTIX_ERROR;
	}
	if (st->compacted) {
		aptix_error_set(APTIX_ERROR_REPOSITORY, "cannot write to store "
				"'%s': it was compacted; open it again",
				st->dir);
		return APTIX_ERROR;
	}
	rtxn_end(r);
	for (;;) {
		memset(&w, 0, sizeof(w));
		w.st = st;
		map_rdlock(r);
		rc = mdb_txn_begin(st->env, NULL, 0, &w.txn);
		if (rc) {
			map_rdunlock(r);
			if (rc == MDB_MAP_RESIZED) {
				if ((ret = set_mapsize(r, 0)) < 0)
					return ret;
				continue;
			}
			if (rc == EACCES || rc == EROFS) {
				aptix_error_set(APTIX_ERROR_REPOSITORY,
						"cannot write to store '%s': "
						"%s", st->dir,
						mdb_strerror(rc));
				return APTIX_ERROR;
			}
			return lmdb_error(rc, "cannot begin write transaction");
		}
		if (!GUARD(g, st)) {
			struct guard g2;

			st->wtx = NULL;
			/* aborting frees memory and unlocks the writer */
			if (GUARD(g2, st)) {
				mdb_txn_abort(w.txn);
				guard_pop(&g2);
			}
			map_rdunlock(r);
			return fault_error(st, &g, "cannot write to store");
		}
		if (replaced_since_open(st)) {
			mdb_txn_abort(w.txn);
			guard_pop(&g);
			map_rdunlock(r);
			/* nothing written yet: write to the new file */
			if ((ret = store_reopen(r, 1)) <= 0) {
				if (ret == 0)
					continue;
				return ret;
			}
			aptix_error_set(APTIX_ERROR_REPOSITORY, "cannot write to "
					"store '%s': another aptix command "
					"compacted it after this one opened it; "
					"nothing was written: run the command "
					"again", st->dir);
			return APTIX_ELOCKED;
		}
		cb_depth++;
		st->wtx = &w;
		ret = fn(&w, payload);
		st->wtx = NULL;
		cb_depth--;
		if (ret) {
			mdb_txn_abort(w.txn);
			guard_pop(&g);
			map_rdunlock(r);
			if (w.map_full) {
				if ((ret = grow_map(r)) < 0)
					return ret;
				continue;
			}
			return ret;
		}
		rc = mdb_txn_commit(w.txn);
		if (rc == 0 && !w.defer_sync)
			rc = mdb_env_sync(st->env, 1);
		guard_pop(&g);
		map_rdunlock(r);
		if (rc == MDB_MAP_FULL) {
			if ((ret = grow_map(r)) < 0)
				return ret;
			continue;
		}
		if (rc == EIO && disk_is_full(st))
			rc = ENOSPC;
		if (rc)
			return lmdb_error(rc, "cannot commit to store");
		return 0;
	}
}

/* --- Moving every value into pieces of its own (reindex) ------------- */

/* What relayout found: the records to write again, pieces in use. */
struct relayout {
	aptix_buf keys;		/* table byte, key length byte, key ... */
	uint64_t pieces6;	/* pieces that format 6 pointers name */
	size_t older;		/* records of an older format */
};

static const int logged_tables[] = {
	APTIX_TABLE_OBJECTS, APTIX_TABLE_SESSIONS, APTIX_TABLE_TIMELINE
};

/*
 * The records of table t that a relayout writes again: every pointer,
 * and every value kept in place that format 6 would keep in the values
 * table (stores of format 3 and older). Counts the records of an older
 * format, and the pieces that those of format 6 name.
 */
static NOINLINE int relayout_scan(aptix_store_wtxn *w, int t,
				  struct relayout *rl)
{
	MDB_cursor *c;
	MDB_val k, v;
	struct aptix_lmdb_ptr p;
	unsigned char hdr[2];
	int rc, r;

	if ((rc = mdb_cursor_open(w->txn, w->st->dbi[t], &c)))
		return lmdb_error(rc, "cannot open cursor");
	for (rc = mdb_cursor_get(c, &k, &v, MDB_FIRST); rc == 0;
	     rc = mdb_cursor_get(c, &k, &v, MDB_NEXT)) {
		r = aptix_lmdb__read_pointer(&p, v.mv_data, v.mv_size);
		if (r == 0 && v.mv_size < table_logged(t))
			continue;
		if (r == 1 && p.has_crc)
			rl->pieces6 += aptix_lmdb__ptr_pieces(&p);
		else
			rl->older++;
		hdr[0] = (unsigned char)t;
		hdr[1] = (unsigned char)k.mv_size;	/* at most 511: */
		if (k.mv_size > 255)		/* no logged table has such */
			continue;
		aptix_buf_put(&rl->keys, hdr, 2);
		aptix_buf_put(&rl->keys, k.mv_data, k.mv_size);
	}
	mdb_cursor_close(c);
	if (rc != MDB_NOTFOUND)
		return lmdb_error(rc, "cannot read store");
	return aptix_buf_oom(&rl->keys) ? APTIX_ERROR : 0;
}

/* Delete every piece numbered below end (they held the old values). */
static NOINLINE int relayout_drop_old(aptix_store_wtxn *w, uint64_t end)
{
	MDB_cursor *c;
	MDB_val k, v;
	int rc;

	if ((rc = mdb_cursor_open(w->txn, w->st->values, &c)))
		return lmdb_error(rc, "cannot open cursor");
	for (rc = mdb_cursor_get(c, &k, &v, MDB_FIRST); rc == 0;
	     rc = mdb_cursor_get(c, &k, &v, MDB_FIRST)) {
		if (k.mv_size != 8 || aptix__get_be64(k.mv_data) >= end)
			break;
		if ((rc = mdb_cursor_del(c, 0)))
			break;
	}
	mdb_cursor_close(c);
	if (rc && rc != MDB_NOTFOUND)
		return piece_error(w, rc, "cannot delete from store");
	return 0;
}

/*
 * Write every value again in pieces of its own with its checksum, then
 * delete every piece older than the first one written: what format 5
 * shared, and the zeroed bytes it left, go with them. A value that does
 * not read (a piece missing, a checksum failed) stops the write: the
 * store is then left as it was.
 */
static NOINLINE int relayout_fn(aptix_store_wtxn *w, void *payload)
{
	struct relayout *rl = payload;
	aptix_buf val = APTIX_BUF_INIT, tmp = APTIX_BUF_INIT;
	const unsigned char *p, *end;
	MDB_stat ms;
	MDB_val k, v;
	uint64_t first;
	size_t i;
	int r = 0, rc;

	aptix_buf_clear(&rl->keys);
	rl->pieces6 = 0;
	rl->older = 0;
	for (i = 0; i < ARRAY_SIZE(logged_tables) && !r; i++)
		r = relayout_scan(w, logged_tables[i], rl);
	if (r)
		return r;
	if ((rc = mdb_stat(w->txn, w->st->values, &ms)))
		return lmdb_error(rc, "cannot read store");
	if (!rl->older && ms.ms_entries == rl->pieces6)
		return 0;	/* every value is of format 6 already */
	if ((r = next_piece(w, &first)) < 0)
		return r;
	p = (const unsigned char *)rl->keys.ptr;
	end = p + rl->keys.len;
	while (p < end && !r) {
		int t = p[0];

		k.mv_size = p[1];
		k.mv_data = (void *)(p + 2);
		p += 2 + k.mv_size;
		rc = mdb_get(w->txn, w->st->dbi[t], &k, &v);
		if (rc)
			r = lmdb_error(rc, "cannot read store");
		else if (!in_file(w->st, v.mv_data, v.mv_size, 1))
			r = outside_file();
		else if ((r = resolve(w->st, w->txn, 1, &v, &v, &tmp)) >= 0 &&
			 (r = aptix_buf_set(&val, v.mv_data, v.mv_size)) == 0)
			r = put_logged(w, t, &k, val.ptr, val.len);
	}
	aptix_buf_release(&val);
	aptix_buf_release(&tmp);
	return r ? r : relayout_drop_old(w, first);
}

static int st_relayout(aptix_store *s)
{
	struct relayout rl;
	int r;

	memset(&rl, 0, sizeof(rl));
	aptix_buf_init(&rl.keys, 0);
	r = st_write(s, relayout_fn, &rl);
	aptix_buf_release(&rl.keys);
	return r;
}

static int st_readonly(aptix_store *s)
{
	return ((lmdb_store *)s)->readonly;
}

/* mdb_stat's count of a table's keys, in a read of the last commit. */
static int st_count(uint64_t *out, aptix_store *s, aptix_table t)
{
	lmdb_store *st = (lmdb_store *)s;
	struct reader *r;
	struct guard g;
	MDB_stat ms;
	int rc;

	*out = 0;
	if (st->absent[t])
		return 0;
	if ((rc = rtxn_begin(st, &r)) < 0)
		return rc;
	if (GUARD(g, st)) {
		rc = mdb_stat(r->txn, st->dbi[t], &ms);
		if (rc)
			rc = lmdb_error(rc, "cannot read store");
		else
			*out = ms.ms_entries;
		guard_pop(&g);
	} else {
		rc = fault_error(st, &g, "cannot read store");
	}
	rtxn_end(r);
	return rc;
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

static int st_check(aptix_store *s, aptix_store_problem_cb cb,
		    void *payload)
{
	lmdb_store *st = (lmdb_store *)s;
	aptix_buf path = APTIX_BUF_INIT;
	int r;

	if (aptix_buf_printf(&path, "%s/data.mdb", st->dir) < 0)
		return APTIX_ERROR;
	r = aptix_lmdb_file_check(path.ptr, cb, payload);
	aptix_buf_release(&path);
	return r;
}

/*
 * Another process has the environment open: it holds a lock on byte 0
 * of lock.mdb (see the file comment). *pid gets its process id. The
 * descriptor stays open until the store is closed: closing it would
 * drop this process's own fcntl locks on the file.
 */
static int other_process(lmdb_store *st, long *pid)
{
	aptix_buf path = APTIX_BUF_INIT;
	struct flock fl;
	int fd;

	*pid = 0;
	aptix_buf_printf(&path, "%s/lock.mdb", st->dir);
	fd = st->lock_fd > 0 ? st->lock_fd : aptix_buf_oom(&path) ? -1 :
		open(path.ptr, O_RDWR | O_CLOEXEC);
	aptix_buf_release(&path);
	if (fd < 0)
		return 0;
	memset(&fl, 0, sizeof(fl));
	fl.l_type = F_WRLCK;
	fl.l_whence = SEEK_SET;
	fl.l_start = 0;
	fl.l_len = 1;
	if (fcntl(fd, F_GETLK, &fl) == 0 && fl.l_type != F_UNLCK)
		*pid = (long)fl.l_pid;
	st->lock_fd = fd;
	return *pid != 0;
}

static int fsync_path(const char *path, int flags)
{
	int fd = open(path, flags | O_CLOEXEC), r;

	if (fd < 0)
		return -1;
	r = fsync(fd);
	close(fd);
	return r;
}

/*
 * Where compaction writes: the file data.mdb is, following a symbolic
 * link (replacing the link would leave the old file, and every byte the
 * compaction was to drop, where it points), and the scratch directory
 * next to it. A file with another hard link is refused: the other name
 * would keep the old bytes.
 */
static int compact_paths(aptix_buf *target, aptix_buf *tmp, const char *dir)
{
	aptix_buf data = APTIX_BUF_INIT;
	struct stat st;
	char *real = NULL;
	int r = 0;

	aptix_buf_printf(&data, "%s/data.mdb", dir);
	if (aptix_buf_oom(&data))
		return aptix_error_oom();
	if (lstat(data.ptr, &st) == 0 && S_ISLNK(st.st_mode)) {
		if (!(real = realpath(data.ptr, NULL))) {
			aptix_error_set_os("cannot compact store: cannot "
					   "resolve '%s'", data.ptr);
			r = APTIX_ERROR;
			goto done;
		}
		aptix_buf_puts(target, real);
		aptix_buf_printf(tmp, "%s.compact.tmp", real);
	} else {
		aptix_buf_puts(target, data.ptr);
		aptix_buf_printf(tmp, "%s/compact.tmp", dir);
	}
	if (aptix_buf_oom(target) || aptix_buf_oom(tmp))
		r = aptix_error_oom();
done:
	free(real);
	aptix_buf_release(&data);
	return r;
}

/* compact_paths, and a target compaction can replace. */
static int compact_target(aptix_buf *target, aptix_buf *tmp, const char *dir)
{
	struct stat st;
	int r = compact_paths(target, tmp, dir);

	if (r < 0)
		return r;
	if (stat(target->ptr, &st) < 0) {
		aptix_error_set_os("cannot compact store: '%s'", target->ptr);
		r = APTIX_ERROR;
	} else if (st.st_nlink > 1) {
		aptix_error_set(APTIX_ERROR_REPOSITORY, "cannot compact store: "
				"'%s' has %lu hard links, and the others would "
				"keep the bytes compaction drops: remove them "
				"first", target->ptr,
				(unsigned long)st.st_nlink);
		r = APTIX_ERROR;
	}
	return r;
}

/*
 * A compaction that died (killed, the machine down) leaves its copy, as
 * large as the store, in its scratch directory: it goes when the store
 * is next opened for writing, unless another process has the store
 * open (a compaction has it open from its start to its end, and none
 * starts while this process has it open).
 */
static void drop_dead_copy(lmdb_store *st)
{
	aptix_buf target = APTIX_BUF_INIT, tmp = APTIX_BUF_INIT;
	aptix_buf file = APTIX_BUF_INIT;
	struct stat sb;
	long pid;

	if (compact_paths(&target, &tmp, st->dir) == 0 &&
	    lstat(tmp.ptr, &sb) == 0 && S_ISDIR(sb.st_mode) &&
	    !other_process(st, &pid) &&
	    aptix_buf_printf(&file, "%s/data.mdb", tmp.ptr) == 0) {
		unlink(file.ptr);
		rmdir(tmp.ptr);
	}
	aptix_error_clear();
	aptix_buf_release(&target);
	aptix_buf_release(&tmp);
	aptix_buf_release(&file);
}

/* Copy the environment, compacted, over target (tmp: scratch dir). */
static int compact_copy(lmdb_store *st, const char *tmp, const char *target)
{
	aptix_buf file = APTIX_BUF_INIT, lock = APTIX_BUF_INIT;
	char *parent;
	int rc, ret = 0;

	aptix_buf_printf(&file, "%s/data.mdb", tmp);
	aptix_buf_printf(&lock, "%s/lock.mdb", st->dir);
	if (aptix_buf_oom(&file) || aptix_buf_oom(&lock)) {
		ret = aptix_error_oom();
		goto done;
	}
	rc = mdb_env_copy2(st->env, tmp, MDB_CP_COMPACT);
	if (rc) {
		ret = lmdb_error(rc, "cannot compact store");
	} else if (chmod(file.ptr, 0600) < 0 ||
		   fsync_path(file.ptr, O_RDONLY) < 0 ||
		   rename(file.ptr, target) < 0) {
		aptix_error_set_os("cannot replace '%s'", target);
		ret = APTIX_ERROR;
	} else {
		/* the next opener makes a lock file for the new data file */
		unlink(lock.ptr);
		fsync_path(st->dir, O_RDONLY | O_DIRECTORY);
		parent = strrchr(target, '/') ?
			aptix__strndup(target, (size_t)(strrchr(target, '/') -
							target)) : NULL;
		if (parent && *parent)
			fsync_path(parent, O_RDONLY | O_DIRECTORY);
		free(parent);
		st->compacted = 1;
	}
	unlink(file.ptr);
done:
	aptix_buf_release(&file);
	aptix_buf_release(&lock);
	return ret;
}

static int st_compact(aptix_store *s, unsigned flags)
{
	lmdb_store *st = (lmdb_store *)s;
	struct reader *r = reader_of(st);
	aptix_buf tmp = APTIX_BUF_INIT, target = APTIX_BUF_INIT;
	aptix_buf file = APTIX_BUF_INIT;
	MDB_txn *w = NULL;
	long pid;
	int rc, ret = 0;

	if (!r)
		return APTIX_ERROR;
	if (st->readonly || st->compacted) {
		aptix_error_set(APTIX_ERROR_REPOSITORY, "cannot compact store "
				"'%s': it is read-only", st->dir);
		return APTIX_ERROR;
	}
	if (other_process(st, &pid)) {
		aptix_error_set(APTIX_ERROR_REPOSITORY, "cannot compact store "
				"'%s': another process (pid %ld) has it open; "
				"run again when no other aptix command runs",
				st->dir, pid);
		return APTIX_ELOCKED;
	}
	if ((ret = compact_target(&target, &tmp, st->dir)) < 0 ||
	    (flags & APTIX_STORE_COMPACT_CHECK))
		goto done;
	aptix_buf_printf(&file, "%s/data.mdb", tmp.ptr);
	if (aptix_buf_oom(&file)) {
		ret = aptix_error_oom();
		goto done;
	}
	/* a copy left by a compaction that died */
	unlink(file.ptr);
	rmdir(tmp.ptr);
	if (mkdir(tmp.ptr, 0700) < 0) {
		aptix_error_set_os("cannot create '%s'", tmp.ptr);
		ret = APTIX_ERROR;
		goto done;
	}
	rtxn_end(r);
	map_rdlock(r);
	/* the writer's lock: nothing commits until the rename is done */
	if ((rc = mdb_txn_begin(st->env, NULL, 0, &w))) {
		ret = lmdb_error(rc, "cannot compact store");
	} else if (replaced_since_open(st)) {
		/* compacted by another: a copy of this file would undo it */
		mdb_txn_abort(w);
		aptix_error_set(APTIX_ERROR_REPOSITORY, "cannot compact store "
				"'%s': another aptix command compacted it "
				"after this one opened it", st->dir);
		ret = APTIX_ELOCKED;
	} else {
		ret = compact_copy(st, tmp.ptr, target.ptr);
		mdb_txn_abort(w);
	}
	map_rdunlock(r);
	rmdir(tmp.ptr);
done:
	aptix_buf_release(&tmp);
	aptix_buf_release(&target);
	aptix_buf_release(&file);
	return ret;
}

static int open_tables_unguarded(lmdb_store *st, int create)
{
	MDB_txn *txn;
	int rc, i, missing = 0;

	rc = mdb_txn_begin(st->env, NULL, create ? 0 : MDB_RDONLY, &txn);
	if (rc)
		return lmdb_error(rc, "cannot open store");
	for (i = 0; i < APTIX_TABLE__COUNT; i++) {
		rc = mdb_dbi_open(txn, table_names[i], create ? MDB_CREATE : 0,
				  &st->dbi[i]);
		st->absent[i] = 0;
		if (rc == MDB_NOTFOUND && !create && st->readonly &&
		    table_optional(i)) {
			st->absent[i] = 1;
			continue;
		}
		if (rc == MDB_NOTFOUND && !create) {
			missing = 1;
			break;
		}
		if (rc) {
			mdb_txn_abort(txn);
			return lmdb_error(rc, "cannot open store table");
		}
	}
	/* the values table (format 4): optional like the purged table */
	rc = missing ? 0 : mdb_dbi_open(txn, VALUES_TABLE,
					create ? MDB_CREATE : 0, &st->values);
	st->values_absent = 0;
	if (rc == MDB_NOTFOUND && !create && st->readonly)
		st->values_absent = 1;
	else if (rc == MDB_NOTFOUND && !create)
		missing = 1;
	else if (rc) {
		mdb_txn_abort(txn);
		return lmdb_error(rc, "cannot open store table");
	}
	if (missing) {
		mdb_txn_abort(txn);
		return APTIX_ENOTFOUND;
	}
	rc = mdb_txn_commit(txn);
	return rc ? lmdb_error(rc, "cannot open store") : 0;
}

static int open_tables(lmdb_store *st, int create)
{
	struct guard g;
	int r;

	if (!GUARD(g, st))
		return fault_error(st, &g, "cannot open store");
	r = open_tables_unguarded(st, create);
	guard_pop(&g);
	return r;
}

/*
 * The file holds every page the meta page LMDB uses names: a truncated
 * file would be a SIGBUS at the first read of a missing page.
 */
static int check_file(lmdb_store *st)
{
	MDB_envinfo info;
	MDB_stat ms;
	uint64_t need;

	if (mdb_env_info(st->env, &info) || mdb_env_stat(st->env, &ms))
		return 0;	/* LMDB will say */
	refresh_file_size(st);
	need = ((uint64_t)info.me_last_pgno + 1) * ms.ms_psize;
	if (file_size(st) >= need)
		return 0;
	aptix_error_set(APTIX_ERROR_LMDB, "cannot open store: store is "
			"corrupt: %s/data.mdb has %llu bytes but its meta "
			"page names page %zu (%llu bytes): it was truncated; "
			"'aptix salvage <dir>' copies what is readable",
			st->dir, (unsigned long long)file_size(st),
			info.me_last_pgno, (unsigned long long)need);
	return APTIX_ECORRUPT;
}

/* The stores this process has open, shared by every handle on each. */
static pthread_mutex_t registry_lock = PTHREAD_MUTEX_INITIALIZER;
static lmdb_store *open_stores;

/* Only when no other thread uses the store (the last handle is freed). */
static void store_destroy(lmdb_store *st)
{
	struct reader *r, *next;

	for (r = st->readers; r; r = next) {
		next = r->next;
		if (r->txn)
			mdb_txn_abort(r->txn);
		free(r);
	}
	pthread_key_delete(st->key);
	if (st->env)
		mdb_env_close(st->env);
	if (st->lock_fd > 0)
		close(st->lock_fd);
	pthread_rwlock_destroy(&st->maplock);
	pthread_mutex_destroy(&st->lock);
	free(st->dir);
	free(st);
}

static void st_free(aptix_store *s)
{
	lmdb_store *st = (lmdb_store *)s, **pp;

	if (!st)
		return;
	pthread_mutex_lock(&registry_lock);
	if (--st->refs > 0) {
		pthread_mutex_unlock(&registry_lock);
		return;
	}
	for (pp = &open_stores; *pp; pp = &(*pp)->next_open)
		if (*pp == st) {
			*pp = st->next_open;
			break;
		}
	pthread_mutex_unlock(&registry_lock);
	store_destroy(st);
}

static int env_open(lmdb_store *st, unsigned extra)
{
	int rc;

	if (st->env) {
		mdb_env_close(st->env);
		st->env = NULL;
	}
	if ((rc = mdb_env_create(&st->env)))
		return rc;
	mdb_env_set_assert(st->env, on_assert);
	mdb_env_set_maxdbs(st->env, APTIX_TABLE__COUNT + 4);
	mdb_env_set_mapsize(st->env, INITIAL_MAPSIZE < st->max_mapsize ?
			    INITIAL_MAPSIZE : st->max_mapsize);
	return mdb_env_open(st->env, st->dir,
			    MDB_NOTLS | MDB_NORDAHEAD | MDB_NOMETASYNC |
			    extra, 0600);
}

static lmdb_store *store_alloc(const char *dir)
{
	const char *max_env = aptix_env__get(APTIX_ENV_STORE_MAX_MB);
	lmdb_store *st = aptix__calloc(1, sizeof(*st));

	if (!st)
		return NULL;
	if (!(st->dir = aptix__strdup(dir)) ||
	    pthread_key_create(&st->key, reader_destroy)) {
		free(st->dir);
		free(st);
		return NULL;
	}
	pthread_rwlock_init(&st->maplock, NULL);
	pthread_mutex_init(&st->lock, NULL);
	st->refs = 1;
	st->pid = getpid();
	st->parent.version = APTIX_STORE_BACKEND_VERSION;
	st->parent.get = st_get;
	st->parent.view = st_view;
	st->parent.iter = st_iter;
	st->parent.iter_all = st_iter_all;
	st->parent.write = st_write;
	st->parent.wget = w_get;
	st->parent.wput = w_put;
	st->parent.wdel = w_del;
	st->parent.witer_rev = w_iter_rev;
	st->parent.readonly = st_readonly;
	st->parent.disk_usage = st_disk_usage;
	st->parent.count = st_count;
	st->parent.free = st_free;
	st->parent.check = st_check;
	st->parent.compact = st_compact;
	st->parent.relayout = st_relayout;
	st->parent.wdefer_sync = w_defer_sync;
	st->max_mapsize = MAX_MAPSIZE_DEFAULT;
	if (max_env && *max_env) {
		unsigned long mb = strtoul(max_env, NULL, 10);

		if (mb)
			st->max_mapsize = (size_t)mb << 20;
	}
	return st;
}

/*
 * Open the environment: read-write, else (files the user cannot write,
 * a read-only file system) read-only with LMDB's lock file, else
 * read-only without it. has_file: data.mdb exists and is not empty (the
 * caller's stat), so its meta pages are checked first.
 */
static int store_open(lmdb_store *st, unsigned flags, int has_file)
{
	aptix_buf path = APTIX_BUF_INIT;
	int rc, r = 0;

	/* a damaged page size in a meta page faults inside mdb_env_open */
	if (has_file) {
		if (aptix_buf_printf(&path, "%s/data.mdb", st->dir) < 0)
			return APTIX_ERROR;
		r = aptix_lmdb_file_meta_check(path.ptr);
		aptix_buf_release(&path);
	}
	if (r == APTIX_ECORRUPT)
		return r;
	aptix_error_clear();
	rc = env_open(st, 0);
	if ((rc == EACCES || rc == EROFS) && !(flags & APTIX_STORE_CREATE)) {
		st->readonly = 1;
		rc = env_open(st, MDB_RDONLY);
		if (rc == EACCES || rc == EROFS)
			rc = env_open(st, MDB_RDONLY | MDB_NOLOCK);
	}
	if (rc) {
		if (rc == ENOENT || rc == ENOTDIR) {
			aptix_error_set(APTIX_ERROR_REPOSITORY,
					"not an aptix store: '%s'", st->dir);
			return APTIX_ENOTFOUND;
		}
		if (rc == EACCES) {
			aptix_error_set(APTIX_ERROR_REPOSITORY,
					"cannot open store '%s': %s", st->dir,
					mdb_strerror(rc));
			return APTIX_ERROR;
		}
		return lmdb_error(rc, "cannot open store");
	}
	/*
	 * A process that exits without closing the environment (a fatal
	 * error, a kill) leaves its reader slot taken; while other processes
	 * keep the lock file open, nothing frees it, and once all the slots
	 * (126) are taken every command fails with MDB_READERS_FULL. Free
	 * the slots of dead processes now.
	 */
	if (!st->readonly)
		mdb_reader_check(st->env, NULL);
	find_map(st);
	if ((r = check_file(st)) < 0)
		return r;
	r = open_tables(st, 0);
	if (r == APTIX_ENOTFOUND && !st->readonly)
		r = open_tables(st, 1);
	else if (r == APTIX_ENOTFOUND)
		aptix_error_set(APTIX_ERROR_REPOSITORY, "store '%s' is not "
				"initialised and cannot be written", st->dir);
	if (r == 0 && !st->readonly)
		drop_dead_copy(st);
	return r;
}

/* What store_reopen puts back when the new file cannot be opened. */
struct env_state {
	MDB_env *env;
	MDB_dbi dbi[APTIX_TABLE__COUNT];
	unsigned char absent[APTIX_TABLE__COUNT];
	MDB_dbi values;
	int values_absent;
	dev_t dev;
	ino_t ino;
};

static void env_state_save(struct env_state *e, const lmdb_store *st)
{
	e->env = st->env;
	memcpy(e->dbi, st->dbi, sizeof(e->dbi));
	memcpy(e->absent, st->absent, sizeof(e->absent));
	e->values = st->values;
	e->values_absent = st->values_absent;
	e->dev = st->dev;
	e->ino = st->ino;
}

static void env_state_restore(lmdb_store *st, const struct env_state *e)
{
	st->env = e->env;
	memcpy(st->dbi, e->dbi, sizeof(st->dbi));
	memcpy(st->absent, e->absent, sizeof(st->absent));
	st->values = e->values;
	st->values_absent = e->values_absent;
	__atomic_store_n(&st->dev, e->dev, __ATOMIC_RELAXED);
	__atomic_store_n(&st->ino, e->ino, __ATOMIC_RELAXED);
}

/* Open the file data.mdb is now in place of st's (see store_reopen). */
static int env_switch(lmdb_store *st)
{
	aptix_buf path = APTIX_BUF_INIT;
	struct env_state old;
	struct stat sb;
	int rc, r;

	if (aptix_buf_printf(&path, "%s/data.mdb", st->dir) < 0)
		return APTIX_ERROR;
	rc = stat(path.ptr, &sb);
	aptix_buf_release(&path);
	if (rc < 0) {
		aptix_error_set_os("cannot open store '%s' again", st->dir);
		return APTIX_ERROR;
	}
	env_state_save(&old, st);
	st->env = NULL;
	/* the registry finds the store by its file */
	pthread_mutex_lock(&registry_lock);
	__atomic_store_n(&st->dev, sb.st_dev, __ATOMIC_RELAXED);
	__atomic_store_n(&st->ino, sb.st_ino, __ATOMIC_RELAXED);
	pthread_mutex_unlock(&registry_lock);
	rc = env_open(st, 0);
	r = rc ? lmdb_error(rc, "cannot open store again") : 0;
	find_map(st);
	if (r == 0 && (r = check_file(st)) == 0)
		r = open_tables(st, 0);
	if (r < 0) {
		if (st->env)
			mdb_env_close(st->env);
		pthread_mutex_lock(&registry_lock);
		env_state_restore(st, &old);
		pthread_mutex_unlock(&registry_lock);
		find_map(st);
		refresh_file_size(st);
		return r;
	}
	mdb_env_close(old.env);
	if (st->lock_fd > 0)
		close(st->lock_fd);	/* the old lock file's */
	st->lock_fd = 0;
	return 0;
}

/*
 * Another process compacted the store after this one opened it (see
 * replaced_since_open): the file this process reads is gone from the
 * directory, and a write to it would be lost. The new file holds all
 * the old one did (the compaction held the writer's lock from its copy
 * to its rename), so the store opens it in place of the old one, once
 * no transaction is live in the process (the map lock held for writing,
 * as for a resize); the threads' next transactions read the new file.
 * wait: wait for the other threads' transactions to end (a write), else
 * give up when one is live (a read).
 *
 * @return 0 when the store reads the file data.mdb is now; 1 when it
 *         cannot yet (a transaction of this thread is live, or of
 *         another and !wait; the store is read-only or compacted it
 *         itself); APTIX_ERROR when the new file does not open
 */
static int store_reopen(struct reader *r, int wait)
{
	lmdb_store *st = r->st;
	struct reader *o;
	int ret = 0;

	if (r->held || st->readonly || st->compacted)
		return 1;
	if (wait)
		pthread_rwlock_wrlock(&st->maplock);
	else if (pthread_rwlock_trywrlock(&st->maplock))
		return 1;
	if (!replaced_since_open(st))
		goto done;	/* another thread did */
	/* the threads' read transactions are of the old environment */
	pthread_mutex_lock(&st->lock);
	for (o = st->readers; o; o = o->next)
		if (o->txn) {
			mdb_txn_abort(o->txn);
			o->txn = NULL;
		}
	pthread_mutex_unlock(&st->lock);
	ret = env_switch(st);
done:
	pthread_rwlock_unlock(&st->maplock);
	return ret;
}

int aptix_store_lmdb_open(aptix_store **out, const char *dir, unsigned flags)
{
	lmdb_store *st;
	aptix_buf path = APTIX_BUF_INIT;
	struct stat sb;
	int r = 0, known;

	*out = NULL;
	if (aptix_sanitize_stdfds() < 0)
		return APTIX_ERROR;
	aptix_buf_printf(&path, "%s/data.mdb", dir);
	known = stat(path.ptr, &sb) == 0;
	aptix_buf_release(&path);
	if (!known && !(flags & APTIX_STORE_CREATE)) {
		aptix_error_set(APTIX_ERROR_REPOSITORY,
				"not an aptix store: '%s'", dir);
		return APTIX_ENOTFOUND;
	}
	if (known && sb.st_size == 0 && !(flags & APTIX_STORE_CREATE)) {
		/* LMDB would make a new, empty environment of it */
		aptix_error_set(APTIX_ERROR_LMDB, "cannot open store: store is "
				"corrupt: %s/data.mdb is empty", dir);
		return APTIX_ECORRUPT;
	}
	pthread_mutex_lock(&registry_lock);
	/* a store made now is nobody's yet: share nothing with it */
	for (st = known ? open_stores : NULL; st; st = st->next_open)
		if (st->dev == sb.st_dev && st->ino == sb.st_ino &&
		    st->pid == getpid())
			break;
	if (st) {
		/* this process has it open: share the environment */
		st->refs++;
		*out = &st->parent;
		goto done;
	}
	if (!(st = store_alloc(dir))) {
		r = aptix_error_oom();
		goto done;
	}
	if (known) {
		st->dev = sb.st_dev;
		st->ino = sb.st_ino;
	}
	if ((r = store_open(st, flags, known && sb.st_size > 0)) < 0) {
		store_destroy(st);
		goto done;
	}
	aptix_buf_printf(&path, "%s/data.mdb", dir);
	if (stat(path.ptr, &sb) == 0) {
		st->dev = sb.st_dev;
		st->ino = sb.st_ino;
	}
	aptix_buf_release(&path);
	if (!st->map_lo)
		find_map(st);	/* a new store: its inode is known now */
	st->next_open = open_stores;
	open_stores = st;
	*out = &st->parent;
done:
	pthread_mutex_unlock(&registry_lock);
	return r;
}
