/*
 * src/store/pg-conn.c - the connections of the PostgreSQL backend
 * (backend-pg.c): a small pool shared by the threads of a process, one
 * statement run inside a transaction, transactions retried after a
 * serialization failure, and libpq's messages scrubbed of credentials.
 *
 * Every transaction starts with
 *
 *	BEGIN ISOLATION LEVEL REPEATABLE READ;
 *	SELECT set_config('aptix.org', '<org>', true),
 *	       set_config('aptix.user', '<user>', true)
 *
 * (set_config(..., true) is SET LOCAL): the row-level security of every
 * table compares a row's org with the first setting, and the owner of
 * a conversation's rows with the second, unless the conversation is
 * shared (contrib/postgresql/schema.sql); a setting local to
 * the transaction survives a pooler that hands the connection to
 * another client between transactions. A read outside a transaction of
 * the caller's runs in a short read-only one of its own.
 *
 * Round trips: BEGIN and the settings wait for the transaction's first
 * statement and go with it in one pipeline (one round trip, not two),
 * and so does COMMIT when the transaction is that one statement
 * (APTIX_PG_ONE: a read or a write outside a transaction of the
 * caller's). Such a statement is one round trip; it was three.
 */
#include "util/common.h"
#include "store/pg.h"
#include <pthread.h>
#include <time.h>
#include <libpq-fe.h>

#define POOL_MAX 4
#define RETRIES 30

struct pg_pool {
	pthread_mutex_t lock;
	PGconn *idle[POOL_MAX];
	size_t nidle;
	char *url;
	char *org;
	char *user;	/* postgresql.user, else the role logged in as */
	char *head;	/* "HEAD@{<user>}": the row of the user's HEAD */
};

/* --- scrubbing ------------------------------------------------------------ */

/* Replace every occurrence of secret (non-empty) in msg by "***". */
static void blank_out(aptix_buf *msg, const char *secret, const char *with)
{
	aptix_buf out = APTIX_BUF_INIT;
	size_t slen = secret ? strlen(secret) : 0;
	const char *p, *hit;

	if (slen < 1 || !strstr(msg->ptr, secret))
		return;
	for (p = msg->ptr; (hit = strstr(p, secret)); p = hit + slen) {
		aptix_buf_put(&out, p, (size_t)(hit - p));
		aptix_buf_puts(&out, with);
	}
	aptix_buf_puts(&out, p);
	if (!aptix_buf_oom(&out))
		aptix_buf_set(msg, out.ptr, out.len);
	aptix_buf_release(&out);
}

/* "password=<anything up to a space or &>" -> "password=***" */
static void blank_password_params(aptix_buf *msg)
{
	static const char key[] = "password=";
	char *p = msg->ptr, *v, *end;

	while ((p = strstr(p, key))) {
		v = p + strlen(key);
		end = v + strcspn(v, " &'\"\n");
		if (end > v) {
			size_t at = (size_t)(v - msg->ptr);
			aptix_buf tail = APTIX_BUF_INIT;

			aptix_buf_puts(&tail, end);
			aptix_buf_truncate(msg, at);
			aptix_buf_puts(msg, "***");
			aptix_buf_put(msg, tail.ptr, tail.len);
			aptix_buf_release(&tail);
			p = msg->ptr + at + 3;
		} else {
			p = v;
		}
	}
}

/* The password of a URL's userinfo ("scheme://user:pw@host"): blanked. */
static void blank_userinfo(aptix_buf *msg)
{
	char *p = msg->ptr, *colon, *at, *end;

	while ((p = strstr(p, "://"))) {
		p += 3;
		end = p + strcspn(p, "/?# \n'\"");
		at = memchr(p, '@', (size_t)(end - p));
		colon = memchr(p, ':', at ? (size_t)(at - p) : 0);
		if (at && colon && at > colon + 1)
			memset(colon + 1, '*', (size_t)(at - colon - 1));
	}
}

void aptix__pg_scrub(aptix_buf *msg, const char *url)
{
	PQconninfoOption *opts, *o;
	char *err = NULL;
	size_t i;

	if (url && (opts = PQconninfoParse(url, &err))) {
		for (o = opts; o->keyword; o++)
			if (!strcmp(o->keyword, "password"))
				blank_out(msg, o->val, "***");
		PQconninfoFree(opts);
	}
	PQfreemem(err);
	blank_out(msg, getenv("PGPASSWORD"), "***");
	blank_password_params(msg);
	blank_userinfo(msg);
	/* libpq's messages end in a newline and may hold several lines */
	while (msg->len && (msg->ptr[msg->len - 1] == '\n' ||
			    msg->ptr[msg->len - 1] == ' '))
		aptix_buf_truncate(msg, msg->len - 1);
	for (i = 0; i < msg->len; i++)
		if (msg->ptr[i] == '\n' || msg->ptr[i] == '\t')
			msg->ptr[i] = ' ';
}

/* The error of conn (or of res), scrubbed, after what. */
static int pg_fail(struct pg_pool *pool, PGconn *conn, const PGresult *res,
		   const char *what)
{
	aptix_buf msg = APTIX_BUF_INIT;
	const char *m = res ? PQresultErrorMessage(res) : NULL;

	if (!m || !*m)
		m = conn ? PQerrorMessage(conn) : "out of memory";
	aptix_buf_puts(&msg, m);
	aptix__pg_scrub(&msg, pool->url);
	aptix_error_set(APTIX_ERROR_REPOSITORY, "%s: %s", what, msg.ptr);
	aptix_buf_release(&msg);
	return conn && PQstatus(conn) == CONNECTION_BAD ? APTIX_ENET :
		APTIX_ERROR;
}

int aptix__pg_check_url(const char *url, int storing)
{
	PQconninfoOption *opts, *o;
	aptix_buf msg = APTIX_BUF_INIT;
	char *err = NULL;
	int r = 0;

	if (!(opts = PQconninfoParse(url, &err))) {
		aptix_buf_puts(&msg, err ? err : "out of memory");
		aptix__pg_scrub(&msg, NULL);
		aptix_error_set(APTIX_ERROR_INVALID, "invalid PostgreSQL URL: "
				"%s", msg.ptr);
		aptix_buf_release(&msg);
		PQfreemem(err);
		return APTIX_EINVALID;
	}
	for (o = opts; o->keyword; o++)
		if (!strcmp(o->keyword, "password") && o->val && *o->val) {
			aptix_error_set(APTIX_ERROR_INVALID, "the PostgreSQL "
					"URL %s a password, in clear in the "
					"store's config: %s; give the password "
					"through ~/.pgpass (PGPASSFILE), a "
					"service file (PGSERVICE) or PGPASSWORD",
					storing ? "holds" : "of the store holds",
					storing ? "nothing was stored" :
					"remove it (postgresql.url)");
			r = APTIX_EINVALID;
		}
	PQconninfoFree(opts);
	return r;
}

/* --- array parameters ------------------------------------------------------ */

void aptix__pg_array_header(aptix_buf *out, size_t n, unsigned elemoid)
{
	unsigned char h[20];

	aptix__put_be32(h, 1);
	aptix__put_be32(h + 4, 0);
	aptix__put_be32(h + 8, elemoid);
	aptix__put_be32(h + 12, (uint32_t)n);
	aptix__put_be32(h + 16, 1);
	aptix_buf_clear(out);
	aptix_buf_put(out, h, sizeof(h));
}

void aptix__pg_array_elem(aptix_buf *out, const void *p, size_t len)
{
	unsigned char w[4];

	aptix__put_be32(w, (uint32_t)len);
	aptix_buf_put(out, w, sizeof(w));
	aptix_buf_put(out, p, len);
}

/* --- the pool --------------------------------------------------------------- */

int aptix__pg_pool_new(struct pg_pool **out, const char *url,
		       const char *org)
{
	struct pg_pool *pool = aptix__calloc(1, sizeof(*pool));

	*out = NULL;
	if (!pool)
		return APTIX_ERROR;
	pthread_mutex_init(&pool->lock, NULL);
	pool->url = aptix__strdup(url);
	pool->org = aptix__strdup(org);
	if (!pool->url || !pool->org) {
		aptix__pg_pool_free(pool);
		return APTIX_ERROR;
	}
	*out = pool;
	return 0;
}

const char *aptix__pg_pool_org(const struct pg_pool *pool)
{
	return pool->org;
}

int aptix__pg_pool_set_user(struct pg_pool *pool, const char *user)
{
	char *u = aptix__strdup(user);

	if (!u)
		return APTIX_ERROR;
	free(pool->user);
	pool->user = u;
	return 0;
}

const char *aptix__pg_pool_user(const struct pg_pool *pool)
{
	return pool->user ? pool->user : "";
}

const char *aptix__pg_pool_head(const struct pg_pool *pool)
{
	return pool->head ? pool->head : "HEAD";
}

void aptix__pg_pool_free(struct pg_pool *pool)
{
	size_t i;

	if (!pool)
		return;
	for (i = 0; i < pool->nidle; i++)
		PQfinish(pool->idle[i]);
	pthread_mutex_destroy(&pool->lock);
	free(pool->url);
	free(pool->org);
	free(pool->user);
	free(pool->head);
	free(pool);
}

int aptix__pg_connect(PGconn **out, struct pg_pool *pool)
{
	static const char *const keys[] = {
		"dbname", "application_name", "connect_timeout", NULL
	};
	const char *vals[] = { pool->url, "aptix", "10", NULL };
	PGconn *c = PQconnectdbParams(keys, vals, 1);
	int r;

	*out = NULL;
	if (!c || PQstatus(c) != CONNECTION_OK) {
		r = pg_fail(pool, c, NULL, "cannot connect to the PostgreSQL "
			    "store");
		PQfinish(c);
		return r < 0 ? APTIX_ENET : r;
	}
	*out = c;
	return 0;
}

static int pool_take(PGconn **out, struct pg_pool *pool)
{
	*out = NULL;
	pthread_mutex_lock(&pool->lock);
	if (pool->nidle)
		*out = pool->idle[--pool->nidle];
	pthread_mutex_unlock(&pool->lock);
	return *out ? 0 : aptix__pg_connect(out, pool);
}

/* Back to the pool when it is fine and idle; else closed. */
static void pool_give(struct pg_pool *pool, PGconn *c)
{
	if (!c)
		return;
	if (PQstatus(c) == CONNECTION_OK &&
	    PQtransactionStatus(c) == PQTRANS_IDLE) {
		pthread_mutex_lock(&pool->lock);
		if (pool->nidle < POOL_MAX) {
			pool->idle[pool->nidle++] = c;
			c = NULL;
		}
		pthread_mutex_unlock(&pool->lock);
	}
	PQfinish(c);
}

/* --- statements and transactions ------------------------------------------ */

static int is_retryable(const PGresult *res)
{
	const char *st = res ? PQresultErrorField(res, PG_DIAG_SQLSTATE) : NULL;

	/* serialization_failure, deadlock_detected */
	return st && (!strcmp(st, "40001") || !strcmp(st, "40P01"));
}

/* res, the answer to a statement of t: 0, or its error (consumed). */
static int answer(PGresult **out, struct aptix_pg_txn *t, PGresult *res)
{
	int st = res ? PQresultStatus(res) : PGRES_FATAL_ERROR, r;

	if (st == PGRES_COMMAND_OK || st == PGRES_TUPLES_OK) {
		*out = res;
		return 0;
	}
	if (is_retryable(res)) {
		t->retry = 1;
		aptix_error_set(APTIX_ERROR_REPOSITORY, "PostgreSQL: a "
				"concurrent change (serialization failure)");
		r = APTIX_ELOCKED;
	} else {
		r = pg_fail(t->pool, t->conn, res, "PostgreSQL");
	}
	PQclear(res);
	return r;
}

#define BEGIN_RW "BEGIN ISOLATION LEVEL REPEATABLE READ"
#define BEGIN_RO BEGIN_RW " READ ONLY"
#define SETTINGS "SELECT set_config('aptix.org', $1, true), " \
	"set_config('aptix.user', $2, true)"

/*
 * The first statement of t after its BEGIN and settings, the three in
 * one pipeline: one round trip. *out gets the statement's answer; an
 * error of BEGIN or of the settings is the error.
 */
static int first_exec(PGresult **out, struct aptix_pg_txn *t,
		      const char *sql, int n, const char *const *vals,
		      const int *lens, const int *fmts)
{
	const char *cfg[2];
	PGresult *res[4] = { NULL, NULL, NULL, NULL }, *x;
	PGconn *c = t->conn;
	int i, r = 0, sent, k = (t->flags & APTIX_PG_ONE) ? 4 : 3;

	cfg[0] = t->pool->org;
	cfg[1] = aptix__pg_pool_user(t->pool);
	t->pending = 0;
	sent = PQenterPipelineMode(c) &&
		PQsendQueryParams(c, (t->flags & APTIX_PG_WRITE) ? BEGIN_RW :
				  BEGIN_RO, 0, NULL, NULL, NULL, NULL, 0) &&
		PQsendQueryParams(c, SETTINGS, 2, NULL, cfg, NULL, NULL, 0) &&
		PQsendQueryParams(c, sql, n, NULL, vals, lens, fmts, 1) &&
		(k == 3 || PQsendQueryParams(c, "COMMIT", 0, NULL, NULL, NULL,
					     NULL, 0)) &&
		PQpipelineSync(c);
	/* each statement's answer, then NULL; then the sync's */
	for (i = 0; sent && i < k && (res[i] = PQgetResult(c)); i++)
		while ((x = PQgetResult(c)))
			PQclear(x);
	if (sent && i == k)
		PQclear(PQgetResult(c));
	if (!PQexitPipelineMode(c) || PQstatus(c) != CONNECTION_OK) {
		t->stale = 1;
		r = pg_fail(t->pool, c, NULL, "PostgreSQL");
	}
	t->done = k == 4;
	/* the first error, else the statement's answer */
	for (i = 0; i < k; i++) {
		PGresult *one = NULL;

		if (r != 0)
			PQclear(res[i]);
		else if ((r = answer(&one, t, res[i])) == 0 && i == 2)
			*out = one;	/* answer() took res[i] */
		else
			PQclear(one);
	}
	if (r != 0) {
		PQclear(*out);
		*out = NULL;
	}
	return r;
}

int aptix__pg_exec(PGresult **out, struct aptix_pg_txn *t, const char *sql,
		   int n, const char *const *vals, const int *lens)
{
	int fmts[8] = { 1, 1, 1, 1, 1, 1, 1, 1 };

	*out = NULL;
	if (n > 8)
		return APTIX_EINVALID;
	if (t->done) {
		aptix_error_set(APTIX_ERROR_REPOSITORY, "PostgreSQL: a second "
				"statement in a transaction of one");
		return APTIX_EINVALID;
	}
	if (t->pending)
		return first_exec(out, t, sql, n, vals, lens, fmts);
	return answer(out, t, PQexecParams(t->conn, sql, n, NULL, vals, lens,
					   fmts, 1));
}

static int simple(struct aptix_pg_txn *t, const char *sql)
{
	PGresult *res = PQexec(t->conn, sql);
	int st = res ? PQresultStatus(res) : PGRES_FATAL_ERROR, r = 0;

	if (st != PGRES_COMMAND_OK && st != PGRES_TUPLES_OK) {
		if (is_retryable(res))
			t->retry = 1;
		r = pg_fail(t->pool, t->conn, res, "PostgreSQL");
	}
	PQclear(res);
	return r;
}

/* The end of t's transaction: nothing when no statement began it. */
static int finish(struct aptix_pg_txn *t)
{
	return t->pending || t->done ? 0 : simple(t, "COMMIT");
}

static void backoff(int attempt)
{
	struct timespec ts;
	long ms = (long)(attempt < 6 ? 1 << attempt : 50) +
		(long)(rand() % 8);

	ts.tv_sec = 0;
	ts.tv_nsec = ms * 1000000L;
	nanosleep(&ts, NULL);
}

/* One attempt: 0, < 0, or 1 when it is to be run again. */
static int attempt(struct aptix_pg_txn *t, unsigned flags, aptix__pg_fn fn,
		   void *payload, int *fresh)
{
	int r;

	t->retry = t->stale = t->done = 0;
	t->flags = flags;
	t->pending = 1;		/* BEGIN goes with the first statement */
	r = fn(t, payload);
	if (r != 0 && t->stale && !*fresh) {
		/* a pooled connection the server closed meanwhile */
		PQfinish(t->conn);
		t->conn = NULL;
		*fresh = 1;
		if ((r = aptix__pg_connect(&t->conn, t->pool)) < 0)
			return r;
		return 1;
	}
	if (r == 0)
		r = finish(t);
	if (r != 0 && PQstatus(t->conn) == CONNECTION_OK &&
	    PQtransactionStatus(t->conn) != PQTRANS_IDLE) {
		char keep[512];

		snprintf(keep, sizeof(keep), "%s", aptix_error_last() ?
			 aptix_error_last()->message : "");
		simple(t, "ROLLBACK");
		aptix_error_set(APTIX_ERROR_REPOSITORY, "%s", keep);
	}
	return r != 0 && t->retry ? 1 : r;
}

int aptix__pg_run(struct pg_pool *pool, aptix_backend *b, unsigned flags,
		  aptix__pg_fn fn, void *payload)
{
	struct aptix_pg_txn t;
	int r, i, fresh = 0;

	memset(&t, 0, sizeof(t));
	t.parent.backend = b;
	t.pool = pool;
	if ((r = pool_take(&t.conn, pool)) < 0)
		return r;
	for (i = 0; i < RETRIES; i++) {
		if ((r = attempt(&t, flags, fn, payload, &fresh)) != 1)
			break;
		backoff(i);
	}
	if (r == 1) {
		aptix_error_set(APTIX_ERROR_REPOSITORY, "PostgreSQL: gave up "
				"after %d serialization failures", RETRIES);
		r = APTIX_ELOCKED;
	}
	pool_give(pool, t.conn);
	return r;
}

int aptix__pg_schema_version(struct pg_pool *pool, int *version)
{
	struct aptix_pg_txn t;
	PGresult *res = NULL;
	int r;

	memset(&t, 0, sizeof(t));
	t.pool = pool;
	*version = 0;
	if ((r = pool_take(&t.conn, pool)) < 0)
		return r;
	/*
	 * The user is the role logged in as unless postgresql.user names
	 * one; its HEAD is its own.
	 */
	if (!pool->user && (r = aptix__pg_pool_set_user(pool,
			PQuser(t.conn) ? PQuser(t.conn) : "")) < 0) {
		pool_give(pool, t.conn);
		return r;
	}
	if (!pool->head) {
		aptix_buf h = APTIX_BUF_INIT;

		aptix_buf_printf(&h, "HEAD@{%s}", pool->user);
		pool->head = aptix_buf_oom(&h) ? NULL : aptix_buf_detach(&h);
		aptix_buf_release(&h);
	}
	res = PQexec(t.conn, "SELECT max(version) FROM aptix_schema");
	if (res && PQresultStatus(res) == PGRES_TUPLES_OK &&
	    PQntuples(res) == 1 && !PQgetisnull(res, 0, 0)) {
		*version = (int)strtol(PQgetvalue(res, 0, 0), NULL, 10);
	} else {
		const char *st = res ?
			PQresultErrorField(res, PG_DIAG_SQLSTATE) : NULL;

		/* 42P01: no such table; 42501: no privilege */
		if (!st || (strcmp(st, "42P01") && strcmp(st, "42501")))
			r = pg_fail(pool, t.conn, res, "PostgreSQL");
	}
	PQclear(res);
	pool_give(pool, t.conn);
	return r;
}
