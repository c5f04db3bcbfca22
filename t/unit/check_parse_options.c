/*
 * check_parse_options.c - unit tests for cli/parse-options.c and
 * the message helpers of cli/cli.c.
 */
#ifndef _POSIX_C_SOURCE
# define _POSIX_C_SOURCE 200809L
#endif

#include <check.h>
#include <errno.h>
#include <limits.h>
#include <setjmp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli.h"
#include "parse-options.h"

Suite *parse_options_suite(void);

#define ARRAY_SIZE(a) (sizeof(a) / sizeof((a)[0]))
#define CAPTURE_MAX 8192

static const char * const test_usage[] = {
	"aptix test [<options>] [--] <arg>...",
	NULL
};

static jmp_buf exit_jmp;
static int exit_code;

static void test_exit(int code)
{
	exit_code = code;
	longjmp(exit_jmp, 1);
}

static void setup(void)
{
	exit_code = -1;
	parse_options_exit = test_exit;
}

static void teardown(void)
{
	parse_options_exit = NULL;
}

/* parse_options(), or -1000 - exit code if it exited. */
static int run_parse(int argc, const char **args,
		     const struct option *opts, enum parse_opt_flags flags)
{
	if (setjmp(exit_jmp))
		return -1000 - exit_code;
	return parse_options(argc, args, opts, test_usage, flags);
}

/*
 * Run parse_options() on a NULL-terminated argument list copied into
 * args; returns its result, or -1000 - exit code if it exited.
 */
static int run(const char **args, const char * const *list,
	       const struct option *opts, enum parse_opt_flags flags)
{
	int argc = 0;

	while (list[argc]) {
		args[argc] = list[argc];
		argc++;
	}
	args[argc] = NULL;
	return run_parse(argc, args, opts, flags);
}

/* Redirect fd (1 or 2) into a temporary file. */
struct capture {
	int fd;
	int saved;
	FILE *tmp;
	char buf[CAPTURE_MAX];
};

static void capture_start(struct capture *c, int fd)
{
	fflush(stdout);
	fflush(stderr);
	c->fd = fd;
	c->tmp = tmpfile();
	ck_assert_ptr_nonnull(c->tmp);
	c->saved = dup(fd);
	ck_assert_int_ge(c->saved, 0);
	ck_assert_int_ge(dup2(fileno(c->tmp), fd), 0);
}

static const char *capture_end(struct capture *c)
{
	size_t n;

	fflush(stdout);
	fflush(stderr);
	dup2(c->saved, c->fd);
	close(c->saved);
	rewind(c->tmp);
	n = fread(c->buf, 1, sizeof(c->buf) - 1, c->tmp);
	c->buf[n] = '\0';
	fclose(c->tmp);
	return c->buf;
}

/* A table exercising every option type. */
static int o_all, o_bare, o_cats, o_verbose, o_mode, o_num;
static unsigned long o_ul;
static const char *o_out;
static aptix_strlist o_inc = APTIX_STRLIST_INIT;
static char cb_seen[64];

static int cb_record(const struct option *opt, const char *arg, int unset)
{
	(void)opt;
	if (unset)
		snprintf(cb_seen, sizeof(cb_seen), "unset");
	else if (!strcmp(arg, "bad"))
		return error("bad value for --color");
	else
		snprintf(cb_seen, sizeof(cb_seen), "%s", arg);
	return 0;
}

static const struct option all_opts[] = {
	OPT_BOOL('a', "all", &o_all, "all of it"),
	OPT_BOOL('b', "bare", &o_bare, "bare"),
	OPT_BOOL('c', "cats", &o_cats, "cats"),
	OPT__VERBOSE(&o_verbose, "be verbose"),
	OPT_STRING('o', "output", &o_out, "file", "output file"),
	OPT_INTEGER('n', "number", &o_num, "a number"),
	OPT_ULONG(0, "size", &o_ul, "a size"),
	OPT_STRING_LIST('I', "include", &o_inc, "dir", "include dir"),
	OPT_SET_INT(0, "fast", &o_mode, "fast mode", 2),
	OPT_SET_INT(0, "slow", &o_mode, "slow mode", 3),
	OPT_BOOL(0, "verify", &o_bare, "verify"),
	OPT_CALLBACK(0, "color", NULL, "when", "colorize", cb_record),
	OPT_END()
};

static void reset_all(void)
{
	o_all = o_bare = o_cats = o_verbose = o_mode = o_num = 0;
	o_ul = 0;
	o_out = NULL;
	aptix_strlist_release(&o_inc);
	cb_seen[0] = '\0';
}

START_TEST(test_bundled_booleans)
{
	const char *list[] = { "cmd", "-abc", NULL };
	const char *args[ARRAY_SIZE(list)];

	reset_all();
	ck_assert_int_eq(run(args, list, all_opts, 0), 0);
	ck_assert_int_eq(o_all, 1);
	ck_assert_int_eq(o_bare, 1);
	ck_assert_int_eq(o_cats, 1);
	ck_assert_ptr_null(args[0]);
}
END_TEST

START_TEST(test_bundled_with_value)
{
	const char *l1[] = { "cmd", "-aofile", "-vvv", NULL };
	const char *l2[] = { "cmd", "-co", "x.txt", "rest", NULL };
	const char *args[8];

	reset_all();
	ck_assert_int_eq(run(args, l1, all_opts, 0), 0);
	ck_assert_int_eq(o_all, 1);
	ck_assert_str_eq(o_out, "file");
	ck_assert_int_eq(o_verbose, 3);

	reset_all();
	ck_assert_int_eq(run(args, l2, all_opts, 0), 1);
	ck_assert_int_eq(o_cats, 1);
	ck_assert_str_eq(o_out, "x.txt");
	ck_assert_str_eq(args[0], "rest");
	ck_assert_ptr_null(args[1]);
}
END_TEST

START_TEST(test_long_values)
{
	const char *l1[] = { "cmd", "--output=a=b", NULL };
	const char *l2[] = { "cmd", "--output", "-x", NULL };
	const char *l3[] = { "cmd", "--output=", NULL };
	const char *args[8];

	reset_all();
	ck_assert_int_eq(run(args, l1, all_opts, 0), 0);
	ck_assert_str_eq(o_out, "a=b");

	/* a separate long value is taken even if it looks like a switch */
	reset_all();
	ck_assert_int_eq(run(args, l2, all_opts, 0), 0);
	ck_assert_str_eq(o_out, "-x");

	reset_all();
	ck_assert_int_eq(run(args, l3, all_opts, 0), 0);
	ck_assert_str_eq(o_out, "");
}
END_TEST

START_TEST(test_long_prefix)
{
	const char *l1[] = { "cmd", "--verb", "--out", "f", "--inc=d", NULL };
	const char *l2[] = { "cmd", "--fa", NULL };
	const char *args[8];

	reset_all();
	ck_assert_int_eq(run(args, l1, all_opts, 0), 0);
	ck_assert_int_eq(o_verbose, 1);
	ck_assert_str_eq(o_out, "f");
	ck_assert_uint_eq(o_inc.nr, 1);
	ck_assert_str_eq(o_inc.items[0], "d");

	reset_all();
	ck_assert_int_eq(run(args, l2, all_opts, 0), 0);
	ck_assert_int_eq(o_mode, 2);
}
END_TEST

START_TEST(test_exact_beats_prefix)
{
	static int v, va;
	static const struct option opts[] = {
		OPT_BOOL(0, "verbose-all", &va, "all"),
		OPT_BOOL(0, "verbose", &v, "some"),
		OPT_END()
	};
	const char *list[] = { "cmd", "--verbose", NULL };
	const char *args[ARRAY_SIZE(list)];

	v = va = 0;
	ck_assert_int_eq(run(args, list, opts, 0), 0);
	ck_assert_int_eq(v, 1);
	ck_assert_int_eq(va, 0);
}
END_TEST

START_TEST(test_ambiguous_prefix)
{
	const char *list[] = { "cmd", "--ver", NULL };
	const char *args[ARRAY_SIZE(list)];
	struct capture cap;
	const char *err;
	int ret;

	reset_all();
	capture_start(&cap, 2);
	ret = run(args, list, all_opts, 0);
	err = capture_end(&cap);
	ck_assert_int_eq(ret, -1000 - EXIT_USAGE);
	ck_assert_str_eq(err, "error: ambiguous option: ver "
			 "(could be --verbose or --verify)\n");
}
END_TEST

START_TEST(test_negation)
{
	const char *l1[] = { "cmd", "-a", "--no-all", "-o", "x",
			     "--no-output", "--slow", "--no-slow", NULL };
	const char *l2[] = { "cmd", "-vv", "--no-verb", NULL };
	const char *l3[] = { "cmd", "-Ia", "-Ib", "--no-include", "-Ic",
			     NULL };
	const char *l4[] = { "cmd", "--no-color", NULL };
	const char *args[16];

	reset_all();
	o_mode = 7;
	ck_assert_int_eq(run(args, l1, all_opts, 0), 0);
	ck_assert_int_eq(o_all, 0);
	ck_assert_ptr_null(o_out);
	ck_assert_int_eq(o_mode, 0);

	reset_all();
	ck_assert_int_eq(run(args, l2, all_opts, 0), 0);
	ck_assert_int_eq(o_verbose, 0);

	reset_all();
	ck_assert_int_eq(run(args, l3, all_opts, 0), 0);
	ck_assert_uint_eq(o_inc.nr, 1);
	ck_assert_str_eq(o_inc.items[0], "c");

	reset_all();
	ck_assert_int_eq(run(args, l4, all_opts, 0), 0);
	ck_assert_str_eq(cb_seen, "unset");
}
END_TEST

START_TEST(test_negation_of_no_option)
{
	static int no_verify, force;
	static const struct option opts[] = {
		OPT_BOOL(0, "no-verify", &no_verify, "skip checks"),
		OPT_BOOL_F('f', "force", &force, "force",
			   PARSE_OPT_NONEG),
		OPT_END()
	};
	const char *l1[] = { "cmd", "--no-verify", NULL };
	const char *l2[] = { "cmd", "--no-verify", "--verify", NULL };
	const char *l3[] = { "cmd", "--no-force", NULL };
	const char *args[8];
	struct capture cap;
	int ret;

	no_verify = force = 0;
	ck_assert_int_eq(run(args, l1, opts, 0), 0);
	ck_assert_int_eq(no_verify, 1);
	ck_assert_int_eq(run(args, l2, opts, 0), 0);
	ck_assert_int_eq(no_verify, 0);

	capture_start(&cap, 2);
	ret = run(args, l3, opts, 0);
	capture_end(&cap);
	ck_assert_int_eq(ret, -1000 - EXIT_USAGE);
	ck_assert_ptr_nonnull(strstr(cap.buf,
				     "error: unknown option 'no-force'\n"));
}
END_TEST

START_TEST(test_dashdash)
{
	const char *list[] = { "cmd", "a", "-a", "--", "-b", "--cats",
			       "-", NULL };
	const char *args[ARRAY_SIZE(list)];

	reset_all();
	ck_assert_int_eq(run(args, list, all_opts, 0), 4);
	ck_assert_int_eq(o_all, 1);
	ck_assert_int_eq(o_bare, 0);
	ck_assert_int_eq(o_cats, 0);
	ck_assert_str_eq(args[0], "a");
	ck_assert_str_eq(args[1], "-b");
	ck_assert_str_eq(args[2], "--cats");
	ck_assert_str_eq(args[3], "-");
	ck_assert_ptr_null(args[4]);

	reset_all();
	ck_assert_int_eq(run(args, list, all_opts,
			     PARSE_OPT_KEEP_DASHDASH), 5);
	ck_assert_str_eq(args[0], "a");
	ck_assert_str_eq(args[1], "--");
	ck_assert_str_eq(args[2], "-b");
	ck_assert_ptr_null(args[5]);
}
END_TEST

START_TEST(test_interleaved)
{
	const char *list[] = { "cmd", "one", "-a", "two", "--output=x",
			       "-", "three", "-n", "5", NULL };
	const char *args[ARRAY_SIZE(list)];

	reset_all();
	ck_assert_int_eq(run(args, list, all_opts, 0), 4);
	ck_assert_int_eq(o_all, 1);
	ck_assert_str_eq(o_out, "x");
	ck_assert_int_eq(o_num, 5);
	ck_assert_str_eq(args[0], "one");
	ck_assert_str_eq(args[1], "two");
	ck_assert_str_eq(args[2], "-");
	ck_assert_str_eq(args[3], "three");
	ck_assert_ptr_null(args[4]);
}
END_TEST

START_TEST(test_stop_at_non_option)
{
	const char *list[] = { "cmd", "-a", "sub", "-b", "--x", NULL };
	const char *args[ARRAY_SIZE(list)];

	reset_all();
	ck_assert_int_eq(run(args, list, all_opts,
			     PARSE_OPT_STOP_AT_NON_OPTION), 3);
	ck_assert_int_eq(o_all, 1);
	ck_assert_int_eq(o_bare, 0);
	ck_assert_str_eq(args[0], "sub");
	ck_assert_str_eq(args[1], "-b");
	ck_assert_str_eq(args[2], "--x");
	ck_assert_ptr_null(args[3]);
}
END_TEST

START_TEST(test_keep_unknown)
{
	const char *list[] = { "cmd", "--frob=1", "-a", "-bz", "x",
			       "--all", NULL };
	const char *args[ARRAY_SIZE(list)];

	reset_all();
	ck_assert_int_eq(run(args, list, all_opts,
			     PARSE_OPT_KEEP_UNKNOWN), 3);
	ck_assert_int_eq(o_all, 1);
	/* a bundle with an unknown switch is kept whole, unapplied */
	ck_assert_int_eq(o_bare, 0);
	ck_assert_str_eq(args[0], "--frob=1");
	ck_assert_str_eq(args[1], "-bz");
	ck_assert_str_eq(args[2], "x");
}
END_TEST

START_TEST(test_missing_value)
{
	const char *l1[] = { "cmd", "--output", NULL };
	const char *l2[] = { "cmd", "-ao", NULL };
	const char *args[8];
	struct capture cap;
	int ret;

	reset_all();
	capture_start(&cap, 2);
	ret = run(args, l1, all_opts, 0);
	capture_end(&cap);
	ck_assert_int_eq(ret, -1000 - EXIT_USAGE);
	ck_assert_str_eq(cap.buf, "error: option 'output' requires a value\n");

	capture_start(&cap, 2);
	ret = run(args, l2, all_opts, 0);
	capture_end(&cap);
	ck_assert_int_eq(ret, -1000 - EXIT_USAGE);
	ck_assert_str_eq(cap.buf, "error: option 'o' requires a value\n");
}
END_TEST

START_TEST(test_takes_no_value)
{
	const char *l1[] = { "cmd", "--all=yes", NULL };
	const char *l2[] = { "cmd", "--no-output=x", NULL };
	const char *args[8];
	struct capture cap;
	int ret;

	reset_all();
	capture_start(&cap, 2);
	ret = run(args, l1, all_opts, 0);
	capture_end(&cap);
	ck_assert_int_eq(ret, -1000 - EXIT_USAGE);
	ck_assert_str_eq(cap.buf, "error: option 'all' takes no value\n");

	capture_start(&cap, 2);
	ret = run(args, l2, all_opts, 0);
	capture_end(&cap);
	ck_assert_int_eq(ret, -1000 - EXIT_USAGE);
	ck_assert_str_eq(cap.buf,
			 "error: option 'no-output' takes no value\n");
}
END_TEST

START_TEST(test_integers)
{
	const char *l1[] = { "cmd", "-n", "42", NULL };
	const char *l2[] = { "cmd", "-n-5", NULL };
	const char *l3[] = { "cmd", "--number=+7", "--size", "123", NULL };
	const char *args[8];

	reset_all();
	ck_assert_int_eq(run(args, l1, all_opts, 0), 0);
	ck_assert_int_eq(o_num, 42);
	ck_assert_int_eq(run(args, l2, all_opts, 0), 0);
	ck_assert_int_eq(o_num, -5);
	ck_assert_int_eq(run(args, l3, all_opts, 0), 0);
	ck_assert_int_eq(o_num, 7);
	ck_assert_uint_eq(o_ul, 123);
}
END_TEST

START_TEST(test_bad_integers)
{
	static const char * const bad[][2] = {
		{ "-n", "4x" },
		{ "-n", "" },
		{ "-n", " 4" },
		{ "--size", "-1" },
		{ "--size", "0x10" },
	};
	const char *l1[] = { "cmd", "-n", "4x", NULL };
	const char *l2[] = { "cmd", "--number", "99999999999", NULL };
	const char *args[8];
	struct capture cap;
	size_t i;
	int ret;

	reset_all();
	capture_start(&cap, 2);
	ret = run(args, l1, all_opts, 0);
	capture_end(&cap);
	ck_assert_int_eq(ret, -1000 - EXIT_USAGE);
	ck_assert_str_eq(cap.buf,
			 "error: option 'n' expects a numerical value\n");

	capture_start(&cap, 2);
	ret = run(args, l2, all_opts, 0);
	capture_end(&cap);
	ck_assert_int_eq(ret, -1000 - EXIT_USAGE);
	ck_assert_ptr_nonnull(strstr(cap.buf, "out of range"));

	for (i = 0; i < ARRAY_SIZE(bad); i++) {
		const char *l[] = { "cmd", bad[i][0], bad[i][1], NULL };

		capture_start(&cap, 2);
		ret = run(args, l, all_opts, 0);
		capture_end(&cap);
		ck_assert_int_eq(ret, -1000 - EXIT_USAGE);
		ck_assert_ptr_nonnull(strstr(cap.buf, "numerical value"));
	}
	ck_assert_int_eq(o_num, 0);
	ck_assert_uint_eq(o_ul, 0);
}
END_TEST

START_TEST(test_parse_ulong)
{
	static const char * const bad[] = {
		"", "-1", "+1", " 1", "1 ", "1a", "0x1", "abc",
		"99999999999999999999999999",
	};
	unsigned long v = 77;
	size_t i;

	ck_assert_int_eq(cli_parse_ulong("0", &v), 0);
	ck_assert_uint_eq(v, 0);
	ck_assert_int_eq(cli_parse_ulong("123456", &v), 0);
	ck_assert_uint_eq(v, 123456);
	ck_assert_int_eq(cli_parse_ulong("007", &v), 0);
	ck_assert_uint_eq(v, 7);
	for (i = 0; i < ARRAY_SIZE(bad); i++) {
		v = 77;
		ck_assert_int_eq(cli_parse_ulong(bad[i], &v), -1);
		ck_assert_uint_eq(v, 77);
	}
	errno = 0;
	cli_parse_ulong("99999999999999999999999999", &v);
	ck_assert_int_eq(errno, ERANGE);
	errno = 0;
	cli_parse_ulong("12x", &v);
	ck_assert_int_eq(errno, EINVAL);
}
END_TEST

START_TEST(test_string_list)
{
	const char *list[] = { "cmd", "-I", "a", "-Ib", "--include=c",
			       "--include", "d", NULL };
	const char *args[ARRAY_SIZE(list)];
	aptix_strlist l = APTIX_STRLIST_INIT;
	int i;

	reset_all();
	ck_assert_int_eq(run(args, list, all_opts, 0), 0);
	ck_assert_uint_eq(o_inc.nr, 4);
	ck_assert_str_eq(o_inc.items[0], "a");
	ck_assert_str_eq(o_inc.items[1], "b");
	ck_assert_str_eq(o_inc.items[2], "c");
	ck_assert_str_eq(o_inc.items[3], "d");
	aptix_strlist_release(&o_inc);
	ck_assert_uint_eq(o_inc.nr, 0);
	ck_assert_ptr_null(o_inc.items);

	for (i = 0; i < 100; i++)
		ck_assert_int_eq(aptix_strlist_push(&l, "x"), 0);
	ck_assert_uint_eq(l.nr, 100);
	aptix_strlist_release(&l);
	ck_assert_uint_eq(l.nr, 0);
}
END_TEST

START_TEST(test_callback)
{
	const char *l1[] = { "cmd", "--color", "always", NULL };
	const char *l2[] = { "cmd", "--color=bad", NULL };
	const char *args[8];
	struct capture cap;
	int ret;

	reset_all();
	ck_assert_int_eq(run(args, l1, all_opts, 0), 0);
	ck_assert_str_eq(cb_seen, "always");

	capture_start(&cap, 2);
	ret = run(args, l2, all_opts, 0);
	capture_end(&cap);
	ck_assert_int_eq(ret, -1000 - EXIT_USAGE);
	ck_assert_str_eq(cap.buf, "error: bad value for --color\n");
}
END_TEST

START_TEST(test_help)
{
	const char *l1[] = { "cmd", "-h", NULL };
	const char *l2[] = { "cmd", "-a", "--help", NULL };
	const char *args[8];
	struct capture out, err;
	int ret;

	reset_all();
	capture_start(&err, 2);
	capture_start(&out, 1);
	ret = run(args, l1, all_opts, 0);
	capture_end(&out);
	capture_end(&err);
	ck_assert_int_eq(ret, -1000 - EXIT_USAGE);
	ck_assert_str_eq(err.buf, "");
	ck_assert_ptr_nonnull(strstr(out.buf,
		"usage: aptix test [<options>] [--] <arg>...\n\n"));
	ck_assert_ptr_nonnull(strstr(out.buf,
		"    -o, --output <file>   output file\n"));

	capture_start(&out, 1);
	ret = run(args, l2, all_opts, 0);
	capture_end(&out);
	ck_assert_int_eq(ret, -1000 - EXIT_USAGE);
	ck_assert_ptr_nonnull(strstr(out.buf, "usage: aptix test"));
}
END_TEST

START_TEST(test_unknown_option)
{
	const char *l1[] = { "cmd", "--bogus=3", NULL };
	const char *l2[] = { "cmd", "-ax", NULL };
	const char *args[8];
	struct capture out, err;
	int ret;

	reset_all();
	capture_start(&out, 1);
	capture_start(&err, 2);
	ret = run(args, l1, all_opts, 0);
	capture_end(&err);
	capture_end(&out);
	ck_assert_int_eq(ret, -1000 - EXIT_USAGE);
	ck_assert_str_eq(out.buf, "");
	ck_assert_ptr_eq(strstr(err.buf, "error: unknown option 'bogus'\n"
				"usage: aptix test"), err.buf);

	capture_start(&err, 2);
	ret = run(args, l2, all_opts, 0);
	capture_end(&err);
	ck_assert_int_eq(ret, -1000 - EXIT_USAGE);
	ck_assert_ptr_eq(strstr(err.buf, "error: unknown switch 'x'\n"
				"usage: "), err.buf);
}
END_TEST

START_TEST(test_usage_format)
{
	static const char *type;
	static int write_obj, use_stdin, quiet;
	static const char * const usage[] = {
		"aptix hash-object [-t <type>] [-w] [--stdin] [--] <file>...",
		"aptix hash-object [-t <type>] [-w] --stdin-paths",
		"",
		"Compute object ids.",
		NULL
	};
	static const struct option opts[] = {
		OPT_STRING('t', NULL, &type, "type", "object type"),
		OPT_BOOL('w', NULL, &write_obj,
			 "write the object into the object database"),
		OPT_BOOL(0, "stdin", &use_stdin, "read the object from stdin"),
		OPT_GROUP("Other options"),
		OPT_STRING(0, "a-rather-long-option", &type, "value",
			   "wraps\nand continues"),
		OPT_STRING_F(0, "path", &type, "<path>|-", "where",
			     PARSE_OPT_LITERAL_ARGHELP),
		OPT_BOOL('q', "quiet", &quiet, "be quiet"),
		OPT_HIDDEN_BOOL(0, "secret", &quiet, "not shown"),
		OPT_END()
	};
	static const char expect[] =
"usage: aptix hash-object [-t <type>] [-w] [--stdin] [--] <file>...\n"
"   or: aptix hash-object [-t <type>] [-w] --stdin-paths\n"
"\n"
"    Compute object ids.\n"
"\n"
"    -t <type>             object type\n"
"    -w                    write the object into the object database\n"
"    --stdin               read the object from stdin\n"
"\n"
"Other options\n"
"    --a-rather-long-option <value>\n"
"                          wraps\n"
"                          and continues\n"
"    --path <path>|-       where\n"
"    -q, --quiet           be quiet\n"
"\n";
	char *buf = NULL;
	size_t size = 0;
	FILE *fp = open_memstream(&buf, &size);

	ck_assert_ptr_nonnull(fp);
	print_usage_with_options(fp, usage, opts);
	fclose(fp);
	ck_assert_str_eq(buf, expect);
	free(buf);
}
END_TEST

START_TEST(test_usage_msg_opt)
{
	struct capture err;
	volatile int exited = 0;

	capture_start(&err, 2);
	if (!setjmp(exit_jmp))
		usage_msg_opt("too many arguments", test_usage, all_opts);
	else
		exited = exit_code;
	capture_end(&err);
	ck_assert_int_eq(exited, EXIT_USAGE);
	ck_assert_ptr_eq(strstr(err.buf, "fatal: too many arguments\n\n"
				"usage: aptix test"), err.buf);
}
END_TEST

START_TEST(test_cli_messages)
{
	struct capture err;
	FILE *fp;
	char *buf = NULL;
	size_t size = 0;

	capture_start(&err, 2);
	ck_assert_int_eq(error("bad %s %d", "thing", 3), -1);
	warning("careful");
	errno = ENOENT;
	ck_assert_int_eq(error_errno("cannot open '%s'", "x"), -1);
	error("evil \033[31mred\033[0m");
	capture_end(&err);
	ck_assert_str_eq(err.buf,
			 "error: bad thing 3\n"
			 "warning: careful\n"
			 "error: cannot open 'x': No such file or directory\n"
			 "error: evil ?[31mred?[0m\n");

	/* not a terminal: bytes pass through unchanged */
	fp = open_memstream(&buf, &size);
	ck_assert_ptr_nonnull(fp);
	cli_print_sanitized(fp, "a\033[2J\0b", 7);
	fclose(fp);
	ck_assert_uint_eq(size, 7);
	ck_assert_int_eq(memcmp(buf, "a\033[2J\0b", 7), 0);
	free(buf);
}
END_TEST

Suite *parse_options_suite(void)
{
	Suite *s = suite_create("parse_options");
	TCase *tc = tcase_create("core");

	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_add_test(tc, test_bundled_booleans);
	tcase_add_test(tc, test_bundled_with_value);
	tcase_add_test(tc, test_long_values);
	tcase_add_test(tc, test_long_prefix);
	tcase_add_test(tc, test_exact_beats_prefix);
	tcase_add_test(tc, test_ambiguous_prefix);
	tcase_add_test(tc, test_negation);
	tcase_add_test(tc, test_negation_of_no_option);
	tcase_add_test(tc, test_dashdash);
	tcase_add_test(tc, test_interleaved);
	tcase_add_test(tc, test_stop_at_non_option);
	tcase_add_test(tc, test_keep_unknown);
	tcase_add_test(tc, test_missing_value);
	tcase_add_test(tc, test_takes_no_value);
	tcase_add_test(tc, test_integers);
	tcase_add_test(tc, test_bad_integers);
	tcase_add_test(tc, test_parse_ulong);
	tcase_add_test(tc, test_string_list);
	tcase_add_test(tc, test_callback);
	tcase_add_test(tc, test_help);
	tcase_add_test(tc, test_unknown_option);
	tcase_add_test(tc, test_usage_format);
	tcase_add_test(tc, test_usage_msg_opt);
	tcase_add_test(tc, test_cli_messages);
	suite_add_tcase(s, tc);
	return s;
}
