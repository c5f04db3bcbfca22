/*
 * src/store/pg.h - the PostgreSQL storage backend (backend-pg.c) and its
 * connections (pg-conn.c).
 */
#ifndef APTIX_STORE_PG_H
#define APTIX_STORE_PG_H

#include "aptix/sys/backend.h"

/* The schema version of contrib/postgresql/schema.sql this code reads. */
#define APTIX_PG_SCHEMA_VERSION 1

struct pg_pool;
/* libpq's PGconn and PGresult (libpq-fe.h, included where they are used) */
struct pg_conn;
struct pg_result;

/* A transaction of the backend: a connection inside BEGIN ... COMMIT. */
struct aptix_pg_txn {
	aptix_backend_txn parent;
	struct pg_pool *pool;
	struct pg_conn *conn;
	int retry;		/* a serialization failure: run it again */
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
/*
 * fn in a transaction of its own (write 0: read-only), run again after
 * a serialization failure. b: the backend the transaction belongs to.
 */
int aptix__pg_run(struct pg_pool *pool, aptix_backend *b, int write,
		  aptix__pg_fn fn, void *payload);
/*
 * One statement in t: parameters and results in binary form (text as
 * its bytes, bytea as is, integers big-endian with a cast in sql).
 */
int aptix__pg_exec(struct pg_result **out, struct aptix_pg_txn *t,
		   const char *sql, int n, const char *const *vals,
		   const int *lens);
/* The version of the schema in the database (0: none there). */
int aptix__pg_schema_version(struct pg_pool *pool, int *version);

#endif
