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

/* out_fd: where responses and notifications go (written whole lines). */
int jsonrpc_new(struct jsonrpc **out, struct serve *s, int out_fd);
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
void jsonrpc_free(struct jsonrpc *j);

#endif
