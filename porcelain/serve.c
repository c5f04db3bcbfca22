/*
 * porcelain/serve.c - aptix serve (in progress).
 */
#include <aptix.h>
#include "cli.h"
#include "commands.h"
#include "parse-options.h"

static const char *const serve_usage[] = {
	"aptix serve [--port <n>]",
	NULL
};

int cmd_serve(int argc, const char **argv, struct aptix_repo *repo)
{
	struct option options[] = {
		OPT_END()
	};

	(void)repo;
	argc = parse_options(argc, argv, options, serve_usage, 0);
	die("aptix serve is not built yet");
}
