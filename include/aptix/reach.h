/*
 * aptix/reach.h - what a store's history keeps alive: the set of
 * objects reachable from its roots, as git's reachable.c computes it
 * for `git fsck` and `git gc` alike.
 *
 * THE CONTRACT (fsck reports by it; gc, issue 28, must delete only what
 * it leaves out, and must use this code rather than a walk of its own,
 * so that the two always agree):
 *
 * Roots, each with the reason it is kept (aptix_reach_why):
 *  - APTIX_REACH_REF: every ref that names an object (HEAD when
 *    detached, refs/conversations/<id>, the remote-tracking refs
 *    refs/remotes/<remote>/<id> of aptix fetch, any other refs/...).
 *  - APTIX_REACH_REFLOG: both ids of every reflog entry, the reflogs of
 *    deleted refs included (a reflog outlives its ref). Only an
 *    explicit policy expires entries (gc.reflog-expire, never by
 *    default): reflog_before_ms leaves out the ones it expires.
 *  - APTIX_REACH_CLAIM: a running turn's claim (aptix/run.h): its
 *    pending turn, its instruction and the session it continues, held
 *    as long as the claim is, whether its process lives or not (the
 *    next writer records it as a failed turn).
 *  - APTIX_REACH_FAILED: every failed session (a failed turn's
 *    snapshot): no ref ever names one, and `log`, `sessions` show
 *    them; they are history, not garbage. From the session index; a
 *    caller that has read the objects adds the ones the index lacks
 *    (aptix_reach_add()), as fsck does.
 *  - APTIX_REACH_RECENT: the grace period for writers in flight
 *    (git's gc.pruneExpire): sessions created less than grace_ms ago
 *    (from the index's timeline) and, when the options ask for
 *    APTIX_REACH_SCAN_YOUNG, every turn or session object whose own
 *    time (created_at, status_at) is that young, with what they
 *    reference. A blob has no time of its own: it is kept only through
 *    a turn, a session, a claim or a ref; a writer must therefore
 *    write a blob and what references it (or a claim) in one
 *    transaction, as the recorder does.
 *  - what the caller adds (aptix_reach_add()).
 * From the roots, every reference an object makes (a session's parent
 * and turn, a turn's blobs: aptix_object_foreach_ref()) is followed.
 * An object that is referenced but missing or damaged is in the set
 * (it is reachable; it is just not there) and counted in broken; it
 * is not followed. Each object is reported with the first reason that
 * reaches it, in the order above (REF, then REFLOG, ...).
 *
 * A gc must compute the set inside the same protection it deletes
 * under: a turn that commits after the set is computed is new, so it
 * is either younger than the grace period or claimed.
 */
#ifndef APTIX_REACH_H
#define APTIX_REACH_H

#include "common.h"
#include "oid.h"
#include "object.h"
#include "repo.h"

typedef struct aptix_reach aptix_reach;

typedef enum {
	APTIX_REACH_REF = 1,
	APTIX_REACH_REFLOG = 2,
	APTIX_REACH_CLAIM = 4,
	APTIX_REACH_FAILED = 8,
	APTIX_REACH_RECENT = 16,
	APTIX_REACH_ADDED = 32		/**< aptix_reach_add() */
} aptix_reach_why;

/** All the roots of the contract. */
#define APTIX_REACH_ALL 63u
/** Option flag: find young turns and sessions by reading every object. */
#define APTIX_REACH_SCAN_YOUNG 0x100u

/**
 * The references of one object, for a caller that has them already
 * (fsck has read every object): call cb for each, as
 * aptix_object_foreach_ref() does. Return APTIX_ENOTFOUND for an
 * object it does not know (then the walk reads the object itself).
 */
typedef int (*aptix_reach_links_fn)(const aptix_oid *id, aptix_ref_cb cb,
				    void *cb_payload, void *payload);

/**
 * For aptix_reach_links_at_fn: one reference, with the caller's number
 * of the object it names (-1: an object the caller does not know).
 */
typedef int (*aptix_reach_mark_fn)(const aptix_oid *id, aptix_otype type,
				   long n, void *cb_payload);
/**
 * The references of the caller's object number n (see number below),
 * to cb. Return APTIX_ENOTFOUND when it has none to give (unknown or
 * damaged: then the walk reads the object itself).
 */
typedef int (*aptix_reach_links_at_fn)(size_t n, aptix_reach_mark_fn cb,
				       void *cb_payload, void *payload);
/**
 * The caller's number of an object, below the options' count, or -1
 * for one it does not know.
 */
typedef long (*aptix_reach_number_fn)(const aptix_oid *id, void *payload);

typedef struct {
	unsigned version;		/**< APTIX_REACH_OPTIONS_VERSION */
	/** roots to use (APTIX_REACH_*; 0: all), | APTIX_REACH_SCAN_YOUNG */
	unsigned flags;
	/** the grace period in ms: younger counts as reachable (0: none) */
	int64_t grace_ms;
	/** what "now" is, ms since the epoch (0: aptix_now_ms()) */
	int64_t now_ms;
	aptix_reach_links_fn links;	/**< NULL: read the objects */
	void *links_payload;
	/**
	 * Reflog entries older than this (ms since the epoch) are no
	 * roots: the entries a gc expires by its policy
	 * (gc.reflog-expire). 0: every entry is a root.
	 */
	int64_t reflog_before_ms;
	/**
	 * A caller that holds every object numbered 0 to count - 1 (fsck:
	 * by rank in its sorted table) gives number, and links_at instead
	 * of links: the set is then a byte per numbered object rather than
	 * a map entry each (an object not numbered, such as a missing one,
	 * still takes an entry), and a walk follows numbers, never looking
	 * an id up. 0 / NULL: no numbering. The payload is links_payload.
	 */
	size_t count;
	aptix_reach_number_fn number;
	aptix_reach_links_at_fn links_at;
} aptix_reach_options;

#define APTIX_REACH_OPTIONS_VERSION 2
#define APTIX_REACH_OPTIONS_INIT { APTIX_REACH_OPTIONS_VERSION, 0, 0, 0, \
				   NULL, NULL, 0, 0, NULL, NULL }

/**
 * @brief A new, empty computation. opts may be NULL (every root, no
 * grace period, objects read).
 * @param[out] out free with aptix_reach_free()
 */
APTIX_EXTERN(int) aptix_reach_new(aptix_reach **out, aptix_repo *repo,
				  const aptix_reach_options *opts);
APTIX_EXTERN(void) aptix_reach_free(aptix_reach *r);
/** @brief Add a root of the caller's, before aptix_reach_compute(). */
APTIX_EXTERN(int) aptix_reach_add(aptix_reach *r, const aptix_oid *id,
				  aptix_reach_why why);
/**
 * @brief Find the roots and mark everything they reach.
 * @return 0; a store error (a damaged ref, reflog, claim or index
 * table: the set would be incomplete, so nothing must be deleted by it)
 */
APTIX_EXTERN(int) aptix_reach_compute(aptix_reach *r);
/**
 * @brief Whether id is reachable.
 * @param[out] why the first reason that reaches it (may be NULL)
 * @return 1 or 0
 */
APTIX_EXTERN(int) aptix_reach_contains(const aptix_reach *r,
				       const aptix_oid *id,
				       aptix_reach_why *why);
/** @brief How many objects are reachable (missing ones included). */
APTIX_EXTERN(size_t) aptix_reach_count(const aptix_reach *r);
/**
 * @brief Whether the caller's object number n (options' numbering) is
 * reachable, without a lookup.
 * @param[out] why the first reason that reaches it (may be NULL)
 * @return 1 or 0 (0 also when n is not below the options' count)
 */
APTIX_EXTERN(int) aptix_reach_contains_at(const aptix_reach *r, size_t n,
					  aptix_reach_why *why);
/** @brief How many reachable objects are missing or damaged. */
APTIX_EXTERN(size_t) aptix_reach_broken(const aptix_reach *r);

#endif
