/*
 * porcelain/show.c - aptix show: explain one turn to a person.
 *
 * Prints a session's header (status, parent, conversation, times,
 * model, chain, usage), then the full instruction and answer, the RAG
 * sources, the active files, warnings and errors. Failed turns put their
 * errors right under the header. --json prints the same as one object;
 * --raw adds the raw payloads.
 */
#ifndef _POSIX_C_SOURCE
# define _POSIX_C_SOURCE 200809L
#endif
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "view.h"
#include "cli.h"
#include "pretty.h"
#include "commands.h"
#include "pager.h"
#include "parse-options.h"
#include "tool-view.h"

static const char *const show_usage[] = {
	"aptix show [-s | --stat] [--json] [--raw] [--date=<format>] "
	"[--no-pager] [<session>...]",
	"aptix show (--format | --pretty)=<format> [-s] [--no-pager] "
	"[<session>...]",
	"",
	"Explains one turn (default: HEAD): status, times, model, usage, the",
	"full instruction and answer, sources, active files, warnings and",
	"errors. Several sessions are shown in turn (--json: an array).",
	"--format prints what log's --format would, with the same",
	"placeholders: %A is the answer, %I the instruction, %H the session",
	"(see aptix log -h); `aptix show --format=%A` prints only the answer.",
	NULL
};

#define LABEL_WIDTH 22

struct show {
	aptix_repo *repo;
	aptix_oid id;
	aptix_session s;
	aptix_turn t;
	char title[APTIX_SUMMARY_MAX + 1];
	int has_title;
	aptix_buf instruction, answer;
	int has_answer;
	int raw;
	int no_patch, stat;		/* -s, --stat: no answer, files... */
	int64_t now;
	struct tool_view tv;		/* the calls asked, results sent */
};

static void label(const char *name)
{
	char buf[64];

	snprintf(buf, sizeof(buf), "%s:", name);
	printf("%-*s", LABEL_WIDTH, buf);
}

/* label and an untrusted value; nothing for NULL */
static void field(const char *name, const char *val)
{
	if (!val)
		return;
	label(name);
	view_puts(stdout, val);
	putchar('\n');
}

static void field_time(const char *name, int64_t ms)
{
	char buf[64];

	if (!ms)
		return;
	label(name);
	printf("%s\n", view_date_as(buf, ms, VIEW_DATE_DEFAULT));
}

/* Does the turn status say something the session status does not? */
static int turn_status_differs(const struct show *sh)
{
	switch (sh->s.status) {
	case APTIX_SESSION_COMMITTED:
	case APTIX_SESSION_AWAITING_TOOL_RESULTS:
		return sh->t.status != APTIX_TURN_COMPLETED;
	case APTIX_SESSION_FAILED:
		return sh->t.status != APTIX_TURN_FAILED;
	default:
		return 1;
	}
}

static int is_failed(const struct show *sh)
{
	return sh->s.status == APTIX_SESSION_FAILED ||
		sh->t.status == APTIX_TURN_FAILED;
}

static void print_list(const char *heading, char **items, size_t n,
		       const char *color)
{
	size_t i;

	if (!n)
		return;
	printf("\n%s%s:%s\n", view_color(stdout, color), heading,
	       *view_color(stdout, color) ? VIEW_RESET : "");
	for (i = 0; i < n; i++)
		view_put_indented(stdout, "    ", items[i], strlen(items[i]));
}

static void print_payload(struct show *sh, const char *title,
			  const aptix_oid *id)
{
	aptix_buf req = APTIX_BUF_INIT;
	json_error_t jerr;
	json_t *v;
	char *pretty;

	if (aptix_oid_is_zero(id))
		return;
	view_read_blob(&req, sh->repo, id);
	printf("\n%s:\n", title);
	v = json_loadb(req.ptr, req.len, JSON_DECODE_ANY, &jerr);
	pretty = v ? json_dumps(v, JSON_INDENT(2) | JSON_ENCODE_ANY) : NULL;
	if (pretty)
		view_put_indented(stdout, "    ", pretty, strlen(pretty));
	else
		view_put_indented(stdout, "    ", req.ptr, req.len);
	free(pretty);
	json_decref(v);
	aptix_buf_release(&req);
}

static size_t count_lines(const aptix_buf *b)
{
	size_t i, n = 0;

	for (i = 0; i < b->len; i++)
		n += b->ptr[i] == '\n';
	return n + (b->len && b->ptr[b->len - 1] != '\n');
}

/* A chunk's label: "<path>:<start>-<end>" (malloc'ed). */
static char *chunk_label(const aptix_chunk_ref *c)
{
	aptix_buf b = APTIX_BUF_INIT;

	aptix_buf_printf(&b, "%s:%ld-%ld", c->path, c->start_line,
			 c->end_line);
	if (aptix_buf_oom(&b))
		die("out of memory");
	return aptix_buf_detach(&b);
}

static void stat_line(const char *label, size_t w, const char *size,
		      const char *what)
{
	putchar(' ');
	view_put_truncated(stdout, label, w, 1);
	printf(" | %10s %s\n", size, what);
}

/*
 * --stat: as git's diffstat, one line per file and chunk the turn
 * listed, "<path> | <size> <what became of it>", then a summary line.
 */
static void print_stat(struct show *sh)
{
	const aptix_turn *t = &sh->t;
	size_t i, w = 0, sent = 0, csent = 0, n;
	uint64_t bytes = 0;
	char buf[32];
	char **labels = calloc(t->nchunks + 1, sizeof(*labels));

	if (!labels)
		die("out of memory");
	for (i = 0; i < t->nchunks; i++)
		labels[i] = chunk_label(&t->chunks[i]);
	for (i = 0; i < t->nfiles + t->nchunks; i++) {
		n = strlen(i < t->nfiles ? t->files[i].path :
			   labels[i - t->nfiles]);
		w = n > w ? n : w;
	}
	w = w > 50 ? 50 : w;
	putchar('\n');
	for (i = 0; i < t->nfiles; i++) {
		const aptix_file_ref *f = &t->files[i];
		uint64_t size = (uint64_t)(f->size > 0 ? f->size : 0);

		stat_line(f->path, w, pretty_size(buf, size),
			  aptix_view_file_state(f));
		if (f->sent) {
			sent++;
			bytes += size;
		}
	}
	for (i = 0; i < t->nchunks; i++) {
		stat_line(labels[i], w, "chunk", t->chunks[i].sent ? "sent" :
			  "already sent");
		csent += t->chunks[i].sent != 0;
		free(labels[i]);
	}
	free(labels);
	printf(" %zu file%s (%zu sent, %s), %zu chunk%s (%zu sent), ",
	       t->nfiles, t->nfiles == 1 ? "" : "s", sent,
	       pretty_size(buf, bytes), t->nchunks,
	       t->nchunks == 1 ? "" : "s", csent);
	n = count_lines(&sh->answer);
	if (sh->has_answer)
		printf("answer %zu line%s (%s)\n", n, n == 1 ? "" : "s",
		       pretty_size(buf, sh->answer.len));
	else
		printf("no answer\n");
}

static void print_text(struct show *sh)
{
	const aptix_turn *t = &sh->t;
	const char *red = view_color(stdout, VIEW_RED);
	const char *bold = view_color(stdout, VIEW_BOLD);
	const char *reset = *red ? VIEW_RESET : "";
	char buf[64];
	size_t i;

	printf("%ssession %s%s\n", view_color(stdout, VIEW_YELLOW),
	       aptix_oid_hex(&sh->id), reset);
	label("Status");
	if (is_failed(sh))
		printf("%s%s%s%s", bold, red,
		       aptix_session_status_name(sh->s.status), reset);
	else
		printf("%s", aptix_session_status_name(sh->s.status));
	if (turn_status_differs(sh))
		printf(" (turn %s)", aptix_turn_status_name(t->status));
	putchar('\n');
	label("Parent");
	if (sh->s.has_parent)
		printf("%s\n", aptix_oid_hex(&sh->s.parent));
	else
		printf("none (first turn of the conversation)\n");
	label("Conversation");
	view_puts(stdout, sh->s.conversation);
	if (sh->has_title && *sh->title) {
		printf(" (");
		view_puts(stdout, sh->title);
		putchar(')');
	}
	putchar('\n');
	field("Forked from", sh->s.forked_from);
	label("Turn");
	printf("#%ld %s\n", t->seq, aptix_oid_hex(&sh->s.turn));
	field("Mode", t->mode);
	field_time("Created", t->created_at);
	field_time("Response", t->response_at);
	label("Duration");
	printf("%s\n", view_duration(buf, sh->s.duration_ms));
	field("Model", t->model);
	field("Response id", t->response_id);
	field("Previous response id", t->previous_response_id);
	if (t->chain_expires_at) {
		label("Chain expires");
		printf("%s%s\n", view_date_as(buf, t->chain_expires_at,
					       VIEW_DATE_DEFAULT),
		       t->chain_expires_at <= sh->now ? " (expired)" : "");
	}
	if (t->chain_restarted)
		field("Chain restarted", "yes (context sent again)");
	label("Usage");
	printf("input %ld (cached %ld), output %ld (reasoning %ld), "
	       "total %ld tokens; %ld request%s\n", t->usage.input_tokens,
	       t->usage.cached_tokens, t->usage.output_tokens,
	       t->usage.reasoning_tokens, t->usage.total_tokens,
	       t->usage.model_requests,
	       t->usage.model_requests == 1 ? "" : "s");
	field("Workspace", t->workspace ? t->workspace : sh->s.workspace);
	if (t->has_worktree) {
		label("Work tree");
		printf("%s", t->worktree.commit ? t->worktree.commit :
		       "no commit recorded");
		if (t->worktree.branch) {
			printf(" on ");
			view_puts(stdout, t->worktree.branch);
		} else {
			printf(" (detached HEAD)");
		}
		printf("%s\n", t->worktree.dirty ? " (dirty)" : "");
		field("Remote", t->worktree.remote);
	}
	field("Repository", t->repo);
	field("Transport", sh->s.transport);
	if (sh->raw) {
		if (!aptix_oid_is_zero(&t->request)) {
			label("Request payload");
			printf("%s\n", aptix_oid_hex(&t->request));
		}
		if (!aptix_oid_is_zero(&t->response)) {
			label("Response payload");
			printf("%s\n", aptix_oid_hex(&t->response));
		}
	}

	if (is_failed(sh)) {
		if (t->nerrors)
			print_list("Errors", t->errors, t->nerrors, VIEW_RED);
		else
			printf("\n%sThe turn failed; no error was "
			       "recorded.%s\n", red, reset);
	}

	printf("\nInstruction:\n");
	view_put_indented(stdout, "    ", sh->instruction.ptr,
			  sh->instruction.len);
	if (sh->stat)
		print_stat(sh);
	if (sh->no_patch || sh->stat) {
		print_list("Warnings", t->warnings, t->nwarnings, VIEW_YELLOW);
		return;
	}
	if (sh->s.status == APTIX_SESSION_AWAITING_TOOL_RESULTS &&
	    !sh->answer.len) {
		printf("\nNo answer: the model asks for tool calls.\n");
	} else if (sh->has_answer) {
		printf("\nAnswer:\n");
		view_put_indented(stdout, "    ", sh->answer.ptr,
				  sh->answer.len);
	} else if (!is_failed(sh)) {
		printf("\nNo answer (turn %s).\n",
		       aptix_turn_status_name(t->status));
	}

	tool_view_print(stdout, &sh->tv);
	if (t->nchunks)
		printf("\nSources:\n");
	for (i = 0; i < t->nchunks; i++) {
		const aptix_chunk_ref *c = &t->chunks[i];

		printf("    ");
		view_path(stdout, c->path);
		printf(":%ld-%ld  score %.3f  %s\n", c->start_line,
		       c->end_line, c->score / 1e6,
		       c->sent ? "sent" : "already sent");
	}
	if (t->nfiles)
		printf("\nActive files:\n");
	for (i = 0; i < t->nfiles; i++) {
		const aptix_file_ref *f = &t->files[i];

		printf("    ");
		view_path(stdout, f->path);
		printf("  %s  sha256 %.12s  %s%s\n",
		       pretty_size(buf, (uint64_t)(f->size > 0 ? f->size : 0)),
		       f->sha256 ? f->sha256 : "", aptix_view_file_state(f),
		       f->touched ? ", touched" : "");
	}
	print_list("Warnings", t->warnings, t->nwarnings, VIEW_YELLOW);
	if (!is_failed(sh))
		print_list("Errors", t->errors, t->nerrors, VIEW_RED);
	if (sh->raw) {
		print_payload(sh, "Request", &t->request);
		print_payload(sh, "Response", &t->response);
	}
}

/* The full view of the turn (Documentation/json.md). */
static json_t *show_json(struct show *sh)
{
	json_t *v;

	if (aptix_view_turn(&v, sh->repo, &sh->id, APTIX_VIEW_FULL |
			    (sh->raw ? APTIX_VIEW_PAYLOADS : 0)) < 0)
		die_aptix();
	return v;
}

/* Load the session sh->id names, and what show prints of it. */
static void load_show(struct show *sh)
{
	aptix_conv_info ci;

	view_load_session(&sh->s, sh->repo, &sh->id);
	view_load_turn(&sh->t, sh->repo, &sh->s.turn);
	if (aptix_index_conversation(&ci, sh->repo, sh->s.conversation) == 0) {
		memcpy(sh->title, ci.title, sizeof(sh->title));
		sh->has_title = 1;
	} else if (sh->s.title) {
		snprintf(sh->title, sizeof(sh->title), "%s", sh->s.title);
		sh->has_title = 1;
	}
	view_read_blob(&sh->instruction, sh->repo, &sh->t.instruction);
	tool_view_load(&sh->tv, sh->repo, &sh->t);
	if (!aptix_oid_is_zero(&sh->t.answer)) {
		view_read_blob(&sh->answer, sh->repo, &sh->t.answer);
		sh->has_answer = 1;
	}
}

static void release_show(struct show *sh)
{
	tool_view_release(&sh->tv);
	aptix_buf_release(&sh->instruction);
	aptix_buf_release(&sh->answer);
	aptix_turn_release(&sh->t);
	aptix_session_release(&sh->s);
}

/*
 * --format: log's formats, for the sessions named and no ancestor, so
 * the placeholders are the same in both commands by construction.
 */
static int show_format(int argc, const char **argv, const char *format,
		       int no_pager, struct aptix_repo *repo)
{
	const char **av = calloc((size_t)argc + 5, sizeof(*av));
	aptix_buf fmt = APTIX_BUF_INIT;
	int ac = 0, i, r;

	if (!av)
		die("out of memory");
	/* a bare string is a format, as git's show --format=%H */
	if (!strchr(format, ':') && strchr(format, '%'))
		aptix_buf_printf(&fmt, "--format=tformat:%s", format);
	else
		aptix_buf_printf(&fmt, "--format=%s", format);
	if (aptix_buf_oom(&fmt))
		die("out of memory");
	av[ac++] = "log";
	av[ac++] = "--no-walk";
	av[ac++] = fmt.ptr;
	if (no_pager)
		av[ac++] = "--no-pager";
	/* no "--": log reads paths after it; these are sessions */
	for (i = 0; i < argc; i++)
		av[ac++] = argv[i];
	av[ac] = NULL;
	r = cmd_log(ac, av, repo);
	free(av);
	aptix_buf_release(&fmt);
	return r;
}

int cmd_show(int argc, const char **argv, struct aptix_repo *repo)
{
	struct show sh;
	int json = 0, no_pager = 0, raw = 0, no_patch = 0, stat = 0, i;
	const char *head = "HEAD", *format = NULL;
	aptix_oid *ids;
	json_t *all = NULL;
	struct option options[] = {
		OPT_BOOL(0, "json", &json, "print one JSON object"),
		OPT_BOOL(0, "raw", &raw, "add the raw request and response "
			 "payloads"),
		OPT_BOOL('s', "no-patch", &no_patch, "the header and the "
			 "instruction: no answer, sources or files"),
		OPT_BOOL(0, "stat", &stat, "the header, the instruction and "
			 "one line per file and chunk sent, as git's diffstat"),
		OPT_STRING(0, "format", &format, "format", "print the "
			   "sessions as log --format does (%A: the answer)"),
		OPT_STRING(0, "pretty", &format, "format", "the same as "
			   "--format"),
		OPT_DATE(),
		OPT_NO_PAGER(&no_pager),
		OPT_END()
	};

	argc = parse_options(argc, argv, options, show_usage, 0);
	if (format && (json || raw))
		die("--format cannot be used with --json or --raw");
	if (format)
		return show_format(argc, argv, format, no_pager, repo);
	if (!argc) {
		argv = &head;
		argc = 1;
	}
	/* every name resolves before anything is printed */
	if (!(ids = calloc((size_t)argc, sizeof(*ids))))
		die("out of memory");
	for (i = 0; i < argc; i++)
		view_resolve_session(&ids[i], repo, argv[i]);
	if (!no_pager)
		setup_pager();
	if (json && argc > 1)
		all = view_json_array();
	for (i = 0; i < argc; i++) {
		memset(&sh, 0, sizeof(sh));
		sh.repo = repo;
		sh.raw = raw;
		sh.no_patch = no_patch;
		sh.stat = stat;
		sh.now = aptix_now_ms();
		sh.id = ids[i];
		if (all) {
			view_json_append(all, show_json(&sh));
			continue;
		}
		if (json) {
			view_json_print(show_json(&sh));
			continue;
		}
		load_show(&sh);
		if (i)
			putchar('\n');
		print_text(&sh);
		release_show(&sh);
	}
	if (all)
		view_json_print(all);
	free(ids);
	return 0;
}
