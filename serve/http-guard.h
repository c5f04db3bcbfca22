/*
 * serve/http-guard.h - a deadline on receiving a request, for `aptix
 * serve`'s connections.
 *
 * libmicrohttpd's connection timeout is an idle timeout: a client that
 * sends one byte of its request head every few seconds keeps its
 * connection (and its thread, and a place under the connection limit)
 * for as long as it likes, and 64 such clients keep everyone else out
 * (slowloris). The guard gives each request a total deadline instead:
 * from the moment a connection is accepted, or its previous response is
 * done, the whole request (head and body) must have arrived within the
 * deadline, else a thread of the guard shuts the socket down, and
 * libmicrohttpd's thread, seeing the end of the stream, closes the
 * connection. A request being answered has no deadline (a streamed turn
 * runs for minutes; the idle timeout and the stream's keep-alive lines
 * look after it).
 *
 * The guard knows connections by descriptor. libmicrohttpd tells of a
 * closed connection (guard_close()) before it closes the descriptor, and
 * the guard shuts a socket down only while it holds the connection in its
 * list, under its lock, so it never touches a descriptor reused by
 * another file.
 */
#ifndef APTIX_HTTP_GUARD_H
#define APTIX_HTTP_GUARD_H

struct http_guard;
struct guard_conn;

/* Start the guard's thread: deadline in seconds (> 0). */
int guard_start(struct http_guard **out, unsigned deadline);
/* Stop the thread and free (the connections must have been closed). */
void guard_stop(struct http_guard *g);

/* A connection accepted on fd: its first request is being received. */
struct guard_conn *guard_open(struct http_guard *g, int fd);
/* The connection is closed (its descriptor still open); frees c. */
void guard_close(struct http_guard *g, struct guard_conn *c);
/* The request has arrived whole: no deadline while it is answered. */
void guard_received(struct http_guard *g, struct guard_conn *c);
/* The response is done: the next request is awaited (a new deadline). */
void guard_idle(struct http_guard *g, struct guard_conn *c);

#endif
