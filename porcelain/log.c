/*
 * porcelain/log.c - aptix log: the history of conversations, newest
 * first, drawn from the session index alone (no object is inflated).
 *
 * The walk is the library's (aptix/revwalk.h), ordered by created_at
 * (newest first), ties broken by generation (higher first) then by id:
 * from start points (named sessions, conversation heads; HEAD by
 * default) it is lazy, so `log -n 50` costs about fifty index lookups
 * whatever the size of the store, and the failed attempts beside the
 * sessions walked come in, marked, unless --no-failed; --all is every
 * indexed session in topological date order (git's --date-order), so
 * the graph never breaks even when clocks are skewed. This file
 * filters what the walk returns (-S, --grep, paths, --skip, -n), holds
 * failed attempts newer than the tip until the tip is shown, and
 * prints.
 *
 * The graph is drawn by graph.c (git's graph.c state machine, reduced
 * to sessions with at most one parent); this file puts its part at the
 * start of each line, and removes the trailing blanks of lines that
 * carry no text. The pager is the one every command shares (pager.c).
 */
#include <ctype.h>
#include <regex.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <aptix.h>
#include "cli.h"
#include "commands.h"
#include "graph.h"
#include "pager.h"
#include "parse-options.h"
#include "tool-view.h"
#include "view.h"

static const char *const log_usage[] = {
	"aptix log [<options>] [[^]<session> | <a>..<b> | <conversation>...] "
	"[-- <path>...]",
	"",
	"Formats (--format): oneline, short, medium, or a string with",
	"%H %h (session), %P %p (parent), %T %t (turn), %c (conversation),",
	"%s (summary), %S (status), %d %D (decorations), %ad (date, as",
	"--date= shows it), %ai %aI (ISO, strict ISO: local time),",
	"%at (seconds), %am (milliseconds), %ar (relative), %as (short),",
	"%g (generation), %I or %B (instruction), %b (its body: after the",
	"first line), %A (answer), %gd %gD %gs (-g: reflog selector, whole,",
	"message), %n, %%, %x00, %Cred %Cgreen %Cblue %Creset %C(<color>)",
	"",
	"A..B: sessions reachable from B but not from A; ^A excludes A and",
	"its ancestors. --since/--until take ISO dates or '2 days ago'.",
	"--graph marks a session '*' and a root (a first turn) 'o'.",
	"-- <path>...: only the turns that sent one of those files (whole or",
	"a chunk of it; a directory names the files under it).",
	NULL
};

#define NONE UINT32_MAX
#define SHORT_ID 12
#define SHORT_CONV 8
#define DECORATE_UNSET -2	/* no --decorate: log.decorate says */
#define DECORATE_AUTO -1	/* on a terminal */

#define C_RESET "\033[m"
#define C_ID "\033[33m"
#define C_HEAD "\033[1;36m"
#define C_CONV "\033[1;32m"
#define C_FAILED "\033[31m"

/* A conversation head, for decorations. */
struct head {
	aptix_oid id;
	uint32_t next;			/* the next head at id, or NONE */
	char conv[APTIX_CONV_MAXLEN + 1];
};

enum fmt_kind { FMT_MEDIUM, FMT_SHORT, FMT_ONELINE, FMT_USER };

/*
 * A session held back (emit()), copied: a walk that streams (--all)
 * keeps no session it has returned.
 */
struct held {
	aptix_revwalk_entry e;
	char conv[APTIX_CONV_MAXLEN + 1];
	char summary[APTIX_SUMMARY_MAX + 1];
};

struct log {
	aptix_repo *repo;

	aptix_revwalk *walk;
	aptix_revwalk_entry cur;		/* what rec() read */
	uint32_t cur_k;				/* its number, or NONE */
	unsigned char *shown;			/* by the walk's seq */
	size_t ashown;
	struct held *order;		/* --reverse: what to show, copied */
	uint32_t norder, aorder;
	struct held *held;		/* failed, waiting for a tip */
	uint32_t nheld, aheld;
	int tip_shown;			/* a committed session was shown */

	struct head *heads;		/* in ref name order */
	size_t nheads, aheads;
	uint32_t *head_slots;		/* by id: the first head there */
	size_t head_mask;
	unsigned char head_bits[8192];	/* 16 bits of the ids of heads */
	char head_conv[APTIX_CONV_MAXLEN + 1];
	int head_detached;
	aptix_oid head_id;

	int show_failed, all, max_count, reverse, color, use_graph;
	int decorate;			/* 0 no, 1 short, 2 full */
	int skip, skipped;		/* --skip: how many, and done */
	char **paths;			/* -- <path>...: turns that sent them */
	int npaths;
	/* -g: the reflog entry being shown */
	const char *reflog_ref;		/* as given: "HEAD", "c1" */
	long reflog_n;
	const char *reflog_msg;
	int with_archived;		/* --all: archived ones too */
	enum fmt_kind kind;
	const char *user_fmt;

	/* queries: each one only costs when asked for */
	int64_t since, until;		/* ms; 0: no bound */
	const char *pickaxe;		/* -S */
	regex_t *greps;			/* --grep, any of them */
	size_t ngreps;
	aptix_search_filter *filter;	/* which sessions may match them */
	int ignore_case, patch, no_walk;
	uint32_t text_k;		/* whose texts instr/answer hold */
	aptix_buf instr, answer;
	int has_answer;
	aptix_buf tools;		/* its tool calls' names, arguments
					   and outputs, one a line */
	int tools_mark;			/* --tools */

	struct graph g;
	char *ob;			/* output, written in big chunks */
	size_t oblen, obcap;
	int tty;
	int bol;			/* nothing written on this line yet */
	uint32_t lines;			/* lines ended in this entry */
	uint32_t nshown;
	json_t *json;			/* --json: the sessions shown */
};

static void *xrealloc(void *p, size_t n, size_t size)
{
	if (size && n > SIZE_MAX / size)
		die("out of memory");
	p = realloc(p, n * size > 0 ? n * size : 1);
	if (!p)
		die("out of memory");
	return p;
}

/* --- Sessions: the walk's records ---------------------------------------- */

/* Session k of the walk (valid until the next call to the walk). */
static const aptix_revwalk_entry *rec(struct log *lg, uint32_t k)
{
	if (lg->cur_k == k)
		return &lg->cur;
	if (aptix_revwalk_get(&lg->cur, lg->walk, k) < 0)
		die_aptix();
	lg->cur_k = k;
	return &lg->cur;
}

/* A copy of session k (the one the walk returned last) into h. */
static void copy_rec(struct held *h, struct log *lg, uint32_t k)
{
	const aptix_revwalk_entry *e = rec(lg, k);

	h->e = *e;
	snprintf(h->conv, sizeof(h->conv), "%s", e->conversation);
	snprintf(h->summary, sizeof(h->summary), "%s", e->summary);
}

/* Make a copy what rec() gives (its strings where the copy is now). */
static void use_copy(struct log *lg, const struct held *h)
{
	lg->cur = h->e;
	lg->cur.conversation = h->conv;
	lg->cur.summary = h->summary;
	lg->cur_k = h->e.seq;
}

/* Hold session k (the one the walk returned last) for emit(). */
static void hold(struct log *lg, uint32_t k)
{
	if (lg->nheld == lg->aheld) {
		lg->aheld = lg->aheld ? lg->aheld * 2 : 16;
		lg->held = xrealloc(lg->held, lg->aheld, sizeof(*lg->held));
	}
	copy_rec(&lg->held[lg->nheld++], lg, k);
}


static int is_shown(const struct log *lg, uint32_t k)
{
	return k < lg->ashown && lg->shown[k];
}

static void set_shown(struct log *lg, uint32_t k)
{
	size_t n = lg->ashown;

	if (k >= n) {
		lg->ashown = (size_t)k + 1 > 2 * n ? (size_t)k + 1 : 2 * n;
		lg->shown = xrealloc(lg->shown, lg->ashown, 1);
		memset(lg->shown + n, 0, lg->ashown - n);
	}
	lg->shown[k] = 1;
}

/* --- Queries -------------------------------------------------------------- */

static int add_tool_text(const char *text, size_t len, void *payload)
{
	aptix_buf *b = payload;

	aptix_buf_put(b, text, len);
	return aptix_buf_putc(b, '\n') < 0 ? -1 : 0;
}

/*
 * The instruction and the answer of a session: read from the objects,
 * so only -S, --grep, -p, %I and %A pay for them.
 */
static void load_texts(struct log *lg, uint32_t k)
{
	aptix_turn t;
	aptix_oid turn = rec(lg, k)->turn;

	if (lg->text_k == k)
		return;
	aptix_buf_clear(&lg->instr);
	aptix_buf_clear(&lg->answer);
	lg->has_answer = 0;
	/* its links only: the texts of thousands of turns may be read */
	if (aptix_turn_lookup_texts(&t, lg->repo, &turn) < 0)
		die_aptix();
	view_read_blob(&lg->instr, lg->repo, &t.instruction);
	if (!aptix_oid_is_zero(&t.answer)) {
		view_read_blob(&lg->answer, lg->repo, &t.answer);
		lg->has_answer = 1;
	}
	aptix_buf_clear(&lg->tools);
	if (t.ntool_calls || t.ntool_results) {
		struct tool_view tv;

		tool_view_load(&tv, lg->repo, &t);
		tool_view_foreach_text(&tv, add_tool_text, &lg->tools);
		tool_view_release(&tv);
	}
	aptix_turn_release(&t);
	lg->text_k = k;
}

/* Does text hold needle (case-insensitively with -i)? */
static int holds(const struct log *lg, const aptix_buf *text,
		 const char *needle)
{
	size_t n = strlen(needle), i, j;
	unsigned char a, b;

	for (i = 0; i + n <= text->len; i++) {
		for (j = 0; j < n; j++) {
			a = (unsigned char)text->ptr[i + j];
			b = (unsigned char)needle[j];
			if (lg->ignore_case ? tolower(a) != tolower(b) : a != b)
				break;
		}
		if (j == n)
			return 1;
	}
	return 0;
}

static int greps_match(const struct log *lg, const aptix_buf *text)
{
	size_t i;

	for (i = 0; i < lg->ngreps; i++)
		if (!regexec(&lg->greps[i], text->ptr, 0, NULL, 0))
			return 1;
	return 0;
}

static int in_dates(const struct log *lg, int64_t created_at)
{
	return (!lg->since || created_at >= lg->since) &&
		(!lg->until || created_at <= lg->until);
}

/* Is f the path p names: itself, or a file under the directory p? */
static int path_match(const char *p, const char *f)
{
	size_t n;

	while (p[0] == '.' && p[1] == '/')
		p += 2;
	n = strlen(p);
	while (n && p[n - 1] == '/')
		n--;
	if (!n || (n == 1 && p[0] == '.'))
		return 1;
	return !strncmp(f, p, n) && (!f[n] || f[n] == '/');
}

/* -- <path>...: did session k's turn send one of them (whole or a chunk)? */
static int sent_paths(struct log *lg, uint32_t k)
{
	aptix_turn t;
	aptix_oid turn = rec(lg, k)->turn;
	size_t i;
	int j, found = 0;

	view_load_turn(&t, lg->repo, &turn);
	for (j = 0; j < lg->npaths && !found; j++) {
		for (i = 0; i < t.nfiles && !found; i++)
			found = t.files[i].sent &&
				path_match(lg->paths[j], t.files[i].path);
		for (i = 0; i < t.nchunks && !found; i++)
			found = t.chunks[i].sent &&
				path_match(lg->paths[j], t.chunks[i].path);
	}
	aptix_turn_release(&t);
	return found;
}

/* Does session k match -S, --grep and the paths (read only then)? */
static int wanted(struct log *lg, uint32_t k)
{
	if (lg->npaths && !sent_paths(lg, k))
		return 0;
	if (!lg->pickaxe && !lg->ngreps)
		return 1;
	/*
	 * the search index rules out those that cannot match (the walk
	 * asks it itself: aptix_revwalk_limit; -g reads no walk)
	 */
	if (lg->filter && lg->reflog_ref) {
		int may = aptix_search_filter_may(lg->filter, &rec(lg, k)->id);

		if (may < 0)
			die_aptix();
		if (!may)
			return 0;
	}
	load_texts(lg, k);
	/* the tool calls' arguments and outputs are searched too */
	if (lg->pickaxe && !holds(lg, &lg->instr, lg->pickaxe) &&
	    !(lg->has_answer && holds(lg, &lg->answer, lg->pickaxe)) &&
	    !holds(lg, &lg->tools, lg->pickaxe))
		return 0;
	if (lg->ngreps && !greps_match(lg, &lg->instr) &&
	    !(lg->has_answer && greps_match(lg, &lg->answer)) &&
	    !(lg->tools.len && greps_match(lg, &lg->tools)))
		return 0;
	return 1;
}

/* --- Decorations ---------------------------------------------------------- */

static int collect_head(const aptix_ref *ref, void *payload)
{
	struct log *lg = payload;
	const char *conv = ref->name + strlen(APTIX_CONV_PREFIX);
	size_t len = strlen(conv);
	struct head *h;

	if (ref->target || len > APTIX_CONV_MAXLEN || lg->nheads >= NONE / 4)
		return 0;
	if (lg->nheads == lg->aheads) {
		lg->aheads = lg->aheads ? lg->aheads * 2 : 16;
		lg->heads = xrealloc(lg->heads, lg->aheads,
				     sizeof(*lg->heads));
	}
	h = &lg->heads[lg->nheads++];
	h->id = ref->oid;
	h->next = NONE;
	memcpy(h->conv, conv, len + 1);
	return 0;
}

static unsigned head_bit(const aptix_oid *id)
{
	return (unsigned)id->id[0] << 8 | id->id[1];
}

static void head_bit_set(struct log *lg, const aptix_oid *id)
{
	lg->head_bits[head_bit(id) >> 3] |= 1u << (head_bit(id) & 7);
}

/* Where the heads at id are chained: ids are hashes, their bytes do. */
static size_t head_slot(const struct log *lg, const aptix_oid *id)
{
	size_t k = ((size_t)id->id[2] << 24 | (size_t)id->id[3] << 16 |
		    (size_t)id->id[4] << 8 | id->id[5]) & lg->head_mask;

	while (lg->head_slots[k] != NONE &&
	       aptix_oid_cmp(&lg->heads[lg->head_slots[k]].id, id))
		k = (k + 1) & lg->head_mask;
	return k;
}

/*
 * The heads by id: a table of the first head at each id, the others
 * chained in ref name order (the order the refs came in), so that a
 * decoration costs a probe, and loading costs no sort.
 */
static void hash_heads(struct log *lg)
{
	size_t n = 16, i, k;
	uint32_t j;

	while (n < 2 * lg->nheads)
		n *= 2;
	lg->head_slots = xrealloc(NULL, n, sizeof(*lg->head_slots));
	memset(lg->head_slots, 0xff, n * sizeof(*lg->head_slots));
	lg->head_mask = n - 1;
	for (i = 0; i < lg->nheads; i++) {
		head_bit_set(lg, &lg->heads[i].id);
		k = head_slot(lg, &lg->heads[i].id);
		if (lg->head_slots[k] == NONE) {
			lg->head_slots[k] = (uint32_t)i;
			continue;
		}
		for (j = lg->head_slots[k]; lg->heads[j].next != NONE;
		     j = lg->heads[j].next)
			;
		lg->heads[j].next = (uint32_t)i;
	}
}

static void load_heads(struct log *lg)
{
	aptix_ref ref;
	size_t plen = strlen(APTIX_CONV_PREFIX);
	int r;

	if (aptix_ref_foreach(lg->repo, APTIX_CONV_PREFIX, collect_head,
			      lg) < 0)
		die_aptix();
	hash_heads(lg);
	r = aptix_ref_read(&ref, lg->repo, "HEAD");
	if (r == APTIX_ENOTFOUND)
		return;
	if (r < 0)
		die_aptix();
	if (ref.target && !strncmp(ref.target, APTIX_CONV_PREFIX, plen))
		snprintf(lg->head_conv, sizeof(lg->head_conv), "%s",
			 ref.target + plen);
	else if (!ref.target) {
		lg->head_detached = 1;
		lg->head_id = ref.oid;
		head_bit_set(lg, &ref.oid);
	}
	aptix_ref_release(&ref);
}

/* The first head at id (the others: ->next), or NONE. */
static uint32_t find_heads(const struct log *lg, const aptix_oid *id)
{
	if (!(lg->head_bits[head_bit(id) >> 3] & (1u << (head_bit(id) & 7))))
		return NONE;
	return lg->head_slots[head_slot(lg, id)];
}

/* --- Output --------------------------------------------------------------- */

static void ob_flush(struct log *lg)
{
	if (lg->oblen)
		fwrite(lg->ob, 1, lg->oblen, stdout);
	lg->oblen = 0;
}

/* cli_set_die_flush's: what the walk printed before it died goes out */
static void ob_flush_on_die(void *lg)
{
	ob_flush(lg);
}

static char *ob_reserve(struct log *lg, size_t n)
{
	if (lg->oblen + n > lg->obcap) {
		ob_flush(lg);
		if (n > lg->obcap) {
			lg->obcap = n;
			lg->ob = xrealloc(lg->ob, n, 1);
		}
	}
	return lg->ob + lg->oblen;
}

static void ob_put(struct log *lg, const char *s, size_t n)
{
	memcpy(ob_reserve(lg, n), s, n);
	lg->oblen += n;
}

static void start_line(struct log *lg, int empty)
{
	const char *b;
	int len;

	lg->bol = 0;
	if (!lg->use_graph)
		return;
	len = graph_next_line(&lg->g, &b);
	if (empty)
		while (len && b[len - 1] == ' ')
			len--;
	ob_put(lg, b, (size_t)len);
}

static void out(struct log *lg, const char *s, size_t len)
{
	if (lg->bol)
		start_line(lg, 0);
	ob_put(lg, s, len);
}

static void outs(struct log *lg, const char *s)
{
	out(lg, s, strlen(s));
}

/* A string literal, without strlen(). */
#define OUTL(lg, lit) out((lg), (lit), sizeof(lit) - 1)

/* Text from the agent or the user: made harmless on a terminal. */
static void out_untrusted(struct log *lg, const char *s)
{
	if (lg->bol)
		start_line(lg, 0);
	if (!lg->tty) {
		ob_put(lg, s, strlen(s));
		return;
	}
	ob_flush(lg);
	cli_print_sanitized(stdout, s, strlen(s));
}

#define color(lg, c) do { if ((lg)->color) OUTL(lg, c); } while (0)

static void nl(struct log *lg)
{
	if (lg->bol)
		start_line(lg, 1);
	ob_put(lg, "\n", 1);
	lg->bol = 1;
	lg->lines++;
}

/* The first n hex digits of an id. */
static void out_hex(struct log *lg, const aptix_oid *id, size_t n)
{
	static const char digits[] = "0123456789abcdef";
	char *p;
	size_t i;

	if (lg->bol)
		start_line(lg, 0);
	p = ob_reserve(lg, n + 1);
	for (i = 0; i < (n + 1) / 2; i++) {
		p[2 * i] = digits[id->id[i] >> 4];
		p[2 * i + 1] = digits[id->id[i] & 15];
	}
	lg->oblen += n;
}

static void out_conv_short(struct log *lg, const char *conv)
{
	if (lg->decorate == 2) {	/* --decorate=full */
		OUTL(lg, APTIX_CONV_PREFIX);
		outs(lg, conv);
		return;
	}
	out(lg, conv, strnlen(conv, SHORT_CONV));
}

/* "HEAD -> c1, c2" (parens: " (" ... ")"); nothing when no ref. */
static void out_decorations(struct log *lg, uint32_t k, int parens)
{
	const aptix_revwalk_entry *r = rec(lg, k);
	uint32_t first, i;
	int any = 0, head_here = 0;

	first = find_heads(lg, &r->id);
	for (i = first; i != NONE; i = lg->heads[i].next)
		if (!strcmp(lg->heads[i].conv, lg->head_conv))
			head_here = 1;
	if (first == NONE && !(lg->head_detached &&
		    !aptix_oid_cmp(&lg->head_id, &r->id)))
		return;
	if (parens) {
		color(lg, C_ID);
		OUTL(lg, " (");
		color(lg, C_RESET);
	}
	if (head_here) {
		color(lg, C_HEAD);
		OUTL(lg, "HEAD -> ");
		color(lg, C_RESET);
		color(lg, C_CONV);
		out_conv_short(lg, lg->head_conv);
		color(lg, C_RESET);
		any = 1;
	} else if (lg->head_detached &&
		   !aptix_oid_cmp(&lg->head_id, &r->id)) {
		color(lg, C_HEAD);
		OUTL(lg, "HEAD");
		color(lg, C_RESET);
		any = 1;
	}
	for (i = first; i != NONE; i = lg->heads[i].next) {
		if (head_here && !strcmp(lg->heads[i].conv, lg->head_conv))
			continue;
		if (any) {
			color(lg, C_ID);
			OUTL(lg, ", ");
			color(lg, C_RESET);
		}
		color(lg, C_CONV);
		out_conv_short(lg, lg->heads[i].conv);
		color(lg, C_RESET);
		any = 1;
	}
	if (parens) {
		color(lg, C_ID);
		OUTL(lg, ")");
		color(lg, C_RESET);
	}
}

/* -g: "HEAD@{2}" (full: the ref's whole name) */
static void out_reflog_selector_as(struct log *lg, int full)
{
	char num[32];
	const char *name = lg->reflog_ref;

	if (full && strcmp(name, "HEAD") &&
	    strncmp(name, "refs/", 5)) {
		OUTL(lg, APTIX_CONV_PREFIX);
	}
	out_untrusted(lg, name);
	snprintf(num, sizeof(num), "@{%ld}", lg->reflog_n);
	outs(lg, num);
}

static void out_reflog_selector(struct log *lg)
{
	out_reflog_selector_as(lg, 0);
}

static int is_failed(const aptix_revwalk_entry *r)
{
	return r->status == APTIX_SESSION_FAILED;
}

static void out_failed_mark(struct log *lg)
{
	color(lg, C_FAILED);
	OUTL(lg, "[failed]");
	color(lg, C_RESET);
}

/* --tools: "[2 tool calls] " and "[1 tool result] " when it has them. */
static void out_tools_mark(struct log *lg, uint32_t k)
{
	aptix_oid turn = rec(lg, k)->turn;
	char mark[64];
	aptix_turn t;

	if (!lg->tools_mark)
		return;
	view_load_turn(&t, lg->repo, &turn);
	if (t.ntool_results) {
		snprintf(mark, sizeof(mark), "[%zu tool result%s] ",
			 t.ntool_results, t.ntool_results == 1 ? "" : "s");
		outs(lg, mark);
	}
	if (t.ntool_calls) {
		snprintf(mark, sizeof(mark), "[%zu tool call%s] ",
			 t.ntool_calls, t.ntool_calls == 1 ? "" : "s");
		outs(lg, mark);
	}
	aptix_turn_release(&t);
}

static void show_medium(struct log *lg, uint32_t k, int full)
{
	const aptix_revwalk_entry *r = rec(lg, k);
	char date[64];

	color(lg, C_ID);
	OUTL(lg, "session ");
	out_hex(lg, &r->id, APTIX_OID_HEXSZ);
	color(lg, C_RESET);
	if (lg->decorate)
		out_decorations(lg, k, 1);
	if (is_failed(r)) {
		OUTL(lg, " ");
		out_failed_mark(lg);
	}
	if (lg->tools_mark) {
		OUTL(lg, " ");
		out_tools_mark(lg, k);
	}
	nl(lg);
	if (lg->reflog_msg) {
		OUTL(lg, "Reflog: ");
		out_reflog_selector(lg);
		nl(lg);
		OUTL(lg, "Reflog message: ");
		out_untrusted(lg, lg->reflog_msg);
		nl(lg);
	}
	OUTL(lg, "Conversation: ");
	outs(lg, r->conversation);
	nl(lg);
	if (full) {
		OUTL(lg, "Date:   ");
		outs(lg, view_date_as(date, r->created_at,
				      VIEW_DATE_DEFAULT));
		nl(lg);
		OUTL(lg, "Status: ");
		outs(lg, aptix_session_status_name(
			     (aptix_session_status)r->status));
		nl(lg);
	}
	nl(lg);
	if (*r->summary) {
		OUTL(lg, "    ");
		out_untrusted(lg, r->summary);
	}
}

static void show_oneline(struct log *lg, uint32_t k)
{
	const aptix_revwalk_entry *r = rec(lg, k);

	color(lg, C_ID);
	out_hex(lg, &r->id, SHORT_ID);
	color(lg, C_RESET);
	if (lg->decorate)
		out_decorations(lg, k, 1);
	OUTL(lg, " ");
	if (is_failed(r)) {
		out_failed_mark(lg);
		OUTL(lg, " ");
	}
	out_tools_mark(lg, k);
	if (lg->reflog_msg) {	/* as git log -g --oneline */
		out_reflog_selector(lg);
		OUTL(lg, ": ");
		out_untrusted(lg, lg->reflog_msg);
		return;
	}
	out_untrusted(lg, r->summary);
}

static const char *color_code(const char *name, size_t len)
{
	static const struct { const char *name, *code; } colors[] = {
		{ "reset", C_RESET }, { "normal", "" },
		{ "red", "\033[31m" }, { "green", "\033[32m" },
		{ "yellow", "\033[33m" }, { "blue", "\033[34m" },
		{ "magenta", "\033[35m" }, { "cyan", "\033[36m" },
		{ "white", "\033[37m" }, { "bold", "\033[1m" },
		{ "dim", "\033[2m" }, { "ul", "\033[4m" },
	};
	size_t i;

	for (i = 0; i < sizeof(colors) / sizeof(colors[0]); i++)
		if (strlen(colors[i].name) == len &&
		    !strncmp(colors[i].name, name, len))
			return colors[i].code;
	return NULL;
}

/*
 * A text of many lines (an instruction, an answer): each line through
 * nl(), so the graph goes on beside it; trailing newlines dropped.
 */
static void out_lines(struct log *lg, const char *indent, const char *s,
		      size_t len)
{
	size_t start = 0, i;

	while (len && s[len - 1] == '\n')
		len--;
	for (i = 0; i <= len; i++) {
		if (i < len && s[i] != '\n')
			continue;
		if (start)
			nl(lg);
		if (indent && i > start)
			outs(lg, indent);
		if (i > start) {
			char *line = xrealloc(NULL, i - start + 1, 1);

			memcpy(line, s + start, i - start);
			line[i - start] = '\0';
			out_untrusted(lg, line);
			free(line);
		}
		start = i + 1;
	}
}

/* -p: the answer under the entry. */
static void show_patch(struct log *lg, uint32_t k)
{
	load_texts(lg, k);
	if (!lg->bol)
		nl(lg);
	nl(lg);
	if (!lg->has_answer) {
		OUTL(lg, "No answer.");
		return;
	}
	OUTL(lg, "Answer:");
	nl(lg);
	out_lines(lg, "    ", lg->answer.ptr, lg->answer.len);
}

/* %Cred %Cgreen %Cblue %Creset %C(<color>): the length taken, or 0 */
static size_t expand_color(struct log *lg, const char *p)
{
	const char *code, *end;

	if (!strncmp(p + 1, "red", 3)) {
		color(lg, "\033[31m");
		return 4;
	}
	if (!strncmp(p + 1, "green", 5)) {
		color(lg, "\033[32m");
		return 6;
	}
	if (!strncmp(p + 1, "blue", 4)) {
		color(lg, "\033[34m");
		return 5;
	}
	if (!strncmp(p + 1, "reset", 5)) {
		color(lg, C_RESET);
		return 6;
	}
	if (p[1] == '(' && (end = strchr(p + 2, ')'))) {
		const char *name = p + 2;

		if ((size_t)(end - name) > 5 &&
		    !strncmp(name, "auto,", 5))
			name += 5;
		code = color_code(name, (size_t)(end - name));
		if (!code && (size_t)(end - name) == 4 &&
		    !strncmp(name, "auto", 4))
			code = "";
		if (!code)
			return 0;
		if (lg->color)
			outs(lg, code);
		return (size_t)(end - p) + 1;
	}
	return 0;
}

/* %b: the instruction after its first line (and the blank ones after) */
static void out_body(struct log *lg, uint32_t k)
{
	const char *body;
	size_t off;

	load_texts(lg, k);
	body = memchr(lg->instr.ptr, '\n', lg->instr.len);
	if (!body)
		return;
	off = (size_t)(body - lg->instr.ptr) + 1;
	while (off < lg->instr.len && lg->instr.ptr[off] == '\n')
		off++;
	out_lines(lg, NULL, lg->instr.ptr + off, lg->instr.len - off);
}

/* Expand one placeholder at p (after '%'); returns its length, 0 if none. */
static size_t expand(struct log *lg, uint32_t k, const char *p)
{
	const aptix_revwalk_entry *r = rec(lg, k);
	char num[32], date[64];

	switch (p[0]) {
	case 'H':
	case 'h':
		out_hex(lg, &r->id, p[0] == 'H' ? APTIX_OID_HEXSZ : SHORT_ID);
		return 1;
	case 'P':
	case 'p':
		if (r->has_parent)
			out_hex(lg, &r->parent, p[0] == 'P' ? APTIX_OID_HEXSZ :
				SHORT_ID);
		return 1;
	case 'T':
	case 't':
		out_hex(lg, &r->turn, p[0] == 'T' ? APTIX_OID_HEXSZ : SHORT_ID);
		return 1;
	case 'c':
		outs(lg, r->conversation);
		return 1;
	case 's':
		out_untrusted(lg, r->summary);
		return 1;
	case 'S':
		outs(lg, aptix_session_status_name(
			     (aptix_session_status)r->status));
		return 1;
	case 'g':
		if (p[1] == 'd' || p[1] == 'D' || p[1] == 's') {
			/* the reflog entry: empty without -g, as in git */
			if (!lg->reflog_msg)
				return 2;
			if (p[1] == 's')
				out_untrusted(lg, lg->reflog_msg);
			else
				out_reflog_selector_as(lg, p[1] == 'D');
			return 2;
		}
		snprintf(num, sizeof(num), "%u", (unsigned)r->generation);
		outs(lg, num);
		return 1;
	case 'd':
		out_decorations(lg, k, 1);
		return 1;
	case 'D':
		out_decorations(lg, k, 0);
		return 1;
	case 'I':
	case 'B':	/* as git's raw body: the whole instruction */
		load_texts(lg, k);
		out_lines(lg, NULL, lg->instr.ptr, lg->instr.len);
		return 1;
	case 'b':
		out_body(lg, k);
		return 1;

	case 'A':
		load_texts(lg, k);
		if (lg->has_answer)
			out_lines(lg, NULL, lg->answer.ptr, lg->answer.len);
		return 1;
	case 'n':
		nl(lg);
		return 1;
	case '%':
		OUTL(lg, "%");
		return 1;
	case 'a':
		switch (p[1]) {
		case 'd':	/* as git: --date's form, local time */
			outs(lg, view_date_as(date, r->created_at,
					      VIEW_DATE_DEFAULT));
			return 2;
		case 'i':	/* ISO, strict ISO, relative, short */
		case 'I':
		case 'r':
		case 's':
			outs(lg, view_format_date(date, r->created_at,
						  p[1] == 'i' ? VIEW_DATE_ISO :
						  p[1] == 'I' ?
						  VIEW_DATE_ISO_STRICT :
						  p[1] == 'r' ?
						  VIEW_DATE_RELATIVE :
						  VIEW_DATE_SHORT));
			return 2;
		case 't':
			snprintf(num, sizeof(num), "%lld",
				 (long long)(r->created_at / 1000));
			outs(lg, num);
			return 2;
		case 'm':
			snprintf(num, sizeof(num), "%lld",
				 (long long)r->created_at);
			outs(lg, num);
			return 2;
		}
		return 0;
	case 'x':
		if (aptix_hex_value(p[1]) >= 0 &&
		    aptix_hex_value(p[2]) >= 0) {
			char c = (char)(aptix_hex_value(p[1]) * 16 +
					aptix_hex_value(p[2]));

			if (c == '\n')
				nl(lg);
			else
				out(lg, &c, 1);
			return 3;
		}
		return 0;
	case 'C':
		return expand_color(lg, p);
	}
	return 0;
}

static void show_user(struct log *lg, uint32_t k)
{
	const char *p = lg->user_fmt, *q;
	size_t n;

	while (*p) {
		q = p;
		while (*q && *q != '%' && *q != '\n')
			q++;
		if (q > p)
			out(lg, p, (size_t)(q - p));
		p = q;
		if (*p == '\n') {
			nl(lg);
			p++;
		} else if (*p == '%') {
			n = expand(lg, k, p + 1);
			if (n) {
				p += 1 + n;
			} else {
				OUTL(lg, "%");
				p++;
			}
		}
	}
}

/* --json: the session as a list shows it (Documentation/json.md). */
static void show_json(struct log *lg, uint32_t k)
{
	aptix_session_info si;

	aptix_revwalk_entry_info(&si, rec(lg, k));
	view_json_append(lg->json, aptix_view_session_info(&si));
	set_shown(lg, k);
	lg->nshown++;
}

static void show(struct log *lg, uint32_t k)
{
	uint32_t parent = rec(lg, k)->parent_seq;

	if (lg->json) {
		show_json(lg, k);
		return;
	}
	if (lg->nshown && (lg->kind == FMT_MEDIUM || lg->kind == FMT_SHORT)) {
		nl(lg);		/* separator, with the branches going on */
		graph_separator(&lg->g);
	}
	if (lg->use_graph) {
		if (parent != NONE && is_shown(lg, parent))
			parent = NONE;	/* skewed clocks: the branch ends */
		graph_update(&lg->g, k, parent == NONE ? GRAPH_NO_PARENT :
			     parent);
		if (!rec(lg, k)->has_parent)
			graph_mark_root(&lg->g);
	}
	set_shown(lg, k);
	lg->bol = 1;
	lg->lines = 0;
	switch (lg->kind) {
	case FMT_MEDIUM:
		show_medium(lg, k, 1);
		break;
	case FMT_SHORT:
		show_medium(lg, k, 0);
		break;
	case FMT_ONELINE:
		show_oneline(lg, k);
		break;
	case FMT_USER:
		show_user(lg, k);
		break;
	}
	if (lg->patch)
		show_patch(lg, k);
	/*
	 * The rest of the branch moves on lines of their own; as in git, a
	 * format ending with a newline gets its last (empty) line after them.
	 */
	if (lg->bol && lg->lines) {
		while (lg->use_graph && graph_is_collapsing(&lg->g))
			nl(lg);
		nl(lg);
	} else {
		nl(lg);
		while (lg->use_graph && graph_is_collapsing(&lg->g))
			nl(lg);
	}
	lg->nshown++;
}

/* Show now, or keep for --reverse; --skip drops the first ones. */
static void emit_now(struct log *lg, uint32_t k)
{
	if (lg->skipped < lg->skip) {
		lg->skipped++;
		return;
	}
	if (!lg->reverse) {
		show(lg, k);
		return;
	}
	if (lg->norder == lg->aorder) {
		lg->aorder = lg->aorder ? lg->aorder * 2 : 256;
		lg->order = xrealloc(lg->order, lg->aorder,
				     sizeof(*lg->order));
	}
	/* a copy: a walk that streams keeps none it returned */
	copy_rec(&lg->order[lg->norder++], lg, k);
}

/* Show a held session: rec() gives its copy. */
static void emit_held_one(struct log *lg, const struct held *h)
{
	use_copy(lg, h);
	emit_now(lg, h->e.seq);
}

static int limit_reached(const struct log *lg, uint32_t emitted)
{
	return lg->max_count >= 0 &&
		emitted >= (uint32_t)lg->max_count + (uint32_t)lg->skip;
}

/*
 * Failed snapshots newer than every committed session of the view wait
 * until the first committed one is shown: a view starts from a tip a ref
 * names (what rev-parse says), and the failed attempts on top of it come
 * right after it (--reverse keeps plain date order). Returns how many
 * sessions were shown.
 */
static uint32_t emit(struct log *lg, uint32_t k, uint32_t emitted)
{
	uint32_t i, n = 0;

	if (!lg->tip_shown && !lg->reverse &&
	    rec(lg, k)->status == APTIX_SESSION_FAILED) {
		hold(lg, k);
		return 0;
	}
	if (!lg->tip_shown) {
		lg->tip_shown = 1;
		emit_now(lg, k);
		n++;
	}
	for (i = 0; i < lg->nheld && !limit_reached(lg, emitted + n); i++) {
		emit_held_one(lg, &lg->held[i]);
		n++;
	}
	lg->nheld = 0;
	if (!n && !limit_reached(lg, emitted)) {
		emit_now(lg, k);
		n++;
	}
	return n;
}

/* The end of a walk: what still waits (a view of failed turns only). */
static void emit_held(struct log *lg, uint32_t emitted)
{
	uint32_t i;

	for (i = 0; i < lg->nheld && !limit_reached(lg, emitted); i++) {
		emit_held_one(lg, &lg->held[i]);
		emitted++;
	}
	lg->nheld = 0;
}

/* The walk, filtered by -S, --grep and the paths, as far as -n goes. */
static void walk(struct log *lg)
{
	aptix_revwalk_entry e;
	uint32_t emitted = 0;
	int r = 0;

	while (!limit_reached(lg, emitted) &&
	       (r = aptix_revwalk_next_entry(&e, lg->walk)) == 0)
		if (wanted(lg, e.seq))
			emitted += emit(lg, e.seq, emitted);
	if (r < 0 && r != APTIX_ITEROVER)
		die_aptix();
	emit_held(lg, emitted);
}

/* --- -g: the reflog ----------------------------------------------------- */

struct rl_entry {
	aptix_oid id;
	char *msg;
};

struct rl_list {
	struct rl_entry *v;
	size_t n, alloc;
};

static int rl_collect(const aptix_reflog_entry *e, void *payload)
{
	struct rl_list *l = payload;

	l->v = cli_grow(l->v, &l->alloc, l->n, sizeof(*l->v));
	l->v[l->n].id = e->new_id;
	l->v[l->n].msg = xrealloc(NULL, strlen(e->message) + 1, 1);
	memcpy(l->v[l->n].msg, e->message, strlen(e->message) + 1);
	l->n++;
	return 0;
}

/* The ref whose reflog a name means: HEAD, refs/..., a conversation. */
static char *reflog_ref_of(struct log *lg, const char *name)
{
	char conv[APTIX_CONV_MAXLEN + 1];
	aptix_buf ref = APTIX_BUF_INIT;

	if (!strcmp(name, "HEAD") || !strncmp(name, "refs/", 5))
		aptix_buf_puts(&ref, name);
	else if (aptix_conv_resolve(conv, lg->repo, name) < 0)
		die_aptix();
	else
		aptix_buf_printf(&ref, "%s%s", APTIX_CONV_PREFIX, conv);
	if (aptix_buf_oom(&ref))
		die("out of memory");
	return aptix_buf_detach(&ref);
}

/*
 * git log -g: the entries of a ref's reflog, newest first, each shown as
 * the session it moved to, with its selector (HEAD@{n}) and message.
 * HEAD without a reflog of its own (an older store) shows its target's.
 */
static void walk_reflog(struct log *lg, const char *name)
{
	struct rl_list l = { NULL, 0, 0 };
	char *ref = reflog_ref_of(lg, name), *target = NULL;
	aptix_revwalk_entry e;
	uint32_t emitted = 0, k;
	size_t i;
	int r;

	if (aptix_reflog_foreach(lg->repo, ref, rl_collect, &l) < 0)
		die_aptix();
	if (!l.n && !strcmp(ref, "HEAD")) {
		aptix_ref head;

		if (aptix_ref_read(&head, lg->repo, "HEAD") == 0) {
			target = head.target;
			head.target = NULL;
			aptix_ref_release(&head);
		}
		if (target && aptix_reflog_foreach(lg->repo, target,
						   rl_collect, &l) < 0)
			die_aptix();
	}
	aptix_error_clear();
	lg->reflog_ref = name;
	for (i = 0; i < l.n && !limit_reached(lg, emitted); i++) {
		if (aptix_oid_is_zero(&l.v[i].id))
			continue;
		r = aptix_revwalk_lookup(&e, lg->walk, &l.v[i].id);
		if (r == APTIX_ENOTFOUND)
			continue;
		if (r < 0)
			die_aptix();
		k = e.seq;
		if (!in_dates(lg, e.created_at) || !wanted(lg, k))
			continue;
		lg->reflog_n = (long)i;
		lg->reflog_msg = l.v[i].msg;
		emitted++;
		emit_now(lg, k);
	}
	lg->reflog_msg = NULL;
	for (i = 0; i < l.n; i++)
		free(l.v[i].msg);
	free(l.v);
	free(target);
	free(ref);
}

/*
 * --all: every session (not archived ones unless asked) in topological
 * date order (git's --date-order), so that the graph never breaks even
 * when clocks are skewed; with -n <N>, the newest N sessions from the
 * timeline start a walk in date order, which shows them without
 * loading the rest of the index.
 */
static void walk_all(struct log *lg)
{
	int r = APTIX_ENOTFOUND;

	if (lg->max_count >= 0 && !lg->reverse && !lg->pickaxe &&
	    !lg->ngreps)
		r = aptix_revwalk_push_recent(lg->walk,
					      (size_t)lg->max_count);
	if (r == APTIX_ENOTFOUND)
		r = aptix_revwalk_push_all(lg->walk);
	else if (r == 0)
		return;
	if (r < 0 || aptix_revwalk_sorting(lg->walk, APTIX_SORT_TIME |
					   APTIX_SORT_TOPOLOGICAL) < 0)
		die_aptix();
}

/* --- Start points --------------------------------------------------------- */

static void start_session(struct log *lg, const char *name,
			  const aptix_oid *id)
{
	aptix_revwalk_entry e;
	aptix_otype type;
	size_t size;
	/* --all shows everything: names are only checked */
	int r = lg->all ? aptix_revwalk_lookup(&e, lg->walk, id) :
		aptix_revwalk_push(lg->walk, id);

	if (r == 0)
		return;
	if (r == APTIX_EINVALID &&
	    aptix_odb_read_header(&size, &type, aptix_repo_odb(lg->repo),
				  id) == 0 && type != APTIX_OBJ_SESSION)
		die("'%s' is a %s, not a session", name,
		    aptix_otype_name(type));
	die_aptix();
}

/*
 * A conversation without a head (its first turn failed, or its ref was
 * deleted): start from every session it has.
 */
static size_t start_headless(struct log *lg, const char *conv)
{
	size_t n;

	if (aptix_revwalk_push_conversation(lg->walk, conv, &n) < 0)
		die_aptix();
	return n;
}

static void add_start(struct log *lg, const char *name, int implicit)
{
	char conv[APTIX_CONV_MAXLEN + 1];
	aptix_buf ref = APTIX_BUF_INIT;
	aptix_oid id;
	int r;

	r = aptix_revparse(&id, lg->repo, name);
	if (r == 0) {
		start_session(lg, name, &id);
		return;
	}
	/* not a session: a conversation, perhaps without a head */
	if (r != APTIX_ENOTFOUND && r != APTIX_EINVALID)
		die_aptix();
	r = aptix_conv_resolve(conv, lg->repo, name);
	if (r == APTIX_EAMBIGUOUS)
		die_aptix();
	if (r < 0) {
		if (implicit)
			die_aptix();
		die("unknown session or conversation '%s'", name);
	}
	aptix_buf_printf(&ref, "%s%s", APTIX_CONV_PREFIX, conv);
	if (aptix_buf_oom(&ref))
		die("out of memory");
	r = aptix_ref_resolve(&id, NULL, lg->repo, ref.ptr);
	aptix_buf_release(&ref);
	if (r == 0) {
		start_session(lg, name, &id);
		return;
	}
	if (r != APTIX_ENOTFOUND)
		die_aptix();
	if (lg->all || start_headless(lg, conv))
		return;
	if (implicit)
		die("your current conversation '%s' does not have any "
		    "sessions yet", conv);
	die("conversation '%s' does not have any sessions yet", conv);
}

/* --- Command -------------------------------------------------------------- */

struct fmt_opt {
	enum fmt_kind *kind;
	const char **user_fmt;
};

static int set_format(enum fmt_kind *kind, const char **user,
		      const char *arg)
{
	if (!strcmp(arg, "oneline"))
		*kind = FMT_ONELINE;
	else if (!strcmp(arg, "medium"))
		*kind = FMT_MEDIUM;
	else if (!strcmp(arg, "short"))
		*kind = FMT_SHORT;
	else if (!strncmp(arg, "format:", 7) || !strncmp(arg, "tformat:", 8)) {
		*kind = FMT_USER;
		*user = strchr(arg, ':') + 1;
	} else if (strchr(arg, '%')) {
		*kind = FMT_USER;
		*user = arg;
	} else {
		return error("invalid --format: '%s'", arg);
	}
	return 0;
}

static struct fmt_opt *fmt_target;

static int format_cb(const struct option *opt, const char *arg, int unset)
{
	(void)opt;
	if (unset) {
		*fmt_target->kind = FMT_MEDIUM;
		return 0;
	}
	return set_format(fmt_target->kind, fmt_target->user_fmt, arg);
}

static int oneline_cb(const struct option *opt, const char *arg, int unset)
{
	(void)opt;
	(void)arg;
	*fmt_target->kind = unset ? FMT_MEDIUM : FMT_ONELINE;
	return 0;
}

static int pretty_cb(const struct option *opt, const char *arg, int unset)
{
	(void)opt;
	if (unset || !arg || !strcmp(arg, "full") || !strcmp(arg, "fuller")) {
		*fmt_target->kind = FMT_MEDIUM;
		return 0;
	}
	return set_format(fmt_target->kind, fmt_target->user_fmt, arg);
}

/*
 * Whether to name conversations, as git's log.decorate: the option,
 * else the config, else (auto) when stdout is a terminal, asked before
 * a pager takes it.
 */
static int decoration(int opt, aptix_repo *repo)
{
	aptix_config *cfg = NULL;
	const char *v = NULL;

	if (opt == DECORATE_UNSET) {
		if (aptix_config_open(&cfg, repo) < 0)
			die_aptix();
		v = aptix_config_get(cfg, "log.decorate");
		opt = !v || !strcmp(v, "auto") ? DECORATE_AUTO :
			!strcmp(v, "no") ? 0 : !strcmp(v, "full") ? 2 : 1;
		aptix_config_free(cfg);
	}
	return opt == DECORATE_AUTO ? cli_isatty_stdout() : opt;
}

/* A keyword's value for an option; a bare option is 1, a negated one 0. */
struct keyword {
	const char *name;
	int value;
};

static int keyword_cb(const struct option *opt, const char *arg, int unset,
		      const struct keyword *k, const char *expected)
{
	int *out = opt->value;

	if (unset || !arg) {
		*out = !unset;
		return 0;
	}
	for (; k->name; k++)
		if (!strcmp(arg, k->name)) {
			*out = k->value;
			return 0;
		}
	return error("invalid --%s value '%s': expected %s", opt->long_name,
		     arg, expected);
}

static int decorate_cb(const struct option *opt, const char *arg, int unset)
{
	static const struct keyword k[] = {
		{ "no", 0 }, { "auto", DECORATE_AUTO }, { "short", 1 },
		{ "full", 2 }, { NULL, 0 }
	};

	return keyword_cb(opt, arg, unset, k, "short, full, auto or no");
}

static int color_cb(const struct option *opt, const char *arg, int unset)
{
	static const struct keyword k[] = {
		{ "never", 0 }, { "always", 1 }, { "auto", -1 }, { NULL, 0 }
	};

	return keyword_cb(opt, arg, unset, k, "always, never or auto");
}

/* git's "-<n>" for "-n <n>" */
static int take_dash_number(int argc, const char **argv, int *max_count)
{
	int i, j = 1;
	unsigned long n;

	for (i = 1; i < argc; i++) {
		if (!strcmp(argv[i], "--")) {
			while (i < argc)
				argv[j++] = argv[i++];
			break;
		}
		if ((!strcmp(argv[i], "-n") || !strcmp(argv[i], "--max-count"))
		    && i + 1 < argc) {
			argv[j++] = argv[i++];
			argv[j++] = argv[i];
			continue;
		}
		if (argv[i][0] == '-' && argv[i][1] >= '0' &&
		    argv[i][1] <= '9' && !cli_parse_ulong(argv[i] + 1, &n) &&
		    n <= INT32_MAX) {
			*max_count = (int)n;
			continue;
		}
		argv[j++] = argv[i];
	}
	argv[j] = NULL;
	return j;
}

static void compile_greps(struct log *lg, const aptix_strlist *pats,
			  int extended)
{
	char msg[256];
	size_t i;
	/* REG_NEWLINE: ^ and $ match at each line, as git's --grep */
	int r, flags = REG_NOSUB | REG_NEWLINE |
		(extended ? REG_EXTENDED : 0) |
		(lg->ignore_case ? REG_ICASE : 0);

	if (!pats->nr)
		return;
	lg->greps = xrealloc(NULL, pats->nr, sizeof(*lg->greps));
	for (i = 0; i < pats->nr; i++) {
		r = regcomp(&lg->greps[i], pats->items[i], flags);
		if (r) {
			regerror(r, &lg->greps[i], msg, sizeof(msg));
			die("invalid --grep pattern '%s': %s", pats->items[i],
			    msg);
		}
		lg->ngreps++;
	}
}

/* Does a --grep pattern match exactly its text as a substring? */
static int literal(const char *p, int extended)
{
	for (; *p; p++)
		if (strchr(extended ? ".[]()*+?{}|^$\\\n" : ".[]*^$\\\n", *p))
			return 0;
	return 1;
}

/*
 * The search index, when the store has one, finds the sessions that
 * may hold -S's text and one of the --grep patterns that are plain
 * text; wanted() still checks each exactly, so the output is the scan's.
 */
static void use_index(struct log *lg, const aptix_strlist *pats, int extended)
{
	size_t i;
	int r;

	if (!lg->pickaxe && !pats->nr)
		return;
	r = aptix_search_filter_new(&lg->filter, lg->repo, lg->ignore_case ?
				    APTIX_SEARCH_ICASE : 0);
	if (r == APTIX_ENOTFOUND)
		return;		/* none: every session is read */
	if (r < 0 || (lg->pickaxe &&
		      aptix_search_filter_any(lg->filter, &lg->pickaxe, 1) < 0))
		die_aptix();
	for (i = 0; i < pats->nr && literal(pats->items[i], extended); i++)
		;
	if (pats->nr && i == pats->nr &&
	    aptix_search_filter_any(lg->filter,
				    (const char *const *)pats->items,
				    pats->nr) < 0)
		die_aptix();
	if (!aptix_search_filter_active(lg->filter)) {
		aptix_search_filter_free(lg->filter);
		lg->filter = NULL;
	}
}

/* "A..B", "^A", or a start point. */
static void add_arg(struct log *lg, const char *arg)
{
	const char *dots = strstr(arg, "..");
	aptix_oid id;
	char *left;

	if (arg[0] == '^' && arg[1]) {
		view_resolve_session(&id, lg->repo, arg + 1);
		if (aptix_revwalk_hide(lg->walk, &id) < 0)
			die_aptix();
		return;
	}
	if (!dots || dots[2] == '.') {
		add_start(lg, arg, 0);
		return;
	}
	left = xrealloc(NULL, (size_t)(dots - arg) + 1, 1);
	memcpy(left, arg, (size_t)(dots - arg));
	left[dots - arg] = '\0';
	view_resolve_session(&id, lg->repo, *left ? left : "HEAD");
	free(left);
	if (aptix_revwalk_hide(lg->walk, &id) < 0)
		die_aptix();
	add_start(lg, dots[2] ? dots + 2 : "HEAD", 0);
}

static void log_release(struct log *lg)
{
	size_t i;

	for (i = 0; i < lg->ngreps; i++)
		regfree(&lg->greps[i]);
	free(lg->greps);
	aptix_search_filter_free(lg->filter);
	for (i = 0; i < (size_t)lg->npaths; i++)
		free(lg->paths[i]);
	free(lg->paths);
	aptix_buf_release(&lg->instr);
	aptix_buf_release(&lg->answer);
	aptix_buf_release(&lg->tools);
	aptix_revwalk_free(lg->walk);
	free(lg->shown);
	free(lg->order);
	free(lg->held);
	free(lg->heads);
	free(lg->head_slots);
	cli_set_die_flush(NULL, NULL);
	free(lg->ob);
	graph_release(&lg->g);
}

/* -- <path>...: as git, relative to the current directory */
static void take_paths(struct log *lg, const char **argv, int n)
{
	int i;

	lg->paths = xrealloc(NULL, (size_t)n + 1, sizeof(*lg->paths));
	for (i = 0; i < n; i++)
		lg->paths[i] = view_path_from_cwd(lg->repo, argv[i]);
	lg->npaths = n;
}

static void log_start_output(struct log *lg, int no_pager)
{
	if (!no_pager)
		setup_pager();
	lg->tty = cli_isatty_stdout();
	lg->obcap = 1 << 16;
	lg->ob = xrealloc(NULL, lg->obcap, 1);
	cli_set_die_flush(ob_flush_on_die, lg);
	lg->bol = 1;
	graph_init(&lg->g);
}

static void log_finish(struct log *lg)
{
	ob_flush(lg);
	if (lg->json)
		view_json_print(lg->json);	/* frees it */
	fflush(stdout);
	log_release(lg);
	/* names tried as sessions before conversations left a message */
	aptix_error_clear();
}

/* The options that do not go together die here. */
static void check_options(const struct log *lg, int reflogs, int nargs,
			  size_t ngreps, int json)
{
	if (reflogs && (lg->use_graph || lg->all || lg->reverse ||
			lg->no_walk))
		die("option '-g' cannot be used with '--graph', '--all', "
		    "'--reverse' or '--no-walk'");
	if (reflogs && nargs > 1)
		die("-g shows the reflog of one ref at a time");
	if (lg->use_graph && lg->reverse)
		die("options '--reverse' and '--graph' cannot be used "
		    "together");
	if (lg->use_graph && (lg->pickaxe || ngreps))
		die("options '-S' and '--grep' cannot be used with '--graph'");
	if (lg->pickaxe && !*lg->pickaxe)
		die("-S needs a text to look for");
	if (json && (lg->use_graph || lg->patch || reflogs ||
		     lg->kind != FMT_MEDIUM))
		die("option '--json' cannot be used with '--graph', '-p', "
		    "'-g' or a format");
}

int cmd_log(int argc, const char **argv, struct aptix_repo *repo)
{
	struct log lg;
	struct fmt_opt fo;
	int when = -1, no_pager = 0, i, extended = 0, starts = 0;
	int first_parent = 0, reflogs = 0, json = 0;
	aptix_strlist greps;
	uint32_t k;
	struct option options[] = {
		OPT_BOOL(0, "graph", &lg.use_graph, "draw the history as a "
			 "graph of branches"),
		OPT_CALLBACK_F(0, "oneline", NULL, NULL, "one line per "
			       "session: short id, decorations, summary",
			       PARSE_OPT_NOARG, oneline_cb),
		OPT_BOOL(0, "all", &lg.all, "every session of every "
			 "conversation, failed ones too"),
		OPT_BOOL(0, "include-archived", &lg.with_archived, "with "
			 "--all: archived conversations too"),
		OPT_INTEGER('n', "max-count", &lg.max_count, "show at most "
			    "<n> sessions"),
		OPT_BOOL(0, "failed", &lg.show_failed, "show failed snapshots "
			 "next to their parent (default)"),
		OPT_BOOL(0, "reverse", &lg.reverse, "oldest first"),
		OPT_BOOL('p', "patch", &lg.patch, "show the answer under each "
			 "session"),
		OPT_BOOL(0, "no-walk", &lg.no_walk, "only the sessions named, "
			 "not their ancestors"),
		OPT_BOOL(0, "first-parent", &first_parent, "only the chain "
			 "of parents: no failed attempt beside it"),
		OPT_INTEGER(0, "skip", &lg.skip, "skip the first <n> sessions "
			    "shown"),
		OPT_BOOL('g', "walk-reflogs", &reflogs, "the entries of a "
			 "ref's reflog (HEAD's by default), newest first"),
		OPT_GROUP("Queries"),
		OPT_STRING('S', NULL, &lg.pickaxe, "text", "sessions whose "
			   "instruction, answer or tool calls hold <text>"),
		OPT_STRING_LIST(0, "grep", &greps, "pattern", "sessions whose "
				"instruction, answer or tool calls match "
				"(POSIX)"),
		OPT_BOOL(0, "tools", &lg.tools_mark, "mark the sessions with "
			 "tool calls or results"),
		OPT_BOOL('i', "regexp-ignore-case", &lg.ignore_case, "-S and "
			 "--grep ignore case"),
		OPT_BOOL('E', "extended-regexp", &extended, "--grep patterns "
			 "are extended regexes"),
		OPT_DATE_MS("since", &lg.since, "sessions created at or after "
			    "<date>"),
		OPT_DATE_MS("after", &lg.since, "same as --since"),
		OPT_DATE_MS("until", &lg.until, "sessions created at or before "
			    "<date>"),
		OPT_DATE_MS("before", &lg.until, "same as --until"),
		OPT_GROUP(""),
		OPT_CALLBACK(0, "format", NULL, "format", "oneline, short, "
			     "medium or a format string (see above)",
			     format_cb),
		OPT_CALLBACK_F(0, "pretty", NULL, "format", "the same as "
			       "--format (alone: medium)", PARSE_OPT_OPTARG,
			       pretty_cb),
		OPT_CALLBACK_F(0, "decorate", &lg.decorate, "how", "name the "
			       "conversations at each session: short, full, "
			       "no or auto (default: log.decorate, else on "
			       "a terminal)", PARSE_OPT_OPTARG, decorate_cb),
		OPT_CALLBACK_F(0, "color", &when, "when", "use colors: "
			       "always, never or auto (default)",
			       PARSE_OPT_OPTARG, color_cb),
		OPT_BOOL(0, "json", &json, "print the sessions as a JSON array "
			 "(their fields: Documentation/json.md)"),
		OPT_DATE(),
		OPT_NO_PAGER(&no_pager),
		OPT_END()
	};

	memset(&lg, 0, sizeof(lg));
	aptix_strlist_init(&greps);
	lg.text_k = NONE;
	lg.cur_k = NONE;
	lg.repo = repo;
	lg.show_failed = 1;
	lg.max_count = -1;
	lg.kind = FMT_MEDIUM;
	lg.decorate = DECORATE_UNSET;
	fo.kind = &lg.kind;
	fo.user_fmt = &lg.user_fmt;
	fmt_target = &fo;

	argc = take_dash_number(argc, argv, &lg.max_count);
	argc = parse_options(argc, argv, options, log_usage,
			     PARSE_OPT_KEEP_DASHDASH);
	for (i = 0; i < argc; i++)
		if (!strcmp(argv[i], "--")) {	/* -- <path>... */
			take_paths(&lg, argv + i + 1, argc - i - 1);
			argc = i;
			break;
		}
	if (lg.skip < 0)
		die("--skip needs a number of 0 or more");
	if (first_parent)
		lg.show_failed = 0;
	check_options(&lg, reflogs, argc, greps.nr, json);
	if (json)
		lg.json = view_json_array();
	lg.color = when < 0 ? cli_color_enabled(STDOUT_FILENO) : when;
	lg.decorate = decoration(lg.decorate, repo);
	compile_greps(&lg, &greps, extended);
	use_index(&lg, &greps, extended);
	aptix_strlist_release(&greps);

	/* the names each session gets: read every ref only to show them */
	if (lg.decorate || lg.kind == FMT_USER)
		load_heads(&lg);
	if (aptix_revwalk_new(&lg.walk, repo) < 0)
		die_aptix();
	aptix_revwalk_set_flags(lg.walk, (lg.show_failed ?
					  APTIX_REVWALK_FAILED : 0) |
				(lg.no_walk ? APTIX_REVWALK_NO_WALK : 0) |
				(lg.with_archived ? APTIX_REVWALK_ARCHIVED :
				 0));
	aptix_revwalk_set_range(lg.walk, lg.since, lg.until);
	if (lg.filter && aptix_revwalk_limit(lg.walk, lg.filter) < 0)
		die_aptix();
	if (reflogs) {
		log_start_output(&lg, no_pager);
		walk_reflog(&lg, argc ? argv[0] : "HEAD");
		log_finish(&lg);
		return 0;
	}
	/* exclusions first, as git reads them */
	for (i = 0; i < argc; i++)
		if (argv[i][0] == '^')
			add_arg(&lg, argv[i]);
		else
			starts++;
	for (i = 0; i < argc; i++)
		if (argv[i][0] != '^')
			add_arg(&lg, argv[i]);
	if (!starts && !lg.all)
		add_start(&lg, "HEAD", 1);

	if (lg.all)
		walk_all(&lg);
	else if (aptix_revwalk_sorting(lg.walk, APTIX_SORT_TIME) < 0)
		die_aptix();
	log_start_output(&lg, no_pager);
	walk(&lg);
	for (k = lg.norder; k-- > 0;) {
		use_copy(&lg, &lg.order[k]);
		show(&lg, lg.order[k].e.seq);
	}
	log_finish(&lg);
	return 0;
}
