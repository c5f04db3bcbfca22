/*
 * plumbing/reindex.c - rebuild the session index from the objects and
 * the refs.
 */
#include <stdio.h>
#include <aptix.h>
#include "cli.h"
#include "commands.h"
#include "parse-options.h"

static const char *const reindex_usage[] = {
	"aptix reindex [-q | --quiet] [--no-compact]",
	NULL
};

int cmd_reindex(int argc, const char **argv, struct aptix_repo *repo)
{
	int quiet = 0, no_compact = 0, r;
	size_t n = 0;
	struct option options[] = {
		OPT__QUIET(&quiet, "do not print the number of sessions"),
		OPT_BOOL(0, "no-compact", &no_compact,
			 "leave data.mdb the pages the old index held"),
		OPT_END()
	};

	parse_options(argc, argv, options, reindex_usage, PARSE_OPT_NO_ARGS);
	if (aptix_index_rebuild(repo, &n) < 0)
		die_aptix();
	if (!quiet)
		printf("reindexed %zu session%s\n", n, n == 1 ? "" : "s");
	/* the index is rebuilt: a store that cannot shrink now still works */
	r = no_compact ? 1 : aptix_index_compact(repo);
	if (r < 0)
		warning("data.mdb keeps the pages the old index held (later "
			"writes reuse them; 'aptix gc' compacts it): %s",
			aptix_error_last()->message);
	return 0;
}
