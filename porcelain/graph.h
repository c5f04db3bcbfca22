/*
 * porcelain/graph.h - the branches drawn left of `aptix log --graph`:
 * git's graph.c state machine, reduced to sessions with at most one
 * parent (branches only ever join, "|/", never fork downwards).
 *
 * Sessions are numbers the caller chooses (log uses the index of its
 * record); the graph never looks them up. Use:
 *
 *	struct graph g;
 *
 *	graph_init(&g);
 *	for each session x, newest first (a session after its children):
 *		graph_update(&g, x, parent of x, or GRAPH_NO_PARENT);
 *		begin every line of x's text with graph_next_line();
 *		while (graph_is_collapsing(&g))
 *			write graph_next_line() and a newline;
 *	graph_release(&g);
 *
 * The first line after graph_update() is the session's own ('*' in its
 * column); the later ones carry the branches on, moving the ones that
 * join to the left by one column a line.
 */
#ifndef APTIX_GRAPH_H
#define APTIX_GRAPH_H

#include <stdint.h>

/* The parent of a session that ends its branch (a root, or not shown). */
#define GRAPH_NO_PARENT UINT32_MAX

enum graph_state { GRAPH_PADDING, GRAPH_COMMIT, GRAPH_COLLAPSING };

/* The fields are private to graph.c. */
struct graph {
	uint32_t *cols, *newcols;	/* records expected in each column */
	int ncols, nnew, cap;
	int *map, *oldmap;		/* screen position -> target column */
	int map_size, width, commit_index;
	enum graph_state state, prev_state;
	char *line, *pad;		/* the last line; the padding line */
	int pad_len;			/* < 0: to be drawn */
	char mark;			/* '*', or 'o' for a root */
};

/* An empty graph, with nothing allocated. */
void graph_init(struct graph *g);

/*
 * Make x the session to draw next; parent is its parent when the parent
 * is still to be shown, else GRAPH_NO_PARENT (the branch ends at x).
 */
void graph_update(struct graph *g, uint32_t x, uint32_t parent);

/*
 * The session given to the last graph_update() is a root (it has no
 * parent at all, rather than a parent left out of the view): its line
 * shows 'o' rather than '*', so that two histories stacked in one
 * column never read as one chain.
 */
void graph_mark_root(struct graph *g);

/*
 * The graph part of the next line: *out points at it (not
 * NUL-terminated), the return value is its length. It includes the
 * blanks up to the text column; trim them on a line without text.
 * @note *out is owned by g, valid until the next graph_next_line(),
 * graph_update() or graph_release().
 */
int graph_next_line(struct graph *g, const char **out);

/*
 * Non-zero after the session's own line while branches still move left:
 * draw lines of their own until it returns 0, before the next session.
 */
int graph_is_collapsing(const struct graph *g);

/*
 * The line just drawn was a blank separator between two sessions: the
 * next session's line no longer shows a branch arriving from the line
 * before ('/').
 */
void graph_separator(struct graph *g);

/* Free what g holds; g can then be given to graph_init() again. */
void graph_release(struct graph *g);

#endif
