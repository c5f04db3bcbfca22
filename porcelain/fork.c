/*
 * porcelain/fork.c - aptix fork: a new conversation from any snapshot.
 */
#include <stdio.h>
#include <string.h>
#include <aptix.h>
#include <aptix/run.h>
#include "cli.h"
#include "commands.h"
#include "parse-options.h"
#include "turn-cli.h"
#include "view.h"

static const char *const fork_usage[] = {
	"aptix fork [-m <text> | -F <file>] [--model <model>] [--no-stream] "
	"[--dry-run] [--json] [-q] [--file <path>...] [--files-from <file>] "
	"[--workspace <id>] [--no-files] [--no-rag] <session>",
	"",
	"Without -m, HEAD switches to a new conversation starting at "
	"<session>,",
	"so that the next 'aptix continue' commits there.",
	NULL
};

/* What a plain fork would do, changing nothing (--dry-run). */
static int fork_dry_run(const aptix_oid *from, const aptix_session_info *si,
			int json)
{
	if (json) {
		printf("{\n  \"dry_run\": true,\n  \"kind\": \"fork\",\n"
		       "  \"from\": \"%s\",\n  \"switch_head\": true\n}\n",
		       aptix_oid_hex(from));
		return 0;
	}
	printf("Would switch to a new conversation forked from session %.12s "
	       "(%s); nothing is sent or changed\n", aptix_oid_hex(from),
	       si->summary);
	return 0;
}

/* The new conversation's ref points at the session it forks from. */
static int fork_only(struct aptix_repo *repo, const aptix_oid *from,
		     const char *spec, const struct turn_cli *c)
{
	aptix_txn *tx = NULL;
	aptix_buf ref = APTIX_BUF_INIT, reason = APTIX_BUF_INIT;
	aptix_session_info si;
	aptix_oid zero;
	char conv[APTIX_UUID_STRSZ + 1];
	int r;

	memset(&zero, 0, sizeof(zero));
	if (aptix_index_session(&si, repo, from) < 0)
		die("'%s' is not a session", spec);
	if (c->dry_run)
		return fork_dry_run(from, &si, c->json);
	if (aptix_uuid_v4(conv) < 0)
		die_aptix();
	aptix_buf_printf(&ref, "refs/conversations/%s", conv);
	aptix_buf_printf(&reason, "fork: from %s", aptix_oid_hex(from));
	if ((r = aptix_txn_new(&tx, repo)) < 0 ||
	    (r = aptix_txn_ref_update(tx, ref.ptr, from, &zero,
				      reason.ptr)) < 0 ||
	    (r = aptix_txn_symref_update(tx, "HEAD", ref.ptr,
					 reason.ptr)) < 0 ||
	    (r = aptix_txn_commit(tx)) < 0)
		die_aptix();
	printf("Switched to a new conversation '%s', forked from session "
	       "%.12s (%s)\n", conv, aptix_oid_hex(from), si.summary);
	fprintf(stderr, "The next 'aptix continue' commits there.\n");
	aptix_txn_free(tx);
	aptix_buf_release(&ref);
	aptix_buf_release(&reason);
	return 0;
}

int cmd_fork(int argc, const char **argv, struct aptix_repo *repo)
{
	struct turn_cli c = { 0 };

	aptix_buf instr = APTIX_BUF_INIT;
	aptix_oid from;
	int rc;
	struct option options[] = {
		OPT_STRING('m', "message", &c.message, "text",
			   "run this instruction as the fork's first turn"),
		OPT_STRING('F', NULL, &c.file, "file",
			   "read the instruction from a file"),
		TURN_RUN_OPTIONS(c),
		TURN_CONTEXT_OPTIONS(c),
		OPT_END()
	};

	argc = parse_options(argc, argv, options, fork_usage, 0);
	if (argc != 1)
		usage_with_options(fork_usage, options);
	view_resolve_session(&from, repo, argv[0]);
	if (!c.message && !c.file) {
		aptix_strlist_release(&c.files);
		return fork_only(repo, &from, argv[0], &c);
	}
	turn_cli_read_instruction(&instr, &c, 1);
	rc = turn_cli_run(repo, APTIX_RUN_FORK, &from, &instr, &c);
	aptix_buf_release(&instr);
	aptix_strlist_release(&c.files);
	return rc;
}
