/*
 * porcelain/diff.c - aptix diff: what changed in the context between two
 * snapshots.
 *
 * The context of a snapshot is what its turn recorded: the instruction,
 * the active files (path and SHA-256), the retrieved chunks, the model,
 * the previous_response_id it continued, and whether the chain restarted
 * there. Files are matched by path (added, removed, changed when the
 * SHA-256 differs), chunks by chunk id (added, removed). The answers, and
 * the tool calls and results (a line each), are compared line by line, and with -p so are the contents of the files
 * whose content the turns stored (a longest-common-subsequence diff
 * shown as unified hunks; too big a pair is shown whole, - then +).
 * With one session, its parent is the other side.
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

static const char *const diff_usage[] = {
	"aptix diff [--stat] [--json] [--no-pager] <session-a> <session-b>",
	"aptix diff [-p] [--stat] [--json] [--no-pager] <session>",
	"",
	"Shows what changed in the context between two sessions: the",
	"instructions, the answers, the tool calls and results, the active",
	"files (added, removed, changed; with -p their stored contents line",
	"by line), the retrieved chunks, the model, the previous response id",
	"and chain restarts. With one session: against its parent.",
	NULL
};

struct side {
	const char *name;
	aptix_oid id;
	aptix_session s;
	aptix_turn t;
	aptix_buf instruction, answer;
	int has_answer;
	aptix_buf tools;		/* its tool calls and results, a line
					   each (tool_view_lines()) */
	/* sorted views of the turn's files and chunks */
	const aptix_file_ref **files;
	size_t nfiles;
	const aptix_chunk_ref **chunks;
	size_t nchunks;
};

enum change { ADDED = 'A', REMOVED = 'D', CHANGED = 'M' };

struct file_change {
	enum change what;
	const aptix_file_ref *a, *b;	/* a: NULL when added; b: removed */
};

struct chunk_change {
	enum change what;
	const aptix_chunk_ref *c;
};

struct diff {
	struct side a, b;
	struct file_change *files;
	size_t nfiles, nadded, nremoved, nchanged;
	struct chunk_change *chunks;
	size_t nchunks, nchunks_added, nchunks_removed;
	int same_instruction, same_answer;
	aptix_repo *repo;
};

static const char *nz(const char *s)
{
	return s ? s : "";
}

static int file_by_path(const void *x, const void *y)
{
	const aptix_file_ref *a = *(const aptix_file_ref *const *)x;
	const aptix_file_ref *b = *(const aptix_file_ref *const *)y;

	return strcmp(nz(a->path), nz(b->path));
}

static int chunk_by_id(const void *x, const void *y)
{
	const aptix_chunk_ref *a = *(const aptix_chunk_ref *const *)x;
	const aptix_chunk_ref *b = *(const aptix_chunk_ref *const *)y;

	return strcmp(nz(a->chunk_id), nz(b->chunk_id));
}

static void *xcalloc(size_t n, size_t sz)
{
	void *p = calloc(n ? n : 1, sz);

	if (!p)
		die("out of memory");
	return p;
}

static void load_side(struct side *sd, aptix_repo *repo, const char *name)
{
	size_t i;

	sd->name = name;
	view_resolve_session(&sd->id, repo, name);
	view_load_session(&sd->s, repo, &sd->id);
	view_load_turn(&sd->t, repo, &sd->s.turn);
	view_read_blob(&sd->instruction, repo, &sd->t.instruction);
	if (!aptix_oid_is_zero(&sd->t.answer)) {
		view_read_blob(&sd->answer, repo, &sd->t.answer);
		sd->has_answer = 1;
	}
	if (sd->t.ntool_calls || sd->t.ntool_results) {
		struct tool_view tv;

		tool_view_load(&tv, repo, &sd->t);
		tool_view_lines(&sd->tools, &tv);
		tool_view_release(&tv);
	}

	sd->files = xcalloc(sd->t.nfiles, sizeof(*sd->files));
	for (i = 0; i < sd->t.nfiles; i++)
		sd->files[i] = &sd->t.files[i];
	sd->nfiles = sd->t.nfiles;
	qsort(sd->files, sd->nfiles, sizeof(*sd->files), file_by_path);
	sd->chunks = xcalloc(sd->t.nchunks, sizeof(*sd->chunks));
	for (i = 0; i < sd->t.nchunks; i++)
		sd->chunks[i] = &sd->t.chunks[i];
	sd->nchunks = sd->t.nchunks;
	qsort(sd->chunks, sd->nchunks, sizeof(*sd->chunks), chunk_by_id);
}

static void release_side(struct side *sd)
{
	free(sd->files);
	free(sd->chunks);
	aptix_buf_release(&sd->instruction);
	aptix_buf_release(&sd->answer);
	aptix_buf_release(&sd->tools);
	aptix_turn_release(&sd->t);
	aptix_session_release(&sd->s);
}

static void add_file(struct diff *d, enum change what,
		     const aptix_file_ref *a, const aptix_file_ref *b)
{
	struct file_change *fc = &d->files[d->nfiles++];

	fc->what = what;
	fc->a = a;
	fc->b = b;
	if (what == ADDED)
		d->nadded++;
	else if (what == REMOVED)
		d->nremoved++;
	else
		d->nchanged++;
}

static void add_chunk(struct diff *d, enum change what,
		      const aptix_chunk_ref *c)
{
	d->chunks[d->nchunks].what = what;
	d->chunks[d->nchunks++].c = c;
	if (what == ADDED)
		d->nchunks_added++;
	else
		d->nchunks_removed++;
}

/* Readers see chunks by place: path, then lines. */
static int chunk_change_cmp(const void *x, const void *y)
{
	const struct chunk_change *a = x, *b = y;
	int c = strcmp(nz(a->c->path), nz(b->c->path));

	if (c)
		return c;
	if (a->c->start_line != b->c->start_line)
		return a->c->start_line < b->c->start_line ? -1 : 1;
	if (a->what != b->what)
		return a->what == REMOVED ? -1 : 1;
	return strcmp(nz(a->c->chunk_id), nz(b->c->chunk_id));
}

static void compute(struct diff *d)
{
	const struct side *a = &d->a, *b = &d->b;
	size_t i = 0, j = 0;

	d->same_instruction = a->instruction.len == b->instruction.len &&
		!memcmp(a->instruction.ptr, b->instruction.ptr,
			a->instruction.len);
	/* an empty buffer's ptr may be NULL: memcmp of 0 bytes is not ok */
	d->same_answer = a->has_answer == b->has_answer &&
		a->answer.len == b->answer.len &&
		(!a->answer.len ||
		 !memcmp(a->answer.ptr, b->answer.ptr, a->answer.len));

	d->files = xcalloc(a->nfiles + b->nfiles, sizeof(*d->files));
	while (i < a->nfiles || j < b->nfiles) {
		int c;

		if (i == a->nfiles)
			c = 1;
		else if (j == b->nfiles)
			c = -1;
		else
			c = file_by_path(&a->files[i], &b->files[j]);
		if (c < 0) {
			add_file(d, REMOVED, a->files[i++], NULL);
		} else if (c > 0) {
			add_file(d, ADDED, NULL, b->files[j++]);
		} else {
			if (strcmp(nz(a->files[i]->sha256),
				   nz(b->files[j]->sha256)))
				add_file(d, CHANGED, a->files[i], b->files[j]);
			/* a path listed twice: the first of each counts */
			while (++i < a->nfiles &&
			       !file_by_path(&a->files[i - 1], &a->files[i]))
				;
			while (++j < b->nfiles &&
			       !file_by_path(&b->files[j - 1], &b->files[j]))
				;
		}
	}

	i = j = 0;
	d->chunks = xcalloc(a->nchunks + b->nchunks, sizeof(*d->chunks));
	while (i < a->nchunks || j < b->nchunks) {
		int c;

		if (i == a->nchunks)
			c = 1;
		else if (j == b->nchunks)
			c = -1;
		else
			c = chunk_by_id(&a->chunks[i], &b->chunks[j]);
		if (c < 0) {
			add_chunk(d, REMOVED, a->chunks[i++]);
		} else if (c > 0) {
			add_chunk(d, ADDED, b->chunks[j++]);
		} else {
			while (++i < a->nchunks &&
			       !chunk_by_id(&a->chunks[i - 1], &a->chunks[i]))
				;
			while (++j < b->nchunks &&
			       !chunk_by_id(&b->chunks[j - 1], &b->chunks[j]))
				;
		}
	}
	if (d->nchunks)
		qsort(d->chunks, d->nchunks, sizeof(*d->chunks),
		      chunk_change_cmp);
}

/* --- Text ----------------------------------------------------------------- */

struct colors {
	const char *red, *green, *yellow, *bold, *reset;
};

/* Every line of text after prefix, in color (empty lines too). */
static void put_prefixed(const char *prefix, const char *color,
			 const char *reset, const char *text, size_t len)
{
	size_t start = 0, i;

	for (i = 0; i <= len; i++) {
		if (i < len && text[i] != '\n')
			continue;
		if (i == len && i == start && len)
			break;	/* ended with a newline */
		printf("%s%s", color, prefix);
		view_putn(stdout, text + start, i - start);
		printf("%s\n", *color ? reset : "");
		start = i + 1;
	}
}

/* --- Line diff ------------------------------------------------------------ */

struct lines {
	const char *text;
	size_t n;
	size_t *start, *len;
	uint32_t *hash;
};

static void split_lines(struct lines *l, const char *text, size_t len)
{
	size_t i, s = 0, n = 0;
	uint32_t h;

	memset(l, 0, sizeof(*l));
	l->text = text;
	for (i = 0; i < len; i++)
		if (text[i] == '\n')
			n++;
	if (len && text[len - 1] != '\n')
		n++;
	l->start = xcalloc(n, sizeof(*l->start));
	l->len = xcalloc(n, sizeof(*l->len));
	l->hash = xcalloc(n, sizeof(*l->hash));
	for (i = 0; i <= len && l->n < n; i++) {
		if (i < len && text[i] != '\n')
			continue;
		l->start[l->n] = s;
		l->len[l->n] = i - s;
		for (h = 2166136261u; s < i; s++)
			h = (h ^ (unsigned char)text[s]) * 16777619u;
		l->hash[l->n++] = h;
		s = i + 1;
	}
}

static void free_lines(struct lines *l)
{
	free(l->start);
	free(l->len);
	free(l->hash);
}

static int same_line(const struct lines *a, size_t i, const struct lines *b,
		     size_t j)
{
	return a->hash[i] == b->hash[j] && a->len[i] == b->len[j] &&
		!memcmp(a->text + a->start[i], b->text + b->start[j],
			a->len[i]);
}

/* Beyond this many cells (lines of a times lines of b): shown whole. */
#define LCS_MAX_CELLS (4u << 20)
#define CONTEXT 3

static void put_line(const char *prefix, const char *color,
		     const struct colors *co, const struct lines *l, size_t i)
{
	printf("%s%s", color, prefix);
	view_putn(stdout, l->text + l->start[i], l->len[i]);
	printf("%s\n", *color ? co->reset : "");
}

/*
 * ops: for each step, '=' (both), '-' (a only) or '+' (b only), from a
 * longest common subsequence; *nops its length. NULL when too big.
 */
static char *lcs_ops(const struct lines *a, const struct lines *b,
		     size_t *nops)
{
	size_t w = b->n + 1, i, j, k = 0;
	uint32_t *t;
	char *ops;

	if (a->n && b->n && (a->n + 1) > LCS_MAX_CELLS / w)
		return NULL;
	t = xcalloc((a->n + 1) * w, sizeof(*t));
	for (i = a->n; i-- > 0;)
		for (j = b->n; j-- > 0;)
			t[i * w + j] = same_line(a, i, b, j) ?
				t[(i + 1) * w + j + 1] + 1 :
				t[(i + 1) * w + j] > t[i * w + j + 1] ?
				t[(i + 1) * w + j] : t[i * w + j + 1];
	ops = xcalloc(a->n + b->n + 1, 1);
	i = j = 0;
	while (i < a->n || j < b->n) {
		if (i < a->n && j < b->n && same_line(a, i, b, j)) {
			ops[k++] = '=';
			i++;
			j++;
		} else if (j == b->n || (i < a->n && t[(i + 1) * w + j] >=
					  t[i * w + j + 1])) {
			ops[k++] = '-';
			i++;
		} else {
			ops[k++] = '+';
			j++;
		}
	}
	free(t);
	*nops = k;
	return ops;
}

/* Unified hunks of a -> b, each line after indent. */
static void put_line_diff(const char *indent, const char *ta, size_t la,
			  const char *tb, size_t lb, const struct colors *co)
{
	struct lines a, b;
	size_t nops = 0, k, i, j, end, ai, bi, an, bn, x;
	char *ops, pfx[64];

	split_lines(&a, ta, la);
	split_lines(&b, tb, lb);
	ops = lcs_ops(&a, &b, &nops);
	if (!ops) {
		snprintf(pfx, sizeof(pfx), "%s-", indent);
		for (i = 0; i < a.n; i++)
			put_line(pfx, co->red, co, &a, i);
		snprintf(pfx, sizeof(pfx), "%s+", indent);
		for (j = 0; j < b.n; j++)
			put_line(pfx, co->green, co, &b, j);
		goto done;
	}
	i = j = 0;		/* lines of a and b before ops[k] */
	for (k = 0; k < nops;) {
		if (ops[k] == '=') {
			i++;
			j++;
			k++;
			continue;
		}
		/* a hunk: back CONTEXT lines, on until CONTEXT*2 equal */
		x = k;
		ai = i;
		bi = j;
		while (x > 0 && k - x < CONTEXT && ops[x - 1] == '=') {
			x--;
			ai--;
			bi--;
		}
		for (end = k; end < nops; end++) {
			size_t run = 0;

			while (end + run < nops && ops[end + run] == '=')
				run++;
			if (end + run == nops || run > 2 * CONTEXT) {
				end += run < CONTEXT ? run : CONTEXT;
				break;
			}
			end += run;
		}
		for (an = bn = 0, k = x; k < end; k++) {
			an += ops[k] != '+';
			bn += ops[k] != '-';
		}
		printf("%s%s@@ -%lu,%lu +%lu,%lu @@%s\n", indent, co->bold,
		       (unsigned long)(an ? ai + 1 : ai), (unsigned long)an,
		       (unsigned long)(bn ? bi + 1 : bi), (unsigned long)bn,
		       *co->bold ? co->reset : "");
		for (k = x; k < end; k++) {
			if (ops[k] == '=') {
				snprintf(pfx, sizeof(pfx), "%s ", indent);
				put_line(pfx, "", co, &a, ai++);
				bi++;
			} else if (ops[k] == '-') {
				snprintf(pfx, sizeof(pfx), "%s-", indent);
				put_line(pfx, co->red, co, &a, ai++);
			} else {
				snprintf(pfx, sizeof(pfx), "%s+", indent);
				put_line(pfx, co->green, co, &b, bi++);
			}
		}
		i = ai;
		j = bi;
	}
done:
	free(ops);
	free_lines(&a);
	free_lines(&b);
}

/* "label: same (value)" or "label: a -> b"; values are untrusted. */
static void print_pair(const char *label, const char *a, const char *b,
		       const struct colors *co)
{
	printf("%s: ", label);
	if (!strcmp(nz(a), nz(b))) {
		printf("same");
		if (a && *a) {
			printf(" (");
			view_puts(stdout, a);
			putchar(')');
		}
	} else {
		printf("%s", co->red);
		view_puts(stdout, a && *a ? a : "(none)");
		printf("%s -> %s", *co->red ? co->reset : "", co->green);
		view_puts(stdout, b && *b ? b : "(none)");
		printf("%s", *co->green ? co->reset : "");
	}
	putchar('\n');
}

static void print_file_line(const struct file_change *fc,
			    const struct colors *co, int stat)
{
	const char *color = fc->what == ADDED ? co->green :
		fc->what == REMOVED ? co->red : co->yellow;
	const aptix_file_ref *f = fc->b ? fc->b : fc->a;
	char s1[32], s2[32];

	printf("  %s%c%s ", color, (char)fc->what, *color ? co->reset : "");
	view_path(stdout, f->path);
	if (stat) {
		if (fc->what == CHANGED)
			printf("  %s -> %s\n", pretty_size(s1, (uint64_t)
				(fc->a->size > 0 ? fc->a->size : 0)),
			       pretty_size(s2, (uint64_t)
				(fc->b->size > 0 ? fc->b->size : 0)));
		else
			printf("  %s\n", pretty_size(s1, (uint64_t)
				(f->size > 0 ? f->size : 0)));
		return;
	}
	if (fc->what == CHANGED)
		printf(" (sha256 %.12s -> %.12s)\n", nz(fc->a->sha256),
		       nz(fc->b->sha256));
	else
		printf(" (sha256 %.12s)\n", nz(f->sha256));
}

static void print_chunk_line(const struct chunk_change *cc,
			     const struct colors *co)
{
	const char *color = cc->what == ADDED ? co->green : co->red;

	printf("  %s%c%s ", color, cc->what == ADDED ? '+' : '-',
	       *color ? co->reset : "");
	view_puts(stdout, nz(cc->c->chunk_id));
	putchar(' ');
	view_path(stdout, nz(cc->c->path));
	printf(":%ld-%ld\n", cc->c->start_line, cc->c->end_line);
}

static const char *yes_no(int v)
{
	return v ? "yes" : "no";
}

/* Answers, when either turn has one. */
static void print_answers(const struct diff *d, int stat,
			  const struct colors *co)
{
	if (!d->a.has_answer && !d->b.has_answer)
		return;
	if (d->same_answer) {
		printf("Answers: same\n");
		return;
	}
	if (stat || !d->a.has_answer || !d->b.has_answer) {
		printf("Answers: %s\n", !d->a.has_answer ? "(none) -> answer" :
		       !d->b.has_answer ? "answer -> (none)" : "changed");
		if (stat)
			return;
	} else {
		printf("Answers:\n");
	}
	put_line_diff("  ", d->a.answer.ptr, d->a.answer.len,
		      d->b.answer.ptr, d->b.answer.len, co);
}

/* The tool calls each turn asked for and the results it sent. */
static void print_tools(const struct diff *d, int stat,
			const struct colors *co)
{
	const aptix_buf *a = &d->a.tools, *b = &d->b.tools;

	if (!a->len && !b->len)
		return;
	if (a->len == b->len && !memcmp(a->ptr, b->ptr, a->len)) {
		printf("Tool calls: same\n");
		return;
	}
	printf("Tool calls:%s\n", stat ? " changed" : "");
	if (!stat)
		put_line_diff("  ", a->ptr, a->len, b->ptr, b->len, co);
}

/* -p: a file's stored content, or why there is none. */
static int file_content(aptix_buf *out, aptix_repo *repo,
			const aptix_file_ref *f)
{
	if (!f || !f->has_content)
		return 0;
	view_read_blob(out, repo, &f->content);
	return 1;
}

static void print_file_patch(const struct diff *d,
			     const struct file_change *fc,
			     const struct colors *co)
{
	aptix_buf a = APTIX_BUF_INIT, b = APTIX_BUF_INIT;
	int has_a = file_content(&a, d->repo, fc->a);
	int has_b = file_content(&b, d->repo, fc->b);

	if ((fc->a && !has_a) || (fc->b && !has_b) ||
	    (fc->a && fc->a->binary) || (fc->b && fc->b->binary))
		printf("    (content not stored%s)\n",
		       (fc->a && fc->a->binary) || (fc->b && fc->b->binary) ?
		       ": binary" : "");
	else
		put_line_diff("    ", a.ptr, a.len, b.ptr, b.len, co);
	aptix_buf_release(&a);
	aptix_buf_release(&b);
}

static void print_text(const struct diff *d, int stat, int patch)
{
	struct colors co;
	size_t i;

	co.red = view_color(stdout, VIEW_RED);
	co.green = view_color(stdout, VIEW_GREEN);
	co.yellow = view_color(stdout, VIEW_YELLOW);
	co.bold = view_color(stdout, VIEW_BOLD);
	co.reset = *co.red ? VIEW_RESET : "";

	printf("%sdiff %s %s%s\n", co.bold, view_short_id(&d->a.id),
	       view_short_id(&d->b.id), co.reset);
	if (stat) {
		printf("Instructions: %s\n", d->same_instruction ? "same" :
		       "changed");
	} else if (d->same_instruction) {
		printf("Instructions: same\n");
	} else {
		printf("Instructions:\n");
		put_prefixed("  - ", co.red, co.reset, d->a.instruction.ptr,
			     d->a.instruction.len);
		put_prefixed("  + ", co.green, co.reset, d->b.instruction.ptr,
			     d->b.instruction.len);
	}
	print_answers(d, stat, &co);
	print_tools(d, stat, &co);
	print_pair("Model", d->a.t.model, d->b.t.model, &co);
	print_pair("Previous response id", d->a.t.previous_response_id,
		   d->b.t.previous_response_id, &co);
	if (d->a.t.chain_restarted == d->b.t.chain_restarted)
		printf("Chain restarted: same (%s)\n",
		       yes_no(d->a.t.chain_restarted));
	else
		printf("Chain restarted: %s -> %s\n",
		       yes_no(d->a.t.chain_restarted),
		       yes_no(d->b.t.chain_restarted));

	printf("Files: ");
	if (!d->nfiles)
		printf("same (%lu)\n", (unsigned long)d->b.nfiles);
	else
		printf("%lu added, %lu removed, %lu changed\n",
		       (unsigned long)d->nadded, (unsigned long)d->nremoved,
		       (unsigned long)d->nchanged);
	for (i = 0; i < d->nfiles; i++) {
		print_file_line(&d->files[i], &co, stat);
		if (patch && !stat)
			print_file_patch(d, &d->files[i], &co);
	}

	printf("Chunks: ");
	if (!d->nchunks)
		printf("same (%lu)\n", (unsigned long)d->b.nchunks);
	else
		printf("%lu added, %lu removed\n",
		       (unsigned long)d->nchunks_added,
		       (unsigned long)d->nchunks_removed);
	if (!stat)
		for (i = 0; i < d->nchunks; i++)
			print_chunk_line(&d->chunks[i], &co);
}

/* --- JSON ----------------------------------------------------------------- */

static json_t *pair_json(json_t *a, json_t *b)
{
	json_t *o = view_json_object();

	view_json_set(o, "same", json_boolean(json_equal(a, b)));
	view_json_set(o, "a", a);
	view_json_set(o, "b", b);
	return o;
}

static json_t *file_json(const aptix_file_ref *f)
{
	json_t *o = view_json_object();

	view_json_set(o, "path", view_json_str(f->path));
	view_json_set(o, "sha256", view_json_str(f->sha256));
	view_json_set(o, "size", view_json_int(f->size));
	return o;
}

static json_t *chunk_json(const aptix_chunk_ref *c)
{
	json_t *o = view_json_object();

	view_json_set(o, "chunk_id", view_json_str(c->chunk_id));
	view_json_set(o, "path", view_json_str(c->path));
	view_json_set(o, "start_line", view_json_int(c->start_line));
	view_json_set(o, "end_line", view_json_int(c->end_line));
	view_json_set(o, "content_hash", view_json_str(c->content_hash));
	return o;
}

static void print_json(const struct diff *d)
{
	json_t *o = view_json_object(), *x, *added, *removed, *changed;
	size_t i;

	view_json_set(o, "a", view_json_id(&d->a.id));
	view_json_set(o, "b", view_json_id(&d->b.id));
	view_json_set(o, "instructions", pair_json(
			      view_json_text(d->a.instruction.ptr,
					     d->a.instruction.len),
			      view_json_text(d->b.instruction.ptr,
					     d->b.instruction.len)));
	view_json_set(o, "answers", pair_json(
			      d->a.has_answer ? view_json_text(d->a.answer.ptr,
				      d->a.answer.len) : json_null(),
			      d->b.has_answer ? view_json_text(d->b.answer.ptr,
				      d->b.answer.len) : json_null()));
	view_json_set(o, "tool_calls", pair_json(
			      view_json_text(d->a.tools.ptr, d->a.tools.len),
			      view_json_text(d->b.tools.ptr, d->b.tools.len)));
	view_json_set(o, "model", pair_json(view_json_str(d->a.t.model),
					    view_json_str(d->b.t.model)));
	view_json_set(o, "previous_response_id", pair_json(
			      view_json_str(d->a.t.previous_response_id),
			      view_json_str(d->b.t.previous_response_id)));
	view_json_set(o, "chain_restarted", pair_json(
			      json_boolean(d->a.t.chain_restarted),
			      json_boolean(d->b.t.chain_restarted)));

	added = view_json_array();
	removed = view_json_array();
	changed = view_json_array();
	for (i = 0; i < d->nfiles; i++) {
		const struct file_change *fc = &d->files[i];

		if (fc->what == ADDED) {
			view_json_append(added, file_json(fc->b));
		} else if (fc->what == REMOVED) {
			view_json_append(removed, file_json(fc->a));
		} else {
			x = view_json_object();
			view_json_set(x, "path", view_json_str(fc->b->path));
			view_json_set(x, "sha256_a",
				      view_json_str(fc->a->sha256));
			view_json_set(x, "sha256_b",
				      view_json_str(fc->b->sha256));
			view_json_set(x, "size_a", view_json_int(fc->a->size));
			view_json_set(x, "size_b", view_json_int(fc->b->size));
			view_json_append(changed, x);
		}
	}
	x = view_json_object();
	view_json_set(x, "added", added);
	view_json_set(x, "removed", removed);
	view_json_set(x, "changed", changed);
	view_json_set(o, "files", x);

	added = view_json_array();
	removed = view_json_array();
	for (i = 0; i < d->nchunks; i++)
		view_json_append(d->chunks[i].what == ADDED ? added : removed,
		       chunk_json(d->chunks[i].c));
	x = view_json_object();
	view_json_set(x, "added", added);
	view_json_set(x, "removed", removed);
	view_json_set(o, "chunks", x);

	x = view_json_object();
	view_json_set(x, "files_added", view_json_int((int64_t)d->nadded));
	view_json_set(x, "files_removed",
		      view_json_int((int64_t)d->nremoved));
	view_json_set(x, "files_changed",
		      view_json_int((int64_t)d->nchanged));
	view_json_set(x, "chunks_added",
		      view_json_int((int64_t)d->nchunks_added));
	view_json_set(x, "chunks_removed",
		      view_json_int((int64_t)d->nchunks_removed));
	view_json_set(o, "stat", x);
	view_json_print(o);
}

int cmd_diff(int argc, const char **argv, struct aptix_repo *repo)
{
	struct diff d;
	int json = 0, stat = 0, no_pager = 0, patch = 0;
	char parent[APTIX_OID_HEXSZ + 1];
	struct option options[] = {
		OPT_BOOL('p', "patch", &patch, "the stored contents of the "
			 "files, line by line"),
		OPT_BOOL(0, "stat", &stat, "only counts, and file sizes"),
		OPT_BOOL(0, "json", &json, "print one JSON object"),
		OPT_NO_PAGER(&no_pager),
		OPT_END()
	};

	argc = parse_options(argc, argv, options, diff_usage, 0);
	if (argc != 1 && argc != 2)
		usage_with_options(diff_usage, options);
	memset(&d, 0, sizeof(d));
	d.repo = repo;
	if (argc == 1) {
		/* a session against its parent, as git show does */
		load_side(&d.b, repo, argv[0]);
		if (!d.b.s.has_parent)
			die("'%s' is the first turn of its conversation: it "
			    "has no parent to compare with", argv[0]);
		snprintf(parent, sizeof(parent), "%s",
			 aptix_oid_hex(&d.b.s.parent));
		load_side(&d.a, repo, parent);
	} else {
		load_side(&d.a, repo, argv[0]);
		load_side(&d.b, repo, argv[1]);
	}
	compute(&d);
	if (!no_pager)
		setup_pager();
	if (json)
		print_json(&d);
	else
		print_text(&d, stat, patch);
	free(d.files);
	free(d.chunks);
	release_side(&d.a);
	release_side(&d.b);
	return 0;
}
