/*
 * cli/aptix.c - main() and the command table.
 */
#ifndef _POSIX_C_SOURCE
# define _POSIX_C_SOURCE 200809L
#endif
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <unistd.h>

#include <aptix.h>
#include "cli.h"
#include "commands.h"
#include "pager.h"
#include "parse-options.h"

/*
 * NEED_REPO: open the store first. WRITES: the command writes to the
 * store, so turns left pending by a process that died are first recorded
 * as failed (opening a store never writes; read-only commands work on a
 * store the user cannot write). ANY_INDEX: the command runs on a store
 * whose index a reindex left incomplete (every other one refuses it,
 * saying to run reindex).
 */
enum cmd_flags { NEED_REPO = 1, WRITES = 2, ANY_INDEX = 4 };
enum cmd_category { CAT_PORCELAIN, CAT_PLUMBING };

struct cmd_struct {
	const char *name;
	int (*fn)(int, const char **, struct aptix_repo *);
	unsigned flags;
	enum cmd_category category;
	const char *help;
};

static const struct cmd_struct commands[] = {
	{ "acp", cmd_acp, NEED_REPO | WRITES, CAT_PORCELAIN,
	  "be an Agent Client Protocol agent on stdin and stdout" },
	{ "app-server", cmd_app_server, NEED_REPO | WRITES, CAT_PORCELAIN,
	  "serve editors and agents JSON-RPC on stdin and stdout" },
	{ "cat-object", cmd_cat_object, NEED_REPO, CAT_PLUMBING,
	  "show the content, type or size of objects" },
	{ "chat", cmd_chat, NEED_REPO | WRITES, CAT_PORCELAIN,
	  "hold a conversation: turns, slash commands, a picker" },
	{ "clone", cmd_clone, 0, CAT_PORCELAIN,
	  "make a store from a remote's" },
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
	{ "export", cmd_export, NEED_REPO, CAT_PORCELAIN,
	  "write conversations as session.md, lossless JSON or markdown" },
	{ "fetch", cmd_fetch, NEED_REPO | WRITES, CAT_PORCELAIN,
	  "bring a remote's conversations into remote-tracking refs" },
	{ "for-each-ref", cmd_for_each_ref, NEED_REPO, CAT_PLUMBING,
	  "list refs with their ids and conversations" },
	{ "fork", cmd_fork, NEED_REPO | WRITES, CAT_PORCELAIN,
	  "start a new conversation from any session" },
	{ "fsck", cmd_fsck, NEED_REPO, CAT_PLUMBING,
	  "verify the objects, refs and index of the store" },
	{ "gc", cmd_gc, NEED_REPO | WRITES, CAT_PORCELAIN,
	  "delete what nothing reaches and compact the store" },
	{ "hash-object", cmd_hash_object, 0, CAT_PLUMBING,
	  "compute object ids and optionally store objects" },
	{ "import", cmd_import, NEED_REPO | WRITES, CAT_PORCELAIN,
	  "import the sessions of Codex, Claude Code or Gemini CLI" },
	{ "index", cmd_index, NEED_REPO | WRITES, CAT_PORCELAIN,
	  "index the workspace's files for retrieval (RAG)" },
	{ "init", cmd_init, 0, CAT_PORCELAIN,
	  "create an empty aptix store" },
	{ "log", cmd_log, NEED_REPO, CAT_PORCELAIN,
	  "show the history of conversations" },
	{ "purge", cmd_purge, NEED_REPO | WRITES, CAT_PORCELAIN,
	  "remove what should never have been stored (a secret)" },
	{ "push", cmd_push, NEED_REPO | WRITES, CAT_PORCELAIN,
	  "send conversations to a remote" },
	{ "rag-query", cmd_rag_query, NEED_REPO, CAT_PLUMBING,
	  "print the chunks retrieval finds for a text" },
	{ "reflog", cmd_reflog, NEED_REPO, CAT_PLUMBING,
	  "show the history of a ref" },
	{ "reindex", cmd_reindex, NEED_REPO | WRITES | ANY_INDEX, CAT_PLUMBING,
	  "rebuild the session index from the objects and refs" },
	{ "remote", cmd_remote, NEED_REPO | WRITES, CAT_PORCELAIN,
	  "manage the remotes this store pushes to and fetches from" },
	{ "rerun", cmd_rerun, NEED_REPO | WRITES, CAT_PORCELAIN,
	  "run a session's instruction again, as a sibling branch" },
	{ "rev-parse", cmd_rev_parse, NEED_REPO, CAT_PLUMBING,
	  "turn names into object ids" },
	{ "salvage", cmd_salvage, 0, CAT_PLUMBING,
	  "copy what is readable of a damaged store into a new one" },
	{ "search", cmd_search, NEED_REPO, CAT_PORCELAIN,
	  "find the sessions that best match some words" },
	{ "serve", cmd_serve, NEED_REPO | WRITES, CAT_PORCELAIN,
	  "serve the store over HTTP, with a page for browsers" },
	{ "sessions", cmd_sessions, NEED_REPO, CAT_PORCELAIN,
	  "list the conversations, most recent first" },
	{ "share", cmd_share, NEED_REPO | WRITES, CAT_PORCELAIN,
	  "share a conversation with the org, or make it private again" },
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

static const char *const usage_strings[] = {
	"aptix [-C <path>] [-c <key>=<value>] [-p | --paginate | --no-pager] "
	"[--version] [--help] <command> [<args>]",
	NULL
};

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
	fprintf(fp, "usage: %s\n\n", usage_strings[0]);
	fprintf(fp, "Commands for working with sessions:\n");
	list_commands(fp, CAT_PORCELAIN);
	fprintf(fp, "\nLow-level commands (plumbing):\n");
	list_commands(fp, CAT_PLUMBING);
	fprintf(fp, "\nSee 'aptix <command> -h' for the options of a "
		"command, 'aptix help <command>'\nfor its manual page.\n");
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
	/* as parse_options() takes it: alone (parse-options.h) */
	if (argc == 2 && !strcmp(argv[1], "--dump-options"))
		help = 1;
	/* -h works outside a store, as in git */
	if ((cmd->flags & NEED_REPO) && !help) {
		if (aptix_repo_find(&repo, ".") < 0)
			die_aptix();
		warn_misplaced(repo);
		if (!(cmd->flags & ANY_INDEX) &&
		    aptix_index_incomplete(repo) != 0)
			die_aptix();
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

/* Run man with args; its exit status, or -1 when it cannot start. */
static int run_man(const char *opt, const char *page, int quiet)
{
	const char *argv[] = { "man", opt ? opt : page, opt ? page : NULL,
			       NULL };
	aptix_process p = APTIX_PROCESS_INIT;
	int status;

	fflush(NULL);
	p.argv = argv;
	if (quiet)
		p.out = p.err = APTIX_STDIO_NULL;
	if (aptix_process_run(&p, &status) < 0) {
		aptix_error_clear();
		return -1;
	}
	return status;
}

/*
 * Open the manual page (as git help does); -1 when man or the page is
 * not installed, so that the caller falls back to the -h text.
 */
static int show_man_page(const char *page)
{
	if (run_man("-w", page, 1) != 0)
		return -1;
	return run_man(NULL, page, 0) == 0 ? 0 : -1;
}

/* aptix help <cmd>, aptix <cmd> --help: the man page, else -h. */
static int command_help(const struct cmd_struct *cmd)
{
	const char *hargv[] = { cmd->name, "-h", NULL };
	char page[64];

	snprintf(page, sizeof(page), "aptix-%s", cmd->name);
	if (!show_man_page(page))
		return 0;
	return run_command(cmd, 2, hargv);
}

/* -C <path>: as git, each one applies at once, relative to the last. */
static int opt_chdir(const struct option *opt, const char *arg, int unset)
{
	(void)opt;
	(void)unset;
	if (chdir(arg) < 0)
		die_errno("cannot change to '%s'", arg);
	return 0;
}

/*
 * -c <key>=<value>: checked like 'aptix config <key> <value>', then
 * passed in APTIX_CONFIG_PARAMETERS (one "key=value" a line), which
 * aptix_config_open() reads last, as git passes -c in
 * GIT_CONFIG_PARAMETERS: the commands this one runs see it too.
 */
static int opt_config(const struct option *opt, const char *arg, int unset)
{
	aptix_buf *params = opt->value;
	const char *eq = strchr(arg, '=');
	char *key;
	int r;

	(void)unset;
	if (!eq || eq == arg)
		return error("-c expects <key>=<value>, not '%s'", arg);
	if (strchr(arg, '\n'))
		return error("-c: a value cannot hold a newline");
	if (!(key = strndup(arg, (size_t)(eq - arg))))
		die("out of memory");
	r = aptix_config_check_key(key, eq + 1);
	free(key);
	if (r < 0)
		return error("-c %s: %s", arg, aptix_error_last()->message);
	aptix_buf_printf(params, "%s%s", params->len ? "\n" : "", arg);
	return 0;
}

static int list_cmds(const char *what)
{
	size_t i;

	for (i = 0; i < sizeof(commands) / sizeof(commands[0]); i++) {
		int plumb = commands[i].category == CAT_PLUMBING;

		if (!strcmp(what, "help"))
			printf("%s\t%s\t%s\n", commands[i].name,
			       plumb ? "plumbing" : "porcelain",
			       commands[i].help);
		else if (!strcmp(what, "all") ||
			 (plumb && !strcmp(what, "plumbing")) ||
			 (!plumb && !strcmp(what, "porcelain")))
			printf("%s\n", commands[i].name);
	}
	return 0;
}

int main(int argc, const char **argv)
{
	const struct cmd_struct *cmd;
	aptix_buf params = APTIX_BUF_INIT;
	const char *list = NULL;
	int version = 0, help = 0, paginate = 0, no_pager = 0;
	const struct option options[] = {
		OPT_CALLBACK_F('C', NULL, NULL, "path", "run as if started "
			       "in <path>", PARSE_OPT_NONEG, opt_chdir),
		OPT_CALLBACK_F('c', NULL, &params, "<key>=<value>",
			       "set a configuration value for this command "
			       "(repeatable)", PARSE_OPT_NONEG, opt_config),
		OPT_BOOL_F('p', "paginate", &paginate, "pipe the output "
			   "into a pager", PARSE_OPT_NONEG),
		OPT_BOOL_F(0, "no-pager", &no_pager, "do not pipe the output "
			   "into a pager", PARSE_OPT_NONEG),
		OPT_BOOL_F('v', "version", &version, "print the version",
			   PARSE_OPT_NONEG),
		OPT_BOOL_F('h', "help", &help, "list the commands",
			   PARSE_OPT_NONEG),
		OPT_STRING_F(0, "list-cmds", &list, "what", "list commands",
			     PARSE_OPT_NONEG | PARSE_OPT_HIDDEN),
		OPT_END()
	};

	/* before anything is opened: see aptix_sanitize_stdfds() */
	if (aptix_sanitize_stdfds() < 0)
		die_aptix();
	/*
	 * A damaged store is an error message, not a crash: the library
	 * leaves signals to its caller, so the command asks for the guard.
	 */
	if (aptix_fault_guard_install() < 0)
		warning("%s", aptix_error_last()->message);
	argc = parse_options(argc, argv, options, usage_strings,
			     PARSE_OPT_STOP_AT_NON_OPTION);
	if (params.len) {
		if (aptix_buf_oom(&params))
			die("out of memory");
		if (setenv("APTIX_CONFIG_PARAMETERS", params.ptr, 1) < 0)
			die_errno("cannot set APTIX_CONFIG_PARAMETERS");
	}
	aptix_buf_release(&params);
	if (version) {
		printf("aptix version %s\n", APTIX_VERSION);
		return 0;
	}
	if (help) {
		print_help(stdout);
		return 0;
	}
	if (list)
		return list_cmds(list);
	if (no_pager)
		pager_use = 0;
	else if (paginate)
		pager_use = 1;
	if (argc == 0) {
		print_help(stderr);
		return 1;
	}
	if (!strcmp(argv[0], "help")) {
		if (argc > 1 && (cmd = find_command(argv[1])))
			return command_help(cmd);
		if (argc > 1)
			return unknown_command(argv[1]);
		if (!show_man_page("aptix"))
			return 0;
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
	if (argc > 1 && !strcmp(argv[1], "--help"))
		return command_help(cmd);
	if (pager_use == 1)
		setup_pager();
	return run_command(cmd, argc, argv);
}
