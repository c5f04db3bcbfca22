/*
 * aptix/search.h - the search index of sessions: the words of each
 * session's instruction, answer, title, tool-call names and arguments
 * and tool outputs, kept in the index (objects-format.md, "The search
 * index") in the same write as the session, rebuilt by `aptix reindex`.
 *
 * Two uses: a filter that tells which sessions cannot hold a text (so
 * that `log -S` / `--grep` read only the others, and still check each
 * exactly), and BM25 ranking of sessions for a query (`aptix search`).
 *
 * A word is a run of letters, digits, '_' and non-ASCII bytes, of 2 to
 * 64 bytes, lowercased (ASCII); a session with a longer run is a
 * candidate for every text.
 */
#ifndef APTIX_SEARCH_H
#define APTIX_SEARCH_H

#include "common.h"
#include "oid.h"
#include "object.h"
#include "repo.h"
#include "odb.h"

typedef struct aptix_search_filter aptix_search_filter;

enum aptix_search_filter_flags {
	/** texts are compared ignoring case (log -i) */
	APTIX_SEARCH_ICASE = (1 << 0)
};

/**
 * @brief A filter over the search index of repo, which lets every
 *        session through until a text is required.
 * @return 0; APTIX_ENOTFOUND when the store has no usable search index
 *         (never built, or an older store: run `aptix reindex`), with
 *         no message: the caller reads every session instead.
 */
APTIX_EXTERN(int) aptix_search_filter_new(aptix_search_filter **out,
					  aptix_repo *repo, unsigned flags);
/**
 * @brief Keep only the sessions that may hold one of the n texts (a
 *        plain substring each, as `log -S` looks for). A text with no
 *        word the index can use constrains nothing.
 */
APTIX_EXTERN(int) aptix_search_filter_any(aptix_search_filter *f,
					  const char *const *texts, size_t n);
/**
 * @brief 1 when session may hold what the filter requires (it does,
 *        or it is not in the search index); 0 when it surely does not.
 *        < 0 on a read error.
 */
APTIX_EXTERN(int) aptix_search_filter_may(aptix_search_filter *f,
					  const aptix_oid *session);
/**
 * @brief Every session the filter lets through (each may hold what it
 *        requires; more than that, never fewer), in the order they were
 *        indexed, to cb (its id; a non-zero return stops the walk and is
 *        returned). Its cost grows with those sessions, not with the
 *        store.
 * @return 0; APTIX_ENOTFOUND, with no message, when the index cannot
 *         list them all: no text constrained the filter, or some indexed
 *         session is missing from the search index (written by an older
 *         aptix: see aptix_search_missing()), or the backend cannot count
 *         its sessions. Read every session and ask
 *         aptix_search_filter_may() instead.
 */
APTIX_EXTERN(int) aptix_search_filter_foreach(aptix_search_filter *f,
					      aptix_odb_foreach_cb cb,
					      void *payload);
/**
 * @brief The sessions created before their parent (skewed clocks), and
 *        those whose parent has no record, to cb: a walk in date order
 *        that reads only some sessions must know them.
 * @return 0; APTIX_ENOTFOUND, with no message, when the search index
 *         cannot tell (none, or written by an aptix that did not mark
 *         them: `aptix reindex` makes them known).
 */
APTIX_EXTERN(int) aptix_search_skewed(aptix_repo *repo,
				      aptix_odb_foreach_cb cb,
				      void *payload);
/**
 * @brief How many indexed sessions the search index lacks (those an
 *        aptix without it wrote; `aptix search` cannot find them until
 *        `aptix reindex`).
 * @return 0; APTIX_ENOTFOUND, with no message, when the store has no
 *         search index or its backend cannot count its sessions.
 */
APTIX_EXTERN(int) aptix_search_missing(uint64_t *out, aptix_repo *repo);
/** A problem found by aptix_search_check(): one line, no LF. */
typedef void (*aptix_search_problem_fn)(const char *what, void *payload);
/**
 * @brief Check the search index's records (objects-format.md, "The
 *        search index"): each block decodes, its terms ascend and come
 *        after the blocks' before, none has a key of its own too, and
 *        every posting names an ordinal below the state's next one.
 *        Each problem to fn.
 * @return the number of problems (0 too when the store has no search
 *         index), or < 0.
 */
APTIX_EXTERN(int) aptix_search_check(aptix_repo *repo,
				     aptix_search_problem_fn fn,
				     void *payload);
/** @brief 1 when some text constrained the filter. */
APTIX_EXTERN(int) aptix_search_filter_active(const aptix_search_filter *f);
APTIX_EXTERN(void) aptix_search_filter_free(aptix_search_filter *f);

#define APTIX_SEARCH_OPTIONS_VERSION 1

typedef struct {
	unsigned version;		/**< APTIX_SEARCH_OPTIONS_VERSION */
	const char *conversation;	/**< NULL: any */
	const char *workspace;		/**< NULL: any */
	const char *model;		/**< NULL: any */
	int status;			/**< aptix_session_status; -1 any */
	int64_t since, until;		/**< created_at bounds (ms); 0 none */
	size_t limit;			/**< hits at most; 0: 20 */
} aptix_search_options;

#define APTIX_SEARCH_OPTIONS_INIT { APTIX_SEARCH_OPTIONS_VERSION, NULL, \
	NULL, NULL, -1, 0, 0, 0 }

typedef struct {
	aptix_oid session;
	double score;			/**< BM25, higher first */
} aptix_search_hit;

/**
 * @brief The sessions that best match query's words (any of them),
 *        ranked by BM25 (k1 1.2, b 0.75), that pass the options' scope.
 * @param[out] out an array of *n hits (free() it), best first
 * @return 0; APTIX_ENOTFOUND when the store has no usable search index
 *         (the message says to run `aptix reindex`); APTIX_EINVALID
 *         when the query has no word.
 */
APTIX_EXTERN(int) aptix_search(aptix_search_hit **out, size_t *n,
			       aptix_repo *repo, const char *query,
			       const aptix_search_options *o);

/**
 * @brief Rebuild the search index from the indexed sessions' objects,
 *        in one write (aptix_index_rebuild() calls it).
 * @param[out] ndocs sessions indexed (may be NULL)
 */
APTIX_EXTERN(int) aptix_search_rebuild(aptix_repo *repo, size_t *ndocs);

#endif
