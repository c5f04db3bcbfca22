/*
 * serve/acp-history.c - aptix's history in ACP's words: a snapshot told
 * as session/update notifications (session/load, session/fork and the
 * end of each session/prompt), and the list of conversations as
 * session/list's sessions.
 *
 * One snapshot is told in the order a user lived it: the instruction
 * (user_message_chunk); the context the turn had, as completed tool
 * calls (the active files: kind "read"; the retrieved snippets: kind
 * "search"), each with the files' locations; the results of the tool
 * calls the previous turn asked for (tool_call_update); the answer
 * (agent_message_chunk); the tool calls this turn asked for (tool_call,
 * pending until the next turn carries their results). The texts are
 * read from the store through the JSON views (include/aptix/view.h),
 * the chain through the revision walker.
 */
#ifndef _POSIX_C_SOURCE
# define _POSIX_C_SOURCE 200809L
#endif
#include <stdlib.h>
#include <string.h>
#include <aptix/revwalk.h>

#include "acp-int.h"

void acp_update(struct acp *a, const char *sid, json_t *update)
{
	jsonrpc_notify(a->j, "session/update", json_pack(
			       "{s:s,s:o}", "sessionId", sid, "update",
			       update ? update : json_object()));
}

char *acp_abs_path(struct acp *a, const char *rel)
{
	const char *root = aptix_repo_workdir(serve_repo(a->srv));
	aptix_buf b = APTIX_BUF_INIT;

	if (*rel == '/' || !root)
		aptix_buf_puts(&b, rel);
	else
		aptix_buf_printf(&b, "%s/%s", root, rel);
	return aptix_buf_oom(&b) ? NULL : aptix_buf_detach(&b);
}

static json_t *text_block(json_t *text)
{
	return json_pack("{s:s,s:O}", "type", "text", "text",
			 text ? text : json_string(""));
}

static void message(struct acp *a, const char *sid, const char *kind,
		    const char *mid, json_t *text)
{
	if (!json_is_string(text) || !*json_string_value(text))
		return;
	acp_update(a, sid, json_pack("{s:s,s:s,s:o}", "sessionUpdate", kind,
				     "messageId", mid, "content",
				     text_block(text)));
}

/* A location {path, line?} of a path relative to the work tree. */
static json_t *location(struct acp *a, json_t *path, json_t *line)
{
	char *abs = acp_abs_path(a, json_is_string(path) ?
				 json_string_value(path) : "");
	json_t *o = json_pack("{s:s}", "path", abs ? abs : "");

	free(abs);
	if (json_integer_value(line) > 0)
		json_object_set(o, "line", line);
	return o;
}

/*
 * The context of a turn as one completed tool call: kind read (files)
 * or search (snippets), a line of text per item.
 */
static void context_call(struct acp *a, const char *sid, const char *tid,
			 const char *kind, const char *title, json_t *items)
{
	json_t *locs, *v;
	aptix_buf text = APTIX_BUF_INIT;
	size_t i;

	if (!json_array_size(items))
		return;
	locs = json_array();
	json_array_foreach(items, i, v) {
		json_t *path = json_object_get(v, "path");

		json_array_append_new(locs, location(a, path, json_object_get(
						v, "start_line")));
		if (!strcmp(kind, "search"))
			aptix_buf_printf(&text, "%s:%" JSON_INTEGER_FORMAT
					 "-%" JSON_INTEGER_FORMAT "\n",
					 json_string_value(path),
					 json_integer_value(json_object_get(
						 v, "start_line")),
					 json_integer_value(json_object_get(
						 v, "end_line")));
		else
			aptix_buf_printf(&text, "%s (%s)\n",
					 json_string_value(path),
					 json_string_value(json_object_get(
						 v, "state")));
	}
	acp_update(a, sid, json_pack(
		"{s:s,s:s,s:s,s:s,s:s,s:o,s:[{s:s,s:{s:s,s:s%}}],s:{s:O}}",
		"sessionUpdate", "tool_call", "toolCallId", tid, "title",
		title, "kind", kind, "status", "completed", "locations", locs,
		"content", "type", "content", "content", "type", "text",
		"text", text.ptr ? text.ptr : "", text.len,
		"rawInput", "items", items));
	aptix_buf_release(&text);
}

/* A tool's kind, guessed from its name. */
static const char *tool_kind(const char *name)
{
	if (!name)
		return "other";
	if (strstr(name, "shell") || strstr(name, "exec") ||
	    strstr(name, "bash") || strstr(name, "run"))
		return "execute";
	if (strstr(name, "read") || strstr(name, "cat"))
		return "read";
	if (strstr(name, "search") || strstr(name, "grep") ||
	    strstr(name, "find"))
		return "search";
	return "other";
}

/* A call the model asked for: a tool_call, pending its result. */
static json_t *tool_call(json_t *v, const char *cid)
{
	const char *name = serve__pstr(v, "name");
	const char *text = serve__pstr(v, "arguments");
	json_t *args = text ? json_loads(text, JSON_DECODE_ANY, NULL) : NULL;

	return json_pack("{s:s,s:s,s:s,s:s,s:s,s:o}", "sessionUpdate",
			 "tool_call", "toolCallId", cid, "title", name ? name :
			 "tool", "kind", tool_kind(name), "status", "pending",
			 "rawInput", args ? args : json_string(text ? text :
							      ""));
}

/* The result a later turn sent back: the call's tool_call_update. */
static json_t *tool_result(json_t *v, const char *cid)
{
	const char *st = serve__pstr(v, "status");
	json_t *out = json_object_get(v, "output");

	return json_pack("{s:s,s:s,s:s,s:[{s:s,s:o}],s:{s:O?,s:O?}}",
			 "sessionUpdate", "tool_call_update", "toolCallId", cid,
			 "status", st && !strcmp(st, "ok") ? "completed" :
			 "failed", "content", "type", "content", "content",
			 text_block(json_is_string(out) ? out : NULL),
			 "rawOutput", "output", out, "exit_code",
			 json_object_get(v, "exit_code"));
}

/* Each of a view's tool_calls or tool_results, as fn tells it. */
static void tools(struct acp *a, const char *sid, json_t *items,
		  json_t *(*fn)(json_t *v, const char *cid))
{
	json_t *v;
	size_t i;

	json_array_foreach(items, i, v) {
		const char *cid = serve__pstr(v, "call_id");

		if (cid)
			acp_update(a, sid, fn(v, cid));
	}
}

int acp_replay_session(struct acp *a, const char *sid,
		       const aptix_oid *session, unsigned what)
{
	char hex[APTIX_OID_HEXSZ + 1], mid[APTIX_OID_HEXSZ + 8];
	char tid[APTIX_OID_HEXSZ + 16];
	json_t *o;
	int r;

	if ((r = aptix_view_turn(&o, serve_repo(a->srv), session,
				 APTIX_VIEW_FULL)) < 0)
		return r;
	snprintf(hex, sizeof(hex), "%s", aptix_oid_hex(session));
	snprintf(mid, sizeof(mid), "%s:user", hex);
	if (what & ACP_REPLAY_MESSAGES)
		message(a, sid, "user_message_chunk", mid,
			json_object_get(o, "instruction"));
	if (what & ACP_REPLAY_CONTEXT) {
		snprintf(tid, sizeof(tid), "%s:files", hex);
		context_call(a, sid, tid, "read", "Active files",
			     json_object_get(o, "files"));
		snprintf(tid, sizeof(tid), "%s:snippets", hex);
		context_call(a, sid, tid, "search", "Retrieved snippets",
			     json_object_get(o, "sources"));
	}
	if (what & ACP_REPLAY_TOOLS)
		tools(a, sid, json_object_get(o, "tool_results"),
		      tool_result);
	if (what & ACP_REPLAY_MESSAGES)
		message(a, sid, "agent_message_chunk", hex,
			json_object_get(o, "answer"));
	if (what & ACP_REPLAY_TOOLS)
		tools(a, sid, json_object_get(o, "tool_calls"), tool_call);
	json_decref(o);
	return 0;
}

int acp_replay_chain(struct acp *a, const char *sid, const aptix_oid *head)
{
	aptix_revwalk *w = NULL;
	aptix_oid id;
	int r;

	if ((r = aptix_revwalk_new(&w, serve_repo(a->srv))) == 0 &&
	    (r = aptix_revwalk_sorting(w, APTIX_SORT_TOPOLOGICAL |
				       APTIX_SORT_REVERSE)) == 0)
		r = aptix_revwalk_push(w, head);
	while (r == 0 && (r = aptix_revwalk_next(&id, w)) == 0)
		r = acp_replay_session(a, sid, &id, ACP_REPLAY_MESSAGES |
				       ACP_REPLAY_CONTEXT | ACP_REPLAY_TOOLS);
	aptix_revwalk_free(w);
	return r == APTIX_ITEROVER ? 0 : r;
}

/* ---- usage_update's cost ---- */

/* What one snapshot's turn cost: 0, or -1 when it is not known. */
static int turn_cost(double *out, aptix_repo *repo, const aptix_config *cfg,
		     const aptix_session *s)
{
	aptix_price price;
	aptix_turn t;
	int r;

	*out = 0;
	if (!s->usage.input_tokens && !s->usage.output_tokens)
		return 0;	/* no token spent costs nothing */
	if (aptix_turn_lookup(&t, repo, &s->turn) < 0) {
		aptix_turn_release(&t);
		return -1;
	}
	r = aptix_price_lookup(&price, cfg, t.model ? t.model : "");
	if (r == 0)
		*out = aptix_price_cost(&price, s->usage.input_tokens,
					s->usage.cached_tokens,
					s->usage.output_tokens);
	aptix_turn_release(&t);
	return r < 0 ? -1 : 0;
}

int acp_cost(double *out, struct acp *a, const char *sid,
	     const aptix_oid *head)
{
	aptix_repo *repo = serve_repo(a->srv);
	aptix_config *cfg = NULL;
	aptix_session s;
	aptix_oid id = *head;
	double one;
	int r = aptix_config_open(&cfg, repo), more = 1;

	*out = 0;
	while (r == 0 && more) {
		if ((r = aptix_session_lookup(&s, repo, &id)) == 0 &&
		    (!s.conversation || strcmp(s.conversation, sid)))
			more = 0;	/* what a fork inherits: not its cost */
		else if (r == 0 && (r = turn_cost(&one, repo, cfg, &s)) == 0)
			*out += one;
		more = more && r == 0 && s.has_parent;
		id = s.parent;
		aptix_session_release(&s);
	}
	aptix_config_free(cfg);
	aptix_error_clear();
	return r < 0 ? -1 : 0;
}

/* ---- session/list ---- */

/* The cwd of a conversation: the open session's, else the work tree. */
static json_t *cwd_of(struct acp *a, const char *id, const char *asked)
{
	const char *root = aptix_repo_workdir(serve_repo(a->srv));
	struct acp_session *s;
	json_t *v = NULL;

	pthread_mutex_lock(&a->lock);
	for (s = a->sessions; s; s = s->next)
		if (!strcmp(s->id, id)) {
			v = json_string(s->cwd);
			break;
		}
	pthread_mutex_unlock(&a->lock);
	if (v)
		return v;
	return json_string(asked ? asked : root ? root : "/");
}

json_t *acp_list(struct acp *a, json_t *p, struct serve_err *e)
{
	const char *cwd = serve__pstr(p, "cwd");
	const char *root = aptix_repo_workdir(serve_repo(a->srv));
	aptix_buf ws = APTIX_BUF_INIT;
	json_t *q = json_object(), *r, *out, *v, *list;
	size_t i, n;

	if (json_object_get(p, "cursor") && !json_is_null(json_object_get(
				p, "cursor")))
		json_object_set(q, "cursor", json_object_get(p, "cursor"));
	/* the page size: aptix's extension (ACP leaves it to the agent) */
	if (json_object_get(json_object_get(p, "_meta"), "aptix/limit"))
		json_object_set(q, "limit", json_object_get(json_object_get(
					p, "_meta"), "aptix/limit"));
	if (!cwd) {
		json_object_set_new(q, "all", json_true());
	} else if (!(root && !strncmp(cwd, root, n = strlen(root)) &&
		     (!cwd[n] || cwd[n] == '/'))) {
		/* another tree than the store's: the workspace of that path */
		if (serve_workspace_id(&ws, a->srv, cwd, e) < 0) {
			json_decref(q);
			aptix_buf_release(&ws);
			return NULL;
		}
		json_object_set_new(q, "workspace", json_string(ws.ptr));
	}
	aptix_buf_release(&ws);
	r = serve_list_conversations(a->srv, q, e);
	json_decref(q);
	if (!r)
		return NULL;
	list = json_array();
	json_array_foreach(json_object_get(r, "items"), i, v) {
		const char *id = json_string_value(json_object_get(
							   v, "conversation"));

		json_array_append_new(list, json_pack(
			"{s:s,s:o,s:O?,s:O?,s:{s:{s:O?,s:O?,s:O?,s:O?}}}",
			"sessionId", id, "cwd", cwd_of(a, id, cwd), "title",
			json_object_get(v, "title"), "updatedAt",
			json_object_get(v, "updated_at"), "_meta", "aptix",
			"workspace", json_object_get(v, "workspace"), "head",
			json_object_get(v, "head"), "turnCount",
			json_object_get(v, "turn_count"), "status",
			json_object_get(v, "status")));
	}
	out = json_pack("{s:o}", "sessions", list);
	if (json_is_string(json_object_get(r, "next_cursor")))
		json_object_set(out, "nextCursor",
				json_object_get(r, "next_cursor"));
	json_decref(r);
	return out;
}
