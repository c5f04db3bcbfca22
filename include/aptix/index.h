/*
 * aptix/index.h - the session index: per-snapshot metadata (parent,
 * generation, time, status, instruction summary), children of each
 * snapshot, and per-conversation records. It changes in the same write
 * transaction as the objects it describes and can be rebuilt from them.
 */
#ifndef APTIX_INDEX_H
#define APTIX_INDEX_H

#include "common.h"
#include "object.h"
#include "repo.h"

#define APTIX_SUMMARY_MAX 120
/** The longest model name a session record keeps. */
#define APTIX_MODEL_MAX 63

typedef struct {
	aptix_oid id, parent, turn;
	int has_parent;
	aptix_session_status status;
	aptix_turn_status turn_status;
	int64_t created_at;
	uint32_t generation;		/**< 1 for a root */
	char conversation[65];
	char summary[APTIX_SUMMARY_MAX + 1];	/**< instruction, 1st line */
	/**
	 * What its turn spent, from the record (version 5; see
	 * objects-format.md, "The session record"). has_usage 0: the record
	 * does not say (an older record, a turn that could not be read, a
	 * model name over APTIX_MODEL_MAX bytes): read the turn.
	 */
	int has_usage;
	int repeats;		/**< its turn is its parent's: counted there */
	int sends_results;	/**< its request sent tool results */
	uint32_t tool_calls;	/**< the calls its answer asked for */
	aptix_usage usage;
	char model[APTIX_MODEL_MAX + 1];
} aptix_session_info;

/** What a conversation's turns of one model spent. */
typedef struct {
	char model[APTIX_MODEL_MAX + 1];	/**< "" when none was recorded */
	uint32_t turns;			/**< sessions counted */
	uint32_t tool_calls;		/**< calls their answers asked for */
	uint32_t tool_requests;		/**< requests that sent tool results */
	aptix_usage usage;		/**< their tokens, summed */
} aptix_conv_usage;

/** The most models a conversation record sums apart. */
#define APTIX_CONV_MODELS 4

typedef struct {
	char id[65];
	aptix_oid head;			/**< last committed snapshot */
	int has_head;
	int archived;
	int titled;			/**< title set by the user */
	int64_t created_at;
	int64_t updated_at;		/**< last activity: newest snapshot */
	uint32_t turns;			/**< snapshots, failed ones too */
	uint32_t committed;		/**< turns that did not fail */
	uint32_t failed;		/**< failed attempts */
	aptix_session_status last_status;	/**< of the newest snapshot */
	aptix_turn_status last_turn_status;
	aptix_oid last;			/**< the newest snapshot */
	int has_last;
	aptix_oid last_failed;		/**< the newest failed attempt */
	int has_failed;
	int64_t failed_at;
	char title[APTIX_SUMMARY_MAX + 1];
	char workspace[129];
	/**
	 * What its sessions spent, per model (conversation records of
	 * version 3). has_usage 0: the record cannot say (an older record,
	 * a session whose usage its record does not hold, more than
	 * APTIX_CONV_MODELS models, cached tokens above input): sum the
	 * sessions. A session that repeats its parent's turn is not
	 * counted again.
	 */
	int has_usage;
	size_t nusage;
	aptix_conv_usage usage[APTIX_CONV_MODELS];
} aptix_conv_info;

/** ENOTFOUND when the session is not indexed. */
APTIX_EXTERN(int) aptix_index_session(aptix_session_info *out,
				      aptix_repo *repo, const aptix_oid *id);
/**
 * @brief When a session was created, without reading its record (one
 * lookup: what a walk needs to know of a parent it has not reached).
 * @return 0; APTIX_ENOTFOUND (no error set) when it is not indexed
 */
APTIX_EXTERN(int) aptix_index_session_time(int64_t *out, aptix_repo *repo,
					   const aptix_oid *id);
/**
 * @brief Whether ancestor is descendant or one of its ancestors (a session
 * has one parent: the walk follows parents down to ancestor's generation).
 * @return 1 or 0; APTIX_ENOTFOUND when either is not indexed.
 */
APTIX_EXTERN(int) aptix_index_is_ancestor(aptix_repo *repo,
					  const aptix_oid *ancestor,
					  const aptix_oid *descendant);
typedef int (*aptix_session_info_cb)(const aptix_session_info *s,
				     void *payload);
/** A problem found by aptix_index_check_layout(): one line, no LF. */
typedef void (*aptix_index_problem_cb)(const aptix_oid *id, const char *what,
				       void *payload);
/**
 * Check that every session's index record is where the sessions table
 * says it is (store format 5 keeps records in the timeline): each entry
 * that names a timeline record has it, and each timeline record has its
 * entry. Each problem to cb. @return the number of problems, or < 0.
 */
APTIX_EXTERN(int) aptix_index_check_layout(aptix_repo *repo,
					   aptix_index_problem_cb cb,
					   void *payload);
/**
 * Every indexed session, oldest first (those indexed by store format 4
 * and older, until `aptix reindex`: after the others, in id order).
 */
APTIX_EXTERN(int) aptix_index_foreach_session(aptix_repo *repo,
					      aptix_session_info_cb cb,
					      void *payload);
/**
 * The same, for the sessions created at or after since (ms since the
 * epoch; 0: every one): the walk of the timeline starts at since, so
 * `log --all --since` costs what it shows, not what the store holds.
 */
APTIX_EXTERN(int) aptix_index_foreach_session_since(aptix_repo *repo,
						    int64_t since,
						    aptix_session_info_cb cb,
						    void *payload);
/**
 * Sessions newest first (by created time, from the timeline table), as
 * long as cb returns 0; APTIX_ITEROVER from cb stops quietly. A store
 * indexed before the timeline existed yields nothing: see
 * aptix_index_has_timeline().
 */
APTIX_EXTERN(int) aptix_index_foreach_recent(aptix_repo *repo,
					     aptix_session_info_cb cb,
					     void *payload);
/**
 * @brief The same, from the session below (created_at, id) in the
 * timeline's order (id NULL: from the newest), so that a walk can read
 * the timeline a piece at a time: stop with APTIX_ITEROVER, go on from
 * the last session cb took.
 * @return 0; what cb returned; APTIX_ENOTFOUND (no error set) when
 * some sessions' records are not in the timeline (a store indexed by an
 * older aptix, until `aptix reindex`): read the index whole instead.
 */
APTIX_EXTERN(int) aptix_index_foreach_recent_before(aptix_repo *repo,
						    int64_t created_at,
						    const aptix_oid *id,
						    aptix_session_info_cb cb,
						    void *payload);
typedef int (*aptix_index_child_cb)(const aptix_oid *parent,
				    const aptix_oid *child, void *payload);
/**
 * @brief Each child of the sessions created in [oldest, newest] (ms),
 * their parents newest first: one pass of the children index for a
 * stretch of the timeline, where aptix_index_children_at() would cost a
 * lookup for each session.
 * @return 0; what cb returned; APTIX_ENOTFOUND (no error set) when
 * some sessions' records are not in the timeline (see
 * aptix_index_foreach_recent_before())
 */
APTIX_EXTERN(int) aptix_index_foreach_child_between(aptix_repo *repo,
						    int64_t newest,
						    int64_t oldest,
						    aptix_index_child_cb cb,
						    void *payload);
/** 1 when the timeline is populated (or the store has no session). */
APTIX_EXTERN(int) aptix_index_has_timeline(aptix_repo *repo);
/** Children (continuations, forks, reruns) of a session. */
APTIX_EXTERN(int) aptix_index_children(aptix_repo *repo,
				       const aptix_oid *parent,
				       aptix_odb_foreach_cb cb, void *payload);
/**
 * The same, for a session whose created_at the caller has (its session
 * info's): no lookup of the parent first, as a walk of the history wants.
 */
APTIX_EXTERN(int) aptix_index_children_at(aptix_repo *repo,
					  const aptix_oid *parent,
					  int64_t parent_created,
					  aptix_odb_foreach_cb cb,
					  void *payload);
/** ENOTFOUND when unknown. */
APTIX_EXTERN(int) aptix_index_conversation(aptix_conv_info *out,
					   aptix_repo *repo, const char *id);
typedef int (*aptix_conv_info_cb)(const aptix_conv_info *c, void *payload);
APTIX_EXTERN(int) aptix_index_foreach_conversation(aptix_repo *repo,
						   aptix_conv_info_cb cb,
						   void *payload);
/**
 * @brief The conversations, most recently updated first (updated_at
 * descending, then id ascending: a record with no update time, 0, comes
 * last), from the one after after (NULL: from the newest) on, to cb; cb
 * returns APTIX_ITEROVER to stop.
 *
 * A page costs what it shows: the recency index (objects-format.md,
 * "The recency index") gives the keys in order and each record is read
 * once. A store indexed before that index existed has every record read
 * and sorted, until `aptix reindex` builds it.
 * @note ci is valid only during the call. after is compared by its
 * updated_at and id only: a cursor may be a record made of those two.
 * @return 0; what cb returns (other than APTIX_ITEROVER); a read error.
 */
APTIX_EXTERN(int) aptix_index_conversations_by_recency(
	aptix_repo *repo, const aptix_conv_info *after,
	aptix_conv_info_cb cb, void *payload);
/** A problem found by aptix_index_check_recency(): one line, no LF. */
typedef void (*aptix_index_recency_problem_fn)(const char *what,
					       void *payload);
/**
 * @brief fsck's check of the recency index: every conversation record
 * has its key, every key its record of that time. Nothing is checked in
 * a store without it (indexed before it existed).
 * @return the number of problems (each to fn), or < 0.
 */
APTIX_EXTERN(int) aptix_index_check_recency(aptix_repo *repo,
					    aptix_index_recency_problem_fn fn,
					    void *payload);

/**
 * @brief fsck's check of the import keys (objects-format.md, "The import
 * keys"): each record readable, naming a snapshot the store holds.
 * @return the number of problems (each to fn), or < 0.
 */
APTIX_EXTERN(int) aptix_index_check_imports(aptix_repo *repo,
					    aptix_index_recency_problem_fn fn,
					    void *payload);

/**
 * @brief fsck's check of a session's chain record (what the model holds
 * through the response chain a child continues: see src/index/index-chain.c).
 * @return 0 when it is what the session's parent record and turn make
 * (or the record predates chain records); 1, with the error set, when
 * its chain section is not, 2 when its rolling summary section is not,
 * 3 when a field that log and show read (its summary line, turn status,
 * generation) is not what its objects make; a read error (a damaged
 * record fails its checksum: APTIX_ECORRUPT).
 */
/** Where a conversation began: the session it was forked from. */
typedef struct {
	int forked;			/**< 0: it began with a root */
	aptix_oid from;			/**< the session its first one follows */
	char conversation[65];		/**< from's conversation */
} aptix_conv_origin;

/**
 * Where conversation ci began, from its first session's record (the one
 * created at ci->created_at): forked from a session of another
 * conversation, or not. A time seek and two records, whatever the
 * history's size.
 * @return 0; APTIX_ENOTFOUND when the index has no first session of it
 */
APTIX_EXTERN(int) aptix_index_conversation_origin(aptix_conv_origin *out,
						  aptix_repo *repo,
						  const aptix_conv_info *ci);

APTIX_EXTERN(int) aptix_index_verify_chain(aptix_repo *repo,
					   const aptix_oid *session);

/** 1 when the session counts as a failed attempt (failed snapshot or turn). */
APTIX_EXTERN(int) aptix_session_info_failed(const aptix_session_info *s);

/**
 * Count what session s spent into ci's usage, as the index does when it
 * indexes s (fsck recounts with it). Clears has_usage when ci can no
 * longer say.
 */
APTIX_EXTERN(void) aptix_conv_usage_add(aptix_conv_info *ci,
					const aptix_session_info *s);
/** Whether two conversations' usage sums say the same. */
APTIX_EXTERN(int) aptix_conv_usage_same(const aptix_conv_info *a,
					const aptix_conv_info *b);

/**
 * @brief Set a conversation's title (what `sessions` and the picker show).
 * The title is one line of at most APTIX_SUMMARY_MAX bytes; later turns
 * never replace it, and `reindex` keeps it.
 * A title holding a credential (aptix/credscan.h) is refused, as an
 * instruction is.
 * @return 0; APTIX_ENOTFOUND for an unknown conversation; APTIX_EINVALID
 * for an empty title, one with control characters or a credential.
 */
APTIX_EXTERN(int) aptix_conversation_set_title(aptix_repo *repo,
					       const char *conv,
					       const char *title);

/**
 * @brief aptix_conversation_set_title(), also refusing a title that
 * holds one of the nkeys keys (OPENAI_API_KEY...: the library reads no
 * key from the environment; NULL entries are ignored).
 */
APTIX_EXTERN(int) aptix_conversation_set_title_keys(aptix_repo *repo,
						    const char *conv,
						    const char *title,
						    const char *const *keys,
						    size_t nkeys);
/**
 * @brief Start conversation conv with no turn, in tx: its record in the
 * index alone (created now, workspace; no head, no snapshot), as an
 * agent protocol's session is before its first prompt (ACP's
 * session/new). It is listed, resolved and archived like any; its first
 * turn (a continue, with no parent) fills the record in; reindex keeps
 * it. Nothing else is stored: log, fsck and gc see no object of it.
 * @param workspace its WorkspaceId (NULL: none)
 * @return 0; APTIX_EINVALID for an id that cannot name a new
 * conversation. At commit: APTIX_EEXISTS when it has a record, or a ref
 * (the ref check's error).
 */
APTIX_EXTERN(int) aptix_txn_conversation_create(aptix_txn *tx,
						const char *conv,
						const char *workspace);

/**
 * @brief Archive (1) or unarchive (0) a conversation: seed 002's soft
 * delete. Nothing is removed; listings hide archived conversations unless
 * asked. `reindex` keeps the flag.
 * @return 0; APTIX_ENOTFOUND for an unknown conversation.
 */
APTIX_EXTERN(int) aptix_conversation_set_archived(aptix_repo *repo,
						  const char *conv,
						  int archived);
/**
 * @brief Rebuild the index from the objects and refs (`aptix reindex`).
 *        It writes in batches, each its own commit, so that its memory
 *        stays bounded; from its first write to its last the store is
 *        marked incomplete (aptix_index_incomplete()), and a rebuild
 *        that was interrupted (killed) is made whole by running it
 *        again.
 * @param[out] nsessions number of sessions indexed (may be NULL)
 */
APTIX_EXTERN(int) aptix_index_rebuild(aptix_repo *repo, size_t *nsessions);
/**
 * @brief Is a rebuild under way, or was one interrupted? The index is
 *        then incomplete, and only aptix_index_rebuild() makes it whole
 *        (writes fail with APTIX_ELOCKED meanwhile).
 * @return 1, with an error message saying to run `aptix reindex`; 0 when
 *         the index is whole; < 0 on a store error.
 */
APTIX_EXTERN(int) aptix_index_incomplete(aptix_repo *repo);
/**
 * @brief After aptix_index_rebuild(): give the file back the pages the
 *        old index held (its pages are freed as the rebuild clears it,
 *        and the new one is written beside them); compaction copies the
 *        store without the free pages and renames the copy
 *        over data.mdb (a kill leaves the old file, and a scratch copy
 *        the next compaction removes).
 * @note Afterwards repo only reads: free it and open the store again.
 * @return 0 when compacted; 1 when the store has no file to compact
 *         (a server's); APTIX_ELOCKED, nothing done, while another
 *         process has the store open; a store error.
 */
APTIX_EXTERN(int) aptix_index_compact(aptix_repo *repo);

/** First line of text, at most max bytes cut at a UTF-8 boundary. */
APTIX_EXTERN(void) aptix_summary_line(char *out, size_t max,
				      const char *text, size_t len);

#endif
