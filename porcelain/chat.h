/*
 * porcelain/chat.h - the terminal half of `aptix chat` (chat-tty.c):
 * line editing with libedit, the picker's drawing and keys, questions
 * answered with one key, $EDITOR. chat.c holds the session itself.
 */
#ifndef APTIX_CHAT_H
#define APTIX_CHAT_H

#include <stdio.h>
#include "chat-model.h"

struct chat_tty;

/*
 * Line editing on the terminal (stdin), history kept in history_path
 * (NULL: none). Ctrl-R searches it, Tab completes slash commands.
 */
struct chat_tty *chat_tty_open(const char *history_path);
void chat_tty_close(struct chat_tty *t);
/*
 * One input: lines ending with a backslash go on with the next (prompt
 * "... "). Returns a malloc'd text (no final newline), or NULL at the
 * end (Ctrl-D on an empty line). Ctrl-C drops what was typed and asks
 * again. Inputs are added to the history.
 */
char *chat_tty_read(struct chat_tty *t, const char *prompt);

/* Where the terminal's messages go: stdout, or stderr when redirected. */
FILE *chat_tty_out(void);

/*
 * Run the picker on the terminal. Returns 1 with the choice made
 * (picker_selected(): a row, or NULL for a new conversation), 0 when
 * left (Esc, q, Ctrl-C).
 */
int chat_pick(struct picker *p, const char *scope);

/* Ask a question answered by one of keys; returns the key, 0 for Esc. */
int chat_ask(const char *question, const char *keys);

/*
 * Let the user write a text in $VISUAL or $EDITOR (in file path).
 * Returns a malloc'd text, or NULL (the editor failed; said why).
 */
char *chat_edit_text(const char *path);

#endif
