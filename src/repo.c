/*
 * src/repo.c - creating, finding and opening a store.
 */
#include "common.h"
#include "repo.h"
#include "odb-store.h"
#include "aptix/refs.h"
#include "env.h"
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#define FORMAT_KEY "format"

static int check_format(aptix_repo *repo)
{
	aptix_buf v = APTIX_BUF_INIT;
	int r = repo->store->get(&v, repo->store, APTIX_TABLE_META,
				 FORMAT_KEY, strlen(FORMAT_KEY));
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

static int repo_alloc(aptix_repo **out, const char *dir)
{
	aptix_repo *repo = aptix__calloc(1, sizeof(*repo));
	char *abs, *slash;

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
	repo->workdir = aptix__strdup(abs);
	if (!repo->workdir) {
		free(abs);
		free(repo);
		return APTIX_ERROR;
	}
	slash = strrchr(repo->workdir, '/');
	if (slash && slash != repo->workdir)
		*slash = '\0';
	else if (slash)
		slash[1] = '\0';
	*out = repo;
	return 0;
}

static int repo_attach(aptix_repo *repo, unsigned flags)
{
	aptix_odb_backend *b;
	int r;

	if ((r = aptix_store_lmdb_open(&repo->store, repo->path, flags)) < 0)
		return r;
	if ((r = aptix_odb_new(&repo->odb)) < 0)
		return r;
	if ((r = aptix_odb_backend_store(&b, repo->store)) < 0)
		return r;
	if ((r = aptix_odb_add_backend(repo->odb, b, 1, 0)) < 0) {
		b->free(b);
		return r;
	}
	return 0;
}

int aptix_repo_open(aptix_repo **out, const char *dir)
{
	aptix_repo *repo;
	int r;

	*out = NULL;
	if ((r = repo_alloc(&repo, dir)) < 0)
		return r;
	if ((r = repo_attach(repo, 0)) < 0 || (r = check_format(repo)) < 0) {
		aptix_repo_free(repo);
		return r;
	}
	*out = repo;
	return 0;
}

struct init_payload {
	const char *head;
};

static int init_fn(aptix_store_wtxn *w, void *payload)
{
	aptix_store *s = aptix_store_of_wtxn(w);
	struct init_payload *ip = payload;
	char fmt[16];
	int r;

	snprintf(fmt, sizeof(fmt), "%d", APTIX_STORE_FORMAT);
	if ((r = s->wput(w, APTIX_TABLE_META, FORMAT_KEY, strlen(FORMAT_KEY),
			 fmt, strlen(fmt))) < 0)
		return r;
	return s->wput(w, APTIX_TABLE_REFS, "HEAD", 4, ip->head,
		       strlen(ip->head));
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

int aptix_repo_init(aptix_repo **out, const char *workdir, int *existed)
{
	aptix_buf dir = APTIX_BUF_INIT;
	int r;

	*out = NULL;
	if (existed)
		*existed = 0;
	if (mkdir_p(workdir) < 0)
		return APTIX_ERROR;
	aptix_buf_printf(&dir, "%s/%s", workdir, APTIX_DIR_NAME);
	if (aptix_buf_oom(&dir))
		return APTIX_ERROR;
	r = aptix_repo_init_dir(out, dir.ptr, existed);
	aptix_buf_release(&dir);
	return r;
}

int aptix_repo_init_dir(aptix_repo **out, const char *storedir, int *existed)
{
	aptix_buf dir = APTIX_BUF_INIT, head = APTIX_BUF_INIT, parent;
	aptix_repo *repo = NULL;
	struct init_payload ip;
	struct stat sb;
	char conv[37];
	int r;

	*out = NULL;
	if (existed)
		*existed = 0;
	aptix_buf_init(&parent, 0);
	aptix_buf_puts(&parent, storedir);
	while (parent.len > 1 && parent.ptr[parent.len - 1] == '/')
		aptix_buf_truncate(&parent, parent.len - 1);
	aptix_buf_puts(&dir, parent.ptr);
	while (parent.len && parent.ptr[parent.len - 1] != '/')
		aptix_buf_truncate(&parent, parent.len - 1);
	if (aptix_buf_oom(&dir) || aptix_buf_oom(&parent)) {
		aptix_buf_release(&parent);
		aptix_buf_release(&dir);
		return APTIX_ERROR;
	}
	r = parent.len > 1 ? mkdir_p(parent.ptr) : 0;
	aptix_buf_release(&parent);
	if (r < 0) {
		aptix_buf_release(&dir);
		return APTIX_ERROR;
	}
	if (mkdir(dir.ptr, 0700) < 0) {
		if (errno != EEXIST) {
			aptix_error_set_os("cannot create '%s'", dir.ptr);
			r = APTIX_ERROR;
			goto done;
		}
		aptix_buf_puts(&dir, "/data.mdb");
		if (stat(dir.ptr, &sb) == 0) {
			aptix_buf_truncate(&dir, dir.len - 9);
			if (existed)
				*existed = 1;
			r = aptix_repo_open(out, dir.ptr);
			goto done;
		}
		aptix_buf_truncate(&dir, dir.len - 9);
	}
	if (chmod(dir.ptr, 0700) < 0) {
		aptix_error_set_os("cannot set permissions on '%s'", dir.ptr);
		r = APTIX_ERROR;
		goto done;
	}
	if ((r = repo_alloc(&repo, dir.ptr)) < 0 ||
	    (r = repo_attach(repo, APTIX_STORE_CREATE)) < 0)
		goto done;
	if ((r = aptix_uuid_v4(conv)) < 0)
		goto done;
	aptix_buf_printf(&head, "ref: %s%s", APTIX_CONV_PREFIX, conv);
	ip.head = head.ptr;
	if ((r = repo->store->write(repo->store, init_fn, &ip)) < 0)
		goto done;
	*out = repo;
	repo = NULL;
done:
	aptix_repo_free(repo);
	aptix_buf_release(&dir);
	aptix_buf_release(&head);
	return r;
}

int aptix_repo_discover(aptix_buf *out, const char *start)
{
	const char *env = aptix_env__get(APTIX_ENV_DIR);
	aptix_buf cur = APTIX_BUF_INIT;
	struct stat sb;
	char *abs;
	size_t base;
	int r = APTIX_ENOTFOUND;

	if (env && *env) {
		aptix_buf_set(out, env, strlen(env));
		return 0;
	}
	abs = realpath(start, NULL);
	if (!abs) {
		aptix_error_set_os("cannot resolve '%s'", start);
		return APTIX_ERROR;
	}
	aptix_buf_puts(&cur, abs);
	free(abs);
	for (;;) {
		base = cur.len;
		aptix_buf_puts(&cur, "/" APTIX_DIR_NAME "/data.mdb");
		if (aptix_buf_oom(&cur)) {
			r = APTIX_ERROR;
			break;
		}
		if (stat(cur.ptr, &sb) == 0) {
			aptix_buf_truncate(&cur, cur.len - 9);
			aptix_buf_set(out, cur.ptr, cur.len);
			r = 0;
			break;
		}
		aptix_buf_truncate(&cur, base);
		if (base <= 1)
			break;
		while (cur.len > 1 && cur.ptr[cur.len - 1] != '/')
			cur.len--;
		if (cur.len > 1)
			cur.len--;
		cur.ptr[cur.len] = '\0';
	}
	if (r == APTIX_ENOTFOUND)
		aptix_error_set(APTIX_ERROR_REPOSITORY, "not an aptix store "
				"(or any of the parent directories): %s",
				APTIX_DIR_NAME);
	aptix_buf_release(&cur);
	return r;
}

void aptix_repo_free(aptix_repo *repo)
{
	if (!repo)
		return;
	aptix_odb_free(repo->odb);
	if (repo->store)
		repo->store->free(repo->store);
	free(repo->path);
	free(repo->workdir);
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

aptix_odb *aptix_repo_odb(aptix_repo *repo)
{
	return repo->odb;
}

int aptix_repo_readonly(const aptix_repo *repo)
{
	return repo->store->readonly(repo->store);
}

int aptix_repo_disk_usage(uint64_t *bytes, aptix_repo *repo)
{
	return repo->store->disk_usage(bytes, repo->store);
}

int aptix_repo_check_store(aptix_repo *repo,
			   void (*cb)(const char *msg, void *payload),
			   void *payload)
{
	if (!repo->store->check)
		return 0;
	return repo->store->check(repo->store, cb, payload);
}
