/*
 * src/history/revwalk.c - the revision walker (aptix/revwalk.h).
 *
 * The walk keeps one compact record per session it meets (no
 * allocation per session: ids, times and offsets into one text buffer
 * where conversation ids are interned), found again through an open
 * addressing table on the id; a record's place in the table is its
 * number (seq), which callers key their own per-session state on.
 *
 * Two engines, as git's revision.c has:
 *
 *  - lazy (APTIX_SORT_TIME, APTIX_SORT_NONE): a priority queue, newest
 *    first. A session's parent is looked up only when the session
 *    leaves the queue, so the first n sessions cost about n lookups.
 *    When a session is taken, its failed children are queued too
 *    (APTIX_REVWALK_FAILED).
 *
 *  - topological (APTIX_SORT_TOPOLOGICAL): the sessions to return are
 *    known first (every indexed one for push_all, read in one pass;
 *    else what the lazy walk returns), then a session comes out only
 *    after all of its children, the newest ready one first. Parents
 *    that never become ready (a cycle, only in a corrupt store) end
 *    the walk with APTIX_ECORRUPT.
 *
 * APTIX_SORT_REVERSE reads either whole and returns it backwards.
 *
 * The topological walk of push_all streams (revwalk-stream.c) when every
 * session's record is in the timeline: it reads the timeline newest
 * first, a piece at a time, and holds only what it has not returned
 * yet, so `log --all` starts printing at once and its memory does not
 * grow with the store.
 */
#include <fnmatch.h>
#include "util/common.h"
#include "aptix/revwalk.h"
#include "aptix/index.h"
#include "aptix/oidmap.h"
#include "aptix/odb.h"
#include "aptix/refs.h"
#include "aptix/search.h"
#include "history/stream.h"
#include "util/env.h"

#define NONE APTIX_REVWALK_NONE

enum {
	R_QUEUED = 1,		/* taken into the lazy walk */
	R_INSET = 2,		/* to be returned by the topological walk */
	R_RETURNED = 4,
	R_OBJECT = 8		/* read from its object: not indexed */
};

struct rec {
	aptix_oid id, parent, turn;
	int64_t created_at;
	uint32_t generation;
	uint32_t conv;		/* offset of the conversation id in text */
	uint32_t summary;	/* offset of the summary in text */
	uint32_t parent_seq;
	uint32_t pending;	/* topological: children not returned yet */
	unsigned char status, turn_status, has_parent, flags;
};

/* A queued session, its sort key at hand (fewer cache misses). */
struct qent {
	int64_t created_at;
	uint32_t generation, k;
};

struct stream;

struct aptix_revwalk {
	aptix_repo *repo;
	unsigned sorting, flags;
	int64_t since, until;

	struct rec *v;
	uint32_t nr;
	size_t alloc;
	uint32_t *hash;			/* open addressing on v by id */
	uint32_t hmask;
	aptix_buf text;			/* NUL-terminated strings */
	uint32_t *convs;		/* interned conversation ids */
	uint32_t cmask, nconvs;

	struct qent *heap;
	uint32_t nheap;
	size_t aheap;
	aptix_oid *kids;		/* scratch: children of a session */
	size_t nkids, akids;
	uint32_t *starts;		/* pushed, queued when the walk starts */
	size_t nstarts, astarts;
	aptix_oidmap hidden;		/* hidden sessions and ancestors */
	int any_hidden;
	int all;			/* push_all */
	char (*archived)[APTIX_CONV_MAXLEN + 1];	/* sorted */
	size_t narchived, aarchived;
	int lazy_archived;		/* asked conversation by conversation */

	int started;
	uint32_t nset, nout;		/* topological: to return, returned */
	uint32_t *order;		/* reverse: the walk, read whole */
	size_t norder, aorder, pos;

	int streamed;			/* push_all, topological: stream */
	struct stream *st;
	aptix_session_info looked;	/* lookup() while it streams */
	aptix_search_filter *limit;	/* borrowed: only what it lets by */
	int listed;			/* order is the walk, read forward */
	int from_object;		/* read_session() read an object */

	/*
	 * A limited walk from start points (not push_all): the sessions the
	 * limit lets by, listed by the search index (has_cands), so that
	 * each walked session costs a lookup in a map, not in the index.
	 * From their records: the sessions whose failed children can lead
	 * to one (anchored; the children of others are not looked up) and
	 * the lowest generation any of them needs (floor: a parent below it
	 * is read, for parent_seq, but its ancestors are not walked).
	 * Many candidates are read only once the walk has taken twice as
	 * many sessions (deferred: taken counts them up to read_at).
	 */
	aptix_oidmap cands, anchors;
	int has_cands, anchored, deferred;
	size_t taken, read_at;
	uint32_t floor;
};

/* --- Records ------------------------------------------------------------ */

static uint32_t oid_hash(const aptix_oid *id)
{
	uint32_t h;

	memcpy(&h, id->id, sizeof(h));
	return h;
}

static uint32_t lookup(const aptix_revwalk *w, const aptix_oid *id)
{
	uint32_t i, k;

	if (!w->hash)
		return NONE;
	for (i = oid_hash(id) & w->hmask;; i = (i + 1) & w->hmask) {
		k = w->hash[i];
		if (k == NONE || !memcmp(w->v[k].id.id, id->id, APTIX_OID_RAWSZ))
			return k;
	}
}

static void hash_insert(uint32_t *hash, uint32_t mask, const struct rec *v,
			uint32_t k)
{
	uint32_t i;

	for (i = oid_hash(&v[k].id) & mask; hash[i] != NONE;
	     i = (i + 1) & mask)
		;
	hash[i] = k;
}

static int hash_grow(aptix_revwalk *w)
{
	uint32_t size = w->hash ? (w->hmask + 1) * 2 : 1024, k;
	uint32_t *h;

	if (size == 0 || !(h = aptix__malloc((size_t)size * sizeof(*h))))
		return aptix_error_oom();
	free(w->hash);
	w->hash = h;
	memset(w->hash, 0xff, (size_t)size * sizeof(*w->hash));
	w->hmask = size - 1;
	for (k = 0; k < w->nr; k++)
		hash_insert(w->hash, w->hmask, w->v, k);
	return 0;
}

static int text_add(uint32_t *off, aptix_revwalk *w, const char *s)
{
	*off = (uint32_t)w->text.len;
	if (w->text.len >= UINT32_MAX - 256) {
		aptix_error_set(APTIX_ERROR_INVALID, "too many sessions to "
				"walk at once");
		return APTIX_EFULL;
	}
	aptix_buf_put(&w->text, s, strlen(s) + 1);
	return aptix_buf_oom(&w->text) ? aptix_error_oom() : 0;
}

static const char *text_at(const aptix_revwalk *w, uint32_t off)
{
	return w->text.ptr + off;
}

static uint32_t str_hash(const char *s)
{
	uint32_t h = 2166136261u;

	while (*s)
		h = (h ^ (unsigned char)*s++) * 16777619u;
	return h;
}

static int conv_grow(aptix_revwalk *w)
{
	uint32_t *old = w->convs, oldsize = old ? w->cmask + 1 : 0;
	uint32_t size = old ? oldsize * 2 : 64, i, k;

	if (!size || !(w->convs = aptix__malloc((size_t)size *
						sizeof(*w->convs)))) {
		w->convs = old;
		return aptix_error_oom();
	}
	memset(w->convs, 0xff, (size_t)size * sizeof(*w->convs));
	w->cmask = size - 1;
	for (k = 0; k < oldsize; k++) {
		if (old[k] == NONE)
			continue;
		for (i = str_hash(text_at(w, old[k])) & w->cmask;
		     w->convs[i] != NONE; i = (i + 1) & w->cmask)
			;
		w->convs[i] = old[k];
	}
	free(old);
	return 0;
}

/*
 * Conversation ids repeat: keep one copy of each. The byte after its
 * NUL says whether the conversation is archived, once asked (see
 * conv_archived()): CONV_UNASKED until then.
 */
enum { CONV_UNASKED = 0, CONV_KEPT = 1, CONV_ARCHIVED = 2 };

static int conv_intern(uint32_t *off, aptix_revwalk *w, const char *conv)
{
	uint32_t i;
	int r;

	if ((!w->convs || 2 * (w->nconvs + 1) > w->cmask + 1) &&
	    (r = conv_grow(w)) < 0)
		return r;
	for (i = str_hash(conv) & w->cmask; w->convs[i] != NONE;
	     i = (i + 1) & w->cmask)
		if (!strcmp(text_at(w, w->convs[i]), conv)) {
			*off = w->convs[i];
			return 0;
		}
	if ((r = text_add(off, w, conv)) < 0)
		return r;
	aptix_buf_put(&w->text, "", 1);	/* CONV_UNASKED */
	if (aptix_buf_oom(&w->text))
		return aptix_error_oom();
	w->nconvs++;
	w->convs[i] = *off;
	return 0;
}

static int add_rec(uint32_t *out, aptix_revwalk *w,
		   const aptix_session_info *si)
{
	struct rec *r;
	uint32_t conv, summary;
	int e;

	if (w->nr >= NONE - 1) {
		aptix_error_set(APTIX_ERROR_INVALID, "too many sessions to "
				"walk at once");
		return APTIX_EFULL;
	}
	if ((e = conv_intern(&conv, w, si->conversation)) < 0 ||
	    (e = text_add(&summary, w, si->summary)) < 0 ||
	    (e = aptix__grow(&w->v, &w->alloc, w->nr, sizeof(*w->v),
			     256)) < 0)
		return e;
	if ((!w->hash || 2 * (w->nr + 1) > w->hmask + 1) &&
	    (e = hash_grow(w)) < 0)
		return e;
	r = &w->v[w->nr];
	memset(r, 0, sizeof(*r));
	r->id = si->id;
	r->parent = si->parent;
	r->turn = si->turn;
	r->has_parent = !!si->has_parent;
	r->status = (unsigned char)si->status;
	r->turn_status = (unsigned char)si->turn_status;
	r->created_at = si->created_at;
	r->generation = si->generation;
	r->parent_seq = NONE;
	r->conv = conv;
	r->summary = summary;
	hash_insert(w->hash, w->hmask, w->v, w->nr);
	*out = w->nr++;
	return 0;
}

/* --- Sessions: from the index, or from their objects --------------------- */

/* The instruction's first line and the turn's status, when readable. */
static void turn_details(aptix_session_info *si, aptix_repo *repo)
{
	aptix_turn t;
	aptix_buf text = APTIX_BUF_INIT;

	aptix_turn_init(&t);
	if (aptix_turn_lookup(&t, repo, &si->turn) == 0) {
		si->turn_status = t.status;
		if (aptix_blob_lookup(&text, repo, &t.instruction) == 0)
			aptix_summary_line(si->summary, APTIX_SUMMARY_MAX,
					   text.ptr, text.len);
	}
	aptix_turn_release(&t);
	aptix_buf_release(&text);
	aptix_error_clear();
}

/*
 * A session the index does not know (a stale or damaged index): its
 * record made from its object, as reindex would (the generation from
 * the parent's, when the walk has it; else 0, unknown).
 */
static int from_object(aptix_session_info *si, aptix_revwalk *w,
		       const aptix_oid *id)
{
	aptix_session s;
	uint32_t p;
	int r;

	aptix_session_init(&s);
	r = aptix_session_lookup(&s, w->repo, id);
	if (r == APTIX_ENOTFOUND)
		aptix_error_set(APTIX_ERROR_ODB, "session '%s' is missing",
				aptix_oid_hex(id));
	if (r < 0) {
		aptix_session_release(&s);
		return r;
	}
	memset(si, 0, sizeof(*si));
	si->id = *id;
	si->parent = s.parent;
	si->has_parent = s.has_parent;
	si->turn = s.turn;
	si->status = s.status;
	si->created_at = s.created_at;
	snprintf(si->conversation, sizeof(si->conversation), "%s",
		 s.conversation ? s.conversation : "");
	aptix_session_release(&s);
	if (si->has_parent && (p = lookup(w, &si->parent)) != NONE &&
	    w->v[p].generation)
		si->generation = w->v[p].generation + 1;
	turn_details(si, w->repo);
	w->from_object = 1;
	return 0;
}

static int read_session(aptix_session_info *si, aptix_revwalk *w,
			const aptix_oid *id)
{
	int r = aptix_index_session(si, w->repo, id);

	if (r != APTIX_ENOTFOUND)
		return r;
	aptix_error_clear();
	return from_object(si, w, id);
}

/* The record of a session, read into the table if the walk lacks it. */
static int find(uint32_t *out, aptix_revwalk *w, const aptix_oid *id)
{
	aptix_session_info si;
	int r;

	if ((*out = lookup(w, id)) != NONE)
		return 0;
	w->from_object = 0;
	if ((r = read_session(&si, w, id)) < 0 ||
	    (r = add_rec(out, w, &si)) < 0)
		return r;
	if (w->from_object)
		w->v[*out].flags |= R_OBJECT;
	return 0;
}

/* A start point, queued when the walk starts. */
static int add_start(aptix_revwalk *w, uint32_t k)
{
	if (aptix__grow(&w->starts, &w->astarts, w->nstarts,
			sizeof(*w->starts), 16) < 0)
		return APTIX_ERROR;
	w->starts[w->nstarts++] = k;
	return 0;
}

static int is_hidden(const aptix_revwalk *w, const aptix_oid *id)
{
	return w->any_hidden && aptix_oidmap_get(NULL, &w->hidden, id) == 0;
}

/* --- Priority queue: newest first --------------------------------------- */

static int before(const aptix_revwalk *w, const struct qent *a,
		  const struct qent *b)
{
	if (a->created_at != b->created_at)
		return a->created_at > b->created_at;
	if (a->generation != b->generation)
		return a->generation > b->generation;
	return memcmp(w->v[a->k].id.id, w->v[b->k].id.id,
		      APTIX_OID_RAWSZ) < 0;
}

static void swap(struct qent *a, struct qent *b)
{
	struct qent t = *a;

	*a = *b;
	*b = t;
}

static void sift_down(aptix_revwalk *w, uint32_t i)
{
	struct qent *h = w->heap;
	uint32_t n = w->nheap, c;

	for (;;) {
		c = 2 * i + 1;
		if (c >= n)
			break;
		if (c + 1 < n && before(w, &h[c + 1], &h[c]))
			c++;
		if (!before(w, &h[c], &h[i]))
			break;
		swap(&h[c], &h[i]);
		i = c;
	}
}

static void heap_set(const aptix_revwalk *w, struct qent *e, uint32_t k)
{
	e->created_at = w->v[k].created_at;
	e->generation = w->v[k].generation;
	e->k = k;
}

static int heap_push(aptix_revwalk *w, uint32_t k)
{
	struct qent *h;
	uint32_t i, p;

	if (aptix__grow(&w->heap, &w->aheap, w->nheap, sizeof(*w->heap),
			64) < 0)
		return APTIX_ERROR;
	h = w->heap;
	i = w->nheap++;
	heap_set(w, &h[i], k);
	while (i) {
		p = (i - 1) / 2;
		if (!before(w, &h[i], &h[p]))
			break;
		swap(&h[p], &h[i]);
		i = p;
	}
	return 0;
}

static uint32_t heap_pop(aptix_revwalk *w)
{
	uint32_t top;

	if (!w->nheap)
		return NONE;
	top = w->heap[0].k;
	w->heap[0] = w->heap[--w->nheap];
	sift_down(w, 0);
	return top;
}

/* --- The lazy walk ------------------------------------------------------ */

static int collect_kid(const aptix_oid *id, void *payload)
{
	aptix_revwalk *w = payload;

	if (aptix__grow(&w->kids, &w->akids, w->nkids, sizeof(*w->kids),
			16) < 0)
		return APTIX_ERROR;
	w->kids[w->nkids++] = *id;
	return 0;
}

static int take(aptix_revwalk *w, uint32_t k);
static int read_cands(aptix_revwalk *w);

/* Failed snapshots hang off the history without any ref: find them. */
static int queue_failed_children(aptix_revwalk *w, uint32_t k)
{
	size_t start = w->nkids, i;
	aptix_oid parent = w->v[k].id;
	aptix_session_info si;
	uint32_t kid;
	int r;

	r = aptix_index_children_at(w->repo, &parent, w->v[k].created_at,
				    collect_kid, w);
	for (i = start; r >= 0 && i < w->nkids; i++) {
		if (lookup(w, &w->kids[i]) != NONE)
			continue;
		if ((r = aptix_index_session(&si, w->repo, &w->kids[i])) < 0)
			break;
		if (si.status == APTIX_SESSION_FAILED &&
		    (r = add_rec(&kid, w, &si)) >= 0)
			r = take(w, kid);
	}
	w->nkids = start;
	return r < 0 ? r : 0;
}

/* Take a session into the lazy walk (once) and queue it. */
static int take(aptix_revwalk *w, uint32_t k)
{
	int r;

	if (w->v[k].flags & R_QUEUED)
		return 0;
	w->v[k].flags |= R_QUEUED;
	if ((r = heap_push(w, k)) < 0)
		return r;
	if (w->deferred && ++w->taken > w->read_at &&
	    (r = read_cands(w)) < 0)
		return r;
	if ((w->flags & APTIX_REVWALK_FAILED) &&
	    !(w->flags & APTIX_REVWALK_NO_WALK) && !is_hidden(w, &w->v[k].id) &&
	    (!w->anchored ||
	     aptix_oidmap_get(NULL, &w->anchors, &w->v[k].id) == 0))
		return queue_failed_children(w, k);
	return 0;
}

/*
 * Is parent p of k below what a limited walk needs? Then no session the
 * limit lets by is p or an ancestor of p, nor a failed child of one
 * (see start_cands()); generations are trusted only where they agree.
 */
static int below_floor(const aptix_revwalk *w, uint32_t k, uint32_t p)
{
	const struct rec *c = &w->v[k], *pr = &w->v[p];

	return w->floor && pr->generation && pr->generation < w->floor &&
		c->generation == pr->generation + 1 &&
		!(pr->flags & (R_QUEUED | R_OBJECT));
}

/* The parent of session k, as the walk returns it (or NONE). */
static int walk_parent(aptix_revwalk *w, uint32_t k)
{
	aptix_oid parent = w->v[k].parent;
	uint32_t p;
	int r;

	if (!w->v[k].has_parent || (w->flags & APTIX_REVWALK_NO_WALK) ||
	    is_hidden(w, &parent))
		return 0;
	if ((r = find(&p, w, &parent)) < 0) {
		if (r == APTIX_ENOTFOUND)
			aptix_error_set(APTIX_ERROR_ODB, "the parent %s of "
					"session %s is missing",
					aptix_oid_hex(&parent),
					aptix_oid_hex(&w->v[k].id));
		return r;
	}
	if (!below_floor(w, k, p) && (r = take(w, p)) < 0)
		return r;
	if (w->since && w->v[p].created_at < w->since)
		p = NONE;
	w->v[k].parent_seq = p;
	return 0;
}

static int next_lazy(uint32_t *out, aptix_revwalk *w)
{
	uint32_t k;
	int r;

	while ((k = heap_pop(w)) != NONE) {
		/* A..B: A's chain and what is older than --since end it */
		if (is_hidden(w, &w->v[k].id) ||
		    (w->since && w->v[k].created_at < w->since))
			continue;
		if ((r = walk_parent(w, k)) < 0)
			return r;
		if (w->until && w->v[k].created_at > w->until)
			continue;
		*out = k;
		return 0;
	}
	return APTIX_ITEROVER;
}

/* --- push_all: every indexed session, in one pass ----------------------- */

static int archived_cb(const aptix_conv_info *ci, void *payload)
{
	aptix_revwalk *w = payload;

	if (!ci->archived)
		return 0;
	if (aptix__grow(&w->archived, &w->aarchived, w->narchived,
			sizeof(*w->archived), 16) < 0)
		return APTIX_ERROR;
	snprintf(w->archived[w->narchived++], APTIX_CONV_MAXLEN + 1, "%s",
		 ci->id);
	return 0;
}

static int conv_cmp(const void *a, const void *b)
{
	return strcmp(a, b);
}

/*
 * Is conversation conv archived (1, 0, or an error)? From the list
 * load_archived() read, or (lazy_archived) from its record, read the
 * first time one of its sessions asks.
 */
static int conv_archived(aptix_revwalk *w, const char *conv)
{
	aptix_conv_info ci;
	uint32_t off;
	char *state;
	int r;

	if (!w->lazy_archived)
		return w->narchived && bsearch(conv, w->archived,
					       w->narchived,
					       sizeof(*w->archived),
					       conv_cmp) != NULL;
	if ((r = conv_intern(&off, w, conv)) < 0)
		return r;
	state = w->text.ptr + off + strlen(conv) + 1;
	if (*state == CONV_UNASKED) {
		r = aptix_index_conversation(&ci, w->repo, conv);
		if (r == APTIX_ENOTFOUND)
			aptix_error_clear();	/* no record: not archived */
		else if (r < 0)
			return r;
		*state = r == 0 && ci.archived ? CONV_ARCHIVED : CONV_KEPT;
	}
	return *state == CONV_ARCHIVED;
}

/* What push_all and push_recent leave out: 1, 0, or an error. */
static int left_out(aptix_revwalk *w, const aptix_session_info *si)
{
	if (!(w->flags & APTIX_REVWALK_FAILED) &&
	    si->status == APTIX_SESSION_FAILED)
		return 1;
	if ((w->since && si->created_at < w->since) ||
	    (w->until && si->created_at > w->until) || is_hidden(w, &si->id))
		return 1;
	if (w->flags & APTIX_REVWALK_ARCHIVED)
		return 0;
	return conv_archived(w, si->conversation);
}

/*
 * Which conversations are archived, asked of each one's record when one
 * of its sessions comes up: for a walk that meets a few sessions (the
 * matches of a search, the newest n), where reading every
 * conversation's record would cost more than the walk.
 */
static void lazy_archived(aptix_revwalk *w)
{
	w->narchived = 0;
	w->lazy_archived = 1;
}

/* Which conversations are archived: every record read, once. */
static int load_archived(aptix_revwalk *w)
{
	int r;

	w->narchived = 0;
	w->lazy_archived = 0;
	if (w->flags & APTIX_REVWALK_ARCHIVED)
		return 0;
	if ((r = aptix_index_foreach_conversation(w->repo, archived_cb,
						  w)) < 0)
		return r;
	if (w->narchived)
		qsort(w->archived, w->narchived, sizeof(*w->archived),
		      conv_cmp);
	return 0;
}

static int load_cb(const aptix_session_info *si, void *payload)
{
	aptix_revwalk *w = payload;
	uint32_t k;
	int r;

	if ((r = left_out(w, si)) != 0)
		return r < 0 ? r : 0;
	if ((k = lookup(w, &si->id)) == NONE && (r = add_rec(&k, w, si)) < 0)
		return r;
	w->v[k].flags |= R_INSET;
	return 0;
}

static int count_cb(const aptix_conv_info *c, void *payload)
{
	*(uint64_t *)payload += c->turns;
	return 0;
}

/* Size things once: every session counts in its conversation. */
static int presize(aptix_revwalk *w)
{
	uint64_t n = 0;
	int r;

	if ((r = aptix_index_foreach_conversation(w->repo, count_cb, &n)) < 0)
		return r;
	if (n <= w->alloc || n >= NONE / 4)
		return 0;
	if (aptix__grow(&w->v, &w->alloc, (size_t)n + 15, sizeof(*w->v),
			256) < 0)
		return APTIX_ERROR;
	while ((uint64_t)w->hmask + 1 < 2 * (n + 16))
		if ((r = hash_grow(w)) < 0)
			return r;
	aptix_buf_grow(&w->text, (size_t)n * 48);
	return aptix_buf_oom(&w->text) ? aptix_error_oom() : 0;
}

static int load_all(aptix_revwalk *w)
{
	int r;

	/* with --since, what is sized is what the timeline gives */
	if ((r = load_archived(w)) < 0 || (!w->since && (r = presize(w)) < 0))
		return r;
	return aptix_index_foreach_session_since(w->repo, w->since, load_cb,
						 w);
}

struct recent {
	aptix_revwalk *w;
	size_t n, max;
};

static int recent_cb(const aptix_session_info *si, void *payload)
{
	struct recent *rc = payload;
	uint32_t k;
	int r;

	/* the timeline is newest first: the rest is older still */
	if (rc->w->since && si->created_at < rc->w->since)
		return APTIX_ITEROVER;
	if ((r = left_out(rc->w, si)) != 0)
		return r < 0 ? r : 0;
	if ((r = find(&k, rc->w, &si->id)) < 0 || (r = add_start(rc->w, k)) < 0)
		return r;
	return ++rc->n >= rc->max ? APTIX_ITEROVER : 0;
}

/* --- The topological walk ----------------------------------------------- */

/* The sessions to return: marked R_INSET, their parents linked. */
static int collect_set(aptix_revwalk *w)
{
	uint32_t k, p;
	size_t i;
	int r;

	if (w->all) {
		if ((r = load_all(w)) < 0)
			return r;
		for (i = 0; i < w->nstarts; i++)
			w->v[w->starts[i]].flags |= R_INSET;
		for (k = 0; k < w->nr; k++) {
			if (!(w->v[k].flags & R_INSET) || !w->v[k].has_parent)
				continue;
			p = lookup(w, &w->v[k].parent);
			w->v[k].parent_seq = p != NONE &&
				(w->v[p].flags & R_INSET) ? p : NONE;
		}
	} else {
		for (i = 0; i < w->nstarts; i++)
			if ((r = take(w, w->starts[i])) < 0)
				return r;
		while ((r = next_lazy(&k, w)) == 0)
			w->v[k].flags |= R_INSET;
		if (r != APTIX_ITEROVER)
			return r;
	}
	w->nset = 0;
	for (k = 0; k < w->nr; k++) {
		if (!(w->v[k].flags & R_INSET))
			continue;
		w->nset++;
		p = w->v[k].parent_seq;
		if (p != NONE && !(w->v[p].flags & R_INSET))
			w->v[k].parent_seq = p = NONE;
		if (p != NONE)
			w->v[p].pending++;
	}
	return 0;
}

static int start_topo(aptix_revwalk *w)
{
	uint32_t k;
	int r;

	if ((r = collect_set(w)) < 0)
		return r;
	w->nheap = 0;
	if (aptix__grow(&w->heap, &w->aheap, w->nset ? w->nset - 1 : 0,
			sizeof(*w->heap), 64) < 0)
		return APTIX_ERROR;
	for (k = 0; k < w->nr; k++)
		if ((w->v[k].flags & R_INSET) && !w->v[k].pending)
			heap_set(w, &w->heap[w->nheap++], k);
	for (k = w->nheap / 2; k-- > 0;)
		sift_down(w, k);
	return 0;
}

static int next_topo(uint32_t *out, aptix_revwalk *w)
{
	uint32_t k, p;

	if ((k = heap_pop(w)) == NONE) {
		if (w->nout == w->nset)
			return APTIX_ITEROVER;
		for (k = 0; k + 1 < w->nr; k++)
			if ((w->v[k].flags & (R_INSET | R_RETURNED)) ==
			    R_INSET)
				break;
		aptix_error_set(APTIX_ERROR_REPOSITORY, "the parents of "
				"session %s form a cycle: the index or the "
				"store is corrupt", aptix_oid_hex(&w->v[k].id));
		return APTIX_ECORRUPT;
	}
	w->v[k].flags |= R_RETURNED;
	w->nout++;
	p = w->v[k].parent_seq;
	if (p != NONE && !--w->v[p].pending && heap_push(w, p) < 0)
		return APTIX_ERROR;
	*out = k;
	return 0;
}

/* --- limited to a search: only the matches' records ------------------- */

static int any_skew_cb(const aptix_oid *id UNUSED, void *payload)
{
	*(int *)payload = 1;
	return APTIX_ITEROVER;
}

static int match_cb(const aptix_oid *id, void *payload)
{
	aptix_revwalk *w = payload;
	aptix_session_info si;
	uint32_t k;
	int r;

	if ((r = aptix_index_session(&si, w->repo, id)) == APTIX_ENOTFOUND) {
		aptix_error_clear();
		return 0;	/* gone since (gc) */
	}
	if (r < 0 || (r = left_out(w, &si)) != 0)
		return r < 0 ? r : 0;
	if ((k = lookup(w, id)) == NONE && (r = add_rec(&k, w, &si)) < 0)
		return r;
	if (!(w->v[k].flags & R_INSET)) {
		w->v[k].flags |= R_INSET;
		return heap_push(w, k);
	}
	return 0;
}

/*
 * push_all limited to a search: when no session is older than its
 * parent, --date-order (and date order) is plain date order, newest
 * first, so the matches' records sorted give the walk's order. 0 when
 * done (w->order holds it); 1 when the whole walk must be read.
 */
static int start_listed(aptix_revwalk *w)
{
	int r, skew = 0;
	uint32_t k;

	if (!w->limit || !w->all || w->any_hidden || w->nstarts || w->nr)
		return 1;
	r = aptix_search_skewed(w->repo, any_skew_cb, &skew);
	if (r == APTIX_ENOTFOUND || skew)
		return 1;
	if (r < 0 && r != APTIX_ITEROVER)
		return r;
	lazy_archived(w);
	/* ENOTFOUND: the search index cannot list them (nothing read) */
	if ((r = aptix_search_filter_foreach(w->limit, match_cb, w)) < 0)
		return r == APTIX_ENOTFOUND ? 1 : r;
	w->norder = 0;
	while ((k = heap_pop(w)) != NONE) {
		if (aptix__grow(&w->order, &w->aorder, w->norder,
				sizeof(*w->order), 256) < 0)
			return APTIX_ERROR;
		w->order[w->norder++] = k;
		w->v[k].flags |= R_RETURNED;
	}
	w->listed = 1;
	w->pos = (w->sorting & APTIX_SORT_REVERSE) ? w->norder : 0;
	return 0;
}

/* --- limited from start points: the candidates, then the walk --------- */

/*
 * More candidates than this: their records are read only when the walk
 * has taken twice as many sessions (a candidate's record costs about
 * the lookups of two sessions' children), so that a walk that stops
 * early (-n, --since) does not pay for them, and a long one pays at
 * most about twice what it would with the best choice. Reading them at
 * any point of the walk is right: the anchors and the floor only spare
 * what is taken after.
 */
#define CANDS_READ_MAX 16384

/*
 * 1 when the candidates' reading waits, until the walk has taken
 * w->read_at sessions (APTIX_TEST_CANDS_DEFER: always, until that many).
 */
static int defer_cands(aptix_revwalk *w)
{
	const char *v = aptix_env__get(APTIX_ENV_TEST_CANDS_DEFER);
	size_t n = aptix_oidmap_size(&w->cands);

	if (v && *v) {
		w->read_at = (size_t)strtoul(v, NULL, 10);
		return 1;
	}
	w->read_at = 2 * n;
	return n > CANDS_READ_MAX;
}

static int cand_cb(const aptix_oid *id, void *payload)
{
	return aptix_oidmap_put(payload, id, 0);
}

static int mark_cb(const aptix_oid *id, void *payload)
{
	return aptix_oidmap_put(payload, id, 0);
}

/* Has each of the marked sessions its parent's record? 1 when so. */
static int parents_indexed(aptix_revwalk *w, const aptix_oidmap *marks)
{
	aptix_session_info si, pi;
	size_t i;
	int r = 0;

	for (i = 0; r == 0 && i < marks->n; i++)
		if ((r = aptix_index_session(&si, w->repo,
					     &marks->entries[i].id)) == 0 &&
		    si.has_parent)
			r = aptix_index_session(&pi, w->repo, &si.parent);
	if (r == APTIX_ENOTFOUND)
		aptix_error_clear();
	return r == APTIX_ENOTFOUND ? 0 : r < 0 ? r : 1;
}

/*
 * The generations of the index can bound the walk when every parent of
 * an indexed session is indexed: a session the search index marks
 * (skewed, or its parent had no record when it was indexed) must have
 * its parent's record, and the marks must be complete. 1 when so.
 */
static int generations_hold(aptix_revwalk *w)
{
	aptix_oidmap marks = APTIX_OIDMAP_INIT;
	int r = aptix_search_skewed(w->repo, mark_cb, &marks);

	if (r == APTIX_ENOTFOUND)
		aptix_error_clear();
	else if (r == 0)
		r = parents_indexed(w, &marks);
	aptix_oidmap_release(&marks);
	return r == APTIX_ENOTFOUND ? 0 : r < 0 ? r : 1;
}

/*
 * A candidate's part in the walk: a failed one is queued from its
 * parent's take (queue_failed_children), and a failed parent's from its
 * own: each of those is an anchor, up to the first session that is not
 * failed, whose generation is what the candidate needs (its own when it
 * is not failed). 0 in *need: unknown. 1 when a record is missing (the
 * walk would read an object): nothing can be skipped.
 */
static int cand_need(aptix_revwalk *w, const aptix_oid *id, uint32_t *need)
{
	aptix_session_info si;
	aptix_oid parent;
	int r;

	if ((r = aptix_index_session(&si, w->repo, id)) == APTIX_ENOTFOUND) {
		aptix_error_clear();
		*need = UINT32_MAX;	/* gone since (gc): not walked */
		return 0;
	}
	while (r == 0 && si.status == APTIX_SESSION_FAILED && si.has_parent) {
		parent = si.parent;
		if (aptix_oidmap_put(&w->anchors, &parent, 0) < 0)
			return APTIX_ERROR;
		r = aptix_index_session(&si, w->repo, &parent);
	}
	if (r == APTIX_ENOTFOUND) {
		aptix_error_clear();
		return 1;
	}
	*need = si.generation;
	return r;
}

/*
 * A walk from start points with a limit: the sessions it may let by,
 * from the search index (when it cannot list them, the walk asks it
 * session by session); with few enough, their records say which
 * sessions need their failed children looked up and how far down the
 * walk must go. What this skips returns nothing the limit lets by and
 * moves nothing in the order of what it does: the lazy walk is the
 * same, without sessions none of which could be returned.
 */
static int start_cands(aptix_revwalk *w)
{
	int r;

	if (!w->limit || w->all)
		return 0;
	r = aptix_search_filter_foreach(w->limit, cand_cb, &w->cands);
	if (r == APTIX_ENOTFOUND) {
		aptix_oidmap_clear(&w->cands);
		return 0;
	}
	if (r < 0)
		return r;
	w->has_cands = 1;
	if (defer_cands(w)) {
		w->deferred = 1;
		return 0;
	}
	return read_cands(w);
}

/* The candidates' records: the anchors, and the floor when it holds. */
static int read_cands(aptix_revwalk *w)
{
	uint32_t need, floor = UINT32_MAX;
	size_t i, n = aptix_oidmap_size(&w->cands);
	int r;

	w->deferred = 0;
	for (i = 0; i < n; i++) {
		if ((r = cand_need(w, &w->cands.entries[i].id, &need)) != 0) {
			aptix_oidmap_clear(&w->anchors);
			return r < 0 ? r : 0;
		}
		if (need < floor)
			floor = need;
	}
	w->anchored = 1;
	if ((r = generations_hold(w)) < 0)
		return r;
	w->floor = r && floor != UINT32_MAX ? floor : 0;
	return 0;
}

/* --- Starting, and the walk's order ------------------------------------- */

/* The stream's walk has read which are archived: no error here. */
static int stream_keep(const aptix_session_info *si, void *payload)
{
	return left_out(payload, si) == 0;
}

/*
 * push_all in topological order streams from the timeline (stream.c),
 * numbering its sessions after those read already (lookup()).
 * 1 when it cannot: the walk is read whole.
 */
static int start_stream(aptix_revwalk *w)
{
	int r;

	if (!(w->sorting & APTIX_SORT_TOPOLOGICAL) ||
	    (w->sorting & APTIX_SORT_REVERSE) || !w->all || w->nstarts)
		return 1;
	if ((r = load_archived(w)) < 0 ||
	    (r = stream_new(&w->st, w->repo, w->since, w->nr, stream_keep,
			    w, (w->flags & APTIX_REVWALK_FAILED) &&
			    !w->since && !w->until && !w->any_hidden &&
			    !w->narchived)) != 0)
		return r;
	w->streamed = 1;
	return 0;
}

static void entry_of_info(aptix_revwalk_entry *e, const aptix_session_info *si,
			  uint32_t seq, uint32_t parent_seq)
{
	e->id = si->id;
	e->parent = si->parent;
	e->turn = si->turn;
	e->has_parent = si->has_parent;
	e->status = si->status;
	e->turn_status = si->turn_status;
	e->created_at = si->created_at;
	e->generation = si->generation;
	e->seq = seq;
	e->parent_seq = parent_seq;
	e->conversation = si->conversation;
	e->summary = si->summary;
}

/* The session the stream returned last, when it is seq. */
static int stream_entry(aptix_revwalk_entry *out, const aptix_revwalk *w,
			uint32_t want)
{
	const aptix_session_info *si;
	uint32_t seq, parent_seq;

	if (!w->streamed || !w->st)
		return 0;
	si = stream_cur(w->st, &seq, &parent_seq);
	if (want != NONE && want != seq)
		return 0;
	entry_of_info(out, si, seq, parent_seq);
	return 1;
}

static int next_forward(uint32_t *out, aptix_revwalk *w)
{
	return (w->sorting & APTIX_SORT_TOPOLOGICAL) ? next_topo(out, w) :
		next_lazy(out, w);
}

static int start(aptix_revwalk *w)
{
	uint32_t k;
	size_t i;
	int r;

	w->started = 1;
	if ((r = start_listed(w)) <= 0 || (r = start_stream(w)) != 1 ||
	    (r = start_cands(w)) < 0)
		return r;
	if (w->sorting & APTIX_SORT_TOPOLOGICAL) {
		if ((r = start_topo(w)) < 0)
			return r;
	} else {
		if (w->all && (r = load_all(w)) < 0)
			return r;
		for (k = 0; w->all && k < w->nr; k++)
			if ((w->v[k].flags & R_INSET) && (r = take(w, k)) < 0)
				return r;
		for (i = 0; i < w->nstarts; i++)
			if ((r = take(w, w->starts[i])) < 0)
				return r;
	}
	if (!(w->sorting & APTIX_SORT_REVERSE))
		return 0;
	while ((r = next_forward(&k, w)) == 0) {
		if (aptix__grow(&w->order, &w->aorder, w->norder,
				sizeof(*w->order), 256) < 0)
			return APTIX_ERROR;
		w->order[w->norder++] = k;
	}
	w->pos = w->norder;
	return r == APTIX_ITEROVER ? 0 : r;
}

static void entry_of(aptix_revwalk_entry *e, const aptix_revwalk *w,
		     uint32_t k)
{
	const struct rec *r = &w->v[k];

	e->id = r->id;
	e->parent = r->parent;
	e->turn = r->turn;
	e->has_parent = r->has_parent;
	e->status = (aptix_session_status)r->status;
	e->turn_status = (aptix_turn_status)r->turn_status;
	e->created_at = r->created_at;
	e->generation = r->generation;
	e->seq = k;
	e->parent_seq = r->parent_seq;
	e->conversation = text_at(w, r->conv);
	e->summary = text_at(w, r->summary);
}

/* 1 when the limit lets session k by (or there is none), 0 if not. */
static int let_by(aptix_revwalk *w, uint32_t k)
{
	if (!w->limit)
		return 1;
	if (w->has_cands && !(w->v[k].flags & R_OBJECT))
		return aptix_oidmap_get(NULL, &w->cands, &w->v[k].id) == 0;
	return aptix_search_filter_may(w->limit, &w->v[k].id);
}

int aptix_revwalk_next_entry(aptix_revwalk_entry *out, aptix_revwalk *w)
{
	uint32_t k;
	int r = 0;

	APTIX_ASSERT_ARG(out && w);
	if (!w->started && (r = start(w)) < 0)
		return r;
	if (w->streamed) {
		do {
			if ((r = stream_next(w->st)) < 0)
				return r;
			stream_entry(out, w, NONE);
		} while (w->limit && (r = aptix_search_filter_may(w->limit,
								  &out->id)) == 0);
		return r < 0 ? r : 0;
	}
	do {
		if (w->listed && !(w->sorting & APTIX_SORT_REVERSE)) {
			if (w->pos >= w->norder)
				return APTIX_ITEROVER;
			k = w->order[w->pos++];
		} else if (w->sorting & APTIX_SORT_REVERSE) {
			if (!w->pos)
				return APTIX_ITEROVER;
			k = w->order[--w->pos];
		} else if ((r = next_forward(&k, w)) < 0) {
			return r;
		}
	} while (!w->listed && (r = let_by(w, k)) == 0);
	if (r < 0)
		return r;
	entry_of(out, w, k);
	return 0;
}

void aptix_revwalk_entry_info(aptix_session_info *out,
			      const aptix_revwalk_entry *e)
{
	memset(out, 0, sizeof(*out));
	out->id = e->id;
	out->parent = e->parent;
	out->turn = e->turn;
	out->has_parent = e->has_parent;
	out->status = e->status;
	out->turn_status = e->turn_status;
	out->created_at = e->created_at;
	out->generation = e->generation;
	snprintf(out->conversation, sizeof(out->conversation), "%s",
		 e->conversation);
	snprintf(out->summary, sizeof(out->summary), "%s", e->summary);
}

int aptix_revwalk_next(aptix_oid *out, aptix_revwalk *w)
{
	aptix_revwalk_entry e;
	int r;

	APTIX_ASSERT_ARG(out);
	if ((r = aptix_revwalk_next_entry(&e, w)) == 0)
		*out = e.id;
	return r;
}

int aptix_revwalk_get(aptix_revwalk_entry *out, const aptix_revwalk *w,
		      uint32_t seq)
{
	APTIX_ASSERT_ARG(out && w);
	if (stream_entry(out, w, seq))
		return 0;
	if (seq >= w->nr) {
		aptix_error_set(APTIX_ERROR_INVALID, "no session %u in the "
				"walk", (unsigned)seq);
		return APTIX_ENOTFOUND;
	}
	entry_of(out, w, seq);
	return 0;
}

int aptix_revwalk_lookup(aptix_revwalk_entry *out, aptix_revwalk *w,
			 const aptix_oid *id)
{
	uint32_t k;
	int r;

	APTIX_ASSERT_ARG(out && w && id);
	if (w->streamed) {	/* its numbers are the stream's now */
		if ((r = read_session(&w->looked, w, id)) < 0)
			return r;
		entry_of_info(out, &w->looked, NONE, NONE);
		return 0;
	}
	if ((r = find(&k, w, id)) < 0)
		return r;
	entry_of(out, w, k);
	return 0;
}

/* --- Setting up ----------------------------------------------------------- */

int aptix_revwalk_new(aptix_revwalk **out, aptix_repo *repo)
{
	aptix_revwalk *w;

	APTIX_ASSERT_ARG(out && repo);
	if (!(w = aptix__calloc(1, sizeof(*w))))
		return APTIX_ERROR;
	w->repo = repo;
	aptix_buf_init(&w->text, 0);
	aptix_oidmap_init(&w->hidden);
	aptix_oidmap_init(&w->cands);
	aptix_oidmap_init(&w->anchors);
	*out = w;
	return 0;
}

void aptix_revwalk_reset(aptix_revwalk *w)
{
	if (!w)
		return;
	w->nr = 0;
	if (w->hash)
		memset(w->hash, 0xff, ((size_t)w->hmask + 1) *
		       sizeof(*w->hash));
	aptix_buf_clear(&w->text);
	if (w->convs)
		memset(w->convs, 0xff, ((size_t)w->cmask + 1) *
		       sizeof(*w->convs));
	w->nconvs = 0;
	w->nheap = 0;
	w->nkids = w->nstarts = w->narchived = 0;
	w->lazy_archived = 0;
	aptix_oidmap_clear(&w->hidden);
	w->any_hidden = w->all = w->started = 0;
	w->nset = w->nout = 0;
	w->norder = w->pos = 0;
	stream_free(w->st);
	w->st = NULL;
	w->streamed = 0;
	w->listed = 0;
	aptix_oidmap_clear(&w->cands);
	aptix_oidmap_clear(&w->anchors);
	w->has_cands = w->anchored = w->deferred = 0;
	w->taken = w->read_at = 0;
	w->floor = 0;
}

void aptix_revwalk_free(aptix_revwalk *w)
{
	if (!w)
		return;
	free(w->v);
	free(w->hash);
	aptix_buf_release(&w->text);
	free(w->convs);
	free(w->heap);
	free(w->kids);
	free(w->starts);
	aptix_oidmap_release(&w->hidden);
	aptix_oidmap_release(&w->cands);
	aptix_oidmap_release(&w->anchors);
	free(w->archived);
	free(w->order);
	stream_free(w->st);
	free(w);
}

static int not_started(const aptix_revwalk *w)
{
	if (!w->started)
		return 0;
	aptix_error_set(APTIX_ERROR_INVALID, "the walk has started: "
			"aptix_revwalk_reset() it first");
	return APTIX_EINVALID;
}

int aptix_revwalk_sorting(aptix_revwalk *w, unsigned mode)
{
	APTIX_ASSERT_ARG(w);
	if (mode & ~(APTIX_SORT_TIME | APTIX_SORT_TOPOLOGICAL |
		     APTIX_SORT_REVERSE)) {
		aptix_error_set(APTIX_ERROR_INVALID, "unknown sort mode %#x",
				mode);
		return APTIX_EINVALID;
	}
	if (not_started(w))
		return APTIX_EINVALID;
	w->sorting = mode;
	return 0;
}

void aptix_revwalk_set_flags(aptix_revwalk *w, unsigned flags)
{
	if (w)
		w->flags = flags;
}

void aptix_revwalk_set_range(aptix_revwalk *w, int64_t since, int64_t until)
{
	if (w) {
		w->since = since;
		w->until = until;
	}
}

int aptix_revwalk_push(aptix_revwalk *w, const aptix_oid *id)
{
	uint32_t k;
	int r;

	APTIX_ASSERT_ARG(w && id);
	if ((r = not_started(w)) < 0 || (r = find(&k, w, id)) < 0)
		return r;
	return add_start(w, k);
}

int aptix_revwalk_push_ref(aptix_revwalk *w, const char *ref)
{
	aptix_oid id;
	int r;

	APTIX_ASSERT_ARG(w && ref);
	if ((r = aptix_ref_resolve(&id, NULL, w->repo, ref)) < 0)
		return r;
	return aptix_revwalk_push(w, &id);
}

int aptix_revwalk_push_head(aptix_revwalk *w)
{
	return aptix_revwalk_push_ref(w, "HEAD");
}

struct glob {
	aptix_revwalk *w;
	const char *pattern;
	aptix_oid *ids;
	size_t n, alloc;
};

static int glob_cb(const aptix_ref *ref, void *payload)
{
	struct glob *g = payload;

	if (ref->target || fnmatch(g->pattern, ref->name, 0))
		return 0;
	if (aptix__grow(&g->ids, &g->alloc, g->n, sizeof(*g->ids), 16) < 0)
		return APTIX_ERROR;
	g->ids[g->n++] = ref->oid;
	return 0;
}

int aptix_revwalk_push_glob(aptix_revwalk *w, const char *glob)
{
	struct glob g = { w, glob, NULL, 0, 0 };
	char prefix[APTIX_REF_MAXLEN + 1];
	size_t i, plen;
	int r;

	APTIX_ASSERT_ARG(w && glob);
	plen = strcspn(glob, "*?[\\");
	snprintf(prefix, sizeof(prefix), "%.*s", (int)(plen < APTIX_REF_MAXLEN
						     ? plen : APTIX_REF_MAXLEN),
		 glob);
	/* refs are collected first: nothing is read while they are listed */
	r = aptix_ref_foreach(w->repo, prefix, glob_cb, &g);
	for (i = 0; r >= 0 && i < g.n; i++)
		r = aptix_revwalk_push(w, &g.ids[i]);
	free(g.ids);
	return r < 0 ? r : 0;
}

int aptix_revwalk_limit(aptix_revwalk *w, aptix_search_filter *filter)
{
	int r;

	APTIX_ASSERT_ARG(w);
	if ((r = not_started(w)) < 0)
		return r;
	w->limit = filter;
	return 0;
}

int aptix_revwalk_push_all(aptix_revwalk *w)
{
	APTIX_ASSERT_ARG(w);
	if (not_started(w))
		return APTIX_EINVALID;
	w->all = 1;
	return 0;
}

int aptix_revwalk_push_recent(aptix_revwalk *w, size_t n)
{
	struct recent rc = { w, 0, n };
	int r;

	APTIX_ASSERT_ARG(w);
	if ((r = not_started(w)) < 0)
		return r;
	if (!aptix_index_has_timeline(w->repo))
		return APTIX_ENOTFOUND;
	lazy_archived(w);
	if (n && (r = aptix_index_foreach_recent(w->repo, recent_cb,
						 &rc)) < 0 &&
	    r != APTIX_ITEROVER)
		return r;
	return 0;
}

/* --- The sessions of conversations ---------------------------------------- */

/*
 * Every session of some conversations. From each one's index record:
 * its head, newest session and newest failed attempt lead up (parent by
 * parent, while in the conversation) to its first session, and the
 * children index leads down from there to every other one, failed
 * attempts too, so the cost grows with the conversation, not with the
 * store. A conversation where this finds fewer sessions than its record
 * counts (a second root: its first attempts failed before a turn
 * succeeded; a store indexed by an older aptix) is completed by one
 * scan of the session index, shared by all such conversations.
 */
struct convs {
	aptix_revwalk *w;
	const char **scan;		/* to scan for, sorted */
	size_t *scan_n;			/* their counts, by scan order */
	size_t nscan;
	aptix_oid *queue;
	size_t nqueue, aqueue;
	aptix_oidmap seen;		/* a damaged index cannot loop */
};

static int queue_add(struct convs *c, const aptix_oid *id)
{
	if (aptix_oidmap_get(NULL, &c->seen, id) == 0)
		return 0;
	if (aptix_oidmap_put(&c->seen, id, 0) < 0 ||
	    aptix__grow(&c->queue, &c->aqueue, c->nqueue, sizeof(*c->queue),
			16) < 0)
		return APTIX_ERROR;
	c->queue[c->nqueue++] = *id;
	return 0;
}

static int queue_kid(const aptix_oid *id, void *payload)
{
	return queue_add(payload, id);
}

/* The first session of conv above id (parent by parent), queued. */
static int conv_root(struct convs *c, const char *conv, const aptix_oid *id)
{
	aptix_session_info si, pi;
	int r;

	if ((r = aptix_index_session(&si, c->w->repo, id)) < 0)
		return r == APTIX_ENOTFOUND ? 0 : r;
	if (strcmp(si.conversation, conv))
		return 0;
	while (si.has_parent) {
		if ((r = aptix_index_session(&pi, c->w->repo,
					     &si.parent)) < 0)
			return r == APTIX_ENOTFOUND ? 0 : r;
		if (strcmp(pi.conversation, conv))
			break;
		si = pi;
	}
	return queue_add(c, &si.id);
}

static int push_found(aptix_revwalk *w, const aptix_session_info *si)
{
	uint32_t k;
	int r;

	if (!(w->flags & APTIX_REVWALK_FAILED) &&
	    si->status == APTIX_SESSION_FAILED)
		return 0;
	if ((k = lookup(w, &si->id)) == NONE && (r = add_rec(&k, w, si)) < 0)
		return r;
	return add_start(w, k);
}

/* Down from the roots; 1 when fewer than the record counts were found. */
static int conv_down(struct convs *c, const aptix_conv_info *ci, size_t *n)
{
	aptix_revwalk *w = c->w;
	size_t i, start = w->nstarts;
	aptix_session_info si;
	int r = 0;

	c->nqueue = 0;
	aptix_oidmap_clear(&c->seen);
	if (ci->has_head)
		r = conv_root(c, ci->id, &ci->head);
	if (r >= 0 && ci->has_last > 0)
		r = conv_root(c, ci->id, &ci->last);
	if (r >= 0 && ci->has_failed)
		r = conv_root(c, ci->id, &ci->last_failed);
	/* the queue grows at its end as the walk goes down */
	for (i = 0, *n = 0; r >= 0 && i < c->nqueue; i++) {
		if ((r = aptix_index_session(&si, w->repo, &c->queue[i])) < 0)
			break;
		if (strcmp(si.conversation, ci->id))
			continue;	/* a fork leaving it */
		(*n)++;
		if ((r = push_found(w, &si)) < 0)
			break;
		r = aptix_index_children_at(w->repo, &si.id, si.created_at,
					    queue_kid, c);
	}
	if (r < 0)
		return r;
	if (*n >= ci->turns)
		return 0;
	w->nstarts = start;	/* incomplete: scanned for instead */
	return 1;
}

static int scan_cmp(const void *a, const void *b)
{
	return strcmp(*(const char *const *)a, *(const char *const *)b);
}

static int conv_scan_cb(const aptix_session_info *si, void *payload)
{
	struct convs *c = payload;
	const char *key = si->conversation, **hit;

	hit = bsearch(&key, c->scan, c->nscan, sizeof(*c->scan), scan_cmp);
	if (!hit)
		return 0;
	c->scan_n[hit - c->scan]++;
	return push_found(c->w, si);
}

static int push_convs(struct convs *c, const char *const *ids, size_t nids,
		      size_t *counts)
{
	aptix_conv_info ci;
	size_t i, j;
	int r = 0;

	for (i = 0; r >= 0 && i < nids; i++) {
		counts[i] = 0;
		r = aptix_index_conversation(&ci, c->w->repo, ids[i]);
		if (r == APTIX_ENOTFOUND)
			r = 1;
		else if (r == 0)
			r = conv_down(c, &ci, &counts[i]);
		if (r == 1)
			c->scan[c->nscan++] = ids[i];
	}
	if (r < 0)
		return r;
	aptix_error_clear();
	if (!c->nscan)
		return 0;
	qsort(c->scan, c->nscan, sizeof(*c->scan), scan_cmp);
	memset(c->scan_n, 0, c->nscan * sizeof(*c->scan_n));
	if ((r = aptix_index_foreach_session(c->w->repo, conv_scan_cb,
					     c)) < 0)
		return r;
	for (i = 0; i < nids; i++)
		for (j = 0; j < c->nscan; j++)
			if (!strcmp(ids[i], c->scan[j]))
				counts[i] = c->scan_n[j];
	return 0;
}

int aptix_revwalk_push_conversations(aptix_revwalk *w,
				     const char *const *ids, size_t nids,
				     size_t *counts)
{
	struct convs c;
	size_t *n = counts;
	int r;

	APTIX_ASSERT_ARG(w && (ids || !nids));
	if ((r = not_started(w)) < 0)
		return r;
	memset(&c, 0, sizeof(c));
	c.w = w;
	aptix_oidmap_init(&c.seen);
	c.scan = aptix__calloc(nids + 1, sizeof(*c.scan));
	c.scan_n = aptix__calloc(nids + 1, sizeof(*c.scan_n));
	if (!n)
		n = aptix__calloc(nids + 1, sizeof(*n));
	r = c.scan && c.scan_n && n ? push_convs(&c, ids, nids, n) :
		APTIX_ERROR;
	if (n != counts)
		free(n);
	free(c.scan);
	free(c.scan_n);
	free(c.queue);
	aptix_oidmap_release(&c.seen);
	return r;
}

int aptix_revwalk_push_conversation(aptix_revwalk *w, const char *conv,
				    size_t *n)
{
	size_t count = 0;
	int r;

	APTIX_ASSERT_ARG(conv);
	r = aptix_revwalk_push_conversations(w, &conv, 1, &count);
	if (n)
		*n = count;
	return r;
}

/*
 * A session has one parent: hiding it hides its chain down to its root,
 * read now (a chain met already is not read again).
 */
int aptix_revwalk_hide(aptix_revwalk *w, const aptix_oid *start)
{
	aptix_session_info si;
	aptix_oid id;
	int r;

	APTIX_ASSERT_ARG(w && start);
	if ((r = not_started(w)) < 0)
		return r;
	for (id = *start;;) {
		if (aptix_oidmap_get(NULL, &w->hidden, &id) == 0)
			return 0;	/* the rest is there already */
		if (aptix_oidmap_put(&w->hidden, &id, 0) < 0)
			return APTIX_ERROR;
		w->any_hidden = 1;
		r = read_session(&si, w, &id);
		if (r == APTIX_ENOTFOUND) {
			aptix_error_clear();
			return 0;	/* nothing older to hide */
		}
		if (r < 0)
			return r;
		if (!si.has_parent)
			return 0;
		id = si.parent;
	}
}
