/*
 * src/running.h - the running table's records (internal; running.c).
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
	char *pending;		/* the pending turn's canonical bytes */
};

void aptix__running_rec_release(struct running_rec *rr);

unsigned long long aptix__proc_starttime(long pid);
void aptix__host_name(char out[65]);
int aptix__process_alive(long pid, unsigned long long start,
			 const char *host);
int aptix__parse_running(struct running_rec *rr, const char *data,
			 size_t len);

#endif
