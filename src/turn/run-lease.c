/*
 * src/turn/run-lease.c - the lease on a running turn's claim.
 *
 * A claim (run-commit.c) names its process, but a process in another
 * container, on another host or in another PID namespace cannot be
 * looked at, and one that was killed but never reaped still has its pid.
 * So the claim is also a lease: it records when it was last renewed and
 * for how long it holds (turn.lease), and a thread of the process that
 * runs the turn renews it, in a short write of its own, a few times per
 * lease for as long as the turn runs: through git, retrieval, the HTTP
 * call and its retries, whatever the main thread is blocked in. Once a
 * lease lapses, any writer takes the claim over and records the turn as
 * failed (running.c, aptix__claim_alive()).
 *
 * The thread blocks every signal, so that they reach the main thread as
 * before, and touches only the running table's record of its own turn:
 * once that record is gone (released, or taken over) it stops.
 */
#include "util/common.h"
#include "repo/repo.h"
#include "turn/run-int.h"
#include "repo/running.h"
#include "util/cjson.h"
#include "aptix/sys/claims_backend.h"
#include <pthread.h>
#include <signal.h>
#include <time.h>

/* Renewals per lease: a lease survives a few missed ones. */
#define RENEWALS_PER_LEASE 4

struct aptix__lease {
	pthread_t thread;
	pthread_mutex_t lock;
	pthread_cond_t cond;
	int stop;
	aptix_repo *repo;
	char conv[APTIX_CONV_MAXLEN + 1];
	char hex[APTIX_OID_HEXSZ + 1];	/* the pending turn's id */
	int64_t interval_ms;
};

struct renew {
	const struct aptix__lease *l;
	int gone;		/* the record is no longer ours */
};

/* A lease renewed: a compare-and-swap of the claim's record. */
static int renew_fn(aptix_backend_txn *tx, void *payload)
{
	struct renew *rn = payload;
	aptix_claims_backend *cl = tx->backend->claims;
	aptix_buf cur = APTIX_BUF_INIT;
	json_t *o = NULL;
	char *text = NULL;
	int r;

	r = cl->lookup(&cur, cl, tx, rn->l->conv);
	if (r == APTIX_ENOTFOUND || (r == 0 && !strstr(cur.ptr, rn->l->hex))) {
		rn->gone = 1;
		r = APTIX_ITEROVER;	/* nothing to write */
		goto done;
	}
	if (r < 0)
		goto done;
	if (!(o = json_loadb(cur.ptr, cur.len, 0, NULL)) ||
	    json_object_set_new(o, "renewed",
				json_integer(aptix__wall_ms())) < 0 ||
	    !(text = json_dumps(o, JSON_COMPACT | JSON_SORT_KEYS))) {
		r = APTIX_ERROR;
		goto done;
	}
	r = cl->replace(cl, tx, rn->l->conv, cur.ptr, text);
done:
	free(text);
	json_decref(o);
	aptix_buf_release(&cur);
	return r;
}

static void *lease_thread(void *arg)
{
	struct aptix__lease *l = arg;
	struct renew rn = { l, 0 };
	struct timespec until;
	int64_t at;
	int r;

	pthread_mutex_lock(&l->lock);
	while (!l->stop && !rn.gone) {
		at = aptix__wall_ms() + l->interval_ms;
		until.tv_sec = (time_t)(at / 1000);
		until.tv_nsec = (long)(at % 1000) * 1000000;
		while (!l->stop && pthread_cond_timedwait(&l->cond, &l->lock,
							  &until) == 0)
			;
		if (l->stop)
			break;
		pthread_mutex_unlock(&l->lock);
		/* a failed renewal is tried again at the next one */
		r = l->repo->backend->transaction(l->repo->backend, renew_fn,
						  &rn);
		(void)r;
		aptix_error_clear();
		pthread_mutex_lock(&l->lock);
	}
	pthread_mutex_unlock(&l->lock);
	return NULL;
}

int aptix__lease_start(struct aptix__lease **out, aptix_repo *repo,
		       const char *conv, const aptix_oid *turn,
		       int64_t lease_ms)
{
	struct aptix__lease *l;
	sigset_t all, old;
	int r;

	*out = NULL;
	if (!(l = aptix__calloc(1, sizeof(*l))))
		return APTIX_ERROR;
	l->repo = repo;
	snprintf(l->conv, sizeof(l->conv), "%s", conv);
	aptix_oid_tostr(l->hex, turn);
	l->interval_ms = lease_ms / RENEWALS_PER_LEASE;
	if (l->interval_ms < 100)
		l->interval_ms = 100;
	pthread_mutex_init(&l->lock, NULL);
	pthread_cond_init(&l->cond, NULL);
	sigfillset(&all);
	pthread_sigmask(SIG_SETMASK, &all, &old);
	r = pthread_create(&l->thread, NULL, lease_thread, l);
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	if (r) {
		pthread_mutex_destroy(&l->lock);
		pthread_cond_destroy(&l->cond);
		free(l);
		errno = r;
		aptix_error_set_os("cannot start the thread that renews the "
				   "claim");
		return APTIX_ERROR;
	}
	*out = l;
	return 0;
}

void aptix__lease_stop(struct aptix__lease *l)
{
	if (!l)
		return;
	pthread_mutex_lock(&l->lock);
	l->stop = 1;
	pthread_cond_signal(&l->cond);
	pthread_mutex_unlock(&l->lock);
	pthread_join(l->thread, NULL);
	pthread_mutex_destroy(&l->lock);
	pthread_cond_destroy(&l->cond);
	free(l);
}
