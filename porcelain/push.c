/*
 * porcelain/push.c - aptix push: send conversations to a remote, as
 * git push; aptix fetch and clone print their updates with these
 * helpers too (xfer_print()).
 */
#include <stdio.h>
#include <string.h>
#include <aptix.h>
#include "cli.h"
#include "commands.h"
#include "parse-options.h"
#include "xfer.h"

static const char *const push_usage[] = {
	"aptix push [--fork] [-v | --verbose] [-q | --quiet]",
	"           [<remote> [<conversation>...]]",
	"",
	"Sends what <remote> (default: origin) lacks of the history of the",
	"conversations (default: all), then moves their refs there, all in",
	"one transaction. A conversation that moved on both sides is",
	"rejected (fetch first); --fork pushes it as a new conversation",
	"<conversation>-fork-<hex> there instead. History never merges.",
	NULL
};

/* git's column: 2 * 7 hex digits + "..." */
#define SUMMARY_WIDTH 17

static const char *reason(aptix_xfer_status s)
{
	switch (s) {
	case APTIX_XFER_REJECT_FETCH_FIRST:
	case APTIX_XFER_REJECT_STALE:
		return " (fetch first)";
	case APTIX_XFER_REJECT_NONFF:
		return " (non-fast-forward)";
	case APTIX_XFER_REJECT_ATOMIC:
		return " (atomic push failed)";
	case APTIX_XFER_FORCED:
		return "  (forced update)";
	default:
		return "";
	}
}

static void range(char *out, size_t max, const aptix_xfer_update *u,
		  const char *dots)
{
	char a[APTIX_OID_HEXSZ + 1], b[APTIX_OID_HEXSZ + 1];

	aptix_oid_tostr(a, &u->old_id);
	aptix_oid_tostr(b, &u->new_id);
	snprintf(out, max, "%.7s%s%.7s", a, dots, b);
}

void xfer_print(const aptix_xfer_result *res, const char *where,
		const char *url, int verbose)
{
	char sum[64];
	size_t i;
	int flag, shown = 0;

	for (i = 0; i < res->n; i++) {
		const aptix_xfer_update *u = &res->updates[i];

		flag = ' ';
		switch (u->status) {
		case APTIX_XFER_UPTODATE:
			if (!verbose)
				continue;
			flag = '=';
			snprintf(sum, sizeof(sum), "[up to date]");
			break;
		case APTIX_XFER_NEW:
			flag = '*';
			snprintf(sum, sizeof(sum), "[new conversation]");
			break;
		case APTIX_XFER_FORK:
			flag = '*';
			snprintf(sum, sizeof(sum), "[new fork]");
			break;
		case APTIX_XFER_FASTFORWARD:
			range(sum, sizeof(sum), u, "..");
			break;
		case APTIX_XFER_FORCED:
			flag = '+';
			range(sum, sizeof(sum), u, "...");
			break;
		default:
			flag = '!';
			snprintf(sum, sizeof(sum), "[rejected]");
			break;
		}
		if (!shown++) {
			fprintf(stderr, "%s ", where);
			cli_print_oneline(stderr, url, strlen(url));
			fputc('\n', stderr);
		}
		fprintf(stderr, " %c %-*s ", flag, SUMMARY_WIDTH, sum);
		cli_print_oneline(stderr, u->conv, strlen(u->conv));
		fprintf(stderr, " -> ");
		cli_print_oneline(stderr, u->dst, strlen(u->dst));
		fprintf(stderr, "%s\n", reason(u->status));
	}
}

int cmd_push(int argc, const char **argv, struct aptix_repo *repo)
{
	aptix_xfer_result res = APTIX_XFER_RESULT_INIT;
	aptix_remote *rem = NULL;
	const char *name = "origin";
	int fork = 0, verbose = 0, quiet = 0, rows = 0, ret = 0;
	struct option options[] = {
		OPT_BOOL(0, "fork", &fork, "push a conversation that moved "
			 "on both sides as a new one there"),
		OPT__VERBOSE(&verbose, "also list what is up to date"),
		OPT__QUIET(&quiet, "report only errors"),
		OPT_HIDDEN_BOOL(0, "row-by-row", &rows, "write objects one "
				"statement each (to measure what batches "
				"save)"),
		OPT_END()
	};

	argc = parse_options(argc, argv, options, push_usage, 0);
	if (argc >= 1)
		name = argv[0];
	if (aptix_remote_open(&rem, repo, name, NULL) < 0)
		die_aptix();
	if (aptix_remote_push(&res, repo, rem, argc > 1 ? argv + 1 : NULL,
			      argc > 1 ? (size_t)argc - 1 : 0,
			      (fork ? APTIX_PUSH_FORK : 0) |
			      (rows ? APTIX_PUSH_ROW_BY_ROW : 0)) < 0) {
		aptix_remote_free(rem);
		die_aptix();
	}
	if (!quiet && res.objects)
		fprintf(stderr, "Sent %zu objects (%zu bytes) in %zu "
			"transactions; asked about %zu\n", res.objects,
			res.bytes, res.round_trips, res.asked);
	if (!quiet || aptix_xfer_rejected(&res))
		xfer_print(&res, "To", name, verbose);
	if (aptix_xfer_rejected(&res)) {
		error("failed to push some conversations to '%s'", name);
		fprintf(stderr, "hint: a conversation moved there since you "
			"last fetched: fetch it ('aptix fetch %s'), or push\n"
			"hint: yours as a fork of it ('aptix push --fork')\n",
			name);
		ret = 1;
	} else if (!quiet && !res.objects && !res.n) {
		fprintf(stderr, "Everything up-to-date\n");
	} else if (!quiet) {
		int moved = 0;
		size_t i;

		for (i = 0; i < res.n; i++)
			moved |= res.updates[i].status !=
				APTIX_XFER_UPTODATE;
		if (!moved)
			fprintf(stderr, "Everything up-to-date\n");
	}
	aptix_xfer_result_release(&res);
	aptix_remote_free(rem);
	return ret;
}
