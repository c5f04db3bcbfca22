/*
 * serve/jsonrpc.h - the JSON-RPC 2.0 transport of `aptix app-server`:
 * one JSON object per line in, one per line out (serve/PROTOCOL.md).
 *
 * Requests are handled in the order they arrive; a turn is begun at once
 * (its response says whether it started) and then runs in a thread of
 * its own, its notifications interleaved with the responses to the
 * requests that follow.
 */
#ifndef APTIX_JSONRPC_H
#define APTIX_JSONRPC_H

#include <signal.h>
#include "serve.h"

struct jsonrpc;

/* Messages longer than this are refused (-32600) and skipped. */
#define JSONRPC_MAX_LINE (16 << 20)
/*
 * The most bytes of messages waiting for a client that does not read
 * them (a pipe full of them): past it the client is taken as gone, the
 * connection ends (jsonrpc_run_stdio() says so on stderr), the running
 * turns get the grace and are committed. Sending never blocks.
 */
#define JSONRPC_MAX_QUEUE ((size_t)64 << 20)

/*
 * A dialect: the methods one protocol serves over this transport
 * (app-server's, ACP's: serve/acp.c).
 *
 *   dispatch  a request (id set) or a notification (id NULL); params
 *             is an object (empty when absent), borrowed for the call.
 *             A request must be answered (jsonrpc_send_result() or
 *             jsonrpc_send_error()), now or later from another thread.
 *   response  the answer to a request this side sent (a message with
 *             an id, a result or an error, and no method); NULL: such
 *             messages are refused as invalid requests.
 *   eof       reading has ended (may be NULL): threads waiting for
 *             the client's answers must stop waiting.
 */
struct jsonrpc_dialect {
	void (*dispatch)(struct jsonrpc *j, json_t *id, const char *method,
			 json_t *params, void *ctx);
	void (*response)(struct jsonrpc *j, json_t *msg, void *ctx);
	void *ctx;
	/* the end of input (or a signal): nothing more will be read */
	void (*eof)(struct jsonrpc *j, void *ctx);
};

/* JSON-RPC 2.0's codes, and the server-defined ones aptix uses. */
enum {
	RPC_PARSE_ERROR = -32700,
	RPC_INVALID_REQUEST = -32600,
	RPC_METHOD_NOT_FOUND = -32601,
	RPC_INVALID_PARAMS = -32602,
	RPC_INTERNAL_ERROR = -32603,
	/* server-defined (-32000 to -32099) */
	RPC_NOT_FOUND = -32004,
	RPC_BUSY = -32009,
	RPC_NOT_SUPPORTED = -32001,
	RPC_STORE_FULL = -32007
};

/*
 * out_fd: where responses and notifications go (written whole lines).
 * jsonrpc_new() serves app-server's methods (serve/PROTOCOL.md).
 */
int jsonrpc_new(struct jsonrpc **out, struct serve *s, int out_fd);
int jsonrpc_new_dialect(struct jsonrpc **out, struct serve *s, int out_fd,
			const struct jsonrpc_dialect *d);

/*
 * Writing, from any thread (each message is one line, written whole).
 * The json_t arguments result, data and params are taken (stolen); id
 * and msg are borrowed.
 */
void jsonrpc_send(struct jsonrpc *j, json_t *msg);
/* Another bound than JSONRPC_MAX_QUEUE (aptix acp --max-queue). */
void jsonrpc_set_max_queue(struct jsonrpc *j, size_t max);
void jsonrpc_send_result(struct jsonrpc *j, json_t *id, json_t *result);
void jsonrpc_send_error(struct jsonrpc *j, json_t *id, int code,
			const char *message, json_t *data);
void jsonrpc_notify(struct jsonrpc *j, const char *method, json_t *params);
/*
 * A handler's error as a JSON-RPC error: its status mapped to a code
 * (400 -> -32602, 409 -> -32009...; 404 -> not_found, which each
 * protocol names), data {status, threadId of a busy conversation}.
 */
void jsonrpc_send_serve_error(struct jsonrpc *j, json_t *id,
			      const struct serve_err *e, int not_found);

/*
 * Run fn(arg) in a thread of its own (a turn); jsonrpc_shutdown() waits
 * for it. Without a thread (out of memory), fn runs before this returns.
 */
void jsonrpc_spawn(struct jsonrpc *j, void (*fn)(void *), void *arg);
/* Handle one line (without its newline). */
void jsonrpc_handle_line(struct jsonrpc *j, const char *line, size_t len);
/*
 * Read lines from in_fd until end of file (or *stop becomes non-zero,
 * checked between reads) and handle each.
 */
int jsonrpc_serve_fd(struct jsonrpc *j, int in_fd,
		     volatile sig_atomic_t *stop);
/*
 * Let the running turns finish for grace_ms (< 0: as long as they
 * take), then cancel them and wait
 * for their threads (their turn/completed notifications are written).
 */
void jsonrpc_shutdown(struct jsonrpc *j, long grace_ms);
/*
 * A command's whole life on stdin and stdout: SIGTERM and SIGINT stop
 * the reading (SIGPIPE is ignored), then running turns get grace_s
 * seconds before they are cancelled; at the end of input they are
 * waited for, or cancelled at once with cancel_at_eof (the client is
 * gone). Then the threads are joined.
 */
void jsonrpc_run_stdio(struct jsonrpc *j, unsigned long grace_s,
		       int cancel_at_eof);
void jsonrpc_free(struct jsonrpc *j);

#endif
