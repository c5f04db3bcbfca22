/*
 * aptix/watch.h - the ref updates of a store as they happen: what other
 * processes (other hosts, on a shared store) commit, for a page that
 * shows a store live (`aptix serve`).
 *
 * On a store that announces its updates (PostgreSQL: LISTEN/NOTIFY) the
 * watch sleeps until an announcement comes; on one that does not
 * (LMDB) it reads the refs again each time it is asked and reports what
 * differs. Either way what it reports is what the repository's reads
 * show the caller: a ref the caller may not see is never reported.
 *
 * A watch belongs to one thread; it uses the repository as any reader
 * does (the repository is shared with the other threads).
 */
#ifndef APTIX_WATCH_H
#define APTIX_WATCH_H

#include "common.h"
#include "repo.h"

typedef struct aptix_watch aptix_watch;

typedef struct {
	const char *ref;	/**< the ref's name */
	/**
	 * What it holds now: 64 hex digits, "ref: <name>" for a symbolic
	 * ref, NULL when it was deleted.
	 */
	const char *value;
} aptix_watch_change;

/** A change; @note c and its strings are valid during the call only. */
typedef int (*aptix_watch_cb)(const aptix_watch_change *c, void *payload);

/**
 * @brief Start watching repo's refs (what they hold now is the start).
 * @return 0; APTIX_ENET when the store cannot be listened to.
 */
APTIX_EXTERN(int) aptix_watch_new(aptix_watch **out, aptix_repo *repo);

/** @brief 1 when the store announces its updates, 0 when they are polled. */
APTIX_EXTERN(int) aptix_watch_live(const aptix_watch *w);

/**
 * @brief Wait up to timeout_ms (< 0: forever; a polled watch waits the
 *        time given, then reads the refs) and give each ref that changed
 *        since the last call to cb.
 * @return the number of changes given; 0 none; < 0 an error (APTIX_ENET:
 *         the store's announcements stopped; the watch is of no more use)
 *         or what cb returned (< 0).
 */
APTIX_EXTERN(int) aptix_watch_next(aptix_watch *w, int timeout_ms,
				   aptix_watch_cb cb, void *payload);

APTIX_EXTERN(void) aptix_watch_free(aptix_watch *w);

#endif
