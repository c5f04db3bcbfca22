/*
 * cli/pretty.h - human-readable forms of turns and sessions, shared
 * by cat-object -p and the porcelain.
 */
#ifndef APTIX_PRETTY_H
#define APTIX_PRETTY_H

#include <stdio.h>
#include <aptix.h>

/* Print a turn's fields and the ids it references. */
void pretty_print_turn(FILE *fp, const aptix_turn *t);
/* Print a session's fields and the ids it references. */
void pretty_print_session(FILE *fp, const aptix_session *s);
/* Print a tool call's, a tool result's fields. */
void pretty_print_tool_call(FILE *fp, const aptix_tool_call *c);
void pretty_print_tool_result(FILE *fp, const aptix_tool_result *r);
/* Print any object's content readably (blobs as they are). */
int pretty_print_object(FILE *fp, aptix_otype type, const aptix_buf *data);
/* "12.3 KiB" and the like. */
const char *pretty_size(char out[32], uint64_t bytes);

#endif
