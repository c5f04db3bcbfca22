/*
 * porcelain/init.c - aptix init: create an empty store.
 */
#include <stdio.h>
#include <stdlib.h>
#include <aptix.h>
#include "cli.h"
#include "commands.h"
#include "parse-options.h"

static const char *const init_usage[] = {
	"aptix init [-q | --quiet] [<directory>]",
	"",
	"Without <directory>, APTIX_DIR names the store to create, as",
	"GIT_DIR does for git init; else ./.aptix.",
	NULL
};

int cmd_init(int argc, const char **argv, struct aptix_repo *unused)
{
	struct aptix_repo *repo = NULL;
	int quiet = 0, existed = 0;
	const char *dir = ".", *env;
	struct option options[] = {
		OPT__QUIET(&quiet, "report only errors"),
		OPT_END()
	};

	(void)unused;
	argc = parse_options(argc, argv, options, init_usage, 0);
	if (argc > 1)
		usage_with_options(init_usage, options);
	if (argc == 1)
		dir = argv[0];
	env = getenv("APTIX_DIR");
	if (!argc && env && *env) {
		if (aptix_repo_init_dir(&repo, env, &existed) < 0)
			die_aptix();
	} else if (aptix_repo_init(&repo, dir, &existed) < 0) {
		die_aptix();
	}
	if (!quiet)
		printf("%s aptix store in %s/\n",
		       existed ? "Reinitialized existing" :
		       "Initialized empty", aptix_repo_path(repo));
	aptix_repo_free(repo);
	return 0;
}
