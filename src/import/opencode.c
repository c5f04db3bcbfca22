/*
 * src/import/opencode.c - `aptix import opencode`: OpenCode's sessions,
 * from its SQLite database (opencode.db, read through SQLite itself,
 * read-only) or from the JSON of `opencode export <session>`.
 *
 * Both are read into the same records, one line of compact JSON each,
 * keys sorted, so that a session gives the same turns whichever way it
 * came: a session record {"type": "session", "id", "parent_id",
 * "title", "directory", "time_created"} and, in time order, a message
 * record {"type": "message", "id", "info", "parts": [{"id", "data"}]}
 * (the message's and parts' JSON without the ids the database keeps in
 * columns). The records are the turns' source blobs.
 *
 * A turn is a user message and the assistant messages after it (one a
 * model step): the instruction is the user's text parts, the answer the
 * assistants' text parts; a `tool` part is a call and, once completed
 * or failed, its result (exit code from state.metadata.exit, what the
 * model was sent from state.output); usage is summed over the steps.
 * The conversation is "opencode-<session id>".
 *
 * Forks: OpenCode copies the messages of a forked session under new
 * ids and keeps the parent only in the title ("<title> (fork #N)", the
 * parent being "<title>" for #1, else "<title> (fork #N-1)"). A fork's
 * turns are matched by content (instruction and answer) against the
 * parent's turn at the same position, imported earlier in the run: as
 * long as they match, the fork shares the parent's snapshots, and its
 * first own turn is a child of the last shared one. A session with a
 * parent_id (a subagent, OpenCode's `task` tool) is a child
 * conversation of session type "subagent", a child of the parent's turn
 * whose task call names it (else of the parent's newest snapshot).
 */
#include "util/common.h"
#include "import/import.h"
#include "util/cjson.h"
#include <sqlite3.h>

#define SIG_HEX 16

struct opencode {
	struct imp_turn t;
	int open;		/* a user message started a turn */
	int stop;		/* an assistant step ended it ("stop") */
	int error;		/* an assistant step failed */
	long turn_no;		/* turns of the session so far */
	int sharing;		/* a fork still matching its parent */
	char parent_conv[IMP_CONV_MAX + 1];
	char *sid;		/* the session being read */
	char *dir;		/* its directory */
};

static int oc_match(const char *path)
{
	return imp_name_is(path, "opencode", ".db");
}

static int oc_begin(struct imp_file *f)
{
	return IMP_STATE_NEW(f, struct opencode) ? 0 : APTIX_ERROR;
}

static void oc_release(struct imp_file *f)
{
	struct opencode *oc = f->state;

	free(oc->sid);
	free(oc->dir);
}

/* --- turns ------------------------------------------------------------ */

/* A short hash of the turn's texts: what a fork's copy is matched by. */
static void turn_sig(char out[SIG_HEX + 1], const struct imp_turn *t)
{
	aptix_buf b = APTIX_BUF_INIT;
	aptix_oid h;

	aptix_buf_put(&b, t->instruction.ptr, t->instruction.len);
	aptix_buf_putc(&b, '\0');
	aptix_buf_put(&b, t->answer.ptr, t->answer.len);
	memset(&h, 0, sizeof(h));
	if (!aptix_buf_oom(&b))
		aptix_sha256(&h, b.ptr, b.len);
	memcpy(out, aptix_oid_hex(&h), SIG_HEX);
	out[SIG_HEX] = '\0';
	aptix_buf_release(&b);
}

static int put_key(struct imp_file *f, const char *fmt, ...)
	APTIX_FORMAT(2, 3);
/* The conversation's newest snapshot under a key made by fmt. */
static int put_key(struct imp_file *f, const char *fmt, ...)
{
	aptix_buf key = APTIX_BUF_INIT;
	struct imp_key k;
	va_list ap;
	int r;

	va_start(ap, fmt);
	aptix_buf_vprintf(&key, fmt, ap);
	va_end(ap);
	imp_key_here(&k, f);
	r = aptix_buf_oom(&key) ? aptix_error_oom() :
		imp_key_put(f->run, key.ptr, &k);
	aptix_buf_release(&key);
	return r;
}

/* A turn of a fork: the parent's at the same place, while they match. */
static int share_turn(struct imp_file *f, struct opencode *oc,
		      const char *sig)
{
	aptix_buf key = APTIX_BUF_INIT;
	const struct imp_key *k;

	if (!oc->sharing)
		return 0;
	aptix_buf_printf(&key, "opencode:%s:%ld:%s", oc->parent_conv,
			 oc->turn_no, sig);
	if (aptix_buf_oom(&key))
		return aptix_error_oom();
	k = imp_key_get(f->run, key.ptr);
	aptix_buf_release(&key);
	if (!k) {
		oc->sharing = 0;
		return 0;
	}
	imp_share(f, k);
	return 1;
}

/* The turn is over: shared with the parent, or recorded. */
static int end_turn(struct imp_file *f, struct opencode *oc)
{
	char sig[SIG_HEX + 1];
	int r;

	if (!oc->open)
		return 0;
	oc->open = 0;
	oc->turn_no++;
	oc->t.has_answer = oc->stop || oc->t.answer.len;
	turn_sig(sig, &oc->t);
	if (!oc->t.has_answer)
		oc->sharing = 0;
	if ((r = share_turn(f, oc, sig)) == 0)
		r = imp_emit(f, &oc->t);
	imp_turn_release(&oc->t);
	oc->stop = oc->error = 0;
	if (r < 0 || !f->conv)
		return r < 0 ? r : 0;
	if ((r = put_key(f, "opencode:%s:%ld:%s", f->conv->id, oc->turn_no,
			 sig)) < 0)
		return r;
	return put_key(f, "opencode-head:%s", oc->sid);
}

/* The session's end: its last turn, if it is over, else left for later. */
static int end_session(struct imp_file *f, struct opencode *oc)
{
	if (oc->open && !oc->stop && !oc->error) {
		imp_pending(f);
		oc->open = 0;
		imp_turn_release(&oc->t);
		return 0;
	}
	return end_turn(f, oc);
}

/* --- records ---------------------------------------------------------- */

static int add_text(aptix_buf *to, json_t *part)
{
	const char *text = imp_str(part, "text");

	if (!text || !*text)
		return 0;
	if (to->len)
		aptix_buf_puts(to, "\n\n");
	return aptix_buf_puts(to, text);
}

/* A `tool` part: the call, and its result once it has one. */
static int tool_part(struct imp_file *f, struct opencode *oc, json_t *part)
{
	json_t *state = json_object_get(part, "state");
	json_t *md = json_object_get(state, "metadata");
	json_t *tm = json_object_get(state, "time");
	json_t *exit = json_object_get(md, "exit");
	const char *id = imp_str(part, "callID");
	const char *st = imp_str(state, "status");
	const char *out = imp_str(state, "output");
	struct imp_result *x;
	char *args;
	int r;

	if (!id || !(args = imp_dump(json_object_get(state, "input") ?
				     json_object_get(state, "input") :
				     json_object())))
		return id ? APTIX_ERROR : 0;
	r = imp_call_add(&oc->t, id, imp_str(part, "tool") ?
			 imp_str(part, "tool") : "tool", args, NULL, NULL);
	free(args);
	if (r < 0 || !st || (strcmp(st, "completed") && strcmp(st, "error")))
		return r;
	if (imp_str(md, "sessionId") &&
	    (r = put_key(f, "opencode-spawn:%s", imp_str(md, "sessionId"))) < 0)
		return r;
	if (!(x = imp_result_get(&oc->t, id, "opencode")))
		return APTIX_ERROR;
	if (json_is_integer(exit)) {
		x->r.has_exit_code = 1;
		x->r.exit_code = json_integer_value(exit);
	}
	x->r.status = !strcmp(st, "error") || x->r.exit_code ?
		APTIX_TOOL_ERROR : APTIX_TOOL_OK;
	x->r.started_at = json_integer_value(json_object_get(tm, "start"));
	if (x->r.started_at && json_integer_value(json_object_get(tm, "end")) >
	    x->r.started_at)
		x->r.duration_ms = json_integer_value(json_object_get(tm,
			"end")) - x->r.started_at;
	if (!out)
		out = imp_str(state, "error");
	x->has_output = out != NULL;
	if (imp_str(md, "output")) {
		x->has_out = 1;
		r = aptix_buf_puts(&x->out, imp_str(md, "output"));
	}
	return r < 0 ? r : out ? aptix_buf_puts(&x->output, out) : 0;
}

static void add_usage(aptix_usage *u, json_t *tokens)
{
	json_t *cache = json_object_get(tokens, "cache");

	u->input_tokens += imp_long(tokens, "input");
	u->output_tokens += imp_long(tokens, "output");
	u->reasoning_tokens += imp_long(tokens, "reasoning");
	u->cached_tokens += imp_long(cache, "read");
	u->total_tokens += imp_long(tokens, "total") ? imp_long(tokens,
		"total") : imp_long(tokens, "input") + imp_long(tokens,
								"output");
	u->model_requests++;
}

static int assistant(struct imp_file *f, struct opencode *oc, json_t *info,
		     json_t *parts)
{
	json_t *tm = json_object_get(info, "time"), *p;
	const char *finish = imp_str(info, "finish"), *type;
	int64_t done = json_integer_value(json_object_get(tm, "completed"));
	size_t i;
	int r = 0;

	if (!oc->open) {
		imp_warn(f, 0, "an assistant message without a user message "
			 "before it: kept as source, not read");
		return 0;
	}
	add_usage(&oc->t.usage, json_object_get(info, "tokens"));
	if ((r = imp_set_str(&oc->t.where.model, imp_str(info, "modelID"))) < 0 ||
	    (r = imp_set_str(&oc->t.where.cwd, imp_str(json_object_get(info, "path"),
						 "cwd"))) < 0)
		return r;
	if (done > oc->t.response_at)
		oc->t.response_at = done;
	oc->stop |= finish && strcmp(finish, "tool-calls") && done;
	oc->error |= json_object_get(info, "error") != NULL;
	json_array_foreach(parts, i, p) {
		json_t *data = json_object_get(p, "data");

		if (!(type = imp_str(data, "type")) || r < 0)
			continue;
		if (!strcmp(type, "text"))
			r = add_text(&oc->t.answer, data);
		else if (!strcmp(type, "tool"))
			r = tool_part(f, oc, data);
	}
	imp_cut(f);
	return r;
}

static int user(struct imp_file *f, struct opencode *oc, json_t *info,
		json_t *parts)
{
	json_t *p;
	size_t i;
	int r;

	if ((r = end_turn(f, oc)) < 0)
		return r;
	oc->open = 1;
	oc->t.line = f->lineno;
	if ((r = imp_set_str(&oc->t.where.cwd, oc->dir)) < 0)
		return r;
	oc->t.created_at = json_integer_value(json_object_get(
		json_object_get(info, "time"), "created"));
	json_array_foreach(parts, i, p)
		if (!strcmp(imp_str(json_object_get(p, "data"), "type") ?
			    imp_str(json_object_get(p, "data"), "type") : "",
			    "text") &&
		    (r = add_text(&oc->t.instruction,
				  json_object_get(p, "data"))) < 0)
			return r;
	imp_cut(f);
	return 0;
}

/* "<base> (fork #N)": the title of the session it was forked from. */
static char *fork_parent_title(const char *title)
{
	const char *at = title ? strstr(title, " (fork #") : NULL, *p;
	char *end;
	long n;

	while (at && strstr(at + 1, " (fork #"))
		at = strstr(at + 1, " (fork #");
	if (!at || at == title)
		return NULL;
	p = at + 8;
	n = strtol(p, &end, 10);
	if (end == p || n < 1 || strcmp(end, ")"))
		return NULL;
	if (n == 1)
		return aptix__strndup(title, (size_t)(at - title));
	{
		aptix_buf b = APTIX_BUF_INIT;

		aptix_buf_put(&b, title, (size_t)(at - title));
		aptix_buf_printf(&b, " (fork #%ld)", n - 1);
		return aptix_buf_oom(&b) ? NULL : aptix_buf_detach(&b);
	}
}

/* Where the session starts: a fork's parent, a subagent's spawner. */
static int session_parent(struct imp_file *f, struct opencode *oc,
			  json_t *rec)
{
	const char *pid = imp_str(rec, "parent_id");
	const struct imp_key *k = NULL;
	aptix_buf key = APTIX_BUF_INIT;
	char *ptitle = NULL;

	if (pid && *pid) {
		aptix_buf_printf(&key, "opencode-spawn:%s", oc->sid);
		if (!(k = imp_key_get(f->run, key.ptr))) {
			aptix_buf_clear(&key);
			aptix_buf_printf(&key, "opencode-head:%s", pid);
			k = imp_key_get(f->run, key.ptr);
		}
		f->conv->session_type = "subagent";
	} else if ((ptitle = fork_parent_title(imp_str(rec, "title")))) {
		aptix_buf_printf(&key, "opencode-title:%s", ptitle);
		if ((k = imp_key_get(f->run, key.ptr))) {
			oc->sharing = 1;
			snprintf(oc->parent_conv, sizeof(oc->parent_conv),
				 "%s", k->conv);
			k = NULL;	/* shared turns say where it starts */
		}
	}
	if (k)
		imp_parent(f, k);
	free(ptitle);
	aptix_buf_release(&key);
	return aptix_buf_oom(&key) ? aptix_error_oom() : 0;
}

static int session(struct imp_file *f, struct opencode *oc, json_t *rec)
{
	struct imp_conv *c;
	int r;

	if ((r = end_session(f, oc)) < 0)
		return r;
	oc->turn_no = 0;
	oc->sharing = 0;
	if (imp_set_str(&oc->sid, imp_str(rec, "id") ? imp_str(rec, "id") :
			"") < 0)
		return APTIX_ERROR;
	f->conv = NULL;
	if ((r = imp_conversation(f, oc->sid)) != 0)
		return r < 0 ? r : 0;
	/* read again (a database and its export): from its start again */
	c = f->conv;
	memset(&c->parent, 0, sizeof(c->parent));
	c->has_parent = 0;
	c->seq = 0;
	c->parent_conv[0] = '\0';
	if (imp_str(rec, "title") &&
	    (r = put_key(f, "opencode-title:%s", imp_str(rec, "title"))) < 0)
		return r;
	if ((r = session_parent(f, oc, rec)) < 0 ||
	    (r = imp_set_str(&oc->dir, imp_str(rec, "directory"))) < 0)
		return r;
	imp_cut(f);
	return 0;
}

static int oc_record(struct imp_file *f, json_t *rec)
{
	struct opencode *oc = f->state;
	const char *type = imp_str(rec, "type"), *role;
	json_t *info = json_object_get(rec, "info");

	if (!rec)
		return 0;
	if (type && !strcmp(type, "session"))
		return session(f, oc, rec);
	if (!type || strcmp(type, "message")) {
		imp_unknown(f, type);
		return 0;
	}
	role = imp_str(info, "role");
	if (role && !strcmp(role, "user"))
		return user(f, oc, info, json_object_get(rec, "parts"));
	if (role && !strcmp(role, "assistant"))
		return assistant(f, oc, info, json_object_get(rec, "parts"));
	imp_unknown(f, role);
	return 0;
}

static int oc_end(struct imp_file *f)
{
	return end_session(f, f->state);
}

/* --- reading: the records, from either source ------------------------ */

/*
 * Hand a record (taken) to the framework as one line. A session record
 * ends the session before it first: what that one left unread is not
 * the source of the next one's turns.
 */
static int feed(struct imp_file *f, json_t *rec)
{
	aptix_buf line = APTIX_BUF_INIT;
	int r = rec ? aptix_json_compact(&line, rec) : aptix_error_oom();

	if (r == 0 && !strcmp(imp_str(rec, "type") ? imp_str(rec, "type") : "",
			      "session")) {
		if ((r = end_session(f, f->state)) < 0)
			goto done;
		aptix_buf_clear(&f->src);
		f->cut = 0;
		f->src_line = f->lineno + 1;
	}
	if (r == 0 && aptix_buf_putc(&line, '\n') < 0)
		r = aptix_error_oom();
	if (r == 0)
		r = imp_feed(f, line.ptr, line.len);
done:
	json_decref(rec);
	aptix_buf_release(&line);
	return r;
}

/* A JSON object without the ids a database keeps in columns. */
static json_t *without_ids(json_t *data)
{
	json_t *v = json_is_object(data) ? json_deep_copy(data) : json_object();

	if (v) {
		json_object_del(v, "id");
		json_object_del(v, "sessionID");
		json_object_del(v, "messageID");
	}
	return v;
}

static json_t *message_record(const char *id, json_t *info, json_t *parts)
{
	return json_pack("{s:s, s:s, s:o, s:o}", "type", "message", "id", id,
			 "info", without_ids(info), "parts", parts);
}

static json_t *part_entry(const char *id, json_t *data)
{
	return json_pack("{s:s, s:o}", "id", id ? id : "", "data",
			 without_ids(data));
}

/* A message of an export: its record, its parts' ids kept apart. */
static json_t *export_message(json_t *m)
{
	json_t *parts = json_array(), *info = json_object_get(m, "info");
	json_t *src = json_object_get(m, "parts"), *p;
	size_t j;

	if (!parts)
		return NULL;
	for (j = 0; j < json_array_size(src); j++) {
		p = json_array_get(src, j);
		json_array_append_new(parts, part_entry(imp_str(p, "id"), p));
	}
	return message_record(imp_str(info, "id") ? imp_str(info, "id") : "",
			      info, parts);
}

/* `opencode export`: {info, messages: [{info, parts}]}. */
static int read_export(struct imp_file *f)
{
	json_error_t jerr;
	json_t *doc = json_load_file(f->path, 0, &jerr), *info, *m;
	json_t *msgs = json_object_get(doc, "messages");
	size_t i;
	int r;

	info = json_object_get(doc, "info");
	if (!json_is_object(info) || !json_is_array(msgs)) {
		imp_warn(f, doc ? 0 : (size_t)jerr.line, "not an OpenCode "
			 "database or export%s%s", doc ? "" : ": ",
			 doc ? "" : jerr.text);
		imp_partial(f, 1);
		json_decref(doc);
		return 0;
	}
	r = feed(f, json_pack("{s:s, s:s, s:s?, s:s?, s:s?, s:I}", "type",
			      "session", "id", imp_str(info, "id") ?
			      imp_str(info, "id") : "", "parent_id",
			      imp_str(info, "parentID"), "title",
			      imp_str(info, "title"), "directory",
			      imp_str(info, "directory"), "time_created",
			      (json_int_t)json_integer_value(json_object_get(
				      json_object_get(info, "time"),
				      "created"))));
	for (i = 0; r >= 0 && i < json_array_size(msgs); i++)
		if ((m = export_message(json_array_get(msgs, i))))
			r = feed(f, m);
		else
			r = aptix_error_oom();
	json_decref(doc);
	return r;
}

/* --- the database ----------------------------------------------------- */

struct db {
	sqlite3 *db;
	sqlite3_stmt *sessions, *messages, *parts;
};

static json_t *col_json(sqlite3_stmt *st, int i)
{
	const char *s = imp_col(st, i);

	return s ? json_loads(s, 0, NULL) : NULL;
}

static int db_fail(struct imp_file *f, struct db *d, const char *what)
{
	return imp_db_fail(f, d->db, "OpenCode", what);
}

static int db_parts(struct imp_file *f, struct db *d, const char *mid,
		    json_t *parts)
{
	json_t *data;
	int rc;

	sqlite3_reset(d->parts);
	sqlite3_bind_text(d->parts, 1, mid, -1, SQLITE_TRANSIENT);
	while ((rc = sqlite3_step(d->parts)) == SQLITE_ROW) {
		if (!(data = col_json(d->parts, 1))) {
			imp_warn(f, 0, "part '%s' is not JSON: not read",
				 imp_col(d->parts, 0) ? imp_col(d->parts, 0) : "?");
			imp_partial(f, 1);
			continue;
		}
		json_array_append_new(parts, part_entry(imp_col(d->parts, 0),
							data));
		json_decref(data);
	}
	return rc == SQLITE_DONE ? 0 : 1;
}

static int db_messages(struct imp_file *f, struct db *d, const char *sid)
{
	json_t *info, *parts;
	int rc, r = 0;

	sqlite3_reset(d->messages);
	sqlite3_bind_text(d->messages, 1, sid, -1, SQLITE_TRANSIENT);
	while (r >= 0 && (rc = sqlite3_step(d->messages)) == SQLITE_ROW) {
		const char *mid = imp_col(d->messages, 0) ? imp_col(d->messages, 0) :
			"";

		if (!(info = col_json(d->messages, 1))) {
			imp_warn(f, 0, "message '%s' is not JSON: not read",
				 mid);
			imp_partial(f, 1);
			continue;
		}
		if (!(parts = json_array()) || db_parts(f, d, mid, parts)) {
			json_decref(info);
			json_decref(parts);
			return parts ? db_fail(f, d, "parts") :
				aptix_error_oom();
		}
		r = feed(f, message_record(mid, info, parts));
		json_decref(info);
	}
	return r < 0 ? r : rc == SQLITE_DONE ? 0 : db_fail(f, d, "messages");
}

static int db_sessions(struct imp_file *f, struct db *d)
{
	int rc, r = 0;

	while (r >= 0 && (rc = sqlite3_step(d->sessions)) == SQLITE_ROW) {
		const char *sid = imp_col(d->sessions, 0) ? imp_col(d->sessions, 0) :
			"";

		r = feed(f, json_pack("{s:s, s:s, s:s?, s:s?, s:s?, s:I}",
				      "type", "session", "id", sid,
				      "parent_id", imp_col(d->sessions, 1),
				      "title", imp_col(d->sessions, 2),
				      "directory", imp_col(d->sessions, 3),
				      "time_created", (json_int_t)
				      sqlite3_column_int64(d->sessions, 4)));
		if (r >= 0)
			r = db_messages(f, d, sid);
	}
	return r < 0 ? r : rc == SQLITE_DONE ? 0 : db_fail(f, d, "sessions");
}

static int read_db(struct imp_file *f)
{
	struct db d = { NULL, NULL, NULL, NULL };
	int r = 0;

	if (sqlite3_open_v2(f->path, &d.db, SQLITE_OPEN_READONLY, NULL) !=
	    SQLITE_OK)
		r = db_fail(f, &d, "open");
	else if (sqlite3_prepare_v2(d.db, "SELECT id, parent_id, title, "
				    "directory, time_created FROM session "
				    "ORDER BY time_created, id", -1,
				    &d.sessions, NULL) != SQLITE_OK ||
		 sqlite3_prepare_v2(d.db, "SELECT id, data FROM message "
				    "WHERE session_id = ?1 ORDER BY "
				    "time_created, id", -1, &d.messages,
				    NULL) != SQLITE_OK ||
		 sqlite3_prepare_v2(d.db, "SELECT id, data FROM part WHERE "
				    "message_id = ?1 ORDER BY id", -1,
				    &d.parts, NULL) != SQLITE_OK)
		r = db_fail(f, &d, "schema");
	else
		r = db_sessions(f, &d);
	imp_db_close(d.db);
	return r;
}

static int oc_read(struct imp_file *f)
{
	char magic[16];
	FILE *fp = fopen(f->path, "rb");
	size_t n = fp ? fread(magic, 1, sizeof(magic), fp) : 0;

	if (fp)
		fclose(fp);
	if (!fp) {
		imp_warn(f, 0, "cannot open: %s", strerror(errno));
		imp_partial(f, 0);
		return 0;
	}
	if (n == sizeof(magic) && !memcmp(magic, "SQLite format 3", 16))
		return read_db(f);
	return read_export(f);
}

const struct imp_tool aptix__imp_opencode = {
	"opencode", oc_match, imp_prescan_none, oc_begin, oc_record, oc_end,
	oc_release, NULL, oc_read
};
