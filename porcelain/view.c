/*
 * porcelain/view.c - helpers for the commands that show sessions (see
 * view.h).
 */
#ifndef _POSIX_C_SOURCE
# define _POSIX_C_SOURCE 200809L
#endif
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <aptix/config.h>
#include <aptix/workspace.h>
#include "view.h"
#include "cli.h"

const char *view_short_id(const aptix_oid *id)
{
	static char slots[4][VIEW_SHORT_ID + 1];
	static unsigned next;
	char *out = slots[next++ % 4];

	memcpy(out, aptix_oid_hex(id), VIEW_SHORT_ID);
	out[VIEW_SHORT_ID] = '\0';
	return out;
}

void view_putn(FILE *fp, const char *s, size_t len)
{
	cli_print_sanitized(fp, s, len);
}

void view_puts(FILE *fp, const char *s)
{
	if (s)
		cli_print_oneline(fp, s, strlen(s));
}

size_t view_path(FILE *fp, const char *path)
{
	return path ? cli_print_path(fp, path) : 0;
}

void view_put_indented(FILE *fp, const char *indent, const char *text,
		       size_t len)
{
	size_t start = 0, i;

	for (i = 0; i <= len; i++) {
		if (i < len && text[i] != '\n')
			continue;
		if (i == len && i == start)
			break;	/* text ended with a newline */
		if (i > start) {
			fputs(indent, fp);
			cli_print_sanitized(fp, text + start, i - start);
		}
		fputc('\n', fp);
		start = i + 1;
	}
}

size_t view_put_truncated(FILE *fp, const char *s, size_t max, int pad)
{
	const unsigned char *u = (const unsigned char *)s;
	size_t len = strlen(s), i = 0, cols = 0, n, end;

	/* does it fit? */
	while (i < len && cols <= max) {
		n = aptix_utf8_seqlen(u + i, len - i);
		i += n ? n : 1;
		cols++;
	}
	if (cols <= max) {
		cli_print_sanitized(fp, s, len);
		end = cols;
	} else {
		size_t keep = max > 3 ? max - 3 : 0;

		for (i = 0, cols = 0; cols < keep; cols++) {
			n = aptix_utf8_seqlen(u + i, len - i);
			i += n ? n : 1;
		}
		cli_print_sanitized(fp, s, i);
		fputs(max >= 3 ? "..." : "", fp);
		end = cols + (max >= 3 ? 3 : 0);
	}
	for (; pad && end < max; end++)
		fputc(' ', fp);
	return end;
}

const char *view_color(FILE *fp, const char *code)
{
	int fd = fileno(fp);

	return fd >= 0 && cli_color_enabled(fd) ? code : "";
}

int view_date_mode = -1;

static const char *const date_modes[] = {
	[VIEW_DATE_DEFAULT] = "default",
	[VIEW_DATE_LOCAL] = "local",
	[VIEW_DATE_ISO] = "iso",
	[VIEW_DATE_ISO_STRICT] = "iso-strict",
	[VIEW_DATE_RELATIVE] = "relative",
	[VIEW_DATE_UNIX] = "unix",
	[VIEW_DATE_SHORT] = "short",
};

int view_date_cb(const struct option *opt, const char *arg, int unset)
{
	size_t i;

	(void)opt;
	if (unset) {
		view_date_mode = -1;
		return 0;
	}
	if (!strcmp(arg, "iso8601"))
		arg = "iso";
	else if (!strcmp(arg, "iso8601-strict"))
		arg = "iso-strict";
	for (i = 0; i < sizeof(date_modes) / sizeof(*date_modes); i++)
		if (!strcmp(arg, date_modes[i])) {
			view_date_mode = (int)i;
			return 0;
		}
	return error("unknown date format '%s': expected default, local, "
		     "iso, iso-strict, relative, unix or short", arg);
}

/* Minutes east of UTC of the local time lt, whose UTC time is ut. */
static long utc_offset(const struct tm *lt, const struct tm *ut)
{
	long days = lt->tm_year != ut->tm_year ?
		(lt->tm_year > ut->tm_year ? 1 : -1) :
		lt->tm_yday - ut->tm_yday;

	return days * 1440 + (lt->tm_hour - ut->tm_hour) * 60 +
		(lt->tm_min - ut->tm_min);
}

/* "3 hours ago", as git's --date=relative. */
static void date_relative(char out[64], int64_t ms)
{
	int64_t diff = (aptix_now_ms() - ms) / 1000;
	long long n;

	if (diff < 0) {
		snprintf(out, 64, "in the future");
		return;
	}
	if (diff < 90) {
		snprintf(out, 64, "%lld second%s ago", (long long)diff,
			 diff == 1 ? "" : "s");
		return;
	}
	diff = (diff + 30) / 60;	/* minutes */
	if (diff < 90) {
		snprintf(out, 64, "%lld minutes ago", (long long)diff);
		return;
	}
	diff = (diff + 30) / 60;	/* hours */
	if (diff < 36) {
		snprintf(out, 64, "%lld hours ago", (long long)diff);
		return;
	}
	diff = (diff + 12) / 24;	/* days */
	if (diff < 14)
		snprintf(out, 64, "%lld days ago", (long long)diff);
	else if (diff < 70)
		snprintf(out, 64, "%lld weeks ago", (long long)(diff + 3) / 7);
	else if (diff < 365)
		snprintf(out, 64, "%lld months ago",
			 (long long)(diff + 15) / 30);
	else if (diff < 1825) {
		n = (long long)(diff * 12 + 182) / 365;	/* months */
		if (n % 12)
			snprintf(out, 64, "%lld year%s, %lld month%s ago",
				 n / 12, n / 12 == 1 ? "" : "s", n % 12,
				 n % 12 == 1 ? "" : "s");
		else
			snprintf(out, 64, "%lld years ago", n / 12);
	} else
		snprintf(out, 64, "%lld years ago",
			 (long long)(diff + 183) / 365);
}

char *view_format_date(char out[64], int64_t ms, int mode)
{
	time_t secs = (time_t)(ms / 1000);
	struct tm lt, ut;
	char zone[32];
	long off;
	size_t n;
	static int tz_read;

	if (!tz_read) {
		tzset();	/* localtime_r() need not read TZ itself */
		tz_read = 1;
	}
	if (ms <= 0 || !localtime_r(&secs, &lt) || !gmtime_r(&secs, &ut)) {
		snprintf(out, 64, "-");
		return out;
	}
	off = utc_offset(&lt, &ut);
	snprintf(zone, sizeof(zone), "%c%02ld%02ld", off < 0 ? '-' : '+',
		 labs(off) / 60, labs(off) % 60);
	switch (mode) {
	case VIEW_DATE_UNIX:
		snprintf(out, 64, "%lld", (long long)secs);
		return out;
	case VIEW_DATE_RELATIVE:
		date_relative(out, ms);
		return out;
	case VIEW_DATE_SHORT:
		n = strftime(out, 64, "%Y-%m-%d", &lt);
		break;
	case VIEW_DATE_ISO:
		n = strftime(out, 64, "%Y-%m-%d %H:%M:%S ", &lt);
		if (n)
			snprintf(out + n, 64 - n, "%s", zone);
		break;
	case VIEW_DATE_ISO_STRICT:
		n = strftime(out, 64, "%Y-%m-%dT%H:%M:%S", &lt);
		if (n && !off)
			snprintf(out + n, 64 - n, "Z");
		else if (n)
			snprintf(out + n, 64 - n, "%.3s:%s", zone, zone + 3);
		break;
	case VIEW_DATE_LOCAL:
		n = strftime(out, 64, "%a %b %e %H:%M:%S %Y", &lt);
		break;
	default:
		n = strftime(out, 64, "%a %b %e %H:%M:%S %Y ", &lt);
		if (n)
			snprintf(out + n, 64 - n, "%s", zone);
		break;
	}
	if (!n)
		snprintf(out, 64, "-");
	return out;
}

char *view_date(char out[64], int64_t ms, int with_time)
{
	time_t secs = (time_t)(ms / 1000);
	struct tm tm;

	if (view_date_mode >= 0 || ms <= 0)
		return view_format_date(out, ms, view_date_mode >= 0 ?
					view_date_mode : VIEW_DATE_SHORT);
	if (!localtime_r(&secs, &tm)) {
		snprintf(out, 64, "-");
		return out;
	}
	if (!strftime(out, 64, with_time ? "%Y-%m-%d %H:%M %Z" :
		      "%Y-%m-%d", &tm))
		snprintf(out, 64, "-");
	return out;
}

char *view_duration(char out[32], int64_t ms)
{
	if (ms < 0)
		ms = 0;
	if (ms < 1000)
		snprintf(out, 32, "%" PRId64 " ms", ms);
	else if (ms < 60000)
		snprintf(out, 32, "%" PRId64 ".%" PRId64 " s", ms / 1000,
			 ms % 1000 / 100);
	else if (ms < 3600000)
		snprintf(out, 32, "%" PRId64 " min %02" PRId64 " s",
			 ms / 60000, ms / 1000 % 60);
	else
		snprintf(out, 32, "%" PRId64 " h %02" PRId64 " min",
			 ms / 3600000, ms / 60000 % 60);
	return out;
}

void view_resolve_session(aptix_oid *out, aptix_repo *repo, const char *name)
{
	aptix_otype type;
	size_t size;

	if (aptix_revparse(out, repo, name) < 0 ||
	    aptix_odb_read_header(&size, &type, aptix_repo_odb(repo), out) < 0)
		die_aptix();
	if (type != APTIX_OBJ_SESSION)
		die("'%s' is a %s, not a session", name,
		    aptix_otype_name(type) ? aptix_otype_name(type) :
		    "bad object");
}

void view_read_blob(aptix_buf *out, aptix_repo *repo, const aptix_oid *id)
{
	/* what aptix purge removed is shown as such, not fatal */
	if (aptix_view_blob_text(out, repo, id) < 0)
		die_aptix();
}

void view_load_session(aptix_session *out, aptix_repo *repo,
		       const aptix_oid *id)
{
	if (aptix_session_lookup(out, repo, id) < 0)
		die_aptix();
}

void view_load_turn(aptix_turn *out, aptix_repo *repo, const aptix_oid *id)
{
	if (aptix_turn_lookup(out, repo, id) < 0)
		die_aptix();
}

static json_t *check(json_t *v)
{
	if (!v)
		die("out of memory");
	return v;
}

json_t *view_json_text(const char *s, size_t len)
{
	return check(aptix_view_text(s, len));
}

json_t *view_json_str(const char *s)
{
	return check(aptix_view_str(s));
}

json_t *view_json_id(const aptix_oid *id)
{
	return check(aptix_view_id(id));
}

json_t *view_json_time(int64_t ms)
{
	return check(aptix_view_time(ms));
}

json_t *view_json_int(int64_t v)
{
	return check(json_integer((json_int_t)v));
}

void view_json_set(json_t *obj, const char *key, json_t *v)
{
	if (json_object_set_new(obj, key, check(v)) < 0)
		die("out of memory");
}

void view_json_print(json_t *v)
{
	char *s = json_dumps(v, JSON_INDENT(2) | JSON_ENCODE_ANY |
			     JSON_REAL_PRECISION(10));

	if (!s)
		die("out of memory");
	else
		/* the JSON escapes C0 controls; on a terminal, C1 too */
		cli_print_sanitized(stdout, s, strlen(s));
	fputc('\n', stdout);
	free(s);
	json_decref(v);
}

json_t *view_json_object(void)
{
	json_t *o = json_object();

	if (!o)
		die("out of memory");
	return o;
}

json_t *view_json_array(void)
{
	json_t *a = json_array();

	if (!a)
		die("out of memory");
	return a;
}

void view_json_append(json_t *a, json_t *v)
{
	if (!v || json_array_append_new(a, v) < 0)
		die("out of memory");
}

/*
 * The workspace to list: APTIX_WORKSPACE or workspace.id when set
 * (explicit: conversations without a workspace are hidden too), else the
 * derived WorkspaceId of this working copy (conversations that recorded
 * none, made with plumbing, stay visible).
 */
const char *view_workspace_scope(aptix_repo *repo, aptix_config **cfg,
				 aptix_buf *derived, int *explicit_ws)
{
	const char *ws = getenv("APTIX_WORKSPACE");

	*explicit_ws = 1;
	if (ws && *ws)
		return ws;
	if (aptix_config_open(cfg, repo) < 0)
		die_aptix();
	ws = aptix_config_get(*cfg, "workspace.id");
	if (ws && *ws)
		return ws;
	*explicit_ws = 0;
	/*
	 * the WorkspaceId the store recorded at init: the store's, not the
	 * directory's, so that moving or copying the work tree, or opening
	 * it in another container, hides nothing; a store too old to have
	 * recorded one lists every conversation (NULL)
	 */
	(void)derived;
	return aptix_repo_workspace(repo);
}

int view_workspace_holds(const char *ws, int explicit_ws, const char *conv_ws)
{
	return !ws || !strcmp(conv_ws, ws) || (!explicit_ws && !*conv_ws);
}

/* Resolve "." and ".." components of a '/'-separated path in place. */
static void squash_dots(char *p)
{
	char *out = p, *in = p, *seg;
	size_t n;

	while (*in) {
		while (*in == '/')
			in++;
		seg = in;
		while (*in && *in != '/')
			in++;
		n = (size_t)(in - seg);
		if (!n || (n == 1 && seg[0] == '.'))
			continue;
		if (n == 2 && seg[0] == '.' && seg[1] == '.') {
			while (out > p && out[-1] != '/')
				out--;
			if (out > p)
				out--;
			continue;
		}
		if (out > p)
			*out++ = '/';
		memmove(out, seg, n);
		out += n;
	}
	*out = '\0';
}

char *view_path_from_cwd(aptix_repo *repo, const char *arg)
{
	const char *top = aptix_repo_workdir(repo);
	char *root = top ? realpath(top, NULL) : NULL;
	char *cwd = realpath(".", NULL);
	aptix_buf b = APTIX_BUF_INIT;
	size_t rlen = root ? strlen(root) : 0;

	if (arg[0] == '/')
		aptix_buf_puts(&b, arg);
	else if (cwd)
		aptix_buf_printf(&b, "%s/%s", cwd, arg);
	else
		aptix_buf_puts(&b, arg);
	if (aptix_buf_oom(&b))
		die("out of memory");
	squash_dots(b.ptr);
	/* squash_dots dropped the leading '/': the root's too */
	if (root && (arg[0] == '/' || cwd)) {
		const char *r = root + (root[0] == '/');

		rlen = strlen(r);
		if (!strcmp(b.ptr, r))
			b.ptr[0] = '\0';
		else if (!rlen || (!strncmp(b.ptr, r, rlen) &&
				   b.ptr[rlen] == '/'))
			memmove(b.ptr, b.ptr + rlen + (rlen != 0),
				strlen(b.ptr + rlen + (rlen != 0)) + 1);
		else {
			aptix_buf_clear(&b);
			aptix_buf_puts(&b, arg);	/* outside */
		}
	}
	free(root);
	free(cwd);
	if (aptix_buf_oom(&b))
		die("out of memory");
	return aptix_buf_detach(&b);
}
