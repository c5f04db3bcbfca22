/*
 * serve/serve.c - the read and write handlers of the servers (see
 * serve.h): conversations listed and read, turns in their summary and
 * full views (seed 001 DD-005: summaries inline, full payloads on demand
 * by object id), raw objects, the graph of the DAG for drawing, and
 * seed 003's workspace sessions.
 *
 * A list or a graph reads the conversation records once; a graph or a
 * conversation then finds the snapshots of the conversations it shows
 * from their records and the children index (the failed ones too,
 * which are not on any head's chain), never by reading every session.
 */
#ifndef _POSIX_C_SOURCE
# define _POSIX_C_SOURCE 200809L
#endif
#include <ctype.h>
#include <errno.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>

#include "serve-int.h"

#define LIST_DEFAULT 50
#define LIST_MAX 1000
/*
 * the graph's limit counts snapshots (a store without a timeline: whole
 * conversations, one at least)
 */
#define GRAPH_DEFAULT 500
#define GRAPH_MAX 10000

void serve_deadline(struct timespec *until, long ms)
{
	clock_gettime(CLOCK_REALTIME, until);
	until->tv_sec += ms / 1000;
	until->tv_nsec += (ms % 1000) * 1000000L;
	if (until->tv_nsec >= 1000000000L) {
		until->tv_sec++;
		until->tv_nsec -= 1000000000L;
	}
}

json_t *serve_fail(struct serve_err *e, int status, const char *fmt, ...)
{
	va_list ap;

	e->status = status;
	va_start(ap, fmt);
	vsnprintf(e->message, sizeof(e->message), fmt, ap);
	va_end(ap);
	return NULL;
}

json_t *serve_fail_aptix(struct serve_err *e, int r)
{
	int status;

	switch (r) {
	case APTIX_ENOTFOUND:
		status = 404;
		break;
	case APTIX_ELOCKED:
	case APTIX_EMISMATCH:
		status = 409;
		break;
	case APTIX_EINVALID:
	case APTIX_EAMBIGUOUS:
		status = 400;
		break;
	case APTIX_EFULL:
		status = 507;
		break;
	default:
		status = 500;
	}
	return serve_fail(e, status, "%s", aptix_error_last()->message);
}

const char *serve__pstr(json_t *p, const char *key)
{
	json_t *v = p ? json_object_get(p, key) : NULL;

	return json_is_string(v) ? json_string_value(v) : NULL;
}

int serve__pbool(json_t *p, const char *key, int def)
{
	json_t *v = p ? json_object_get(p, key) : NULL;

	if (!v || json_is_null(v))
		return def;
	if (!json_is_boolean(v))
		return -1;
	return json_is_true(v);
}

/* An integer member in [min, max]; def when absent; -1 when bad. */
static long pint(json_t *p, const char *key, long def, long min, long max)
{
	json_t *v = p ? json_object_get(p, key) : NULL;

	if (!v || json_is_null(v))
		return def;
	if (!json_is_integer(v) || json_integer_value(v) < min ||
	    json_integer_value(v) > max)
		return -1;
	return (long)json_integer_value(v);
}

static void set(json_t *o, const char *key, json_t *v)
{
	json_object_set_new(o, key, v ? v : json_null());
}

/* ---- the server ---- */

int serve_new(struct serve **out, aptix_repo *repo, const char *workspace,
	      struct serve_err *e)
{
	struct serve *s = calloc(1, sizeof(*s));
	aptix_config *cfg = NULL;
	aptix_buf derived = APTIX_BUF_INIT;
	const char *ws = workspace;

	*out = NULL;
	if (!s) {
		serve_fail(e, 500, "out of memory");
		return APTIX_ERROR;
	}
	s->repo = repo;
	pthread_mutex_init(&s->lock, NULL);
	pthread_cond_init(&s->changed, NULL);
	s->explicit_ws = 1;
	if (!ws || !*ws)
		ws = getenv("APTIX_WORKSPACE");
	if ((!ws || !*ws) && aptix_config_open(&cfg, repo) == 0)
		ws = aptix_config_get(cfg, "workspace.id");
	if (!ws || !*ws) {
		s->explicit_ws = 0;
		if (aptix_workspace_id(&derived, cfg, NULL,
				       aptix_repo_workdir(repo)) == 0)
			ws = derived.ptr;
		aptix_error_clear();
	}
	if (ws && *ws && !(s->workspace = strdup(ws))) {
		serve_fail(e, 500, "out of memory");
		serve_free(s);
		s = NULL;
	}
	aptix_buf_release(&derived);
	aptix_config_free(cfg);
	*out = s;
	return s ? 0 : APTIX_ERROR;
}

void serve_free(struct serve *s)
{
	size_t i;

	if (!s)
		return;
	for (i = 0; i < s->nopen; i++)
		free(s->open[i]);
	free(s->open);
	free(s->workspace);
	pthread_cond_destroy(&s->changed);
	pthread_mutex_destroy(&s->lock);
	free(s);
}

aptix_repo *serve_repo(struct serve *s)
{
	return s->repo;
}

/* ---- conversations ---- */

struct convs {
	aptix_conv_info *v;
	size_t nr, alloc;
};

static int collect_conv(const aptix_conv_info *ci, void *payload)
{
	struct convs *c = payload;
	aptix_conv_info *nv;

	if (c->nr == c->alloc) {
		c->alloc = c->alloc ? 2 * c->alloc : 64;
		if (!(nv = realloc(c->v, c->alloc * sizeof(*nv))))
			return aptix_error_oom();
		c->v = nv;
	}
	c->v[c->nr++] = *ci;
	return 0;
}

/* The conversation summary, and whether a turn of it runs here. */
static json_t *conv_json(struct serve *s, const aptix_conv_info *ci)
{
	json_t *o = aptix_view_conversation(ci);

	if (o)
		set(o, "running", json_boolean(serve__busy(s, ci->id, NULL)));
	return o;
}

/* Does the text filter q match (case-insensitive, title or id)? */
static int matches(const aptix_conv_info *ci, const char *q)
{
	size_t n = strlen(q), i;
	const char *fields[3];
	int k;

	if (!n)
		return 1;
	fields[0] = ci->title;
	fields[1] = ci->id;
	fields[2] = ci->workspace;
	for (k = 0; k < 3; k++)
		for (i = 0; fields[k][i]; i++)
			if (!strncasecmp(fields[k] + i, q, n))
				return 1;
	return 0;
}

/*
 * The cursor is "<updated ms>.<id>" of the last item shown: the next
 * page starts after it in the list's order.
 */
struct scope {
	const char *workspace;
	int explicit_ws, archived, all;
	const char *q;
	int has_cursor;
	int64_t cursor_at;
	char cursor_id[APTIX_CONV_MAXLEN + 1];
	long limit;
	int nodes;		/* limit counts snapshots (the graph) */
};

static int read_scope_of(struct scope *sc, struct serve *s, json_t *p,
			 struct serve_err *e, long def, long max)
{
	const char *cursor = serve__pstr(p, "cursor");

	memset(sc, 0, sizeof(*sc));
	sc->workspace = serve__pstr(p, "workspace");
	sc->explicit_ws = 1;
	if (!sc->workspace) {
		sc->workspace = s->workspace;
		sc->explicit_ws = s->explicit_ws;
	}
	sc->all = serve__pbool(p, "all", 0);
	sc->archived = serve__pbool(p, "archived", 0);
	if (sc->all < 0 || sc->archived < 0) {
		serve_fail(e, 400, "'all' and 'archived' are booleans");
		return -1;
	}
	if (sc->all)
		sc->workspace = NULL;
	sc->q = serve__pstr(p, "q");
	if (p && json_object_get(p, "q") && !sc->q) {
		serve_fail(e, 400, "'q' is a string");
		return -1;
	}
	sc->limit = pint(p, "limit", def, 1, max);
	if (sc->limit < 0) {
		serve_fail(e, 400, "'limit' is an integer from 1 to %ld",
			   max);
		return -1;
	}
	if (p && json_object_get(p, "cursor") &&
	    !json_is_null(json_object_get(p, "cursor")) && !cursor) {
		serve_fail(e, 400, "'cursor' is a string");
		return -1;
	}
	if (cursor) {
		char *end;
		long long at;

		errno = 0;
		at = strtoll(cursor, &end, 10);
		if (errno || *end != '.' || strlen(end + 1) >
		    APTIX_CONV_MAXLEN) {
			serve_fail(e, 400, "bad cursor");
			return -1;
		}
		sc->has_cursor = 1;
		sc->cursor_at = at;
		snprintf(sc->cursor_id, sizeof(sc->cursor_id), "%s", end + 1);
	}
	return 0;
}

static int read_scope(struct scope *sc, struct serve *s, json_t *p,
		      struct serve_err *e)
{
	return read_scope_of(sc, s, p, e, LIST_DEFAULT, LIST_MAX);
}

static int in_scope(const struct scope *sc, const aptix_conv_info *ci)
{
	if (sc->workspace && strcmp(ci->workspace, sc->workspace) &&
	    (sc->explicit_ws || *ci->workspace))
		return 0;
	if (ci->archived && !sc->archived)
		return 0;
	if (sc->q && !matches(ci, sc->q))
		return 0;
	return 1;
}

struct page_walk {
	const struct scope *sc;
	struct convs *page;
	long used;		/* conversations, or snapshots, taken */
	int more;
};

static int page_cb(const aptix_conv_info *ci, void *payload)
{
	struct page_walk *pw = payload;
	long cost = pw->sc->nodes ? (ci->turns ? (long)ci->turns : 1) : 1;

	if (!in_scope(pw->sc, ci))
		return 0;
	/* a page holds one conversation at least, whatever its size */
	if (pw->page->nr && pw->used + cost > pw->sc->limit) {
		pw->more = 1;
		return APTIX_ITEROVER;
	}
	pw->used += cost;
	return collect_conv(ci, pw->page);
}

/*
 * The page of conversations a list or a graph shows, in order: *more is
 * set when others follow it. Read newest first from the index's
 * recency order: what a page costs is what it shows.
 */
static int select_page(struct convs *page, int *more, struct serve *s,
		       const struct scope *sc)
{
	struct page_walk pw;
	aptix_conv_info after;
	int r;

	memset(page, 0, sizeof(*page));
	memset(&pw, 0, sizeof(pw));
	pw.sc = sc;
	pw.page = page;
	memset(&after, 0, sizeof(after));
	after.updated_at = sc->cursor_at;
	snprintf(after.id, sizeof(after.id), "%s", sc->cursor_id);
	r = aptix_index_conversations_by_recency(s->repo, sc->has_cursor ?
						 &after : NULL, page_cb,
						 &pw);
	*more = pw.more;
	return r;
}

/* A page's next cursor; NULL on the last page. */
static const char *cursor_of(char buf[32 + APTIX_CONV_MAXLEN],
			     const struct convs *page, int more)
{
	const aptix_conv_info *ci;

	if (!more || !page->nr)
		return NULL;
	ci = &page->v[page->nr - 1];
	snprintf(buf, 32 + APTIX_CONV_MAXLEN, "%" PRId64 ".%s",
		 ci->updated_at, ci->id);
	return buf;
}

json_t *serve_list_conversations(struct serve *s, json_t *p,
				 struct serve_err *e)
{
	char cursor[32 + APTIX_CONV_MAXLEN];
	struct convs page;
	struct scope sc;
	json_t *o, *items;
	size_t i;
	int more, r;

	if (read_scope(&sc, s, p, e) < 0)
		return NULL;
	if ((r = select_page(&page, &more, s, &sc)) < 0) {
		free(page.v);
		return serve_fail_aptix(e, r);
	}
	items = json_array();
	for (i = 0; i < page.nr; i++)
		json_array_append_new(items, conv_json(s, &page.v[i]));
	o = aptix_view_page(items, cursor_of(cursor, &page, more));
	free(page.v);
	return o ? o : serve_fail_aptix(e, APTIX_ERROR);
}

/* ---- turns ---- */

/*
 * A turn: the summary view (seed 001's list fields, the instruction and
 * answer cut at 1024 bytes, ids of the full payloads) or the full view
 * (whole texts, sources, active files, chain details).
 */
static json_t *turn_view(struct serve *s, const aptix_oid *sid, int full,
			 struct serve_err *e)
{
	json_t *o;
	int r;

	if ((r = aptix_view_turn(&o, s->repo, sid,
				 full ? APTIX_VIEW_FULL : 0)) < 0)
		return serve_fail_aptix(e, r);
	return o;
}

/* The session a name (full or short id, HEAD~1, a conversation) names. */
static int resolve_session(aptix_oid *out, struct serve *s,
			   const char *name, struct serve_err *e)
{
	aptix_otype type;
	size_t size;
	int r;

	if (!name) {
		serve_fail(e, 400, "a session id is needed");
		return -1;
	}
	if ((r = aptix_revparse(out, s->repo, name)) < 0) {
		serve_fail_aptix(e, r);
		return -1;
	}
	if ((r = aptix_odb_read_header(&size, &type, aptix_repo_odb(s->repo),
				       out)) < 0) {
		serve_fail_aptix(e, r);
		return -1;
	}
	if (type != APTIX_OBJ_SESSION) {
		serve_fail(e, 400, "'%s' is a %s, not a session", name,
			   aptix_otype_name(type));
		return -1;
	}
	return 0;
}

json_t *serve_read_turn(struct serve *s, json_t *p, struct serve_err *e)
{
	aptix_oid id;
	int full = serve__pbool(p, "full", 0);

	if (full < 0)
		return serve_fail(e, 400, "'full' is a boolean");
	if (resolve_session(&id, s, serve__pstr(p, "session"), e) < 0)
		return NULL;
	return turn_view(s, &id, full, e);
}

/* ---- sessions of conversations ---- */

/*
 * The snapshots of the conversations a graph or a conversation shows:
 * the library's walker finds them (aptix_revwalk_push_conversations():
 * what this costs grows with the snapshots shown, not with the store).
 */
struct node {
	aptix_session_info si;
	size_t conv;		/* index in the page */
};

struct conv_key {
	const char *id;
	size_t conv;
};

struct sessions {
	struct node *v;
	size_t nr, alloc;
	struct conv_key *keys;	/* the page's conversations, by id */
	size_t nkeys;
};

static int by_conv_key(const void *a, const void *b)
{
	return strcmp(((const struct conv_key *)a)->id,
		      ((const struct conv_key *)b)->id);
}

/* Room for one more node in ss. */
static int node_room(struct sessions *ss)
{
	struct node *nv;

	if (ss->nr < ss->alloc)
		return 0;
	ss->alloc = ss->alloc ? 2 * ss->alloc : 64;
	if (!(nv = realloc(ss->v, ss->alloc * sizeof(*nv))))
		return aptix_error_oom();
	ss->v = nv;
	return 0;
}

/* si as a node of conversation conv (its index in the page). */
static int push_node(struct sessions *ss, const aptix_session_info *si,
		     size_t conv)
{
	if (node_room(ss) < 0)
		return APTIX_ERROR;
	ss->v[ss->nr].si = *si;
	ss->v[ss->nr++].conv = conv;
	return 0;
}

static int add_node(struct sessions *ss, const aptix_revwalk_entry *e)
{
	struct conv_key key, *hit;

	key.id = e->conversation;
	key.conv = 0;
	hit = bsearch(&key, ss->keys, ss->nkeys, sizeof(*ss->keys),
		      by_conv_key);
	if (!hit)
		return 0;	/* cannot be: the walk pushed these */
	if (node_room(ss) < 0)
		return APTIX_ERROR;
	aptix_revwalk_entry_info(&ss->v[ss->nr].si, e);
	ss->v[ss->nr++].conv = hit->conv;
	return 0;
}

static int by_created(const void *a, const void *b)
{
	const aptix_session_info *x = &((const struct node *)a)->si;
	const aptix_session_info *y = &((const struct node *)b)->si;

	if (x->created_at != y->created_at)
		return x->created_at < y->created_at ? -1 : 1;
	if (x->generation != y->generation)
		return x->generation < y->generation ? -1 : 1;
	return aptix_oid_cmp(&x->id, &y->id);
}

/* Every snapshot of the conversations of page, oldest first. */
static int sessions_of(struct sessions *ss, struct serve *s,
		       const struct convs *page)
{
	aptix_revwalk *w = NULL;
	aptix_revwalk_entry e;
	const char **ids;
	size_t i;
	int r;

	memset(ss, 0, sizeof(*ss));
	if (!page->nr)
		return 0;
	ids = malloc(page->nr * sizeof(*ids));
	ss->keys = malloc(page->nr * sizeof(*ss->keys));
	if (!ids || !ss->keys) {
		free(ids);
		return aptix_error_oom();
	}
	for (i = 0; i < page->nr; i++) {
		ids[i] = ss->keys[i].id = page->v[i].id;
		ss->keys[i].conv = i;
	}
	ss->nkeys = page->nr;
	qsort(ss->keys, ss->nkeys, sizeof(*ss->keys), by_conv_key);
	if ((r = aptix_revwalk_new(&w, s->repo)) == 0) {
		aptix_revwalk_set_flags(w, APTIX_REVWALK_FAILED |
					APTIX_REVWALK_NO_WALK);
		r = aptix_revwalk_push_conversations(w, ids, page->nr, NULL);
	}
	while (r == 0 && (r = aptix_revwalk_next_entry(&e, w)) == 0)
		r = add_node(ss, &e);
	aptix_revwalk_free(w);
	free(ids);
	if (r < 0 && r != APTIX_ITEROVER)
		return r;
	if (ss->nr)
		qsort(ss->v, ss->nr, sizeof(*ss->v), by_created);
	return 0;
}

static void sessions_release(struct sessions *ss)
{
	free(ss->v);
	free(ss->keys);
}

/* The conversation named (an id or a unique prefix), in ci. */
static int find_conv(aptix_conv_info *ci, struct serve *s, const char *name,
		     struct serve_err *e)
{
	char id[APTIX_CONV_MAXLEN + 1];
	int r;

	if (!name) {
		serve_fail(e, 400, "a conversation id is needed");
		return -1;
	}
	if (!strcmp(name, "HEAD") || (r = aptix_conv_resolve(id, s->repo,
							    name)) < 0 ||
	    (r = aptix_index_conversation(ci, s->repo, id)) < 0) {
		/* a damaged store is no missing conversation */
		if (strcmp(name, "HEAD") && r != APTIX_ENOTFOUND &&
		    r != APTIX_EAMBIGUOUS && r != APTIX_EINVALID)
			serve_fail_aptix(e, r);
		else
			serve_fail(e, 404, "no conversation '%.100s'", name);
		return -1;
	}
	return 0;
}

/*
 * The turns of a page of a conversation: the newest limit of them
 * before the one the cursor names (its session id: the oldest of the
 * page before), oldest first. *from..*to in ss; *more when older ones
 * are left.
 */
static int turn_page(size_t *from, size_t *to, int *more,
		     const struct sessions *ss, json_t *p,
		     struct serve_err *e)
{
	const char *cursor = serve__pstr(p, "cursor");
	long limit = pint(p, "limit", LIST_MAX, 1, LIST_MAX);
	aptix_oid id;

	if (limit < 0) {
		serve_fail(e, 400, "'limit' is an integer from 1 to %d",
			   LIST_MAX);
		return -1;
	}
	*to = ss->nr;
	if (cursor) {
		if (aptix_oid_fromstr(&id, cursor) < 0) {
			aptix_error_clear();
			serve_fail(e, 400, "bad cursor");
			return -1;
		}
		for (*to = 0; *to < ss->nr; (*to)++)
			if (!aptix_oid_cmp(&ss->v[*to].si.id, &id))
				break;
		if (*to == ss->nr) {
			serve_fail(e, 400, "bad cursor: no turn '%.64s' in "
				   "the conversation", cursor);
			return -1;
		}
	}
	*from = *to > (size_t)limit ? *to - (size_t)limit : 0;
	*more = *from > 0;
	return 0;
}

/*
 * The newest limit turns of conversation ci before the cursor's, from
 * the timeline: read newest first from ci's newest snapshot, a page
 * costs the sessions made in its time span, not the conversation's
 * length. 0; 1 when the store's records are not all in the timeline
 * (the caller walks the conversation); -1 with e set.
 */
struct conv_turns {
	const char *conv;
	struct sessions *ss;
	size_t limit;
	int more;
};

static int conv_turn_cb(const aptix_session_info *si, void *payload)
{
	struct conv_turns *ct = payload;
	struct sessions *ss = ct->ss;

	if (strcmp(si->conversation, ct->conv))
		return 0;
	if (ss->nr == ct->limit) {
		ct->more = 1;
		return APTIX_ITEROVER;
	}
	return push_node(ss, si, 0);
}

static int recent_turns(struct sessions *ss, int *more, struct serve *s,
			const aptix_conv_info *ci, json_t *p,
			struct serve_err *e)
{
	const char *cursor = serve__pstr(p, "cursor");
	long limit = pint(p, "limit", LIST_MAX, 1, LIST_MAX);
	struct conv_turns ct;
	aptix_session_info at;
	aptix_oid id;
	int r;

	memset(ss, 0, sizeof(*ss));
	if (limit < 0) {
		serve_fail(e, 400, "'limit' is an integer from 1 to %d",
			   LIST_MAX);
		return -1;
	}
	memset(&at, 0, sizeof(at));
	if (cursor && (aptix_oid_fromstr(&id, cursor) < 0 ||
		       aptix_index_session(&at, s->repo, &id) < 0 ||
		       strcmp(at.conversation, ci->id))) {
		aptix_error_clear();
		serve_fail(e, 400, "bad cursor: no turn '%.64s' in the "
			   "conversation", cursor);
		return -1;
	}
	if (!cursor) {	/* just below the newest snapshot's key */
		memset(at.id.id, 0xff, sizeof(at.id.id));
		at.created_at = ci->updated_at;
	}
	ct.conv = ci->id;
	ct.ss = ss;
	ct.limit = (size_t)limit;
	ct.more = 0;
	r = aptix_index_foreach_recent_before(s->repo, at.created_at,
					      &at.id, conv_turn_cb, &ct);
	if (r == APTIX_ENOTFOUND && !ss->nr)
		return 1;
	if (r < 0 && r != APTIX_ITEROVER) {
		sessions_release(ss);
		serve_fail_aptix(e, r);
		return -1;
	}
	if (ss->nr)
		qsort(ss->v, ss->nr, sizeof(*ss->v), by_created);
	*more = ct.more;
	return 0;
}

/*
 * A conversation and a page of its turns: what it costs is the index
 * records of its snapshots and the turns shown (`limit`, default and
 * most LIST_MAX; `cursor`: next_cursor of the page before).
 */
json_t *serve_read_conversation(struct serve *s, json_t *p,
				struct serve_err *e)
{
	aptix_conv_info ci;
	struct convs one;
	struct sessions ss;
	json_t *o, *turns, *v;
	size_t i, from, to;
	int more, r;

	if (find_conv(&ci, s, serve__pstr(p, "conversation"), e) < 0)
		return NULL;
	one.v = &ci;
	one.nr = one.alloc = 1;
	if ((r = recent_turns(&ss, &more, s, &ci, p, e)) < 0)
		return NULL;
	if (r == 0) {
		from = 0;
		to = ss.nr;
	} else if ((r = sessions_of(&ss, s, &one)) < 0) {
		sessions_release(&ss);
		return serve_fail_aptix(e, r);
	} else if (turn_page(&from, &to, &more, &ss, p, e) < 0) {
		sessions_release(&ss);
		return NULL;
	}
	turns = json_array();
	for (i = from; i < to; i++) {
		if (!(v = turn_view(s, &ss.v[i].si.id, 0, e))) {
			json_decref(turns);
			sessions_release(&ss);
			return NULL;
		}
		json_array_append_new(turns, v);
	}
	o = json_object();
	set(o, "conversation", conv_json(s, &ci));
	set(o, "turns", turns);
	set(o, "next_cursor", more ? aptix_view_id(&ss.v[from].si.id) :
	    NULL);
	sessions_release(&ss);
	return o;
}

/* ---- the graph ---- */

struct by_oid {
	aptix_oid id;
	size_t row;
};

static int cmp_by_oid(const void *a, const void *b)
{
	return aptix_oid_cmp(&((const struct by_oid *)a)->id,
			     &((const struct by_oid *)b)->id);
}

static long row_of(const struct by_oid *idx, size_t n, const aptix_oid *id)
{
	struct by_oid key, *hit;

	key.id = *id;
	key.row = 0;
	hit = bsearch(&key, idx, n, sizeof(*idx), cmp_by_oid);
	return hit ? (long)hit->row : -1;
}

struct span {
	size_t conv;		/* index in the page */
	long start, end;	/* rows: the fork point (or first), last */
	long first;		/* row of its first snapshot */
	int lane;
};

static int by_start(const void *a, const void *b)
{
	const struct span *x = a, *y = b;

	if (x->start != y->start)
		return x->start < y->start ? -1 : 1;
	/* the conversation a fork leaves keeps the left lane */
	if (x->first != y->first)
		return x->first < y->first ? -1 : 1;
	return x->conv < y->conv ? -1 : x->conv > y->conv;
}

static int by_conv(const void *a, const void *b)
{
	const struct span *x = a, *y = b;

	return x->conv < y->conv ? -1 : x->conv > y->conv;
}

/*
 * Lanes: each conversation gets a column from its fork point (the row of
 * the parent of its first snapshot, when shown) to its last snapshot;
 * a column is reused once the conversation in it has ended (interval
 * scheduling, lowest free lane first).
 */
static int assign_lanes(struct span *sp, size_t n, int *nlanes)
{
	long *ends = NULL;
	size_t i;
	int l, lanes = 0;

	if (n && !(ends = calloc(n, sizeof(*ends))))
		return aptix_error_oom();
	qsort(sp, n, sizeof(*sp), by_start);
	for (i = 0; i < n; i++) {
		for (l = 0; l < lanes && ends[l] >= sp[i].start; l++)
			;
		if (l == lanes)
			lanes++;
		ends[l] = sp[i].end;
		sp[i].lane = l;
	}
	qsort(sp, n, sizeof(*sp), by_conv);
	free(ends);
	*nlanes = lanes;
	return 0;
}

static json_t *graph_json(struct serve *s, const struct convs *page,
			  const struct sessions *ss, struct serve_err *e)
{
	struct by_oid *idx = NULL;
	struct span *sp = NULL;
	json_t *o, *nodes, *convs, *x;
	size_t i;
	int nlanes = 0, c;
	long prow;

	idx = malloc((ss->nr + 1) * sizeof(*idx));
	sp = calloc(page->nr + 1, sizeof(*sp));
	if (!idx || !sp) {
		free(idx);
		free(sp);
		return serve_fail(e, 500, "out of memory");
	}
	for (i = 0; i < ss->nr; i++) {
		idx[i].id = ss->v[i].si.id;
		idx[i].row = i;
	}
	qsort(idx, ss->nr, sizeof(*idx), cmp_by_oid);
	for (i = 0; i < page->nr; i++) {
		sp[i].conv = i;
		sp[i].start = sp[i].end = -1;
	}
	for (i = 0; i < ss->nr; i++) {
		c = (int)ss->v[i].conv;
		if (sp[c].start < 0) {
			prow = ss->v[i].si.has_parent ?
				row_of(idx, ss->nr, &ss->v[i].si.parent) : -1;
			sp[c].start = prow >= 0 ? prow : (long)i;
			sp[c].first = (long)i;
		}
		sp[c].end = (long)i;
	}
	if (assign_lanes(sp, page->nr, &nlanes) < 0) {
		free(idx);
		free(sp);
		return serve_fail(e, 500, "out of memory");
	}

	nodes = json_array();
	for (i = 0; i < ss->nr; i++) {
		const aptix_session_info *si = &ss->v[i].si;

		c = (int)ss->v[i].conv;
		prow = si->has_parent ? row_of(idx, ss->nr, &si->parent) :
			-1;
		x = aptix_view_session_info(si);
		/* the node's id in the graph: its session */
		set(x, "id", aptix_view_id(&si->id));
		set(x, "parent_row", prow >= 0 ? json_integer(prow) : NULL);
		set(x, "row", json_integer((json_int_t)i));
		set(x, "lane", json_integer(c >= 0 ? sp[c].lane : 0));
		json_array_append_new(nodes, x);
	}
	convs = json_array();
	for (i = 0; i < page->nr; i++) {
		x = conv_json(s, &page->v[i]);
		set(x, "lane", json_integer(sp[i].lane));
		json_array_append_new(convs, x);
	}
	free(idx);
	free(sp);
	o = json_object();
	set(o, "nodes", nodes);
	set(o, "conversations", convs);
	set(o, "lanes", json_integer(nlanes));
	return o;
}

/*
 * What HEAD names, for the page's marker: {conversation, session}, each
 * null when HEAD is detached or unborn.
 */
static json_t *head_json(struct serve *s)
{
	size_t plen = strlen(APTIX_CONV_PREFIX);
	aptix_ref ref;
	aptix_oid id;
	json_t *o = json_object();
	const char *conv = NULL;

	if (aptix_ref_read(&ref, s->repo, "HEAD") == 0) {
		if (ref.target && !strncmp(ref.target, APTIX_CONV_PREFIX,
					    plen))
			conv = ref.target + plen;
		set(o, "conversation", conv ? json_string(conv) : NULL);
		aptix_ref_release(&ref);
	} else {
		set(o, "conversation", NULL);
	}
	set(o, "session", aptix_ref_resolve(&id, NULL, s->repo, "HEAD") ?
	    NULL : aptix_view_id(&id));
	aptix_error_clear();
	return o;
}

/*
 * The graph's page by snapshots: the newest limit of those whose
 * conversation is in scope, read newest first from the timeline from
 * the cursor on ("<created ms>.<session>" of the oldest node shown), with
 * their conversations (first met first). A page costs what it shows: a
 * conversation larger than a page is shown over several.
 */
struct node_walk {
	struct serve *s;
	const struct scope *sc;
	struct convs *page;	/* the conversations of the nodes */
	struct convs out;	/* conversations out of scope, met already */
	struct sessions *ss;
	aptix_session_info last;	/* the oldest node taken */
	int more;
};

static long conv_index(const struct convs *c, const char *id)
{
	size_t i;

	for (i = c->nr; i-- > 0;)	/* the last met is the likeliest */
		if (!strcmp(c->v[i].id, id))
			return (long)i;
	return -1;
}

/* The conversation of a node, in the page (>= 0) or out of scope (-1). */
static long node_conv(struct node_walk *nw, const char *id, int *fits)
{
	aptix_conv_info ci;
	long k = conv_index(nw->page, id);
	int r;

	if (k >= 0 || conv_index(&nw->out, id) >= 0)
		return k;
	r = aptix_index_conversation(&ci, nw->s->repo, id);
	if (r == APTIX_ENOTFOUND) {	/* deleted: its sessions stay */
		aptix_error_clear();
		memset(&ci, 0, sizeof(ci));
		snprintf(ci.id, sizeof(ci.id), "%s", id);
	} else if (r < 0) {
		return r;
	}
	if (r == APTIX_ENOTFOUND || !in_scope(nw->sc, &ci))
		return (r = collect_conv(&ci, &nw->out)) < 0 ? r : -1;
	if (!*fits)
		return -1;	/* not taken: the page is full */
	return (r = collect_conv(&ci, nw->page)) < 0 ? r :
		(long)nw->page->nr - 1;
}

static int node_cb(const aptix_session_info *si, void *payload)
{
	struct node_walk *nw = payload;
	struct sessions *ss = nw->ss;
	int fits = ss->nr < (size_t)nw->sc->limit;
	long k = node_conv(nw, si->conversation, &fits);

	if (k < -1)
		return (int)k;
	if (k == -1 && fits)
		return 0;	/* out of scope */
	if (!fits) {
		if (k == -1 && conv_index(&nw->out, si->conversation) >= 0)
			return 0;
		nw->more = 1;
		return APTIX_ITEROVER;
	}
	if (push_node(ss, si, (size_t)k) < 0)
		return APTIX_ERROR;
	nw->last = *si;
	return 0;
}

static int nodes_page(struct convs *page, struct sessions *ss,
		      aptix_session_info *last, int *more, struct serve *s,
		      const struct scope *sc, struct serve_err *e)
{
	struct node_walk nw;
	aptix_oid at;
	int r;

	memset(&nw, 0, sizeof(nw));
	nw.s = s;
	nw.sc = sc;
	nw.page = page;
	nw.ss = ss;
	if (sc->has_cursor && aptix_oid_fromstr(&at, sc->cursor_id) < 0) {
		aptix_error_clear();
		serve_fail(e, 400, "bad cursor");
		return -1;
	}
	r = aptix_index_foreach_recent_before(s->repo, sc->cursor_at,
					      sc->has_cursor ? &at : NULL,
					      node_cb, &nw);
	free(nw.out.v);
	if (r == APTIX_ENOTFOUND && !ss->nr)
		return 1;	/* records kept in place: by conversation */
	if (r < 0 && r != APTIX_ITEROVER) {
		serve_fail_aptix(e, r);
		return -1;
	}
	if (ss->nr)
		qsort(ss->v, ss->nr, sizeof(*ss->v), by_created);
	*more = nw.more;
	*last = nw.last;
	return 0;
}

/*
 * The graph: one conversation (conversation=), or a page of snapshots;
 * a store whose records are not all in the timeline (indexed by an older
 * aptix) pages by whole conversations.
 */
json_t *serve_graph(struct serve *s, json_t *p, struct serve_err *e)
{
	struct convs page;
	struct sessions ss;
	struct scope sc;
	aptix_conv_info ci;
	aptix_session_info last;
	const char *conv = serve__pstr(p, "conversation");
	char cursor[32 + APTIX_CONV_MAXLEN];
	const char *next = NULL;
	json_t *o = NULL;
	int more = 0, by_node = 0, r = 0;

	memset(&page, 0, sizeof(page));
	memset(&ss, 0, sizeof(ss));
	if (conv) {
		if (find_conv(&ci, s, conv, e) < 0)
			return NULL;
		if ((r = collect_conv(&ci, &page)) < 0)
			return serve_fail_aptix(e, r);
	} else if (read_scope_of(&sc, s, p, e, GRAPH_DEFAULT, GRAPH_MAX) < 0) {
		return NULL;
	} else if ((r = nodes_page(&page, &ss, &last, &more, s, &sc,
				   e)) < 0) {
		goto done;
	} else if (!(by_node = !r) &&
		   (sc.nodes = 1, r = select_page(&page, &more, s, &sc)) < 0) {
		free(page.v);
		return serve_fail_aptix(e, r);
	}
	if (!by_node && (r = sessions_of(&ss, s, &page)) < 0) {
		serve_fail_aptix(e, r);
		goto done;
	}
	if (by_node && more) {
		snprintf(cursor, sizeof(cursor), "%" PRId64 ".%s",
			 last.created_at, aptix_oid_hex(&last.id));
		next = cursor;
	} else if (!by_node) {
		next = cursor_of(cursor, &page, more);
	}
	if ((o = graph_json(s, &page, &ss, e))) {
		set(o, "next_cursor", next ? json_string(next) : NULL);
		set(o, "head", head_json(s));
	}
done:
	sessions_release(&ss);
	free(page.v);
	return o;
}

/* ---- search ---- */

/*
 * The sessions that best match q's words (aptix_search(): BM25 over the
 * search index), as aptix search --json lists them: {q, hits}. Scoped
 * by conversation, workspace, since/until (ISO dates, "2 days ago"),
 * status and model; limit 1..LIST_MAX (default 20).
 */
json_t *serve_search(struct serve *s, json_t *p, struct serve_err *e)
{
	aptix_search_options o = APTIX_SEARCH_OPTIONS_INIT;
	const char *q = serve__pstr(p, "q"), *st = serve__pstr(p, "status");
	const char *since = serve__pstr(p, "since");
	const char *until = serve__pstr(p, "until");
	long limit = pint(p, "limit", 20, 1, LIST_MAX);
	int64_t now = aptix_now_ms();
	json_t *hits;
	int r;

	if (!q)
		return serve_fail(e, 400, "'q', the words to search for, is "
				  "needed");
	if (limit < 0)
		return serve_fail(e, 400, "'limit' is an integer from 1 to %d",
				  LIST_MAX);
	if (st && (o.status = aptix_session_status_from_name(st)) < 0)
		return serve_fail(e, 400, "unknown status '%s'", st);
	if ((since && aptix_date_parse(&o.since, since, now) < 0) ||
	    (until && aptix_date_parse(&o.until, until, now) < 0))
		return serve_fail(e, 400, "%s", aptix_error_last()->message);
	o.conversation = serve__pstr(p, "conversation");
	o.workspace = serve__pstr(p, "workspace");
	o.model = serve__pstr(p, "model");
	o.limit = (size_t)limit;
	if ((r = aptix_view_search(&hits, s->repo, q, &o)) < 0)
		return serve_fail_aptix(e, r);
	return json_pack("{s:s,s:o}", "q", q, "hits", hits);
}

/* ---- raw objects ---- */

int serve_read_object(struct serve *s, const char *id, aptix_buf *out,
		      aptix_otype *type, const char **content_type,
		      struct serve_err *e)
{
	aptix_oid oid;
	int r;

	if (!id || strlen(id) != APTIX_OID_HEXSZ ||
	    aptix_oid_fromstr(&oid, id) < 0) {
		serve_fail(e, 400, "an object id is 64 hex digits");
		return APTIX_EINVALID;
	}
	if ((r = aptix_odb_read(out, type, aptix_repo_odb(s->repo), &oid,
				0)) < 0) {
		serve_fail_aptix(e, r);
		return r;
	}
	if (*type != APTIX_OBJ_BLOB)
		*content_type = "application/json";
	else if (aptix_utf8_valid(out->ptr, out->len))
		*content_type = "text/plain; charset=utf-8";
	else
		*content_type = "application/octet-stream";
	return 0;
}

static json_t *base64(const unsigned char *p, size_t n)
{
	static const char tab[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZ"
		"abcdefghijklmnopqrstuvwxyz0123456789+/";
	aptix_buf b = APTIX_BUF_INIT;
	unsigned long v;
	size_t i;
	json_t *j;

	for (i = 0; i < n; i += 3) {
		v = (unsigned long)p[i] << 16;
		if (i + 1 < n)
			v |= (unsigned long)p[i + 1] << 8;
		if (i + 2 < n)
			v |= p[i + 2];
		aptix_buf_putc(&b, tab[(v >> 18) & 63]);
		aptix_buf_putc(&b, tab[(v >> 12) & 63]);
		aptix_buf_putc(&b, i + 1 < n ? tab[(v >> 6) & 63] : '=');
		aptix_buf_putc(&b, i + 2 < n ? tab[v & 63] : '=');
	}
	j = aptix_buf_oom(&b) ? NULL : json_stringn(b.ptr, b.len);
	aptix_buf_release(&b);
	return j;
}

json_t *serve_read_object_json(struct serve *s, json_t *p,
			       struct serve_err *e)
{
	aptix_buf b = APTIX_BUF_INIT;
	aptix_otype type;
	const char *ct, *id = serve__pstr(p, "id");
	json_t *o;
	int text;

	if (serve_read_object(s, id, &b, &type, &ct, e) < 0) {
		aptix_buf_release(&b);
		return NULL;
	}
	text = aptix_utf8_valid(b.ptr, b.len);
	o = json_object();
	set(o, "id", json_string(id));
	set(o, "type", json_string(aptix_otype_name(type)));
	set(o, "size", json_integer((json_int_t)b.len));
	set(o, "content_type", json_string(ct));
	set(o, "encoding", json_string(text ? "utf-8" : "base64"));
	set(o, "data", text ? json_stringn(b.ptr, b.len) :
	    base64((const unsigned char *)b.ptr, b.len));
	aptix_buf_release(&b);
	return o;
}

/* ---- seed 003: workspace sessions ---- */

/*
 * A workspace named by a path (absolute: its WorkspaceId is derived as
 * the CLI derives it) or by its WorkspaceId.
 */
int serve_workspace_id(aptix_buf *out, struct serve *s, const char *ws,
		       struct serve_err *e)
{
	aptix_config *cfg = NULL;
	int r;

	if (!ws || !*ws) {
		serve_fail(e, 400, "a workspace path or id is needed");
		return -1;
	}
	if (*ws != '/')
		return aptix_buf_set(out, ws, strlen(ws)) < 0 ?
			(serve_fail(e, 500, "out of memory"), -1) : 0;
	if ((r = aptix_config_open(&cfg, s->repo)) == 0)
		r = aptix_workspace_id(out, cfg, NULL, ws);
	aptix_config_free(cfg);
	if (r < 0) {
		serve_fail_aptix(e, r);
		return -1;
	}
	return 0;
}

/*
 * A session of seed 003's routes: the conversation summary with the
 * names the seed fixes as aliases (sessionId, updatedAt; turnCount and
 * lastTurnStatus, which earlier clients read), and `status` in the
 * seed's sense: active, closed or archived (Documentation/json.md).
 */
static json_t *seed_session(struct serve *s, const aptix_conv_info *ci,
			    const char *status)
{
	json_t *x = conv_json(s, ci);

	if (!x)
		return NULL;
	set(x, "status", json_string(status));
	set(x, "model", NULL);
	set(x, "sessionId", json_string(ci->id));
	set(x, "updatedAt", aptix_view_time(ci->updated_at));
	set(x, "turnCount", json_integer(ci->committed));
	set(x, "lastTurnStatus", ci->turns ? json_string(
		    aptix_turn_status_name(ci->last_turn_status)) : NULL);
	return x;
}

json_t *serve_workspace_sessions(struct serve *s, json_t *p,
				 struct serve_err *e)
{
	aptix_buf ws = APTIX_BUF_INIT;
	struct convs page;
	struct scope sc;
	json_t *a, *x, *q;
	size_t i;
	int more, r;

	if (serve_workspace_id(&ws, s, serve__pstr(p, "workspace"), e) < 0) {
		aptix_buf_release(&ws);
		return NULL;
	}
	q = json_pack("{s:s,s:b,s:i}", "workspace", ws.ptr, "archived", 1,
		      "limit", LIST_MAX);
	r = q ? read_scope(&sc, s, q, e) : -1;
	if (r == 0 && (r = select_page(&page, &more, s, &sc)) < 0)
		serve_fail_aptix(e, r);
	json_decref(q);
	aptix_buf_release(&ws);
	if (r < 0)
		return q ? NULL : serve_fail(e, 500, "out of memory");
	a = json_array();
	for (i = 0; i < page.nr; i++) {
		const aptix_conv_info *ci = &page.v[i];
		int open = 0;
		size_t k;

		pthread_mutex_lock(&s->lock);
		for (k = 0; k < s->nopen; k++)
			open |= !strcmp(s->open[k], ci->id);
		pthread_mutex_unlock(&s->lock);
		x = seed_session(s, ci, ci->archived ? "archived" :
				 open ? "active" : "closed");
		json_array_append_new(a, x);
	}
	free(page.v);
	return a;
}

static int add_open(struct serve *s, const char *id)
{
	char **nv, *dup;
	size_t i;

	pthread_mutex_lock(&s->lock);
	for (i = 0; i < s->nopen; i++)
		if (!strcmp(s->open[i], id))
			break;
	if (i == s->nopen) {
		if (s->nopen == s->aopen) {
			s->aopen = s->aopen ? 2 * s->aopen : 16;
			nv = realloc(s->open, s->aopen * sizeof(*nv));
			if (!nv) {
				pthread_mutex_unlock(&s->lock);
				return -1;
			}
			s->open = nv;
		}
		if (!(dup = strdup(id))) {
			pthread_mutex_unlock(&s->lock);
			return -1;
		}
		s->open[s->nopen++] = dup;
	}
	pthread_mutex_unlock(&s->lock);
	return 0;
}

json_t *serve_session_open(struct serve *s, json_t *p, struct serve_err *e)
{
	const char *sid = serve__pstr(p, "sessionId");
	const char *wsname = serve__pstr(p, "workspacePath");
	aptix_buf ws = APTIX_BUF_INIT;
	char id[APTIX_UUID_STRSZ + 1];
	aptix_conv_info ci;
	json_t *o;
	int resumed = 0;

	if (!wsname)
		wsname = serve__pstr(p, "workspace");
	if (wsname && serve_workspace_id(&ws, s, wsname, e) < 0) {
		aptix_buf_release(&ws);
		return NULL;
	}
	if (sid) {
		if (find_conv(&ci, s, sid, e) < 0) {
			aptix_buf_release(&ws);
			return NULL;
		}
		resumed = 1;
	} else {
		memset(&ci, 0, sizeof(ci));
		if (aptix_uuid_v4(id) < 0) {
			aptix_buf_release(&ws);
			return serve_fail_aptix(e, APTIX_ERROR);
		}
		snprintf(ci.id, sizeof(ci.id), "%s", id);
		snprintf(ci.workspace, sizeof(ci.workspace), "%s",
			 ws.len ? ws.ptr : s->workspace ? s->workspace : "");
	}
	aptix_buf_release(&ws);
	if (add_open(s, ci.id) < 0)
		return serve_fail(e, 500, "out of memory");
	if (!(o = seed_session(s, &ci, "active")))
		return serve_fail(e, 500, "out of memory");
	set(o, "resumed", json_boolean(resumed));
	return o;
}

json_t *serve_session_close(struct serve *s, json_t *p, struct serve_err *e)
{
	const char *sid = serve__pstr(p, "sessionId");
	size_t i;
	int found = 0;

	if (!sid)
		return serve_fail(e, 400, "a sessionId is needed");
	pthread_mutex_lock(&s->lock);
	for (i = 0; i < s->nopen; i++) {
		if (strcmp(s->open[i], sid))
			continue;
		free(s->open[i]);
		s->open[i] = s->open[--s->nopen];
		found = 1;
		break;
	}
	pthread_mutex_unlock(&s->lock);
	if (!found)
		return serve_fail(e, 404, "no open session '%.100s'", sid);
	return json_pack("{s:s,s:s}", "sessionId", sid, "status", "closed");
}

/* ---- rename and archive ---- */

static json_t *conv_after(struct serve *s, const char *id,
			  struct serve_err *e)
{
	aptix_conv_info ci;
	int r;

	if ((r = aptix_index_conversation(&ci, s->repo, id)) < 0)
		return serve_fail_aptix(e, r);
	return conv_json(s, &ci);
}

json_t *serve_rename(struct serve *s, json_t *p, struct serve_err *e)
{
	const char *title = serve__pstr(p, "title"), *keys[2];
	aptix_conv_info ci;
	int r;

	if (find_conv(&ci, s, serve__pstr(p, "conversation"), e) < 0)
		return NULL;
	if (!title)
		return serve_fail(e, 400, "'title' is a string");
	keys[0] = getenv("OPENAI_API_KEY");
	keys[1] = getenv("QDRANT_API_KEY");
	if ((r = aptix_conversation_set_title_keys(s->repo, ci.id, title,
						   keys, 2)) < 0)
		return serve_fail_aptix(e, r);
	return conv_after(s, ci.id, e);
}

json_t *serve_archive(struct serve *s, json_t *p, struct serve_err *e)
{
	int archived = serve__pbool(p, "archived", 1);
	aptix_conv_info ci;
	int r;

	if (find_conv(&ci, s, serve__pstr(p, "conversation"), e) < 0)
		return NULL;
	if (archived < 0)
		return serve_fail(e, 400, "'archived' is a boolean");
	if ((r = aptix_conversation_set_archived(s->repo, ci.id,
						 archived)) < 0)
		return serve_fail_aptix(e, r);
	return conv_after(s, ci.id, e);
}
