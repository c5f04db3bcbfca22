/*
 * porcelain/chat-model.h - the parts of `aptix chat` that neither read
 * the terminal nor touch a store, so that the unit tests reach them:
 * the slash commands (one table: name, arguments, help, flags) with the
 * parser of an input line, and the picker's model (filter, pages,
 * selection) apart from its drawing.
 */
#ifndef APTIX_CHAT_MODEL_H
#define APTIX_CHAT_MODEL_H

#include <stddef.h>
#include <aptix.h>

enum chat_cmd_id {
	CHAT_HELP, CHAT_NEW, CHAT_CLEAR, CHAT_RESUME, CHAT_FORK, CHAT_REWIND,
	CHAT_RERUN,
	CHAT_LOG, CHAT_SHOW, CHAT_DIFF, CHAT_STATUS, CHAT_CONTEXT,
	CHAT_WORKSPACE, CHAT_FILES, CHAT_MODEL, CHAT_RENAME, CHAT_COMPACT,
	CHAT_EDIT, CHAT_QUIT
};

/* Refused while a turn of the conversation runs (it would disturb it). */
#define CHAT_F_BUSY 1
/* Writes to the store or starts a turn: refused when viewing read-only. */
#define CHAT_F_WRITES 2
/* The argument is required / not allowed. */
#define CHAT_F_ARG 4
#define CHAT_F_NOARG 8

struct chat_cmd {
	enum chat_cmd_id id;
	const char *name;	/* without the slash */
	const char *args;	/* for /help: "[<session>]" or "" */
	const char *help;
	unsigned flags;
};

/* The table, in /help's order, ending with a NULL name. */
extern const struct chat_cmd chat_commands[];

enum chat_line_kind {
	CHAT_LINE_EMPTY,	/* nothing but blanks */
	CHAT_LINE_TEXT,		/* an instruction: a turn */
	CHAT_LINE_COMMAND,	/* a slash command */
	CHAT_LINE_ERROR		/* a slash command misused */
};

struct chat_line {
	enum chat_line_kind kind;
	const struct chat_cmd *cmd;	/* COMMAND (and ERROR when known) */
	/*
	 * TEXT: the instruction (the line, "//" made "/"); COMMAND: the
	 * argument, blanks trimmed ("" when none). Points into the line.
	 */
	const char *arg;
	char error[160];		/* ERROR: why, for people */
};

/*
 * Parse one input line (it may hold newlines: a multi-line input). A
 * line starting with '/' and a letter is a command; "//..." is text
 * starting with '/'; so is "/path/like" whose first word names no
 * command but holds a '/' or '.'. Trailing blanks are cut (the line is
 * modified).
 */
void chat_parse(struct chat_line *out, char *line);

/* The command named name (no slash), or NULL. */
const struct chat_cmd *chat_find(const char *name, size_t len);

/*
 * Tab completion of a command: the commands starting with prefix (after
 * the slash), in table order, into v (at most n); returns how many
 * match. *common gets the length of their longest common prefix.
 */
size_t chat_complete(const struct chat_cmd **v, size_t n,
		     const char *prefix, size_t len, size_t *common);

/* Joins an input with the next when it ends with a backslash. */
/* Returns 1 when line ends with an unescaped '\' (cut off). */
int chat_line_continues(char *line);

/* --- The picker's model ----------------------------------------------- */

#define PICKER_PAGE 25

struct picker_row {
	aptix_conv_info ci;
	int here;		/* in this workspace */
};

struct picker {
	struct picker_row *rows;	/* most recent first; owned */
	size_t nr;
	int all;			/* every workspace's */
	char filter[128];
	size_t *vis;			/* rows shown: indexes into rows */
	size_t nvis;
	/*
	 * The selected entry: 0 is "new conversation", i (>= 1) is
	 * vis[i - 1].
	 */
	size_t sel;
};

/*
 * Take rows (malloc'd, nr of them; the picker frees them), sort them
 * most recent first and select the first conversation of this
 * workspace (or "new conversation" when there is none).
 */
void picker_init(struct picker *p, struct picker_row *rows, size_t nr);
void picker_release(struct picker *p);
/* Show every workspace's conversations, or only this one's. */
void picker_toggle_all(struct picker *p);
/* Keep the rows whose title or id holds text (any case); "" for all. */
void picker_set_filter(struct picker *p, const char *text);
/* Move the selection by delta entries (clamped). */
void picker_move(struct picker *p, long delta);
/* Move by whole pages. */
void picker_page(struct picker *p, long delta);
/* Select row n as numbered on screen (1 = first; 0 = new); -1 if none. */
int picker_select_number(struct picker *p, size_t n);
/* The page shown (0-based) and the number of pages. */
size_t picker_page_of(const struct picker *p);
size_t picker_pages(const struct picker *p);
/* The selected row, or NULL for "new conversation". */
const struct picker_row *picker_selected(const struct picker *p);

#endif
