/*
 * plumbing/salvage.c - copy what is readable of a (damaged) store into a
 * new one: `aptix salvage <new-dir>` makes <new-dir>/.aptix.
 *
 * The store is found as every command finds it, but not opened: a
 * damaged store may not open at all. See src/maintenance/salvage.c for what is
 * taken from where.
 */
#include <stdio.h>
#include <aptix.h>
#include "cli.h"
#include "commands.h"
#include "parse-options.h"

static const char *const salvage_usage[] = {
	"aptix salvage [-q | --quiet] <new-dir>",
	NULL
};

int cmd_salvage(int argc, const char **argv, struct aptix_repo *repo)
{
	aptix_buf from = APTIX_BUF_INIT;
	aptix_salvage_stats st;
	int quiet = 0;
	struct option options[] = {
		OPT__QUIET(&quiet, "do not print what was copied"),
		OPT_END()
	};

	(void)repo;
	argc = parse_options(argc, argv, options, salvage_usage, 0);
	if (argc != 1)
		usage_with_options(salvage_usage, options);
	if (aptix_repo_discover(&from, ".") < 0 ||
	    aptix_salvage(from.ptr, argv[0], &st) < 0)
		die_aptix();
	if (!quiet) {
		printf("salvaged %zu object%s, %zu ref%s, %zu reflog "
		       "entr%s into %s\n", st.objects,
		       st.objects == 1 ? "" : "s", st.refs,
		       st.refs == 1 ? "" : "s", st.reflog,
		       st.reflog == 1 ? "y" : "ies", argv[0]);
		printf("indexed %zu session%s\n", st.sessions,
		       st.sessions == 1 ? "" : "s");
		if (st.bad_pages || st.damaged_records || st.refs_dropped)
			printf("skipped %zu damaged page%s, %zu damaged "
			       "record%s, %zu ref%s whose target was lost\n",
			       st.bad_pages, st.bad_pages == 1 ? "" : "s",
			       st.damaged_records,
			       st.damaged_records == 1 ? "" : "s",
			       st.refs_dropped,
			       st.refs_dropped == 1 ? "" : "s");
	}
	aptix_buf_release(&from);
	return 0;
}
