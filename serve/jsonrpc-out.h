/*
 * serve/jsonrpc-out.h - the JSON-RPC transport's output queue and its
 * writer thread (serve/jsonrpc-out.c): sending never blocks on a client
 * that stops reading.
 */
#ifndef APTIX_JSONRPC_OUT_H
#define APTIX_JSONRPC_OUT_H

#include <stddef.h>

struct jsonrpc_out;

/*
 * Start the writer of fd. Past max bytes queued (a single message is
 * taken whatever its size), the client is gone: on_overflow(ctx) is
 * called once, from the thread that put the message. 0, or -1.
 */
int jsonrpc_out_new(struct jsonrpc_out **out, int fd, size_t max,
		    void (*on_overflow)(void *ctx), void *ctx);
/* Queue a copy of s; never waits. 0, or -1 when it is dropped. */
int jsonrpc_out_put(struct jsonrpc_out *o, const char *s, size_t len);
/* Change the bound. */
void jsonrpc_out_set_max(struct jsonrpc_out *o, size_t max);
/* The bound was passed: the client was taken as gone. */
int jsonrpc_out_overflowed(struct jsonrpc_out *o);
/* Wait until all is written, the client is gone or timeout_ms passed. */
void jsonrpc_out_flush(struct jsonrpc_out *o, long timeout_ms);
/* Stop the writer (what is not written is dropped) and free. */
void jsonrpc_out_free(struct jsonrpc_out *o);

#endif
