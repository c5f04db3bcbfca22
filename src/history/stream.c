/*
 * src/history/stream.c - every indexed session in topological date
 * order (git's --date-order: newest first, a session only after all of
 * its children), streamed from the timeline instead of read whole.
 *
 * The timeline is the index's table of sessions by created time: read
 * newest first, a piece (CHUNK sessions, equal times kept together) at
 * a time, each piece sorted as the walk orders sessions (time, then
 * the higher generation, then the lower id). In a store whose clocks
 * never went back, a session's children are all newer than it: they
 * have come out already when the timeline reaches it, and it comes out
 * at once. The children index says how many children a session has;
 * each session the stream has met (returned, or left out by the
 * caller) counts as done for its parent. A session with children not
 * done yet (a child older than its parent: skewed clocks) waits, with
 * what it waits for, in a heap; it comes out when its last child has,
 * before the timeline goes on (everything waiting is newer than what
 * the timeline has left, so this is the order git's topo walk gives,
 * and the order the walk read whole gives).
 *
 * What is held: the piece of the timeline being read, the sessions
 * waiting, and a node for each session a child has named (its number,
 * and how many of its children are done) until the timeline reaches
 * it: the open branches of the history, as a graph of it draws them.
 * Nothing grows with the number of sessions.
 */
#include "util/common.h"
#include "history/stream.h"
#include "aptix/revwalk.h"

#define NONE APTIX_REVWALK_NONE
#define CHUNK 256

enum { IN_UNKNOWN, IN_YES, IN_NO };

/* A session named by a child, or waiting, or both. */
struct node {
	aptix_oid id;
	uint32_t seq;		/* NONE: not numbered yet */
	uint32_t done;		/* children returned or left out */
	uint32_t wait;		/* its place in waiting[], or NONE */
	uint32_t next_free;
	unsigned char in;	/* IN_*: does the stream return it? */
};

struct waiting {
	aptix_session_info si;
	uint32_t left;		/* children not done yet */
	uint32_t next_free;
};

struct stream {
	aptix_repo *repo;
	int64_t since;
	stream_keep_fn keep;
	void *keep_payload;
	int keep_all;			/* keep says yes to every session */

	aptix_session_info *chunk;	/* the piece being read, sorted */
	size_t nchunk, pos, achunk;
	uint32_t *kids;			/* children of each, in the index */
	size_t akids;
	uint32_t *cslots;		/* open addressing on chunk by id */
	uint32_t cmask;
	int chunk_full, eof, before_1970;
	int err;			/* the timeline failed after the piece */
	char *errmsg;			/* its message, kept until then */
	int errklass;
	int64_t last_at;		/* where the next piece starts */
	aptix_oid last_id;
	int has_last;

	struct node *nodes;
	size_t nnodes, anodes;
	uint32_t free_node;
	uint32_t *slots;		/* open addressing on nodes by id */
	uint32_t smask, nused;

	struct waiting *w;
	size_t nw, aw;
	uint32_t free_w, nwaiting;
	uint32_t *ready;		/* heap of waiting[] places */
	size_t nready, aready;

	uint32_t next_seq;
	aptix_session_info cur;
	uint32_t cur_seq, cur_parent;
};

/* --- Order ---------------------------------------------------------------- */

static int si_before(const aptix_session_info *a, const aptix_session_info *b)
{
	if (a->created_at != b->created_at)
		return a->created_at > b->created_at;
	if (a->generation != b->generation)
		return a->generation > b->generation;
	return memcmp(a->id.id, b->id.id, APTIX_OID_RAWSZ) < 0;
}

static int si_cmp(const void *a, const void *b)
{
	return si_before(a, b) ? -1 : si_before(b, a) ? 1 : 0;
}

/* --- Nodes by id ------------------------------------------------------------ */

static uint32_t id_hash(const aptix_oid *id)
{
	uint32_t h;

	memcpy(&h, id->id, sizeof(h));
	return h;
}

static uint32_t node_find(const struct stream *s, const aptix_oid *id)
{
	uint32_t i, k;

	if (!s->slots)
		return NONE;
	for (i = id_hash(id) & s->smask;; i = (i + 1) & s->smask) {
		k = s->slots[i];
		if (k == NONE || !memcmp(s->nodes[k].id.id, id->id,
					 APTIX_OID_RAWSZ))
			return k;
	}
}

static void slot_put(struct stream *s, uint32_t k)
{
	uint32_t i;

	for (i = id_hash(&s->nodes[k].id) & s->smask; s->slots[i] != NONE;
	     i = (i + 1) & s->smask)
		;
	s->slots[i] = k;
}

static int slots_grow(struct stream *s)
{
	uint32_t size = s->slots ? (s->smask + 1) * 2 : 256, i, old;
	uint32_t *prev = s->slots;

	if (!size || !(s->slots = aptix__malloc((size_t)size *
						sizeof(*s->slots)))) {
		s->slots = prev;
		return aptix_error_oom();
	}
	memset(s->slots, 0xff, (size_t)size * sizeof(*s->slots));
	old = prev ? s->smask + 1 : 0;
	s->smask = size - 1;
	for (i = 0; i < old; i++)
		if (prev[i] != NONE)
			slot_put(s, prev[i]);
	free(prev);
	return 0;
}

/*
 * A place in the array *pp (*n used of *alloc, elements of size bytes,
 * each with a uint32_t at offset link naming the next free place): the
 * last one given back (*free_head), else a new one at the end (first
 * places allocated the first time).
 */
static int pool_take(uint32_t *out, void *pp, size_t *n, size_t *alloc,
		     uint32_t *free_head, size_t size, size_t link,
		     size_t first)
{
	if (*free_head != NONE) {
		*out = *free_head;
		memcpy(free_head, *(unsigned char **)pp + *out * size + link,
		       sizeof(*free_head));
		return 0;
	}
	if (*n >= NONE - 1 || aptix__grow(pp, alloc, *n, size, first) < 0)
		return aptix_error_oom();
	*out = (uint32_t)(*n)++;
	return 0;
}

static int node_add(uint32_t *out, struct stream *s, const aptix_oid *id)
{
	struct node *n;
	uint32_t k = 0;
	int r;

	if (2 * (s->nused + 1) > (s->slots ? s->smask + 1 : 0) &&
	    (r = slots_grow(s)) < 0)
		return r;
	if ((r = pool_take(&k, &s->nodes, &s->nnodes, &s->anodes,
			   &s->free_node, sizeof(*s->nodes),
			   offsetof(struct node, next_free), 64)) < 0)
		return r;
	n = &s->nodes[k];
	memset(n, 0, sizeof(*n));
	n->id = *id;
	n->seq = n->wait = n->next_free = NONE;
	n->in = IN_UNKNOWN;
	slot_put(s, k);
	s->nused++;
	*out = k;
	return 0;
}

/* Remove node k (linear probing: the entries after it move back). */
static void node_del(struct stream *s, uint32_t k)
{
	uint32_t i, j, h;

	for (i = id_hash(&s->nodes[k].id) & s->smask; s->slots[i] != k;
	     i = (i + 1) & s->smask)
		;
	s->slots[i] = NONE;
	for (j = (i + 1) & s->smask; s->slots[j] != NONE;
	     j = (j + 1) & s->smask) {
		h = id_hash(&s->nodes[s->slots[j]].id) & s->smask;
		/* does h lie cyclically in (i, j]? then it stays */
		if (i <= j ? (i < h && h <= j) : (i < h || h <= j))
			continue;
		s->slots[i] = s->slots[j];
		s->slots[j] = NONE;
		i = j;
	}
	s->nodes[k].next_free = s->free_node;
	s->free_node = k;
	s->nused--;
}

static int node_get(uint32_t *out, struct stream *s, const aptix_oid *id)
{
	if ((*out = node_find(s, id)) != NONE)
		return 0;
	return node_add(out, s, id);
}

/* --- Sessions waiting for their children ---------------------------------- */

static int ready_before(const struct stream *s, uint32_t a, uint32_t b)
{
	return si_before(&s->w[a].si, &s->w[b].si);
}

static int ready_push(struct stream *s, uint32_t x)
{
	size_t i, p;
	uint32_t t;

	if (aptix__grow(&s->ready, &s->aready, s->nready, sizeof(*s->ready),
			16) < 0)
		return APTIX_ERROR;
	i = s->nready++;
	s->ready[i] = x;
	for (; i; i = p) {
		p = (i - 1) / 2;
		if (!ready_before(s, s->ready[i], s->ready[p]))
			break;
		t = s->ready[p];
		s->ready[p] = s->ready[i];
		s->ready[i] = t;
	}
	return 0;
}

static uint32_t ready_pop(struct stream *s)
{
	uint32_t top = s->ready[0], t;
	size_t i = 0, c;

	s->ready[0] = s->ready[--s->nready];
	for (;;) {
		c = 2 * i + 1;
		if (c >= s->nready)
			break;
		if (c + 1 < s->nready &&
		    ready_before(s, s->ready[c + 1], s->ready[c]))
			c++;
		if (!ready_before(s, s->ready[c], s->ready[i]))
			break;
		t = s->ready[c];
		s->ready[c] = s->ready[i];
		s->ready[i] = t;
		i = c;
	}
	return top;
}

static int wait_add(struct stream *s, const aptix_session_info *si,
		    uint32_t left, uint32_t node)
{
	uint32_t x = 0;
	int r;

	if ((r = pool_take(&x, &s->w, &s->nw, &s->aw, &s->free_w,
			   sizeof(*s->w), offsetof(struct waiting, next_free),
			   16)) < 0)
		return r;
	s->w[x].si = *si;
	s->w[x].left = left;
	s->nodes[node].wait = x;
	s->nodes[node].in = IN_YES;
	s->nwaiting++;
	return 0;
}

/*
 * A child of the session at id was returned (the parent, if it waits,
 * waits for one less) or left out.
 */
static int child_done(uint32_t *node, struct stream *s, const aptix_oid *id,
		      int returned)
{
	struct node *n;
	int r;

	if ((r = node_get(node, s, id)) < 0)
		return r;
	n = &s->nodes[*node];
	n->done++;
	if (returned && n->wait != NONE && !--s->w[n->wait].left)
		return ready_push(s, n->wait);
	return 0;
}

/* --- The timeline, a piece at a time --------------------------------------- */

static int chunk_cb(const aptix_session_info *si, void *payload)
{
	struct stream *s = payload;

	if (si->created_at < 0) {
		s->before_1970 = 1;	/* sorted first: not walked here */
		return 0;
	}
	if (s->since && si->created_at < s->since)
		return APTIX_ITEROVER;
	/* equal times stay together: they are sorted in one piece */
	if (s->nchunk >= CHUNK &&
	    si->created_at != s->chunk[s->nchunk - 1].created_at) {
		s->chunk_full = 1;
		return APTIX_ITEROVER;
	}
	if (aptix__grow(&s->chunk, &s->achunk, s->nchunk, sizeof(*s->chunk),
			CHUNK) < 0)
		return APTIX_ERROR;
	s->chunk[s->nchunk++] = *si;
	return 0;
}

static uint32_t chunk_find(const struct stream *s, const aptix_oid *id)
{
	uint32_t i, k;

	for (i = id_hash(id) & s->cmask;; i = (i + 1) & s->cmask) {
		k = s->cslots[i];
		if (k == NONE || !memcmp(s->chunk[k].id.id, id->id,
					 APTIX_OID_RAWSZ))
			return k;
	}
}

/* The piece by id, and its children counts zeroed. */
static int chunk_hash(struct stream *s)
{
	uint32_t size = 16, k, i;

	while (size < 2 * s->nchunk)
		size *= 2;
	if (size > s->cmask + 1 || !s->cslots) {
		free(s->cslots);
		if (!(s->cslots = aptix__malloc((size_t)size *
						sizeof(*s->cslots))))
			return aptix_error_oom();
		s->cmask = size - 1;
	}
	if (aptix__grow(&s->kids, &s->akids, s->nchunk, sizeof(*s->kids),
			CHUNK) < 0)
		return APTIX_ERROR;
	memset(s->kids, 0, s->nchunk * sizeof(*s->kids));
	memset(s->cslots, 0xff, ((size_t)s->cmask + 1) * sizeof(*s->cslots));
	for (k = 0; k < s->nchunk; k++) {
		for (i = id_hash(&s->chunk[k].id) & s->cmask;
		     s->cslots[i] != NONE; i = (i + 1) & s->cmask)
			;
		s->cslots[i] = k;
	}
	return 0;
}

static int count_kid(const aptix_oid *parent, const aptix_oid *child
		     APTIX_UNUSED, void *payload)
{
	struct stream *s = payload;
	uint32_t k = chunk_find(s, parent);

	if (k != NONE)
		s->kids[k]++;
	return 0;
}

/*
 * The timeline failed after some sessions of a piece: they are walked,
 * and the error comes after them, as git log shows the commits it
 * walked before a damaged one.
 */
static int keep_error(struct stream *s, int r)
{
	const aptix_error *e = aptix_error_last();

	if (!(s->errmsg = aptix__strdup(e->message)))
		return APTIX_ERROR;
	s->errklass = e->klass;
	s->err = r;
	s->chunk_full = 0;
	aptix_error_clear();
	return 0;
}

static int kept_error(struct stream *s)
{
	aptix_error_set(s->errklass, "%s", s->errmsg);
	return s->err;
}

static int chunk_fill(struct stream *s)
{
	int r;

	s->nchunk = s->pos = 0;
	s->chunk_full = 0;
	r = aptix_index_foreach_recent_before(s->repo, s->last_at,
					      s->has_last ? &s->last_id : NULL,
					      chunk_cb, s);
	if (r < 0 && r != APTIX_ITEROVER &&
	    (!s->nchunk || r == APTIX_ERROR || keep_error(s, r) < 0))
		return r;
	s->eof = !s->chunk_full;
	if (!s->nchunk)
		return 0;
	s->last_at = s->chunk[s->nchunk - 1].created_at;
	s->last_id = s->chunk[s->nchunk - 1].id;
	s->has_last = 1;
	qsort(s->chunk, s->nchunk, sizeof(*s->chunk), si_cmp);
	if ((r = chunk_hash(s)) < 0)
		return r;
	/* the children of the whole piece, in one pass of their index */
	r = aptix_index_foreach_child_between(s->repo, s->chunk[0].created_at,
					      s->last_at, count_kid, s);
	return r == APTIX_ENOTFOUND ? 0 : r;
}

/* --- The walk --------------------------------------------------------------- */

static int cycle(const aptix_oid *id)
{
	aptix_error_set(APTIX_ERROR_REPOSITORY, "the parents of session %s "
			"form a cycle: the index or the store is corrupt",
			aptix_oid_hex(id));
	return APTIX_ECORRUPT;
}

/*
 * Whether the stream returns the session at node k (found out once).
 * When the caller leaves nothing out, every indexed session is
 * returned: its time says so, in one lookup.
 */
static int node_in(struct stream *s, uint32_t k)
{
	aptix_session_info si;
	aptix_oid id = s->nodes[k].id;
	int64_t at;
	uint32_t c;
	int r;

	if (s->nodes[k].in != IN_UNKNOWN)
		return s->nodes[k].in == IN_YES;
	if ((c = s->nchunk ? chunk_find(s, &id) : NONE) != NONE) {
		/* in the piece being read: the timeline passed it or not */
		s->nodes[k].in = s->keep(&s->chunk[c], s->keep_payload) ?
			IN_YES : IN_NO;
		if (s->nodes[k].in == IN_YES && c < s->pos)
			return cycle(&s->cur.id);
		return s->nodes[k].in == IN_YES;
	}
	if (s->keep_all) {
		r = aptix_index_session_time(&at, s->repo, &id);
		if (r == APTIX_ENOTFOUND)
			s->nodes[k].in = IN_NO;
		if (r < 0)
			return r == APTIX_ENOTFOUND ? 0 : r;
		if (at < s->cur.created_at) {
			s->nodes[k].in = IN_YES;
			return 1;
		}
		if (at > s->cur.created_at)
			return cycle(&s->cur.id);
		/* the same time: the record says which comes first */
	}
	r = aptix_index_session(&si, s->repo, &id);
	if (r == APTIX_ENOTFOUND) {
		aptix_error_clear();
		s->nodes[k].in = IN_NO;
		return 0;
	}
	if (r < 0)
		return r;
	s->nodes[k].in = (s->since && si.created_at < s->since) ||
		!s->keep(&si, s->keep_payload) ? IN_NO : IN_YES;
	/*
	 * Returned already (the timeline passed it, and it does not wait):
	 * only a damaged index makes a parent its child's descendant
	 */
	if (s->nodes[k].in == IN_YES && !si_before(&s->cur, &si))
		return cycle(&s->cur.id);
	return s->nodes[k].in == IN_YES;
}

/* Return si (node: its node, or NONE), numbering it and its parent. */
static int emit(struct stream *s, const aptix_session_info *si, uint32_t node)
{
	uint32_t p;
	int r;

	if (si != &s->cur)
		s->cur = *si;
	s->cur_seq = node != NONE && s->nodes[node].seq != NONE ?
		s->nodes[node].seq : s->next_seq++;
	if (node != NONE)
		node_del(s, node);
	s->cur_parent = NONE;
	if (!s->cur.has_parent)
		return 0;
	if ((r = child_done(&p, s, &s->cur.parent, 1)) < 0 ||
	    (r = node_in(s, p)) <= 0)
		return r;
	if (s->nodes[p].seq == NONE)
		s->nodes[p].seq = s->next_seq++;
	s->cur_parent = s->nodes[p].seq;
	return 0;
}

struct blocking {
	struct stream *s;
	const aptix_session_info *si;
	uint32_t n;
};

/*
 * Does this child keep its parent waiting: it waits itself, or the
 * timeline has not reached it (an older child) and the stream returns
 * it?
 */
static int blocking_kid(const aptix_oid *id, void *payload)
{
	struct blocking *b = payload;
	struct stream *s = b->s;
	aptix_session_info kid;
	uint32_t k = node_find(s, id);
	int r;

	if (k != NONE && s->nodes[k].wait != NONE) {
		b->n++;
		return 0;
	}
	if ((r = aptix_index_session(&kid, s->repo, id)) == APTIX_ENOTFOUND) {
		aptix_error_clear();
		return 0;
	}
	if (r < 0)
		return r;
	if (!si_before(&kid, b->si) && (!s->since ||
					 kid.created_at >= s->since) &&
	    s->keep(&kid, s->keep_payload))
		b->n++;
	return 0;
}

/*
 * The next session of the timeline: 0 and *node when it has children
 * not returned yet (it waits), 1 when it comes out now, 2 when it is
 * left out. Its children met already are counted (done); when some are
 * not, each is looked at (only where clocks were skewed).
 */
static int take(uint32_t *node, struct stream *s, const aptix_session_info *si)
{
	uint32_t kids = s->kids[si - s->chunk], done;
	struct blocking b;
	int r;

	*node = node_find(s, &si->id);
	if (!s->keep(si, s->keep_payload)) {
		if (*node != NONE)
			node_del(s, *node);
		return si->has_parent &&
			(r = child_done(node, s, &si->parent, 0)) < 0 ? r : 2;
	}
	done = *node != NONE ? s->nodes[*node].done : 0;
	if (kids <= done)
		return 1;
	b.s = s;
	b.si = si;
	b.n = 0;
	if ((r = aptix_index_children_at(s->repo, &si->id, si->created_at,
					 blocking_kid, &b)) < 0)
		return r;
	if (!b.n)
		return 1;
	if (*node == NONE && (r = node_add(node, s, &si->id)) < 0)
		return r;
	return wait_add(s, si, b.n, *node);
}

static int waits_forever(struct stream *s)
{
	size_t i;

	for (i = 0; i < s->nw; i++)
		if (s->w[i].left)
			return cycle(&s->w[i].si.id);
	return cycle(&s->cur.id);
}

int stream_next(struct stream *s)
{
	aptix_session_info *si;
	uint32_t x, node;
	int r;

	for (;;) {
		if (s->nready) {
			x = ready_pop(s);
			s->cur = s->w[x].si;
			s->w[x].next_free = s->free_w;
			s->free_w = x;
			s->nwaiting--;
			return emit(s, &s->cur, node_find(s, &s->cur.id));
		}
		if (s->pos == s->nchunk) {
			if (s->eof && s->err)
				return kept_error(s);
			if (s->eof)
				return s->nwaiting ? waits_forever(s) :
					APTIX_ITEROVER;
			if ((r = chunk_fill(s)) < 0)
				return r;
			continue;
		}
		si = &s->chunk[s->pos++];
		if ((r = take(&node, s, si)) < 0)
			return r;
		if (r == 1)
			return emit(s, si, node);
	}
}

const aptix_session_info *stream_cur(const struct stream *s, uint32_t *seq,
				     uint32_t *parent_seq)
{
	*seq = s->cur_seq;
	*parent_seq = s->cur_parent;
	return &s->cur;
}

void stream_free(struct stream *s)
{
	if (!s)
		return;
	free(s->errmsg);
	free(s->chunk);
	free(s->kids);
	free(s->cslots);
	free(s->nodes);
	free(s->slots);
	free(s->w);
	free(s->ready);
	free(s);
}

int stream_new(struct stream **out, aptix_repo *repo, int64_t since,
	       uint32_t first_seq, stream_keep_fn keep, void *payload,
	       int keep_all)
{
	struct stream *s;
	int r;

	*out = NULL;
	if (!(s = aptix__calloc(1, sizeof(*s))))
		return APTIX_ERROR;
	s->repo = repo;
	s->since = since;
	s->keep = keep;
	s->keep_payload = payload;
	s->keep_all = keep_all && !since;
	s->free_node = s->free_w = NONE;
	s->next_seq = first_seq;
	r = chunk_fill(s);
	if (r == APTIX_ENOTFOUND || (r == 0 && s->before_1970 && !since)) {
		aptix_error_clear();
		stream_free(s);
		return 1;
	}
	if (r < 0) {
		stream_free(s);
		return r;
	}
	*out = s;
	return 0;
}
