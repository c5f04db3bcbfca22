/*
 * src/index/chain.c - the ancestors of a turn, read once (see chain.h), and
 * what the response chain they form has already sent.
 *
 * A response chain is the run of completed turns linked by
 * previous_response_id: walking back from the turn a new one continues,
 * each turn's previous_response_id names the response of the turn before
 * it, until a turn that started a chain (none, or a restart).
 */
#include "util/common.h"
#include "repo/repo.h"
#include "object/object.h"
#include "index/index.h"
#include "index/chain.h"

void aptix__chain_init(struct aptix__chain *c, aptix_repo *repo,
		       const aptix_oid *start)
{
	memset(c, 0, sizeof(*c));
	c->repo = repo;
	if (start) {
		c->start = c->next = *start;
		c->has_start = c->more = 1;
	}
}

void aptix__chain_release(struct aptix__chain *c)
{
	size_t i;

	for (i = 0; i < c->n; i++)
		aptix_turn_release(&c->v[i].turn);
	free(c->v);
	free(c->start_conv);
	memset(c, 0, sizeof(*c));
}

void aptix__chain_set_reader(struct aptix__chain *c, aptix__chain_read_fn fn,
			     void *ctx)
{
	c->read = fn;
	c->read_ctx = ctx;
}

/*
 * A snapshot (turn 0) or a turn (turn 1) of the chain, through its
 * reader when it has one; out is initialized whatever happens.
 */
static int chain_lookup(void *out, struct aptix__chain *c,
			const aptix_oid *id, int turn)
{
	aptix_buf data = APTIX_BUF_INIT;
	aptix_otype type, want = turn ? APTIX_OBJ_TURN : APTIX_OBJ_SESSION;
	int r;

	if (!c->read)
		return turn ? aptix_turn_lookup(out, c->repo, id) :
			aptix_session_lookup(out, c->repo, id);
	if (turn)
		aptix_turn_init(out);
	else
		aptix_session_init(out);
	r = c->read(&data, &type, c->read_ctx, id);
	if (r == 0 && type != want) {
		aptix_error_set(APTIX_ERROR_OBJECT, "object '%s' is not a %s",
				aptix_oid_hex(id), aptix_otype_name(want));
		r = APTIX_EINVALID;
	}
	if (r == 0)
		r = turn ? aptix__turn_parse_trusted(out, data.ptr, data.len) :
			aptix__session_parse_trusted(out, data.ptr, data.len);
	aptix_buf_release(&data);
	return r;
}

int aptix__chain_session(aptix_session *out, struct aptix__chain *c,
			 const aptix_oid *id)
{
	return chain_lookup(out, c, id, 0);
}

int aptix__chain_turn(aptix_turn *out, struct aptix__chain *c,
		      const aptix_oid *id)
{
	return chain_lookup(out, c, id, 1);
}

/* Read snapshots until one more committed ancestor is kept, or the end. */
static int read_more(struct aptix__chain *c)
{
	while (c->more && c->walked < APTIX__CHAIN_MAX_WALK) {
		aptix_session s;
		struct aptix__past *p;
		aptix_oid id = c->next;
		int r;

		if ((r = chain_lookup(&s, c, &id, 0)) < 0) {
			aptix_session_release(&s);
			return r;
		}
		/* kept for the caller that needs it (plan_chain in run.c) */
		if (!c->walked && c->has_start && s.conversation &&
		    !(c->start_conv = aptix__strdup(s.conversation))) {
			aptix_session_release(&s);
			return APTIX_ERROR;
		}
		c->walked++;
		c->more = s.has_parent;
		c->next = s.parent;
		if (!aptix_session_status_ok(s.status)) {
			aptix_session_release(&s);
			continue;
		}
		if (c->n == c->alloc) {
			size_t na = c->alloc ? c->alloc * 2 : 16;

			p = aptix__realloc(c->v, na * sizeof(*p));
			if (!p) {
				aptix_session_release(&s);
				return APTIX_ERROR;
			}
			c->v = p;
			c->alloc = na;
		}
		p = &c->v[c->n];
		p->session = id;
		p->turn_id = s.turn;
		r = chain_lookup(&p->turn, c, &s.turn, 1);
		aptix_session_release(&s);
		if (r < 0) {
			aptix_turn_release(&p->turn);
			return r;
		}
		p->completed = p->turn.status == APTIX_TURN_COMPLETED;
		c->n++;
		return 0;
	}
	c->more = 0;
	return APTIX_ITEROVER;
}

int aptix__chain_get(const struct aptix__past **out, struct aptix__chain *c,
		     size_t i)
{
	int r;

	while (i >= c->n)
		if ((r = read_more(c)) < 0)
			return r;
	*out = &c->v[i];
	return 0;
}

int aptix__chain_links(struct aptix__chain *c, aptix__link_fn fn,
		       void *payload)
{
	const struct aptix__past *p;
	const char *want = NULL;
	size_t i;
	int r;

	for (i = 0; (r = aptix__chain_get(&p, c, i)) == 0; i++) {
		const aptix_turn *t = &p->turn;

		if (!p->completed || !t->response_id ||
		    (want && strcmp(want, t->response_id)))
			return 0;	/* not a link of this chain: it ends */
		if ((r = fn(t, payload)) != 0)
			return r > 0 ? 0 : r;
		if (!t->previous_response_id || t->chain_restarted)
			return 0;
		want = t->previous_response_id;
	}
	return r == APTIX_ITEROVER ? 0 : r;
}

struct state_walk {
	aptix_chain_state *out;
	int64_t now;
};

static int state_cb(const aptix_turn *t, void *payload)
{
	struct state_walk *sw = payload;

	sw->out->has_chain = 1;
	snprintf(sw->out->response_id, sizeof(sw->out->response_id), "%s",
		 t->response_id);
	sw->out->expires_at = t->chain_expires_at;
	sw->out->expired = t->chain_expires_at &&
		sw->now >= t->chain_expires_at;
	return 1;	/* the newest is enough */
}

int aptix__chain_state(aptix_chain_state *out, struct aptix__chain *c,
		       int64_t now)
{
	struct state_walk sw = { out, now };

	memset(out, 0, sizeof(*out));
	return aptix__chain_links(c, state_cb, &sw);
}

struct plan_walk {
	aptix_file_set *files;
	aptix_chunk_set *chunks;
	char *seen;		/* files already decided (newest send wins) */
};

static int plan_cb(const aptix_turn *t, void *payload)
{
	struct plan_walk *pw = payload;
	size_t i, j;

	for (i = 0; pw->files && i < pw->files->n; i++) {
		aptix_active_file *f = &pw->files->v[i];

		if (pw->seen[i] || f->action != APTIX_FILE_SEND)
			continue;
		for (j = 0; j < t->nfiles; j++) {
			const aptix_file_ref *fr = &t->files[j];

			if (!fr->sent || strcmp(fr->path, f->path))
				continue;
			/* the last version the model saw of this path */
			pw->seen[i] = 1;
			if (!strcmp(fr->sha256, f->sha256))
				f->action = APTIX_FILE_UNCHANGED;
			break;
		}
	}
	for (i = 0; pw->chunks && i < pw->chunks->n; i++) {
		aptix_rag_chunk *c = &pw->chunks->v[i];

		if (!c->sent)
			continue;
		for (j = 0; j < t->nchunks; j++)
			if (t->chunks[j].sent &&
			    !strcmp(t->chunks[j].chunk_id, c->chunk_id) &&
			    !strcmp(t->chunks[j].content_hash,
				    c->content_hash)) {
				c->sent = 0;
				break;
			}
	}
	/* stop walking once nothing is left to decide */
	for (i = 0; pw->files && i < pw->files->n; i++)
		if (!pw->seen[i] && pw->files->v[i].action == APTIX_FILE_SEND)
			return 0;
	for (i = 0; pw->chunks && i < pw->chunks->n; i++)
		if (pw->chunks->v[i].sent)
			return 0;
	return 1;
}

static void plan_reset(aptix_file_set *files, aptix_chunk_set *chunks)
{
	size_t i;

	for (i = 0; files && i < files->n; i++)
		if (files->v[i].action == APTIX_FILE_UNCHANGED ||
		    files->v[i].action == APTIX_FILE_OVER_BUDGET)
			files->v[i].action = APTIX_FILE_SEND;
	for (i = 0; chunks && i < chunks->n; i++)
		chunks->v[i].sent = 1;
}

int aptix__chain_plan_walk(struct aptix__chain *c, aptix_file_set *files,
			   aptix_chunk_set *chunks)
{
	struct plan_walk pw;
	int r;

	plan_reset(files, chunks);
	pw.files = files;
	pw.chunks = chunks;
	pw.seen = aptix__calloc(files && files->n ? files->n : 1, 1);
	if (!pw.seen)
		return APTIX_ERROR;
	r = aptix__chain_links(c, plan_cb, &pw);
	free(pw.seen);
	return r;
}

int aptix__chain_plan(struct aptix__chain *c, int restart,
		      aptix_file_set *files, aptix_chunk_set *chunks)
{
	int r;

	plan_reset(files, chunks);
	if (restart || ((!files || !files->n) && (!chunks || !chunks->n)) ||
	    !c->has_start)
		return 0;
	r = aptix_index__chain_plan(c->repo, &c->start, files, chunks, NULL);
	if (r <= 0)
		return r;
	return aptix__chain_plan_walk(c, files, chunks);
}
