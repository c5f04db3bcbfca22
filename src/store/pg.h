/*
 * src/store/pg.h - the PostgreSQL storage backend (backend-pg.c) and its
 * connections (pg-conn.c).
 */
#ifndef APTIX_STORE_PG_H
#define APTIX_STORE_PG_H

#include "aptix/sys/backend.h"

/* The schema version of contrib/postgresql/schema.sql this code reads. */
#define APTIX_PG_SCHEMA_VERSION 3

struct pg_pool;
struct pg_ixbuf;
struct pg_prefetch;
/* libpq's PGconn and PGresult (libpq-fe.h, included where they are used) */
struct pg_conn;
struct pg_result;

/* A transaction of the backend: a connection inside BEGIN ... COMMIT. */
struct aptix_pg_txn {
	aptix_backend_txn parent;
	struct pg_pool *pool;
	struct pg_conn *conn;
	int retry;		/* a serialization failure: run it again */
	unsigned flags;		/* APTIX_PG_* */
	int pending;		/* BEGIN not sent yet: with the first statement */
	int done;		/* COMMIT sent with it (APTIX_PG_ONE) */
	int stale;		/* that first send met a closed connection */
	struct pg_ixbuf *ix;	/* index records not written yet */
	struct pg_prefetch *pf;	/* index answers read ahead */
};

typedef int (*aptix__pg_fn)(struct aptix_pg_txn *t, void *payload);

/* The backend registered as "postgresql": dir's config names the URL. */
int aptix__backend_pg_open(aptix_backend **out, const char *dir,
			   unsigned flags);
/*
 * The same over url (no password in it: refused) and the rows of org,
 * without a store directory: a remote (src/remote/).
 */
int aptix__backend_pg_open_url(aptix_backend **out, const char *url,
			       const char *org, unsigned flags);
/*
 * A URL that is to be stored (storing 1) or was: parsed by libpq, and
 * refused (APTIX_EINVALID) when it holds a password.
 */
int aptix__pg_check_url(const char *url, int storing);
/* Blank out of msg what could be a credential (of url, of the env). */
void aptix__pg_scrub(aptix_buf *msg, const char *url);

int aptix__pg_pool_new(struct pg_pool **out, const char *url,
		       const char *org);
void aptix__pg_pool_free(struct pg_pool *pool);
/* The org whose rows the pool's transactions see. */
const char *aptix__pg_pool_org(const struct pg_pool *pool);
/*
 * The user whose conversations the pool's transactions see (with those
 * shared in the org; SET LOCAL aptix.user): the store's postgresql.user
 * when set_user() named one before the first transaction, else the
 * PostgreSQL role the pool logs in as. "" until the schema was read.
 */
int aptix__pg_pool_set_user(struct pg_pool *pool, const char *user);
const char *aptix__pg_pool_user(const struct pg_pool *pool);
/*
 * The name of the row of the user's HEAD: "HEAD@{<user>}" (a name no
 * ref can have). HEAD is the user's, not the org's. A store made
 * before keeps its org's row "HEAD", read until the user's own is
 * written.
 */
const char *aptix__pg_pool_head(const struct pg_pool *pool);
/* A connection of the pool's URL of its own (PQfinish() it). */
int aptix__pg_connect(struct pg_conn **out, struct pg_pool *pool);

/*
 * The channel the ref updates of org are announced on (NOTIFY, by the
 * trigger of contrib/postgresql/schema.sql): "aptix_" and the first 32
 * hex digits of the SHA-256 of the org's name, so that an org hears
 * only its own and any name makes a valid identifier.
 */
#define APTIX_PG_CHANNEL_MAX 64
void aptix__pg_channel(char out[APTIX_PG_CHANNEL_MAX], const char *org);
/*
 * The channel of the refs of user's private conversations in org: as
 * that of the org "<org>\n<user>" (no org holds a newline).
 */
void aptix__pg_user_channel(char out[APTIX_PG_CHANNEL_MAX], const char *org,
			    const char *user);
/* A listener of the pool's org's channel (aptix/sys/backend.h). */
int aptix__pg_listen(aptix_backend_listener **out, struct pg_pool *pool);
/* aptix__pg_run: a read-write transaction (else read-only) */
#define APTIX_PG_WRITE 1
/* aptix__pg_run: fn runs exactly one statement (BEGIN, it, COMMIT sent
 * at once: one round trip) */
#define APTIX_PG_ONE 2
/*
 * fn in a transaction of its own (flags: APTIX_PG_*), run again after a
 * serialization failure. b: the backend the transaction belongs to.
 */
int aptix__pg_run(struct pg_pool *pool, aptix_backend *b, unsigned flags,
		  aptix__pg_fn fn, void *payload);
/*
 * One statement in t: parameters and results in binary form (text as
 * its bytes, bytea as is, integers big-endian with a cast in sql).
 */
int aptix__pg_exec(struct pg_result **out, struct aptix_pg_txn *t,
		   const char *sql, int n, const char *const *vals,
		   const int *lens);
/*
 * A bytea[] or int2[] parameter in binary form: the header of a one-
 * dimension array of n elements of type elemoid, then each element.
 */
void aptix__pg_array_header(aptix_buf *out, size_t n, unsigned elemoid);
void aptix__pg_array_elem(aptix_buf *out, const void *p, size_t len);

/*
 * The index records a transaction writes, kept until it reads what they
 * cannot answer or commits (pg-ixbuf.c): put (the newest value of a key
 * wins), get (1 and *val when kept, else 0), flush (written, in
 * multi-row INSERTs) and free.
 */
int aptix__pg_ixbuf_put(struct pg_ixbuf **b, int tbl, const void *key,
			size_t klen, const void *val, size_t vlen);
int aptix__pg_ixbuf_get(const struct pg_ixbuf *b, int tbl, const void *key,
			size_t klen, const aptix_buf **val);
int aptix__pg_ixbuf_flush(struct aptix_pg_txn *t);
/*
 * Index answers read ahead (pg-prefetch.c): the prefetch slot of the
 * index backend, then the kept answers (1 with *val, and *at for a
 * seek; 0 none; -1 not kept: ask the server), kept true to the
 * transaction's puts and deletes.
 */
int aptix__pg_prefetch(struct aptix_pg_txn *t, int tbl, unsigned kind,
		       const aptix_buf *keys, size_t n);
int aptix__pg_prefetched_get(const struct pg_prefetch *pf, int tbl,
			     const void *key, size_t klen,
			     const aptix_buf **val);
int aptix__pg_prefetched_seek(const struct pg_prefetch *pf, int tbl,
			      const void *key, size_t klen,
			      const aptix_buf **at, const aptix_buf **val);
void aptix__pg_prefetch_put(struct pg_prefetch *pf, int tbl, const void *key,
			    size_t klen, const void *val, size_t vlen);
void aptix__pg_prefetch_del(struct pg_prefetch *pf, int tbl, const void *key,
			    size_t klen);
void aptix__pg_prefetch_free(struct pg_prefetch *pf);
void aptix__pg_ixbuf_free(struct pg_ixbuf *b);

/* The version of the schema in the database (0: none there). */
int aptix__pg_schema_version(struct pg_pool *pool, int *version);

#endif
