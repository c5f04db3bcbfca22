/*
 * porcelain/usage.c - aptix usage: tokens spent, per turn, per
 * conversation and overall, and what they cost (an estimate).
 *
 * The index chooses what to read: conversation records give the scope
 * (workspace, --conversation) and skip a conversation whose last
 * activity is older than --since; session records give the snapshots and
 * their times, and (records of version 5) each turn's model, tokens and
 * tool calls: a turn is read only when its record does not say. A turn
 * object shared by two snapshots counts once.
 *
 * Cost: tokens times the price of the turn's model (src/config/price.c, config
 * price.<model>.*). A turn whose model has no price has an unknown cost,
 * and so has every total it is part of: an estimate that leaves out a
 * part must not read as the whole bill.
 */
#include <ctype.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "view.h"
#include "cli.h"
#include "commands.h"
#include "pager.h"
#include "parse-options.h"

static const char *const usage_usage[] = {
	"aptix usage [--turns] [--json] [--conversation <name>] [--forks] "
	"[--all-workspaces | --workspace <id>] [--since <date>] "
	"[--until <date>] [--no-pager]",
	"",
	"Tokens spent per conversation and overall (--turns: per turn too),",
	"with an estimated cost in US dollars from a built-in price table",
	"per model; set price.<model>.input, price.<model>.cached-input and",
	"price.<model>.output (dollars per million tokens) to override it.",
	"A model without a price has an unknown cost, never 0.",
	"--forks shows each conversation's forks below it, with what the",
	"whole tree spent; with --conversation, that conversation and",
	"every conversation forked from it, at any depth.",
	NULL
};

struct sum {
	int64_t input, cached, output, reasoning, total;
	uint32_t turns;
	/* the tool calls asked for, and the requests that sent results:
	   each one a request of its own, with its tokens */
	uint32_t tool_calls, tool_requests;
	double cost;
	int unknown;		/* a turn of unknown cost is part of it */
};

struct turn_row {
	aptix_oid session, turn;
	int64_t created_at;
	uint32_t conv;			/* index into convs */
	char *model;
	aptix_usage u;
	double cost;
	int known, from_config;
	uint32_t tool_calls;
	int sends_results;		/* a request answering tool calls */
	int recorded;			/* the index record said all this */
};

struct conv_row {
	char id[APTIX_CONV_MAXLEN + 1];
	char title[APTIX_SUMMARY_MAX + 1];
	size_t shown;			/* of the id: a unique abbreviation */
	int64_t updated_at;
	struct sum sum;
	int has_usage;			/* its record sums its usage */
	size_t nusage;
	aptix_conv_usage usage[APTIX_CONV_MODELS];
	/* --forks: where it was forked from, and what is below it */
	long parent;			/* index into convs; -1: a root */
	aptix_oid from;
	char from_conv[APTIX_CONV_MAXLEN + 1];
	int forked, depth, keep;
	size_t nforks;			/* conversations below it */
	struct sum subtree;		/* its sum and theirs */
};

struct usage {
	aptix_repo *repo;
	aptix_config *cfg;
	const char *ws, *only_conv;
	int explicit_ws, forks;
	int64_t since, until;
	struct conv_row *convs;		/* by id */
	size_t nconvs, aconvs;
	const struct conv_row **order;	/* most recent first */
	struct turn_row *turns;
	size_t nturns, aturns;
	aptix_strlist unknown_models;
	aptix_strlist all_ids;		/* every conversation's, for abbrevs */
	struct sum total;
};

static void *grow(void *p, size_t *alloc, size_t n, size_t size)
{
	if (n < *alloc)
		return p;
	*alloc = *alloc ? *alloc * 2 : 16;
	if (*alloc > SIZE_MAX / size)
		die("out of memory");
	p = realloc(p, *alloc * size);
	if (!p)
		die("out of memory");
	return p;
}

static int conv_cb(const aptix_conv_info *ci, void *payload)
{
	struct usage *us = payload;
	struct conv_row *c;

	if (aptix_strlist_push(&us->all_ids, ci->id) < 0)
		die("out of memory");
	if (us->only_conv && strcmp(ci->id, us->only_conv) && !us->forks)
		return 0;	/* --forks: kept until the tree is known */
	if (!us->only_conv &&
	    !view_workspace_holds(us->ws, us->explicit_ws, ci->workspace))
		return 0;
	if (us->since && ci->has_last && ci->updated_at < us->since)
		return 0;	/* nothing of it is recent enough */
	us->convs = grow(us->convs, &us->aconvs, us->nconvs,
			 sizeof(*us->convs));
	c = &us->convs[us->nconvs++];
	memset(c, 0, sizeof(*c));
	snprintf(c->id, sizeof(c->id), "%s", ci->id);
	snprintf(c->title, sizeof(c->title), "%s", ci->title);
	c->updated_at = ci->updated_at;
	c->has_usage = ci->has_usage || !ci->turns;	/* none to sum */
	c->nusage = ci->nusage;
	memcpy(c->usage, ci->usage, ci->nusage * sizeof(*ci->usage));
	c->parent = -1;
	if (us->forks) {
		aptix_conv_origin o;
		int r = aptix_index_conversation_origin(&o, us->repo, ci);

		if (r < 0 && r != APTIX_ENOTFOUND)
			return r;
		aptix_error_clear();
		c->forked = r == 0 && o.forked;
		c->from = o.from;
		snprintf(c->from_conv, sizeof(c->from_conv), "%s",
			 o.conversation);
	}
	return 0;
}

/* 8-4-4-4-12 hex digits: an id aptix made, which abbreviates */
static int is_uuid(const char *id)
{
	size_t i;

	if (strlen(id) != 36)
		return 0;
	for (i = 0; i < 36; i++)
		if ((i == 8 || i == 13 || i == 18 || i == 23) ?
		    id[i] != '-' : !isxdigit((unsigned char)id[i]))
			return 0;
	return 1;
}

static size_t common_prefix(const char *a, const char *b)
{
	size_t n = 0;

	while (a[n] && a[n] == b[n])
		n++;
	return n;
}

static int str_cmp(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

/*
 * How much of each id to show, as git abbreviates an object id: a UUID
 * by its shortest prefix of 8 or more characters that no other
 * conversation shares (what `aptix switch` and --conversation accept);
 * any other name whole.
 */
static void abbreviate(struct usage *us)
{
	char **v = us->all_ids.items;
	size_t n = us->all_ids.nr, i, lo, hi, len;

	if (n > 1)
		qsort(v, n, sizeof(*v), str_cmp);
	for (i = 0; i < us->nconvs; i++) {
		struct conv_row *c = &us->convs[i];

		c->shown = strlen(c->id);
		if (!is_uuid(c->id))
			continue;
		len = 8;
		lo = 0;
		hi = n;
		while (lo < hi) {	/* c->id's place among all ids */
			size_t mid = lo + (hi - lo) / 2;

			if (strcmp(v[mid], c->id) < 0)
				lo = mid + 1;
			else
				hi = mid;
		}
		if (lo > 0 && common_prefix(v[lo - 1], c->id) + 1 > len)
			len = common_prefix(v[lo - 1], c->id) + 1;
		if (lo + 1 < n && common_prefix(v[lo + 1], c->id) + 1 > len)
			len = common_prefix(v[lo + 1], c->id) + 1;
		if (len < c->shown)
			c->shown = len;
	}
}

/* After a conversation's id: the row of it and its forks (--forks). */
#define FORKS_ROW " +forks"

/* The widest abbreviated id (indented under --forks), at least min. */
static int id_width(const struct usage *us, size_t min)
{
	size_t i, w = min;

	for (i = 0; i < us->nconvs; i++) {
		const struct conv_row *c = &us->convs[i];
		size_t need = c->shown + 2 * (size_t)c->depth +
			(c->nforks ? sizeof(FORKS_ROW) - 1 : 0);

		if (c->subtree.turns + c->sum.turns && need > w)
			w = need;
	}
	return (int)w;
}

/* An id as abbreviated, indented by its depth, padded to width. */
static void put_id(const struct conv_row *c, int width)
{
	printf("%*s", 2 * c->depth, "");
	view_putn(stdout, c->id, c->shown);
	printf("%*s", width - (int)c->shown - 2 * c->depth, "");
}

static int conv_by_id(const void *a, const void *b)
{
	return strcmp(((const struct conv_row *)a)->id,
		      ((const struct conv_row *)b)->id);
}

static int session_cb(const aptix_session_info *si, void *payload)
{
	struct usage *us = payload;
	struct conv_row key, *c;
	struct turn_row *t;

	if ((us->since && si->created_at < us->since) ||
	    (us->until && si->created_at > us->until))
		return 0;
	memset(&key, 0, sizeof(key));
	snprintf(key.id, sizeof(key.id), "%s", si->conversation);
	c = bsearch(&key, us->convs, us->nconvs, sizeof(*us->convs),
		    conv_by_id);
	if (!c)
		return 0;
	us->turns = grow(us->turns, &us->aturns, us->nturns,
			 sizeof(*us->turns));
	t = &us->turns[us->nturns++];
	memset(t, 0, sizeof(*t));
	t->session = si->id;
	t->created_at = si->created_at;
	t->conv = (uint32_t)(c - us->convs);
	t->turn = si->turn;
	if (si->has_usage) {
		t->recorded = 1;
		t->u = si->usage;
		t->tool_calls = si->tool_calls;
		t->sends_results = si->sends_results;
		if (!(t->model = strdup(si->model)))
			die("out of memory");
	}
	return 0;
}

static int by_time(const void *a, const void *b)
{
	const struct turn_row *x = a, *y = b;

	if (x->created_at != y->created_at)
		return x->created_at < y->created_at ? -1 : 1;
	return aptix_oid_cmp(&x->session, &y->session);
}

static void note_unknown(struct usage *us, const char *model)
{
	size_t i;

	for (i = 0; i < us->unknown_models.nr; i++)
		if (!strcmp(us->unknown_models.items[i], model))
			return;
	if (aptix_strlist_push(&us->unknown_models, model) < 0)
		die("out of memory");
}

/* What turns of one model spent (t: their sums, priced) into s. */
static void add_turns(struct sum *s, uint32_t turns, uint32_t requests,
		      const struct turn_row *t)
{
	s->turns += turns;
	s->tool_calls += t->tool_calls;
	s->tool_requests += requests;
	s->input += t->u.input_tokens;
	s->cached += t->u.cached_tokens;
	s->output += t->u.output_tokens;
	s->reasoning += t->u.reasoning_tokens;
	s->total += t->u.total_tokens;
	if (t->known)
		s->cost += t->cost;
	else
		s->unknown = 1;
}

static void add(struct sum *s, const struct turn_row *t)
{
	add_turns(s, 1, (uint32_t)t->sends_results, t);
}

static void merge(struct sum *into, const struct sum *s)
{
	into->turns += s->turns;
	into->tool_calls += s->tool_calls;
	into->tool_requests += s->tool_requests;
	into->input += s->input;
	into->cached += s->cached;
	into->output += s->output;
	into->reasoning += s->reasoning;
	into->total += s->total;
	into->cost += s->cost;
	into->unknown |= s->unknown;
}

/*
 * The cost of tokens of model into t (cost, known, from_config); a
 * model with no price is noted, unless no token was spent.
 */
static void price(struct usage *us, struct turn_row *t)
{
	aptix_price p;
	int r = aptix_price_lookup(&p, us->cfg, t->model);

	if (r == 0) {
		t->known = 1;
		t->from_config = p.from_config;
		t->cost = aptix_price_cost(&p, t->u.input_tokens,
					   t->u.cached_tokens,
					   t->u.output_tokens);
	} else if (r == APTIX_ENOTFOUND) {
		/* no token spent costs nothing, whatever the model */
		t->known = !t->u.input_tokens && !t->u.output_tokens;
		if (!t->known)
			note_unknown(us, *t->model ? t->model :
				     "(no model recorded)");
	} else {
		die_aptix();
	}
}

/*
 * Every conversation's sums from its record, per model: what the
 * sessions would add up to, read from one record each.
 */
static void sum_records(struct usage *us)
{
	size_t i, j;

	for (i = 0; i < us->nconvs; i++) {
		struct conv_row *c = &us->convs[i];

		for (j = 0; j < c->nusage; j++) {
			const aptix_conv_usage *m = &c->usage[j];
			struct turn_row t;

			memset(&t, 0, sizeof(t));
			t.model = (char *)m->model;
			t.u = m->usage;
			t.tool_calls = m->tool_calls;
			price(us, &t);
			add_turns(&c->sum, m->turns, m->tool_requests, &t);
		}
		merge(&us->total, &c->sum);
	}
}

/* Whether each conversation's record can say what it spent. */
static int records_say(const struct usage *us)
{
	size_t i;

	for (i = 0; i < us->nconvs; i++)
		if (!us->convs[i].has_usage)
			return 0;
	return 1;
}

/* Read each chosen turn once: model and usage, then its price. */
static void read_turns(struct usage *us)
{
	aptix_oidmap seen;
	aptix_turn turn;
	size_t i, j = 0;

	aptix_oidmap_init(&seen);
	for (i = 0; i < us->nturns; i++) {
		struct turn_row *t = &us->turns[i];

		if (aptix_oidmap_get(NULL, &seen, &t->turn) == 0) {
			free(t->model);	/* shared by two snapshots */
			continue;
		}
		if (aptix_oidmap_put(&seen, &t->turn, i) < 0)
			die("out of memory");
		if (!t->recorded) {
			view_load_turn(&turn, us->repo, &t->turn);
			t->u = turn.usage;
			t->tool_calls = (uint32_t)turn.ntool_calls;
			t->sends_results = turn.ntool_results > 0;
			t->model = strdup(turn.model ? turn.model : "");
			aptix_turn_release(&turn);
			if (!t->model)
				die("out of memory");
		}
		price(us, t);
		us->turns[j++] = *t;
	}
	us->nturns = j;
	aptix_oidmap_release(&seen);
	for (i = 0; i < us->nturns; i++) {
		add(&us->convs[us->turns[i].conv].sum, &us->turns[i]);
		add(&us->total, &us->turns[i]);
	}
}

/* --- Forks --------------------------------------------------------------- */

static struct conv_row *find_conv(struct usage *us, const char *id)
{
	struct conv_row key;

	memset(&key, 0, sizeof(key));
	snprintf(key.id, sizeof(key.id), "%s", id);
	return bsearch(&key, us->convs, us->nconvs, sizeof(*us->convs),
		       conv_by_id);
}

/*
 * Each conversation's parent among those chosen; with --conversation,
 * keep it and what was forked from it at any depth (convs sorted by
 * id, and still so after).
 */
static void link_forks(struct usage *us)
{
	size_t i, j, n = 0, *to;
	struct conv_row *p;

	for (i = 0; i < us->nconvs; i++) {
		struct conv_row *c = &us->convs[i];

		p = c->forked ? find_conv(us, c->from_conv) : NULL;
		c->parent = p && p != c ? p - us->convs : -1;
	}
	if (!us->only_conv)
		return;
	for (i = 0; i < us->nconvs; i++) {
		long k = (long)i;

		for (j = 0; k >= 0 && j <= us->nconvs; j++) {
			if (!strcmp(us->convs[k].id, us->only_conv)) {
				us->convs[i].keep = 1;
				break;
			}
			k = us->convs[k].parent;
		}
	}
	if (!(to = calloc(us->nconvs ? us->nconvs : 1, sizeof(*to))))
		die("out of memory");
	for (i = 0; i < us->nconvs; i++)
		if (us->convs[i].keep) {
			to[i] = n;
			us->convs[n++] = us->convs[i];
		}
	for (i = 0; i < n; i++)
		if (us->convs[i].parent >= 0)
			us->convs[i].parent = us->convs[i].keep &&
				strcmp(us->convs[i].id, us->only_conv) ?
				(long)to[us->convs[i].parent] : -1;
	us->nconvs = n;
	free(to);
}

/* The children of each conversation, most recent first (tree_order). */
struct tree {
	size_t *first;	/* p's children: kids[first[p + 1] .. first[p + 2]) */
	size_t *kids;
	size_t *stack, top;
	int *seen;
};

/* Depth first from what is on the stack, appending to us->order. */
static void walk_tree(struct usage *us, struct tree *t, size_t *out)
{
	size_t k;

	while (t->top) {
		struct conv_row *c = &us->convs[t->stack[--t->top]];
		size_t ci = (size_t)(c - us->convs);

		if (t->seen[ci])
			continue;
		t->seen[ci] = 1;
		c->depth = c->parent >= 0 ? us->convs[c->parent].depth + 1 : 0;
		us->order[(*out)++] = c;
		for (k = t->first[ci + 2]; k > t->first[ci + 1]; k--)
			if (!t->seen[t->kids[k - 1]])
				t->stack[t->top++] = t->kids[k - 1];
	}
}

/*
 * us->order as a tree: roots most recent first, each followed by its
 * forks (most recent first) and theirs; depth, forks below and subtree
 * sums of each. A cycle (only plumbing could make one) is cut where
 * its walk begins.
 */
static void tree_order(struct usage *us)
{
	const struct conv_row **byrec = us->order;
	size_t n = us->nconvs, i, k, out = 0, *fill;
	struct tree t;

	t.first = calloc(n + 2, sizeof(*t.first));
	t.kids = calloc(n + 1, sizeof(*t.kids));
	t.stack = calloc(n + 1, sizeof(*t.stack));
	t.seen = calloc(n + 1, sizeof(*t.seen));
	fill = calloc(n + 2, sizeof(*fill));
	t.top = 0;
	us->order = calloc(n + 1, sizeof(*us->order));
	if (!t.first || !t.kids || !t.stack || !t.seen || !fill || !us->order)
		die("out of memory");
	for (i = 0; i < n; i++)
		t.first[byrec[i]->parent + 2]++;
	for (i = 1; i < n + 2; i++)
		t.first[i] += t.first[i - 1];
	memcpy(fill, t.first, (n + 2) * sizeof(*fill));
	for (i = 0; i < n; i++)
		t.kids[fill[byrec[i]->parent + 1]++] =
			(size_t)(byrec[i] - us->convs);
	/* the roots, then any conversation a cycle hid */
	for (k = t.first[1]; k > t.first[0]; k--)
		t.stack[t.top++] = t.kids[k - 1];
	walk_tree(us, &t, &out);
	for (i = 0; i < n && out < n; i++) {
		size_t r = (size_t)(byrec[i] - us->convs);

		if (t.seen[r])
			continue;
		us->convs[r].parent = -1;
		t.stack[t.top++] = r;
		walk_tree(us, &t, &out);
	}
	for (i = 0; i < n; i++)
		us->convs[i].subtree = us->convs[i].sum;
	for (i = out; i-- > 0;) {
		const struct conv_row *c = us->order[i];

		if (c->parent >= 0) {
			merge(&us->convs[c->parent].subtree, &c->subtree);
			us->convs[c->parent].nforks += c->nforks + 1;
		}
	}
	free(byrec);
	free(t.first);
	free(t.kids);
	free(t.stack);
	free(t.seen);
	free(fill);
}

/* --- Text ----------------------------------------------------------------- */

static const char *cost_text(char out[32], double cost, int known)
{
	if (!known)
		snprintf(out, 32, "unknown");
	else if (cost > 0 && cost < 0.00005)
		snprintf(out, 32, "<$0.0001");
	else
		snprintf(out, 32, "$%.4f", cost);
	return out;
}

/* The counts of a row, then its title (NULL: none). */
static void print_counts(const struct sum *s, const char *title)
{
	char c[32];

	printf("%10" PRId64 " %10" PRId64 " %10" PRId64 " %10" PRId64
	       " %10s", s->input, s->cached, s->output, s->total,
	       cost_text(c, s->cost, !s->unknown));
	if (title && *title) {
		printf("  ");
		view_puts(stdout, title);
	}
	putchar('\n');
}

static void print_turns(const struct usage *us)
{
	char date[64], c[32];
	size_t i;

	int w = id_width(us, 12);

	printf("%-12s  %-*s  %-20s  %-16s %10s %10s %10s %10s %10s\n",
	       "SESSION", w, "CONVERSATION", "DATE", "MODEL", "INPUT",
	       "CACHED", "OUTPUT", "TOTAL", "COST");
	for (i = 0; i < us->nturns; i++) {
		const struct turn_row *t = &us->turns[i];

		printf("%s  ", view_short_id(&t->session));
		put_id(&us->convs[t->conv], w);
		printf("  %-20s  ", view_date(date, t->created_at, 1));
		view_put_truncated(stdout, *t->model ? t->model : "-", 16, 1);
		printf(" %10ld %10ld %10ld %10ld %10s\n", t->u.input_tokens,
		       t->u.cached_tokens, t->u.output_tokens,
		       t->u.total_tokens, cost_text(c, t->cost, t->known));
	}
	putchar('\n');
}

static int conv_by_recent(const void *a, const void *b)
{
	const struct conv_row *x = *(const struct conv_row *const *)a;
	const struct conv_row *y = *(const struct conv_row *const *)b;

	if (x->updated_at != y->updated_at)
		return x->updated_at > y->updated_at ? -1 : 1;
	return strcmp(x->id, y->id);
}

/*
 * --forks: after row i of the tree, the rows of the subtrees it ends
 * (a conversation's descendants follow it: it ends at its place plus
 * its forks), innermost first.
 */
static void print_subtotals(const struct usage *us, size_t i, int w)
{
	long k;

	for (k = (long)i; k >= 0; k--) {
		const struct conv_row *c = us->order[k];

		if (c->nforks && (size_t)k + c->nforks == i &&
		    c->subtree.turns) {
			printf("%*s", 2 * c->depth, "");
			view_putn(stdout, c->id, c->shown);
			printf("%-*s %6u ", w - (int)c->shown - 2 * c->depth,
			       FORKS_ROW, (unsigned)c->subtree.turns);
			print_counts(&c->subtree, NULL);
		}
		if (!c->depth)
			break;	/* no subtree ends further up */
	}
}

static void print_text(struct usage *us, int per_turn)
{
	size_t i;
	int w = id_width(us, 12);

	if (per_turn)
		print_turns(us);
	printf("%-*s %6s %10s %10s %10s %10s %10s  %s\n", w, "CONVERSATION",
	       "TURNS", "INPUT", "CACHED", "OUTPUT", "TOTAL", "COST", "TITLE");
	for (i = 0; i < us->nconvs; i++) {
		const struct conv_row *c = us->order[i];

		if (c->sum.turns || (c->nforks && c->subtree.turns)) {
			put_id(c, w);
			printf(" %6u ", (unsigned)c->sum.turns);
			print_counts(&c->sum, c->title);
		}
		print_subtotals(us, i, w);
	}
	printf("%-*s %6u ", w, "total", (unsigned)us->total.turns);
	print_counts(&us->total, NULL);
	if (us->total.tool_calls || us->total.tool_requests)
		printf("\n%u tool call%s; %u request%s sent tool results (their "
		       "tokens are in the totals)\n",
		       (unsigned)us->total.tool_calls,
		       us->total.tool_calls == 1 ? "" : "s",
		       (unsigned)us->total.tool_requests,
		       us->total.tool_requests == 1 ? "" : "s");
}

/* --- JSON ----------------------------------------------------------------- */

static json_t *cost_json(double cost, int known)
{
	return known ? json_real(cost) : json_null();
}

static void sum_json(json_t *o, const struct sum *s)
{
	view_json_set(o, "turns", view_json_int(s->turns));
	view_json_set(o, "tool_calls", view_json_int(s->tool_calls));
	view_json_set(o, "tool_result_requests",
		      view_json_int(s->tool_requests));
	view_json_set(o, "input_tokens", view_json_int(s->input));
	view_json_set(o, "cached_tokens", view_json_int(s->cached));
	view_json_set(o, "output_tokens", view_json_int(s->output));
	view_json_set(o, "reasoning_tokens", view_json_int(s->reasoning));
	view_json_set(o, "total_tokens", view_json_int(s->total));
	view_json_set(o, "cost_usd", cost_json(s->cost, !s->unknown));
}

/* --forks: where a conversation came from, and its subtree's sums. */
static void forks_json(json_t *x, const struct conv_row *c)
{
	json_t *f = json_null(), *t;

	if (c->forked) {
		f = view_json_object();
		view_json_set(f, "conversation", view_json_str(c->from_conv));
		view_json_set(f, "session", view_json_id(&c->from));
	}
	view_json_set(x, "forked_from", f);
	view_json_set(x, "depth", view_json_int(c->depth));
	view_json_set(x, "forks", view_json_int((int64_t)c->nforks));
	t = view_json_object();
	sum_json(t, &c->subtree);
	view_json_set(x, "subtree", t);
}

static void print_json(struct usage *us, int per_turn)
{
	json_t *o = view_json_object(), *a, *x;
	size_t i;

	if (per_turn) {
		a = view_json_array();
		for (i = 0; i < us->nturns; i++) {
			const struct turn_row *t = &us->turns[i];

			x = view_json_object();
			view_json_set(x, "session", view_json_id(&t->session));
			view_json_set(x, "conversation",
				      view_json_str(us->convs[t->conv].id));
			view_json_set(x, "created",
				      view_json_time(t->created_at));
			view_json_set(x, "model", *t->model ?
				      view_json_str(t->model) : json_null());
			view_json_set(x, "input_tokens",
				      view_json_int(t->u.input_tokens));
			view_json_set(x, "cached_tokens",
				      view_json_int(t->u.cached_tokens));
			view_json_set(x, "output_tokens",
				      view_json_int(t->u.output_tokens));
			view_json_set(x, "reasoning_tokens",
				      view_json_int(t->u.reasoning_tokens));
			view_json_set(x, "total_tokens",
				      view_json_int(t->u.total_tokens));
			view_json_set(x, "cost_usd",
				      cost_json(t->cost, t->known));
			view_json_set(x, "price_from_config",
				      json_boolean(t->from_config));
			view_json_append(a, x);
		}
		view_json_set(o, "turns", a);
	}
	a = view_json_array();
	for (i = 0; i < us->nconvs; i++) {
		if (!us->order[i]->sum.turns && !(us->forks &&
						  us->order[i]->subtree.turns))
			continue;
		x = view_json_object();
		view_json_set(x, "conversation",
			      view_json_str(us->order[i]->id));
		view_json_set(x, "title", *us->order[i]->title ?
			      view_json_str(us->order[i]->title) :
			      json_null());
		sum_json(x, &us->order[i]->sum);
		if (us->forks)
			forks_json(x, us->order[i]);
		view_json_append(a, x);
	}
	view_json_set(o, "conversations", a);
	x = view_json_object();
	sum_json(x, &us->total);
	view_json_set(o, "total", x);
	a = view_json_array();
	for (i = 0; i < us->unknown_models.nr; i++)
		view_json_append(a, view_json_str(us->unknown_models.items[i]));
	view_json_set(o, "unpriced_models", a);
	view_json_print(o);
}

/* --- Command -------------------------------------------------------------- */

int cmd_usage(int argc, const char **argv, struct aptix_repo *repo)
{
	struct usage us;
	int json = 0, per_turn = 0, all_ws = 0, no_pager = 0;
	const char *want_ws = NULL, *conv_name = NULL;
	char conv[APTIX_CONV_MAXLEN + 1];
	aptix_buf derived = APTIX_BUF_INIT;
	size_t i;
	struct option options[] = {
		OPT_BOOL(0, "turns", &per_turn, "one line per turn too"),
		OPT_BOOL(0, "json", &json, "print one JSON object"),
		OPT_STRING('c', "conversation", &conv_name, "name",
			   "only this conversation"),
		OPT_BOOL(0, "forks", &us.forks, "each conversation's forks "
			 "below it, and what the tree spent"),
		OPT_BOOL(0, "all-workspaces", &all_ws,
			 "the conversations of every workspace"),
		OPT_STRING(0, "workspace", &want_ws, "id",
			   "the conversations of this workspace"),
		OPT_DATE_MS("since", &us.since, "turns created at or after "
			    "<date> (\"2 weeks ago\", 2026-01-31)"),
		OPT_DATE_MS("until", &us.until, "turns created at or before "
			    "<date>"),
		OPT_NO_PAGER(&no_pager),
		OPT_END()
	};

	memset(&us, 0, sizeof(us));
	aptix_strlist_init(&us.unknown_models);
	aptix_strlist_init(&us.all_ids);
	us.repo = repo;
	parse_options(argc, argv, options, usage_usage, PARSE_OPT_NO_ARGS);
	if (all_ws && want_ws)
		die("options '--all-workspaces' and '--workspace' cannot be "
		    "used together");
	if (conv_name) {
		if (aptix_conv_resolve(conv, repo, conv_name) < 0)
			die_aptix();
		us.only_conv = conv;
	}
	if (want_ws) {
		us.ws = want_ws;
		us.explicit_ws = 1;
	} else if (!all_ws && !conv_name) {
		us.ws = view_workspace_scope(repo, &us.cfg, &derived,
					     &us.explicit_ws);
	}
	if (!us.cfg && aptix_config_open(&us.cfg, repo) < 0)
		die_aptix();

	if (aptix_index_foreach_conversation(repo, conv_cb, &us) < 0)
		die_aptix();
	abbreviate(&us);
	if (us.nconvs > 1)
		qsort(us.convs, us.nconvs, sizeof(*us.convs), conv_by_id);
	if (us.forks)
		link_forks(&us);
	if (!per_turn && !us.since && !us.until && records_say(&us)) {
		sum_records(&us);
	} else {
		if (us.nconvs && (us.since ?
		    aptix_index_foreach_session_since(repo, us.since,
						      session_cb, &us) :
		    aptix_index_foreach_session(repo, session_cb, &us)) < 0)
			die_aptix();
		if (us.nturns > 1)
			qsort(us.turns, us.nturns, sizeof(*us.turns),
			      by_time);
		read_turns(&us);
	}
	/* the rows of conversations: most recent first */
	us.order = calloc(us.nconvs ? us.nconvs : 1, sizeof(*us.order));
	if (!us.order)
		die("out of memory");
	for (i = 0; i < us.nconvs; i++)
		us.order[i] = &us.convs[i];
	if (us.nconvs > 1)
		qsort(us.order, us.nconvs, sizeof(*us.order), conv_by_recent);
	if (us.forks)
		tree_order(&us);

	if (!no_pager && !json)
		setup_pager();
	if (json) {
		print_json(&us, per_turn);
	} else {
		print_text(&us, per_turn);
		if (us.unknown_models.nr) {
			fprintf(stderr, "note: no price for ");
			for (i = 0; i < us.unknown_models.nr; i++) {
				fprintf(stderr, "%s'", i ? ", " : "");
				view_puts(stderr, us.unknown_models.items[i]);
				fputc('\'', stderr);
			}
			fprintf(stderr, "; set price.<model>.input and "
				"price.<model>.output (dollars per million "
				"tokens)\n");
		}
	}
	for (i = 0; i < us.nturns; i++)
		free(us.turns[i].model);
	free(us.turns);
	free(us.convs);
	free(us.order);
	aptix_strlist_release(&us.unknown_models);
	aptix_strlist_release(&us.all_ids);
	aptix_buf_release(&derived);
	aptix_config_free(us.cfg);
	return 0;
}
