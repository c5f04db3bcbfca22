/*
 * serve/turn.c - turns run by the servers: the staged run API
 * (include/aptix/run.h) driven as porcelain/turn-cli.c drives it, with
 * the deltas going to a callback instead of stdout, and the list of the
 * turns running in this process, so that a client can interrupt one and
 * a shutdown can wait for them or cancel them.
 *
 * One running turn per conversation holds across processes: the run
 * API's claim refuses a second one with APTIX_ELOCKED, whose message
 * names the running turn; it becomes a 409.
 */
#ifndef _POSIX_C_SOURCE
# define _POSIX_C_SOURCE 200809L
#endif
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "serve-int.h"

#define MAX_ACTIVE_FILES 256

int serve__busy(struct serve *s, const char *conv, aptix_oid *turn)
{
	struct serve_turn *t;
	int busy = 0;

	pthread_mutex_lock(&s->lock);
	for (t = s->running; t; t = t->next)
		if (!strcmp(t->conversation, conv)) {
			busy = 1;
			if (turn)
				*turn = t->turn;
			break;
		}
	pthread_mutex_unlock(&s->lock);
	return busy;
}

static void list_add(struct serve_turn *t)
{
	struct serve *s = t->srv;

	pthread_mutex_lock(&s->lock);
	t->next = s->running;
	s->running = t;
	s->nrunning++;
	t->listed = 1;
	pthread_mutex_unlock(&s->lock);
}

static void list_remove(struct serve_turn *t)
{
	struct serve *s = t->srv;
	struct serve_turn **pp;

	pthread_mutex_lock(&s->lock);
	for (pp = &s->running; *pp; pp = &(*pp)->next)
		if (*pp == t) {
			*pp = t->next;
			s->nrunning--;
			break;
		}
	t->listed = 0;
	pthread_cond_broadcast(&s->changed);
	pthread_mutex_unlock(&s->lock);
}

static int on_delta(const char *text, size_t len, void *payload)
{
	struct serve_turn *t = payload;
	json_t *d;

	if (!len || !t->fn)
		return 0;
	d = json_object();
	json_object_set_new(d, "text", aptix_view_text(text, len));
	t->fn("delta", d, t->payload);
	json_decref(d);
	return 0;
}

static void on_retry(int attempt, long wait_ms, const char *why,
		     void *payload)
{
	struct serve_turn *t = payload;
	json_t *d;

	if (!t->fn)
		return;
	d = json_pack("{s:i,s:I,s:s}", "attempt", attempt, "wait_ms",
		      (json_int_t)wait_ms, "why", why ? why : "");
	if (d)
		t->fn("retry", d, t->payload);
	json_decref(d);
}

/* The run asks about a file holding a credential: the front end's ask. */
static int on_ask(const char *path, const aptix_credential *c, void *payload)
{
	struct serve_turn *t = payload;

	return t->ask ? t->ask(path, c, t->ask_payload) : 0;
}

void serve_turn_set_ask(struct serve_turn *t, aptix_credential_ask_cb fn,
			void *payload)
{
	t->ask = fn;
	t->ask_payload = payload;
}

static int parse_kind(aptix_run_kind *kind, const char *s)
{
	if (!s || !strcmp(s, "continue"))
		*kind = APTIX_RUN_CONTINUE;
	else if (!strcmp(s, "fork"))
		*kind = APTIX_RUN_FORK;
	else if (!strcmp(s, "rerun"))
		*kind = APTIX_RUN_RERUN;
	else
		return -1;
	return 0;
}

static const char *kind_name(aptix_run_kind k)
{
	return k == APTIX_RUN_FORK ? "fork" : k == APTIX_RUN_RERUN ? "rerun" :
		"continue";
}

/* A path inside the work tree: relative, no "..". */
static int safe_path(const char *p)
{
	const char *c;

	if (!*p || *p == '/' || strlen(p) > 4096)
		return 0;
	for (c = p; *c; c++) {
		if ((c == p || c[-1] == '/') && c[0] == '.' && c[1] == '.' &&
		    (c[2] == '/' || !c[2]))
			return 0;
	}
	return 1;
}

/* The client's active files, as paths under the work tree. */
static int read_paths(struct serve_turn *t, json_t *p, struct serve_err *e)
{
	json_t *a = json_object_get(p, "active_files"), *v;
	const char *root = aptix_repo_workdir(t->srv->repo);
	aptix_buf b = APTIX_BUF_INIT;
	size_t i;

	if (!a || json_is_null(a))
		return 0;
	if (!json_is_array(a) || json_array_size(a) > MAX_ACTIVE_FILES) {
		serve_fail(e, 400, "'active_files' is an array of at most %d "
			   "paths", MAX_ACTIVE_FILES);
		return -1;
	}
	if (!root) {
		serve_fail(e, 400, "the store has no work tree: no active "
			   "files");
		return -1;
	}
	t->paths = calloc(json_array_size(a) + 1, sizeof(*t->paths));
	if (!t->paths) {
		serve_fail(e, 500, "out of memory");
		return -1;
	}
	json_array_foreach(a, i, v) {
		const char *path = json_is_string(v) ? json_string_value(v) :
			json_is_object(v) ? serve__pstr(v, "path") : NULL;

		if (!path || !safe_path(path)) {
			serve_fail(e, 400, "active file %zu: a relative path "
				   "inside the work tree is needed", i);
			return -1;
		}
		aptix_buf_clear(&b);
		aptix_buf_printf(&b, "%s/%s", root, path);
		if (aptix_buf_oom(&b) || !(t->paths[t->npaths] =
					   aptix_buf_detach(&b))) {
			serve_fail(e, 500, "out of memory");
			return -1;
		}
		t->npaths++;
	}
	return 0;
}

static int read_flags(struct serve_turn *t, json_t *p, int *no_stream,
		      struct serve_err *e)
{
	t->files = serve__pbool(p, "files", 1);
	t->rag = serve__pbool(p, "rag", 1);
	*no_stream = serve__pbool(p, "no_stream", 0);
	if (t->files < 0 || t->rag < 0 || *no_stream < 0) {
		serve_fail(e, 400, "'files', 'rag' and 'no_stream' are "
			   "booleans");
		return -1;
	}
	return 0;
}

/*
 * One tool definition as the API takes it: a Responses function tool
 * ({type: "function", name, parameters...}) as it is, Codex's dynamic
 * tool ({name, description, inputSchema}) made one.
 */
static json_t *tool_def(json_t *v)
{
	json_t *in = json_object_get(v, "inputSchema"), *d;

	if (!json_is_object(v) || !json_is_string(json_object_get(v, "name")))
		return NULL;
	if (json_object_get(v, "type"))
		return json_incref(v);
	if (in && !json_is_object(in))
		return NULL;
	d = json_pack("{s:s,s:O}", "type", "function", "name",
		      json_object_get(v, "name"));
	if (d && json_object_get(v, "description"))
		json_object_set(d, "description",
				json_object_get(v, "description"));
	if (d && json_object_set_new(d, "parameters", in ? json_incref(in) :
				     json_pack("{s:s}", "type", "object")) < 0)
		json_decref(d), d = NULL;
	return d;
}

/*
 * tools (function tools, kept for the later turns), no_tools, and
 * tool_outputs (the answers to the calls the head asked for; the
 * instruction may then be absent).
 */
static int read_tools(struct serve_turn *t, json_t *p,
		      aptix_run_options *opts, struct serve_err *e)
{
	json_t *a = json_object_get(p, "tools"), *o = json_object_get(p,
								      "tool_outputs");
	json_t *defs, *v, *d;
	size_t i;
	int nt = serve__pbool(p, "no_tools", 0);

	if (nt < 0) {
		serve_fail(e, 400, "'no_tools' is a boolean");
		return -1;
	}
	opts->no_tools = nt;
	if (a && !json_is_null(a)) {
		if (!json_is_array(a) || nt) {
			serve_fail(e, 400, "'tools' is an array of function "
				   "tools (and not with 'no_tools')");
			return -1;
		}
		if (!(defs = json_array()))
			return serve_fail(e, 500, "out of memory"), -1;
		json_array_foreach(a, i, v) {
			if (!(d = tool_def(v)) ||
			    json_array_append_new(defs, d) < 0) {
				json_decref(defs);
				serve_fail(e, 400, "tool %zu: a function tool "
					   "({type, name, parameters}) or "
					   "{name, description, inputSchema} is "
					   "needed", i);
				return -1;
			}
		}
		t->tools = json_dumps(defs, JSON_COMPACT | JSON_PRESERVE_ORDER);
		json_decref(defs);
		if (!t->tools)
			return serve_fail(e, 500, "out of memory"), -1;
		opts->tools = t->tools;
	}
	if (o && !json_is_null(o)) {
		if (aptix_run_tool_outputs_from_json(&t->outputs, o) < 0) {
			serve_fail_aptix(e, APTIX_EINVALID);
			aptix_error_clear();
			return -1;
		}
		opts->tool_outputs = t->outputs.v;
		opts->ntool_outputs = t->outputs.n;
	}
	return 0;
}

struct find_pending {
	const char *conv;
	aptix_oid *turn;
	int found;
};

static int match_pending(const aptix_running_info *r, void *payload)
{
	struct find_pending *f = payload;

	if (strcmp(r->conversation, f->conv) || !r->alive)
		return 0;
	*f->turn = r->turn;
	f->found = 1;
	return 1;
}

/*
 * The id of the pending turn a run claimed its conversation with (the
 * committed turn gets another: it holds the answer): the turn's name
 * while it runs, the one a busy conversation's 409 names.
 */
static void pending_turn(struct serve_turn *t)
{
	struct find_pending f;

	f.conv = t->conversation;
	f.turn = &t->turn;
	f.found = 0;
	if (aptix_run_foreach_running(t->srv->repo, match_pending, &f) < 0)
		aptix_error_clear();
}

json_t *serve_turn_begin(struct serve_turn **out, struct serve *s,
			 json_t *p, serve_event_fn fn, void *payload,
			 struct serve_err *e)
{
	aptix_run_options opts = APTIX_RUN_OPTIONS_INIT;
	const aptix_run_result *res;
	struct serve_turn *t;
	const char *conv = serve__pstr(p, "conversation");
	const char *from = serve__pstr(p, "session");
	const char *instr = serve__pstr(p, "instruction");
	const char *ws = serve__pstr(p, "workspace");
	char newid[APTIX_UUID_STRSZ + 1];
	aptix_oid from_id;
	int r, no_stream;

	*out = NULL;
	if (!json_is_object(p))
		return serve_fail(e, 400, "the parameters are an object");
	if (!(t = calloc(1, sizeof(*t))))
		return serve_fail(e, 500, "out of memory");
	t->srv = s;
	t->fn = fn;
	t->payload = payload;
	*out = t;
	if (parse_kind(&opts.kind, serve__pstr(p, "kind")) < 0 ||
	    (json_object_get(p, "kind") && !serve__pstr(p, "kind")))
		return serve_fail(e, 400, "'kind' is continue, fork or rerun");
	if (json_object_get(p, "instruction") && !instr)
		return serve_fail(e, 400, "'instruction' is a string");
	if (read_tools(t, p, &opts, e) < 0)
		return NULL;
	if (opts.kind != APTIX_RUN_RERUN && !instr && !opts.ntool_outputs)
		return serve_fail(e, 400, "an instruction is needed");
	if ((json_object_get(p, "conversation") && !conv &&
	     !json_is_null(json_object_get(p, "conversation"))) ||
	    (json_object_get(p, "workspace") && !ws &&
	     !json_is_null(json_object_get(p, "workspace"))))
		return serve_fail(e, 400, "'conversation' and 'workspace' "
				  "are strings");
	if (read_flags(t, p, &no_stream, e) < 0 || read_paths(t, p, e) < 0)
		return NULL;
	if (opts.kind != APTIX_RUN_CONTINUE) {
		if (!from)
			return serve_fail(e, 400, "a %s needs the session to "
					  "start from", kind_name(opts.kind));
		if ((r = aptix_revparse(&from_id, s->repo, from)) < 0)
			return serve_fail_aptix(e, r);
		opts.from = &from_id;
	} else if (!conv) {
		/* a new conversation */
		if (aptix_uuid_v4(newid) < 0)
			return serve_fail_aptix(e, APTIX_ERROR);
		conv = newid;
	}
	if (instr && aptix_buf_puts(&t->instruction, instr) < 0)
		return serve_fail(e, 500, "out of memory");
	if ((r = aptix_config_open(&t->cfg, s->repo)) < 0 ||
	    (r = aptix_workspace_id(&t->wsid, t->cfg, ws ? ws : s->workspace,
				    aptix_repo_workdir(s->repo))) < 0)
		return serve_fail_aptix(e, r);

	opts.instruction = t->instruction.ptr;
	opts.instruction_len = t->instruction.len;
	opts.conversation = conv;
	{
		unsigned char u[16];
		json_t *c = json_object_get(p, "create");

		/*
		 * a conversation is started by a new id: one this server
		 * handed out (thread/start, POST /api/sessions: UUIDs) or
		 * one the client names with "create": true; any other
		 * unknown name is a typo (404), as on the command line
		 */
		opts.create = conv && (conv == newid || json_is_true(c) ||
				       aptix_uuid_parse(u, conv) == 0);
	}
	opts.fork_conversation = opts.kind == APTIX_RUN_FORK ?
		serve__pstr(p, "fork_conversation") : NULL;
	opts.model = serve__pstr(p, "model");
	opts.no_stream = no_stream;
	/* the user's HEAD is the CLI's: a server never moves it */
	opts.switch_head = 0;
	opts.cfg = t->cfg;
	if ((r = aptix_config_string(&opts.http.base_url, t->cfg,
				     "openai.base-url")) < 0)
		return serve_fail_aptix(e, r);
	opts.http.api_key = getenv("OPENAI_API_KEY");
	opts.http.cancel = &t->cancel;
	opts.http.on_delta = on_delta;
	opts.http.on_retry = on_retry;
	opts.http.payload = t;
	opts.ask_credential = on_ask;
	opts.ask_payload = t;
	opts.workspace = t->wsid.len ? t->wsid.ptr : NULL;
	t->qdrant_key = getenv("QDRANT_API_KEY");
	if (t->qdrant_key && *t->qdrant_key) {
		opts.secrets = &t->qdrant_key;
		opts.nsecrets = 1;
	}
	if ((r = aptix_run_new(&t->run, s->repo, &opts)) < 0 ||
	    (r = aptix_run_begin(t->run)) < 0) {
		serve_fail_aptix(e, r);
		if (r == APTIX_ELOCKED && conv)
			aptix_conv_resolve(e->busy, s->repo, conv) < 0 ?
				(void)snprintf(e->busy, sizeof(e->busy),
					       "%s", conv) : (void)0;
		aptix_error_clear();
		return NULL;
	}
	res = aptix_run_result_of(t->run);
	snprintf(t->conversation, sizeof(t->conversation), "%s",
		 res->conversation);
	pending_turn(t);
	list_add(t);
	return json_pack("{s:s,s:s,s:s,s:o,s:o}",
			 "kind", kind_name(opts.kind),
			 "conversation", res->conversation,
			 "status", "pending",
			 "turn", aptix_view_id(&t->turn),
			 "parent", res->has_parent ?
			 aptix_view_id(&res->parent) : json_null());
}

/* Seed 001's AgentExecuteResponse, and what aptix adds to it. */
static json_t *final_json(struct serve_turn *t, int r)
{
	return aptix_view_run_result(aptix_run_result_of(t->run),
				     aptix_run_chunks(t->run), r);
}

json_t *serve_turn_run(struct serve_turn *t)
{
	aptix_gather_options g = APTIX_GATHER_OPTIONS_INIT;
	const aptix_run_result *res = aptix_run_result_of(t->run);
	json_t *o;
	int r;

	g.files = t->files;
	g.scan.paths = (const char *const *)t->paths;
	g.scan.npaths = t->npaths;
	g.rag = t->rag;
	g.query.http.base_url = NULL;
	g.query.qdrant_url = getenv("QDRANT_URL");
	g.query.qdrant_api_key = t->qdrant_key;
	if (aptix_config_string(&g.query.http.base_url, t->cfg,
				"openai.base-url") < 0)
		aptix_error_clear();
	g.query.http.api_key = getenv("OPENAI_API_KEY");
	g.query.http.cancel = &t->cancel;
	/* a failed stage is recorded in the run: finish commits it */
	if (aptix_run_gather(t->run, &g) == 0 &&
	    aptix_run_request(t->run) == 0)
		aptix_run_send(t->run);
	r = aptix_run_finish(t->run);
	if (r == 0 && !res->committed)
		r = APTIX_ERROR;
	o = final_json(t, r);
	if (t->listed)
		list_remove(t);
	return o;
}

void serve_turn_free(struct serve_turn *t)
{
	size_t i;

	if (!t)
		return;
	if (t->listed)
		list_remove(t);
	aptix_run_free(t->run);
	aptix_config_free(t->cfg);
	aptix_buf_release(&t->instruction);
	aptix_buf_release(&t->wsid);
	free(t->tools);
	aptix_run_tool_outputs_release(&t->outputs);
	for (i = 0; i < t->npaths; i++)
		free(t->paths[i]);
	free(t->paths);
	free(t);
}

const char *serve_turn_conversation(const struct serve_turn *t)
{
	return t->conversation;
}

const aptix_run_result *serve_turn_result(const struct serve_turn *t)
{
	return aptix_run_result_of(t->run);
}

json_t *serve_interrupt(struct serve *s, json_t *p, struct serve_err *e)
{
	const char *conv = serve__pstr(p, "conversation");
	const char *turn = serve__pstr(p, "turn");
	struct serve_turn *t;
	size_t n = 0, len;

	if (!conv && !turn)
		return serve_fail(e, 400, "a conversation or a turn is "
				  "needed");
	len = turn ? strlen(turn) : 0;
	pthread_mutex_lock(&s->lock);
	for (t = s->running; t; t = t->next) {
		if ((conv && !strcmp(t->conversation, conv)) ||
		    (turn && len >= 4 && len <= APTIX_OID_HEXSZ &&
		     !strncmp(aptix_oid_hex(&t->turn), turn, len))) {
			aptix_cancel(&t->cancel);
			n++;
		}
	}
	pthread_mutex_unlock(&s->lock);
	if (!n)
		return serve_fail(e, 404, "no turn of this server is running "
				  "in '%.100s'", conv ? conv : turn);
	return json_pack("{s:I}", "interrupted", (json_int_t)n);
}

void serve_cancel_all(struct serve *s)
{
	struct serve_turn *t;

	pthread_mutex_lock(&s->lock);
	for (t = s->running; t; t = t->next)
		aptix_cancel(&t->cancel);
	pthread_mutex_unlock(&s->lock);
}

size_t serve_wait_idle(struct serve *s, long timeout_ms)
{
	struct timespec until;
	size_t n;

	serve_deadline(&until, timeout_ms > 0 ? timeout_ms : 0);
	pthread_mutex_lock(&s->lock);
	while (s->nrunning && timeout_ms != 0) {
		if (timeout_ms < 0)
			pthread_cond_wait(&s->changed, &s->lock);
		else if (pthread_cond_timedwait(&s->changed, &s->lock,
						&until) == ETIMEDOUT)
			break;
	}
	n = s->nrunning;
	pthread_mutex_unlock(&s->lock);
	return n;
}
