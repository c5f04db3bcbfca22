/*
 * src/import/gemini.c - Gemini CLI chats
 * (~/.gemini/tmp/<project>/chats/session-<start minute>-<id8>.jsonl).
 *
 * The first line of a file is {sessionId, projectHash, startTime, ...};
 * every resume writes a new file with the same sessionId, so files are
 * merged by it into one conversation ("gemini-<sessionId>"). Message
 * records are {id, timestamp, type: user|gemini, content, ...}: a turn
 * starts at a `user` record holding text (one holding only a
 * functionResponse is a tool's result, part of the turn) and takes the
 * `gemini` records after it; a record written again with the same id
 * replaces the earlier one (a tool call's answer is written empty, then
 * with its toolCalls). A prompt followed by another prompt without an
 * answer (a killed run) is a failed attempt. `$set` records (metadata,
 * snapshots of the history) are kept as source and not read.
 *
 * `{"$rewindTo": <message id>}` drops that message and every later one
 * from the history the CLI goes on with. Nothing is dropped here: what
 * follows the rewind is a branch, the conversation "gemini-<id>.r<n>"
 * (the n-th rewind of the file), forked from the snapshot the turn
 * holding that message started from; the turns rewound stay where they
 * were. Source keys: "gemini:<session>:<message id>" names the snapshot
 * before the turn holding the message.
 *
 * The working directory: `projects.json` beside `tmp/` maps project
 * paths to the short names that name the `tmp/<project>` folders.
 */
#include "util/common.h"
#include "import/import.h"

struct gmsg {
	char *id;
	aptix_buf text;
	aptix_usage usage;
	json_t *calls;		/* its toolCalls, as last written */
};

struct gemini {
	struct imp_turn t;
	int in_turn;
	struct gmsg *msgs;
	size_t nmsgs, amsgs;
	char *cwd;
	char *sid;		/* the session id (its first conversation) */
	unsigned rewinds;
	struct imp_key before;	/* the snapshot the turn starts from */
};

static int gemini_match(const char *path)
{
	return imp_name_is(path, "session-", ".jsonl");
}

static int gemini_prescan(char **id, char **parent UNUSED, const char *path)
{
	json_t *rec = imp_first_record(path);
	int r = 0;

	if (imp_str(rec, "sessionId") &&
	    !(*id = aptix__strdup(imp_str(rec, "sessionId"))))
		r = APTIX_ERROR;
	json_decref(rec);
	return r;
}

/* The project's path, from projects.json: <.gemini>/tmp/<name>/chats/x */
static char *project_dir(const char *path)
{
	aptix_buf p = APTIX_BUF_INIT;
	const char *key, *name = NULL, *end = path + strlen(path);
	json_t *pj, *v;
	char *dir = NULL;
	int up;

	for (up = 0; up < 4 && end > path; up++) {
		while (end > path && end[-1] != '/')
			end--;
		if (up == 2)
			name = end;
		if (end > path)
			end--;
	}
	if (up < 4 || !name)
		return NULL;
	aptix_buf_put(&p, path, (size_t)(end - path));
	aptix_buf_puts(&p, "/projects.json");
	pj = json_load_file(p.ptr, 0, NULL);
	json_object_foreach(json_object_get(pj, "projects"), key, v) {
		const char *s = json_string_value(v);
		size_t n = s ? strlen(s) : 0;

		if (s && !strncmp(name, s, n) && name[n] == '/')
			dir = aptix__strdup(key);
	}
	json_decref(pj);
	aptix_buf_release(&p);
	return dir;
}

/* Remember that message id belongs to the turn that starts at before. */
static int key_put(struct imp_file *f, struct gemini *g, const char *id)
{
	char key[256];

	if (!id || !g->sid)
		return 0;
	snprintf(key, sizeof(key), "gemini:%s:%s", g->sid, id);
	return imp_key_put(f->run, key, &g->before);
}

static int gemini_begin(struct imp_file *f)
{
	struct gemini *g = IMP_STATE_NEW(f, struct gemini);

	if (!g)
		return APTIX_ERROR;
	g->cwd = project_dir(f->path);
	return 0;
}

static void reset_turn(struct gemini *g)
{
	size_t i;

	for (i = 0; i < g->nmsgs; i++) {
		free(g->msgs[i].id);
		aptix_buf_release(&g->msgs[i].text);
		json_decref(g->msgs[i].calls);
	}
	g->nmsgs = 0;
	imp_turn_release(&g->t);
	g->in_turn = 0;
}

static void gemini_release(struct imp_file *f)
{
	struct gemini *g = f->state;

	reset_turn(g);
	free(g->msgs);
	free(g->cwd);
	free(g->sid);
}

static aptix_tool_status call_status(const char *s)
{
	if (s && !strcmp(s, "error"))
		return APTIX_TOOL_ERROR;
	if (s && !strcmp(s, "cancelled"))
		return APTIX_TOOL_CANCELLED;
	return APTIX_TOOL_OK;
}

/*
 * A call (toolCalls[]: id, name, args) and its result: the output of
 * its functionResponse, the exit code Gemini CLI keeps only in that
 * text ("Exit Code: N").
 */
static int tool_call(struct gemini *g, json_t *tc)
{
	const char *id = imp_str(tc, "id");
	json_t *resp = NULL, *part, *out;
	struct imp_result *x;
	char *args, *dumped = NULL;
	size_t i;
	long code;
	int r;

	if (!id || !(args = imp_dump(json_object_get(tc, "args"))))
		return id ? APTIX_ERROR : 0;
	r = imp_call_add(&g->t, id, imp_str(tc, "name") ?
			 imp_str(tc, "name") : "tool", args, NULL, NULL);
	free(args);
	json_array_foreach(json_object_get(tc, "result"), i, part)
		if (!resp)
			resp = json_object_get(json_object_get(
				part, "functionResponse"), "response");
	if (r < 0 || !resp)
		return r;
	if (!(x = imp_result_get(&g->t, id, "gemini")))
		return APTIX_ERROR;
	x->r.status = call_status(imp_str(tc, "status"));
	out = json_object_get(resp, "output");
	if (!json_is_string(out) && !(dumped = imp_dump(resp)))
		return APTIX_ERROR;
	x->has_output = 1;
	r = aptix_buf_puts(&x->output, dumped ? dumped :
			   json_string_value(out));
	free(dumped);
	if (r >= 0 && imp_exit_code(&code, x->output.ptr)) {
		x->r.has_exit_code = 1;
		x->r.exit_code = code;
	}
	return r;
}

static int tool_calls(struct gemini *g, json_t *calls)
{
	json_t *tc;
	size_t i;

	json_array_foreach(calls, i, tc)
		if (tool_call(g, tc) < 0)
			return APTIX_ERROR;
	return 0;
}

static int end_turn(struct imp_file *f, struct gemini *g)
{
	size_t i;
	int r;

	if (!g->in_turn)
		return 0;
	for (i = 0; i < g->nmsgs; i++) {
		struct gmsg *m = &g->msgs[i];

		if (m->text.len) {
			if (g->t.answer.len)
				aptix_buf_puts(&g->t.answer, "\n\n");
			aptix_buf_put(&g->t.answer, m->text.ptr, m->text.len);
			g->t.has_answer = 1;
		}
		g->t.usage.input_tokens += m->usage.input_tokens;
		g->t.usage.cached_tokens += m->usage.cached_tokens;
		g->t.usage.output_tokens += m->usage.output_tokens;
		g->t.usage.reasoning_tokens += m->usage.reasoning_tokens;
		g->t.usage.total_tokens += m->usage.total_tokens;
		g->t.usage.model_requests++;
		if (tool_calls(g, m->calls) < 0)
			return APTIX_ERROR;
	}
	if (aptix_buf_oom(&g->t.answer) ||
	    imp_set_str(&g->t.where.cwd, g->cwd) < 0)
		return APTIX_ERROR;
	r = imp_emit(f, &g->t);
	reset_turn(g);
	return r;
}

static int text_of(aptix_buf *out, json_t *content)
{
	json_t *part;
	size_t i;
	int text = 0;

	if (json_is_string(content)) {
		aptix_buf_puts(out, json_string_value(content));
		return 1;
	}
	json_array_foreach(content, i, part) {
		if (!imp_str(part, "text"))
			continue;
		if (out->len)
			aptix_buf_puts(out, "\n\n");
		aptix_buf_puts(out, imp_str(part, "text"));
		text = 1;
	}
	return text;
}

static int user(struct imp_file *f, struct gemini *g, json_t *rec)
{
	aptix_buf text = APTIX_BUF_INIT;
	int r = 0;

	if (!text_of(&text, json_object_get(rec, "content"))) {
		aptix_buf_release(&text);
		if (g->in_turn)
			imp_cut(f);	/* a tool's result */
		return 0;
	}
	if ((r = end_turn(f, g)) >= 0 && f->conv) {
		imp_key_here(&g->before, f);
		r = key_put(f, g, imp_str(rec, "id"));
	}
	if (r >= 0) {
		g->in_turn = 1;
		g->t.line = f->lineno;
		g->t.created_at = imp_time(rec, "timestamp");
		r = aptix_buf_set(&g->t.instruction, text.ptr, text.len);
		imp_cut(f);
	}
	aptix_buf_release(&text);
	return r;
}

static int answer(struct imp_file *f, struct gemini *g, json_t *rec)
{
	const char *id = imp_str(rec, "id");
	json_t *tok = json_object_get(rec, "tokens");
	struct gmsg *m = NULL;
	size_t i;

	if (!g->in_turn)
		return 0;
	if (key_put(f, g, id) < 0)
		return APTIX_ERROR;
	for (i = 0; id && i < g->nmsgs; i++)
		if (g->msgs[i].id && !strcmp(g->msgs[i].id, id))
			m = &g->msgs[i];	/* written again: replaced */
	if (!m) {
		if (aptix__grow(&g->msgs, &g->amsgs, g->nmsgs,
				sizeof(*g->msgs), 4) < 0)
			return APTIX_ERROR;
		m = &g->msgs[g->nmsgs++];
		memset(m, 0, sizeof(*m));
		aptix_buf_init(&m->text, 0);
		if (imp_set_str(&m->id, id) < 0)
			return APTIX_ERROR;
	}
	aptix_buf_clear(&m->text);
	text_of(&m->text, json_object_get(rec, "content"));
	m->usage.input_tokens = imp_long(tok, "input");
	m->usage.output_tokens = imp_long(tok, "output");
	m->usage.cached_tokens = imp_long(tok, "cached");
	m->usage.reasoning_tokens = imp_long(tok, "thoughts");
	m->usage.total_tokens = imp_long(tok, "total");
	json_decref(m->calls);
	m->calls = json_incref(json_object_get(rec, "toolCalls"));
	g->t.response_at = imp_time(rec, "timestamp");
	imp_cut(f);
	return imp_set_str(&g->t.where.model, imp_str(rec, "model"));
}

/* What follows a rewind is a branch from before the message's turn. */
static int rewind_to(struct imp_file *f, struct gemini *g, const char *id)
{
	const struct imp_key *k;
	char key[256];
	int r;

	if ((r = end_turn(f, g)) < 0)
		return r;
	snprintf(key, sizeof(key), "gemini:%s:%s", g->sid ? g->sid : "",
		 id ? id : "");
	if (!id || !g->sid || !(k = imp_key_get(f->run, key))) {
		imp_warn(f, 0, "rewind to message '%s', which is not "
			 "imported: the conversation goes on", id ? id : "");
		return 0;
	}
	return imp_branch(f, k, "%s.r%u", g->sid, ++g->rewinds);
}

static int gemini_record(struct imp_file *f, json_t *rec)
{
	struct gemini *g = f->state;
	const char *type = imp_str(rec, "type");
	int r;

	if (!rec)
		return 0;
	if (!type && imp_str(rec, "sessionId")) {
		if (f->conv)
			return 0;
		if (imp_set_str(&g->sid, imp_str(rec, "sessionId")) < 0)
			return APTIX_ERROR;
		return (r = imp_conversation(f, g->sid)) < 0 ? r : 0;
	}
	if (!type && json_object_get(rec, "$rewindTo"))
		return rewind_to(f, g, imp_str(rec, "$rewindTo"));
	if (!type && json_object_get(rec, "$set"))
		return 0;
	if (type && !strcmp(type, "user"))
		return user(f, g, rec);
	if (type && !strcmp(type, "gemini"))
		return answer(f, g, rec);
	if (type && (!strcmp(type, "info") || !strcmp(type, "error") ||
		     !strcmp(type, "warning")))
		return 0;
	imp_unknown(f, type ? type : json_object_iter_key(
			    json_object_iter(rec)));
	return 0;
}

static int gemini_end(struct imp_file *f)
{
	struct gemini *g = f->state;
	size_t i;

	for (i = 0; i < g->nmsgs; i++)
		if (g->msgs[i].text.len)
			return end_turn(f, g);
	if (g->in_turn)
		imp_pending(f);
	reset_turn(g);
	return 0;
}

const struct imp_tool aptix__imp_gemini = {
	"gemini", gemini_match, gemini_prescan, gemini_begin, gemini_record,
	gemini_end, gemini_release, NULL, NULL
};
