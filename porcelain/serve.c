/*
 * porcelain/serve.c - aptix serve: the store and its turns over HTTP,
 * with a page for browsers (serve/http.c; the routes: serve/openapi.json).
 *
 * It listens on 127.0.0.1 (another address only with --bind, and a
 * warning), on --port (0: any; printed) or on a unix socket. A bearer
 * token is made at each start: printed, and written (mode 0600) to
 * <store>/serve.token for the CLI and scripts, or, while another server
 * holds that file, to <store>/serve.<pid>.token; the page gets it in the
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
	"[--request-timeout <seconds>] [--max-connections <n>] "
	"[--max-per-address <n>] [--max-body <bytes>] [--list-routes]",
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

/*
 * The token file. The first server on a store writes <store>/serve.token;
 * one started while another runs writes <store>/serve.<pid>.token (and
 * says so), so that neither clobbers the other's token. A server holds a
 * lock (fcntl) on its file as long as it runs: a serve.token nobody
 * holds was left by a server that is gone, and is replaced. A file
 * appears whole (written aside, then linked or renamed into place); at
 * exit a server removes its own file only.
 */
struct token_file {
	aptix_buf path;
	int fd;			/* open and locked while the server runs */
};

static int lock_fd(int fd)
{
	struct flock l;

	memset(&l, 0, sizeof(l));
	l.l_type = F_WRLCK;
	l.l_whence = SEEK_SET;
	return fcntl(fd, F_SETLK, &l);
}

static int same_file(const char *path, int fd)
{
	struct stat a, b;

	return !lstat(path, &a) && !fstat(fd, &b) && a.st_dev == b.st_dev &&
		a.st_ino == b.st_ino;
}

/*
 * Put the locked file tmp at path unless a running server holds the
 * file there: 1 done, 0 held by another, -1 error (errno).
 */
static int take_name(const char *tmp, const char *path)
{
	int old, r, tries;

	for (tries = 0; tries < 10; tries++) {
		if (!link(tmp, path))
			return 1;
		if (errno != EEXIST)
			return -1;
		old = open(path, O_RDWR | O_NOFOLLOW | O_CLOEXEC);
		if (old < 0 && errno == ELOOP)	/* a link: not a token */
			return rename(tmp, path) < 0 ? -1 : 1;
		if (old < 0) {
			if (errno == ENOENT)
				continue;
			return -1;
		}
		if (lock_fd(old) < 0) {
			r = errno == EAGAIN || errno == EACCES ? 0 : -1;
			close(old);
			return r;
		}
		/* nobody holds it (unless it was replaced meanwhile) */
		r = same_file(path, old) ? rename(tmp, path) : 1;
		close(old);	/* unlocks it */
		if (r <= 0)
			return r < 0 ? -1 : 1;
	}
	return 0;
}

static void write_token(struct token_file *tf, const char *dir,
			const char *token)
{
	aptix_buf tmp = APTIX_BUF_INIT;
	int r;

	aptix_buf_printf(&tmp, "%s/serve.token.XXXXXX", dir);
	aptix_buf_printf(&tf->path, "%s/serve.token", dir);
	if (aptix_buf_oom(&tmp) || aptix_buf_oom(&tf->path))
		die("out of memory");
	tf->fd = mkstemp(tmp.ptr);
	if (tf->fd < 0 || fchmod(tf->fd, 0600) < 0 ||
	    write(tf->fd, token, strlen(token)) < 0 ||
	    write(tf->fd, "\n", 1) < 0 || lock_fd(tf->fd) < 0)
		die_errno("cannot write the token to '%s'", tmp.ptr);
	r = take_name(tmp.ptr, tf->path.ptr);
	if (r < 0)
		die_errno("cannot write the token to '%s'", tf->path.ptr);
	if (!r) {
		aptix_buf_clear(&tf->path);
		aptix_buf_printf(&tf->path, "%s/serve.%ld.token", dir,
				 (long)getpid());
		if (aptix_buf_oom(&tf->path))
			die("out of memory");
		if (rename(tmp.ptr, tf->path.ptr) < 0)
			die_errno("cannot write the token to '%s'",
				  tf->path.ptr);
		warning("another server holds '%s/serve.token': this one's "
			"token is in '%s'", dir, tf->path.ptr);
	} else {
		unlink(tmp.ptr);	/* linked, or renamed: gone */
	}
	aptix_buf_release(&tmp);
}

/* Remove the token file if it is still this server's. */
static void remove_token(struct token_file *tf)
{
	if (same_file(tf->path.ptr, tf->fd))
		unlink(tf->path.ptr);
	close(tf->fd);
	aptix_buf_release(&tf->path);
}

/*
 * Print the addresses to use. 0.0.0.0 is no address to connect to: the
 * URL printed is the loopback one, and each other address of the host
 * follows on an "also" line.
 */
static void print_urls(const struct http_opts *o, struct http_server *h,
		       const char *token)
{
	const char *addr;
	size_t i;

	if (o->unix_socket) {
		printf("socket %s\n", o->unix_socket);
		return;
	}
	addr = o->bind && strcmp(o->bind, "0.0.0.0") ? o->bind :
		"127.0.0.1";
	printf("url http://%s:%u/\n", addr, http_port(h));
	printf("page http://%s:%u/#token=%s\n", addr, http_port(h), token);
	if (o->bind && !strcmp(o->bind, "0.0.0.0"))
		for (i = 2; http_host(h, i); i++)	/* after localhost */
			printf("also http://%s/\n", http_host(h, i));
}

int cmd_serve(int argc, const char **argv, struct aptix_repo *repo)
{
	struct http_opts o;
	unsigned long port = 0, grace = 10, timeout = 30, maxconn = 64;
	unsigned long max_body = 1 << 20, request_timeout = 10, per_addr = 16;
	const char *workspace = NULL;
	int list = 0, sig;
	char token[2 * TOKEN_BYTES + 1], err[512];
	struct token_file tf = { APTIX_BUF_INIT, -1 };
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
		OPT_ULONG(0, "request-timeout", &request_timeout, "seconds "
			  "a client has to send a whole request (default 10)"),
		OPT_ULONG(0, "max-connections", &maxconn,
			  "connections at once (default 64)"),
		OPT_ULONG(0, "max-per-address", &per_addr, "connections at "
			  "once from one client address (default 16)"),
		OPT_ULONG(0, "max-body", &max_body, "largest request body, "
			  "in bytes (default 1 MiB)"),
		OPT_BOOL(0, "list-routes", &list,
			 "print the routes served and exit"),
		OPT_END()
	};

	memset(&o, 0, sizeof(o));
	parse_options(argc, argv, options, serve_usage, PARSE_OPT_NO_ARGS);
	if (list) {
		http_list_routes(stdout);
		return 0;
	}
	if (port > 65535 || !timeout || !maxconn || !max_body ||
	    timeout > 86400 || maxconn > 10000 || !request_timeout ||
	    request_timeout > 86400 || !per_addr || per_addr > 10000)
		die("--port, --timeout, --request-timeout, --max-connections, "
		    "--max-per-address or --max-body is out of range");
	if (o.unix_socket && (port || o.bind))
		die("--unix-socket cannot be used with --port or --bind");
	if (o.bind && strcmp(o.bind, "127.0.0.1"))
		warning("listening on %s%s: anyone who can reach it and has "
			"the token can read the store and run turns", o.bind,
			strcmp(o.bind, "0.0.0.0") ? "" :
			" (every address of this host)");
	o.port = (unsigned)port;
	o.timeout = (unsigned)timeout;
	o.request_timeout = (unsigned)request_timeout;
	o.max_per_address = (unsigned)per_addr;
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
	write_token(&tf, aptix_repo_path(repo), token);
	print_urls(&o, h, token);
	printf("token %s\n", token);
	printf("token-file %s\n", tf.path.ptr);
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
	remove_token(&tf);
	serve_free(s);
	return 0;
}
