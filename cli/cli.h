/*
 * cli.h - error reporting and terminal helpers for the aptix command
 * line tool (the CLI counterpart of git's usage.c).
 *
 * This layer is for the executable only: library code reports errors
 * through its own error objects and must never call die().
 *
 * Message conventions: messages start lowercase, carry no trailing
 * period and no trailing newline; the "fatal: ", "error: " or
 * "warning: " prefix and the newline are added here.
 */
#ifndef APTIX_CLI_H
#define APTIX_CLI_H

#include <stddef.h>
#include <stdio.h>

/* Exit status of die(): a fatal runtime error. */
#define EXIT_FATAL 128
/* Exit status for bad command line usage (and for -h, as in git). */
#define EXIT_USAGE 129

#if defined(__GNUC__) || defined(__clang__)
# define CLI_NORETURN __attribute__((noreturn))
# define CLI_PRINTF(f, a) __attribute__((format(printf, f, a)))
#else
# define CLI_NORETURN
# define CLI_PRINTF(f, a)
#endif

/* Print "fatal: <msg>\n" to stderr and exit(EXIT_FATAL). */
void die(const char *fmt, ...) CLI_NORETURN CLI_PRINTF(1, 2);

/* Like die(), appending ": <strerror(errno)>" to the message. */
void die_errno(const char *fmt, ...) CLI_NORETURN CLI_PRINTF(1, 2);

/*
 * Called by die() before the message, once: a command that buffers its
 * output on its own (log) writes out what it has, so that a fatal error
 * midway leaves what came before it on stdout, as git does. NULL unsets.
 */
void cli_set_die_flush(void (*fn)(void *), void *payload);

/* Print "error: <msg>\n" to stderr; returns -1. */
int error(const char *fmt, ...) CLI_PRINTF(1, 2);

/* Like error(), appending ": <strerror(errno)>"; returns -1. */
int error_errno(const char *fmt, ...) CLI_PRINTF(1, 2);

/* Print "warning: <msg>\n" to stderr. */
void warning(const char *fmt, ...) CLI_PRINTF(1, 2);

/* Non-zero when stdout is a terminal; computed once and cached. */
int cli_isatty_stdout(void);

/*
 * Non-zero when colored output should be written to fd: fd is a
 * terminal, TERM is set and is not "dumb", and NO_COLOR is unset
 * (or empty, as https://no-color.org specifies).
 */
int cli_color_enabled(int fd);

/*
 * Write len bytes of s to fp.  When fp is a terminal, bytes that could
 * drive the terminal are made harmless: C0 control characters other
 * than '\n' and '\t' (including ESC and '\r') and DEL are shown in
 * caret notation ("^[", "^M", "^?"), and UTF-8 encoded C1 controls
 * (U+0080..U+009F) as "\u00XX".  Otherwise the bytes are written
 * unchanged.  Use it for any untrusted text (paths, object contents,
 * commit messages) that goes to a terminal.
 */
void cli_print_sanitized(FILE *fp, const char *s, size_t len);

/*
 * The same for a value that must stay on one line (a path, a title, a
 * field): a line feed or carriage return in it is written as the two
 * characters "\n" or "\r", on a terminal or not, so that it cannot
 * forge a line of the output.
 */
void cli_print_oneline(FILE *fp, const char *s, size_t len);

/*
 * A file path, quoted as git quotes one when it holds a control
 * character, '"', '\\' or bytes that are not UTF-8
 * (aptix_buf_put_path()), on a terminal or not. Returns the bytes
 * written (for alignment).
 */
size_t cli_print_path(FILE *fp, const char *path);

/*
 * Room for one more item in an array p of nr items of size bytes, with
 * *alloc allocated: p, or p reallocated (twice as large) when it is
 * full. Dies when out of memory. Use: v = cli_grow(v, &alloc, nr,
 * sizeof(*v)); v[nr++] = item;
 */
void *cli_grow(void *p, size_t *alloc, size_t nr, size_t size);


/*
 * Library errors, shown the git way. The library records a message for
 * every failure (aptix_error_last()); these print it with the prefix.
 */
/* Print "error: <last library error>"; returns -1. */
/*
 * The API keys of the environment (OPENAI_API_KEY, QDRANT_API_KEY; NULL
 * when unset) in keys[0..1]: what the credential checks look for too.
 */
void cli_env_keys(const char *keys[2]);

int error_aptix(void);
/* Print "fatal: <last library error>" and exit(EXIT_FATAL). */
void die_aptix(void) CLI_NORETURN;

struct aptix_process;
/*
 * Run p in the foreground and wait, as system() does: meanwhile ^C and
 * ^\ go to the child alone (this process ignores them). Its exit status
 * (128 + N: killed by signal N), or -1 with "error: ..." said when it
 * could not run.
 */
int cli_run_foreground(struct aptix_process *p);
#endif
