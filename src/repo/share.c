/*
 * src/repo/share.c - whose a conversation is (aptix/share.h): the
 * backend's owners, where it keeps any (the PostgreSQL one; its
 * row-level security decides what each user sees and changes).
 */
#include "util/common.h"
#include "repo/repo.h"
#include "aptix/share.h"

/*
 * The backend of repo when it keeps owners (the slots share and owners,
 * which go together); else NULL, with the error set.
 */
static aptix_backend *owners_backend(aptix_repo *repo)
{
	aptix_backend *b = repo->backend;

	if (b && b->share && b->owners)
		return b;
	aptix_error_set(APTIX_ERROR_INVALID, "this store has no users to "
			"share with: conversations are private or shared on "
			"a shared store (PostgreSQL) alone");
	return NULL;
}

const char *aptix_share_user(aptix_repo *repo)
{
	aptix_backend *b = repo ? repo->backend : NULL;
	const char *u = b && b->user ? b->user(b) : NULL;

	return u && *u ? u : NULL;
}

int aptix_share_set(aptix_repo *repo, const char *conv, int shared)
{
	aptix_backend *b;

	APTIX_ASSERT_ARG(repo);
	APTIX_ASSERT_ARG(conv);
	if (!(b = owners_backend(repo)))
		return APTIX_EINVALID;
	return b->share(b, conv, shared);
}

struct each {
	aptix_share_cb cb;
	void *payload;
	const char *user;
};

static int each_fn(const char *conv, const char *owner, int shared,
		   void *payload)
{
	struct each *e = payload;
	aptix_share_info info;

	info.conversation = conv;
	info.owner = owner;
	info.shared = shared;
	info.mine = e->user && *owner && !strcmp(owner, e->user);
	return e->cb(&info, e->payload);
}

int aptix_share_foreach(aptix_repo *repo, aptix_share_cb cb, void *payload)
{
	struct each e;
	aptix_backend *b;

	APTIX_ASSERT_ARG(repo);
	APTIX_ASSERT_ARG(cb);
	if (!(b = owners_backend(repo)))
		return APTIX_EINVALID;
	e.cb = cb;
	e.payload = payload;
	e.user = aptix_share_user(repo);
	return b->owners(b, each_fn, &e);
}
