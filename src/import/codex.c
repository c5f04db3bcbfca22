/*
 * src/import/codex.c - OpenAI Codex CLI rollouts
 * (~/.codex/sessions/YYYY/MM/DD/rollout-<time>-<thread id>.jsonl).
 *
 * Each line is {timestamp, type, payload}. A turn runs from the line
 * after the previous turn's end to its `event_msg` `task_complete` (or
 * `turn_aborted`: a failed attempt); its instruction is the last user
 * `message` of the turn (the first ones are Codex's environment
 * preamble), its answer the assistant messages. Usage is the difference
 * of the cumulative `token_count` totals at the turn's end and at the
 * previous turn's end; model requests are its `token_usage_record`s.
 *
 * Source keys: the thread id and the ordinal of the line after a turn's
 * end ("codex:<thread>:<n>"). A fork's `session_meta` names its parent
 * (`forked_from_id`) and how many of the parent's lines it starts from
 * (`forked_from_ordinal_exclusive`), which is such a key: the fork's
 * first snapshot is a child of the parent's snapshot there, so the fork
 * shares the parent's snapshots up to that point. A fork's own lines are
 * numbered after that many.
 *
 * The git work tree (`session_meta`'s `git`: `commit_hash`, `branch`,
 * `repository_url` without its user information) is each turn's
 * worktree; the repository (its URL, else cwd's) gives the workspace.
 *
 * A `compacted` record (the history replaced by a summary) starts the
 * conversation "codex-<thread>.c<n>", whose first snapshot is a child of
 * the leaf it summarised (the last turn before it), as for Claude Code.
 */
#include "util/common.h"
#include "import/import.h"

struct codex {
	char *thread;
	long offset;		/* ordinal of the file's first line */
	struct imp_turn t;
	int in_turn;
	aptix_usage total, base;	/* cumulative: now, at the last end */
	long requests;
	struct imp_where where;	/* session_meta's and turn_context's */
	unsigned compactions;
};

static int codex_match(const char *path)
{
	return imp_name_is(path, "rollout-", ".jsonl") ||
		imp_name_is(path, "rollout-", ".jsonl.zst");
}

static int codex_prescan(char **id, char **parent, const char *path)
{
	json_t *rec = imp_first_record(path), *p;
	int bad = 0;

	p = rec ? json_object_get(rec, "payload") : NULL;
	if (imp_str(p, "id") && !(*id = aptix__strdup(imp_str(p, "id"))))
		bad = 1;
	if (imp_str(p, "forked_from_id") &&
	    !(*parent = aptix__strdup(imp_str(p, "forked_from_id"))))
		bad = 1;
	json_decref(rec);
	return bad ? APTIX_ERROR : 0;
}

static int codex_begin(struct imp_file *f)
{
	return IMP_STATE_NEW(f, struct codex) ? 0 : APTIX_ERROR;
}

static void codex_release(struct imp_file *f)
{
	struct codex *c = f->state;

	imp_where_release(&c->where);
	free(c->thread);
}

static void put_usage(aptix_usage *u, json_t *tu)
{
	u->input_tokens = imp_long(tu, "input_tokens");
	u->cached_tokens = imp_long(tu, "cached_input_tokens");
	u->output_tokens = imp_long(tu, "output_tokens");
	u->reasoning_tokens = imp_long(tu, "reasoning_output_tokens");
	u->total_tokens = imp_long(tu, "total_tokens");
}

static long minus(long a, long b)
{
	return a > b ? a - b : 0;
}

static int session_meta(struct imp_file *f, struct codex *c, json_t *p)
{
	const char *id = imp_str(p, "id"), *from = imp_str(p, "forked_from_id");
	const struct imp_key *k;
	json_t *git;
	char key[160];
	int r;

	if (c->thread || !id)
		return 0;	/* a resumed thread's meta again */
	git = json_object_get(p, "git");
	if (!(c->thread = aptix__strdup(id)) ||
	    imp_set_str(&c->where.cwd, imp_str(p, "cwd")) < 0 ||
	    imp_set_str(&c->where.commit, imp_str(git, "commit_hash")) < 0 ||
	    imp_set_str(&c->where.branch, imp_str(git, "branch")) < 0 ||
	    imp_remote(f, &c->where, imp_str(git, "repository_url")) < 0)
		return APTIX_ERROR;
	if ((r = imp_conversation(f, id)) != 0)
		return r < 0 ? r : 0;
	if (!from)
		return 0;
	c->offset = imp_long(p, "forked_from_ordinal_exclusive");
	snprintf(key, sizeof(key), "codex:%s:%ld", from, c->offset);
	if (!(k = imp_key_get(f->run, key))) {
		imp_warn(f, 0, "forked from thread %s, which is not imported "
			 "here (give its rollout too): imported as a new "
			 "conversation", from);
		return 0;
	}
	if (!f->conv->has_parent)
		imp_parent(f, k);
	c->total = c->base = k->total;
	return 0;
}

static int text_parts(aptix_buf *out, json_t *content, const char *type)
{
	size_t i;
	json_t *part;

	json_array_foreach(content, i, part) {
		const char *text = imp_str(part, "text");

		if (!text || strcmp(imp_str(part, "type") ?
				    imp_str(part, "type") : "", type))
			continue;
		if (out->len)
			aptix_buf_puts(out, "\n\n");
		aptix_buf_puts(out, text);
	}
	return aptix_buf_oom(out) ? aptix_error_oom() : 0;
}

static void start_turn(struct imp_file *f, struct codex *c, json_t *rec)
{
	if (c->in_turn)
		return;
	c->in_turn = 1;
	c->t.line = f->lineno;
	c->t.created_at = imp_time(rec, "timestamp");
	c->requests = 0;
}

/* A call the model asked for: function, custom or local shell. */
static int tool_call(struct codex *c, json_t *p, const char *type)
{
	const char *kind = !strcmp(type, "custom_tool_call") ? "custom" :
		!strcmp(type, "local_shell_call") ? "local_shell" : NULL;
	const char *args = imp_str(p, kind && !strcmp(kind, "custom") ?
				   "input" : "arguments");
	char *dumped = NULL;
	int r;

	if (!args && json_object_get(p, "action") &&
	    !(args = dumped = imp_dump(json_object_get(p, "action"))))
		return APTIX_ERROR;
	r = imp_call_add(&c->t, imp_str(p, "call_id"),
			 imp_str(p, "name") ? imp_str(p, "name") : type,
			 args, kind, imp_str(p, "id"));
	free(dumped);
	return r;
}

/* What the model was sent back: function_call_output's output. */
static int tool_output(struct codex *c, json_t *p)
{
	const char *id = imp_str(p, "call_id");
	json_t *out = json_object_get(p, "output");
	struct imp_result *x;
	char *dumped = NULL;
	int r;

	if (!id || !out)
		return 0;
	if (!(x = imp_result_get(&c->t, id, "codex")))
		return APTIX_ERROR;
	if (!json_is_string(out) && !(dumped = imp_dump(out)))
		return APTIX_ERROR;
	r = aptix_buf_set(&x->output, dumped ? dumped : json_string_value(out),
			  dumped ? strlen(dumped) : json_string_length(out));
	x->has_output = 1;
	free(dumped);
	return r;
}

static int response_item(struct imp_file *f, struct codex *c, json_t *rec,
			 json_t *p)
{
	const char *type = imp_str(p, "type"), *role = imp_str(p, "role");

	if (type && (!strcmp(type, "function_call") ||
		     !strcmp(type, "custom_tool_call") ||
		     !strcmp(type, "local_shell_call")))
		return tool_call(c, p, type);
	if (type && (!strcmp(type, "function_call_output") ||
		     !strcmp(type, "custom_tool_call_output")))
		return tool_output(c, p);
	if (!type || strcmp(type, "message"))
		return 0;
	if (role && !strcmp(role, "user")) {
		start_turn(f, c, rec);
		aptix_buf_clear(&c->t.instruction);
		return text_parts(&c->t.instruction,
				  json_object_get(p, "content"),
				  "input_text");
	}
	if (role && !strcmp(role, "assistant")) {
		c->t.has_answer = 1;
		return text_parts(&c->t.answer, json_object_get(p, "content"),
				  "output_text");
	}
	return 0;
}

/* The end of a turn: record it, and keep its key. */
static int end_turn(struct imp_file *f, struct codex *c, json_t *rec,
		    int aborted)
{
	struct imp_key k;
	char key[160];
	int r;

	imp_cut(f);
	if (aborted)
		c->t.has_answer = 0;
	c->t.response_at = imp_time(rec, "timestamp");
	c->t.usage.input_tokens = minus(c->total.input_tokens,
					c->base.input_tokens);
	c->t.usage.cached_tokens = minus(c->total.cached_tokens,
					 c->base.cached_tokens);
	c->t.usage.output_tokens = minus(c->total.output_tokens,
					 c->base.output_tokens);
	c->t.usage.reasoning_tokens = minus(c->total.reasoning_tokens,
					    c->base.reasoning_tokens);
	c->t.usage.total_tokens = minus(c->total.total_tokens,
					c->base.total_tokens);
	c->t.usage.model_requests = c->requests;
	if (imp_where_copy(&c->t.where, &c->where) < 0 ||
	    (r = imp_emit(f, &c->t)) < 0)
		return APTIX_ERROR;
	c->base = c->total;
	if (f->conv && c->thread) {
		imp_key_here(&k, f);
		k.total = c->total;
		snprintf(key, sizeof(key), "codex:%s:%ld", c->thread,
			 c->offset + (long)f->lineno);
		if ((r = imp_key_put(f->run, key, &k)) < 0)
			return r;
	}
	imp_turn_release(&c->t);
	c->in_turn = 0;
	return 0;
}

static aptix_tool_status exec_status(const char *s, int64_t exit_code)
{
	if (s && (!strcmp(s, "declined") || !strcmp(s, "rejected")))
		return APTIX_TOOL_DENIED;
	if (s && (!strcmp(s, "cancelled") || !strcmp(s, "interrupted")))
		return APTIX_TOOL_CANCELLED;
	return (s && !strcmp(s, "failed")) || exit_code ? APTIX_TOOL_ERROR :
		APTIX_TOOL_OK;
}

/*
 * A command the client ran for a call (item_completed's CommandExecution,
 * whose id is the call id): its exit code, argv, cwd, duration, and the
 * output it printed (stdout and stderr merged, as Codex keeps it).
 */
static int command_done(struct codex *c, json_t *item)
{
	const char *id = imp_str(item, "id"), *cwd = imp_str(item, "cwd");
	const char *out = imp_str(item, "aggregated_output");
	json_t *ec = json_object_get(item, "exit_code"), *v;
	json_t *d = json_object_get(item, "duration");
	struct imp_result *x;
	size_t i;

	if (!id || !(x = imp_result_get(&c->t, id, "codex")))
		return id ? APTIX_ERROR : 0;
	if (json_is_integer(ec)) {
		x->r.has_exit_code = 1;
		x->r.exit_code = json_integer_value(ec);
	}
	x->r.status = exec_status(imp_str(item, "status"), x->r.exit_code);
	x->r.duration_ms = (int64_t)imp_long(d, "secs") * 1000 +
		imp_long(d, "nanos") / 1000000;
	if (cwd && !strncmp(cwd, "file://", 7))
		cwd += 7;
	if (imp_set_str(&x->r.cwd, cwd) < 0)
		return APTIX_ERROR;
	json_array_foreach(json_object_get(item, "command"), i, v)
		if (json_is_string(v) &&
		    aptix__strv_push(&x->r.argv, &x->r.argc,
				     json_string_value(v)) < 0)
			return APTIX_ERROR;
	if (out) {
		x->has_out = 1;
		return aptix_buf_puts(&x->out, out);
	}
	return 0;
}

static int event_msg(struct imp_file *f, struct codex *c, json_t *rec,
		     json_t *p)
{
	const char *type = imp_str(p, "type");
	json_t *info;

	if (!type)
		return 0;
	if (!strcmp(type, "task_started"))
		start_turn(f, c, rec);
	else if (!strcmp(type, "token_count")) {
		info = json_object_get(p, "info");
		if (json_is_object(json_object_get(info, "total_token_usage")))
			put_usage(&c->total, json_object_get(info,
							     "total_token_usage"));
	} else if (!strcmp(type, "item_completed") &&
		   imp_str(json_object_get(p, "item"), "type") &&
		   !strcmp(imp_str(json_object_get(p, "item"), "type"),
			   "CommandExecution"))
		return command_done(c, json_object_get(p, "item"));
	else if (!strcmp(type, "task_complete"))
		return end_turn(f, c, rec, 0);
	else if (!strcmp(type, "turn_aborted"))
		return end_turn(f, c, rec, 1);
	return 0;
}

/* After a compaction: a new conversation, child of the leaf before. */
static int compacted(struct imp_file *f, struct codex *c)
{
	if (!f->conv || !c->thread)
		return 0;
	return imp_branch(f, NULL, "%.40s.c%u", c->thread, ++c->compactions);
}

static int codex_record(struct imp_file *f, json_t *rec)
{
	struct codex *c = f->state;
	const char *type = imp_str(rec, "type");
	json_t *p = rec ? json_object_get(rec, "payload") : NULL;

	if (!rec)
		return 0;
	if (!type)
		type = "";
	if (!strcmp(type, "session_meta"))
		return session_meta(f, c, p);
	if (!strcmp(type, "response_item"))
		return response_item(f, c, rec, p);
	if (!strcmp(type, "event_msg"))
		return event_msg(f, c, rec, p);
	if (!strcmp(type, "turn_context")) {
		if (imp_set_str(&c->where.cwd, imp_str(p, "cwd")) < 0 ||
		    imp_set_str(&c->where.model, imp_str(p, "model")) < 0)
			return APTIX_ERROR;
		return 0;
	}
	if (!strcmp(type, "token_usage_record")) {
		c->requests++;
		return 0;
	}
	if (!strcmp(type, "compacted"))
		return compacted(f, c);
	if (!strcmp(type, "world_state"))
		return 0;
	imp_unknown(f, type);
	return 0;
}

static int codex_end(struct imp_file *f)
{
	struct codex *c = f->state;

	if (c->in_turn)
		imp_pending(f);
	return 0;
}

const struct imp_tool aptix__imp_codex = {
	"codex", codex_match, codex_prescan, codex_begin, codex_record,
	codex_end, codex_release, NULL, NULL
};
