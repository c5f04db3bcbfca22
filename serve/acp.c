/*
 * serve/acp.c - the methods of the Agent Client Protocol (ACP) on
 * aptix's store: a dialect of the JSON-RPC transport (serve/jsonrpc.c)
 * over the turn handlers (serve/serve.h). serve/ACP.md describes the
 * mapping; in short:
 *
 *   ACP session      an aptix conversation (the session id is its id)
 *   session/prompt   one turn on the staged turn API; the answer
 *                    streams as agent_message_chunk, the turn's context
 *                    and tool calls follow as tool_call updates, then
 *                    usage_update and the answer {stopReason}
 *   session/load     the conversation's chain replayed, oldest first
 *   session/fork     a session whose first turn forks a snapshot
 *   session/delete   archives the conversation (nothing is lost)
 *
 * session/new with _meta.sessionId (seed 004) reuses that id and clears
 * the conversation without losing anything: its ref is deleted, so that
 * the next turn starts a new root, and the old head stays in the
 * conversation's reflog (aptix reflog, aptix log --all, never purged).
 *
 * A prompt runs in a thread of its own, so that session/cancel (a
 * notification) and other requests are read while it streams.
 */
#ifndef _POSIX_C_SOURCE
# define _POSIX_C_SOURCE 200809L
#endif
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "acp-int.h"

#define ACP_PROTOCOL_VERSION 1
#define META_SESSION_ID "sessionId"
#define META_FORK_FROM "aptix/fromSession"

/* ---- errors ---- */

/* A handler's error: 404 is ACP's "resource not found". */
static void fail(struct acp *a, json_t *id, const struct serve_err *e)
{
	jsonrpc_send_serve_error(a->j, id, e, RPC_RESOURCE_NOT_FOUND);
}

static void bad_params(struct acp *a, json_t *id, const char *message)
{
	jsonrpc_send_error(a->j, id, RPC_INVALID_PARAMS, message, NULL);
}

static void no_session(struct acp *a, json_t *id, const char *sid)
{
	jsonrpc_send_error(a->j, id, RPC_RESOURCE_NOT_FOUND,
			   "unknown session", json_pack("{s:s?}",
							"sessionId", sid));
}

/* ---- the open sessions ---- */

/* The open session sid; call with a->lock held. */
static struct acp_session *find(struct acp *a, const char *sid)
{
	struct acp_session *s;

	for (s = a->sessions; s && sid; s = s->next)
		if (!strcmp(s->id, sid))
			return s;
	return NULL;
}

static void session_free(struct acp_session *s)
{
	if (!s)
		return;
	free(s->cwd);
	free(s->workspace);
	free(s);
}

/*
 * Open (or reopen) session id with cwd: its workspace is the server's
 * when cwd is in the store's work tree, else the one derived from cwd.
 */
static struct acp_session *open_session(struct acp *a, const char *id,
					const char *cwd, struct serve_err *e)
{
	const char *root = aptix_repo_workdir(serve_repo(a->srv));
	struct acp_session *s = calloc(1, sizeof(*s)), *old, **pp;
	aptix_buf ws = APTIX_BUF_INIT;
	size_t n = root ? strlen(root) : 0;

	if (!s || !(s->cwd = strdup(cwd))) {
		session_free(s);
		serve_fail(e, 500, "out of memory");
		return NULL;
	}
	snprintf(s->id, sizeof(s->id), "%s", id);
	if (!(root && !strncmp(cwd, root, n) && (!cwd[n] || cwd[n] == '/'))) {
		if (serve_workspace_id(&ws, a->srv, cwd, e) < 0 ||
		    !(s->workspace = aptix_buf_detach(&ws))) {
			aptix_buf_release(&ws);
			session_free(s);
			return NULL;
		}
	}
	pthread_mutex_lock(&a->lock);
	for (pp = &a->sessions; (old = *pp); pp = &old->next)
		if (!strcmp(old->id, id)) {
			/* reopened: a running prompt keeps its state */
			s->prompting = old->prompting;
			s->cancelled = old->cancelled;
			*pp = old->next;
			session_free(old);
			break;
		}
	s->next = a->sessions;
	a->sessions = s;
	pthread_mutex_unlock(&a->lock);
	return s;
}

/* Close session sid; 0, or -1 when it is not open. */
static int close_session(struct acp *a, const char *sid)
{
	struct acp_session *s, **pp;

	pthread_mutex_lock(&a->lock);
	for (pp = &a->sessions; (s = *pp); pp = &s->next)
		if (!strcmp(s->id, sid)) {
			*pp = s->next;
			break;
		}
	pthread_cond_broadcast(&a->replied);	/* its calls: no answer */
	pthread_mutex_unlock(&a->lock);
	session_free(s);
	return s ? 0 : -1;
}

/* Interrupt the running turn of conversation sid, if any. */
static void interrupt(struct acp *a, const char *sid)
{
	struct serve_err e = { 0, "", "" };
	json_t *q = json_pack("{s:s}", "conversation", sid), *r;

	r = serve_interrupt(a->srv, q, &e);
	json_decref(r);
	json_decref(q);
}

/* ---- requests to the client ---- */

/* The prompt of session sid was cancelled (or the session closed). */
static int cancelled(struct acp *a, const char *sid)
{
	struct acp_session *s;

	if (!sid)
		return 0;
	s = find(a, sid);
	return !s || s->cancelled;
}

/*
 * Call the client (from a prompt's thread, never the reader's) and wait
 * for its answer: the message {result} or {error}, or NULL when the
 * client is gone or does not answer within timeout_s.
 */
static json_t *client_call(struct acp *a, const char *method, json_t *params,
			   int timeout_s, const char *sid)
{
	struct acp_call *c = calloc(1, sizeof(*c)), **pp;
	struct timespec until;
	json_t *m;

	clock_gettime(CLOCK_REALTIME, &until);
	until.tv_sec += timeout_s;
	pthread_mutex_lock(&a->lock);
	if (a->eof || !c) {
		pthread_mutex_unlock(&a->lock);
		json_decref(params);
		free(c);
		return NULL;
	}
	c->id = ++a->next_id;
	c->next = a->calls;
	a->calls = c;
	pthread_mutex_unlock(&a->lock);
	m = json_pack("{s:s,s:I,s:s,s:o}", "jsonrpc", "2.0", "id", c->id,
		      "method", method, "params", params);
	jsonrpc_send(a->j, m);
	json_decref(m);
	pthread_mutex_lock(&a->lock);
	while (!c->reply && !a->eof && !cancelled(a, sid) &&
	       pthread_cond_timedwait(&a->replied, &a->lock, &until) !=
	       ETIMEDOUT)
		;
	for (pp = &a->calls; *pp; pp = &(*pp)->next)
		if (*pp == c) {
			*pp = c->next;
			break;
		}
	pthread_mutex_unlock(&a->lock);
	m = c->reply;
	free(c);
	return m;
}

static void on_response(struct jsonrpc *j, json_t *msg, void *ctx)
{
	struct acp *a = ctx;
	json_t *id = json_object_get(msg, "id");
	struct acp_call *c;

	(void)j;
	pthread_mutex_lock(&a->lock);
	for (c = a->calls; c; c = c->next)
		if (json_is_integer(id) && json_integer_value(id) == c->id &&
		    !c->reply) {
			/* a copy: msg is the reader's, its count not atomic */
			c->reply = json_deep_copy(msg);
			break;
		}
	pthread_cond_broadcast(&a->replied);
	pthread_mutex_unlock(&a->lock);
	/* an answer to nothing we asked: ignored, as JSON-RPC allows */
}

static void on_eof(struct jsonrpc *j, void *ctx)
{
	struct acp *a = ctx;

	(void)j;
	pthread_mutex_lock(&a->lock);
	a->eof = 1;
	pthread_cond_broadcast(&a->replied);
	pthread_mutex_unlock(&a->lock);
}

/* ---- initialize ---- */

static void initialize(struct acp *a, json_t *id, json_t *p)
{
	json_t *v = json_object_get(p, "protocolVersion");

	if (!json_is_integer(v) || json_integer_value(v) < 0) {
		bad_params(a, id, "protocolVersion is an integer");
		return;
	}
	v = json_object_get(json_object_get(p, "clientCapabilities"), "fs");
	pthread_mutex_lock(&a->lock);
	a->fs_read = json_is_true(json_object_get(v, "readTextFile"));
	pthread_mutex_unlock(&a->lock);
	/* the version asked for when it is ours, else the latest we speak */
	jsonrpc_send_result(a->j, id, json_pack(
		"{s:i,s:{s:b,s:{s:b,s:b,s:b},s:{s:b,s:b},"
		"s:{s:{},s:{},s:{},s:{},s:{}}},s:{s:s,s:s,s:s},s:[]}",
		"protocolVersion", ACP_PROTOCOL_VERSION,
		"agentCapabilities", "loadSession", 1,
		"promptCapabilities", "image", 0, "audio", 0,
		"embeddedContext", 1,
		"mcpCapabilities", "http", 0, "sse", 0,
		"sessionCapabilities", "list", "resume", "close", "fork",
		"delete",
		"agentInfo", "name", "aptix", "title", "aptix", "version",
		APTIX_VERSION, "authMethods"));
}

/* ---- session/new, load, resume, close, delete, fork ---- */

/* cwd is needed, and absolute; mcpServers, when given, is an array. */
static const char *check_cwd(struct acp *a, json_t *id, json_t *p)
{
	const char *cwd = serve__pstr(p, "cwd");
	json_t *m = json_object_get(p, "mcpServers");

	if (!cwd || *cwd != '/') {
		bad_params(a, id, "cwd is an absolute path");
		return NULL;
	}
	if (m && !json_is_array(m)) {
		bad_params(a, id, "mcpServers is an array");
		return NULL;
	}
	return cwd;
}

/* The conversation sid exists (exactly that id). */
static int conv_exists(struct acp *a, const char *sid)
{
	char found[APTIX_CONV_MAXLEN + 1];
	int r = sid && aptix_conv_resolve(found, serve_repo(a->srv), sid) == 0
		&& !strcmp(found, sid);

	aptix_error_clear();
	return r;
}

/* The WorkspaceId the turns of session s record (serve_turn_begin's). */
static int session_wsid(aptix_buf *out, struct acp *a,
			const struct acp_session *s)
{
	aptix_repo *repo = serve_repo(a->srv);
	aptix_config *cfg = NULL;
	int r;

	if ((r = aptix_config_open(&cfg, repo)) == 0)
		r = aptix_workspace_id(out, cfg, s->workspace ? s->workspace :
				       a->srv->workspace,
				       aptix_repo_workdir(repo));
	aptix_config_free(cfg);
	return r;
}

/*
 * Store session s of session/new: a conversation with no turn yet (its
 * record in the index: listed, loaded and resumed after a restart).
 * When its conversation exists, it is cleared: its ref is deleted
 * (compare-and-swap), so that its next turn starts a new root, and the
 * reflog keeps the old head (*cleared); in the same write it starts
 * again with no turn. A conversation with no head is left as it is.
 */
static int start_conv(struct acp *a, const struct acp_session *s,
		      json_t **cleared, struct serve_err *e)
{
	aptix_repo *repo = serve_repo(a->srv);
	aptix_buf ref = APTIX_BUF_INIT, ws = APTIX_BUF_INIT;
	aptix_txn *tx = NULL;
	aptix_oid head;
	int r, had;

	*cleared = NULL;
	if (serve__busy(a->srv, s->id, NULL)) {
		serve_fail(e, 409, "a turn of session '%s' is running", s->id);
		return -1;
	}
	aptix_buf_printf(&ref, "%s%s", APTIX_CONV_PREFIX, s->id);
	r = aptix_ref_resolve(&head, NULL, repo, ref.ptr);
	had = r == 0;
	if (r == APTIX_ENOTFOUND) {
		aptix_error_clear();
		r = conv_exists(a, s->id) ? 1 : 0;	/* no head: as it is */
	}
	if (r == 0 && (r = session_wsid(&ws, a, s)) == 0 &&
	    (r = aptix_txn_new(&tx, repo)) == 0 &&
	    (!had || (r = aptix_txn_ref_update(tx, ref.ptr, NULL, &head,
					       "acp: session/new clears")) ==
	     0) &&
	    (r = aptix_txn_conversation_create(tx, s->id, ws.len ? ws.ptr :
					       NULL)) == 0)
		r = aptix_txn_commit(tx);
	aptix_txn_free(tx);
	aptix_buf_release(&ref);
	aptix_buf_release(&ws);
	if (r < 0) {
		serve_fail_aptix(e, r);
		return -1;
	}
	*cleared = had ? aptix_view_id(&head) : NULL;
	return 0;
}

static void session_new(struct acp *a, json_t *id, json_t *p)
{
	struct serve_err e = { 0, "", "" };
	const char *cwd = check_cwd(a, id, p), *sid;
	char newid[APTIX_UUID_STRSZ + 1];
	json_t *meta = json_object_get(p, "_meta"), *cleared = NULL;
	struct acp_session *s;

	if (!cwd)
		return;
	sid = serve__pstr(meta, META_SESSION_ID);
	if (json_object_get(meta, META_SESSION_ID) && !sid) {
		bad_params(a, id, "_meta.sessionId is a string");
		return;
	}
	if (sid && !conv_exists(a, sid) && aptix_conv_check_new_id(sid) < 0) {
		bad_params(a, id, aptix_error_last()->message);
		aptix_error_clear();
		return;
	} else if (!sid) {
		if (aptix_uuid_v4(newid) < 0) {
			serve_fail_aptix(&e, APTIX_ERROR);
			fail(a, id, &e);
			return;
		}
		sid = newid;
	}
	if (!(s = open_session(a, sid, cwd, &e)) ||
	    start_conv(a, s, &cleared, &e) < 0) {
		if (s)
			close_session(a, sid);
		fail(a, id, &e);
		return;
	}
	jsonrpc_send_result(a->j, id, json_pack(
		"{s:s,s:{s:{s:o?}}}", "sessionId", sid, "_meta", "aptix",
		"clearedHead", cleared));
}

/* The head of conversation sid (0), or 1 when it has none. */
static int head_of(aptix_oid *head, struct acp *a, const char *sid)
{
	aptix_buf ref = APTIX_BUF_INIT;
	int r;

	aptix_buf_printf(&ref, "%s%s", APTIX_CONV_PREFIX, sid);
	r = aptix_ref_resolve(head, NULL, serve_repo(a->srv), ref.ptr);
	aptix_buf_release(&ref);
	if (r == APTIX_ENOTFOUND) {
		aptix_error_clear();
		return 1;
	}
	return r;
}

/* session/load (replay 1) and session/resume (replay 0). */
static void session_load(struct acp *a, json_t *id, json_t *p, int replay)
{
	struct serve_err e = { 0, "", "" };
	const char *cwd = check_cwd(a, id, p);
	const char *sid = serve__pstr(p, "sessionId");
	aptix_oid head;
	int r;

	if (!cwd)
		return;
	if (!conv_exists(a, sid)) {
		no_session(a, id, sid);
		return;
	}
	if (!open_session(a, sid, cwd, &e)) {
		fail(a, id, &e);
		return;
	}
	r = head_of(&head, a, sid);
	if (r == 0 && replay)
		r = acp_replay_chain(a, sid, &head);
	if (r < 0) {
		serve_fail_aptix(&e, r);
		fail(a, id, &e);
		return;
	}
	jsonrpc_send_result(a->j, id, json_object());
}

static void session_close(struct acp *a, json_t *id, json_t *p)
{
	const char *sid = serve__pstr(p, "sessionId");

	if (!sid || close_session(a, sid) < 0) {
		no_session(a, id, sid);
		return;
	}
	interrupt(a, sid);
	jsonrpc_send_result(a->j, id, json_object());
}

/* session/delete: the conversation is archived (aptix keeps it all). */
static void session_delete(struct acp *a, json_t *id, json_t *p)
{
	struct serve_err e = { 0, "", "" };
	const char *sid = serve__pstr(p, "sessionId");
	json_t *q, *r;

	if (!conv_exists(a, sid)) {
		no_session(a, id, sid);
		return;
	}
	q = json_pack("{s:s,s:b}", "conversation", sid, "archived", 1);
	r = serve_archive(a->srv, q, &e);
	json_decref(q);
	if (!r) {
		fail(a, id, &e);
		return;
	}
	json_decref(r);
	close_session(a, sid);
	interrupt(a, sid);
	jsonrpc_send_result(a->j, id, json_object());
}

/*
 * session/fork: from the head of sessionId, or from any snapshot named
 * by _meta["aptix/fromSession"] (an id, a prefix, HEAD~2...). Stored at
 * once, as `aptix fork <session>` stores it: the new conversation's ref
 * at the snapshot (reflog "fork: from <id>"), so that the session is
 * listed, loaded and resumed after a restart before its first prompt,
 * which continues it.
 */
static int store_fork(struct acp *a, const struct acp_session *s,
		      const aptix_oid *from, struct serve_err *e)
{
	aptix_repo *repo = serve_repo(a->srv);
	aptix_buf ref = APTIX_BUF_INIT, ws = APTIX_BUF_INIT;
	aptix_buf reason = APTIX_BUF_INIT;
	aptix_txn *tx = NULL;
	aptix_oid zero;
	int r;

	memset(&zero, 0, sizeof(zero));
	aptix_buf_printf(&ref, "%s%s", APTIX_CONV_PREFIX, s->id);
	aptix_buf_printf(&reason, "fork: from %s", aptix_oid_hex(from));
	if ((r = session_wsid(&ws, a, s)) == 0 &&
	    (r = aptix_txn_new(&tx, repo)) == 0 &&
	    (r = aptix_txn_conversation_create(tx, s->id, ws.len ? ws.ptr :
					       NULL)) == 0 &&
	    (r = aptix_txn_ref_update(tx, ref.ptr, from, &zero,
				      reason.ptr)) == 0)
		r = aptix_txn_commit(tx);
	aptix_txn_free(tx);
	aptix_buf_release(&ref);
	aptix_buf_release(&ws);
	aptix_buf_release(&reason);
	if (r < 0)
		serve_fail_aptix(e, r);
	return r < 0 ? -1 : 0;
}

static void session_fork(struct acp *a, json_t *id, json_t *p)
{
	struct serve_err e = { 0, "", "" };
	const char *cwd = check_cwd(a, id, p);
	const char *sid = serve__pstr(p, "sessionId");
	const char *rev = serve__pstr(json_object_get(p, "_meta"),
				      META_FORK_FROM);
	char newid[APTIX_UUID_STRSZ + 1];
	struct acp_session *s;
	aptix_otype type;
	aptix_oid from;
	size_t size;
	int r;

	if (!cwd)
		return;
	if (!rev && !conv_exists(a, sid)) {
		no_session(a, id, sid);
		return;
	}
	if (rev ? aptix_revparse(&from, serve_repo(a->srv), rev) < 0 ||
	    aptix_odb_read_header(&size, &type, aptix_repo_odb(
					  serve_repo(a->srv)), &from) < 0 ||
	    type != APTIX_OBJ_SESSION : head_of(&from, a, sid) != 0) {
		jsonrpc_send_error(a->j, id, RPC_RESOURCE_NOT_FOUND, rev ?
				   "no such snapshot to fork" : "the session "
				   "has no turn to fork", json_pack(
					   "{s:s?}", "from", rev));
		aptix_error_clear();
		return;
	}
	if (aptix_uuid_v4(newid) < 0 ||
	    !(s = open_session(a, newid, cwd, &e))) {
		if (!e.status)
			serve_fail_aptix(&e, APTIX_ERROR);
		fail(a, id, &e);
		return;
	}
	if (store_fork(a, s, &from, &e) < 0) {
		close_session(a, newid);
		fail(a, id, &e);
		return;
	}
	/* what the fork inherits, as opencode tells it */
	if ((r = acp_replay_chain(a, newid, &from)) < 0) {
		serve_fail_aptix(&e, r);
		fail(a, id, &e);
		return;
	}
	jsonrpc_send_result(a->j, id, json_pack(
		"{s:s,s:{s:{s:o}}}", "sessionId", newid, "_meta", "aptix",
		"forkedFrom", aptix_view_id(&from)));
}

/* ---- session/prompt ---- */

struct prompt {
	struct acp *a;
	struct serve_turn *t;
	json_t *id;
	json_t *q;			/* the turn's parameters */
	char sid[APTIX_CONV_MAXLEN + 1];
	char mid[APTIX_OID_HEXSZ + 1];	/* the streamed answer's */
};

static void on_event(const char *event, json_t *data, void *payload)
{
	struct prompt *pr = payload;

	if (strcmp(event, "delta"))
		return;
	acp_update(pr->a, pr->sid, json_pack(
		"{s:s,s:s,s:{s:s,s:O}}", "sessionUpdate",
		"agent_message_chunk", "messageId", pr->mid, "content",
		"type", "text", "text", json_object_get(data, "text")));
}

/* A file:// URI's path (percent-decoded), or NULL. */
static char *uri_path(const char *uri)
{
	aptix_buf b = APTIX_BUF_INIT;
	const char *c;

	if (!strncmp(uri, "file://localhost/", 17))
		uri += 16;
	else if (!strncmp(uri, "file:///", 8))
		uri += 7;
	else
		return NULL;
	for (c = uri; *c; c++) {
		unsigned hi, lo;

		if (*c == '%' && sscanf(c + 1, "%1x%1x", &hi, &lo) == 2) {
			aptix_buf_putc(&b, (char)(hi << 4 | lo));
			c += 2;
		} else {
			aptix_buf_putc(&b, *c);
		}
	}
	return aptix_buf_oom(&b) || memchr(b.ptr, 0, b.len) ?
		(aptix_buf_release(&b), NULL) : aptix_buf_detach(&b);
}

/* A path inside the work tree, relative to it (into the path), or NULL. */
static const char *in_tree(struct acp *a, const char *path)
{
	const char *root = aptix_repo_workdir(serve_repo(a->srv));
	size_t n = root ? strlen(root) : 0;

	if (!path || !root || strncmp(path, root, n) || path[n] != '/' ||
	    !path[n + 1])
		return NULL;
	return path + n + 1;
}

/* An embedded resource: its text, fenced, after the instruction. */
static int embed(aptix_buf *in, json_t *res)
{
	const char *uri = serve__pstr(res, "uri");
	const char *text = serve__pstr(res, "text");

	if (!uri || !text)
		return -1;	/* a blob resource: not advertised */
	aptix_buf_printf(in, "%s%s:\n```\n%s%s```\n", in->len ? "\n\n" : "",
			 uri, text, *text && text[strlen(text) - 1] != '\n' ?
			 "\n" : "");
	return 0;
}

/*
 * ACP's content blocks -> the turn's instruction and active files:
 * texts join the instruction, embedded resources are fenced into it
 * (their text is what the client holds, unsaved edits included), and
 * resource links to files of the work tree become active files (other
 * links are named in the instruction).
 */
static int prompt_params(struct acp *a, json_t *q, json_t *blocks,
			 const char **why)
{
	aptix_buf in = APTIX_BUF_INIT;
	json_t *files = json_array(), *reads = json_array(), *v;
	size_t i;
	int fs_read;

	pthread_mutex_lock(&a->lock);
	fs_read = a->fs_read;
	pthread_mutex_unlock(&a->lock);

	*why = "prompt is an array of content blocks";
	json_array_foreach(blocks, i, v) {
		const char *type = serve__pstr(v, "type");
		const char *s;
		char *path;

		if (!type)
			goto bad;
		if (!strcmp(type, "text") && (s = serve__pstr(v, "text"))) {
			aptix_buf_printf(&in, "%s%s", in.len ? "\n\n" : "", s);
		} else if (!strcmp(type, "resource")) {
			*why = "an embedded resource needs a uri and a text";
			if (embed(&in, json_object_get(v, "resource")) < 0)
				goto bad;
		} else if (!strcmp(type, "resource_link") &&
			   (s = serve__pstr(v, "uri"))) {
			const char *rel = in_tree(a, path = uri_path(s));

			if (rel && fs_read)	/* the editor's buffer */
				json_array_append_new(reads, json_pack(
					"{s:s,s:s}", "path", path, "rel", rel));
			else if (rel)
				json_array_append_new(files, json_string(rel));
			else
				aptix_buf_printf(&in, "%s%s", in.len ?
						 "\n\n" : "", s);
			free(path);
		} else {
			*why = "content blocks are text, resource or "
				"resource_link (no image, no audio)";
			goto bad;
		}
	}
	if (aptix_buf_oom(&in))
		goto bad;
	json_object_set_new(q, "instruction", json_stringn(in.ptr, in.len));
	json_object_set_new(q, "active_files", files);
	json_object_set_new(q, "client_reads", reads);
	aptix_buf_release(&in);
	return 0;
bad:
	aptix_buf_release(&in);
	json_decref(files);
	json_decref(reads);
	return -1;
}

static void prompting_done(struct acp *a, const char *sid)
{
	struct acp_session *s;

	pthread_mutex_lock(&a->lock);
	if ((s = find(a, sid)))
		s->prompting = 0;
	pthread_mutex_unlock(&a->lock);
}

static void prompt_free(struct prompt *pr)
{
	serve_turn_free(pr->t);
	json_decref(pr->id);
	json_decref(pr->q);
	free(pr);
}

/*
 * session/request_permission: may a file in which the credential
 * detector found a credential be sent all the same? The editor sees it
 * as a pending read tool call, then what became of it. No answer (the
 * client gone, the prompt cancelled, 5 minutes): withheld.
 */
static int ask_credential(const char *path, const aptix_credential *c,
			  void *payload)
{
	struct prompt *pr = payload;
	char what[160], *abs = acp_abs_path(pr->a, path);
	aptix_buf tid = APTIX_BUF_INIT, title = APTIX_BUF_INIT;
	json_t *call, *m, *o, *u;
	int send;

	aptix_credential_describe(what, sizeof(what), c);
	aptix_buf_printf(&tid, "%s:credential:%s", pr->mid, path);
	aptix_buf_printf(&title, "Send %s? It holds %s: %s", path,
			 aptix_credential_kind(c), what);
	call = json_pack("{s:s%,s:s%,s:s,s:s,s:[{s:s,s:I}]}", "toolCallId",
			 tid.ptr, tid.len, "title", title.ptr, title.len,
			 "kind", "read", "status", "pending", "locations",
			 "path", abs ? abs : path, "line", (json_int_t)c->line);
	free(abs);
	aptix_buf_release(&title);
	u = json_deep_copy(call);
	json_object_set_new(u, "sessionUpdate", json_string("tool_call"));
	acp_update(pr->a, pr->sid, u);
	m = client_call(pr->a, "session/request_permission", json_pack(
				"{s:s,s:O,s:[{s:s,s:s,s:s},{s:s,s:s,s:s}]}",
				"sessionId", pr->sid, "toolCall", call,
				"options", "optionId", "allow", "name",
				"Send it this time", "kind", "allow_once",
				"optionId", "reject", "name", "Withhold it",
				"kind", "reject_once"), 300, pr->sid);
	o = json_object_get(json_object_get(m, "result"), "outcome");
	send = !strcmp(serve__pstr(o, "outcome") ? serve__pstr(o, "outcome") :
		       "", "selected") && serve__pstr(o, "optionId") &&
		!strcmp(serve__pstr(o, "optionId"), "allow");
	acp_update(pr->a, pr->sid, json_pack(
		"{s:s,s:s%,s:s,s:[{s:s,s:{s:s,s:s}}]}", "sessionUpdate",
		"tool_call_update", "toolCallId", tid.ptr, tid.len, "status",
		send ? "completed" : "failed", "content", "type", "content",
		"content", "type", "text", "text", send ? "sent, as allowed" :
		"withheld: neither sent nor stored"));
	json_decref(m);
	json_decref(call);
	aptix_buf_release(&tid);
	return send ? APTIX_CREDENTIAL_SEND : 0;
}

static int prompt_begin(struct prompt *pr, struct serve_err *e)
{
	json_t *started;

	json_object_del(pr->q, "client_reads");
	started = serve_turn_begin(&pr->t, pr->a->srv, pr->q, on_event, pr, e);
	if (!started)
		return -1;
	snprintf(pr->mid, sizeof(pr->mid), "%s",
		 json_string_value(json_object_get(started, "turn")));
	serve_turn_set_ask(pr->t, ask_credential, pr);
	json_decref(started);
	return 0;
}

/*
 * A text holding a credential (or a key of the environment) would make
 * the instruction refused: such a file goes the way of active files.
 */
static int holds_credential(const char *text)
{
	const char *keys[2];
	aptix_credential c;

	keys[0] = getenv("OPENAI_API_KEY");
	keys[1] = getenv("QDRANT_API_KEY");
	return aptix_credscan_find(&c, text, strlen(text), keys, 2);
}

/*
 * The linked files of the work tree, read through the client (its
 * buffers, unsaved edits included) and fenced into the instruction; a
 * file the client does not give is read from the disk by aptix, as an
 * active file, and so is one holding a credential (the scan then asks
 * the client whether to send it).
 */
static void read_through_client(struct prompt *pr)
{
	json_t *reads = json_object_get(pr->q, "client_reads"), *v, *m;
	aptix_buf in = APTIX_BUF_INIT;
	size_t i;

	if (serve__pstr(pr->q, "instruction"))
		aptix_buf_puts(&in, serve__pstr(pr->q, "instruction"));
	json_array_foreach(reads, i, v) {
		const char *text;

		m = client_call(pr->a, "fs/read_text_file", json_pack(
					"{s:s,s:O}", "sessionId", pr->sid,
					"path", json_object_get(v, "path")),
				30, NULL);
		text = serve__pstr(json_object_get(m, "result"), "content");
		if (text && holds_credential(text))
			text = NULL;	/* an active file: the scan asks */
		if (text)
			aptix_buf_printf(&in, "%s%s:\n```\n%s%s```\n",
					 in.len ? "\n\n" : "",
					 serve__pstr(v, "path"), text,
					 *text && text[strlen(text) - 1] !=
					 '\n' ? "\n" : "");
		else
			json_array_append(json_object_get(pr->q,
							  "active_files"),
					  json_object_get(v, "rel"));
		json_decref(m);
	}
	if (!aptix_buf_oom(&in))
		json_object_set_new(pr->q, "instruction",
				    json_stringn(in.ptr, in.len));
	aptix_buf_release(&in);
}

/* A prompt whose files are read through the client: read, then begin. */
static int prompt_begin_late(struct prompt *pr)
{
	struct serve_err e = { 0, "", "" };

	read_through_client(pr);
	if (prompt_begin(pr, &e) == 0) {
		pthread_mutex_lock(&pr->a->lock);
		e.status = pr->a->eof;
		pthread_mutex_unlock(&pr->a->lock);
		if (e.status)	/* gone meanwhile: committed as failed */
			interrupt(pr->a, pr->sid);
		return 0;
	}
	prompting_done(pr->a, pr->sid);
	fail(pr->a, pr->id, &e);
	prompt_free(pr);
	return -1;
}

/* Responses' status -> ACP's stopReason. */
static const char *stop_reason(const aptix_run_result *res)
{
	json_t *raw = json_loadb(res->api.raw.ptr, res->api.raw.len, 0, NULL);
	json_t *out, *item, *part;
	const char *why = serve__pstr(json_object_get(raw, "incomplete_details"),
				      "reason"), *stop = "end_turn";
	int refusal = 0, text = 0;
	size_t i, k;

	out = json_object_get(raw, "response") ?
		json_object_get(json_object_get(raw, "response"), "output") :
		json_object_get(raw, "output");
	json_array_foreach(out, i, item) {
		json_t *content = json_object_get(item, "content");

		json_array_foreach(content, k, part) {
			const char *t = serve__pstr(part, "type");

			refusal |= t && !strcmp(t, "refusal");
			text |= t && !strcmp(t, "output_text");
		}
	}
	if (res->api.status && !strcmp(res->api.status, "incomplete"))
		stop = why && !strcmp(why, "content_filter") ? "refusal" :
			"max_tokens";
	else if (refusal && !text)
		stop = "refusal";
	json_decref(raw);
	return stop;
}

/* Tokens in context and the window, after a committed turn. */
static void usage_update(struct acp *a, const char *sid,
			 const aptix_run_result *res)
{
	const aptix_usage *u = &res->api.usage;
	aptix_config *cfg = NULL;
	long chars = 120000;
	double cost;
	json_t *o = NULL;

	if (aptix_config_open(&cfg, serve_repo(a->srv)) < 0 ||
	    aptix_config_long(&chars, cfg, "context.chain-max-chars") < 0)
		aptix_error_clear();
	aptix_config_free(cfg);
	/* the session's cost so far; omitted (never 0) when not known */
	if (acp_cost(&cost, a, sid, &res->session) == 0)
		o = json_pack("{s:f,s:s}", "amount", cost, "currency", "USD");
	acp_update(a, sid, json_pack(
		"{s:s,s:I,s:I,s:o*}", "sessionUpdate", "usage_update", "used",
		(json_int_t)(u->input_tokens + u->output_tokens), "size",
		(json_int_t)(chars / 4), "cost", o));
}

static void prompt_thread(void *arg)
{
	struct prompt *pr = arg;
	struct acp *a = pr->a;
	json_t *final, *meta, *result = NULL;
	const aptix_run_result *res;
	struct acp_session *s;
	int cancelled = 0;

	if (!pr->t && prompt_begin_late(pr) < 0)
		return;
	final = serve_turn_run(pr->t);
	res = serve_turn_result(pr->t);

	pthread_mutex_lock(&a->lock);
	if ((s = find(a, pr->sid))) {
		cancelled = s->cancelled;
		s->prompting = s->cancelled = 0;
	}
	pthread_mutex_unlock(&a->lock);
	if (res->committed) {
		acp_replay_session(a, pr->sid, &res->session,
				   ACP_REPLAY_CONTEXT | ACP_REPLAY_TOOLS);
		aptix_error_clear();
		usage_update(a, pr->sid, res);
	}
	meta = json_pack("{s:{s:O?,s:O?,s:O?,s:O?,s:O?}}", "aptix",
			 "session", json_object_get(final, "session"),
			 "turn", json_object_get(final, "turn"),
			 "conversation", json_object_get(final,
							 "conversation"),
			 "status", json_object_get(final, "status"),
			 "error_code", json_object_get(final, "error_code"));
	if (!s && res->error_code && !strcmp(res->error_code, "cancelled"))
		cancelled = 1;	/* closed while it ran */
	if (cancelled)
		result = json_pack("{s:s,s:O}", "stopReason", "cancelled",
				   "_meta", meta);
	else if (res->completed)
		result = json_pack(
			"{s:s,s:{s:I,s:I,s:I,s:I},s:O}", "stopReason",
			stop_reason(res), "usage", "inputTokens",
			(json_int_t)res->api.usage.input_tokens, "outputTokens",
			(json_int_t)res->api.usage.output_tokens,
			"totalTokens", (json_int_t)res->api.usage.total_tokens,
			"cachedReadTokens",
			(json_int_t)res->api.usage.cached_tokens, "_meta",
			meta);
	if (result)
		jsonrpc_send_result(a->j, pr->id, result);
	else	/* committed as failed: the snapshot's ids in data */
		jsonrpc_send_error(a->j, pr->id, RPC_INTERNAL_ERROR,
				   serve__pstr(final, "error_message") ?
				   serve__pstr(final, "error_message") :
				   "the turn failed", json_incref(
					   json_object_get(meta, "aptix")));
	json_decref(meta);
	json_decref(final);
	prompt_free(pr);
}

/* The turn's parameters: where it goes, what it asks. */
static int turn_params(struct acp *a, json_t *q, const char *sid,
		       const char **why)
{
	struct acp_session *s;
	int r = 0;

	pthread_mutex_lock(&a->lock);
	if (!(s = find(a, sid))) {
		r = -1;
	} else if (s->prompting) {
		*why = "a prompt of this session is running";
		r = -2;
	} else {
		s->prompting = 1;
		s->cancelled = 0;
		if (s->workspace)
			json_object_set_new(q, "workspace",
					    json_string(s->workspace));
		json_object_set_new(q, "conversation", json_string(sid));
		json_object_set_new(q, "create", json_true());
	}
	pthread_mutex_unlock(&a->lock);
	return r;
}


static void session_prompt(struct acp *a, json_t *id, json_t *p)
{
	struct serve_err e = { 0, "", "" };
	const char *sid = serve__pstr(p, "sessionId"), *why = NULL;
	json_t *blocks = json_object_get(p, "prompt"), *q;
	struct prompt *pr;
	int r;

	if (!json_is_array(blocks) || !sid) {
		bad_params(a, id, "sessionId and prompt are needed");
		return;
	}
	q = json_object();
	if ((r = turn_params(a, q, sid, &why)) < 0) {
		json_decref(q);
		if (r == -1)
			no_session(a, id, sid);
		else
			jsonrpc_send_error(a->j, id, RPC_BUSY, why, NULL);
		return;
	}
	if (prompt_params(a, q, blocks, &why) < 0 ||
	    !(pr = calloc(1, sizeof(*pr)))) {
		prompting_done(a, sid);
		json_decref(q);
		bad_params(a, id, why);
		return;
	}
	pr->a = a;
	pr->id = json_incref(id);
	pr->q = q;
	snprintf(pr->sid, sizeof(pr->sid), "%s", sid);
	/* files read through the client: begun in the thread, after them */
	if (!json_array_size(json_object_get(q, "client_reads")) &&
	    prompt_begin(pr, &e) < 0) {
		prompting_done(a, sid);
		fail(a, id, &e);
		prompt_free(pr);
		return;
	}
	jsonrpc_spawn(a->j, prompt_thread, pr);
}

/* session/cancel: a notification; the prompt answers "cancelled". */
static void session_cancel(struct acp *a, json_t *p)
{
	const char *sid = serve__pstr(p, "sessionId");
	struct acp_session *s;
	int running = 0;

	pthread_mutex_lock(&a->lock);
	running = (s = find(a, sid)) && s->prompting;
	pthread_mutex_unlock(&a->lock);
	/*
	 * The turn's flag first: a permission asked meanwhile, once woken,
	 * must find its turn cancelled, or the call it goes on to make
	 * starts before the flag is set (and reaches the server).
	 */
	if (running)
		interrupt(a, sid);
	pthread_mutex_lock(&a->lock);
	if ((s = find(a, sid)) && s->prompting) {
		s->cancelled = 1;
		/* a permission asked meanwhile is answered "cancelled" */
		pthread_cond_broadcast(&a->replied);
	}
	pthread_mutex_unlock(&a->lock);
}

/* ---- the dialect ---- */

static void list(struct acp *a, json_t *id, json_t *p)
{
	struct serve_err e = { 0, "", "" };
	json_t *r;

	if ((json_object_get(p, "cwd") && !serve__pstr(p, "cwd") &&
	     !json_is_null(json_object_get(p, "cwd"))) ||
	    (json_object_get(p, "cursor") && !serve__pstr(p, "cursor") &&
	     !json_is_null(json_object_get(p, "cursor")))) {
		bad_params(a, id, "cwd and cursor are strings");
		return;
	}
	if (serve__pstr(p, "cwd") && *serve__pstr(p, "cwd") != '/') {
		bad_params(a, id, "cwd is an absolute path");
		return;
	}
	if ((r = acp_list(a, p, &e)))
		jsonrpc_send_result(a->j, id, r);
	else
		fail(a, id, &e);
}

static void session_load_replay(struct acp *a, json_t *id, json_t *p)
{
	session_load(a, id, p, 1);
}

static void session_resume(struct acp *a, json_t *id, json_t *p)
{
	session_load(a, id, p, 0);
}

static const struct {
	const char *name;
	void (*fn)(struct acp *a, json_t *id, json_t *p);
} methods[] = {
	{ "initialize", initialize },
	{ "session/new", session_new },
	{ "session/prompt", session_prompt },
	{ "session/load", session_load_replay },
	{ "session/resume", session_resume },
	{ "session/list", list },
	{ "session/close", session_close },
	{ "session/delete", session_delete },
	{ "session/fork", session_fork },
};

static void dispatch(struct jsonrpc *j, json_t *id, const char *method,
		     json_t *p, void *ctx)
{
	struct acp *a = ctx;
	size_t i;

	(void)j;
	if (!id) {
		if (!strcmp(method, "session/cancel"))
			session_cancel(a, p);
		return;		/* others (unknown "_..." ones too): ignored */
	}
	if (json_object_get(p, "sessionId") && !serve__pstr(p, "sessionId")) {
		bad_params(a, id, "sessionId is a string");
		return;
	}
	for (i = 0; i < sizeof(methods) / sizeof(*methods); i++)
		if (!strcmp(method, methods[i].name)) {
			methods[i].fn(a, id, p);
			return;
		}
	jsonrpc_send_error(a->j, id, RPC_METHOD_NOT_FOUND, "method not found",
			   json_pack("{s:s}", "method", method));
}

int acp_new(struct acp **out, struct serve *s, int out_fd)
{
	struct acp *a = calloc(1, sizeof(*a));
	struct jsonrpc_dialect d = { dispatch, on_response, NULL, on_eof };
	int r;

	*out = NULL;
	if (!a)
		return aptix_error_oom();
	a->srv = s;
	pthread_mutex_init(&a->lock, NULL);
	pthread_cond_init(&a->replied, NULL);
	d.ctx = a;
	if ((r = jsonrpc_new_dialect(&a->j, s, out_fd, &d)) < 0) {
		acp_free(a);
		return r;
	}
	*out = a;
	return 0;
}

struct jsonrpc *acp_transport(struct acp *a)
{
	return a->j;
}

void acp_free(struct acp *a)
{
	struct acp_session *s;

	if (!a)
		return;
	jsonrpc_free(a->j);
	while ((s = a->sessions)) {
		a->sessions = s->next;
		session_free(s);
	}
	pthread_cond_destroy(&a->replied);
	pthread_mutex_destroy(&a->lock);
	free(a);
}
