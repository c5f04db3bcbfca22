/*
 * porcelain/chat.c - aptix chat: a conversation held turn after turn,
 * with slash commands (chat-model.c) and, on a terminal, line editing
 * and a picker (chat-tty.c).
 *
 * Every turn goes through the staged turn API (aptix/run.h), as
 * `continue` does, and is an ordinary snapshot: log, show and fork see
 * it. The answer streams to stdout; status lines go to stderr, so that
 * `aptix chat < script > answers` is a batch run (one turn a line).
 *
 * One chat per conversation: a chat holds an advisory lock (fcntl) on
 * <store>/chat/<conversation>.lock, which names its pid and since when;
 * the lock goes with the process, however it ends. A conversation with
 * a turn in flight (the running table) is busy too. A second chat is
 * told who holds it and may view it read-only or fork it.
 *
 * Signals during a turn: SIGINT and SIGTERM cancel it (it is committed
 * as failed, the instruction and partial answer kept); SIGHUP lets it
 * finish and commit (the answer is paid for), then the chat ends.
 * SIGPIPE is ignored: a closed stdout never loses a turn either.
 */
#ifndef _POSIX_C_SOURCE
# define _POSIX_C_SOURCE 200809L
#endif
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <aptix.h>
#include <aptix/index.h>
#include <aptix/revparse.h>
#include <aptix/refs.h>
#include <aptix/workspace.h>
#include <aptix/rag.h>

#include "chat.h"
#include "cli.h"
#include "commands.h"
#include "parse-options.h"
#include "turn-cli.h"
#include "view.h"

static const char *const chat_usage[] = {
	"aptix chat [--new | --session <conversation|session> [--fork]] "
	"[--model <model>] [--read-only] [--file <path>...] "
	"[--files-from <file>] [--no-files] [--no-rag] [--workspace <id>]",
	"",
	"Holds a conversation: each input is a turn, slash commands (/help)",
	"do the rest. On a terminal, a picker offers the workspace's",
	"conversations; otherwise each line of stdin is one turn (a line",
	"ending with a backslash goes on with the next), answers go to",
	"stdout and status lines to stderr.",
	NULL
};

static volatile sig_atomic_t cancelled, hangup;

static void on_cancel(int sig)
{
	(void)sig;
	cancelled = 1;
}

static void on_hangup(int sig)
{
	(void)sig;
	hangup = 1;
}

struct chat_lock {
	int fd;
	char conv[APTIX_CONV_MAXLEN + 1];
};

struct chat {
	aptix_repo *repo;
	aptix_config *cfg;
	struct turn_cli tc;		/* model, active files, workspace */
	char *model;			/* /model's, owned */
	char conv[APTIX_CONV_MAXLEN + 1];
	aptix_conv_info ci;		/* of conv; zeroed when new */
	int has_ci;
	int fork_pending;		/* the next turn forks fork_from */
	aptix_oid fork_from;
	int compact;			/* the next turn starts a new chain */
	int read_only;			/* viewing: no turn, no lock */
	int want_read_only;		/* --read-only */
	int forking;			/* --fork: a busy one is viewed */
	int interactive;
	int starting;			/* errors are fatal (before any input) */
	int quit;
	struct chat_lock lock;
	struct chat_tty *tty;
	/* the workspace scope of the picker */
	const char *ws;
	int explicit_ws;
	aptix_buf derived;
	aptix_config *scope_cfg;
};

/* --- Small helpers ------------------------------------------------------ */

static void status_line(const char *fmt, ...) CLI_PRINTF(1, 2);
static void status_line(const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
}

/*
 * An error: fatal (exit 128, as git's) while the chat starts, since it
 * then has nothing to hold; later the chat says it and goes on.
 */
static int chat_error(const struct chat *ch, const char *fmt, ...)
	CLI_PRINTF(2, 3);
static int chat_error(const struct chat *ch, const char *fmt, ...)
{
	va_list ap;
	char msg[1024];

	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	if (ch->starting)
		die("%s", msg);
	return error("%s", msg);
}

static void reload_conv(struct chat *ch)
{
	ch->has_ci = aptix_index_conversation(&ch->ci, ch->repo,
					      ch->conv) == 0;
	if (!ch->has_ci) {
		memset(&ch->ci, 0, sizeof(ch->ci));
		aptix_error_clear();
	}
}

/* The model of the next turn: /model's, --model or openai.model. */
static const char *model_of(const struct chat *ch)
{
	const char *m = NULL;

	if (ch->model)
		return ch->model;
	if (aptix_config_string(&m, ch->cfg, "openai.model") < 0 || !m) {
		aptix_error_clear();
		return "(unset)";
	}
	return m;
}

static const char *conv_title(const struct chat *ch)
{
	return ch->has_ci && *ch->ci.title ? ch->ci.title : "(new)";
}

/*
 * Run `aptix <args>` (the same code as the command line) and wait. Its
 * output shows inline, never in a pager: the keys typed next belong to
 * the chat's prompt.
 */
static int run_aptix(const char **args)
{
	aptix_process p = APTIX_PROCESS_INIT;
	const char *argv[32];
	size_t n = 0;

	/* this very binary, whatever PATH holds */
	argv[n++] = "/proc/self/exe";
	argv[n++] = "--no-pager";
	while (*args && n < 31)
		argv[n++] = *args++;
	argv[n] = NULL;
	p.argv = argv;
	return cli_run_foreground(&p);
}

/* --- One chat per conversation ------------------------------------------ */

struct holder {
	long pid;
	int64_t since;
	char host[65];
	int turn;		/* a turn in flight, not a chat */
};

static int find_running(const aptix_running_info *r, void *payload)
{
	struct holder *h = payload;

	if (!r->alive || strcmp(r->conversation, h->host))
		return 0;
	h->pid = r->pid;
	h->since = r->since_ms;
	h->turn = 1;
	return 0;
}

/* Is a turn of conv in flight (in any process)? Fills h when it is. */
static int turn_running(struct chat *ch, const char *conv, struct holder *h)
{
	memset(h, 0, sizeof(*h));
	snprintf(h->host, sizeof(h->host), "%s", conv);
	if (aptix_run_foreach_running(ch->repo, find_running, h) < 0) {
		aptix_error_clear();
		return 0;
	}
	if (h->turn)
		snprintf(h->host, sizeof(h->host), "this host");
	return h->turn;
}

static void lock_path(aptix_buf *out, struct chat *ch, const char *conv)
{
	aptix_buf_clear(out);
	aptix_buf_printf(out, "%s/chat", aptix_repo_path(ch->repo));
	if (conv)
		aptix_buf_printf(out, "/%s.lock", conv);
}

/* Unlink, then close: the next taker checks it locked a linked file. */
static void lock_release(struct chat *ch)
{
	aptix_buf path = APTIX_BUF_INIT;

	if (ch->lock.fd >= 0) {
		lock_path(&path, ch, ch->lock.conv);
		unlink(path.ptr);
		close(ch->lock.fd);	/* the fcntl lock goes with it */
	}
	ch->lock.fd = -1;
	*ch->lock.conv = '\0';
	aptix_buf_release(&path);
}

/*
 * Take the chat lock of conv: 0; 1 when another chat (or a turn in
 * flight) holds it, h saying who; -1 when the lock cannot be made (then
 * the chat goes on without it, with a warning).
 */
static int lock_take(struct chat *ch, const char *conv, struct holder *h)
{
	aptix_buf path = APTIX_BUF_INIT;
	struct flock fl;
	char buf[256], host[65];
	struct stat st_fd, st_path;
	ssize_t n;
	int fd, r = 0, tries = 0;

	if (!strcmp(ch->lock.conv, conv))
		return 0;
	memset(h, 0, sizeof(*h));
	lock_path(&path, ch, NULL);
	if (mkdir(path.ptr, 0700) < 0 && errno != EEXIST) {
		r = -1;
		goto done;
	}
	lock_path(&path, ch, conv);
again:
	if ((fd = open(path.ptr, O_RDWR | O_CREAT | O_CLOEXEC, 0600)) < 0) {
		r = -1;
		goto done;
	}
	memset(&fl, 0, sizeof(fl));
	fl.l_type = F_WRLCK;
	fl.l_whence = SEEK_SET;
	if (fcntl(fd, F_SETLK, &fl) < 0) {
		n = pread(fd, buf, sizeof(buf) - 1, 0);
		buf[n > 0 ? n : 0] = '\0';
		if (sscanf(buf, "%ld %" SCNd64 " %64s", &h->pid, &h->since,
			   h->host) < 2)
			h->pid = 0;
		close(fd);
		r = 1;
		goto done;
	}
	if (fstat(fd, &st_fd) < 0 || stat(path.ptr, &st_path) < 0 ||
	    st_fd.st_ino != st_path.st_ino || st_fd.st_dev != st_path.st_dev) {
		/* its holder unlinked it as we opened it: take the new one */
		close(fd);
		if (++tries < 5)
			goto again;
		r = -1;
		goto done;
	}
	if (turn_running(ch, conv, h)) {
		close(fd);
		r = 1;
		goto done;
	}
	if (gethostname(host, sizeof(host) - 1) < 0)
		snprintf(host, sizeof(host), "unknown");
	host[sizeof(host) - 1] = '\0';
	n = snprintf(buf, sizeof(buf), "%ld %" PRId64 " %s\n", (long)getpid(),
		     aptix_now_ms(), host);
	if (ftruncate(fd, 0) < 0 || pwrite(fd, buf, (size_t)n, 0) != n)
		warning("cannot write %s: %s", path.ptr, strerror(errno));
	lock_release(ch);
	ch->lock.fd = fd;
	snprintf(ch->lock.conv, sizeof(ch->lock.conv), "%s", conv);
done:
	if (r < 0)
		warning("cannot lock %s: %s (another chat could open this "
			"conversation too)", path.ptr, strerror(errno));
	aptix_buf_release(&path);
	return r < 0 ? 0 : r;
}

static void say_holder(const char *conv, const struct holder *h)
{
	char when[32];

	if (h->turn)
		status_line("conversation %.8s is busy: a turn is running "
			    "(pid %ld, since %s)", conv, h->pid,
			    aptix_time_fmt(when, h->since));
	else if (h->pid)
		status_line("conversation %.8s is open in another chat "
			    "(pid %ld on %s, since %s)", conv, h->pid,
			    *h->host ? h->host : "?",
			    aptix_time_fmt(when, h->since));
	else
		status_line("conversation %.8s is open in another chat", conv);
}

/* --- What a resumed conversation said ---------------------------------- */

#define RECAP_TURNS 3		/* turns shown when a conversation opens */
#define RECAP_INSTRUCTION_LINES 4
#define RECAP_ANSWER_LINES 8

/*
 * The sessions of this line of history, the oldest first, up to the
 * newest max (0: all); a malloc'd array, *nr of them. Stops quietly at
 * what the index cannot read.
 */
static aptix_session_info *history_of(struct chat *ch, size_t max,
				      size_t *nr)
{
	aptix_session_info *v = NULL, tmp;
	aptix_revwalk *w = NULL;
	aptix_revwalk_entry e;
	size_t alloc = 0, i;
	int r = -1;

	*nr = 0;
	/* one line of parents: the walk goes up it in order */
	if (ch->has_ci && ch->ci.has_head &&
	    aptix_revwalk_new(&w, ch->repo) == 0)
		r = aptix_revwalk_push(w, &ch->ci.head);
	while (r == 0 && (!max || *nr < max) &&
	       aptix_revwalk_next_entry(&e, w) == 0) {
		v = cli_grow(v, &alloc, *nr, sizeof(*v));
		aptix_revwalk_entry_info(&v[(*nr)++], &e);
	}
	aptix_revwalk_free(w);
	aptix_error_clear();
	for (i = 0; i < *nr / 2; i++) {
		tmp = v[i];
		v[i] = v[*nr - 1 - i];
		v[*nr - 1 - i] = tmp;
	}
	return v;
}

/*
 * At most max lines of text, each after prefix (sanitized for the
 * terminal), then how many were left out; hint follows that count.
 */
static void put_lines(FILE *out, const char *prefix, const aptix_buf *text,
		      size_t max, const char *hint)
{
	const char *p = text->ptr, *end = text->ptr + text->len, *nl;
	size_t shown = 0, left = 0;

	while (end > p && (end[-1] == '\n' || end[-1] == '\r'))
		end--;
	for (; p < end; p = nl ? nl + 1 : end) {
		nl = memchr(p, '\n', (size_t)(end - p));
		if (shown == max) {
			left++;
			continue;
		}
		fputs(prefix, out);
		cli_print_sanitized(out, p, (size_t)((nl ? nl : end) - p));
		fputc('\n', out);
		shown++;
	}
	if (left)
		fprintf(out, "%s[%zu more line%s%s]\n", prefix, left,
			left == 1 ? "" : "s", hint);
}

/* One turn, as a recap: its number, id and date, instruction, answer. */
static void recap_turn(struct chat *ch, FILE *out,
		       const aptix_session_info *si)
{
	aptix_session s;
	aptix_turn t;
	aptix_buf b = APTIX_BUF_INIT;
	char date[64], hint[48];

	fprintf(out, "--- turn %lu, %s, %s\n", (unsigned long)si->generation,
		view_short_id(&si->id), view_date(date, si->created_at, 1));
	if (aptix_session_lookup(&s, ch->repo, &si->id) < 0) {
		aptix_error_clear();
		return;
	}
	if (aptix_turn_lookup(&t, ch->repo, &s.turn) == 0) {
		snprintf(hint, sizeof(hint), ": /show %lu",
			 (unsigned long)si->generation);
		if (aptix_blob_lookup(&b, ch->repo, &t.instruction) == 0)
			put_lines(out, "> ", &b, RECAP_INSTRUCTION_LINES,
				  hint);
		if (aptix_blob_lookup(&b, ch->repo, &t.answer) == 0)
			put_lines(out, "", &b, RECAP_ANSWER_LINES, hint);
		aptix_turn_release(&t);
	}
	aptix_error_clear();
	aptix_session_release(&s);
	aptix_buf_release(&b);
}

/* On a terminal, the last turns of the conversation just opened. */
static void recap(struct chat *ch)
{
	FILE *out = chat_tty_out();
	aptix_session_info *v;
	size_t nr, i;
	unsigned long earlier;

	if (!ch->interactive)
		return;
	v = history_of(ch, RECAP_TURNS, &nr);
	earlier = nr ? (unsigned long)v[0].generation - 1 : 0;
	if (earlier)
		fprintf(out, "... %lu earlier turn%s (/rewind lists them)\n",
			earlier, earlier == 1 ? "" : "s");
	for (i = 0; i < nr; i++)
		recap_turn(ch, out, &v[i]);
	if (nr)
		fputs("---\n", out);
	fflush(out);
	free(v);
}

/* --- Where the chat goes ------------------------------------------------ */

static void announce(struct chat *ch)
{
	aptix_chain_state cs;
	char when[32];

	if (!ch->has_ci || !ch->ci.has_head) {
		status_line("chat: new conversation %.8s%s", ch->conv,
			    ch->read_only ? " (read-only)" : "");
		return;
	}
	fprintf(stderr, "chat: conversation %.8s \"", ch->conv);
	view_puts(stderr, conv_title(ch));
	fprintf(stderr, "\", %lu turn%s, last %s%s\n",
		(unsigned long)ch->ci.committed,
		ch->ci.committed == 1 ? "" : "s",
		aptix_session_status_name(ch->ci.last_status),
		ch->read_only ? " (read-only)" : "");
	if (aptix_chain_state_of(&cs, ch->repo, &ch->ci.head,
				 aptix_now_ms()) < 0) {
		aptix_error_clear();
		return;
	}
	if (cs.has_chain && cs.expired)
		status_line("chat: the response chain expired on %s: the next "
			    "turn starts a new one, with the context "
			    "rehydrated from the store",
			    aptix_time_fmt(when, cs.expires_at));
}

/* Say where the chat is; on a terminal, recall the last turns. */
static void arrive(struct chat *ch)
{
	announce(ch);
	recap(ch);
	if (ch->has_ci && ch->ci.has_last &&
	    ch->ci.last_status == APTIX_SESSION_FAILED)
		status_line("chat: the newest turn failed; /rerun runs it "
			    "again");
}

static int go_to(struct chat *ch, const char *conv);

static void new_conversation(struct chat *ch)
{
	char id[APTIX_UUID_STRSZ + 1];

	if (aptix_uuid_v4(id) < 0)
		die_aptix();
	ch->want_read_only = 0;	/* a fresh one is nobody else's */
	ch->forking = 0;
	go_to(ch, id);
}

/* The next turn forks id into a new conversation. */
static void start_fork(struct chat *ch, const aptix_oid *id, const char *why)
{
	ch->fork_pending = 1;
	ch->fork_from = *id;
	status_line("chat: %s: the next turn forks %s into a new "
		    "conversation", why, view_short_id(id));
}

/*
 * Move to conversation conv. 0; -1 when it is busy and the user chose
 * neither to view nor to fork it (or could not be asked).
 */
static int go_to(struct chat *ch, const char *conv)
{
	struct holder h;
	int fork = 0, k;

	if (ch->want_read_only) {
		lock_release(ch);
		ch->read_only = 1;
	} else if (lock_take(ch, conv, &h) == 1) {
		say_holder(conv, &h);
		if (!ch->forking && !ch->interactive)
			return chat_error(ch, "conversation %.8s is held: use "
					  "--read-only to view it, or --fork "
					  "to continue in a new conversation",
					  conv);
		if (!ch->forking) {
			k = chat_ask("[r] view it read-only, [f] fork it "
				     "into a new conversation, [q] quit? ",
				     "rfq");
			if (k == 'q' || !k)
				return -1;
			fork = k == 'f';
		}
		lock_release(ch);
		ch->read_only = 1;
	} else {
		ch->read_only = 0;
	}
	snprintf(ch->conv, sizeof(ch->conv), "%s", conv);
	ch->fork_pending = 0;
	ch->compact = 0;
	reload_conv(ch);
	arrive(ch);
	if (fork && ch->has_ci && ch->ci.has_head)
		start_fork(ch, &ch->ci.head, "as asked");
	return 0;
}

/* Go to a conversation, or to a session (forked when not a head). */
static int go_to_name(struct chat *ch, const char *name, int fork)
{
	char conv[APTIX_CONV_MAXLEN + 1];
	aptix_session s;
	aptix_oid id;

	ch->forking = fork;
	if (aptix_conv_resolve(conv, ch->repo, name) == 0) {
		if (go_to(ch, conv) < 0)
			return -1;
		if (fork && ch->has_ci && ch->ci.has_head)
			start_fork(ch, &ch->ci.head, "--fork");
		return 0;
	}
	aptix_error_clear();
	if (aptix_revparse(&id, ch->repo, name) < 0)
		return chat_error(ch, "'%s' names no conversation or session",
				  name);
	if (aptix_session_lookup(&s, ch->repo, &id) < 0)
		return chat_error(ch, "%s", aptix_error_last()->message);
	snprintf(conv, sizeof(conv), "%s", s.conversation);
	aptix_session_release(&s);
	if (go_to(ch, conv) < 0)
		return -1;
	if (fork)
		start_fork(ch, &id, "--fork");
	else if (!ch->has_ci || !ch->ci.has_head ||
		 aptix_oid_cmp(&ch->ci.head, &id))
		start_fork(ch, &id, "not the head of its conversation");
	return 0;
}

/* --- The picker --------------------------------------------------------- */

static int collect_row(const aptix_conv_info *ci, void *payload)
{
	struct chat *ch = (struct chat *)((void **)payload)[0];
	struct picker *p = (struct picker *)((void **)payload)[1];
	size_t *alloc = (size_t *)((void **)payload)[2];

	if (ci->archived)
		return 0;
	p->rows = cli_grow(p->rows, alloc, p->nr, sizeof(*p->rows));
	p->rows[p->nr].ci = *ci;
	p->rows[p->nr].here = view_workspace_holds(ch->ws, ch->explicit_ws,
						   ci->workspace);
	p->nr++;
	return 0;
}

/* Load the picker's rows; returns the number in this workspace. */
static size_t picker_load(struct chat *ch, struct picker *p)
{
	struct picker tmp;
	size_t alloc = 0, i, here = 0;
	void *payload[3];

	memset(&tmp, 0, sizeof(tmp));
	payload[0] = ch;
	payload[1] = &tmp;
	payload[2] = &alloc;
	if (aptix_index_foreach_conversation(ch->repo, collect_row,
					     payload) < 0)
		die_aptix();
	for (i = 0; i < tmp.nr; i++)
		here += tmp.rows[i].here;
	picker_init(p, tmp.rows, tmp.nr);
	return here;
}

/* 0: a conversation was chosen and gone to; -1: left. */
static int pick(struct chat *ch)
{
	struct picker p;
	const struct picker_row *row;
	char conv[APTIX_CONV_MAXLEN + 1];

	picker_load(ch, &p);
	if (!chat_pick(&p, ch->ws)) {
		picker_release(&p);
		return -1;
	}
	row = picker_selected(&p);
	if (row)
		snprintf(conv, sizeof(conv), "%s", row->ci.id);
	picker_release(&p);
	if (!row) {
		new_conversation(ch);
		return 0;
	}
	return go_to(ch, conv);
}

/* --- A turn ------------------------------------------------------------- */

static void set_signal(int sig, void (*fn)(int), struct sigaction *old)
{
	struct sigaction sa;

	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = fn;
	sigemptyset(&sa.sa_mask);
	sigaction(sig, &sa, old);
}

/* After SIGHUP: nobody reads the terminal any more. */
static void detach_output(void)
{
	int fd = open("/dev/null", O_WRONLY);

	fflush(stdout);
	if (fd >= 0) {
		dup2(fd, 1);
		dup2(fd, 2);
		close(fd);
	}
	clearerr(stdout);
	clearerr(stderr);
}

static int chat_turn(struct chat *ch, aptix_run_kind kind,
		     const aptix_oid *from, const char *text)
{
	aptix_run_options opts = APTIX_RUN_OPTIONS_INIT;
	aptix_gather_options g = APTIX_GATHER_OPTIONS_INIT;
	struct sigaction old_int, old_term, old_hup;
	const aptix_run_result *res;
	aptix_buf wsid = APTIX_BUF_INIT;
	struct turn_stream st;
	aptix_run *run = NULL;
	struct holder h;
	int r;

	if (ch->fork_pending && kind == APTIX_RUN_CONTINUE) {
		kind = APTIX_RUN_FORK;
		from = &ch->fork_from;
	}
	turn_stream_init(&st, 0);
	ch->tc.conversation = ch->conv;
	/* chat continues ids it resolved or made itself: never a typo */
	ch->tc.create = 1;
	ch->tc.model = ch->model;
	turn_cli_setup(&opts, &g, &wsid, ch->repo, ch->cfg, &ch->tc, &st);
	opts.kind = kind;
	opts.from = from;
	opts.instruction = text;
	opts.instruction_len = text ? strlen(text) : 0;
	opts.switch_head = 1;
	opts.new_chain = ch->compact;
	/* cleared once the input was read: a Ctrl-C since cancels it */
	opts.http.cancel = &cancelled;
	if (aptix_run_new(&run, ch->repo, &opts) < 0 ||
	    aptix_run_begin(run) < 0) {
		error_aptix();
		aptix_run_free(run);
		aptix_buf_release(&wsid);
		return -1;
	}
	res = aptix_run_result_of(run);
	set_signal(SIGINT, on_cancel, &old_int);
	set_signal(SIGTERM, on_cancel, &old_term);
	set_signal(SIGHUP, on_hangup, &old_hup);

	if (aptix_run_gather(run, &g) == 0 && aptix_run_request(run) == 0)
		aptix_run_send(run);
	r = aptix_run_finish(run);

	sigaction(SIGINT, &old_int, NULL);
	sigaction(SIGTERM, &old_term, NULL);
	sigaction(SIGHUP, &old_hup, NULL);
	if (hangup)
		detach_output();
	turn_stream_end(&st, res, r || !res->committed);
	if (!res->committed) {
		error_aptix();
		aptix_run_free(run);
		aptix_buf_release(&wsid);
		return -1;
	}
	turn_stream_report(res, r, 0);
	if (cancelled)
		status_line("chat: cancelled; the turn is kept as failed, with "
			    "its instruction and the answer so far (/rerun "
			    "runs it again)");
	if (strcmp(res->conversation, ch->conv) && !r) {
		/* a fork or rerun made a new conversation: follow it */
		status_line("chat: now in conversation %.8s",
			    res->conversation);
		if (lock_take(ch, res->conversation, &h) == 1)
			say_holder(res->conversation, &h);
		snprintf(ch->conv, sizeof(ch->conv), "%s", res->conversation);
		ch->read_only = 0;
		ch->want_read_only = 0;
		ch->fork_pending = 0;
	}
	if (!r)
		ch->compact = 0;
	reload_conv(ch);
	aptix_run_free(run);
	aptix_buf_release(&wsid);
	return r ? 1 : 0;
}

/* --- Slash commands ----------------------------------------------------- */

static void slash_help(void)
{
	const struct chat_cmd *c;
	char name[40];

	printf("Type an instruction to run a turn. Ctrl-J or Alt-Enter starts "
	       "a new line in it\n(so does a line ending with \\); a paste "
	       "is one instruction, its lines kept.\nStart a line with // "
	       "to send one beginning with /. In a revision, HEAD is\nthis "
	       "conversation's last turn, and <n> its turn n (1: the "
	       "first).\n\n");
	for (c = chat_commands; c->name; c++) {
		snprintf(name, sizeof(name), "/%s %s", c->name, c->args);
		if (strlen(name) > 20)
			printf("  %s\n  %-20s %s\n", name, "", c->help);
		else
			printf("  %-20s %s\n", name, c->help);
	}
}

/* The session shown as turn n (1: the root) of this line of history. */
static int nth_turn(struct chat *ch, aptix_oid *out, unsigned long n)
{
	aptix_revwalk *w = NULL;
	aptix_revwalk_entry e;
	unsigned long last = 0;
	int r;

	if ((r = aptix_revwalk_new(&w, ch->repo)) == 0)
		r = aptix_revwalk_push(w, &ch->ci.head);
	while (r == 0 && (r = aptix_revwalk_next_entry(&e, w)) == 0) {
		if (!last)
			last = e.generation;
		if (e.generation == n)
			*out = e.id;
		if (e.generation <= n) {
			r = e.generation == n ? 0 : APTIX_ITEROVER;
			break;
		}
	}
	aptix_revwalk_free(w);
	if (r == 0)
		return 0;
	if (r != APTIX_ITEROVER)
		return error_aptix();
	return error("no turn %lu: the last one is turn %lu", n, last);
}

static int need_turns(struct chat *ch)
{
	if (ch->has_ci && ch->ci.has_head)
		return 0;
	return error("no turn yet in this conversation");
}

/*
 * A revision named in the chat: a turn number (1: the first of this line
 * of history), or a revision where HEAD and @ mean this conversation's
 * head, not the store's HEAD (which another command may have moved).
 */
static int chat_rev(struct chat *ch, aptix_oid *out, const char *arg)
{
	aptix_buf name = APTIX_BUF_INIT;
	const char *rest = NULL;
	unsigned long n;
	char *end;
	int r;

	if (arg[0] >= '1' && arg[0] <= '9' &&
	    (n = strtoul(arg, &end, 10)) > 0 && !*end) {
		if (need_turns(ch) < 0)
			return -1;
		return nth_turn(ch, out, n);
	}
	if (!strncmp(arg, "HEAD", 4) && strchr("~^@", arg[4]))
		rest = arg + 4;
	else if (arg[0] == '@' && strchr("~^", arg[1]))
		rest = arg + 1;
	else if (arg[0] == '@' && arg[1] == '{' && arg[2] != '-')
		rest = arg + 1;
	if (rest)
		aptix_buf_printf(&name, "%s%s", ch->conv, rest);
	r = aptix_revparse(out, ch->repo, rest ? name.ptr : arg);
	aptix_buf_release(&name);
	return r < 0 ? error_aptix() : 0;
}

static void slash_show(struct chat *ch, const char *arg)
{
	const char *args[4] = { "show", NULL, NULL, NULL };
	aptix_oid id;

	if (!*arg) {
		if (need_turns(ch) < 0)
			return;
		id = ch->ci.head;
	} else if (chat_rev(ch, &id, arg) < 0) {
		return;
	}
	args[1] = aptix_oid_hex(&id);
	run_aptix(args);
}

static void slash_diff(struct chat *ch)
{
	const char *args[4] = { "diff", NULL, NULL, NULL };
	aptix_session_info si;
	char a[APTIX_OID_HEXSZ + 1];

	if (need_turns(ch) < 0)
		return;
	if (aptix_index_session(&si, ch->repo, &ch->ci.head) < 0) {
		error_aptix();
		return;
	}
	if (!si.has_parent) {
		error("the first turn: nothing to compare it with");
		return;
	}
	snprintf(a, sizeof(a), "%s", aptix_oid_hex(&si.parent));
	args[1] = a;
	args[2] = aptix_oid_hex(&ch->ci.head);
	run_aptix(args);
}

static void slash_status(struct chat *ch)
{
	const char *args[32];
	size_t n = 0, i;

	args[n++] = "status";
	for (i = 0; i < ch->tc.files.nr && n < 29; i++) {
		args[n++] = "--file";
		args[n++] = ch->tc.files.items[i];
	}
	args[n] = NULL;
	run_aptix(args);
}

/* What the chain of the next turn holds: turns since it started. */
static void chain_holds(struct chat *ch, size_t *turns, size_t *chars)
{
	aptix_revwalk *w = NULL;
	aptix_revwalk_entry e;
	aptix_turn t;
	aptix_buf b = APTIX_BUF_INIT;
	int more = 0;

	*turns = *chars = 0;
	if (aptix_revwalk_new(&w, ch->repo) == 0)
		more = aptix_revwalk_push(w, &ch->ci.head) == 0;
	while (more && aptix_revwalk_next_entry(&e, w) == 0) {
		if (aptix_turn_lookup(&t, ch->repo, &e.turn) < 0)
			break;
		if (t.response_id) {
			(*turns)++;
			if (aptix_blob_lookup(&b, ch->repo,
					      &t.instruction) == 0)
				*chars += b.len;
			if (aptix_blob_lookup(&b, ch->repo, &t.answer) == 0)
				*chars += b.len;
			if (!t.previous_response_id)
				more = 0;	/* the chain started here */
		}
		aptix_turn_release(&t);
	}
	aptix_revwalk_free(w);
	aptix_error_clear();
	aptix_buf_release(&b);
}

static void slash_context(struct chat *ch)
{
	aptix_scan_options so = APTIX_SCAN_OPTIONS_INIT;
	aptix_chain_state cs;
	aptix_file_set fs;
	char when[32];
	size_t i, turns, chars, nsend = 0, nkept = 0, nskip = 0;
	long send_bytes = 0, kept_bytes = 0;
	int restart, has_head = ch->has_ci && ch->ci.has_head;

	memset(&cs, 0, sizeof(cs));
	if (has_head && aptix_chain_state_of(&cs, ch->repo, &ch->ci.head,
					     aptix_now_ms()) < 0) {
		error_aptix();
		return;
	}
	restart = !cs.has_chain || cs.expired || ch->compact;
	printf("Conversation %.8s, %lu turn%s%s%s\n", ch->conv,
	       (unsigned long)ch->ci.committed,
	       ch->ci.committed == 1 ? "" : "s",
	       has_head ? ", head " : "", has_head ?
	       view_short_id(&ch->ci.head) : "");
	if (!has_head)
		printf("Chain: none yet; the first turn starts one\n");
	else if (!cs.has_chain)
		printf("Chain: none (no completed turn); the next turn "
		       "starts one with the earlier turns rehydrated\n");
	else if (cs.expired)
		printf("Chain: %s expired on %s; the next turn starts a new "
		       "one with the context rehydrated from the store\n",
		       cs.response_id, aptix_time_fmt(when, cs.expires_at));
	else
		printf("Chain: %s, alive until %s%s\n", cs.response_id,
		       aptix_time_fmt(when, cs.expires_at), ch->compact ?
		       "; /compact: the next turn starts a new one" : "");
	if (has_head && cs.has_chain && !restart) {
		chain_holds(ch, &turns, &chars);
		printf("The chain holds %zu turn%s (%zu bytes of instructions "
		       "and answers)\n", turns, turns == 1 ? "" : "s", chars);
	}
	aptix_file_set_init(&fs);
	if (!ch->tc.no_files) {
		so.root = aptix_repo_workdir(ch->repo);
		so.cfg = ch->cfg;
		so.paths = (const char *const *)ch->tc.files.items;
		so.npaths = ch->tc.files.nr;
		if (aptix_workspace_scan(&fs, &so) < 0 ||
		    aptix_context_plan(ch->repo, has_head ? &ch->ci.head :
				       NULL, restart, &fs, NULL) < 0) {
			error_aptix();
			aptix_file_set_release(&fs);
			return;
		}
	}
	for (i = 0; i < fs.n; i++) {
		if (fs.v[i].action == APTIX_FILE_SEND) {
			nsend++;
			send_bytes += fs.v[i].size;
		} else if (fs.v[i].action == APTIX_FILE_UNCHANGED) {
			nkept++;
			kept_bytes += fs.v[i].size;
		} else {
			nskip++;
		}
	}
	printf("Next turn: model %s\n", model_of(ch));
	printf("Active files: %zu to send (%ld bytes), %zu already in the "
	       "chain (%ld bytes), %zu not sent\n", nsend, send_bytes, nkept,
	       kept_bytes, nskip);
	for (i = 0; i < fs.n; i++) {
		printf("  %-9s %8ld  ", aptix_file_action_name(fs.v[i].action),
		       fs.v[i].size);
		view_path(stdout, fs.v[i].path);
		putchar('\n');
	}
	printf("Retrieval (RAG): %s\n", ch->tc.no_rag ? "off" :
	       "on: chunks are chosen for the instruction");
	if (ch->fork_pending)
		printf("The next turn forks %s into a new conversation\n",
		       view_short_id(&ch->fork_from));
	aptix_file_set_release(&fs);
}

static void slash_workspace(struct chat *ch)
{
	aptix_buf wsid = APTIX_BUF_INIT;
	size_t files = 0, chunks = 0;
	struct picker p;
	size_t here;

	if (aptix_repo_workspace_id(&wsid, ch->repo, ch->cfg,
				    ch->tc.workspace) < 0) {
		aptix_error_clear();
		aptix_buf_clear(&wsid);
	}
	printf("Workspace: %s\n", wsid.len ? wsid.ptr : "(none)");
	printf("Work tree: ");
	view_puts(stdout, aptix_repo_workdir(ch->repo));
	printf("\nStore:     ");
	view_puts(stdout, aptix_repo_path(ch->repo));
	here = picker_load(ch, &p);
	printf("\nConversations: %zu here, %zu in all\n", here, p.nr);
	picker_release(&p);
	if (aptix_rag_index_count(&files, &chunks, ch->repo, ch->cfg,
				  NULL) < 0) {
		printf("RAG index: unknown (%s)\n",
		       aptix_error_last()->message);
		aptix_error_clear();
	} else {
		printf("RAG index: %zu files, %zu chunks%s\n", files, chunks,
		       files ? "" : " (run 'aptix index')");
	}
	aptix_buf_release(&wsid);
}

static void files_list(struct chat *ch)
{
	size_t i;

	if (!ch->tc.files.nr)
		printf("No file added: the turns send the work tree's "
		       "modified files%s\n", ch->tc.no_files ?
		       " (off: --no-files)" : "");
	for (i = 0; i < ch->tc.files.nr; i++) {
		view_puts(stdout, ch->tc.files.items[i]);
		putchar('\n');
	}
}

static void slash_files(struct chat *ch, const char *arg)
{
	char *copy, *word, *save = NULL;
	int add;
	size_t i;

	if (!*arg) {
		files_list(ch);
		return;
	}
	if (!strcmp(arg, "clear")) {
		aptix_strlist_release(&ch->tc.files);
		status_line("chat: no active file added any more");
		return;
	}
	add = !strncmp(arg, "add ", 4);
	if (!add && strncmp(arg, "drop ", 5)) {
		error("usage: /files [add|drop <path>...|clear]");
		return;
	}
	copy = strdup(arg + (add ? 4 : 5));
	if (!copy)
		die("out of memory");
	for (word = strtok_r(copy, " \t", &save); word;
	     word = strtok_r(NULL, " \t", &save)) {
		for (i = 0; i < ch->tc.files.nr; i++)
			if (!strcmp(ch->tc.files.items[i], word))
				break;
		if (add && i == ch->tc.files.nr) {
			if (access(word, R_OK) < 0)
				warning("%s: %s (kept: it may appear)", word,
					strerror(errno));
			if (aptix_strlist_push(&ch->tc.files, word) < 0)
				die_aptix();
		} else if (!add && i < ch->tc.files.nr) {
			free(ch->tc.files.items[i]);
			memmove(ch->tc.files.items + i,
				ch->tc.files.items + i + 1,
				(ch->tc.files.nr - i - 1) *
				sizeof(*ch->tc.files.items));
			ch->tc.files.nr--;
		} else if (!add) {
			error("%s is not an added file", word);
		}
	}
	free(copy);
	files_list(ch);
}

static void slash_model(struct chat *ch, const char *arg)
{
	if (*arg) {
		free(ch->model);
		if (!(ch->model = strdup(arg)))
			die("out of memory");
		status_line("chat: the next turns use model %s", ch->model);
		return;
	}
	printf("%s\n", model_of(ch));
}

static void slash_fork(struct chat *ch, const char *arg)
{
	aptix_oid id;

	if (*arg) {
		if (chat_rev(ch, &id, arg) < 0)
			return;
	} else {
		if (need_turns(ch) < 0)
			return;
		id = ch->ci.head;
	}
	start_fork(ch, &id, "/fork");
}

/*
 * /rewind: the turns of this line of history, numbered; /rewind <n>: back
 * to turn n, whose answer is shown again: the next turn forks it, so the
 * turns after it stay as they are (in this conversation).
 */
static void slash_rewind(struct chat *ch, const char *arg)
{
	aptix_session_info *v, si;
	aptix_oid id;
	size_t nr, i;

	if (need_turns(ch) < 0)
		return;
	if (*arg) {
		if (chat_rev(ch, &id, arg) < 0)
			return;
		if (!aptix_oid_cmp(&id, &ch->ci.head)) {
			status_line("chat: that is the last turn: nothing to "
				    "go back from");
			return;
		}
		if (aptix_index_session(&si, ch->repo, &id) < 0) {
			error_aptix();
			return;
		}
		recap_turn(ch, stdout, &si);
		start_fork(ch, &id, "/rewind");
		return;
	}
	v = history_of(ch, 0, &nr);
	for (i = 0; i < nr; i++) {
		printf("%4lu  %s  ", (unsigned long)v[i].generation,
		       view_short_id(&v[i].id));
		view_put_truncated(stdout, v[i].summary, 60, 0);
		putchar('\n');
	}
	printf("/rewind <n> goes back to turn <n>: the next turn forks it "
	       "into a new conversation\n");
	free(v);
}

/*
 * /rerun: when the newest turn of this conversation failed (an error, or
 * Ctrl-C), its instruction again, in place: the conversation goes on as
 * if it had not failed. Otherwise the last turn again, as a branch.
 */
static void slash_rerun(struct chat *ch)
{
	aptix_oid from;

	if (ch->has_ci && ch->ci.has_last &&
	    ch->ci.last_status == APTIX_SESSION_FAILED) {
		from = ch->ci.last;
	} else {
		if (need_turns(ch) < 0)
			return;
		from = ch->ci.head;
	}
	chat_turn(ch, APTIX_RUN_RERUN, &from, NULL);
}

static void slash_rename(struct chat *ch, const char *arg)
{
	const char *keys[2];

	if (need_turns(ch) < 0)
		return;
	cli_env_keys(keys);
	if (aptix_conversation_set_title_keys(ch->repo, ch->conv, arg, keys,
					      2) < 0) {
		error_aptix();
		return;
	}
	reload_conv(ch);
	fprintf(stderr, "chat: conversation %.8s is now \"", ch->conv);
	view_puts(stderr, conv_title(ch));
	fputs("\"\n", stderr);
}

static void slash_edit(struct chat *ch)
{
	aptix_buf path = APTIX_BUF_INIT;
	struct chat_line l;
	char *text;

	aptix_buf_printf(&path, "%s/CHAT_EDITMSG", aptix_repo_path(ch->repo));
	text = chat_edit_text(path.ptr);
	aptix_buf_release(&path);
	if (!text)
		return;
	chat_parse(&l, text);
	if (l.kind == CHAT_LINE_EMPTY)
		status_line("chat: nothing written: no turn");
	else
		chat_turn(ch, APTIX_RUN_CONTINUE, NULL, text);
	free(text);
}

/* Refused here and now? Says why. */
static int refused(struct chat *ch, const struct chat_cmd *c)
{
	struct holder h;

	if ((c->flags & CHAT_F_WRITES) && ch->read_only) {
		error("/%s: this conversation is open read-only (/fork to "
		      "continue in a new one, /new for a fresh one)", c->name);
		return 1;
	}
	if ((c->flags & CHAT_F_BUSY) && turn_running(ch, ch->conv, &h)) {
		error("/%s is refused while a turn of this conversation runs "
		      "(pid %ld)", c->name, h.pid);
		return 1;
	}
	return 0;
}

static void run_command(struct chat *ch, const struct chat_cmd *c,
			const char *arg)
{
	const char *args[5] = { NULL, NULL, NULL, NULL, NULL };

	if (refused(ch, c))
		return;
	switch (c->id) {
	case CHAT_HELP:
		slash_help();
		break;
	case CHAT_NEW:
	case CHAT_CLEAR:
		new_conversation(ch);
		break;
	case CHAT_RESUME:
		if (*arg)
			go_to_name(ch, arg, 0);
		else if (!ch->interactive)
			error("/resume needs a conversation when not on a "
			      "terminal: /resume <conversation>");
		else
			pick(ch);
		break;
	case CHAT_FORK:
		slash_fork(ch, arg);
		break;
	case CHAT_REWIND:
		slash_rewind(ch, arg);
		break;
	case CHAT_RERUN:
		slash_rerun(ch);
		break;
	case CHAT_LOG:
		if (need_turns(ch) < 0)
			break;
		args[0] = "log";
		args[1] = "--graph";
		args[2] = "--oneline";
		args[3] = ch->conv;
		run_aptix(args);
		break;
	case CHAT_SHOW:
		slash_show(ch, arg);
		break;
	case CHAT_DIFF:
		slash_diff(ch);
		break;
	case CHAT_STATUS:
		slash_status(ch);
		break;
	case CHAT_CONTEXT:
		slash_context(ch);
		break;
	case CHAT_WORKSPACE:
		slash_workspace(ch);
		break;
	case CHAT_FILES:
		slash_files(ch, arg);
		break;
	case CHAT_MODEL:
		slash_model(ch, arg);
		break;
	case CHAT_RENAME:
		slash_rename(ch, arg);
		break;
	case CHAT_COMPACT:
		if (need_turns(ch) < 0)
			break;
		ch->compact = 1;
		status_line("chat: the next turn starts a new chain from the "
			    "summary and the recent turns");
		break;
	case CHAT_EDIT:
		slash_edit(ch);
		break;
	case CHAT_QUIT:
		ch->quit = 1;
		break;
	}
	fflush(stdout);
}

/* --- Input -------------------------------------------------------------- */

/* A batch input: one line, or several joined by trailing backslashes. */
static char *read_batch(void)
{
	aptix_buf in = APTIX_BUF_INIT;
	char *line = NULL, *out;
	size_t cap = 0;
	ssize_t n;
	int more = 1, any = 0;

	while (more && (n = getline(&line, &cap, stdin)) >= 0) {
		any = 1;
		more = chat_line_continues(line);
		if (in.len)
			aptix_buf_putc(&in, '\n');
		aptix_buf_puts(&in, line);
	}
	free(line);
	if (!any) {
		aptix_buf_release(&in);
		return NULL;
	}
	out = strdup(in.ptr);
	aptix_buf_release(&in);
	if (!out)
		die("out of memory");
	return out;
}

static const char *prompt(struct chat *ch)
{
	static char buf[128];
	char title[40];
	const char *t = conv_title(ch);
	size_t n = strlen(t);

	if (n > 30) {
		/* cut at a UTF-8 boundary */
		n = 27;
		while (n && ((unsigned char)t[n] & 0xc0) == 0x80)
			n--;
		snprintf(title, sizeof(title), "%.*s...", (int)n, t);
	} else {
		snprintf(title, sizeof(title), "%.*s", (int)n, t);
	}
	for (n = 0; title[n]; n++)
		if ((unsigned char)title[n] < 0x20)
			title[n] = ' ';
	snprintf(buf, sizeof(buf), "[%.8s %s]%s%s> ", ch->conv, title,
		 ch->fork_pending ? " (fork)" : "",
		 ch->read_only ? " (read-only)" : "");
	return buf;
}

static void handle(struct chat *ch, char *input)
{
	struct chat_line l;

	chat_parse(&l, input);
	switch (l.kind) {
	case CHAT_LINE_EMPTY:
		break;
	case CHAT_LINE_ERROR:
		error("%s", l.error);
		break;
	case CHAT_LINE_COMMAND:
		run_command(ch, l.cmd, l.arg);
		break;
	case CHAT_LINE_TEXT:
		if (ch->read_only && !ch->fork_pending) {
			error("this conversation is open read-only: /fork to "
			      "continue in a new one, /new for a fresh one");
			break;
		}
		chat_turn(ch, APTIX_RUN_CONTINUE, NULL, l.arg);
		break;
	}
}

/* HEAD's conversation, born or not (`aptix init` makes an unborn one). */
static int head_conversation(char *conv, aptix_repo *repo)
{
	aptix_ref ref;
	size_t plen = strlen(APTIX_CONV_PREFIX);
	int r = aptix_conv_resolve(conv, repo, "HEAD");

	if (r == 0)
		return 0;
	aptix_error_clear();
	if (aptix_ref_read(&ref, repo, "HEAD") < 0) {
		aptix_error_clear();
		return -1;
	}
	r = -1;
	if (ref.target && !strncmp(ref.target, APTIX_CONV_PREFIX, plen) &&
	    aptix_conv_check_id(ref.target + plen) == 0) {
		snprintf(conv, APTIX_CONV_MAXLEN + 1, "%s", ref.target + plen);
		r = 0;
	}
	aptix_error_clear();
	aptix_ref_release(&ref);
	return r;
}

/*
 * Where the chat starts: --new, --session, the picker, or HEAD's
 * conversation. 0; -1 when the user left. Errors are fatal here.
 */
static int chat_start(struct chat *ch, const char *session, int new_conv,
		      int fork)
{
	char conv[APTIX_CONV_MAXLEN + 1];
	struct picker p;

	if (new_conv) {
		new_conversation(ch);
	} else if (session) {
		if (go_to_name(ch, session, fork) < 0)
			return -1;
	} else if (ch->interactive) {
		size_t here = picker_load(ch, &p);

		picker_release(&p);
		if (!here)
			new_conversation(ch);
		else if (pick(ch) < 0)
			return -1;
	} else if (head_conversation(conv, ch->repo) == 0) {
		if (go_to(ch, conv) < 0)
			return -1;
	} else {
		aptix_error_clear();
		new_conversation(ch);
	}
	return *ch->conv ? 0 : -1;
}

int cmd_chat(int argc, const char **argv, struct aptix_repo *repo)
{
	struct chat ch;
	const char *session = NULL, *model = NULL;
	int new_conv = 0, fork = 0;
	char *input;
	aptix_buf hist = APTIX_BUF_INIT;
	struct option options[] = {
		OPT_BOOL(0, "new", &new_conv, "start a new conversation"),
		OPT_STRING(0, "session", &session, "id",
			   "resume a conversation, or continue from a "
			   "session (a fork when not a head)"),
		OPT_BOOL(0, "fork", &fork, "with --session: fork it into a "
			 "new conversation"),
		OPT_STRING(0, "model", &model, "model",
			   "model to use (default: openai.model)"),
		OPT_BOOL(0, "read-only", &ch.want_read_only, "view a "
			 "conversation "
			 "(another chat may hold it); run no turn"),
		TURN_CONTEXT_OPTIONS(ch.tc),
		OPT_END()
	};

	memset(&ch, 0, sizeof(ch));
	ch.lock.fd = -1;
	parse_options(argc, argv, options, chat_usage, PARSE_OPT_NO_ARGS);
	if (new_conv && session)
		die("--new and --session cannot be used together");
	if (fork && !session)
		die("--fork needs --session");
	ch.repo = repo;
	ch.interactive = isatty(0);
	if (model && !(ch.model = strdup(model)))
		die("out of memory");
	if (aptix_config_open(&ch.cfg, repo) < 0)
		die_aptix();
	ch.ws = view_workspace_scope(repo, &ch.scope_cfg, &ch.derived,
				     &ch.explicit_ws);
	signal(SIGPIPE, SIG_IGN);

	ch.starting = 1;
	if (chat_start(&ch, session, new_conv, fork) < 0)
		goto done;	/* the user left (or quit at a question) */
	ch.starting = 0;

	if (ch.interactive) {
		aptix_buf_printf(&hist, "%s/chat_history",
				 aptix_repo_path(repo));
		ch.tty = chat_tty_open(hist.ptr);
		/*
		 * Ctrl-C is a key while libedit reads, a SIGINT once Enter
		 * is pressed: one that comes before the turn has begun
		 * cancels it too, rather than killing the chat.
		 */
		set_signal(SIGINT, on_cancel, NULL);
		fprintf(chat_tty_out(), "Type /help for the commands, Ctrl-D "
			"or /quit to leave.\n");
	}
	while (!ch.quit && !hangup) {
		input = ch.tty ? chat_tty_read(ch.tty, prompt(&ch)) :
			read_batch();
		cancelled = 0;	/* a SIGINT from now on cancels its turn */
		if (!input)
			break;
		handle(&ch, input);
		free(input);
		if (ferror(stdout) && errno == EPIPE)
			break;	/* nobody reads the answers any more */
	}
	if (hangup)
		detach_output();
	else if (ch.tty)
		fputc('\n', chat_tty_out());
done:
	chat_tty_close(ch.tty);
	lock_release(&ch);
	aptix_buf_release(&hist);
	aptix_buf_release(&ch.derived);
	aptix_config_free(ch.scope_cfg);
	aptix_config_free(ch.cfg);
	aptix_strlist_release(&ch.tc.files);
	free(ch.model);
	return 0;
}
