/*
 * porcelain/turn-cli.h - what continue, fork and rerun share: reading
 * the instruction, streaming the answer, the summary line, --json and
 * --dry-run output.
 */
#ifndef APTIX_TURN_CLI_H
#define APTIX_TURN_CLI_H

#include <aptix.h>
#include <aptix/run.h>

#include "parse-options.h"
#include "turn-stream.h"
#include "turn-tools.h"

struct turn_cli {
	const char *message;		/* -m */
	const char *file;		/* -F */
	const char *model;
	const char *conversation;
	const char *workspace;		/* --workspace */
	aptix_strlist files;		/* --file */
	const char *files_from;		/* --files-from */
	int no_stream, dry_run, json, quiet;
	int no_files, no_rag;
	int create;			/* --create: a new --conversation */
	/* a context given whole (rerun --recorded-context): no gathering */
	aptix_file_set *given_files;
	aptix_chunk_set *given_chunks;
	/* continue: tools sent, outputs answering calls (NULL: none) */
	struct turn_tools *tools;
};

/* The run options every turn command takes. */
#define TURN_RUN_OPTIONS(c) \
	OPT_STRING(0, "model", &(c).model, "model", \
		   "model to use (default: openai.model)"), \
	OPT_BOOL(0, "no-stream", &(c).no_stream, \
		 "wait for the whole answer"), \
	OPT_BOOL(0, "dry-run", &(c).dry_run, "print the request that " \
		 "would be sent; change nothing"), \
	OPT_BOOL(0, "json", &(c).json, "print one JSON object"), \
	OPT__QUIET(&(c).quiet, "no summary line")

/* The context options every turn command takes. */
#define TURN_CONTEXT_OPTIONS(c) \
	OPT_STRING_LIST(0, "file", &(c).files, "path", \
			"also send this file (repeatable)"), \
	OPT_STRING(0, "files-from", &(c).files_from, "file", \
		   "read paths to send from a file (- for stdin)"), \
	OPT_STRING(0, "workspace", &(c).workspace, "id", \
		   "WorkspaceId (default: APTIX_WORKSPACE, workspace.id)"), \
	OPT_BOOL(0, "no-files", &(c).no_files, \
		 "send no active files of the working copy"), \
	OPT_BOOL(0, "no-rag", &(c).no_rag, "retrieve no RAG context")

/*
 * Read the instruction (-m, -F <file>, -F - or stdin) into out.
 * need: die when there is none. Returns 1 when one was given.
 */
int turn_cli_read_instruction(aptix_buf *out, const struct turn_cli *c,
			      int need);

/*
 * The run and gather options of c (model, workspace, endpoint, key,
 * secrets, streaming into st, the active files and retrieval), for
 * callers that drive the stages themselves (chat). Dies on a bad
 * setting. opts->http.cancel is set to turn-cli's own flag (SIGINT):
 * a caller with its own flag sets it afterwards. wsid holds the
 * WorkspaceId the options borrow.
 */
void turn_cli_setup(aptix_run_options *opts, aptix_gather_options *g,
		    aptix_buf *wsid, struct aptix_repo *repo,
		    aptix_config *cfg, const struct turn_cli *c,
		    struct turn_stream *st);

/*
 * Run a turn and report it: answer on stdout as it streams, a summary
 * line on stderr, or one JSON object with --json. Returns the exit code:
 * 0 completed, 1 failed (a failed snapshot was recorded), 128 fatal.
 */
int turn_cli_run(struct aptix_repo *repo, aptix_run_kind kind,
		 const aptix_oid *from, const aptix_buf *instruction,
		 const struct turn_cli *c);

#endif
