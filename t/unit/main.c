/*
 * main.c - the single runner of the aptix unit tests.
 *
 *	aptix-unit            run every suite
 *	aptix-unit <suite>... run those suites (buf, oid, zstream, object, odb,
 *	                      repo, config, sse, openai, parse_options,
 *	                      workspace, run, threads, credscan, chat,
 *	                      serve, history, revwalk, ...)
 *
 * With APTIX_UNIT_TAP set the results are written as TAP to stdout, so
 * that prove can run t/unit/run-unit.sh. The exit status is non-zero
 * when a test failed.
 */
#ifndef _POSIX_C_SOURCE
# define _POSIX_C_SOURCE 200809L
#endif

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "aptix.h"
#include "unit.h"

static const struct {
	const char *name;
	Suite *(*make)(void);
} suites[] = {
	{ "buf", buf_suite },
	{ "oid", oid_suite },
	{ "zstream", zstream_suite },
	{ "object", object_suite },
	{ "odb", odb_suite },
	{ "repo", repo_suite },
	{ "chain", chain_suite },
	{ "summary", summary_suite },
	{ "config", config_suite },
	{ "sse", sse_suite },
	{ "openai", openai_suite },
	{ "parse_options", parse_options_suite },
	{ "rag", rag_suite },
	{ "workspace", workspace_suite },
	{ "run", run_suite },
	{ "threads", threads_suite },
	{ "credscan", credscan_suite },
	{ "chat", chat_suite },
	{ "serve", serve_suite },
	{ "jsonrpc", jsonrpc_suite },
	{ "history", history_suite },
	{ "revwalk", revwalk_suite },
	{ "process", process_suite },
	{ "backend", backend_suite },
	{ "record", record_suite },
	{ "view", view_suite },
	{ "toolcall", toolcall_suite },
};

#define NSUITES (sizeof(suites) / sizeof(suites[0]))

/* --- Helpers (unit.h) ------------------------------------------------- */

aptix_repo *unit_repo_new(char **dir)
{
	aptix_repo *repo = NULL;
	int existed;

	*dir = unit_mkdtemp();
	ck_assert_msg(aptix_repo_init(&repo, *dir, &existed) == 0, "%s",
		      aptix_error_last()->message);
	return repo;
}

void unit_repo_free(aptix_repo **repo, char **dir)
{
	aptix_repo_free(*repo);
	*repo = NULL;
	unit_rmtree(*dir);
	free(*dir);
	*dir = NULL;
}

char *unit_mkdtemp(void)
{
	const char *tmp = getenv("TMPDIR");
	char *path;
	size_t n;

	if (!tmp || !*tmp)
		tmp = "/tmp";
	n = strlen(tmp) + sizeof("/aptix-unit.XXXXXX");
	path = malloc(n);
	ck_assert_ptr_nonnull(path);
	snprintf(path, n, "%s/aptix-unit.XXXXXX", tmp);
	ck_assert_msg(mkdtemp(path) != NULL, "mkdtemp(%s): %s", path,
		      strerror(errno));
	return path;
}

/* "a/b", or NULL when out of memory (no ck_assert: see unit_rmtree) */
static char *join(const char *a, const char *b)
{
	size_t n = strlen(a) + strlen(b) + 2;
	char *p = malloc(n);

	if (p)
		snprintf(p, n, "%s/%s", a, b);
	return p;
}

void unit_repo_teardown(struct aptix_repo **repo, char **dir)
{
	aptix_repo_free(*repo);
	*repo = NULL;
	unit_rmtree(*dir);
	free(*dir);
	*dir = NULL;
}

void unit_rmtree(const char *path)
{
	struct stat st;
	DIR *d;
	struct dirent *e;

	if (!path || lstat(path, &st) < 0)
		return;
	if (!S_ISDIR(st.st_mode)) {
		unlink(path);
		return;
	}
	chmod(path, 0700);
	d = opendir(path);
	if (d) {
		while ((e = readdir(d)) != NULL) {
			char *sub;

			if (!strcmp(e->d_name, ".") || !strcmp(e->d_name, ".."))
				continue;
			/*
			 * not unit_path(): main() calls this after the run,
			 * where a passing ck_assert (it reports its place)
			 * would kill the runner
			 */
			if (!(sub = join(path, e->d_name)))
				continue;
			unit_rmtree(sub);
			free(sub);
		}
		closedir(d);
	}
	rmdir(path);
}

void unit_fill_random(void *buf, size_t len, uint64_t seed)
{
	unsigned char *p = buf;
	uint64_t x = seed * 0x9e3779b97f4a7c15ULL + 0x2545f4914f6cdd1dULL;
	size_t i;

	if (!x)
		x = 1;
	for (i = 0; i < len; i += 8) {
		uint64_t v;
		size_t k;

		x ^= x >> 12;
		x ^= x << 25;
		x ^= x >> 27;
		v = x * 0x2545f4914f6cdd1dULL;
		for (k = 0; k < 8 && i + k < len; k++) {
			p[i + k] = (unsigned char)v;
			v >>= 8;
		}
	}
}

char *unit_path(const char *a, const char *b)
{
	char *p = join(a, b);

	ck_assert_ptr_nonnull(p);
	return p;
}

void unit_write_file(const char *path, const void *data, size_t len)
{
	int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0644);
	const char *p = data;

	ck_assert_msg(fd >= 0, "open(%s): %s", path, strerror(errno));
	while (len) {
		ssize_t n = write(fd, p, len);

		ck_assert_msg(n > 0, "write(%s): %s", path, strerror(errno));
		p += n;
		len -= (size_t)n;
	}
	ck_assert_int_eq(close(fd), 0);
}

/* --- Runner ----------------------------------------------------------- */

/*
 * Every scratch directory goes under one root, removed after the run,
 * even when a failing test (its forked child exits at once) skipped
 * its teardown.
 */
static char *make_scratch_root(void)
{
	const char *tmp = getenv("TMPDIR");
	char *root;
	size_t n;

	if (!tmp || !*tmp)
		tmp = "/tmp";
	n = strlen(tmp) + sizeof("/aptix-unit-root.XXXXXX");
	if (!(root = malloc(n)))
		return NULL;
	snprintf(root, n, "%s/aptix-unit-root.XXXXXX", tmp);
	if (!mkdtemp(root) || setenv("TMPDIR", root, 1) < 0) {
		fprintf(stderr, "cannot make a scratch directory in %s: %s\n",
			tmp, strerror(errno));
		free(root);
		return NULL;
	}
	return root;
}

/*
 * prove shows a script's stderr but not the text of its "not ok" lines:
 * say there what failed and why, so that a CI log names the cause.
 */
static void report_failures(SRunner *sr)
{
	TestResult **v = srunner_failures(sr);
	int i, n = srunner_ntests_failed(sr);

	for (i = 0; v && i < n; i++) {
		const char *file = tr_lfile(v[i]), *msg = tr_msg(v[i]);

		/* a timeout or a signal has no place */
		fprintf(stderr, "failed: %s:%d: %s: %s\n", file ? file : "?",
			tr_lno(v[i]), tr_tcname(v[i]), msg ? msg : "");
	}
	free(v);
}

/* Is name among the suites asked for (all when none is)? */
static int wanted(int argc, char **argv, const char *name)
{
	int i;

	for (i = 1; i < argc; i++)
		if (!strcmp(argv[i], name))
			return 1;
	return argc < 2;
}

int main(int argc, char **argv)
{
	const char *tap = getenv("APTIX_UNIT_TAP");
	SRunner *sr = NULL;
	char *root;
	size_t i;
	int failed;

	/* as the aptix command: damaged-store suites expect errors */
	if (aptix_fault_guard_install() < 0)
		return EXIT_FAILURE;
	for (i = 0; i < NSUITES; i++) {
		Suite *s;

		if (!wanted(argc, argv, suites[i].name))
			continue;
		s = suites[i].make();
		if (!sr)
			sr = srunner_create(s);
		else
			srunner_add_suite(sr, s);
	}
	if (!sr) {
		fprintf(stderr, "unknown suite '%s'; the suites are:",
			argv[1]);
		for (i = 0; i < NSUITES; i++)
			fprintf(stderr, " %s", suites[i].name);
		fputc('\n', stderr);
		return 2;
	}
	if (tap && *tap)
		srunner_set_tap(sr, "-");
	if (!(root = make_scratch_root())) {
		srunner_free(sr);
		return EXIT_FAILURE;
	}
	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	if (failed && tap && *tap)
		report_failures(sr);
	srunner_free(sr);
	/* a helper process of a failed test may still be writing there */
	for (i = 0; i < 20; i++) {
		struct timespec ts = { 0, 50 * 1000 * 1000 };

		unit_rmtree(root);
		if (access(root, F_OK) < 0)
			break;
		nanosleep(&ts, NULL);
	}
	free(root);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
