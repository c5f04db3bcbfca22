/*
 * src/remote/walk.c - what one store lacks of another's history, and
 * sending it there parents first (see struct xfer_walk).
 *
 * Both sides are repositories; the remote one is over PostgreSQL, whose
 * object backend answers "which of these do you have?" and reads and
 * writes objects in batches (exists_many, read_stored_many,
 * write_stored_many of aptix/sys/odb_backend.h), a round trip a batch.
 * The PostgreSQL backend asks within its org only (row-level security):
 * the answer never tells whether another org holds an object.
 */
#include "util/common.h"
#include "remote/remote.h"
#include "repo/repo.h"
#include "txn/txn.h"
#include "object/zstream.h"
#include "aptix/sys/odb_backend.h"

#define ON_DST ((size_t)-1)
/* Objects (and stored bytes) one transaction of a send carries at most. */
#define SEND_OBJECTS 2000
#define SEND_BYTES (16u << 20)

void aptix__walk_init(struct xfer_walk *w, aptix_repo *src, aptix_repo *dst)
{
	memset(w, 0, sizeof(*w));
	w->src = src;
	w->dst = dst;
	aptix_oidmap_init(&w->seen);
}

void aptix__walk_release(struct xfer_walk *w)
{
	size_t i;

	for (i = 0; i < w->n; i++)
		aptix_buf_release(&w->objs[i].val);
	free(w->objs);
	free(w->links);
	free(w->front);
	aptix_oidmap_release(&w->seen);
	memset(w, 0, sizeof(*w));
}

int aptix__walk_known(struct xfer_walk *w, const aptix_oid *id)
{
	return aptix_oidmap_put(&w->seen, id, ON_DST);
}

/* id to the next level, unless met already. */
static int enqueue(struct xfer_walk *w, const aptix_oid *id)
{
	if (aptix_oidmap_get(NULL, &w->seen, id) == 0)
		return 0;
	if (aptix_oidmap_put(&w->seen, id, ON_DST) < 0 ||
	    aptix__grow(&w->front, &w->afront, w->nfront, sizeof(*w->front),
			64) < 0)
		return APTIX_ERROR;
	w->front[w->nfront++] = *id;
	return 0;
}

/* --- the two sides' batches (one at a time where a backend has none) --- */

static int have_many(aptix_repo *repo, const aptix_oid *ids, size_t n,
		     unsigned char *have)
{
	aptix_odb_backend *odb = repo->backend->odb;
	size_t i;

	if (odb->exists_many)
		return odb->exists_many(odb, NULL, ids, n, have);
	for (i = 0; i < n; i++)
		have[i] = aptix_odb_exists(repo->odb, &ids[i]) == 1;
	return 0;
}

typedef int (*stored_cb)(const aptix_oid *id, const void *val, size_t len,
			 void *payload);

static int read_many(aptix_repo *repo, const aptix_oid *ids, size_t n,
		     stored_cb cb, void *payload)
{
	aptix_odb_backend *odb = repo->backend->odb;
	aptix_buf val = APTIX_BUF_INIT;
	size_t i;
	int r = 0;

	if (odb->read_stored_many)
		return odb->read_stored_many(odb, NULL, ids, n, cb, payload);
	for (i = 0; i < n && r == 0; i++) {
		r = odb->read_stored(&val, odb, NULL, &ids[i]);
		if (r == 0)
			r = cb(&ids[i], val.ptr, val.len, payload);
		else if (r == APTIX_ENOTFOUND)
			r = 0;	/* missed below */
	}
	aptix_buf_release(&val);
	return r;
}

/* --- what an object names ------------------------------------------------ */

static int decode(aptix_buf *out, aptix_otype *type, struct xfer_walk *w,
		  const void *val, size_t len);

/* A base while decoding: one the walk holds, else the source's. */
static int walk_base(aptix_buf *out, const aptix_oid *id, aptix_otype type,
		     int splice, void *payload)
{
	struct xfer_walk *w = payload;
	aptix_otype t = APTIX_OBJ_BLOB;
	size_t i;
	int r;

	(void)splice;
	if (aptix_oidmap_get(&i, &w->seen, id) == 0 && i != ON_DST)
		r = decode(out, &t, w, w->objs[i].val.ptr, w->objs[i].val.len);
	else
		r = aptix_odb_read(out, &t, w->src->odb, id, 0);
	return !r && t != type ? APTIX_ECORRUPT : r;
}

static int decode(aptix_buf *out, aptix_otype *type, struct xfer_walk *w,
		  const void *val, size_t len)
{
	return aptix_stored_decode_with(out, type, val, len, walk_base, w);
}

static int add_link(struct xfer_walk *w, const aptix_oid *id)
{
	if (aptix__grow(&w->links, &w->alinks, w->nlinks, sizeof(*w->links),
			256) < 0)
		return APTIX_ERROR;
	w->links[w->nlinks++] = *id;
	return enqueue(w, id);
}

static int ref_link(const aptix_oid *id, aptix_otype type, const char *field,
		    void *payload)
{
	(void)type;
	(void)field;
	return add_link(payload, id);
}

/* How far ahead a session's ancestors are queued (a local source). */
#define CHAIN_AHEAD 1000

static int parent_cb(const aptix_oid *id, aptix_otype type, const char *field,
		     void *payload)
{
	(void)type;
	if (field && !strcmp(field, "parent"))
		*(aptix_oid *)payload = *id;
	return 0;
}

/*
 * A source at hand (no batches: a local store) queues the ancestors of
 * a session it sends in the same level, up to CHAIN_AHEAD of them or
 * one met already, so that a long conversation costs a question a
 * thousand sessions rather than one a session. What the other side has
 * of them it says, and the walk stops there.
 */
static int chain_ahead(struct xfer_walk *w, const aptix_buf *content)
{
	aptix_odb_backend *odb = w->src->backend->odb;
	aptix_buf val = APTIX_BUF_INIT, text = APTIX_BUF_INIT;
	aptix_oid parent, next;
	aptix_otype type;
	int k, r = 0;

	memset(&parent, 0, sizeof(parent));
	aptix_object_foreach_ref(APTIX_OBJ_SESSION, content->ptr, content->len,
				 parent_cb, &parent);
	for (k = 0; k < CHAIN_AHEAD && !aptix_oid_is_zero(&parent); k++) {
		memset(&next, 0, sizeof(next));
		if (odb->read_stored(&val, odb, NULL, &parent) < 0 ||
		    decode(&text, &type, w, val.ptr, val.len) < 0 ||
		    type != APTIX_OBJ_SESSION)
			break;	/* the level's read says what is wrong */
		aptix_object_foreach_ref(type, text.ptr, text.len, parent_cb,
					 &next);
		if (aptix_oid_is_zero(&next) ||
		    aptix_oidmap_get(NULL, &w->seen, &next) == 0)
			break;
		if ((r = enqueue(w, &next)) < 0)
			break;
		parent = next;
	}
	aptix_error_clear();
	aptix_buf_release(&val);
	aptix_buf_release(&text);
	return r;
}

/* The links of objs[k]: the bases of its stored form, its references. */
static int links_of(struct xfer_walk *w, size_t k)
{
	aptix_oid bases[APTIX_STORED_MAX_SPLICES + 1];
	aptix_buf content = APTIX_BUF_INIT;
	const aptix_buf *val = &w->objs[k].val;
	aptix_otype type = (aptix_otype)(val->len ? val->ptr[0] &
					  APTIX_STORED_TYPE : 0);
	int i, nb = 0, r = 0;

	w->objs[k].link_at = w->nlinks;
	nb = aptix_stored_bases(bases, val->ptr, val->len);
	for (i = 0; i < nb && r == 0; i++)
		r = add_link(w, &bases[i]);
	if (nb < 0)
		r = APTIX_ECORRUPT;
	if (r == 0 && type != APTIX_OBJ_BLOB &&
	    (r = decode(&content, &type, w, val->ptr, val->len)) == 0)
		r = aptix_object_foreach_ref(type, content.ptr, content.len,
					     ref_link, w);
	if (r == 0 && type == APTIX_OBJ_SESSION &&
	    !w->src->backend->odb->read_stored_many)
		r = chain_ahead(w, &content);
	if (r == APTIX_ECORRUPT)
		aptix_error_set(APTIX_ERROR_ODB, "object '%s' is corrupt",
				aptix_oid_hex(&w->objs[k].id));
	aptix_buf_release(&content);
	w->objs[k].nlinks = w->nlinks - w->objs[k].link_at;
	return r;
}

/* --- the walk -------------------------------------------------------------- */

static int collect(const aptix_oid *id, const void *val, size_t len,
		   void *payload)
{
	struct xfer_walk *w = payload;
	struct xfer_obj *o;
	size_t at;

	if (aptix_oidmap_get(&at, &w->seen, id) == 0 && at != ON_DST)
		return 0;	/* a duplicate row */
	if (aptix__grow(&w->objs, &w->alloc, w->n, sizeof(*w->objs), 64) < 0)
		return APTIX_ERROR;
	o = &w->objs[w->n];
	memset(o, 0, sizeof(*o));
	o->id = *id;
	aptix_buf_init(&o->val, 0);
	if (aptix_buf_set(&o->val, val, len) < 0 ||
	    aptix_oidmap_put(&w->seen, id, w->n) < 0) {
		aptix_buf_release(&o->val);
		return APTIX_ERROR;
	}
	w->n++;
	return 0;
}

/* One level: ask dst, read what it lacks from src, queue their links. */
static int level(struct xfer_walk *w, aptix_oid *ids, size_t n)
{
	unsigned char *have = aptix__calloc(n ? n : 1, 1);
	size_t i, k = 0, first = w->n, at;
	int r;

	if (!have)
		return APTIX_ERROR;
	w->asked += n;
	if ((r = have_many(w->dst, ids, n, have)) == 0) {
		for (i = 0; i < n; i++)
			if (!have[i])
				ids[k++] = ids[i];
		r = read_many(w->src, ids, k, collect, w);
	}
	for (i = 0; r == 0 && i < k; i++)
		if (aptix_oidmap_get(&at, &w->seen, &ids[i]) < 0 ||
		    at == ON_DST) {
			aptix_error_set(APTIX_ERROR_ODB, "object '%s' is "
					"missing from the store it is sent "
					"from", aptix_oid_hex(&ids[i]));
			r = APTIX_ENOTFOUND;
		}
	for (i = first; r == 0 && i < w->n; i++)
		r = links_of(w, i);
	free(have);
	return r;
}

int aptix__walk_run(struct xfer_walk *w, const aptix_oid *tips, size_t n)
{
	aptix_oid *ids = NULL;
	size_t i;
	int r = 0;

	for (i = 0; i < n && r == 0; i++)
		r = enqueue(w, &tips[i]);
	while (r == 0 && w->nfront) {
		/* this level's ids are taken; links fill the next */
		free(ids);
		ids = w->front;
		n = w->nfront;
		w->front = NULL;
		w->nfront = w->afront = 0;
		r = level(w, ids, n);
	}
	free(ids);
	return r;
}

/* --- parents first --------------------------------------------------------- */

/*
 * objs in an order where each comes after every one of objs it names:
 * a depth-first walk, each object placed after its links (iterative:
 * a conversation's chain of sessions is as deep as it is long).
 */
static int topo_order(size_t **out, struct xfer_walk *w)
{
	size_t *order = aptix__malloc((w->n ? w->n : 1) * sizeof(*order));
	size_t *stack = aptix__malloc((w->n ? w->n : 1) * sizeof(*stack));
	size_t *next = aptix__calloc(w->n ? w->n : 1, sizeof(*next));
	unsigned char *state = aptix__calloc(w->n ? w->n : 1, 1);
	size_t i, sp, no = 0, j;
	int r = order && stack && next && state ? 0 : APTIX_ERROR;

	for (i = 0; r == 0 && i < w->n; i++) {
		if (state[i])
			continue;
		sp = 0;
		stack[sp++] = i;
		state[i] = 1;
		while (sp) {
			size_t top = stack[sp - 1];
			const struct xfer_obj *o = &w->objs[top];

			if (next[top] < o->nlinks) {
				const aptix_oid *l =
					&w->links[o->link_at + next[top]++];

				if (aptix_oidmap_get(&j, &w->seen, l) == 0 &&
				    j != ON_DST && !state[j]) {
					state[j] = 1;
					stack[sp++] = j;
				}
				continue;
			}
			order[no++] = top;
			sp--;
		}
	}
	free(stack);
	free(next);
	free(state);
	if (r < 0) {
		free(order);
		order = NULL;
	}
	*out = order;
	return r;
}

static int send_batch(struct xfer_walk *w, const size_t *order, size_t n,
		      int row_by_row)
{
	aptix_txn *tx = NULL;
	size_t i;
	int r = aptix_txn_new(&tx, w->dst);

	if (r == 0 && row_by_row)
		aptix_txn__row_by_row(tx);
	for (i = 0; r == 0 && i < n; i++) {
		const struct xfer_obj *o = &w->objs[order[i]];

		r = aptix_txn__write_stored(tx, &o->id, o->val.ptr,
					    o->val.len);
	}
	if (r == 0)
		r = aptix_txn_commit(tx);
	aptix_txn_free(tx);
	return r;
}

int aptix__walk_send(struct xfer_walk *w, aptix_xfer_result *res,
		     int row_by_row)
{
	size_t *order = NULL, at = 0, k, bytes;
	int r = topo_order(&order, w);

	while (r == 0 && at < w->n) {
		for (k = 0, bytes = 0; at + k < w->n && k < SEND_OBJECTS &&
		     (k == 0 || bytes < SEND_BYTES); k++)
			bytes += w->objs[order[at + k]].val.len;
		if ((r = send_batch(w, order + at, k, row_by_row)) < 0)
			break;
		at += k;
		res->objects += k;
		res->bytes += bytes;
		res->round_trips++;
	}
	free(order);
	return r;
}
