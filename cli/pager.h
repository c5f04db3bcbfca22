/*
 * pager.h - pipe a command's output into a pager when it goes to a
 * terminal (the counterpart of git's pager.c).
 *
 * Which pager: $APTIX_PAGER, else $PAGER, else "less -FRX". An empty
 * value or "cat" means none. A command of plain words runs without a
 * shell; one with shell metacharacters runs under /bin/sh -c. The
 * pager gets LESS=FRX and LV=-c unless those are set already. A pager
 * that is not installed, or that cannot start, is skipped: the output
 * goes to the terminal directly.
 *
 * Colors and sanitizing follow the terminal, not the pipe: setup_pager()
 * asks cli_isatty_stdout() before it redirects stdout, and that answer
 * is cached, so cli_color_enabled(STDOUT_FILENO) and
 * cli_print_sanitized(stdout, ...) go on treating stdout as the
 * terminal the pager writes to.
 */
#ifndef APTIX_PAGER_H
#define APTIX_PAGER_H

/*
 * Start the pager when stdout is a terminal; do nothing otherwise.
 * Call it after the errors a command can report early (so that they
 * reach the terminal directly) and before its output. stdout (and
 * stderr, when it is a terminal too) then go into the pager, which is
 * waited for at exit and on a fatal signal.
 */
void setup_pager(void);

/*
 * aptix's own -p/--paginate (1) and --no-pager (0), before the command:
 * with 0, setup_pager() does nothing; -1 (the default) leaves it to the
 * command.
 */
extern int pager_use;

/* The --no-pager option of the commands that page (parse-options.h). */
#define OPT_NO_PAGER(v) \
	OPT_BOOL(0, "no-pager", (v), "do not pipe the output into a pager")

#endif
