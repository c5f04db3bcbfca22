/*
 * src/repo/repo.c - creating, finding and opening a store.
 */
#include "util/common.h"
#include "repo/repo.h"
#include "store/odb-store.h"
#include "store/odb-s3.h"
#include "http/s3.h"
#include "store/backend-kv.h"
#include "store/pg.h"
#include "aptix/sys/refdb_backend.h"
#include "aptix/sys/index_backend.h"
#include "aptix/sys/claims_backend.h"
#include "aptix/refs.h"
#include "aptix/config.h"
#include <strings.h>
#include "util/env.h"
#include "repo/gitdir.h"
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#define FORMAT_KEY "format"
#define WORKSPACE_KEY "workspace"
#define STORE_ID_KEY "store-id"

static int check_format(aptix_repo *repo)
{
	aptix_buf v = APTIX_BUF_INIT;
	int r = repo->backend->meta_get(&v, repo->backend, NULL, FORMAT_KEY);
	long fmt;

	if (r == APTIX_ENOTFOUND) {
		aptix_error_set(APTIX_ERROR_REPOSITORY, "'%s' has no store "
				"format version: not an aptix store",
				repo->path);
		r = APTIX_ECORRUPT;
	} else if (r == 0) {
		fmt = strtol(v.ptr, NULL, 10);
		if (fmt < 1) {
			aptix_error_set(APTIX_ERROR_REPOSITORY,
					"store format version '%s' is invalid",
					v.ptr);
			r = APTIX_ECORRUPT;
		} else if (fmt > APTIX_STORE_FORMAT) {
			aptix_error_set(APTIX_ERROR_REPOSITORY,
					"store '%s' has format version %ld, "
					"newer than this aptix supports (%d): "
					"upgrade aptix", repo->path, fmt,
					APTIX_STORE_FORMAT);
			r = APTIX_EVERSION;
		}
	}
	aptix_buf_release(&v);
	return r;
}

/* Does dir/name exist (lstat)? */
static int exists_in(const char *dir, const char *name)
{
	aptix_buf p = APTIX_BUF_INIT;
	struct stat st;
	int ok;

	aptix_buf_printf(&p, "%s/%s", dir, name);
	ok = !aptix_buf_oom(&p) && lstat(p.ptr, &st) == 0;
	aptix_buf_release(&p);
	return ok;
}

/*
 * Does dir hold a store? Its LMDB file, or (a store whose data is
 * elsewhere: PostgreSQL) a config naming another backend.
 */
static int holds_store(const char *dir)
{
	aptix_config *cfg = NULL;
	const char *v;
	int r;

	if (exists_in(dir, "data.mdb"))
		return 1;
	if (!exists_in(dir, "config"))
		return 0;
	if (aptix_config_open_store_file(&cfg, dir) < 0) {
		aptix_error_clear();
		return 0;
	}
	v = aptix_config_get(cfg, "extensions.storage");
	r = v && strcasecmp(v, "lmdb");
	aptix_config_free(cfg);
	return r;
}

/* The last component of a clean absolute path. */
static const char *last_component(const char *path)
{
	const char *slash = strrchr(path, '/');

	return slash ? slash + 1 : path;
}

/* path's parent directory (a copy; "/" for "/x"). */
static char *parent_of(const char *path)
{
	char *p = aptix__strdup(path), *slash;

	if (!p)
		return NULL;
	slash = strrchr(p, '/');
	if (slash && slash != p)
		*slash = '\0';
	else if (slash)
		slash[1] = '\0';
	return p;
}

/*
 * Where a store belongs: the work tree's git directory when dir (an
 * absolute path) is in a git work tree, else dir/.aptix. loc is filled
 * in; into: the store's path, wd: the work tree (top or dir).
 */
static int home_of(aptix_buf *into, aptix_buf *wd, struct aptix__gitloc *loc,
		   const char *dir)
{
	int r;

	if ((r = aptix__git_locate(loc, dir)) < 0)
		return r;
	aptix_buf_clear(into);
	aptix_buf_clear(wd);
	if (loc->top.len) {
		aptix_buf_printf(into, "%s/" APTIX_GIT_STORE_NAME,
				 loc->common.ptr);
		aptix_buf_puts(wd, loc->top.ptr);
	} else {
		aptix_buf_printf(into, "%s%s" APTIX_DIR_NAME, dir,
				 strcmp(dir, "/") ? "/" : "");
		aptix_buf_puts(wd, dir);
	}
	return aptix_buf_oom(into) || aptix_buf_oom(wd) ?
		aptix_error_oom() : 0;
}

/*
 * A store at dir (path of the store directory); workdir NULL: derived
 * from it (the directory holding .aptix, or the one holding .git for a
 * store in a git directory).
 */
static int repo_alloc(aptix_repo **out, const char *dir, const char *workdir)
{
	aptix_repo *repo = aptix__calloc(1, sizeof(*repo));
	char *abs, *parent;

	*out = NULL;
	if (!repo)
		return APTIX_ERROR;
	abs = realpath(dir, NULL);
	if (!abs) {
		int notfound = errno == ENOENT || errno == ENOTDIR;

		aptix_error_set(APTIX_ERROR_REPOSITORY,
				"not an aptix store: '%s'", dir);
		free(repo);
		return notfound ? APTIX_ENOTFOUND : APTIX_ERROR;
	}
	repo->path = abs;
	if (workdir) {
		repo->workdir = aptix__strdup(workdir);
	} else if ((parent = parent_of(abs)) &&
		   !strcmp(last_component(parent), ".git")) {
		/* <top>/.git/aptix: the main work tree */
		repo->workdir = parent_of(parent);
		free(parent);
	} else {
		repo->workdir = parent;
	}
	if (!repo->workdir) {
		free(abs);
		free(repo);
		return APTIX_ERROR;
	}
	*out = repo;
	return 0;
}

/*
 * A .aptix store inside a git work tree is where `git clean -fdx`
 * deletes it and `git add -A` picks it up: note where it belongs.
 */
static int note_misplaced(aptix_repo *repo)
{
	struct aptix__gitloc loc;
	aptix_buf to = APTIX_BUF_INIT, wd = APTIX_BUF_INIT;
	char *parent;
	int r = 0;

	if (strcmp(last_component(repo->path), APTIX_DIR_NAME))
		return 0;
	if (!(parent = parent_of(repo->path)))
		return APTIX_ERROR;
	aptix__gitloc_init(&loc);
	if ((r = home_of(&to, &wd, &loc, parent)) == 0 && loc.top.len &&
	    !(repo->misplaced_to = aptix_buf_detach(&to)))
		r = APTIX_ERROR;
	aptix__gitloc_release(&loc);
	aptix_buf_release(&to);
	aptix_buf_release(&wd);
	free(parent);
	return r;
}

/* The WorkspaceId recorded at init (none in older stores). */
static int read_workspace(aptix_repo *repo)
{
	aptix_buf v = APTIX_BUF_INIT;
	int r = repo->backend->meta_get(&v, repo->backend, NULL,
					WORKSPACE_KEY);

	if (r == APTIX_ENOTFOUND) {
		aptix_error_clear();
		r = 0;
	} else if (r == 0 && v.len &&
		   !(repo->workspace = aptix_buf_detach(&v))) {
		r = APTIX_ERROR;
	}
	aptix_buf_release(&v);
	return r;
}

/*
 * The backend the store's own config names (extensions.storage, as
 * git's extensions.refStorage): only its file counts, not the user's,
 * the environment or -c, and a name this build lacks refuses the store
 * before anything is opened.
 */
/* Is name among the backends of this build? (names: their list) */
static int registered(aptix_buf *names, const char *name)
{
	size_t n = strlen(name);
	const char *p;

	aptix_backend_names(names);
	for (p = names->ptr; *p; p += strspn(p, ", ")) {
		if (!strncasecmp(p, name, n) && (!p[n] || p[n] == ','))
			return 1;
		p += strcspn(p, ",");
	}
	return 0;
}

static int open_storage(aptix_backend **out, const char *dir,
			unsigned flags)
{
	aptix_config *cfg = NULL;
	aptix_buf names = APTIX_BUF_INIT;
	const char *v = NULL;
	char name[32] = "lmdb";
	int r;

	if (aptix_config_open_store_file(&cfg, dir) < 0)
		/* a malformed file is for the commands that read it to say */
		aptix_error_clear();
	else
		v = aptix_config_get(cfg, "extensions.storage");
	if (v)
		snprintf(name, sizeof(name), "%s", v);
	aptix_config_free(cfg);
	r = aptix_backend_open(out, name, dir, flags);
	/* a backend of the build that refused its data says why itself */
	if (r == APTIX_EVERSION && !*out && !registered(&names, name)) {
		aptix_error_set(APTIX_ERROR_REPOSITORY, "the store '%s' keeps "
				"its data in a '%s' backend, which this aptix "
				"cannot open (extensions.storage; this build "
				"has: %s)", dir, name, names.ptr);
		aptix_buf_release(&names);
	}
	return r;
}

/* The repository keeps its data in be (owned from then on). */
static int repo_use_backend(aptix_repo *repo, aptix_backend *be)
{
	int r;

	repo->backend = be;
	repo->store = aptix_backend_kv_store(be);
	if ((r = aptix_odb_new(&repo->odb)) < 0)
		return r;
	return aptix_odb_add_backend(repo->odb, be->odb, 1, 0);
}

static int repo_attach(aptix_repo *repo, unsigned flags)
{
	aptix_backend *be;
	int r;

	if ((r = open_storage(&be, repo->path, flags)) < 0)
		return r;
	return repo_use_backend(repo, be);
}

static int repo_open_at(aptix_repo **out, const char *dir,
			const char *workdir)
{
	aptix_repo *repo;
	int r;

	*out = NULL;
	if ((r = repo_alloc(&repo, dir, workdir)) < 0)
		return r;
	if ((r = repo_attach(repo, 0)) < 0 || (r = check_format(repo)) < 0 ||
	    (r = read_workspace(repo)) < 0 || (r = note_misplaced(repo)) < 0) {
		aptix_repo_free(repo);
		return r;
	}
	*out = repo;
	return 0;
}

int aptix_repo_open(aptix_repo **out, const char *dir)
{
	*out = NULL;
	if (aptix_sanitize_stdfds() < 0)
		return APTIX_ERROR;
	return repo_open_at(out, dir, NULL);
}

struct init_payload {
	const char *head;
	const char *workspace;
	int finish;		/* a store left half-made: keep what it has */
	int joined;		/* out: a shared store existed already */
};

/*
 * The store's id (a random UUID) unless it has one: what keeps its
 * points apart from other stores' in a shared Qdrant collection.
 */
static int put_store_id(aptix_backend_txn *tx)
{
	aptix_backend *be = tx->backend;
	aptix_buf cur = APTIX_BUF_INIT;
	char id[APTIX_UUID_STRSZ + 1];
	int r;

	r = be->meta_get(&cur, be, tx, STORE_ID_KEY);
	aptix_buf_release(&cur);
	if (r != APTIX_ENOTFOUND)
		return r;
	aptix_error_clear();
	if ((r = aptix_uuid_v4(id)) < 0)
		return r;
	return be->meta_put(tx, STORE_ID_KEY, id);
}

static int store_id_fn(aptix_backend_txn *tx, void *payload)
{
	(void)payload;
	return put_store_id(tx);
}

int aptix__repo_store_id(aptix_buf *out, aptix_repo *repo)
{
	aptix_backend *be = repo->backend;
	int r = be->meta_get(out, be, NULL, STORE_ID_KEY);

	if (r != APTIX_ENOTFOUND)
		return r;
	/* an older store: it gets one on first use */
	aptix_error_clear();
	if ((r = be->transaction(be, store_id_fn, NULL)) < 0)
		return r;
	return be->meta_get(out, be, NULL, STORE_ID_KEY);
}

static int init_fn(aptix_backend_txn *tx, void *payload)
{
	aptix_backend *be = tx->backend;
	struct init_payload *ip = payload;
	aptix_refdb_update u;
	aptix_buf cur = APTIX_BUF_INIT;
	char fmt[16];
	int r;

	/*
	 * A shared store (PostgreSQL) another host made already: joined,
	 * its HEAD, id and workspace kept.
	 */
	ip->joined = 0;
	r = be->meta_get(&cur, be, tx, FORMAT_KEY);
	aptix_buf_release(&cur);
	if (r == 0) {
		/* a HEAD of its own for a user new to it (a role's) */
		ip->joined = 1;
		memset(&u, 0, sizeof(u));
		u.name = "HEAD";
		u.new_value = ip->head;
		u.old_value = APTIX_REFDB_ABSENT;
		r = be->refdb->update(be->refdb, tx, &u);
		if (r == APTIX_EMISMATCH)
			aptix_error_clear();
		return r == APTIX_EMISMATCH ? 0 : r;
	}
	if (r != APTIX_ENOTFOUND)
		return r;
	aptix_error_clear();
	snprintf(fmt, sizeof(fmt), "%d", APTIX_STORE_FORMAT);
	if ((r = be->meta_put(tx, FORMAT_KEY, fmt)) < 0)
		return r;
	if (ip->workspace && *ip->workspace &&
	    (r = be->meta_put(tx, WORKSPACE_KEY, ip->workspace)) < 0)
		return r;
	if ((r = put_store_id(tx)) < 0 ||
	    (r = aptix__repo_mark_layout(tx)) < 0)
		return r;
	memset(&u, 0, sizeof(u));
	u.name = "HEAD";
	u.new_value = ip->head;
	/* finishing a half-made store: a HEAD it has stays */
	u.old_value = ip->finish ? APTIX_REFDB_ABSENT : NULL;
	r = be->refdb->update(be->refdb, tx, &u);
	if (r == APTIX_EMISMATCH && ip->finish) {
		aptix_error_clear();
		r = 0;
	}
	return r;
}

/* mkdir -p */
static int mkdir_p(const char *path)
{
	aptix_buf p = APTIX_BUF_INIT;
	size_t i;
	int r = 0;

	if (aptix_buf_puts(&p, path) < 0)
		return APTIX_ERROR;
	for (i = 1; i <= p.len && !r; i++) {
		if (i < p.len && p.ptr[i] != '/')
			continue;
		p.ptr[i] = '\0';
		if (mkdir(p.ptr, 0777) < 0 && errno != EEXIST) {
			aptix_error_set_os("cannot create directory '%s'",
					   p.ptr);
			r = APTIX_ERROR;
		}
		if (i < p.len)
			p.ptr[i] = '/';
	}
	aptix_buf_release(&p);
	return r;
}

static int fsync_dir(const char *dir)
{
	int fd = open(dir, O_RDONLY | O_CLOEXEC);

	if (fd < 0)
		return 0;	/* best effort: the rename is done */
	fsync(fd);
	close(fd);
	return 0;
}

/* Remove a store directory this process made and never published. */
void aptix__repo_remove_store(const char *dir)
{
	static const char *const files[] = {
		"data.mdb", "lock.mdb", "config", "stat-cache"
	};
	aptix_buf p = APTIX_BUF_INIT;
	size_t i;

	for (i = 0; i < ARRAY_SIZE(files); i++) {
		aptix_buf_clear(&p);
		aptix_buf_printf(&p, "%s/%s", dir, files[i]);
		if (!aptix_buf_oom(&p))
			unlink(p.ptr);
	}
	aptix_buf_release(&p);
	rmdir(dir);
}

/*
 * Write the first records into the store repo has open: 0; 1 when a
 * shared store was there already (joined, nothing written).
 */
static int init_records(aptix_repo *repo, const char *workspace, int finish)
{
	aptix_buf head = APTIX_BUF_INIT;
	struct init_payload ip;
	char conv[37];
	int r;

	if ((r = aptix_uuid_v4(conv)) < 0)
		return r;
	aptix_buf_printf(&head, "ref: %s%s", APTIX_CONV_PREFIX, conv);
	if (aptix_buf_oom(&head))
		return aptix_error_oom();
	ip.head = head.ptr;
	ip.workspace = workspace;
	ip.finish = finish;
	ip.joined = 0;
	r = repo->backend->transaction(repo->backend, init_fn, &ip);
	aptix_buf_release(&head);
	return r == 0 && ip.joined ? 1 : r;
}

/* The backend opts name: NULL for the default (LMDB). */
static const char *init_storage(const aptix_repo_init_options *opts)
{
	if (!opts || !opts->storage || !strcasecmp(opts->storage, "lmdb"))
		return NULL;
	return opts->storage;
}

/* opts' S3 URL (options of version 2 and later), or NULL. */
static const char *init_s3(const aptix_repo_init_options *opts)
{
	return opts && opts->version >= 2 ? opts->s3_url : NULL;
}

static int check_init_options(const aptix_repo_init_options *opts)
{
	const char *name = init_storage(opts);
	int r;

	if (opts && (opts->version < 1 ||
		     opts->version > APTIX_REPO_INIT_OPTIONS_VERSION)) {
		aptix_error_set(APTIX_ERROR_INVALID, "init options of version "
				"%u (this libaptix takes %d)", opts->version,
				APTIX_REPO_INIT_OPTIONS_VERSION);
		return APTIX_EINVALID;
	}
	if (!name && (init_s3(opts) || (opts && (opts->url || opts->org)))) {
		aptix_error_set(APTIX_ERROR_INVALID, "a URL, an org or S3 is for "
				"a store kept elsewhere (postgresql)");
		return APTIX_EINVALID;
	}
	if (!name)
		return 0;
	if (strcasecmp(name, "postgresql")) {
		aptix_error_set(APTIX_ERROR_INVALID, "'%s' is no backend a "
				"store can be made with (lmdb, postgresql)",
				name);
		return APTIX_EINVALID;
	}
	if (!opts->url || !*opts->url) {
		aptix_error_set(APTIX_ERROR_INVALID, "a store on PostgreSQL "
				"needs its URL");
		return APTIX_EINVALID;
	}
	if (opts->org && (!*opts->org || strlen(opts->org) > 200)) {
		aptix_error_set(APTIX_ERROR_INVALID, "an org has 1 to 200 "
				"bytes");
		return APTIX_EINVALID;
	}
	if (init_s3(opts) && (r = aptix__s3_check(opts->s3_url,
						  opts->s3_bucket,
						  opts->s3_region)) < 0)
		return r;
	/* the URL is stored: never with a password in it */
	return aptix__pg_check_url(opts->url, 1);
}

static void s3_location_of(struct aptix_s3_location *loc,
			   const aptix_repo_init_options *opts)
{
	memset(loc, 0, sizeof(*loc));
	loc->url = opts->s3_url;
	loc->bucket = opts->s3_bucket;
	loc->region = opts->s3_region;
	loc->threshold = opts->s3_threshold;
}

/*
 * Before anything is made: a shared store that keeps its large objects
 * elsewhere already is refused.
 */
static int check_s3_location(const aptix_repo_init_options *opts)
{
	struct aptix_s3_location loc;
	aptix_backend *be = NULL;
	int r;

	if (!init_s3(opts))
		return 0;
	s3_location_of(&loc, opts);
	if ((r = aptix__backend_pg_open_url(&be, opts->url, opts->org ?
					    opts->org : "default",
					    APTIX_STORE_RDONLY)) < 0)
		return r;
	r = aptix__odb_s3_check_location(be, &loc);
	be->free(be);
	return r;
}

/* The shared store's large objects go where opts say. */
static int init_s3_location(aptix_repo *repo,
			    const aptix_repo_init_options *opts)
{
	struct aptix_s3_location loc;

	if (!init_s3(opts))
		return 0;
	s3_location_of(&loc, opts);
	return aptix__odb_s3_set_location(repo->backend, &loc);
}

/*
 * The store's own config names where a store kept elsewhere is: the
 * backend, its URL and the org whose rows it sees.
 */
static int write_location(const char *dir,
			  const aptix_repo_init_options *opts)
{
	const char *name = init_storage(opts);
	int r;

	if (!name)
		return 0;
	if ((r = aptix_config_set_dir(dir, "extensions.storage",
				      "postgresql")) < 0 ||
	    (r = aptix_config_set_dir(dir, "postgresql.url", opts->url)) < 0)
		return r;
	if ((r = aptix_config_set_dir(dir, "postgresql.org", opts->org ?
				      opts->org : "default")) < 0)
		return r;
	if (opts->version >= 3 && opts->user && *opts->user)
		return aptix_config_set_dir(dir, "postgresql.user",
					    opts->user);
	return 0;
}

/*
 * A new store for path, made in a scratch directory next to it
 * ("<path>.<what>-XXXXXX"), open in *out: nothing is at path until
 * publish() renames it there.
 */
static int build_aside(aptix_repo **out, const char *path,
		       const char *workspace, const char *what,
		       const aptix_repo_init_options *opts)
{
	aptix_buf tmp = APTIX_BUF_INIT;
	aptix_repo *repo = NULL;
	char *parent = NULL;
	int r;

	*out = NULL;
	aptix_buf_printf(&tmp, "%s.%s-XXXXXX", path, what);
	if (aptix_buf_oom(&tmp) || !(parent = parent_of(path))) {
		r = APTIX_ERROR;
		goto done;
	}
	if (!mkdtemp(tmp.ptr)) {
		aptix_error_set_os("cannot create '%s'", tmp.ptr);
		r = APTIX_ERROR;
		goto done;
	}
	if ((r = write_location(tmp.ptr, opts)) < 0 ||
	    (r = repo_alloc(&repo, tmp.ptr, parent)) < 0 ||
	    (r = repo_attach(repo, APTIX_STORE_CREATE)) < 0 ||
	    (r = init_records(repo, workspace, 0)) < 0) {
		aptix_repo_free(repo);
		aptix__repo_remove_store(tmp.ptr);
		goto done;
	}
	*out = repo;
done:
	free(parent);
	aptix_buf_release(&tmp);
	return r;
}

/*
 * Close the store built aside by build_aside() and rename it to path.
 * Returns 1 when a store got there first (the scratch is then removed).
 */
static int publish(aptix_repo *repo, const char *path)
{
	char *tmp = aptix__strdup(repo->path), *parent = parent_of(path);
	int r = 0;

	aptix_repo_free(repo);
	if (!tmp || !parent) {
		r = APTIX_ERROR;
	} else if (rename(tmp, path) == 0) {
		fsync_dir(parent);
	} else if (errno == EEXIST || errno == ENOTEMPTY) {
		r = 1;
	} else {
		aptix_error_set_os("cannot rename '%s' to '%s'", tmp, path);
		r = APTIX_ERROR;
	}
	if (r && tmp)
		aptix__repo_remove_store(tmp);
	free(tmp);
	free(parent);
	return r;
}

/*
 * Create the store at path, atomically: it is built in a scratch
 * directory next to it and renamed into place, so that an init killed
 * midway leaves no half-made store. Returns 1 when another process
 * created it first.
 */
/*
 * 0; 1 when another init made path meanwhile; 2 when path names a
 * shared store that existed already (joined).
 */
static int create_store(const char *path, const char *workspace,
			const aptix_repo_init_options *opts)
{
	aptix_repo *repo;
	int r, joined;

	if ((r = build_aside(&repo, path, workspace, "init", opts)) < 0)
		return r;
	joined = r == 1;
	r = publish(repo, path);
	return r == 0 && joined ? 2 : r;
}

void aptix__repo_discard(aptix_repo *repo)
{
	char *tmp;

	if (!repo)
		return;
	tmp = aptix__strdup(repo->path);
	aptix_repo_free(repo);
	if (tmp)
		aptix__repo_remove_store(tmp);
	free(tmp);
}

int aptix__repo_publish(aptix_repo *repo, const char *dest)
{
	int r = publish(repo, dest);

	if (r == 1) {
		aptix_error_set(APTIX_ERROR_REPOSITORY, "'%s' was made "
				"meanwhile: salvage into a new directory",
				dest);
		r = APTIX_EEXISTS;
	}
	return r;
}

static int count_cb(const void *key, size_t klen, const void *val,
		    size_t vlen, void *payload)
{
	(void)key, (void)klen, (void)val, (void)vlen;
	*(int *)payload = 1;
	return APTIX_ITEROVER;
}

static int count_obj_cb(const aptix_oid *id, void *payload)
{
	(void)id;
	*(int *)payload = 1;
	return APTIX_ITEROVER;
}

/* 1 when the backend holds no object and no ref (or < 0). */
static int holds_nothing(aptix_backend *be)
{
	int any = 0, r;

	if ((r = be->odb->foreach(be->odb, count_obj_cb, &any)) < 0 ||
	    (!any && (r = be->refdb->iterate(be->refdb, "", count_cb,
					     &any)) < 0))
		return r;
	return !any;
}

/*
 * A store that an older aptix's init left half-made (no format version)
 * and that holds nothing yet: finish it. Returns 1 when it was not such
 * a store (the error of the open is then kept).
 */
static int finish_half_made(aptix_repo **out, const char *path,
			    const char *workdir, const char *workspace)
{
	aptix_repo *repo = NULL;
	aptix_buf v = APTIX_BUF_INIT;
	int r;

	if (repo_alloc(&repo, path, workdir) < 0 ||
	    repo_attach(repo, 0) < 0 ||
	    repo->backend->meta_get(&v, repo->backend, NULL,
				    FORMAT_KEY) != APTIX_ENOTFOUND ||
	    holds_nothing(repo->backend) != 1) {
		aptix_repo_free(repo);
		aptix_buf_release(&v);
		return 1;
	}
	aptix_buf_release(&v);
	r = init_records(repo, workspace, 1);
	aptix_repo_free(repo);
	if (r < 0)
		return r;
	return repo_open_at(out, path, workdir);
}

/* finish_half_made(), or the error of the open that failed. */
static int finish_or_keep(aptix_repo **out, const char *path,
			  const char *workdir, const char *workspace)
{
	char *why = aptix__strdup(aptix_error_last()->message);
	int r = finish_half_made(out, path, workdir, workspace);

	if (r == 1) {
		aptix_error_set(APTIX_ERROR_REPOSITORY, "%s", why ? why :
				"not an aptix store");
		r = APTIX_ECORRUPT;
	}
	free(why);
	return r;
}

/* The nearest dir/.aptix store from dir up to stop (inclusive). */
static int find_dot_store(aptix_buf *out, const char *dir, const char *stop)
{
	aptix_buf cur = APTIX_BUF_INIT;
	size_t base;
	int r = APTIX_ENOTFOUND;

	aptix_buf_puts(&cur, dir);
	for (;;) {
		base = cur.len;
		aptix_buf_puts(&cur, base > 1 ? "/" APTIX_DIR_NAME :
			       APTIX_DIR_NAME);
		if (aptix_buf_oom(&cur)) {
			r = APTIX_ERROR;
			break;
		}
		if (holds_store(cur.ptr)) {
			aptix_buf_set(out, cur.ptr, cur.len);
			r = aptix_buf_oom(out) ? APTIX_ERROR : 0;
			break;
		}
		aptix_buf_truncate(&cur, base);
		if (base <= 1 || (stop && !strcmp(cur.ptr, stop)))
			break;
		aptix__path_up(&cur);
	}
	aptix_buf_release(&cur);
	return r;
}

static int init_at(aptix_repo **out, const char *workdir,
		   const aptix_repo_init_options *opts, int *existed)
{
	aptix_buf path = APTIX_BUF_INIT, wd = APTIX_BUF_INIT;
	aptix_buf ws = APTIX_BUF_INIT, legacy = APTIX_BUF_INIT;
	struct aptix__gitloc loc;
	char *abs = NULL;
	int r, tries;

	*out = NULL;
	if (existed)
		*existed = 0;
	if (aptix_sanitize_stdfds() < 0)
		return APTIX_ERROR;
	aptix__gitloc_init(&loc);
	if (mkdir_p(workdir) < 0)
		return APTIX_ERROR;
	if (!(abs = realpath(workdir, NULL))) {
		aptix_error_set_os("cannot resolve '%s'", workdir);
		return APTIX_ERROR;
	}
	if ((r = home_of(&path, &wd, &loc, abs)) < 0 ||
	    (r = aptix__workspace_derive(&ws, wd.ptr)) < 0)
		goto done;
	/* a store made before stores moved into the git directory */
	if (loc.top.len && !holds_store(path.ptr) &&
	    find_dot_store(&legacy, abs, loc.top.ptr) == 0) {
		if (existed)
			*existed = 1;
		r = repo_open_at(out, legacy.ptr, NULL);
		goto done;
	}
	aptix_error_clear();
	for (tries = 0; tries < 2; tries++) {
		if (holds_store(path.ptr)) {
			if (existed)
				*existed = 1;
			r = repo_open_at(out, path.ptr, wd.ptr);
			if (r == APTIX_ECORRUPT)
				r = finish_or_keep(out, path.ptr, wd.ptr,
						   ws.ptr);
			goto done;
		}
		/* an empty directory in the way (an older init's) */
		if (exists_in(path.ptr, "") && rmdir(path.ptr) < 0 &&
		    errno != ENOENT) {
			aptix_error_set(APTIX_ERROR_REPOSITORY, "'%s' exists "
					"and is not an aptix store: move it "
					"away, then run 'aptix init' again",
					path.ptr);
			r = APTIX_EEXISTS;
			goto done;
		}
		if ((r = create_store(path.ptr, ws.ptr, opts)) < 0)
			goto done;
		if (r == 0 || r == 2) {
			if (r == 2 && existed)
				*existed = 1;	/* a shared store, joined */
			r = repo_open_at(out, path.ptr, wd.ptr);
			goto done;
		}
	}
	aptix_error_set(APTIX_ERROR_REPOSITORY, "cannot create '%s': it "
			"keeps changing", path.ptr);
	r = APTIX_ERROR;
done:
	aptix__gitloc_release(&loc);
	aptix_buf_release(&path);
	aptix_buf_release(&wd);
	aptix_buf_release(&ws);
	aptix_buf_release(&legacy);
	free(abs);
	return r;
}

int aptix__repo_init_aside(aptix_repo **out, aptix_buf *dest,
			   const char *workdir)
{
	aptix_buf wd = APTIX_BUF_INIT, ws = APTIX_BUF_INIT;
	aptix_buf legacy = APTIX_BUF_INIT;
	struct aptix__gitloc loc;
	char *abs = NULL;
	int r;

	*out = NULL;
	if (aptix_sanitize_stdfds() < 0 || mkdir_p(workdir) < 0)
		return APTIX_ERROR;
	if (!(abs = realpath(workdir, NULL))) {
		aptix_error_set_os("cannot resolve '%s'", workdir);
		return APTIX_ERROR;
	}
	aptix__gitloc_init(&loc);
	if ((r = home_of(dest, &wd, &loc, abs)) < 0 ||
	    (r = aptix__workspace_derive(&ws, wd.ptr)) < 0)
		goto done;
	if (holds_store(dest->ptr) ||
	    (loc.top.len && find_dot_store(&legacy, abs, loc.top.ptr) == 0)) {
		aptix_error_set(APTIX_ERROR_REPOSITORY, "'%s' holds a store "
				"already: salvage into a new directory",
				workdir);
		r = APTIX_EEXISTS;
		goto done;
	}
	aptix_error_clear();
	if ((r = build_aside(out, dest->ptr, ws.ptr, "salvage", NULL)) > 0)
		r = 0;
done:
	aptix__gitloc_release(&loc);
	aptix_buf_release(&wd);
	aptix_buf_release(&ws);
	aptix_buf_release(&legacy);
	free(abs);
	return r;
}

static int init_in(aptix_repo **out, const char *storedir,
		   const aptix_repo_init_options *opts, int *existed)
{
	aptix_buf ws = APTIX_BUF_INIT;
	char *parent;
	int r;

	*out = NULL;
	if (existed)
		*existed = 0;
	if (aptix_sanitize_stdfds() < 0)
		return APTIX_ERROR;
	if (!(parent = parent_of(storedir)))
		return APTIX_ERROR;
	if ((r = mkdir_p(parent)) < 0)
		goto done;
	if (holds_store(storedir)) {
		if (existed)
			*existed = 1;
		r = repo_open_at(out, storedir, NULL);
		goto done;
	}
	if ((r = aptix__workspace_derive(&ws, NULL)) < 0 ||
	    (r = create_store(storedir, ws.ptr, opts)) < 0)
		goto done;
	if (r >= 1 && existed)
		*existed = 1;	/* made meanwhile, or a shared store joined */
	r = repo_open_at(out, storedir, NULL);
done:
	aptix_buf_release(&ws);
	free(parent);
	return r;
}

int aptix_repo_init(aptix_repo **out, const char *workdir, int *existed)
{
	return init_at(out, workdir, NULL, existed);
}

int aptix_repo_init_dir(aptix_repo **out, const char *storedir, int *existed)
{
	return init_in(out, storedir, NULL, existed);
}

int aptix_repo_init_ext(aptix_repo **out, const char *workdir,
			const char *storedir,
			const aptix_repo_init_options *opts, int *existed)
{
	int r;

	*out = NULL;
	if (existed)
		*existed = 0;
	if ((r = check_init_options(opts)) < 0 ||
	    (r = check_s3_location(opts)) < 0)
		return r;
	if (storedir)
		r = init_in(out, storedir, opts, existed);
	else
		r = init_at(out, workdir ? workdir : ".", opts, existed);
	if (r >= 0 && (r = init_s3_location(*out, opts)) < 0) {
		aptix_repo_free(*out);
		*out = NULL;
	}
	return r;
}

/*
 * The store for start and the work tree it serves: $APTIX_DIR, else the
 * git directory's store of the work tree holding start, else the nearest
 * .aptix from start upwards.
 */
static int discover(aptix_buf *out, aptix_buf *wd, const char *start)
{
	const char *env = aptix_env__get(APTIX_ENV_DIR);
	struct aptix__gitloc loc;
	aptix_buf home = APTIX_BUF_INIT;
	char *abs;
	int r;

	aptix_buf_clear(wd);
	if (aptix_sanitize_stdfds() < 0)
		return APTIX_ERROR;
	if (env && *env) {
		aptix_buf_set(out, env, strlen(env));
		return aptix_buf_oom(out) ? aptix_error_oom() : 0;
	}
	abs = realpath(start, NULL);
	if (!abs) {
		aptix_error_set_os("cannot resolve '%s'", start);
		return APTIX_ERROR;
	}
	aptix__gitloc_init(&loc);
	if ((r = home_of(&home, wd, &loc, abs)) < 0)
		goto done;
	if (loc.top.len && holds_store(home.ptr)) {
		r = aptix_buf_set(out, home.ptr, home.len) < 0 ?
			aptix_error_oom() : 0;
		goto done;
	}
	aptix_buf_clear(wd);
	r = find_dot_store(out, abs, NULL);
	if (r == APTIX_ENOTFOUND)
		aptix_error_set(APTIX_ERROR_REPOSITORY, "not an aptix store "
				"(or any of the parent directories): %s",
				loc.top.len ? "none in the git directory "
				"either" : APTIX_DIR_NAME);
done:
	aptix__gitloc_release(&loc);
	aptix_buf_release(&home);
	free(abs);
	return r;
}

int aptix_repo_discover(aptix_buf *out, const char *start)
{
	aptix_buf wd = APTIX_BUF_INIT;
	int r = discover(out, &wd, start);

	aptix_buf_release(&wd);
	return r;
}

int aptix_repo_find(aptix_repo **out, const char *start)
{
	aptix_buf dir = APTIX_BUF_INIT, wd = APTIX_BUF_INIT;
	int r;

	*out = NULL;
	if ((r = discover(&dir, &wd, start)) == 0)
		r = repo_open_at(out, dir.ptr, wd.len ? wd.ptr : NULL);
	aptix_buf_release(&dir);
	aptix_buf_release(&wd);
	return r;
}

int aptix_repo_migrate(aptix_buf *to, const char *start)
{
	aptix_buf from = APTIX_BUF_INIT, wd = APTIX_BUF_INIT;
	struct aptix__gitloc loc;
	char *abs, *parent = NULL;
	int r;

	aptix_buf_clear(to);
	if (aptix_sanitize_stdfds() < 0)
		return APTIX_ERROR;
	if (!(abs = realpath(start, NULL))) {
		aptix_error_set_os("cannot resolve '%s'", start);
		return APTIX_ERROR;
	}
	aptix__gitloc_init(&loc);
	if ((r = home_of(to, &wd, &loc, abs)) < 0)
		goto done;
	if (!loc.top.len) {
		aptix_error_set(APTIX_ERROR_INVALID, "not in a git work tree: "
				"the store stays in %s/", APTIX_DIR_NAME);
		r = APTIX_EINVALID;
		goto done;
	}
	if ((r = find_dot_store(&from, abs, loc.top.ptr)) < 0) {
		aptix_error_set(APTIX_ERROR_REPOSITORY, "no %s/ store in the "
				"work tree '%s' to move", APTIX_DIR_NAME,
				loc.top.ptr);
		goto done;
	}
	if (exists_in(to->ptr, "")) {
		aptix_error_set(APTIX_ERROR_REPOSITORY, "'%s' exists already: "
				"'%s' was not moved", to->ptr, from.ptr);
		r = APTIX_EEXISTS;
		goto done;
	}
	/* open file handles follow a rename: running turns carry on */
	if (rename(from.ptr, to->ptr) < 0) {
		if (errno == EXDEV)
			aptix_error_set(APTIX_ERROR_OS, "'%s' and '%s' are on "
					"different file systems: move it with "
					"'mv %s %s' while no aptix runs",
					from.ptr, to->ptr, from.ptr, to->ptr);
		else
			aptix_error_set_os("cannot move '%s' to '%s'",
					   from.ptr, to->ptr);
		r = APTIX_ERROR;
		goto done;
	}
	if ((parent = parent_of(from.ptr)))
		fsync_dir(parent);
	free(parent);
	if ((parent = parent_of(to->ptr)))
		fsync_dir(parent);
	free(parent);
done:
	aptix__gitloc_release(&loc);
	aptix_buf_release(&from);
	aptix_buf_release(&wd);
	free(abs);
	return r;
}

/* --- A repository over a store the caller gives --------------------------- */

int aptix_repo_new(aptix_repo **out)
{
	APTIX_ASSERT_ARG(out);
	*out = aptix__calloc(1, sizeof(**out));
	return *out ? 0 : APTIX_ERROR;
}

/*
 * A backend that holds no store yet (no format, no store id) gets what
 * init writes: the format, a store id, the index layout and a HEAD
 * naming a fresh conversation; one with a store is checked as an opened
 * store is.
 */
static int adopt_store(aptix_repo *repo)
{
	static const char *const keys[] = { FORMAT_KEY, STORE_ID_KEY };
	aptix_backend *be = repo->backend;
	aptix_buf v = APTIX_BUF_INIT;
	size_t i;
	int r = APTIX_ENOTFOUND;

	for (i = 0; i < ARRAY_SIZE(keys) && r == APTIX_ENOTFOUND; i++)
		r = be->meta_get(&v, be, NULL, keys[i]);
	aptix_buf_release(&v);
	if (r < 0 && r != APTIX_ENOTFOUND)
		return r;
	aptix_error_clear();
	if (r == APTIX_ENOTFOUND && (r = init_records(repo, repo->workspace,
						      0)) < 0)
		return r;
	return check_format(repo);
}

static int check_versions(const aptix_backend *be)
{
	const char *what = NULL;
	unsigned have = 0, want = 0;

	if (be->version != APTIX_BACKEND_VERSION)
		what = "backend", have = be->version,
			want = APTIX_BACKEND_VERSION;
	else if (!be->odb || be->odb->version != APTIX_ODB_BACKEND_VERSION)
		what = "object backend", have = be->odb ? be->odb->version : 0,
			want = APTIX_ODB_BACKEND_VERSION;
	else if (!be->refdb ||
		 be->refdb->version != APTIX_REFDB_BACKEND_VERSION)
		what = "ref backend", have = be->refdb ? be->refdb->version : 0,
			want = APTIX_REFDB_BACKEND_VERSION;
	else if (!be->index || be->index->version < 1 ||
		 be->index->version > APTIX_INDEX_BACKEND_VERSION)
		what = "index backend", have = be->index ? be->index->version :
			0, want = APTIX_INDEX_BACKEND_VERSION;
	else if (!be->claims ||
		 be->claims->version != APTIX_CLAIMS_BACKEND_VERSION)
		what = "claims backend", have = be->claims ?
			be->claims->version : 0,
			want = APTIX_CLAIMS_BACKEND_VERSION;
	if (!what && be->odb && be->odb->free) {
		aptix_error_set(APTIX_ERROR_REPOSITORY, "the object backend "
				"of a storage backend is freed with it: its "
				"free slot must be NULL");
		return APTIX_EINVALID;
	}
	if (!what)
		return 0;
	aptix_error_set(APTIX_ERROR_REPOSITORY, "%s of version %u; this "
			"libaptix takes version %u", what, have, want);
	return APTIX_EVERSION;
}

static int has_storage(const aptix_repo *repo)
{
	if (!repo->backend)
		return 0;
	aptix_error_set(APTIX_ERROR_REPOSITORY, "the repository has a store "
			"already");
	return APTIX_EINVALID;
}

int aptix_repo_set_backend(aptix_repo *repo, aptix_backend *backend)
{
	int r;

	APTIX_ASSERT_ARG(repo && backend);
	if ((r = has_storage(repo)) < 0 || (r = check_versions(backend)) < 0)
		return r;
	if ((r = repo_use_backend(repo, backend)) < 0 ||
	    (r = adopt_store(repo)) < 0) {
		/* the caller keeps its backend when it is refused */
		aptix_odb_free(repo->odb);
		repo->odb = NULL;
		repo->backend = NULL;
		repo->store = NULL;
	}
	return r;
}

int aptix_repo_set_store(aptix_repo *repo, aptix_store *store)
{
	aptix_backend *be;
	int r;

	APTIX_ASSERT_ARG(repo && store);
	if ((r = has_storage(repo)) < 0)
		return r;
	if (store->version != APTIX_STORE_BACKEND_VERSION) {
		aptix_error_set(APTIX_ERROR_REPOSITORY, "store backend of "
				"version %u; this libaptix takes version %d",
				store->version, APTIX_STORE_BACKEND_VERSION);
		return APTIX_EVERSION;
	}
	if ((r = aptix_backend_kv_new(&be, store, "store",
				      APTIX_STORE_FORMAT)) < 0)
		return r;
	if ((r = aptix_repo_set_backend(repo, be)) < 0)
		aptix_backend_kv_release_store(be);
	return r;
}

int aptix_repo_set_workdir(aptix_repo *repo, const char *workdir)
{
	char *abs;

	APTIX_ASSERT_ARG(repo && workdir);
	if (!(abs = realpath(workdir, NULL))) {
		aptix_error_set_os("cannot use '%s' as the work tree",
				   workdir);
		return APTIX_ENOTFOUND;
	}
	free(repo->workdir);
	repo->workdir = abs;
	return 0;
}

void aptix_repo_free(aptix_repo *repo)
{
	if (!repo)
		return;
	aptix_odb_free(repo->odb);
	if (repo->backend)
		repo->backend->free(repo->backend);
	free(repo->path);
	free(repo->workdir);
	free(repo->workspace);
	free(repo->misplaced_to);
	free(repo);
}

const char *aptix_repo_path(const aptix_repo *repo)
{
	return repo->path;
}

const char *aptix_repo_workdir(const aptix_repo *repo)
{
	return repo->workdir;
}

const char *aptix_repo_workspace(const aptix_repo *repo)
{
	return repo->workspace;
}

const char *aptix_repo_misplaced(const aptix_repo *repo)
{
	return repo->misplaced_to;
}

aptix_odb *aptix_repo_odb(aptix_repo *repo)
{
	return repo->odb;
}

int aptix_repo_readonly(const aptix_repo *repo)
{
	return repo->backend->readonly(repo->backend);
}

int aptix_repo_disk_usage(uint64_t *bytes, aptix_repo *repo)
{
	if (!repo->backend->disk_usage) {
		*bytes = 0;
		return 0;
	}
	return repo->backend->disk_usage(bytes, repo->backend);
}

int aptix__repo_kv(aptix_store **out, aptix_repo *repo, const char *what)
{
	*out = repo->store;
	if (repo->store)
		return 0;
	aptix_error_set(APTIX_ERROR_REPOSITORY, "%s needs a key-value store, "
			"which the '%s' backend does not keep", what,
			repo->backend->name ? repo->backend->name : "(unnamed)");
	return APTIX_EINVALID;
}

int aptix_repo_check_store(aptix_repo *repo,
			   void (*cb)(const char *msg, void *payload),
			   void *payload)
{
	if (!repo->store || !repo->store->check)
		return 0;
	return repo->store->check(repo->store, cb, payload);
}

int aptix_purge_lookup(aptix_purge_info *out, aptix_repo *repo,
		       const aptix_oid *id)
{
	aptix_buf val = APTIX_BUF_INIT;
	int r;

	APTIX_ASSERT_ARG(out && repo && id);
	if (!repo->store)	/* a backend that keeps no purge records */
		return APTIX_ENOTFOUND;
	r = repo->store->get(&val, repo->store, APTIX_TABLE_PURGED, id->id,
			     APTIX_OID_RAWSZ);
	if (r == 0 && aptix__purge_decode(out, val.ptr, val.len) < 0) {
		aptix_error_set(APTIX_ERROR_ODB, "the purge record of '%s' is "
				"corrupt", aptix_oid_hex(id));
		r = APTIX_ECORRUPT;
	}
	aptix_buf_release(&val);
	return r;
}

/*
 * The format goes up with it: an older aptix, which would write records
 * in place, must refuse the store (a reindex that found no session
 * raised it nowhere else).
 */
int aptix__repo_mark_layout(aptix_backend_txn *tx)
{
	aptix_store_wtxn *w = aptix_backend_kv_wtxn(tx);
	/* the format is the layout of a key-value store's tables */
	int r = w ? aptix_odb_store_raise_format(w, APTIX_INDEX_FORMAT) : 0;

	return r < 0 ? r : tx->backend->meta_put(tx, APTIX_META_INDEX_LAYOUT,
						 APTIX_INDEX_LAYOUT_TIMELINE);
}
