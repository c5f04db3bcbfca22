/*
 * porcelain/turn-tools.h - the tool options of `aptix continue` (issue
 * 24): the function tools sent (--tools, --no-tools), the outputs that
 * answer the calls a model asked for (--tool-output, --tool-exit,
 * --tool-results), and the calls printed when the answer is calls.
 */
#ifndef APTIX_TURN_TOOLS_H
#define APTIX_TURN_TOOLS_H

#include <aptix.h>
#include <aptix/run.h>
#include <jansson.h>

#include "parse-options.h"

struct turn_tools {
	const char *tools_file;		/* --tools */
	int no_tools;			/* --no-tools */
	aptix_strlist outputs;		/* --tool-output <id>=<file>|- */
	aptix_strlist exits;		/* --tool-exit <id>=<n> */
	const char *results_file;	/* --tool-results <file.json> */
	/* loaded by turn_tools_load() */
	aptix_buf tools;
	aptix_run_tool_output *v;
	size_t n;
	aptix_buf *data;		/* the files read, one per output */
	aptix_run_tool_outputs results;	/* --tool-results */
};

#define TURN_TOOL_OPTIONS(t) \
	OPT_STRING_F(0, "tools", &(t).tools_file, "file", \
		     "function tools the model may call (a JSON array); " \
		     "kept for the next turns", PARSE_OPT_NONEG), \
	OPT_BOOL_F(0, "no-tools", &(t).no_tools, \
		   "send no tools (and forget them)", PARSE_OPT_NONEG), \
	OPT_STRING_LIST(0, "tool-output", &(t).outputs, "id=file", \
			"the output of a tool call (- for stdin; " \
			"repeatable)"), \
	OPT_STRING_LIST(0, "tool-exit", &(t).exits, "id=code", \
			"the exit code of a tool call (repeatable)"), \
	OPT_STRING(0, "tool-results", &(t).results_file, "file", \
		   "every output at once (JSON)")

/* Read the files the options name; dies with a clear message. */
void turn_tools_load(struct turn_tools *t);
/* Whether outputs were given (the instruction is then optional). */
int turn_tools_answering(const struct turn_tools *t);
/* Set the run options from t (borrowed: t outlives the run). */
void turn_tools_apply(aptix_run_options *o, const struct turn_tools *t);
void turn_tools_release(struct turn_tools *t);
/* The calls asked for: on stdout, and how to answer them on stderr. */
void turn_tools_print_calls(const aptix_run_result *res, int quiet);

#endif
