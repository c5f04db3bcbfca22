/*
 * porcelain/gc.c - delete what nothing reaches, then compact the store.
 *
 * As git gc: objects no ref, reflog entry, running turn or failed
 * session reaches, and older than the grace period (--prune,
 * gc.prune-expire: two weeks), go; reflog entries go only by an
 * explicit policy (--reflog-expire, gc.reflog-expire: never). The
 * library decides (aptix/gc.h, over the reachability fsck reports by).
 * --dry-run lists what would go with its size; --json prints the
 * summary and the list as one object.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <aptix.h>
#include "cli.h"
#include "commands.h"
#include "parse-options.h"
#include "view.h"

static const char *const gc_usage[] = {
	"aptix gc [--dry-run] [--verbose] [--json] [--prune <date>] "
	"[--reflog-expire <date>] [--no-compact]",
	NULL
};

struct listing {
	int print;			/* one line an item on stdout */
	json_t *items;			/* --json */
};

static void iso_time(char *out, size_t max, int64_t ms)
{
	time_t t = (time_t)(ms / 1000);
	struct tm tm;

	if (!gmtime_r(&t, &tm) ||
	    !strftime(out, max, "%Y-%m-%dT%H:%M:%SZ", &tm))
		snprintf(out, max, "@%lld", (long long)(ms / 1000));
}

static void on_item(const aptix_gc_item *it, void *payload)
{
	struct listing *l = payload;
	char when[64];
	json_t *x;

	if (l->items) {
		x = view_json_object();
		if (it->reflog) {
			view_json_set(x, "kind", view_json_str("reflog"));
			view_json_set(x, "ref", view_json_str(it->reflog));
			view_json_set(x, "time", view_json_time(it->time_ms));
		} else {
			view_json_set(x, "kind", view_json_str("object"));
			view_json_set(x, "id", view_json_id(&it->id));
			view_json_set(x, "type", view_json_str(
					      aptix_otype_name(it->type)));
			view_json_set(x, "size", view_json_int(
					      (int64_t)it->size));
		}
		view_json_append(l->items, x);
	} else if (l->print && it->reflog) {
		iso_time(when, sizeof(when), it->time_ms);
		printf("expire reflog %s %s\n", it->reflog, when);
	} else if (l->print) {
		printf("prune %s %s %llu\n", aptix_otype_name(it->type),
		       aptix_oid_hex(&it->id), (unsigned long long)it->size);
	}
}

/*
 * A date option or key: "never" (-1), or a date as --since takes it;
 * out is then how long before now it is (0 for now or later).
 */
static int64_t parse_age(const char *text, const char *what, int64_t now)
{
	int64_t ms;

	if (!strcmp(text, "never"))
		return -1;
	if (aptix_date_parse(&ms, text, now) < 0)
		die("bad %s '%s': %s", what, text,
		    aptix_error_last()->message);
	return ms >= now ? 0 : now - ms;
}

static void print_json(const aptix_gc_stats *st, const aptix_gc_options *o,
		       json_t *items)
{
	json_t *j = view_json_object();

	view_json_set(j, "dry_run", json_boolean(o->dry_run));
	view_json_set(j, "objects", view_json_int((int64_t)st->objects));
	view_json_set(j, "reachable", view_json_int((int64_t)st->reachable));
	view_json_set(j, "rewritten", view_json_int((int64_t)st->rewritten));
	view_json_set(j, "pruned", view_json_int((int64_t)st->pruned));
	view_json_set(j, "pruned_bytes",
		      view_json_int((int64_t)st->pruned_bytes));
	view_json_set(j, "reflog_expired",
		      view_json_int((int64_t)st->reflog_expired));
	view_json_set(j, "disk_before",
		      view_json_int((int64_t)st->disk_before));
	view_json_set(j, "disk_after", view_json_int((int64_t)st->disk_after));
	view_json_set(j, "compacted", json_boolean(st->compacted));
	view_json_set(j, "items", items);
	view_json_print(j);
}

static void summary(const aptix_gc_stats *st, const aptix_gc_options *o)
{
	fprintf(stderr, "%s %zu of %zu objects (%llu bytes), %zu reflog "
		"entries; %zu reachable, %zu rewritten; data.mdb: %llu "
		"-> %llu bytes\n", o->dry_run ? "would prune" : "pruned",
		st->pruned, st->objects,
		(unsigned long long)st->pruned_bytes, st->reflog_expired,
		st->reachable, st->rewritten,
		(unsigned long long)st->disk_before,
		(unsigned long long)st->disk_after);
	if (!o->dry_run && !o->no_compact && !st->compacted)
		warning("the store was not compacted: another process (pid "
			"%ld) has it open; the pages freed are reused by "
			"later writes; run 'aptix gc' again when no other "
			"aptix command runs to shrink data.mdb",
			st->busy_pid);
}

int cmd_gc(int argc, const char **argv, struct aptix_repo *repo)
{
	aptix_gc_options o = APTIX_GC_OPTIONS_INIT;
	aptix_gc_stats st;
	aptix_config *cfg = NULL;
	struct listing l = { 0, NULL };
	const char *prune = NULL, *reflog = NULL;
	int dry_run = 0, verbose = 0, json = 0, no_compact = 0;
	int64_t now = aptix_now_ms(), age;
	struct option options[] = {
		OPT_BOOL('n', "dry-run", &dry_run, "list what would go, "
			 "with its size; change nothing"),
		OPT_BOOL('v', "verbose", &verbose, "list what goes"),
		OPT_BOOL(0, "json", &json, "print the summary and the list "
			 "as JSON"),
		OPT_STRING(0, "prune", &prune, "date", "keep unreachable "
			   "objects younger than this (now, never; default "
			   "gc.prune-expire, 2.weeks.ago)"),
		OPT_STRING(0, "reflog-expire", &reflog, "date", "delete "
			   "reflog entries older than this (now; default "
			   "gc.reflog-expire, never)"),
		OPT_BOOL(0, "no-compact", &no_compact, "do not rewrite the "
			 "store's file"),
		OPT_END()
	};

	parse_options(argc, argv, options, gc_usage, PARSE_OPT_NO_ARGS);
	if (aptix_config_open(&cfg, repo) < 0)
		die_aptix();
	if (!prune)
		prune = aptix_config_get(cfg, "gc.prune-expire");
	if (!reflog)
		reflog = aptix_config_get(cfg, "gc.reflog-expire");
	o.grace_ms = parse_age(prune ? prune : "2.weeks.ago", "--prune", now);
	age = parse_age(reflog ? reflog : "never", "--reflog-expire", now);
	/* "now" expires every entry written before this run */
	o.reflog_before_ms = age < 0 ? 0 : now - age + (age == 0);
	o.dry_run = dry_run;
	o.no_compact = no_compact;
	o.now_ms = now;
	o.on_item = on_item;
	o.payload = &l;
	l.print = dry_run || verbose;
	if (json)
		l.items = view_json_array();
	if (aptix_gc(&st, repo, &o) < 0)
		die_aptix();
	if (json)
		print_json(&st, &o, l.items);
	else
		fflush(stdout);
	summary(&st, &o);
	aptix_config_free(cfg);
	return 0;
}
