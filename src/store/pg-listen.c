/*
 * src/store/pg-listen.c - the listener of a PostgreSQL store
 * (aptix/sys/backend.h): LISTEN on the channel of the store's org, then
 * the names of the refs that other sessions' commits announce.
 *
 * The announcement is a NOTIFY that the trigger aptix_refs_notify
 * (contrib/postgresql/schema.sql) sends in the transaction of every
 * change of aptix_refs, so it is delivered when, and only when, that
 * transaction commits. Its payload is the ref's name, never a value:
 * the listener reads the ref again through its own transaction, where
 * row-level security decides what it may see. Each org has its own
 * channel, so that a commit of one org never wakes another's listener,
 * and each user of an org one more, for the refs of the user's private
 * conversations (their ids are for the user alone): the listener
 * listens on both.
 *
 * The listener holds a connection of its own for as long as it lives
 * (LISTEN is a property of the session, which a pooler in transaction
 * mode would not keep: point a listener at the server, not a pooler).
 */
#include "util/common.h"
#include "store/pg.h"
#include "aptix/oid.h"
#include <errno.h>
#include <poll.h>
#include <time.h>
#include <libpq-fe.h>

struct listener {
	aptix_backend_listener parent;
	PGconn *conn;
	struct pg_pool *pool;
};

void aptix__pg_channel(char out[APTIX_PG_CHANNEL_MAX], const char *org)
{
	aptix_oid h;
	const char *hex;

	aptix_sha256(&h, org, strlen(org));
	hex = aptix_oid_hex(&h);
	snprintf(out, APTIX_PG_CHANNEL_MAX, "aptix_%.32s", hex);
}

void aptix__pg_user_channel(char out[APTIX_PG_CHANNEL_MAX], const char *org,
			    const char *user)
{
	aptix_buf s = APTIX_BUF_INIT;

	aptix_buf_printf(&s, "%s\n%s", org, user);
	aptix__pg_channel(out, aptix_buf_oom(&s) ? "" : s.ptr);
	aptix_buf_release(&s);
}

static int lost(struct listener *l)
{
	aptix_buf msg = APTIX_BUF_INIT;

	aptix_buf_puts(&msg, PQerrorMessage(l->conn));
	aptix__pg_scrub(&msg, NULL);
	aptix_error_set(APTIX_ERROR_REPOSITORY, "the PostgreSQL store's "
			"announcements stopped: %s", msg.len ? msg.ptr :
			"the connection was lost");
	aptix_buf_release(&msg);
	return APTIX_ENET;
}

/* The notifications that came: their payloads to cb. */
static int drain(struct listener *l, int (*cb)(const char *, void *),
		 void *payload)
{
	PGnotify *n;
	int count = 0, r = 0;

	while ((n = PQnotifies(l->conn))) {
		const char *ref = n->extra;

		/* HEAD rows: the user's own is HEAD; others' are not said */
		if (ref && !strcmp(ref, aptix__pg_pool_head(l->pool)))
			ref = "HEAD";
		else if (ref && !strncmp(ref, "HEAD@{", 6))
			ref = NULL;
		if (r == 0 && ref && *ref) {
			r = cb(ref, payload);
			count++;
		}
		PQfreemem(n);
	}
	return r < 0 ? r : count;
}

static long now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (long)ts.tv_sec * 1000L + ts.tv_nsec / 1000000L;
}

static int listener_wait(aptix_backend_listener *base, int timeout_ms,
			 int (*cb)(const char *ref, void *payload),
			 void *payload)
{
	struct listener *l = (struct listener *)base;
	long until = timeout_ms < 0 ? -1 : now_ms() + timeout_ms;
	struct pollfd pfd;
	int r, left;

	for (;;) {
		if (!PQconsumeInput(l->conn) ||
		    PQstatus(l->conn) != CONNECTION_OK)
			return lost(l);
		if ((r = drain(l, cb, payload)) != 0)
			return r;
		left = until < 0 ? -1 : (int)(until - now_ms());
		if (until >= 0 && left <= 0)
			return 0;
		pfd.fd = PQsocket(l->conn);
		pfd.events = POLLIN;
		pfd.revents = 0;
		if (pfd.fd < 0)
			return lost(l);
		if (poll(&pfd, 1, left) < 0 && errno != EINTR) {
			aptix_error_set(APTIX_ERROR_OS, "poll: %s",
					strerror(errno));
			return APTIX_ERROR;
		}
	}
}

static void listener_free(aptix_backend_listener *base)
{
	struct listener *l = (struct listener *)base;

	if (!l)
		return;
	PQfinish(l->conn);
	free(l);
}

int aptix__pg_listen(aptix_backend_listener **out, struct pg_pool *pool)
{
	struct listener *l = aptix__calloc(1, sizeof(*l));
	char chan[APTIX_PG_CHANNEL_MAX];
	aptix_buf sql = APTIX_BUF_INIT;
	PGresult *res = NULL;
	int r;

	*out = NULL;
	if (!l)
		return APTIX_ERROR;
	l->parent.wait = listener_wait;
	l->parent.free = listener_free;
	l->pool = pool;
	if ((r = aptix__pg_connect(&l->conn, pool)) < 0)
		goto fail;
	aptix__pg_channel(chan, aptix__pg_pool_org(pool));
	/* a channel is "aptix_" and hex digits: a plain identifier */
	aptix_buf_printf(&sql, "LISTEN %s", chan);
	aptix__pg_user_channel(chan, aptix__pg_pool_org(pool),
			       aptix__pg_pool_user(pool));
	aptix_buf_printf(&sql, "; LISTEN %s", chan);
	res = aptix_buf_oom(&sql) ? NULL : PQexec(l->conn, sql.ptr);
	if (!res || PQresultStatus(res) != PGRES_COMMAND_OK) {
		r = lost(l);
		goto fail;
	}
	PQclear(res);
	aptix_buf_release(&sql);
	*out = &l->parent;
	return 0;
fail:
	PQclear(res);
	aptix_buf_release(&sql);
	listener_free(&l->parent);
	return r < 0 ? r : APTIX_ERROR;
}
