/*
 * porcelain/chat-model.c - the slash commands and the picker's model
 * of `aptix chat` (see chat-model.h). Nothing here does I/O.
 */
#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "chat-model.h"
#include "cli.h"

const struct chat_cmd chat_commands[] = {
	{ CHAT_HELP, "help", "", "list the commands", CHAT_F_NOARG },
	{ CHAT_NEW, "new", "", "a new conversation (this one is kept)",
	  CHAT_F_BUSY | CHAT_F_NOARG },
	{ CHAT_CLEAR, "clear", "", "the same as /new",
	  CHAT_F_BUSY | CHAT_F_NOARG },
	{ CHAT_RESUME, "resume", "[<conversation>]",
	  "pick a conversation to continue", CHAT_F_BUSY },
	{ CHAT_FORK, "fork", "[<n>|<session>]",
	  "the next turn forks turn <n> or a session (else the last)",
	  CHAT_F_BUSY },
	{ CHAT_REWIND, "rewind", "[<n>]",
	  "list the turns, or go back to turn <n> (the next turn forks it)",
	  CHAT_F_BUSY },
	{ CHAT_RERUN, "rerun", "",
	  "redo the last turn (a failed one in place, else a branch)",
	  CHAT_F_BUSY | CHAT_F_WRITES | CHAT_F_NOARG },
	{ CHAT_LOG, "log", "", "the graph of this conversation, a line a turn",
	  CHAT_F_NOARG },
	{ CHAT_SHOW, "show", "[<n>|<session>]",
	  "explain the last turn, or turn <n> (1: the first)", 0 },
	{ CHAT_DIFF, "diff", "", "what the last turn changed in the context",
	  CHAT_F_NOARG },
	{ CHAT_STATUS, "status", "", "the conversation and turns in flight",
	  CHAT_F_NOARG },
	{ CHAT_CONTEXT, "context", "", "what the next turn sends, what the "
	  "chain holds", CHAT_F_NOARG },
	{ CHAT_WORKSPACE, "workspace", "", "workspace id, store, index state",
	  CHAT_F_NOARG },
	{ CHAT_FILES, "files", "[add|drop <path>...|clear]",
	  "list, add or drop active files", CHAT_F_BUSY },
	{ CHAT_MODEL, "model", "[<name>]", "show or set the model",
	  CHAT_F_BUSY },
	{ CHAT_RENAME, "rename", "<title>", "set the conversation's title",
	  CHAT_F_BUSY | CHAT_F_WRITES | CHAT_F_ARG },
	{ CHAT_COMPACT, "compact", "", "the next turn starts a new chain "
	  "(summary and window)", CHAT_F_BUSY | CHAT_F_NOARG },
	{ CHAT_EDIT, "edit", "", "write the next instruction in $EDITOR",
	  CHAT_F_BUSY | CHAT_F_WRITES | CHAT_F_NOARG },
	{ CHAT_QUIT, "quit", "", "leave (Ctrl-D too)", CHAT_F_NOARG },
	{ 0, NULL, NULL, NULL, 0 }
};

const struct chat_cmd *chat_find(const char *name, size_t len)
{
	const struct chat_cmd *c;

	for (c = chat_commands; c->name; c++)
		if (strlen(c->name) == len && !memcmp(c->name, name, len))
			return c;
	return NULL;
}

size_t chat_complete(const struct chat_cmd **v, size_t n,
		     const char *prefix, size_t len, size_t *common)
{
	const struct chat_cmd *c;
	size_t nr = 0, k;

	*common = 0;
	for (c = chat_commands; c->name; c++) {
		if (strncmp(c->name, prefix, len) || strlen(c->name) < len)
			continue;
		if (!nr) {
			*common = strlen(c->name);
		} else {
			for (k = 0; k < *common && v[0]->name[k] == c->name[k];
			     k++)
				;
			*common = k;
		}
		if (nr < n)
			v[nr] = c;
		nr++;
	}
	return nr;
}

static int blank(char c)
{
	return c == ' ' || c == '\t' || c == '\n' || c == '\r';
}

int chat_line_continues(char *line)
{
	size_t len = strlen(line), n = 0;

	while (len && (line[len - 1] == '\n' || line[len - 1] == '\r'))
		line[--len] = '\0';
	while (n < len && line[len - 1 - n] == '\\')
		n++;
	if (n % 2 == 0)
		return 0;
	line[len - 1] = '\0';
	return 1;
}

void chat_parse(struct chat_line *out, char *line)
{
	size_t len = strlen(line), name_len;
	const char *p, *name;

	memset(out, 0, sizeof(*out));
	while (len && blank(line[len - 1]))
		line[--len] = '\0';
	for (p = line; blank(*p); p++)
		;
	out->arg = line;
	if (!*p) {
		out->kind = CHAT_LINE_EMPTY;
		return;
	}
	if (line[0] != '/') {
		out->kind = CHAT_LINE_TEXT;
		return;
	}
	if (line[1] == '/') {
		out->kind = CHAT_LINE_TEXT;
		out->arg = line + 1;
		return;
	}
	name = line + 1;
	for (name_len = 0; name[name_len] && !blank(name[name_len]);
	     name_len++)
		;
	if (!isalpha((unsigned char)name[0]) ||
	    (!chat_find(name, name_len) &&
	     (memchr(name, '/', name_len) || memchr(name, '.', name_len)))) {
		/* "/usr/lib is ...": a path, not a command */
		out->kind = CHAT_LINE_TEXT;
		return;
	}
	out->cmd = chat_find(name, name_len);
	out->kind = CHAT_LINE_ERROR;
	if (!out->cmd) {
		snprintf(out->error, sizeof(out->error), "unknown command "
			 "'/%.*s' (see /help; start with // to send a line "
			 "beginning with /)", (int)(name_len > 40 ? 40 :
						    name_len), name);
		return;
	}
	for (p = name + name_len; blank(*p); p++)
		;
	out->arg = p;
	if ((out->cmd->flags & CHAT_F_ARG) && !*p) {
		snprintf(out->error, sizeof(out->error), "usage: /%s %s",
			 out->cmd->name, out->cmd->args);
		return;
	}
	if ((out->cmd->flags & CHAT_F_NOARG) && *p) {
		snprintf(out->error, sizeof(out->error), "/%s takes no "
			 "argument", out->cmd->name);
		return;
	}
	out->kind = CHAT_LINE_COMMAND;
}

/* --- The picker's model ----------------------------------------------- */

static int by_recent(const void *a, const void *b)
{
	const struct picker_row *x = a, *y = b;

	if (x->ci.updated_at != y->ci.updated_at)
		return x->ci.updated_at > y->ci.updated_at ? -1 : 1;
	return strcmp(x->ci.id, y->ci.id);
}

/* Does s hold needle, in any case (ASCII)? */
static int holds(const char *s, const char *needle)
{
	size_t n = strlen(needle), i;

	for (; *s; s++) {
		for (i = 0; i < n && s[i] &&
		     tolower((unsigned char)s[i]) ==
		     tolower((unsigned char)needle[i]); i++)
			;
		if (i == n)
			return 1;
	}
	return !n;
}

static void refilter(struct picker *p)
{
	const struct picker_row *keep = picker_selected(p);
	size_t i;

	p->nvis = 0;
	for (i = 0; i < p->nr; i++) {
		const struct picker_row *r = &p->rows[i];

		if (!p->all && !r->here)
			continue;
		if (*p->filter && !holds(r->ci.title, p->filter) &&
		    !holds(r->ci.id, p->filter))
			continue;
		p->vis[p->nvis++] = i;
	}
	/* keep the selection when still shown, else the first row */
	p->sel = p->nvis ? 1 : 0;
	for (i = 0; keep && i < p->nvis; i++)
		if (&p->rows[p->vis[i]] == keep)
			p->sel = i + 1;
}

void picker_init(struct picker *p, struct picker_row *rows, size_t nr)
{
	memset(p, 0, sizeof(*p));
	p->rows = rows;
	p->nr = nr;
	if (nr)
		qsort(rows, nr, sizeof(*rows), by_recent);
	if (!(p->vis = calloc(nr ? nr : 1, sizeof(size_t))))
		die("out of memory");
	refilter(p);
}

void picker_release(struct picker *p)
{
	free(p->rows);
	free(p->vis);
	memset(p, 0, sizeof(*p));
}

void picker_toggle_all(struct picker *p)
{
	p->all = !p->all;
	refilter(p);
}

void picker_set_filter(struct picker *p, const char *text)
{
	snprintf(p->filter, sizeof(p->filter), "%s", text);
	refilter(p);
}

void picker_move(struct picker *p, long delta)
{
	long s = (long)p->sel + delta;

	if (s < 0)
		s = 0;
	if (s > (long)p->nvis)
		s = (long)p->nvis;
	p->sel = (size_t)s;
}

void picker_page(struct picker *p, long delta)
{
	picker_move(p, delta * PICKER_PAGE);
	/* paging from "new" lands on a row */
	if (delta > 0 && !p->sel && p->nvis)
		p->sel = 1;
}

int picker_select_number(struct picker *p, size_t n)
{
	if (n > p->nvis)
		return -1;
	p->sel = n;
	return 0;
}

size_t picker_page_of(const struct picker *p)
{
	return p->sel ? (p->sel - 1) / PICKER_PAGE : 0;
}

size_t picker_pages(const struct picker *p)
{
	return p->nvis ? (p->nvis + PICKER_PAGE - 1) / PICKER_PAGE : 1;
}

const struct picker_row *picker_selected(const struct picker *p)
{
	if (!p->sel || p->sel > p->nvis || !p->vis)
		return NULL;
	return &p->rows[p->vis[p->sel - 1]];
}
