/*
 * src/maintenance/gc.c - aptix_gc() (aptix/gc.h).
 *
 * A plan made from reads: the reachable set (aptix/reach.h, with the
 * grace period and the reflog entries the policy expires left out),
 * every stored object outside it a victim unless a kept object is
 * stored against it, and the reflog entries older than the policy. A
 * real run makes the plan inside its write transaction (the writer's
 * lock is held: no turn commits between the set and the deletion; a
 * turn still running holds a claim, a root), deletes, and tells what
 * went once the write is durable. The index records of the sessions
 * that go are deleted in the same write (aptix_index__forget_sessions),
 * their postings under every word with them, then the file is
 * compacted when no other process has it open.
 */
#include "util/common.h"
#include "repo/repo.h"
#include "object/zstream.h"
#include "store/odb-store.h"
#include "store/backend-kv.h"
#include "index/index.h"
#include "aptix/gc.h"
#include "aptix/index.h"
#include "aptix/odb.h"
#include "aptix/oidmap.h"
#include "aptix/reach.h"

struct victim {
	aptix_oid id;
	uint64_t size;
	aptix_otype type;
};

/* A kept object stored against one that goes: written again without. */
struct rewrite {
	aptix_oid id;
	aptix_otype type;
	aptix_buf content;
};

struct expired {
	unsigned char *key;		/* reflog key: name NUL be64 seq */
	size_t klen;
	int64_t time_ms;
};

struct plan {
	aptix_repo *repo;
	aptix_store *s;
	const aptix_gc_options *o;
	int64_t now;
	aptix_reach *reach;
	struct victim *v;
	size_t nv, av;
	aptix_oidmap vset;		/* the victims' ids */
	aptix_oid *dep;			/* kept objects stored against others */
	size_t ndep, adep;
	struct rewrite *rw;
	size_t nrw, arw;
	struct expired *x;
	size_t nx, ax;
	aptix_oid *sess;		/* every session object */
	size_t ns, as;
	aptix_oid *gone;		/* the sessions that go */
	size_t ngone, agone;
	size_t objects;
	int err;
	aptix_buf tmp;
};

static void plan_reset(struct plan *p)
{
	size_t i;

	aptix_reach_free(p->reach);
	p->reach = NULL;
	aptix_oidmap_clear(&p->vset);
	for (i = 0; i < p->nx; i++)
		free(p->x[i].key);
	for (i = 0; i < p->nrw; i++)
		aptix_buf_release(&p->rw[i].content);
	p->ns = p->nv = p->nx = p->ndep = p->nrw = p->ngone = 0;
	p->objects = 0;
	p->err = 0;
}

static void plan_release(struct plan *p)
{
	plan_reset(p);
	aptix_oidmap_release(&p->vset);
	free(p->v);
	free(p->dep);
	free(p->rw);
	free(p->x);
	free(p->sess);
	free(p->gone);
	aptix_buf_release(&p->tmp);
}

static int object_cb(const void *key, size_t klen, const void *val,
		     size_t vlen, void *payload)
{
	struct plan *p = payload;
	struct victim *v;
	aptix_oid id;

	if (klen != APTIX_OID_RAWSZ)
		return 0;
	memcpy(id.id, key, APTIX_OID_RAWSZ);
	p->objects++;
	if (p->o->grace_ms < 0 || aptix_reach_contains(p->reach, &id, NULL)) {
		if (!aptix_stored_needs_bases(val, vlen))
			return 0;
		if (aptix__grow(&p->dep, &p->adep, p->ndep, sizeof(*p->dep),
				64) < 0)
			return APTIX_ERROR;
		p->dep[p->ndep++] = id;
		return 0;
	}
	if (aptix__grow(&p->v, &p->av, p->nv, sizeof(*p->v), 64) < 0)
		return APTIX_ERROR;
	v = &p->v[p->nv++];
	v->id = id;
	v->size = vlen;
	v->type = vlen ? (aptix_otype)(*(const unsigned char *)val &
				       APTIX_STORED_TYPE) : APTIX_OBJ_BAD;
	return 0;
}

/* Does the stored value need an object that goes? */
static int needs_victim(const struct plan *p, const void *val, size_t vlen)
{
	aptix_oid b[APTIX_STORED_MAX_SPLICES + 1];
	int n = aptix_stored_bases(b, val, vlen), k;

	for (k = 0; k < n; k++)
		if (aptix_oidmap_get(NULL, &p->vset, &b[k]) == 0)
			return 1;
	return 0;
}

/*
 * A kept object stored against one that goes (the base of a based
 * value, of a spliced blob: objects-format.md "Storage") is read now,
 * while its base is there, and written again without it, as purge
 * does: every kept object still reads, and what goes goes whole.
 */
static int plan_rewrites(struct plan *p)
{
	struct rewrite *rw;
	size_t i;
	int r;

	for (i = 0; i < p->nv; i++)
		if (aptix_oidmap_put(&p->vset, &p->v[i].id, 1) < 0)
			return APTIX_ERROR;
	for (i = 0; i < p->ndep && p->nv; i++) {
		if ((r = p->s->get(&p->tmp, p->s, APTIX_TABLE_OBJECTS,
				   p->dep[i].id, APTIX_OID_RAWSZ)) < 0)
			return r;
		if (!needs_victim(p, p->tmp.ptr, p->tmp.len))
			continue;
		if (aptix__grow(&p->rw, &p->arw, p->nrw, sizeof(*p->rw),
				16) < 0)
			return APTIX_ERROR;
		rw = &p->rw[p->nrw];
		rw->id = p->dep[i];
		aptix_buf_init(&rw->content, 0);
		if ((r = aptix_odb_read(&rw->content, &rw->type,
					aptix_repo_odb(p->repo), &rw->id,
					0)) < 0) {
			aptix_buf_release(&rw->content);
			return r;
		}
		p->nrw++;
	}
	return 0;
}

static int session_cb(const void *key, size_t klen, const void *val,
		      size_t vlen, void *payload)
{
	struct plan *p = payload;

	if (klen != APTIX_OID_RAWSZ || !vlen ||
	    (*(const unsigned char *)val & APTIX_STORED_TYPE) !=
	    APTIX_OBJ_SESSION)
		return 0;
	if (aptix__grow(&p->sess, &p->as, p->ns, sizeof(*p->sess), 64) < 0)
		return APTIX_ERROR;
	memcpy(p->sess[p->ns++].id, key, APTIX_OID_RAWSZ);
	return 0;
}

/*
 * Failed sessions are roots (aptix/reach.h); those the index lacks (a
 * store indexed by an older aptix, a damaged index) are found by
 * reading them, as fsck does, so that gc keeps all fsck keeps.
 */
static int failed_roots(struct plan *p)
{
	aptix_session_info si;
	aptix_session se;
	aptix_otype type;
	size_t i;
	int r;

	if ((r = p->s->iter(p->s, APTIX_TABLE_OBJECTS, NULL, 0, 0, session_cb,
			    p)) < 0)
		return r;
	for (i = 0; i < p->ns; i++) {
		r = aptix_index_session(&si, p->repo, &p->sess[i]);
		if (r != APTIX_ENOTFOUND) {
			if (r < 0)
				return r;
			continue;
		}
		aptix_error_clear();
		if (aptix_odb_read(&p->tmp, &type, aptix_repo_odb(p->repo),
				   &p->sess[i], 0) < 0 ||
		    aptix_session_parse(&se, p->tmp.ptr, p->tmp.len) < 0) {
			aptix_error_clear();	/* fsck's business */
			continue;
		}
		r = se.status == APTIX_SESSION_FAILED ?
			aptix_reach_add(p->reach, &p->sess[i],
					APTIX_REACH_FAILED) : 0;
		aptix_session_release(&se);
		if (r < 0)
			return r;
	}
	return 0;
}

static int reflog_cb(const void *key, size_t klen, const void *val,
		     size_t vlen, void *payload)
{
	struct plan *p = payload;
	struct expired *x;
	int64_t t;

	if (aptix_backend_kv_reflog_time(&t, val, vlen) < 0)
		return 0;	/* a corrupt entry is fsck's business */
	if (t >= p->o->reflog_before_ms)
		return 0;
	if (aptix__grow(&p->x, &p->ax, p->nx, sizeof(*p->x), 16) < 0 ||
	    !(p->x[p->nx].key = aptix__malloc(klen)))
		return APTIX_ERROR;
	x = &p->x[p->nx++];
	memcpy(x->key, key, klen);
	x->klen = klen;
	x->time_ms = t;
	return 0;
}

static int make_plan(struct plan *p)
{
	aptix_reach_options ro = APTIX_REACH_OPTIONS_INIT;
	size_t i;
	int r;

	plan_reset(p);
	ro.flags = APTIX_REACH_ALL | APTIX_REACH_SCAN_YOUNG;
	ro.grace_ms = p->o->grace_ms > 0 ? p->o->grace_ms : 0;
	ro.now_ms = p->now;
	ro.reflog_before_ms = p->o->reflog_before_ms;
	if (p->o->reflog_before_ms > 0 &&
	    (r = p->s->iter(p->s, APTIX_TABLE_REFLOG, NULL, 0, 0, reflog_cb,
			    p)) < 0)
		return r;
	if ((r = aptix_reach_new(&p->reach, p->repo, &ro)) < 0)
		return r;
	if (p->o->grace_ms >= 0 && ((r = failed_roots(p)) < 0 ||
				    (r = aptix_reach_compute(p->reach)) < 0))
		return r;
	if ((r = p->s->iter(p->s, APTIX_TABLE_OBJECTS, NULL, 0, 0, object_cb,
			    p)) < 0 || (r = plan_rewrites(p)) < 0)
		return r;
	/* the sessions that go: their index records go with them */
	for (i = 0; i < p->nv; i++) {
		if (p->v[i].type != APTIX_OBJ_SESSION)
			continue;
		if (aptix__grow(&p->gone, &p->agone, p->ngone,
				sizeof(*p->gone), 64) < 0)
			return APTIX_ERROR;
		p->gone[p->ngone++] = p->v[i].id;
	}
	return 0;
}

static int write_fn(aptix_backend_txn *tx, void *payload)
{
	struct plan *p = payload;
	aptix_store_wtxn *w = aptix_backend_kv_wtxn(tx);
	size_t i;
	int r;

	if (!w)
		return aptix_backend_kv_foreign(tx);

	/* the writer's lock is held: the plan sees the last commit */
	if ((r = make_plan(p)) < 0)
		return r;
	for (i = 0; i < p->nrw && r == 0; i++) {
		r = aptix_stored_encode(&p->tmp, p->rw[i].type,
					p->rw[i].content.ptr,
					p->rw[i].content.len);
		if (r == 0)
			r = aptix_odb_store_note_format(w, &p->tmp);
		if (r == 0)
			r = p->s->wput(w, APTIX_TABLE_OBJECTS, p->rw[i].id.id,
				       APTIX_OID_RAWSZ, p->tmp.ptr,
				       p->tmp.len);
	}
	for (i = 0; i < p->nv && r == 0; i++) {
		r = p->s->wdel(w, APTIX_TABLE_OBJECTS, p->v[i].id.id,
			       APTIX_OID_RAWSZ);
		if (r == APTIX_ENOTFOUND)
			r = 0;
	}
	for (i = 0; i < p->nx && r == 0; i++) {
		r = p->s->wdel(w, APTIX_TABLE_REFLOG, p->x[i].key,
			       p->x[i].klen);
		if (r == APTIX_ENOTFOUND)
			r = 0;
	}
	return r ? r : aptix_index__forget_sessions(tx, p->gone, p->ngone);
}

static void tell(struct plan *p, aptix_gc_stats *out)
{
	aptix_gc_item it;
	size_t i;

	out->objects = p->objects;
	out->reachable = p->objects - p->nv;
	out->rewritten = p->nrw;
	out->reflog_expired = p->nx;
	for (i = 0; i < p->nx; i++) {
		memset(&it, 0, sizeof(it));
		it.type = APTIX_OBJ_BAD;
		it.reflog = (const char *)p->x[i].key;
		it.time_ms = p->x[i].time_ms;
		it.size = p->x[i].klen;
		if (p->o->on_item)
			p->o->on_item(&it, p->o->payload);
	}
	for (i = 0; i < p->nv; i++) {
		out->pruned++;
		out->pruned_bytes += p->v[i].size;
		memset(&it, 0, sizeof(it));
		it.id = p->v[i].id;
		it.type = p->v[i].type;
		it.size = p->v[i].size;
		if (p->o->on_item)
			p->o->on_item(&it, p->o->payload);
	}
}

/* Compact unless another process has the store open (then say who). */
static int compact(struct plan *p, aptix_gc_stats *out)
{
	const char *m;
	int r;

	r = p->s->compact(p->s, APTIX_STORE_COMPACT_CHECK);
	if (r == APTIX_ELOCKED) {
		m = strstr(aptix_error_last()->message, "(pid ");
		out->busy_pid = m ? strtol(m + 5, NULL, 10) : -1;
		aptix_error_clear();
		return 0;
	}
	if (r < 0 || (r = p->s->compact(p->s, 0)) < 0)
		return r;
	out->compacted = 1;
	return 0;
}

int aptix_gc(aptix_gc_stats *out, aptix_repo *repo, const aptix_gc_options *o)
{
	struct plan p;
	int r;

	APTIX_ASSERT_ARG(out && repo && o);
	if (o->version != APTIX_GC_OPTIONS_VERSION) {
		aptix_error_set(APTIX_ERROR_INVALID, "gc options of version "
				"%u: this library knows %d", o->version,
				APTIX_GC_OPTIONS_VERSION);
		return APTIX_EINVALID;
	}
	memset(out, 0, sizeof(*out));
	memset(&p, 0, sizeof(p));
	if ((r = aptix__repo_kv(&p.s, repo, "gc")) < 0)
		return r;
	if (!p.s->compact) {
		aptix_error_set(APTIX_ERROR_REPOSITORY, "gc needs an LMDB "
				"store: this backend's file cannot be compacted");
		return APTIX_EINVALID;
	}
	if (!o->dry_run && p.s->readonly(p.s)) {
		aptix_error_set(APTIX_ERROR_REPOSITORY, "gc: the store is "
				"read-only");
		return APTIX_ERROR;
	}
	p.repo = repo;
	p.o = o;
	p.now = o->now_ms ? o->now_ms : aptix_now_ms();
	aptix_oidmap_init(&p.vset);
	aptix_buf_init(&p.tmp, 0);
	p.s->disk_usage(&out->disk_before, p.s);
	out->disk_after = out->disk_before;
	r = o->dry_run ? make_plan(&p) :
		repo->backend->transaction(repo->backend, write_fn, &p);
	if (r < 0)
		goto done;
	tell(&p, out);
	if (o->dry_run)
		goto done;
	if (!o->no_compact && (r = compact(&p, out)) < 0)
		goto done;
	p.s->disk_usage(&out->disk_after, p.s);
done:
	plan_release(&p);
	return r;
}
