/*
 * aptix/gc.h - deleting what nothing reaches, and giving the space back.
 *
 * gc deletes exactly the objects that the library's reachability
 * (aptix/reach.h, the set fsck reports by) leaves out: whatever a ref,
 * a reflog entry, a running turn's claim or a failed session reaches,
 * or what is younger than the grace period, stays. A kept object
 * stored against one that goes (a based value, a spliced blob:
 * objects-format.md "Storage") is written again without it, its id and
 * content unchanged, as purge does, so every kept object still reads.
 * Reflog entries expire only by an explicit policy
 * (reflog_before_ms; `gc.reflog-expire`, never by default). The set is
 * computed and the objects deleted inside one write transaction: no
 * turn commits in between, and a turn that runs meanwhile holds a claim
 * (a root) until its commit. Then the store is compacted (its file
 * rewritten without free pages and put in place by a rename) when no
 * other process has it open; otherwise the pages freed are reused by
 * later writes and a later gc compacts.
 *
 * Together with aptix_purge() (a secret, with the record it keeps),
 * this is how a store forgets: the bytes of what gc deletes are in no
 * page of the file once it has compacted.
 */
#ifndef APTIX_GC_H
#define APTIX_GC_H

#include "common.h"
#include "oid.h"
#include "object.h"
#include "repo.h"

/** One thing gc deletes (told after it did, or what a dry run would). */
typedef struct {
	aptix_oid id;			/**< an object; zero for a reflog entry */
	aptix_otype type;		/**< APTIX_OBJ_BAD when unreadable */
	uint64_t size;			/**< bytes it takes in the store */
	const char *reflog;		/**< a reflog entry: its ref's name */
	int64_t time_ms;		/**< a reflog entry: its time */
} aptix_gc_item;

typedef struct {
	unsigned version;		/**< APTIX_GC_OPTIONS_VERSION */
	/**
	 * The grace period in ms (gc.prune-expire): objects younger are
	 * kept (aptix/reach.h, APTIX_REACH_RECENT). 0: none (prune now);
	 * < 0: prune nothing.
	 */
	int64_t grace_ms;
	/** Reflog entries older than this (ms since the epoch) expire; 0: none */
	int64_t reflog_before_ms;
	int dry_run;			/**< tell, change nothing */
	int no_compact;			/**< leave the file's free pages */
	int64_t now_ms;			/**< 0: aptix_now_ms() */
	void (*on_item)(const aptix_gc_item *it, void *payload);
	void *payload;
} aptix_gc_options;

#define APTIX_GC_OPTIONS_VERSION 1
#define APTIX_GC_OPTIONS_INIT { APTIX_GC_OPTIONS_VERSION, \
	14LL * 24 * 3600 * 1000, 0, 0, 0, 0, NULL, NULL }

typedef struct {
	size_t objects;			/**< stored before */
	size_t reachable;		/**< in the reachable set */
	/** kept objects stored against one that went, written again */
	size_t rewritten;
	size_t pruned;			/**< objects deleted */
	uint64_t pruned_bytes;		/**< their stored bytes */
	size_t reflog_expired;		/**< reflog entries deleted */
	uint64_t disk_before, disk_after;	/**< data.mdb, bytes */
	int compacted;			/**< 1: the file was rewritten */
	long busy_pid;			/**< not compacted: who has it open */
} aptix_gc_stats;

/**
 * @brief Collect garbage (see the file comment).
 * @note The store must be LMDB (the memory and PostgreSQL backends are
 *       refused). After a compaction repo only reads: free it and open
 *       the store again to write.
 * @return 0; APTIX_EINVALID (a backend gc cannot work on); a store
 *         error (from the reachability too: nothing is deleted by an
 *         incomplete set).
 */
APTIX_EXTERN(int) aptix_gc(aptix_gc_stats *out, aptix_repo *repo,
			   const aptix_gc_options *o);

#endif
