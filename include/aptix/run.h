/*
 * aptix/run.h - running one turn: the pipeline behind `aptix continue`,
 * `fork -m` and `rerun`.
 *
 *  1. the instruction blob is stored and the conversation claimed as
 *     running, with the pending turn in the claim's record, in one
 *     durable write, before any network call;
 *  2. the request is built: model, instructions, input, the
 *     previous_response_id while the chain is alive (else the context is
 *     rehydrated from the store: a rolling summary of older turns and a
 *     window of recent turns), temperature, store, stream;
 *  3. the Responses API is called (no write transaction is open);
 *  4. the answer, raw payloads, turn, session, index and the
 *     conversation ref (compare-and-swap) are committed in one write;
 *     on failure a failed snapshot is committed instead and the head
 *     does not move.
 */
#ifndef APTIX_RUN_H
#define APTIX_RUN_H

#include "common.h"
#include "object.h"
#include "openai.h"
#include "config.h"
#include "context.h"
#include "repo.h"

typedef enum {
	APTIX_RUN_CONTINUE = 0,	/**< child of the conversation's head */
	APTIX_RUN_FORK,		/**< new conversation from a session */
	APTIX_RUN_RERUN		/**< same instruction, sibling branch */
} aptix_run_kind;

typedef struct {
	unsigned version;
	aptix_run_kind kind;
	const char *instruction;	/**< ignored for reruns */
	size_t instruction_len;
	/** continue: the conversation (NULL: HEAD's) */
	const char *conversation;
	/** fork: the session to fork from; rerun: the session to redo */
	const aptix_oid *from;
	const char *model;		/**< NULL: openai.model */
	int no_stream;
	int dry_run;			/**< build the request, change nothing */
	int switch_head;		/**< point HEAD at the conversation */
	const aptix_config *cfg;
	aptix_openai_options http;	/**< key, callbacks, cancel flag */
	/**
	 * Active files and retrieved chunks (may be NULL). The run decides
	 * what to send (aptix_context_plan: actions and sent flags are
	 * updated in place), records them on the turn and stores their
	 * content as blobs. Their warnings become the turn's.
	 */
	aptix_file_set *files;
	aptix_chunk_set *chunks;
	const char *workspace;		/**< WorkspaceId (NULL: none) */
	/**
	 * Fills files and chunks (scanning, retrieval) once the instruction
	 * is stored and the conversation claimed, so that a kill or a
	 * failure there still leaves a failed snapshot. May be NULL. A
	 * negative return fails the turn with the recorded error.
	 */
	int (*gather)(aptix_file_set *files, aptix_chunk_set *chunks,
		      const char *instruction, size_t len, void *payload);
	void *gather_payload;
} aptix_run_options;

#define APTIX_RUN_OPTIONS_VERSION 1
#define APTIX_RUN_OPTIONS_INIT { APTIX_RUN_OPTIONS_VERSION, \
	APTIX_RUN_CONTINUE, NULL, 0, NULL, NULL, NULL, 0, 0, 1, NULL, \
	APTIX_OPENAI_OPTIONS_INIT, NULL, NULL, NULL, NULL, NULL }

typedef struct {
	aptix_oid session, turn, parent;
	int has_parent;
	int committed;			/**< a snapshot was stored */
	int completed;			/**< ... and it completed */
	int chain_restarted;
	char conversation[65];
	aptix_openai_result api;
	aptix_buf request;		/**< the request body sent */
	char **warnings;
	size_t nwarnings;
	char *error_code;
	char *error_message;
	int64_t duration_ms;
} aptix_run_result;

APTIX_EXTERN(void) aptix_run_result_init(aptix_run_result *r);
APTIX_EXTERN(void) aptix_run_result_release(aptix_run_result *r);

/**
 * @brief Run one turn.
 * @return 0 when the turn completed and was committed;
 *         APTIX_ELOCKED when a turn of the conversation is running;
 *         APTIX_EINVALID for bad options (no API key, empty instruction);
 *         the client's code (APTIX_EHTTP, APTIX_ENET, APTIX_ECANCELLED,
 *         APTIX_EINVALID) when the call failed, after a failed snapshot
 *         was committed (out->committed);
 *         a store error (APTIX_EFULL...) when nothing could be stored.
 */
APTIX_EXTERN(int) aptix_run_turn(aptix_run_result *out, aptix_repo *repo,
				 const aptix_run_options *opts);

/**
 * @brief Mark failed the pending turns whose process died (kill -9,
 *        power loss): each gets a failed snapshot holding its
 *        instruction, and its conversation is released. Called when a
 *        store is opened.
 * @param[out] recovered number of turns recovered (may be NULL)
 */
APTIX_EXTERN(int) aptix_run_recover(aptix_repo *repo, size_t *recovered);

typedef struct {
	char conversation[65];
	aptix_oid turn;			/**< id of the pending turn */
	aptix_oid instruction;		/**< its instruction blob */
	aptix_oid parent;
	int has_parent;
	long pid;
	int64_t since_ms;
	char host[65];
	int alive;			/**< its process still runs */
} aptix_running_info;

typedef int (*aptix_running_cb)(const aptix_running_info *r, void *payload);
/** The turns being run now, or left by a dead process. */
APTIX_EXTERN(int) aptix_run_foreach_running(aptix_repo *repo,
					    aptix_running_cb cb,
					    void *payload);

#endif
