/*
 * check_threads.c - libaptix in one long-running, multi-threaded
 * process: 8 threads run turns through the staged API, each on its own
 * conversation, against the stand-in, on one shared aptix_repo, while
 * reader threads walk the history (log and show equivalents) and a
 * second handle on the same store is opened and closed. Built and run
 * under ThreadSanitizer by `make check` (make SANITIZE=thread).
 */
#ifndef _POSIX_C_SOURCE
# define _POSIX_C_SOURCE 200809L
#endif

#include <check.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "aptix.h"
#include "unit.h"

Suite *threads_suite(void);

#define WRITERS 8
#define READERS 3
#define TURNS 4

static struct unit_standin srv;
static int have_server;
static char *tmpdir;
static aptix_repo *repo;
static volatile int writers_done;
static pthread_mutex_t done_lock = PTHREAD_MUTEX_INITIALIZER;

static void setup(void)
{
	aptix_error_clear();
	unsetenv("APTIX_DIR");
	unsetenv("APTIX_TEST_DATE");
	tmpdir = unit_mkdtemp();
	ck_assert_int_eq(aptix_repo_init(&repo, tmpdir, NULL), 0);
	have_server = unit_standin_start_openai(&srv, "check_threads");
}

static void teardown(void)
{
	unit_standin_stop(&srv);
	have_server = 0;
	aptix_repo_free(repo);
	repo = NULL;
	unit_rmtree(tmpdir);
	free(tmpdir);
}

struct writer {
	int n;
	int ok;			/* turns completed */
	char why[256];		/* the first failure */
};

static int stream_cb(const char *text, size_t len, void *payload)
{
	size_t *total = payload;

	(void)text;
	*total += len;
	return 0;
}

static void *writer_main(void *arg)
{
	struct writer *w = arg;
	char conv[32], text[64];
	size_t streamed = 0;
	int i, r;

	snprintf(conv, sizeof(conv), "thread-%d", w->n);
	for (i = 0; i < TURNS; i++) {
		aptix_run_options o = APTIX_RUN_OPTIONS_INIT;
		aptix_run *run = NULL;

		snprintf(text, sizeof(text), "turn %d of thread %d", i, w->n);
		o.conversation = conv;
		o.create = 1;
		o.instruction = text;
		o.instruction_len = strlen(text);
		o.http.base_url = srv.base;
		o.http.api_key = UNIT_API_KEY;
		o.http.on_delta = stream_cb;
		o.http.payload = &streamed;
		if ((r = aptix_run_new(&run, repo, &o)) == 0 &&
		    (r = aptix_run_begin(run)) == 0 &&
		    (r = aptix_run_set_context(run, NULL, NULL)) == 0 &&
		    (r = aptix_run_request(run)) == 0 &&
		    (r = aptix_run_send(run)) == 0)
			r = aptix_run_finish(run);
		if (r == 0)
			w->ok++;
		else if (!w->why[0])
			snprintf(w->why, sizeof(w->why), "turn %d: %s", i,
				 aptix_error_last()->message);
		aptix_run_free(run);
	}
	if (!streamed && !w->why[0])
		snprintf(w->why, sizeof(w->why), "nothing streamed");
	return NULL;
}

struct reader {
	long walks;
	char why[256];
};

static int recent_cb(const aptix_session_info *si, void *payload)
{
	long *n = payload;

	(void)si;
	(*n)++;
	return 0;
}

/* What log and show do: the recent sessions, then each head's turn. */
static int read_once(void)
{
	aptix_session s;
	aptix_turn t;
	aptix_buf b = APTIX_BUF_INIT;
	aptix_oid h;
	long n = 0;
	char ref[64];
	int i, r;

	if ((r = aptix_index_foreach_recent(repo, recent_cb, &n)) < 0)
		return r;
	for (i = 0; i < WRITERS; i++) {
		snprintf(ref, sizeof(ref), "refs/conversations/thread-%d", i);
		r = aptix_ref_resolve(&h, NULL, repo, ref);
		if (r == APTIX_ENOTFOUND) {
			r = 0;	/* not born yet */
			continue;
		}
		if (r < 0)
			return r;
		if ((r = aptix_session_lookup(&s, repo, &h)) == 0) {
			if ((r = aptix_turn_lookup(&t, repo, &s.turn)) == 0)
				r = aptix_blob_lookup(&b, repo, &t.answer);
			aptix_turn_release(&t);
		}
		aptix_session_release(&s);
		if (r < 0)
			break;
	}
	aptix_buf_release(&b);
	return r;
}

static int done(void)
{
	int d;

	pthread_mutex_lock(&done_lock);
	d = writers_done;
	pthread_mutex_unlock(&done_lock);
	return d;
}

static void *reader_main(void *arg)
{
	struct reader *rd = arg;

	while (!done() && !rd->why[0]) {
		if (read_once() < 0)
			snprintf(rd->why, sizeof(rd->why), "%s",
				 aptix_error_last()->message);
		rd->walks++;
	}
	return NULL;
}

/* Another handle on the same store, opened and closed meanwhile. */
static void *opener_main(void *arg)
{
	struct reader *rd = arg;
	aptix_repo *other;
	aptix_oid h;
	char path[4096];

	snprintf(path, sizeof(path), "%s/.aptix", tmpdir);
	while (!done() && !rd->why[0]) {
		if (aptix_repo_open(&other, path) < 0) {
			snprintf(rd->why, sizeof(rd->why), "open: %s",
				 aptix_error_last()->message);
			break;
		}
		if (aptix_ref_resolve(&h, NULL, other, "HEAD") < 0 &&
		    aptix_ref_resolve(&h, NULL, other,
				      "refs/conversations/thread-0") ==
		    APTIX_ERROR)
			snprintf(rd->why, sizeof(rd->why), "resolve: %s",
				 aptix_error_last()->message);
		aptix_repo_free(other);
		rd->walks++;
	}
	return NULL;
}

START_TEST(test_threads)
{
	pthread_t wt[WRITERS], rt[READERS + 1];
	struct writer w[WRITERS];
	struct reader rd[READERS + 1];
	aptix_oid h;
	aptix_session s;
	char ref[64];
	int i, n;

	if (!have_server)
		return;
	memset(w, 0, sizeof(w));
	memset(rd, 0, sizeof(rd));
	writers_done = 0;
	for (i = 0; i < READERS; i++)
		ck_assert_int_eq(pthread_create(&rt[i], NULL, reader_main,
						&rd[i]), 0);
	ck_assert_int_eq(pthread_create(&rt[READERS], NULL, opener_main,
					&rd[READERS]), 0);
	for (i = 0; i < WRITERS; i++) {
		w[i].n = i;
		ck_assert_int_eq(pthread_create(&wt[i], NULL, writer_main,
						&w[i]), 0);
	}
	for (i = 0; i < WRITERS; i++)
		pthread_join(wt[i], NULL);
	pthread_mutex_lock(&done_lock);
	writers_done = 1;
	pthread_mutex_unlock(&done_lock);
	for (i = 0; i <= READERS; i++)
		pthread_join(rt[i], NULL);

	for (i = 0; i < WRITERS; i++)
		ck_assert_msg(w[i].ok == TURNS, "writer %d: %d of %d turns: %s",
			      i, w[i].ok, TURNS, w[i].why);
	for (i = 0; i <= READERS; i++)
		ck_assert_msg(!rd[i].why[0], "reader %d: %s", i, rd[i].why);
	/* each conversation is a chain of TURNS committed snapshots */
	for (i = 0; i < WRITERS; i++) {
		snprintf(ref, sizeof(ref), "refs/conversations/thread-%d", i);
		ck_assert_int_eq(aptix_ref_resolve(&h, NULL, repo, ref), 0);
		for (n = 0;; n++) {
			int more;

			ck_assert_int_eq(aptix_session_lookup(&s, repo, &h), 0);
			ck_assert_int_eq(s.status, APTIX_SESSION_COMMITTED);
			more = s.has_parent;
			h = s.parent;
			aptix_session_release(&s);
			if (!more)
				break;
		}
		ck_assert_int_eq(n + 1, TURNS);
	}
	ck_assert_int_eq(unit_standin_requests(&srv, "responses"),
			 WRITERS * TURNS);
}
END_TEST

Suite *threads_suite(void)
{
	Suite *s = suite_create("threads");
	TCase *tc = tcase_create("turns");

	tcase_set_timeout(tc, 300);
	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_add_test(tc, test_threads);
	suite_add_tcase(s, tc);
	return s;
}
