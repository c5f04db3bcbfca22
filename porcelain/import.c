/*
 * porcelain/import.c - aptix import: the sessions of another coding agent
 * (Codex, Claude Code, Gemini CLI) recorded as conversations
 * (aptix/import.h). Warnings go to stderr with the file and line; the
 * summary to stdout (--json: one object); a progress bar on stderr when
 * it is a terminal (not with --json or -q). Exit 0: all imported; 1: some lines were not (the
 * warnings say which); 128: an error (the turn being written is not).
 */
#include <aptix.h>
#include <aptix/import.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "cli.h"
#include "commands.h"
#include "parse-options.h"

static const char *const import_usage[] = {
	"aptix import [--dry-run] [--json] [-q] <tool> [<path>...]",
	"",
	"<tool> is codex, claude, gemini, opencode (its opencode.db or the",
	"JSON of opencode export), llm (its logs.db), json (the lossless",
	"JSON of aptix export) or session-md (seed 004's session.md).",
	"Without a path, the tool's own location: ~/.codex/sessions and",
	"~/.codex/archived_sessions, ~/.claude/projects, ~/.gemini/tmp,",
	"~/.local/share/opencode, ~/.config/io.datasette.llm/logs.db",
	"($CODEX_HOME, $CLAUDE_CONFIG_DIR, $XDG_DATA_HOME, $XDG_CONFIG_HOME,",
	"$LLM_USER_PATH move them).",
	"Importing again adds only what is new.",
	NULL
};

struct import_cli {
	int quiet, bar;
	int bar_shown;
};

static void on_warn(const char *file, size_t line, const char *msg,
		    void *payload)
{
	struct import_cli *c = payload;

	if (c->bar_shown) {
		fputs("\r\033[K", stderr);
		c->bar_shown = 0;
	}
	if (line)
		fprintf(stderr, "warning: %s:%zu: ", file, line);
	else
		fprintf(stderr, "warning: %s: ", file);
	cli_print_sanitized(stderr, msg, strlen(msg));
	fputc('\n', stderr);
}

static void on_progress(unsigned long long done, unsigned long long total,
			void *payload)
{
	struct import_cli *c = payload;
	int pct = total ? (int)(done * 100 / total) : 100, i;

	if (!c->bar || c->quiet)
		return;
	fputs("\rimporting [", stderr);
	for (i = 0; i < 30; i++)
		fputc(i < pct * 30 / 100 ? '#' : ' ', stderr);
	fprintf(stderr, "] %3d%%", pct > 100 ? 100 : pct);
	c->bar_shown = 1;
}

static void print_summary(const aptix_import_stats *st, int json, int dry)
{
	if (json) {
		/* Documentation/json.md: counts are <things>_count. */
		printf("{\"byte_count\":%llu,\"conversation_count\":%zu,"
		       "\"dry_run\":%s,\"file_count\":%zu,"
		       "\"flagged_count\":%zu,\"new_turn_count\":%zu,"
		       "\"pending_count\":%zu,\"skipped_count\":%zu,"
		       "\"tool_call_count\":%zu,\"turn_count\":%zu,"
		       "\"warning_count\":%zu}\n", st->bytes,
		       st->conversations, dry ? "true" : "false", st->files,
		       st->flagged, st->new_turns, st->pending, st->skipped,
		       st->tool_calls, st->turns, st->warnings);
		return;
	}
	printf("%s %zu file%s: %zu turn%s (%zu new%s, in %zu "
	       "conversation%s), %zu tool call%s, %zu flagged, %zu skipped",
	       dry ? "would import" : "imported", st->files,
	       st->files == 1 ? "" : "s", st->turns, st->turns == 1 ? "" : "s",
	       st->new_turns, dry ? "" : "", st->conversations,
	       st->conversations == 1 ? "" : "s", st->tool_calls,
	       st->tool_calls == 1 ? "" : "s", st->flagged, st->skipped);
	if (st->pending)
		printf(", %zu in progress (left for later)", st->pending);
	putchar('\n');
}

int cmd_import(int argc, const char **argv, struct aptix_repo *repo)
{
	aptix_import_options o = APTIX_IMPORT_OPTIONS_INIT;
	aptix_strlist paths = APTIX_STRLIST_INIT;
	aptix_import_stats st;
	struct import_cli c = { 0, 0, 0 };
	const char *keys[2], *home;
	int json = 0, dry = 0, r, i;
	struct option options[] = {
		OPT_BOOL('n', "dry-run", &dry,
			 "read and count, write nothing"),
		OPT_BOOL(0, "json", &json, "print the summary as JSON"),
		OPT__QUIET(&c.quiet, "no progress bar"),
		OPT_END()
	};

	argc = parse_options(argc, argv, options, import_usage, 0);
	if (argc < 1)
		usage_with_options(import_usage, options);
	if (!aptix_import_tool_known(argv[0]))
		die("unknown tool '%s' (codex, claude, gemini, opencode, "
		    "json, session-md)", argv[0]);
	for (i = 1; i < argc; i++)
		if (aptix_strlist_push(&paths, argv[i]) < 0)
			die_aptix();
	if (argc == 1) {
		if (!(home = getenv("HOME")) || !*home)
			die("HOME is not set: give the path to import");
		if (aptix_import_default_paths(&paths, argv[0], home) < 0)
			die_aptix();
		if (!paths.nr)
			warning("nothing to import: no %s sessions under %s",
				argv[0], home);
	}
	cli_env_keys(keys);
	o.dry_run = dry;
	o.warn = on_warn;
	o.progress = on_progress;
	o.payload = &c;
	o.keys = keys;
	o.nkeys = 2;
	c.bar = isatty(STDERR_FILENO) && !json;	/* --json: for a program */
	r = aptix_import(&st, repo, argv[0], (const char *const *)paths.items,
			 paths.nr, &o);
	if (c.bar_shown)
		fputs("\r\033[K", stderr);
	aptix_strlist_release(&paths);
	if (r < 0)
		die_aptix();
	print_summary(&st, json, dry);
	return r ? 1 : 0;
}
