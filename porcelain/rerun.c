/*
 * porcelain/rerun.c - aptix rerun: the same instruction again, as a new
 * turn whose parent is the session's parent: a sibling branch; the old
 * turn stays as it was (seed 001, DD-006).
 */
#include <stdio.h>
#include <aptix.h>
#include "cli.h"
#include "commands.h"
#include "parse-options.h"
#include "turn-cli.h"
#include "view.h"

static const char *const rerun_usage[] = {
	"aptix rerun [--model <model>] [--no-stream] [--dry-run] [--json] "
	"[-q] [--file <path>...] [--files-from <file>] [--workspace <id>] "
	"[--no-files] [--no-rag] <session>",
	NULL
};

int cmd_rerun(int argc, const char **argv, struct aptix_repo *repo)
{
	struct turn_cli c = { 0 };
	aptix_oid from;
	int rc;
	struct option options[] = {
		TURN_RUN_OPTIONS(c),
		TURN_CONTEXT_OPTIONS(c),
		OPT_END()
	};

	argc = parse_options(argc, argv, options, rerun_usage, 0);
	if (argc != 1)
		usage_with_options(rerun_usage, options);
	view_resolve_session(&from, repo, argv[0]);
	rc = turn_cli_run(repo, APTIX_RUN_RERUN, &from, NULL, &c);
	aptix_strlist_release(&c.files);
	return rc;
}
