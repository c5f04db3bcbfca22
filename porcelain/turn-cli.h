/*
 * porcelain/turn-cli.h - what continue, fork and rerun share: reading
 * the instruction, streaming the answer, the summary line, --json and
 * --dry-run output.
 */
#ifndef APTIX_TURN_CLI_H
#define APTIX_TURN_CLI_H

#include <aptix.h>
#include <aptix/run.h>

struct turn_cli {
	const char *message;		/* -m */
	const char *file;		/* -F */
	const char *model;
	const char *conversation;
	int no_stream, dry_run, json, quiet;
};

/*
 * Read the instruction (-m, -F <file>, -F - or stdin) into out.
 * need: die when there is none. Returns 1 when one was given.
 */
int turn_cli_read_instruction(aptix_buf *out, const struct turn_cli *c,
			      int need);

/*
 * Run a turn and report it: answer on stdout as it streams, a summary
 * line on stderr, or one JSON object with --json. Returns the exit code:
 * 0 completed, 1 failed (a failed snapshot was recorded), 128 fatal.
 */
int turn_cli_run(struct aptix_repo *repo, aptix_run_kind kind,
		 const aptix_oid *from, const aptix_buf *instruction,
		 const struct turn_cli *c);

#endif
