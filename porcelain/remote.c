/*
 * porcelain/remote.c - aptix remote: the stores this one pushes to and
 * fetches from (shared stores on PostgreSQL), as git remote.
 */
#include <stdio.h>
#include <string.h>
#include <aptix.h>
#include "cli.h"
#include "commands.h"
#include "parse-options.h"

static const char *const remote_usage[] = {
	"aptix remote [-v | --verbose]",
	"aptix remote add [--org <org>] <name> <url>",
	"aptix remote remove <name>",
	"",
	"<url> is a PostgreSQL URL (postgresql://host/db?user=...) without a",
	"password: libpq reads it from ~/.pgpass (PGPASSFILE), a service",
	"file (PGSERVICE) or PGPASSWORD. --org names the org whose rows the",
	"remote's store is (default: default).",
	NULL
};

static int show_remote(const char *name, const char *url, const char *org,
		       void *payload)
{
	const int *verbose = payload;

	cli_print_oneline(stdout, name, strlen(name));
	if (*verbose) {
		putchar('\t');
		cli_print_oneline(stdout, url, strlen(url));
		printf(" (org ");
		cli_print_oneline(stdout, org, strlen(org));
		putchar(')');
	}
	putchar('\n');
	return 0;
}

int cmd_remote(int argc, const char **argv, struct aptix_repo *repo)
{
	const char *org = NULL;
	int verbose = 0;
	struct option options[] = {
		OPT__VERBOSE(&verbose, "show the URL and org of each"),
		OPT_STRING(0, "org", &org, "org",
			   "add: the org whose rows the remote is"),
		OPT_END()
	};

	argc = parse_options(argc, argv, options, remote_usage,
			     PARSE_OPT_STOP_AT_NON_OPTION);
	if (argc == 0) {
		if (aptix_remote_foreach(repo, show_remote, &verbose) < 0)
			die_aptix();
		return 0;
	}
	if (!strcmp(argv[0], "add")) {
		argc = parse_options(argc, argv, options, remote_usage, 0);
		if (argc != 2)
			usage_with_options(remote_usage, options);
		if (aptix_remote_add(repo, argv[0], argv[1], org) < 0)
			die_aptix();
		return 0;
	}
	if (!strcmp(argv[0], "remove") || !strcmp(argv[0], "rm")) {
		if (argc != 2)
			usage_with_options(remote_usage, options);
		if (aptix_remote_remove(repo, argv[1]) < 0)
			die_aptix();
		return 0;
	}
	error("unknown subcommand: '%s'", argv[0]);
	usage_with_options(remote_usage, options);
}
