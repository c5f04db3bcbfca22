/*
 * src/repo/running.h - the running table's records (internal; running.c).
 */
#ifndef APTIX_RUNNING_H
#define APTIX_RUNNING_H

#include "aptix/oid.h"

struct running_rec {
	long pid;
	unsigned long long start;
	char host[65];
	aptix_oid turn, parent, instruction;
	int has_parent;
	int64_t since;
	int64_t renewed;	/* wall clock ms of the last renewal (0: none,
				   a record of an aptix that did not renew) */
	int64_t lease;		/* ms the claim holds unrenewed (0: default) */
	char *pending;		/* the pending turn's canonical bytes */
};

/* The lease of records that do not say theirs. */
#define APTIX_LEASE_DEFAULT_MS (2 * 60 * 1000)

void aptix__running_rec_release(struct running_rec *rr);

unsigned long long aptix__proc_starttime(long pid);
void aptix__host_name(char out[65]);
/* The wall clock in ms (APTIX_TEST_DATE does not stop it). */
int64_t aptix__wall_ms(void);
/*
 * Whether the holder of a claim still runs its turn: 1, or 0 with why
 * (a phrase: "died", "was killed but never reaped (a zombie)",
 * "stopped renewing its claim 300 s ago (lease lapsed)") when why is
 * not NULL.
 */
int aptix__claim_alive(const struct running_rec *rr, int64_t now,
		       char *why, size_t whylen);
int aptix__parse_running(struct running_rec *rr, const char *data,
			 size_t len);

#endif
