/*
 * porcelain/export.c - aptix export: a conversation, a session's line of
 * history, a range or the whole store written as session.md, lossless
 * JSON or markdown (aptix/export.h).
 *
 * What is exported is a walk, oldest first: a conversation is its head
 * and every ancestor (a fork's starts in its parent conversation), a
 * session the same from it, A..B what B has that A has not, --all every
 * session. JSON and markdown take the failed attempts beside them too;
 * session.md is the line of committed turns only. With -o the output
 * goes to a temporary file beside <file>, renamed over it only when all
 * of it was written: an error never leaves half a file.
 */
#include <aptix.h>
#include <aptix/export.h>
#include <aptix/refs.h>
#include <aptix/revparse.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "cli.h"
#include "commands.h"
#include "parse-options.h"

static const char *const export_usage[] = {
	"aptix export [--format=<format>] [-o <file>] "
	"[--all | <conversation> | <session> | <a>..<b>]",
	"",
	"<format> is session-md (seed 004's session.md), json (lossless: aptix",
	"import json reads it back into the same ids) or markdown (the",
	"default). Without a name, the current conversation.",
	NULL
};

struct export_cli {
	aptix_repo *repo;
	aptix_exporter *ex;
	int fmt;
	FILE *out;
};

static int write_cb(const void *data, size_t len, void *payload)
{
	struct export_cli *c = payload;

	if (fwrite(data, 1, len, c->out) != len) {
		aptix_error_set(APTIX_ERROR_OS, "cannot write the export: %s",
				strerror(errno));
		return APTIX_ERROR;
	}
	return 0;
}

static void walk_new(aptix_revwalk **w, const struct export_cli *c,
		     unsigned extra)
{
	if (aptix_revwalk_new(w, c->repo) < 0 ||
	    aptix_revwalk_sorting(*w, APTIX_SORT_TOPOLOGICAL |
				  APTIX_SORT_REVERSE) < 0)
		die_aptix();
	aptix_revwalk_set_flags(*w, extra | (c->fmt == APTIX_EXPORT_SESSION_MD ?
					     0 : APTIX_REVWALK_FAILED));
}

static void run_walk(struct export_cli *c, aptix_revwalk *w)
{
	if (aptix_exporter_add_walk(c->ex, w) < 0)
		die_aptix();
	aptix_revwalk_free(w);
}

/* The tip's conversation's ref, when it names the tip. */
static void add_tip_ref(struct export_cli *c, const aptix_oid *tip)
{
	aptix_session s;
	aptix_buf ref = APTIX_BUF_INIT;
	aptix_oid at;

	aptix_session_init(&s);
	if (aptix_session_lookup(&s, c->repo, tip) < 0)
		die_aptix();
	aptix_buf_printf(&ref, "%s%s", APTIX_CONV_PREFIX, s.conversation);
	if (aptix_buf_oom(&ref))
		die("out of memory");
	if (aptix_ref_resolve(&at, NULL, c->repo, ref.ptr) == 0 &&
	    !aptix_oid_cmp(&at, tip) &&
	    aptix_exporter_add_ref(c->ex, ref.ptr, tip) < 0)
		die_aptix();
	aptix_error_clear();
	aptix_buf_release(&ref);
	aptix_session_release(&s);
}

static void resolve_session(aptix_oid *id, struct export_cli *c,
			    const char *name)
{
	int r = aptix_revparse(id, c->repo, name);

	if (r == APTIX_ENOTFOUND || r == APTIX_EINVALID)
		die("unknown conversation or session '%s'", name);
	if (r < 0)
		die_aptix();
}

/* One name: a conversation (its head), a session, or A..B. */
static void export_one(struct export_cli *c, const char *name)
{
	char conv[APTIX_CONV_MAXLEN + 1];
	const char *dots = strstr(name, "..");
	aptix_revwalk *w;
	aptix_oid tip, from;
	char *left;
	int r;

	walk_new(&w, c, 0);
	if (dots) {
		if (!(left = strndup(name, (size_t)(dots - name))))
			die("out of memory");
		resolve_session(&from, c, *left ? left : "HEAD");
		free(left);
		resolve_session(&tip, c, dots[2] ? dots + 2 : "HEAD");
		if (aptix_revwalk_hide(w, &from) < 0)
			die_aptix();
	} else if ((r = aptix_conv_resolve(conv, c->repo, name)) == 0) {
		aptix_buf ref = APTIX_BUF_INIT;

		aptix_buf_printf(&ref, "%s%s", APTIX_CONV_PREFIX, conv);
		if (aptix_buf_oom(&ref))
			die("out of memory");
		if (aptix_ref_resolve(&tip, NULL, c->repo, ref.ptr) < 0)
			die("conversation '%s' has no committed turn", conv);
		aptix_buf_release(&ref);
	} else if (r == APTIX_EAMBIGUOUS) {
		die_aptix();
	} else {
		aptix_error_clear();
		resolve_session(&tip, c, name);
	}
	if (aptix_revwalk_push(w, &tip) < 0)
		die_aptix();
	run_walk(c, w);
	add_tip_ref(c, &tip);
}

static int each_ref(const aptix_ref *ref, void *payload)
{
	struct export_cli *c = payload;
	aptix_revwalk *w;

	if (ref->target)
		return 0;
	if (c->fmt == APTIX_EXPORT_MARKDOWN) {
		walk_new(&w, c, 0);
		if (aptix_revwalk_push(w, &ref->oid) < 0)
			return APTIX_ERROR;
		run_walk(c, w);
	}
	return aptix_exporter_add_ref(c->ex, ref->name, &ref->oid);
}

static void export_all(struct export_cli *c)
{
	aptix_revwalk *w;

	if (c->fmt == APTIX_EXPORT_SESSION_MD)
		die("session-md holds one conversation: name it instead of "
		    "--all");
	if (c->fmt == APTIX_EXPORT_JSON) {
		walk_new(&w, c, APTIX_REVWALK_ARCHIVED);
		if (aptix_revwalk_push_all(w) < 0)
			die_aptix();
		run_walk(c, w);
	}
	if (aptix_ref_foreach(c->repo, APTIX_CONV_PREFIX, each_ref, c) < 0)
		die_aptix();
}

/* -o: a temporary file beside path, renamed over it at the end. */
static char *open_output(struct export_cli *c, const char *path)
{
	size_t n = strlen(path);
	char *tmp = malloc(n + 16);
	int fd;

	if (!tmp)
		die("out of memory");

	snprintf(tmp, n + 16, "%s.tmp-XXXXXX", path);
	if ((fd = mkstemp(tmp)) < 0)
		die_errno("cannot create '%s'", path);
	if (!(c->out = fdopen(fd, "w"))) {
		close(fd);
		unlink(tmp);
		die_errno("cannot open '%s'", path);
	}
	return tmp;
}

static void close_output(struct export_cli *c, char *tmp, const char *path)
{
	int bad = ferror(c->out) | fflush(c->out) | fsync(fileno(c->out));

	if (fclose(c->out) || bad) {
		unlink(tmp);
		die_errno("cannot write '%s'", path);
	}
	if (rename(tmp, path) < 0) {
		int e = errno;

		unlink(tmp);
		errno = e;
		die_errno("cannot rename the export to '%s'", path);
	}
	free(tmp);
}

/* A fatal error with -o: the temporary file goes first. */
static char *pending_tmp;

static void drop_tmp(void)
{
	if (pending_tmp)
		unlink(pending_tmp);
}

int cmd_export(int argc, const char **argv, struct aptix_repo *repo)
{
	struct export_cli c = { repo, NULL, APTIX_EXPORT_MARKDOWN, stdout };
	const char *format = "markdown", *output = NULL;
	int all = 0;
	struct option options[] = {
		OPT_STRING(0, "format", &format, "format",
			   "session-md, json or markdown"),
		OPT_STRING('o', "output", &output, "file",
			   "write to <file> instead of stdout"),
		OPT_BOOL(0, "all", &all, "every conversation"),
		OPT_END()
	};

	argc = parse_options(argc, argv, options, export_usage, 0);
	if (argc > 1 || (all && argc))
		usage_with_options(export_usage, options);
	if ((c.fmt = aptix_export_format_from_name(format)) < 0)
		die("unknown format '%s' (session-md, json, markdown)",
		    format);
	if (aptix_exporter_new(&c.ex, repo, (aptix_export_format)c.fmt,
			       write_cb, &c) < 0)
		die_aptix();
	if (output && strcmp(output, "-")) {
		pending_tmp = open_output(&c, output);
		atexit(drop_tmp);
	}
	if (all)
		export_all(&c);
	else
		export_one(&c, argc ? argv[0] : "HEAD");
	if (aptix_exporter_finish(c.ex) < 0)
		die_aptix();
	aptix_exporter_free(c.ex);
	if (pending_tmp) {
		close_output(&c, pending_tmp, output);
		pending_tmp = NULL;
	}
	return 0;
}
