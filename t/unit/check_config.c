/*
 * check_config.c - unit tests for src/config/config.c (aptix/config.h): the
 * parser, the typed getters, load order and environment overrides, and
 * aptix_config_set (validation, secrets, comment-preserving atomic
 * rewrite, the lock).
 *
 * Most tests use a stand-in repository handle whose path is a plain
 * directory: the config code only uses repo->path, and this keeps LMDB
 * out of the fork()ing tests. One test uses a real store.
 */
#ifndef _POSIX_C_SOURCE
# define _POSIX_C_SOURCE 200809L
#endif

#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "aptix.h"
#include "aptix/config.h"
#include "aptix/openai.h"
#include "util/env.h"
#include "repo/repo.h"
#include "config/test-hooks.h"
#include "unit.h"

static const char *const saved_vars[] = {
	"HOME", "XDG_CONFIG_HOME", "OPENAI_BASE_URL", "APTIX_MODEL",
	"APTIX_WORKSPACE"
};
#define NSAVED (sizeof(saved_vars) / sizeof(saved_vars[0]))

static char *saved_vals[NSAVED];
static char *tmpdir, *userdir, *userfile, *storedir, *storefile, *lockfile;
static struct aptix_repo fake;

static void setup(void)
{
	size_t i;
	char *xdg;

	aptix_error_clear();
	for (i = 0; i < NSAVED; i++) {
		const char *v = getenv(saved_vars[i]);

		saved_vals[i] = v ? strdup(v) : NULL;
		unsetenv(saved_vars[i]);
	}
	tmpdir = unit_mkdtemp();
	xdg = unit_path(tmpdir, "xdg");
	ck_assert_int_eq(mkdir(xdg, 0700), 0);
	userdir = unit_path(xdg, "aptix");
	ck_assert_int_eq(mkdir(userdir, 0700), 0);
	ck_assert_int_eq(setenv("XDG_CONFIG_HOME", xdg, 1), 0);
	ck_assert_int_eq(setenv("HOME", tmpdir, 1), 0);
	free(xdg);
	userfile = unit_path(userdir, "config");
	storedir = unit_path(tmpdir, "store");
	ck_assert_int_eq(mkdir(storedir, 0700), 0);
	storefile = unit_path(storedir, "config");
	lockfile = unit_path(storedir, "config.lock");
	memset(&fake, 0, sizeof(fake));
	fake.path = storedir;
	aptix_env__reload();
}

static void teardown(void)
{
	size_t i;

	unit_rmtree(tmpdir);
	free(tmpdir);
	free(userdir);
	free(userfile);
	free(storedir);
	free(storefile);
	free(lockfile);
	tmpdir = userdir = userfile = storedir = storefile = lockfile = NULL;
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

static void put(const char *path, const char *text)
{
	unit_write_file(path, text, strlen(text));
}

/* The whole file, malloc'd; NULL when it does not exist. */
static char *slurp(const char *path)
{
	aptix_buf b = APTIX_BUF_INIT;
	int r = aptix_buf_read_file(&b, path);

	if (r == APTIX_ENOTFOUND)
		return NULL;
	ck_assert_int_eq(r, 0);
	return aptix_buf_detach(&b);
}

static void assert_file(const char *path, const char *want)
{
	char *got = slurp(path);

	ck_assert_ptr_nonnull(got);
	ck_assert_str_eq(got, want);
	free(got);
}

/* Open with only the user's file holding text. */
static aptix_config *load_user(const char *text)
{
	aptix_config *cfg = NULL;

	put(userfile, text);
	ck_assert_msg(aptix_config_open(&cfg, NULL) == 0, "open: %s",
		      aptix_error_last()->message);
	return cfg;
}

static void assert_get(const aptix_config *cfg, const char *key,
		       const char *want)
{
	const char *got = aptix_config_get(cfg, key);

	if (!want) {
		ck_assert_msg(got == NULL, "%s: want unset, got '%s'", key,
			      got);
		return;
	}
	ck_assert_msg(got != NULL, "%s: unset, want '%s'", key, want);
	ck_assert_str_eq(got, want);
}

static void assert_error(const char *want)
{
	ck_assert_str_eq(aptix_error_last()->message, want);
}

/* --- parsing ---------------------------------------------------------- */

START_TEST(parse_basic)
{
	aptix_config *cfg = load_user(
		"# a comment\n"
		"; another\n"
		"[OpenAI]   # trailing comment on a header\n"
		"\tModel   =   gpt-4o   \n"
		"temperature=0.5;comment\n"
		"\n"
		"  flag\n"
		"  other-flag # comment\n"
		"empty =\n"
		"[rag \"Sub Section\"]\n"
		"  top-k = 5\n"
		"[openai]\n"
		"model = last-wins\n"
		"inner = a   b\tc\n");

	assert_get(cfg, "openai.model", "last-wins");
	assert_get(cfg, "OPENAI.MODEL", "last-wins");
	assert_get(cfg, "openai.temperature", "0.5");
	assert_get(cfg, "openai.flag", "true");
	assert_get(cfg, "openai.other-flag", "true");
	assert_get(cfg, "openai.empty", "");
	assert_get(cfg, "rag.Sub Section.top-k", "5");
	assert_get(cfg, "RAG.Sub Section.TOP-K", "5");
	/* subsections are case-sensitive, as in git */
	assert_get(cfg, "rag.sub section.top-k", NULL);
	assert_get(cfg, "rag.top-k", NULL);
	assert_get(cfg, "openai.inner", "a   b c");
	assert_get(cfg, "openai.missing", NULL);
	assert_get(cfg, "nodot", NULL);
	assert_get(NULL, "openai.model", NULL);
	aptix_config_free(cfg);
}
END_TEST

START_TEST(parse_quotes_and_escapes)
{
	aptix_config *cfg = load_user(
		"[s]\n"
		"q = \"  spaced  \"\n"
		"esc = \"a \\\"b\\\" \\\\ c\\nd\\te\"\n"
		"mixed = x\" # not a comment; \"y # a comment\n"
		"bare-esc = a\\tb\\\\c\n"
		"cont = first \\\n"
		"   second \\\n"
		"third\n"
		"after = ok\n"
		"crlf = v\r\n"
		"qcont = \"one\\\n"
		"two\"\n");

	assert_get(cfg, "s.q", "  spaced  ");
	assert_get(cfg, "s.esc", "a \"b\" \\ c\nd\te");
	assert_get(cfg, "s.mixed", "x # not a comment; y");
	assert_get(cfg, "s.bare-esc", "a\tb\\c");
	assert_get(cfg, "s.cont", "first    second third");
	assert_get(cfg, "s.after", "ok");
	assert_get(cfg, "s.crlf", "v");
	assert_get(cfg, "s.qcont", "onetwo");
	aptix_config_free(cfg);
}
END_TEST

START_TEST(parse_bom_and_empty)
{
	aptix_config *cfg = load_user("\xef\xbb\xbf[a]\nb = c");

	assert_get(cfg, "a.b", "c");
	aptix_config_free(cfg);
	cfg = load_user("");
	assert_get(cfg, "a.b", NULL);
	aptix_config_free(cfg);
	cfg = load_user("# only a comment, no newline");
	aptix_config_free(cfg);
}
END_TEST

static const struct {
	const char *text;
	int line;
} bad_files[] = {
	{ "key = value\n", 1 },			/* no section */
	{ "[section\n", 1 },
	{ "[]\n", 1 },
	{ "[.a]\n", 1 },
	{ "[a b]\n", 1 },
	{ "[a \"unterminated]\n", 1 },
	{ "[a \"x\"\n", 1 },
	{ "[a]\nk = \"open\n", 2 },
	{ "[a]\nk = a \\q\n", 2 },
	{ "[a]\n\n\nk v\n", 4 },
	{ "[a]\n= x\n", 2 },
	{ "[a]\n1abc = x\n", 2 },
	{ "[a]\nk_x = 1\n", 2 },
	{ "[a]\nok = 1\nk = one \\\ntwo \"three\n", 4 },
	{ "[a]\nk = v\n[b]\n  @\n", 4 },
};

START_TEST(parse_errors)
{
	aptix_config *cfg = (aptix_config *)1;
	char want[512];
	int r;

	put(userfile, bad_files[_i].text);
	r = aptix_config_open(&cfg, NULL);
	ck_assert_msg(r == APTIX_EINVALID, "case %d: r = %d", _i, r);
	ck_assert_ptr_null(cfg);
	snprintf(want, sizeof(want), "bad config line %d in file '%s'",
		 bad_files[_i].line, userfile);
	assert_error(want);
}
END_TEST

START_TEST(parse_nul_byte)
{
	aptix_config *cfg = NULL;

	unit_write_file(userfile, "[a]\nk = x\0y\n", 12);
	ck_assert_int_eq(aptix_config_open(&cfg, NULL), APTIX_EINVALID);
	ck_assert_ptr_null(cfg);
}
END_TEST

/* --- load order, origins, environment ------------------------------- */

struct seen {
	char text[2048];
};

static int collect(const char *key, const char *value, const char *origin,
		   void *payload)
{
	struct seen *s = payload;
	size_t n = strlen(s->text);

	snprintf(s->text + n, sizeof(s->text) - n, "%s|%s=%s\n", origin,
		 key, value);
	return 0;
}

static int stop_at_second(const char *key, const char *value,
			  const char *origin, void *payload)
{
	int *n = payload;

	(void)key;
	(void)value;
	(void)origin;
	return ++*n == 2 ? 42 : 0;
}

START_TEST(load_order_and_env)
{
	aptix_config *cfg = NULL;
	struct seen seen = { "" };
	char want[2048];
	int n = 0;

	put(userfile, "[openai]\nmodel = user\nbase-url = http://user\n"
	    "[workspace]\nid = user-ws\n");
	put(storefile, "[openai]\nmodel = store\n");
	setenv("OPENAI_BASE_URL", "https://env.example/v1", 1);
	setenv("APTIX_WORKSPACE", "", 1);	/* empty: ignored */
	aptix_env__reload();
	ck_assert_int_eq(aptix_config_open(&cfg, &fake), 0);
	assert_get(cfg, "openai.model", "store");
	assert_get(cfg, "openai.base-url", "https://env.example/v1");
	assert_get(cfg, "workspace.id", "user-ws");
	ck_assert_int_eq(aptix_config_foreach(cfg, collect, &seen), 0);
	snprintf(want, sizeof(want),
		 "file:%s|openai.model=user\n"
		 "file:%s|openai.base-url=http://user\n"
		 "file:%s|workspace.id=user-ws\n"
		 "file:%s|openai.model=store\n"
		 "env:OPENAI_BASE_URL|openai.base-url=https://env.example/v1\n",
		 userfile, userfile, userfile, storefile);
	ck_assert_str_eq(seen.text, want);
	snprintf(want, sizeof(want), "file:%s", storefile);
	ck_assert_str_eq(aptix_config_get_origin(cfg, "openai.model"), want);
	ck_assert_str_eq(aptix_config_get_origin(cfg, "openai.base-url"),
			 "env:OPENAI_BASE_URL");
	ck_assert_ptr_null(aptix_config_get_origin(cfg, "no.such"));
	ck_assert_int_eq(aptix_config_foreach(cfg, stop_at_second, &n), 42);
	ck_assert_int_eq(n, 2);
	aptix_config_free(cfg);

	setenv("APTIX_MODEL", "env-model", 1);
	setenv("APTIX_WORKSPACE", "env-ws", 1);
	aptix_env__reload();
	ck_assert_int_eq(aptix_config_open(&cfg, &fake), 0);
	assert_get(cfg, "openai.model", "env-model");
	assert_get(cfg, "workspace.id", "env-ws");
	ck_assert_str_eq(aptix_config_get_origin(cfg, "workspace.id"),
			 "env:APTIX_WORKSPACE");
	aptix_config_free(cfg);
}
END_TEST

START_TEST(load_missing_files_and_home)
{
	aptix_config *cfg = NULL;
	char *dotconfig, *dotaptix, *homefile;

	/* nothing anywhere */
	ck_assert_int_eq(aptix_config_open(&cfg, &fake), 0);
	assert_get(cfg, "openai.model", NULL);
	aptix_config_free(cfg);

	/* without XDG_CONFIG_HOME: ~/.config/aptix/config */
	unsetenv("XDG_CONFIG_HOME");
	aptix_env__reload();
	dotconfig = unit_path(tmpdir, ".config");
	dotaptix = unit_path(dotconfig, "aptix");
	homefile = unit_path(dotaptix, "config");
	ck_assert_int_eq(mkdir(dotconfig, 0700), 0);
	ck_assert_int_eq(mkdir(dotaptix, 0700), 0);
	put(homefile, "[openai]\nmodel = from-home\n");
	ck_assert_int_eq(aptix_config_open(&cfg, NULL), 0);
	assert_get(cfg, "openai.model", "from-home");
	aptix_config_free(cfg);

	/* no HOME either: just the store */
	unsetenv("HOME");
	aptix_env__reload();
	put(storefile, "[a]\nb = c\n");
	ck_assert_int_eq(aptix_config_open(&cfg, &fake), 0);
	assert_get(cfg, "openai.model", NULL);
	assert_get(cfg, "a.b", "c");
	aptix_config_free(cfg);

	/* a store file that is a directory is an error, not "missing" */
	ck_assert_int_eq(unlink(storefile), 0);
	ck_assert_int_eq(mkdir(storefile, 0700), 0);
	ck_assert_int_lt(aptix_config_open(&cfg, &fake), 0);
	ck_assert_ptr_null(cfg);
	free(dotconfig);
	free(dotaptix);
	free(homefile);
}
END_TEST

START_TEST(malformed_store_file_names_it)
{
	aptix_config *cfg = NULL;
	char want[512];

	put(userfile, "[a]\nb = c\n");
	put(storefile, "[a]\nb = c\n\n[broken\n");
	ck_assert_int_eq(aptix_config_open(&cfg, &fake), APTIX_EINVALID);
	snprintf(want, sizeof(want), "bad config line 4 in file '%s'",
		 storefile);
	assert_error(want);
}
END_TEST

/* --- typed getters ---------------------------------------------------- */

START_TEST(get_long)
{
	aptix_config *cfg = load_user(
		"[n]\n"
		"plain = 42\nneg = -7\nk = 2k\nm = 3M\ng = 1g\n"
		"bad = 12x\nspace = \" 1\"\nempty =\nhuge = 99999999999999999999\n"
		"big-g = 9999999999g\n"
		"[openai]\nmax-attempts = 50\n");
	long v;

	ck_assert_int_eq(aptix_config_get_long(&v, cfg, "n.plain", 0), 0);
	ck_assert_int_eq(v, 42);
	ck_assert_int_eq(aptix_config_get_long(&v, cfg, "n.neg", 0), 0);
	ck_assert_int_eq(v, -7);
	ck_assert_int_eq(aptix_config_get_long(&v, cfg, "n.k", 0), 0);
	ck_assert_int_eq(v, 2048);
	ck_assert_int_eq(aptix_config_get_long(&v, cfg, "n.m", 0), 0);
	ck_assert_int_eq(v, 3L * 1024 * 1024);
	ck_assert_int_eq(aptix_config_get_long(&v, cfg, "n.g", 0), 0);
	ck_assert_int_eq(v, 1024L * 1024 * 1024);
	ck_assert_int_eq(aptix_config_get_long(&v, cfg, "n.unset", 17), 0);
	ck_assert_int_eq(v, 17);
	ck_assert_int_eq(aptix_config_get_long(&v, NULL, "n.plain", 5), 0);
	ck_assert_int_eq(v, 5);

	ck_assert_int_eq(aptix_config_get_long(&v, cfg, "n.bad", 3),
			 APTIX_EINVALID);
	ck_assert_int_eq(v, 3);
	assert_error("bad value '12x' for 'n.bad': not an integer");
	ck_assert_int_eq(aptix_config_get_long(&v, cfg, "n.space", 3),
			 APTIX_EINVALID);
	ck_assert_int_eq(aptix_config_get_long(&v, cfg, "n.empty", 3),
			 APTIX_EINVALID);
	ck_assert_int_eq(aptix_config_get_long(&v, cfg, "n.huge", 3),
			 APTIX_EINVALID);
	assert_error("bad value '99999999999999999999' for 'n.huge': "
		     "out of range");
	ck_assert_int_eq(aptix_config_get_long(&v, cfg, "n.big-g", 3),
			 APTIX_EINVALID);
	/* known keys keep their range when read too */
	ck_assert_int_eq(aptix_config_get_long(&v, cfg, "openai.max-attempts",
					       4), APTIX_EINVALID);
	ck_assert_int_eq(v, 4);
	assert_error("bad value '50' for 'openai.max-attempts': must be "
		     "between 1 and 20");
	aptix_config_free(cfg);
}
END_TEST

START_TEST(get_bool_and_double)
{
	aptix_config *cfg = load_user(
		"[b]\n"
		"t1 = true\nt2 = YES\nt3 = on\nt4 = 1\nt5\n"
		"f1 = false\nf2 = No\nf3 = off\nf4 = 0\nf5 =\n"
		"bad = maybe\n"
		"[d]\n"
		"x = 0.25\ny = -1e3\nbad = 1.2.3\nnan = nan\ninf = inf\n"
		"[openai]\ntemperature = 2.5\n");
	const char *t[] = { "b.t1", "b.t2", "b.t3", "b.t4", "b.t5" };
	const char *f[] = { "b.f1", "b.f2", "b.f3", "b.f4", "b.f5" };
	double d;
	size_t i;
	int v;

	for (i = 0; i < 5; i++) {
		ck_assert_int_eq(aptix_config_get_bool(&v, cfg, t[i], 0), 0);
		ck_assert_msg(v == 1, "%s", t[i]);
		ck_assert_int_eq(aptix_config_get_bool(&v, cfg, f[i], 1), 0);
		ck_assert_msg(v == 0, "%s", f[i]);
	}
	ck_assert_int_eq(aptix_config_get_bool(&v, cfg, "b.unset", 1), 0);
	ck_assert_int_eq(v, 1);
	ck_assert_int_eq(aptix_config_get_bool(&v, cfg, "b.bad", 0),
			 APTIX_EINVALID);
	ck_assert_int_eq(v, 0);
	assert_error("bad value 'maybe' for 'b.bad': not a boolean "
		     "(true/false, yes/no, on/off or 1/0)");

	ck_assert_int_eq(aptix_config_get_double(&d, cfg, "d.x", 0), 0);
	ck_assert(d == 0.25);
	ck_assert_int_eq(aptix_config_get_double(&d, cfg, "d.y", 0), 0);
	ck_assert(d == -1000.0);
	ck_assert_int_eq(aptix_config_get_double(&d, cfg, "d.unset", 0.7),
			 0);
	ck_assert(d == 0.7);
	ck_assert_int_eq(aptix_config_get_double(&d, cfg, "d.bad", 0),
			 APTIX_EINVALID);
	assert_error("bad value '1.2.3' for 'd.bad': not a number");
	ck_assert_int_eq(aptix_config_get_double(&d, cfg, "d.nan", 0),
			 APTIX_EINVALID);
	ck_assert_int_eq(aptix_config_get_double(&d, cfg, "d.inf", 0),
			 APTIX_EINVALID);
	ck_assert_int_eq(aptix_config_get_double(&d, cfg,
						 "openai.temperature", 1),
			 APTIX_EINVALID);
	assert_error("bad value '2.5' for 'openai.temperature': must be "
		     "between 0 and 2");
	aptix_config_free(cfg);
}
END_TEST

static const struct {
	const char *text;
	int64_t ms;
} good_durations[] = {
	{ "30d", 30LL * 86400000 }, { "12h", 12LL * 3600000 },
	{ "15m", 15LL * 60000 }, { "90s", 90000 }, { "500ms", 500 },
	{ "42", 42000 }, { "0", 0 }, { "0ms", 0 },
};

static const char *const bad_durations[] = {
	"", "1.5h", "-1s", "10x", "s", "ms", "5 s", " 5", "5S", "1e3",
	"99999999999999999999", "9999999999999999d",
};

START_TEST(durations)
{
	aptix_config *cfg;
	aptix_buf text = APTIX_BUF_INIT;
	char key[32], want[256];
	int64_t ms;
	size_t i;

	aptix_buf_puts(&text, "[d]\n");
	for (i = 0; i < sizeof(good_durations) / sizeof(good_durations[0]);
	     i++)
		aptix_buf_printf(&text, "good%zu = \"%s\"\n", i,
				 good_durations[i].text);
	for (i = 0; i < sizeof(bad_durations) / sizeof(bad_durations[0]);
	     i++)
		aptix_buf_printf(&text, "bad%zu = \"%s\"\n", i,
				 bad_durations[i]);
	aptix_buf_puts(&text, "[openai]\nchain-ttl = 3 days\n");
	cfg = load_user(text.ptr);
	aptix_buf_release(&text);

	for (i = 0; i < sizeof(good_durations) / sizeof(good_durations[0]);
	     i++) {
		snprintf(key, sizeof(key), "d.good%zu", i);
		ck_assert_msg(aptix_config_get_duration_ms(&ms, cfg, key, -1)
			      == 0, "%s: %s", good_durations[i].text,
			      aptix_error_last()->message);
		ck_assert_int_eq(ms, good_durations[i].ms);
	}
	for (i = 0; i < sizeof(bad_durations) / sizeof(bad_durations[0]);
	     i++) {
		snprintf(key, sizeof(key), "d.bad%zu", i);
		ck_assert_msg(aptix_config_get_duration_ms(&ms, cfg, key, -1)
			      == APTIX_EINVALID, "'%s' was accepted",
			      bad_durations[i]);
		ck_assert_int_eq(ms, -1);
	}
	ck_assert_int_eq(aptix_config_get_duration_ms(&ms, cfg, "d.unset",
						      7), 0);
	ck_assert_int_eq(ms, 7);
	ck_assert_int_eq(aptix_config_get_duration_ms(&ms, cfg,
						      "openai.chain-ttl", 0),
			 APTIX_EINVALID);
	snprintf(want, sizeof(want), "bad value '3 days' for "
		 "'openai.chain-ttl': not a duration (such as 30d, 12h, 15m, "
		 "90s, 500ms or a number of seconds)");
	assert_error(want);
	aptix_config_free(cfg);
}
END_TEST

/* --- set: validation -------------------------------------------------- */

static const char *const secret_keys[] = {
	"openai.api-key", "openai.apikey", "OpenAI.API-Key", "github.token",
	"x.access-token", "a.secret", "db.password", "secret.x",
	"openai.api_key",
};

START_TEST(set_refuses_secrets)
{
	ck_assert_int_eq(aptix_config_set(&fake, secret_keys[_i], "sk-1234"),
			 APTIX_EINVALID);
	assert_error("refusing to store a secret in the config: set "
		     "OPENAI_API_KEY in the environment");
	ck_assert_ptr_null(slurp(storefile));
	ck_assert_int_eq(access(lockfile, F_OK), -1);
}
END_TEST

START_TEST(unset_secret_written_by_hand)
{
	put(storefile, "[openai]\n\tapi-key = sk-oops\n\tmodel = m\n");
	ck_assert_int_eq(aptix_config_set(&fake, "openai.api-key", NULL), 0);
	assert_file(storefile, "[openai]\n\tmodel = m\n");
}
END_TEST

static const struct {
	const char *key, *value;
	int ok;
} set_values[] = {
	{ "openai.model", "gpt-4o", 1 },
	{ "openai.model", "", 0 },
	{ "openai.temperature", "0", 1 },
	{ "openai.temperature", "2", 1 },
	{ "openai.temperature", "0.7", 1 },
	{ "openai.temperature", "2.01", 0 },
	{ "openai.temperature", "-0.1", 0 },
	{ "openai.temperature", "hot", 0 },
	{ "openai.chain-ttl", "30d", 1 },
	{ "openai.chain-ttl", "500ms", 1 },
	{ "openai.chain-ttl", "3600", 1 },
	{ "openai.chain-ttl", "soon", 0 },
	{ "openai.max-attempts", "1", 1 },
	{ "openai.max-attempts", "20", 1 },
	{ "openai.max-attempts", "0", 0 },
	{ "openai.max-attempts", "21", 0 },
	{ "openai.max-attempts", "many", 0 },
	{ "openai.timeout", "90s", 1 },
	{ "openai.timeout", "90 s", 0 },
	{ "openai.instructions", "be brief; #1 rule: \"no fluff\"", 1 },
	{ "openai.instructions", "", 1 },
	{ "openai.base-url", "http://localhost:8080/v1", 1 },
	{ "openai.base-url", "https://api.openai.com/v1", 1 },
	{ "openai.base-url", "ftp://x", 0 },
	{ "openai.base-url", "api.openai.com", 0 },
	{ "context.window-turns", "0", 1 },
	{ "context.window-turns", "1000", 1 },
	{ "context.window-turns", "1001", 0 },
	{ "context.window-chars", "64k", 1 },
	{ "context.window-chars", "-1", 0 },
	{ "context.summary-chars", "400", 1 },
	{ "context.summary-chars", "lots", 0 },
	{ "files.max-size", "10m", 1 },
	{ "files.max-size", "10mb", 0 },
	{ "files.max-count", "500", 1 },
	{ "files.max-count", "5.5", 0 },
	{ "workspace.id", "anything at all", 1 },
	{ "rag.backend", "local", 1 },
	{ "rag.backend", "qdrant", 1 },
	{ "rag.backend", "Qdrant", 0 },
	{ "rag.backend", "pinecone", 0 },
	{ "rag.top-k", "1", 1 },
	{ "rag.top-k", "100", 1 },
	{ "rag.top-k", "0", 0 },
	{ "rag.top-k", "101", 0 },
	{ "rag.score-threshold", "0.35", 1 },
	{ "rag.score-threshold", "-2", 1 },
	{ "rag.score-threshold", "high", 0 },
	{ "rag.required", "yes", 1 },
	{ "rag.required", "off", 1 },
	{ "rag.required", "sometimes", 0 },
	{ "RAG.Top-K", "7", 1 },
	/* unknown keys: any value, but section.name of [a-z0-9-] */
	{ "my-tool.some-option", "whatever", 1 },
	{ "x1.y2", "v", 1 },
	{ "Foo.Bar", "v", 1 },
	{ "nodot", "v", 0 },
	{ ".name", "v", 0 },
	{ "section.", "v", 0 },
	{ "a.b.c", "v", 0 },
	{ "a_b.c", "v", 0 },
	{ "a.b_c", "v", 0 },
	{ "a.1c", "v", 0 },
	{ "a b.c", "v", 0 },
	{ "a.c", "bell\a", 0 },
	{ "a.c", "cr\r", 0 },
	{ "a.c", "multi\nline\ttab", 1 },
};

START_TEST(set_validates)
{
	const char *key = set_values[_i].key, *value = set_values[_i].value;
	aptix_config *cfg = NULL;
	int r = aptix_config_set(&fake, key, value);

	if (!set_values[_i].ok) {
		ck_assert_msg(r == APTIX_EINVALID, "%s=%s: accepted (%d)", key,
			      value, r);
		ck_assert_ptr_null(slurp(storefile));
		ck_assert_int_eq(access(lockfile, F_OK), -1);
		return;
	}
	ck_assert_msg(r == 0, "%s=%s: %s", key, value,
		      aptix_error_last()->message);
	ck_assert_int_eq(access(lockfile, F_OK), -1);
	ck_assert_int_eq(aptix_config_open(&cfg, &fake), 0);
	assert_get(cfg, key, value);
	aptix_config_free(cfg);
}
END_TEST

START_TEST(set_error_messages)
{
	ck_assert_int_eq(aptix_config_set(&fake, "openai.chain-ttl", "3x"),
			 APTIX_EINVALID);
	assert_error("bad value '3x' for 'openai.chain-ttl': not a duration "
		     "(such as 30d, 12h, 15m, 90s, 500ms or a number of "
		     "seconds)");
	ck_assert_int_eq(aptix_config_set(&fake, "rag.backend", "x"),
			 APTIX_EINVALID);
	assert_error("bad value 'x' for 'rag.backend': must be 'local' or "
		     "'qdrant'");
	ck_assert_int_eq(aptix_config_set(&fake, "context.window-chars",
					  "-5"), APTIX_EINVALID);
	assert_error("bad value '-5' for 'context.window-chars': must not "
		     "be negative");
	ck_assert_int_eq(aptix_config_set(&fake, "openai.base-url", "x"),
			 APTIX_EINVALID);
	assert_error("bad value 'x' for 'openai.base-url': must start with "
		     "http:// or https://");
	ck_assert_int_eq(aptix_config_set(&fake, "bad_key.x", "v"),
			 APTIX_EINVALID);
	assert_error("invalid key 'bad_key.x': expected section.name made of "
		     "a-z, 0-9 and '-'");
}
END_TEST

/* Values that need quoting or escaping come back as they went in. */
START_TEST(set_round_trip)
{
	static const char *const values[] = {
		"  leading", "trailing  ", "a # b", "a ; b", "say \"hi\"",
		"back\\slash", "two\nlines", "tab\there", "", "a  b",
		"\\n literally", "ends with backslash\\", "caf\xc3\xa9",
	};
	aptix_config *cfg = NULL;
	char key[32];
	size_t i;

	for (i = 0; i < sizeof(values) / sizeof(values[0]); i++) {
		snprintf(key, sizeof(key), "rt.k%zu", i);
		ck_assert_msg(aptix_config_set(&fake, key, values[i]) == 0,
			      "%s", aptix_error_last()->message);
	}
	ck_assert_int_eq(aptix_config_open(&cfg, &fake), 0);
	for (i = 0; i < sizeof(values) / sizeof(values[0]); i++) {
		snprintf(key, sizeof(key), "rt.k%zu", i);
		assert_get(cfg, key, values[i]);
	}
	aptix_config_free(cfg);
}
END_TEST

/* --- set: the rewrite ------------------------------------------------- */

START_TEST(set_creates_file)
{
	struct stat st;

	ck_assert_int_eq(aptix_config_set(&fake, "openai.model", "gpt-4o"),
			 0);
	assert_file(storefile, "[openai]\n\tmodel = gpt-4o\n");
	ck_assert_int_eq(stat(storefile, &st), 0);
	ck_assert_int_eq(st.st_mode & 07777, 0600);
	ck_assert_int_eq(aptix_config_set(&fake, "rag.top-k", "8"), 0);
	ck_assert_int_eq(aptix_config_set(&fake, "openai.timeout", "60s"), 0);
	assert_file(storefile, "[openai]\n\tmodel = gpt-4o\n\ttimeout = 60s\n"
		    "[rag]\n\ttop-k = 8\n");
	ck_assert_int_eq(access(lockfile, F_OK), -1);
}
END_TEST

START_TEST(set_preserves_comments)
{
	put(storefile,
	    "# aptix settings\n"
	    "\n"
	    "[openai]   ; the model provider\n"
	    "\tmodel = old   # first\n"
	    "\t# keep this comment\n"
	    "\tMODEL = older # second: the last one wins\n"
	    "\n"
	    "[rag \"x\"]\n"
	    "\ttop-k = 3\n"
	    "[rag]\n"
	    "\tbackend = local\n"
	    "\n"
	    "# trailing comment\n");
	/* the last occurrence is replaced in place */
	ck_assert_int_eq(aptix_config_set(&fake, "openai.model", "new"), 0);
	/* a new key goes after the last line of its section */
	ck_assert_int_eq(aptix_config_set(&fake, "openai.timeout", "2m"), 0);
	ck_assert_int_eq(aptix_config_set(&fake, "rag.required", "true"), 0);
	/* a new section goes at the end */
	ck_assert_int_eq(aptix_config_set(&fake, "context.window-turns",
					  "12"), 0);
	assert_file(storefile,
		    "# aptix settings\n"
		    "\n"
		    "[openai]   ; the model provider\n"
		    "\tmodel = old   # first\n"
		    "\t# keep this comment\n"
		    "\tmodel = new\n"
		    "\ttimeout = 2m\n"
		    "\n"
		    "[rag \"x\"]\n"
		    "\ttop-k = 3\n"
		    "[rag]\n"
		    "\tbackend = local\n"
		    "\trequired = true\n"
		    "\n"
		    "# trailing comment\n"
		    "[context]\n"
		    "\twindow-turns = 12\n");
	/* unset removes every occurrence, comments stay */
	ck_assert_int_eq(aptix_config_set(&fake, "openai.model", NULL), 0);
	ck_assert_int_eq(aptix_config_set(&fake, "rag.x.top-k", NULL), 0);
	assert_file(storefile,
		    "# aptix settings\n"
		    "\n"
		    "[openai]   ; the model provider\n"
		    "\t# keep this comment\n"
		    "\ttimeout = 2m\n"
		    "\n"
		    "[rag \"x\"]\n"
		    "[rag]\n"
		    "\tbackend = local\n"
		    "\trequired = true\n"
		    "\n"
		    "# trailing comment\n"
		    "[context]\n"
		    "\twindow-turns = 12\n");
	ck_assert_int_eq(access(lockfile, F_OK), -1);
}
END_TEST

START_TEST(set_odd_layouts)
{
	/* no final newline, a key on the header's line, CRLF, continuation */
	put(storefile, "[a] b = 1\r\n[c]\r\n\tlong = x \\\r\n y\r\n[d]");
	ck_assert_int_eq(aptix_config_set(&fake, "a.b", "2"), 0);
	ck_assert_int_eq(aptix_config_set(&fake, "c.long", "z"), 0);
	ck_assert_int_eq(aptix_config_set(&fake, "d.e", "f"), 0);
	ck_assert_int_eq(aptix_config_set(&fake, "a.new", "n"), 0);
	assert_file(storefile, "[a] b = 2\n\tnew = n\n[c]\r\n\tlong = z\n"
		    "[d]\n\te = f\n");
	ck_assert_int_eq(aptix_config_set(&fake, "a.b", NULL), 0);
	assert_file(storefile, "[a] \tnew = n\n[c]\r\n\tlong = z\n"
		    "[d]\n\te = f\n");
	/* still parses */
	ck_assert_int_eq(aptix_config_set(&fake, "a.new", NULL), 0);
	ck_assert_int_eq(aptix_config_set(&fake, "flag.on", "true"), 0);
	assert_file(storefile, "[a] \t[c]\r\n\tlong = z\n[d]\n\te = f\n"
		    "[flag]\n\ton = true\n");
}
END_TEST

START_TEST(set_replaces_bare_boolean)
{
	put(storefile, "[rag]\n\trequired\n\trequired # again\n");
	ck_assert_int_eq(aptix_config_set(&fake, "rag.required", "false"), 0);
	assert_file(storefile, "[rag]\n\trequired\n\trequired = false\n");
}
END_TEST

START_TEST(unset_absent)
{
	char want[512];

	ck_assert_int_eq(aptix_config_set(&fake, "a.b", NULL),
			 APTIX_ENOTFOUND);
	snprintf(want, sizeof(want), "key 'a.b' is not set in '%s'",
		 storefile);
	assert_error(want);
	ck_assert_ptr_null(slurp(storefile));
	put(storefile, "[a]\n\tc = 1\n");
	ck_assert_int_eq(aptix_config_set(&fake, "a.b", NULL),
			 APTIX_ENOTFOUND);
	assert_file(storefile, "[a]\n\tc = 1\n");
	ck_assert_int_eq(access(lockfile, F_OK), -1);
	ck_assert_int_eq(aptix_config_set(&fake, "nodot", NULL),
			 APTIX_EINVALID);
}
END_TEST

START_TEST(set_refuses_malformed_file)
{
	char want[512];

	put(storefile, "[a]\n\tc = 1\n\tbroken line\n");
	ck_assert_int_eq(aptix_config_set(&fake, "a.d", "2"), APTIX_EINVALID);
	snprintf(want, sizeof(want), "bad config line 3 in file '%s'",
		 storefile);
	assert_error(want);
	assert_file(storefile, "[a]\n\tc = 1\n\tbroken line\n");
	ck_assert_int_eq(access(lockfile, F_OK), -1);
}
END_TEST

/* --- the lock --------------------------------------------------------- */

START_TEST(set_stale_lock)
{
	put(storefile, "[a]\n\tb = 1\n");
	put(lockfile, "");
	ck_assert_int_eq(aptix_config_set(&fake, "a.b", "2"), APTIX_ELOCKED);
	/* it names the file and says how to clear it, as git does */
	ck_assert_ptr_nonnull(strstr(aptix_error_last()->message,
				     "cannot lock the config: '"));
	ck_assert_ptr_nonnull(strstr(aptix_error_last()->message,
				     "config.lock' exists (made "));
	ck_assert_ptr_nonnull(strstr(aptix_error_last()->message,
				     "remove the file manually to "
				     "continue."));
	ck_assert_int_eq(aptix_config_set(&fake, "a.b", NULL), APTIX_ELOCKED);
	/*
	 * a lock whose mtime is ahead of time(): time() reads a coarse
	 * clock, which lags a fresh file's mtime for a tick after each
	 * second begins (CI once made the lock 0.9 ms into a second)
	 */
	{
		struct timespec ts[2];

		ck_assert_int_eq(clock_gettime(CLOCK_REALTIME, &ts[0]), 0);
		ts[0].tv_sec += 2;
		ts[1] = ts[0];
		ck_assert_int_eq(utimensat(AT_FDCWD, lockfile, ts, 0), 0);
	}
	ck_assert_int_eq(aptix_config_set(&fake, "a.b", "2"), APTIX_ELOCKED);
	ck_assert_ptr_nonnull(strstr(aptix_error_last()->message,
				     "config.lock' exists (made 0 s ago)"));
	/* someone else's lock is left alone, and so is the file */
	ck_assert_int_eq(access(lockfile, F_OK), 0);
	assert_file(storefile, "[a]\n\tb = 1\n");
	ck_assert_int_eq(unlink(lockfile), 0);
	ck_assert_int_eq(aptix_config_set(&fake, "a.b", "2"), 0);
	assert_file(storefile, "[a]\n\tb = 2\n");
}
END_TEST

#define WRITERS 4
#define KEYS_EACH 15

/* Writers that retry on APTIX_ELOCKED lose no update. */
START_TEST(set_concurrent_writers)
{
	aptix_config *cfg = NULL;
	pid_t pids[WRITERS];
	char key[32], val[32];
	int i, k, status;

	for (i = 0; i < WRITERS; i++) {
		pids[i] = fork();
		ck_assert_int_ge(pids[i], 0);
		if (pids[i] == 0) {
			int bad = 0;

			for (k = 0; k < KEYS_EACH; k++) {
				int r, tries = 0;

				snprintf(key, sizeof(key), "w%d.k%d", i, k);
				snprintf(val, sizeof(val), "%d-%d", i, k);
				do {
					struct timespec ts = { 0, 200000 };

					r = aptix_config_set(&fake, key, val);
					if (r == APTIX_ELOCKED)
						nanosleep(&ts, NULL);
				} while (r == APTIX_ELOCKED &&
					 ++tries < 100000);
				bad |= r != 0;
			}
			_exit(bad);
		}
	}
	for (i = 0; i < WRITERS; i++) {
		ck_assert_int_eq(waitpid(pids[i], &status, 0), pids[i]);
		ck_assert(WIFEXITED(status));
		ck_assert_int_eq(WEXITSTATUS(status), 0);
	}
	ck_assert_int_eq(access(lockfile, F_OK), -1);
	ck_assert_int_eq(aptix_config_open(&cfg, &fake), 0);
	for (i = 0; i < WRITERS; i++)
		for (k = 0; k < KEYS_EACH; k++) {
			snprintf(key, sizeof(key), "w%d.k%d", i, k);
			snprintf(val, sizeof(val), "%d-%d", i, k);
			assert_get(cfg, key, val);
		}
	aptix_config_free(cfg);
}
END_TEST

/* --- with a real store ------------------------------------------------ */

START_TEST(real_store)
{
	aptix_repo *repo = NULL;
	aptix_config *cfg = NULL;
	char *work = unit_path(tmpdir, "work"), *file;
	const char *v;

	ck_assert_int_eq(mkdir(work, 0700), 0);
	ck_assert_int_eq(aptix_repo_init(&repo, work, NULL), 0);
	ck_assert_int_eq(aptix_config_set(repo, "openai.model", "m1"), 0);
	file = unit_path(aptix_repo_path(repo), "config");
	assert_file(file, "[openai]\n\tmodel = m1\n");
	ck_assert_int_eq(aptix_config_open(&cfg, repo), 0);
	v = aptix_config_get(cfg, "openai.model");
	ck_assert_ptr_nonnull(v);
	ck_assert_str_eq(v, "m1");
	aptix_config_free(cfg);
	aptix_config_free(NULL);
	aptix_repo_free(repo);
	free(file);
	free(work);
}
END_TEST

START_TEST(bad_arguments)
{
	long l;

	ck_assert_int_eq(aptix_config_open(NULL, NULL), APTIX_EINVALID);
	ck_assert_int_eq(aptix_config_get_long(NULL, NULL, "a.b", 0),
			 APTIX_EINVALID);
	ck_assert_int_eq(aptix_config_get_long(&l, NULL, NULL, 0),
			 APTIX_EINVALID);
	ck_assert_int_eq(aptix_config_set(NULL, "a.b", "c"), APTIX_EINVALID);
	ck_assert_int_eq(aptix_config_set(&fake, NULL, "c"), APTIX_EINVALID);
	ck_assert_int_eq(aptix_config_foreach(NULL, NULL, NULL),
			 APTIX_EINVALID);
}
END_TEST

#define N(a) ((int)(sizeof(a) / sizeof((a)[0])))

/* --- the key table ----------------------------------------------------- */

/* The table's default of k as a number, through k's getter. */
static int table_default(double *out, const aptix_config_key *k)
{
	long l;
	int64_t ms;
	int b, r;

	switch (k->type) {
	case APTIX_CONFIG_LONG:
		r = aptix_config_long(&l, NULL, k->name);
		*out = (double)l;
		return r;
	case APTIX_CONFIG_DOUBLE:
		return aptix_config_double(out, NULL, k->name);
	case APTIX_CONFIG_DURATION:
		r = aptix_config_duration_ms(&ms, NULL, k->name);
		*out = (double)ms;
		return r;
	case APTIX_CONFIG_BOOL:
		r = aptix_config_bool(&b, NULL, k->name);
		*out = b;
		return r;
	default:
		*out = 0;
		return 0;
	}
}

START_TEST(key_table_is_sane)
{
	const aptix_config_key *keys, *k;
	aptix_buf text = APTIX_BUF_INIT;
	const char *s;
	size_t i, n;
	double v;
	int r;

	keys = aptix_config_keys(&n);
	ck_assert_uint_gt(n, 20);
	for (i = 0; i < n; i++) {
		k = &keys[i];
		ck_assert_msg(k->doc && *k->doc && !strpbrk(k->doc, "\t\n"),
			      "%s: no documentation", k->name);
		ck_assert_msg(strlen(k->doc) < 120, "%s: doc too long",
			      k->name);
		for (s = k->name; *s; s++)
			ck_assert_msg(!isupper((unsigned char)*s),
				      "%s: not lowercase", k->name);
		ck_assert_msg(!i || strcmp(keys[i - 1].name, k->name) < 0,
			      "%s: the table is not sorted", k->name);
		ck_assert_ptr_eq(aptix_config_key_find(k->name), k);
		ck_assert_msg(k->min <= k->max, "%s: min > max", k->name);
		/* one value is a choice too (extensions.storage: lmdb) */
		ck_assert_msg(k->type != APTIX_CONFIG_ENUM ||
			      (k->values && k->values[0]),
			      "%s: an enum needs values", k->name);
		if (k->type != APTIX_CONFIG_STRING)
			ck_assert_msg(k->dflt || k->type ==
				      APTIX_CONFIG_DOUBLE, "%s: no default",
				      k->name);
		if (!k->dflt)
			continue;
		/* the default parses, and fits the bounds and the type */
		aptix_error_clear();
		r = aptix_config__edit_buffer(&text, "", 0, k->name,
					      k->dflt);
		aptix_buf_release(&text);
		ck_assert_msg(r == 0, "%s: bad default '%s': %s", k->name,
			      k->dflt, aptix_error_last()->message);
		ck_assert_int_eq(table_default(&v, k), 0);
		ck_assert_msg(v >= k->min && v <= k->max, "%s: default out "
			      "of bounds", k->name);
	}
	ck_assert_ptr_null(aptix_config_key_find("no.such"));
	ck_assert_ptr_eq(aptix_config_key_find("RAG.Top-K"),
			 aptix_config_key_find("rag.top-k"));
	ck_assert_ptr_null(aptix_config_key_find("rag.sub.top-k"));
	ck_assert_str_eq(aptix_config_type_name(APTIX_CONFIG_DURATION),
			 "duration");
}
END_TEST

START_TEST(table_getters_defaults)
{
	const char *str;
	long l;
	int64_t ms;
	double d;
	int b;

	ck_assert_int_eq(aptix_config_long(&l, NULL, "openai.max-attempts"),
			 0);
	ck_assert_int_eq(l, 5);
	ck_assert_int_eq(aptix_config_long(&l, NULL, "files.max-size"), 0);
	ck_assert_int_eq(l, 100 * 1024);
	ck_assert_int_eq(aptix_config_long(&l, NULL, "rag.top-k"), 0);
	ck_assert_int_eq(l, 8);
	ck_assert_int_eq(aptix_config_duration_ms(&ms, NULL,
						  "openai.chain-ttl"), 0);
	ck_assert(ms == (int64_t)30 * 24 * 3600 * 1000);
	ck_assert_int_eq(aptix_config_duration_ms(&ms, NULL,
						  "openai.timeout"), 0);
	ck_assert(ms == 600000);
	ck_assert_int_eq(aptix_config_bool(&b, NULL, "rag.required"), 0);
	ck_assert_int_eq(b, 0);
	ck_assert_int_eq(aptix_config_double(&d, NULL,
					     "rag.score-threshold"), 0);
	ck_assert(d == 0);
	ck_assert_int_eq(aptix_config_string(&str, NULL, "openai.model"), 0);
	ck_assert_str_eq(str, "gpt-5");
	ck_assert_int_eq(aptix_config_string(&str, NULL, "rag.backend"), 0);
	ck_assert_str_eq(str, "local");
	ck_assert_int_eq(aptix_config_string(&str, NULL, "openai.base-url"),
			 0);
	ck_assert_str_eq(str, "https://api.openai.com/v1");
	/* no default */
	ck_assert_int_eq(aptix_config_string(&str, NULL, "workspace.id"), 0);
	ck_assert_ptr_null(str);
	ck_assert_int_eq(aptix_config_double(&d, NULL, "openai.temperature"),
			 APTIX_ENOTFOUND);
	ck_assert(d == 0);
	/* not a table key of that type */
	ck_assert_int_eq(aptix_config_long(&l, NULL, "openai.model"),
			 APTIX_EINVALID);
	assert_error("'openai.model' is not a table key of type integer");
	ck_assert_int_eq(aptix_config_long(&l, NULL, "no.such"),
			 APTIX_EINVALID);
	ck_assert_int_eq(aptix_config_string(&str, NULL, "rag.top-k"),
			 APTIX_EINVALID);
}
END_TEST

START_TEST(table_getters_values_and_bounds)
{
	aptix_config *cfg = NULL;
	const char *str;
	long l;
	int64_t ms;

	put(storefile, "[openai]\n\tmax-attempts = 7\n\ttimeout = 90s\n"
	    "[rag]\n\ttop-k = 101\n\tbackend = pinecone\n"
	    "[context]\n\twindow-chars = -1\n");
	ck_assert_int_eq(aptix_config_open(&cfg, &fake), 0);
	ck_assert_int_eq(aptix_config_long(&l, cfg, "openai.max-attempts"),
			 0);
	ck_assert_int_eq(l, 7);
	ck_assert_int_eq(aptix_config_duration_ms(&ms, cfg,
						  "openai.timeout"), 0);
	ck_assert(ms == 90000);
	/* out of bounds: refused, naming key and range; *out the default */
	ck_assert_int_eq(aptix_config_long(&l, cfg, "rag.top-k"),
			 APTIX_EINVALID);
	assert_error("bad value '101' for 'rag.top-k': must be between 1 "
		     "and 100");
	ck_assert_int_eq(l, 8);
	ck_assert_int_eq(aptix_config_long(&l, cfg, "context.window-chars"),
			 APTIX_EINVALID);
	assert_error("bad value '-1' for 'context.window-chars': must not "
		     "be negative");
	ck_assert_int_eq(aptix_config_string(&str, cfg, "rag.backend"),
			 APTIX_EINVALID);
	assert_error("bad value 'pinecone' for 'rag.backend': must be "
		     "'local' or 'qdrant'");
	ck_assert_str_eq(str, "local");
	/* the old getters check the same bounds */
	ck_assert_int_eq(aptix_config_get_long(&l, cfg, "rag.top-k", 3),
			 APTIX_EINVALID);
	ck_assert_int_eq(l, 3);
	aptix_config_free(cfg);
}
END_TEST

Suite *config_suite(void)
{
	Suite *s = suite_create("config");
	TCase *tc;

	tc = tcase_create("parse");
	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_add_test(tc, parse_basic);
	tcase_add_test(tc, parse_quotes_and_escapes);
	tcase_add_test(tc, parse_bom_and_empty);
	tcase_add_loop_test(tc, parse_errors, 0, N(bad_files));
	tcase_add_test(tc, parse_nul_byte);
	suite_add_tcase(s, tc);

	tc = tcase_create("load");
	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_add_test(tc, load_order_and_env);
	tcase_add_test(tc, load_missing_files_and_home);
	tcase_add_test(tc, malformed_store_file_names_it);
	suite_add_tcase(s, tc);

	tc = tcase_create("getters");
	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_add_test(tc, get_long);
	tcase_add_test(tc, get_bool_and_double);
	tcase_add_test(tc, durations);
	suite_add_tcase(s, tc);

	tc = tcase_create("keys");
	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_add_test(tc, key_table_is_sane);
	tcase_add_test(tc, table_getters_defaults);
	tcase_add_test(tc, table_getters_values_and_bounds);
	suite_add_tcase(s, tc);

	tc = tcase_create("set");
	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_add_loop_test(tc, set_refuses_secrets, 0, N(secret_keys));
	tcase_add_test(tc, unset_secret_written_by_hand);
	tcase_add_loop_test(tc, set_validates, 0, N(set_values));
	tcase_add_test(tc, set_error_messages);
	tcase_add_test(tc, set_round_trip);
	tcase_add_test(tc, set_creates_file);
	tcase_add_test(tc, set_preserves_comments);
	tcase_add_test(tc, set_odd_layouts);
	tcase_add_test(tc, set_replaces_bare_boolean);
	tcase_add_test(tc, unset_absent);
	tcase_add_test(tc, set_refuses_malformed_file);
	tcase_add_test(tc, set_stale_lock);
	tcase_add_test(tc, set_concurrent_writers);
	tcase_add_test(tc, real_store);
	tcase_add_test(tc, bad_arguments);
	suite_add_tcase(s, tc);
	return s;
}
