/*
 * src/turn/run-commit.c - the two writes of a turn, through the
 * recorder (aptix/record.h, record/record.c), which decides how
 * everything is stored.
 *
 * The first write (aptix_run__claim) stores the instruction blob and
 * claims the conversation: a record in the running table naming the
 * process and holding the pending turn's canonical bytes, so that a
 * crash leaves all that recovery needs to record the turn as failed.
 * The pending turn is not stored as an object: the snapshot that ends
 * the turn stores the final one.
 *
 * The second write (aptix_run__commit) hands the recorder what the run
 * gathered (the context, the payloads) and what it decided (slim or bare
 * fallbacks): it stores the payloads, the turn and the session, releases
 * the claim and, for a completed turn, moves the conversation's ref
 * (compare-and-swap against the parent the turn was planned on) and HEAD
 * when asked.
 */
#include "util/common.h"
#include "repo/repo.h"
#include "turn/run-int.h"
#include "record/record.h"

/* What the recorder is handed of a run: the parts they share. */
static void record_options(aptix_record_options *o, aptix_run *run)
{
	o->turn = &run->turn;
	o->instruction.ptr = run->instruction.ptr;
	o->instruction.len = run->instruction.len;
	o->parent = run->has_parent ? &run->parent : NULL;
	o->parent_conversation = run->has_parent ? run->parent_conv : NULL;
	o->lease_ms = run->lease_ms;
	if (run->new_conv)
		o->flags |= APTIX_RECORD_NEW_CONVERSATION;
	/* the outputs are in the claim already: a crash keeps them */
	o->tool_results = run->trecs;
	o->ntool_results = run->ntool;
}

int aptix_run__claim(aptix_run *run)
{
	aptix_record_options o = APTIX_RECORD_OPTIONS_INIT;
	aptix_record_result res;
	int r;

	record_options(&o, run);
	if ((r = aptix_record_begin(&res, run->repo, &o)) < 0)
		return r;
	run->turn.instruction = res.instruction;
	run->pending = res.turn;
	return 0;
}

/* --- the second write --------------------------------------------------- */

static void drop_context_refs(aptix_turn *t)
{
	size_t i;

	for (i = 0; i < t->nfiles; i++) {
		free(t->files[i].path);
		free(t->files[i].sha256);
	}
	for (i = 0; i < t->nchunks; i++) {
		free(t->chunks[i].chunk_id);
		free(t->chunks[i].path);
		free(t->chunks[i].content_hash);
	}
	free(t->files);
	free(t->chunks);
	t->files = NULL;
	t->chunks = NULL;
	t->nfiles = t->nchunks = 0;
}

/* A message as it can be stored: not UTF-8 (a file name...): a fixed one. */
static const char *storable(const char *msg)
{
	if (msg && aptix_utf8_valid(msg, strlen(msg)))
		return msg;
	return "the turn failed (its error message is not valid UTF-8)";
}

/* Keep only what is known to be storable: no context, UTF-8 texts. */
static int bare_turn(aptix_turn *t)
{
	size_t i;

	drop_context_refs(t);
	aptix__strv_clear(&t->warnings, &t->nwarnings);
	for (i = 0; i < t->nerrors; i++) {
		if (aptix_utf8_valid(t->errors[i], strlen(t->errors[i])))
			continue;
		free(t->errors[i]);
		if (!(t->errors[i] = aptix__strdup(storable(NULL))))
			return APTIX_ERROR;
	}
	return 0;
}

/* The work tree's commit, branch and dirty flag, when the scan had them. */
static int record_worktree(aptix_turn *t, const aptix_file_set *files)
{
	const aptix_worktree *w = &files->worktree;

	free(t->worktree.commit);
	free(t->worktree.branch);
	memset(&t->worktree, 0, sizeof(t->worktree));
	if (!(t->has_worktree = files->has_worktree))
		return 0;
	t->worktree.dirty = w->dirty;
	if ((w->commit && !(t->worktree.commit = aptix__strdup(w->commit))) ||
	    (w->branch && !(t->worktree.branch = aptix__strdup(w->branch))))
		return APTIX_ERROR;
	return 0;
}

/*
 * The file and chunk refs of the turn (owned copies) and, unless the
 * turn is slim, their contents for the recorder (borrowed from the
 * sets: *fc and *ct are allocated, NULL when there is nothing).
 */
static int context_refs(aptix_turn *t, aptix_record_data **fc,
			aptix_record_data **ct, const aptix_file_set *files,
			const aptix_chunk_set *chunks, int slim)
{
	size_t i;
	int r;

	drop_context_refs(t);
	if ((r = record_worktree(t, files)) < 0)
		return r;
	if ((files->n && !(t->files = aptix__calloc(files->n,
						    sizeof(*t->files)))) ||
	    (!slim && files->n && !(*fc = aptix__calloc(files->n,
							sizeof(**fc)))) ||
	    (chunks->n && !(t->chunks = aptix__calloc(chunks->n,
						      sizeof(*t->chunks)))) ||
	    (!slim && chunks->n && !(*ct = aptix__calloc(chunks->n,
							 sizeof(**ct)))))
		return APTIX_ERROR;
	for (i = 0; i < files->n; i++) {
		const aptix_active_file *f = &files->v[i];
		aptix_file_ref *fr = &t->files[t->nfiles];

		if (f->action == APTIX_FILE_UNREADABLE ||
		    f->action == APTIX_FILE_WITHHELD)
			continue;
		fr->size = f->size;
		fr->touched = f->touched;
		fr->sent = f->action == APTIX_FILE_SEND;
		fr->too_large = f->action == APTIX_FILE_TOO_LARGE;
		fr->binary = f->action == APTIX_FILE_BINARY;
		if (*fc && !f->too_large) {
			(*fc)[t->nfiles].ptr = f->content.ptr;
			(*fc)[t->nfiles].len = f->content.len;
		}
		t->nfiles++;
		if (!(fr->path = aptix__strdup(f->path)) ||
		    !(fr->sha256 = aptix__strdup(f->sha256)))
			return APTIX_ERROR;
	}
	for (i = 0; i < chunks->n; i++) {
		const aptix_rag_chunk *c = &chunks->v[i];
		aptix_chunk_ref *cr = &t->chunks[i];

		cr->start_line = c->start_line;
		cr->end_line = c->end_line;
		cr->score = (long)(c->score * 1e6 + (c->score < 0 ? -0.5 :
							    0.5));
		cr->sent = c->sent;
		t->nchunks++;
		if (*ct) {
			(*ct)[i].ptr = c->text.ptr;
			(*ct)[i].len = c->text.len;
		}
		if (!(cr->chunk_id = aptix__strdup(c->chunk_id)) ||
		    !(cr->path = aptix__strdup(c->path)) ||
		    !(cr->content_hash = aptix__strdup(c->content_hash)))
			return APTIX_ERROR;
	}
	return 0;
}

static void set_data(aptix_record_data *d, const aptix_buf *b)
{
	d->ptr = b->ptr ? b->ptr : "";
	d->len = b->len;
}

int aptix_run__commit(aptix_run *run, int completed)
{
	aptix_record_options o = APTIX_RECORD_OPTIONS_INIT;
	aptix_run_result *res = &run->res;
	aptix_turn *t = &run->turn;
	aptix_record_data *fc = NULL, *ct = NULL;
	aptix_record_result rr;
	int r;

	t->status = completed ? APTIX_TURN_COMPLETED : APTIX_TURN_FAILED;
	if (run->bare)
		r = bare_turn(t);
	else
		r = context_refs(t, &fc, &ct, &run->files, &run->chunks,
				 run->slim);
	if (r < 0)
		goto done;
	record_options(&o, run);
	o.file_contents = fc;
	o.chunk_texts = ct;
	if (!run->slim) {
		/* a failed turn keeps the text that did arrive */
		if (completed || res->api.text.len)
			set_data(&o.answer, &res->api.text);
		if (res->api.raw.len)
			set_data(&o.response, &res->api.raw);
		if (res->request.len)
			set_data(&o.request, &res->request);
	}
	if (completed) {
		o.tool_calls = res->api.calls;
		o.ntool_calls = res->api.ncalls;
	}
	o.transport = run->o.no_stream ? "http" : "sse";
	o.verb = run->o.kind == APTIX_RUN_FORK ? "fork" :
		run->o.kind == APTIX_RUN_RERUN ? "rerun" : "continue";
	o.pending = &run->pending;
	if (run->o.switch_head)
		o.flags |= APTIX_RECORD_SWITCH_HEAD;
	if ((r = aptix_record__commit(&rr, run->repo, &o, &run->chain)) < 0)
		goto done;
	res->turn = rr.turn;
	res->session = rr.session;
done:
	free(fc);
	free(ct);
	return r;
}

/* --- recovery ----------------------------------------------------------- */

int aptix_run_recover(aptix_repo *repo, size_t *recovered)
{
	return aptix_record_recover(repo, recovered);
}
