/*
 * porcelain/diff.c - aptix diff: what changed in the context between two
 * snapshots.
 *
 * The context of a snapshot is what its turn recorded: the instruction,
 * the active files (path and SHA-256), the retrieved chunks, the model,
 * the previous_response_id it continued, and whether the chain restarted
 * there. Files are matched by path (added, removed, changed when the
 * SHA-256 differs), chunks by chunk id (added, removed).
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

static const char *const diff_usage[] = {
	"aptix diff [--stat] [--json] [--no-pager] <session-a> <session-b>",
	"",
	"Shows what changed in the context between two sessions: the",
	"instructions, the active files (added, removed, changed), the",
	"retrieved chunks, the model, the previous response id and chain",
	"restarts.",
	NULL
};

struct side {
	const char *name;
	aptix_oid id;
	aptix_session s;
	aptix_turn t;
	aptix_buf instruction;
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
	int same_instruction;
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
	view_puts(stdout, f->path);
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
	view_puts(stdout, nz(cc->c->path));
	printf(":%ld-%ld\n", cc->c->start_line, cc->c->end_line);
}

static const char *yes_no(int v)
{
	return v ? "yes" : "no";
}

static void print_text(const struct diff *d, int stat)
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
	for (i = 0; i < d->nfiles; i++)
		print_file_line(&d->files[i], &co, stat);

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
	int json = 0, stat = 0, no_pager = 0;
	struct option options[] = {
		OPT_BOOL(0, "stat", &stat, "only counts, and file sizes"),
		OPT_BOOL(0, "json", &json, "print one JSON object"),
		OPT_NO_PAGER(&no_pager),
		OPT_END()
	};

	argc = parse_options(argc, argv, options, diff_usage, 0);
	if (argc != 2)
		usage_with_options(diff_usage, options);
	memset(&d, 0, sizeof(d));
	load_side(&d.a, repo, argv[0]);
	load_side(&d.b, repo, argv[1]);
	compute(&d);
	if (!no_pager)
		setup_pager();
	if (json)
		print_json(&d);
	else
		print_text(&d, stat);
	free(d.files);
	free(d.chunks);
	release_side(&d.a);
	release_side(&d.b);
	return 0;
}
