/*
 * porcelain/acp.c - aptix acp: aptix as an Agent Client Protocol agent
 * (JSON-RPC 2.0 on stdin and stdout, one message per line), for Zed,
 * JetBrains, Neovim and every other ACP client (serve/acp.c; the
 * mapping: serve/ACP.md).
 *
 * It reads until end of input; the client is then gone, so a turn still
 * running is cancelled (committed as failed, its instruction kept).
 * SIGTERM or SIGINT stops reading; the running turns get --grace seconds
 * to finish, then are cancelled the same way.
 */
#ifndef _POSIX_C_SOURCE
# define _POSIX_C_SOURCE 200809L
#endif
#include <stdio.h>
#include <string.h>
#include <aptix.h>

#include "cli.h"
#include "commands.h"
#include "parse-options.h"
#include "serve.h"
#include "acp.h"

static const char *const acp_usage[] = {
	"aptix acp [--workspace <id>] [--grace <seconds>] [--max-queue <bytes>]",
	"",
	"Speaks the Agent Client Protocol on stdin and stdout, one JSON-RPC",
	"message per line: an editor's agent whose sessions are aptix",
	"conversations (new, prompt, cancel, load, resume, list, fork,",
	"close, delete).",
	NULL
};

int cmd_acp(int argc, const char **argv, struct aptix_repo *repo)
{
	const char *workspace = NULL;
	unsigned long grace = 10, max_queue = JSONRPC_MAX_QUEUE;
	struct serve_err e = { 0, "", "" };
	struct serve *s = NULL;
	struct acp *a = NULL;
	struct option options[] = {
		OPT_STRING(0, "workspace", &workspace, "id",
			   "the workspace of sessions in the store's work "
			   "tree"),
		OPT_ULONG(0, "grace", &grace, "seconds a running turn may "
			  "take to finish after SIGTERM (default 10)"),
		OPT_ULONG(0, "max-queue", &max_queue, "bytes of messages "
			  "that may wait for a client that does not read them "
			  "before aptix ends the connection (default 64 MiB)"),
		OPT_END()
	};

	parse_options(argc, argv, options, acp_usage, PARSE_OPT_NO_ARGS);
	if (serve_new(&s, repo, workspace, &e) < 0)
		die("%s", e.message);
	if (acp_new(&a, s, 1) < 0)
		die_aptix();
	jsonrpc_set_max_queue(acp_transport(a), max_queue);

	/* at the end of input nobody reads the answers any more */
	jsonrpc_run_stdio(acp_transport(a), grace, 1);
	acp_free(a);
	serve_free(s);
	return 0;
}
