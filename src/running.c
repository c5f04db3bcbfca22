/*
 * src/running.c - the running table: which conversation has a turn in
 * flight, in which process, and whether that process still lives.
 * A record is JSON: {"host","parent","pid","since","start","turn"}, where
 * start is the process start time (ticks since boot, from /proc), so
 * that a reused pid is not taken for the original process.
 */
#include "common.h"
#include "repo.h"
#include "running.h"
#include "cjson.h"
#include "aptix/run.h"
#include "aptix/refs.h"
#include <signal.h>
#include <unistd.h>

/* --- Liveness of the process that runs a turn ------------------------ */

/* Start time of a process in clock ticks since boot (0 if unknown). */
unsigned long long aptix__proc_starttime(long pid)
{
	char path[64], buf[1024], *p;
	unsigned long long v = 0;
	FILE *fp;
	size_t n;
	int field;

	snprintf(path, sizeof(path), "/proc/%ld/stat", pid);
	if (!(fp = fopen(path, "r")))
		return 0;
	n = fread(buf, 1, sizeof(buf) - 1, fp);
	fclose(fp);
	buf[n] = '\0';
	/* the command name may hold spaces: skip past its ')' */
	if (!(p = strrchr(buf, ')')))
		return 0;
	for (field = 2; *p && field < 22; p++)
		if (*p == ' ')
			field++;
	if (field == 22)
		v = strtoull(p, NULL, 10);
	return v;
}

void aptix__host_name(char out[65])
{
	if (gethostname(out, 64) < 0)
		snprintf(out, 65, "unknown");
	out[64] = '\0';
}

int aptix__process_alive(long pid, unsigned long long start,
			 const char *host)
{
	char me[65];

	aptix__host_name(me);
	if (strcmp(me, host))
		return 1;	/* another machine: cannot tell, assume so */
	if (pid <= 0)
		return 0;
	if (kill((pid_t)pid, 0) < 0 && errno == ESRCH)
		return 0;
	if (start && aptix__proc_starttime(pid) != start)
		return 0;	/* the pid was reused */
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
	if (!aptix__process_alive(rr.pid, rr.start, rr.host))
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
	info.alive = aptix__process_alive(rr.pid, rr.start, rr.host);
	return rw->cb(&info, rw->payload);
}

int aptix_run_foreach_running(aptix_repo *repo, aptix_running_cb cb,
			      void *payload)
{
	struct running_walk rw = { cb, payload };

	return repo->store->iter(repo->store, APTIX_TABLE_RUNNING, NULL, 0,
				 running_walk_cb, &rw);
}
