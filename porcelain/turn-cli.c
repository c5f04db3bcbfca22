/*
 * porcelain/turn-cli.c - the shared half of continue, fork and rerun.
 */
#ifndef _POSIX_C_SOURCE
# define _POSIX_C_SOURCE 200809L
#endif
#define _GNU_SOURCE 1	/* memmem */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <jansson.h>
#include <aptix/view.h>

#include "turn-cli.h"
#include "editor.h"
#include "cli.h"
#include <aptix/workspace.h>
#include <aptix/rag.h>

/*
 * Signals during a turn. The answer is paid for once the request is
 * sent, so nothing but the user's own interrupt stops a turn:
 *  - SIGINT, SIGTERM: cancel the call; the turn is committed as failed
 *    with its instruction kept, and the command exits 128 + the signal
 *    (130 for Ctrl-C), as shells and git expect;
 *  - SIGHUP (the terminal closed): the output has gone; the turn goes on
 *    and is committed;
 *  - SIGPIPE (`aptix continue | head`): ignored; a write that fails with
 *    EPIPE stops the output, and the turn goes on and is committed.
 */
static volatile sig_atomic_t cancelled;
static volatile sig_atomic_t cancel_signal;

static void on_cancel_signal(int sig)
{
	cancel_signal = sig;
	cancelled = 1;
}

static void on_sighup(int sig)
{
	(void)sig;
	turn_stream_gone = 1;
}

struct saved_signals {
	struct sigaction intr, term, hup, pipe;
};

static void catch_signals(struct saved_signals *old)
{
	struct sigaction sa;

	memset(&sa, 0, sizeof(sa));
	sigemptyset(&sa.sa_mask);
	sa.sa_handler = on_cancel_signal;
	sigaction(SIGINT, &sa, &old->intr);
	sigaction(SIGTERM, &sa, &old->term);
	sa.sa_handler = on_sighup;
	sigaction(SIGHUP, &sa, &old->hup);
	sa.sa_handler = SIG_IGN;
	sigaction(SIGPIPE, &sa, &old->pipe);
}

/* SIGPIPE stays ignored: what is printed after the turn may fail too. */
static void restore_signals(const struct saved_signals *old)
{
	sigaction(SIGINT, &old->intr, NULL);
	sigaction(SIGTERM, &old->term, NULL);
	sigaction(SIGHUP, &old->hup, NULL);
}

/* As git commit -F: the trailing newlines are not part of the text. */
static void strip_trailing_newlines(aptix_buf *b)
{
	while (b->len && (b->ptr[b->len - 1] == '\n' ||
			  b->ptr[b->len - 1] == '\r'))
		b->ptr[--b->len] = '\0';
}

/*
 * Is stdin a pipe or a file that holds input for us? Not a terminal,
 * and not a device such as /dev/null or a socket a caller left open.
 */
static int stdin_piped(void)
{
	struct stat st;

	if (isatty(0) || fstat(0, &st) < 0)
		return 0;
	return S_ISFIFO(st.st_mode) || S_ISREG(st.st_mode);
}

/*
 * Piped stdin next to an instruction given otherwise (-m, -F <file>, the
 * prompt argument) is context attached to it, as llm and codex exec
 * take it: appended to the instruction as a fenced block, so that the
 * turn records exactly what was sent. The fence is longer than any run
 * of backticks in the input.
 */
static void attach_stdin(aptix_buf *out)
{
	aptix_buf in = APTIX_BUF_INIT;
	size_t i, run = 0, fence = 3;

	if (aptix_buf_read_fd(&in, 0) < 0)
		die_aptix();
	strip_trailing_newlines(&in);
	if (!in.len) {
		aptix_buf_release(&in);
		return;
	}
	for (i = 0; i < in.len; i++) {
		run = in.ptr[i] == '`' ? run + 1 : 0;
		if (run >= fence)
			fence = run + 1;
	}
	aptix_buf_puts(out, "\n\n");
	for (i = 0; i < fence; i++)
		aptix_buf_putc(out, '`');
	aptix_buf_puts(out, "stdin\n");
	aptix_buf_put(out, in.ptr, in.len);
	aptix_buf_putc(out, '\n');
	for (i = 0; i < fence; i++)
		aptix_buf_putc(out, '`');
	aptix_buf_release(&in);
	if (aptix_buf_oom(out))
		die("out of memory");
}

int turn_cli_read_instruction(aptix_buf *out, const struct turn_cli *c,
			      int need)
{
	int from_stdin = !c->message && (!c->file || !strcmp(c->file, "-"));
	int fd;

	if (c->message && c->file)
		die("-m and -F cannot be used together");
	if (from_stdin && c->files_from && !strcmp(c->files_from, "-"))
		die("the instruction and --files-from cannot both be read "
		    "from stdin: use -m, -F <file> or --files-from <file>");
	if (c->message) {
		if (aptix_buf_puts(out, c->message) < 0)
			die_aptix();
		goto attach;
	}
	if (c->file && strcmp(c->file, "-")) {
		if (aptix_buf_read_file(out, c->file) < 0)
			die_aptix();
		strip_trailing_newlines(out);
		goto attach;
	}
	if (!c->file && isatty(0)) {
		if (!need)
			return 0;
		editor_read_instruction(out);	/* as git commit */
		return 1;
	}
	fd = 0;
	if (aptix_buf_read_fd(out, fd) < 0)
		die_aptix();
	strip_trailing_newlines(out);
	return 1;
attach:
	if ((!c->files_from || strcmp(c->files_from, "-")) && stdin_piped())
		attach_stdin(out);
	return 1;
}

/* The result as the HTTP API's execute answers it (aptix/view.h). */
static void print_json(const aptix_run_result *res, int rc,
		       const aptix_chunk_set *chunks)
{
	json_t *o = aptix_view_run_result(res, chunks, rc);
	char *s = o ? json_dumps(o, JSON_INDENT(2) | JSON_PRESERVE_ORDER) :
		NULL;

	if (s)
		printf("%s\n", s);
	free(s);
	json_decref(o);
}

/*
 * The request a dry run would send: as HTTP, or with --json as one
 * JSON object (method, url, headers, body), nothing before or after.
 */
static void print_dry_run(const aptix_run_result *res, const char *base,
			  int as_json)
{
	json_t *req = json_loadb(res->request.ptr, res->request.len, 0, NULL);
	char *s;

	if (as_json) {
		json_t *o = json_object(), *h = json_object();
		aptix_buf url = APTIX_BUF_INIT;

		aptix_buf_printf(&url, "%s/responses", base);
		json_object_set_new(o, "dry_run", json_true());
		json_object_set_new(o, "method", json_string("POST"));
		json_object_set_new(o, "url", json_string(url.ptr));
		json_object_set_new(h, "Authorization",
				    json_string("Bearer <redacted>"));
		json_object_set_new(h, "Content-Type",
				    json_string("application/json"));
		json_object_set_new(o, "headers", h);
		json_object_set_new(o, "body", req ? req : json_null());
		s = json_dumps(o, JSON_INDENT(2) | JSON_PRESERVE_ORDER |
			       JSON_REAL_PRECISION(15));
		if (s)
			printf("%s\n", s);
		free(s);
		json_decref(o);
		aptix_buf_release(&url);
		return;
	}
	s = req ? json_dumps(req, JSON_INDENT(2) | JSON_PRESERVE_ORDER |
			     JSON_REAL_PRECISION(15)) : NULL;
	printf("POST %s/responses\n", base);
	printf("Authorization: Bearer <redacted>\n");
	printf("Content-Type: application/json\n\n");
	printf("%s\n", s ? s : res->request.ptr);
	free(s);
	json_decref(req);
}

/* The context of the turn: what the options ask the library to gather. */
static void gather_options(aptix_gather_options *g, const struct turn_cli *c,
			   const aptix_openai_options *http)
{
	g->files = !c->no_files;
	g->scan.paths = (const char *const *)c->files.items;
	g->scan.npaths = c->files.nr;
	g->scan.files_from = c->files_from;
	g->rag = !c->no_rag;
	g->query.http = *http;
	g->query.qdrant_url = getenv("QDRANT_URL");
	g->query.qdrant_api_key = getenv("QDRANT_API_KEY");
}

void turn_cli_setup(aptix_run_options *opts, aptix_gather_options *g,
		    aptix_buf *wsid, struct aptix_repo *repo,
		    aptix_config *cfg, const struct turn_cli *c,
		    struct turn_stream *st)
{
	/* the Qdrant key is never sent or stored either */
	static const char *qdrant_key;

	if (aptix_repo_workspace_id(wsid, repo, cfg, c->workspace) < 0)
		die_aptix();
	opts->conversation = c->conversation;
	opts->create = c->create;
	opts->model = c->model;
	opts->no_stream = c->no_stream;
	opts->dry_run = c->dry_run;
	opts->cfg = cfg;
	if (aptix_config_string(&opts->http.base_url, cfg,
				"openai.base-url") < 0)
		die_aptix();
	opts->http.api_key = getenv("OPENAI_API_KEY");
	opts->http.cancel = &cancelled;
	opts->http.on_delta = turn_stream_delta;
	opts->http.on_retry = c->quiet ? NULL : turn_stream_retry;
	opts->http.payload = st;
	opts->workspace = wsid->len ? wsid->ptr : NULL;
	qdrant_key = getenv("QDRANT_API_KEY");
	if (qdrant_key && *qdrant_key) {
		opts->secrets = &qdrant_key;
		opts->nsecrets = 1;
	}
	gather_options(g, c, &opts->http);
}

/* Whether a conversation of that name (or unique prefix) exists. */
static int conv_exists(struct aptix_repo *repo, const char *name)
{
	char id[APTIX_CONV_MAXLEN + 1];
	int r = aptix_conv_resolve(id, repo, name);

	aptix_error_clear();
	return r != APTIX_ENOTFOUND;
}

int turn_cli_run(struct aptix_repo *repo, aptix_run_kind kind,
		 const aptix_oid *from, const aptix_buf *instruction,
		 const struct turn_cli *c)
{
	aptix_run_options opts = APTIX_RUN_OPTIONS_INIT;
	aptix_gather_options g = APTIX_GATHER_OPTIONS_INIT;
	const aptix_run_result *res;
	aptix_run *run = NULL;
	aptix_config *cfg = NULL;
	struct turn_stream st;
	struct saved_signals saved;
	aptix_buf wsid = APTIX_BUF_INIT;
	size_t i;
	char before[APTIX_CONV_MAXLEN + 1];
	int r, rc;

	if (aptix_config_open(&cfg, repo) < 0)
		die_aptix();
	if (aptix_conv_resolve(before, repo, "HEAD") < 0) {
		*before = '\0';
		aptix_error_clear();
	}
	turn_stream_init(&st, c->json);
	turn_cli_setup(&opts, &g, &wsid, repo, cfg, c, &st);
	opts.kind = kind;
	opts.from = from;
	opts.instruction = instruction ? instruction->ptr : NULL;
	opts.instruction_len = instruction ? instruction->len : 0;
	/*
	 * a continue leaves HEAD alone; a fork or rerun moves to its branch,
	 * and so does a continue that creates its conversation (git switch -c)
	 */
	turn_tools_apply(&opts, c->tools);
	opts.switch_head = kind != APTIX_RUN_CONTINUE ||
		(c->create && c->conversation && !conv_exists(repo,
							      c->conversation));
	/* before the claim: no signal may leave it behind */
	catch_signals(&saved);
	if ((r = aptix_run_new(&run, repo, &opts)) == 0)
		r = aptix_run_begin(run);
	if (r == APTIX_ENOTFOUND && c->conversation && !c->create)
		die("%s; to start a new conversation, add --create",
		    aptix_error_last()->message);
	if (r < 0)
		die_aptix();
	res = aptix_run_result_of(run);

	/* a failed stage is recorded in the run: finish commits it */
	if ((c->given_files || c->given_chunks ?
	     aptix_run_set_context(run, c->given_files, c->given_chunks) :
	     aptix_run_gather(run, &g)) == 0 && aptix_run_request(run) == 0 &&
	    !c->dry_run)
		aptix_run_send(run);
	r = aptix_run_finish(run);
	restore_signals(&saved);

	if (c->dry_run) {
		if (aptix_run_state_of(run) != APTIX_RUN_FINISHED || r < 0 ||
		    !res->request.len)
			die_aptix();
		print_dry_run(res, opts.http.base_url, c->json);
		/* what the request leaves out, and why (withheld files...) */
		for (i = 0; i < res->nwarnings && !c->quiet; i++)
			warning("%s", res->warnings[i]);
		rc = 0;
		goto done;
	}
	if (!res->committed) {
		/* nothing recorded: a fatal error at the store */
		turn_stream_end(&st, res, 1);
		if (c->json)
			print_json(res, r, aptix_run_chunks(run));
		die_aptix();
	}
	rc = r ? 1 : 0;
	if (r && cancel_signal)
		rc = 128 + cancel_signal;	/* 130: interrupted */
	turn_stream_end(&st, res, r);
	if (c->json && !turn_stream_gone)
		print_json(res, r, aptix_run_chunks(run));
	else if (!r && res->awaiting && !turn_stream_gone)
		turn_tools_print_calls(res, c->quiet);
	turn_stream_warnings(res, c->quiet);
	/* HEAD moved: say so, as git checkout -b does */
	if (opts.switch_head && !c->quiet && strcmp(before, res->conversation))
		fprintf(stderr, "Switched to a new conversation '%s'\n",
			res->conversation);
	turn_stream_result(res, r, c->quiet);
	if (turn_stream_gone && !freopen("/dev/null", "w", stdout))
		turn_stream_gone = 1;	/* nothing more can be printed anyway */
done:
	aptix_run_free(run);
	aptix_buf_release(&wsid);
	aptix_config_free(cfg);
	return rc;
}
