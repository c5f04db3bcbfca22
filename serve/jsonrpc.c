/*
 * serve/jsonrpc.c - JSON-RPC 2.0 over a pair of file descriptors, in the
 * shape of OpenAI Codex's app-server (thread = conversation, turn = one
 * session snapshot). The protocol is described in serve/PROTOCOL.md.
 *
 * Each method turns its parameters into the handlers' (serve.h) and
 * their results into the protocol's; a handler's HTTP-like status
 * becomes an error code. Nothing the client sends can stop the loop: a
 * line that is not JSON, not a request, too long or not UTF-8 gets an
 * error response and the next line is read.
 */
#ifndef _POSIX_C_SOURCE
# define _POSIX_C_SOURCE 200809L
#endif
#include <errno.h>
#include <poll.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <fcntl.h>
#include <unistd.h>

#include "jsonrpc.h"
#include "jsonrpc-out.h"

#define PROTOCOL_VERSION "aptix-app-server/1"


struct jsonrpc {
	struct serve *srv;
	struct jsonrpc_dialect dialect;
	int out_fd;
	struct jsonrpc_out *out;	/* the messages to send, and their writer */
	size_t max_queue;
	int rwake[2];		/* the output gave up: the reader stops */
	pthread_mutex_t lock;
	pthread_cond_t done;
	size_t threads;		/* turn threads still running */
	int initialized;
	/*
	 * Turn threads are joined, not detached: a detached thread that
	 * has said it is done may still be freeing its thread-local state
	 * (OpenSSL's, through libcurl) when the process exits. Slot states:
	 * 0 free, 1 running, 2 finished and not joined yet.
	 */
	pthread_t *tids;
	unsigned char *slot_state;
	size_t nslots;
};

struct rpc_turn {
	struct jsonrpc *j;
	struct serve_turn *t;
	char thread_id[APTIX_CONV_MAXLEN + 1];
	char turn_id[APTIX_OID_HEXSZ + 1];
};

/*
 * Send one message as one line: queued for the writer thread, in the
 * order of the calls; never waits (serve/jsonrpc-out.c).
 */
void jsonrpc_send(struct jsonrpc *j, json_t *msg)
{
	char *s = json_dumps(msg, JSON_COMPACT | JSON_ENSURE_ASCII);
	size_t len;

	if (!s)
		return;
	len = strlen(s);
	s[len++] = '\n';	/* json_dumps' NUL becomes the newline */
	if (j->out)
		jsonrpc_out_put(j->out, s, len);
	free(s);
}

void jsonrpc_send_result(struct jsonrpc *j, json_t *id, json_t *result)
{
	json_t *m = json_object();

	json_object_set_new(m, "jsonrpc", json_string("2.0"));
	json_object_set(m, "id", id ? id : json_null());
	json_object_set_new(m, "result", result ? result : json_null());
	jsonrpc_send(j, m);
	json_decref(m);
}

void jsonrpc_send_error(struct jsonrpc *j, json_t *id, int code,
		       const char *message, json_t *data)
{
	json_t *m = json_object(), *e = json_object();

	json_object_set_new(e, "code", json_integer(code));
	json_object_set_new(e, "message", aptix_view_str(message));
	if (data)
		json_object_set_new(e, "data", data);
	json_object_set_new(m, "jsonrpc", json_string("2.0"));
	json_object_set(m, "id", id ? id : json_null());
	json_object_set_new(m, "error", e);
	jsonrpc_send(j, m);
	json_decref(m);
}

void jsonrpc_send_serve_error(struct jsonrpc *j, json_t *id,
			      const struct serve_err *e, int not_found)
{
	int code;
	json_t *data = json_pack("{s:i}", "status", e->status);

	switch (e->status) {
	case 400:
	case 413:
		code = RPC_INVALID_PARAMS;
		break;
	case 404:
		code = not_found;
		break;
	case 409:
		code = RPC_BUSY;
		if (*e->busy)
			json_object_set_new(data, "threadId",
					    json_string(e->busy));
		break;
	case 501:
		code = RPC_NOT_SUPPORTED;
		break;
	case 507:
		code = RPC_STORE_FULL;
		break;
	default:
		code = RPC_INTERNAL_ERROR;
	}
	jsonrpc_send_error(j, id, code, e->message, data);
}

static void send_serve_error(struct jsonrpc *j, json_t *id,
			     const struct serve_err *e)
{
	jsonrpc_send_serve_error(j, id, e, RPC_NOT_FOUND);
}

void jsonrpc_notify(struct jsonrpc *j, const char *method, json_t *params)
{
	json_t *m = json_object();

	json_object_set_new(m, "jsonrpc", json_string("2.0"));
	json_object_set_new(m, "method", json_string(method));
	json_object_set_new(m, "params", params);
	jsonrpc_send(j, m);
	json_decref(m);
}

/* ---- parameters ---- */

/* p[from] copied to q[to] when present. */
static void copy(json_t *q, const char *to, json_t *p, const char *from)
{
	json_t *v = json_object_get(p, from);

	if (v)
		json_object_set(q, to, v);
}

/*
 * Codex sends the input as [{"type":"text","text":...}, ...]; a plain
 * string is taken too. The texts are joined by newlines.
 */
static int input_text(json_t *q, json_t *p)
{
	json_t *in = json_object_get(p, "input"), *v;
	aptix_buf b = APTIX_BUF_INIT;
	size_t i;

	if (!in)
		return 0;
	if (json_is_string(in)) {
		json_object_set(q, "instruction", in);
		return 0;
	}
	if (!json_is_array(in))
		return -1;
	json_array_foreach(in, i, v) {
		const char *text = json_is_object(v) ?
			json_string_value(json_object_get(v, "text")) : NULL;

		if (!text)
			return aptix_buf_release(&b), -1;
		if (b.len)
			aptix_buf_putc(&b, '\n');
		aptix_buf_puts(&b, text);
	}
	json_object_set_new(q, "instruction",
			    json_stringn(b.ptr ? b.ptr : "", b.len));
	aptix_buf_release(&b);
	return 0;
}

/* ---- turns ---- */

static void on_event(const char *event, json_t *data, void *payload)
{
	struct rpc_turn *rt = payload;

	if (!strcmp(event, "delta"))
		jsonrpc_notify(rt->j, "item/agentMessage/delta", json_pack(
			       "{s:s,s:s,s:s,s:O}", "threadId", rt->thread_id,
			       "turnId", rt->turn_id, "itemId", rt->turn_id,
			       "delta", json_object_get(data, "text")));
	else if (!strcmp(event, "retry"))
		jsonrpc_notify(rt->j, "turn/retry", json_pack("{s:s,s:s,s:O}",
			       "threadId", rt->thread_id, "turnId",
			       rt->turn_id, "retry", data));
}

/*
 * The calls a turn's answer asks for, one item/completed each (Codex's
 * item envelope; the item a dynamicToolCall, pending until
 * turn/toolOutputs answers it), before turn/completed.
 */
static void notify_calls(struct rpc_turn *rt, json_t *final)
{
	json_t *calls = json_object_get(final, "tool_calls"), *c;
	const char *thread = json_string_value(json_object_get(final,
							      "conversation"));
	size_t i;

	json_array_foreach(calls, i, c) {
		jsonrpc_notify(rt->j, "item/completed", json_pack(
			       "{s:s,s:s,s:{s:s,s:O,s:O,s:O,s:O,s:s}}",
			       "threadId", thread ? thread : rt->thread_id,
			       "turnId", rt->turn_id, "item",
			       "type", "dynamicToolCall",
			       "id", json_object_get(c, "call_id"),
			       "callId", json_object_get(c, "call_id"),
			       "tool", json_object_get(c, "name"),
			       "arguments", json_object_get(c, "arguments"),
			       "status", "pending"));
	}
}

static void turn_thread(void *arg)
{
	struct rpc_turn *rt = arg;
	json_t *final = serve_turn_run(rt->t);

	if (!final)
		final = json_pack("{s:s}", "kind", "error");
	json_object_set_new(final, "id", json_string(rt->turn_id));
	notify_calls(rt, final);
	jsonrpc_notify(rt->j, "turn/completed", json_pack("{s:s,s:o}",
		"threadId", json_string_value(json_object_get(final,
			"conversation")) ? json_string_value(json_object_get(
			final, "conversation")) : rt->thread_id, "turn", final));
	serve_turn_free(rt->t);
	free(rt);
}

struct spawned {
	struct jsonrpc *j;
	void (*fn)(void *);
	void *arg;
	size_t slot;
};

static void *spawned_main(void *arg)
{
	struct spawned *sp = arg;
	struct jsonrpc *j = sp->j;
	size_t slot = sp->slot;

	sp->fn(sp->arg);
	free(sp);
	pthread_mutex_lock(&j->lock);
	j->threads--;
	if (slot < j->nslots && j->slot_state[slot] == 1)
		j->slot_state[slot] = 2;
	pthread_cond_broadcast(&j->done);
	pthread_mutex_unlock(&j->lock);
	return NULL;
}

/* Join the finished threads; a free slot's index, or nslots. */
static size_t reap_threads(struct jsonrpc *j)
{
	size_t i, free_slot = j->nslots;

	for (i = 0; i < j->nslots; i++) {
		if (j->slot_state[i] == 2) {
			pthread_join(j->tids[i], NULL);
			j->slot_state[i] = 0;
		}
		if (!j->slot_state[i] && free_slot == j->nslots)
			free_slot = i;
	}
	return free_slot;
}

void jsonrpc_spawn(struct jsonrpc *j, void (*fn)(void *), void *arg)
{
	struct spawned *sp = calloc(1, sizeof(*sp));
	pthread_attr_t attr;
	pthread_t th;
	sigset_t all, old;
	int r;

	if (!sp) {
		fn(arg);	/* no thread: the client waits longer */
		return;
	}
	sp->j = j;
	sp->fn = fn;
	sp->arg = arg;
	pthread_mutex_lock(&j->lock);
	j->threads++;
	sp->slot = reap_threads(j);
	if (sp->slot == j->nslots) {
		size_t n = j->nslots ? j->nslots * 2 : 8;
		pthread_t *t = realloc(j->tids, n * sizeof(*t));
		unsigned char *st = t ? realloc(j->slot_state, n) : NULL;

		if (t)
			j->tids = t;
		if (st) {
			memset(st + j->nslots, 0, n - j->nslots);
			j->slot_state = st;
			j->nslots = n;
		}
	}
	pthread_attr_init(&attr);
	/* signals are for the main thread (its read is interrupted) */
	sigfillset(&all);
	pthread_sigmask(SIG_BLOCK, &all, &old);
	/* under the lock: the thread cannot be reaped before tids has it */
	r = sp->slot < j->nslots ?
		pthread_create(&th, &attr, spawned_main, sp) : -1;
	if (!r) {
		j->tids[sp->slot] = th;
		j->slot_state[sp->slot] = 1;
	}
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	pthread_mutex_unlock(&j->lock);
	pthread_attr_destroy(&attr);
	if (r) {
		sp->slot = (size_t)-1;
		spawned_main(sp);	/* no thread: the client waits longer */
	}
}

/*
 * Begin a turn (its errors answer the request), answer {thread, turn},
 * tell turn/started, and run the rest in a thread.
 */
static void start_turn(struct jsonrpc *j, json_t *id, json_t *q)
{
	struct serve_err e = { 0, "", "" };
	struct rpc_turn *rt = calloc(1, sizeof(*rt));
	json_t *started;

	if (!rt) {
		jsonrpc_send_error(j, id, RPC_INTERNAL_ERROR, "out of memory",
				   NULL);
		return;
	}
	rt->j = j;
	started = serve_turn_begin(&rt->t, j->srv, q, on_event, rt, &e);
	if (!started) {
		serve_turn_free(rt->t);
		free(rt);
		send_serve_error(j, id, &e);
		return;
	}
	snprintf(rt->thread_id, sizeof(rt->thread_id), "%s",
		 serve_turn_conversation(rt->t));
	snprintf(rt->turn_id, sizeof(rt->turn_id), "%s",
		 json_string_value(json_object_get(started, "turn")));
	json_object_set_new(started, "id", json_string(rt->turn_id));
	jsonrpc_send_result(j, id, json_pack("{s:{s:s},s:O}", "thread", "id",
					     rt->thread_id, "turn", started));
	jsonrpc_notify(j, "turn/started", json_pack("{s:s,s:o}", "threadId",
						    rt->thread_id, "turn",
						    started));
	jsonrpc_spawn(j, turn_thread, rt);
}

/* ---- methods ---- */

typedef json_t *(*handler_fn)(struct serve *, json_t *, struct serve_err *);

static void call(struct jsonrpc *j, json_t *id, handler_fn fn, json_t *q)
{
	struct serve_err e = { 0, "", "" };
	json_t *r = fn(j->srv, q, &e);

	if (r)
		jsonrpc_send_result(j, id, r);
	else
		send_serve_error(j, id, &e);
}

static json_t *new_thread(struct serve *s, json_t *p, struct serve_err *e)
{
	json_t *r = serve_session_open(s, p, e), *o;

	if (!r)
		return NULL;
	o = json_pack("{s:{s:O,s:O,s:O,s:s,s:[]}}", "thread",
		      "conversation", json_object_get(r, "conversation"),
		      "id", json_object_get(r, "conversation"),
		      "workspace", json_object_get(r, "workspace"),
		      "status", "new", "turns");
	json_decref(r);
	return o;
}

static json_t *read_thread(struct serve *s, json_t *p, struct serve_err *e)
{
	json_t *r = serve_read_conversation(s, p, e), *o;

	if (!r)
		return NULL;
	o = json_pack("{s:O,s:O,s:O}", "thread",
		      json_object_get(r, "conversation"), "turns",
		      json_object_get(r, "turns"), "next_cursor",
		      json_object_get(r, "next_cursor"));
	json_decref(r);
	return o;
}

/*
 * The page of every list ({items, next_cursor}), with Codex's names for
 * it as aliases: data, nextCursor (Documentation/json.md).
 */
static json_t *list_threads(struct serve *s, json_t *p, struct serve_err *e)
{
	json_t *r = serve_list_conversations(s, p, e);

	if (!r)
		return NULL;
	if (json_object_set(r, "data", json_object_get(r, "items")) < 0 ||
	    json_object_set(r, "nextCursor",
			    json_object_get(r, "next_cursor")) < 0) {
		json_decref(r);
		return serve_fail(e, 500, "out of memory");
	}
	return r;
}

static int is_str_or_absent(json_t *p, const char *key)
{
	json_t *v = json_object_get(p, key);

	return !v || json_is_string(v) || json_is_null(v);
}

static void dispatch(struct jsonrpc *j, json_t *id, const char *method,
		     json_t *p, void *ctx)
{
	json_t *q;
	static const char *const strs[] = { "threadId", "sessionId",
		"turnId", "cursor", "workspace", "q", "name", "id", "model",
		NULL };
	size_t i;

	(void)ctx;
	if (!id)
		return;	/* notifications (Codex's initialized): ignored */
	q = json_object();
	for (i = 0; strs[i]; i++)
		if (!is_str_or_absent(p, strs[i])) {
			jsonrpc_send_error(j, id, RPC_INVALID_PARAMS, "a string "
				   "parameter is not a string",
				   json_pack("{s:s}", "param", strs[i]));
			goto done;
		}
	copy(q, "conversation", p, "threadId");
	copy(q, "session", p, "sessionId");
	copy(q, "workspace", p, "workspace");

	if (!strcmp(method, "initialize")) {
		j->initialized = 1;
		jsonrpc_send_result(j, id, json_pack("{s:{s:s,s:s},s:s}",
			"serverInfo", "name", "aptix", "version",
			APTIX_VERSION, "protocolVersion", PROTOCOL_VERSION));
	} else if (!strcmp(method, "thread/start")) {
		call(j, id, new_thread, q);
	} else if (!strcmp(method, "thread/resume")) {
		if (!json_object_get(q, "conversation"))
			jsonrpc_send_error(j, id, RPC_INVALID_PARAMS, "threadId is "
				   "needed", NULL);
		else
			call(j, id, read_thread, q);
	} else if (!strcmp(method, "thread/read")) {
		if (json_object_get(q, "session")) {
			copy(q, "full", p, "full");
			call(j, id, serve_read_turn, q);
		} else {
			copy(q, "cursor", p, "cursor");
			copy(q, "limit", p, "limit");
			call(j, id, read_thread, q);
		}
	} else if (!strcmp(method, "thread/list")) {
		copy(q, "cursor", p, "cursor");
		copy(q, "limit", p, "limit");
		copy(q, "q", p, "q");
		copy(q, "all", p, "all");
		copy(q, "archived", p, "archived");
		call(j, id, list_threads, q);
	} else if (!strcmp(method, "thread/graph")) {
		copy(q, "cursor", p, "cursor");
		copy(q, "limit", p, "limit");
		copy(q, "all", p, "all");
		call(j, id, serve_graph, q);
	} else if (!strcmp(method, "search")) {
		static const char *const keys[] = { "q", "limit", "since",
			"until", "status", "model" };

		for (i = 0; i < sizeof(keys) / sizeof(keys[0]); i++)
			copy(q, keys[i], p, keys[i]);
		call(j, id, serve_search, q);
	} else if (!strcmp(method, "thread/name/set")) {
		copy(q, "title", p, "name");
		call(j, id, serve_rename, q);
	} else if (!strcmp(method, "thread/archive")) {
		json_object_set_new(q, "archived", json_true());
		copy(q, "archived", p, "archived");
		call(j, id, serve_archive, q);
	} else if (!strcmp(method, "object/read")) {
		copy(q, "id", p, "id");
		call(j, id, serve_read_object_json, q);
	} else if (!strcmp(method, "turn/start") ||
		   !strcmp(method, "turn/toolOutputs") ||
		   !strcmp(method, "thread/fork") ||
		   !strcmp(method, "turn/rerun")) {
		if (input_text(q, p) < 0) {
			jsonrpc_send_error(j, id, RPC_INVALID_PARAMS, "input is a "
				   "string or an array of {type, text}",
				   NULL);
			goto done;
		}
		json_object_set_new(q, "kind", json_string(
			!strcmp(method, "thread/fork") ? "fork" :
			!strcmp(method, "turn/rerun") ? "rerun" : "continue"));
		if (strcmp(method, "turn/start") &&
		    strcmp(method, "turn/toolOutputs"))
			json_object_del(q, "conversation");
		copy(q, "active_files", p, "activeFiles");
		copy(q, "tools", p, "dynamicTools");
		copy(q, "tools", p, "tools");
		copy(q, "no_tools", p, "noTools");
		copy(q, "tool_outputs", p, "toolOutputs");
		copy(q, "tool_outputs", p, "outputs");
		copy(q, "model", p, "model");
		copy(q, "files", p, "files");
		copy(q, "rag", p, "rag");
		start_turn(j, id, q);
	} else if (!strcmp(method, "turn/interrupt")) {
		copy(q, "turn", p, "turnId");
		call(j, id, serve_interrupt, q);
	} else {
		jsonrpc_send_error(j, id, RPC_METHOD_NOT_FOUND, "method not found",
			   json_pack("{s:s}", "method", method));
	}
done:
	json_decref(q);
}

/* ---- messages ---- */

/* A message with an id and no method: the answer to one of ours. */
static int is_response(json_t *msg)
{
	return !json_object_get(msg, "method") &&
		json_object_get(msg, "id") &&
		(json_object_get(msg, "result") ||
		 json_object_get(msg, "error"));
}

void jsonrpc_handle_line(struct jsonrpc *j, const char *line, size_t len)
{
	json_error_t err;
	json_t *msg, *id, *params, *v;
	const char *method;
	size_t i;
	int notification;

	for (i = 0; i < len && strchr(" \t\r", line[i]); i++)
		;
	if (i == len)
		return;		/* an empty line */
	msg = json_loadb(line, len, JSON_REJECT_DUPLICATES |
			 JSON_DECODE_ANY, &err);
	if (!msg) {
		jsonrpc_send_error(j, NULL, RPC_PARSE_ERROR, "parse error",
				   json_pack("{s:s}", "detail", err.text));
		return;
	}
	id = json_object_get(msg, "id");
	if (id && !json_is_string(id) && !json_is_integer(id) &&
	    !json_is_null(id))
		id = NULL;	/* answered with a null id */
	if (!json_is_object(msg)) {
		jsonrpc_send_error(j, NULL, RPC_INVALID_REQUEST,
				   json_is_array(msg) ? "batches are not "
				   "supported" : "a request is a JSON object",
				   NULL);
		goto done;
	}
	v = json_object_get(msg, "jsonrpc");
	if (is_response(msg) && j->dialect.response && id) {
		j->dialect.response(j, msg, j->dialect.ctx);
		goto done;
	}
	method = json_string_value(json_object_get(msg, "method"));
	params = json_object_get(msg, "params");
	if ((v && !(json_is_string(v) &&
		    !strcmp(json_string_value(v), "2.0"))) || !method ||
	    (json_object_get(msg, "id") && !id)) {
		jsonrpc_send_error(j, id, RPC_INVALID_REQUEST,
				   "invalid request", NULL);
		goto done;
	}
	notification = !json_object_get(msg, "id");
	if (params && !json_is_object(params)) {
		if (!notification)
			jsonrpc_send_error(j, id, RPC_INVALID_PARAMS,
					   "params is an object", NULL);
		goto done;
	}
	if (params)
		j->dialect.dispatch(j, notification ? NULL : id, method,
				    params, j->dialect.ctx);
	else if ((params = json_object())) {
		j->dialect.dispatch(j, notification ? NULL : id, method,
				    params, j->dialect.ctx);
		json_decref(params);
	}
done:
	json_decref(msg);
}

/* The client stopped reading (the output's bound): stop reading it. */
static void gave_up(void *ctx)
{
	struct jsonrpc *j = ctx;
	ssize_t n;

	do
		n = write(j->rwake[1], "", 1);
	while (n < 0 && errno == EINTR);
}

int jsonrpc_new_dialect(struct jsonrpc **out, struct serve *s, int out_fd,
			const struct jsonrpc_dialect *d)
{
	struct jsonrpc *j = calloc(1, sizeof(*j));

	*out = j;
	if (!j)
		return aptix_error_oom();
	j->srv = s;
	j->out_fd = out_fd;
	j->dialect = *d;
	j->max_queue = JSONRPC_MAX_QUEUE;
	pthread_mutex_init(&j->lock, NULL);
	pthread_cond_init(&j->done, NULL);
	if (pipe(j->rwake) < 0) {
		j->rwake[0] = j->rwake[1] = -1;
		aptix_error_set(APTIX_ERROR_OS, "pipe: %s", strerror(errno));
		return APTIX_ERROR;
	}
	fcntl(j->rwake[1], F_SETFL, O_NONBLOCK);
	if (jsonrpc_out_new(&j->out, out_fd, j->max_queue, gave_up, j) < 0) {
		aptix_error_set(APTIX_ERROR_OS, "cannot start the thread that "
				"writes to the client");
		return APTIX_ERROR;
	}
	return 0;
}

void jsonrpc_set_max_queue(struct jsonrpc *j, size_t max)
{
	j->max_queue = max;
	jsonrpc_out_set_max(j->out, max);
}

int jsonrpc_new(struct jsonrpc **out, struct serve *s, int out_fd)
{
	struct jsonrpc_dialect d = { dispatch, NULL, NULL, NULL };

	return jsonrpc_new_dialect(out, s, out_fd, &d);
}

int jsonrpc_serve_fd(struct jsonrpc *j, int in_fd,
		     volatile sig_atomic_t *stop)
{
	aptix_buf line = APTIX_BUF_INIT;
	char buf[65536];
	ssize_t n;
	size_t i, start;
	int skipping = 0;

	while (!*stop) {
		struct pollfd p[2];

		p[0].fd = in_fd;
		p[0].events = POLLIN;
		p[1].fd = j->rwake[0];
		p[1].events = POLLIN;
		if (poll(p, 2, -1) < 0 && errno != EINTR)
			break;
		if (*stop || (p[1].revents & POLLIN))
			break;	/* a signal, or the client stopped reading */
		if (!(p[0].revents & (POLLIN | POLLHUP | POLLERR)))
			continue;
		n = read(in_fd, buf, sizeof(buf));
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			break;
		for (start = 0, i = 0; i < (size_t)n; i++) {
			if (buf[i] != '\n')
				continue;
			if (!skipping) {
				aptix_buf_put(&line, buf + start, i - start);
				jsonrpc_handle_line(j, line.ptr ? line.ptr :
						    "", line.len);
			}
			skipping = 0;
			aptix_buf_clear(&line);
			start = i + 1;
		}
		if (skipping)
			continue;
		aptix_buf_put(&line, buf + start, (size_t)n - start);
		if (line.len > JSONRPC_MAX_LINE || aptix_buf_oom(&line)) {
			jsonrpc_send_error(j, NULL, RPC_INVALID_REQUEST, "message too "
				   "long", json_pack("{s:i}", "max",
						     JSONRPC_MAX_LINE));
			aptix_buf_release(&line);
			skipping = 1;
		}
	}
	if (line.len && !skipping)
		jsonrpc_handle_line(j, line.ptr, line.len);
	aptix_buf_release(&line);
	return 0;
}

static volatile sig_atomic_t stdio_stop;

static void on_signal(int sig)
{
	(void)sig;
	stdio_stop = 1;
}

void jsonrpc_run_stdio(struct jsonrpc *j, unsigned long grace_s,
		       int cancel_at_eof)
{
	struct sigaction sa;
	int cut;

	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = on_signal;	/* no SA_RESTART: read() returns */
	sigemptyset(&sa.sa_mask);
	sigaction(SIGTERM, &sa, NULL);
	sigaction(SIGINT, &sa, NULL);
	sa.sa_handler = SIG_IGN;
	sigaction(SIGPIPE, &sa, NULL);

	jsonrpc_serve_fd(j, 0, &stdio_stop);
	cut = jsonrpc_out_overflowed(j->out);
	if (cut)
		fprintf(stderr, "error: the client stopped reading what aptix "
			"sends (over %lu bytes waiting): ending the "
			"connection\n", (unsigned long)j->max_queue);
	if (j->dialect.eof)
		j->dialect.eof(j, j->dialect.ctx);
	/* as for a signal: the running turns get the grace, then stop */
	jsonrpc_shutdown(j, stdio_stop || cut ? (long)grace_s * 1000 :
			 cancel_at_eof ? 0 : -1);
	/* the last answers, to a client that still reads */
	jsonrpc_out_flush(j->out, (long)grace_s * 1000);
}

void jsonrpc_shutdown(struct jsonrpc *j, long grace_ms)
{
	if (serve_wait_idle(j->srv, grace_ms))
		serve_cancel_all(j->srv);
	pthread_mutex_lock(&j->lock);
	while (j->threads)
		pthread_cond_wait(&j->done, &j->lock);
	reap_threads(j);
	pthread_mutex_unlock(&j->lock);
}

void jsonrpc_free(struct jsonrpc *j)
{
	if (!j)
		return;
	jsonrpc_out_free(j->out);
	if (j->rwake[0] >= 0) {
		close(j->rwake[0]);
		close(j->rwake[1]);
	}
	free(j->tids);
	free(j->slot_state);
	pthread_cond_destroy(&j->done);
	pthread_mutex_destroy(&j->lock);
	free(j);
}
