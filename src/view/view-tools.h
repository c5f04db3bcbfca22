/*
 * src/view/view-tools.h - the tool calls and results of a turn's view
 * (view-tools.c), for view.c.
 */
#ifndef APTIX_SRC_VIEW_TOOLS_H
#define APTIX_SRC_VIEW_TOOLS_H

#include "aptix/view.h"

/* [{id, call_id, name, arguments, namespace, item_id}]; NULL: no memory */
json_t *aptix__view_tool_calls(aptix_repo *repo, const aptix_turn *t);
/* [{id, call_id, call, name, status, exit_code, ..., output (full)}] */
json_t *aptix__view_tool_results(aptix_repo *repo, const aptix_turn *t,
				 int full);

#endif
