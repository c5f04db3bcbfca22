/*
 * serve/events.c - the store's ref updates to the page (events.h).
 *
 * The log is one buffer of formatted events; `base` is the offset of its
 * first byte in the stream of every event since the start, and each
 * subscriber keeps its own offset in that stream. When the log grows
 * past LOG_MAX what every subscriber has read is dropped; a subscriber
 * that fell behind the start of what is kept gets a "resync" event (the
 * page reads everything again) and goes on from there.
 */
#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <jansson.h>
#include <aptix/view.h>
#include "events.h"
#include "serve.h"

#define LOG_MAX (256u << 10)
#define WAIT_MS 1000		/* how often the thread looks at stop */
#define RETRY_MS 2000		/* after the watch failed */

struct events {
	aptix_repo *repo;
	pthread_t th;
	int started;
	pthread_mutex_t lock;
	pthread_cond_t cond;
	aptix_buf log;
	size_t base;		/* the stream offset of log.ptr[0] */
	int stop, live;
	size_t nsubs;
	size_t refs;		/* the server's and each subscriber's */
};

struct events_sub {
	struct events *ev;
	size_t pos;		/* its offset in the stream */
	aptix_buf pending;	/* its own events (hello, resync) */
	size_t off;
};

/* Append "event: name\ndata: json\n\n" to the log (under lock). */
static void log_put(struct events *ev, const char *name, json_t *data)
{
	char *s = json_dumps(data, JSON_COMPACT | JSON_ENCODE_ANY);

	if (!s)
		return;
	aptix_buf_printf(&ev->log, "event: %s\ndata: %s\n\n", name, s);
	free(s);
	pthread_cond_broadcast(&ev->cond);
}

static int on_change(const aptix_watch_change *c, void *payload)
{
	struct events *ev = payload;
	size_t plen = strlen(APTIX_CONV_PREFIX);
	json_t *d = json_object();

	json_object_set_new(d, "ref", aptix_view_str(c->ref));
	json_object_set_new(d, "value", c->value ?
			    aptix_view_str(c->value) : json_null());
	if (!strncmp(c->ref, APTIX_CONV_PREFIX, plen))
		json_object_set_new(d, "conversation",
				    aptix_view_str(c->ref + plen));
	pthread_mutex_lock(&ev->lock);
	log_put(ev, "ref", d);
	pthread_mutex_unlock(&ev->lock);
	json_decref(d);
	return 0;
}

static void put_error(struct events *ev, const char *what)
{
	const aptix_error *e = aptix_error_last();
	json_t *d = json_object();
	aptix_buf m = APTIX_BUF_INIT;

	aptix_buf_printf(&m, "%s: %s", what, e ? e->message : "failed");
	json_object_set_new(d, "message", aptix_view_str(m.ptr));
	pthread_mutex_lock(&ev->lock);
	log_put(ev, "error", d);
	pthread_mutex_unlock(&ev->lock);
	json_decref(d);
	aptix_buf_release(&m);
}

static int stopping(struct events *ev, long ms)
{
	struct timespec until;
	int stop;

	serve_deadline(&until, ms);
	pthread_mutex_lock(&ev->lock);
	while (!ev->stop && ms > 0 &&
	       pthread_cond_timedwait(&ev->cond, &ev->lock, &until) !=
	       ETIMEDOUT)
		;
	stop = ev->stop;
	pthread_mutex_unlock(&ev->lock);
	return stop;
}

static void *watch_thread(void *arg)
{
	struct events *ev = arg;
	aptix_watch *w = NULL;
	int r, subs, live;

	while (!stopping(ev, 0)) {
		if (!w && aptix_watch_new(&w, ev->repo) < 0) {
			put_error(ev, "cannot watch the store");
			w = NULL;
			if (stopping(ev, RETRY_MS))
				break;
			continue;
		}
		live = aptix_watch_live(w);
		pthread_mutex_lock(&ev->lock);
		ev->live = live;
		subs = (int)ev->nsubs;
		pthread_mutex_unlock(&ev->lock);
		if (!live && !subs) {	/* nobody reads: nothing to poll */
			stopping(ev, WAIT_MS);
			continue;
		}
		if ((r = aptix_watch_next(w, WAIT_MS, on_change, ev)) < 0) {
			put_error(ev, "watching the store");
			aptix_watch_free(w);
			w = NULL;
			stopping(ev, RETRY_MS);
		}
	}
	aptix_watch_free(w);
	return NULL;
}

int events_start(struct events **out, aptix_repo *repo)
{
	struct events *ev = calloc(1, sizeof(*ev));
	sigset_t all, old;
	int r;

	*out = NULL;
	if (!ev)
		return -1;
	ev->repo = repo;
	ev->refs = 1;
	aptix_buf_init(&ev->log, 0);
	pthread_mutex_init(&ev->lock, NULL);
	pthread_cond_init(&ev->cond, NULL);
	/* signals are for the main thread's sigwait */
	sigfillset(&all);
	pthread_sigmask(SIG_BLOCK, &all, &old);
	r = pthread_create(&ev->th, NULL, watch_thread, ev);
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	if (r) {
		events_stop(ev);
		errno = r;
		return -1;
	}
	ev->started = 1;
	*out = ev;
	return 0;
}

/* Drop a reference; the last frees it. */
static void unref(struct events *ev)
{
	size_t left;

	pthread_mutex_lock(&ev->lock);
	left = --ev->refs;
	pthread_mutex_unlock(&ev->lock);
	if (left)
		return;
	aptix_buf_release(&ev->log);
	pthread_cond_destroy(&ev->cond);
	pthread_mutex_destroy(&ev->lock);
	free(ev);
}

/*
 * Subscribers' streams end at their next read; a subscriber whose client
 * reads nothing more keeps the log until its connection is closed.
 */
void events_stop(struct events *ev)
{
	if (!ev)
		return;
	pthread_mutex_lock(&ev->lock);
	ev->stop = 1;
	pthread_cond_broadcast(&ev->cond);
	pthread_mutex_unlock(&ev->lock);
	if (ev->started)
		pthread_join(ev->th, NULL);
	unref(ev);
}

struct events_sub *events_subscribe(struct events *ev)
{
	struct events_sub *s = calloc(1, sizeof(*s));

	if (!s)
		return NULL;
	s->ev = ev;
	aptix_buf_init(&s->pending, 0);
	pthread_mutex_lock(&ev->lock);
	ev->nsubs++;
	ev->refs++;
	s->pos = ev->base + ev->log.len;
	aptix_buf_printf(&s->pending, "event: hello\ndata: {\"live\":%s}\n\n",
			 ev->live ? "true" : "false");
	pthread_mutex_unlock(&ev->lock);
	return s;
}

/* Drop what every subscriber has read, when the log is long (locked). */
static void trim(struct events *ev, size_t upto)
{
	size_t drop;

	if (ev->log.len < LOG_MAX || upto <= ev->base)
		return;
	drop = upto - ev->base;
	memmove(ev->log.ptr, ev->log.ptr + drop, ev->log.len - drop);
	aptix_buf_truncate(&ev->log, ev->log.len - drop);
	ev->base = upto;
}

static size_t take_pending(struct events_sub *s, char *buf, size_t max)
{
	size_t n = s->pending.len - s->off;

	if (n > max)
		n = max;
	memcpy(buf, s->pending.ptr + s->off, n);
	s->off += n;
	if (s->off == s->pending.len) {
		aptix_buf_clear(&s->pending);
		s->off = 0;
	}
	return n;
}

size_t events_read(struct events_sub *s, char *buf, size_t max,
		   long keepalive_ms)
{
	struct events *ev = s->ev;
	struct timespec until;
	size_t n;

	if (s->pending.len)
		return take_pending(s, buf, max);
	serve_deadline(&until, keepalive_ms);
	pthread_mutex_lock(&ev->lock);
	while (!ev->stop && s->pos == ev->base + ev->log.len)
		if (pthread_cond_timedwait(&ev->cond, &ev->lock, &until) ==
		    ETIMEDOUT)
			break;
	if (ev->stop) {
		pthread_mutex_unlock(&ev->lock);
		return 0;
	}
	if (s->pos < ev->base) {	/* fell behind what is kept */
		s->pos = ev->base;
		aptix_buf_puts(&s->pending, "event: resync\ndata: {}\n\n");
		pthread_mutex_unlock(&ev->lock);
		return take_pending(s, buf, max);
	}
	n = ev->base + ev->log.len - s->pos;
	if (n == 0) {
		pthread_mutex_unlock(&ev->lock);
		memcpy(buf, ":\n\n", 3);	/* keep the stream alive */
		return 3;
	}
	if (n > max)
		n = max;
	memcpy(buf, ev->log.ptr + (s->pos - ev->base), n);
	s->pos += n;
	trim(ev, s->pos);
	pthread_mutex_unlock(&ev->lock);
	return n;
}

void events_unsubscribe(struct events_sub *s)
{
	struct events *ev;

	if (!s)
		return;
	ev = s->ev;
	pthread_mutex_lock(&ev->lock);
	ev->nsubs--;
	pthread_mutex_unlock(&ev->lock);
	aptix_buf_release(&s->pending);
	free(s);
	unref(ev);
}
