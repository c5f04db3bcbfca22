/*
 * src/repo/running.c - the running table: which conversation has a turn in
 * flight, in which process, and whether that process still lives.
 * A record is JSON: {"host","parent","pid","since","start","turn"}, where
 * start is the process start time (ticks since boot, from /proc), so
 * that a reused pid is not taken for the original process.
 */
#include "util/common.h"
#include "repo/repo.h"
#include "repo/running.h"
#include "util/cjson.h"
#include "aptix/run.h"
#include "aptix/refs.h"
#include "aptix/sys/claims_backend.h"
#include <signal.h>
#include <time.h>
#include <unistd.h>

/* --- Liveness of the process that runs a turn ------------------------ */

/*
 * State (R, S, Z...) and start time (clock ticks since boot) of a
 * process, from /proc/<pid>/stat. 0 when it cannot be read.
 */
static int proc_stat(long pid, char *state, unsigned long long *start)
{
	char path[64], buf[1024], *p;
	FILE *fp;
	size_t n;
	int field;

	*state = '?';
	*start = 0;
	snprintf(path, sizeof(path), "/proc/%ld/stat", pid);
	if (!(fp = fopen(path, "r")))
		return 0;
	n = fread(buf, 1, sizeof(buf) - 1, fp);
	fclose(fp);
	buf[n] = '\0';
	/* the command name may hold spaces: skip past its ')' */
	if (!(p = strrchr(buf, ')')) || p[1] != ' ' || !p[2])
		return 0;
	*state = p[2];
	for (field = 2; *p && field < 22; p++)
		if (*p == ' ')
			field++;
	if (field == 22)
		*start = strtoull(p, NULL, 10);
	return 1;
}

unsigned long long aptix__proc_starttime(long pid)
{
	unsigned long long start;
	char state;

	proc_stat(pid, &state, &start);
	return start;
}

void aptix__host_name(char out[65])
{
	if (gethostname(out, 64) < 0)
		snprintf(out, 65, "unknown");
	out[64] = '\0';
}

int64_t aptix__wall_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_REALTIME, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static int dead_because(char *why, size_t len, const char *fmt, ...)
	APTIX_FORMAT(3, 4);

static int dead_because(char *why, size_t len, const char *fmt, ...)
{
	va_list ap;

	if (why && len) {
		va_start(ap, fmt);
		vsnprintf(why, len, fmt, ap);
		va_end(ap);
	}
	return 0;
}

/*
 * A claim is a lease: its holder renews it while the turn runs (see
 * run-lease.c). It is gone when the lease lapsed, whatever the host:
 * that is all one can know of a process in another container or on
 * another machine. On this host the process is also looked at: dead, a
 * zombie (killed but never reaped: its parent does not wait) or its pid
 * reused (another start time) frees the claim at once. A record of an
 * aptix that did not renew counts from when the turn began, and only
 * for another host.
 */
int aptix__claim_alive(const struct running_rec *rr, int64_t now,
		       char *why, size_t whylen)
{
	int64_t lease = rr->lease > 0 ? rr->lease : APTIX_LEASE_DEFAULT_MS;
	int64_t last = rr->renewed ? rr->renewed : rr->since;
	unsigned long long start;
	char me[65], state;

	aptix__host_name(me);
	if (strcmp(me, rr->host) || rr->renewed) {
		if (now - last > lease)
			return dead_because(why, whylen, "stopped renewing "
					    "its claim %lld s ago (lease "
					    "lapsed)",
					    (long long)((now - last) / 1000));
		if (strcmp(me, rr->host))
			return 1;	/* another host: the lease says */
	}
	if (rr->pid <= 0)
		return dead_because(why, whylen, "is unknown");
	if (kill((pid_t)rr->pid, 0) < 0 && errno == ESRCH)
		return dead_because(why, whylen, "died");
	if (proc_stat(rr->pid, &state, &start) &&
	    (state == 'Z' || state == 'X'))
		return dead_because(why, whylen, "was killed but never reaped "
				    "(a zombie)");
	if (rr->start && start != rr->start)
		return dead_because(why, whylen, "died");	/* pid reused */
	return 1;
}

void aptix__running_rec_release(struct running_rec *rr)
{
	free(rr->pending);
	rr->pending = NULL;
}

int aptix__parse_running(struct running_rec *rr, const char *data,
			 size_t len)
{
	json_t *o = aptix_json_parse(data, len, "running turn record");
	json_t *v;

	memset(rr, 0, sizeof(*rr));
	if (!o)
		return APTIX_ECORRUPT;
	rr->pid = (long)json_integer_value(json_object_get(o, "pid"));
	rr->start = (unsigned long long)json_integer_value(
		json_object_get(o, "start"));
	rr->since = json_integer_value(json_object_get(o, "since"));
	rr->renewed = json_integer_value(json_object_get(o, "renewed"));
	rr->lease = json_integer_value(json_object_get(o, "lease"));
	v = json_object_get(o, "host");
	snprintf(rr->host, sizeof(rr->host), "%s",
		 json_is_string(v) ? json_string_value(v) : "");
	v = json_object_get(o, "turn");
	if (!json_is_string(v) ||
	    aptix_oid_fromstr(&rr->turn, json_string_value(v)) < 0) {
		json_decref(o);
		aptix_error_set(APTIX_ERROR_REPOSITORY,
				"running turn record is corrupt");
		return APTIX_ECORRUPT;
	}
	v = json_object_get(o, "parent");
	if (json_is_string(v) &&
	    aptix_oid_fromstr(&rr->parent, json_string_value(v)) == 0)
		rr->has_parent = 1;
	v = json_object_get(o, "instruction");
	if (json_is_string(v))
		aptix_oid_fromstr(&rr->instruction, json_string_value(v));
	v = json_object_get(o, "pending");
	if (json_is_string(v) &&
	    !(rr->pending = aptix__strdup(json_string_value(v)))) {
		json_decref(o);
		return APTIX_ERROR;
	}
	json_decref(o);
	return 0;
}

int aptix_run__check_claim(const char *conv, const char *record, size_t len)
{
	struct running_rec rr;
	char when[32];

	if (aptix__parse_running(&rr, record, len) < 0)
		return APTIX_EEXISTS;	/* unreadable: recovery clears it */
	aptix__running_rec_release(&rr);
	if (!aptix__claim_alive(&rr, aptix__wall_ms(), NULL, 0))
		return APTIX_EEXISTS;
	aptix_error_set(APTIX_ERROR_REPOSITORY, "conversation '%s' is busy: "
			"turn %.12s is running (pid %ld on %s, since %s)",
			conv, aptix_oid_hex(&rr.turn), rr.pid, rr.host,
			aptix_time_fmt(when, rr.since));
	return APTIX_ELOCKED;
}

struct running_walk {
	aptix_running_cb cb;
	void *payload;
};

static int running_walk_cb(const void *key, size_t klen, const void *val,
			   size_t vlen, void *payload)
{
	struct running_walk *rw = payload;
	aptix_running_info info;
	struct running_rec rr;

	if (aptix__parse_running(&rr, val, vlen) < 0 ||
	    klen > APTIX_CONV_MAXLEN)
		return 0;
	memset(&info, 0, sizeof(info));
	memcpy(info.conversation, key, klen);
	info.turn = rr.turn;
	info.instruction = rr.instruction;
	aptix__running_rec_release(&rr);
	info.parent = rr.parent;
	info.has_parent = rr.has_parent;
	info.pid = rr.pid;
	info.since_ms = rr.since;
	snprintf(info.host, sizeof(info.host), "%s", rr.host);
	info.renewed_ms = rr.renewed;
	info.lease_ms = rr.lease > 0 ? rr.lease : APTIX_LEASE_DEFAULT_MS;
	info.alive = aptix__claim_alive(&rr, aptix__wall_ms(), info.why,
					sizeof(info.why));
	return rw->cb(&info, rw->payload);
}

int aptix_run_foreach_running(aptix_repo *repo, aptix_running_cb cb,
			      void *payload)
{
	struct running_walk rw = { cb, payload };

	aptix_claims_backend *cl = repo->backend->claims;

	return cl->iterate(cl, running_walk_cb, &rw);
}
