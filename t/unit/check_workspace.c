/*
 * check_workspace.c - unit tests for src/workspace/workspace.c (aptix/workspace.h)
 * and the file and chunk sets of src/object/context.c: the WorkspaceId, and the
 * active files of a working copy (git's dirty files and named ones),
 * with every kind of bad entry.
 *
 * Each test works in a fresh scratch directory and makes it the current
 * directory (restored by the teardown: with CK_FORK=no the tests share
 * one process). Git work trees are made with the git command.
 */
#ifndef _POSIX_C_SOURCE
# define _POSIX_C_SOURCE 200809L
#endif

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "aptix.h"
#include "aptix/config.h"
#include "aptix/workspace.h"
#include "util/env.h"
#include "unit.h"

static const char *const saved_vars[] = {
	"HOME", "XDG_CONFIG_HOME", "APTIX_WORKSPACE", "GIT_DIR",
	"GIT_WORK_TREE", "GIT_INDEX_FILE", "GIT_CONFIG_NOSYSTEM",
	"GIT_CEILING_DIRECTORIES", "PATH"
};
#define NSAVED (sizeof(saved_vars) / sizeof(saved_vars[0]))

static char *saved_vals[NSAVED];
static char *tmpdir, *savedcwd;
static aptix_file_set fs;
static int have_git;

static void setup(void)
{
	size_t i;

	aptix_error_clear();
	for (i = 0; i < NSAVED; i++) {
		const char *v = getenv(saved_vars[i]);

		saved_vals[i] = v ? strdup(v) : NULL;
	}
	unsetenv("APTIX_WORKSPACE");
	unsetenv("GIT_DIR");
	unsetenv("GIT_WORK_TREE");
	unsetenv("GIT_INDEX_FILE");
	savedcwd = getcwd(NULL, 0);
	ck_assert_ptr_nonnull(savedcwd);
	tmpdir = unit_mkdtemp();
	{
		/* a physical path: realpath() of the root is compared */
		char *real = realpath(tmpdir, NULL);

		ck_assert_ptr_nonnull(real);
		free(tmpdir);
		tmpdir = real;
	}
	setenv("HOME", tmpdir, 1);
	unsetenv("XDG_CONFIG_HOME");
	setenv("GIT_CONFIG_NOSYSTEM", "1", 1);
	{
		/* git may find tmpdir's repository, nothing above it */
		char *parent = strdup(tmpdir);

		ck_assert_ptr_nonnull(parent);
		*strrchr(parent, '/') = '\0';
		setenv("GIT_CEILING_DIRECTORIES", *parent ? parent : "/", 1);
		free(parent);
	}
	aptix_env__reload();
	ck_assert_int_eq(chdir(tmpdir), 0);
	aptix_file_set_init(&fs);
	have_git = system("git --version >/dev/null 2>&1") == 0;
}

static void teardown(void)
{
	size_t i;

	aptix_file_set_release(&fs);
	if (savedcwd && chdir(savedcwd) < 0)
		perror("chdir");
	free(savedcwd);
	savedcwd = NULL;
	unit_rmtree(tmpdir);
	free(tmpdir);
	tmpdir = NULL;
	for (i = 0; i < NSAVED; i++) {
		if (saved_vals[i])
			setenv(saved_vars[i], saved_vals[i], 1);
		else
			unsetenv(saved_vars[i]);
		free(saved_vals[i]);
		saved_vals[i] = NULL;
	}
	aptix_error_clear();
}

/* --- Helpers -------------------------------------------------------------- */

static void put(const char *path, const char *text)
{
	unit_write_file(path, text, strlen(text));
}

static void sh(const char *cmd)
{
	int r = system(cmd);

	ck_assert_msg(r == 0, "'%s' failed (%d)", cmd, r);
}

/* A git work tree in the current directory with the files committed. */
static void git_init(void)
{
	sh("git init -q . && git config user.name T && "
	   "git config user.email t@example.com && "
	   "git config commit.gpgsign false");
}

static void git_commit_all(void)
{
	sh("git add -A && git commit -q -m base");
}

static const aptix_active_file *find(const char *path)
{
	size_t i;

	for (i = 0; i < fs.n; i++)
		if (!strcmp(fs.v[i].path, path))
			return &fs.v[i];
	return NULL;
}

static int has_warning(const char *text)
{
	size_t i;

	for (i = 0; i < fs.nwarnings; i++)
		if (strstr(fs.warnings[i], text))
			return 1;
	return 0;
}

/* What the scan found, on stderr when APTIX_UNIT_VERBOSE is set. */
static void dump(void)
{
	size_t i;

	if (!getenv("APTIX_UNIT_VERBOSE"))
		return;
	for (i = 0; i < fs.n; i++)
		fprintf(stderr, "file %s %s %s\n", fs.v[i].path,
			aptix_file_action_name(fs.v[i].action),
			fs.v[i].note ? fs.v[i].note : "");
	for (i = 0; i < fs.nwarnings; i++)
		fprintf(stderr, "warning %s\n", fs.warnings[i]);
}

static int scan_paths(const char *root, const char *const *paths,
		      size_t n, long max_size, long max_count)
{
	aptix_scan_options o = APTIX_SCAN_OPTIONS_INIT;

	aptix_file_set_release(&fs);
	o.root = root;
	o.paths = paths;
	o.npaths = n;
	o.max_size = max_size;
	o.max_count = max_count;
	return aptix_workspace_scan(&fs, &o);
}

static int scan(void)
{
	return scan_paths(tmpdir, NULL, 0, 0, 0);
}

static void hex_of(char out[65], const void *data, size_t len)
{
	aptix_oid id;

	ck_assert_int_eq(aptix_sha256(&id, data, len), 0);
	aptix_oid_tostr(out, &id);
}

#define NEED_GIT() do { \
	if (!have_git) { \
		fprintf(stderr, "skipped: no git\n"); \
		return; \
	} \
} while (0)

/* --- Sets ------------------------------------------------------------------ */

START_TEST(test_action_names)
{
	ck_assert_str_eq(aptix_file_action_name(APTIX_FILE_SEND), "send");
	ck_assert_str_eq(aptix_file_action_name(APTIX_FILE_UNCHANGED),
			 "unchanged");
	ck_assert_str_eq(aptix_file_action_name(APTIX_FILE_TOO_LARGE),
			 "too large");
	ck_assert_str_eq(aptix_file_action_name(APTIX_FILE_BINARY), "binary");
	ck_assert_str_eq(aptix_file_action_name(APTIX_FILE_UNREADABLE),
			 "unreadable");
	ck_assert_str_eq(aptix_file_action_name((aptix_file_action)42),
			 "unknown");
}
END_TEST

START_TEST(test_set_warnings)
{
	aptix_chunk_set cs;

	ck_assert_int_eq(aptix_file_set_warn(&fs, "a %d %s", 1, "b"), 0);
	ck_assert_int_eq(aptix_file_set_warn(&fs, "second"), 0);
	ck_assert_uint_eq(fs.nwarnings, 2);
	ck_assert_str_eq(fs.warnings[0], "a 1 b");
	ck_assert_str_eq(fs.warnings[1], "second");
	aptix_file_set_release(&fs);
	ck_assert_uint_eq(fs.nwarnings, 0);
	ck_assert_ptr_null(fs.warnings);
	aptix_file_set_release(&fs);	/* twice is fine */
	aptix_file_set_release(NULL);

	aptix_chunk_set_init(&cs);
	ck_assert_int_eq(aptix_chunk_set_warn(&cs, "qdrant %s", "down"), 0);
	ck_assert_uint_eq(cs.nwarnings, 1);
	ck_assert_str_eq(cs.warnings[0], "qdrant down");
	cs.v = calloc(1, sizeof(*cs.v));
	ck_assert_ptr_nonnull(cs.v);
	cs.n = 1;
	cs.v[0].chunk_id = strdup("id");
	cs.v[0].path = strdup("a.c");
	aptix_buf_puts(&cs.v[0].text, "text");
	aptix_chunk_set_release(&cs);
	ck_assert_uint_eq(cs.n, 0);
	ck_assert_int_lt(aptix_chunk_set_warn(NULL, "x"), 0);
}
END_TEST

/* --- WorkspaceId ------------------------------------------------------------ */

START_TEST(test_id_precedence)
{
	aptix_buf id = APTIX_BUF_INIT;
	aptix_config *cfg = NULL;
	char *dir = unit_path(tmpdir, "xdg"), *adir, *file;

	ck_assert_int_eq(mkdir(dir, 0700), 0);
	adir = unit_path(dir, "aptix");
	ck_assert_int_eq(mkdir(adir, 0700), 0);
	file = unit_path(adir, "config");
	put(file, "[workspace]\n\tid = from-config\n");
	setenv("XDG_CONFIG_HOME", dir, 1);
	aptix_env__reload();
	ck_assert_int_eq(aptix_config_open(&cfg, NULL), 0);

	setenv("APTIX_WORKSPACE", "from-env", 1);
	aptix_env__reload();
	ck_assert_int_eq(aptix_workspace_id(&id, cfg, "from-flag", tmpdir), 0);
	ck_assert_str_eq(id.ptr, "from-flag");
	ck_assert_int_eq(aptix_workspace_id(&id, cfg, NULL, tmpdir), 0);
	ck_assert_str_eq(id.ptr, "from-env");
	ck_assert_int_eq(aptix_workspace_id(&id, cfg, "", tmpdir), 0);
	ck_assert_str_eq(id.ptr, "from-env");
	unsetenv("APTIX_WORKSPACE");
	aptix_env__reload();
	/* the config read before the variable was dropped still has it */
	aptix_config_free(cfg);
	ck_assert_int_eq(aptix_config_open(&cfg, NULL), 0);
	ck_assert_int_eq(aptix_workspace_id(&id, cfg, NULL, tmpdir), 0);
	ck_assert_str_eq(id.ptr, "from-config");
	aptix_config_free(cfg);
	aptix_buf_release(&id);
	free(file);
	free(adir);
	free(dir);
}
END_TEST

static void expect_derived(const char *root, const char *name)
{
	aptix_buf id = APTIX_BUF_INIT, want = APTIX_BUF_INIT;
	char host[256], *dot;

	ck_assert_int_eq(gethostname(host, sizeof(host)), 0);
	host[sizeof(host) - 1] = '\0';
	if ((dot = strchr(host, '.')))
		*dot = '\0';
	aptix_buf_printf(&want, "%s.%s", name, *host ? host : "localhost");
	ck_assert_int_eq(aptix_workspace_id(&id, NULL, NULL, root), 0);
	ck_assert_str_eq(id.ptr, want.ptr);
	aptix_buf_release(&id);
	aptix_buf_release(&want);
}

START_TEST(test_id_derived)
{
	char *proj = unit_path(tmpdir, "my project"), *sub;

	ck_assert_int_eq(mkdir(proj, 0700), 0);
	/* not a work tree: the root's own name (sanitized) */
	expect_derived(proj, "my-project");
	if (!have_git)
		goto done;
	sub = unit_path(proj, "sub");
	ck_assert_int_eq(mkdir(sub, 0700), 0);
	ck_assert_int_eq(chdir(proj), 0);
	git_init();
	/* in a work tree: the name of its top directory */
	expect_derived(sub, "my-project");
	/* root NULL: the current directory */
	ck_assert_int_eq(chdir(sub), 0);
	{
		aptix_buf a = APTIX_BUF_INIT, b = APTIX_BUF_INIT;

		ck_assert_int_eq(aptix_workspace_id(&a, NULL, NULL, NULL), 0);
		ck_assert_int_eq(aptix_workspace_id(&b, NULL, NULL, sub), 0);
		ck_assert_str_eq(a.ptr, b.ptr);
		aptix_buf_release(&a);
		aptix_buf_release(&b);
	}
	free(sub);
done:
	free(proj);
}
END_TEST

START_TEST(test_id_without_git)
{
	/* no git in PATH: derived from the root's name, no error */
	setenv("PATH", "/nonexistent", 1);
	expect_derived(tmpdir, strrchr(tmpdir, '/') + 1);
}
END_TEST

/* --- Named files -------------------------------------------------------- */

START_TEST(test_named_files)
{
	const char *paths[] = { "a.c", "bin.dat", "bad.txt", "empty",
				"emoji.txt", "./a.c", "sub/../a.c" };
	char hex[65];
	const aptix_active_file *f;

	put("a.c", "int main(void) { return 0; }\n");
	unit_write_file("bin.dat", "x\0y", 3);
	put("bad.txt", "caf\xe9\n");		/* Latin-1 */
	put("empty", "");
	put("emoji.txt", "\xf0\x9f\x98\x80 \xc3\xa9\n");
	ck_assert_int_eq(mkdir("sub", 0700), 0);
	ck_assert_int_eq(scan_paths(tmpdir, paths, 7, 0, 0), 0);
	ck_assert_uint_eq(fs.n, 5);		/* a.c merged */
	ck_assert_uint_eq(fs.nwarnings, 0);
	/* sorted by path */
	ck_assert_str_eq(fs.v[0].path, "a.c");
	ck_assert_str_eq(fs.v[1].path, "bad.txt");
	ck_assert_str_eq(fs.v[2].path, "bin.dat");
	ck_assert_str_eq(fs.v[3].path, "emoji.txt");
	ck_assert_str_eq(fs.v[4].path, "empty");

	f = find("a.c");
	ck_assert_int_eq(f->action, APTIX_FILE_SEND);
	ck_assert_int_eq(f->size, 29);
	ck_assert_int_eq(f->touched, 0);
	ck_assert_int_eq(f->binary, 0);
	ck_assert_int_eq(f->too_large, 0);
	ck_assert_uint_eq(f->content.len, 29);
	ck_assert_str_eq(f->content.ptr, "int main(void) { return 0; }\n");
	hex_of(hex, f->content.ptr, f->content.len);
	ck_assert_str_eq(f->sha256, hex);
	ck_assert_ptr_null(f->note);

	f = find("bin.dat");
	ck_assert_int_eq(f->action, APTIX_FILE_BINARY);
	ck_assert_int_eq(f->binary, 1);
	ck_assert_uint_eq(f->content.len, 3);
	hex_of(hex, "x\0y", 3);
	ck_assert_str_eq(f->sha256, hex);
	ck_assert_int_eq(find("bad.txt")->action, APTIX_FILE_BINARY);
	ck_assert_int_eq(find("emoji.txt")->action, APTIX_FILE_SEND);
	f = find("empty");
	ck_assert_int_eq(f->action, APTIX_FILE_SEND);
	ck_assert_int_eq(f->size, 0);
	hex_of(hex, "", 0);
	ck_assert_str_eq(f->sha256, hex);
}
END_TEST

/* Invalid UTF-8 anywhere, even past the first kilobytes, is binary. */
START_TEST(test_utf8_edge_cases)
{
	static const struct {
		const char *bytes;
		int text;
	} cases[] = {
		{ "plain ascii\n", 1 },
		{ "\xc3\xa9", 1 },		/* U+00E9 */
		{ "\xe2\x82\xac", 1 },		/* U+20AC */
		{ "\xf4\x8f\xbf\xbf", 1 },	/* U+10FFFF */
		{ "\xef\xbb\xbf" "bom", 1 },
		{ "\xc0\x80", 0 },		/* overlong NUL */
		{ "\xe0\x80\xaf", 0 },		/* overlong */
		{ "\xed\xa0\x80", 0 },		/* surrogate */
		{ "\xf4\x90\x80\x80", 0 },	/* past U+10FFFF */
		{ "\xf8\x88\x80\x80\x80", 0 },
		{ "\xc3", 0 },			/* cut short */
		{ "\xe2\x82", 0 },
		{ "\x80", 0 },			/* stray continuation */
		{ "\xfe\xff", 0 },
	};
	size_t i;

	for (i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		const char *path[] = { "f" };
		char *big;
		size_t n = 5000 + strlen(cases[i].bytes);

		big = malloc(n);
		ck_assert_ptr_nonnull(big);
		memset(big, 'a', 5000);
		memcpy(big + 5000, cases[i].bytes, strlen(cases[i].bytes));
		unit_write_file("f", big, n);
		free(big);
		ck_assert_int_eq(scan_paths(tmpdir, path, 1, 0, 0), 0);
		ck_assert_uint_eq(fs.n, 1);
		ck_assert_msg(fs.v[0].binary == !cases[i].text,
			      "case %lu: binary %d", (unsigned long)i,
			      fs.v[0].binary);
	}
}
END_TEST

START_TEST(test_too_large)
{
	const char *paths[] = { "big", "limit", "small" };
	char *data = malloc(300000);
	const aptix_active_file *f;

	ck_assert_ptr_nonnull(data);
	unit_fill_random(data, 300000, 7);
	unit_write_file("big", data, 300000);
	memset(data, 'x', 1000);
	unit_write_file("limit", data, 1000);
	unit_write_file("small", data, 999);
	ck_assert_int_eq(scan_paths(tmpdir, paths, 3, 1000, 0), 0);
	ck_assert_uint_eq(fs.n, 3);
	f = find("big");
	ck_assert_int_eq(f->action, APTIX_FILE_TOO_LARGE);
	ck_assert_int_eq(f->too_large, 1);
	ck_assert_int_eq(f->binary, 0);		/* not examined */
	ck_assert_int_eq(f->size, 300000);
	ck_assert_uint_eq(f->content.len, 0);
	ck_assert_str_eq(f->sha256, "");	/* never read */
	ck_assert_uint_eq(fs.nread, 1000 + 999);
	ck_assert_uint_eq(fs.nhashed, 2);
	f = find("limit");
	ck_assert_int_eq(f->action, APTIX_FILE_SEND);	/* exactly the limit */
	ck_assert_uint_eq(f->content.len, 1000);
	ck_assert_int_eq(find("small")->action, APTIX_FILE_SEND);

	/* the default limit: 100 KiB */
	ck_assert_int_eq(scan_paths(tmpdir, paths, 1, 0, 0), 0);
	ck_assert_int_eq(fs.v[0].action, APTIX_FILE_TOO_LARGE);
	free(data);
}
END_TEST

START_TEST(test_limits_from_config)
{
	aptix_scan_options o = APTIX_SCAN_OPTIONS_INIT;
	aptix_config *cfg = NULL;
	const char *paths[] = { "a", "b", "c" };
	char *dir = unit_path(tmpdir, "xdg"), *adir, *file;

	ck_assert_int_eq(mkdir(dir, 0700), 0);
	adir = unit_path(dir, "aptix");
	ck_assert_int_eq(mkdir(adir, 0700), 0);
	file = unit_path(adir, "config");
	put(file, "[files]\n\tmax-size = 4\n\tmax-count = 2\n");
	setenv("XDG_CONFIG_HOME", dir, 1);
	aptix_env__reload();
	ck_assert_int_eq(aptix_config_open(&cfg, NULL), 0);
	put("a", "1234");
	put("b", "12345");
	put("c", "1");
	o.root = tmpdir;
	o.paths = paths;
	o.npaths = 3;
	o.cfg = cfg;
	ck_assert_int_eq(aptix_workspace_scan(&fs, &o), 0);
	ck_assert_uint_eq(fs.n, 2);
	ck_assert_int_eq(find("a")->action, APTIX_FILE_SEND);
	ck_assert_int_eq(find("b")->action, APTIX_FILE_TOO_LARGE);
	ck_assert_ptr_null(find("c"));
	ck_assert(has_warning("1 more active files not considered "
			      "(files.max-count)"));
	/* options win over the config */
	aptix_file_set_release(&fs);
	o.max_size = 100;
	o.max_count = 10;
	ck_assert_int_eq(aptix_workspace_scan(&fs, &o), 0);
	ck_assert_uint_eq(fs.n, 3);
	ck_assert_int_eq(find("b")->action, APTIX_FILE_SEND);
	aptix_file_set_release(&fs);

	/* a bad value is an error */
	aptix_config_free(cfg);
	put(file, "[files]\n\tmax-size = lots\n");
	ck_assert_int_eq(aptix_config_open(&cfg, NULL), 0);
	o.cfg = cfg;
	o.max_size = 0;
	ck_assert_int_eq(aptix_workspace_scan(&fs, &o), APTIX_EINVALID);
	ck_assert_uint_eq(fs.n, 0);
	aptix_config_free(cfg);
	free(file);
	free(adir);
	free(dir);
}
END_TEST

START_TEST(test_bad_entries)
{
	const char *paths[] = { "missing.c", "../outside.txt", "/etc/hostname",
				"loop", "dir", "link-out", "link-in",
				"dangling", "fifo", ".aptix/config",
				"missing.c" };
	const aptix_active_file *f;
	char *outside = unit_path(tmpdir, "ws");

	/* the workspace is tmpdir/ws; tmpdir/outside.txt is outside it */
	ck_assert_int_eq(mkdir(outside, 0700), 0);
	put("outside.txt", "secret\n");
	ck_assert_int_eq(chdir(outside), 0);
	ck_assert_int_eq(symlink("loop", "loop"), 0);
	ck_assert_int_eq(mkdir("dir", 0700), 0);
	ck_assert_int_eq(symlink("../outside.txt", "link-out"), 0);
	put("target", "in\n");
	ck_assert_int_eq(symlink("target", "link-in"), 0);
	ck_assert_int_eq(symlink("nowhere", "dangling"), 0);
	ck_assert_int_eq(mkfifo("fifo", 0600), 0);
	ck_assert_int_eq(mkdir(".aptix", 0700), 0);
	put(".aptix/config", "[core]\n");
	ck_assert_int_eq(scan_paths(outside, paths, 11, 0, 0), 0);
	dump();

	f = find("missing.c");
	ck_assert_ptr_nonnull(f);
	ck_assert_int_eq(f->action, APTIX_FILE_UNREADABLE);
	ck_assert_str_eq(f->note, "no such file");
	ck_assert_str_eq(f->sha256, "");
	ck_assert(has_warning("cannot read 'missing.c': no such file"));

	f = find("../outside.txt");
	ck_assert_ptr_nonnull(f);
	ck_assert_int_eq(f->action, APTIX_FILE_UNREADABLE);
	ck_assert_str_eq(f->note, "outside the workspace");
	ck_assert_uint_eq(f->content.len, 0);
	ck_assert(has_warning("path '../outside.txt' is outside the "
			      "workspace"));
	ck_assert_int_eq(find("/etc/hostname")->action,
			 APTIX_FILE_UNREADABLE);
	ck_assert(has_warning("path '/etc/hostname' is outside the "
			      "workspace"));

	f = find("loop");
	ck_assert_int_eq(f->action, APTIX_FILE_UNREADABLE);
	ck_assert_str_eq(f->note, "symlink loop");
	ck_assert(has_warning("cannot read 'loop': symlink loop"));

	ck_assert_ptr_null(find("dir"));
	ck_assert(has_warning("'dir' is a directory: skipped"));

	/* a symlink inside resolving outside is outside */
	f = find("link-out");
	ck_assert_int_eq(f->action, APTIX_FILE_UNREADABLE);
	ck_assert_str_eq(f->note, "outside the workspace");
	ck_assert_uint_eq(f->content.len, 0);
	/* ... one resolving inside is read, under the name given */
	f = find("link-in");
	ck_assert_int_eq(f->action, APTIX_FILE_SEND);
	ck_assert_str_eq(f->content.ptr, "in\n");

	ck_assert_str_eq(find("dangling")->note, "no such file");
	ck_assert_str_eq(find("fifo")->note, "not a regular file");
	ck_assert_ptr_null(find(".aptix/config"));
	ck_assert(has_warning("'.aptix/config' is in the aptix store"));
	/* missing.c named twice: one entry, one warning */
	{
		size_t i, n = 0;

		for (i = 0; i < fs.nwarnings; i++)
			n += strstr(fs.warnings[i], "missing.c") != NULL;
		ck_assert_uint_eq(n, 1);
	}
	free(outside);
}
END_TEST

START_TEST(test_unreadable_permission)
{
	const char *paths[] = { "secret" };

	if (geteuid() == 0) {
		fprintf(stderr, "skipped: root reads everything\n");
		return;
	}
	put("secret", "x");
	ck_assert_int_eq(chmod("secret", 0), 0);
	ck_assert_int_eq(scan_paths(tmpdir, paths, 1, 0, 0), 0);
	ck_assert_int_eq(fs.v[0].action, APTIX_FILE_UNREADABLE);
	ck_assert_str_eq(fs.v[0].note, "permission denied");
	ck_assert(has_warning("cannot read 'secret': permission denied"));
}
END_TEST

/* Named paths are relative to the current directory, not to the root. */
START_TEST(test_paths_relative_to_cwd)
{
	const char *paths[] = { "x.c", "../top.c", "./deeper/../x.c",
				"deeper/" };
	char *sub = unit_path(tmpdir, "sub"), *deeper;

	ck_assert_int_eq(mkdir(sub, 0700), 0);
	deeper = unit_path(sub, "deeper");
	ck_assert_int_eq(mkdir(deeper, 0700), 0);
	put("top.c", "top\n");
	ck_assert_int_eq(chdir(sub), 0);
	put("x.c", "x\n");
	ck_assert_int_eq(scan_paths(tmpdir, paths, 4, 0, 0), 0);
	ck_assert_uint_eq(fs.n, 2);
	ck_assert_str_eq(fs.v[0].path, "sub/x.c");
	ck_assert_str_eq(fs.v[1].path, "top.c");
	ck_assert(has_warning("'deeper/' is a directory: skipped"));
	/* an absolute path inside the root */
	{
		char *abs = unit_path(sub, "x.c");
		const char *p[] = { abs };

		ck_assert_int_eq(scan_paths(tmpdir, p, 1, 0, 0), 0);
		ck_assert_uint_eq(fs.n, 1);
		ck_assert_str_eq(fs.v[0].path, "sub/x.c");
		free(abs);
	}
	/* a relative root is taken from the current directory */
	ck_assert_int_eq(scan_paths("..", paths, 1, 0, 0), 0);
	ck_assert_str_eq(fs.v[0].path, "sub/x.c");
	free(deeper);
	free(sub);
}
END_TEST

START_TEST(test_files_from)
{
	aptix_scan_options o = APTIX_SCAN_OPTIONS_INIT;
	const char *one[] = { "c" };

	put("a", "a\n");
	put("b b", "b\n");
	put("c", "c\n");
	unit_write_file("nl\nname", "n\n", 2);
	put("list", "a\r\n\nb b\nmissing\n");
	unit_write_file("zlist", "nl\nname\0a\0\0", 11);
	o.root = tmpdir;
	o.paths = one;
	o.npaths = 1;
	o.files_from = "list";
	ck_assert_int_eq(aptix_workspace_scan(&fs, &o), 0);
	ck_assert_uint_eq(fs.n, 4);
	ck_assert_str_eq(fs.v[0].path, "a");
	ck_assert_str_eq(fs.v[1].path, "b b");
	ck_assert_str_eq(fs.v[2].path, "c");
	ck_assert_str_eq(fs.v[3].path, "missing");
	ck_assert_int_eq(fs.v[3].action, APTIX_FILE_UNREADABLE);
	aptix_file_set_release(&fs);

	/* NUL-separated: names with newlines */
	o.files_from = "zlist";
	o.npaths = 0;
	ck_assert_int_eq(aptix_workspace_scan(&fs, &o), 0);
	ck_assert_uint_eq(fs.n, 2);
	ck_assert_str_eq(fs.v[0].path, "a");
	ck_assert_str_eq(fs.v[1].path, "nl\nname");
	ck_assert_int_eq(fs.v[1].action, APTIX_FILE_SEND);
	aptix_file_set_release(&fs);

	/* standard input */
	{
		int fd = open("list", O_RDONLY), saved = dup(0);

		ck_assert_int_ge(fd, 0);
		ck_assert_int_ge(saved, 0);
		ck_assert_int_eq(dup2(fd, 0), 0);
		close(fd);
		o.files_from = "-";
		ck_assert_int_eq(aptix_workspace_scan(&fs, &o), 0);
		dup2(saved, 0);
		close(saved);
		ck_assert_uint_eq(fs.n, 3);
		aptix_file_set_release(&fs);
	}

	/* a missing list is an error */
	o.files_from = "no-such-list";
	ck_assert_int_eq(aptix_workspace_scan(&fs, &o), APTIX_ENOTFOUND);
	ck_assert_ptr_nonnull(strstr(aptix_error_last()->message,
				     "no-such-list"));
	ck_assert_uint_eq(fs.n, 0);
}
END_TEST

START_TEST(test_bad_options)
{
	aptix_scan_options o = APTIX_SCAN_OPTIONS_INIT;
	const char *p[] = { "x" };

	ck_assert_int_eq(aptix_workspace_scan(NULL, &o), APTIX_EINVALID);
	ck_assert_int_eq(aptix_workspace_scan(&fs, NULL), APTIX_EINVALID);
	o.max_size = -1;
	ck_assert_int_eq(aptix_workspace_scan(&fs, &o), APTIX_EINVALID);
	o.max_size = 0;
	o.version = 99;
	ck_assert_int_eq(aptix_workspace_scan(&fs, &o), APTIX_EINVALID);
	o.version = 1;
	o.root = "/no/such/root";
	ck_assert_int_eq(aptix_workspace_scan(&fs, &o), APTIX_ENOTFOUND);
	o.root = NULL;	/* the current directory */
	o.paths = p;
	o.npaths = 1;
	put("x", "x");
	ck_assert_int_eq(aptix_workspace_scan(&fs, &o), 0);
	ck_assert_uint_eq(fs.n, 1);
	ck_assert_str_eq(fs.v[0].path, "x");
}
END_TEST

/* --- Git ------------------------------------------------------------------ */

START_TEST(test_not_a_work_tree)
{
	put("a.c", "a\n");
	ck_assert_int_eq(scan(), 0);
	ck_assert_uint_eq(fs.n, 0);
	ck_assert_uint_eq(fs.nwarnings, 0);
	/* no git at all */
	setenv("PATH", "/nonexistent", 1);
	ck_assert_int_eq(scan(), 0);
	ck_assert_uint_eq(fs.n, 0);
	ck_assert_uint_eq(fs.nwarnings, 0);
}
END_TEST

START_TEST(test_git_dirty_files)
{
	const aptix_active_file *f;

	NEED_GIT();
	git_init();
	put("modified.c", "v1\n");
	put("staged.c", "v1\n");
	put("clean.c", "clean\n");
	put("old-name.c", "renamed content\n");
	put("deleted.c", "bye\n");
	put("both.c", "v1\n");
	put(".gitignore", "*.o\n/build/\n");
	ck_assert_int_eq(mkdir("sub", 0700), 0);
	put("sub/deep.c", "deep\n");
	git_commit_all();
	put("modified.c", "v2\n");
	put("staged.c", "v2\n");
	sh("git add staged.c");
	put("both.c", "v2\n");
	sh("git add both.c");
	put("both.c", "v3\n");
	sh("git mv old-name.c new-name.c");
	ck_assert_int_eq(unlink("deleted.c"), 0);
	put("untracked.c", "new\n");
	put("ignored.o", "obj\n");
	ck_assert_int_eq(mkdir("build", 0700), 0);
	put("build/out", "out\n");
	ck_assert_int_eq(mkdir("newdir", 0700), 0);
	put("newdir/inner.c", "inner\n");
	put("with space.c", "sp\n");
	unit_write_file("new\nline.c", "nl\n", 3);
	put("sub/deep.c", "deeper\n");
	ck_assert_int_eq(mkdir(".aptix", 0700), 0);
	put(".aptix/data.mdb", "store");

	ck_assert_int_eq(scan(), 0);
	dump();
	ck_assert_uint_eq(fs.n, 9);
	ck_assert_str_eq(fs.v[0].path, "both.c");
	ck_assert_str_eq(fs.v[1].path, "modified.c");
	ck_assert_str_eq(fs.v[2].path, "new\nline.c");
	ck_assert_str_eq(fs.v[3].path, "new-name.c");
	ck_assert_str_eq(fs.v[4].path, "newdir/inner.c");
	ck_assert_str_eq(fs.v[5].path, "staged.c");
	ck_assert_str_eq(fs.v[6].path, "sub/deep.c");
	ck_assert_str_eq(fs.v[7].path, "untracked.c");
	ck_assert_str_eq(fs.v[8].path, "with space.c");
	f = find("both.c");
	ck_assert_int_eq(f->touched, 1);
	ck_assert_str_eq(f->content.ptr, "v3\n");	/* the work tree's */
	ck_assert_str_eq(find("new-name.c")->content.ptr,
			 "renamed content\n");
	ck_assert_ptr_null(find("old-name.c"));
	ck_assert_ptr_null(find("deleted.c"));
	ck_assert(has_warning("'deleted.c' is deleted in the work tree: "
			      "not sent"));
	ck_assert_uint_eq(fs.nwarnings, 1);

	/* naming a dirty file again changes nothing; a clean one is added */
	{
		const char *p[] = { "modified.c", "clean.c" };

		ck_assert_int_eq(scan_paths(tmpdir, p, 2, 0, 0), 0);
		ck_assert_uint_eq(fs.n, 10);
		ck_assert_int_eq(find("modified.c")->touched, 1);
		ck_assert_int_eq(find("clean.c")->touched, 0);
	}
	/* no_git: only the named ones */
	{
		aptix_scan_options o = APTIX_SCAN_OPTIONS_INIT;
		const char *p[] = { "clean.c" };

		aptix_file_set_release(&fs);
		o.root = tmpdir;
		o.paths = p;
		o.npaths = 1;
		o.no_git = 1;
		ck_assert_int_eq(aptix_workspace_scan(&fs, &o), 0);
		ck_assert_uint_eq(fs.n, 1);
	}
}
END_TEST

/* A root below the top of the work tree: only its files, root-relative. */
START_TEST(test_git_subdirectory_root)
{
	char *sub;

	NEED_GIT();
	git_init();
	ck_assert_int_eq(mkdir("sub", 0700), 0);
	put("top.c", "1\n");
	put("sub/in.c", "1\n");
	git_commit_all();
	put("top.c", "2\n");
	put("sub/in.c", "2\n");
	put("sub/new.c", "new\n");
	sub = unit_path(tmpdir, "sub");
	ck_assert_int_eq(scan_paths(sub, NULL, 0, 0, 0), 0);
	dump();
	ck_assert_uint_eq(fs.n, 2);
	ck_assert_str_eq(fs.v[0].path, "in.c");
	ck_assert_str_eq(fs.v[1].path, "new.c");
	free(sub);
}
END_TEST

START_TEST(test_git_symlinks_and_nested)
{
	NEED_GIT();
	git_init();
	put("base", "b\n");
	git_commit_all();
	ck_assert_int_eq(symlink("/etc/passwd", "leak"), 0);
	ck_assert_int_eq(symlink("self", "self"), 0);
	ck_assert_int_eq(symlink("base", "good-link"), 0);
	ck_assert_int_eq(mkdir("nested", 0700), 0);
	sh("cd nested && git init -q . && echo x >f");
	ck_assert_int_eq(scan(), 0);
	dump();
	ck_assert_uint_eq(fs.n, 3);
	ck_assert_str_eq(find("leak")->note, "outside the workspace");
	ck_assert(has_warning("path 'leak' is outside the workspace"));
	ck_assert_str_eq(find("self")->note, "symlink loop");
	ck_assert_str_eq(find("good-link")->content.ptr, "b\n");
	ck_assert(has_warning("'nested/' is a nested repository: skipped"));

	/* named as well as reported by git: still not followed out */
	{
		const char *p[] = { "leak", "./leak" };

		ck_assert_int_eq(scan_paths(tmpdir, p, 2, 0, 0), 0);
		ck_assert_str_eq(find("leak")->note, "outside the workspace");
		ck_assert_uint_eq(find("leak")->content.len, 0);
		ck_assert_int_eq(find("leak")->touched, 1);
	}
}
END_TEST

START_TEST(test_git_max_count)
{
	char name[32];
	int i;

	NEED_GIT();
	git_init();
	put("base", "b\n");
	git_commit_all();
	for (i = 0; i < 1200; i++) {
		snprintf(name, sizeof(name), "f%04d.txt", i);
		put(name, "x\n");
	}
	ck_assert_int_eq(scan(), 0);
	ck_assert_uint_eq(fs.n, 500);	/* files.max-count */
	ck_assert_str_eq(fs.v[0].path, "f0000.txt");
	ck_assert_str_eq(fs.v[499].path, "f0499.txt");
	ck_assert(has_warning("700 more active files not considered "
			      "(files.max-count)"));
	ck_assert_int_eq(scan_paths(tmpdir, NULL, 0, 0, 1200), 0);
	ck_assert_uint_eq(fs.n, 1200);
	ck_assert_uint_eq(fs.nwarnings, 0);
}
END_TEST

START_TEST(test_git_many_deleted)
{
	char name[32];
	int i;

	NEED_GIT();
	git_init();
	for (i = 0; i < 15; i++) {
		snprintf(name, sizeof(name), "d%02d", i);
		put(name, "x\n");
	}
	git_commit_all();
	for (i = 0; i < 15; i++) {
		snprintf(name, sizeof(name), "d%02d", i);
		ck_assert_int_eq(unlink(name), 0);
	}
	ck_assert_int_eq(scan(), 0);
	ck_assert_uint_eq(fs.n, 0);
	ck_assert_uint_eq(fs.nwarnings, 11);
	ck_assert(has_warning("'d09' is deleted"));
	ck_assert(has_warning("5 more deleted files not named"));
}
END_TEST

/* The stat cache: a scan with one, file names relative to tmpdir. */
static int scan_cached(const char *const *paths, size_t n, long max_size)
{
	aptix_scan_options o = APTIX_SCAN_OPTIONS_INIT;

	aptix_file_set_release(&fs);
	o.root = tmpdir;
	o.paths = paths;
	o.npaths = n;
	o.max_size = max_size;
	o.stat_cache = "stat-cache";
	return aptix_workspace_scan(&fs, &o);
}

/* Set a file's mtime (and so its ctime to now) to now - ago seconds. */
static void age_file(const char *path, long ago)
{
	struct timespec t[2];

	clock_gettime(CLOCK_REALTIME, &t[0]);
	t[0].tv_sec -= ago;
	t[1] = t[0];
	ck_assert_int_eq(utimensat(AT_FDCWD, path, t, 0), 0);
}

START_TEST(test_sparse_never_read)
{
	const char *paths[] = { "huge.img" };
	int fd = open("huge.img", O_WRONLY | O_CREAT | O_TRUNC, 0600);

	ck_assert_int_ge(fd, 0);
	/* 20 GB of hole: reading it would take tens of seconds */
	ck_assert_int_eq(ftruncate(fd, (off_t)20 << 30), 0);
	close(fd);
	ck_assert_int_eq(scan_cached(paths, 1, 0), 0);
	ck_assert_uint_eq(fs.n, 1);
	ck_assert_int_eq(fs.v[0].action, APTIX_FILE_TOO_LARGE);
	ck_assert_int_eq(fs.v[0].size, (long)((off_t)20 << 30));
	ck_assert_uint_eq(fs.nread, 0);
	ck_assert_uint_eq(fs.nhashed, 0);
}
END_TEST

START_TEST(test_stat_cache)
{
	const char *paths[] = { "a.c", "b.c" };
	char hex[65];
	struct timespec t[2];

	unit_write_file("a.c", "alpha\n", 6);
	unit_write_file("b.c", "bravo\n", 6);
	age_file("a.c", 100);
	age_file("b.c", 100);
	ck_assert_int_eq(scan_cached(paths, 2, 0), 0);
	ck_assert_uint_eq(fs.nhashed, 2);
	ck_assert_int_eq(access("stat-cache", F_OK), 0);

	/* the second scan hashes nothing and gets the same hashes */
	ck_assert_int_eq(scan_cached(paths, 2, 0), 0);
	ck_assert_uint_eq(fs.nhashed, 0);
	hex_of(hex, "alpha\n", 6);
	ck_assert_str_eq(find("a.c")->sha256, hex);
	hex_of(hex, "bravo\n", 6);
	ck_assert_str_eq(find("b.c")->sha256, hex);

	/* the same size, another content and mtime: hashed again */
	unit_write_file("a.c", "ALPHA\n", 6);
	age_file("a.c", 50);
	ck_assert_int_eq(scan_cached(paths, 2, 0), 0);
	ck_assert_uint_eq(fs.nhashed, 1);
	hex_of(hex, "ALPHA\n", 6);
	ck_assert_str_eq(find("a.c")->sha256, hex);
	ck_assert_int_eq(scan_cached(paths, 2, 0), 0);
	ck_assert_uint_eq(fs.nhashed, 0);

	/*
	 * racy: a cache written no later than a file's mtime is not
	 * trusted for it (the file may have changed in the same tick)
	 */
	clock_gettime(CLOCK_REALTIME, &t[0]);
	t[0].tv_sec -= 70;
	t[1] = t[0];
	ck_assert_int_eq(utimensat(AT_FDCWD, "stat-cache", t, 0), 0);
	ck_assert_int_eq(scan_cached(paths, 2, 0), 0);
	ck_assert_uint_eq(fs.nhashed, 1);	/* a.c, 50 s old */

	/* a file changed just now is hashed, and not cached */
	unit_write_file("b.c", "BRAVO\n", 6);
	ck_assert_int_eq(scan_cached(paths, 2, 0), 0);
	ck_assert_uint_eq(fs.nhashed, 1);
	ck_assert_int_eq(scan_cached(paths, 2, 0), 0);
	ck_assert_uint_eq(fs.nhashed, 1);
	hex_of(hex, "BRAVO\n", 6);
	ck_assert_str_eq(find("b.c")->sha256, hex);

	/* a damaged cache is an empty one */
	unit_write_file("stat-cache", "aptix stat cache 1\nxyz", 22);
	ck_assert_int_eq(scan_cached(paths, 2, 0), 0);
	ck_assert_uint_eq(fs.nhashed, 2);
}
END_TEST

/* The ask callback: answers from a list, records what it was asked. */
struct asked {
	int answers[4];
	size_t n;
	char paths[4][32];
	char rules[4][32];
};

static int ask_cb(const char *path, const aptix_credential *c, void *payload)
{
	struct asked *a = payload;

	ck_assert_uint_lt(a->n, 4);
	snprintf(a->paths[a->n], sizeof(a->paths[0]), "%s", path);
	snprintf(a->rules[a->n], sizeof(a->rules[0]), "%s", c->rule);
	return a->answers[a->n++];
}

START_TEST(test_credential_ask)
{
	const char *paths[] = { "allowed.env", "key.env", "refused.env",
				"failed.env" };
	const char *keys[] = { "configured-api-key-1234567890" };
	const char *token = "GITHUB_TOKEN=ghp_aB3dE5fG7hJ9kL1mN3pQ5rS7tU9vW1xY3zA5\n";
	aptix_scan_options o = APTIX_SCAN_OPTIONS_INIT;
	struct asked a = { { APTIX_CREDENTIAL_SEND, 0, APTIX_ERROR }, 0,
			   { "" }, { "" } };
	const aptix_active_file *f;

	put("allowed.env", token);
	put("refused.env", token);
	put("failed.env", token);
	/* a configured key comes first: never asked, always withheld */
	put("key.env", "k=configured-api-key-1234567890\n"
	    "GITHUB_TOKEN=ghp_aB3dE5fG7hJ9kL1mN3pQ5rS7tU9vW1xY3zA5\n");

	/* no callback: withheld, as always */
	ck_assert_int_eq(scan_paths(tmpdir, paths, 4, 0, 0), 0);
	ck_assert_int_eq(find("allowed.env")->action, APTIX_FILE_WITHHELD);
	ck_assert_int_eq(find("allowed.env")->credential_allowed, 0);

	aptix_file_set_release(&fs);
	o.root = tmpdir;
	o.paths = paths;
	o.npaths = 4;
	o.secrets = keys;
	o.nsecrets = 1;
	o.ask = ask_cb;
	o.ask_payload = &a;
	ck_assert_int_eq(aptix_workspace_scan(&fs, &o), 0);
	dump();
	/* asked in the order of paths, each once, never about the key */
	ck_assert_uint_eq(a.n, 3);
	ck_assert_str_eq(a.paths[0], "allowed.env");
	ck_assert_str_eq(a.paths[1], "failed.env");
	ck_assert_str_eq(a.paths[2], "refused.env");
	ck_assert_str_eq(a.rules[0], "github-token");
	f = find("allowed.env");
	ck_assert_int_eq(f->action, APTIX_FILE_SEND);
	ck_assert_int_eq(f->credential_allowed, 1);
	ck_assert_uint_eq(f->content.len, strlen(token));
	ck_assert_str_ne(f->sha256, "");
	ck_assert(has_warning("active file 'allowed.env' holds a credential: "
			      "GitHub token on line 1 (rule github-token): "
			      "sent, as the user allowed"));
	/* 0 and an error withhold it */
	f = find("failed.env");
	ck_assert_int_eq(f->action, APTIX_FILE_WITHHELD);
	ck_assert_uint_eq(f->content.len, 0);
	f = find("refused.env");
	ck_assert_int_eq(f->action, APTIX_FILE_WITHHELD);
	ck_assert_int_eq(f->credential_allowed, 0);
	ck_assert(has_warning("'refused.env' holds a credential: GitHub token "
			      "on line 1 (rule github-token): withheld"));
	f = find("key.env");
	ck_assert_int_eq(f->action, APTIX_FILE_WITHHELD);
	ck_assert_str_eq(f->sha256, "");
}
END_TEST


Suite *workspace_suite(void)
{
	Suite *s = suite_create("workspace");
	TCase *tc = tcase_create("sets");

	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_add_test(tc, test_action_names);
	tcase_add_test(tc, test_set_warnings);
	suite_add_tcase(s, tc);

	tc = tcase_create("id");
	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_add_test(tc, test_id_precedence);
	tcase_add_test(tc, test_id_derived);
	tcase_add_test(tc, test_id_without_git);
	suite_add_tcase(s, tc);

	tc = tcase_create("named");
	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_add_test(tc, test_named_files);
	tcase_add_test(tc, test_utf8_edge_cases);
	tcase_add_test(tc, test_too_large);
	tcase_add_test(tc, test_credential_ask);
	tcase_add_test(tc, test_sparse_never_read);
	tcase_add_test(tc, test_stat_cache);
	tcase_add_test(tc, test_limits_from_config);
	tcase_add_test(tc, test_bad_entries);
	tcase_add_test(tc, test_unreadable_permission);
	tcase_add_test(tc, test_paths_relative_to_cwd);
	tcase_add_test(tc, test_files_from);
	tcase_add_test(tc, test_bad_options);
	suite_add_tcase(s, tc);

	tc = tcase_create("git");
	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_set_timeout(tc, 60);
	tcase_add_test(tc, test_not_a_work_tree);
	tcase_add_test(tc, test_git_dirty_files);
	tcase_add_test(tc, test_git_subdirectory_root);
	tcase_add_test(tc, test_git_symlinks_and_nested);
	tcase_add_test(tc, test_git_max_count);
	tcase_add_test(tc, test_git_many_deleted);
	suite_add_tcase(s, tc);
	return s;
}
