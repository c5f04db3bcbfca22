/*
 * serve/http-guard.c - the request deadline of `aptix serve` (see
 * http-guard.h): a list of the connections still receiving a request,
 * and a thread that looks at it four times a second.
 */
#ifndef _POSIX_C_SOURCE
# define _POSIX_C_SOURCE 200809L
#endif
#include <pthread.h>
#include <signal.h>
#include <stdlib.h>
#include <sys/socket.h>
#include <time.h>

#include "http-guard.h"

#define TICK_MS 250

struct guard_conn {
	struct guard_conn *prev, *next;
	int fd;
	int receiving;		/* a request is awaited or arriving */
	int cut;		/* shut down by the guard */
	struct timespec since;	/* when it began to be awaited */
};

struct http_guard {
	pthread_mutex_t lock;
	pthread_cond_t wake;
	pthread_t thread;
	struct guard_conn *conns;
	long deadline_ms;
	int stopping;
};

static void now(struct timespec *ts)
{
	clock_gettime(CLOCK_MONOTONIC, ts);
}

static long elapsed_ms(const struct timespec *from, const struct timespec *to)
{
	return (long)(to->tv_sec - from->tv_sec) * 1000 +
		(to->tv_nsec - from->tv_nsec) / 1000000;
}

/* Shut down the connections past their deadline (under lock). */
static void cut_late(struct http_guard *g)
{
	struct guard_conn *c;
	struct timespec t;

	now(&t);
	for (c = g->conns; c; c = c->next) {
		if (!c->receiving || c->cut ||
		    elapsed_ms(&c->since, &t) < g->deadline_ms)
			continue;
		/* libmicrohttpd's thread sees the end and closes it */
		shutdown(c->fd, SHUT_RDWR);
		c->cut = 1;
	}
}

static void *guard_thread(void *arg)
{
	struct http_guard *g = arg;
	struct timespec until;

	pthread_mutex_lock(&g->lock);
	while (!g->stopping) {
		cut_late(g);
		now(&until);
		until.tv_nsec += TICK_MS * 1000000L;
		if (until.tv_nsec >= 1000000000L) {
			until.tv_sec++;
			until.tv_nsec -= 1000000000L;
		}
		pthread_cond_timedwait(&g->wake, &g->lock, &until);
	}
	pthread_mutex_unlock(&g->lock);
	return NULL;
}

int guard_start(struct http_guard **out, unsigned deadline)
{
	struct http_guard *g = calloc(1, sizeof(*g));
	pthread_condattr_t ca;
	sigset_t all, old;
	int r;

	*out = NULL;
	if (!g)
		return -1;
	g->deadline_ms = (long)deadline * 1000;
	pthread_mutex_init(&g->lock, NULL);
	pthread_condattr_init(&ca);
	pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
	pthread_cond_init(&g->wake, &ca);
	pthread_condattr_destroy(&ca);
	/* signals are for the main thread's sigwait */
	sigfillset(&all);
	pthread_sigmask(SIG_BLOCK, &all, &old);
	r = pthread_create(&g->thread, NULL, guard_thread, g);
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	if (r) {
		pthread_cond_destroy(&g->wake);
		pthread_mutex_destroy(&g->lock);
		free(g);
		return -1;
	}
	*out = g;
	return 0;
}

void guard_stop(struct http_guard *g)
{
	struct guard_conn *c;

	if (!g)
		return;
	pthread_mutex_lock(&g->lock);
	g->stopping = 1;
	pthread_cond_broadcast(&g->wake);
	pthread_mutex_unlock(&g->lock);
	pthread_join(g->thread, NULL);
	while ((c = g->conns)) {
		g->conns = c->next;
		free(c);
	}
	pthread_cond_destroy(&g->wake);
	pthread_mutex_destroy(&g->lock);
	free(g);
}

struct guard_conn *guard_open(struct http_guard *g, int fd)
{
	struct guard_conn *c = calloc(1, sizeof(*c));

	if (!c)
		return NULL;
	c->fd = fd;
	c->receiving = 1;
	now(&c->since);
	pthread_mutex_lock(&g->lock);
	c->next = g->conns;
	if (g->conns)
		g->conns->prev = c;
	g->conns = c;
	pthread_mutex_unlock(&g->lock);
	return c;
}

void guard_close(struct http_guard *g, struct guard_conn *c)
{
	if (!c)
		return;
	pthread_mutex_lock(&g->lock);
	if (c->prev)
		c->prev->next = c->next;
	else
		g->conns = c->next;
	if (c->next)
		c->next->prev = c->prev;
	pthread_mutex_unlock(&g->lock);
	free(c);
}

static void set_receiving(struct http_guard *g, struct guard_conn *c,
			  int receiving)
{
	if (!c)
		return;
	pthread_mutex_lock(&g->lock);
	c->receiving = receiving;
	now(&c->since);
	pthread_mutex_unlock(&g->lock);
}

void guard_received(struct http_guard *g, struct guard_conn *c)
{
	set_receiving(g, c, 0);
}

void guard_idle(struct http_guard *g, struct guard_conn *c)
{
	set_receiving(g, c, 1);
}
