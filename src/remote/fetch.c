/*
 * src/remote/fetch.c - aptix fetch and clone: the remote's conversations
 * into remote-tracking refs, refs/remotes/<remote>/<conversation>, with
 * what they reach that we lack (walk.c: asked level by level, read from
 * the remote in batches, written here parents first).
 *
 * The refs of both sides are compared first: a fetch with nothing new
 * reads no object, so it costs the same whatever the history's length.
 * A remote-tracking ref follows the remote, forward or not (git's
 * "+refs/heads/(all):refs/remotes/<remote>/(all)"); nothing else here moves.
 */
#include "util/common.h"
#include <sys/stat.h>
#include <unistd.h>
#include "remote/remote.h"
#include "repo/repo.h"
#include "aptix/refs.h"
#include "aptix/index.h"
#include "aptix/config.h"

/* What our remote-tracking refs hold, into old_id (status set after). */
static int compare(aptix_xfer_result *res, aptix_repo *repo,
		   const char *remote)
{
	aptix_buf name = APTIX_BUF_INIT;
	aptix_oid id;
	size_t i;
	int r = 0;

	for (i = 0; i < res->n && r == 0; i++) {
		aptix_xfer_update *u = &res->updates[i];

		aptix_buf_clear(&name);
		aptix_buf_printf(&name, APTIX_REMOTES_PREFIX "%s/%s", remote,
				 u->conv);
		free(u->dst);
		if (!(u->dst = aptix__strdup(name.ptr))) {
			r = APTIX_ERROR;
			break;
		}
		r = aptix_ref_resolve(&id, NULL, repo, name.ptr);
		if (r == APTIX_ENOTFOUND) {
			aptix_error_clear();
			u->status = APTIX_XFER_NEW;
			r = 0;
		} else if (r == 0) {
			u->old_id = id;
			u->status = aptix_oid_cmp(&id, &u->new_id) ?
				APTIX_XFER_FORCED : APTIX_XFER_UPTODATE;
		}
	}
	aptix_buf_release(&name);
	return r;
}

static int fetch_objects(aptix_xfer_result *res, aptix_repo *repo,
			 aptix_remote *rem)
{
	struct xfer_walk w;
	aptix_oid *tips = aptix__calloc(res->n ? res->n : 1, sizeof(*tips));
	size_t i, nt = 0;
	int r = tips ? 0 : APTIX_ERROR;

	for (i = 0; i < res->n && r == 0; i++)
		if (res->updates[i].status != APTIX_XFER_UPTODATE)
			tips[nt++] = res->updates[i].new_id;
	aptix__walk_init(&w, rem->repo, repo);
	if (r == 0 && nt)
		r = aptix__walk_run(&w, tips, nt);
	res->asked += w.asked;
	if (r == 0 && w.n)
		r = aptix__walk_send(&w, res, 0);
	aptix__walk_release(&w);
	free(tips);
	return r;
}

/* Tracking refs moved, in one transaction here; forward or forced. */
static int move_tracking(aptix_xfer_result *res, aptix_repo *repo)
{
	aptix_txn *tx = NULL;
	size_t i;
	int r = aptix_txn_new(&tx, repo);

	for (i = 0; i < res->n && r == 0; i++) {
		aptix_xfer_update *u = &res->updates[i];

		if (u->status == APTIX_XFER_UPTODATE)
			continue;
		if (u->status == APTIX_XFER_FORCED &&
		    aptix_index_is_ancestor(repo, &u->old_id, &u->new_id) == 1)
			u->status = APTIX_XFER_FASTFORWARD;
		aptix_error_clear();
		r = aptix_txn_ref_update(tx, u->dst, &u->new_id, NULL,
					 "fetch");
	}
	if (r == 0)
		r = aptix_txn_commit(tx);
	aptix_txn_free(tx);
	return r;
}

int aptix_remote_fetch(aptix_xfer_result *res, aptix_repo *repo,
		       aptix_remote *rem)
{
	size_t i;
	int r, any = 0;

	APTIX_ASSERT_ARG(res && repo && rem);
	if (!rem->name) {
		aptix_error_set(APTIX_ERROR_INVALID, "fetch needs a remote "
				"by name (aptix remote add <name> <url>): "
				"its refs go to refs/remotes/<name>/");
		return APTIX_EINVALID;
	}
	if ((r = aptix_ref_foreach(rem->repo, APTIX_CONV_PREFIX,
				   aptix__xfer_add_ref, res)) < 0 ||
	    (r = compare(res, repo, rem->name)) < 0)
		return r;
	for (i = 0; i < res->n; i++)
		any |= res->updates[i].status != APTIX_XFER_UPTODATE;
	if (!any)
		return 0;
	if ((r = fetch_objects(res, repo, rem)) < 0)
		return r;
	return move_tracking(res, repo);
}

/* --- clone ------------------------------------------------------------------ */

/*
 * The conversation HEAD goes to: the remote's HEAD's, when it is one of
 * those fetched (else it is unborn there); else the one whose head is
 * the newest.
 */
static const char *head_conv(aptix_xfer_result *res, aptix_repo *repo,
			     const char *remote_head)
{
	const char *best = NULL;
	int64_t newest = INT64_MIN;
	aptix_session_info si;
	size_t i, plen = strlen(APTIX_CONV_PREFIX);

	for (i = 0; i < res->n; i++) {
		const aptix_xfer_update *u = &res->updates[i];

		if (remote_head && !strncmp(remote_head, APTIX_CONV_PREFIX,
					    plen) &&
		    !strcmp(remote_head + plen, u->conv))
			return u->conv;
		if (aptix_index_session(&si, repo, &u->new_id) == 0 &&
		    si.created_at > newest) {
			newest = si.created_at;
			best = u->conv;
		}
	}
	aptix_error_clear();
	return best;
}

/* Each conversation fetched made ours; HEAD on the remote's. */
static int check_out(aptix_xfer_result *res, aptix_repo *repo,
		     aptix_remote *rem)
{
	aptix_buf name = APTIX_BUF_INIT;
	aptix_txn *tx = NULL;
	aptix_ref head;
	aptix_oid zero;
	const char *want;
	size_t i;
	int r = aptix_txn_new(&tx, repo);

	memset(&zero, 0, sizeof(zero));
	memset(&head, 0, sizeof(head));
	if (aptix_ref_read(&head, rem->repo, "HEAD") < 0)
		aptix_error_clear();
	want = head_conv(res, repo, head.target);
	for (i = 0; i < res->n && r == 0; i++) {
		const aptix_xfer_update *u = &res->updates[i];

		aptix_buf_clear(&name);
		aptix_buf_printf(&name, APTIX_CONV_PREFIX "%s", u->conv);
		r = aptix_buf_oom(&name) ? APTIX_ERROR :
			aptix_txn_ref_update(tx, name.ptr, &u->new_id, &zero,
					     "clone");
		if (r == 0 && want == u->conv)
			r = aptix_txn_symref_update(tx, "HEAD", name.ptr,
						    "clone");
	}
	if (r == 0)
		r = aptix_txn_commit(tx);
	aptix_txn_free(tx);
	aptix_ref_release(&head);
	aptix_buf_release(&name);
	return r;
}

/*
 * A clone that failed leaves nothing behind, as git's: the store it
 * made, and the directory if the clone made it (empty then). A store
 * that was there already is left alone.
 */
static void clone_undo(aptix_repo *repo, const char *dir, int existed,
		       int dir_was)
{
	char *path = repo && !existed && aptix_repo_path(repo) ?
		aptix__strdup(aptix_repo_path(repo)) : NULL;

	aptix_repo_free(repo);
	if (path)
		aptix__repo_remove_store(path);
	free(path);
	if (!existed && !dir_was)
		rmdir(dir);
}

int aptix_remote_clone(aptix_repo **out, aptix_xfer_result *res,
		       const char *url, const char *org, const char *dir)
{
	aptix_repo *repo = NULL;
	aptix_remote *rem = NULL;
	struct stat st;
	int r, existed = 0, dir_was = 0;

	APTIX_ASSERT_ARG(out && res && url && dir);
	dir_was = stat(dir, &st) == 0;
	*out = NULL;
	/* before anything is made: a bad URL leaves no store behind */
	if ((r = aptix_remote_open(&rem, NULL, url, org)) < 0)
		return r;
	aptix_remote_free(rem);
	rem = NULL;
	if ((r = aptix_repo_init(&repo, dir, &existed)) < 0)
		return r;
	if (existed) {
		aptix_error_set(APTIX_ERROR_REPOSITORY, "destination '%s' "
				"holds a store already", dir);
		r = APTIX_EEXISTS;
	}
	if (r == 0)
		r = aptix_remote_add(repo, "origin", url, org);
	if (r == 0)
		r = aptix_remote_open(&rem, repo, "origin", NULL);
	if (r == 0)
		r = aptix_remote_fetch(res, repo, rem);
	if (r == 0)
		r = check_out(res, repo, rem);
	aptix_remote_free(rem);
	if (r < 0) {
		clone_undo(repo, dir, existed, dir_was);
		return r;
	}
	*out = repo;
	return 0;
}
