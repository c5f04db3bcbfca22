/*
 * aptix/run.h - running one turn, in stages: the API behind `aptix
 * continue`, `fork -m`, `rerun` and every other client (chat, servers).
 *
 * A turn is an aptix_run handle that goes through these stages, in this
 * order, in the spirit of libgit2's rebase and LMDB's txn APIs:
 *
 *   aptix_run_new()       settings and options; nothing is read or
 *                         written yet.
 *   aptix_run_begin()     where the turn goes (conversation, parent),
 *                         what it asks (the instruction, validated), the
 *                         state of the response chain; then the FIRST
 *                         DURABLE WRITE: the instruction blob and a claim
 *                         on the conversation holding the pending turn,
 *                         in one LMDB write, before any network call.
 *   aptix_run_gather()    the context, gathered by the library (active
 *     or                  files of the work tree, chunks retrieved for
 *   aptix_run_set_context()  the instruction), or handed over by the
 *                         caller. Optional: a turn may carry none.
 *   aptix_run_request()   plan what to send (a file or chunk the chain
 *                         has already is not sent again) and build the
 *                         request body. A dry run stops here.
 *   aptix_run_send()      the Responses API call: retries, backoff,
 *                         streaming through the options' callbacks, and
 *                         one restart of a chain the server forgot.
 *   aptix_run_finish()    the SECOND WRITE: the answer, raw request and
 *                         response, turn, session, index records and the
 *                         conversation ref (compare-and-swap), or, when
 *                         any stage after begin failed, a failed snapshot
 *                         holding the instruction and the error (the head
 *                         does not move); when the store is full, a slim
 *                         failed snapshot without the payloads.
 *   aptix_run_free()
 *
 * No write transaction is held between stages: each write is one short
 * LMDB transaction. The run reads the ancestors of its parent once and
 * owns what it read until it is freed.
 *
 * Failures: before begin's write, a failure stores nothing. After it,
 * a stage that fails records its error in the run and returns it; the
 * later stages then refuse to run (APTIX_EINVALID) except finish, which
 * commits the failed snapshot. Calling a stage out of order returns
 * APTIX_EINVALID and changes nothing.
 *
 * Threads: a run is used by one thread at a time. Several runs may go
 * on at once in one process, on one shared aptix_repo, each on its own
 * conversation (a second run on a busy conversation gets APTIX_ELOCKED
 * from begin).
 */
#ifndef APTIX_RUN_H
#define APTIX_RUN_H

#include "common.h"
#include "object.h"
#include "openai.h"
#include "config.h"
#include "context.h"
#include "repo.h"
#include "workspace.h"
#include "rag.h"
#include "toolcall.h"
#include "credscan.h"

typedef enum {
	APTIX_RUN_CONTINUE = 0,	/**< child of the conversation's head */
	APTIX_RUN_FORK,		/**< new conversation from a session */
	APTIX_RUN_RERUN		/**< same instruction, sibling branch */
} aptix_run_kind;

/**
 * The output of a tool call that the conversation's head asked for, as
 * the caller ran it. Borrowed for the run.
 */
typedef struct {
	const char *call_id;		/**< the call it answers */
	/** exactly what is sent back to the model (UTF-8) */
	const char *output;
	size_t output_len;
	const char *out, *err;		/**< stdout, stderr as run (NULL: not given) */
	size_t out_len, err_len;
	aptix_tool_status status;
	int has_exit_code;
	int64_t exit_code;
	int64_t duration_ms;		/**< 0: unknown */
	const char *cwd;		/**< NULL: unknown */
	const char *const *argv;
	size_t argc;
	int truncated;			/**< output is cut from what ran */
} aptix_run_tool_output;

/**
 * Tool outputs read from JSON (aptix_run_tool_outputs_from_json() in
 * <aptix/view.h>): the strings are the JSON's, held until
 * aptix_run_tool_outputs_release().
 */
struct json_t;
typedef struct {
	aptix_run_tool_output *v;
	size_t n;
	struct json_t *json;		/**< held */
} aptix_run_tool_outputs;

APTIX_EXTERN(void) aptix_run_tool_outputs_release(
	aptix_run_tool_outputs *outs);

/** The most characters an output may have (the API's limit). */
#define APTIX_TOOL_OUTPUT_MAX 10485760

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
	/** settings (NULL: defaults); borrowed: must outlive the run */
	const aptix_config *cfg;
	/**
	 * The client's options: base URL, key, retries, timeouts, the
	 * callbacks that stream the answer, the cancel flag. Copied by
	 * aptix_run_new(); the strings and the flag are borrowed and must
	 * outlive the run. The key is never stored.
	 */
	aptix_openai_options http;
	const char *workspace;		/**< WorkspaceId (NULL: none) */
	/**
	 * Other credentials the turn must never send or store besides
	 * http.api_key (the Qdrant key...): an instruction holding one is
	 * refused, files and chunks holding one are dropped. Borrowed.
	 */
	const char *const *secrets;
	size_t nsecrets;
	/**
	 * continue: start the conversation when no conversation has that id
	 * (a valid new id: aptix_conv_check_new_id()); else an unknown
	 * conversation is APTIX_ENOTFOUND, so that a typo never starts one.
	 */
	int create;
	/**
	 * Start a new response chain even when the parent's is alive: the
	 * context is rehydrated from the store (summary and window), as
	 * for an expired chain (chat's /compact). Since version 4.
	 */
	int new_chain;
	/**
	 * The function tools the model may call: a JSON array of
	 * {"type":"function","name",...} definitions, sent with this turn
	 * and, since the API does not carry them over, with every later
	 * one (a turn sends the tools its newest committed ancestor sent).
	 * NULL: those. Since version 5.
	 */
	const char *tools;
	int no_tools;			/**< send none (later turns neither) */
	/**
	 * continue: the outputs of the calls the conversation's head asked
	 * for (an awaiting_tool_results snapshot), one for each; the
	 * instruction may then be empty. Checked in begin, before anything
	 * is stored: a pending call without an output, an output for no
	 * pending call (or for a call answered already), an output over
	 * APTIX_TOOL_OUTPUT_MAX characters or not UTF-8 are refused. A
	 * credential in an output is redacted, with a warning.
	 */
	const aptix_run_tool_output *tool_outputs;
	size_t ntool_outputs;
	/**
	 * fork: the id of the new conversation (NULL: a new UUID); it must
	 * be a valid new id whose conversation has no head (APTIX_EEXISTS); an
	 * agent protocol (ACP) names a fork before its first turn.
	 * Since version 6.
	 */
	const char *fork_conversation;
	/**
	 * Asked for each active file in which the credential detector
	 * finds a credential (not a key of http.api_key or secrets, which
	 * are never sent) whether to send it all the same: an agent
	 * protocol asks its user (ACP's session/request_permission). NULL:
	 * such files are withheld, as always. Called by the thread running
	 * aptix_run_gather() (the files it scans) or aptix_run_request()
	 * (files handed over by aptix_run_set_context()): after begin
	 * stored the instruction, before any network call of the turn. An
	 * allowed file is sent and stored, with a warning in the turn;
	 * any other answer withholds it. Since version 7.
	 */
	aptix_credential_ask_cb ask_credential;
	void *ask_payload;
} aptix_run_options;

#define APTIX_RUN_OPTIONS_VERSION 7
#define APTIX_RUN_OPTIONS_INIT { APTIX_RUN_OPTIONS_VERSION, \
	APTIX_RUN_CONTINUE, NULL, 0, NULL, NULL, NULL, 0, 0, 1, NULL, \
	APTIX_OPENAI_OPTIONS_INIT, NULL, NULL, 0, 0, 0, NULL, 0, NULL, 0, \
	NULL, NULL, NULL }

/** What a run did: filled in as it goes; read with aptix_run_result(). */
typedef struct {
	aptix_oid session, turn, parent;
	int has_parent;
	int committed;			/**< a snapshot was stored */
	int completed;			/**< ... and it completed */
	int chain_restarted;
	char conversation[65];
	aptix_openai_result api;
	aptix_buf request;		/**< the request body (to be) sent */
	char **warnings;
	size_t nwarnings;
	char *error_code;
	char *error_message;
	int64_t duration_ms;
	/**
	 * the response asked for tool calls (api.calls): the snapshot is
	 * awaiting_tool_results, answered by a continue with their outputs
	 */
	int awaiting;
} aptix_run_result;

typedef struct aptix_run aptix_run;

typedef enum {
	APTIX_RUN_NEW = 0,	/**< made; nothing read or written */
	APTIX_RUN_BEGUN,	/**< instruction stored, conversation claimed */
	APTIX_RUN_REQUESTED,	/**< the request body is built */
	APTIX_RUN_SENT,		/**< the call answered */
	APTIX_RUN_FAILED,	/**< a stage after begin failed: finish */
	APTIX_RUN_FINISHED	/**< the snapshot is committed (or dry run) */
} aptix_run_state;

/**
 * @brief Make a run: read the settings it needs (model, chain TTL,
 *        window and summary limits) and check the options. Nothing is
 *        read from or written to the store.
 * @param[out] out the run, freed with aptix_run_free()
 * @param repo borrowed: must outlive the run
 * @return 0; APTIX_EINVALID for bad options (no API key unless a dry
 *         run, an empty model, a bad setting).
 */
APTIX_EXTERN(int) aptix_run_new(aptix_run **out, aptix_repo *repo,
				const aptix_run_options *opts);

/**
 * @brief Resolve where the turn goes and what it asks, read the state of
 *        the response chain, then store the instruction and claim the
 *        conversation in one durable write (not in a dry run).
 * @note State: NEW -> BEGUN.
 * @return 0; APTIX_ELOCKED when a turn of the conversation is running
 *         (or its head moved just now); APTIX_EINVALID for an empty
 *         instruction, one holding the API key or not UTF-8, a session
 *         that is not one; APTIX_ENOTFOUND for an unknown conversation
 *         or session; a store error (APTIX_EFULL...). On any failure
 *         nothing was stored and the run stays NEW.
 */
APTIX_EXTERN(int) aptix_run_begin(aptix_run *run);

/** What aptix_run_gather() collects. */
typedef struct {
	unsigned version;
	/** scan the work tree's active files (git's dirty files, paths) */
	int files;
	/**
	 * How to scan: root NULL means the store's work tree; cfg NULL
	 * means the run's settings. Borrowed for the call.
	 */
	aptix_scan_options scan;
	/** retrieve chunks for the instruction (RAG) */
	int rag;
	/**
	 * How to retrieve: query NULL means the instruction; its http
	 * options carry the keys for embeddings. Borrowed for the call.
	 */
	aptix_rag_query query;
} aptix_gather_options;

#define APTIX_GATHER_OPTIONS_VERSION 1
#define APTIX_GATHER_OPTIONS_INIT { APTIX_GATHER_OPTIONS_VERSION, 1, \
	APTIX_SCAN_OPTIONS_INIT, 1, APTIX_RAG_QUERY_INIT }

/**
 * @brief Gather the turn's context: the active files and the chunks
 *        retrieved for the instruction. Problems that do not stop the
 *        turn (an unreadable file, retrieval failing without
 *        rag.required) become the turn's warnings.
 * @note State: BEGUN, once, and not after aptix_run_set_context().
 * @return 0; a scan error or, with rag.required, a retrieval error: the
 *         run is then FAILED (finish records the error).
 */
APTIX_EXTERN(int) aptix_run_gather(aptix_run *run,
				   const aptix_gather_options *g);

/**
 * @brief Hand the turn a context gathered by the caller. The run takes
 *        what the sets hold (they are left empty, ready for reuse or
 *        release); either may be NULL.
 * @note State: BEGUN, once, and not after aptix_run_gather().
 */
APTIX_EXTERN(int) aptix_run_set_context(aptix_run *run,
					aptix_file_set *files,
					aptix_chunk_set *chunks);

/**
 * @brief Decide what to send and build the request body (read it with
 *        aptix_run_result()->request). Files and chunks holding a key
 *        are dropped with a warning.
 * @note State: BEGUN -> REQUESTED.
 * @return 0; a store or memory error (the run is then FAILED).
 */
APTIX_EXTERN(int) aptix_run_request(aptix_run *run);

/**
 * @brief Call the Responses API; the answer streams through the
 *        options' on_delta, with the API key and the secrets named in
 *        the options redacted (a tail that could start one is held
 *        back until the next delta or the end). A chain the server no longer knows is
 *        restarted once, with the context rehydrated from the store.
 *        Blocks for the length of the call; set the options' cancel
 *        flag with aptix_cancel() (from any thread or a signal
 *        handler) to stop it.
 * @note State: REQUESTED -> SENT, or FAILED; never in a dry run.
 * @return 0; the client's code (APTIX_EHTTP, APTIX_ENET,
 *         APTIX_ECANCELLED, APTIX_EINVALID for a malformed answer).
 */
APTIX_EXTERN(int) aptix_run_send(aptix_run *run);

/**
 * @brief Commit the turn: completed when the call answered, else a
 *        failed snapshot with the instruction and the error. A dry run
 *        finishes without writing.
 * @note State: BEGUN, REQUESTED, SENT or FAILED -> FINISHED.
 * @return 0 when the turn completed and was committed; the failure's
 *         code (the stage's, or APTIX_EMISMATCH when the head moved
 *         while the turn ran) when a failed snapshot was committed
 *         (aptix_run_result()->committed is then set); a store error
 *         when nothing could be stored (the claim is then left for
 *         recovery: aptix_run_recover()).
 */
APTIX_EXTERN(int) aptix_run_finish(aptix_run *run);

/**
 * @brief Free a run. A run begun but not finished is finished first, as
 *        failed ("abandoned"), so that a long-running process never
 *        leaves a conversation claimed. Accepts NULL.
 */
APTIX_EXTERN(void) aptix_run_free(aptix_run *run);

APTIX_EXTERN(aptix_run_state) aptix_run_state_of(const aptix_run *run);
/** @note Borrowed; valid until aptix_run_free(). */
APTIX_EXTERN(const aptix_run_result *) aptix_run_result_of(
	const aptix_run *run);
/** The context the run holds (after gather or set_context; may be empty).
 *  @note Borrowed; valid until aptix_run_free(). */
APTIX_EXTERN(const aptix_file_set *) aptix_run_files(const aptix_run *run);
APTIX_EXTERN(const aptix_chunk_set *) aptix_run_chunks(const aptix_run *run);
/** The instruction (after begin; for reruns, the recorded one).
 *  @note Borrowed; valid until aptix_run_free(). */
APTIX_EXTERN(const char *) aptix_run_instruction(const aptix_run *run,
						 size_t *len);

/**
 * @brief Mark failed the pending turns whose process died (kill -9,
 *        power loss): each gets a failed snapshot holding its
 *        instruction, and its conversation is released. Opening a store
 *        never does this: commands that write call it.
 * @param[out] recovered number of turns recovered (may be NULL)
 * @return 0; a store error (APTIX_ERROR with EACCES/EROFS for a store
 *         that cannot be written).
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
	/** wall clock of the claim's last renewal (0: never renewed) */
	int64_t renewed_ms;
	int64_t lease_ms;		/**< how long it holds unrenewed */
	/** not alive: why ("died", "was killed but never reaped (a
	 *  zombie)", "stopped renewing its claim 130 s ago (lease lapsed)") */
	char why[96];
} aptix_running_info;

typedef int (*aptix_running_cb)(const aptix_running_info *r, void *payload);
/** The turns being run now, or left by a dead process. */
APTIX_EXTERN(int) aptix_run_foreach_running(aptix_repo *repo,
					    aptix_running_cb cb,
					    void *payload);

#endif
