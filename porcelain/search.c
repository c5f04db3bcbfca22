/*
 * porcelain/search.c - aptix search: the sessions that best match a
 * query's words, ranked by BM25 over the search index (aptix/search.h),
 * best first, one per line; --json in the views' vocabulary
 * (aptix_view_search(), which the page and the app-server print too).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <aptix.h>
#include "cli.h"
#include "commands.h"
#include "parse-options.h"
#include "view.h"

static const char *const search_usage[] = {
	"aptix search [--json] [-n <n>] [--conversation <id>] "
	"[--workspace <id>]",
	"             [--since <date>] [--until <date>] [--status <s>] "
	"[--model <m>] <query>...",
	"",
	"Ranks the sessions by how well their title, instruction, answer and",
	"tool calls match the query's words (BM25): a word is a run of",
	"letters, digits and '_', of 2 to 64 bytes, in any case; the parts",
	"of camelCase and snake_case words count too (config: parseConfig),",
	"and a word finds those it begins, at half weight (pars: parser).",
	"Each line: the session, its date, its conversation, the score, its",
	"summary.",
	"The store's search index is kept with each turn; an older store",
	"gets one from 'aptix reindex', which also takes in the sessions an",
	"older aptix wrote since (a hint on stderr says how many there are).",
	NULL
};

static void print_hit(const json_t *h)
{
	const char *id = json_string_value(json_object_get(h, "session"));
	const char *conv = json_string_value(json_object_get(h,
							     "conversation"));
	const char *sum = json_string_value(json_object_get(h, "summary"));
	const char *at = json_string_value(json_object_get(h, "created_at"));

	printf("%.12s %.10s %-8.8s %6.2f ", id ? id : "", at ? at : "-",
	       conv ? conv : "", json_real_value(json_object_get(h, "score")));
	view_puts(stdout, sum ? sum : "");
	putchar('\n');
}

/* The query's words, one string (each argument a word or several). */
static char *join(int argc, const char **argv)
{
	aptix_buf q = APTIX_BUF_INIT;
	int i;

	for (i = 0; i < argc; i++)
		aptix_buf_printf(&q, "%s%s", i ? " " : "", argv[i]);
	if (aptix_buf_oom(&q))
		die("out of memory");
	return aptix_buf_detach(&q);
}

/*
 * Sessions an aptix without the search index wrote are not in it: say
 * so (stderr), as git hints, rather than answer as if there were none.
 */
static void hint_missing(aptix_repo *repo)
{
	uint64_t n = 0;

	if (aptix_search_missing(&n, repo) < 0)
		die_aptix();
	if (n)
		fprintf(stderr, "hint: %llu session%s not in the search "
			"index (written by an older aptix): run 'aptix "
			"reindex' to search %s too\n", (unsigned long long)n,
			n == 1 ? " is" : "s are", n == 1 ? "it" : "them");
}

int cmd_search(int argc, const char **argv, aptix_repo *repo)
{
	aptix_search_options o = APTIX_SEARCH_OPTIONS_INIT;
	const char *status = NULL;
	unsigned long limit = 20;
	int json = 0;
	json_t *hits = NULL;
	char *query;
	size_t i;
	struct option options[] = {
		OPT_BOOL(0, "json", &json, "print a JSON array of the hits"),
		OPT_ULONG('n', "max-count", &limit, "show at most <n> sessions "
			  "(default 20)"),
		OPT_STRING(0, "conversation", &o.conversation, "id",
			   "only the sessions of this conversation"),
		OPT_STRING(0, "workspace", &o.workspace, "id",
			   "only the sessions of this workspace"),
		OPT_DATE_MS("since", &o.since, "only sessions created at or "
			    "after <date>"),
		OPT_DATE_MS("until", &o.until, "only sessions created at or "
			    "before <date>"),
		OPT_STRING(0, "status", &status, "status", "only sessions of "
			   "this status (committed, failed, ...)"),
		OPT_STRING(0, "model", &o.model, "model",
			   "only sessions whose turn used this model"),
		OPT_END()
	};

	argc = parse_options(argc, argv, options, search_usage, 0);
	if (!argc)
		usage_with_options(search_usage, options);
	if (!limit)
		die("-n needs a number of 1 or more");
	if (status && (o.status = aptix_session_status_from_name(status)) < 0)
		die("invalid --status '%s': expected created, committed, "
		    "awaiting_tool_results, failed or archived", status);
	if (o.conversation) {
		static char conv[APTIX_CONV_MAXLEN + 1];

		if (aptix_conv_resolve(conv, repo, o.conversation) < 0)
			die_aptix();
		o.conversation = conv;
	}
	o.limit = limit;
	query = join(argc, argv);
	if (aptix_view_search(&hits, repo, query, &o) < 0) {
		free(query);
		die_aptix();
	}
	free(query);
	if (json) {
		view_json_print(hits);	/* frees it */
	} else {
		for (i = 0; i < json_array_size(hits); i++)
			print_hit(json_array_get(hits, i));
		json_decref(hits);
	}
	fflush(stdout);
	hint_missing(repo);
	return 0;
}
