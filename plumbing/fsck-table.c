/*
 * plumbing/fsck-table.c - fsck's table of the objects, in a few bytes
 * each.
 *
 * A million sessions are three million objects: their 32-byte ids alone
 * took 96 MB of fsck's memory, and a hash table over them 32 MB more.
 * Objects are numbered instead by their rank (their order by id, the
 * order in which an LMDB store's walk gives them), and the table keeps
 * of each id its first 8 bytes (big-endian: sorted with the ranks), its
 * type and flags, and a count of its links; a bucket index by the keys'
 * top bits finds a rank in a probe or two. An id is found by its key:
 * ids are SHA-256 hashes, so two objects share a key with a chance of
 * about n^2 / 2^65 (1 in 4 million at 3 million objects), and then
 * both keep their whole id (F_SHARED) and are told apart by it. A link
 * to a missing object whose first 8 bytes are those of a stored one
 * would be taken for it (a chance of n / 2^64 per such link); a
 * damaged link is caught before that by the value's checksum, and
 * --full re-hashes every object.
 *
 * The ids fsck must print or read again are kept as it meets them
 * (corrupt objects, failed sessions), or found by another walk of the
 * headers (dangling ones). Paths of a damaged store (a walk that stops
 * short) read every id again into memory, as fsck did before.
 *
 * A backend whose walk does not give ids in order (not LMDB's) has them
 * collected whole, sorted, and then numbered the same way.
 */
#include <stdlib.h>
#include <string.h>
#include "cli.h"
#include "fsck-table.h"

#define ITER_UNSORTED 2		/* a walk's stop: ids out of order */

static uint64_t key_of(const struct fsck_table *t, const aptix_oid *id)
{
	uint64_t k = 0;
	unsigned i;

	for (i = 0; i < 8; i++)
		k = (k << 8) | (i < t->key_bytes ? id->id[i] : 0);
	return k;
}

/* Keep id as object n's (lists are in rank order). */
static void ided_add(struct fsck_ided_list *l, size_t n, const aptix_oid *id)
{
	size_t at = l->n;

	while (at && l->v[at - 1].n >= n)
		at--;
	if (at < l->n && l->v[at].n == n)
		return;
	l->v = cli_grow(l->v, &l->alloc, l->n, sizeof(*l->v));
	memmove(&l->v[at + 1], &l->v[at], (l->n - at) * sizeof(*l->v));
	l->v[at].n = (uint32_t)n;
	l->v[at].id = *id;
	l->n++;
}

static const struct fsck_ided *ided_find(const struct fsck_ided_list *l,
					 size_t n);

/* Where object n is in l, which has it. */
static size_t ided_at(const struct fsck_ided_list *l, size_t n)
{
	return (size_t)(ided_find(l, n) - l->v);
}

static const struct fsck_ided *ided_find(const struct fsck_ided_list *l,
					 size_t n)
{
	size_t lo = 0, hi = l->n;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (l->v[mid].n == n)
			return &l->v[mid];
		if (l->v[mid].n < n)
			lo = mid + 1;
		else
			hi = mid;
	}
	return NULL;
}

const aptix_oid *fsck_id_kept(const struct fsck_table *t, size_t n)
{
	const struct fsck_ided *e = ided_find(&t->shared, n);

	if (!e)
		e = ided_find(&t->seen, n);
	if (e)
		return &e->id;
	return t->ids ? &t->ids[n] : NULL;
}

/* Append object id (ids in order): its key, and its id when needed. */
static void add_obj(struct fsck_table *t, const aptix_oid *id,
		    aptix_otype type)
{
	size_t n = t->nobjs;
	uint64_t k = key_of(t, id);

	if (n >= UINT32_MAX - 1)
		die("too many objects for fsck (%zu)", n);
	if (n >= t->aobjs) {
		size_t a = t->aobjs ? t->aobjs * 2 : 1024;

		if (!(t->keys = realloc(t->keys, a * sizeof(*t->keys))) ||
		    !(t->types = realloc(t->types, a)) ||
		    !(t->flags = realloc(t->flags, a)))
			die("out of memory");
		t->aobjs = a;
	}
	t->keys[n] = k;
	t->types[n] = (unsigned char)type;
	t->flags[n] = 0;
	if (n && t->keys[n - 1] == k) {
		if (!(t->flags[n - 1] & F_SHARED))
			ided_add(&t->shared, n - 1, &t->last);
		t->flags[n - 1] |= F_SHARED;
		t->flags[n] |= F_SHARED;
	}
	if ((t->flags[n] & F_SHARED) || type == APTIX_OBJ_BAD)
		ided_add(&t->shared, n, id);
	t->last = *id;
	t->nobjs++;
}

static int collect_cb(const aptix_oid *id, aptix_otype type,
		      size_t size APTIX_UNUSED, void *payload)
{
	struct fsck_table *t = payload;

	if (t->nobjs && aptix_oid_cmp(&t->last, id) >= 0) {
		t->unsorted = 1;
		return ITER_UNSORTED;
	}
	add_obj(t, id, type);
	return 0;
}

struct whole {
	aptix_oid id;
	unsigned char type;
};

struct whole_list {
	struct whole *v;
	size_t n, alloc;
};

static int whole_cb(const aptix_oid *id, aptix_otype type,
		    size_t size APTIX_UNUSED, void *payload)
{
	struct whole_list *l = payload;

	l->v = cli_grow(l->v, &l->alloc, l->n, sizeof(*l->v));
	l->v[l->n].id = *id;
	l->v[l->n++].type = (unsigned char)type;
	return 0;
}

static int whole_cmp(const void *a, const void *b)
{
	return aptix_oid_cmp(&((const struct whole *)a)->id,
			     &((const struct whole *)b)->id);
}

/* Ids out of order: collected whole, sorted, then numbered. */
static int load_unsorted(struct fsck_table *t)
{
	struct whole_list l = { NULL, 0, 0 };
	size_t i;
	int r = aptix_odb_foreach_header(t->odb, whole_cb, &l);

	t->nobjs = 0;
	t->shared.n = 0;
	if (l.n)
		qsort(l.v, l.n, sizeof(*l.v), whole_cmp);
	for (i = 0; i < l.n; i++)
		add_obj(t, &l.v[i].id, (aptix_otype)l.v[i].type);
	free(l.v);
	return r < 0 ? r : 0;
}

static void make_buckets(struct fsck_table *t)
{
	size_t nb = 1, b, i = 0;
	unsigned bits = 0;

	while (nb < t->nobjs / 4 && bits < 32) {
		nb *= 2;
		bits++;
	}
	t->shift = 64 - bits;
	if (!(t->bucket = malloc((nb + 1) * sizeof(*t->bucket))))
		die("out of memory");
	for (b = 0; b < nb; b++) {
		while (i < t->nobjs && (bits ? t->keys[i] >> t->shift : 0) < b)
			i++;
		t->bucket[b] = (uint32_t)i;
	}
	t->bucket[nb] = (uint32_t)t->nobjs;
}

int fsck_table_load(struct fsck_table *t, aptix_odb *odb)
{
	int r = 0;

	t->odb = odb;
	if (!t->key_bytes || t->key_bytes > 8)
		t->key_bytes = 8;
	t->unsorted = t->force_unsorted;
	if (!t->unsorted)
		r = aptix_odb_foreach_header(odb, collect_cb, t);
	if (t->unsorted)
		r = load_unsorted(t);
	make_buckets(t);
	if (!(t->nlink = calloc(t->nobjs + 1, 1)) ||
	    !(t->chk = calloc(t->nobjs / 64 + 2, sizeof(*t->chk))))
		die("out of memory");
	return r < 0 ? r : 0;
}

/* --- The walk of every object in the store's order (fsck_table_add) ---- */

void fsck_table_begin(struct fsck_table *t, aptix_odb *odb)
{
	t->odb = odb;
	if (!t->key_bytes || t->key_bytes > 8)
		t->key_bytes = 8;
}

int fsck_table_add(struct fsck_table *t, size_t n, const aptix_oid *id)
{
	if (n != t->nobjs || t->bucket ||
	    (t->nobjs && aptix_oid_cmp(&t->last, id) >= 0))
		return -1;
	add_obj(t, id, APTIX_OBJ_BLOB);	/* type: when its object comes */
	t->types[n] = APTIX_OBJ_BAD;
	return 0;
}

void fsck_table_done(struct fsck_table *t)
{
	if (t->bucket)
		return;
	make_buckets(t);
	if (!(t->nlink = calloc(t->nobjs + 1, 1)) ||
	    !(t->start = calloc(t->nobjs + 1, sizeof(*t->start))))
		die("out of memory");
}

/* Keep the ids of the objects that want() selects, met in id order. */
struct keep {
	struct fsck_table *t;
	fsck_want_fn want;
	void *payload;
};

static int keep_cb(size_t n, const aptix_oid *id, aptix_otype type,
		   const void *data, size_t len, void *payload)
{
	struct keep *k = payload;

	(void)type;
	(void)data;
	(void)len;
	if (n < k->t->nobjs && fsck_is(k->t, n, id) &&
	    k->want(k->t, n, k->payload) && !fsck_id_kept(k->t, n))
		ided_add(&k->t->seen, n, id);
	return 0;
}

int fsck_table_keep(struct fsck_table *t, fsck_want_fn want, void *payload)
{
	struct keep k = { t, want, payload };
	size_t i;

	for (i = 0; i < t->nobjs && !want(t, i, payload); i++)
		;
	if (i == t->nobjs)
		return 0;	/* none: no walk */
	return aptix_odb_foreach_all(t->odb, 0, 0, keep_cb, NULL, &k);
}

void fsck_table_release(struct fsck_table *t)
{
	free(t->start);
	free(t->keys);
	free(t->types);
	free(t->flags);
	free(t->bucket);
	free(t->shared.v);
	free(t->seen.v);
	free(t->ids);
	free(t->links);
	free(t->nlink);
	free(t->chk);
	free(t->big.v);
}

long fsck_find(const struct fsck_table *t, const aptix_oid *id)
{
	uint64_t k = key_of(t, id);
	size_t b = t->shift < 64 ? (size_t)(k >> t->shift) : 0;
	size_t lo = t->bucket[b], hi = t->bucket[b + 1];

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (t->keys[mid] < k)
			lo = mid + 1;
		else
			hi = mid;
	}
	if (lo >= t->nobjs || t->keys[lo] != k)
		return -1;
	if (!(t->flags[lo] & F_SHARED))
		return (long)lo;
	for (; lo < t->nobjs && t->keys[lo] == k; lo++)
		if (!aptix_oid_cmp(fsck_id_kept(t, lo), id))
			return (long)lo;
	return -1;
}

int fsck_is(const struct fsck_table *t, size_t n, const aptix_oid *id)
{
	return n < t->nobjs && t->keys[n] == key_of(t, id) &&
		(!(t->flags[n] & F_SHARED) ||
		 !aptix_oid_cmp(fsck_id_kept(t, n), id));
}

static int ids_cb(const aptix_oid *id, aptix_otype type APTIX_UNUSED,
		  size_t size APTIX_UNUSED, void *payload)
{
	struct fsck_table *t = payload;
	long j = fsck_find(t, id);

	if (j >= 0)
		t->ids[j] = *id;
	return 0;
}

const aptix_oid *fsck_id_at(struct fsck_table *t, size_t n)
{
	const aptix_oid *id = fsck_id_kept(t, n);

	if (id)
		return id;
	if (!(t->ids = calloc(t->nobjs ? t->nobjs : 1, sizeof(*t->ids))))
		die("out of memory");
	if (aptix_odb_foreach_header(t->odb, ids_cb, t) < 0)
		aptix_error_clear();	/* the objects walk says why */
	return &t->ids[n];
}

void fsck_flag(struct fsck_table *t, size_t n, const aptix_oid *id,
	       unsigned flags)
{
	t->flags[n] |= (unsigned char)flags;
	if (!(t->flags[n] & F_SHARED) && t->types[n] != APTIX_OBJ_BAD)
		ided_add(&t->seen, n, id);
}

void fsck_id_for(aptix_oid *out, const struct fsck_table *t, size_t n)
{
	const aptix_oid *id = NULL;
	uint64_t k = t->keys[n];
	int i;

	/* corrupt ones are read by their ids (fsck.c, fsck_links_at) */
	if (t->flags[n] & (F_CORRUPT | F_SHARED))
		id = fsck_id_kept(t, n);
	if (id) {
		*out = *id;
		return;
	}
	/* only its number counts (aptix/reach.h); never the zero id */
	memset(out, 0, sizeof(*out));
	for (i = 7; i >= 0; i--, k >>= 8)
		out->id[i] = (unsigned char)k;
	out->id[APTIX_OID_RAWSZ - 1] = 1;
}

/* --- Links -------------------------------------------------------------- */

void fsck_links_begin(struct fsck_table *t, size_t n)
{
	t->base = t->nlinks;
	if (t->start)
		t->start[n] = (uint32_t)t->nlinks;
	else if (!(n % 64))
		t->chk[n / 64] = (uint32_t)t->nlinks;
}

void fsck_links_add(struct fsck_table *t, uint32_t to)
{
	if (t->nlinks >= UINT32_MAX)
		die("too many links for fsck (%zu)", t->nlinks);
	t->links = cli_grow(t->links, &t->alinks, t->nlinks,
			    sizeof(*t->links));
	t->links[t->nlinks++] = to;
}

void fsck_links_undo(struct fsck_table *t)
{
	t->nlinks = t->base;
}

void fsck_links_end(struct fsck_table *t, size_t n)
{
	size_t c = t->nlinks - t->base;
	aptix_oid count;

	if (c < 255) {
		t->nlink[n] = (unsigned char)c;
		return;
	}
	t->nlink[n] = 255;
	memset(&count, 0, sizeof(count));
	memcpy(count.id, &c, sizeof(c));
	ided_add(&t->big, n, &count);	/* no-op when there (dropped) */
	memcpy(t->big.v[ided_at(&t->big, n)].id.id, &c, sizeof(c));
}

void fsck_links_drop(struct fsck_table *t, size_t n)
{
	t->nlink[n] = 0;
}

static size_t link_count(const struct fsck_table *t, size_t n)
{
	const struct fsck_ided *e;
	size_t c;

	if (t->nlink[n] < 255)
		return t->nlink[n];
	if (!(e = ided_find(&t->big, n)))
		return 0;
	memcpy(&c, e->id.id, sizeof(c));
	return c;
}

void fsck_links_range(const struct fsck_table *t, size_t n, size_t *lo,
		      size_t *hi)
{
	size_t k = n - n % 64, at;

	if (t->start) {
		*lo = t->start[n];
		*hi = *lo + link_count(t, n);
		return;
	}
	for (at = t->chk[n / 64]; k < n; k++)
		at += link_count(t, k);
	*lo = at;
	*hi = at + link_count(t, n);
}

/* --- Selected ids ------------------------------------------------------- */

struct select {
	struct fsck_table *t;
	fsck_want_fn want;
	void *payload;
	struct fsck_ided_list l;
};

static int select_cb(const aptix_oid *id, aptix_otype type APTIX_UNUSED,
		     size_t size APTIX_UNUSED, void *payload);

static int select_all_cb(size_t n, const aptix_oid *id, aptix_otype type,
			 const void *data, size_t len, void *payload)
{
	(void)n;
	(void)data;
	return select_cb(id, type, len, payload);
}

static int select_cb(const aptix_oid *id, aptix_otype type APTIX_UNUSED,
		     size_t size APTIX_UNUSED, void *payload)
{
	struct select *s = payload;
	long j = fsck_find(s->t, id);

	if (j >= 0 && s->want(s->t, (size_t)j, s->payload)) {
		s->l.v = cli_grow(s->l.v, &s->l.alloc, s->l.n,
				  sizeof(*s->l.v));
		s->l.v[s->l.n].n = (uint32_t)j;
		s->l.v[s->l.n++].id = *id;
	}
	return 0;
}

static int ided_cmp(const void *a, const void *b)
{
	uint32_t x = ((const struct fsck_ided *)a)->n;
	uint32_t y = ((const struct fsck_ided *)b)->n;

	return x < y ? -1 : x > y;
}

int fsck_foreach_selected(struct fsck_table *t, fsck_want_fn want,
			  fsck_each_fn cb, void *payload)
{
	struct select s = { t, want, payload, { NULL, 0, 0 } };
	size_t i;
	int r = 0;

	for (i = 0; i < t->nobjs && !want(t, i, payload); i++)
		;
	if (i == t->nobjs)
		return 0;	/* none: no walk */
	if (t->ids) {
		for (i = 0; i < t->nobjs; i++)
			if (want(t, i, payload))
				cb(t, i, &t->ids[i], payload);
		return 0;
	}
	/* the ids alone (no value read) where the store can */
	r = aptix_odb_foreach_all(t->odb, 0, 0, select_all_cb, NULL, &s);
	if (r == APTIX_PASSTHROUGH)
		r = aptix_odb_foreach_header(t->odb, select_cb, &s);
	if (s.l.n)
		qsort(s.l.v, s.l.n, sizeof(*s.l.v), ided_cmp);
	for (i = 0; i < s.l.n; i++)
		if (!i || s.l.v[i].n != s.l.v[i - 1].n)
			cb(t, s.l.v[i].n, &s.l.v[i].id, payload);
	free(s.l.v);
	return r < 0 ? r : 0;
}
