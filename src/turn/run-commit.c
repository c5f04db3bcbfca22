/*
 * src/turn/run-commit.c - the two writes of a turn, and the recovery of turns
 * whose process died.
 *
 * The first write (aptix_run__claim) stores the instruction blob and
 * claims the conversation: a record in the running table naming the
 * process and holding the pending turn's canonical bytes, so that a
 * crash leaves all that recovery needs to record the turn as failed.
 * The pending turn is not stored as an object: the snapshot that ends
 * the turn stores the final one.
 *
 * The second write (aptix_run__commit) stores the payloads, the turn and
 * the session, releases the claim and, for a completed turn, moves the
 * conversation's ref (compare-and-swap against the parent the turn was
 * planned on) and HEAD when asked.
 */
#include "util/common.h"
#include "repo/repo.h"
#include "txn/txn.h"
#include "turn/run-int.h"
#include "repo/running.h"
#include "aptix/refs.h"
#include "aptix/index.h"
#include <jansson.h>
#include <unistd.h>

#define TITLE_MAX 72

static int write_blob(aptix_oid *id, aptix_txn *tx, const void *data,
		      size_t len)
{
	return aptix_txn_write_object(id, tx, APTIX_OBJ_BLOB, data, len);
}

/*
 * Objects of a turn are stored deflated against their counterparts in
 * the parent's turn when that saves enough (objects-format.md, "Based
 * values"): like is that counterpart, NULL when there is none.
 */
static int write_turn(aptix_oid *id, aptix_txn *tx, const aptix_turn *t,
		      const aptix_oid *like)
{
	aptix_buf b = APTIX_BUF_INIT;
	int r = aptix_turn_serialize(&b, t);

	if (!r)
		r = aptix_txn__write_built(id, tx, APTIX_OBJ_TURN, b.ptr,
					   b.len, like, NULL);
	aptix_buf_release(&b);
	return r;
}

/* s names t, the turn just written */
static int write_session(aptix_oid *id, aptix_txn *tx,
			 const aptix_session *s, const aptix_turn *t,
			 int fresh)
{
	aptix_buf b = APTIX_BUF_INIT;
	int r = aptix_session_serialize(&b, s);

	if (!r)
		r = aptix_txn__write_built(id, tx, APTIX_OBJ_SESSION, b.ptr,
					   b.len, s->has_parent && !fresh ?
					   &s->parent : NULL, t);
	aptix_buf_release(&b);
	return r;
}

/*
 * Every REBASE_EVERY-th turn of a conversation is stored without bases:
 * each value is stored against its counterpart's base (a base is never
 * based), so without a fresh one now and then every turn would be
 * deflated against the conversation's first, an ever older dictionary.
 */
#define REBASE_EVERY 16

/* The parent's turn (the newest committed ancestor's), or NULL. */
static const struct aptix__past *parent_turn(aptix_run *run)
{
	const struct aptix__past *p;

	if (!run->has_parent || aptix__chain_get(&p, &run->chain, 0) < 0) {
		aptix_error_clear();
		return NULL;
	}
	return p;
}

/* The content of path in the parent's turn, if it kept it. */
static const aptix_oid *like_file(const struct aptix__past *prev,
				  const char *path)
{
	size_t i;

	for (i = 0; prev && i < prev->turn.nfiles; i++)
		if (prev->turn.files[i].has_content &&
		    !strcmp(prev->turn.files[i].path, path))
			return &prev->turn.files[i].content;
	return NULL;
}

static const aptix_oid *like_id(const aptix_oid *id)
{
	return id && !aptix_oid_is_zero(id) ? id : NULL;
}

/* --- the first write ---------------------------------------------------- */

static int running_record(aptix_buf *out, aptix_oid *turn_id,
			  const aptix_run *run)
{
	aptix_buf bytes = APTIX_BUF_INIT;
	json_t *o;
	char host[65];
	char *s;
	int r;

	if ((r = aptix_turn_serialize(&bytes, &run->turn)) < 0 ||
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
	json_object_set_new(o, "since", json_integer(run->started));
	/* a lease, renewed while the turn runs (run-lease.c) */
	json_object_set_new(o, "renewed", json_integer(aptix__wall_ms()));
	json_object_set_new(o, "lease", json_integer(run->lease_ms));
	json_object_set_new(o, "turn", json_string(aptix_oid_hex(turn_id)));
	json_object_set_new(o, "instruction",
			    json_string(aptix_oid_hex(&run->turn.instruction)));
	json_object_set_new(o, "pending", json_stringn(bytes.ptr,
						       bytes.len));
	if (run->has_parent)
		json_object_set_new(o, "parent",
				    json_string(aptix_oid_hex(&run->parent)));
	aptix_buf_release(&bytes);
	s = json_dumps(o, JSON_COMPACT | JSON_SORT_KEYS);
	json_decref(o);
	if (!s)
		return aptix_error_oom();
	r = aptix_buf_set(out, s, strlen(s));
	free(s);
	return r;
}

int aptix_run__claim(aptix_run *run)
{
	aptix_txn *tx = NULL;
	aptix_buf rec = APTIX_BUF_INIT, ref = APTIX_BUF_INIT;
	int r;

	aptix_buf_printf(&ref, "%s%s", APTIX_CONV_PREFIX, run->conv);
	if ((r = aptix_txn_new(&tx, run->repo)) < 0 ||
	    (r = write_blob(&run->turn.instruction, tx, run->instruction.ptr,
			    run->instruction.len)) < 0 ||
	    (r = running_record(&rec, &run->pending, run)) < 0 ||
	    (r = aptix_txn__running_claim(tx, run->conv, rec.ptr)) < 0 ||
	    /* the head this turn was planned on must still be the head */
	    (r = aptix_txn__ref_verify(tx, ref.ptr, run->new_conv ? NULL :
				       run->has_parent ? &run->parent :
				       NULL)) < 0)
		goto done;
	r = aptix_txn_commit(tx);
	if (r == APTIX_EEXISTS) {
		/* a dead process left a claim: recover it, then retry */
		if ((r = aptix_run_recover(run->repo, NULL)) < 0)
			goto done;
		r = aptix_txn_commit(tx);
	}
	if (r == APTIX_EMISMATCH) {
		aptix_error_set(APTIX_ERROR_REPOSITORY, "conversation '%s' is "
				"busy: another turn moved its head just now; "
				"run this one again", run->conv);
		r = APTIX_ELOCKED;
	}
done:
	aptix_txn_free(tx);
	aptix_buf_release(&rec);
	aptix_buf_release(&ref);
	return r;
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
 * The file and chunk refs of the turn (owned copies), with their content
 * stored as blobs in tx (the same content is one object).
 */
static int record_context(aptix_turn *t, aptix_txn *tx,
			  const aptix_file_set *files,
			  const aptix_chunk_set *chunks, int slim,
			  const struct aptix__past *prev)
{
	size_t i;
	int r;

	drop_context_refs(t);
	if ((r = record_worktree(t, files)) < 0)
		return r;
	if (files->n && !(t->files = aptix__calloc(files->n,
						   sizeof(*t->files))))
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
		t->nfiles++;
		if (!(fr->path = aptix__strdup(f->path)) ||
		    !(fr->sha256 = aptix__strdup(f->sha256)))
			return APTIX_ERROR;
		if (!f->too_large && !slim) {
			if ((r = aptix_txn_write_object_like(&fr->content, tx,
					APTIX_OBJ_BLOB, f->content.ptr,
					f->content.len,
					like_file(prev, f->path))) < 0)
				return r;
			fr->has_content = 1;
		}
	}
	if (chunks->n && !(t->chunks = aptix__calloc(chunks->n,
						     sizeof(*t->chunks))))
		return APTIX_ERROR;
	for (i = 0; i < chunks->n; i++) {
		const aptix_rag_chunk *c = &chunks->v[i];
		aptix_chunk_ref *cr = &t->chunks[i];

		cr->start_line = c->start_line;
		cr->end_line = c->end_line;
		cr->score = (long)(c->score * 1e6 + (c->score < 0 ? -0.5 :
							    0.5));
		cr->sent = c->sent;
		t->nchunks++;
		if (!(cr->chunk_id = aptix__strdup(c->chunk_id)) ||
		    !(cr->path = aptix__strdup(c->path)) ||
		    !(cr->content_hash = aptix__strdup(c->content_hash)))
			return APTIX_ERROR;
		if (!slim && (r = write_blob(&cr->snippet, tx, c->text.ptr,
					     c->text.len)) < 0)
			return r;
	}
	return 0;
}

/*
 * The payloads: raw request and response, and the answer. The answer
 * is written first, and the response is stored spliced against it (the
 * answer's text is in the response once, not twice); the request against
 * the instruction, the files and the snippets it carries.
 */
static int record_payloads(aptix_turn *t, aptix_txn *tx,
			   const aptix_run_result *res, int completed,
			   const struct aptix__past *prev)
{
	aptix_oid *bases;
	size_t i, n = 0;
	int r = 0;

	memset(&t->request, 0, sizeof(t->request));
	memset(&t->response, 0, sizeof(t->response));
	memset(&t->answer, 0, sizeof(t->answer));
	if (!(bases = aptix__calloc(2 + t->nfiles + t->nchunks,
				    sizeof(*bases))))
		return APTIX_ERROR;
	/* a failed turn keeps the text that did arrive */
	if ((completed || res->api.text.len) &&
	    (r = aptix_txn_write_object_like(&t->answer, tx, APTIX_OBJ_BLOB,
					     res->api.text.ptr,
					     res->api.text.len, prev ?
					     like_id(&prev->turn.answer) :
					     NULL)) < 0)
		goto done;
	if (res->api.text.len)
		bases[n++] = t->answer;
	if (res->api.raw.len &&
	    (r = aptix_txn_write_blob_against(&t->response, tx,
					      res->api.raw.ptr,
					      res->api.raw.len, bases, n,
					      prev ? like_id(&prev->turn.response)
					      : NULL)) < 0)
		goto done;
	n = 0;
	bases[n++] = t->instruction;
	for (i = 0; i < t->nfiles; i++)
		if (t->files[i].has_content)
			bases[n++] = t->files[i].content;
	for (i = 0; i < t->nchunks; i++)
		if (!aptix_oid_is_zero(&t->chunks[i].snippet))
			bases[n++] = t->chunks[i].snippet;
	if (res->request.len)
		r = aptix_txn_write_blob_against(&t->request, tx,
						 res->request.ptr,
						 res->request.len, bases, n,
						 prev ?
						 like_id(&prev->turn.request) :
						 NULL);
done:
	free(bases);
	return r;
}

/* The session snapshot of the turn (owned strings). */
static int make_session(aptix_session *s, const aptix_run *run,
			const char *title, int completed)
{
	const aptix_turn *t = &run->turn;

	aptix_session_init(s);
	s->parent = run->parent;
	s->has_parent = run->has_parent;
	s->status = completed ? APTIX_SESSION_COMMITTED :
		APTIX_SESSION_FAILED;
	s->created_at = aptix_now_ms();
	s->duration_ms = s->created_at > run->started ?
		s->created_at - run->started : 0;
	s->usage = t->usage;
	s->conversation = aptix__strdup(run->conv);
	s->session_type = aptix__strdup("agent");
	s->transport = aptix__strdup(run->o.no_stream ? "http" : "sse");
	if (!s->conversation || !s->session_type || !s->transport)
		return APTIX_ERROR;
	if (t->workspace && !(s->workspace = aptix__strdup(t->workspace)))
		return APTIX_ERROR;
	/* roots and forks carry the conversation's title */
	if (!run->has_parent || strcmp(run->parent_conv, run->conv)) {
		if (!(s->title = aptix__strdup(title)))
			return APTIX_ERROR;
		if (run->has_parent &&
		    !(s->forked_from = aptix__strdup(run->parent_conv)))
			return APTIX_ERROR;
	}
	return 0;
}

static int move_ref(aptix_txn *tx, const aptix_run *run, const char *title)
{
	aptix_buf ref = APTIX_BUF_INIT, reason = APTIX_BUF_INIT;
	aptix_oid zero;
	int r;

	memset(&zero, 0, sizeof(zero));
	aptix_buf_printf(&ref, "%s%s", APTIX_CONV_PREFIX, run->conv);
	aptix_buf_printf(&reason, "%s: %.60s",
			 run->o.kind == APTIX_RUN_FORK ? "fork" :
			 run->o.kind == APTIX_RUN_RERUN ? "rerun" :
			 "continue", title[0] ? title : "turn");
	r = aptix_txn_ref_update(tx, ref.ptr, &run->res.session,
				 run->new_conv || !run->has_parent ? &zero :
				 &run->parent, reason.ptr);
	if (!r && run->o.switch_head)
		r = aptix_txn_symref_update(tx, "HEAD", ref.ptr, reason.ptr);
	aptix_buf_release(&ref);
	aptix_buf_release(&reason);
	return r;
}

int aptix_run__commit(aptix_run *run, int completed)
{
	aptix_run_result *res = &run->res;
	aptix_turn *t = &run->turn;
	const struct aptix__past *prev = parent_turn(run);
	/* what this turn's objects are stored against: see REBASE_EVERY */
	const struct aptix__past *like = t->seq % REBASE_EVERY ? prev : NULL;
	aptix_session s;
	aptix_txn *tx = NULL;
	char title[TITLE_MAX + 1];
	int r;

	/* the first line of the instruction: title and reflog reason */
	aptix_summary_line(title, TITLE_MAX, run->instruction.ptr,
			   run->instruction.len);
	t->status = completed ? APTIX_TURN_COMPLETED : APTIX_TURN_FAILED;
	if ((r = make_session(&s, run, title, completed)) < 0 ||
	    (r = aptix_txn_new(&tx, run->repo)) < 0)
		goto done;
	if (run->slim) {
		memset(&t->request, 0, sizeof(t->request));
		memset(&t->response, 0, sizeof(t->response));
		memset(&t->answer, 0, sizeof(t->answer));
	}
	if (run->bare) {
		if ((r = bare_turn(t)) < 0)
			goto done;
	} else if ((r = record_context(t, tx, &run->files, &run->chunks,
				       run->slim, like)) < 0)
		goto done;
	/* after the context: the request is spliced against its blobs */
	if (!run->slim && (r = record_payloads(t, tx, res, completed,
					       like)) < 0)
		goto done;
	if ((r = write_turn(&res->turn, tx, t, like ? &like->turn_id :
			    NULL)) < 0)
		goto done;
	s.turn = res->turn;
	if ((r = write_session(&res->session, tx, &s, t, !like)) < 0 ||
	    (r = aptix_txn__running_release(tx, run->conv, &run->pending,
					     0)) < 0)
		goto done;
	if (completed && (r = move_ref(tx, run, title)) < 0)
		goto done;
	r = aptix_txn_commit(tx);
done:
	aptix_session_release(&s);
	aptix_txn_free(tx);
	return r;
}

/* --- recovery ----------------------------------------------------------- */

struct dead {
	char conv[APTIX_CONV_MAXLEN + 1];
	struct running_rec rec;
	int unreadable;
	char why[96];		/* how its holder went */
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
	char why[96] = "died";
	int bad = aptix__parse_running(&rr, val, vlen) < 0;

	if ((!bad && aptix__claim_alive(&rr, aptix__wall_ms(), why,
					sizeof(why))) ||
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
	snprintf(d->why, sizeof(d->why), "%s", why);
	return 0;
}

/* The failed snapshot of a turn whose process died. */
static int record_dead(aptix_txn *tx, const struct dead *d, aptix_turn *t)
{
	aptix_session s;
	aptix_oid turn_id, sid;
	char msg[320];
	int r;

	snprintf(msg, sizeof(msg), "interrupted: the process running this "
		 "turn (pid %ld on %s) %s before it finished", d->rec.pid,
		 d->rec.host, d->why);
	t->status = APTIX_TURN_FAILED;
	t->status_at = aptix_now_ms();
	aptix__strv_clear(&t->errors, &t->nerrors);
	if (aptix__strv_push(&t->errors, &t->nerrors, msg) < 0)
		return APTIX_ERROR;
	aptix_session_init(&s);
	s.parent = d->rec.parent;
	s.has_parent = d->rec.has_parent;
	s.status = APTIX_SESSION_FAILED;
	s.created_at = t->status_at;
	s.duration_ms = t->status_at > t->created_at ?
		t->status_at - t->created_at : 0;
	s.conversation = aptix__strdup(t->conversation);
	s.session_type = aptix__strdup("agent");
	if (!s.conversation || !s.session_type)
		r = APTIX_ERROR;
	else if ((r = write_turn(&turn_id, tx, t, NULL)) == 0) {
		s.turn = turn_id;
		r = write_session(&sid, tx, &s, t, 0);
	}
	aptix_session_release(&s);
	return r;
}

static int recover_one(aptix_repo *repo, const struct dead *d)
{
	aptix_turn t;
	aptix_txn *tx = NULL;
	int r;

	if ((r = aptix_txn_new(&tx, repo)) < 0)
		return r;
	aptix_turn_init(&t);
	if (!d->unreadable && d->rec.pending &&
	    aptix_turn_parse(&t, d->rec.pending, strlen(d->rec.pending)) == 0)
		r = record_dead(tx, d, &t);
	else
		aptix_error_clear();	/* no readable turn: just release */
	aptix_turn_release(&t);
	if (!r)
		r = aptix_txn__running_release(tx, d->conv, &d->rec.turn, 1);
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
