/*
 * porcelain/fetch.c - aptix fetch: a remote's conversations into
 * remote-tracking refs (refs/remotes/<remote>/<conversation>), as git
 * fetch; `log --all` and `sessions` show them.
 */
#include <stdio.h>
#include <string.h>
#include <aptix.h>
#include "cli.h"
#include "commands.h"
#include "parse-options.h"
#include "xfer.h"

static const char *const fetch_usage[] = {
	"aptix fetch [-v | --verbose] [-q | --quiet] [<remote>]",
	"",
	"Brings what <remote> (default: origin) has that this store lacks",
	"into refs/remotes/<remote>/<conversation>; nothing else moves.",
	NULL
};

int cmd_fetch(int argc, const char **argv, struct aptix_repo *repo)
{
	aptix_xfer_result res = APTIX_XFER_RESULT_INIT;
	aptix_remote *rem = NULL;
	const char *name = "origin";
	int verbose = 0, quiet = 0;
	struct option options[] = {
		OPT__VERBOSE(&verbose, "also list what is up to date"),
		OPT__QUIET(&quiet, "report only errors"),
		OPT_END()
	};

	argc = parse_options(argc, argv, options, fetch_usage, 0);
	if (argc > 1)
		usage_with_options(fetch_usage, options);
	if (argc == 1)
		name = argv[0];
	if (aptix_remote_open(&rem, repo, name, NULL) < 0 ||
	    aptix_remote_fetch(&res, repo, rem) < 0) {
		aptix_remote_free(rem);
		die_aptix();
	}
	if (!quiet && res.objects)
		fprintf(stderr, "Received %zu objects (%zu bytes)\n",
			res.objects, res.bytes);
	if (!quiet)
		xfer_print(&res, "From", name, verbose);
	aptix_xfer_result_release(&res);
	aptix_remote_free(rem);
	return 0;
}
