/*
 * porcelain/continue.c - aptix continue: run one turn as a child of the
 * head of the current conversation.
 */
#include <aptix.h>
#include "cli.h"
#include "commands.h"
#include "parse-options.h"
#include "turn-cli.h"

static const char *const continue_usage[] = {
	"aptix continue [-m <text> | -F <file> | <prompt>] [--model <model>] "
	"[--no-stream] [--dry-run] [--json] [-q] "
	"[--conversation <id> [--create]] [--file <path>...] "
	"[--files-from <file>] [--workspace <id>] [--no-files] [--no-rag] "
	"[--tools <file> | --no-tools] "
	"[--tool-output <id>=<file>... [--tool-exit <id>=<code>...] | "
	"--tool-results <file>]",
	"",
	"Reads the instruction from -m, from -F <file> (- for stdin), from "
	"the",
	"<prompt> argument, or from stdin. With an instruction given otherwise,",
	"piped stdin is attached to it as context, in a fenced block. With",
	"tool outputs the instruction is optional (and never read from stdin).",
	NULL
};

int cmd_continue(int argc, const char **argv, struct aptix_repo *repo)
{
	struct turn_cli c = { 0 };
	struct turn_tools tools = { 0 };

	aptix_buf instr = APTIX_BUF_INIT;
	int rc;
	struct option options[] = {
		OPT_STRING('m', "message", &c.message, "text",
			   "the instruction"),
		OPT_STRING('F', NULL, &c.file, "file",
			   "read the instruction from a file"),
		OPT_STRING(0, "conversation", &c.conversation, "id",
			   "continue this conversation instead of HEAD's"),
		OPT_BOOL('c', "create", &c.create, "start the --conversation "
			 "when it does not exist yet"),
		TURN_RUN_OPTIONS(c),
		TURN_CONTEXT_OPTIONS(c),
		TURN_TOOL_OPTIONS(tools),
		OPT_END()
	};

	argc = parse_options(argc, argv, options, continue_usage, 0);
	if (argc > 1)
		usage_msg_opt("too many arguments: quote the prompt, or use -m",
			      continue_usage, options);
	if (argc && (c.message || c.file))
		usage_msg_opt("a prompt argument and -m or -F cannot be used "
			      "together", continue_usage, options);
	if (argc)
		c.message = argv[0];
	if (c.create && !c.conversation)
		die("--create needs --conversation <id>");
	turn_tools_load(&tools);
	c.tools = &tools;
	if (!turn_tools_answering(&tools))
		turn_cli_read_instruction(&instr, &c, 1);
	else if (c.message || c.file)
		turn_cli_read_instruction(&instr, &c, 0);
	rc = turn_cli_run(repo, APTIX_RUN_CONTINUE, NULL, &instr, &c);
	turn_tools_release(&tools);
	aptix_buf_release(&instr);
	aptix_strlist_release(&c.files);
	return rc;
}
