/*
 * aptix/record.h - the recorder: one call that records a turn, for every
 * writer (the run pipeline, `write-turn`/`commit-session`, importers).
 *
 * A writer hands over a turn's content: the turn's fields (an aptix_turn:
 * conversation, seq, status, times, model, usage, warnings, errors, the
 * file and chunk refs) and the bytes of its blobs (instruction, answer,
 * raw request and response, file contents, chunk texts). The recorder
 * makes the rest, the same way for every writer:
 *
 *  - the blobs, each stored against its counterpart in the parent's turn
 *    (the answer against the parent's answer, a file against the
 *    parent's version of the same path...), the raw response spliced
 *    against the answer, the raw request against the instruction, the
 *    files and the snippets it carries (objects-format.md, "Storage");
 *    every 16th turn of a chain (seq a multiple of 16) is stored without
 *    bases and becomes the base of the turns after it;
 *  - the tool calls the response asked for and the tool results the
 *    request sent, as objects (their stdout, stderr and the output sent
 *    as blobs; the output stored against the stdout), linked from the
 *    turn; a result is linked to its call object, found among this
 *    turn's calls or the parent turn's by call id;
 *  - the turn, against the parent's turn; the session snapshot, against
 *    the parent session: status from the turn's (completed: committed,
 *    or awaiting_tool_results when the turn asked for calls that no
 *    result of the same turn answers; failed: failed), usage and
 *    workspace from the turn, and on a root or a fork the
 *    conversation's title (the instruction's first line) and
 *    forked_from;
 *  - the session's index records (timeline, children, conversation);
 *  - for a committed or awaiting snapshot, the conversation's ref moved
 *    by compare-and-swap (it must hold the parent; it must not exist yet
 *    for a root or with APTIX_RECORD_NEW_CONVERSATION) with its reflog
 *    entry ("continue: <title>"), and HEAD when asked;
 *
 * all in ONE short write transaction: everything lands, or nothing does.
 *
 * A turn that waits on the network is recorded in two writes, so that
 * the user's instruction is durable before any network call and no write
 * transaction is held across one:
 *
 *   aptix_record_begin()   the instruction blob (and the tool results
 *                          the turn sends, with their blobs) and a claim
 *                          on the conversation holding the pending turn
 *                          (a crash leaves what aptix_record_recover()
 *                          needs to record the turn as failed);
 *   ... the network call, no transaction held ...
 *   aptix_record_commit()  with options.pending set to the claim: the
 *                          snapshot, and the claim released, in one write.
 *
 * An importer, whose turns are already over, calls aptix_record_commit()
 * alone. Object ids depend only on content: recording the same content
 * through any writer gives the same ids and the same index records.
 */
#ifndef APTIX_RECORD_H
#define APTIX_RECORD_H

#include "common.h"
#include "oid.h"
#include "object.h"
#include "repo.h"
#include "toolcall.h"

/** Bytes handed to the recorder; ptr NULL: not given (len 0 is empty). */
typedef struct {
	const void *ptr;
	size_t len;
} aptix_record_data;

typedef enum {
	/** write the snapshot but move no ref (as `commit-session`) */
	APTIX_RECORD_NO_REF = (1 << 0),
	/** point HEAD at the conversation when its ref moves */
	APTIX_RECORD_SWITCH_HEAD = (1 << 1),
	/** the turn and its blobs only: no session, no ref (`write-turn`) */
	APTIX_RECORD_TURN_ONLY = (1 << 2),
	/**
	 * the conversation's ref must not exist yet (a fork into a new
	 * conversation, a rerun beside the original); without it, the ref
	 * must hold the parent (not exist, for a root)
	 */
	APTIX_RECORD_NEW_CONVERSATION = (1 << 3)
} aptix_record_flags;

/**
 * A tool result handed to the recorder: its fields (the blob ids out,
 * err and output, and the call, are filled from what is given here; a
 * byte count left 0 is the length of the bytes given) and its bytes.
 */
typedef struct {
	const aptix_tool_result *result;
	aptix_record_data out;		/**< stdout as run */
	aptix_record_data err;		/**< stderr as run */
	aptix_record_data output;	/**< exactly what the model was sent */
} aptix_record_tool_result;

/**
 * What to record. Everything is borrowed for the call. Zero-filled
 * fields (NULL, 0) mean "derive it", as documented per field. Start
 * from APTIX_RECORD_OPTIONS_INIT: later versions add fields at the end
 * (the tool calls of a turn, their results), and a caller built against
 * an older version keeps working (version says which fields it knows).
 */
typedef struct {
	unsigned version;
	unsigned flags;			/**< aptix_record_flags */
	/**
	 * The turn's fields. Its blob ids (instruction, answer, request,
	 * response, each file's content, each chunk's snippet) are made
	 * from the bytes given below; a blob not given keeps the id the
	 * turn holds (zero: absent; else the blob must be stored already).
	 * seq 0: the parent's turn's seq + 1 (1 for a root). NULL: the
	 * snapshot of an existing turn (session must then be given).
	 */
	const aptix_turn *turn;
	/** The turn's blobs, stored by the recorder. */
	aptix_record_data instruction, answer, request, response;
	/** NULL, or turn->nfiles entries: each file's content */
	const aptix_record_data *file_contents;
	/** NULL, or turn->nchunks entries: each chunk's text */
	const aptix_record_data *chunk_texts;

	/** The parent session; NULL: a root. */
	const aptix_oid *parent;
	/** The parent's conversation when the caller knows it (NULL: read) */
	const char *parent_conversation;
	/**
	 * NULL: the recorder makes the snapshot (above). Else it is written
	 * as given (commit-session; parent must then be its parent, for
	 * the choice of bases); its turn field is set to the turn's id when
	 * a turn is given too.
	 */
	const aptix_session *session;
	/** the snapshot's time, ms since the epoch; 0: now */
	int64_t created_at;
	/** the conversation's title on a root or fork; NULL: derived */
	const char *title;
	/** the session's transport ("sse", "http"); NULL: none */
	const char *transport;
	/**
	 * The reflog entry's verb ("continue", "fork", "rerun", "import");
	 * NULL: "fork" when the parent is of another conversation, else
	 * "continue".
	 */
	const char *verb;

	/**
	 * commit: the claim aptix_record_begin() made (its result's turn),
	 * released in the same write; the instruction is then not stored
	 * again. NULL: no claim.
	 */
	const aptix_oid *pending;
	/** begin: how long the claim holds unrenewed, ms (0: 2 minutes) */
	int64_t lease_ms;

	/* version 2 */
	/** the calls the turn's response asked for, in their order */
	const aptix_tool_call *tool_calls;
	size_t ntool_calls;
	/**
	 * the results the turn's request sent back; with options.pending,
	 * the same as aptix_record_begin() was given (the claim stored
	 * them: commit names them without writing them again)
	 */
	const aptix_record_tool_result *tool_results;
	size_t ntool_results;
} aptix_record_options;

#define APTIX_RECORD_OPTIONS_VERSION 2
#define APTIX_RECORD_OPTIONS_INIT { APTIX_RECORD_OPTIONS_VERSION, 0, NULL, \
	{ NULL, 0 }, { NULL, 0 }, { NULL, 0 }, { NULL, 0 }, NULL, NULL, \
	NULL, NULL, NULL, 0, NULL, NULL, NULL, NULL, 0, NULL, 0, NULL, 0 }

/** What a write made. */
typedef struct {
	aptix_oid turn;		/**< begin: the pending turn; commit: the turn */
	aptix_oid session;	/**< the snapshot (zero with TURN_ONLY) */
	aptix_oid instruction;	/**< the instruction blob */
	int moved;		/**< the conversation's ref now names it */
} aptix_record_result;

/**
 * @brief The first write of a turn that waits on the network: store the
 *        instruction (options.instruction) and claim the conversation
 *        with the pending turn (options.turn, status pending, with the
 *        instruction's id filled in), checking that the conversation's
 *        head is still the one the turn is planned on. A claim left by a
 *        dead process is recovered first (aptix_record_recover()).
 * @param[out] out out->turn is the pending turn's id (pass it as
 *             options.pending to aptix_record_commit()), out->instruction
 *             the instruction blob's.
 * @return 0; APTIX_ELOCKED when another turn of the conversation runs
 *         or its head moved just now; APTIX_EINVALID for a malformed
 *         turn or no instruction; a store error (APTIX_EFULL...).
 *         Nothing is written on failure.
 */
APTIX_EXTERN(int) aptix_record_begin(aptix_record_result *out,
				     aptix_repo *repo,
				     const aptix_record_options *opts);

/**
 * @brief Record a turn: its blobs, the turn, the session snapshot, the
 *        index records, and for a committed snapshot the ref and its
 *        reflog entry (see the top of this file), in one write.
 * @return 0; APTIX_EMISMATCH when the conversation's ref does not hold
 *         what it must (nothing written: record the turn again as a
 *         failed one, or with APTIX_RECORD_NO_REF); APTIX_EINVALID for a
 *         malformed turn or session, or a missing parent or blob;
 *         APTIX_ENOTFOUND when options.pending names no claim of ours;
 *         APTIX_EFULL when the store is full (nothing written).
 */
APTIX_EXTERN(int) aptix_record_commit(aptix_record_result *out,
				      aptix_repo *repo,
				      const aptix_record_options *opts);

/**
 * @brief Record as failed the pending turns whose process died (kill -9,
 *        power loss): each gets a failed snapshot holding its
 *        instruction, and its conversation is released.
 * @param[out] recovered number of turns recovered (may be NULL)
 */
APTIX_EXTERN(int) aptix_record_recover(aptix_repo *repo, size_t *recovered);

#endif
