/*
 * src/workspace/workspace.c - the working copy: its WorkspaceId and its active
 * files (aptix/workspace.h).
 *
 * The active files are gathered in three steps: candidates (git's dirty
 * files, then the named ones, resolved against the workspace root),
 * merged and cut to files.max-count by path, then read: each file is
 * measured with stat first (one over files.max-size is never opened),
 * then opened once, loaded, and hashed unless the stat cache
 * (src/workspace/statcache.c) knows it. git runs as a child (posix_spawnp, no shell) with its output
 * on pipes.
 */
#include "util/common.h"
#include "aptix/workspace.h"
#include "aptix/oid.h"
#include "aptix/credscan.h"
#include "aptix/process.h"
#include "util/env.h"
#include "workspace/ignore.h"
#include "repo/gitdir.h"
#include "repo/repo.h"
#include "workspace/statcache.h"

#include <fcntl.h>
#include <limits.h>
#include <poll.h>
#include <spawn.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <unistd.h>

extern char **environ;

/* At most this many deleted files are named one by one in warnings. */
#define DELETED_WARN_MAX 10
/* Bytes of git's stderr kept for a warning. */
#define GIT_STDERR_MAX 4096

/* --- Running git -------------------------------------------------------- */

/*
 * Run git (argv[0] is "git", found through PATH) with stdin from
 * /dev/null, its stdout into out and the start of its stderr into err.
 * *status is its exit status (128 + N: killed by signal N).
 * Returns 0; APTIX_ENOTFOUND when git cannot be run; APTIX_ERROR.
 */
static int run_git(aptix_buf *out, aptix_buf *err, int *status,
		   const char *const *argv)
{
	aptix_process p = APTIX_PROCESS_INIT;

	*status = -1;
	p.argv = argv;
	return aptix_process_capture(&p, out, err, GIT_STDERR_MAX, status);
}

/* The first line of git's output, without its newline. */
static void chomp_line(aptix_buf *b)
{
	char *nl = memchr(b->ptr, '\n', b->len);

	if (nl)
		aptix_buf_truncate(b, (size_t)(nl - b->ptr));
}

/* --- Paths ---------------------------------------------------------------- */

/*
 * Lexically clean an absolute path: no "//", "." or ".." components
 * ("/.." is "/"), no trailing slash.
 */
static void clean_path(char *path)
{
	char *out = path, *in = path;

	/* path starts with '/'; out always ends without a slash */
	while (*in) {
		char *comp, *end;
		size_t n;

		while (*in == '/')
			in++;
		if (!*in)
			break;
		comp = in;
		while (*in && *in != '/')
			in++;
		end = in;
		n = (size_t)(end - comp);
		if (n == 1 && comp[0] == '.')
			continue;
		if (n == 2 && comp[0] == '.' && comp[1] == '.') {
			/* drop the last kept component and its slash */
			while (out > path && *--out != '/')
				;
			continue;
		}
		*out++ = '/';
		memmove(out, comp, n);
		out += n;
	}
	if (out == path)
		*out++ = '/';
	*out = '\0';
}

/*
 * The part of path under dir ("" for dir itself), or NULL when path is
 * not under dir. Both are clean absolute paths.
 */
static const char *path_under(const char *path, const char *dir)
{
	size_t n = strlen(dir);

	if (n == 1 && dir[0] == '/')
		return path + 1;
	if (strncmp(path, dir, n))
		return NULL;
	if (!path[n])
		return path + n;
	return path[n] == '/' ? path + n + 1 : NULL;
}

/* Is rel the directory dir or inside it? */
static int path_in(const char *rel, const char *dir)
{
	size_t n = strlen(dir);

	return !strncmp(rel, dir, n) && (!rel[n] || rel[n] == '/');
}

/* Is rel a store directory (.aptix, .git/aptix) or inside one? */
static int in_store(const char *rel)
{
	return path_in(rel, APTIX_DIR_NAME) ||
		path_in(rel, ".git/" APTIX_GIT_STORE_NAME);
}

static const char *errno_note(int err)
{
	switch (err) {
	case ENOENT:
	case ENOTDIR:
		return "no such file";
	case ELOOP:
		return "symlink loop";
	case EACCES:
	case EPERM:
		return "permission denied";
	default:
		return strerror(err);
	}
}

static char *current_dir(void)
{
	char *cwd = getcwd(NULL, 0);

	if (!cwd)
		aptix_error_set_os("cannot get the current directory");
	return cwd;
}

/* flag, else $APTIX_WORKSPACE, else workspace.id; NULL when none. */
static const char *explicit_id(const aptix_config *cfg, const char *flag)
{
	const char *v;

	if (flag && *flag)
		return flag;
	v = aptix_env__get(APTIX_ENV_WORKSPACE);
	if (!v)
		v = aptix_config_get(cfg, "workspace.id");
	return v && *v ? v : NULL;
}

/* An id is stored with every turn and sent to filter on: no secret. */
static int check_id(const char *v)
{
	aptix_credential c;
	char why[160];

	if (!aptix_credscan_find(&c, v, strlen(v), NULL, 0))
		return 0;
	aptix_error_set(APTIX_ERROR_INVALID, "the workspace id holds a "
			"credential, %s: refusing it",
			aptix_credential_describe(why, sizeof(why), &c));
	return APTIX_EINVALID;
}

int aptix_workspace_id(aptix_buf *out, const aptix_config *cfg,
		       const char *flag, const char *root)
{
	const char *v;

	APTIX_ASSERT_ARG(out);
	if ((v = explicit_id(cfg, flag))) {
		if (check_id(v) < 0)
			return APTIX_EINVALID;
		return aptix_buf_set(out, v, strlen(v)) < 0 ?
			aptix_error_oom() : 0;
	}
	return aptix__workspace_derive(out, root);
}

int aptix_repo_workspace_id(aptix_buf *out, const aptix_repo *repo,
			    const aptix_config *cfg, const char *flag)
{
	const char *v;

	APTIX_ASSERT_ARG(out);
	APTIX_ASSERT_ARG(repo);
	if ((v = explicit_id(cfg, flag)) && check_id(v) < 0)
		return APTIX_EINVALID;
	if (!v)
		v = aptix_repo_workspace(repo);
	if (v)
		return aptix_buf_set(out, v, strlen(v)) < 0 ?
			aptix_error_oom() : 0;
	return aptix__workspace_derive(out, aptix_repo_workdir(repo));
}

/* --- Candidates ----------------------------------------------------------- */

struct cand {
	char *path;		/* relative to root, or as given when outside */
	char *abs;		/* what to open; NULL when unreadable */
	int outside;		/* unreadable: outside the workspace */
	int err;		/* unreadable: errno of the failure */
	int from_git, named, deleted;
};

struct scan {
	const aptix_scan_options *o;
	aptix_file_set *out;
	char *cwd;
	char *root_lex;		/* root, cleaned */
	char *root_real;	/* realpath(root) */
	long max_size, max_count;
	struct aptix__ignore *ignore;	/* root's .aptixignore */
	struct aptix__statcache *cache;	/* NULL: no stat cache */
	struct cand *v;
	size_t n, alloc;
};

/*
 * name with each byte that is not part of valid UTF-8 written \xHH, and
 * control characters too: a warning that can be stored and printed.
 */
static void escape_name(aptix_buf *out, const char *name, size_t len)
{
	const unsigned char *p = (const unsigned char *)name;
	size_t i = 0, n;

	aptix_buf_clear(out);
	while (i < len) {
		n = p[i] < 0x80 ? (p[i] >= 0x20 && p[i] != 0x7f) :
			aptix_utf8_seqlen(p + i, len - i);
		if (n) {
			aptix_buf_put(out, name + i, n);
			i += n;
		} else {
			aptix_buf_printf(out, "\\x%02x", p[i]);
			i++;
		}
	}
}

/*
 * A candidate; 1 when it is skipped: a name that is not valid UTF-8
 * cannot be recorded (paths are UTF-8 in objects, objects-format.md) and
 * is left out with a warning that shows it escaped.
 */
static int add_cand(struct scan *sc, const char *path, size_t len,
		    const char *abs, int outside, int err)
{
	struct cand *c;

	if (!aptix_utf8_valid(path, len)) {
		aptix_buf esc = APTIX_BUF_INIT;
		int r;

		escape_name(&esc, path, len);
		r = aptix_buf_oom(&esc) ? aptix_error_oom() :
			aptix_file_set_warn(sc->out, "'%s': the file name is "
					    "not valid UTF-8: skipped",
					    esc.ptr);
		aptix_buf_release(&esc);
		return r < 0 ? r : 1;
	}

	if (aptix__grow(&sc->v, &sc->alloc, sc->n, sizeof(*sc->v), 64) < 0)
		return APTIX_ERROR;
	c = &sc->v[sc->n];
	memset(c, 0, sizeof(*c));
	if (!(c->path = aptix__strndup(path, len)))
		return APTIX_ERROR;
	if (abs && !(c->abs = aptix__strdup(abs))) {
		free(c->path);
		return APTIX_ERROR;
	}
	c->outside = outside;
	c->err = err;
	sc->n++;
	return 0;
}

/* root + "/" + rel, in buf. */
static int join_root(aptix_buf *buf, const char *root, const char *rel,
		     size_t len)
{
	aptix_buf_clear(buf);
	aptix_buf_puts(buf, root);
	if (buf->len && buf->ptr[buf->len - 1] != '/')
		aptix_buf_putc(buf, '/');
	aptix_buf_put(buf, rel, len);
	return aptix_buf_oom(buf) ? aptix_error_oom() : 0;
}

/* Skip n space-separated fields of a record; NULL when it has fewer. */
static const char *skip_fields(const char *p, const char *end, int n)
{
	while (n-- > 0) {
		const char *sp = memchr(p, ' ', (size_t)(end - p));

		if (!sp)
			return NULL;
		p = sp + 1;
	}
	return p;
}

/*
 * The "# branch.oid" and "# branch.head" headers of --branch: the
 * commit (none on an unborn branch) and the branch (none when HEAD is
 * detached, or when its name is not UTF-8: objects hold UTF-8).
 */
static int branch_header(aptix_worktree *w, const char *rec,
			 const char *rend)
{
	static const char oid_h[] = "# branch.oid ", head_h[] =
		"# branch.head ";
	size_t n = (size_t)(rend - rec);
	char **slot;
	const char *v;

	if (n > sizeof(oid_h) - 1 &&
	    !strncmp(rec, oid_h, sizeof(oid_h) - 1)) {
		slot = &w->commit;
		v = rec + sizeof(oid_h) - 1;
	} else if (n > sizeof(head_h) - 1 &&
		   !strncmp(rec, head_h, sizeof(head_h) - 1)) {
		slot = &w->branch;
		v = rec + sizeof(head_h) - 1;
	} else {
		return 0;
	}
	n = (size_t)(rend - v);
	if (*v == '(' || !aptix_utf8_valid(v, n) ||
	    (slot == &w->commit && ((n != 40 && n != 64) ||
				     !aptix_is_hex(v, n))))
		return 0;	/* (initial), (detached) */
	free(*slot);
	if (!(*slot = aptix__strndup(v, n)))
		return APTIX_ERROR;
	return 0;
}

/*
 * Candidates from `git status --porcelain=v2 --branch -z`: records end
 * with NUL; a rename or copy ("2") is followed by its original path
 * (skipped). Paths are relative to the top of the work tree: prefix
 * (root's place in it) is stripped. Any entry under root makes the work
 * tree dirty; the branch headers give its commit and branch.
 */
static int parse_git_status(struct scan *sc, const char *buf, size_t len,
			    const char *prefix)
{
	const char *p = buf, *end = buf + len;
	size_t plen = strlen(prefix);
	aptix_buf abs = APTIX_BUF_INIT;
	int r = 0;

	while (p < end) {
		const char *rec = p, *rend = memchr(p, '\0', (size_t)(end - p));
		const char *path = NULL, *xy = NULL, *sub = NULL;
		size_t n;
		int skip_orig = 0;

		if (!rend)
			rend = end;
		p = rend < end ? rend + 1 : end;
		if (rend - rec < 3 || rec[1] != ' ')
			continue;
		if (rec[0] == '#' && (r = branch_header(&sc->out->worktree,
							rec, rend)) < 0)
			break;
		switch (rec[0]) {
		case '1':
			path = skip_fields(rec, rend, 8);
			break;
		case '2':
			path = skip_fields(rec, rend, 9);
			skip_orig = 1;
			break;
		case 'u':
			path = skip_fields(rec, rend, 10);
			break;
		case '?':
			path = rec + 2;
			break;
		default:	/* '!' ignored, '#' headers */
			continue;
		}
		if (skip_orig && p < end) {
			const char *o = memchr(p, '\0', (size_t)(end - p));

			p = o ? o + 1 : end;
		}
		if (!path || path >= rend)
			continue;
		if (rec[0] != '?') {
			xy = rec + 2;
			sub = rec + 5;
		}
		n = (size_t)(rend - path);
		if (n < plen || strncmp(path, prefix, plen))
			continue;	/* outside root (not with pathspec .) */
		path += plen;
		n -= plen;
		if (!n)
			continue;
		sc->out->worktree.dirty = 1;
		{
			char *rel = aptix__strndup(path, n);
			const char *what;

			if (!rel) {
				r = APTIX_ERROR;
				break;
			}
			if (in_store(rel) ||
			    aptix__ignore_match(sc->ignore, rel)) {
				free(rel);
				continue;
			}
			/*
			 * An untracked directory is a nested repository;
			 * either is skipped, with a warning.
			 */
			what = path[n - 1] == '/' ? "nested repository" :
				sub && sub[0] == 'S' ? "submodule" : NULL;
			r = what ? aptix_file_set_warn(sc->out, "'%s' is a "
						       "%s: skipped", rel,
						       what) : 0;
			free(rel);
			if (r < 0)
				break;
			if (what)
				continue;
		}
		if ((r = join_root(&abs, sc->root_real, path, n)) < 0 ||
		    (r = add_cand(sc, path, n, abs.ptr, 0, 0)) < 0)
			break;
		if (r == 1) {
			r = 0;
			continue;	/* skipped */
		}
		sc->v[sc->n - 1].from_git = 1;
		if (xy && rec[0] != 'u')
			sc->v[sc->n - 1].deleted = xy[1] == 'D' ||
				(xy[0] == 'D' && xy[1] == '.');
		else if (xy)
			sc->v[sc->n - 1].deleted = xy[0] == 'D' &&
				xy[1] == 'D';
	}
	aptix_buf_release(&abs);
	return r;
}

/* Is there a .aptix entry (a store kept in the work tree) in root? */
static int has_dot_store(const char *root)
{
	aptix_buf p = APTIX_BUF_INIT;
	struct stat st;
	int r;

	aptix_buf_printf(&p, "%s/" APTIX_DIR_NAME, root);
	/* out of memory: say yes, the pathspec is then merely slower */
	r = aptix_buf_oom(&p) || lstat(p.ptr, &st) == 0;
	aptix_buf_release(&p);
	return r;
}

/*
 * Git's dirty files under root; none when root is not in a work tree.
 * One git process: the prefix of root in the work tree (what git
 * status's paths are relative to) comes from the .git lookup. A
 * pathspec costs git a match per file (a third more instructions on a
 * tree of 2,000 files), so it is given only when needed: "." for a
 * root below the top, the exclusion of a store kept in the work tree
 * when there is one (a store in the git directory is never listed).
 */
static int git_candidates(struct scan *sc)
{
	aptix_buf out = APTIX_BUF_INIT, err = APTIX_BUF_INIT;
	aptix_buf prefix = APTIX_BUF_INIT;
	int r, status, dot;
	size_t n = 10;
	const char *st[14] = { "git", "--no-optional-locks", "-C",
			       sc->root_real, "status", "--porcelain=v2",
			       "--branch", "--no-ahead-behind", "-z",
			       "--untracked-files=all", NULL };

	if ((r = aptix__git_top(&prefix, sc->root_real)) < 0 || !prefix.len)
		goto done;	/* not in a work tree: no git at all */
	if (!strcmp(prefix.ptr, sc->root_real)) {
		aptix_buf_clear(&prefix);
	} else {
		/* "<sub>/" of root under the top ("/" top: all of it) */
		const char *rel = sc->root_real + prefix.len +
			(prefix.len > 1);
		char *sub = aptix__strdup(rel);

		if (!sub) {
			r = aptix_error_oom();
			goto done;
		}
		aptix_buf_clear(&prefix);
		aptix_buf_printf(&prefix, "%s/", sub);
		free(sub);
		if (strstr(prefix.ptr, ".git/") == prefix.ptr ||
		    strstr(prefix.ptr, "/.git/"))
			goto done;	/* inside a git directory */
	}
	dot = has_dot_store(sc->root_real);
	if (prefix.len || dot) {
		st[n++] = "--";
		st[n++] = ".";
	}
	if (dot)
		st[n++] = ":(exclude)" APTIX_DIR_NAME;
	st[n] = NULL;
	r = run_git(&out, &err, &status, st);
	if (r == APTIX_ENOTFOUND) {
		aptix_error_clear();
		r = 0;
		goto done;
	}
	if (r < 0)
		goto done;
	if (status != 0 && strstr(err.ptr, "not a git repository")) {
		/* git does not take that .git (GIT_CEILING_DIRECTORIES...) */
		r = 0;
		goto done;
	}
	if (status != 0) {
		chomp_line(&err);
		r = aptix_file_set_warn(sc->out, "git status failed (exit "
					"%d)%s%s: no modified files taken",
					status, err.len ? ": " : "",
					err.ptr);
		goto done;
	}
	sc->out->has_worktree = 1;
	r = parse_git_status(sc, out.ptr, out.len, prefix.ptr);
done:
	aptix_buf_release(&out);
	aptix_buf_release(&err);
	aptix_buf_release(&prefix);
	return r;
}

/* A named path (--file, --files-from), relative to the current directory. */
static int named_candidate(struct scan *sc, const char *given)
{
	aptix_buf abs = APTIX_BUF_INIT;
	const char *rel, *rrel = NULL;
	char *real = NULL;
	struct stat st;
	int r = 0, err;

	if (given[0] != '/') {
		aptix_buf_puts(&abs, sc->cwd);
		aptix_buf_putc(&abs, '/');
	}
	aptix_buf_puts(&abs, given);
	if (aptix_buf_oom(&abs))
		return aptix_error_oom();
	clean_path(abs.ptr);
	abs.len = strlen(abs.ptr);
	rel = path_under(abs.ptr, sc->root_real);
	if (!rel)
		rel = path_under(abs.ptr, sc->root_lex);

	real = realpath(abs.ptr, NULL);
	err = errno;
	if (real)
		rrel = path_under(real, sc->root_real);
	if (!rel && rrel)
		rel = rrel;	/* reached through a symlinked directory */
	if (!rel || (real && !rrel)) {
		r = add_cand(sc, given, strlen(given), NULL, 1, 0);
	} else if (!real) {
		r = add_cand(sc, rel, strlen(rel), NULL, 0, err ? err : ENOENT);
	} else if (stat(real, &st) == 0 && S_ISDIR(st.st_mode)) {
		r = aptix_file_set_warn(sc->out, "'%s' is a directory: "
					"skipped", given);
		goto done;
	} else if (in_store(rel)) {
		r = aptix_file_set_warn(sc->out, "'%s' is in the aptix store: "
					"skipped", given);
		goto done;
	} else if (aptix__ignore_match(sc->ignore, rel)) {
		r = aptix_file_set_warn(sc->out, "'%s' is excluded by "
					APTIX_IGNORE_FILE ": not sent", given);
		goto done;
	} else {
		r = add_cand(sc, rel, strlen(rel), real, 0, 0);
	}
	if (r == 0)
		sc->v[sc->n - 1].named = 1;
	else if (r == 1)
		r = 0;		/* skipped */
done:
	free(real);
	aptix_buf_release(&abs);
	return r;
}

/* --files-from: one path a line, or NUL-separated when it has a NUL. */
static int files_from_candidates(struct scan *sc, const char *from)
{
	aptix_buf list = APTIX_BUF_INIT;
	char sep, *p, *end;
	int r;

	if (!strcmp(from, "-")) {
		r = aptix_buf_read_fd(&list, 0);
		if (r < 0) {
			aptix_error_set_os("cannot read the --files-from "
					   "list from standard input");
			r = APTIX_ENOTFOUND;
		}
	} else {
		r = aptix_buf_read_file(&list, from);
		if (r < 0) {
			aptix_error_set_os("cannot read the --files-from "
					   "list '%s'", from);
			r = APTIX_ENOTFOUND;
		}
	}
	if (r < 0)
		goto done;
	sep = memchr(list.ptr, '\0', list.len) ? '\0' : '\n';
	p = list.ptr;
	end = list.ptr + list.len;
	while (p < end) {
		char *e = memchr(p, sep, (size_t)(end - p));

		if (!e)
			e = end;
		*e = '\0';
		if (sep == '\n' && e > p && e[-1] == '\r')
			e[-1] = '\0';
		if (*p && (r = named_candidate(sc, p)) < 0)
			break;
		p = e + 1;
	}
done:
	aptix_buf_release(&list);
	return r;
}

static int cand_cmp(const void *a, const void *b)
{
	const struct cand *x = a, *y = b;
	int c = strcmp(x->path, y->path);

	if (c)
		return c;
	/* among duplicates, a readable one first */
	return (x->outside || x->err) - (y->outside || y->err);
}

static void cand_free(struct cand *c)
{
	free(c->path);
	free(c->abs);
}

/* Sort, merge duplicates, drop (and name) the deleted ones. */
static int merge_candidates(struct scan *sc)
{
	size_t i, j = 0, ndeleted = 0;
	int r = 0;

	if (sc->n)
		qsort(sc->v, sc->n, sizeof(*sc->v), cand_cmp);
	for (i = 0; i < sc->n; i++) {
		struct cand *c = &sc->v[i];

		if (j && !strcmp(sc->v[j - 1].path, c->path)) {
			struct cand *k = &sc->v[j - 1];

			k->from_git |= c->from_git;
			k->named |= c->named;
			k->deleted = k->deleted && c->deleted;
			cand_free(c);
			continue;
		}
		sc->v[j++] = *c;
	}
	sc->n = j;

	for (i = j = 0; i < sc->n; i++) {
		struct cand *c = &sc->v[i];

		if (c->deleted && !c->named) {
			if (++ndeleted <= DELETED_WARN_MAX && r == 0)
				r = aptix_file_set_warn(sc->out, "'%s' is deleted "
							"in the work tree: not "
							"sent", c->path);
			cand_free(c);
			continue;
		}
		sc->v[j++] = *c;
	}
	sc->n = j;
	if (r == 0 && ndeleted > DELETED_WARN_MAX)
		r = aptix_file_set_warn(sc->out, "%lu more deleted files not "
					"named",
					(unsigned long)(ndeleted -
							DELETED_WARN_MAX));
	return r;
}

/* --- Reading ------------------------------------------------------------ */

static int set_unreadable(struct scan *sc, aptix_active_file *f,
			  const char *note)
{
	f->action = APTIX_FILE_UNREADABLE;
	if (!(f->note = aptix__strdup(note)))
		return APTIX_ERROR;
	if (!strcmp(note, "outside the workspace"))
		return aptix_file_set_warn(sc->out, "path '%s' is outside the "
					   "workspace", f->path);
	return aptix_file_set_warn(sc->out, "cannot read '%s': %s", f->path,
				   note);
}

/*
 * A file holding a credential is withheld: its content (and hash) are
 * dropped, the note and a warning say which rule found what where.
 */
static int withhold(struct scan *sc, aptix_active_file *f)
{
	aptix_buf note = APTIX_BUF_INIT;
	aptix_credential c;
	char what[160];
	int send = 0;

	if (!aptix_credscan_find(&c, f->content.ptr, f->content.len,
				 sc->o->secrets, sc->o->nsecrets))
		return 0;
	/* a key the caller named comes first, and is never asked about */
	if (sc->o->version >= 2 && sc->o->ask &&
	    strcmp(c.rule, "known-key") &&
	    (send = sc->o->ask(f->path, &c, sc->o->ask_payload)) < 0)
		aptix_error_clear();	/* no answer: withheld */
	if (send != APTIX_CREDENTIAL_SEND) {
		aptix_buf_release(&f->content);
		f->sha256[0] = '\0';
		f->action = APTIX_FILE_WITHHELD;
	}
	f->credential_allowed = send == APTIX_CREDENTIAL_SEND;
	aptix_buf_printf(&note, "holds %s: %s", aptix_credential_kind(&c),
			 aptix_credential_describe(what, sizeof(what), &c));
	free(f->note);
	if (aptix_buf_oom(&note) || !(f->note = aptix_buf_detach(&note))) {
		f->note = NULL;
		aptix_buf_release(&note);
		return aptix_error_oom();
	}
	return aptix_file_set_warn(sc->out, "active file '%s' %s: %s",
				   f->path, f->note, f->credential_allowed ?
				   "sent, as the user allowed" :
				   "withheld (neither sent nor stored)");
}

/* A file over files.max-size: its size only, never read nor hashed. */
static int set_too_large(aptix_active_file *f, const struct stat *st)
{
	aptix_buf_release(&f->content);
	f->sha256[0] = '\0';
	f->size = (long)st->st_size;
	f->too_large = 1;
	f->action = APTIX_FILE_TOO_LARGE;
	return 0;
}

/* Read at most cap bytes of fd into f->content; 0, or -errno. */
static int read_capped(struct scan *sc, aptix_active_file *f, int fd,
		       const struct stat *st, size_t cap)
{
	if (aptix_buf_grow(&f->content, (size_t)st->st_size + 1 < cap ?
			   (size_t)st->st_size + 1 : cap) < 0)
		return aptix_error_oom();
	while (f->content.len < cap) {
		size_t room = f->content.alloc - f->content.len - 1;
		ssize_t n;

		if (!room) {
			if (aptix_buf_grow(&f->content, 65536) < 0)
				return aptix_error_oom();
			room = f->content.alloc - f->content.len - 1;
		}
		if (room > cap - f->content.len)
			room = cap - f->content.len;
		n = read(fd, f->content.ptr + f->content.len, room);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			return -errno;
		if (n == 0)
			break;
		sc->out->nread += (uint64_t)n;
		f->content.len += (size_t)n;
		f->content.ptr[f->content.len] = '\0';
	}
	return 0;
}

/*
 * Open, measure and load one file, and hash it unless the stat cache
 * knows it. A file over max_size is never opened: stat says so. Returns
 * 1 when it turned out to be a directory (skipped, with a warning), 0,
 * or an error.
 */
static int read_one(struct scan *sc, aptix_active_file *f, struct cand *c)
{
	struct stat st;
	const char *cached;
	aptix_oid id;
	int fd, r;

	f->touched = c->from_git;
	if (c->outside)
		return set_unreadable(sc, f, "outside the workspace");
	if (c->err)
		return set_unreadable(sc, f, errno_note(c->err));
	/*
	 * A symlink must stay inside the workspace. git's paths are as git
	 * reports them (git never goes through a symlinked directory);
	 * named ones were resolved already (no symlink left to follow).
	 */
	if (lstat(c->abs, &st) < 0)
		return set_unreadable(sc, f, errno_note(errno));
	if (S_ISLNK(st.st_mode)) {
		char *real = realpath(c->abs, NULL);

		if (!real)
			return set_unreadable(sc, f, errno_note(errno));
		if (!path_under(real, sc->root_real)) {
			free(real);
			return set_unreadable(sc, f, "outside the workspace");
		}
		free(c->abs);
		c->abs = real;
		if (stat(c->abs, &st) < 0)
			return set_unreadable(sc, f, errno_note(errno));
	}
	/* the size first: a 50 GB file is not read to learn it is large */
	if (S_ISREG(st.st_mode) && st.st_size > sc->max_size)
		return set_too_large(f, &st);
	fd = open(c->abs, O_RDONLY | O_NOCTTY | O_NONBLOCK | O_CLOEXEC);
	if (fd < 0)
		return set_unreadable(sc, f, errno_note(errno));
	if (fstat(fd, &st) < 0) {
		r = set_unreadable(sc, f, errno_note(errno));
		goto done;
	}
	if (S_ISDIR(st.st_mode)) {
		r = aptix_file_set_warn(sc->out, "'%s' is a directory: "
					"skipped", f->path);
		r = r < 0 ? r : 1;
		goto done;
	}
	if (!S_ISREG(st.st_mode)) {
		r = set_unreadable(sc, f, "not a regular file");
		goto done;
	}
	if (st.st_size > sc->max_size) {
		r = set_too_large(f, &st);
		goto done;
	}
	/* read at most max_size + 1 bytes: it may have grown */
	r = read_capped(sc, f, fd, &st, (size_t)sc->max_size + 1);
	if (r < 0 && r != APTIX_ERROR) {
		aptix_buf_release(&f->content);
		r = set_unreadable(sc, f, errno_note(-r));
		goto done;
	}
	if (r < 0)
		goto done;
	if (f->content.len > (size_t)sc->max_size) {
		/* it grew past the limit while we read */
		st.st_size = (off_t)f->content.len;
		r = set_too_large(f, &st);
		goto done;
	}
	cached = (off_t)f->content.len == st.st_size ?
		aptix__statcache_get(sc->cache, f->path, &st) : NULL;
	if (cached) {
		memcpy(f->sha256, cached, 65);
	} else {
		if ((r = aptix_sha256(&id, f->content.ptr,
				      f->content.len)) < 0)
			goto done;
		aptix_oid_tostr(f->sha256, &id);
		sc->out->nhashed++;
		if ((off_t)f->content.len == st.st_size &&
		    (r = aptix__statcache_put(sc->cache, f->path, &st,
					      f->sha256)) < 0)
			goto done;
	}
	f->size = (long)f->content.len;
	f->binary = !aptix_utf8_valid(f->content.ptr, f->content.len);
	f->action = f->binary ? APTIX_FILE_BINARY : APTIX_FILE_SEND;
	r = withhold(sc, f);
done:
	close(fd);
	return r;
}

/* --- The scan ------------------------------------------------------------- */

static int scan_limits(struct scan *sc, const aptix_scan_options *o)
{
	int r;

	if (o->max_size < 0 || o->max_count < 0) {
		aptix_error_set(APTIX_ERROR_INVALID, "negative file limits "
				"(max_size %ld, max_count %ld)", o->max_size,
				o->max_count);
		return APTIX_EINVALID;
	}
	sc->max_size = o->max_size;
	if (!sc->max_size &&
	    (r = aptix_config_long(&sc->max_size, o->cfg,
				   "files.max-size")) < 0)
		return r;
	sc->max_count = o->max_count;
	if (!sc->max_count &&
	    (r = aptix_config_long(&sc->max_count, o->cfg,
				   "files.max-count")) < 0)
		return r;
	if (sc->max_size < 0 || sc->max_count < 0) {
		aptix_error_set(APTIX_ERROR_INVALID, "files.max-size and "
				"files.max-count must not be negative");
		return APTIX_EINVALID;
	}
	return 0;
}

int aptix_workspace_scan(aptix_file_set *out, const aptix_scan_options *o)
{
	struct scan sc;
	size_t i, keep;
	int r;

	APTIX_ASSERT_ARG(out && o);
	/* version 1: without ask */
	APTIX_ASSERT_ARG(o->version >= 1 &&
			 o->version <= APTIX_SCAN_OPTIONS_VERSION);
	APTIX_ASSERT_ARG(o->npaths == 0 || o->paths);
	APTIX_ASSERT_ARG(o->nsecrets == 0 || o->secrets);
	aptix_file_set_init(out);
	memset(&sc, 0, sizeof(sc));
	sc.o = o;
	sc.out = out;
	if ((r = scan_limits(&sc, o)) < 0)
		return r;
	if (!(sc.cwd = current_dir()))
		return APTIX_ERROR;
	{
		aptix_buf root = APTIX_BUF_INIT;
		const char *given = o->root ? o->root : sc.cwd;

		if (given[0] != '/') {
			aptix_buf_puts(&root, sc.cwd);
			aptix_buf_putc(&root, '/');
		}
		aptix_buf_puts(&root, given);
		if (aptix_buf_oom(&root)) {
			r = aptix_error_oom();
			goto done;
		}
		clean_path(root.ptr);
		sc.root_lex = aptix_buf_detach(&root);
		if (!sc.root_lex) {
			r = aptix_error_oom();
			goto done;
		}
	}
	if (!(sc.root_real = realpath(sc.root_lex, NULL))) {
		aptix_error_set_os("cannot use '%s' as the workspace root",
				   sc.root_lex);
		r = APTIX_ENOTFOUND;
		goto done;
	}

	if ((r = aptix__ignore_load(&sc.ignore, sc.root_real)) < 0)
		goto done;
	if (o->stat_cache &&
	    (r = aptix__statcache_load(&sc.cache, o->stat_cache,
				       aptix_now_ms() * 1000000)) < 0)
		goto done;
	if (!o->no_git && (r = git_candidates(&sc)) < 0)
		goto done;
	for (i = 0; i < o->npaths; i++)
		if (o->paths[i] && *o->paths[i] &&
		    (r = named_candidate(&sc, o->paths[i])) < 0)
			goto done;
	if (o->files_from && (r = files_from_candidates(&sc, o->files_from)) < 0)
		goto done;
	if ((r = merge_candidates(&sc)) < 0)
		goto done;

	keep = sc.n;
	if (keep > (size_t)sc.max_count) {
		keep = (size_t)sc.max_count;
		if ((r = aptix_file_set_warn(out, "%lu more active files not "
					     "considered (files.max-count)",
					     (unsigned long)(sc.n - keep))) < 0)
			goto done;
	}
	if (keep && !(out->v = aptix__calloc(keep, sizeof(*out->v)))) {
		r = APTIX_ERROR;
		goto done;
	}
	for (i = 0; i < keep; i++) {
		aptix_active_file *f = &out->v[out->n];

		memset(f, 0, sizeof(*f));
		aptix_buf_init(&f->content, 0);
		f->path = sc.v[i].path;
		sc.v[i].path = NULL;
		out->n++;
		r = read_one(&sc, f, &sc.v[i]);
		if (r < 0)
			goto done;
		if (r == 1) {	/* a directory after all */
			out->n--;
			free(f->path);
			free(f->note);
			aptix_buf_release(&f->content);
			r = 0;
		}
	}
	if (!o->stat_cache_readonly)
		aptix__statcache_save(sc.cache);
	r = 0;
done:
	aptix__statcache_free(sc.cache);
	for (i = 0; i < sc.n; i++)
		cand_free(&sc.v[i]);
	free(sc.v);
	free(sc.cwd);
	free(sc.root_lex);
	free(sc.root_real);
	aptix__ignore_free(sc.ignore);
	if (r < 0)
		aptix_file_set_release(out);
	return r;
}

int aptix_workspace_stat_cache(aptix_buf *out, const aptix_repo *repo)
{
	APTIX_ASSERT_ARG(out && repo);
	aptix_buf_clear(out);
	aptix_buf_printf(out, "%s/stat-cache", aptix_repo_path(repo));
	return aptix_buf_oom(out) ? aptix_error_oom() : 0;
}
