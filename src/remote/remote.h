/*
 * src/remote/remote.h - remotes (internal): the connection, and the walk
 * that finds what one side lacks of the other's history (walk.c).
 */
#ifndef APTIX_SRC_REMOTE_H
#define APTIX_SRC_REMOTE_H

#include "aptix/remote.h"
#include "aptix/oidmap.h"
#include "aptix/refs.h"

struct aptix_remote {
	char *name;		/* NULL: opened by URL */
	char *url;
	char *org;
	aptix_repo *repo;	/* its store, over the PostgreSQL backend */
};

/* One more update in res (conv and dst copied); NULL when out of memory. */
aptix_xfer_update *aptix__xfer_add(aptix_xfer_result *res, const char *conv,
				   const char *dst);

/*
 * A ref_foreach callback over refs/conversations/ (payload: res): an
 * update for each conversation, new_id its head, conv and dst its id.
 */
int aptix__xfer_add_ref(const aptix_ref *ref, void *payload);

struct xfer_obj {
	aptix_oid id;
	aptix_buf val;		/* its stored form, as src keeps it */
	size_t link_at, nlinks;	/* in walk's links: what it names */
};

/*
 * What src has that dst lacks, from some tips: a walk by levels, each
 * level's ids asked of dst in one batch ("which of these do you
 * have?"), those it lacks read from src in batches, and what they name
 * (references, bases of their stored form) the next level. Something
 * dst has is not followed: a store never keeps an object without what
 * it names (objects arrive parents first).
 */
struct xfer_walk {
	aptix_repo *src, *dst;
	aptix_oidmap seen;		/* id -> index in objs, or ON_DST */
	struct xfer_obj *objs;
	size_t n, alloc;
	aptix_oid *links;
	size_t nlinks, alinks;
	aptix_oid *front;
	size_t nfront, afront;
	size_t asked;			/* ids asked of dst */
};

void aptix__walk_init(struct xfer_walk *w, aptix_repo *src, aptix_repo *dst);
void aptix__walk_release(struct xfer_walk *w);
/* id is on dst already (a tip both sides know): never asked, not sent. */
int aptix__walk_known(struct xfer_walk *w, const aptix_oid *id);
/* Walk from tips; objs then holds what dst lacks. */
int aptix__walk_run(struct xfer_walk *w, const aptix_oid *tips, size_t n);
/*
 * Write objs into dst, parents first, in batches (a transaction each);
 * row_by_row: one statement an object. Counts go to res.
 */
int aptix__walk_send(struct xfer_walk *w, aptix_xfer_result *res,
		     int row_by_row);

#endif
