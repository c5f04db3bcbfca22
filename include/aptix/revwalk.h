/*
 * aptix/revwalk.h - walk the history of sessions, as libgit2's
 * git_revwalk and git's revision.c do for commits: push start points,
 * hide what is not wanted, choose an order, then call
 * aptix_revwalk_next() until it returns APTIX_ITEROVER. The walker
 * prints nothing; `log`, the servers and anything that lists history
 * are built on it.
 *
 * Sessions (snapshots) have at most one parent (objects-format.md,
 * seed 002): the history is a forest. The walk reads the session index
 * (records, children, the timeline), not the objects: a session's
 * parent is looked up only when the session comes out of the walk, so
 * the first twenty sessions of a huge store cost about twenty lookups.
 * A session the index does not know (a stale or damaged index) is read
 * from its object instead; a session that is neither indexed nor stored
 * is an error (APTIX_ENOTFOUND), a damaged one APTIX_ECORRUPT: the
 * walk never guesses. Every session is taken into the walk once, so a
 * corrupt store whose parents form a cycle still ends.
 *
 * Failed attempts (a failed turn's snapshot) hang off their parent and
 * no ref names them; with APTIX_REVWALK_FAILED the walk finds them
 * through the children of each session it takes, as `log` shows them.
 *
 * Typical use:
 *
 *	aptix_revwalk *w;
 *	aptix_revwalk_entry e;
 *
 *	aptix_revwalk_new(&w, repo);
 *	aptix_revwalk_sorting(w, APTIX_SORT_TIME);
 *	aptix_revwalk_push_head(w);
 *	while ((r = aptix_revwalk_next_entry(&e, w)) == 0)
 *		... e.id, e.summary ...
 *	if (r != APTIX_ITEROVER)
 *		... an error ...
 *	aptix_revwalk_free(w);
 */
#ifndef APTIX_REVWALK_H
#define APTIX_REVWALK_H

#include "common.h"
#include "oid.h"
#include "object.h"
#include "repo.h"
#include "index.h"
#include "search.h"

typedef struct aptix_revwalk aptix_revwalk;

/** Orders (aptix_revwalk_sorting()); they combine with |. */
#define APTIX_SORT_NONE 0u
/**
 * Newest first by the session's created time; equal times: the higher
 * generation first, then the lower id.
 */
#define APTIX_SORT_TIME 1u
/**
 * A session only after every one of its children the walk returns
 * (with TIME: git's --date-order; the graph never breaks, even when
 * clocks are skewed). The walk is then read whole before the first
 * session comes out, except push_all's on a store whose index records
 * are all in the timeline: that one streams (newest first, a piece of
 * the timeline at a time), and holds only what it has not returned.
 */
#define APTIX_SORT_TOPOLOGICAL 2u
/** The order above, oldest first (read whole first). */
#define APTIX_SORT_REVERSE 4u

/** Flags (aptix_revwalk_set_flags()). */
/** Failed attempts beside walked sessions too; --all keeps failed ones. */
#define APTIX_REVWALK_FAILED 1u
/** Only the sessions pushed: no parent, no failed attempt (--no-walk). */
#define APTIX_REVWALK_NO_WALK 2u
/** aptix_revwalk_push_all() takes archived conversations too. */
#define APTIX_REVWALK_ARCHIVED 4u

/** No session: a parent the walk does not return. */
#define APTIX_REVWALK_NONE UINT32_MAX

/** A session as the walk holds it. */
typedef struct {
	aptix_oid id, parent, turn;
	int has_parent;
	aptix_session_status status;
	aptix_turn_status turn_status;
	int64_t created_at;		/**< ms since the epoch */
	uint32_t generation;		/**< 1 for a root; 0 when unknown */
	/** The session's number in this walk: 0, 1, ... as it was met. */
	uint32_t seq;
	/**
	 * The parent's number when the walk returns the parent too (not
	 * hidden, not cut by the time range), else APTIX_REVWALK_NONE.
	 */
	uint32_t parent_seq;
	/** Borrowed from the walk: valid until it takes another session. */
	const char *conversation;
	const char *summary;		/**< the instruction's first line */
} aptix_revwalk_entry;

/**
 * @brief A new walk over repo's sessions: no start point, no order
 * (APTIX_SORT_NONE walks as TIME does), no flag.
 * @param[out] out free with aptix_revwalk_free()
 * @return 0, or APTIX_ERROR when out of memory
 */
APTIX_EXTERN(int) aptix_revwalk_new(aptix_revwalk **out, aptix_repo *repo);
/** @brief Free a walk and what it holds. Accepts NULL. */
APTIX_EXTERN(void) aptix_revwalk_free(aptix_revwalk *w);
/**
 * @brief Forget the start points, the hidden sessions and what was
 * walked, keeping the order, the flags and the time range.
 */
APTIX_EXTERN(void) aptix_revwalk_reset(aptix_revwalk *w);
/** @brief Choose the order (APTIX_SORT_*), before the first next. */
APTIX_EXTERN(int) aptix_revwalk_sorting(aptix_revwalk *w, unsigned mode);
/** @brief Set APTIX_REVWALK_* flags, before the first push. */
APTIX_EXTERN(void) aptix_revwalk_set_flags(aptix_revwalk *w,
					   unsigned flags);
/**
 * @brief Only sessions created in [since, until] (ms; 0: no bound), as
 * `log --since/--until`: a session older than since ends its branch;
 * one newer than until is walked through, not returned.
 */
APTIX_EXTERN(void) aptix_revwalk_set_range(aptix_revwalk *w, int64_t since,
					   int64_t until);

/**
 * @brief Start from a session (and walk its ancestors).
 * @return 0; APTIX_ENOTFOUND when no session has that id (indexed or
 * stored); APTIX_EINVALID when the object is not a session;
 * APTIX_ECORRUPT for a damaged record or object.
 */
APTIX_EXTERN(int) aptix_revwalk_push(aptix_revwalk *w, const aptix_oid *id);
/** @brief Start from what a ref names ("HEAD", "refs/conversations/c"). */
APTIX_EXTERN(int) aptix_revwalk_push_ref(aptix_revwalk *w, const char *ref);
/** @brief aptix_revwalk_push_ref(w, "HEAD"). */
APTIX_EXTERN(int) aptix_revwalk_push_head(aptix_revwalk *w);
/**
 * @brief Start from every ref whose name matches glob (fnmatch(3), as
 * "refs/conversations/ab*"); symbolic refs and unborn ones are skipped.
 * @return 0 (also when nothing matches), or an error
 */
APTIX_EXTERN(int) aptix_revwalk_push_glob(aptix_revwalk *w,
					  const char *glob);
/**
 * @brief Every indexed session (`log --all`): failed ones with
 * APTIX_REVWALK_FAILED, archived conversations' with
 * APTIX_REVWALK_ARCHIVED, only those in the time range, none hidden.
 * They are read when the walk starts, in one pass over the index.
 */
APTIX_EXTERN(int) aptix_revwalk_push_all(aptix_revwalk *w);
/**
 * @brief Start from every session of some conversations (failed ones
 * only with APTIX_REVWALK_FAILED): with APTIX_REVWALK_NO_WALK, exactly
 * those, as a conversation's view lists them; a conversation whose ref
 * is gone, or whose first turn failed, has no head to push. Each is
 * found from its record down the children index (its cost grows with
 * the conversation); the few the record cannot lead to are found by one
 * scan of the index for them all.
 * @param[out] counts nids numbers: how many sessions each conversation
 *        has, failed ones included (may be NULL)
 */
APTIX_EXTERN(int) aptix_revwalk_push_conversations(aptix_revwalk *w,
						   const char *const *ids,
						   size_t nids,
						   size_t *counts);
/** @brief aptix_revwalk_push_conversations() of one. */
APTIX_EXTERN(int) aptix_revwalk_push_conversation(aptix_revwalk *w,
						  const char *conv,
						  size_t *n);
/**
 * @brief The n newest sessions of the timeline that push_all would take
 * (`log --all -n <n>`): with APTIX_SORT_TIME the first n sessions of
 * the walk are those of push_all, without reading the whole index.
 * @return 0; APTIX_ENOTFOUND (no error set) when the store has no
 * timeline yet (indexed by an older aptix): use push_all.
 */
APTIX_EXTERN(int) aptix_revwalk_push_recent(aptix_revwalk *w, size_t n);
/**
 * @brief Return only the sessions filter lets through (`log -S`,
 * `--grep`), in the order the walk gives them without it. With
 * push_all (and no session hidden) the walk then reads only those
 * sessions' records, from the search index, so its cost grows with the
 * matches rather than the store; when the search index cannot list
 * them (see aptix_search_filter_foreach()) or the order could differ
 * (a session older than its parent: aptix_search_skewed()), it walks
 * every session as without, and skips the others. From start points
 * the walk is the same as without (so is its order), but each session
 * is checked against the listed sessions (a lookup in memory, not in
 * the index); with few of them, their records tell which sessions'
 * failed attempts are worth looking up and, when the index's
 * generations can be trusted, how deep the walk must go: a parent
 * older in generation than every listed session is not walked past.
 * The filter is borrowed: keep it until the walk is freed.
 */
APTIX_EXTERN(int) aptix_revwalk_limit(aptix_revwalk *w,
				      aptix_search_filter *filter);
/**
 * @brief Leave out a session and its ancestors (`^A`, `A..B`).
 * @return 0; APTIX_ENOTFOUND or APTIX_ECORRUPT as push
 */
APTIX_EXTERN(int) aptix_revwalk_hide(aptix_revwalk *w, const aptix_oid *id);

/**
 * @brief The next session.
 * @return 0; APTIX_ITEROVER at the end; an error (a parent missing from
 * both the index and the objects: APTIX_ENOTFOUND; APTIX_ECORRUPT).
 */
APTIX_EXTERN(int) aptix_revwalk_next(aptix_oid *out, aptix_revwalk *w);
/** @brief The same, with the session's record. */
APTIX_EXTERN(int) aptix_revwalk_next_entry(aptix_revwalk_entry *out,
					   aptix_revwalk *w);
/**
 * @brief The record of the session numbered seq (an entry's seq or
 * parent_seq). A walk that streams (APTIX_SORT_TOPOLOGICAL over
 * push_all) keeps only the session it returned last: it gives that one
 * (and those lookup() read before the walk started).
 * @return 0, or APTIX_ENOTFOUND for an unknown number (or one a
 * streamed walk let go).
 */
APTIX_EXTERN(int) aptix_revwalk_get(aptix_revwalk_entry *out,
				    const aptix_revwalk *w, uint32_t seq);
/**
 * @brief The record of a session, read into the walk's table (from the
 * index, or its object) without walking it: `log -g` shows reflog
 * entries with it. @return as aptix_revwalk_push()
 */
APTIX_EXTERN(int) aptix_revwalk_lookup(aptix_revwalk_entry *out,
				       aptix_revwalk *w, const aptix_oid *id);

/**
 * @brief An entry as the index's session record (aptix/index.h), for
 * the views that take one: the strings are copied (cut to fit).
 */
APTIX_EXTERN(void) aptix_revwalk_entry_info(aptix_session_info *out,
					    const aptix_revwalk_entry *e);

#endif
