/*
 * serve/jsonrpc-out.c - what the JSON-RPC transport sends: a queue of
 * messages that a writer thread of its own writes to the client, so that
 * no other thread (the reader, a turn streaming its answer) ever blocks
 * on a client that stops reading while it keeps its input open. Putting
 * a message never waits; the queue is bounded in bytes: past the bound
 * the client is taken as gone (the transport ends the connection), and
 * what is queued and every later message are dropped.
 *
 * The writer waits in poll() on the client's end and on a pipe of its
 * own that wakes it, and writes at most PIPE_BUF bytes once the end is
 * writable (so that a write to a pipe never blocks): closing the queue
 * therefore never hangs on a client that reads nothing.
 */
#ifndef _POSIX_C_SOURCE
# define _POSIX_C_SOURCE 200809L
#endif
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "serve.h"
#include "jsonrpc-out.h"

struct chunk {
	struct chunk *next;
	size_t len, off;
	char data[];
};

struct jsonrpc_out {
	int fd;
	size_t max;
	pthread_t th;
	pthread_mutex_t lock;
	pthread_cond_t changed;	/* queued, written, or the end */
	struct chunk *head, **tail;
	size_t bytes;		/* queued, not yet written */
	struct chunk *busy;	/* the writer writes from it, unlocked */
	int busy_dropped;	/* ... and it left the queue: free it */
	int stop;		/* closing: nothing more is queued */
	int gone;		/* the client is gone: drop everything */
	int overflowed;		/* ... because the bound was passed */
	int wake[2];		/* wakes the writer's poll() */
	void (*on_overflow)(void *ctx);
	void *ctx;
};

static void drop_all(struct jsonrpc_out *o)
{
	struct chunk *c;

	while ((c = o->head)) {
		o->head = c->next;
		if (c == o->busy)
			o->busy_dropped = 1;	/* the writer frees it */
		else
			free(c);
	}
	o->tail = &o->head;
	o->bytes = 0;
}

static void wake(struct jsonrpc_out *o)
{
	ssize_t n;

	do
		n = write(o->wake[1], "", 1);
	while (n < 0 && errno == EINTR);
	/* a full wake pipe is awake already */
}

/* Wait until the client can take bytes, or until woken: 1, 0, -1. */
static int wait_writable(struct jsonrpc_out *o)
{
	struct pollfd p[2];
	char buf[64];

	p[0].fd = o->fd;
	p[0].events = POLLOUT;
	p[1].fd = o->wake[0];
	p[1].events = POLLIN;
	if (poll(p, 2, -1) < 0)
		return errno == EINTR ? 0 : -1;
	if (p[1].revents & POLLIN)
		while (read(o->wake[0], buf, sizeof(buf)) > 0)
			;
	if (p[0].revents & (POLLERR | POLLNVAL))
		return -1;
	return (p[0].revents & (POLLOUT | POLLHUP)) ? 1 : 0;
}

/*
 * Write some of chunk c (the writer's own while it writes): the bytes
 * written (0: none yet), or -1 when the client is gone.
 */
static ssize_t write_some(struct jsonrpc_out *o, const struct chunk *c)
{
	size_t n = c->len - c->off;
	ssize_t w;
	int r;

	if ((r = wait_writable(o)) <= 0)
		return r;
	w = write(o->fd, c->data + c->off, n < PIPE_BUF ? n : PIPE_BUF);
	if (w < 0)
		return errno == EINTR || errno == EAGAIN ? 0 : -1;
	return w;
}

/* w bytes of the head chunk c were written; called with the lock held. */
static void written(struct jsonrpc_out *o, struct chunk *c, ssize_t w)
{
	if (o->busy_dropped) {	/* dropped while it was written */
		free(c);
		return;
	}
	if (w <= 0)
		return;
	c->off += (size_t)w;
	o->bytes -= (size_t)w;
	if (c->off == c->len) {
		o->head = c->next;
		if (!o->head)
			o->tail = &o->head;
		free(c);
	}
	pthread_cond_broadcast(&o->changed);
}

static void *writer_main(void *arg)
{
	struct jsonrpc_out *o = arg;
	struct chunk *c;
	ssize_t w;

	pthread_mutex_lock(&o->lock);
	for (;;) {
		while (!o->head && !o->stop && !o->gone)
			pthread_cond_wait(&o->changed, &o->lock);
		if (o->gone || !o->head)
			break;	/* gone, or closing with all written */
		c = o->busy = o->head;
		o->busy_dropped = 0;
		pthread_mutex_unlock(&o->lock);
		w = write_some(o, c);
		pthread_mutex_lock(&o->lock);
		written(o, c, w);
		o->busy = NULL;
		o->busy_dropped = 0;
		if (w < 0) {
			o->gone = 1;	/* EPIPE: nobody reads any more */
			drop_all(o);
			break;
		}
	}
	pthread_cond_broadcast(&o->changed);
	pthread_mutex_unlock(&o->lock);
	return NULL;
}

int jsonrpc_out_new(struct jsonrpc_out **out, int fd, size_t max,
		    void (*on_overflow)(void *ctx), void *ctx)
{
	struct jsonrpc_out *o = calloc(1, sizeof(*o));
	sigset_t all, old;
	int i, r;

	*out = NULL;
	if (!o)
		return -1;
	o->fd = fd;
	o->max = max;
	o->tail = &o->head;
	o->on_overflow = on_overflow;
	o->ctx = ctx;
	if (pipe(o->wake) < 0) {
		free(o);
		return -1;
	}
	for (i = 0; i < 2; i++) {
		fcntl(o->wake[i], F_SETFL, O_NONBLOCK);
		fcntl(o->wake[i], F_SETFD, FD_CLOEXEC);
	}
	pthread_mutex_init(&o->lock, NULL);
	pthread_cond_init(&o->changed, NULL);
	/* signals are for the main thread */
	sigfillset(&all);
	pthread_sigmask(SIG_BLOCK, &all, &old);
	r = pthread_create(&o->th, NULL, writer_main, o);
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	if (r) {
		pthread_cond_destroy(&o->changed);
		pthread_mutex_destroy(&o->lock);
		close(o->wake[0]);
		close(o->wake[1]);
		free(o);
		return -1;
	}
	*out = o;
	return 0;
}

int jsonrpc_out_put(struct jsonrpc_out *o, const char *s, size_t len)
{
	struct chunk *c = malloc(sizeof(*c) + len);
	int over = 0;

	if (!c)
		return -1;
	memcpy(c->data, s, len);
	c->len = len;
	c->off = 0;
	c->next = NULL;
	pthread_mutex_lock(&o->lock);
	if (o->gone || o->stop) {
		pthread_mutex_unlock(&o->lock);
		free(c);
		return -1;
	}
	/* one message alone is taken whatever its size */
	if (o->head && o->bytes + len > o->max) {
		o->gone = o->overflowed = over = 1;
		drop_all(o);
		free(c);
	} else {
		*o->tail = c;
		o->tail = &c->next;
		o->bytes += len;
	}
	pthread_cond_broadcast(&o->changed);
	pthread_mutex_unlock(&o->lock);
	if (over) {
		wake(o);
		if (o->on_overflow)
			o->on_overflow(o->ctx);
		return -1;
	}
	return 0;
}

void jsonrpc_out_set_max(struct jsonrpc_out *o, size_t max)
{
	pthread_mutex_lock(&o->lock);
	o->max = max;
	pthread_mutex_unlock(&o->lock);
}

int jsonrpc_out_overflowed(struct jsonrpc_out *o)
{
	int r;

	pthread_mutex_lock(&o->lock);
	r = o->overflowed;
	pthread_mutex_unlock(&o->lock);
	return r;
}

void jsonrpc_out_flush(struct jsonrpc_out *o, long timeout_ms)
{
	struct timespec until;

	serve_deadline(&until, timeout_ms);
	pthread_mutex_lock(&o->lock);
	while (o->head && !o->gone &&
	       pthread_cond_timedwait(&o->changed, &o->lock, &until) !=
	       ETIMEDOUT)
		;
	pthread_mutex_unlock(&o->lock);
}

void jsonrpc_out_free(struct jsonrpc_out *o)
{
	if (!o)
		return;
	pthread_mutex_lock(&o->lock);
	o->stop = o->gone = 1;	/* what is not written by now is dropped */
	drop_all(o);
	pthread_cond_broadcast(&o->changed);
	pthread_mutex_unlock(&o->lock);
	wake(o);
	pthread_join(o->th, NULL);
	pthread_cond_destroy(&o->changed);
	pthread_mutex_destroy(&o->lock);
	close(o->wake[0]);
	close(o->wake[1]);
	free(o);
}
