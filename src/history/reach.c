/*
 * src/history/reach.c - reachability (aptix/reach.h, whose header
 * states the contract fsck and gc share).
 *
 * The set is an id map from object id to the reason that first reached
 * it; with a caller's numbering (fsck: objects by rank), a byte per
 * numbered object instead, and the links followed by number. Roots are collected phase by phase (refs, reflogs, claims, failed
 * sessions, young objects), each list read whole before anything is
 * marked, so that no object is read while a table is being iterated;
 * marking is an explicit stack (no recursion, so a long chain of
 * parents cannot overflow it), and an object already in the set is
 * never followed again, so a damaged store cannot make it loop.
 */
#include "util/common.h"
#include "aptix/reach.h"
#include "aptix/index.h"
#include "aptix/odb.h"
#include "aptix/oidmap.h"
#include "aptix/refs.h"
#include "aptix/run.h"

struct pending {
	aptix_oid id;
	aptix_otype type;	/* APTIX_OBJ_BAD: unknown */
	long num;		/* the caller's number, -1: none */
};

struct roots {
	struct pending *v;
	size_t n, alloc;
};

struct aptix_reach {
	aptix_repo *repo;
	aptix_reach_options o;
	aptix_oidmap set;		/* id -> aptix_reach_why */
	unsigned char *marks;		/* numbered: why, 0 when not */
	size_t nmarked;
	struct roots stack;		/* marked, not followed yet */
	struct roots added;		/* aptix_reach_add() */
	aptix_reach_why *added_why;
	size_t aadded_why;
	aptix_reach_why why;		/* the phase being marked */
	size_t broken;
	aptix_buf data;
	int64_t young;			/* ms: younger than this is kept */
};

static int roots_add(struct roots *l, const aptix_oid *id, aptix_otype type)
{
	if (aptix_oid_is_zero(id))
		return 0;
	if (aptix__grow(&l->v, &l->alloc, l->n, sizeof(*l->v), 64) < 0)
		return APTIX_ERROR;
	l->v[l->n].id = *id;
	l->v[l->n].num = -1;
	l->v[l->n++].type = type;
	return 0;
}

/* The caller's number of id, or -1. */
static long number_of(const aptix_reach *r, const aptix_oid *id)
{
	long n;

	if (!r->marks)
		return -1;
	n = r->o.number(id, r->o.links_payload);
	return n >= 0 && (size_t)n < r->o.count ? n : -1;
}

/* Whether id is in the set (num: its number, or -1), and why. */
static int in_set(const aptix_reach *r, const aptix_oid *id, long num,
		  aptix_reach_why *why)
{
	size_t v;

	if (num >= 0) {
		if (why)
			*why = (aptix_reach_why)r->marks[num];
		return r->marks[num] != 0;
	}
	if (aptix_oidmap_get(&v, &r->set, id) < 0)
		return 0;
	if (why)
		*why = (aptix_reach_why)v;
	return 1;
}

/* --- Marking ------------------------------------------------------------ */

static int mark_num(aptix_reach *r, const aptix_oid *id, aptix_otype type,
		    long num)
{
	if (in_set(r, id, num, NULL))
		return 0;
	if (num >= 0) {
		r->marks[num] = (unsigned char)r->why;
		r->nmarked++;
	} else if (aptix_oidmap_put(&r->set, id, r->why) < 0) {
		return APTIX_ERROR;
	}
	if (type == APTIX_OBJ_BLOB || aptix_oid_is_zero(id))
		return 0;
	if (roots_add(&r->stack, id, type) < 0)
		return APTIX_ERROR;
	r->stack.v[r->stack.n - 1].num = num;
	return 0;
}

static int mark(aptix_reach *r, const aptix_oid *id, aptix_otype type)
{
	return mark_num(r, id, type, number_of(r, id));
}

static int mark_cb(const aptix_oid *id, aptix_otype type,
		   const char *field UNUSED, void *payload)
{
	return mark(payload, id, type);
}

static int mark_at_cb(const aptix_oid *id, aptix_otype type, long n,
		      void *payload)
{
	aptix_reach *r = payload;

	if (n < 0 || !r->marks || (size_t)n >= r->o.count)
		return mark(r, id, type);
	return mark_num(r, id, type, n);
}

/* Follow the references of one object (read unless the caller has them). */
static int follow(aptix_reach *r, const struct pending *p)
{
	aptix_otype type;
	int e;

	if (p->num >= 0 && r->o.links_at) {
		e = r->o.links_at((size_t)p->num, mark_at_cb, r,
				  r->o.links_payload);
		if (e != APTIX_ENOTFOUND)
			return e < 0 ? e : 0;
		aptix_error_clear();
	} else if (r->o.links) {
		e = r->o.links(&p->id, mark_cb, r, r->o.links_payload);
		if (e != APTIX_ENOTFOUND)
			return e < 0 ? e : 0;
		aptix_error_clear();
	}
	e = aptix_odb_read(&r->data, &type, aptix_repo_odb(r->repo), &p->id,
			   0);
	if (e == 0)
		e = aptix_object_foreach_ref(type, r->data.ptr, r->data.len,
					     mark_cb, r);
	if (e == APTIX_ENOTFOUND || e == APTIX_ECORRUPT ||
	    e == APTIX_EMISMATCH) {
		aptix_error_clear();	/* reachable, but not there */
		r->broken++;
		return 0;
	}
	return e < 0 ? e : 0;
}

static int mark_all(aptix_reach *r, struct roots *l, aptix_reach_why why)
{
	struct pending p;
	size_t i;
	int e;

	r->why = why;
	for (i = 0; i < l->n; i++) {
		if ((e = mark(r, &l->v[i].id, l->v[i].type)) < 0)
			return e;
		while (r->stack.n) {
			p = r->stack.v[--r->stack.n];
			if ((e = follow(r, &p)) < 0)
				return e;
		}
	}
	l->n = 0;
	return 0;
}

/* The roots the caller added with this reason, then marked. */
static int mark_phase(aptix_reach *r, struct roots *l, aptix_reach_why why)
{
	size_t i;
	int e;

	for (i = 0; i < r->added.n; i++)
		if (r->added_why[i] == why &&
		    (e = roots_add(l, &r->added.v[i].id,
				   r->added.v[i].type)) < 0)
			return e;
	return mark_all(r, l, why);
}

/* --- Roots -------------------------------------------------------------- */

static int ref_cb(const aptix_ref *ref, void *payload)
{
	return ref->target ? 0 : roots_add(payload, &ref->oid, APTIX_OBJ_BAD);
}

struct young {
	aptix_reach *r;
	struct roots *l;
};

static int reflog_cb(const char *name UNUSED, const aptix_reflog_entry *e,
		     void *payload)
{
	struct young *y = payload;
	int r;

	if (e->time_ms < y->r->o.reflog_before_ms)
		return 0;	/* expired by the caller's policy */
	r = roots_add(y->l, &e->old_id, APTIX_OBJ_BAD);
	return r < 0 ? r : roots_add(y->l, &e->new_id, APTIX_OBJ_BAD);
}

static int claim_cb(const aptix_running_info *ri, void *payload)
{
	int r;

	/* the pending turn is stored by the commit: kept, not followed */
	if ((r = roots_add(payload, &ri->turn, APTIX_OBJ_BLOB)) < 0 ||
	    (r = roots_add(payload, &ri->instruction, APTIX_OBJ_BLOB)) < 0)
		return r;
	return ri->has_parent ? roots_add(payload, &ri->parent,
					  APTIX_OBJ_SESSION) : 0;
}

static int failed_cb(const aptix_session_info *si, void *payload)
{
	return si->status == APTIX_SESSION_FAILED ?
		roots_add(payload, &si->id, APTIX_OBJ_SESSION) : 0;
}

static int recent_cb(const aptix_session_info *si, void *payload)
{
	struct young *y = payload;

	if (si->created_at < y->r->young)
		return APTIX_ITEROVER;	/* newest first: the rest is older */
	return roots_add(y->l, &si->id, APTIX_OBJ_SESSION);
}

static int unmarked_cb(const aptix_oid *id, void *payload)
{
	struct young *y = payload;

	if (in_set(y->r, id, number_of(y->r, id), NULL))
		return 0;
	return roots_add(y->l, id, APTIX_OBJ_BAD);
}

/* Is a turn or a session object young (by its own times)? */
static int object_is_young(aptix_reach *r, const aptix_oid *id)
{
	aptix_turn t;
	aptix_session s;
	aptix_otype type;
	size_t size;
	int young = 0;

	if (aptix_odb_read_header(&size, &type, aptix_repo_odb(r->repo),
				  id) < 0 || type == APTIX_OBJ_BLOB ||
	    aptix_odb_read(&r->data, &type, aptix_repo_odb(r->repo), id,
			   0) < 0) {
		aptix_error_clear();
		return 0;
	}
	if (type == APTIX_OBJ_TURN &&
	    aptix_turn_parse(&t, r->data.ptr, r->data.len) == 0) {
		young = t.created_at >= r->young || t.status_at >= r->young;
		aptix_turn_release(&t);
	} else if (type == APTIX_OBJ_SESSION &&
		   aptix_session_parse(&s, r->data.ptr, r->data.len) == 0) {
		young = s.created_at >= r->young;
		aptix_session_release(&s);
	}
	aptix_error_clear();
	return young;
}

/* The grace period: young sessions from the timeline, young objects. */
static int young_roots(aptix_reach *r, struct roots *l)
{
	struct young y = { r, l };
	struct roots all = { NULL, 0, 0 };
	size_t i;
	int e;

	if (r->o.grace_ms <= 0)
		return 0;
	r->young = (r->o.now_ms ? r->o.now_ms : aptix_now_ms()) -
		r->o.grace_ms;
	e = aptix_index_foreach_recent(r->repo, recent_cb, &y);
	if ((e < 0 && e != APTIX_ITEROVER) || !(r->o.flags &
						 APTIX_REACH_SCAN_YOUNG))
		return e < 0 && e != APTIX_ITEROVER ? e : 0;
	y.l = &all;
	e = aptix_odb_foreach(aptix_repo_odb(r->repo), unmarked_cb, &y);
	for (i = 0; e >= 0 && i < all.n; i++)
		if (object_is_young(r, &all.v[i].id))
			e = roots_add(l, &all.v[i].id, APTIX_OBJ_BAD);
	free(all.v);
	return e < 0 ? e : 0;
}

static int want(const aptix_reach *r, aptix_reach_why why)
{
	return !(r->o.flags & APTIX_REACH_ALL) || (r->o.flags & why);
}

/*
 * The roots of one phase (none when not wanted; aptix_reach_add() gave
 * the ADDED ones already).
 */
static int collect(aptix_reach *r, struct roots *l, aptix_reach_why why)
{
	struct young y = { r, l };

	if (!want(r, why))
		return 0;
	switch (why) {
	case APTIX_REACH_REF:
		return aptix_ref_foreach(r->repo, NULL, ref_cb, l);
	case APTIX_REACH_REFLOG:
		return aptix_reflog_foreach_all(r->repo, reflog_cb, &y);
	case APTIX_REACH_CLAIM:
		return aptix_run_foreach_running(r->repo, claim_cb, l);
	case APTIX_REACH_FAILED:
		return aptix_index_foreach_session(r->repo, failed_cb, l);
	case APTIX_REACH_RECENT:
		return young_roots(r, l);
	default:
		return 0;
	}
}

/* Collect one phase's roots (keeping the first error), then mark them. */
static int phase(aptix_reach *r, struct roots *l, aptix_reach_why why,
		 int *first)
{
	int e = collect(r, l, why);

	if (e < 0 && e != APTIX_ITEROVER && !*first)
		*first = e;
	e = mark_phase(r, l, why);
	if (e < 0 && !*first)
		*first = e;
	return e;
}

/*
 * Every phase runs even when one fails (fsck reports all it can); the
 * first error is returned, so that a gc never deletes by an incomplete
 * set. Marking that fails (out of memory, a store error) stops at once.
 */
int aptix_reach_compute(aptix_reach *r)
{
	static const aptix_reach_why order[] = {
		APTIX_REACH_REF, APTIX_REACH_REFLOG, APTIX_REACH_CLAIM,
		APTIX_REACH_FAILED, APTIX_REACH_RECENT, APTIX_REACH_ADDED
	};
	struct roots l = { NULL, 0, 0 };
	int first = 0;
	size_t i;

	APTIX_ASSERT_ARG(r);
	for (i = 0; i < ARRAY_SIZE(order); i++)
		if (phase(r, &l, order[i], &first) < 0)
			break;
	free(l.v);
	return first;
}

/* --- The set ------------------------------------------------------------ */

int aptix_reach_new(aptix_reach **out, aptix_repo *repo,
		    const aptix_reach_options *opts)
{
	aptix_reach_options init = APTIX_REACH_OPTIONS_INIT;
	aptix_reach *r;

	APTIX_ASSERT_ARG(out && repo);
	if (opts && opts->version != APTIX_REACH_OPTIONS_VERSION) {
		aptix_error_set(APTIX_ERROR_INVALID, "reach options of "
				"version %u: this library knows %d",
				opts->version, APTIX_REACH_OPTIONS_VERSION);
		return APTIX_EINVALID;
	}
	if (!(r = aptix__calloc(1, sizeof(*r))))
		return APTIX_ERROR;
	r->repo = repo;
	r->o = opts ? *opts : init;
	if (r->o.count && r->o.number &&
	    !(r->marks = aptix__calloc(r->o.count, 1))) {
		free(r);
		return APTIX_ERROR;
	}
	aptix_oidmap_init(&r->set);
	aptix_buf_init(&r->data, 0);
	*out = r;
	return 0;
}

void aptix_reach_free(aptix_reach *r)
{
	if (!r)
		return;
	aptix_oidmap_release(&r->set);
	free(r->marks);
	free(r->stack.v);
	free(r->added.v);
	free(r->added_why);
	aptix_buf_release(&r->data);
	free(r);
}

int aptix_reach_add(aptix_reach *r, const aptix_oid *id, aptix_reach_why why)
{
	APTIX_ASSERT_ARG(r && id);
	if (aptix_oid_is_zero(id))
		return 0;
	if (aptix__grow(&r->added_why, &r->aadded_why, r->added.n,
			sizeof(*r->added_why), 64) < 0 ||
	    roots_add(&r->added, id, APTIX_OBJ_BAD) < 0)
		return APTIX_ERROR;
	r->added_why[r->added.n - 1] = why;
	return 0;
}

int aptix_reach_contains(const aptix_reach *r, const aptix_oid *id,
			 aptix_reach_why *why)
{
	if (!r || !id)
		return 0;
	return in_set(r, id, number_of(r, id), why);
}

int aptix_reach_contains_at(const aptix_reach *r, size_t n,
			    aptix_reach_why *why)
{
	if (!r || !r->marks || n >= r->o.count)
		return 0;
	if (why)
		*why = (aptix_reach_why)r->marks[n];
	return r->marks[n] != 0;
}

size_t aptix_reach_count(const aptix_reach *r)
{
	return r ? aptix_oidmap_size(&r->set) + r->nmarked : 0;
}

size_t aptix_reach_broken(const aptix_reach *r)
{
	return r ? r->broken : 0;
}
