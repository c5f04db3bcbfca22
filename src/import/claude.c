/*
 * src/import/claude.c - Claude Code transcripts
 * (~/.claude/projects/<project>/<session id>.jsonl, with the session's
 * subagents in <session id>/subagents/agent-<id>.jsonl).
 *
 * A turn starts at a `user` record holding a prompt (text, not a
 * tool_result) and runs to the last `user` or `assistant` record before
 * the next prompt; the bookkeeping records in between (queue-operation,
 * last-prompt, cost-state, attachments after the answer...) go with the
 * next turn. The answer is the text of the assistant records; one API
 * message split over several records (same `message.id`) has its usage
 * counted once. A turn whose last assistant record waits on a tool
 * (stop_reason tool_use) at the end of the file is not over yet.
 *
 * Source keys: the prompt's uuid ("claude:<uuid>"). A fork copies its
 * parent's records with the same uuids: a prompt whose uuid a turn of
 * another conversation already has is that turn, so the fork's first
 * snapshot of its own is a child of the parent's snapshot there (the
 * parent imported by an earlier run, whose keys the store keeps, or by
 * this one: files are ordered so that it comes first, by the
 * `requestSessionId` the copies carry). A subagent (.meta.json's
 * `toolUseId` names the parent's Agent tool_use) becomes a child
 * conversation "claude-agent-<id>" of the snapshot of the turn that
 * spawned it, of session type async_subagent.
 *
 * The prompt's `gitBranch` is the turn's worktree branch (Claude Code
 * records no commit).
 *
 * A compaction (`system` record, subtype compact_boundary, followed by
 * the summary the conversation goes on from) starts the conversation
 * "claude-<session>.c<n>" (the n-th of the file), whose first snapshot
 * is a child of the leaf it summarised: the snapshot of the last turn
 * before the boundary. The summary's records are the source of the
 * first turn after it.
 */
#include "util/common.h"
#include "import/import.h"
#include <dirent.h>

struct claude {
	struct imp_turn t;
	int in_turn;
	char *prompt;		/* the turn's prompt uuid */
	char *last_msg;		/* the message.id whose usage is counted */
	int waits;		/* the last assistant record asked for a tool */
	char **tools;		/* its tool_use ids */
	size_t ntools;
	unsigned compactions;
};

static int claude_match(const char *path)
{
	return imp_name_is(path, "", ".jsonl") &&
		!imp_name_is(path, "agent-", ".jsonl");
}

/* The session id, and the session a fork's copies came from. */
static int claude_prescan(char **id, char **parent, const char *path)
{
	char *line = NULL;
	size_t alloc = 0;
	FILE *fp = fopen(path, "r");
	json_t *rec;
	const char *s, *from;
	int r = 0;

	while (fp && !r && getline(&line, &alloc, fp) > 0 &&
	       (!*id || !*parent)) {
		if (!strstr(line, "\"sessionId\"") ||
		    !(rec = json_loads(line, 0, NULL)))
			continue;
		s = imp_str(rec, "sessionId");
		from = imp_str(rec, "requestSessionId");
		if (!*id && s && !(*id = aptix__strdup(s)))
			r = APTIX_ERROR;
		if (!r && from && s && strcmp(from, s) && !*parent &&
		    !(*parent = aptix__strdup(from)))
			r = APTIX_ERROR;
		json_decref(rec);
	}
	free(line);
	if (fp)
		fclose(fp);
	return r;
}

static int claude_begin(struct imp_file *f)
{
	return IMP_STATE_NEW(f, struct claude) ? 0 : APTIX_ERROR;
}

static void reset_turn(struct claude *c)
{
	imp_turn_release(&c->t);
	free(c->prompt);
	free(c->last_msg);
	c->prompt = c->last_msg = NULL;
	aptix__strv_clear(&c->tools, &c->ntools);
	c->in_turn = c->waits = 0;
}

static void claude_release(struct imp_file *f)
{
	reset_turn(f->state);
}

/* The prompt's text, or NULL when the record holds no prompt. */
static int prompt_text(aptix_buf *out, json_t *rec)
{
	json_t *msg = json_object_get(rec, "message"), *content, *b;
	size_t i;
	int text = 0;

	if (json_is_true(json_object_get(rec, "isMeta")) ||
	    json_is_true(json_object_get(rec, "isCompactSummary")))
		return 0;
	content = json_object_get(msg, "content");
	if (json_is_string(content)) {
		aptix_buf_puts(out, json_string_value(content));
		return 1;
	}
	json_array_foreach(content, i, b) {
		const char *type = imp_str(b, "type");

		if (type && !strcmp(type, "tool_result"))
			return 0;
		if (type && !strcmp(type, "text") && imp_str(b, "text")) {
			if (out->len)
				aptix_buf_puts(out, "\n\n");
			aptix_buf_puts(out, imp_str(b, "text"));
			text = 1;
		}
	}
	return text;
}

/* Record the turn read so far (or share it: a fork's copy). */
static int end_turn(struct imp_file *f, struct claude *c)
{
	const struct imp_key *k = NULL;
	struct imp_key here;
	char key[128], conv[IMP_CONV_MAX + 1] = "";
	size_t i;
	int r = 0, other, mine;

	if (!c->in_turn)
		return 0;
	snprintf(key, sizeof(key), "claude:%s", c->prompt ? c->prompt : "");
	if (c->prompt && f->conv)
		k = imp_key_get(f->run, key);
	other = k && strcmp(k->conv, f->conv->id);
	if (other)
		snprintf(conv, sizeof(conv), "%s", k->conv);
	/*
	 * The prompt is another conversation's turn. A fork's file (its
	 * copies name the session they came from) shares it. Another file
	 * records its own: a parent imported by a later run than its fork,
	 * which took the turn as its own while it waited for it; the
	 * parent takes the key back, and the fork, imported again once the
	 * parent is read, shares the parent's turn (import.c, "forks
	 * imported before their parent"). A key of another file that is no
	 * waiting fork stays as it is: importing both again changes nothing.
	 */
	if (other && f->forked_from) {
		imp_share(f, k);
		reset_turn(c);
		return 0;
	}
	mine = !other || imp_fork_waits(f, conv);
	if (c->waits)
		c->t.has_answer = 0;	/* the answer never came */
	if ((r = imp_emit(f, &c->t)) < 0 || !f->conv || !c->t.has_answer)
		goto done;
	imp_key_here(&here, f);
	if (c->prompt && mine)
		r = imp_key_put(f->run, key, &here);
	for (i = 0; !r && i < c->ntools; i++) {
		snprintf(key, sizeof(key), "claude-tool:%s", c->tools[i]);
		r = imp_key_put_file(f->run, key, &here);	/* subagents */
	}
done:
	reset_turn(c);
	return r;
}

static int start_turn(struct imp_file *f, struct claude *c, json_t *rec,
		      aptix_buf *text)
{
	int r;

	if ((r = end_turn(f, c)) < 0)
		return r;
	c->in_turn = 1;
	c->t.line = f->lineno;
	c->t.created_at = imp_time(rec, "timestamp");
	if (imp_set_str(&c->prompt, imp_str(rec, "uuid")) < 0 ||
	    imp_set_str(&c->t.where.cwd, imp_str(rec, "cwd")) < 0 ||
	    imp_set_str(&c->t.where.branch, imp_str(rec, "gitBranch")) < 0 ||
	    aptix_buf_set(&c->t.instruction, text->ptr, text->len) < 0)
		return APTIX_ERROR;
	imp_cut(f);
	return 0;
}

static void add_usage(aptix_usage *u, json_t *usage)
{
	long in = imp_long(usage, "input_tokens"),
		cr = imp_long(usage, "cache_read_input_tokens"),
		cw = imp_long(usage, "cache_creation_input_tokens"),
		out = imp_long(usage, "output_tokens");

	u->input_tokens += in + cr + cw;
	u->cached_tokens += cr;
	u->output_tokens += out;
	u->total_tokens += in + cr + cw + out;
	u->model_requests++;
}

/* A tool_use block: a call, its input as the arguments' JSON text. */
static int tool_use(struct claude *c, json_t *b)
{
	const char *id = imp_str(b, "id");
	char *args;
	int r;

	if (!id)
		return 0;
	if (aptix__strv_push(&c->tools, &c->ntools, id) < 0 ||
	    !(args = imp_dump(json_object_get(b, "input"))))
		return APTIX_ERROR;
	r = imp_call_add(&c->t, id, imp_str(b, "name") ? imp_str(b, "name") :
			 "tool", args, NULL, NULL);
	free(args);
	return r;
}

/* A tool_result block's content as text (text blocks, else JSON). */
static int result_text(aptix_buf *out, json_t *content)
{
	json_t *b;
	size_t i;
	char *s;
	int r;

	if (json_is_string(content))
		return aptix_buf_puts(out, json_string_value(content));
	json_array_foreach(content, i, b) {
		if (!imp_str(b, "text"))
			break;
	}
	if (i == json_array_size(content)) {
		json_array_foreach(content, i, b) {
			aptix_buf_puts(out, imp_str(b, "text"));
		}
		return aptix_buf_oom(out) ? aptix_error_oom() : 0;
	}
	if (!(s = imp_dump(content)))
		return APTIX_ERROR;
	r = aptix_buf_puts(out, s);
	free(s);
	return r;
}

/*
 * The result of a call: the text the model was sent, stdout and stderr
 * when toolUseResult has them (Bash: stderr is merged into stdout), and
 * the exit code, which Claude Code keeps only as text: a failed command's
 * content starts with "Exit code N"; a Bash call that did not fail
 * (is_error false) exited 0.
 */
static int tool_result(struct claude *c, json_t *b, json_t *tur, int one)
{
	const char *id = imp_str(b, "tool_use_id");
	const aptix_tool_call *call = imp_call_find(&c->t, id);
	struct imp_result *x;
	long code;
	int r;

	if (!id || !(x = imp_result_get(&c->t, id, "claude")))
		return id ? APTIX_ERROR : 0;
	x->has_output = 1;
	if ((r = result_text(&x->output, json_object_get(b, "content"))) < 0)
		return r;
	x->r.status = json_is_true(json_object_get(b, "is_error")) ?
		APTIX_TOOL_ERROR : APTIX_TOOL_OK;
	if (imp_exit_code(&code, x->output.ptr)) {
		x->r.has_exit_code = 1;
		x->r.exit_code = code;
	} else if (x->r.status == APTIX_TOOL_OK && call &&
		   !strcmp(call->name, "Bash")) {
		x->r.has_exit_code = 1;
	}
	if (!one || !json_is_object(tur))
		return 0;
	if (json_is_true(json_object_get(tur, "interrupted")))
		x->r.status = APTIX_TOOL_CANCELLED;
	if (imp_str(tur, "stdout")) {
		x->has_out = 1;
		r = aptix_buf_puts(&x->out, imp_str(tur, "stdout"));
	}
	if (r >= 0 && imp_str(tur, "stderr")) {
		x->has_err = 1;
		r = aptix_buf_puts(&x->err, imp_str(tur, "stderr"));
	}
	return r;
}

static int tool_results(struct claude *c, json_t *rec)
{
	json_t *content = json_object_get(json_object_get(rec, "message"),
					  "content"), *b;
	size_t i, n = 0;
	int r = 0;

	json_array_foreach(content, i, b)
		n += imp_str(b, "type") &&
			!strcmp(imp_str(b, "type"), "tool_result");
	json_array_foreach(content, i, b)
		if (!r && imp_str(b, "type") &&
		    !strcmp(imp_str(b, "type"), "tool_result"))
			r = tool_result(c, b, json_object_get(rec,
							      "toolUseResult"),
					n == 1);
	return r;
}

static int assistant(struct imp_file *f, struct claude *c, json_t *rec)
{
	json_t *msg = json_object_get(rec, "message"), *b;
	const char *id = imp_str(msg, "id"), *stop;
	size_t i;

	if (!c->in_turn)
		return 0;	/* before any prompt: kept as source */
	imp_cut(f);
	c->t.response_at = imp_time(rec, "timestamp");
	if (imp_set_str(&c->t.where.model, imp_str(msg, "model")) < 0)
		return APTIX_ERROR;
	if (!id || !c->last_msg || strcmp(id, c->last_msg)) {
		add_usage(&c->t.usage, json_object_get(msg, "usage"));
		if (imp_set_str(&c->last_msg, id) < 0)
			return APTIX_ERROR;
	}
	stop = imp_str(msg, "stop_reason");
	c->waits = stop && !strcmp(stop, "tool_use");
	json_array_foreach(json_object_get(msg, "content"), i, b) {
		const char *type = imp_str(b, "type");

		if (type && !strcmp(type, "text") && imp_str(b, "text")) {
			if (c->t.answer.len)
				aptix_buf_puts(&c->t.answer, "\n\n");
			aptix_buf_puts(&c->t.answer, imp_str(b, "text"));
			c->t.has_answer = 1;
		} else if (type && !strcmp(type, "tool_use")) {
			c->waits = 1;
			if (tool_use(c, b) < 0)
				return APTIX_ERROR;
		}
	}
	return aptix_buf_oom(&c->t.answer) ? aptix_error_oom() : 0;
}

static int user(struct imp_file *f, struct claude *c, json_t *rec)
{
	aptix_buf text = APTIX_BUF_INIT;
	int r = 0;

	if (prompt_text(&text, rec))
		r = start_turn(f, c, rec, &text);
	else if (c->in_turn) {
		imp_cut(f);	/* a tool's result: the turn goes on */
		c->waits = 0;
		r = tool_results(c, rec);
	}
	aptix_buf_release(&text);
	return r;
}

/* After a compaction: a new conversation, child of the leaf before. */
static int compaction(struct imp_file *f, struct claude *c, json_t *rec)
{
	const char *sid = imp_str(rec, "sessionId");
	int r;

	if ((r = end_turn(f, c)) < 0)
		return r;
	if (!f->conv || !sid || f->conv->session_type)
		return 0;	/* a subagent's compaction: it goes on */
	return imp_branch(f, NULL, "%.40s.c%u", sid, ++c->compactions);
}

static const char *const bookkeeping[] = {
	"attachment", "system", "queue-operation", "last-prompt",
	"cost-state", "mode", "tools-used", "atis-latch",
	"api-request-shape", "api-request-blob", "api-request", "summary",
	"file-history-snapshot", "custom-title", "progress", NULL
};

static int claude_record(struct imp_file *f, json_t *rec)
{
	struct claude *c = f->state;
	const char *type = imp_str(rec, "type"), *sid;
	size_t i;
	int r;

	if (!rec)
		return 0;
	if (!f->conv && (sid = imp_str(rec, "sessionId")) &&
	    (r = imp_conversation(f, sid)) < 0)
		return r;
	if (type && !strcmp(type, "user"))
		return user(f, c, rec);
	if (type && !strcmp(type, "assistant"))
		return assistant(f, c, rec);
	if (type && !strcmp(type, "system") &&
	    imp_str(rec, "subtype") &&
	    !strcmp(imp_str(rec, "subtype"), "compact_boundary"))
		return compaction(f, c, rec);
	for (i = 0; type && bookkeeping[i]; i++)
		if (!strcmp(type, bookkeeping[i]))
			return 0;
	imp_unknown(f, type);
	return 0;
}

/* The subagents of the session in path, each a child conversation. */
static int subagents(struct imp_file *f, const char *path)
{
	aptix_buf dir = APTIX_BUF_INIT, p = APTIX_BUF_INIT;
	aptix_buf meta = APTIX_BUF_INIT;
	const struct imp_key *k;
	struct dirent *de;
	json_t *m;
	char key[128], conv[IMP_CONV_MAX + 1];
	DIR *d;
	int r = 0;

	aptix_buf_put(&dir, path, strlen(path) - strlen(".jsonl"));
	aptix_buf_puts(&dir, "/subagents");
	if (aptix_buf_oom(&dir) || !(d = opendir(dir.ptr))) {
		aptix_buf_release(&dir);
		return 0;
	}
	while (!r && (de = readdir(d))) {
		size_t n = strlen(de->d_name);

		if (!imp_name_is(de->d_name, "agent-", ".jsonl") || n > 60)
			continue;
		aptix_buf_clear(&p);
		aptix_buf_printf(&p, "%s/%s", dir.ptr, de->d_name);
		aptix_buf_clear(&meta);
		aptix_buf_put(&meta, p.ptr, p.len - strlen(".jsonl"));
		aptix_buf_puts(&meta, ".meta.json");
		m = json_load_file(meta.ptr, 0, NULL);
		snprintf(key, sizeof(key), "claude-tool:%s",
			 imp_str(m, "toolUseId") ? imp_str(m, "toolUseId") :
			 "");
		snprintf(conv, sizeof(conv), "claude-%.*s", (int)(n - 6),
			 de->d_name);
		if (!(k = imp_key_get(f->run, key)))
			imp_warn(f, 0, "subagent %s: the tool call that "
				 "started it is not imported: imported as a "
				 "conversation of its own", de->d_name);
		r = imp_import_child(f->run, f->tool, p.ptr, conv, k,
				     "async_subagent");
		json_decref(m);
	}
	closedir(d);
	aptix_buf_release(&dir);
	aptix_buf_release(&p);
	aptix_buf_release(&meta);
	return r;
}

static int claude_end(struct imp_file *f)
{
	struct claude *c = f->state;
	int r;

	if (c->in_turn && (c->waits || !c->t.has_answer)) {
		imp_pending(f);
		reset_turn(c);
	} else if ((r = end_turn(f, c)) < 0) {
		return r;
	}
	if (f->conv && f->conv->session_type)
		return 0;	/* a subagent's file */
	return subagents(f, f->path);
}

const struct imp_tool aptix__imp_claude = {
	"claude", claude_match, claude_prescan, claude_begin, claude_record,
	claude_end, claude_release, NULL, NULL
};
