/*
 * porcelain/sessions.c - aptix sessions: the conversations, most
 * recently updated first, one per line, '*' marking HEAD's.
 *
 * Only the conversations of this workspace are listed unless
 * --all-workspaces: APTIX_WORKSPACE or workspace.id when set, else the
 * WorkspaceId the store recorded when it was made.
 */
#ifndef _POSIX_C_SOURCE
# define _POSIX_C_SOURCE 200809L
#endif
#include <ctype.h>
#include <limits.h>
#include <sys/ioctl.h>
#include <unistd.h>
#include <stdlib.h>
#include <string.h>
#include <aptix/config.h>
#include <aptix/workspace.h>

#include "view.h"
#include "cli.h"
#include "commands.h"
#include "parse-options.h"

static const char *const sessions_usage[] = {
	"aptix sessions [--json] [--all-workspaces | --workspace <id>] "
	"[-n <n>]",
	"               [--archived | --include-archived] [--status <s>] "
	"[--grep <text>]",
	"               [--date=<format>]",
	"",
	"Lists the conversations, most recently updated first; '*' marks",
	"the current one (HEAD's). Archived ones are hidden unless asked.",
	"'aptix conversation list' is the same listing.",
	NULL
};

/* Width of a line, the title being cut to fit. */
#define LINE_WIDTH 72
/* The title keeps at least this many columns. */
#define TITLE_MIN 16

struct conv_row {
	aptix_conv_info ci;	/* its summary record: one read per row */
	int64_t when;		/* updated_at, or when an empty fork was made */
	char date[64];		/* when, as the date column shows it */
};

struct rows {
	struct conv_row *v;
	size_t nr, alloc;
};

static void add_row(struct rows *rows, const aptix_conv_info *ci)
{
	rows->v = cli_grow(rows->v, &rows->alloc, rows->nr, sizeof(*rows->v));
	memset(&rows->v[rows->nr], 0, sizeof(rows->v[0]));
	rows->v[rows->nr].ci = *ci;
	rows->v[rows->nr++].when = ci->updated_at;
}

static int collect_conv(const aptix_conv_info *ci, void *payload)
{
	add_row(payload, ci);
	return 0;
}

/* Most recently updated first; then by id, for a stable order. */
static int by_updated(const void *a, const void *b)
{
	const struct conv_row *x = a, *y = b;

	if (x->when != y->when)
		return x->when > y->when ? -1 : 1;
	return strcmp(x->ci.id, y->ci.id);
}

static int newest_entry(const aptix_reflog_entry *e, void *payload)
{
	*(int64_t *)payload = e->time_ms;
	return 1;	/* newest first: the first is the one */
}

/*
 * Whether the date column of ms is ten characters (the default format,
 * a four-digit year in any time zone): the column's width over every
 * conversation, without formatting the dates of those not shown.
 */
static int date_is_ten(int64_t ms)
{
	return view_date_mode < 0 && ms > 0 && ms < INT64_C(221845392000000);
}

/*
 * A conversation without a turn of its own (a fork not continued yet)
 * dates from when its ref was last written: where the fork was made,
 * not the end of the list.
 */
static void reflog_dates(struct rows *rows, aptix_repo *repo)
{
	aptix_buf ref = APTIX_BUF_INIT;
	size_t i;

	for (i = 0; i < rows->nr; i++) {
		struct conv_row *row = &rows->v[i];

		aptix_buf_clear(&ref);
		aptix_buf_printf(&ref, "refs/conversations/%s", row->ci.id);
		if (aptix_buf_oom(&ref))
			die("out of memory");
		if (aptix_reflog_foreach(repo, ref.ptr, newest_entry,
					 &row->when) < 0)
			aptix_error_clear();
	}
	aptix_buf_release(&ref);
}

/* The width of the date column of the rows shown. */
static int date_width(struct rows *rows)
{
	size_t i;
	int n, width = 0;

	for (i = 0; i < rows->nr; i++) {
		struct conv_row *row = &rows->v[i];

		if (date_is_ten(row->when)) {
			n = 10;		/* formatted when shown */
		} else {
			view_date(row->date, row->when, 0);
			n = (int)strlen(row->date);
		}
		if (n > width)
			width = n;
	}
	return width;
}

static int atoi_safe(const char *s)
{
	long v = strtol(s, NULL, 10);

	return v > 0 && v < 10000 ? (int)v : 0;
}

/*
 * Titles fill $COLUMNS or the terminal's width; not on a terminal, they
 * are printed whole (scripts want --json anyway).
 */
static int line_width(void)
{
	static int width = -1;
	struct winsize ws;
	const char *env;

	if (width >= 0)
		return width;
	width = 0;
	if ((env = getenv("COLUMNS")) && atoi_safe(env) > 20)
		width = atoi_safe(env);
	else if (!isatty(1))
		width = 0;
	else if (ioctl(1, TIOCGWINSZ, &ws) == 0 && ws.ws_col > 20)
		width = ws.ws_col;
	else
		width = LINE_WIDTH;
	return width;
}


static void print_row(const struct conv_row *row, int current,
		      int date_width)
{
	const aptix_conv_info *ci = &row->ci;
	const char *green = view_color(stdout, VIEW_GREEN);
	const char *red = view_color(stdout, VIEW_RED);
	const char *reset = *green ? VIEW_RESET : "";
	const char *status = ci->turns ?
		aptix_session_status_name(ci->last_status) : "new";
	int cols = 0, n;

	if (current)
		printf("%s* ", green);
	else
		printf("  ");
	cols += 2;
	/* ids are [A-Za-z0-9._-]: safe to print as they are */
	/* turns: the committed ones, as show numbers them */
	n = printf("%-8.8s  %-*s  %3lu turn%s  ", ci->id, date_width,
		   row->date,
		   (unsigned long)ci->committed,
		   ci->committed == 1 ? " " : "s");
	cols += n > 0 ? n : 0;
	if (current)
		printf("%s", reset);
	if (ci->last_status == APTIX_SESSION_FAILED && ci->turns)
		printf("%s", red);
	n = printf("%-9s", status);
	if (ci->last_status == APTIX_SESSION_FAILED && ci->turns)
		printf("%s", reset);
	cols += (n > 0 ? n : 0) + 2;
	printf("  ");
	if (*ci->title && !line_width())
		view_put_truncated(stdout, ci->title, strlen(ci->title), 0);
	else if (*ci->title)
		view_put_truncated(stdout, ci->title,
				   cols + TITLE_MIN < line_width() - 1 ?
				   (size_t)(line_width() - 1 - cols) :
				   TITLE_MIN, 0);
	else
		printf("(no title)");
	putchar('\n');
}

/* The conversation summary (Documentation/json.md), and "current". */
static json_t *row_json(const struct conv_row *row, int current)
{
	json_t *o = aptix_view_conversation(&row->ci);

	if (!o)
		die("out of memory");
	view_json_set(o, "current", json_boolean(current));
	return o;
}

/* Does text hold needle, ignoring ASCII case? */
static int has_text(const char *text, const char *needle)
{
	size_t n = strlen(needle), i;

	for (; *text; text++) {
		for (i = 0; i < n && text[i]; i++)
			if (tolower((unsigned char)text[i]) !=
			    tolower((unsigned char)needle[i]))
				break;
		if (i == n)
			return 1;
	}
	return !n;
}

struct filter {
	int archived;		/* 0 hide, 1 only, 2 both */
	const char *status;	/* committed, failed, new */
	const char *grep;	/* in the id or the title */
};

static int filtered_out(const struct filter *f, const aptix_conv_info *ci)
{
	const char *status = ci->turns ?
		aptix_session_status_name(ci->last_status) : "new";

	if ((f->archived == 0 && ci->archived) ||
	    (f->archived == 1 && !ci->archived))
		return 1;
	if (f->status && strcmp(f->status, status))
		return 1;
	return f->grep && !has_text(ci->id, f->grep) &&
		!has_text(ci->title, f->grep);
}

/*
 * The listing, newest first, read as it is shown (the library's recency
 * order: a page costs what it shows). Conversations with no update time
 * (forks not continued) are dated by their ref and merged in where that
 * date puts them.
 */
struct listing {
	const struct filter *f;
	const char *ws;
	int explicit_ws;
	unsigned long limit;
	struct rows shown;
	size_t hidden;
	struct rows undated;	/* by when, newest first */
	size_t next;		/* the first of them not placed yet */
};

/* row in the listing: 0, or APTIX_ITEROVER once it is full. */
static int place(struct listing *l, const struct conv_row *row)
{
	if (filtered_out(l->f, &row->ci))
		return 0;
	if (!view_workspace_holds(l->ws, l->explicit_ws,
				  row->ci.workspace)) {
		l->hidden++;
		return 0;
	}
	if (l->shown.nr >= l->limit)
		return APTIX_ITEROVER;
	add_row(&l->shown, &row->ci);
	l->shown.v[l->shown.nr - 1].when = row->when;
	return 0;
}

/* The undated rows that come before row (NULL: all that are left). */
static int place_undated(struct listing *l, const struct conv_row *row)
{
	int r = 0;

	while (!r && l->next < l->undated.nr &&
	       (!row || by_updated(&l->undated.v[l->next], row) < 0))
		r = place(l, &l->undated.v[l->next++]);
	return r;
}

static int listed_cb(const aptix_conv_info *ci, void *payload)
{
	struct listing *l = payload;
	struct conv_row row;
	int r;

	if (ci->updated_at <= 0)
		return APTIX_ITEROVER;	/* the undated: placed already */
	memset(&row, 0, sizeof(row));
	row.ci = *ci;
	row.when = ci->updated_at;
	if ((r = place_undated(l, &row)) != 0)
		return r;
	return place(l, &row);
}

static void list_conversations(struct listing *l, aptix_repo *repo)
{
	aptix_conv_info undated;
	int r;

	/* those with no update time come last in the library's order */
	memset(&undated, 0, sizeof(undated));
	if (aptix_index_conversations_by_recency(repo, &undated, collect_conv,
						 &l->undated) < 0)
		die_aptix();
	reflog_dates(&l->undated, repo);
	if (l->undated.nr)
		qsort(l->undated.v, l->undated.nr, sizeof(*l->undated.v),
		      by_updated);
	r = aptix_index_conversations_by_recency(repo, NULL, listed_cb, l);
	if (r == 0)
		r = place_undated(l, NULL);
	if (r < 0 && r != APTIX_ITEROVER)
		die_aptix();
}

int cmd_sessions(int argc, const char **argv, struct aptix_repo *repo)
{
	int json = 0, all_ws = 0, explicit_ws = 0, only_arch = 0, inc_arch = 0;
	const char *want_ws = NULL;
	struct filter f = { 0, NULL, NULL };
	aptix_buf derived = APTIX_BUF_INIT;
	unsigned long limit = ULONG_MAX;
	struct listing l;
	aptix_config *cfg = NULL;
	char cur[APTIX_CONV_MAXLEN + 1];
	const char *ws = NULL;
	size_t i;
	int width = 0;
	json_t *arr = NULL;
	struct option options[] = {
		OPT_BOOL(0, "json", &json, "print a JSON array"),
		OPT_BOOL(0, "all-workspaces", &all_ws,
			 "list the conversations of every workspace"),
		OPT_STRING(0, "workspace", &want_ws, "id",
			   "list the conversations of this workspace"),
		OPT_ULONG('n', "max-count", &limit,
			  "list at most <n> conversations"),
		OPT_BOOL(0, "archived", &only_arch,
			 "list only the archived conversations"),
		OPT_BOOL(0, "include-archived", &inc_arch,
			 "list the archived conversations too"),
		OPT_STRING(0, "status", &f.status, "status",
			   "only those whose last turn is committed or "
			   "failed, or new ones"),
		OPT_STRING(0, "grep", &f.grep, "text",
			   "only those whose id or title holds the text"),
		OPT_DATE(),
		OPT_END()
	};

	parse_options(argc, argv, options, sessions_usage, PARSE_OPT_NO_ARGS);
	if (f.status && strcmp(f.status, "committed") &&
	    strcmp(f.status, "failed") && strcmp(f.status, "new"))
		die("invalid --status '%s': expected committed, failed or new",
		    f.status);
	if (only_arch && inc_arch)
		die("options '--archived' and '--include-archived' cannot be "
		    "used together");
	f.archived = only_arch ? 1 : inc_arch ? 2 : 0;
	if (want_ws) {
		ws = want_ws;
		explicit_ws = 1;
	} else if (!all_ws) {
		ws = view_workspace_scope(repo, &cfg, &derived,
					 &explicit_ws);
	}
	if (aptix_conv_resolve(cur, repo, "HEAD") < 0) {
		*cur = '\0';	/* HEAD names no conversation */
		aptix_error_clear();
	}

	memset(&l, 0, sizeof(l));
	l.f = &f;
	l.ws = ws;
	l.explicit_ws = explicit_ws;
	l.limit = limit;
	list_conversations(&l, repo);
	width = date_width(&l.shown);

	if (json && !(arr = json_array()))
		die("out of memory");
	for (i = 0; i < l.shown.nr; i++) {
		struct conv_row *row = &l.shown.v[i];
		int current = !strcmp(row->ci.id, cur);

		if (!row->date[0])
			view_date(row->date, row->when, 0);
		if (!json)
			print_row(row, current, width);
		else if (json_array_append_new(arr, row_json(row, current)))
			die("out of memory");
	}
	if (json)
		view_json_print(arr);
	else if (!l.shown.nr && l.hidden) {
		fprintf(stderr, "No conversation in workspace '");
		view_puts(stderr, ws);
		fprintf(stderr, "' (%lu in others: see --all-workspaces).\n",
			(unsigned long)l.hidden);
	}

	free(l.shown.v);
	free(l.undated.v);
	aptix_config_free(cfg);
	return 0;
}
