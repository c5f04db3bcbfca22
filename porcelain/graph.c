/*
 * porcelain/graph.c - the lane state machine of `aptix log --graph`
 * (see graph.h): columns of expected sessions, '*' for the shown one
 * ('o' when it is a root),
 * and branches that only ever join ("|/"), one column per line,
 * crossing other branches with '_' as git does.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include "cli.h"
#include "graph.h"

/* Resize p to n items of size bytes; dies when out of memory. */
static void *graph_realloc(void *p, size_t n, size_t size)
{
	void *q = n <= SIZE_MAX / size ? realloc(p, n * size) : NULL;

	if (!q)
		die("out of memory");
	return q;
}

void graph_init(struct graph *g)
{
	memset(g, 0, sizeof(*g));
	g->state = g->prev_state = GRAPH_PADDING;
}

static void graph_ensure(struct graph *g, int n)
{
	int cap = g->cap ? g->cap : 8, i;

	if (n <= g->cap)
		return;
	while (cap < n)
		cap *= 2;
	g->cols = graph_realloc(g->cols, cap, sizeof(*g->cols));
	g->newcols = graph_realloc(g->newcols, cap, sizeof(*g->newcols));
	g->map = graph_realloc(g->map, 2 * (size_t)cap, sizeof(*g->map));
	g->oldmap = graph_realloc(g->oldmap, 2 * (size_t)cap, sizeof(*g->oldmap));
	/* no line is wider than 2 * (columns + 1) */
	g->line = graph_realloc(g->line, 2 * (size_t)cap + 8, 1);
	g->pad = graph_realloc(g->pad, 2 * (size_t)cap + 8, 1);
	for (i = 2 * g->cap; i < 2 * cap; i++)
		g->map[i] = g->oldmap[i] = -1;
	g->cap = cap;
}

static void graph_set_state(struct graph *g, enum graph_state s)
{
	g->prev_state = g->state;
	g->state = s;
}

/* Put c into the next row and record where its branch goes. */
static void graph_insert(struct graph *g, uint32_t c, uint32_t parent,
			 int *parent_col)
{
	int i;

	if (c == parent && *parent_col >= 0) {
		i = *parent_col;
	} else {
		i = g->nnew++;
		g->newcols[i] = c;
		if (c == parent)
			*parent_col = i;
	}
	g->map[g->width] = i;
	g->width += 2;
}

/*
 * Make x the session to draw; parent is its parent when the parent is
 * still to be shown, else GRAPH_NO_PARENT (the branch ends at x).
 */
void graph_update(struct graph *g, uint32_t x, uint32_t parent)
{
	uint32_t *tmp = g->cols, c;
	int i, seen = 0, parent_col = -1;

	g->cols = g->newcols;
	g->newcols = tmp;
	g->ncols = g->nnew;
	g->nnew = 0;
	graph_ensure(g, g->ncols + 1);
	g->map_size = 2 * (g->ncols + 1);
	for (i = 0; i < g->map_size; i++)
		g->map[i] = -1;
	g->width = 0;
	for (i = 0; i <= g->ncols; i++) {
		if (i == g->ncols) {
			if (seen)
				break;
			c = x;
		} else {
			c = g->cols[i];
		}
		if (c == x && !seen) {
			seen = 1;
			g->commit_index = i;
			if (parent != GRAPH_NO_PARENT)
				graph_insert(g, parent, parent, &parent_col);
			else
				g->width += 2;
		} else {
			graph_insert(g, c, parent, &parent_col);
		}
	}
	while (g->map_size > 1 && g->map[g->map_size - 1] < 0)
		g->map_size--;
	g->pad_len = -1;
	g->mark = '*';
	/* like git, entering the commit state does not touch prev_state */
	g->state = GRAPH_COMMIT;
}

static int graph_mapping_correct(const struct graph *g)
{
	int i;

	for (i = 0; i < g->map_size; i++)
		if (g->map[i] >= 0 && g->map[i] != i / 2)
			return 0;
	return 1;
}

static int graph_commit_line(struct graph *g, char *b)
{
	int i, n = 0;

	for (i = 0; i <= g->ncols; i++) {
		if (i == g->ncols && g->commit_index < g->ncols)
			break;
		if (i == g->commit_index)
			b[n++] = g->mark;
		else if (g->prev_state == GRAPH_COLLAPSING &&
			 g->oldmap[2 * i + 1] == i && g->map[2 * i] < i)
			b[n++] = '/';
		else
			b[n++] = '|';
		b[n++] = ' ';
	}
	graph_set_state(g, graph_mapping_correct(g) ? GRAPH_PADDING :
			GRAPH_COLLAPSING);
	return n;
}

/*
 * One row of branches moving left, each by at most one position; one
 * branch may cross others with '_' (git's collapsing line).
 */
static int graph_collapsing_line(struct graph *g, char *b)
{
	int *tmp = g->map, i, j, t, n = 0;
	int horiz = -1, horiz_target = -1, used_horiz = 0;

	g->map = g->oldmap;
	g->oldmap = tmp;
	for (i = 0; i < g->map_size; i++)
		g->map[i] = -1;
	for (i = 0; i < g->map_size; i++) {
		t = g->oldmap[i];
		if (t < 0)
			continue;
		if (2 * t == i) {
			g->map[i] = t;
		} else if (g->map[i - 1] < 0) {
			g->map[i - 1] = t;
			if (horiz < 0) {
				horiz = i;
				horiz_target = t;
				for (j = 2 * t + 3; j < i - 2; j += 2)
					g->map[j] = t;
			}
		} else if (g->map[i - 1] == t) {
			/* joins the branch to its left: same parent */
		} else if (i >= 2) {
			/* cross the branch to the left */
			g->map[i - 2] = t;
			if (horiz < 0) {
				horiz = i - 1;
				horiz_target = t;
				for (j = 2 * t + 3; j < i - 2; j += 2)
					g->map[j] = t;
			}
		}
	}
	memcpy(g->oldmap, g->map, (size_t)g->map_size * sizeof(*g->map));
	if (g->map_size > 0 && g->map[g->map_size - 1] < 0)
		g->map_size--;
	for (i = 0; i < g->map_size; i++) {
		t = g->map[i];
		if (t < 0) {
			b[n++] = ' ';
		} else if (2 * t == i) {
			b[n++] = '|';
		} else if (t == horiz_target && i != horiz - 1) {
			/* only the first segment goes on to the next row */
			if (i != 2 * t + 3)
				g->map[i] = -1;
			used_horiz = 1;
			b[n++] = '_';
		} else {
			if (used_horiz && i < horiz)
				g->map[i] = -1;
			b[n++] = '/';
		}
	}
	if (graph_mapping_correct(g))
		graph_set_state(g, GRAPH_PADDING);
	return n;
}

static int graph_pad(const struct graph *g, char *b, int n)
{
	while (n < g->width)
		b[n++] = ' ';
	return n;
}

/* The graph part of the next line: *out, returns its length. */
int graph_next_line(struct graph *g, const char **out)
{
	int i, n;

	if (g->state == GRAPH_PADDING) {
		/* the same until the next session: drawn once */
		if (g->pad_len < 0) {
			for (i = n = 0; i < g->nnew; i++) {
				g->pad[n++] = '|';
				g->pad[n++] = ' ';
			}
			g->pad_len = graph_pad(g, g->pad, n);
		}
		*out = g->pad;
		return g->pad_len;
	}
	if (g->state == GRAPH_COMMIT)
		n = graph_commit_line(g, g->line);
	else
		n = graph_collapsing_line(g, g->line);
	*out = g->line;
	return graph_pad(g, g->line, n);
}

void graph_mark_root(struct graph *g)
{
	g->mark = 'o';
}

int graph_is_collapsing(const struct graph *g)
{
	return g->state == GRAPH_COLLAPSING;
}

void graph_separator(struct graph *g)
{
	g->prev_state = GRAPH_PADDING;
}

void graph_release(struct graph *g)
{
	free(g->cols);
	free(g->newcols);
	free(g->map);
	free(g->oldmap);
	free(g->line);
	free(g->pad);
}

