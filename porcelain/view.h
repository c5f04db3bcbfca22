/*
 * porcelain/view.h - helpers shared by the commands that show sessions
 * to people (show, sessions, status, switch): loading objects, printing
 * untrusted text safely, short ids, dates, and JSON output.
 *
 * Every function dies (fatal:) on errors it cannot report otherwise;
 * the *_try variants return a library error code instead.
 */
#ifndef PORCELAIN_VIEW_H
#define PORCELAIN_VIEW_H

#include <stdio.h>
#include <jansson.h>
#include <aptix.h>
#include <aptix/view.h>

/* Length of the short ids shown to people. */
#define VIEW_SHORT_ID 12

/* The first VIEW_SHORT_ID hex digits of id (4 rotating static slots). */
const char *view_short_id(const aptix_oid *id);

/*
 * Untrusted one-line text (paths, titles, fields): sanitized on a
 * terminal, raw otherwise; a line break shows as "\n" or "\r".
 */
void view_puts(FILE *fp, const char *s);
/* A file path, quoted as git does when it must be (cli_print_path()). */
size_t view_path(FILE *fp, const char *path);
void view_putn(FILE *fp, const char *s, size_t len);
/*
 * Print text line by line, each non-empty line after indent, with a
 * final newline (added when the text lacks one). Nothing for an empty
 * text.
 */
void view_put_indented(FILE *fp, const char *indent, const char *text,
		       size_t len);
/*
 * Print at most max columns of s (one column per UTF-8 character),
 * ending with "..." when it had to be cut; pads with spaces to max when
 * pad is set. Returns the columns written.
 */
size_t view_put_truncated(FILE *fp, const char *s, size_t max, int pad);

/* Colors (empty strings when color is off for fp's descriptor). */
const char *view_color(FILE *fp, const char *code);
#define VIEW_RED "\033[31m"
#define VIEW_GREEN "\033[32m"
#define VIEW_YELLOW "\033[33m"
#define VIEW_BOLD "\033[1m"
#define VIEW_RESET "\033[m"

/*
 * Dates are shown in local time (TZ), as git shows them; --date=<mode>
 * (OPT_DATE) picks another form for the whole command.
 */
enum view_date_mode {
	VIEW_DATE_DEFAULT,	/* "Tue Nov 14 22:13:20 2023 +0100" */
	VIEW_DATE_LOCAL,	/* the same, without the offset */
	VIEW_DATE_ISO,		/* "2023-11-14 22:13:20 +0100" */
	VIEW_DATE_ISO_STRICT,	/* "2023-11-14T22:13:20+01:00" */
	VIEW_DATE_RELATIVE,	/* "3 hours ago" */
	VIEW_DATE_UNIX,		/* "1700000000" */
	VIEW_DATE_SHORT		/* "2023-11-14" */
};
struct option;
/* The --date mode given, or -1: each view's own default. */
extern int view_date_mode;
int view_date_cb(const struct option *opt, const char *arg, int unset);
#define OPT_DATE() OPT_CALLBACK(0, "date", NULL, "format", "show dates " \
	"as default, local, iso, iso-strict, relative, unix or short", \
	view_date_cb)
/* ms in that mode; "-" for 0. */
char *view_format_date(char out[64], int64_t ms, int mode);
/* view_format_date() in the --date mode, else mode. */
#define view_date_as(out, ms, mode) view_format_date(out, ms, \
	view_date_mode >= 0 ? view_date_mode : (mode))
/*
 * "2023-11-14" (with_time: "2023-11-14 22:13 CET"), local time; the
 * --date mode when one was given; "-" for 0.
 */
char *view_date(char out[64], int64_t ms, int with_time);
/* "850 ms", "12.3 s", "4 min 05 s", "2 h 03 min". */
char *view_duration(char out[32], int64_t ms);

/* The id of the session name names; dies when it names anything else. */
void view_resolve_session(aptix_oid *out, aptix_repo *repo, const char *name);
/*
 * aptix_blob_lookup(), aptix_session_lookup(), aptix_turn_lookup() that
 * die (naming the object) when they fail.
 */
/* A purged blob reads as "[purged on <date>: <reason>]". */
void view_read_blob(aptix_buf *out, aptix_repo *repo, const aptix_oid *id);
void view_load_session(aptix_session *out, aptix_repo *repo,
		       const aptix_oid *id);
void view_load_turn(aptix_turn *out, aptix_repo *repo, const aptix_oid *id);

/*
 * The workspace whose conversations a listing shows: APTIX_WORKSPACE or
 * workspace.id when set (*explicit_ws: conversations without a
 * workspace are hidden too), else the derived WorkspaceId of this
 * working copy (conversations that recorded none, made with plumbing,
 * stay visible); NULL when none can be derived. *cfg is opened when it
 * must be read (free it); derived holds the derived id.
 */
const char *view_workspace_scope(aptix_repo *repo, aptix_config **cfg,
				 aptix_buf *derived, int *explicit_ws);
/* Does the scope (ws NULL: all) hold a conversation of workspace conv_ws? */
int view_workspace_holds(const char *ws, int explicit_ws, const char *conv_ws);

/*
 * JSON values; each returns a new reference (json_null() for an absent
 * value) and dies when out of memory.
 */
/* A string; invalid UTF-8 bytes become U+FFFD. */
/* New values; out of memory is fatal. */
json_t *view_json_object(void);
json_t *view_json_array(void);
/* Append v (taking it) to the array a. */
void view_json_append(json_t *a, json_t *v);
json_t *view_json_text(const char *s, size_t len);
json_t *view_json_str(const char *s);
json_t *view_json_id(const aptix_oid *id);	/* null for a zero id */
json_t *view_json_time(int64_t ms);		/* ISO string, null for 0 */
json_t *view_json_int(int64_t v);
/* obj[key] = v, stealing the reference; dies when out of memory. */
void view_json_set(json_t *obj, const char *key, json_t *v);
/* Print v, indented, and a newline to stdout; frees v. */
void view_json_print(json_t *v);

/*
 * A path as git reads a pathspec, relative to the current directory
 * (or absolute), made relative to the top of the work tree as turns
 * record them: "." and ".." resolved, no leading or trailing '/'; ""
 * for the top itself. Malloc'd. A path outside the work tree is kept
 * as given (it matches nothing).
 */
char *view_path_from_cwd(aptix_repo *repo, const char *arg);

#endif
