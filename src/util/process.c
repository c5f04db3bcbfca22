/*
 * src/util/process.c - running a program (aptix/process.h).
 *
 * posix_spawn rather than fork: the library runs in threaded processes
 * (serve, app-server), where only async-signal-safe calls may follow a
 * fork, and glibc's posix_spawn reports an exec failure to the caller.
 * A shell command line always goes through /bin/sh, even a plain word:
 * it may name a builtin (EDITOR=:) or a function of the user's shell.
 */
#define _GNU_SOURCE 1	/* posix_spawn_file_actions_addchdir_np, pipe2 */
#include "util/common.h"
#include "aptix/process.h"
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

extern char **environ;

static void close_fd(int *fd)
{
	if (*fd >= 0)
		close(*fd);
	*fd = -1;
}

/*
 * The argv to exec: p's, or /bin/sh -c for a command line; *line is the
 * command line made for the shell, to free after the spawn.
 */
static const char **exec_argv(const aptix_process *p, char **line)
{
	size_t n = 0, i;
	const char **v;

	*line = NULL;
	while (p->argv[n])
		n++;
	if (!(v = aptix__calloc(n + 4, sizeof(*v))))
		return NULL;
	if (!p->shell) {
		for (i = 0; i < n; i++)
			v[i] = p->argv[i];
		return v;
	}
	v[0] = "/bin/sh";
	v[1] = "-c";
	v[2] = p->argv[0];
	if (n > 1) {
		/* "cmd "$@"" with cmd as $0: the arguments stay words */
		size_t len = strlen(p->argv[0]);

		if (!(*line = malloc(len + 6))) {
			free(v);
			return NULL;
		}
		memcpy(*line, p->argv[0], len);
		memcpy(*line + len, " \"$@\"", 6);
		v[2] = *line;
	}
	for (i = 0; i < n; i++)
		v[3 + i] = p->argv[i];
	return v;
}

/* environ with p->env's changes, in a strlist-like array. */
static char **exec_env(const aptix_process *p)
{
	size_t n = 0, k = 0, i, j;
	char **v;

	while (environ[n])
		n++;
	while (p->env && p->env[k])
		k++;
	if (!(v = aptix__calloc(n + k + 1, sizeof(*v))))
		return NULL;
	for (i = j = 0; i < n; i++) {
		size_t len = strcspn(environ[i], "=");
		size_t c;

		for (c = 0; c < k; c++)
			if (!strncmp(p->env[c], environ[i], len) &&
			    (p->env[c][len] == '=' || !p->env[c][len]))
				break;
		if (c == k)
			v[j++] = environ[i];
	}
	for (i = 0; i < k; i++)
		if (strchr(p->env[i], '='))
			v[j++] = (char *)p->env[i];
	return v;
}

/* The file actions for one of 0, 1, 2; pipe[] is made here. */
static int stdio_action(posix_spawn_file_actions_t *fa, aptix_stdio how,
			int fd, int pipefd[2])
{
	switch (how) {
	case APTIX_STDIO_INHERIT:
		return 0;
	case APTIX_STDIO_NULL:
		return posix_spawn_file_actions_addopen(fa, fd, "/dev/null",
			fd ? O_WRONLY : O_RDONLY, 0);
	case APTIX_STDIO_STDOUT:
		return fd == 2 ? posix_spawn_file_actions_adddup2(fa, 1, 2) :
			EINVAL;
	case APTIX_STDIO_PIPE:
		if (pipe2(pipefd, O_CLOEXEC) < 0)
			return errno;
		return posix_spawn_file_actions_adddup2(fa, pipefd[fd ? 1 : 0],
							fd);
	}
	return EINVAL;
}

static int spawn_attr(posix_spawnattr_t *at)
{
	sigset_t def, none;
	int r;

	sigemptyset(&none);
	sigemptyset(&def);
	sigaddset(&def, SIGINT);
	sigaddset(&def, SIGQUIT);
	sigaddset(&def, SIGPIPE);
	sigaddset(&def, SIGTERM);
	if ((r = posix_spawnattr_init(at)) != 0)
		return r;
	if ((r = posix_spawnattr_setsigdefault(at, &def)) != 0 ||
	    (r = posix_spawnattr_setsigmask(at, &none)) != 0 ||
	    (r = posix_spawnattr_setflags(at, POSIX_SPAWN_SETSIGDEF |
					  POSIX_SPAWN_SETSIGMASK)) != 0)
		posix_spawnattr_destroy(at);
	return r;
}

static int spawn(aptix_process *p, int ip[2], int op[2], int ep[2])
{
	posix_spawn_file_actions_t fa;
	posix_spawnattr_t at;
	char *line;
	const char **argv = exec_argv(p, &line);
	char **envp = exec_env(p);
	int r;

	if (!argv || !envp) {
		free(argv);
		free(envp);
		free(line);
		return ENOMEM;
	}
	if ((r = posix_spawn_file_actions_init(&fa)) != 0)
		goto out;
	if ((r = spawn_attr(&at)) != 0) {
		posix_spawn_file_actions_destroy(&fa);
		goto out;
	}
	if (!(r = stdio_action(&fa, p->in, 0, ip)) &&
	    !(r = stdio_action(&fa, p->out, 1, op)) &&
	    !(r = stdio_action(&fa, p->err, 2, ep)) &&
	    !(r = p->dir ? posix_spawn_file_actions_addchdir_np(&fa, p->dir) :
	      0))
		r = posix_spawnp(&p->pid, argv[0], &fa, &at,
				 (char *const *)argv, envp);
	posix_spawnattr_destroy(&at);
	posix_spawn_file_actions_destroy(&fa);
out:
	free(argv);
	free(envp);
	free(line);
	return r;
}

int aptix_sanitize_stdfds(void)
{
	int fd;

	if (fcntl(0, F_GETFD) >= 0 && fcntl(1, F_GETFD) >= 0 &&
	    fcntl(2, F_GETFD) >= 0)
		return 0;
	/* no O_CLOEXEC: a child should find them occupied too */
	if ((fd = open("/dev/null", O_RDWR)) < 0) {
		aptix_error_set_os("cannot occupy a closed standard "
				   "descriptor with /dev/null");
		return APTIX_ERROR;
	}
	while (fd >= 0 && fd < 2)
		fd = dup(fd);
	if (fd > 2)
		close(fd);
	if (fd < 0) {
		aptix_error_set_os("cannot occupy a closed standard "
				   "descriptor with /dev/null");
		return APTIX_ERROR;
	}
	return 0;
}

int aptix_process_start(aptix_process *p)
{
	int ip[2] = { -1, -1 }, op[2] = { -1, -1 }, ep[2] = { -1, -1 };
	int r;

	APTIX_ASSERT_ARG(p && p->argv && p->argv[0]);
	p->pid = -1;
	p->in_fd = p->out_fd = p->err_fd = -1;
	/* a pipe made on a closed 0-2 would be taken for the child's */
	if (aptix_sanitize_stdfds() < 0)
		return APTIX_ERROR;
	r = spawn(p, ip, op, ep);
	/* the child's ends */
	close_fd(&ip[0]);
	close_fd(&op[1]);
	close_fd(&ep[1]);
	if (r != 0) {
		close_fd(&ip[1]);
		close_fd(&op[0]);
		close_fd(&ep[0]);
		p->pid = -1;
		errno = r;
		aptix_error_set_os("cannot run '%s'", p->argv[0]);
		return r == ENOENT || r == EACCES || r == ENOEXEC ||
			r == ENOTDIR ? APTIX_ENOTFOUND : APTIX_ERROR;
	}
	p->in_fd = ip[1];
	p->out_fd = op[0];
	p->err_fd = ep[0];
	return 0;
}

int aptix_process_finish(aptix_process *p, int *status)
{
	int wst;

	close_fd(&p->in_fd);
	close_fd(&p->out_fd);
	close_fd(&p->err_fd);
	if (p->pid < 0) {
		aptix_error_set(APTIX_ERROR_OS, "no process to wait for");
		return APTIX_ERROR;
	}
	while (waitpid(p->pid, &wst, 0) < 0) {
		if (errno != EINTR) {
			aptix_error_set_os("cannot wait for '%s'",
					   p->argv[0]);
			p->pid = -1;
			return APTIX_ERROR;
		}
	}
	p->pid = -1;
	if (status)
		*status = WIFEXITED(wst) ? WEXITSTATUS(wst) :
			WIFSIGNALED(wst) ? 128 + WTERMSIG(wst) : 255;
	return 0;
}

int aptix_process_run(aptix_process *p, int *status)
{
	int r = aptix_process_start(p);

	return r < 0 ? r : aptix_process_finish(p, status);
}

/* Read what is ready on the two pipes until both end. */
static int drain(aptix_process *p, aptix_buf *out, aptix_buf *err,
		 size_t err_max)
{
	struct pollfd pfd[2];
	char block[65536];
	int open_fds = (p->out_fd >= 0) + (p->err_fd >= 0), i;

	pfd[0].fd = p->out_fd;
	pfd[1].fd = p->err_fd;
	pfd[0].events = pfd[1].events = POLLIN;
	while (open_fds) {
		if (poll(pfd, 2, -1) < 0) {
			if (errno == EINTR)
				continue;
			aptix_error_set_os("cannot read from '%s'",
					   p->argv[0]);
			return APTIX_ERROR;
		}
		for (i = 0; i < 2; i++) {
			aptix_buf *b = i ? err : out;
			ssize_t n;

			if (pfd[i].fd < 0 || !pfd[i].revents)
				continue;
			n = read(pfd[i].fd, block, sizeof(block));
			if (n < 0 && (errno == EINTR || errno == EAGAIN))
				continue;
			if (n <= 0) {
				pfd[i].fd = -1;	/* poll skips it */
				open_fds--;
			} else if (!i || !err_max || err->len < err_max) {
				size_t keep = (size_t)n;

				if (i && err_max && keep > err_max - err->len)
					keep = err_max - err->len;
				aptix_buf_put(b, block, keep);
			}
		}
	}
	return aptix_buf_oom(out) || aptix_buf_oom(err) ?
		aptix_error_oom() : 0;
}

int aptix_process_capture(aptix_process *p, aptix_buf *out, aptix_buf *err,
			  size_t err_max, int *status)
{
	aptix_buf sink = APTIX_BUF_INIT;
	int r, f;

	APTIX_ASSERT_ARG(p && out);
	if (p->in == APTIX_STDIO_INHERIT)
		p->in = APTIX_STDIO_NULL;
	p->out = APTIX_STDIO_PIPE;
	p->err = err ? APTIX_STDIO_PIPE : APTIX_STDIO_NULL;
	if ((r = aptix_process_start(p)) < 0)
		return r;
	r = drain(p, out, err ? err : &sink, err_max);
	aptix_buf_release(&sink);
	f = aptix_process_finish(p, status);
	return r < 0 ? r : f;
}
