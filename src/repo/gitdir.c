/*
 * src/repo/gitdir.c - the git work tree and git directory of a directory,
 * read from the file system the way git's setup.c finds them, without
 * spawning git: a command that only wants to know where its store is
 * must not pay for a process.
 *
 * A `.git` directory counts when it holds HEAD; a `.git` file must read
 * "gitdir: <path>" (relative paths are relative to the file's
 * directory). A linked worktree's git directory names the shared one in
 * its `commondir` file (relative to itself). Anything else named .git is
 * skipped and the search goes on upward, stopping below the directories
 * of $GIT_CEILING_DIRECTORIES.
 *
 * The WorkspaceId of an imported turn is derived from its repository
 * (aptix__workspace_of_repo): only that asks git (for the root commit),
 * once per directory an import reads.
 */
#include "util/common.h"
#include "repo/gitdir.h"
#include "util/env.h"
#include "aptix/process.h"
#include <limits.h>
#include <sys/stat.h>
#include <unistd.h>

void aptix__path_up(aptix_buf *dir)
{
	while (dir->len > 1 && dir->ptr[dir->len - 1] != '/')
		dir->len--;
	if (dir->len > 1)
		dir->len--;
	dir->ptr[dir->len] = '\0';
}

void aptix__gitloc_init(struct aptix__gitloc *loc)
{
	aptix_buf_init(&loc->top, 0);
	aptix_buf_init(&loc->gitdir, 0);
	aptix_buf_init(&loc->common, 0);
}

void aptix__gitloc_release(struct aptix__gitloc *loc)
{
	aptix_buf_release(&loc->top);
	aptix_buf_release(&loc->gitdir);
	aptix_buf_release(&loc->common);
}

/* Is dir one of the colon-separated ceiling directories? */
static int is_ceiling(const char *dir)
{
	const char *list = aptix_env__get(APTIX_ENV_GIT_CEILING);
	char one[PATH_MAX], real[PATH_MAX];
	const char *p, *end;
	size_t n;

	for (p = list; p && *p; p = *end ? end + 1 : end) {
		end = strchr(p, ':');
		if (!end)
			end = p + strlen(p);
		n = (size_t)(end - p);
		while (n > 1 && p[n - 1] == '/')
			n--;
		if (!n || n >= sizeof(one) || p[0] != '/')
			continue;
		memcpy(one, p, n);
		one[n] = '\0';
		if (!strcmp(one, dir) ||
		    (realpath(one, real) && !strcmp(real, dir)))
			return 1;
	}
	return 0;
}

/* The first line of a small file, without its newline ("" on failure). */
static void first_line(aptix_buf *out, const char *path)
{
	char *nl;

	aptix_buf_clear(out);
	if (aptix_buf_read_file(out, path) < 0) {
		aptix_error_clear();
		aptix_buf_clear(out);
		return;
	}
	if ((nl = memchr(out->ptr, '\n', out->len)))
		aptix_buf_truncate(out, (size_t)(nl - out->ptr));
	while (out->len && out->ptr[out->len - 1] == '\r')
		aptix_buf_truncate(out, out->len - 1);
}

/* rel resolved against base (when relative), then realpath'd into out. */
static int resolve(aptix_buf *out, const char *base, const char *rel)
{
	aptix_buf p = APTIX_BUF_INIT;
	char *real;

	if (rel[0] != '/')
		aptix_buf_printf(&p, "%s/", base);
	aptix_buf_puts(&p, rel);
	if (aptix_buf_oom(&p))
		return aptix_error_oom();
	real = realpath(p.ptr, NULL);
	aptix_buf_release(&p);
	if (!real)
		return 1;	/* names nothing: not a git directory */
	aptix_buf_clear(out);
	aptix_buf_puts(out, real);
	free(real);
	return aptix_buf_oom(out) ? aptix_error_oom() : 0;
}

/* Does gd hold HEAD (file or symlink)? */
static int has_head(const char *gd)
{
	aptix_buf p = APTIX_BUF_INIT;
	struct stat st;
	int ok;

	aptix_buf_printf(&p, "%s/HEAD", gd);
	ok = !aptix_buf_oom(&p) && lstat(p.ptr, &st) == 0;
	aptix_buf_release(&p);
	return ok;
}

/*
 * The git directory of the .git entry at dotgit into loc->gitdir and
 * loc->common. 1: not a git directory, 0: found, < 0: error.
 */
static int read_dotgit(struct aptix__gitloc *loc, const char *dir,
		       const char *dotgit, const struct stat *st)
{
	aptix_buf line = APTIX_BUF_INIT, path = APTIX_BUF_INIT;
	int r;

	if (S_ISDIR(st->st_mode)) {
		r = resolve(&loc->gitdir, dir, ".git");
	} else if (S_ISREG(st->st_mode)) {
		first_line(&line, dotgit);
		r = strncmp(line.ptr, "gitdir: ", 8) ? 1 :
			resolve(&loc->gitdir, dir, line.ptr + 8);
	} else {
		r = 1;
	}
	if (r || !has_head(loc->gitdir.ptr)) {
		r = r < 0 ? r : 1;
		goto done;
	}
	aptix_buf_printf(&path, "%s/commondir", loc->gitdir.ptr);
	if (aptix_buf_oom(&path)) {
		r = aptix_error_oom();
		goto done;
	}
	first_line(&line, path.ptr);
	if (!line.len || (r = resolve(&loc->common, loc->gitdir.ptr,
				      line.ptr)) == 1)
		r = aptix_buf_set(&loc->common, loc->gitdir.ptr,
				  loc->gitdir.len) < 0 ? aptix_error_oom() : 0;
done:
	aptix_buf_release(&line);
	aptix_buf_release(&path);
	return r;
}

int aptix__git_locate(struct aptix__gitloc *loc, const char *dir)
{
	aptix_buf cur = APTIX_BUF_INIT, dotgit = APTIX_BUF_INIT;
	struct stat st;
	int r = 0;

	aptix_buf_clear(&loc->top);
	aptix_buf_clear(&loc->gitdir);
	aptix_buf_clear(&loc->common);
	if (aptix_buf_puts(&cur, dir) < 0)
		return aptix_error_oom();
	for (;;) {
		aptix_buf_clear(&dotgit);
		aptix_buf_printf(&dotgit, "%s/.git", cur.len > 1 ? cur.ptr :
				 "");
		if (aptix_buf_oom(&dotgit)) {
			r = aptix_error_oom();
			break;
		}
		if (lstat(dotgit.ptr, &st) == 0 &&
		    (r = read_dotgit(loc, cur.ptr, dotgit.ptr, &st)) <= 0) {
			if (!r && aptix_buf_set(&loc->top, cur.ptr,
						cur.len) < 0)
				r = aptix_error_oom();
			break;
		}
		r = 0;
		if (cur.len <= 1)
			break;
		aptix__path_up(&cur);
		if (is_ceiling(cur.ptr))
			break;
	}
	if (r < 0 || !loc->top.len) {
		aptix_buf_clear(&loc->top);
		aptix_buf_clear(&loc->gitdir);
		aptix_buf_clear(&loc->common);
	}
	aptix_buf_release(&cur);
	aptix_buf_release(&dotgit);
	return r;
}

/* The last component of path (trailing slashes dropped). */
static void base_name(aptix_buf *out, const char *path)
{
	size_t len = strlen(path);
	const char *p;

	while (len > 1 && path[len - 1] == '/')
		len--;
	p = path + len;
	while (p > path && p[-1] != '/')
		p--;
	aptix_buf_set(out, p, (size_t)(path + len - p));
}

/* --- The WorkspaceId ------------------------------------------------------ */

/* Characters of a derived id: [A-Za-z0-9._-], others become '-'. */
static void sanitize_id_part(char *s)
{
	for (; *s; s++) {
		unsigned char c = (unsigned char)*s;

		if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
		      (c >= '0' && c <= '9') || c == '.' || c == '_' ||
		      c == '-'))
			*s = '-';
	}
}

static char *current_dir(void)
{
	char *cwd = getcwd(NULL, 0);

	if (!cwd)
		aptix_error_set_os("cannot get the current directory");
	return cwd;
}

/*
 * The work tree's top above dir (gitdir.c: a .git directory or gitdir
 * file, $GIT_CEILING_DIRECTORIES honoured) into top; top is emptied when
 * there is none. Looked up rather than asked of git: a spawn costs more
 * than everything else a turn does with it.
 */
int aptix__git_top(aptix_buf *top, const char *dir)
{
	struct aptix__gitloc loc;
	int r;

	aptix__gitloc_init(&loc);
	r = aptix__git_locate(&loc, dir);
	aptix_buf_clear(top);
	if (!r && aptix_buf_set(top, loc.top.ptr, loc.top.len) < 0)
		r = aptix_error_oom();
	aptix__gitloc_release(&loc);
	return r;
}

int aptix__workspace_derive(aptix_buf *out, const char *root)
{
	aptix_buf top = APTIX_BUF_INIT, name = APTIX_BUF_INIT;
	char host[256], *cwd = NULL, *dot;
	int r;

	if (!root) {
		if (!(cwd = current_dir()))
			return APTIX_ERROR;
		root = cwd;
	}
	if ((r = aptix__git_top(&top, root)) < 0)
		goto done;
	base_name(&name, top.len ? top.ptr : root);
	if (!name.len || !strcmp(name.ptr, "/"))
		aptix_buf_set(&name, "root", 4);

	if (aptix_env__get(APTIX_ENV_TEST_HOSTNAME))
		snprintf(host, sizeof(host), "%s",
			 aptix_env__get(APTIX_ENV_TEST_HOSTNAME));
	else if (gethostname(host, sizeof(host)) < 0)
		*host = '\0';
	host[sizeof(host) - 1] = '\0';
	if ((dot = strchr(host, '.')))
		*dot = '\0';
	if (!*host)
		snprintf(host, sizeof(host), "localhost");
	sanitize_id_part(name.ptr);
	sanitize_id_part(host);
	aptix_buf_clear(out);
	aptix_buf_printf(out, "%s.%s", name.ptr, host);
	r = aptix_buf_oom(out) || aptix_buf_oom(&name) ?
		aptix_error_oom() : 0;
done:
	aptix_buf_release(&top);
	aptix_buf_release(&name);
	free(cwd);
	return r;
}

/* --- The WorkspaceId of a repository -------------------------------------- */

/* Where the authority of URL u starts (after "scheme://"), or NULL. */
static const char *url_authority(const char *u)
{
	const char *p = strstr(u, "://");
	size_t n = p ? (size_t)(p - u) : 0;

	if (!p || !n || strspn(u, "abcdefghijklmnopqrstuvwxyz"
			       "ABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789+.-") != n)
		return NULL;
	return p + 3;
}

int aptix__remote_clean(aptix_buf *out, aptix_buf *userinfo, const char *url)
{
	const char *auth = url_authority(url), *at = NULL, *end;
	size_t n, i;

	aptix_buf_clear(out);
	if (userinfo)
		aptix_buf_clear(userinfo);
	if (auth) {
		n = strcspn(auth, "/?#");
		for (i = 0; i < n; i++)
			if (auth[i] == '@')
				at = auth + i;	/* the last '@' ends it */
		end = auth + n + strcspn(auth + n, "?#");
	} else {
		/*
		 * scp-like "user@host:path", or "user:password@host:path":
		 * the last '@' before the path's first slash ends the user
		 */
		n = strcspn(url, "/");
		for (i = 0; i < n; i++)
			if (url[i] == '@')
				at = url + i;
		end = url + strlen(url);
	}
	if (at) {
		if (userinfo)
			aptix_buf_set(userinfo, auth ? auth : url,
				      (size_t)(at - (auth ? auth : url)));
		if (auth)
			aptix_buf_put(out, url, (size_t)(auth - url));
		aptix_buf_put(out, at + 1, (size_t)(end - at - 1));
	} else {
		aptix_buf_put(out, url, (size_t)(end - url));
	}
	if (aptix_buf_oom(out) || (userinfo && aptix_buf_oom(userinfo)))
		return aptix_error_oom();
	return 0;
}

/*
 * The WorkspaceId of a cleaned remote URL: host and path, the scheme, a
 * ".git" and trailing slashes dropped, the host in lowercase, a
 * scp-like URL's colon a slash ("git@github.com:o/r.git" and
 * "https://github.com/o/r" are both "github.com/o/r").
 */
static int remote_id(aptix_buf *out, const char *remote)
{
	const char *auth = url_authority(remote), *p;
	size_t n, i;
	char *s;

	p = auth ? auth : remote;
	aptix_buf_clear(out);
	aptix_buf_puts(out, p);
	if (aptix_buf_oom(out))
		return aptix_error_oom();
	s = out->ptr;
	if (!auth && s[strcspn(s, ":/")] == ':')
		s[strcspn(s, ":/")] = '/';
	n = strcspn(s, "/");
	for (i = 0; i < n; i++)
		if (s[i] >= 'A' && s[i] <= 'Z')
			s[i] = (char)(s[i] - 'A' + 'a');
	while (out->len > 1 && out->ptr[out->len - 1] == '/')
		aptix_buf_truncate(out, out->len - 1);
	if (out->len > 4 && !strcmp(out->ptr + out->len - 4, ".git"))
		aptix_buf_truncate(out, out->len - 4);
	while (out->len > 1 && out->ptr[out->len - 1] == '/')
		aptix_buf_truncate(out, out->len - 1);
	for (s = out->ptr; *s; s++)
		if ((unsigned char)*s < 0x21 || *s == 0x7f)
			*s = '-';
	return 0;
}

/*
 * The root commit of the history of HEAD of the work tree top, asked of
 * git (the oldest when there are several): into out, "" when git cannot
 * say (no git, no commit yet).
 */
static int root_commit(aptix_buf *out, const char *top)
{
	static const char *const unset[] = {
		"GIT_DIR", "GIT_WORK_TREE", "GIT_INDEX_FILE",
		"GIT_OBJECT_DIRECTORY", "GIT_COMMON_DIR", NULL
	};
	const char *argv[] = {
		"git", "-C", top, "rev-list", "--max-parents=0", "HEAD", NULL
	};
	aptix_process p = APTIX_PROCESS_INIT;
	aptix_buf err = APTIX_BUF_INIT;
	int status = -1, r;
	size_t start;

	p.argv = argv;
	p.env = unset;
	aptix_buf_clear(out);
	r = aptix_process_capture(&p, out, &err, 256, &status);
	aptix_buf_release(&err);
	if (r < 0 || status != 0) {
		aptix_error_clear();
		aptix_buf_clear(out);
		return 0;
	}
	while (out->len && out->ptr[out->len - 1] == '\n')
		aptix_buf_truncate(out, out->len - 1);
	start = out->len;
	while (start && out->ptr[start - 1] != '\n')
		start--;
	memmove(out->ptr, out->ptr + start, out->len - start);
	aptix_buf_truncate(out, out->len - start);
	if (strspn(out->ptr, "0123456789abcdef") != out->len ||
	    (out->len != 40 && out->len != 64))
		aptix_buf_clear(out);
	return 0;
}

int aptix__workspace_of_repo(aptix_buf *out, const char *remote,
			     const char *dir)
{
	aptix_buf top = APTIX_BUF_INIT, root = APTIX_BUF_INIT;
	int r = 0;

	aptix_buf_clear(out);
	if (remote && *remote)
		return remote_id(out, remote);
	if (!dir || *dir != '/')
		return 0;
	if ((r = aptix__git_top(&top, dir)) < 0 ||
	    (top.len && (r = root_commit(&root, top.ptr)) < 0))
		goto done;
	if (root.len) {
		aptix_buf_printf(out, "root:%s", root.ptr);
	} else {
		base_name(out, dir);
		if (!out->len || !strcmp(out->ptr, "/"))
			aptix_buf_set(out, "root", 4);
		sanitize_id_part(out->ptr);
	}
	r = aptix_buf_oom(out) ? aptix_error_oom() : 0;
done:
	aptix_buf_release(&top);
	aptix_buf_release(&root);
	return r;
}
