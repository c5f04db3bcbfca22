/*
 * serve/http.h - the HTTP transport of `aptix serve`: libmicrohttpd, a
 * thread per connection, the routes of serve/openapi.json mapped onto
 * the handlers of serve.h, turns streamed as Server-Sent Events.
 *
 * Security (a local web server is reachable by every page the user's
 * browser opens): every /api/ route needs the bearer token; the Host
 * header must name the listening address (DNS rebinding: 421); a request
 * that changes something and carries a foreign Origin gets 403; no CORS
 * header is ever sent; a request with two Host headers, or a body length
 * given twice (Content-Length and Transfer-Encoding), gets 400, as from
 * a proxy-safe server; bodies, headers, connections (in all and per
 * client address), idle time and the time to send a whole request are
 * capped (http-guard.h).
 */
#ifndef APTIX_HTTP_SERVE_H
#define APTIX_HTTP_SERVE_H

#include <stdio.h>
#include "serve.h"

struct http_opts {
	const char *bind;		/* an IPv4 address (NULL: 127.0.0.1) */
	unsigned port;			/* 0: any */
	const char *unix_socket;	/* a path: listen there instead */
	const char *token;		/* the bearer token (required) */
	size_t max_body;		/* bytes (0: 1 MiB) */
	size_t max_header;		/* per connection (0: 32 KiB) */
	unsigned timeout;		/* idle seconds (0: 30) */
	unsigned request_timeout;	/* seconds to send a request (0: 10) */
	unsigned max_connections;	/* (0: 64) */
	unsigned max_per_address;	/* from one client address (0: 16) */
};

struct http_server;

/* Start listening; err gets a message on failure. */
int http_start(struct http_server **out, struct serve *s,
	       const struct http_opts *o, char *err, size_t errlen);
/* The port listened on (0 for a unix socket). */
unsigned http_port(const struct http_server *h);
/*
 * The i-th "address:port" a client may name in its Host header (NULL
 * past the last): 127.0.0.1 first, then localhost, then the --bind
 * address, or for 0.0.0.0 the addresses of this host's interfaces.
 */
const char *http_host(const struct http_server *h, size_t i);
/* Stop accepting connections (the open ones go on). */
void http_quiesce(struct http_server *h);
/*
 * Wait until the streams of the turns still running have ended (after
 * the turns themselves: serve_wait_idle()), then close everything.
 */
void http_stop(struct http_server *h);

/* The route table, one "METHOD /path/{param}" per line. */
void http_list_routes(FILE *fp);

#endif
