/*
 * porcelain/clone.c - aptix clone: a new store from a remote, as git
 * clone: the remote is "origin", each of its conversations one here,
 * HEAD on the remote's current one.
 */
#include <stdio.h>
#include <string.h>
#include <aptix.h>
#include "cli.h"
#include "commands.h"
#include "parse-options.h"

static const char *const clone_usage[] = {
	"aptix clone [--org <org>] [-q | --quiet] <url> [<directory>]",
	"",
	"<url> is a PostgreSQL URL without a password (see aptix remote);",
	"the store is made as aptix init <directory> makes it (default:",
	"the URL's database name).",
	NULL
};

/* The database of a URL ("postgresql://h/db?..." -> "db"), else "aptix". */
static void default_dir(char *out, size_t max, const char *url)
{
	const char *p = strstr(url, "://"), *end;

	p = p ? strchr(p + 3, '/') : NULL;
	if (!p || !p[1] || p[1] == '?') {
		snprintf(out, max, "aptix");
		return;
	}
	p++;
	end = p + strcspn(p, "?#/");
	snprintf(out, max, "%.*s", (int)(end - p), p);
}

int cmd_clone(int argc, const char **argv, struct aptix_repo *unused)
{
	aptix_xfer_result res = APTIX_XFER_RESULT_INIT;
	aptix_repo *repo = NULL;
	const char *org = NULL;
	char dir[256];
	int quiet = 0;
	struct option options[] = {
		OPT_STRING(0, "org", &org, "org",
			   "the org whose rows the remote is (default: "
			   "default)"),
		OPT__QUIET(&quiet, "report only errors"),
		OPT_END()
	};

	(void)unused;
	argc = parse_options(argc, argv, options, clone_usage, 0);
	if (argc < 1 || argc > 2)
		usage_with_options(clone_usage, options);
	if (argc == 2)
		snprintf(dir, sizeof(dir), "%s", argv[1]);
	else
		default_dir(dir, sizeof(dir), argv[0]);
	if (!quiet)
		fprintf(stderr, "Cloning into '%s'...\n", dir);
	if (aptix_remote_clone(&repo, &res, argv[0], org, dir) < 0)
		die_aptix();
	if (!quiet)
		fprintf(stderr, "Received %zu objects (%zu bytes), %zu "
			"conversations\n", res.objects, res.bytes, res.n);
	aptix_xfer_result_release(&res);
	aptix_repo_free(repo);
	return 0;
}
