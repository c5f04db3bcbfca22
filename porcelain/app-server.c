/*
 * porcelain/app-server.c - aptix app-server: JSON-RPC 2.0 over stdin
 * and stdout, one JSON object per line, for editors and agents that
 * embed aptix (serve/jsonrpc.c; the protocol: serve/PROTOCOL.md).
 *
 * It reads until end of input, then waits for the turns still running.
 * SIGTERM or SIGINT stops reading; the running turns get --grace
 * seconds to finish, then are cancelled (committed as failed, their
 * instruction kept).
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
#include "jsonrpc.h"

static const char *const app_server_usage[] = {
	"aptix app-server [--workspace <id>] [--grace <seconds>]",
	"",
	"Speaks JSON-RPC 2.0 on stdin and stdout, one message per line:",
	"list and read conversations, run, fork, rerun and interrupt turns,",
	"with the answer streamed as notifications.",
	NULL
};

int cmd_app_server(int argc, const char **argv, struct aptix_repo *repo)
{
	const char *workspace = NULL;
	unsigned long grace = 10;
	struct serve_err e = { 0, "", "" };
	struct serve *s = NULL;
	struct jsonrpc *j = NULL;
	struct option options[] = {
		OPT_STRING(0, "workspace", &workspace, "id",
			   "the default workspace of lists and turns"),
		OPT_ULONG(0, "grace", &grace, "seconds a running turn may "
			  "take to finish after SIGTERM (default 10)"),
		OPT_END()
	};

	parse_options(argc, argv, options, app_server_usage, PARSE_OPT_NO_ARGS);
	if (serve_new(&s, repo, workspace, &e) < 0)
		die("%s", e.message);
	if (jsonrpc_new(&j, s, 1) < 0)
		die_aptix();

	jsonrpc_run_stdio(j, grace, 0);
	jsonrpc_free(j);
	serve_free(s);
	return 0;
}
