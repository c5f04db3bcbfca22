/*
 * src/remote/push.c - aptix push: what the remote lacks of the history
 * of some conversations, sent parents first (walk.c), then every ref
 * moved by compare-and-swap in one transaction of the remote's.
 *
 * A conversation's ref moves there only forward: when the remote's head
 * is not an ancestor of ours, the conversation moved on both sides and
 * is rejected, as git rejects a non-fast-forward push ("fetch first"
 * when we do not even have the remote's head); history never merges.
 * APTIX_PUSH_FORK sends such a conversation as a new one there instead,
 * <conv>-fork-<8 hex of our head>. A ref that moves there between our
 * look and our transaction loses its compare-and-swap: the whole
 * transaction changes nothing, and the push says so.
 */
#include "util/common.h"
#include "remote/remote.h"
#include "repo/repo.h"
#include "aptix/refs.h"
#include "aptix/index.h"

#define FORK_MARK "-fork-"
#define FORK_HEX 8

static int add_named(aptix_xfer_result *res, aptix_repo *repo,
		     const char *conv)
{
	aptix_buf name = APTIX_BUF_INIT;
	aptix_xfer_update *u;
	aptix_oid id;
	int r;

	if ((r = aptix_conv_check_id(conv)) < 0)
		return r;
	aptix_buf_printf(&name, APTIX_CONV_PREFIX "%s", conv);
	r = aptix_ref_resolve(&id, NULL, repo, name.ptr);
	aptix_buf_release(&name);
	if (r == APTIX_ENOTFOUND)
		aptix_error_set(APTIX_ERROR_REFERENCE, "no conversation '%s' "
				"here to push", conv);
	if (r == 0 && !(u = aptix__xfer_add(res, conv, conv)))
		r = APTIX_ERROR;
	if (r == 0)
		u->new_id = id;
	return r;
}

/* What dst holds on the remote into u->old_id (zero when absent). */
static int remote_head(aptix_oid *out, aptix_remote *rem, const char *conv)
{
	aptix_buf name = APTIX_BUF_INIT;
	aptix_ref ref;
	int r;

	memset(out, 0, sizeof(*out));
	memset(&ref, 0, sizeof(ref));
	aptix_buf_printf(&name, APTIX_CONV_PREFIX "%s", conv);
	r = aptix_ref_read(&ref, rem->repo, name.ptr);
	if (r == 0 && !ref.target)
		*out = ref.oid;
	r = aptix__absent_ok(r);
	aptix_ref_release(&ref);
	aptix_buf_release(&name);
	return r;
}

/* Whether the remote's head old may move to ours, new. */
static aptix_xfer_status judge(aptix_repo *repo, const aptix_oid *old,
			       const aptix_oid *new)
{
	int r;

	if (aptix_oid_is_zero(old))
		return APTIX_XFER_NEW;
	if (!aptix_oid_cmp(old, new))
		return APTIX_XFER_UPTODATE;
	if (aptix_odb_exists(repo->odb, old) != 1)
		return APTIX_XFER_REJECT_FETCH_FIRST;
	r = aptix_index_is_ancestor(repo, old, new);
	aptix_error_clear();
	return r == 1 ? APTIX_XFER_FASTFORWARD : APTIX_XFER_REJECT_NONFF;
}

/* u rejected: as a new conversation <conv>-fork-<hex> there instead. */
static int as_fork(aptix_xfer_update *u, aptix_repo *repo, aptix_remote *rem)
{
	char hex[APTIX_OID_HEXSZ + 1], *dst;
	size_t keep = strlen(u->conv);
	aptix_oid old;
	int r;

	if (keep > APTIX_CONV_MAXLEN - strlen(FORK_MARK) - FORK_HEX)
		keep = APTIX_CONV_MAXLEN - strlen(FORK_MARK) - FORK_HEX;
	aptix_oid_tostr(hex, &u->new_id);
	if (!(dst = aptix__malloc(keep + strlen(FORK_MARK) + FORK_HEX + 1)))
		return APTIX_ERROR;
	snprintf(dst, keep + strlen(FORK_MARK) + FORK_HEX + 1,
		 "%.*s" FORK_MARK "%.*s", (int)keep, u->conv, FORK_HEX, hex);
	free(u->dst);
	u->dst = dst;
	if ((r = remote_head(&old, rem, dst)) < 0)
		return r;
	u->old_id = old;
	u->status = judge(repo, &old, &u->new_id);
	if (u->status == APTIX_XFER_NEW)
		u->status = APTIX_XFER_FORK;
	return 0;
}

static int plan(aptix_xfer_result *res, aptix_repo *repo, aptix_remote *rem,
		unsigned flags)
{
	size_t i;
	int r = 0;

	for (i = 0; i < res->n && r == 0; i++) {
		aptix_xfer_update *u = &res->updates[i];

		if ((r = remote_head(&u->old_id, rem, u->conv)) < 0)
			break;
		u->status = judge(repo, &u->old_id, &u->new_id);
		if ((flags & APTIX_PUSH_FORK) &&
		    (u->status == APTIX_XFER_REJECT_FETCH_FIRST ||
		     u->status == APTIX_XFER_REJECT_NONFF))
			r = as_fork(u, repo, rem);
	}
	return r;
}

static int moves(const aptix_xfer_update *u)
{
	return u->status == APTIX_XFER_NEW || u->status == APTIX_XFER_FORK ||
		u->status == APTIX_XFER_FASTFORWARD;
}

/* The objects: what the remote lacks from our heads. */
static int send_objects(aptix_xfer_result *res, aptix_repo *repo,
			aptix_remote *rem, unsigned flags)
{
	struct xfer_walk w;
	aptix_oid *tips = aptix__calloc(res->n ? res->n : 1, sizeof(*tips));
	size_t i, nt = 0;
	int r = tips ? 0 : APTIX_ERROR;

	aptix__walk_init(&w, repo, rem->repo);
	for (i = 0; i < res->n && r == 0; i++) {
		const aptix_xfer_update *u = &res->updates[i];

		/* the remote has its heads and all they reach */
		if (!aptix_oid_is_zero(&u->old_id) &&
		    aptix_odb_exists(repo->odb, &u->old_id) == 1)
			r = aptix__walk_known(&w, &u->old_id);
		if (moves(u))
			tips[nt++] = u->new_id;
	}
	if (r == 0 && nt)
		r = aptix__walk_run(&w, tips, nt);
	res->asked += w.asked;
	if (r == 0)
		r = aptix__walk_send(&w, res,
				     !!(flags & APTIX_PUSH_ROW_BY_ROW));
	aptix__walk_release(&w);
	free(tips);
	return r;
}

/* A lost compare-and-swap: which refs moved (stale), the rest atomic. */
static int lost(aptix_xfer_result *res, aptix_remote *rem)
{
	aptix_oid now;
	size_t i;
	int r = 0;

	aptix_error_clear();
	for (i = 0; i < res->n && r == 0; i++) {
		aptix_xfer_update *u = &res->updates[i];

		if (!moves(u))
			continue;
		if ((r = remote_head(&now, rem, u->dst)) == 0)
			u->status = aptix_oid_cmp(&now, &u->old_id) ?
				APTIX_XFER_REJECT_STALE :
				APTIX_XFER_REJECT_ATOMIC;
	}
	return r;
}

/* Every ref that moves, in one transaction of the remote's. */
static int move_refs(aptix_xfer_result *res, aptix_remote *rem)
{
	aptix_buf name = APTIX_BUF_INIT;
	aptix_txn *tx = NULL;
	aptix_oid zero;
	size_t i;
	int r = aptix_txn_new(&tx, rem->repo);

	memset(&zero, 0, sizeof(zero));
	for (i = 0; i < res->n && r == 0; i++) {
		const aptix_xfer_update *u = &res->updates[i];

		if (!moves(u))
			continue;
		aptix_buf_clear(&name);
		aptix_buf_printf(&name, APTIX_CONV_PREFIX "%s", u->dst);
		r = aptix_buf_oom(&name) ? APTIX_ERROR :
			aptix_txn_ref_update(tx, name.ptr, &u->new_id,
					     aptix_oid_is_zero(&u->old_id) ?
					     &zero : &u->old_id, "push");
	}
	if (r == 0)
		r = aptix_txn_commit(tx);
	if (r == APTIX_EMISMATCH)
		r = lost(res, rem);
	aptix_txn_free(tx);
	aptix_buf_release(&name);
	return r;
}

/* Our remote-tracking refs of rem, where the push left its refs. */
static int track(aptix_xfer_result *res, aptix_repo *repo, aptix_remote *rem)
{
	aptix_buf name = APTIX_BUF_INIT;
	aptix_txn *tx = NULL;
	size_t i;
	int r;

	if (!rem->name)
		return 0;
	r = aptix_txn_new(&tx, repo);
	for (i = 0; i < res->n && r == 0; i++) {
		const aptix_xfer_update *u = &res->updates[i];

		if (!moves(u) && u->status != APTIX_XFER_UPTODATE)
			continue;
		aptix_buf_clear(&name);
		aptix_buf_printf(&name, APTIX_REMOTES_PREFIX "%s/%s",
				 rem->name, u->dst);
		r = aptix_buf_oom(&name) ? APTIX_ERROR :
			aptix_txn_ref_update(tx, name.ptr, &u->new_id, NULL,
					     "push");
	}
	if (r == 0)
		r = aptix_txn_commit(tx);
	aptix_txn_free(tx);
	aptix_buf_release(&name);
	return r;
}

int aptix_remote_push(aptix_xfer_result *res, aptix_repo *repo,
		      aptix_remote *rem, const char *const *convs, size_t n,
		      unsigned flags)
{
	size_t i;
	int r = 0, any = 0;

	APTIX_ASSERT_ARG(res && repo && rem);
	if (!n)
		r = aptix_ref_foreach(repo, APTIX_CONV_PREFIX,
				      aptix__xfer_add_ref, res);
	for (i = 0; i < n && r == 0; i++)
		r = add_named(res, repo, convs[i]);
	if (r == 0)
		r = plan(res, repo, rem, flags);
	for (i = 0; i < res->n; i++)
		any |= moves(&res->updates[i]);
	if (r == 0 && any)
		r = send_objects(res, repo, rem, flags);
	if (r == 0 && any)
		r = move_refs(res, rem);
	if (r == 0)
		r = track(res, repo, rem);
	return r;
}
