/*
 * check_jsonrpc.c - the JSON-RPC transport's output queue
 * (serve/jsonrpc-out.c): messages arrive whole and in order at a client
 * that reads; putting never waits on one that does not; past the bound
 * the client is taken as gone, once; closing never hangs. Threads: run
 * under ThreadSanitizer by make check (TSAN_SUITES).
 */
#ifndef _POSIX_C_SOURCE
# define _POSIX_C_SOURCE 200809L
#endif
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "unit.h"
#include "../../serve/jsonrpc-out.h"

static int fds[2];

static void setup(void)
{
	ck_assert_int_eq(pipe(fds), 0);
}

static void teardown(void)
{
	close(fds[0]);
	if (fds[1] >= 0)
		close(fds[1]);
}

static double now_s(void)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	return (double)t.tv_sec + (double)t.tv_nsec / 1e9;
}

struct reader {
	size_t want, got;
	int in_order;
};

/* Read lines "<n> xxx...\n" and check they come whole and in order. */
static void *read_lines(void *arg)
{
	struct reader *rd = arg;
	FILE *f = fdopen(dup(fds[0]), "r");
	char line[8192];
	unsigned long n;

	rd->in_order = 1;
	while (rd->got < rd->want && fgets(line, sizeof(line), f)) {
		if (sscanf(line, "%lu", &n) != 1 || n != rd->got ||
		    line[strlen(line) - 1] != '\n')
			rd->in_order = 0;
		rd->got++;
	}
	fclose(f);
	return NULL;
}

/* Several threads putting at once, a reader slower than them. */
struct putter {
	struct jsonrpc_out *o;
	pthread_mutex_t *order;
	size_t *next, n;
};

static void *put_lines(void *arg)
{
	struct putter *p = arg;
	char line[3000];
	size_t i;

	for (i = 0; i < p->n; i++) {
		pthread_mutex_lock(p->order);
		snprintf(line, sizeof(line), "%lu %0*d\n",
			 (unsigned long)(*p->next)++, (int)(i % 2500), 0);
		ck_assert_int_eq(jsonrpc_out_put(p->o, line, strlen(line)), 0);
		pthread_mutex_unlock(p->order);
	}
	return NULL;
}

START_TEST(test_out_in_order)
{
	struct jsonrpc_out *o;
	struct reader rd = { 4000, 0, 0 };
	struct putter p[2];
	pthread_mutex_t order = PTHREAD_MUTEX_INITIALIZER;
	pthread_t r, t[2];
	size_t next = 0;
	int i;

	ck_assert_int_eq(jsonrpc_out_new(&o, fds[1], (size_t)64 << 20, NULL,
					 NULL), 0);
	for (i = 0; i < 2; i++) {
		p[i].o = o;
		p[i].order = &order;
		p[i].next = &next;
		p[i].n = 2000;
		ck_assert_int_eq(pthread_create(&t[i], NULL, put_lines,
						&p[i]), 0);
	}
	ck_assert_int_eq(pthread_create(&r, NULL, read_lines, &rd), 0);
	for (i = 0; i < 2; i++)
		pthread_join(t[i], NULL);
	jsonrpc_out_flush(o, 20000);
	pthread_join(r, NULL);
	ck_assert_uint_eq(rd.got, 4000);
	ck_assert(rd.in_order);
	ck_assert_int_eq(jsonrpc_out_overflowed(o), 0);
	jsonrpc_out_free(o);
}
END_TEST

static int overflows;

static void on_overflow(void *ctx)
{
	__atomic_add_fetch((int *)ctx, 1, __ATOMIC_SEQ_CST);
}

/* Nobody reads: putting never waits; past the bound, the client is gone. */
START_TEST(test_out_nobody_reads)
{
	struct jsonrpc_out *o;
	char line[1024];
	double t0 = now_s();
	size_t i, dropped = 0;

	overflows = 0;
	memset(line, 'x', sizeof(line) - 1);
	line[sizeof(line) - 1] = '\n';
	ck_assert_int_eq(jsonrpc_out_new(&o, fds[1], 256 << 10, on_overflow,
					 &overflows), 0);
	/* the pipe (64 KiB) fills, then the queue (256 KiB), then more */
	for (i = 0; i < 2000; i++)
		dropped += jsonrpc_out_put(o, line, sizeof(line)) < 0;
	ck_assert_int_eq(__atomic_load_n(&overflows, __ATOMIC_SEQ_CST), 1);
	ck_assert_int_eq(jsonrpc_out_overflowed(o), 1);
	ck_assert_uint_gt(dropped, 1000);
	jsonrpc_out_flush(o, 10000);	/* gone: returns at once */
	jsonrpc_out_free(o);		/* never hangs on the full pipe */
	ck_assert(now_s() - t0 < 5);
}
END_TEST

/* A client that closed its end: EPIPE, everything dropped, no hang. */
START_TEST(test_out_client_gone)
{
	struct jsonrpc_out *o;
	struct sigaction sa, old;
	double t0 = now_s();
	int i;

	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = SIG_IGN;
	sigaction(SIGPIPE, &sa, &old);
	ck_assert_int_eq(jsonrpc_out_new(&o, fds[1], 1 << 20, NULL, NULL), 0);
	close(fds[0]);
	fds[0] = open("/dev/null", O_RDONLY);
	for (i = 0; i < 100; i++)
		jsonrpc_out_put(o, "{}\n", 3);
	jsonrpc_out_flush(o, 10000);
	jsonrpc_out_free(o);
	sigaction(SIGPIPE, &old, NULL);
	ck_assert(now_s() - t0 < 5);
}
END_TEST

Suite *jsonrpc_suite(void)
{
	Suite *s = suite_create("jsonrpc");
	TCase *tc = tcase_create("out");

	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_set_timeout(tc, 60);
	tcase_add_test(tc, test_out_in_order);
	tcase_add_test(tc, test_out_nobody_reads);
	tcase_add_test(tc, test_out_client_gone);
	suite_add_tcase(s, tc);
	return s;
}
