/*
 * check_process.c - unit tests for src/util/process.c (aptix/process.h).
 */
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "aptix.h"
#include "unit.h"

static char *tmpdir;

static void setup(void)
{
	aptix_error_clear();
	tmpdir = unit_mkdtemp();
}

static void teardown(void)
{
	unit_rmtree(tmpdir);
	free(tmpdir);
}

/* Run argv (shell: a command line) and capture; its exit status. */
static int capture(aptix_buf *out, aptix_buf *err, size_t err_max,
		   int shell, const char *const *argv)
{
	aptix_process p = APTIX_PROCESS_INIT;
	int status = -1;

	p.argv = argv;
	p.shell = shell;
	ck_assert_msg(aptix_process_capture(&p, out, err, err_max,
					    &status) == 0, "%s",
		      aptix_error_last()->message);
	ck_assert_int_eq(p.pid, -1);
	ck_assert_int_eq(p.out_fd, -1);
	return status;
}

START_TEST(test_exit_status)
{
	const char *t[] = { "true", NULL };
	const char *f[] = { "exit 3", NULL };
	const char *k[] = { "kill -TERM $$", NULL };
	aptix_process p = APTIX_PROCESS_INIT;
	aptix_buf out = APTIX_BUF_INIT;
	int status = -1;

	p.argv = t;
	ck_assert_int_eq(aptix_process_run(&p, &status), 0);
	ck_assert_int_eq(status, 0);
	ck_assert_int_eq(capture(&out, NULL, 0, 1, f), 3);
	/* killed by a signal: 128 + its number, as a shell says */
	ck_assert_int_eq(capture(&out, NULL, 0, 1, k), 128 + SIGTERM);
	aptix_buf_release(&out);
}
END_TEST

START_TEST(test_not_found)
{
	const char *argv[] = { "aptix-no-such-program", "x", NULL };
	const char *path[] = { "/no/such/dir/prog", NULL };
	aptix_process p = APTIX_PROCESS_INIT;

	p.argv = argv;
	ck_assert_int_eq(aptix_process_start(&p), APTIX_ENOTFOUND);
	ck_assert_ptr_nonnull(strstr(aptix_error_last()->message,
				     "aptix-no-such-program"));
	ck_assert_int_eq(p.pid, -1);
	p.argv = path;
	p.out = APTIX_STDIO_PIPE;
	ck_assert_int_eq(aptix_process_start(&p), APTIX_ENOTFOUND);
	ck_assert_int_eq(p.out_fd, -1);
	/* nothing to wait for */
	ck_assert_int_eq(aptix_process_finish(&p, NULL), APTIX_ERROR);
}
END_TEST

/*
 * Both pipes read together: a child that fills stderr's pipe before it
 * writes stdout must not hang; err keeps err_max bytes.
 */
START_TEST(test_capture_both)
{
	const char *argv[] = { "head -c 300000 /dev/zero >&2; "
			       "head -c 200000 /dev/zero; echo done >&2",
			       NULL };
	aptix_buf out = APTIX_BUF_INIT, err = APTIX_BUF_INIT;

	ck_assert_int_eq(capture(&out, &err, 0, 1, argv), 0);
	ck_assert_uint_eq(out.len, 200000);
	ck_assert_uint_eq(err.len, 300005);
	aptix_buf_clear(&out);
	aptix_buf_clear(&err);
	ck_assert_int_eq(capture(&out, &err, 1000, 1, argv), 0);
	ck_assert_uint_eq(out.len, 200000);
	ck_assert_uint_eq(err.len, 1000);
	aptix_buf_release(&out);
	aptix_buf_release(&err);
}
END_TEST

START_TEST(test_env_dir)
{
	const char *argv[] = { "env", NULL };
	const char *pwd[] = { "pwd", NULL };
	const char *env[] = { "APTIX_PROC_TEST=a b", "APTIX_PROC_GONE",
			      NULL };
	aptix_process p = APTIX_PROCESS_INIT;
	aptix_buf out = APTIX_BUF_INIT;
	char *real = realpath(tmpdir, NULL);
	int status;

	ck_assert_int_eq(setenv("APTIX_PROC_GONE", "1", 1), 0);
	ck_assert_int_eq(setenv("APTIX_PROC_TEST", "old", 1), 0);
	p.argv = argv;
	p.env = env;
	ck_assert_int_eq(aptix_process_capture(&p, &out, NULL, 0, &status),
			 0);
	ck_assert_ptr_nonnull(strstr(out.ptr, "\nAPTIX_PROC_TEST=a b\n"));
	ck_assert_ptr_null(strstr(out.ptr, "APTIX_PROC_TEST=old"));
	ck_assert_ptr_null(strstr(out.ptr, "APTIX_PROC_GONE"));
	ck_assert_ptr_nonnull(strstr(out.ptr, "PATH="));
	/* the parent's environment is as it was */
	ck_assert_str_eq(getenv("APTIX_PROC_GONE"), "1");

	{
		aptix_process fresh = APTIX_PROCESS_INIT;

		p = fresh;
	}
	p.argv = pwd;
	p.dir = tmpdir;
	aptix_buf_clear(&out);
	ck_assert_int_eq(aptix_process_capture(&p, &out, NULL, 0, &status),
			 0);
	ck_assert_ptr_nonnull(real);
	ck_assert_uint_eq(out.len, strlen(real) + 1);
	ck_assert_int_eq(memcmp(out.ptr, real, strlen(real)), 0);
	free(real);
	aptix_buf_release(&out);
}
END_TEST

/* A command line with arguments: they stay words ($1...), $0 is it. */
START_TEST(test_shell_args)
{
	const char *argv[] = { "printf '%s|'", "a b", "$HOME", "c'd", NULL };
	const char *plain[] = { "printf", "%s|", "x y", NULL };
	aptix_buf out = APTIX_BUF_INIT;

	ck_assert_int_eq(capture(&out, NULL, 0, 1, argv), 0);
	ck_assert_str_eq(out.ptr, "a b|$HOME|c'd|");
	aptix_buf_clear(&out);
	ck_assert_int_eq(capture(&out, NULL, 0, 0, plain), 0);
	ck_assert_str_eq(out.ptr, "x y|");
	aptix_buf_clear(&out);
	/* a plain word through the shell: a builtin works too */
	plain[0] = ":";
	plain[1] = NULL;
	ck_assert_int_eq(capture(&out, NULL, 0, 1, plain), 0);
	aptix_buf_release(&out);
}
END_TEST

/*
 * The child gets SIGINT and SIGPIPE at their defaults even where the
 * parent ignores them (a shell cannot undo a signal ignored at entry),
 * and the parent's dispositions are untouched.
 */
START_TEST(test_child_signals)
{
	const char *argv[] = { "kill -INT $$; echo survived", NULL };
	const char *pipe_argv[] = { "yes", NULL };
	aptix_process p = APTIX_PROCESS_INIT;
	aptix_buf out = APTIX_BUF_INIT;
	struct sigaction now;
	int status = -1;

	signal(SIGINT, SIG_IGN);
	signal(SIGPIPE, SIG_IGN);
	ck_assert_int_eq(capture(&out, NULL, 0, 1, argv), 128 + SIGINT);
	ck_assert_uint_eq(out.len, 0);
	/* a child writing to a pipe nobody reads dies of SIGPIPE */
	p.argv = pipe_argv;
	p.out = APTIX_STDIO_PIPE;
	ck_assert_int_eq(aptix_process_start(&p), 0);
	ck_assert_int_eq(aptix_process_finish(&p, &status), 0);
	ck_assert_int_eq(status, 128 + SIGPIPE);
	ck_assert_int_eq(sigaction(SIGINT, NULL, &now), 0);
	ck_assert(now.sa_handler == SIG_IGN);
	signal(SIGINT, SIG_DFL);
	signal(SIGPIPE, SIG_DFL);
	aptix_buf_release(&out);
}
END_TEST

/* stdin from a pipe, stdout into one, and stderr where stdout goes. */
START_TEST(test_pipes)
{
	const char *argv[] = { "cat; echo err >&2", NULL };
	aptix_process p = APTIX_PROCESS_INIT;
	char buf[64];
	ssize_t n;
	size_t got = 0;
	int status = -1;

	p.argv = argv;
	p.shell = 1;
	p.in = APTIX_STDIO_PIPE;
	p.out = APTIX_STDIO_PIPE;
	p.err = APTIX_STDIO_STDOUT;
	ck_assert_int_eq(aptix_process_start(&p), 0);
	ck_assert_int_ge(p.in_fd, 0);
	ck_assert_int_eq(p.err_fd, -1);
	ck_assert_int_eq(write(p.in_fd, "hello\n", 6), 6);
	close(p.in_fd);
	p.in_fd = -1;
	while ((n = read(p.out_fd, buf + got, sizeof(buf) - 1 - got)) > 0)
		got += (size_t)n;
	buf[got] = '\0';
	ck_assert_str_eq(buf, "hello\nerr\n");
	ck_assert_int_eq(aptix_process_finish(&p, &status), 0);
	ck_assert_int_eq(status, 0);
}
END_TEST

Suite *process_suite(void)
{
	Suite *s = suite_create("process");
	TCase *tc = tcase_create("process");

	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_set_timeout(tc, 30);
	tcase_add_test(tc, test_exit_status);
	tcase_add_test(tc, test_not_found);
	tcase_add_test(tc, test_capture_both);
	tcase_add_test(tc, test_env_dir);
	tcase_add_test(tc, test_shell_args);
	tcase_add_test(tc, test_child_signals);
	tcase_add_test(tc, test_pipes);
	suite_add_tcase(s, tc);
	return s;
}
