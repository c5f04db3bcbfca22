/*
 * src/view/view.c - the JSON views of turns, sessions and conversations
 * (see aptix/view.h; the vocabulary is Documentation/json.md).
 *
 * Builders put every member through put(), which keeps a sticky
 * out-of-memory flag: a value constructor returns NULL only when out of
 * memory (an absent value is json_null()), so one check at the end of a
 * builder covers all of its members.
 */
#include "util/common.h"
#include "aptix/view.h"
#include "view/view-tools.h"
#include "aptix/purge.h"

struct vb {
	int oom;
};

static void put(struct vb *b, json_t *obj, const char *key, json_t *v)
{
	if (!v || !obj || json_object_set_new(obj, key, v) < 0)
		b->oom = 1;
}

static void push(struct vb *b, json_t *a, json_t *v)
{
	if (!v || !a || json_array_append_new(a, v) < 0)
		b->oom = 1;
}

/* o, or NULL (error set, o freed) when the builder ran out of memory. */
static json_t *done(struct vb *b, json_t *o)
{
	if (!b->oom && o)
		return o;
	json_decref(o);
	aptix_error_oom();
	return NULL;
}

json_t *aptix_view_text(const char *s, size_t len)
{
	const unsigned char *u = (const unsigned char *)s;
	aptix_buf clean = APTIX_BUF_INIT;
	size_t i = 0, n;
	json_t *v;

	if (!s)
		return json_null();
	if (aptix_utf8_valid(s, len))
		return json_stringn(s, len);
	while (i < len) {
		n = aptix_utf8_seqlen(u + i, len - i);
		if (n)	/* a NUL byte too: JSON writes it \u0000 */
			aptix_buf_put(&clean, s + i, n);
		else
			aptix_buf_puts(&clean, "\xef\xbf\xbd");
		i += n ? n : 1;
	}
	v = aptix_buf_oom(&clean) ? NULL :
		json_stringn(clean.ptr, clean.len);
	aptix_buf_release(&clean);
	return v;
}

json_t *aptix_view_str(const char *s)
{
	return s ? aptix_view_text(s, strlen(s)) : json_null();
}

json_t *aptix_view_id(const aptix_oid *id)
{
	if (!id || aptix_oid_is_zero(id))
		return json_null();
	return json_string(aptix_oid_hex(id));
}

json_t *aptix_view_time(int64_t ms)
{
	char buf[32];

	return ms ? json_string(aptix_time_fmt(buf, ms)) : json_null();
}

json_t *aptix_view_time_ms(int64_t ms)
{
	return ms ? json_integer((json_int_t)ms) : json_null();
}

int aptix_view_set(json_t *obj, const char *key, json_t *v)
{
	if (!v)
		v = json_null();
	if (!obj) {
		json_decref(v);
		return aptix_error_oom();
	}
	/* the reference is taken even when this fails */
	if (json_object_set_new(obj, key, v) < 0)
		return aptix_error_oom();
	return 0;
}

json_t *aptix_view_usage(const aptix_usage *u)
{
	struct vb b = { 0 };
	json_t *o = json_object();

	put(&b, o, "input_tokens", json_integer(u->input_tokens));
	put(&b, o, "cached_tokens", json_integer(u->cached_tokens));
	put(&b, o, "output_tokens", json_integer(u->output_tokens));
	put(&b, o, "reasoning_tokens", json_integer(u->reasoning_tokens));
	put(&b, o, "total_tokens", json_integer(u->total_tokens));
	put(&b, o, "model_requests", json_integer(u->model_requests));
	return done(&b, o);
}

/* ---- a turn ---- */

struct turn_view {
	aptix_repo *repo;
	aptix_session s;
	aptix_turn t;
	aptix_buf instruction, answer;
	unsigned flags;
	int err;		/* a payload that could not be read */
	struct vb b;
};

int aptix_view_blob_text(aptix_buf *out, aptix_repo *repo,
			 const aptix_oid *id)
{
	aptix_purge_info info;
	char when[32];
	int r = aptix_blob_lookup(out, repo, id);

	if (r == APTIX_ENOTFOUND && aptix_purge_lookup(&info, repo, id) == 0) {
		aptix_error_clear();
		aptix_buf_clear(out);
		if (aptix_buf_printf(out, "[purged on %s: %s]",
				     aptix_time_fmt(when, info.time),
				     info.reason) < 0)
			return aptix_error_oom();
		return 0;
	}
	return r;
}

/* A payload: its JSON when it parses, else its text; null when none. */
static json_t *payload(struct turn_view *tv, const aptix_oid *id)
{
	aptix_buf raw = APTIX_BUF_INIT;
	json_t *v;
	int r;

	if (aptix_oid_is_zero(id))
		return json_null();
	if ((r = aptix_view_blob_text(&raw, tv->repo, id)) < 0) {
		aptix_buf_release(&raw);
		tv->err = r;
		return json_null();
	}
	v = json_loadb(raw.ptr, raw.len, JSON_DECODE_ANY, NULL);
	if (!v)
		v = aptix_view_text(raw.ptr, raw.len);
	aptix_buf_release(&raw);
	return v;
}

static json_t *text_view(const aptix_buf *b, int full)
{
	size_t n = full ? b->len : aptix_utf8_cut(b->ptr, b->len,
						  APTIX_VIEW_SUMMARY_BYTES);

	return aptix_view_text(b->ptr, n);
}

static json_t *strings(struct vb *b, char **items, size_t n)
{
	json_t *a = json_array();
	size_t i;

	for (i = 0; i < n; i++)
		push(b, a, aptix_view_str(items[i]));
	return a;
}

const char *aptix_view_file_state(const aptix_file_ref *f)
{
	if (f->binary)
		return "binary";
	if (f->too_large)
		return "too large";
	return f->sent ? "sent" : "unchanged";
}

static json_t *sources(struct vb *b, const aptix_turn *t)
{
	json_t *a = json_array(), *x;
	size_t i;

	for (i = 0; i < t->nchunks; i++) {
		const aptix_chunk_ref *c = &t->chunks[i];

		x = json_object();
		put(b, x, "path", aptix_view_str(c->path));
		put(b, x, "start_line", json_integer(c->start_line));
		put(b, x, "end_line", json_integer(c->end_line));
		put(b, x, "score", json_real(c->score / 1e6));
		put(b, x, "score_micro", json_integer(c->score));
		put(b, x, "sent", json_boolean(c->sent));
		put(b, x, "chunk_id", aptix_view_str(c->chunk_id));
		put(b, x, "content_hash", aptix_view_str(c->content_hash));
		put(b, x, "snippet", aptix_view_id(&c->snippet));
		push(b, a, x);
	}
	return a;
}

static json_t *files(struct vb *b, const aptix_turn *t)
{
	json_t *a = json_array(), *x;
	size_t i;

	for (i = 0; i < t->nfiles; i++) {
		const aptix_file_ref *f = &t->files[i];

		x = json_object();
		put(b, x, "path", aptix_view_str(f->path));
		put(b, x, "size", json_integer(f->size));
		put(b, x, "sha256", aptix_view_str(f->sha256));
		put(b, x, "state", json_string(aptix_view_file_state(f)));
		put(b, x, "sent", json_boolean(f->sent));
		put(b, x, "touched", json_boolean(f->touched));
		put(b, x, "too_large", json_boolean(f->too_large));
		put(b, x, "binary", json_boolean(f->binary));
		put(b, x, "content", f->has_content ?
		    aptix_view_id(&f->content) : json_null());
		push(b, a, x);
	}
	return a;
}

static void put_time(struct vb *b, json_t *o, const char *key, int64_t ms)
{
	char k[64];

	put(b, o, key, aptix_view_time(ms));
	snprintf(k, sizeof(k), "%s_ms", key);
	put(b, o, k, aptix_view_time_ms(ms));
}

/* What seed 002 calls the run summary: the session's totals. */
static json_t *run_summary(struct vb *b, const aptix_session *s)
{
	json_t *o = json_object();

	put(b, o, "duration_ms", json_integer(s->duration_ms));
	put(b, o, "prompt_tokens", json_integer(s->usage.input_tokens));
	put(b, o, "completion_tokens", json_integer(s->usage.output_tokens));
	put(b, o, "total_tokens", json_integer(s->usage.total_tokens));
	put(b, o, "model_requests", json_integer(s->usage.model_requests));
	return o;
}

static json_t *worktree(struct vb *b, const aptix_turn *t)
{
	json_t *w;

	if (!t->has_worktree)
		return json_null();
	w = json_object();
	put(b, w, "commit", aptix_view_str(t->worktree.commit));
	put(b, w, "branch", aptix_view_str(t->worktree.branch));
	put(b, w, "dirty", json_boolean(t->worktree.dirty));
	put(b, w, "remote", aptix_view_str(t->worktree.remote));
	return w;
}

/* The conversation's title as sessions lists it, else the session's. */
static json_t *title(struct turn_view *tv)
{
	aptix_conv_info ci;

	if (aptix_index_conversation(&ci, tv->repo, tv->s.conversation) == 0)
		return *ci.title ? aptix_view_str(ci.title) : json_null();
	aptix_error_clear();
	return tv->s.title && *tv->s.title ? aptix_view_str(tv->s.title) :
		json_null();
}

/* What only the full view has. */
static void turn_full(struct turn_view *tv, json_t *o)
{
	const aptix_turn *t = &tv->t;
	struct vb *b = &tv->b;

	put(b, o, "title", title(tv));
	put(b, o, "forked_from", aptix_view_str(tv->s.forked_from));
	put_time(b, o, "session_created_at", tv->s.created_at);
	put(b, o, "previous_response_id",
	    aptix_view_str(t->previous_response_id));
	put_time(b, o, "chain_expires_at", t->chain_expires_at);
	put(b, o, "chain_expired", t->chain_expires_at ?
	    json_boolean(t->chain_expires_at <= aptix_now_ms()) :
	    json_null());
	put(b, o, "chain_restarted", json_boolean(t->chain_restarted));
	put(b, o, "run_summary", run_summary(b, &tv->s));
	put(b, o, "worktree", worktree(b, t));
	put(b, o, "repo", aptix_view_str(t->repo));
	put(b, o, "transport", aptix_view_str(tv->s.transport));
	if (tv->flags & APTIX_VIEW_PAYLOADS) {
		put(b, o, "request_payload", payload(tv, &t->request));
		put(b, o, "response_payload", payload(tv, &t->response));
	}
	put(b, o, "sources", sources(b, t));
	put(b, o, "files", files(b, t));
}

static json_t *turn_json(struct turn_view *tv, const aptix_oid *sid)
{
	const aptix_session *s = &tv->s;
	const aptix_turn *t = &tv->t;
	struct vb *b = &tv->b;
	int full = !!(tv->flags & APTIX_VIEW_FULL);
	json_t *o = json_object();

	put(b, o, "session", aptix_view_id(sid));
	put(b, o, "turn", aptix_view_id(&s->turn));
	put(b, o, "parent", s->has_parent ? aptix_view_id(&s->parent) :
	    json_null());
	put(b, o, "conversation", aptix_view_str(s->conversation));
	put(b, o, "seq", json_integer(t->seq));
	put(b, o, "mode", aptix_view_str(t->mode));
	put(b, o, "status", json_string(aptix_session_status_name(s->status)));
	put(b, o, "turn_status", json_string(aptix_turn_status_name(
						     t->status)));
	put(b, o, "failed", json_boolean(s->status == APTIX_SESSION_FAILED ||
					 t->status == APTIX_TURN_FAILED));
	put_time(b, o, "created_at", t->created_at);
	put_time(b, o, "status_at", t->status_at);
	put_time(b, o, "response_at", t->response_at);
	put(b, o, "duration_ms", json_integer(s->duration_ms));
	put(b, o, "model", aptix_view_str(t->model));
	put(b, o, "workspace", aptix_view_str(t->workspace ? t->workspace :
					      s->workspace));
	put(b, o, full ? "instruction" : "instruction_summary",
	    text_view(&tv->instruction, full));
	put(b, o, full ? "answer" : "answer_summary",
	    aptix_oid_is_zero(&t->answer) ? json_null() :
	    text_view(&tv->answer, full));
	put(b, o, "instruction_id", aptix_view_id(&t->instruction));
	put(b, o, "answer_id", aptix_view_id(&t->answer));
	put(b, o, "request_payload_id", aptix_view_id(&t->request));
	put(b, o, "response_payload_id", aptix_view_id(&t->response));
	put(b, o, "response_id", aptix_view_str(t->response_id));
	put(b, o, "usage", aptix_view_usage(&t->usage));
	put(b, o, "warnings", strings(b, t->warnings, t->nwarnings));
	put(b, o, "errors", strings(b, t->errors, t->nerrors));
	put(b, o, "source_count", json_integer((json_int_t)t->nchunks));
	put(b, o, "file_count", json_integer((json_int_t)t->nfiles));
	/* issue 24: the calls asked for, the results sent */
	put(b, o, "tool_calls", aptix__view_tool_calls(tv->repo, t));
	put(b, o, "tool_results", aptix__view_tool_results(tv->repo, t,
							   full));
	if (full)
		turn_full(tv, o);
	return o;
}

int aptix_view_turn(json_t **out, aptix_repo *repo, const aptix_oid *session,
		    unsigned flags)
{
	struct turn_view tv;
	int r;

	*out = NULL;
	memset(&tv, 0, sizeof(tv));
	tv.repo = repo;
	tv.flags = flags;
	aptix_buf_init(&tv.instruction, 0);
	aptix_buf_init(&tv.answer, 0);
	aptix_session_init(&tv.s);
	aptix_turn_init(&tv.t);
	if ((r = aptix_session_lookup(&tv.s, repo, session)) < 0 ||
	    (r = aptix_turn_lookup(&tv.t, repo, &tv.s.turn)) < 0 ||
	    (r = aptix_view_blob_text(&tv.instruction, repo,
				      &tv.t.instruction)) < 0 ||
	    (!aptix_oid_is_zero(&tv.t.answer) &&
	     (r = aptix_view_blob_text(&tv.answer, repo, &tv.t.answer)) < 0))
		goto out;
	if (!(*out = done(&tv.b, turn_json(&tv, session))))
		r = APTIX_ERROR;
	else if ((r = tv.err) < 0) {
		json_decref(*out);
		*out = NULL;
	}
out:
	aptix_buf_release(&tv.instruction);
	aptix_buf_release(&tv.answer);
	aptix_turn_release(&tv.t);
	aptix_session_release(&tv.s);
	return r;
}

/* ---- lists ---- */

json_t *aptix_view_session_info(const aptix_session_info *si)
{
	struct vb b = { 0 };
	json_t *o = json_object();

	put(&b, o, "session", aptix_view_id(&si->id));
	put(&b, o, "parent", si->has_parent ? aptix_view_id(&si->parent) :
	    json_null());
	put(&b, o, "conversation", aptix_view_str(si->conversation));
	put(&b, o, "generation", json_integer(si->generation));
	put(&b, o, "status", json_string(aptix_session_status_name(
						  si->status)));
	put(&b, o, "turn_status", json_string(aptix_turn_status_name(
						       si->turn_status)));
	put(&b, o, "failed", json_boolean(aptix_session_info_failed(si)));
	put(&b, o, "created_at", aptix_view_time(si->created_at));
	put(&b, o, "summary", aptix_view_str(si->summary));
	return done(&b, o);
}

int aptix_view_search(json_t **out, aptix_repo *repo, const char *query,
		      const aptix_search_options *o)
{
	struct vb b = { 0 };
	aptix_search_hit *hits = NULL;
	aptix_session_info si;
	json_t *a, *h;
	size_t n = 0, i;
	int r;

	*out = NULL;
	if ((r = aptix_search(&hits, &n, repo, query, o)) < 0)
		return r;
	a = json_array();
	for (i = 0; i < n && !b.oom; i++) {
		if (aptix_index_session(&si, repo, &hits[i].session) < 0) {
			aptix_error_clear();	/* gone since */
			continue;
		}
		h = aptix_view_session_info(&si);
		put(&b, h, "score", json_real(hits[i].score));
		push(&b, a, h);
	}
	free(hits);
	if (!(*out = done(&b, a)))
		return APTIX_ERROR;
	return 0;
}

json_t *aptix_view_conversation(const aptix_conv_info *ci)
{
	struct vb b = { 0 };
	json_t *o = json_object();

	put(&b, o, "conversation", aptix_view_str(ci->id));
	/* alias: Codex's thread.id (app-server), the HTTP API's first name */
	put(&b, o, "id", aptix_view_str(ci->id));
	put(&b, o, "title", *ci->title ? aptix_view_str(ci->title) :
	    json_null());
	put(&b, o, "titled", json_boolean(ci->titled));
	put(&b, o, "status", ci->turns ? json_string(
		    aptix_session_status_name(ci->last_status)) : json_null());
	put(&b, o, "last_turn_status", ci->turns ? json_string(
		    aptix_turn_status_name(ci->last_turn_status)) :
	    json_null());
	put(&b, o, "last_turn_at", ci->turns ?
	    aptix_view_time(ci->updated_at) : json_null());
	/* turns as show numbers them; failed attempts apart */
	put(&b, o, "turn_count", json_integer(ci->committed));
	put(&b, o, "failed_count", json_integer(ci->failed));
	put(&b, o, "workspace", *ci->workspace ?
	    aptix_view_str(ci->workspace) : json_null());
	put(&b, o, "created_at", aptix_view_time(ci->created_at));
	put(&b, o, "updated_at", aptix_view_time(ci->updated_at));
	put(&b, o, "head", ci->has_head ? aptix_view_id(&ci->head) :
	    json_null());
	put(&b, o, "archived", json_boolean(ci->archived));
	return done(&b, o);
}

json_t *aptix_view_page(json_t *items, const char *next_cursor)
{
	struct vb b = { 0 };
	json_t *o = json_object();

	put(&b, o, "items", items);
	put(&b, o, "next_cursor", next_cursor ? json_string(next_cursor) :
	    json_null());
	return done(&b, o);
}
