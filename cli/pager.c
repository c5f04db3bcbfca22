/*
 * cli/pager.c - the pager of the commands whose output can be
 * long (log, show, diff, reflog), as git's pager.c: a child reading a
 * pipe that replaces stdout, waited for when the command exits. It is
 * started by aptix_process_start (aptix/process.h), and the pipe's end
 * becomes stdout here.
 */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <unistd.h>
#include <aptix.h>
#include "cli.h"
#include "pager.h"

static pid_t pager_pid = -1;
int pager_use = -1;
static int pager_has_stderr;

static void close_pager_fds(void)
{
	close(STDOUT_FILENO);
	if (pager_has_stderr)
		close(STDERR_FILENO);
}

static void wait_for_pager(void)
{
	if (pager_pid < 0)
		return;
	fflush(stdout);
	fflush(stderr);
	close_pager_fds();
	while (waitpid(pager_pid, NULL, 0) < 0 && errno == EINTR)
		;
	pager_pid = -1;
}

static void wait_for_pager_signal(int sig)
{
	if (pager_pid >= 0) {
		close_pager_fds();
		while (waitpid(pager_pid, NULL, 0) < 0 && errno == EINTR)
			;
	}
	signal(sig, SIG_DFL);
	raise(sig);
}

/* A program the pager command can run: on PATH, or a path. */
static int runnable(const char *name)
{
	const char *path = getenv("PATH"), *end;
	char buf[4096];
	size_t len;

	if (strchr(name, '/'))
		return !access(name, X_OK);
	if (!path)
		path = "/usr/bin:/bin";
	for (; path; path = *end ? end + 1 : NULL) {
		end = strchr(path, ':');
		if (!end)
			end = path + strlen(path);
		len = (size_t)(end - path);
		if (snprintf(buf, sizeof(buf), "%.*s%s%s", (int)len, path,
			     len ? "/" : "", name) < (int)sizeof(buf) &&
		    !access(buf, X_OK))
			return 1;
	}
	return 0;
}

/*
 * Split a pager command of plain words (run without a shell, as git
 * does) into argv, at most max - 1 of them; returns how many. The
 * words live in copy.
 */
static int split_pager(char **argv, int max, char *copy)
{
	char *p;
	int n = 0;

	for (p = copy; *p && n < max - 1;) {
		while (*p == ' ' || *p == '\t')
			*p++ = '\0';
		if (!*p)
			break;
		argv[n++] = p;
		while (*p && *p != ' ' && *p != '\t')
			p++;
	}
	argv[n] = NULL;
	return n;
}

void setup_pager(void)
{
	const char *pager;
	char *copy = NULL, *words[32];
	const char *argv[2], *env[3];
	aptix_process pp = APTIX_PROCESS_INIT;
	int fds[2], shell, nenv = 0;
	pid_t pid;

	/* decided (and cached) before stdout becomes the pipe */
	if (!pager_use || !cli_isatty_stdout() || pager_pid >= 0)
		return;
	pager = getenv("APTIX_PAGER");
	if (!pager)
		pager = getenv("PAGER");
	if (!pager)
		pager = "less -FRX";
	if (!*pager || !strcmp(pager, "cat"))
		return;
	shell = strcspn(pager, "|&;<>()$`\\\"'*?[#~=%\n") != strlen(pager);
	if (!shell) {
		if (!(copy = strdup(pager)))
			return;
		/* a pager that is not there: write directly */
		if (!split_pager(words, 32, copy) || !runnable(words[0])) {
			free(copy);
			return;
		}
	}
	argv[0] = pager;
	argv[1] = NULL;
	pp.argv = shell ? argv : (const char *const *)words;
	pp.shell = shell;
	pp.in = APTIX_STDIO_PIPE;
	if (!getenv("LESS"))
		env[nenv++] = "LESS=FRX";
	if (!getenv("LV"))
		env[nenv++] = "LV=-c";
	env[nenv] = NULL;
	pp.env = env;
	fflush(NULL);
	if (aptix_process_start(&pp) < 0) {
		/* it could not start: write directly */
		aptix_error_clear();
		goto out;
	}
	fds[1] = pp.in_fd;
	pid = pp.pid;
	dup2(fds[1], STDOUT_FILENO);
	if (isatty(STDERR_FILENO)) {
		dup2(fds[1], STDERR_FILENO);
		pager_has_stderr = 1;
	}
	close(fds[1]);
	pager_pid = pid;
	atexit(wait_for_pager);
	signal(SIGINT, wait_for_pager_signal);
	signal(SIGHUP, wait_for_pager_signal);
	signal(SIGTERM, wait_for_pager_signal);
	signal(SIGQUIT, wait_for_pager_signal);
	signal(SIGPIPE, wait_for_pager_signal);
out:
	free(copy);
}
