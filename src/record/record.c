/*
 * src/record/record.c - the recorder (see aptix/record.h): the one place that
 * turns a turn's content into objects, a snapshot, index records, a ref
 * move and its reflog entry, and decides how each value is stored
 * (against which base, spliced against which blobs). The run pipeline
 * (run-commit.c), the write-turn and commit-session plumbing and every
 * importer call it, so that the same content is stored the same way
 * whoever writes it.
 *
 * Also here: the claim of a turn that waits on the network (the running
 * table's record holding the pending turn) and the recovery of claims
 * whose process died, which records their turns as failed through the
 * same path.
 */
#include "util/common.h"
#include "repo/repo.h"
#include "repo/running.h"
#include "object/object.h"
#include "txn/txn.h"
#include "record/record.h"
#include "util/cjson.h"
#include "aptix/refs.h"
#include "aptix/index.h"
#include "aptix/sys/claims_backend.h"
#include <jansson.h>
#include <unistd.h>

#define TITLE_MAX 72

/*
 * Every REBASE_EVERY-th turn of a conversation is stored without bases:
 * each value is stored against its counterpart's base (a base is never
 * based), so without a fresh one now and then every turn would be
 * deflated against the conversation's first, an ever older dictionary.
 * It also bounds what a lost base takes with it: the values of at most
 * REBASE_EVERY - 1 later turns (issue 21: every 8th instead of every
 * 16th cut the sessions a lost page of a 30-turn store takes from 7.9
 * to 6.3 on average, 15 to 10 at most, for no measurable size).
 */
#define REBASE_EVERY 8

/* One recording: what the options say, and what was read to do it. */
struct rec {
	const aptix_record_options *o;
	aptix_repo *repo;
	aptix_txn *tx;
	struct aptix__chain *chain;	/* the parent's ancestors */
	struct aptix__chain own_chain;	/* ... when the caller had none */
	const struct aptix__past *prev;	/* the newest committed one */
	const struct aptix__past *like;	/* what objects are stored
					   against: prev, or NULL */
	const char *parent_conv;	/* NULL: a root */
	aptix_session psess;		/* the parent, when read for it */
	aptix_turn t;			/* the turn written (owned copy) */
	aptix_oid turn_id;
	char title[TITLE_MAX + 1];
};

static int check_options(const aptix_record_options *o)
{
	if (!o || o->version < 1 || o->version > APTIX_RECORD_OPTIONS_VERSION) {
		aptix_error_set(APTIX_ERROR_INVALID, "record options of an "
				"unknown version");
		return APTIX_EINVALID;
	}
	if (!o->turn && !o->session) {
		aptix_error_set(APTIX_ERROR_INVALID, "nothing to record: "
				"neither a turn nor a session");
		return APTIX_EINVALID;
	}
	if (o->session && (o->session->has_parent != (o->parent != NULL) ||
			   (o->parent && aptix_oid_cmp(o->parent,
						       &o->session->parent)))) {
		aptix_error_set(APTIX_ERROR_INVALID, "the parent to record "
				"against is not the session's parent");
		return APTIX_EINVALID;
	}
	return 0;
}

static int rec_init(struct rec *rc, aptix_repo *repo,
		    const aptix_record_options *o, struct aptix__chain *chain)
{
	memset(rc, 0, sizeof(*rc));
	rc->o = o;
	rc->repo = repo;
	aptix_session_init(&rc->psess);
	aptix_turn_init(&rc->t);
	aptix__chain_init(&rc->own_chain, repo, o->parent);
	rc->chain = chain ? chain : &rc->own_chain;
	return o->turn ? aptix__turn_copy(&rc->t, o->turn) : 0;
}

static void rec_release(struct rec *rc)
{
	aptix__chain_release(&rc->own_chain);
	aptix_session_release(&rc->psess);
	aptix_turn_release(&rc->t);
}

/* The parent's conversation (NULL for a root). */
static int read_parent_conv(struct rec *rc)
{
	const aptix_record_options *o = rc->o;
	int r;

	rc->parent_conv = NULL;
	if (!o->parent)
		return 0;
	rc->parent_conv = o->parent_conversation ? o->parent_conversation :
		rc->chain->start_conv;
	if (rc->parent_conv)
		return 0;
	if ((r = aptix__chain_session(&rc->psess, rc->chain, o->parent)) < 0)
		return r == APTIX_ENOTFOUND || r == APTIX_EINVALID ?
			APTIX_EINVALID : r;
	rc->parent_conv = rc->psess.conversation;
	return 0;
}

/*
 * The parent's newest committed ancestor, the counterpart of this turn's
 * objects (none is not an error), and the parent's conversation.
 */
static int read_parent(struct rec *rc)
{
	if (!rc->o->parent)
		return 0;
	if (aptix__chain_get(&rc->prev, rc->chain, 0) < 0) {
		aptix_error_clear();
		rc->prev = NULL;
	}
	return read_parent_conv(rc);
}

/* seq 0: the parent's turn's seq + 1 (1 for a root). */
static int derive_seq(struct rec *rc)
{
	aptix_turn pt;
	int r;

	if (rc->t.seq)
		return 0;
	rc->t.seq = 1;
	if (!rc->o->parent)
		return 0;
	if (rc->prev && !aptix_oid_cmp(&rc->prev->session, rc->o->parent)) {
		rc->t.seq = rc->prev->turn.seq + 1;
		return 0;
	}
	if (!rc->psess.conversation &&
	    (r = aptix__chain_session(&rc->psess, rc->chain,
				      rc->o->parent)) < 0)
		return r;
	if ((r = aptix__chain_turn(&pt, rc->chain, &rc->psess.turn)) == 0)
		rc->t.seq = pt.seq + 1;
	aptix_turn_release(&pt);
	return r;
}

/* Whether the parent is of another conversation: a root or a fork. */
static int starts_conversation(const struct rec *rc, const char *conv)
{
	return !rc->parent_conv || !conv || strcmp(rc->parent_conv, conv);
}

/* --- the blobs of a turn ------------------------------------------------ */

static const aptix_oid *like_id(const aptix_oid *id)
{
	return id && !aptix_oid_is_zero(id) ? id : NULL;
}

/* The content of path in the counterpart turn, if it kept it. */
static const aptix_oid *like_file(const struct aptix__past *like,
				  const char *path)
{
	size_t i;

	for (i = 0; like && i < like->turn.nfiles; i++)
		if (like->turn.files[i].has_content &&
		    !strcmp(like->turn.files[i].path, path))
			return &like->turn.files[i].content;
	return NULL;
}

static int given(const aptix_record_data *d)
{
	return d && d->ptr;
}

/* The files' contents and the chunks' texts (the same content is one
 * object). */
static int record_context(struct rec *rc)
{
	const aptix_record_options *o = rc->o;
	aptix_turn *t = &rc->t;
	size_t i;
	int r;

	for (i = 0; o->file_contents && i < t->nfiles; i++) {
		aptix_file_ref *fr = &t->files[i];

		if (!given(&o->file_contents[i]))
			continue;
		if ((r = aptix_txn_write_object_like(&fr->content, rc->tx,
				APTIX_OBJ_BLOB, o->file_contents[i].ptr,
				o->file_contents[i].len,
				like_file(rc->like, fr->path))) < 0)
			return r;
		fr->has_content = 1;
	}
	for (i = 0; o->chunk_texts && i < t->nchunks; i++)
		if (given(&o->chunk_texts[i]) &&
		    (r = aptix_txn_write_object(&t->chunks[i].snippet, rc->tx,
						APTIX_OBJ_BLOB,
						o->chunk_texts[i].ptr,
						o->chunk_texts[i].len)) < 0)
			return r;
	return 0;
}

/*
 * The payloads: raw request and response, and the answer. The answer
 * is written first, and the response is stored spliced against it (the
 * answer's text is in the response once, not twice); the request against
 * the instruction, the files and the snippets it carries.
 */
static int record_payloads(struct rec *rc)
{
	const aptix_record_options *o = rc->o;
	const aptix_turn *lt = rc->like ? &rc->like->turn : NULL;
	aptix_turn *t = &rc->t;
	aptix_oid *bases;
	size_t i, n = 0;
	int r = 0;

	if (!(bases = aptix__calloc(2 + t->nfiles + t->nchunks,
				    sizeof(*bases))))
		return APTIX_ERROR;
	if (given(&o->answer) &&
	    (r = aptix_txn_write_object_like(&t->answer, rc->tx,
					     APTIX_OBJ_BLOB, o->answer.ptr,
					     o->answer.len, lt ?
					     like_id(&lt->answer) : NULL)) < 0)
		goto done;
	if (given(&o->answer) && o->answer.len)
		bases[n++] = t->answer;
	if (given(&o->response) &&
	    (r = aptix_txn_write_blob_against(&t->response, rc->tx,
					      o->response.ptr,
					      o->response.len, bases, n, lt ?
					      like_id(&lt->response) :
					      NULL)) < 0)
		goto done;
	n = 0;
	bases[n++] = t->instruction;
	for (i = 0; i < t->nfiles; i++)
		if (t->files[i].has_content)
			bases[n++] = t->files[i].content;
	for (i = 0; i < t->nchunks; i++)
		if (!aptix_oid_is_zero(&t->chunks[i].snippet))
			bases[n++] = t->chunks[i].snippet;
	if (given(&o->request))
		r = aptix_txn_write_blob_against(&t->request, rc->tx,
						 o->request.ptr,
						 o->request.len, bases, n,
						 lt ? like_id(&lt->request) :
						 NULL);
done:
	free(bases);
	return r;
}

/* The instruction: stored, unless begin stored it (o->pending). */
static int record_instruction(struct rec *rc)
{
	const aptix_record_options *o = rc->o;

	if (!given(&o->instruction))
		return 0;
	if (o->pending)
		return aptix_object_hash(&rc->t.instruction, APTIX_OBJ_BLOB,
					 o->instruction.ptr,
					 o->instruction.len);
	return aptix_txn_write_object(&rc->t.instruction, rc->tx,
				      APTIX_OBJ_BLOB, o->instruction.ptr,
				      o->instruction.len);
}

/* The calls and results; results may answer the parent turn's calls. */
static int record_tool_objects(struct rec *rc)
{
	const aptix_record_options *o = rc->o;
	/* the claim (begin) wrote the results: commit only names them */
	int stored = o->pending != NULL;
	aptix_session ps;
	aptix_turn pt;
	int r;

	if (o->version < 2 || (!o->ntool_calls && !o->ntool_results))
		return 0;
	if (!o->parent || !o->ntool_results ||
	    (rc->prev && !aptix_oid_cmp(&rc->prev->session, o->parent)))
		return aptix__record_tools(&rc->t, rc->tx, o, o->parent &&
					   rc->prev ? &rc->prev->turn : NULL,
					   stored);
	aptix_turn_init(&pt);
	if ((r = aptix__chain_session(&ps, rc->chain, o->parent)) == 0)
		r = aptix__chain_turn(&pt, rc->chain, &ps.turn);
	aptix_session_release(&ps);
	if (r == 0)
		r = aptix__record_tools(&rc->t, rc->tx, o, &pt, stored);
	aptix_turn_release(&pt);
	return r;
}

static int record_turn(struct rec *rc)
{
	aptix_buf b = APTIX_BUF_INIT;
	int r;

	if ((r = record_instruction(rc)) < 0 ||
	    (r = record_context(rc)) < 0 ||
	    /* after the context: the request is spliced against its blobs */
	    (r = record_payloads(rc)) < 0 ||
	    (r = record_tool_objects(rc)) < 0)
		return r;
	if (!(r = aptix_turn_serialize(&b, &rc->t)))
		r = aptix_txn__write_built(&rc->turn_id, rc->tx,
					   APTIX_OBJ_TURN, b.ptr, b.len,
					   rc->like ? &rc->like->turn_id :
					   NULL, NULL);
	aptix_buf_release(&b);
	return r;
}

/* --- the snapshot ------------------------------------------------------- */

/* The first line of the instruction: title and reflog reason. */
static int make_title(struct rec *rc)
{
	const aptix_record_data *in = &rc->o->instruction;
	aptix_buf b = APTIX_BUF_INIT;
	aptix_otype type;
	int r = 0;

	if (rc->o->title) {
		snprintf(rc->title, sizeof(rc->title), "%s", rc->o->title);
		return 0;
	}
	if (given(in)) {
		aptix_summary_line(rc->title, TITLE_MAX, in->ptr, in->len);
		return 0;
	}
	if (!aptix_oid_is_zero(&rc->t.instruction) &&
	    (r = aptix_txn_read_object(&b, &type, rc->tx,
				       &rc->t.instruction)) == 0)
		aptix_summary_line(rc->title, TITLE_MAX, b.ptr, b.len);
	aptix_buf_release(&b);
	return r;
}

/* A completed turn whose calls are not all answered awaits results. */
static aptix_session_status status_of(const struct rec *rc)
{
	const aptix_turn *t = &rc->t;

	if (t->status == APTIX_TURN_COMPLETED)
		return aptix__record_awaits(rc->o) ?
			APTIX_SESSION_AWAITING_TOOL_RESULTS :
			APTIX_SESSION_COMMITTED;
	return t->status == APTIX_TURN_FAILED ? APTIX_SESSION_FAILED :
		APTIX_SESSION_CREATED;
}

/* The session snapshot of the turn (owned strings). */
static int make_session(aptix_session *s, struct rec *rc)
{
	const aptix_record_options *o = rc->o;
	const aptix_turn *t = &rc->t;

	s->parent = o->parent ? *o->parent : s->parent;
	s->has_parent = o->parent != NULL;
	s->turn = rc->turn_id;
	s->status = status_of(rc);
	s->created_at = o->created_at ? o->created_at : aptix_now_ms();
	s->duration_ms = s->created_at > t->created_at ?
		s->created_at - t->created_at : 0;
	s->usage = t->usage;
	s->conversation = aptix__strdup(t->conversation);
	s->session_type = aptix__strdup("agent");
	if (!s->conversation || !s->session_type ||
	    (o->transport && !(s->transport = aptix__strdup(o->transport))) ||
	    (t->workspace && !(s->workspace = aptix__strdup(t->workspace))))
		return APTIX_ERROR;
	/* roots and forks carry the conversation's title */
	if (starts_conversation(rc, t->conversation)) {
		if (!(s->title = aptix__strdup(rc->title)))
			return APTIX_ERROR;
		if (o->parent &&
		    !(s->forked_from = aptix__strdup(rc->parent_conv)))
			return APTIX_ERROR;
	}
	return 0;
}

/* A snapshot given whole (commit-session): a copy naming the turn. */
static int given_session(aptix_session *s, struct rec *rc)
{
	const aptix_session *g = rc->o->session;
	int bad = 0;

	*s = *g;
	s->conversation = s->session_type = s->transport = NULL;
	s->workspace = s->title = s->forked_from = NULL;
#define COPY(f) if (g->f && !(s->f = aptix__strdup(g->f))) bad = 1
	COPY(conversation);
	COPY(session_type);
	COPY(transport);
	COPY(workspace);
	COPY(title);
	COPY(forked_from);
#undef COPY
	if (rc->o->turn)
		s->turn = rc->turn_id;
	return bad ? APTIX_ERROR : 0;
}

static int write_session(aptix_oid *id, struct rec *rc,
			 const aptix_session *s)
{
	aptix_buf b = APTIX_BUF_INIT;
	int r = aptix_session_serialize(&b, s);

	if (!r)
		r = aptix_txn__write_built(id, rc->tx, APTIX_OBJ_SESSION,
					   b.ptr, b.len, s->has_parent &&
					   rc->like ? &s->parent : NULL,
					   rc->o->turn ? &rc->t : NULL);
	aptix_buf_release(&b);
	return r;
}

/*
 * The conversation's ref, by compare-and-swap: it holds the parent, or
 * must not exist yet (a root, APTIX_RECORD_NEW_CONVERSATION).
 */
static int move_ref(struct rec *rc, const aptix_session *s,
		    const aptix_oid *sid)
{
	const aptix_record_options *o = rc->o;
	aptix_buf ref = APTIX_BUF_INIT, reason = APTIX_BUF_INIT;
	int fresh = (o->flags & APTIX_RECORD_NEW_CONVERSATION) || !o->parent;
	aptix_oid zero;
	int r;

	memset(&zero, 0, sizeof(zero));
	aptix_buf_printf(&ref, "%s%s", APTIX_CONV_PREFIX, s->conversation);
	aptix_buf_printf(&reason, "%s: %.60s", o->verb ? o->verb :
			 starts_conversation(rc, s->conversation) &&
			 o->parent ? "fork" : "continue",
			 rc->title[0] ? rc->title : "turn");
	r = aptix_txn_ref_update(rc->tx, ref.ptr, sid, fresh ? &zero :
				 o->parent, reason.ptr);
	if (!r && (o->flags & APTIX_RECORD_SWITCH_HEAD))
		r = aptix_txn_symref_update(rc->tx, "HEAD", ref.ptr,
					    reason.ptr);
	aptix_buf_release(&ref);
	aptix_buf_release(&reason);
	return r;
}

/* The seq of the turn the snapshot records, for the choice of bases. */
static int snapshot_seq(long *seq, struct rec *rc)
{
	aptix_turn t;
	int r;

	if (rc->o->turn) {
		*seq = rc->t.seq;
		return 0;
	}
	if ((r = aptix__chain_turn(&t, rc->chain, &rc->o->session->turn)) < 0) {
		aptix_turn_release(&t);
		return r == APTIX_ENOTFOUND ? APTIX_EINVALID : r;
	}
	*seq = t.seq;
	aptix_turn_release(&t);
	return 0;
}

static int record_snapshot(aptix_record_result *out, struct rec *rc)
{
	const aptix_record_options *o = rc->o;
	aptix_session s;
	int r;

	aptix_session_init(&s);
	if (o->session)
		r = given_session(&s, rc);
	else
		r = make_session(&s, rc);
	if (r < 0 || (r = write_session(&out->session, rc, &s)) < 0)
		goto done;
	if (aptix_session_status_ok(s.status) &&
	    !(o->flags & APTIX_RECORD_NO_REF)) {
		if ((r = move_ref(rc, &s, &out->session)) < 0)
			goto done;
		out->moved = 1;
	}
done:
	aptix_session_release(&s);
	return r;
}

static int tx_read(aptix_buf *out, aptix_otype *type, void *ctx,
		   const aptix_oid *id)
{
	return aptix_txn_read_object(out, type, ctx, id);
}

/* out may be one of the options' ids: it is written last. */
int aptix_record__queue(aptix_record_result *out, aptix_txn *tx,
			aptix_repo *repo, const aptix_record_options *o,
			struct aptix__chain *chain)
{
	aptix_record_result res;
	struct rec rc;
	long seq = 0;
	int r;

	memset(&res, 0, sizeof(res));
	if ((r = check_options(o)) < 0) {
		*out = res;
		return r;
	}
	if ((r = rec_init(&rc, repo, o, chain)) < 0)
		goto done;
	rc.tx = tx;
	if (!chain)	/* the parent may be queued in tx, not stored yet */
		aptix__chain_set_reader(&rc.own_chain, tx_read, tx);
	if ((r = read_parent(&rc)) < 0 ||
	    (o->turn && (r = derive_seq(&rc)) < 0) ||
	    (r = snapshot_seq(&seq, &rc)) < 0)
		goto done;
	/*
	 * read before the write: still there when it commits (aptix gc);
	 * a session given with its turn names the turn this write makes
	 */
	if ((o->parent && (r = aptix_txn__require_object(tx, o->parent)) < 0) ||
	    (o->session && !o->turn && (r = aptix_txn__require_object(
				    tx, &o->session->turn)) < 0))
		goto done;
	/* what this turn's objects are stored against: see REBASE_EVERY */
	rc.like = seq % REBASE_EVERY ? rc.prev : NULL;
	if (o->turn && (r = record_turn(&rc)) < 0)
		goto done;
	res.turn = o->turn ? rc.turn_id : o->session->turn;
	res.instruction = rc.t.instruction;
	if ((o->flags & APTIX_RECORD_TURN_ONLY) || (r = make_title(&rc)) < 0)
		goto done;
	r = record_snapshot(&res, &rc);
done:
	rec_release(&rc);
	*out = res;
	return r;
}

int aptix_record__commit(aptix_record_result *out, aptix_repo *repo,
			 const aptix_record_options *o,
			 struct aptix__chain *chain)
{
	aptix_txn *tx = NULL;
	int r;

	if ((r = aptix_txn_new(&tx, repo)) < 0 ||
	    (r = aptix_record__queue(out, tx, repo, o, chain)) < 0)
		goto done;
	if (o->pending && o->turn &&
	    (r = aptix_txn__running_release(tx, o->turn->conversation,
					     o->pending, 0)) < 0)
		goto done;
	r = aptix_txn_commit(tx);
done:
	if (r < 0)
		out->moved = 0;
	aptix_txn_free(tx);
	return r;
}

int aptix_record_commit(aptix_record_result *out, aptix_repo *repo,
			const aptix_record_options *o)
{
	return aptix_record__commit(out, repo, o, NULL);
}

/* --- the claim (the first write) ---------------------------------------- */

static int running_record(aptix_buf *out, aptix_oid *turn_id,
			  const aptix_turn *t, const aptix_record_options *o)
{
	aptix_buf bytes = APTIX_BUF_INIT;
	json_t *obj;
	char host[65];
	int r;

	if ((r = aptix_turn_serialize(&bytes, t)) < 0 ||
	    (r = aptix_object_hash(turn_id, APTIX_OBJ_TURN, bytes.ptr,
				   bytes.len)) < 0) {
		aptix_buf_release(&bytes);
		return r;
	}
	aptix__host_name(host);
	obj = json_object();
	json_object_set_new(obj, "pid", json_integer((json_int_t)getpid()));
	json_object_set_new(obj, "start", json_integer((json_int_t)
			    aptix__proc_starttime((long)getpid())));
	json_object_set_new(obj, "host", json_string(host));
	json_object_set_new(obj, "since", json_integer(t->created_at));
	/* a lease, renewed while the turn runs (run-lease.c) */
	json_object_set_new(obj, "renewed", json_integer(aptix__wall_ms()));
	json_object_set_new(obj, "lease", json_integer(o->lease_ms > 0 ?
			    o->lease_ms : APTIX_LEASE_DEFAULT_MS));
	json_object_set_new(obj, "turn", json_string(aptix_oid_hex(turn_id)));
	json_object_set_new(obj, "instruction",
			    json_string(aptix_oid_hex(&t->instruction)));
	json_object_set_new(obj, "pending", json_stringn(bytes.ptr,
							 bytes.len));
	if (o->parent)
		json_object_set_new(obj, "parent",
				    json_string(aptix_oid_hex(o->parent)));
	aptix_buf_release(&bytes);
	aptix_buf_clear(out);
	r = aptix_json_compact(out, obj);
	json_decref(obj);
	return r;
}

/* The claim's write, queued in tx. */
static int queue_claim(aptix_record_result *out, aptix_txn *tx,
		       struct rec *rc)
{
	const aptix_record_options *o = rc->o;
	aptix_buf rec = APTIX_BUF_INIT, ref = APTIX_BUF_INIT;
	const char *conv = rc->t.conversation;
	int r;

	if (!given(&o->instruction) || !conv) {
		aptix_error_set(APTIX_ERROR_INVALID, "a claim needs the "
				"instruction and the conversation");
		return APTIX_EINVALID;
	}
	aptix_buf_printf(&ref, "%s%s", APTIX_CONV_PREFIX, conv);
	rc->tx = tx;
	if ((r = aptix_txn_write_object(&rc->t.instruction, tx,
					APTIX_OBJ_BLOB, o->instruction.ptr,
					o->instruction.len)) < 0 ||
	    /* tool outputs given: durable with the instruction */
	    (r = record_tool_objects(rc)) < 0 ||
	    (r = running_record(&rec, &out->turn, &rc->t, o)) < 0 ||
	    (r = aptix_txn__running_claim(tx, conv, rec.ptr)) < 0 ||
	    /* the head this turn was planned on must still be the head */
	    (r = aptix_txn__ref_verify(tx, ref.ptr,
				       o->flags & APTIX_RECORD_NEW_CONVERSATION ?
				       NULL : o->parent)) < 0)
		goto done;
	out->instruction = rc->t.instruction;
done:
	aptix_buf_release(&rec);
	aptix_buf_release(&ref);
	return r;
}

int aptix_record_begin(aptix_record_result *out, aptix_repo *repo,
		       const aptix_record_options *o)
{
	aptix_record_result res;
	aptix_txn *tx = NULL;
	struct rec rc;
	int r;

	memset(&res, 0, sizeof(res));
	if ((r = check_options(o)) < 0) {
		*out = res;
		return r;
	}
	if (!o->turn) {
		*out = res;
		aptix_error_set(APTIX_ERROR_INVALID, "a claim needs a turn");
		return APTIX_EINVALID;
	}
	if ((r = rec_init(&rc, repo, o, NULL)) < 0 ||
	    (r = derive_seq(&rc)) < 0)
		goto done;
	if ((r = aptix_txn_new(&tx, repo)) < 0 ||
	    (r = queue_claim(&res, tx, &rc)) < 0)
		goto done;
	/*
	 * Nobody is told that a claim is committed: the turn's commit
	 * (or its failure) after the network makes it durable with itself
	 * (store-lmdb.c, "Flushes"). A power loss before then loses the
	 * claim and the instruction, as if the turn had not begun.
	 */
	aptix_txn__defer_sync(tx);
	r = aptix_txn_commit(tx);
	if (r == APTIX_EEXISTS) {
		/* a dead process left a claim: recover it, then retry */
		if ((r = aptix_record_recover(repo, NULL)) < 0)
			goto done;
		r = aptix_txn_commit(tx);
	}
	if (r == APTIX_EMISMATCH) {
		aptix_error_set(APTIX_ERROR_REPOSITORY, "conversation '%s' is "
				"busy: another turn moved its head just now; "
				"run this one again", rc.t.conversation);
		r = APTIX_ELOCKED;
	}
done:
	aptix_txn_free(tx);
	rec_release(&rc);
	if (r < 0)
		memset(&res, 0, sizeof(res));
	*out = res;
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
static int record_dead(aptix_txn *tx, aptix_repo *repo, const struct dead *d,
		       aptix_turn *t)
{
	aptix_record_options o = APTIX_RECORD_OPTIONS_INIT;
	aptix_record_result res;
	char msg[320];

	snprintf(msg, sizeof(msg), "interrupted: the process running this "
		 "turn (pid %ld on %s) %s before it finished", d->rec.pid,
		 d->rec.host, d->why);
	t->status = APTIX_TURN_FAILED;
	t->status_at = aptix_now_ms();
	aptix__strv_clear(&t->errors, &t->nerrors);
	if (aptix__strv_push(&t->errors, &t->nerrors, msg) < 0)
		return APTIX_ERROR;
	o.turn = t;
	o.parent = d->rec.has_parent ? &d->rec.parent : NULL;
	o.created_at = t->status_at;
	return aptix_record__queue(&res, tx, repo, &o, NULL);
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
		r = record_dead(tx, repo, d, &t);
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

int aptix_record_recover(aptix_repo *repo, size_t *recovered)
{
	struct dead_list dl = { NULL, 0 };
	size_t i;
	int r;

	if (recovered)
		*recovered = 0;
	r = repo->backend->claims->iterate(repo->backend->claims,
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
