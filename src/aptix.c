/*
 * src/aptix.c - main() and the command table.
 */
#ifndef _POSIX_C_SOURCE
# define _POSIX_C_SOURCE 200809L
#endif
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <aptix.h>
#include "cli.h"
#include "commands.h"

/*
 * NEED_REPO: open the store first. WRITES: the command writes to the
 * store, so turns left pending by a process that died are first recorded
 * as failed (opening a store never writes; read-only commands work on a
 * store the user cannot write).
 */
enum cmd_flags { NEED_REPO = 1, WRITES = 2 };
enum cmd_category { CAT_PORCELAIN, CAT_PLUMBING };

struct cmd_struct {
	const char *name;
	int (*fn)(int, const char **, struct aptix_repo *);
	unsigned flags;
	enum cmd_category category;
	const char *help;
};

static const struct cmd_struct commands[] = {
	{ "app-server", cmd_app_server, NEED_REPO | WRITES, CAT_PORCELAIN,
	  "serve editors and agents JSON-RPC on stdin and stdout" },
	{ "cat-object", cmd_cat_object, NEED_REPO, CAT_PLUMBING,
	  "show the content, type or size of objects" },
	{ "chat", cmd_chat, NEED_REPO | WRITES, CAT_PORCELAIN,
	  "hold a conversation: turns, slash commands, a picker" },
	{ "commit-session", cmd_commit_session, NEED_REPO | WRITES, CAT_PLUMBING,
	  "create a session snapshot from a turn (no ref moves)" },
	{ "config", cmd_config, 0, CAT_PORCELAIN,
	  "get and set options" },
	{ "conversation", cmd_conversation, NEED_REPO | WRITES, CAT_PORCELAIN,
	  "list, rename, archive or delete conversations" },
	{ "continue", cmd_continue, NEED_REPO | WRITES, CAT_PORCELAIN,
	  "run one turn in the current conversation" },
	{ "credscan", cmd_credscan, 0, CAT_PLUMBING,
	  "look for credentials in files, as aptix does before sending" },
	{ "diff", cmd_diff, NEED_REPO, CAT_PORCELAIN,
	  "show what changed in the context between two sessions" },
	{ "for-each-ref", cmd_for_each_ref, NEED_REPO, CAT_PLUMBING,
	  "list refs with their ids and conversations" },
	{ "fork", cmd_fork, NEED_REPO | WRITES, CAT_PORCELAIN,
	  "start a new conversation from any session" },
	{ "fsck", cmd_fsck, NEED_REPO, CAT_PLUMBING,
	  "verify the objects, refs and index of the store" },
	{ "hash-object", cmd_hash_object, 0, CAT_PLUMBING,
	  "compute object ids and optionally store objects" },
	{ "index", cmd_index, NEED_REPO | WRITES, CAT_PORCELAIN,
	  "index the workspace's files for retrieval (RAG)" },
	{ "init", cmd_init, 0, CAT_PORCELAIN,
	  "create an empty aptix store" },
	{ "log", cmd_log, NEED_REPO, CAT_PORCELAIN,
	  "show the history of conversations" },
	{ "purge", cmd_purge, NEED_REPO | WRITES, CAT_PORCELAIN,
	  "remove what should never have been stored (a secret)" },
	{ "rag-query", cmd_rag_query, NEED_REPO, CAT_PLUMBING,
	  "print the chunks retrieval finds for a text" },
	{ "reflog", cmd_reflog, NEED_REPO, CAT_PLUMBING,
	  "show the history of a ref" },
	{ "reindex", cmd_reindex, NEED_REPO | WRITES, CAT_PLUMBING,
	  "rebuild the session index from the objects and refs" },
	{ "rerun", cmd_rerun, NEED_REPO | WRITES, CAT_PORCELAIN,
	  "run a session's instruction again, as a sibling branch" },
	{ "rev-parse", cmd_rev_parse, NEED_REPO, CAT_PLUMBING,
	  "turn names into object ids" },
	{ "salvage", cmd_salvage, 0, CAT_PLUMBING,
	  "copy what is readable of a damaged store into a new one" },
	{ "serve", cmd_serve, NEED_REPO | WRITES, CAT_PORCELAIN,
	  "serve the store over HTTP, with a page for browsers" },
	{ "sessions", cmd_sessions, NEED_REPO, CAT_PORCELAIN,
	  "list the conversations, most recent first" },
	{ "show", cmd_show, NEED_REPO, CAT_PORCELAIN,
	  "explain one turn: instruction, answer, sources, usage" },
	{ "status", cmd_status, NEED_REPO, CAT_PORCELAIN,
	  "show the current conversation and the turns in flight" },
	{ "symbolic-ref", cmd_symbolic_ref, NEED_REPO | WRITES, CAT_PLUMBING,
	  "read, set or delete a symbolic ref" },
	{ "switch", cmd_switch, NEED_REPO | WRITES, CAT_PORCELAIN,
	  "make a conversation current, or start a new one" },
	{ "update-ref", cmd_update_ref, NEED_REPO | WRITES, CAT_PLUMBING,
	  "update refs safely (compare-and-swap, atomic batches)" },
	{ "usage", cmd_usage, NEED_REPO, CAT_PORCELAIN,
	  "tokens spent and their estimated cost" },
	{ "write-turn", cmd_write_turn, NEED_REPO | WRITES, CAT_PLUMBING,
	  "create a turn object from JSON and/or options" },
};

static const char usage_string[] =
	"usage: aptix [-C <path>] [--version] [--help] <command> [<args>]";

static void list_commands(FILE *fp, enum cmd_category cat)
{
	size_t i;

	for (i = 0; i < sizeof(commands) / sizeof(commands[0]); i++)
		if (commands[i].category == cat)
			fprintf(fp, "   %-16s %s\n", commands[i].name,
				commands[i].help);
}

static void print_help(FILE *fp)
{
	fprintf(fp, "%s\n\n", usage_string);
	fprintf(fp, "Commands for working with sessions:\n");
	list_commands(fp, CAT_PORCELAIN);
	fprintf(fp, "\nLow-level commands (plumbing):\n");
	list_commands(fp, CAT_PLUMBING);
	fprintf(fp, "\nSee 'aptix <command> -h' for the options of a "
		"command.\n");
}

static const struct cmd_struct *find_command(const char *name)
{
	size_t i;

	for (i = 0; i < sizeof(commands) / sizeof(commands[0]); i++)
		if (!strcmp(commands[i].name, name))
			return &commands[i];
	return NULL;
}

/* Damerau-free Levenshtein distance, for "did you mean". */
static size_t edit_distance(const char *a, const char *b)
{
	size_t la = strlen(a), lb = strlen(b), i, j;
	size_t row[64], prev, tmp;

	if (lb >= sizeof(row) / sizeof(row[0]))
		return (size_t)-1;
	for (j = 0; j <= lb; j++)
		row[j] = j;
	for (i = 1; i <= la; i++) {
		prev = row[0];
		row[0] = i;
		for (j = 1; j <= lb; j++) {
			size_t best = prev + (a[i - 1] != b[j - 1]);

			if (row[j] + 1 < best)
				best = row[j] + 1;
			if (row[j - 1] + 1 < best)
				best = row[j - 1] + 1;
			tmp = row[j];
			row[j] = best;
			prev = tmp;
		}
	}
	return row[lb];
}

static int unknown_command(const char *name)
{
	size_t i, best = (size_t)-1, d;
	int n = 0;

	fprintf(stderr, "aptix: '%s' is not an aptix command. See "
		"'aptix --help'.\n", name);
	for (i = 0; i < sizeof(commands) / sizeof(commands[0]); i++) {
		d = edit_distance(name, commands[i].name);
		if (!strncmp(commands[i].name, name, strlen(name)) &&
		    strlen(name) >= 2)
			d = 1;
		if (d < best)
			best = d;
	}
	if (best > 3)
		return 1;
	for (i = 0; i < sizeof(commands) / sizeof(commands[0]); i++) {
		d = edit_distance(name, commands[i].name);
		if (!strncmp(commands[i].name, name, strlen(name)) &&
		    strlen(name) >= 2)
			d = 1;
		if (d != best)
			continue;
		fprintf(stderr, "%s%s\n", n++ ? "\t" :
			"\nThe most similar command is\n\t",
			commands[i].name);
	}
	return 1;
}

/* A .aptix store in a git work tree: say where it belongs, and how. */
static void warn_misplaced(struct aptix_repo *repo)
{
	const char *to = aptix_repo_misplaced(repo);

	if (!to)
		return;
	warning("the store '%s' is inside a git work tree, where 'git "
		"clean -fdx' deletes it and 'git add -A' stages it",
		aptix_repo_path(repo));
	fprintf(stderr, "hint: move it to '%s' with 'aptix init "
		"--migrate'\n", to);
}

static int run_command(const struct cmd_struct *cmd, int argc,
		       const char **argv)
{
	struct aptix_repo *repo = NULL;
	int status, i, help = 0;

	for (i = 1; i < argc; i++) {
		if (!strcmp(argv[i], "--"))
			break;
		if (!strcmp(argv[i], "-h") || !strcmp(argv[i], "--help"))
			help = 1;
	}
	/* -h works outside a store, as in git */
	if ((cmd->flags & NEED_REPO) && !help) {
		if (aptix_repo_find(&repo, ".") < 0)
			die_aptix();
		warn_misplaced(repo);
		if ((cmd->flags & WRITES) && !aptix_repo_readonly(repo) &&
		    aptix_run_recover(repo, NULL) < 0)
			warning("cannot record the turns of dead processes as "
				"failed: %s", aptix_error_last()->message);
	}
	status = cmd->fn(argc, argv, repo);
	aptix_repo_free(repo);
	if (fflush(stdout) || ferror(stdout)) {
		if (errno == EPIPE)
			return status;
		die_errno("write failure on standard output");
	}
	return status;
}

int main(int argc, const char **argv)
{
	const struct cmd_struct *cmd;

	argv++;
	argc--;
	while (argc > 0 && argv[0][0] == '-') {
		if (!strcmp(argv[0], "-C")) {
			if (argc < 2) {
				fprintf(stderr, "error: -C requires a "
					"directory\n%s\n", usage_string);
				return EXIT_USAGE;
			}
			if (chdir(argv[1]) < 0)
				die_errno("cannot change to '%s'", argv[1]);
			argv += 2;
			argc -= 2;
		} else if (!strcmp(argv[0], "--version") ||
			   !strcmp(argv[0], "-v")) {
			printf("aptix version %s\n", APTIX_VERSION);
			return 0;
		} else if (!strcmp(argv[0], "--help") ||
			   !strcmp(argv[0], "-h")) {
			print_help(stdout);
			return 0;
		} else if (!strncmp(argv[0], "--list-cmds=", 12)) {
			const char *what = argv[0] + 12;
			size_t i;

			for (i = 0; i < sizeof(commands) / sizeof(commands[0]);
			     i++) {
				int plumb = commands[i].category ==
					CAT_PLUMBING;

				if (!strcmp(what, "all") ||
				    (plumb && !strcmp(what, "plumbing")) ||
				    (!plumb && !strcmp(what, "porcelain")))
					printf("%s\n", commands[i].name);
			}
			return 0;
		} else {
			fprintf(stderr, "unknown option: %s\n%s\n", argv[0],
				usage_string);
			return EXIT_USAGE;
		}
	}
	if (argc == 0) {
		print_help(stderr);
		return 1;
	}
	if (!strcmp(argv[0], "help")) {
		if (argc > 1 && (cmd = find_command(argv[1]))) {
			const char *hargv[] = { cmd->name, "-h", NULL };

			return run_command(cmd, 2, hargv);
		}
		if (argc > 1)
			return unknown_command(argv[1]);
		print_help(stdout);
		return 0;
	}
	if (!strcmp(argv[0], "version")) {
		printf("aptix version %s\n", APTIX_VERSION);
		return 0;
	}
	cmd = find_command(argv[0]);
	if (!cmd)
		return unknown_command(argv[0]);
	return run_command(cmd, argc, argv);
}
