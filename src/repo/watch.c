/*
 * src/repo/watch.c - the ref updates of a store as they happen
 * (aptix/watch.h): from the backend's listener when it has one, else by
 * reading the refs again and comparing them with what was read last.
 */
#include "util/common.h"
#include "repo/repo.h"
#include "aptix/refs.h"
#include "aptix/strlist.h"
#include "aptix/watch.h"
#include <time.h>

struct entry {
	char *name;
	char *value;
};

struct aptix_watch {
	aptix_repo *repo;
	aptix_backend_listener *listener;
	/* sorted by name: every ref (polled), or those announced (live) */
	struct entry *e;
	size_t n, alloc;
};

/* A ref's value as aptix_watch_change says it (malloc'd). */
static char *ref_value(const aptix_ref *ref)
{
	aptix_buf b = APTIX_BUF_INIT;

	if (ref->target)
		aptix_buf_printf(&b, "ref: %s", ref->target);
	else
		aptix_buf_puts(&b, aptix_oid_hex(&ref->oid));
	return aptix_buf_oom(&b) ? NULL : aptix_buf_detach(&b);
}

static void entries_release(struct entry *e, size_t n)
{
	size_t i;

	for (i = 0; i < n; i++) {
		free(e[i].name);
		free(e[i].value);
	}
	free(e);
}

/* Where name is (1) or would go (0) in w's entries. */
static int find(const aptix_watch *w, const char *name, size_t *at)
{
	size_t lo = 0, hi = w->n, mid;
	int c;

	while (lo < hi) {
		mid = lo + (hi - lo) / 2;
		c = strcmp(w->e[mid].name, name);
		if (c == 0) {
			*at = mid;
			return 1;
		}
		if (c < 0)
			lo = mid + 1;
		else
			hi = mid;
	}
	*at = lo;
	return 0;
}

struct snap {
	struct entry *e;
	size_t n, alloc;
};

static int snap_cb(const aptix_ref *ref, void *payload)
{
	struct snap *s = payload;
	int r;

	if ((r = aptix__grow(&s->e, &s->alloc, s->n, sizeof(*s->e), 64)) < 0)
		return r;
	s->e[s->n].name = aptix__strdup(ref->name);
	s->e[s->n].value = ref_value(ref);
	if (!s->e[s->n].name || !s->e[s->n].value) {
		free(s->e[s->n].name);
		free(s->e[s->n].value);
		return APTIX_ERROR;
	}
	s->n++;
	return 0;
}

static int report(aptix_watch_cb cb, void *payload, const char *ref,
		  const char *value)
{
	aptix_watch_change c;

	if (!cb)	/* the first reading: the start */
		return 0;
	c.ref = ref;
	c.value = value;
	return cb(&c, payload);
}

/* Every ref read again and compared with the last reading (sorted). */
static int poll_refs(aptix_watch *w, aptix_watch_cb cb, void *payload)
{
	struct snap s = { NULL, 0, 0 };
	size_t i = 0, j = 0;
	int r, c, count = 0;

	if ((r = aptix_ref_foreach(w->repo, NULL, snap_cb, &s)) < 0) {
		entries_release(s.e, s.n);
		return r;
	}
	while (r == 0 && (i < w->n || j < s.n)) {
		c = i == w->n ? 1 : j == s.n ? -1 :
			strcmp(w->e[i].name, s.e[j].name);
		if (c < 0) {
			r = report(cb, payload, w->e[i].name, NULL);
			i++;
		} else if (c > 0 || strcmp(w->e[i].value, s.e[j].value)) {
			r = report(cb, payload, s.e[j].name, s.e[j].value);
			i += c == 0;
			j++;
		} else {
			i++;
			j++;
			continue;
		}
		count++;
	}
	entries_release(w->e, w->n);
	w->e = s.e;
	w->n = s.n;
	w->alloc = s.alloc;
	return r < 0 ? r : count;
}

/* An announced ref read again: reported when it differs from the last. */
static int announced(aptix_watch *w, const char *name, aptix_watch_cb cb,
		     void *payload)
{
	aptix_ref ref = { NULL, { { 0 } }, NULL };
	char *value = NULL;
	size_t at;
	int have = find(w, name, &at), r;

	r = aptix_ref_read(&ref, w->repo, name);
	if (r == APTIX_ENOTFOUND) {
		aptix_error_clear();
		r = 0;
	} else if (r == 0 && !(value = ref_value(&ref))) {
		r = APTIX_ERROR;
	}
	aptix_ref_release(&ref);
	if (r < 0)
		return r;
	/* "" stands for a ref seen deleted */
	if (have ? !strcmp(value ? value : "", w->e[at].value) : !value) {
		free(value);
		return 0;
	}
	if (!have && (r = aptix__grow(&w->e, &w->alloc, w->n, sizeof(*w->e),
				      16)) == 0) {
		memmove(w->e + at + 1, w->e + at, (w->n - at) * sizeof(*w->e));
		w->e[at].name = aptix__strdup(name);
		w->e[at].value = NULL;
		w->n++;
		r = w->e[at].name ? 0 : APTIX_ERROR;
	}
	if (r == 0)
		r = report(cb, payload, name, value);
	if (have || w->e[at].name) {
		free(w->e[at].value);
		w->e[at].value = value ? value : aptix__strdup("");
		value = NULL;
	}
	free(value);
	return r < 0 ? r : 1;
}

static int name_cb(const char *ref, void *payload)
{
	return aptix_strlist_push(payload, ref);
}

int aptix_watch_next(aptix_watch *w, int timeout_ms, aptix_watch_cb cb,
		     void *payload)
{
	aptix_strlist names;
	size_t i;
	int r, count = 0;

	if (!w->listener) {
		struct timespec ts;

		ts.tv_sec = timeout_ms > 0 ? timeout_ms / 1000 : 0;
		ts.tv_nsec = timeout_ms > 0 ? (timeout_ms % 1000) * 1000000L : 0;
		nanosleep(&ts, NULL);
		return poll_refs(w, cb, payload);
	}
	aptix_strlist_init(&names);
	r = w->listener->wait(w->listener, timeout_ms, name_cb, &names);
	for (i = 0; r >= 0 && i < names.nr; i++) {
		r = announced(w, names.items[i], cb, payload);
		count += r > 0;
	}
	aptix_strlist_release(&names);
	return r < 0 ? r : count;
}

int aptix_watch_live(const aptix_watch *w)
{
	return w->listener != NULL;
}

int aptix_watch_new(aptix_watch **out, aptix_repo *repo)
{
	aptix_watch *w = aptix__calloc(1, sizeof(*w));
	aptix_backend *b = repo->backend;
	int r = 0;

	*out = NULL;
	if (!w)
		return APTIX_ERROR;
	w->repo = repo;
	if (b && b->version >= 1 && b->listen)
		r = b->listen(&w->listener, b);
	else
		r = poll_refs(w, NULL, NULL);
	if (r < 0) {
		aptix_watch_free(w);
		return r;
	}
	*out = w;
	return 0;
}

void aptix_watch_free(aptix_watch *w)
{
	if (!w)
		return;
	if (w->listener)
		w->listener->free(w->listener);
	entries_release(w->e, w->n);
	free(w);
}
