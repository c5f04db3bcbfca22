/*
 * src/export/export.c - the exporter (aptix/export.h): snapshots written
 * as lossless JSON lines, as seed 004's session.md, or as markdown.
 *
 * The JSON carries each object as the JSON of its canonical bytes, read
 * as stored (not rebuilt from the parsed struct), and every blob it
 * references, found through aptix_object_foreach_ref(): whatever fields
 * a turn or a tool result gains, the references it holds are what
 * fsck's walk follows, so nothing a snapshot needs is left out.
 * session.md is held back until finish() (its front matter names the
 * last snapshot); JSON and markdown are written as they come.
 */
#include "util/common.h"
#include "util/base64.h"
#include "util/cjson.h"
#include "object/object.h"
#include "aptix/export.h"
#include "aptix/object.h"
#include "aptix/odb.h"
#include "aptix/toolcall.h"
#include "aptix/view.h"
#include "aptix/index.h"
#include "aptix/refs.h"
#include <jansson.h>

struct aptix_exporter {
	aptix_repo *repo;
	aptix_export_format fmt;
	aptix_export_write_cb write;
	void *payload;
	int started;		/* json: the header is out */
	size_t count;		/* snapshots exported */
	aptix_buf refs;		/* json: the ref lines, written last */
	aptix_buf body;		/* session-md: the blocks, written last */
	char *model, *conv;	/* session-md: first model, conversation */
	int64_t created_at;
	aptix_oid head;
	char last_conv[APTIX_CONV_MAXLEN + 1];	/* markdown: its heading */
};

int aptix_export_format_from_name(const char *name)
{
	if (!name)
		return -1;
	if (!strcmp(name, "session-md"))
		return APTIX_EXPORT_SESSION_MD;
	if (!strcmp(name, "json"))
		return APTIX_EXPORT_JSON;
	if (!strcmp(name, "markdown"))
		return APTIX_EXPORT_MARKDOWN;
	return -1;
}

int aptix_exporter_new(aptix_exporter **out, aptix_repo *repo,
		       aptix_export_format fmt, aptix_export_write_cb write,
		       void *payload)
{
	aptix_exporter *ex;

	APTIX_ASSERT_ARG(out && repo && write);
	*out = NULL;
	if (fmt < APTIX_EXPORT_SESSION_MD || fmt > APTIX_EXPORT_MARKDOWN) {
		aptix_error_set(APTIX_ERROR_INVALID, "unknown export format");
		return APTIX_EINVALID;
	}
	if (!(ex = aptix__calloc(1, sizeof(*ex))))
		return APTIX_ERROR;
	ex->repo = repo;
	ex->fmt = fmt;
	ex->write = write;
	ex->payload = payload;
	aptix_buf_init(&ex->refs, 0);
	aptix_buf_init(&ex->body, 0);
	*out = ex;
	return 0;
}

void aptix_exporter_free(aptix_exporter *ex)
{
	if (!ex)
		return;
	aptix_buf_release(&ex->refs);
	aptix_buf_release(&ex->body);
	free(ex->model);
	free(ex->conv);
	free(ex);
}

static int emit(aptix_exporter *ex, const aptix_buf *b)
{
	if (aptix_buf_oom(b))
		return aptix_error_oom();
	return b->len ? ex->write(b->ptr, b->len, ex->payload) : 0;
}

/* --- json ---------------------------------------------------------------- */

/* json_dumps() of v and a newline, appended to out; v is taken. */
static int put_line(aptix_buf *out, json_t *v)
{
	int r = v ? aptix_json_compact(out, v) : aptix_error_oom();

	if (r == 0 && aptix_buf_putc(out, '\n') < 0)
		r = aptix_error_oom();
	json_decref(v);
	return r;
}

/* An object's canonical JSON as stored: {"id", "object"}; type checked. */
static int read_object(json_t **out, aptix_buf *raw, aptix_repo *repo,
		       const aptix_oid *id, aptix_otype want)
{
	aptix_otype type = APTIX_OBJ_BAD;
	json_t *v;
	int r;

	*out = NULL;
	if ((r = aptix_odb_read(raw, &type, aptix_repo_odb(repo), id, 0)) < 0)
		return r;
	if (type != want) {
		aptix_error_set(APTIX_ERROR_OBJECT, "object '%s' is a %s, not "
				"a %s", aptix_oid_hex(id),
				aptix_otype_name(type), aptix_otype_name(want));
		return APTIX_EINVALID;
	}
	if (!(v = json_loadb(raw->ptr, raw->len, 0, NULL))) {
		aptix_error_set(APTIX_ERROR_OBJECT, "object '%s' is not JSON",
				aptix_oid_hex(id));
		return APTIX_ECORRUPT;
	}
	*out = json_pack("{s:s, s:o}", "id", aptix_oid_hex(id), "object", v);
	return *out ? 0 : aptix_error_oom();
}

/* A blob as {"text": ...} when it is UTF-8 without NUL, else base64. */
static json_t *blob_json(const aptix_buf *b)
{
	aptix_buf enc = APTIX_BUF_INIT;
	json_t *v = NULL;

	if (!memchr(b->ptr, '\0', b->len) && aptix_utf8_valid(b->ptr, b->len))
		v = json_pack("{s:s%}", "text", b->ptr, b->len);
	else if (aptix_base64_encode(&enc, b->ptr, b->len) == 0)
		v = json_pack("{s:s%}", "base64", enc.ptr, enc.len);
	aptix_buf_release(&enc);
	return v;
}

struct snap_json {
	aptix_exporter *ex;
	json_t *blobs, *calls, *results;
	aptix_oid *results_ids;
	size_t nresults, aresults;
	aptix_buf raw;
};

static int add_blob(struct snap_json *sj, const aptix_oid *id)
{
	aptix_buf b = APTIX_BUF_INIT;
	const char *hex = aptix_oid_hex(id);
	json_t *v;
	int r;

	if (json_object_get(sj->blobs, hex))
		return 0;
	if ((r = aptix_blob_lookup(&b, sj->ex->repo, id)) < 0) {
		if (r == APTIX_ENOTFOUND)
			aptix_error_set(APTIX_ERROR_ODB, "blob '%s' is not in "
					"the store (purged?)", hex);
		aptix_buf_release(&b);
		return r;
	}
	v = blob_json(&b);
	aptix_buf_release(&b);
	if (!v || json_object_set_new(sj->blobs, hex, v) < 0)
		return aptix_error_oom();
	return 0;
}

/* Each reference of the turn (and of its tool results). */
static int ref_cb(const aptix_oid *id, aptix_otype type, const char *field,
		  void *payload)
{
	struct snap_json *sj = payload;
	json_t *v;
	int r;

	if (aptix_oid_is_zero(id))
		return 0;
	switch (type) {
	case APTIX_OBJ_BLOB:
		return add_blob(sj, id);
	case APTIX_OBJ_TOOL_CALL:
		if (strcmp(field, "tool call"))
			return 0;	/* a result's call: in its turn */
		if ((r = read_object(&v, &sj->raw, sj->ex->repo, id,
				     type)) < 0)
			return r;
		return json_array_append_new(sj->calls, v) < 0 ?
			aptix_error_oom() : 0;
	case APTIX_OBJ_TOOL_RESULT:
		if ((r = read_object(&v, &sj->raw, sj->ex->repo, id,
				     type)) < 0)
			return r;
		if (json_array_append_new(sj->results, v) < 0 ||
		    aptix__grow(&sj->results_ids, &sj->aresults, sj->nresults,
				sizeof(*sj->results_ids), 4) < 0)
			return aptix_error_oom();
		sj->results_ids[sj->nresults++] = *id;
		return 0;
	default:
		return 0;
	}
}

/* The turn's references, then each tool result's. */
static int snap_refs(struct snap_json *sj, const aptix_oid *turn)
{
	aptix_otype type;
	size_t i;
	int r;

	if ((r = aptix_odb_read(&sj->raw, &type, aptix_repo_odb(sj->ex->repo),
				turn, 0)) < 0 ||
	    (r = aptix_object_foreach_ref(APTIX_OBJ_TURN, sj->raw.ptr,
					  sj->raw.len, ref_cb, sj)) < 0)
		return r;
	for (i = 0; i < sj->nresults; i++)
		if ((r = aptix_odb_read(&sj->raw, &type,
					aptix_repo_odb(sj->ex->repo),
					&sj->results_ids[i], 0)) < 0 ||
		    (r = aptix_object_foreach_ref(APTIX_OBJ_TOOL_RESULT,
						  sj->raw.ptr, sj->raw.len,
						  ref_cb, sj)) < 0)
			return r;
	return 0;
}

static int json_header(aptix_exporter *ex)
{
	aptix_buf b = APTIX_BUF_INIT;
	int r;

	if (ex->started)
		return 0;
	ex->started = 1;
	if (!(r = put_line(&b, json_pack("{s:s, s:s, s:i, s:i}", "type",
					 "header", "format", "aptix-export",
					 "version", 1, "object_version",
					 APTIX_OBJECT_VERSION))))
		r = emit(ex, &b);
	aptix_buf_release(&b);
	return r;
}

static int add_json(aptix_exporter *ex, const aptix_oid *id)
{
	struct snap_json sj = { ex, json_object(), json_array(), json_array(),
				NULL, 0, 0, APTIX_BUF_INIT };
	aptix_buf line = APTIX_BUF_INIT;
	aptix_session s;
	json_t *sess = NULL, *turn = NULL;
	int r;

	aptix_session_init(&s);
	if ((r = json_header(ex)) < 0)
		goto done;
	if (!sj.blobs || !sj.calls || !sj.results) {
		r = aptix_error_oom();
		goto done;
	}
	if ((r = aptix_session_lookup(&s, ex->repo, id)) < 0 ||
	    (r = read_object(&sess, &sj.raw, ex->repo, id,
			     APTIX_OBJ_SESSION)) < 0 ||
	    (r = read_object(&turn, &sj.raw, ex->repo, &s.turn,
			     APTIX_OBJ_TURN)) < 0 ||
	    (r = snap_refs(&sj, &s.turn)) < 0)
		goto done;
	r = put_line(&line, json_pack("{s:s, s:s, s:O, s:O, s:O, s:O, s:O}",
				      "type", "snapshot", "id",
				      aptix_oid_hex(id), "session",
				      json_object_get(sess, "object"), "turn",
				      turn, "tool_calls", sj.calls,
				      "tool_results", sj.results, "blobs",
				      sj.blobs));
	if (!r)
		r = emit(ex, &line);
done:
	json_decref(sess);
	json_decref(turn);
	json_decref(sj.blobs);
	json_decref(sj.calls);
	json_decref(sj.results);
	free(sj.results_ids);
	aptix_buf_release(&sj.raw);
	aptix_buf_release(&line);
	aptix_session_release(&s);
	return r;
}

int aptix_exporter_add_ref(aptix_exporter *ex, const char *name,
			   const aptix_oid *id)
{
	APTIX_ASSERT_ARG(ex && name && id);
	if (ex->fmt != APTIX_EXPORT_JSON)
		return 0;
	return put_line(&ex->refs, json_pack("{s:s, s:s, s:s}", "type", "ref",
					     "name", name, "id",
					     aptix_oid_hex(id)));
}

/* --- text of a turn ------------------------------------------------------ */

struct turn_text {
	aptix_session s;
	aptix_turn t;
	aptix_buf instruction, answer;
};

static void turn_text_release(struct turn_text *tt)
{
	aptix_session_release(&tt->s);
	aptix_turn_release(&tt->t);
	aptix_buf_release(&tt->instruction);
	aptix_buf_release(&tt->answer);
}

static int turn_text_read(struct turn_text *tt, aptix_repo *repo,
			  const aptix_oid *id)
{
	int r;

	aptix_session_init(&tt->s);
	aptix_turn_init(&tt->t);
	aptix_buf_init(&tt->instruction, 0);
	aptix_buf_init(&tt->answer, 0);
	if ((r = aptix_session_lookup(&tt->s, repo, id)) < 0 ||
	    (r = aptix_turn_lookup(&tt->t, repo, &tt->s.turn)) < 0 ||
	    (r = aptix_view_blob_text(&tt->instruction, repo,
				      &tt->t.instruction)) < 0)
		return r;
	if (!aptix_oid_is_zero(&tt->t.answer))
		r = aptix_view_blob_text(&tt->answer, repo, &tt->t.answer);
	return r;
}

/* --- session-md ---------------------------------------------------------- */

/* "## User", "## Assistant", "## System", after any backslashes. */
static int role_header(const char *p, size_t n)
{
	static const char *const roles[] = { "User", "Assistant", "System" };
	size_t i, k;

	while (n && *p == '\\') {
		p++;
		n--;
	}
	while (n && (p[n - 1] == ' ' || p[n - 1] == '\t' || p[n - 1] == '\r'))
		n--;
	if (n < 3 || memcmp(p, "## ", 3))
		return 0;
	for (i = 0; i < ARRAY_SIZE(roles); i++) {
		k = strlen(roles[i]);
		if (n == 3 + k && !memcmp(p + 3, roles[i], k))
			return 1;
	}
	return 0;
}

/* text, a line that would read as a role header given a backslash */
static void put_escaped(aptix_buf *out, const aptix_buf *text)
{
	const char *p = text->ptr, *end = p + text->len, *nl;

	while (p < end) {
		nl = memchr(p, '\n', (size_t)(end - p));
		nl = nl ? nl + 1 : end;
		if (role_header(p, (size_t)(nl - p) - (nl[-1] == '\n')))
			aptix_buf_putc(out, '\\');
		aptix_buf_put(out, p, (size_t)(nl - p));
		p = nl;
	}
	if (text->len && end[-1] != '\n')
		aptix_buf_putc(out, '\n');
}

static int add_session_md(aptix_exporter *ex, const aptix_oid *id)
{
	struct turn_text tt;
	int r;

	if ((r = turn_text_read(&tt, ex->repo, id)) < 0)
		goto done;
	if (!aptix_session_status_ok(tt.s.status))
		goto done;	/* a failed attempt: not in the context */
	if (!ex->count++) {
		ex->created_at = tt.t.created_at;
		if ((tt.t.model && !(ex->model = aptix__strdup(tt.t.model)))) {
			r = APTIX_ERROR;
			goto done;
		}
	}
	free(ex->conv);
	if (!(ex->conv = aptix__strdup(tt.s.conversation))) {
		r = APTIX_ERROR;
		goto done;
	}
	ex->head = *id;
	aptix_buf_puts(&ex->body, "\n## User\n\n");
	put_escaped(&ex->body, &tt.instruction);
	aptix_buf_puts(&ex->body, "\n## Assistant\n\n");
	put_escaped(&ex->body, &tt.answer);
	if (aptix_buf_oom(&ex->body))
		r = aptix_error_oom();
done:
	turn_text_release(&tt);
	return r;
}

/* Seed 004's providers, from the model's name. */
static const char *provider_of(const char *model)
{
	if (model && !strncmp(model, "claude", 6))
		return "claude";
	if (model && !strncmp(model, "gemini", 6))
		return "gemini";
	return "openai";
}

static int finish_session_md(aptix_exporter *ex)
{
	aptix_buf b = APTIX_BUF_INIT;
	char when[32];
	int r;

	if (!ex->count) {
		aptix_error_set(APTIX_ERROR_INVALID, "nothing to export: no "
				"committed turn");
		return APTIX_ENOTFOUND;
	}
	aptix_buf_printf(&b, "---\nprovider: %s\n", provider_of(ex->model));
	if (ex->model && !strpbrk(ex->model, "\n:#"))
		aptix_buf_printf(&b, "model: %s\n", ex->model);
	aptix_buf_printf(&b, "created_at: %s\naptix_conversation: %s\n"
			 "aptix_head: %s\n---\n",
			 aptix_time_fmt(when, ex->created_at), ex->conv,
			 aptix_oid_hex(&ex->head));
	aptix_buf_put(&b, ex->body.ptr, ex->body.len);
	r = emit(ex, &b);
	aptix_buf_release(&b);
	return r;
}

/* --- markdown ------------------------------------------------------------ */

/* A fence longer than any run of backticks in text (at least 3). */
static void put_fenced(aptix_buf *out, const char *text, size_t len,
		       const char *lang)
{
	size_t i, run = 0, longest = 0;

	for (i = 0; i < len; i++) {
		run = text[i] == '`' ? run + 1 : 0;
		if (run > longest)
			longest = run;
	}
	longest = longest < 3 ? 3 : longest + 1;
	for (i = 0; i < longest; i++)
		aptix_buf_putc(out, '`');
	aptix_buf_printf(out, "%s\n", lang);
	aptix_buf_put(out, text, len);
	if (len && text[len - 1] != '\n')
		aptix_buf_putc(out, '\n');
	for (i = 0; i < longest; i++)
		aptix_buf_putc(out, '`');
	aptix_buf_puts(out, "\n\n");
}

static void md_call(aptix_buf *out, const aptix_tool_call *c)
{
	aptix_buf_printf(out, "<details>\n<summary>Tool call <code>%s</code> "
			 "(%s)</summary>\n\n", c->name, c->call_id);
	put_fenced(out, c->arguments, strlen(c->arguments), "json");
	aptix_buf_puts(out, "</details>\n\n");
}

static int md_result(aptix_buf *out, aptix_repo *repo,
		     const aptix_tool_result *res)
{
	aptix_buf text = APTIX_BUF_INIT;
	int r = 0;

	aptix_buf_printf(out, "<details>\n<summary>Tool result (%s): %s",
			 res->call_id, aptix_tool_status_name(res->status));
	if (res->has_exit_code)
		aptix_buf_printf(out, ", exit code %lld",
				 (long long)res->exit_code);
	aptix_buf_puts(out, "</summary>\n\n");
	if (!aptix_oid_is_zero(&res->output))
		r = aptix_view_blob_text(&text, repo, &res->output);
	put_fenced(out, text.ptr, text.len, "");
	aptix_buf_puts(out, "</details>\n\n");
	aptix_buf_release(&text);
	return r;
}

/* A turn's calls and results, read whole (released by md_tools_free). */
struct md_tools {
	aptix_tool_call *c;
	aptix_tool_result *res;
	size_t nc, nres;
};

static void md_tools_free(struct md_tools *mt)
{
	size_t i;

	for (i = 0; i < mt->nc; i++)
		aptix_tool_call_release(&mt->c[i]);
	for (i = 0; i < mt->nres; i++)
		aptix_tool_result_release(&mt->res[i]);
	free(mt->c);
	free(mt->res);
}

static int md_tools_read(struct md_tools *mt, aptix_repo *repo,
			 const aptix_turn *t)
{
	int r = 0;

	memset(mt, 0, sizeof(*mt));
	if ((t->ntool_calls && !(mt->c = aptix__calloc(t->ntool_calls,
						      sizeof(*mt->c)))) ||
	    (t->ntool_results && !(mt->res = aptix__calloc(
					   t->ntool_results, sizeof(*mt->res)))))
		return APTIX_ERROR;
	while (!r && mt->nc < t->ntool_calls) {
		aptix_tool_call_init(&mt->c[mt->nc]);
		r = aptix_tool_call_lookup(&mt->c[mt->nc], repo,
					   &t->tool_calls[mt->nc]);
		mt->nc++;
	}
	while (!r && mt->nres < t->ntool_results) {
		aptix_tool_result_init(&mt->res[mt->nres]);
		r = aptix_tool_result_lookup(&mt->res[mt->nres], repo,
					     &t->tool_results[mt->nres]);
		mt->nres++;
	}
	return r;
}

/* The result of this turn that answers call_id, or NULL. */
static const aptix_tool_result *md_answer_of(const struct md_tools *mt,
					     const char *call_id)
{
	size_t i = aptix__tool_result_index(mt->res, mt->nres, call_id);

	return i < mt->nres ? &mt->res[i] : NULL;
}

/* Whether a call of this turn asked for res (a result of the same turn). */
static int md_answers_own(const struct md_tools *mt,
			  const aptix_tool_result *res)
{
	return aptix__tool_call_index(mt->c, mt->nc, res->call_id) < mt->nc;
}

/*
 * A turn in the order things happened: the results it sent for the
 * calls of the turn before, then each call it asked and answered
 * itself (an imported agent's turn) followed by its result, the
 * answer, and last the calls it left for the next turn.
 */
static int md_turn_body(aptix_buf *out, aptix_repo *repo,
			const struct turn_text *tt)
{
	const aptix_tool_result *res;
	struct md_tools mt;
	size_t i;
	int r;

	if ((r = md_tools_read(&mt, repo, &tt->t)) < 0)
		goto done;
	for (i = 0; !r && i < mt.nres; i++)
		if (!md_answers_own(&mt, &mt.res[i]))
			r = md_result(out, repo, &mt.res[i]);
	for (i = 0; !r && i < mt.nc; i++)
		if ((res = md_answer_of(&mt, mt.c[i].call_id))) {
			md_call(out, &mt.c[i]);
			r = md_result(out, repo, res);
		}
	if (!r && !aptix_oid_is_zero(&tt->t.answer)) {
		aptix_buf_puts(out, "**Assistant**\n\n");
		aptix_buf_put(out, tt->answer.ptr, tt->answer.len);
		aptix_buf_puts(out, "\n\n");
	}
	for (i = 0; !r && i < mt.nc; i++)
		if (!md_answer_of(&mt, mt.c[i].call_id))
			md_call(out, &mt.c[i]);
done:
	md_tools_free(&mt);
	return r;
}

static void md_heading(aptix_exporter *ex, aptix_buf *out,
		       const struct turn_text *tt)
{
	const char *conv = tt->s.conversation;

	if (!strcmp(ex->last_conv, conv))
		return;
	snprintf(ex->last_conv, sizeof(ex->last_conv), "%s", conv);
	aptix_buf_printf(out, "# %s\n\nConversation `%s`", tt->s.title &&
			 *tt->s.title ? tt->s.title : conv, conv);
	if (tt->s.forked_from)
		aptix_buf_printf(out, ", forked from `%s`", tt->s.forked_from);
	aptix_buf_puts(out, ".\n\n");
}

static int add_markdown(aptix_exporter *ex, const aptix_oid *id)
{
	aptix_buf out = APTIX_BUF_INIT;
	struct turn_text tt;
	char when[32];
	int r;

	if ((r = turn_text_read(&tt, ex->repo, id)) < 0)
		goto done;
	md_heading(ex, &out, &tt);
	aptix_buf_printf(&out, "## Turn %ld · %s", tt.t.seq,
			 aptix_time_fmt(when, tt.t.created_at));
	if (tt.t.model)
		aptix_buf_printf(&out, " · %s", tt.t.model);
	if (!aptix_session_status_ok(tt.s.status))
		aptix_buf_printf(&out, " · %s",
				 aptix_session_status_name(tt.s.status));
	aptix_buf_printf(&out, "\n\n<!-- session %s -->\n\n**User**\n\n",
			 aptix_oid_hex(id));
	aptix_buf_put(&out, tt.instruction.ptr, tt.instruction.len);
	aptix_buf_puts(&out, "\n\n");
	if (!(r = md_turn_body(&out, ex->repo, &tt)))
		r = emit(ex, &out);
done:
	aptix_buf_release(&out);
	turn_text_release(&tt);
	return r;
}

/* --- the front ----------------------------------------------------------- */

int aptix_exporter_add(aptix_exporter *ex, const aptix_oid *session)
{
	APTIX_ASSERT_ARG(ex && session);
	switch (ex->fmt) {
	case APTIX_EXPORT_JSON:
		ex->count++;
		return add_json(ex, session);
	case APTIX_EXPORT_SESSION_MD:
		return add_session_md(ex, session);
	default:
		ex->count++;
		return add_markdown(ex, session);
	}
}

int aptix_exporter_add_walk(aptix_exporter *ex, aptix_revwalk *w)
{
	aptix_oid id;
	int r;

	APTIX_ASSERT_ARG(ex && w);
	while ((r = aptix_revwalk_next(&id, w)) == 0)
		if ((r = aptix_exporter_add(ex, &id)) < 0)
			return r;
	return r == APTIX_ITEROVER ? 0 : r;
}

int aptix_exporter_finish(aptix_exporter *ex)
{
	int r;

	APTIX_ASSERT_ARG(ex);
	switch (ex->fmt) {
	case APTIX_EXPORT_JSON:
		if ((r = json_header(ex)) < 0)
			return r;
		return emit(ex, &ex->refs);
	case APTIX_EXPORT_SESSION_MD:
		return finish_session_md(ex);
	default:
		return 0;
	}
}
