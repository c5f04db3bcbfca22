/*
 * porcelain/serve.c - aptix serve: the store and its turns over HTTP,
 * with a page for browsers (serve/http.c; the routes: serve/openapi.json).
 *
 * It listens on 127.0.0.1 (another address only with --bind, and a
 * warning), on --port (0: any; printed) or on a unix socket. A bearer
 * token is made at each start: printed, and written (mode 0600) to
 * <store>/serve.token for the CLI and scripts; the page gets it in the
 * URL's fragment, which browsers never send. The API key stays in the
 * server's environment.
 *
 * SIGTERM or SIGINT: stop accepting, let the running turns finish for
 * --grace seconds, then cancel them (committed as failed, instruction
 * kept), and exit once their streams have ended.
 */
#ifndef _POSIX_C_SOURCE
# define _POSIX_C_SOURCE 200809L
#endif
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <aptix.h>

#include "cli.h"
#include "commands.h"
#include "parse-options.h"
#include "serve.h"
#include "http.h"

static const char *const serve_usage[] = {
	"aptix serve [--port <n> | --unix-socket <path>] [--bind <address>] "
	"[--workspace <id>] [--grace <seconds>] [--timeout <seconds>] "
	"[--max-connections <n>] [--max-body <bytes>] [--list-routes]",
	"",
	"Serves the store over HTTP on 127.0.0.1: the API (serve/openapi.json)",
	"and, at /, a page that draws the conversations and runs turns.",
	NULL
};

#define TOKEN_BYTES 24

static void make_token(char *out, size_t size)
{
	unsigned char raw[TOKEN_BYTES];
	size_t i;
	int fd = open("/dev/urandom", O_RDONLY | O_CLOEXEC);

	if (fd < 0 || read(fd, raw, sizeof(raw)) != (ssize_t)sizeof(raw))
		die_errno("cannot read /dev/urandom");
	close(fd);
	for (i = 0; i < sizeof(raw) && 2 * i + 2 < size; i++)
		snprintf(out + 2 * i, 3, "%02x", raw[i]);
}

/* <store>/serve.token, mode 0600, replaced at each start. */
static void write_token(const char *path, const char *token)
{
	int fd;

	unlink(path);
	fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
	if (fd < 0)
		die_errno("cannot write the token to '%s'", path);
	if (fchmod(fd, 0600) < 0 || write(fd, token, strlen(token)) < 0 ||
	    write(fd, "\n", 1) < 0 || close(fd) < 0)
		die_errno("cannot write the token to '%s'", path);
}

int cmd_serve(int argc, const char **argv, struct aptix_repo *repo)
{
	struct http_opts o;
	unsigned long port = 0, grace = 10, timeout = 30, maxconn = 64;
	unsigned long max_body = 1 << 20;
	const char *workspace = NULL;
	int list = 0, sig;
	char token[2 * TOKEN_BYTES + 1], err[512];
	aptix_buf token_path = APTIX_BUF_INIT;
	struct serve_err e = { 0, "", "" };
	struct serve *s = NULL;
	struct http_server *h = NULL;
	sigset_t set;
	struct option options[] = {
		OPT_ULONG(0, "port", &port, "the port (0: any, printed)"),
		OPT_STRING(0, "unix-socket", &o.unix_socket, "path",
			   "listen on a unix socket instead"),
		OPT_STRING(0, "bind", &o.bind, "address",
			   "listen on another IPv4 address than 127.0.0.1"),
		OPT_STRING(0, "workspace", &workspace, "id",
			   "the default workspace of lists and turns"),
		OPT_ULONG(0, "grace", &grace, "seconds running turns may "
			  "take to finish after SIGTERM (default 10)"),
		OPT_ULONG(0, "timeout", &timeout, "seconds before an idle "
			  "connection is closed (default 30)"),
		OPT_ULONG(0, "max-connections", &maxconn,
			  "connections at once (default 64)"),
		OPT_ULONG(0, "max-body", &max_body, "largest request body, "
			  "in bytes (default 1 MiB)"),
		OPT_BOOL(0, "list-routes", &list,
			 "print the routes served and exit"),
		OPT_END()
	};

	memset(&o, 0, sizeof(o));
	argc = parse_options(argc, argv, options, serve_usage, 0);
	if (argc)
		usage_with_options(serve_usage, options);
	if (list) {
		http_list_routes(stdout);
		return 0;
	}
	if (port > 65535 || !timeout || !maxconn || !max_body ||
	    timeout > 86400 || maxconn > 10000)
		die("--port, --timeout, --max-connections or --max-body is "
		    "out of range");
	if (o.unix_socket && (port || o.bind))
		die("--unix-socket cannot be used with --port or --bind");
	if (o.bind && strcmp(o.bind, "127.0.0.1"))
		warning("listening on %s: anyone who can reach it and has "
			"the token can read the store and run turns", o.bind);
	o.port = (unsigned)port;
	o.timeout = (unsigned)timeout;
	o.max_connections = (unsigned)maxconn;
	o.max_body = max_body;
	make_token(token, sizeof(token));
	o.token = token;

	if (serve_new(&s, repo, workspace, &e) < 0)
		die("%s", e.message);
	/* the signals are waited for by this thread only */
	sigemptyset(&set);
	sigaddset(&set, SIGTERM);
	sigaddset(&set, SIGINT);
	sigaddset(&set, SIGPIPE);
	pthread_sigmask(SIG_BLOCK, &set, NULL);
	if (http_start(&h, s, &o, err, sizeof(err)) < 0)
		die("%s", err);
	aptix_buf_printf(&token_path, "%s/serve.token", aptix_repo_path(repo));
	if (aptix_buf_oom(&token_path))
		die("out of memory");
	write_token(token_path.ptr, token);

	if (o.unix_socket) {
		printf("socket %s\n", o.unix_socket);
	} else {
		const char *addr = o.bind ? o.bind : "127.0.0.1";

		printf("url http://%s:%u/\n", addr, http_port(h));
		printf("page http://%s:%u/#token=%s\n", addr, http_port(h),
		       token);
	}
	printf("token %s\n", token);
	printf("token-file %s\n", token_path.ptr);
	fflush(stdout);

	sigdelset(&set, SIGPIPE);
	if (sigwait(&set, &sig))
		die_errno("sigwait");
	fprintf(stderr, "aptix serve: %s: stopping\n",
		sig == SIGTERM ? "SIGTERM" : "SIGINT");
	http_quiesce(h);
	if (serve_wait_idle(s, (long)grace * 1000)) {
		fprintf(stderr, "aptix serve: cancelling the turns still "
			"running\n");
		serve_cancel_all(s);
		serve_wait_idle(s, -1);
	}
	http_stop(h);
	unlink(token_path.ptr);
	aptix_buf_release(&token_path);
	serve_free(s);
	return 0;
}
