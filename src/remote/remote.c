/*
 * src/remote/remote.c - remotes: their config (remote.<name>.url and
 * .org in the store's config) and a connection to one, a repository
 * over the PostgreSQL backend opened by URL (store/backend-pg.c).
 *
 * The URL is stored, so it must hold no password (refused, as `aptix
 * init --backend` refuses one): libpq finds it in ~/.pgpass
 * (PGPASSFILE), a service file (PGSERVICE) or PGPASSWORD.
 */
#include "util/common.h"
#include "remote/remote.h"
#include "repo/repo.h"
#include "store/pg.h"
#include "aptix/config.h"
#include "aptix/refs.h"
#include "aptix/sys/refdb_backend.h"

#define DEFAULT_ORG "default"

int aptix_remote_check_name(const char *name)
{
	if (!name || aptix_conv_check_id(name) < 0) {
		aptix_error_set(APTIX_ERROR_INVALID, "'%s' is not a valid "
				"remote name", name ? name : "");
		return APTIX_EINVALID;
	}
	return 0;
}

static int is_url(const char *s)
{
	return !strncmp(s, "postgresql://", 13) || !strncmp(s, "postgres://",
							      11);
}

static int check_url(const char *url)
{
	if (!is_url(url)) {
		/* not echoed: it may hold a credential */
		aptix_error_set(APTIX_ERROR_INVALID, "a remote's URL is a "
				"PostgreSQL one (postgresql://...)");
		return APTIX_EINVALID;
	}
	return aptix__pg_check_url(url, 1);
}

static int key_of(aptix_buf *key, const char *name, const char *field)
{
	aptix_buf_clear(key);
	aptix_buf_printf(key, "remote.%s.%s", name, field);
	return aptix_buf_oom(key) ? APTIX_ERROR : 0;
}

/* The url and org of the remote name (org "default" when unset). */
static int lookup(char **url, char **org, aptix_repo *repo, const char *name)
{
	aptix_config *cfg = NULL;
	aptix_buf key = APTIX_BUF_INIT;
	const char *u = NULL, *o = NULL;
	int r;

	*url = *org = NULL;
	if ((r = aptix_config_open(&cfg, repo)) < 0)
		return r;
	if ((r = key_of(&key, name, "url")) == 0)
		u = aptix_config_get(cfg, key.ptr);
	if (r == 0 && (r = key_of(&key, name, "org")) == 0)
		o = aptix_config_get(cfg, key.ptr);
	if (r == 0 && (!u || !*u)) {
		aptix_error_set(APTIX_ERROR_REPOSITORY, "no such remote '%s'",
				name);
		r = APTIX_ENOTFOUND;
	}
	if (r == 0) {
		*url = aptix__strdup(u);
		*org = aptix__strdup(o && *o ? o : DEFAULT_ORG);
		r = *url && *org ? 0 : APTIX_ERROR;
	}
	aptix_buf_release(&key);
	aptix_config_free(cfg);
	return r;
}

int aptix_remote_add(aptix_repo *repo, const char *name, const char *url,
		     const char *org)
{
	aptix_buf key = APTIX_BUF_INIT;
	char *u = NULL, *o = NULL;
	int r;

	APTIX_ASSERT_ARG(repo && name && url);
	if ((r = aptix_remote_check_name(name)) < 0 ||
	    (r = check_url(url)) < 0)
		return r;
	if (org && !*org) {
		aptix_error_set(APTIX_ERROR_INVALID, "an empty org");
		return APTIX_EINVALID;
	}
	r = lookup(&u, &o, repo, name);
	free(u);
	free(o);
	if (r == 0) {
		aptix_error_set(APTIX_ERROR_REPOSITORY, "remote '%s' already "
				"exists", name);
		return APTIX_EEXISTS;
	}
	if (r != APTIX_ENOTFOUND)
		return r;
	aptix_error_clear();
	if ((r = key_of(&key, name, "url")) == 0 &&
	    (r = aptix_config_set(repo, key.ptr, url)) == 0 && org &&
	    (r = key_of(&key, name, "org")) == 0)
		r = aptix_config_set(repo, key.ptr, org);
	aptix_buf_release(&key);
	return r;
}

struct tracking {
	aptix_txn *tx;
	int r;
};

static int drop_tracking(const aptix_ref *ref, void *payload)
{
	struct tracking *t = payload;

	if (!ref->target)
		t->r = aptix_txn_ref_update(t->tx, ref->name, NULL, NULL,
					    "remote remove");
	return t->r;
}

int aptix_remote_remove(aptix_repo *repo, const char *name)
{
	aptix_buf key = APTIX_BUF_INIT, prefix = APTIX_BUF_INIT;
	struct tracking t = { NULL, 0 };
	char *u = NULL, *o = NULL;
	int r;

	APTIX_ASSERT_ARG(repo && name);
	if ((r = lookup(&u, &o, repo, name)) < 0)
		return r;
	free(u);
	free(o);
	aptix_buf_printf(&prefix, APTIX_REMOTES_PREFIX "%s/", name);
	if ((r = aptix_txn_new(&t.tx, repo)) == 0 &&
	    (r = aptix_ref_foreach(repo, prefix.ptr, drop_tracking, &t)) == 0)
		r = aptix_txn_commit(t.tx);
	aptix_txn_free(t.tx);
	if (r == 0 && (r = key_of(&key, name, "url")) == 0)
		r = aptix_config_set(repo, key.ptr, NULL);
	if (r == 0 && (r = key_of(&key, name, "org")) == 0 &&
	    aptix_config_set(repo, key.ptr, NULL) == APTIX_ENOTFOUND)
		aptix_error_clear();
	aptix_buf_release(&key);
	aptix_buf_release(&prefix);
	return r;
}

struct each {
	aptix_repo *repo;
	aptix_remote_cb cb;
	void *payload;
};

static int each_cb(const char *key, const char *value, const char *origin,
		   void *payload)
{
	struct each *e = payload;
	aptix_buf name = APTIX_BUF_INIT;
	char *url = NULL, *org = NULL;
	const char *last = strrchr(key, '.');
	int r = 0;

	(void)value;
	(void)origin;
	if (strncmp(key, "remote.", 7) || last <= key + 7 ||
	    strcmp(last, ".url"))
		return 0;
	aptix_buf_put(&name, key + 7, (size_t)(last - key - 7));
	if (!aptix_buf_oom(&name) && lookup(&url, &org, e->repo,
					    name.ptr) == 0)
		r = e->cb(name.ptr, url, org, e->payload);
	aptix_error_clear();
	free(url);
	free(org);
	aptix_buf_release(&name);
	return r;
}

int aptix_remote_foreach(aptix_repo *repo, aptix_remote_cb cb, void *payload)
{
	struct each e = { repo, cb, payload };
	aptix_config *cfg = NULL;
	int r;

	APTIX_ASSERT_ARG(repo && cb);
	if ((r = aptix_config_open(&cfg, repo)) < 0)
		return r;
	r = aptix_config_foreach(cfg, each_cb, &e);
	aptix_config_free(cfg);
	return r;
}

/* --- a connection ---------------------------------------------------------- */

int aptix_remote_open(aptix_remote **out, aptix_repo *repo,
		      const char *name_or_url, const char *org)
{
	aptix_remote *rem = NULL;
	aptix_backend *be = NULL;
	char *url = NULL, *o = NULL;
	int r;

	APTIX_ASSERT_ARG(out && name_or_url);
	*out = NULL;
	if (is_url(name_or_url) || strstr(name_or_url, "://")) {
		if ((r = check_url(name_or_url)) < 0)
			return r;
		url = aptix__strdup(name_or_url);
		o = aptix__strdup(org && *org ? org : DEFAULT_ORG);
		if (!url || !o)
			r = APTIX_ERROR;
	} else if (!repo) {
		aptix_error_set(APTIX_ERROR_INVALID, "'%s' is not a URL",
				name_or_url);
		r = APTIX_EINVALID;
	} else {
		r = lookup(&url, &o, repo, name_or_url);
	}
	if (r == 0 && !(rem = aptix__calloc(1, sizeof(*rem))))
		r = APTIX_ERROR;
	if (r < 0) {
		free(url);
		free(o);
		return r;
	}
	rem->url = url;
	rem->org = o;
	if (!is_url(name_or_url) &&
	    !(rem->name = aptix__strdup(name_or_url)))
		r = APTIX_ERROR;
	if (r == 0)
		r = aptix__backend_pg_open_url(&be, url, o, 0);
	if (r == 0 && (r = aptix_repo_new(&rem->repo)) == 0 &&
	    (r = aptix_repo_set_backend(rem->repo, be)) == 0)
		be = NULL;
	if (be)
		be->free(be);
	if (r < 0) {
		aptix_remote_free(rem);
		return r;
	}
	*out = rem;
	return 0;
}

void aptix_remote_free(aptix_remote *rem)
{
	if (!rem)
		return;
	aptix_repo_free(rem->repo);
	free(rem->name);
	free(rem->url);
	free(rem->org);
	free(rem);
}

const char *aptix_remote_name(const aptix_remote *rem)
{
	return rem ? rem->name : NULL;
}

aptix_repo *aptix_remote_repo(aptix_remote *rem)
{
	return rem ? rem->repo : NULL;
}

/* --- results --------------------------------------------------------------- */

static void update_release(aptix_xfer_update *u)
{
	free(u->conv);
	free(u->dst);
}

void aptix_xfer_result_release(aptix_xfer_result *res)
{
	size_t i;

	if (!res)
		return;
	for (i = 0; i < res->n; i++)
		update_release(&res->updates[i]);
	free(res->updates);
	memset(res, 0, sizeof(*res));
}

int aptix_xfer_rejected(const aptix_xfer_result *res)
{
	size_t i;

	for (i = 0; res && i < res->n; i++)
		if (res->updates[i].status >= APTIX_XFER_REJECT_FETCH_FIRST)
			return 1;
	return 0;
}

int aptix__xfer_add_ref(const aptix_ref *ref, void *payload)
{
	aptix_xfer_result *res = payload;
	const char *conv = ref->name + strlen(APTIX_CONV_PREFIX);
	aptix_xfer_update *u;

	if (ref->target || aptix_conv_check_id(conv) < 0) {
		aptix_error_clear();
		return 0;
	}
	if (!(u = aptix__xfer_add(res, conv, conv)))
		return APTIX_ERROR;
	u->new_id = ref->oid;
	return 0;
}

aptix_xfer_update *aptix__xfer_add(aptix_xfer_result *res, const char *conv,
				   const char *dst)
{
	aptix_xfer_update *u;

	if (aptix__grow(&res->updates, &res->alloc, res->n,
			sizeof(*res->updates), 8) < 0)
		return NULL;
	u = &res->updates[res->n];
	memset(u, 0, sizeof(*u));
	u->conv = aptix__strdup(conv);
	u->dst = aptix__strdup(dst);
	if (!u->conv || !u->dst) {
		update_release(u);
		return NULL;
	}
	res->n++;
	return u;
}
