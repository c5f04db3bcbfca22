/*
 * serve/http.c - `aptix serve`'s HTTP transport (see http.h): the route
 * table, the security checks every request goes through, the mapping of
 * requests onto the handlers of serve.h, and turns streamed as
 * Server-Sent Events.
 *
 * libmicrohttpd runs a thread per connection, so a handler may block: a
 * turn without streaming runs on its connection's thread. A streamed
 * turn runs on a thread of its own that queues its events; the
 * connection's thread hands them to the client as they come (and a
 * comment line now and then, so that an idle stream is not timed out).
 * A client that goes away does not stop the turn: it is committed all
 * the same.
 */
#ifndef _POSIX_C_SOURCE
# define _POSIX_C_SOURCE 200809L
#endif
#include <arpa/inet.h>
#include <dlfcn.h>
#include <errno.h>
#include <ifaddrs.h>
#include <netinet/in.h>
#include <pthread.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>
#include <microhttpd.h>

#include "http.h"
#include "http-guard.h"
#include "page-files.h"
#include "events.h"

#define DEFAULT_MAX_BODY (1 << 20)
#define DEFAULT_MAX_HEADER (32 << 10)
#define DEFAULT_TIMEOUT 30
#define DEFAULT_REQUEST_TIMEOUT 10
#define DEFAULT_MAX_CONNECTIONS 64
#define DEFAULT_MAX_PER_ADDRESS 16
#define MAX_HOSTS 16
/* At shutdown, how long clients may take to read their last events. */
#define STOP_DRAIN_SECONDS 5

/*
 * libmicrohttpd is loaded by `aptix serve` only (dlopen), as src/http/http.c
 * loads libcurl: linked in, it and GnuTLS would be loaded by every
 * command, some 15 ms of CPU at each start. <microhttpd.h> gives the
 * types and constants; the functions are called through this table.
 */
static struct {
	struct MHD_Daemon *(*start_daemon)(unsigned flags, uint16_t port,
					   MHD_AcceptPolicyCallback apc,
					   void *apc_cls,
					   MHD_AccessHandlerCallback dh,
					   void *dh_cls, ...);
	void (*stop_daemon)(struct MHD_Daemon *d);
	MHD_socket (*quiesce_daemon)(struct MHD_Daemon *d);
	const union MHD_DaemonInfo *(*get_daemon_info)(
		struct MHD_Daemon *d, enum MHD_DaemonInfoType type, ...);
	const char *(*lookup_connection_value)(struct MHD_Connection *c,
					       enum MHD_ValueKind kind,
					       const char *key);
	struct MHD_Response *(*create_response_from_buffer)(
		size_t size, void *buffer, enum MHD_ResponseMemoryMode mode);
	struct MHD_Response *(*create_response_from_callback)(
		uint64_t size, size_t block_size,
		MHD_ContentReaderCallback crc, void *crc_cls,
		MHD_ContentReaderFreeCallback crfc);
	enum MHD_Result (*add_response_header)(struct MHD_Response *r,
					       const char *header,
					       const char *content);
	enum MHD_Result (*queue_response)(struct MHD_Connection *c,
					  unsigned int status_code,
					  struct MHD_Response *r);
	void (*destroy_response)(struct MHD_Response *r);
	const union MHD_ConnectionInfo *(*get_connection_info)(
		struct MHD_Connection *c, enum MHD_ConnectionInfoType type,
		...);
	int (*get_connection_values)(struct MHD_Connection *c,
				     enum MHD_ValueKind kind,
				     MHD_KeyValueIterator it, void *it_cls);
} M;

#define LIBMICROHTTPD "libmicrohttpd.so.12"

static int load_mhd(char *err, size_t errlen)
{
	static const char *const names[] = {
		"MHD_start_daemon", "MHD_stop_daemon", "MHD_quiesce_daemon",
		"MHD_get_daemon_info", "MHD_lookup_connection_value",
		"MHD_create_response_from_buffer",
		"MHD_create_response_from_callback",
		"MHD_add_response_header", "MHD_queue_response",
		"MHD_destroy_response", "MHD_get_connection_info",
		"MHD_get_connection_values"
	};
	void *slots[sizeof(names) / sizeof(names[0])];
	void *lib, *sym;
	size_t i;

	if (M.start_daemon)
		return 0;
	if (!(lib = dlopen(LIBMICROHTTPD, RTLD_NOW | RTLD_LOCAL))) {
		snprintf(err, errlen, "cannot load %s: %s (Debian: apt-get "
			 "install libmicrohttpd12)", LIBMICROHTTPD, dlerror());
		return -1;
	}
	for (i = 0; i < sizeof(names) / sizeof(names[0]); i++) {
		if (!(sym = dlsym(lib, names[i]))) {
			snprintf(err, errlen, "cannot load %s: no %s",
				 LIBMICROHTTPD, names[i]);
			dlclose(lib);
			return -1;
		}
		slots[i] = sym;
	}
	/* POSIX: a function pointer fits in a void *; in names' order */
	memcpy(&M.start_daemon, &slots[0], sizeof(void *));
	memcpy(&M.stop_daemon, &slots[1], sizeof(void *));
	memcpy(&M.quiesce_daemon, &slots[2], sizeof(void *));
	memcpy(&M.get_daemon_info, &slots[3], sizeof(void *));
	memcpy(&M.lookup_connection_value, &slots[4], sizeof(void *));
	memcpy(&M.create_response_from_buffer, &slots[5], sizeof(void *));
	memcpy(&M.create_response_from_callback, &slots[6],
	       sizeof(void *));
	memcpy(&M.add_response_header, &slots[7], sizeof(void *));
	memcpy(&M.queue_response, &slots[8], sizeof(void *));
	memcpy(&M.destroy_response, &slots[9], sizeof(void *));
	memcpy(&M.get_connection_info, &slots[10], sizeof(void *));
	memcpy(&M.get_connection_values, &slots[11], sizeof(void *));
	return 0;
}

enum route_id {
	R_PAGE, R_STATIC, R_LIST, R_CONV, R_CONV_PATCH, R_INTERRUPT,
	R_TURN, R_TURN_FULL, R_OBJECT, R_GRAPH, R_EXECUTE, R_WS_SESSIONS,
	R_SESSIONS, R_SESSION_MSG, R_SESSION_DEL, R_EVENTS, R_SEARCH
};

/*
 * The routes; serve/openapi.json documents each (t8102 checks that the
 * two agree). {x} matches one path segment; {path} in the workspaces
 * route matches the rest up to "/sessions" (a decoded path holds
 * slashes).
 */
typedef json_t *(*handler_fn)(struct serve *, json_t *, struct serve_err *);

static const struct route {
	const char *method;
	const char *path;
	enum route_id id;
	const char *arg;	/* the parameter the path's {x} gives */
	handler_fn fn;		/* answers the route; NULL: route() does */
	unsigned ok;		/* fn's status on success */
} routes[] = {
	{ "GET", "/", R_PAGE, NULL, NULL, 0 },
	{ "GET", "/static/{file}", R_STATIC, NULL, NULL, 0 },
	{ "GET", "/api/conversations", R_LIST, NULL,
	  serve_list_conversations, 200 },
	{ "GET", "/api/conversations/{id}", R_CONV, "conversation",
	  serve_read_conversation, 200 },
	{ "PATCH", "/api/conversations/{id}", R_CONV_PATCH, "conversation",
	  NULL, 0 },
	{ "POST", "/api/conversations/{id}/interrupt", R_INTERRUPT,
	  "conversation", serve_interrupt, 200 },
	{ "GET", "/api/turns/{session}", R_TURN, "session", serve_read_turn,
	  200 },
	{ "GET", "/api/turns/{session}/full", R_TURN_FULL, "session",
	  serve_read_turn, 200 },
	{ "GET", "/api/objects/{id}", R_OBJECT, NULL, NULL, 0 },
	{ "GET", "/api/graph", R_GRAPH, NULL, serve_graph, 200 },
	{ "GET", "/api/events", R_EVENTS, NULL, NULL, 0 },
	{ "GET", "/api/search", R_SEARCH, NULL, serve_search, 200 },
	{ "POST", "/api/ai/agent/execute", R_EXECUTE, NULL, NULL, 0 },
	{ "GET", "/api/workspaces/{path}/sessions", R_WS_SESSIONS,
	  "workspace", serve_workspace_sessions, 200 },
	{ "POST", "/api/sessions", R_SESSIONS, NULL, serve_session_open,
	  201 },
	{ "POST", "/api/sessions/{id}/messages", R_SESSION_MSG,
	  "conversation", NULL, 0 },
	{ "DELETE", "/api/sessions/{id}", R_SESSION_DEL, "sessionId",
	  serve_session_close, 200 },
};

#define NROUTES (sizeof(routes) / sizeof(routes[0]))

struct http_server {
	struct MHD_Daemon *d;
	struct serve *srv;
	struct http_opts o;
	char hosts[MAX_HOSTS][80];	/* Host values accepted */
	size_t nhosts;
	unsigned port;
	int listen_fd;
	struct http_guard *guard;	/* the request deadline */
	dev_t sock_dev;			/* the unix socket made, to remove */
	ino_t sock_ino;
	pthread_mutex_t lock;
	pthread_cond_t cond;
	size_t streams;			/* stream threads alive */
	size_t responses;		/* streamed responses not yet sent */
	/*
	 * Stream threads are joined, not detached (as app-server's turn
	 * threads: serve/jsonrpc.c): a detached thread that has said it
	 * is done may still be freeing its thread-local state when the
	 * process exits. Slot states: 0 free, 1 running, 2 finished and
	 * not joined yet. Under lock.
	 */
	pthread_t *tids;
	unsigned char *slot_state;
	size_t nslots;
	struct events *events;		/* the store's ref updates */
};

struct req {
	aptix_buf body;
	int too_big;
};

void http_list_routes(FILE *fp)
{
	size_t i;

	for (i = 0; i < NROUTES; i++)
		fprintf(fp, "%s %s\n", routes[i].method, routes[i].path);
}

/* ---- responses ---- */

static void security_headers(struct MHD_Response *r)
{
	M.add_response_header(r, "X-Content-Type-Options", "nosniff");
	M.add_response_header(r, "Cache-Control", "no-store");
	M.add_response_header(r, "Referrer-Policy", "no-referrer");
	M.add_response_header(r, "X-Frame-Options", "DENY");
	M.add_response_header(r, "Content-Security-Policy",
				"default-src 'none'; script-src 'self'; "
				"style-src 'self'; connect-src 'self'; "
				"img-src 'self' data:; base-uri 'none'; "
				"form-action 'none'; frame-ancestors 'none'");
}

static enum MHD_Result respond_bytes(struct MHD_Connection *c,
				     unsigned status, const char *type,
				     const void *data, size_t len)
{
	struct MHD_Response *r;
	enum MHD_Result ret;

	r = M.create_response_from_buffer(len, (void *)data,
					    MHD_RESPMEM_MUST_COPY);
	if (!r)
		return MHD_NO;
	M.add_response_header(r, "Content-Type", type);
	security_headers(r);
	ret = M.queue_response(c, status, r);
	M.destroy_response(r);
	return ret;
}

/* Send v (taking it) as JSON. */
static enum MHD_Result respond_json(struct MHD_Connection *c,
				    unsigned status, json_t *v)
{
	char *s = v ? json_dumps(v, JSON_COMPACT | JSON_ENCODE_ANY) : NULL;
	enum MHD_Result ret;

	json_decref(v);
	if (!s)
		return respond_bytes(c, 500, "application/json",
				     "{\"error\":{\"status\":500,\"message\":"
				     "\"out of memory\"}}", 51);
	ret = respond_bytes(c, status, "application/json", s, strlen(s));
	free(s);
	return ret;
}

static enum MHD_Result respond_error(struct MHD_Connection *c,
				     unsigned status, const char *message,
				     const char *busy)
{
	json_t *e = json_object();

	json_object_set_new(e, "status", json_integer(status));
	json_object_set_new(e, "message", aptix_view_str(message));
	if (busy && *busy)
		json_object_set_new(e, "conversation", json_string(busy));
	return respond_json(c, status, json_pack("{s:o}", "error", e));
}

static enum MHD_Result respond_serve_err(struct MHD_Connection *c,
					 const struct serve_err *e)
{
	return respond_error(c, e->status ? (unsigned)e->status : 500,
			     e->message, e->busy);
}

/* ---- checks ---- */

static int token_ok(const struct http_server *h, struct MHD_Connection *c)
{
	const char *a = M.lookup_connection_value(c, MHD_HEADER_KIND,
						    "Authorization");
	const char *t = h->o.token;
	size_t n = strlen(t), i;
	unsigned char diff = 0;

	if (!a || strncmp(a, "Bearer ", 7) || strlen(a + 7) != n)
		return 0;
	for (i = 0; i < n; i++)	/* in constant time */
		diff |= (unsigned char)(a[7 + i] ^ t[i]);
	return !diff;
}

static int host_ok(const struct http_server *h, const char *host)
{
	size_t i;

	if (h->o.unix_socket)
		return 1;	/* no browser reaches a unix socket */
	if (!host)
		return 0;
	for (i = 0; i < h->nhosts; i++)
		if (!strcmp(host, h->hosts[i]))
			return 1;
	return 0;
}

/* An Origin, when there is one, must be ours ("http://" + a host). */
static int origin_ok(const struct http_server *h, const char *origin)
{
	if (!origin)
		return 1;
	if (strncmp(origin, "http://", 7))
		return 0;
	if (h->o.unix_socket)
		return 0;
	return host_ok(h, origin + 7);
}

static int changes_state(const char *method)
{
	return strcmp(method, "GET") && strcmp(method, "HEAD") &&
		strcmp(method, "OPTIONS");
}

/* ---- routing ---- */

/*
 * Does url match the pattern? Parameters are copied into args (each
 * at most argsz bytes); returns the number captured, or -1.
 */
static int match(const char *pat, const char *url, char args[][512],
		 size_t nargs)
{
	size_t n = 0, len;
	const char *end;

	if (!strcmp(pat, "/api/workspaces/{path}/sessions")) {
		static const char pre[] = "/api/workspaces/";
		static const char suf[] = "/sessions";

		len = strlen(url);
		if (strncmp(url, pre, sizeof(pre) - 1) ||
		    len < sizeof(pre) - 1 + sizeof(suf) ||
		    strcmp(url + len - (sizeof(suf) - 1), suf))
			return -1;
		len -= sizeof(pre) - 1 + sizeof(suf) - 1;
		if (!len || len >= sizeof(args[0]))
			return -1;
		memcpy(args[0], url + sizeof(pre) - 1, len);
		args[0][len] = '\0';
		return 1;
	}
	while (*pat && *url) {
		if (*pat == '{') {
			pat = strchr(pat, '}') + 1;
			end = strchr(url, '/');
			len = end ? (size_t)(end - url) : strlen(url);
			if (!len || n >= nargs || len >= sizeof(args[0]))
				return -1;
			memcpy(args[n], url, len);
			args[n++][len] = '\0';
			url += len;
			continue;
		}
		if (*pat++ != *url++)
			return -1;
	}
	return *pat || *url ? -1 : (int)n;
}

static int query_bool(json_t *p, struct MHD_Connection *c, const char *key)
{
	const char *v = M.lookup_connection_value(c, MHD_GET_ARGUMENT_KIND,
						    key);

	if (!v)
		return 0;
	if (!strcmp(v, "1") || !strcmp(v, "true") || !*v)
		json_object_set_new(p, key, json_true());
	else if (!strcmp(v, "0") || !strcmp(v, "false"))
		json_object_set_new(p, key, json_false());
	else
		return -1;
	return 0;
}

static int query_params(json_t *p, struct MHD_Connection *c)
{
	static const char *const strs[] = { "workspace", "q", "cursor",
		"conversation", "since", "until", "status", "model", NULL };
	const char *v;
	char *end;
	long n;
	size_t i;

	for (i = 0; strs[i]; i++)
		if ((v = M.lookup_connection_value(c, MHD_GET_ARGUMENT_KIND,
						     strs[i])))
			json_object_set_new(p, strs[i], aptix_view_str(v));
	if (query_bool(p, c, "all") < 0 || query_bool(p, c, "archived") < 0)
		return -1;
	v = M.lookup_connection_value(c, MHD_GET_ARGUMENT_KIND, "limit");
	if (v) {
		errno = 0;
		n = strtol(v, &end, 10);
		if (errno || !*v || *end)
			return -1;
		json_object_set_new(p, "limit", json_integer(n));
	}
	return 0;
}

/* ---- streamed turns ---- */

struct stream {
	struct http_server *h;
	struct serve_turn *t;
	pthread_mutex_t lock;
	pthread_cond_t cond;
	aptix_buf q;		/* events not yet sent */
	size_t off;
	int done, refs;
	long keepalive_ms;
	size_t slot;		/* its thread's (-1: none) */
};

static void stream_unref(struct stream *st)
{
	int last;

	pthread_mutex_lock(&st->lock);
	last = !--st->refs;
	pthread_mutex_unlock(&st->lock);
	if (!last)
		return;
	serve_turn_free(st->t);
	aptix_buf_release(&st->q);
	pthread_cond_destroy(&st->cond);
	pthread_mutex_destroy(&st->lock);
	free(st);
}

/* Queue one event: "event: <name>\ndata: <json>\n\n". */
static void stream_put(struct stream *st, const char *event, json_t *data,
		       int done)
{
	char *s = json_dumps(data, JSON_COMPACT | JSON_ENCODE_ANY);

	pthread_mutex_lock(&st->lock);
	if (s)
		aptix_buf_printf(&st->q, "event: %s\ndata: %s\n\n", event, s);
	if (done)
		st->done = 1;
	pthread_cond_broadcast(&st->cond);
	pthread_mutex_unlock(&st->lock);
	free(s);
}

static void on_event(const char *event, json_t *data, void *payload)
{
	stream_put(payload, event, data, 0);
}

static void *stream_thread(void *arg)
{
	struct stream *st = arg;
	struct http_server *h = st->h;
	size_t slot = st->slot;
	json_t *final = serve_turn_run(st->t);

	stream_put(st, "completed", final, 1);
	json_decref(final);
	stream_unref(st);
	pthread_mutex_lock(&h->lock);
	h->streams--;
	if (slot < h->nslots && h->slot_state[slot] == 1)
		h->slot_state[slot] = 2;
	pthread_cond_broadcast(&h->cond);
	pthread_mutex_unlock(&h->lock);
	return NULL;
}

/* Join the finished stream threads (under lock); a free slot or nslots. */
static size_t reap_streams(struct http_server *h)
{
	size_t i, free_slot = h->nslots;

	for (i = 0; i < h->nslots; i++) {
		if (h->slot_state[i] == 2) {
			pthread_join(h->tids[i], NULL);
			h->slot_state[i] = 0;
		}
		if (!h->slot_state[i] && free_slot == h->nslots)
			free_slot = i;
	}
	return free_slot;
}

/* A free slot for a new stream thread (under lock); nslots: none. */
static size_t stream_slot(struct http_server *h)
{
	size_t slot = reap_streams(h), n;
	pthread_t *t;
	unsigned char *st;

	if (slot < h->nslots)
		return slot;
	n = h->nslots ? 2 * h->nslots : 8;
	if (!(t = realloc(h->tids, n * sizeof(*t))))
		return h->nslots;
	h->tids = t;
	if (!(st = realloc(h->slot_state, n)))
		return h->nslots;
	memset(st + h->nslots, 0, n - h->nslots);
	h->slot_state = st;
	h->nslots = n;
	return slot;
}

/*
 * Run the stream's turn on a thread of its own, joinable, with every
 * signal blocked (they are for the main thread's sigwait).
 */
static void start_stream_thread(struct http_server *h, struct stream *st)
{
	sigset_t all, old;
	pthread_t th;
	int r;

	sigfillset(&all);
	pthread_mutex_lock(&h->lock);
	h->streams++;
	h->responses++;
	st->slot = stream_slot(h);
	pthread_sigmask(SIG_BLOCK, &all, &old);
	/* under the lock: the thread cannot be reaped before tids has it */
	r = st->slot < h->nslots ?
		pthread_create(&th, NULL, stream_thread, st) : -1;
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	if (!r) {
		h->tids[st->slot] = th;
		h->slot_state[st->slot] = 1;
	}
	pthread_mutex_unlock(&h->lock);
	if (r) {
		st->slot = (size_t)-1;
		stream_thread(st);	/* no thread: the events come at once */
	}
}

static ssize_t stream_read(void *cls, uint64_t pos, char *buf, size_t max)
{
	struct stream *st = cls;
	struct timespec until;
	size_t n;

	(void)pos;
	serve_deadline(&until, st->keepalive_ms);
	pthread_mutex_lock(&st->lock);
	while (st->off == st->q.len && !st->done)
		if (pthread_cond_timedwait(&st->cond, &st->lock, &until) ==
		    ETIMEDOUT)
			break;
	if (st->off == st->q.len) {
		n = st->done ? 0 : 3;
		pthread_mutex_unlock(&st->lock);
		if (!n)
			return MHD_CONTENT_READER_END_OF_STREAM;
		memcpy(buf, ":\n\n", n);	/* keep the stream alive */
		return (ssize_t)n;
	}
	n = st->q.len - st->off;
	if (n > max)
		n = max;
	memcpy(buf, st->q.ptr + st->off, n);
	st->off += n;
	if (st->off == st->q.len) {
		aptix_buf_clear(&st->q);
		st->off = 0;
	}
	pthread_mutex_unlock(&st->lock);
	return (ssize_t)n;
}

static void stream_free(void *cls)
{
	struct stream *st = cls;
	struct http_server *h = st->h;

	stream_unref(st);
	pthread_mutex_lock(&h->lock);
	h->responses--;
	pthread_cond_broadcast(&h->cond);
	pthread_mutex_unlock(&h->lock);
}

/* How long a stream stays silent before a comment line keeps it alive. */
static long keepalive_ms(const struct http_server *h)
{
	long ms = h->o.timeout * 1000L / 3;

	return ms > 15000 ? 15000 : ms < 300 ? 300 : ms;
}

/*
 * Begin a turn (refusals are answered here: 400, 404, 409), then
 * stream it, or run it and answer the final object.
 */
static enum MHD_Result run_turn(struct http_server *h,
				struct MHD_Connection *c, json_t *p)
{
	struct serve_err e = { 0, "", "" };
	const char *accept = M.lookup_connection_value(c, MHD_HEADER_KIND,
							 "Accept");
	struct stream *st = NULL;
	struct serve_turn *t = NULL;
	struct MHD_Response *r;
	json_t *started, *final;
	enum MHD_Result ret;
	int sse = accept && strstr(accept, "text/event-stream");

	if (sse && !(st = calloc(1, sizeof(*st))))
		return respond_error(c, 500, "out of memory", NULL);
	started = serve_turn_begin(&t, h->srv, p, sse ? on_event : NULL, st,
				   &e);
	if (!started) {
		serve_turn_free(t);
		free(st);
		return respond_serve_err(c, &e);
	}
	if (!sse) {
		json_decref(started);
		final = serve_turn_run(t);
		serve_turn_free(t);
		return respond_json(c, json_is_string(json_object_get(
			final, "session")) ? 200 : 500, final);
	}
	st->h = h;
	st->t = t;
	st->refs = 2;	/* the thread's and the response's */
	st->keepalive_ms = keepalive_ms(h);
	pthread_mutex_init(&st->lock, NULL);
	pthread_cond_init(&st->cond, NULL);
	stream_put(st, "started", started, 0);
	json_decref(started);
	r = M.create_response_from_callback(MHD_SIZE_UNKNOWN, 4096,
					      stream_read, st, stream_free);
	if (!r) {
		st->refs = 1;
		stream_unref(st);	/* the run is freed: committed failed */
		return MHD_NO;
	}
	M.add_response_header(r, "Content-Type", "text/event-stream");
	security_headers(r);
	start_stream_thread(h, st);
	ret = M.queue_response(c, 200, r);
	M.destroy_response(r);
	return ret;
}

/* ---- the store's updates ---- */

struct events_resp {
	struct events_sub *sub;
	long keepalive_ms;
};

static ssize_t events_reader(void *cls, uint64_t pos, char *buf, size_t max)
{
	struct events_resp *er = cls;
	size_t n = events_read(er->sub, buf, max, er->keepalive_ms);

	(void)pos;
	return n ? (ssize_t)n : MHD_CONTENT_READER_END_OF_STREAM;
}

static void events_done(void *cls)
{
	struct events_resp *er = cls;

	events_unsubscribe(er->sub);
	free(er);
}

/* GET /api/events: the ref updates from now on (events.h). */
static enum MHD_Result events_stream(struct http_server *h,
				     struct MHD_Connection *c)
{
	struct events_resp *er = calloc(1, sizeof(*er));
	struct MHD_Response *r;
	enum MHD_Result ret;

	if (!er || !(er->sub = events_subscribe(h->events))) {
		free(er);
		return respond_error(c, 500, "out of memory", NULL);
	}
	er->keepalive_ms = keepalive_ms(h);
	r = M.create_response_from_callback(MHD_SIZE_UNKNOWN, 4096,
					      events_reader, er, events_done);
	if (!r) {
		events_done(er);
		return MHD_NO;
	}
	M.add_response_header(r, "Content-Type", "text/event-stream");
	security_headers(r);
	ret = M.queue_response(c, 200, r);
	M.destroy_response(r);
	return ret;
}

/* ---- the routes ---- */

static const char *content_type_of(const char *name)
{
	const char *dot = strrchr(name, '.');

	if (dot && !strcmp(dot, ".html"))
		return "text/html; charset=utf-8";
	if (dot && !strcmp(dot, ".js"))
		return "text/javascript; charset=utf-8";
	if (dot && !strcmp(dot, ".css"))
		return "text/css; charset=utf-8";
	if (dot && !strcmp(dot, ".svg"))
		return "image/svg+xml";
	return "application/octet-stream";
}

static enum MHD_Result page_file(struct MHD_Connection *c, const char *name)
{
	const struct page_file *f;

	for (f = page_files; f->name; f++)
		if (!strcmp(f->name, name))
			return respond_bytes(c, 200, content_type_of(name),
					     f->data, f->size);
	return respond_error(c, 404, "no such file", NULL);
}

static enum MHD_Result object(struct http_server *h,
			      struct MHD_Connection *c, const char *id)
{
	struct serve_err e = { 0, "", "" };
	aptix_buf b = APTIX_BUF_INIT;
	struct MHD_Response *r;
	aptix_otype type;
	const char *ct;
	enum MHD_Result ret;

	if (serve_read_object(h->srv, id, &b, &type, &ct, &e) < 0) {
		aptix_buf_release(&b);
		return respond_serve_err(c, &e);
	}
	r = M.create_response_from_buffer(b.len, b.ptr,
					    MHD_RESPMEM_MUST_COPY);
	aptix_buf_release(&b);
	if (!r)
		return MHD_NO;
	M.add_response_header(r, "Content-Type", ct);
	M.add_response_header(r, "X-Aptix-Object-Type",
				aptix_otype_name(type));
	security_headers(r);
	ret = M.queue_response(c, 200, r);
	M.destroy_response(r);
	return ret;
}

static enum MHD_Result call(struct http_server *h, struct MHD_Connection *c,
			    handler_fn fn, json_t *p, unsigned ok)
{
	struct serve_err e = { 0, "", "" };
	json_t *v = fn(h->srv, p, &e);

	json_decref(p);
	return v ? respond_json(c, ok, v) : respond_serve_err(c, &e);
}

/* The body as a JSON object (NULL: answered with a 400). */
static json_t *body_object(struct MHD_Connection *c, const struct req *rq,
			   enum MHD_Result *ret)
{
	json_error_t err;
	json_t *v;
	char msg[256];

	v = rq->body.len ? json_loadb(rq->body.ptr, rq->body.len, 0, &err) :
		json_object();
	if (!v) {
		snprintf(msg, sizeof(msg), "malformed JSON: %s (line %d)",
			 err.text, err.line);
		*ret = respond_error(c, 400, msg, NULL);
		return NULL;
	}
	if (!json_is_object(v)) {
		json_decref(v);
		*ret = respond_error(c, 400, "the body is a JSON object", NULL);
		return NULL;
	}
	return v;
}

/* p[to] = p[from] when to is absent. */
static void alias(json_t *p, const char *to, const char *from)
{
	json_t *v = json_object_get(p, from);

	if (v && !json_object_get(p, to))
		json_object_set(p, to, v);
}

static enum MHD_Result route(struct http_server *h, struct MHD_Connection *c,
			     const struct route *rt, char args[][512],
			     const struct req *rq)
{
	json_t *p = NULL, *v;
	enum MHD_Result ret = MHD_NO;
	struct serve_err e = { 0, "", "" };

	if (rt->id == R_PAGE)
		return page_file(c, "index.html");
	if (rt->id == R_STATIC)
		return page_file(c, args[0]);
	if (rt->id == R_OBJECT)
		return object(h, c, args[0]);
	if (rt->id == R_EVENTS)
		return events_stream(h, c);
	if (!strcmp(rt->method, "GET")) {
		p = json_object();
		if (query_params(p, c) < 0) {
			json_decref(p);
			return respond_error(c, 400, "bad query parameter",
					     NULL);
		}
	} else if (!(p = body_object(c, rq, &ret))) {
		return ret;
	}
	/* a workspace is a path, not an id: any bytes, shown lossily */
	if (rt->arg)
		json_object_set_new(p, rt->arg, rt->id == R_WS_SESSIONS ?
				    aptix_view_str(args[0]) :
				    json_string(args[0]));
	if (rt->id == R_TURN || rt->id == R_TURN_FULL)
		json_object_set_new(p, "full", json_boolean(rt->id ==
							     R_TURN_FULL));
	if (rt->fn)
		return call(h, c, rt->fn, p, rt->ok);
	switch (rt->id) {
	case R_CONV_PATCH:
		if (!json_object_get(p, "title") &&
		    !json_object_get(p, "archived")) {
			json_decref(p);
			return respond_error(c, 400, "nothing to change: "
					     "title or archived", NULL);
		}
		v = NULL;
		if (json_object_get(p, "title") &&
		    !(v = serve_rename(h->srv, p, &e))) {
			json_decref(p);
			return respond_serve_err(c, &e);
		}
		if (json_object_get(p, "archived")) {
			json_decref(v);
			return call(h, c, serve_archive, p, 200);
		}
		json_decref(p);
		return respond_json(c, 200, v);
	case R_SESSION_MSG:
		alias(p, "instruction", "message");
		alias(p, "instruction", "content");
		json_object_set_new(p, "kind", json_string("continue"));
		break;
	case R_EXECUTE:
		/* seed 001: mode, or a session given alone, means a fork */
		alias(p, "kind", "mode");
		if (!json_object_get(p, "kind") &&
		    json_object_get(p, "session") &&
		    !json_object_get(p, "conversation"))
			json_object_set_new(p, "kind", json_string("fork"));
		break;
	default:
		json_decref(p);
		return respond_error(c, 404, "no such route", NULL);
	}
	ret = run_turn(h, c, p);
	json_decref(p);
	return ret;
}

struct head_count {
	unsigned host, length, encoding;
	const char *te;
};

static enum MHD_Result count_header(void *cls, enum MHD_ValueKind kind,
				    const char *key, const char *value)
{
	struct head_count *n = cls;

	(void)kind;
	if (!strcasecmp(key, "Host")) {
		n->host++;
	} else if (!strcasecmp(key, "Content-Length")) {
		n->length++;
	} else if (!strcasecmp(key, "Transfer-Encoding")) {
		n->encoding++;
		n->te = value;
	}
	return MHD_YES;
}

/*
 * A head that another server (a proxy in front of this one) could read
 * otherwise than libmicrohttpd does, which is how requests are smuggled:
 * a message saying why, or NULL.
 */
static const char *ambiguous_head(struct MHD_Connection *c)
{
	struct head_count n = { 0, 0, 0, NULL };

	M.get_connection_values(c, MHD_HEADER_KIND, count_header, &n);
	if (n.host > 1)
		return "more than one Host header";
	if (n.length > 1 || n.encoding > 1)
		return "the length of the body is given more than once";
	if (n.length && n.encoding)
		return "both Content-Length and Transfer-Encoding";
	if (n.encoding && (!n.te || strcasecmp(n.te, "chunked")))
		return "a Transfer-Encoding other than chunked";
	return NULL;
}

static struct guard_conn *guard_conn_of(struct MHD_Connection *c)
{
	const union MHD_ConnectionInfo *i = M.get_connection_info(c,
		MHD_CONNECTION_INFO_SOCKET_CONTEXT);

	return i ? i->socket_context : NULL;
}

/*
 * The checks made once the head has arrived, before the body is read:
 * MHD_YES to go on, else the refusal queued (MHD_YES too, but *refused
 * set).
 */
static enum MHD_Result check_head(struct http_server *h,
				  struct MHD_Connection *c, const char *url,
				  const char *method, int *refused)
{
	const char *len, *why;

	*refused = 1;
	if ((why = ambiguous_head(c)))
		return respond_error(c, 400, why, NULL);
	if (!host_ok(h, M.lookup_connection_value(c, MHD_HEADER_KIND,
						    "Host")))
		return respond_error(c, 421, "the Host header does not "
				     "name this server", NULL);
	if (changes_state(method) && !origin_ok(h,
	    M.lookup_connection_value(c, MHD_HEADER_KIND, "Origin")))
		return respond_error(c, 403, "foreign Origin", NULL);
	len = M.lookup_connection_value(c, MHD_HEADER_KIND, "Content-Length");
	if (len && strtoull(len, NULL, 10) > h->o.max_body)
		return respond_error(c, 413, "the body is too large", NULL);
	/* only the page itself is public: it holds no data */
	if (strcmp(url, "/") && strncmp(url, "/static/", 8) &&
	    !token_ok(h, c))
		return respond_error(c, 401, "a bearer token is needed (see "
				     "the server's output or its token "
				     "file)", NULL);
	*refused = 0;
	return MHD_YES;
}

static enum MHD_Result on_request(void *cls, struct MHD_Connection *c,
				  const char *url, const char *method,
				  const char *version, const char *upload,
				  size_t *upload_size, void **con_cls)
{
	struct http_server *h = cls;
	struct req *rq = *con_cls;
	char args[2][512];
	size_t i;
	int path_known = 0, refused;
	enum MHD_Result ret;

	(void)version;
	if (!rq) {
		if (!(rq = calloc(1, sizeof(*rq))))
			return MHD_NO;
		*con_cls = rq;
		ret = check_head(h, c, url, method, &refused);
		if (refused)	/* what comes after is not read */
			guard_received(h->guard, guard_conn_of(c));
		return ret;
	}
	if (*upload_size) {
		if (rq->too_big || rq->body.len + *upload_size >
		    h->o.max_body) {
			rq->too_big = 1;
			aptix_buf_release(&rq->body);
		} else {
			aptix_buf_put(&rq->body, upload, *upload_size);
		}
		*upload_size = 0;
		return MHD_YES;
	}
	/* the request is whole: it is answered without a deadline */
	guard_received(h->guard, guard_conn_of(c));
	if (rq->too_big)
		return respond_error(c, 413, "the body is too large", NULL);
	if (aptix_buf_oom(&rq->body))
		return respond_error(c, 500, "out of memory", NULL);
	for (i = 0; i < NROUTES; i++) {
		if (match(routes[i].path, url, args, 2) < 0)
			continue;
		path_known = 1;
		if (!strcmp(routes[i].method, method))
			return route(h, c, &routes[i], args, rq);
	}
	if (path_known)
		return respond_error(c, 405, "method not allowed", NULL);
	return respond_error(c, 404, "no such route", NULL);
}

static void on_completed(void *cls, struct MHD_Connection *c,
			 void **con_cls, enum MHD_RequestTerminationCode tc)
{
	struct http_server *h = cls;
	struct req *rq = *con_cls;

	(void)tc;
	/* on a kept-alive connection, the next request is awaited */
	guard_idle(h->guard, guard_conn_of(c));
	if (!rq)
		return;
	aptix_buf_release(&rq->body);
	free(rq);
	*con_cls = NULL;
}

/* A connection accepted or closed: the guard's list follows. */
static void on_connection(void *cls, struct MHD_Connection *c,
			  void **socket_context,
			  enum MHD_ConnectionNotificationCode toe)
{
	struct http_server *h = cls;
	const union MHD_ConnectionInfo *i;

	if (toe == MHD_CONNECTION_NOTIFY_STARTED) {
		i = M.get_connection_info(c, MHD_CONNECTION_INFO_CONNECTION_FD);
		*socket_context = i ? guard_open(h->guard, i->connect_fd) :
			NULL;
	} else if (toe == MHD_CONNECTION_NOTIFY_CLOSED) {
		guard_close(h->guard, *socket_context);
		*socket_context = NULL;
	}
}

/* ---- the server ---- */

/*
 * Is there a server listening on the socket at sa? A socket nobody
 * listens on is what a server that was killed leaves behind.
 */
static int socket_live(const struct sockaddr_un *sa)
{
	int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0), r;

	if (fd < 0)
		return 0;
	r = connect(fd, (const struct sockaddr *)sa, sizeof(*sa));
	close(fd);
	return !r || errno != ECONNREFUSED;
}

/*
 * Listen on a unix socket at path. What is there already is replaced
 * only when it is a socket nobody listens on; anything else (a file, a
 * directory, a link, another server's socket) is refused.
 */
static int unix_listen(struct http_server *h, const char *path, char *err,
		       size_t errlen)
{
	struct sockaddr_un sa;
	struct stat st;
	int fd;

	memset(&sa, 0, sizeof(sa));
	sa.sun_family = AF_UNIX;
	if (strlen(path) >= sizeof(sa.sun_path)) {
		snprintf(err, errlen, "socket path too long: %s", path);
		return -1;
	}
	memcpy(sa.sun_path, path, strlen(path) + 1);
	if (!lstat(path, &st)) {
		if (!S_ISSOCK(st.st_mode)) {
			snprintf(err, errlen, "'%s' exists and is not a "
				 "socket: not replaced", path);
			return -1;
		}
		if (socket_live(&sa)) {
			snprintf(err, errlen, "another server listens on "
				 "'%s'", path);
			return -1;
		}
		unlink(path);	/* stale: its server is gone */
	}
	fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (fd < 0 || bind(fd, (struct sockaddr *)&sa, sizeof(sa)) < 0 ||
	    listen(fd, 64) < 0 || lstat(path, &st) < 0) {
		snprintf(err, errlen, "cannot listen on %s: %s", path,
			 strerror(errno));
		if (fd >= 0)
			close(fd);
		return -1;
	}
	h->sock_dev = st.st_dev;
	h->sock_ino = st.st_ino;
	return fd;
}

static void add_host(struct http_server *h, const char *addr)
{
	if (h->nhosts < MAX_HOSTS)
		snprintf(h->hosts[h->nhosts++], sizeof(h->hosts[0]), "%s:%u",
			 addr, h->port);
}

/*
 * The Host values accepted: the loopback names, and the address bound;
 * for 0.0.0.0 the IPv4 addresses of this host's interfaces instead.
 */
static void list_hosts(struct http_server *h, const char *bind)
{
	struct ifaddrs *ifs, *i;
	char addr[INET_ADDRSTRLEN];

	add_host(h, "127.0.0.1");
	add_host(h, "localhost");
	if (!bind || !strcmp(bind, "127.0.0.1"))
		return;
	if (strcmp(bind, "0.0.0.0")) {
		add_host(h, bind);
		return;
	}
	if (getifaddrs(&ifs) < 0)
		return;
	for (i = ifs; i; i = i->ifa_next)
		if (i->ifa_addr && i->ifa_addr->sa_family == AF_INET &&
		    inet_ntop(AF_INET, &((struct sockaddr_in *)
					 (void *)i->ifa_addr)->sin_addr,
			      addr, sizeof(addr)) &&
		    strcmp(addr, "127.0.0.1"))
			add_host(h, addr);
	freeifaddrs(ifs);
}

static void set_defaults(struct http_opts *o)
{
	if (!o->max_body)
		o->max_body = DEFAULT_MAX_BODY;
	if (!o->max_header)
		o->max_header = DEFAULT_MAX_HEADER;
	if (!o->timeout)
		o->timeout = DEFAULT_TIMEOUT;
	if (!o->request_timeout)
		o->request_timeout = DEFAULT_REQUEST_TIMEOUT;
	if (!o->max_connections)
		o->max_connections = DEFAULT_MAX_CONNECTIONS;
	if (!o->max_per_address)
		o->max_per_address = DEFAULT_MAX_PER_ADDRESS;
	if (o->max_per_address > o->max_connections)
		o->max_per_address = o->max_connections;
}

static void free_server(struct http_server *h)
{
	if (h->listen_fd >= 0)
		close(h->listen_fd);
	guard_stop(h->guard);
	pthread_cond_destroy(&h->cond);
	pthread_mutex_destroy(&h->lock);
	free(h->tids);
	free(h->slot_state);
	free(h);
}

/* Start libmicrohttpd on the address (or socket) of h->o. */
static int start_daemon(struct http_server *h, char *err, size_t errlen)
{
	const struct http_opts *o = &h->o;
	struct sockaddr_in sin;
	unsigned flags = MHD_USE_THREAD_PER_CONNECTION |
		MHD_USE_INTERNAL_POLLING_THREAD | MHD_USE_ITC;
	enum MHD_OPTION where = o->unix_socket ? MHD_OPTION_LISTEN_SOCKET :
		MHD_OPTION_SOCK_ADDR;

	memset(&sin, 0, sizeof(sin));
	sin.sin_family = AF_INET;
	sin.sin_port = htons((uint16_t)o->port);
	if (!o->unix_socket &&
	    inet_pton(AF_INET, o->bind ? o->bind : "127.0.0.1",
		      &sin.sin_addr) != 1) {
		snprintf(err, errlen, "not an IPv4 address: %s", o->bind);
		return -1;
	}
	if (o->unix_socket &&
	    (h->listen_fd = unix_listen(h, o->unix_socket, err, errlen)) < 0)
		return -1;
	h->d = M.start_daemon(flags, o->unix_socket ? 0 : o->port, NULL,
		NULL, on_request, h,
		where, o->unix_socket ? (void *)(intptr_t)h->listen_fd :
		(void *)&sin,
		MHD_OPTION_CONNECTION_LIMIT, (unsigned)o->max_connections,
		MHD_OPTION_PER_IP_CONNECTION_LIMIT,
		(unsigned)o->max_per_address,
		MHD_OPTION_CONNECTION_TIMEOUT, (unsigned)o->timeout,
		MHD_OPTION_CONNECTION_MEMORY_LIMIT, (size_t)o->max_header,
		MHD_OPTION_NOTIFY_COMPLETED, on_completed, h,
		MHD_OPTION_NOTIFY_CONNECTION, on_connection, h,
		MHD_OPTION_END);
	if (!h->d) {
		snprintf(err, errlen, "cannot listen on %s port %u: %s",
			 o->unix_socket ? o->unix_socket : o->bind ? o->bind :
			 "127.0.0.1", o->port, strerror(errno));
		if (o->unix_socket)
			unlink(o->unix_socket);
		return -1;
	}
	return 0;
}

int http_start(struct http_server **out, struct serve *s,
	       const struct http_opts *o, char *err, size_t errlen)
{
	struct http_server *h = calloc(1, sizeof(*h));
	const union MHD_DaemonInfo *info;

	*out = NULL;
	if (!h) {
		snprintf(err, errlen, "out of memory");
		return -1;
	}
	if (load_mhd(err, errlen) < 0) {
		free(h);
		return -1;
	}
	h->srv = s;
	h->o = *o;
	h->listen_fd = -1;
	set_defaults(&h->o);
	pthread_mutex_init(&h->lock, NULL);
	pthread_cond_init(&h->cond, NULL);
	if (guard_start(&h->guard, h->o.request_timeout) < 0) {
		snprintf(err, errlen, "cannot start a thread: %s",
			 strerror(errno));
		free_server(h);
		return -1;
	}
	if (events_start(&h->events, serve_repo(s)) < 0) {
		snprintf(err, errlen, "cannot start a thread: %s",
			 strerror(errno));
		free_server(h);
		return -1;
	}
	if (start_daemon(h, err, errlen) < 0) {
		events_stop(h->events);
		free_server(h);
		return -1;
	}
	if (!o->unix_socket) {
		info = M.get_daemon_info(h->d, MHD_DAEMON_INFO_BIND_PORT);
		h->port = info ? info->port : o->port;
		list_hosts(h, o->bind);
	}
	*out = h;
	return 0;
}

unsigned http_port(const struct http_server *h)
{
	return h->port;
}

const char *http_host(const struct http_server *h, size_t i)
{
	return i < h->nhosts ? h->hosts[i] : NULL;
}

void http_quiesce(struct http_server *h)
{
	MHD_socket fd = M.quiesce_daemon(h->d);

	if (fd != MHD_INVALID_SOCKET)
		close(fd);
	h->listen_fd = -1;
}

void http_stop(struct http_server *h)
{
	struct timespec until;
	struct stat st;

	if (!h)
		return;
	/* the turns have ended: their threads end at once */
	pthread_mutex_lock(&h->lock);
	while (h->streams)
		pthread_cond_wait(&h->cond, &h->lock);
	reap_streams(h);
	/* let the clients read the last events, for a while */
	clock_gettime(CLOCK_REALTIME, &until);
	until.tv_sec += STOP_DRAIN_SECONDS;
	while (h->responses)
		if (pthread_cond_timedwait(&h->cond, &h->lock, &until) ==
		    ETIMEDOUT)
			break;
	pthread_mutex_unlock(&h->lock);
	/* the event streams end, so that their connections close */
	events_stop(h->events);
	M.stop_daemon(h->d);
	/* our socket only: another server may have taken the path since */
	if (h->o.unix_socket && !lstat(h->o.unix_socket, &st) &&
	    st.st_dev == h->sock_dev && st.st_ino == h->sock_ino)
		unlink(h->o.unix_socket);
	free_server(h);
}
