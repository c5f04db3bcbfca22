/*
 * aptix/process.h - running a program: the one way libaptix and the
 * aptix command start a child (git, the pager, man, an editor, aptix
 * itself), modelled on git's run-command.h.
 *
 * The child is started with posix_spawn (safe in a threaded process, and
 * an exec failure is reported by the start, not by a child that exits
 * 127). It gets the default disposition of SIGINT, SIGQUIT, SIGPIPE and
 * SIGTERM and an empty signal mask whatever the parent set, and only
 * the descriptors 0-2 asked for: every other descriptor of the library
 * is close-on-exec. Nothing here touches the parent's own signal
 * handling: a caller that wants to ignore ^C while an editor runs (as
 * system() does) does so itself.
 */
#ifndef APTIX_PROCESS_H
#define APTIX_PROCESS_H

#include "common.h"
#include "buf.h"
#include <sys/types.h>

/**
 * @brief Occupy whichever of the descriptors 0, 1 and 2 is closed with
 *        /dev/null (git's sanitize_stdfds), so that no file opened
 *        after it gets one of them: a process started with stdout or
 *        stderr closed (cron, nohup, a daemon) would otherwise write its
 *        messages into the store. Every library entry that opens
 *        the store, a lock or a pipe (aptix_process_start()) calls it
 *        first; a program calls it first thing too, before it opens
 *        anything.
 * @return 0; APTIX_ERROR when one is closed and /dev/null cannot be
 *         opened (the store is then not opened).
 */
APTIX_EXTERN(int) aptix_sanitize_stdfds(void);

/** What a child's descriptor 0, 1 or 2 is. */
typedef enum {
	APTIX_STDIO_INHERIT = 0,	/**< the parent's */
	APTIX_STDIO_NULL,		/**< /dev/null */
	APTIX_STDIO_PIPE,		/**< a pipe whose other end is ours */
	APTIX_STDIO_STDOUT		/**< (stderr only) where stdout goes */
} aptix_stdio;

typedef struct aptix_process {
	/**
	 * The program and its arguments, NULL-terminated. argv[0] is
	 * looked up in PATH unless it holds a '/'. With shell set, argv[0]
	 * is a shell command line run by /bin/sh -c, and the rest are its
	 * positional parameters ($1...; $0 is argv[0] itself).
	 */
	const char *const *argv;
	int shell;
	/** Changes of the environment: "NAME=value" sets, "NAME" unsets. */
	const char *const *env;
	/** The child's working directory (NULL: the parent's). */
	const char *dir;
	aptix_stdio in, out, err;
	/** After start: our ends of the pipes asked for, else -1. */
	int in_fd, out_fd, err_fd;
	pid_t pid;		/**< after start; -1 before and after finish */
} aptix_process;

#define APTIX_PROCESS_INIT { NULL, 0, NULL, NULL, APTIX_STDIO_INHERIT, \
	APTIX_STDIO_INHERIT, APTIX_STDIO_INHERIT, -1, -1, -1, -1 }

/**
 * @brief Start the child described by p.
 * @return 0; APTIX_ENOTFOUND when the program cannot be found or run (the
 *         message names it); APTIX_ERROR otherwise. On failure nothing is
 *         left open.
 */
APTIX_EXTERN(int) aptix_process_start(aptix_process *p);

/**
 * @brief Close our pipe ends and wait for the child (EINTR retried).
 * @param[out] status its exit code, or 128 + the signal that killed it
 *             (as a shell says); may be NULL.
 * @return 0, or APTIX_ERROR when it cannot be waited for.
 */
APTIX_EXTERN(int) aptix_process_finish(aptix_process *p, int *status);

/**
 * @brief Run p to its end, stdin from /dev/null unless p says otherwise,
 *        its stdout into out and stderr into err (NULL: to /dev/null),
 *        read together so that neither pipe fills; err keeps at most
 *        err_max bytes (0: all).
 * @return as aptix_process_start and aptix_process_finish.
 */
APTIX_EXTERN(int) aptix_process_capture(aptix_process *p, aptix_buf *out,
					aptix_buf *err, size_t err_max,
					int *status);

/**
 * @brief Start p, wait for it: aptix_process_start + _finish.
 */
APTIX_EXTERN(int) aptix_process_run(aptix_process *p, int *status);

#endif
