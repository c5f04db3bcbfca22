/*
 * porcelain/tool-view.h - the tool calls a turn asked for and the tool
 * results it sent, read once and shown by show (text; --json is the
 * library's view, aptix/view.h), diff, and log (--tools, -S and --grep
 * search arguments and outputs).
 */
#ifndef APTIX_TOOL_VIEW_H
#define APTIX_TOOL_VIEW_H

#include <stdio.h>
#include <aptix.h>

struct tool_view {
	const aptix_oid *call_ids, *result_ids;	/* borrowed from the turn */
	aptix_tool_call *calls;
	size_t ncalls;
	aptix_tool_result *results;
	size_t nresults;
	aptix_buf *outputs;		/* what each result sent */
	char **names;			/* each result's call's name, or NULL */
};

/* Read t's calls and results (dies naming a damaged one). */
void tool_view_load(struct tool_view *tv, aptix_repo *repo,
		    const aptix_turn *t);
void tool_view_release(struct tool_view *tv);
/* "Tool calls:" and "Tool results:" sections, as show prints them. */
void tool_view_print(FILE *fp, const struct tool_view *tv);
/* One line per call and per result, as diff compares them. */
void tool_view_lines(aptix_buf *out, const struct tool_view *tv);
/* Every searchable text: arguments, names, outputs (log -S, --grep). */
int tool_view_foreach_text(const struct tool_view *tv,
			   int (*fn)(const char *s, size_t len, void *p),
			   void *payload);

#endif
