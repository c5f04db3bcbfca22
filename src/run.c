/*
 * src/run.c - the turn pipeline (see aptix/run.h) and the recovery of
 * turns whose process died.
 */
#include "common.h"
#include "repo.h"
#include "cjson.h"
#include "aptix/run.h"
#include "aptix/refs.h"
#include "aptix/index.h"
#include "aptix/revparse.h"
#include "running.h"
#include "secrets.h"
#include <signal.h>
#include <unistd.h>

#define DEFAULT_MODEL "gpt-5"
#define DEFAULT_CHAIN_TTL_MS ((int64_t)30 * 24 * 3600 * 1000)
#define DEFAULT_WINDOW_TURNS 6
#define DEFAULT_WINDOW_CHARS 24000
#define DEFAULT_SUMMARY_CHARS 4000
#define TITLE_MAX 72
#define MAX_ANCESTORS 10000

void aptix_run_result_init(aptix_run_result *r)
{
	memset(r, 0, sizeof(*r));
	aptix_openai_result_init(&r->api);
	aptix_buf_init(&r->request, 0);
}

void aptix_run_result_release(aptix_run_result *r)
{
	size_t i;

	if (!r)
		return;
	aptix_openai_result_release(&r->api);
	aptix_buf_release(&r->request);
	for (i = 0; i < r->nwarnings; i++)
		free(r->warnings[i]);
	free(r->warnings);
	free(r->error_code);
	free(r->error_message);
	aptix_run_result_init(r);
}

static int add_warning(aptix_run_result *r, const char *fmt, ...)
	APTIX_FORMAT(2, 3);

static int add_warning(aptix_run_result *r, const char *fmt, ...)
{
	aptix_buf b = APTIX_BUF_INIT;
	char **w;
	va_list ap;

	va_start(ap, fmt);
	aptix_buf_vprintf(&b, fmt, ap);
	va_end(ap);
	w = aptix__realloc(r->warnings, (r->nwarnings + 1) * sizeof(char *));
	if (!w || aptix_buf_oom(&b)) {
		aptix_buf_release(&b);
		return APTIX_ERROR;
	}
	r->warnings = w;
	w[r->nwarnings++] = aptix_buf_detach(&b);
	return 0;
}

/* --- Reading the history --------------------------------------------- */

static int load_session(aptix_session *s, aptix_repo *repo,
			const aptix_oid *id)
{
	aptix_buf data = APTIX_BUF_INIT;
	aptix_otype type;
	int r = aptix_odb_read(&data, &type, repo->odb, id, 0);

	aptix_session_init(s);
	if (r == 0 && type != APTIX_OBJ_SESSION) {
		aptix_error_set(APTIX_ERROR_OBJECT, "object '%s' is a %s, not "
				"a session", aptix_oid_hex(id),
				aptix_otype_name(type));
		r = APTIX_EINVALID;
	}
	if (r == 0)
		r = aptix_session_parse(s, data.ptr, data.len);
	aptix_buf_release(&data);
	return r;
}

static int load_turn(aptix_turn *t, aptix_repo *repo, const aptix_oid *id)
{
	aptix_buf data = APTIX_BUF_INIT;
	aptix_otype type;
	int r = aptix_odb_read(&data, &type, repo->odb, id, 0);

	aptix_turn_init(t);
	if (r == 0 && type != APTIX_OBJ_TURN) {
		aptix_error_set(APTIX_ERROR_OBJECT, "object '%s' is not a turn",
				aptix_oid_hex(id));
		r = APTIX_EINVALID;
	}
	if (r == 0)
		r = aptix_turn_parse(t, data.ptr, data.len);
	aptix_buf_release(&data);
	return r;
}

static int load_blob(aptix_buf *out, aptix_repo *repo, const aptix_oid *id)
{
	aptix_otype type;
	int r = aptix_odb_read(out, &type, repo->odb, id, 0);

	if (r == 0 && type != APTIX_OBJ_BLOB) {
		aptix_error_set(APTIX_ERROR_OBJECT, "object '%s' is not a blob",
				aptix_oid_hex(id));
		r = APTIX_EINVALID;
	}
	return r;
}

/* One earlier turn of the chain, oldest last in the walk. */
struct past {
	aptix_oid session;
	aptix_turn turn;
	int completed;
};

struct history {
	struct past *v;
	size_t n;
	int loaded;
};

static void history_release(struct history *h)
{
	size_t i;

	for (i = 0; i < h->n; i++)
		aptix_turn_release(&h->v[i].turn);
	free(h->v);
	memset(h, 0, sizeof(*h));
}

/* Completed ancestors of start (start first), at most max of them. */
static int load_history(struct history *h, aptix_repo *repo,
			const aptix_oid *start, size_t max)
{
	aptix_oid cur = *start;
	aptix_session s;
	size_t steps = 0;
	int r = 0, more = 1;

	memset(h, 0, sizeof(*h));
	while (more && h->n < max && steps++ < MAX_ANCESTORS) {
		struct past *p;

		if ((r = load_session(&s, repo, &cur)) < 0)
			break;
		if (s.status == APTIX_SESSION_COMMITTED) {
			p = aptix__realloc(h->v, (h->n + 1) * sizeof(*p));
			if (!p) {
				aptix_session_release(&s);
				r = APTIX_ERROR;
				break;
			}
			h->v = p;
			p = &h->v[h->n];
			p->session = cur;
			if ((r = load_turn(&p->turn, repo, &s.turn)) < 0) {
				aptix_session_release(&s);
				break;
			}
			p->completed = p->turn.status == APTIX_TURN_COMPLETED;
			h->n++;
		}
		more = s.has_parent;
		cur = s.parent;
		aptix_session_release(&s);
	}
	if (r < 0)
		history_release(h);
	else
		h->loaded = 1;
	return r;
}

/* --- Building the request --------------------------------------------- */

struct plan {
	aptix_run_kind kind;
	char conv[APTIX_CONV_MAXLEN + 1];
	aptix_oid parent;
	int has_parent;
	char parent_conv[APTIX_CONV_MAXLEN + 1];
	long seq;
	int new_conv;			/* the ref must not exist yet */
	int base_is_head;		/* ref points at a fork base */
	aptix_buf instruction;
	char *model;
	char *previous;			/* previous_response_id to use */
	int restart;			/* rehydrate instead of chaining */
	char *expired_id;		/* for the warning */
	int64_t expired_at;
	int64_t chain_ttl;
	long window_turns, window_chars, summary_chars;
	int slim;			/* store no payloads: the store is full */
};

static void plan_release(struct plan *p)
{
	aptix_buf_release(&p->instruction);
	free(p->model);
	free(p->previous);
	free(p->expired_id);
}

static int cfg_long(long *out, const aptix_config *cfg, const char *key,
		    long dflt)
{
	if (!cfg) {
		*out = dflt;
		return 0;
	}
	return aptix_config_get_long(out, cfg, key, dflt);
}

static const char *cfg_str(const aptix_config *cfg, const char *key)
{
	return cfg ? aptix_config_get(cfg, key) : NULL;
}

/* The head of p->conv: the parent of its next turn (none when unborn). */
static int head_of(struct plan *p, aptix_repo *repo)
{
	aptix_buf ref = APTIX_BUF_INIT;
	int r;

	aptix_buf_printf(&ref, "%s%s", APTIX_CONV_PREFIX, p->conv);
	r = aptix_ref_resolve(&p->parent, NULL, repo, ref.ptr);
	aptix_buf_release(&ref);
	if (r == APTIX_ENOTFOUND) {
		p->new_conv = 1;
		p->has_parent = 0;
		aptix_error_clear();
		return 0;
	}
	if (r < 0)
		return r;
	p->has_parent = 1;
	return 0;
}

/* Which conversation and parent: from the kind of run and the refs. */
static int resolve_place(struct plan *p, aptix_repo *repo,
			 const aptix_run_options *o)
{
	aptix_session from;
	aptix_turn t;
	int r;

	p->kind = o->kind;
	if (o->kind == APTIX_RUN_CONTINUE) {
		r = aptix_conv_resolve(p->conv, repo, o->conversation ?
				       o->conversation : "HEAD");
		if (r == APTIX_ENOTFOUND && o->conversation &&
		    aptix_conv_check_id(o->conversation) == 0) {
			/* a new conversation, named by the caller */
			snprintf(p->conv, sizeof(p->conv), "%s",
				 o->conversation);
			aptix_error_clear();
			r = 0;
		}
		if (r < 0)
			return r;
		return head_of(p, repo);
	}
	if (!o->from) {
		aptix_error_set(APTIX_ERROR_INVALID, "fork and rerun need a "
				"session");
		return APTIX_EINVALID;
	}
	if ((r = load_session(&from, repo, o->from)) < 0)
		return r;
	if (o->kind == APTIX_RUN_FORK) {
		p->parent = *o->from;
		p->has_parent = 1;
	} else {
		p->parent = from.parent;
		p->has_parent = from.has_parent;
		r = load_turn(&t, repo, &from.turn);
		if (r == 0)
			r = load_blob(&p->instruction, repo, &t.instruction);
		aptix_turn_release(&t);
	}
	if (r == 0 && o->kind == APTIX_RUN_RERUN &&
	    from.status == APTIX_SESSION_FAILED) {
		/*
		 * Retrying a failed turn whose conversation has not moved
		 * since: it goes where the failed one would have gone.
		 */
		struct plan here;
		int same;

		memset(&here, 0, sizeof(here));
		snprintf(here.conv, sizeof(here.conv), "%s",
			 from.conversation);
		r = head_of(&here, repo);
		same = r == 0 && (here.has_parent ? from.has_parent &&
				  !aptix_oid_cmp(&here.parent, &from.parent) :
				  !from.has_parent);
		aptix_error_clear();
		r = 0;
		if (same) {
			snprintf(p->conv, sizeof(p->conv), "%s",
				 from.conversation);
			p->new_conv = here.new_conv;
			aptix_session_release(&from);
			return 0;
		}
	}
	aptix_session_release(&from);
	if (r < 0)
		return r;
	p->new_conv = 1;
	return aptix__new_conv_id(p->conv);
}

/* Sequence number, chain and expiry, from the parent's history. */
static int plan_chain(struct plan *p, aptix_repo *repo, int64_t now)
{
	aptix_chain_state cs;
	aptix_session ps;
	aptix_turn pt;
	int r;

	p->seq = 1;
	if (!p->has_parent)
		return 0;
	if ((r = load_session(&ps, repo, &p->parent)) < 0)
		return r;
	snprintf(p->parent_conv, sizeof(p->parent_conv), "%s",
		 ps.conversation);
	r = load_turn(&pt, repo, &ps.turn);
	aptix_session_release(&ps);
	if (r < 0)
		return r;
	p->seq = pt.seq + 1;
	aptix_turn_release(&pt);
	/* the chain continues from the nearest completed turn */
	if ((r = aptix_chain_state_of(&cs, repo, &p->parent, now)) < 0)
		return r;
	if (cs.has_chain && cs.expired) {
		p->restart = 1;
		p->expired_id = aptix__strdup(cs.response_id);
		p->expired_at = cs.expires_at;
	} else if (cs.has_chain) {
		p->previous = aptix__strdup(cs.response_id);
	} else {
		p->restart = 1;	/* history but no usable chain */
	}
	return 0;
}

static void add_text(json_t *input, const char *role, const char *text,
		     size_t len)
{
	json_t *m = json_object();

	json_object_set_new(m, "role", json_string(role));
	json_object_set_new(m, "content", json_stringn(text, len));
	json_array_append_new(input, m);
}

/*
 * The context of a new chain: a rolling summary of the older turns (an
 * engine-written digest: the start of each instruction and answer), then
 * the most recent turns verbatim, within the configured limits.
 */
static int rehydrate(json_t *input, aptix_repo *repo, struct history *h,
		     const struct plan *p, size_t *nturns)
{
	aptix_buf summary = APTIX_BUF_INIT, a = APTIX_BUF_INIT,
		  b = APTIX_BUF_INIT;
	size_t i, window = 0, chars = 0, nwin;
	int r = 0;

	*nturns = 0;
	/* how many recent turns fit the window, newest first */
	for (i = 0; i < h->n && window < (size_t)p->window_turns; i++) {
		aptix_turn *t = &h->v[i].turn;
		aptix_otype type;
		size_t sz = 0, s2 = 0;

		if (aptix_odb_read_header(&sz, &type, repo->odb,
					  &t->instruction) < 0)
			sz = 0;
		if (!aptix_oid_is_zero(&t->answer) &&
		    aptix_odb_read_header(&s2, &type, repo->odb,
					  &t->answer) < 0)
			s2 = 0;
		if (window && chars + sz + s2 > (size_t)p->window_chars)
			break;
		chars += sz + s2;
		window++;
	}
	nwin = window;
	/* older turns, oldest first, go into the summary */
	for (i = h->n; i > nwin; i--) {
		aptix_turn *t = &h->v[i - 1].turn;
		char line[241];

		if (summary.len >= (size_t)p->summary_chars)
			break;
		aptix_buf_clear(&a);
		if (load_blob(&a, repo, &t->instruction) < 0)
			continue;
		aptix_summary_line(line, 200, a.ptr, a.len);
		aptix_buf_printf(&summary, "- Turn %ld asked: %s\n", t->seq,
				 line);
		aptix_buf_clear(&a);
		if (!aptix_oid_is_zero(&t->answer) &&
		    load_blob(&a, repo, &t->answer) == 0) {
			aptix_summary_line(line, 240, a.ptr, a.len);
			aptix_buf_printf(&summary, "  Answer began: %s\n",
					 line);
		}
	}
	if (summary.len > (size_t)p->summary_chars) {
		size_t cut = (size_t)p->summary_chars;

		/* never split a UTF-8 sequence */
		while (cut > 0 && ((unsigned char)summary.ptr[cut] & 0xc0) ==
		       0x80)
			cut--;
		aptix_buf_truncate(&summary, cut);
	}
	if (summary.len) {
		aptix_buf_clear(&b);
		aptix_buf_printf(&b, "Summary of the earlier turns of this "
				 "conversation (the previous responses are "
				 "no longer available):\n%s", summary.ptr);
		add_text(input, "user", b.ptr, b.len);
	}
	for (i = nwin; i > 0 && !r; i--) {
		aptix_turn *t = &h->v[i - 1].turn;

		aptix_buf_clear(&a);
		if ((r = load_blob(&a, repo, &t->instruction)) < 0)
			break;
		add_text(input, "user", a.ptr, a.len);
		aptix_buf_clear(&a);
		if (!aptix_oid_is_zero(&t->answer)) {
			if ((r = load_blob(&a, repo, &t->answer)) < 0)
				break;
			add_text(input, "assistant", a.ptr, a.len);
		}
		(*nturns)++;
	}
	*nturns += h->n - nwin;
	aptix_buf_release(&summary);
	aptix_buf_release(&a);
	aptix_buf_release(&b);
	return r;
}

static int build_request(aptix_buf *out, aptix_repo *repo,
			 struct history *h, const struct plan *p,
			 const aptix_run_options *o, size_t *rehydrated)
{
	json_t *req = json_object(), *input = json_array();
	const char *instr = cfg_str(o->cfg, "openai.instructions");
	const char *temp = cfg_str(o->cfg, "openai.temperature");
	aptix_buf text = APTIX_BUF_INIT;
	char *s;
	int r = 0;

	*rehydrated = 0;
	if (!req || !input) {
		json_decref(req);
		json_decref(input);
		return aptix_error_oom();
	}
	json_object_set_new(req, "model", json_string(p->model));
	if (!instr)
		instr = "You are a coding assistant working on the user's "
			"repository. Answer precisely; when you change code, "
			"show the complete changed files or unified diffs.";
	if (*instr)
		json_object_set_new(req, "instructions", json_string(instr));
	if (p->previous)
		json_object_set_new(req, "previous_response_id",
				    json_string(p->previous));
	else if (p->restart) {
		/* only a new chain needs the history: load it now */
		if (!h->loaded && p->has_parent)
			r = load_history(h, repo, &p->parent,
					 (size_t)MAX_ANCESTORS);
		if (!r)
			r = rehydrate(input, repo, h, p, rehydrated);
	}
	if ((r = aptix_context_render(&text, o->files, o->chunks)) < 0) {
		json_decref(req);
		json_decref(input);
		aptix_buf_release(&text);
		return r;
	}
	aptix_buf_put(&text, p->instruction.ptr, p->instruction.len);
	add_text(input, "user", text.ptr, text.len);
	json_object_set_new(req, "input", input);
	if (temp) {
		double t;

		if (aptix_config_get_double(&t, o->cfg, "openai.temperature",
					    1.0) < 0)
			r = APTIX_EINVALID;
		else
			json_object_set_new(req, "temperature", json_real(t));
	}
	json_object_set_new(req, "store", json_true());
	json_object_set_new(req, "stream", json_boolean(!o->no_stream));
	aptix_buf_release(&text);
	if (r < 0) {
		json_decref(req);
		return r;
	}
	s = json_dumps(req, JSON_COMPACT | JSON_PRESERVE_ORDER);
	json_decref(req);
	if (!s)
		return aptix_error_oom();
	aptix_buf_clear(out);
	aptix_buf_puts(out, s);
	free(s);
	return aptix_buf_oom(out) ? APTIX_ERROR : 0;
}

/* --- Writing ----------------------------------------------------------- */

static int write_blob(aptix_oid *id, aptix_txn *tx, const void *data,
		      size_t len)
{
	return aptix_txn_write_object(id, tx, APTIX_OBJ_BLOB, data, len);
}

static int write_turn(aptix_oid *id, aptix_txn *tx, const aptix_turn *t)
{
	aptix_buf b = APTIX_BUF_INIT;
	int r = aptix_turn_serialize(&b, t);

	if (!r)
		r = aptix_txn_write_object(id, tx, APTIX_OBJ_TURN, b.ptr,
					   b.len);
	aptix_buf_release(&b);
	return r;
}

static int write_session(aptix_oid *id, aptix_txn *tx,
			 const aptix_session *s)
{
	aptix_buf b = APTIX_BUF_INIT;
	int r = aptix_session_serialize(&b, s);

	if (!r)
		r = aptix_txn_write_object(id, tx, APTIX_OBJ_SESSION, b.ptr,
					   b.len);
	aptix_buf_release(&b);
	return r;
}

/*
 * The claim on the conversation: who runs the turn, and the pending turn
 * itself (its canonical bytes), so that a crash leaves all that recovery
 * needs to record it as failed. The pending turn is not stored as an
 * object: the snapshot that ends the turn stores the final one.
 */
static int running_record(aptix_buf *out, aptix_oid *turn_id,
			  const aptix_turn *t, const struct plan *p,
			  int64_t now)
{
	aptix_buf bytes = APTIX_BUF_INIT;
	json_t *o;
	char host[65];
	char *s;
	int r;

	if ((r = aptix_turn_serialize(&bytes, t)) < 0 ||
	    (r = aptix_object_hash(turn_id, APTIX_OBJ_TURN, bytes.ptr,
				   bytes.len)) < 0) {
		aptix_buf_release(&bytes);
		return r;
	}
	aptix__host_name(host);
	o = json_object();
	json_object_set_new(o, "pid", json_integer((json_int_t)getpid()));
	json_object_set_new(o, "start", json_integer((json_int_t)
			    aptix__proc_starttime((long)getpid())));
	json_object_set_new(o, "host", json_string(host));
	json_object_set_new(o, "since", json_integer(now));
	json_object_set_new(o, "turn", json_string(aptix_oid_hex(turn_id)));
	json_object_set_new(o, "instruction",
			    json_string(aptix_oid_hex(&t->instruction)));
	json_object_set_new(o, "pending", json_stringn(bytes.ptr,
						       bytes.len));
	if (p->has_parent)
		json_object_set_new(o, "parent",
				    json_string(aptix_oid_hex(&p->parent)));
	aptix_buf_release(&bytes);
	s = json_dumps(o, JSON_COMPACT | JSON_SORT_KEYS);
	json_decref(o);
	if (!s)
		return aptix_error_oom();
	aptix_buf_puts(out, s);
	free(s);
	return 0;
}

/* Files and chunks holding an API key are neither sent nor stored. */
static void drop_secrets(aptix_run_result *res, const aptix_run_options *o)
{
	size_t i, j;

	for (i = 0; o->files && i < o->files->n; i++) {
		aptix_active_file *f = &o->files->v[i];

		if (!f->content.len ||
		    !aptix__holds_secret(f->content.ptr, f->content.len,
					 &o->http.api_key, 1))
			continue;
		aptix_buf_release(&f->content);
		f->action = APTIX_FILE_UNREADABLE;
		add_warning(res, "active file '%s' holds an API key: neither "
			    "sent nor stored", f->path);
	}
	for (i = j = 0; o->chunks && i < o->chunks->n; i++) {
		aptix_rag_chunk *c = &o->chunks->v[i];

		if (aptix__holds_secret(c->text.ptr, c->text.len,
					&o->http.api_key, 1)) {
			add_warning(res, "a chunk of '%s' holds an API key: "
				    "neither sent nor stored", c->path);
			free(c->chunk_id);
			free(c->repo);
			free(c->path);
			free(c->language);
			aptix_buf_release(&c->text);
			continue;
		}
		o->chunks->v[j++] = *c;
	}
	if (o->chunks)
		o->chunks->n = j;
}

/* Plan what to send, and turn the sets' warnings into the turn's. */
static int plan_context(aptix_run_result *res, aptix_repo *repo,
			const struct plan *p, const aptix_run_options *o)
{
	size_t i;
	int r;

	drop_secrets(res, o);
	r = aptix_context_plan(repo, p->has_parent ? &p->parent : NULL,
			       p->restart, o->files, o->chunks);
	if (r < 0)
		return r;
	for (i = 0; o->files && i < o->files->nwarnings; i++)
		add_warning(res, "%s", o->files->warnings[i]);
	for (i = 0; o->files && i < o->files->n; i++) {
		const aptix_active_file *f = &o->files->v[i];

		if (f->action == APTIX_FILE_TOO_LARGE)
			add_warning(res, "active file '%s' is too large to "
				    "send (%ld bytes, over files.max-size): "
				    "skipped", f->path, f->size);
		else if (f->action == APTIX_FILE_BINARY)
			add_warning(res, "active file '%s' is binary: "
				    "skipped", f->path);
	}
	for (i = 0; o->chunks && i < o->chunks->nwarnings; i++)
		add_warning(res, "%s", o->chunks->warnings[i]);
	return 0;
}

/*
 * The file and chunk refs of the turn, with their content stored as
 * blobs in tx (deduplicated: the same content is one object).
 */
static int record_context(aptix_turn *t, aptix_txn *tx,
			  const aptix_run_options *o, int slim)
{
	size_t i, n;
	int r;

	free(t->files);
	free(t->chunks);
	t->files = NULL;
	t->chunks = NULL;
	t->nfiles = t->nchunks = 0;
	n = o->files ? o->files->n : 0;
	if (n && !(t->files = aptix__calloc(n, sizeof(*t->files))))
		return APTIX_ERROR;
	for (i = 0; i < n; i++) {
		const aptix_active_file *f = &o->files->v[i];
		aptix_file_ref *fr = &t->files[t->nfiles];

		if (f->action == APTIX_FILE_UNREADABLE)
			continue;
		fr->path = f->path;
		fr->sha256 = (char *)f->sha256;
		fr->size = f->size;
		fr->touched = f->touched;
		fr->sent = f->action == APTIX_FILE_SEND;
		fr->too_large = f->action == APTIX_FILE_TOO_LARGE;
		fr->binary = f->action == APTIX_FILE_BINARY;
		if (!f->too_large && !slim) {
			if ((r = write_blob(&fr->content, tx, f->content.ptr,
					    f->content.len)) < 0)
				return r;
			fr->has_content = 1;
		}
		t->nfiles++;
	}
	n = o->chunks ? o->chunks->n : 0;
	if (n && !(t->chunks = aptix__calloc(n, sizeof(*t->chunks))))
		return APTIX_ERROR;
	for (i = 0; i < n; i++) {
		const aptix_rag_chunk *c = &o->chunks->v[i];
		aptix_chunk_ref *cr = &t->chunks[i];

		cr->chunk_id = c->chunk_id;
		cr->path = c->path;
		cr->start_line = c->start_line;
		cr->end_line = c->end_line;
		cr->content_hash = (char *)c->content_hash;
		cr->score = (long)(c->score * 1e6 + (c->score < 0 ? -0.5 :
							    0.5));
		cr->sent = c->sent;
		if (!slim && (r = write_blob(&cr->snippet, tx, c->text.ptr,
					     c->text.len)) < 0)
			return r;
		t->nchunks++;
	}
	return 0;
}

/* The refs borrow the sets' strings: drop them before the turn's release. */
static void forget_context(aptix_turn *t)
{
	free(t->files);
	free(t->chunks);
	t->files = NULL;
	t->chunks = NULL;
	t->nfiles = t->nchunks = 0;
}

/*
 * The snapshot that ends a turn: the final turn object, the session
 * and, when it completed, the conversation ref moved to it.
 */
static int commit_end(aptix_run_result *res, aptix_repo *repo,
		      const struct plan *p, aptix_turn *t,
		      const aptix_oid *pending, const aptix_run_options *o,
		      int completed, int64_t started)
{
	aptix_session s;
	aptix_txn *tx = NULL;
	aptix_buf ref = APTIX_BUF_INIT, reason = APTIX_BUF_INIT;
	aptix_oid zero;
	char title[TITLE_MAX + 1];
	int r;

	memset(&zero, 0, sizeof(zero));
	aptix_session_init(&s);
	s.conversation = (char *)p->conv;
	s.parent = p->parent;
	s.has_parent = p->has_parent;
	s.status = completed ? APTIX_SESSION_COMMITTED :
		APTIX_SESSION_FAILED;
	s.created_at = aptix_now_ms();
	s.duration_ms = s.created_at - started;
	if (s.duration_ms < 0)
		s.duration_ms = 0;
	s.usage = t->usage;
	s.session_type = (char *)"agent";
	s.transport = (char *)(o->no_stream ? "http" : "sse");
	s.workspace = t->workspace;
	/* the first line of the instruction: title and reflog reason */
	aptix_summary_line(title, TITLE_MAX, p->instruction.ptr,
			   p->instruction.len);
	if (!p->has_parent || strcmp(p->parent_conv, p->conv)) {
		s.title = title;
		if (p->has_parent)
			s.forked_from = (char *)p->parent_conv;
	}
	if ((r = aptix_txn_new(&tx, repo)) < 0)
		goto done;
	memset(&t->request, 0, sizeof(t->request));
	memset(&t->response, 0, sizeof(t->response));
	memset(&t->answer, 0, sizeof(t->answer));
	if (p->slim)
		goto objects;
	if (res->request.len &&
	    (r = write_blob(&t->request, tx, res->request.ptr,
			    res->request.len)) < 0)
		goto done;
	if (res->api.raw.len &&
	    (r = write_blob(&t->response, tx, res->api.raw.ptr,
			    res->api.raw.len)) < 0)
		goto done;
	/* a failed turn keeps the text that did arrive */
	if ((completed || res->api.text.len) &&
	    (r = write_blob(&t->answer, tx, res->api.text.ptr,
			    res->api.text.len)) < 0)
		goto done;
objects:
	t->status = completed ? APTIX_TURN_COMPLETED : APTIX_TURN_FAILED;
	r = record_context(t, tx, o, p->slim);
	if (!r)
		r = write_turn(&res->turn, tx, t);
	forget_context(t);
	if (r < 0)
		goto done;
	s.turn = res->turn;
	if ((r = write_session(&res->session, tx, &s)) < 0)
		goto done;
	if ((r = aptix_txn__running_release(tx, p->conv, pending, 0)) < 0)
		goto done;
	if (completed) {
		aptix_buf_printf(&ref, "%s%s", APTIX_CONV_PREFIX, p->conv);
		aptix_buf_printf(&reason, "%s: %.60s",
				 p->kind == APTIX_RUN_FORK ? "fork" :
				 p->kind == APTIX_RUN_RERUN ? "rerun" :
				 "continue", title[0] ? title : "turn");
		r = aptix_txn_ref_update(tx, ref.ptr, &res->session,
					 p->new_conv ? &zero :
					 p->has_parent ? &p->parent : &zero,
					 reason.ptr);
		if (!r && o->switch_head)
			r = aptix_txn_symref_update(tx, "HEAD", ref.ptr,
						    reason.ptr);
		if (r < 0)
			goto done;
	}
	r = aptix_txn_commit(tx);
	if (r == APTIX_EMISMATCH && completed) {
		/* the head moved under us: keep the turn, as a failed one */
		res->error_message = aptix__strdup(aptix_error_last()->message);
		aptix_txn_free(tx);
		tx = NULL;
		add_warning(res, "the conversation moved while the turn ran "
			    "(%s); the snapshot was kept but the head was not "
			    "moved", res->error_message);
		{
			char **e = aptix__realloc(t->errors, (t->nerrors + 1) *
						  sizeof(char *));

			if (e) {
				t->errors = e;
				e[t->nerrors] = aptix__strdup(
					res->warnings[res->nwarnings - 1]);
				if (e[t->nerrors])
					t->nerrors++;
			}
		}
		r = commit_end(res, repo, p, t, pending, o, 0, started);
		if (!r)
			r = APTIX_EMISMATCH;
		goto done;
	}
	if (!r) {
		res->committed = 1;
		res->completed = completed;
	}
done:
	title[0] = '\0';
	aptix_buf_release(&ref);
	aptix_buf_release(&reason);
	aptix_txn_free(tx);
	return r;
}

static volatile sig_atomic_t no_cancel;

/* Well-formed UTF-8 without NUL (what JSON strings can carry). */
static int utf8_valid(const char *s, size_t len)
{
	const unsigned char *p = (const unsigned char *)s;
	size_t i = 0;

	while (i < len) {
		unsigned c = p[i], n, k;
		uint32_t cp;

		if (c == 0)
			return 0;
		if (c < 0x80) {
			i++;
			continue;
		}
		if (c >= 0xc2 && c <= 0xdf) {
			n = 1;
			cp = c & 0x1f;
		} else if (c >= 0xe0 && c <= 0xef) {
			n = 2;
			cp = c & 0x0f;
		} else if (c >= 0xf0 && c <= 0xf4) {
			n = 3;
			cp = c & 0x07;
		} else {
			return 0;
		}
		if (len - i <= n)
			return 0;
		for (k = 1; k <= n; k++) {
			if ((p[i + k] & 0xc0) != 0x80)
				return 0;
			cp = (cp << 6) | (p[i + k] & 0x3f);
		}
		if ((n == 2 && cp < 0x800) || (n == 3 && cp < 0x10000) ||
		    cp > 0x10ffff || (cp >= 0xd800 && cp <= 0xdfff))
			return 0;
		i += n + 1;
	}
	return 1;
}

static int copy_list(char ***out, size_t *n, char *const *src, size_t m)
{
	size_t i;

	*out = aptix__calloc(m + 1, sizeof(char *));
	if (!*out)
		return APTIX_ERROR;
	for (i = 0; i < m; i++)
		if (!((*out)[i] = aptix__strdup(src[i])))
			return APTIX_ERROR;
	*n = m;
	return 0;
}

int aptix_run_turn(aptix_run_result *res, aptix_repo *repo,
		   const aptix_run_options *o)
{
	struct plan p;
	struct history h;
	aptix_turn t;
	aptix_txn *tx = NULL;
	aptix_buf rec = APTIX_BUF_INIT;
	aptix_openai_options http = o->http;
	aptix_oid pending;
	int64_t started = aptix_now_ms(), ttl;
	size_t rehydrated = 0, i;
	int r, call, attempt;

	memset(&p, 0, sizeof(p));
	memset(&h, 0, sizeof(h));
	aptix_buf_init(&p.instruction, 0);
	aptix_turn_init(&t);
	if (!http.cancel)
		http.cancel = &no_cancel;

	/* Settings */
	if ((r = aptix_config_get_duration_ms(&ttl, o->cfg,
					      "openai.chain-ttl",
					      DEFAULT_CHAIN_TTL_MS)) < 0 ||
	    (r = cfg_long(&p.window_turns, o->cfg, "context.window-turns",
			  DEFAULT_WINDOW_TURNS)) < 0 ||
	    (r = cfg_long(&p.window_chars, o->cfg, "context.window-chars",
			  DEFAULT_WINDOW_CHARS)) < 0 ||
	    (r = cfg_long(&p.summary_chars, o->cfg, "context.summary-chars",
			  DEFAULT_SUMMARY_CHARS)) < 0)
		goto done;
	p.chain_ttl = ttl;
	p.model = aptix__strdup(o->model ? o->model :
				cfg_str(o->cfg, "openai.model") ?
				cfg_str(o->cfg, "openai.model") :
				DEFAULT_MODEL);
	if (!o->dry_run && (!http.api_key || !*http.api_key)) {
		aptix_error_set(APTIX_ERROR_OPENAI, "OPENAI_API_KEY is not set: "
				"export it in the environment (it is never "
				"stored)");
		r = APTIX_EINVALID;
		goto done;
	}

	/* Where the turn goes, and what it asks */
	if ((r = resolve_place(&p, repo, o)) < 0)
		goto done;
	if (o->kind != APTIX_RUN_RERUN &&
	    (r = aptix_buf_set(&p.instruction, o->instruction,
			       o->instruction_len)) < 0)
		goto done;
	for (i = 0; i < p.instruction.len &&
	     strchr(" \t\r\n", p.instruction.ptr[i]); i++)
		;
	if (i == p.instruction.len) {
		aptix_error_set(APTIX_ERROR_INVALID, "the instruction is "
				"empty");
		r = APTIX_EINVALID;
		goto done;
	}
	if (aptix__holds_secret(p.instruction.ptr, p.instruction.len,
				&http.api_key, 1)) {
		aptix_error_set(APTIX_ERROR_INVALID, "the instruction holds an "
				"API key: refusing to store or send it");
		r = APTIX_EINVALID;
		goto done;
	}
	if (!utf8_valid(p.instruction.ptr, p.instruction.len)) {
		aptix_error_set(APTIX_ERROR_INVALID, "the instruction is not "
				"valid UTF-8 text (or holds a NUL byte)");
		r = APTIX_EINVALID;
		goto done;
	}
	if (!p.model || !*p.model) {
		aptix_error_set(APTIX_ERROR_INVALID, "the model name is "
				"empty");
		r = APTIX_EINVALID;
		goto done;
	}
	if ((r = plan_chain(&p, repo, started)) < 0)
		goto done;
	snprintf(res->conversation, sizeof(res->conversation), "%s", p.conv);
	res->parent = p.parent;
	res->has_parent = p.has_parent;


	/* The pending turn, stored before any network call */
	t.conversation = aptix__strdup(p.conv);
	t.seq = p.seq;
	t.status = APTIX_TURN_PENDING;
	t.mode = aptix__strdup("ask");
	t.model = aptix__strdup(p.model);
	t.workspace = o->workspace ? aptix__strdup(o->workspace) : NULL;
	t.created_at = started;
	t.status_at = started;
	if (o->dry_run) {
		if (o->gather && (r = o->gather(o->files, o->chunks,
						p.instruction.ptr,
						p.instruction.len,
						o->gather_payload)) < 0)
			goto done;
		if ((r = plan_context(res, repo, &p, o)) < 0)
			goto done;
		r = build_request(&res->request, repo, &h, &p, o, &rehydrated);
		goto done;
	}
	if ((r = aptix_txn_new(&tx, repo)) < 0 ||
	    (r = write_blob(&t.instruction, tx, p.instruction.ptr,
			    p.instruction.len)) < 0 ||
	    (r = running_record(&rec, &pending, &t, &p, started)) < 0 ||
	    (r = aptix_txn__running_claim(tx, p.conv, rec.ptr)) < 0)
		goto done;
	/* the head this turn was planned on must still be the head */
	aptix_buf_clear(&rec);
	aptix_buf_printf(&rec, "%s%s", APTIX_CONV_PREFIX, p.conv);
	if ((r = aptix_txn__ref_verify(tx, rec.ptr, p.new_conv ? NULL :
					 p.has_parent ? &p.parent : NULL)) < 0)
		goto done;
	r = aptix_txn_commit(tx);
	if (r == APTIX_EEXISTS) {
		/* a dead process left a claim: recover it, then retry */
		if ((r = aptix_run_recover(repo, NULL)) < 0)
			goto done;
		r = aptix_txn_commit(tx);
	}
	if (r == APTIX_EMISMATCH) {
		aptix_error_set(APTIX_ERROR_REPOSITORY, "conversation '%s' is "
				"busy: another turn moved its head just now; "
				"run this one again", p.conv);
		r = APTIX_ELOCKED;
	}
	if (r < 0)
		goto done;
	aptix_txn_free(tx);
	tx = NULL;

	/*
	 * The context: scanning the working copy and retrieval (which may
	 * talk to Qdrant) come after the claim, so a kill or a failure here
	 * leaves the instruction in a failed snapshot too.
	 */
	r = 0;
	if (o->gather)
		r = o->gather(o->files, o->chunks, p.instruction.ptr,
			      p.instruction.len, o->gather_payload);
	if (r == 0)
		r = plan_context(res, repo, &p, o);

	/* The call; a chain the server forgot is restarted once */
	for (attempt = 0; r == 0; attempt++) {
		if (p.restart) {
			t.chain_restarted = 1;
			free(p.previous);
			p.previous = NULL;
		}
		if ((r = build_request(&res->request, repo, &h, &p, o,
				       &rehydrated)) < 0)
			break;
		if (p.restart && attempt == 0 && p.expired_id) {
			char when[32];

			add_warning(res, "the response chain expired on %s "
				    "(response %s): started a new chain with "
				    "the context of %zu earlier turns "
				    "rehydrated from the store",
				    aptix_time_fmt(when, p.expired_at),
				    p.expired_id, rehydrated);
		}
		aptix_openai_result_release(&res->api);
		aptix_openai_result_init(&res->api);
		call = aptix_openai_respond(&res->api, &http,
					    res->request.ptr,
					    res->request.len);
		t.usage.model_requests += res->api.attempts > 0 ?
			res->api.attempts : 1;
		if (call != APTIX_OK && res->api.previous_not_found &&
		    !p.restart && attempt == 0) {
			add_warning(res, "the server no longer knows response "
				    "%s (%s): started a new chain with the "
				    "context rehydrated from the store",
				    p.previous ? p.previous : "?",
				    res->api.error_code ?
				    res->api.error_code : "not found");
			p.restart = 1;
			if ((r = aptix_context_plan(repo, p.has_parent ?
						    &p.parent : NULL, 1,
						    o->files, o->chunks)) < 0)
				break;
			continue;
		}
		r = call;
		break;
	}
	if (p.restart && rehydrated)
		res->chain_restarted = 1;
	t.previous_response_id = p.previous ? aptix__strdup(p.previous) :
		NULL;
	t.response_at = aptix_now_ms();
	t.status_at = t.response_at;
	if (res->api.response_id)
		t.response_id = aptix__strdup(res->api.response_id);
	if (t.response_id)
		t.chain_expires_at = t.response_at + p.chain_ttl;
	t.usage.input_tokens = res->api.usage.input_tokens;
	t.usage.output_tokens = res->api.usage.output_tokens;
	t.usage.total_tokens = res->api.usage.total_tokens;
	t.usage.cached_tokens = res->api.usage.cached_tokens;
	t.usage.reasoning_tokens = res->api.usage.reasoning_tokens;
	if (copy_list(&t.warnings, &t.nwarnings, res->warnings,
		      res->nwarnings) < 0) {
		r = APTIX_ERROR;
		goto done;
	}
	if (r < 0) {
		const char *msg = aptix_error_last()->message;

		res->error_message = aptix__strdup(msg);
		res->error_code = aptix__strdup(res->api.error_code ?
						res->api.error_code :
						r == APTIX_ECANCELLED ?
						"cancelled" : r == APTIX_ENET ?
						"network_error" :
						"invalid_response");
		t.errors = aptix__calloc(1, sizeof(char *));
		if (t.errors && (t.errors[0] = aptix__strdup(msg)))
			t.nerrors = 1;
	}
	{
		int call_r = r, w;

		w = commit_end(res, repo, &p, &t, &pending, o, call_r == 0,
			       started);
		if (w == APTIX_EFULL) {
			/*
			 * The store is full: keep at least the turn, failed,
			 * without the payloads, and release the claim.
			 */
			char **e = aptix__realloc(t.errors, (t.nerrors + 1) *
						  sizeof(char *));
			char *full = aptix__strdup(aptix_error_last()->message);

			if (e && full) {
				t.errors = e;
				e[t.nerrors] = aptix__malloc(strlen(full) + 80);
				if (e[t.nerrors]) {
					snprintf(e[t.nerrors], strlen(full) + 80,
						 "%s: the answer could not be "
						 "stored", full);
					t.nerrors++;
				}
			}
			p.slim = 1;
			if (commit_end(res, repo, &p, &t, &pending, o, 0,
				       started) == 0 && full)
				aptix_error_set(APTIX_ERROR_REPOSITORY, "%s",
						full);
			free(full);
		}
		if (w < 0)
			r = w;
		else if (call_r < 0) {
			/* the failure stays the answer: restore its text */
			aptix_error_set(APTIX_ERROR_OPENAI, "%s",
					res->error_message);
			r = call_r;
		}
	}
	res->duration_ms = aptix_now_ms() - started;
done:
	aptix_txn_free(tx);
	aptix_buf_release(&rec);
	history_release(&h);
	aptix_turn_release(&t);
	plan_release(&p);
	return r;
}

/* --- Recovery ---------------------------------------------------------- */

struct dead {
	char conv[APTIX_CONV_MAXLEN + 1];
	struct running_rec rec;
	int unreadable;
};

struct dead_list {
	struct dead *v;
	size_t n;
};

static int collect_dead(const void *key, size_t klen, const void *val,
			size_t vlen, void *payload)
{
	struct dead_list *dl = payload;
	struct running_rec rr;
	struct dead *d;
	int bad = aptix__parse_running(&rr, val, vlen) < 0;

	if ((!bad && aptix__process_alive(rr.pid, rr.start, rr.host)) ||
	    klen > APTIX_CONV_MAXLEN) {
		aptix__running_rec_release(&rr);
		return 0;
	}
	d = aptix__realloc(dl->v, (dl->n + 1) * sizeof(*d));
	if (!d) {
		aptix__running_rec_release(&rr);
		return APTIX_ERROR;
	}
	dl->v = d;
	d = &dl->v[dl->n++];
	memcpy(d->conv, key, klen);
	d->conv[klen] = '\0';
	d->rec = rr;
	d->unreadable = bad;
	return 0;
}

static int recover_one(aptix_repo *repo, const struct dead *d)
{
	aptix_turn t;
	aptix_session s;
	aptix_txn *tx = NULL;
	aptix_oid turn_id, sid;
	char msg[200];
	int r;

	if ((r = aptix_txn_new(&tx, repo)) < 0)
		return r;
	if (d->unreadable) {
		r = aptix_txn__running_release(tx, d->conv, &d->rec.turn, 1);
		goto commit;
	}
	if (!d->rec.pending ||
	    aptix_turn_parse(&t, d->rec.pending, strlen(d->rec.pending)) < 0) {
		/* a claim without a readable turn: just release it */
		aptix_error_clear();
		r = aptix_txn__running_release(tx, d->conv, &d->rec.turn, 1);
		goto commit;
	}
	snprintf(msg, sizeof(msg), "interrupted: the process running this "
		 "turn (pid %ld on %s) died before it finished", d->rec.pid,
		 d->rec.host);
	t.status = APTIX_TURN_FAILED;
	t.status_at = aptix_now_ms();
	t.errors = aptix__calloc(1, sizeof(char *));
	if (t.errors && (t.errors[0] = aptix__strdup(msg)))
		t.nerrors = 1;
	aptix_session_init(&s);
	s.conversation = t.conversation;
	s.parent = d->rec.parent;
	s.has_parent = d->rec.has_parent;
	s.status = APTIX_SESSION_FAILED;
	s.created_at = t.status_at;
	s.duration_ms = t.status_at > t.created_at ?
		t.status_at - t.created_at : 0;
	s.session_type = (char *)"agent";
	r = write_turn(&turn_id, tx, &t);
	s.turn = turn_id;
	if (!r)
		r = write_session(&sid, tx, &s);
	if (!r)
		r = aptix_txn__running_release(tx, d->conv, &d->rec.turn, 1);
	aptix_turn_release(&t);
commit:
	if (!r)
		r = aptix_txn_commit(tx);
	aptix_txn_free(tx);
	if (r == APTIX_ENOTFOUND) {
		/* another process recovered it first: nothing to do */
		aptix_error_clear();
		r = 0;
	}
	return r;
}

int aptix_run_recover(aptix_repo *repo, size_t *recovered)
{
	struct dead_list dl = { NULL, 0 };
	size_t i;
	int r;

	if (recovered)
		*recovered = 0;
	r = repo->store->iter(repo->store, APTIX_TABLE_RUNNING, NULL, 0,
			      collect_dead, &dl);
	for (i = 0; !r && i < dl.n; i++) {
		r = recover_one(repo, &dl.v[i]);
		if (!r && recovered)
			(*recovered)++;
	}
	for (i = 0; i < dl.n; i++)
		aptix__running_rec_release(&dl.v[i].rec);
	free(dl.v);
	return r;
}

