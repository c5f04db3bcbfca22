/*
 * porcelain/editor.h - an instruction typed in the user's editor, as
 * git commit does for a message.
 */
#ifndef APTIX_EDITOR_H
#define APTIX_EDITOR_H

#include <aptix.h>

/*
 * The editor: APTIX_EDITOR, core.editor, VISUAL, EDITOR, else vi (git's
 * GIT_EDITOR order). Never NULL; cfg may be NULL.
 */
const char *editor_program(const aptix_config *cfg);

/*
 * Open the editor on a temporary file of help lines; out gets what was
 * written, '#' lines and trailing blank lines removed. An empty text
 * ends the command (exit 1, nothing stored), as git commit does.
 */
void editor_read_instruction(aptix_buf *out);

#endif
