/*
 * src/run-request.c - what a turn sends: the context planned against
 * what its response chain already holds, and the Responses API request
 * body (model, instructions, input, previous_response_id while the chain
 * is alive, else the context rehydrated from the store).
 */
#include "common.h"
#include "repo.h"
#include "run-int.h"
#include "aptix/index.h"
#include <jansson.h>

#define DEFAULT_INSTRUCTIONS "You are a coding assistant working on the " \
	"user's repository. Answer precisely; when you change code, show " \
	"the complete changed files or unified diffs."

/* Files and chunks holding an API key are neither sent nor stored. */
static void drop_secrets(aptix_run *run)
{
	aptix_file_set *files = &run->files;
	aptix_chunk_set *chunks = &run->chunks;
	size_t i, j;

	for (i = 0; i < files->n; i++) {
		aptix_active_file *f = &files->v[i];

		if (!f->content.len ||
		    !aptix_run__holds_secret(run, f->content.ptr,
					     f->content.len))
			continue;
		aptix_buf_release(&f->content);
		f->action = APTIX_FILE_UNREADABLE;
		aptix_run__add_warning(run, "active file '%s' holds an API "
				       "key: neither sent nor stored",
				       f->path);
	}
	for (i = j = 0; i < chunks->n; i++) {
		aptix_rag_chunk *c = &chunks->v[i];

		if (aptix_run__holds_secret(run, c->text.ptr, c->text.len)) {
			aptix_run__add_warning(run, "a chunk of '%s' holds an "
					       "API key: neither sent nor "
					       "stored", c->path);
			free(c->chunk_id);
			free(c->repo);
			free(c->path);
			free(c->language);
			aptix_buf_release(&c->text);
			continue;
		}
		chunks->v[j++] = *c;
	}
	chunks->n = j;
}

int aptix_run__plan_context(aptix_run *run)
{
	const aptix_file_set *files = &run->files;
	const aptix_chunk_set *chunks = &run->chunks;
	size_t i;
	int r;

	drop_secrets(run);
	if ((r = aptix__chain_plan(&run->chain, run->restart, &run->files,
				   &run->chunks)) < 0)
		return r;
	for (i = 0; i < files->nwarnings; i++)
		aptix_run__add_warning(run, "%s", files->warnings[i]);
	for (i = 0; i < files->n; i++) {
		const aptix_active_file *f = &files->v[i];

		if (f->action == APTIX_FILE_TOO_LARGE)
			aptix_run__add_warning(run, "active file '%s' is too "
					       "large to send (%ld bytes, over "
					       "files.max-size): skipped",
					       f->path, f->size);
		else if (f->action == APTIX_FILE_BINARY)
			aptix_run__add_warning(run, "active file '%s' is "
					       "binary: skipped", f->path);
	}
	for (i = 0; i < chunks->nwarnings; i++)
		aptix_run__add_warning(run, "%s", chunks->warnings[i]);
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

/* Bytes of a blob, from its header (0 when unreadable). */
static size_t blob_size(aptix_repo *repo, const aptix_oid *id)
{
	aptix_otype type;
	size_t sz = 0;

	if (aptix_oid_is_zero(id) ||
	    aptix_odb_read_header(&sz, &type, repo->odb, id) < 0)
		return 0;
	return sz;
}

/* The committed ancestors, all of them (a new chain needs the history). */
static int history_len(size_t *n, aptix_run *run)
{
	const struct aptix__past *p;
	int r;

	*n = 0;
	while ((r = aptix__chain_get(&p, &run->chain, *n)) == 0)
		(*n)++;
	return r == APTIX_ITEROVER ? 0 : r;
}

/* One turn of the history: newest first, i < history_len. */
static const aptix_turn *past(aptix_run *run, size_t i)
{
	const struct aptix__past *p;

	return aptix__chain_get(&p, &run->chain, i) == 0 ? &p->turn : NULL;
}

/*
 * The context of a new chain: a rolling summary of the older turns (an
 * engine-written digest: the start of each instruction and answer), then
 * the most recent turns verbatim, within the configured limits.
 */
static int rehydrate(json_t *input, aptix_run *run)
{
	aptix_buf summary = APTIX_BUF_INIT, a = APTIX_BUF_INIT,
		  b = APTIX_BUF_INIT;
	aptix_repo *repo = run->repo;
	size_t i, n, window = 0, chars = 0;
	int r;

	run->rehydrated = 0;
	if ((r = history_len(&n, run)) < 0)
		return r;
	/* how many recent turns fit the window, newest first */
	for (i = 0; i < n && window < (size_t)run->window_turns; i++) {
		const aptix_turn *t = past(run, i);
		size_t sz = blob_size(repo, &t->instruction) +
			blob_size(repo, &t->answer);

		if (window && chars + sz > (size_t)run->window_chars)
			break;
		chars += sz;
		window++;
	}
	/* older turns, oldest first, go into the summary */
	for (i = n; i > window; i--) {
		const aptix_turn *t = past(run, i - 1);
		char line[241];

		if (summary.len >= (size_t)run->summary_chars)
			break;
		if (aptix_blob_lookup(&a, repo, &t->instruction) < 0)
			continue;
		aptix_summary_line(line, 200, a.ptr, a.len);
		aptix_buf_printf(&summary, "- Turn %ld asked: %s\n", t->seq,
				 line);
		if (!aptix_oid_is_zero(&t->answer) &&
		    aptix_blob_lookup(&a, repo, &t->answer) == 0) {
			aptix_summary_line(line, 240, a.ptr, a.len);
			aptix_buf_printf(&summary, "  Answer began: %s\n",
					 line);
		}
	}
	aptix_error_clear();
	if (summary.len > (size_t)run->summary_chars)
		aptix_buf_truncate(&summary,
				   aptix_utf8_cut(summary.ptr, summary.len,
						  (size_t)run->summary_chars));
	if (summary.len) {
		aptix_buf_printf(&b, "Summary of the earlier turns of this "
				 "conversation (the previous responses are "
				 "no longer available):\n%s", summary.ptr);
		add_text(input, "user", b.ptr, b.len);
	}
	for (i = window; i > 0; i--) {
		const aptix_turn *t = past(run, i - 1);

		if ((r = aptix_blob_lookup(&a, repo, &t->instruction)) < 0)
			break;
		add_text(input, "user", a.ptr, a.len);
		if (!aptix_oid_is_zero(&t->answer)) {
			if ((r = aptix_blob_lookup(&a, repo, &t->answer)) < 0)
				break;
			add_text(input, "assistant", a.ptr, a.len);
		}
		run->rehydrated++;
	}
	run->rehydrated += n - window;
	aptix_buf_release(&summary);
	aptix_buf_release(&a);
	aptix_buf_release(&b);
	return r;
}

static int set_temperature(json_t *req, const aptix_config *cfg)
{
	double t;
	int r = aptix_config_double(&t, cfg, "openai.temperature");

	if (r == APTIX_ENOTFOUND) {	/* unset: the model's default */
		aptix_error_clear();
		return 0;
	}
	if (r == 0)
		json_object_set_new(req, "temperature", json_real(t));
	return r;
}

int aptix_run__build_request(aptix_run *run)
{
	const aptix_config *cfg = run->o.cfg;
	const char *instr = cfg ? aptix_config_get(cfg, "openai.instructions") :
		NULL;
	json_t *req = json_object(), *input = json_array();
	aptix_buf text = APTIX_BUF_INIT;
	char *s = NULL;
	int r = 0;

	if (!req || !input) {
		json_decref(req);
		json_decref(input);
		return aptix_error_oom();
	}
	if (run->restart) {
		run->turn.chain_restarted = 1;
		free(run->previous);
		run->previous = NULL;
	}
	json_object_set_new(req, "model", json_string(run->model));
	if (!instr)
		instr = DEFAULT_INSTRUCTIONS;
	if (*instr)
		json_object_set_new(req, "instructions", json_string(instr));
	if (run->previous)
		json_object_set_new(req, "previous_response_id",
				    json_string(run->previous));
	else if (run->restart && run->has_parent)
		r = rehydrate(input, run);
	if (!r)
		r = aptix_context_render(&text, &run->files, &run->chunks);
	aptix_buf_put(&text, run->instruction.ptr, run->instruction.len);
	add_text(input, "user", text.ptr, text.len);
	json_object_set_new(req, "input", input);
	if (!r)
		r = set_temperature(req, cfg);
	json_object_set_new(req, "store", json_true());
	json_object_set_new(req, "stream", json_boolean(!run->o.no_stream));
	if (!r && !(s = json_dumps(req, JSON_COMPACT | JSON_PRESERVE_ORDER)))
		r = aptix_error_oom();
	json_decref(req);
	aptix_buf_release(&text);
	if (r < 0)
		return r;
	r = aptix_buf_set(&run->res.request, s, strlen(s));
	free(s);
	return r;
}
