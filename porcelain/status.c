/*
 * porcelain/status.c - aptix status: where am I?
 *
 * The current conversation and its head, the turns in flight in the
 * store (or left behind by a dead process), and the last failed turn of
 * the current conversation when it came after the head, with a hint to
 * run it again; then the active files of the workspace (git's dirty
 * files) with what the next turn would do with each: send it, leave it
 * out as unchanged in the response chain, or skip it (too large,
 * binary, unreadable).
 */
#ifndef _POSIX_C_SOURCE
# define _POSIX_C_SOURCE 200809L
#endif
#include <stdlib.h>
#include <string.h>
#include <aptix/run.h>
#include <time.h>
#include <aptix/workspace.h>

#include "view.h"
#include "pretty.h"
#include "cli.h"
#include "commands.h"
#include "parse-options.h"

static const char *const status_usage[] = {
	"aptix status [-s | --porcelain] [-b] [--json] [--date=<format>] "
	"[--file <path>]... [--files-from <file>]",
	"",
	"Shows the current conversation and its head, the turns running",
	"now, the last failed turn of the conversation, and the active",
	"files with what the next turn would do with each: the files git",
	"reports modified, staged or untracked, and those named with --file",
	"or --files-from (paths relative to the current directory).",
	NULL
};

struct running {
	aptix_running_info info;
	char summary[APTIX_SUMMARY_MAX + 1];
	int has_summary;
};

struct status {
	aptix_repo *repo;
	/* HEAD */
	char conv[APTIX_CONV_MAXLEN + 1];
	int on_conv;
	char *head_target;		/* HEAD's target when not a conv */
	aptix_oid detached;
	int is_detached;
	/* the conversation */
	char title[APTIX_SUMMARY_MAX + 1];
	aptix_session_info head;
	int has_head;
	/* the last failed turn after the head */
	aptix_session_info failed;
	int has_failed;
	char **errors;
	size_t nerrors;
	aptix_turn failed_turn;
	int has_failed_turn;
	/* turns in flight */
	struct running *run;
	size_t nrun, allocrun;
	/* the active files, planned against the head's chain */
	aptix_file_set files;
	const char *const *paths;	/* --file */
	size_t npaths;
	const char *files_from;		/* --files-from */
	int has_files;
	char *files_error;		/* why they could not be listed */
	/* the retrieval index against the work tree */
	aptix_rag_staleness rag;
};

/* The instruction's first line; 0 when it cannot be read. */
static int turn_summary(char *out, aptix_repo *repo, const aptix_oid *turn)
{
	aptix_buf blob = APTIX_BUF_INIT;
	aptix_turn t;
	int ok = 0;

	if (aptix_turn_lookup(&t, repo, turn) < 0) {
		aptix_turn_release(&t);
		aptix_error_clear();
		return 0;
	}
	if (aptix_blob_lookup(&blob, repo, &t.instruction) == 0) {
		aptix_summary_line(out, APTIX_SUMMARY_MAX, blob.ptr, blob.len);
		ok = 1;
	} else {
		aptix_error_clear();
	}
	aptix_buf_release(&blob);
	aptix_turn_release(&t);
	return ok;
}

static int blob_summary(char *out, aptix_repo *repo, const aptix_oid *id)
{
	aptix_buf blob = APTIX_BUF_INIT;
	int ok = 0;

	if (aptix_blob_lookup(&blob, repo, id) == 0) {
		aptix_summary_line(out, APTIX_SUMMARY_MAX, blob.ptr, blob.len);
		ok = 1;
	} else {
		aptix_error_clear();
	}
	aptix_buf_release(&blob);
	return ok;
}

static int collect_running(const aptix_running_info *r, void *payload)
{
	struct status *st = payload;
	struct running *e;

	st->run = cli_grow(st->run, &st->allocrun, st->nrun, sizeof(*st->run));
	e = &st->run[st->nrun++];
	memset(e, 0, sizeof(*e));
	e->info = *r;
	e->has_summary = blob_summary(e->summary, st->repo,
				      &r->instruction);
	return 0;
}

/* The head when the index does not know it (never in a sane store). */
static void head_from_objects(struct status *st, const aptix_oid *id)
{
	aptix_session s;

	view_load_session(&s, st->repo, id);
	memset(&st->head, 0, sizeof(st->head));
	st->head.id = *id;
	st->head.status = s.status;
	st->head.created_at = s.created_at;
	st->head.turn = s.turn;
	turn_summary(st->head.summary, st->repo, &s.turn);
	aptix_session_release(&s);
}

static void gather(struct status *st)
{
	aptix_ref ref;
	aptix_conv_info ci;
	aptix_oid id;
	char name[sizeof(APTIX_CONV_PREFIX) + APTIX_CONV_MAXLEN];
	size_t plen = strlen(APTIX_CONV_PREFIX);
	int r;

	if (aptix_ref_read(&ref, st->repo, "HEAD") < 0)
		die_aptix();
	if (!ref.target) {
		st->is_detached = 1;
		st->detached = ref.oid;
	} else if (strncmp(ref.target, APTIX_CONV_PREFIX, plen) ||
		   aptix_conv_check_id(ref.target + plen) < 0) {
		aptix_error_clear();
		st->head_target = strdup(ref.target);
		if (!st->head_target)
			die("out of memory");
	} else {
		snprintf(st->conv, sizeof(st->conv), "%s",
			 ref.target + plen);
		st->on_conv = 1;
	}
	aptix_ref_release(&ref);

	if (st->on_conv) {
		if (aptix_index_conversation(&ci, st->repo, st->conv) == 0) {
			memcpy(st->title, ci.title, sizeof(st->title));
		} else {
			aptix_error_clear();
			ci.has_failed = 0;
		}
		snprintf(name, sizeof(name), "%s%s", APTIX_CONV_PREFIX,
			 st->conv);
		r = aptix_ref_resolve(&id, NULL, st->repo, name);
		if (r == 0) {
			st->has_head = 1;
			if (aptix_index_session(&st->head, st->repo, &id) < 0) {
				aptix_error_clear();
				head_from_objects(st, &id);
			}
		} else if (r == APTIX_ENOTFOUND) {
			aptix_error_clear();
		} else {
			die_aptix();
		}
		/* the last failure, when it came after the head */
		if (ci.has_failed && (!st->has_head ||
				      ci.failed_at > st->head.created_at)) {
			if (aptix_index_session(&st->failed, st->repo,
						&ci.last_failed) == 0)
				st->has_failed = 1;
			else
				aptix_error_clear();
		}
	}
	if (st->has_failed) {
		aptix_session s;

		view_load_session(&s, st->repo, &st->failed.id);
		if (aptix_turn_lookup(&st->failed_turn, st->repo,
				      &s.turn) == 0) {
			st->has_failed_turn = 1;
			st->errors = st->failed_turn.errors;
			st->nerrors = st->failed_turn.nerrors;
		} else {
			aptix_turn_release(&st->failed_turn);
			aptix_error_clear();
		}
		aptix_session_release(&s);
	}
	if (aptix_run_foreach_running(st->repo, collect_running, st) < 0)
		die_aptix();
}

/* The next turn's parent: the head, or the detached HEAD. */
static const aptix_oid *next_parent(const struct status *st)
{
	if (st->has_head)
		return &st->head.id;
	if (st->is_detached)
		return &st->detached;
	return NULL;
}

/*
 * Scan the workspace and plan the files against the chain the next turn
 * would continue (a chain that expired restarts: everything is sent).
 * A failure is reported, not fatal: the rest of the status stands.
 */
static void gather_files(struct status *st)
{
	aptix_scan_options so = APTIX_SCAN_OPTIONS_INIT;
	aptix_buf cache = APTIX_BUF_INIT;
	aptix_config *cfg = NULL;
	const char *keys[2];
	aptix_chain_state cs;
	const aptix_oid *parent = next_parent(st);
	long max_total;
	int restart = 0;

	if (aptix_config_open(&cfg, st->repo) < 0)
		goto fail;
	so.root = aptix_repo_workdir(st->repo);
	so.cfg = cfg;
	so.paths = st->paths;
	so.npaths = st->npaths;
	so.files_from = st->files_from;
	/* what a turn would withhold: the keys it is given count too */
	keys[0] = getenv("OPENAI_API_KEY");
	keys[1] = getenv("QDRANT_API_KEY");
	so.secrets = keys;
	so.nsecrets = 2;
	if (aptix_workspace_stat_cache(&cache, st->repo) < 0)
		goto fail;
	so.stat_cache = cache.ptr;
	so.stat_cache_readonly = aptix_repo_readonly(st->repo);
	if (aptix_workspace_scan(&st->files, &so) < 0)
		goto fail;
	st->has_files = 1;
	if (parent) {
		if (aptix_chain_state_of(&cs, st->repo, parent,
					 aptix_now_ms()) < 0)
			goto fail;
		restart = cs.expired;
	}
	if (aptix_context_plan(st->repo, parent, restart, &st->files,
			       NULL) < 0 ||
	    aptix_config_long(&max_total, cfg, "files.max-total") < 0 ||
	    aptix_context_limit(&st->files, NULL, max_total) < 0)
		goto fail;
	aptix_config_free(cfg);
	aptix_buf_release(&cache);
	return;
fail:
	st->files_error = strdup(aptix_error_last()->message);
	if (!st->files_error)
		die("out of memory");
	aptix_error_clear();
	aptix_config_free(cfg);
	aptix_buf_release(&cache);
}

/* "send", "too large (150.0 KiB)", "unreadable: no such file". */
static const char *file_action_text(char *buf, size_t n,
				    const aptix_active_file *f)
{
	char size[32];

	switch (f->action) {
	case APTIX_FILE_TOO_LARGE:
		snprintf(buf, n, "too large (%s)",
			 pretty_size(size, (uint64_t)(f->size > 0 ?
						      f->size : 0)));
		return buf;
	case APTIX_FILE_UNREADABLE:
		snprintf(buf, n, "unreadable: %s", f->note ? f->note : "?");
		return buf;
	case APTIX_FILE_WITHHELD:
		snprintf(buf, n, "withheld: %s", f->note ? f->note : "?");
		return buf;
	default:
		return aptix_file_action_name(f->action);
	}
}

static void print_files(struct status *st)
{
	const char *red = view_color(stdout, VIEW_RED);
	const char *yellow = view_color(stdout, VIEW_YELLOW);
	const char *green = view_color(stdout, VIEW_GREEN);
	const char *reset = *red ? VIEW_RESET : "";
	size_t i, width = 0;
	char buf[256];

	if (st->files_error)
		warning("cannot list the active files: %s", st->files_error);
	if (!st->has_files)
		return;
	for (i = 0; i < st->files.nwarnings; i++) {
		fprintf(stderr, "warning: ");
		view_puts(stderr, st->files.warnings[i]);
		fputc('\n', stderr);
	}
	if (!st->files.n)
		return;
	for (i = 0; i < st->files.n; i++) {
		size_t len = strlen(st->files.v[i].path);

		if (len > width)
			width = len;
	}
	if (width > 40)
		width = 40;
	printf("\nActive files (what the next turn does with them):\n");
	for (i = 0; i < st->files.n; i++) {
		const aptix_active_file *f = &st->files.v[i];
		const char *color = f->action == APTIX_FILE_SEND ? green :
			f->action == APTIX_FILE_UNCHANGED ? "" :
			f->action == APTIX_FILE_UNREADABLE ||
			f->action == APTIX_FILE_WITHHELD ? red : yellow;
		size_t len;

		printf("  ");
		len = view_path(stdout, f->path);
		printf("%*s  %s%s%s\n", (int)(len < width ? width - len : 0),
		       "", color, file_action_text(buf, sizeof(buf), f),
		       *color ? reset : "");
	}
}

/* Who holds a claim, and how fresh its lease is. */
static void print_holder(const aptix_running_info *ri)
{
	struct timespec ts;
	long long ago;

	printf("host ");
	view_puts(stdout, ri->host);
	if (ri->renewed_ms) {
		clock_gettime(CLOCK_REALTIME, &ts);
		ago = ((long long)ts.tv_sec * 1000 + ts.tv_nsec / 1000000 -
		       ri->renewed_ms) / 1000;
		printf(", renewed %lld s ago", ago > 0 ? ago : 0);
	}
	printf("  ");
}

static void print_text(struct status *st)
{
	const char *red = view_color(stdout, VIEW_RED);
	const char *yellow = view_color(stdout, VIEW_YELLOW);
	const char *green = view_color(stdout, VIEW_GREEN);
	const char *reset = *red ? VIEW_RESET : "";
	char date[64];
	size_t i;

	if (st->is_detached) {
		printf("HEAD detached at %s\n", view_short_id(&st->detached));
	} else if (!st->on_conv) {
		printf("HEAD points to ");
		view_puts(stdout, st->head_target);
		printf(", not to a conversation\n");
	} else {
		printf("On conversation %s", st->conv);
		if (*st->title) {
			printf(" (");
			view_puts(stdout, st->title);
			putchar(')');
		}
		putchar('\n');
		if (st->has_head) {
			printf("Head: %s%s%s ", yellow,
			       view_short_id(&st->head.id), reset);
			view_puts(stdout, st->head.summary);
			printf("  (%s)\n", view_date(date, st->head.created_at,
						     1));
		} else {
			printf("No turns yet.\n");
		}
	}

	if (st->nrun) {
		printf("\nTurns in flight:\n");
		for (i = 0; i < st->nrun; i++) {
			const struct running *e = &st->run[i];

			printf("  %s  pid %ld  since %s  ",
			       e->info.conversation, e->info.pid,
			       aptix_time_fmt(date, e->info.since_ms));
			print_holder(&e->info);
			if (e->info.alive)
				printf("%srunning%s\n", green, reset);
			else if (!strcmp(e->info.why, "died"))
				printf("%sinterrupted (process gone)%s\n",
				       red, reset);
			else
				printf("%sinterrupted (process %s)%s\n",
				       red, e->info.why, reset);
			if (e->has_summary) {
				printf("      ");
				view_puts(stdout, e->summary);
				putchar('\n');
			}
		}
	}

	if (st->has_failed) {
		printf("\n%sLast turn failed%s (%s):\n", red, reset,
		       view_date(date, st->failed.created_at, 1));
		printf("  session %s  ", view_short_id(&st->failed.id));
		view_puts(stdout, st->failed.summary);
		putchar('\n');
		for (i = 0; i < st->nerrors; i++) {
			printf("  %serror:%s ", red, reset);
			view_puts(stdout, st->errors[i]);
			putchar('\n');
		}
		printf("  retry it with: aptix rerun %s\n",
		       view_short_id(&st->failed.id));
	}
	print_files(st);
	if (st->rag.changed || st->rag.gone) {
		printf("\nRetrieval index: ");
		if (st->rag.changed)
			printf("%zu of %zu indexed files changed since "
			       "indexing", st->rag.changed, st->rag.files);
		if (st->rag.gone)
			printf("%s%zu gone", st->rag.changed ? ", " : "",
			       st->rag.gone);
		printf(" (");
		view_puts(stdout, st->rag.first);
		printf(st->rag.changed + st->rag.gone > 1 ? ", ...)\n" :
		       ")\n");
		printf("  (use \"aptix index\" to update it: a retrieved "
		       "chunk that changed is not sent)\n");
	}
}

/* --short, --porcelain: the letter of what the next turn does with it */
static char file_code(const aptix_active_file *f)
{
	switch (f->action) {
	case APTIX_FILE_SEND:		return 'S';
	case APTIX_FILE_UNCHANGED:	return 'U';
	case APTIX_FILE_TOO_LARGE:	return 'L';
	case APTIX_FILE_BINARY:		return 'B';
	case APTIX_FILE_UNREADABLE:	return 'E';
	case APTIX_FILE_OVER_BUDGET:	return 'O';
	case APTIX_FILE_WITHHELD:	return 'W';
	}
	return '?';
}

static const char *short_id(const aptix_oid *id, int porcelain)
{
	return porcelain ? aptix_oid_hex(id) : view_short_id(id);
}

/*
 * git status -s / --porcelain: "## <conversation> <head>" and what
 * else is going on in brackets (with --branch), then "XY <path>" per
 * active file: X what the next turn does with it, Y 'M' when git sees
 * it modified. --porcelain is the same without colour and with whole
 * ids, and does not change between versions (aptix-status(1)).
 */
static void print_short(struct status *st, int porcelain, int branch)
{
	const char *green = porcelain ? "" : view_color(stdout, VIEW_GREEN);
	const char *red = porcelain ? "" : view_color(stdout, VIEW_RED);
	const char *reset = VIEW_RESET;
	size_t i, dead = 0;

	if (st->files_error)
		warning("cannot list the active files: %s", st->files_error);
	if (branch) {
		if (st->is_detached)
			printf("## HEAD (detached at %s)",
			       short_id(&st->detached, porcelain));
		else if (!st->on_conv)
			printf("## HEAD (no conversation)");
		else
			printf("## %s %s", st->conv, st->has_head ?
			       short_id(&st->head.id, porcelain) :
			       "(no turns)");
		for (i = 0; i < st->nrun; i++)
			dead += !st->run[i].info.alive;
		if (st->nrun > dead)
			printf(" [running %zu]", st->nrun - dead);
		if (dead)
			printf(" [interrupted %zu]", dead);
		if (st->has_failed)
			printf(" [%sfailed %s%s]", red,
			       short_id(&st->failed.id, porcelain),
			       *red ? reset : "");
		putchar('\n');
	}
	for (i = 0; st->has_files && i < st->files.n; i++) {
		const aptix_active_file *f = &st->files.v[i];
		const char *c = f->action == APTIX_FILE_SEND ? green :
			f->action == APTIX_FILE_UNCHANGED ? "" : red;

		printf("%s%c%s%c ", c, file_code(f), *c ? reset : "",
		       f->touched ? 'M' : ' ');
		view_puts(stdout, f->path);
		putchar('\n');
	}
}

static json_t *files_json(struct status *st)
{
	json_t *a = json_array(), *x;
	size_t i;

	if (!a)
		die("out of memory");
	for (i = 0; st->has_files && i < st->files.n; i++) {
		const aptix_active_file *f = &st->files.v[i];
		int unreadable = f->action == APTIX_FILE_UNREADABLE;

		if (!(x = json_object()))
			die("out of memory");
		view_json_set(x, "path", view_json_str(f->path));
		view_json_set(x, "sha256", *f->sha256 ?
			      view_json_str(f->sha256) : json_null());
		view_json_set(x, "size", unreadable ? json_null() :
			      view_json_int(f->size));
		view_json_set(x, "action", view_json_str(
				      aptix_file_action_name(f->action)));
		view_json_set(x, "note", f->note ? view_json_str(f->note) :
			      json_null());
		view_json_set(x, "touched", json_boolean(f->touched));
		if (json_array_append_new(a, x) < 0)
			die("out of memory");
	}
	return a;
}

static json_t *file_warnings_json(struct status *st)
{
	json_t *a = json_array();
	size_t i;

	if (!a)
		die("out of memory");
	if (st->files_error &&
	    json_array_append_new(a, view_json_str(st->files_error)) < 0)
		die("out of memory");
	for (i = 0; st->has_files && i < st->files.nwarnings; i++)
		if (json_array_append_new(a, view_json_str(
						  st->files.warnings[i])) < 0)
			die("out of memory");
	return a;
}

static void print_json(struct status *st)
{
	json_t *o = json_object(), *x, *a;
	char cmd[64];
	size_t i;

	if (!o)
		die("out of memory");
	view_json_set(o, "conversation", st->on_conv ?
		      view_json_str(st->conv) : json_null());
	view_json_set(o, "title", st->on_conv && *st->title ?
		      view_json_str(st->title) : json_null());
	view_json_set(o, "detached", st->is_detached ?
		      view_json_id(&st->detached) : json_null());
	if (st->has_head) {
		if (!(x = aptix_view_session_info(&st->head)))
			die("out of memory");
		view_json_set(o, "head", x);
	} else {
		view_json_set(o, "head", json_null());
	}

	if (!(a = json_array()))
		die("out of memory");
	for (i = 0; i < st->nrun; i++) {
		const struct running *e = &st->run[i];

		if (!(x = json_object()))
			die("out of memory");
		view_json_set(x, "conversation",
			      view_json_str(e->info.conversation));
		view_json_set(x, "state", view_json_str(
				      e->info.alive ? "running" :
				      "interrupted"));
		view_json_set(x, "pid", view_json_int(e->info.pid));
		view_json_set(x, "host", view_json_str(e->info.host));
		view_json_set(x, "renewed", e->info.renewed_ms ?
			      view_json_time(e->info.renewed_ms) :
			      json_null());
		view_json_set(x, "lease_ms", view_json_int(e->info.lease_ms));
		view_json_set(x, "why", e->info.alive ? json_null() :
			      view_json_str(e->info.why));
		view_json_set(x, "since", view_json_time(e->info.since_ms));
		view_json_set(x, "since_ms", view_json_int(e->info.since_ms));
		view_json_set(x, "turn", view_json_id(&e->info.turn));
		view_json_set(x, "parent", e->info.has_parent ?
			      view_json_id(&e->info.parent) : json_null());
		view_json_set(x, "instruction", e->has_summary ?
			      view_json_str(e->summary) : json_null());
		if (json_array_append_new(a, x) < 0)
			die("out of memory");
	}
	view_json_set(o, "running", a);

	if (st->has_failed) {
		if (!(x = json_object()) || !(a = json_array()))
			die("out of memory");
		view_json_set(x, "session", view_json_id(&st->failed.id));
		view_json_set(x, "created_at",
			      view_json_time(st->failed.created_at));
		view_json_set(x, "instruction",
			      view_json_str(st->failed.summary));
		for (i = 0; i < st->nerrors; i++)
			if (json_array_append_new(a, view_json_str(
							  st->errors[i])) < 0)
				die("out of memory");
		view_json_set(x, "errors", a);
		snprintf(cmd, sizeof(cmd), "aptix rerun %s",
			 view_short_id(&st->failed.id));
		view_json_set(x, "retry", view_json_str(cmd));
		view_json_set(o, "last_failed", x);
	} else {
		view_json_set(o, "last_failed", json_null());
	}
	if (st->rag.files) {
		if (!(x = json_object()))
			die("out of memory");
		view_json_set(x, "files", view_json_int((int64_t)st->rag.files));
		view_json_set(x, "changed",
			      view_json_int((int64_t)st->rag.changed));
		view_json_set(x, "gone", view_json_int((int64_t)st->rag.gone));
		view_json_set(x, "stale", json_boolean(st->rag.changed ||
						       st->rag.gone));
		view_json_set(o, "rag_index", x);
	} else {
		view_json_set(o, "rag_index", json_null());
	}
	view_json_set(o, "files", files_json(st));
	view_json_set(o, "file_warnings", file_warnings_json(st));
	view_json_print(o);
}

/* Which indexed files changed since indexing (nothing when not set up). */
static void gather_rag(struct status *st)
{
	aptix_config *cfg = NULL;

	if (aptix_config_open(&cfg, st->repo) < 0 ||
	    aptix_rag_index_staleness(&st->rag, st->repo, cfg) < 0) {
		warning("cannot compare the retrieval index with the work "
			"tree: %s", aptix_error_last()->message);
		memset(&st->rag, 0, sizeof(st->rag));
	}
	aptix_config_free(cfg);
}

int cmd_status(int argc, const char **argv, struct aptix_repo *repo)
{
	struct status st;
	aptix_strlist files = APTIX_STRLIST_INIT;
	const char *files_from = NULL;
	int json = 0, short_fmt = 0, porcelain = 0, branch = 0;
	struct option options[] = {
		OPT_BOOL('s', "short", &short_fmt, "one line per active file: "
			 "XY <path> (see aptix-status(1))"),
		OPT_BOOL(0, "porcelain", &porcelain, "the short format for "
			 "scripts: no colour, whole ids, stable"),
		OPT_BOOL('b', "branch", &branch, "with -s or --porcelain: the "
			 "conversation, its head and state first"),
		OPT_BOOL(0, "json", &json, "print one JSON object"),
		OPT_STRING_LIST(0, "file", &files, "path",
				"an active file besides git's (repeatable)"),
		OPT_STRING(0, "files-from", &files_from, "file",
			   "read active file paths from <file> (- for stdin)"),
		OPT_DATE(),
		OPT_END()
	};

	parse_options(argc, argv, options, status_usage, PARSE_OPT_NO_ARGS);
	if (json && (short_fmt || porcelain))
		die("options '--json' and '--short' or '--porcelain' cannot "
		    "be used together");
	memset(&st, 0, sizeof(st));
	st.repo = repo;
	st.paths = (const char *const *)files.items;
	st.npaths = files.nr;
	st.files_from = files_from;
	/*
	 * Like git status refreshing the index: turns whose process died
	 * are recorded as failed when the store can be written; on a
	 * read-only store they are listed as dead.
	 */
	if (!aptix_repo_readonly(repo) && aptix_run_recover(repo, NULL) < 0)
		warning("cannot record the turns of dead processes as failed: "
			"%s", aptix_error_last()->message);
	gather(&st);
	gather_files(&st);
	gather_rag(&st);
	if (json)
		print_json(&st);
	else if (short_fmt || porcelain)
		print_short(&st, porcelain, branch);
	else
		print_text(&st);
	if (st.has_failed_turn)
		aptix_turn_release(&st.failed_turn);
	free(st.run);
	free(st.head_target);
	aptix_file_set_release(&st.files);
	free(st.files_error);
	aptix_strlist_release(&files);
	return 0;
}
