/*
 * aptix/view.h - the JSON views of history: a turn, a session in a list,
 * a conversation summary and a page of a list, as Jansson values. Every
 * interface that prints one (`show --json`, `sessions --json`, `status
 * --json`, `aptix serve`'s HTTP API, `aptix app-server`) builds it here,
 * so the same thing has the same field names everywhere. The names, and
 * the few compatibility aliases, are documented once, in
 * Documentation/json.md.
 *
 * Not included by <aptix.h>: it needs <jansson.h>.
 *
 * Builders return a new reference, or NULL when out of memory (with the
 * error set) or, for aptix_view_turn(), a negative error code.
 */
#ifndef APTIX_VIEW_H
#define APTIX_VIEW_H

#include <jansson.h>
#include "common.h"
#include "object.h"
#include "repo.h"
#include "index.h"
#include "context.h"
#include "run.h"
#include "search.h"

/** Seed 001 DD-005: a summary view cuts instruction and answer here. */
#define APTIX_VIEW_SUMMARY_BYTES 1024

enum aptix_view_flags {
	/**
	 * The full view of a turn: instruction and answer whole (a summary
	 * view has instruction_summary and answer_summary, cut at
	 * APTIX_VIEW_SUMMARY_BYTES), sources, files, chain details, title,
	 * worktree.
	 */
	APTIX_VIEW_FULL = (1 << 0),
	/** With FULL: the raw request and response payloads inline. */
	APTIX_VIEW_PAYLOADS = (1 << 1)
};

/** A string; invalid UTF-8 bytes become U+FFFD; s NULL: null. */
APTIX_EXTERN(json_t *) aptix_view_text(const char *s, size_t len);
/** aptix_view_text() of a C string (NULL: null). */
APTIX_EXTERN(json_t *) aptix_view_str(const char *s);
/** The hex id; null for NULL or the zero id. */
APTIX_EXTERN(json_t *) aptix_view_id(const aptix_oid *id);
/** An ISO 8601 UTC time ("2026-11-27T19:24:50.123Z"); null for 0. */
APTIX_EXTERN(json_t *) aptix_view_time(int64_t ms);
/** Milliseconds since the epoch; null for 0. */
APTIX_EXTERN(json_t *) aptix_view_time_ms(int64_t ms);
/**
 * @brief obj[key] = v, taking the reference (a NULL v is stored as
 * null). @return 0, or APTIX_ERROR when out of memory (error set).
 */
APTIX_EXTERN(int) aptix_view_set(json_t *obj, const char *key, json_t *v);

/**
 * @brief A stored text (an instruction, an answer) into out; what aptix
 * purge removed reads "[purged on <time>: <reason>]".
 * @return 0; APTIX_ENOTFOUND when it is neither stored nor purged, or
 * another read error.
 */
APTIX_EXTERN(int) aptix_view_blob_text(aptix_buf *out, aptix_repo *repo,
				       const aptix_oid *id);
/** "sent", "unchanged", "too large" or "binary": a file of a turn. */
APTIX_EXTERN(const char *) aptix_view_file_state(const aptix_file_ref *f);

/** Token usage: {input_tokens, cached_tokens, output_tokens, ...}. */
APTIX_EXTERN(json_t *) aptix_view_usage(const aptix_usage *u);

/**
 * @brief The view of the turn a session snapshot holds: ids (session,
 * turn, parent, conversation), statuses, times, model, instruction and
 * answer, payload ids, usage, warnings and errors; with
 * APTIX_VIEW_FULL, sources, files and chain details too.
 * A purged instruction or answer reads "[purged on <date>: <reason>]".
 * @param[out] out the new object
 * @param flags enum aptix_view_flags
 * @return 0; APTIX_ENOTFOUND when an object is missing, another read
 * error, APTIX_ERROR when out of memory.
 */
APTIX_EXTERN(int) aptix_view_turn(json_t **out, aptix_repo *repo,
				  const aptix_oid *session, unsigned flags);

/**
 * A session in a list (a graph's node, `status`'s HEAD): {session,
 * parent, conversation, generation, status, turn_status, failed,
 * created_at, summary}.
 */
APTIX_EXTERN(json_t *) aptix_view_session_info(const aptix_session_info *si);

/**
 * A conversation summary: {conversation, id (alias), title, titled,
 * status, last_turn_status, last_turn_at, turn_count, failed_count,
 * workspace, created_at, updated_at, head, archived}.
 */
APTIX_EXTERN(json_t *) aptix_view_conversation(const aptix_conv_info *ci);

/**
 * @brief aptix_search() of query in repo, as a JSON array of hits, best
 *        first: each the view of a session in a list
 *        (aptix_view_session_info()) with its "score" (BM25, a number).
 * @return 0; aptix_search()'s errors.
 */
APTIX_EXTERN(int) aptix_view_search(json_t **out, aptix_repo *repo,
				    const char *query,
				    const aptix_search_options *o);

/**
 * @brief What a run did, as seed 001's execute response {kind: "answer"
 * | "error", text, sources, warnings, error_code, error_message} plus
 * {status: "completed" | "failed" | "not_committed", session, turn,
 * conversation, parent, response_id, chain_restarted, usage,
 * duration_ms}: `continue --json`, the HTTP API's execute, app-server's
 * turn/completed.
 * @param chunks the chunks retrieved for it (NULL: none)
 * @param rc what aptix_run_finish() returned: not 0 is an error (its
 * message is the result's, else the last error's)
 */
APTIX_EXTERN(json_t *) aptix_view_run_result(const aptix_run_result *res,
					     const aptix_chunk_set *chunks,
					     int rc);

/**
 * A page of a list: {items, next_cursor}, taking items (an array);
 * next_cursor NULL on the last page.
 */
APTIX_EXTERN(json_t *) aptix_view_page(json_t *items, const char *next_cursor);

/**
 * @brief Tool outputs from JSON (`continue --tool-results`, the servers'
 *        `tool_outputs`): {"<call_id>": {...} | "<output>"} or
 *        [{"call_id": ..., ...}], each result {output*, exit_code, status
 *        (ok | error | denied | cancelled), stdout, stderr, duration_ms,
 *        cwd, argv, truncated} (Documentation/json.md, "tool_results").
 * @param json borrowed: the outputs take a reference to it
 * @return 0; APTIX_EINVALID with a message naming the result and the
 *         field that is wrong (out is then empty).
 */
APTIX_EXTERN(int) aptix_run_tool_outputs_from_json(
	aptix_run_tool_outputs *out, json_t *json);

#endif
