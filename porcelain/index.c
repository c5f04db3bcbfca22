/*
 * porcelain/index.c - aptix index: build or update the retrieval index
 * (rag.backend: local BM25 in the store, or Qdrant) from the text files
 * of the workspace.
 *
 * The files are those git lists (tracked, and untracked but not
 * ignored: `git ls-files -co --exclude-standard`) in a git work tree,
 * else every file under the workspace root; .git and .aptix are always
 * left out. The library skips binary files and files over
 * rag.max-file-size (1 MiB) and only re-indexes what changed.
 */
#ifndef _POSIX_C_SOURCE
# define _POSIX_C_SOURCE 200809L
#endif
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <signal.h>
#include <stdarg.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
#include <aptix.h>
#include <aptix/config.h>
#include <aptix/rag.h>

#include "cli.h"
#include "commands.h"
#include "parse-options.h"

extern char **environ;

static const char *const index_usage[] = {
	"aptix index [--backend <backend>] [-q] [<path>...]",
	"aptix index --reset [--backend <backend>]",
	"",
	"Indexes the text files of the workspace (or of the paths given) for",
	"retrieval, incrementally: unchanged files are skipped, only new",
	"chunks are indexed (embedded and uploaded with qdrant) and the",
	"chunks of changed or deleted files are removed. In a git work tree",
	"the files are those git does not ignore.",
	NULL
};

/* Append the n bytes at s as a string. */
static void list_add(aptix_strlist *l, const char *s, size_t n)
{
	if (aptix_strlist_pushf(l, "%.*s", (int)n, s) < 0)
		die("out of memory");
}

/* Never .git or .aptix, at any depth. */
static int path_wanted(const char *p)
{
	const char *c = p;

	while (c) {
		const char *e = strchr(c, '/');
		size_t n = e ? (size_t)(e - c) : strlen(c);

		if ((n == 4 && !memcmp(c, ".git", 4)) ||
		    (n == 6 && !memcmp(c, ".aptix", 6)))
			return 0;
		c = e ? e + 1 : NULL;
	}
	return *p != '\0';
}

/* --- Paths ------------------------------------------------------------- */

/* Resolve "." and ".." of an absolute path in place. */
static void normalize(char *p)
{
	char *out = p, *in = p;

	while (*in) {
		char *e;
		size_t n;

		while (*in == '/')
			in++;
		e = strchr(in, '/');
		n = e ? (size_t)(e - in) : strlen(in);
		if (!n)
			break;
		if (n == 1 && in[0] == '.') {
			/* nothing */
		} else if (n == 2 && in[0] == '.' && in[1] == '.') {
			while (out > p && *--out != '/')
				;
		} else {
			*out++ = '/';
			memmove(out, in, n);
			out += n;
		}
		in += n;
	}
	if (out == p)
		*out++ = '/';
	*out = '\0';
}

/* A formatted string, malloc'd (dies when out of memory). */
static char *xstrfmt(const char *fmt, ...)
{
	va_list ap;
	char *s;
	int n;

	va_start(ap, fmt);
	n = vsnprintf(NULL, 0, fmt, ap);
	va_end(ap);
	if (n < 0 || !(s = malloc((size_t)n + 1)))
		die("out of memory");
	va_start(ap, fmt);
	vsnprintf(s, (size_t)n + 1, fmt, ap);
	va_end(ap);
	return s;
}

/* arg (relative to the current directory) relative to root: malloc'd. */
static char *relative_to_root(const char *root, const char *arg)
{
	char cwd[PATH_MAX], *abs, *rel;
	size_t rlen = strlen(root);

	if (!(abs = realpath(arg, NULL))) {
		/* a path that is gone: resolve it by hand */
		char *rc;

		if (!getcwd(cwd, sizeof(cwd)))
			die_errno("cannot get the current directory");
		rc = realpath(cwd, NULL);
		abs = arg[0] == '/' ? xstrfmt("%s", arg) :
			xstrfmt("%s/%s", rc ? rc : cwd, arg);
		free(rc);
		normalize(abs);
	}
	if (rlen == 1 && root[0] == '/')
		rel = xstrfmt("%s", abs + 1);
	else if (!strcmp(abs, root))
		rel = xstrfmt("%s", "");
	else if (!strncmp(abs, root, rlen) && abs[rlen] == '/')
		rel = xstrfmt("%s", abs + rlen + 1);
	else
		die("'%s' is outside the workspace '%s'", arg, root);
	free(abs);
	return rel;
}

/* --- Listing ------------------------------------------------------------- */

/* Run git with its stdout into out; its exit status, -1 if not run. */
static int run_git(aptix_strlist *out_lines, const char *const *argv,
		   int nul, char **out_text)
{
	aptix_process p = APTIX_PROCESS_INIT;
	aptix_buf out = APTIX_BUF_INIT;
	size_t i, s;
	int status = -1;

	p.argv = argv;
	if (aptix_process_capture(&p, &out, NULL, 0, &status) < 0) {
		aptix_error_clear();
		aptix_buf_release(&out);
		return -1;
	}
	if (aptix_buf_oom(&out))
		die("out of memory");
	if (out_lines)
		for (i = s = 0; i <= out.len; i++)
			if (i == out.len ||
			    out.ptr[i] == (nul ? '\0' : '\n')) {
				if (i > s)
					list_add(out_lines, out.ptr + s,
						 i - s);
				s = i + 1;
			}
	if (out_text)
		*out_text = xstrfmt("%s", out.len ? out.ptr : "");
	aptix_buf_release(&out);
	return status;
}

static int in_git_work_tree(const char *root)
{
	const char *argv[] = { "git", "-C", root, "rev-parse",
			       "--is-inside-work-tree", NULL };
	char *out = NULL;
	int st = run_git(NULL, argv, 0, &out), yes;

	yes = st == 0 && out && !strncmp(out, "true", 4);
	free(out);
	return yes;
}

static void git_files(aptix_strlist *files, const char *root,
		      const aptix_strlist *specs)
{
	const char **argv = calloc(specs->nr + 16, sizeof(*argv));
	aptix_strlist all;
	size_t n = 0, i;
	int st;

	if (!argv)
		die("out of memory");
	memset(&all, 0, sizeof(all));
	argv[n++] = "git";
	argv[n++] = "-C";
	argv[n++] = root;
	argv[n++] = "--literal-pathspecs";
	argv[n++] = "ls-files";
	argv[n++] = "-z";
	argv[n++] = "--cached";
	argv[n++] = "--others";
	argv[n++] = "--exclude-standard";
	argv[n++] = "--";
	for (i = 0; i < specs->nr; i++)
		argv[n++] = *specs->items[i] ? specs->items[i] : ".";
	argv[n] = NULL;
	st = run_git(&all, argv, 1, NULL);
	if (st != 0)
		die("'git ls-files' failed in '%s'", root);
	for (i = 0; i < all.nr; i++)
		if (path_wanted(all.items[i]))
			list_add(files, all.items[i], strlen(all.items[i]));
	aptix_strlist_release(&all);
	free(argv);
}

static void add_path(aptix_strlist *files, const char *root,
		     const char *rel);

static void walk(aptix_strlist *files, const char *root, const char *rel)
{
	char *dir;
	DIR *d;
	struct dirent *e;

	dir = xstrfmt("%s%s%s", root, *rel ? "/" : "", rel);
	if (!(d = opendir(dir))) {
		warning("cannot read directory '%s': %s", dir,
			strerror(errno));
		free(dir);
		return;
	}
	while ((e = readdir(d))) {
		char *child;

		if (!strcmp(e->d_name, ".") || !strcmp(e->d_name, "..") ||
		    !strcmp(e->d_name, ".git") || !strcmp(e->d_name, ".aptix"))
			continue;
		child = xstrfmt("%s%s%s", rel, *rel ? "/" : "", e->d_name);
		add_path(files, root, child);
		free(child);
	}
	closedir(d);
	free(dir);
}

/* The files at rel under root: the file itself, or its directory's. */
static void add_path(aptix_strlist *files, const char *root,
		     const char *rel)
{
	char *full = xstrfmt("%s%s%s", root, *rel ? "/" : "", rel);
	struct stat st;

	if (lstat(full, &st) == 0) {
		if (S_ISDIR(st.st_mode))
			walk(files, root, rel);
		else if (S_ISREG(st.st_mode))
			list_add(files, rel, strlen(rel));
	}
	free(full);
}

static void plain_files(aptix_strlist *files, const char *root,
			const aptix_strlist *specs)
{
	size_t i;

	if (!specs->nr) {
		walk(files, root, "");
		return;
	}
	for (i = 0; i < specs->nr; i++) {
		const char *rel = specs->items[i];

		if (!*rel || path_wanted(rel))
			add_path(files, root, rel);
	}
}

/* --- Progress ----------------------------------------------------------- */

struct progress {
	int64_t last_ms;
	int64_t delay_ms;	/* quicker runs show no bar */
	int shown;
};

static volatile sig_atomic_t interrupted;

static void on_signal(int sig)
{
	(void)sig;
	interrupted = 1;
}

static void on_progress(const aptix_rag_progress *p, void *payload)
{
	struct progress *pr = payload;
	double secs = (double)p->elapsed_ms / 1000.0;
	int done = p->finished;
	char eta[32] = "";

	if (!done && pr->shown && p->elapsed_ms - pr->last_ms < 100)
		return;
	if (!pr->shown && p->elapsed_ms < pr->delay_ms)
		return;
	pr->last_ms = p->elapsed_ms;
	pr->shown = 1;
	if (!done && p->files_done && secs > 0) {
		double left = secs * (double)(p->files_total - p->files_done) /
			(double)p->files_done;
		long s = (long)(left + 0.5);

		snprintf(eta, sizeof(eta), ", ETA %ld:%02ld", s / 60, s % 60);
	}
	fprintf(stderr, "\rIndexing: %3u%% (%zu/%zu files), %zu chunks, "
		"%.0f chunks/s%s%s\033[K",
		p->files_total ? (unsigned)(100 * p->files_done /
					    p->files_total) : 100,
		p->files_done, p->files_total, p->chunks_done,
		secs > 0 ? (double)p->chunks_done / secs : 0.0, eta,
		done ? ", done." : "");
	if (done)
		fputc('\n', stderr);
	fflush(stderr);
}

static void on_withheld(const char *path, const char *why, void *payload)
{
	(void)payload;
	warning("'%s' holds a credential, %s: not indexed", path, why);
}

static void on_retry(int attempt, long wait_ms, const char *why,
		     void *payload)
{
	(void)payload;
	fprintf(stderr, "\r\033[K");
	warning("embeddings: %s; attempt %d in %.1f s", why, attempt,
		(double)wait_ms / 1000.0);
}

/*
 * As a git pathspec: a path that names no file, on disk or among the
 * files found, is a mistake (a typo), not an empty scope, unless the
 * index held files there that are gone now (their chunks are removed):
 * the first such path, or NULL.
 */
static const char *unmatched_spec(const char *root,
				  const aptix_strlist *specs,
				  const aptix_strlist *files,
				  const char **given)
{
	size_t i, j, len;
	struct stat st;
	char *full;
	int found;

	for (i = 0; i < specs->nr; i++) {
		const char *spec = specs->items[i];

		len = strlen(spec);
		found = 0;
		for (j = 0; j < files->nr && !found; j++)
			found = !strncmp(files->items[j], spec, len) &&
				(!files->items[j][len] ||
				 files->items[j][len] == '/');
		if (found)
			continue;
		full = xstrfmt("%s/%s", root, spec);
		found = lstat(full, &st) == 0;
		free(full);
		if (!found)
			return given[i];
	}
	return NULL;
}

int cmd_index(int argc, const char **argv, struct aptix_repo *repo)
{
	aptix_rag_index_options o = APTIX_RAG_INDEX_OPTIONS_INIT;
	aptix_rag_index_stats st;
	aptix_strlist specs, files;
	struct progress pr;
	struct sigaction sa, old_int, old_term;
	aptix_config *cfg = NULL;
	const char *backend = NULL, *unmatched;
	char *root = NULL;
	int quiet = 0, reset = 0, r, rc = 0;
	size_t i;
	struct option options[] = {
		OPT_STRING(0, "backend", &backend, "backend",
			   "local or qdrant (default: rag.backend)"),
		OPT_BOOL(0, "reset", &reset,
			 "forget the index instead of updating it"),
		OPT__QUIET(&quiet, "print nothing but errors"),
		OPT_END()
	};

	argc = parse_options(argc, argv, options, index_usage, 0);
	if (reset && argc)
		usage_msg_opt("--reset takes no path", index_usage, options);
	memset(&specs, 0, sizeof(specs));
	memset(&files, 0, sizeof(files));
	memset(&pr, 0, sizeof(pr));
	if (aptix_config_open(&cfg, repo) < 0)
		die_aptix();
	if (reset) {
		if (aptix_rag_index_reset(repo, cfg, backend) < 0)
			die_aptix();
		if (!quiet)
			printf("Forgot the retrieval index\n");
		goto done;
	}
	if (!(root = realpath(aptix_repo_workdir(repo), NULL)))
		die_errno("cannot resolve '%s'", aptix_repo_workdir(repo));

	for (i = 0; i < (size_t)argc; i++) {
		char *rel = relative_to_root(root, argv[i]);

		if (!rel)
			die("out of memory");
		list_add(&specs, rel, strlen(rel));
		free(rel);
	}
	for (i = 0; i < specs.nr; i++)
		if (!*specs.items[i]) {
			/* the whole workspace: no other scope matters */
			aptix_strlist_release(&specs);
			break;
		}
	if (in_git_work_tree(root))
		git_files(&files, root, &specs);
	else
		plain_files(&files, root, &specs);
	unmatched = unmatched_spec(root, &specs, &files, argv);

	o.backend = backend;
	o.files = (const char *const *)files.items;
	o.nfiles = files.nr;
	o.scopes = (const char *const *)specs.items;
	o.nscopes = specs.nr;
	o.http.base_url = aptix_config_get(cfg, "openai.base-url");
	o.http.api_key = getenv("OPENAI_API_KEY");
	o.qdrant_url = getenv("QDRANT_URL");
	o.qdrant_api_key = getenv("QDRANT_API_KEY");
	o.http.on_retry = quiet ? NULL : on_retry;
	o.on_withheld = quiet ? NULL : on_withheld;
	o.cancel = &interrupted;
	o.http.cancel = &interrupted;
	{
		long attempts;
		int64_t timeout;

		if (aptix_config_long(&attempts, cfg,
				      "openai.max-attempts") < 0 ||
		    aptix_config_duration_ms(&timeout, cfg,
					     "openai.timeout") < 0)
			die_aptix();
		o.http.max_attempts = (int)attempts;
		o.http.total_timeout_ms = (long)timeout;
	}
	if (!quiet && isatty(2)) {
		/* as GIT_PROGRESS_DELAY: the bar after this many ms */
		const char *delay = getenv("APTIX_PROGRESS_DELAY");

		pr.delay_ms = delay && *delay ? strtol(delay, NULL, 10) : 250;
		o.progress = on_progress;
		o.payload = &pr;
	}
	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = on_signal;
	sigemptyset(&sa.sa_mask);
	sigaction(SIGINT, &sa, &old_int);
	sigaction(SIGTERM, &sa, &old_term);
	r = aptix_rag_index(&st, repo, cfg, &o);
	sigaction(SIGINT, &old_int, NULL);
	sigaction(SIGTERM, &old_term, NULL);
	if (pr.shown && r < 0)
		fprintf(stderr, "\n");
	if (r < 0) {
		if (r == APTIX_ECANCELLED) {
			error("interrupted: the files indexed so far are kept");
			rc = 130;
			goto done;
		}
		die_aptix();
	}
	if (unmatched && !st.files_removed)
		die("pathspec '%s' did not match any files", unmatched);
	if (!quiet) {
		printf("files:  %zu scanned, %zu changed, %zu unchanged, "
		       "%zu removed, %zu skipped\n", st.files_scanned,
		       st.files_changed, st.files_unchanged, st.files_removed,
		       st.files_skipped);
		printf("chunks: %zu added, %zu removed, %zu embedded; %zu in "
		       "%zu files (%s, %.2f s)\n", st.chunks_added,
		       st.chunks_removed, st.chunks_embedded, st.chunks_total,
		       st.files_total, st.backend,
		       (double)st.duration_ms / 1000.0);
	}
done:
	aptix_strlist_release(&specs);
	aptix_strlist_release(&files);
	free(root);
	aptix_config_free(cfg);
	return rc;
}
