/*
 * serve/serve.h - the request handlers shared by `aptix serve` (HTTP)
 * and `aptix app-server` (JSON-RPC over stdio).
 *
 * The layers, from the bottom:
 *
 *   libaptix (include/aptix/)   the store and the staged turn API
 *   serve/serve.c, turn.c       handlers: JSON parameters in, a JSON
 *                               result (or a serve_err) out, and the
 *                               events of a running turn through a
 *                               callback. They know nothing of HTTP,
 *                               sockets or stdio.
 *   serve/http.c, jsonrpc.c     the transports: routes and methods
 *                               mapped onto the handlers, errors mapped
 *                               onto HTTP statuses and JSON-RPC codes.
 *   porcelain/serve.c,          the commands: options, signals,
 *   porcelain/app-server.c      startup and shutdown.
 *
 * Threads: one struct serve is shared by every thread of the server; a
 * handler may run on any thread, several at once (the repository is
 * shared as include/aptix.h allows; each turn opens its own config).
 * A serve_turn is used by one thread at a time, but serve_interrupt()
 * and serve_cancel_all() may be called from any thread.
 *
 * Handlers never print and never exit; their errors carry the HTTP
 * status that describes them best (the JSON-RPC transport maps it).
 */
#ifndef APTIX_SERVE_H
#define APTIX_SERVE_H

#include <stddef.h>
#include <jansson.h>
#include <aptix.h>
#include <aptix/view.h>

struct serve;
struct serve_turn;

struct serve_err {
	int status;		/* HTTP status: 400, 404, 409, 500... */
	char message[512];
	/* 409: the conversation whose turn is running (else "") */
	char busy[APTIX_CONV_MAXLEN + 1];
};

/*
 * What a server needs to know to run turns: the repository (borrowed;
 * must outlive the server) and the default workspace (the server's: NULL
 * means derived from the work tree or the settings, as `aptix sessions`
 * does).
 */
int serve_new(struct serve **out, aptix_repo *repo, const char *workspace,
	      struct serve_err *e);
void serve_free(struct serve *s);
aptix_repo *serve_repo(struct serve *s);

/* Fill e (status, printf-style message); returns NULL for handlers. */
json_t *serve_fail(struct serve_err *e, int status, const char *fmt, ...)
	APTIX_FORMAT(3, 4);
/* Fill e from the library's last error and code r (404, 409, 400...). */
json_t *serve_fail_aptix(struct serve_err *e, int r);

/*
 * Reads. Each takes its parameters as a JSON object (NULL: none) and
 * returns a new JSON value, or NULL with e filled in.
 *
 * list_conversations {workspace, all, archived, q, cursor, limit}
 *   -> {items: [summary...], next_cursor}
 * read_conversation {conversation}
 *   -> {conversation: summary, turns: [turn summary...]}
 * read_turn {session, full} -> a turn summary, or its full view
 * read_object {id} -> {id, type, size, encoding: utf-8|base64, data}
 * graph {conversation | workspace, all, cursor, limit}
 *   -> {nodes, conversations, lanes, next_cursor}
 * workspace_sessions {workspace} -> [{sessionId, title, model, status,
 *   updatedAt}] (seed 003's shape)
 */
json_t *serve_list_conversations(struct serve *s, json_t *p,
				 struct serve_err *e);
json_t *serve_read_conversation(struct serve *s, json_t *p,
				struct serve_err *e);
json_t *serve_read_turn(struct serve *s, json_t *p, struct serve_err *e);
json_t *serve_read_object_json(struct serve *s, json_t *p,
			       struct serve_err *e);
json_t *serve_graph(struct serve *s, json_t *p, struct serve_err *e);
json_t *serve_search(struct serve *s, json_t *p, struct serve_err *e);
json_t *serve_workspace_sessions(struct serve *s, json_t *p,
				 struct serve_err *e);

/*
 * A workspace named by a path (absolute: its WorkspaceId is derived as
 * the CLI derives it) or by its WorkspaceId, into out (replaced).
 */
int serve_workspace_id(aptix_buf *out, struct serve *s, const char *ws,
		       struct serve_err *e);

/*
 * A raw object: its bytes (out is replaced) and type. A blob's content
 * type is text/plain when it is UTF-8 text, else octet-stream; turns
 * and sessions are JSON.
 */
int serve_read_object(struct serve *s, const char *id, aptix_buf *out,
		      aptix_otype *type, const char **content_type,
		      struct serve_err *e);

/*
 * Writes that are not turns.
 *
 * rename {conversation, title}, archive {conversation, archived}
 *   -> the conversation's summary
 * session_open {workspacePath | workspace, sessionId} -> a descriptor
 *   (a new conversation id when sessionId is absent; nothing is written
 *   until its first turn)
 * session_close {sessionId} -> {sessionId, status: "closed"}
 * interrupt {conversation | session} -> {interrupted: n}
 */
json_t *serve_rename(struct serve *s, json_t *p, struct serve_err *e);
json_t *serve_archive(struct serve *s, json_t *p, struct serve_err *e);
json_t *serve_session_open(struct serve *s, json_t *p, struct serve_err *e);
json_t *serve_session_close(struct serve *s, json_t *p, struct serve_err *e);
json_t *serve_interrupt(struct serve *s, json_t *p, struct serve_err *e);

/*
 * Turns, in two steps so that a transport can answer "busy" (409) or
 * "bad request" before it starts streaming:
 *
 *   serve_turn_begin()  checks the parameters, stores the instruction
 *                       and claims the conversation (the run API's
 *                       begin). Returns the "started" object
 *                       {conversation, turn, parent, kind}.
 *   serve_turn_run()    gathers the context, sends the request and
 *                       commits the turn; each delta of the answer goes
 *                       to the callback as ("delta", {"text": ...}),
 *                       each retry as ("retry", {...}). Blocks. Returns
 *                       the final object of seed 001's execute contract
 *                       {kind, text, sources, warnings, error_code,
 *                       error_message, session, conversation, parent,
 *                       usage, status}.
 *   serve_turn_free()
 *
 * Parameters: {kind: continue|fork|rerun (default continue),
 * conversation (continue: the conversation; absent: a new one),
 * session (fork, rerun: the session to start from), instruction,
 * workspace, active_files: [paths], files: bool, rag: bool, model,
 * no_stream: bool, create: bool (continue: start the conversation of
 * that id when there is none), fork_conversation (fork: the id of the
 * new conversation; absent: a new UUID)}.
 *
 * The callback runs on the thread of serve_turn_run(); data is
 * borrowed for the call.
 */
typedef void (*serve_event_fn)(const char *event, json_t *data,
			       void *payload);

json_t *serve_turn_begin(struct serve_turn **out, struct serve *s,
			 json_t *p, serve_event_fn fn, void *payload,
			 struct serve_err *e);
/*
 * Ask fn (with payload) about each active file of the turn that holds a
 * credential, before serve_turn_run() sends it (the run API's
 * ask_credential; ACP asks its client). Without it, such files are
 * withheld. Set after serve_turn_begin(), before serve_turn_run().
 */
void serve_turn_set_ask(struct serve_turn *t, aptix_credential_ask_cb fn,
			void *payload);
json_t *serve_turn_run(struct serve_turn *t);
void serve_turn_free(struct serve_turn *t);
/* The conversation of a begun turn. */
const char *serve_turn_conversation(const struct serve_turn *t);
/*
 * What the run did (after serve_turn_run(): committed, completed, the
 * API's status and raw response...). Valid until serve_turn_free().
 */
const aptix_run_result *serve_turn_result(const struct serve_turn *t);

/* Cancel every running turn (they commit as failed). */
void serve_cancel_all(struct serve *s);

struct timespec;
/* The CLOCK_REALTIME time ms from now (pthread_cond_timedwait's). */
void serve_deadline(struct timespec *until, long ms);
/*
 * Wait until no turn runs or timeout_ms passed (< 0: forever); returns
 * the number still running.
 */
size_t serve_wait_idle(struct serve *s, long timeout_ms);

#endif
