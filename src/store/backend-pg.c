/*
 * src/store/backend-pg.c - a storage backend that is PostgreSQL: the
 * domain vtables of aptix/sys/backend.h over the tables of
 * contrib/postgresql/schema.sql, which an administrator creates (the
 * role aptix connects as owns no table and is no superuser, so that
 * row-level security binds it).
 *
 * The store's directory keeps only its config: extensions.storage =
 * postgresql, postgresql.url (a libpq URL without a password) and
 * postgresql.org (whose rows it sees). Every row carries its org, and
 * every table's policy compares it with current_setting('aptix.org'),
 * set for each transaction (pg-conn.c). The statements below never
 * name the org: what they see is what the policy lets through.
 *
 * Refs and claims change by compare-and-swap on the server (UPDATE ...
 * WHERE value = $old, INSERT ... ON CONFLICT DO NOTHING: 0 rows is a
 * lost race), a ref's reflog entry in the same transaction; a claim is
 * a lease row, never an advisory lock (those do not survive a
 * connection pooler). Transactions are REPEATABLE READ; a serialization
 * failure runs the caller's function again.
 */
#include "util/common.h"
#include "store/pg.h"
#include <libpq-fe.h>
#include "object/zstream.h"
#include "aptix/config.h"
#include "aptix/sys/odb_backend.h"
#include "aptix/oidmap.h"
#include "store/backend-vtables.h"
#include "store/odb-s3.h"

#define QMAX 6
#define PAGE 256

struct pg {
	aptix_backend parent;
	aptix_odb_backend odb;
	aptix_refdb_backend refdb;
	aptix_index_backend index;
	aptix_claims_backend claims;
	struct pg_pool *pool;
	int readonly;
};

#define PG_OF(p, field) \
	((struct pg *)(void *)((char *)(p) - offsetof(struct pg, field)))

/* One statement, its parameters and its result. */
struct q {
	const char *sql;
	int n;
	const char *vals[QMAX];
	int lens[QMAX];
	unsigned char ints[QMAX][8];
	PGresult *res;
};

static void q_init(struct q *q, const char *sql)
{
	memset(q, 0, sizeof(*q));
	q->sql = sql;
}

static void q_bytes(struct q *q, const void *p, size_t len)
{
	q->vals[q->n] = len ? p : "";
	q->lens[q->n++] = (int)len;
}

static void q_text(struct q *q, const char *s)
{
	q_bytes(q, s, strlen(s));
}

/* An integer, for "$n::int8" (bytes 8) or "$n::int2" (bytes 2). */
static void q_int(struct q *q, int64_t v, int bytes)
{
	unsigned char *p = q->ints[q->n];

	aptix__put_be64(p, (uint64_t)v);
	q_bytes(q, p + 8 - bytes, (size_t)bytes);
}

static void q_release(struct q *q)
{
	PQclear(q->res);
	q->res = NULL;
}

static int q_fn(struct aptix_pg_txn *t, void *payload)
{
	struct q *q = payload;

	q_release(q);
	return aptix__pg_exec(&q->res, t, q->sql, q->n, q->vals, q->lens);
}

static int pg_transaction(aptix_backend *b, aptix_backend_txn_fn fn,
			  void *payload);

static int foreign(aptix_backend_txn *tx)
{
	aptix_error_set(APTIX_ERROR_REPOSITORY, "a transaction of the '%s' "
			"backend given to a PostgreSQL slot",
			tx->backend ? tx->backend->name : "(none)");
	return APTIX_EINVALID;
}

/* q inside tx, or (tx NULL) in a transaction of its own. */
static int run_q(struct pg *pg, aptix_backend_txn *tx, int write, struct q *q)
{
	if (tx) {
		if (tx->backend->transaction != pg_transaction)
			return foreign(tx);
		return q_fn((struct aptix_pg_txn *)tx, q);
	}
	if (write && pg->readonly) {
		aptix_error_set(APTIX_ERROR_REPOSITORY, "the store is open "
				"read-only");
		return APTIX_EINVALID;
	}
	return aptix__pg_run(pg->pool, &pg->parent, APTIX_PG_ONE |
			     (write ? APTIX_PG_WRITE : 0), q_fn, q);
}

/* Rows a statement changed. */
static long q_changed(const struct q *q)
{
	return strtol(PQcmdTuples(q->res), NULL, 10);
}

/*
 * q as a write, in tx or (NULL) a transaction of its own, then released;
 * *changed (unless NULL) gets the rows it changed.
 */
static int write_q(struct pg *pg, aptix_backend_txn *tx, struct q *q,
		   long *changed)
{
	int r = run_q(pg, tx, 1, q);

	if (changed)
		*changed = r == 0 ? q_changed(q) : -1;
	q_release(q);
	return r;
}

/* Column c of row 0 into out; ENOTFOUND when there is no row. */
static int q_value(aptix_buf *out, struct q *q, int c, const char *what,
		   const char *name)
{
	if (PQntuples(q->res) < 1) {
		aptix_error_set(APTIX_ERROR_REPOSITORY, "%s '%s' not found",
				what, name);
		return APTIX_ENOTFOUND;
	}
	return aptix_buf_set(out, PQgetvalue(q->res, 0, c),
			     (size_t)PQgetlength(q->res, 0, c)) < 0 ?
		APTIX_ERROR : 0;
}

/* One value by a statement of one parameter (text or bytes). */
static int get_one(aptix_buf *out, struct pg *pg, aptix_backend_txn *tx,
		   struct q *q, const char *what, const char *name)
{
	int r = run_q(pg, tx, 0, q);

	if (r == 0)
		r = q_value(out, q, 0, what, name);
	q_release(q);
	return r;
}

/* Each row's columns 0 and 1 to cb; stops as cb says. */
static int q_rows(struct q *q, int from, aptix_backend_record_cb cb,
		  void *payload)
{
	int i, r = 0, n = PQntuples(q->res);

	for (i = from; i < n && r == 0; i++)
		r = cb(PQgetvalue(q->res, i, 0),
		       (size_t)PQgetlength(q->res, i, 0),
		       PQgetvalue(q->res, i, 1),
		       (size_t)PQgetlength(q->res, i, 1), payload);
	return r;
}

static int walk(struct pg *pg, struct q *q, aptix_backend_record_cb cb,
		void *payload)
{
	int r = run_q(pg, NULL, 0, q);

	if (r == 0)
		r = q_rows(q, 0, cb, payload);
	q_release(q);
	return r == APTIX_ITEROVER ? 0 : r;
}

/* --- transactions and meta -------------------------------------------- */

struct trampoline {
	aptix_backend_txn_fn fn;
	void *payload;
};

static int trampoline_fn(struct aptix_pg_txn *t, void *payload)
{
	struct trampoline *tr = payload;
	int r;

	t->ix = NULL;
	t->pf = NULL;
	r = tr->fn(&t->parent, tr->payload);
	if (r == 0)
		r = aptix__pg_ixbuf_flush(t);
	aptix__pg_ixbuf_free(t->ix);
	aptix__pg_prefetch_free(t->pf);
	t->ix = NULL;
	t->pf = NULL;
	return r;
}

static int pg_transaction(aptix_backend *b, aptix_backend_txn_fn fn,
			  void *payload)
{
	struct pg *pg = (struct pg *)b;
	struct trampoline tr = { fn, payload };

	if (pg->readonly) {
		aptix_error_set(APTIX_ERROR_REPOSITORY, "the store is open "
				"read-only");
		return APTIX_EINVALID;
	}
	return aptix__pg_run(pg->pool, b, APTIX_PG_WRITE, trampoline_fn, &tr);
}

static int pg_meta_get(aptix_buf *out, aptix_backend *b,
		       aptix_backend_txn *tx, const char *key)
{
	struct q q;

	q_init(&q, "SELECT value FROM aptix_meta WHERE key = $1");
	q_text(&q, key);
	return get_one(out, (struct pg *)b, tx, &q, "setting", key);
}

static int pg_meta_put(aptix_backend_txn *tx, const char *key,
		       const char *value)
{
	struct q q;

	q_init(&q, "INSERT INTO aptix_meta (key, value) VALUES ($1, $2) "
	       "ON CONFLICT (org, key) DO UPDATE SET value = EXCLUDED.value");
	q_text(&q, key);
	q_text(&q, value);
	return write_q((struct pg *)tx->backend, tx, &q, NULL);
}

/* --- objects ------------------------------------------------------------ */

static int obj_read_stored(aptix_buf *out, aptix_odb_backend *b,
			   aptix_backend_txn *tx, const aptix_oid *id)
{
	struct q q;

	aptix_buf_clear(out);
	q_init(&q, "SELECT val FROM aptix_objects WHERE id = $1");
	q_bytes(&q, id->id, APTIX_OID_RAWSZ);
	return get_one(out, PG_OF(b, odb), tx, &q, "object", aptix_oid_hex(id));
}

/* The bases val names are there (in tx): else it could never be read. */
static int bases_present(aptix_odb_backend *b, aptix_backend_txn *tx,
			 const aptix_oid *id, const void *val, size_t len)
{
	aptix_oid bases[APTIX_STORED_MAX_SPLICES + 1];
	aptix_buf tmp = APTIX_BUF_INIT;
	int i, n, r = 0;

	n = aptix_stored_bases(bases, val, len);
	for (i = 0; i < n && r == 0; i++)
		r = obj_read_stored(&tmp, b, tx, &bases[i]);
	aptix_buf_release(&tmp);
	if (r == APTIX_ENOTFOUND) {
		aptix_error_set(APTIX_ERROR_ODB, "object '%s' was not stored: "
				"its base '%s' is missing", aptix_oid_hex(id),
				aptix_oid_hex(&bases[i - 1]));
		return APTIX_ERROR;
	}
	return n < 0 ? APTIX_ECORRUPT : r;
}

static int obj_write_stored(aptix_odb_backend *b, aptix_backend_txn *tx,
			    const aptix_oid *id, const void *val, size_t len)
{
	struct q q;
	int r;

	if ((r = bases_present(b, tx, id, val, len)) < 0)
		return r;
	q_init(&q, "INSERT INTO aptix_objects (id, val) VALUES ($1, $2) "
	       "ON CONFLICT (org, id) DO NOTHING");
	q_bytes(&q, id->id, APTIX_OID_RAWSZ);
	q_bytes(&q, val, len);
	return write_q(PG_OF(b, odb), tx, &q, NULL);
}

static int obj_read(aptix_buf *out, aptix_otype *type, aptix_odb_backend *b,
		    const aptix_oid *id)
{
	return aptix__odb_read_decoded(out, type, b, id);
}

static int obj_read_header(size_t *size, aptix_otype *type,
			   aptix_odb_backend *b, const aptix_oid *id)
{
	aptix_buf val = APTIX_BUF_INIT;
	size_t hlen;
	int r = obj_read_stored(&val, b, NULL, id);

	if (r == 0)
		r = aptix_stored_header(type, size, &hlen, val.ptr, val.len);
	aptix_buf_release(&val);
	return r;
}

static int obj_exists(aptix_odb_backend *b, const aptix_oid *id)
{
	struct q q;
	int r;

	q_init(&q, "SELECT 1 FROM aptix_objects WHERE id = $1");
	q_bytes(&q, id->id, APTIX_OID_RAWSZ);
	r = run_q(PG_OF(b, odb), NULL, 0, &q);
	r = r == 0 && PQntuples(q.res) > 0;
	q_release(&q);
	aptix_error_clear();
	return r;
}

static int obj_write(aptix_odb_backend *b, const aptix_oid *id,
		     const void *data, size_t len, aptix_otype type)
{
	if (obj_exists(b, id))
		return 0;
	return aptix__odb_write_encoded(&PG_OF(b, odb)->parent, b, id, data,
					len, type);
}

static int obj_exists_prefix(aptix_oid *out, int *count, aptix_odb_backend *b,
			     const aptix_oid *prefix, size_t hexlen)
{
	size_t full = hexlen / 2, i;
	struct q q;
	int r;

	*count = 0;
	q_init(&q, "SELECT id FROM aptix_objects WHERE id >= $1 "
	       "ORDER BY id LIMIT 2");
	q_bytes(&q, prefix->id, full + (hexlen % 2));
	if ((r = run_q(PG_OF(b, odb), NULL, 0, &q)) < 0)
		return r;
	for (i = 0; i < (size_t)PQntuples(q.res); i++) {
		const unsigned char *k =
			(const unsigned char *)PQgetvalue(q.res, (int)i, 0);

		if (PQgetlength(q.res, (int)i, 0) != APTIX_OID_RAWSZ ||
		    memcmp(k, prefix->id, full) ||
		    (hexlen % 2 && (k[full] & 0xf0) !=
		     (prefix->id[full] & 0xf0)))
			break;
		if (!*count)
			memcpy(out->id, k, APTIX_OID_RAWSZ);
		++*count;
	}
	q_release(&q);
	return 0;
}

static int obj_foreach(aptix_odb_backend *b, aptix_odb_foreach_cb cb,
		       void *payload)
{
	struct q q;
	aptix_oid id;
	int i, n, r;

	q_init(&q, "SELECT id FROM aptix_objects ORDER BY id");
	if ((r = run_q(PG_OF(b, odb), NULL, 0, &q)) < 0)
		return r;
	n = PQntuples(q.res);
	for (i = 0; i < n && r == 0; i++) {
		if (PQgetlength(q.res, i, 0) != APTIX_OID_RAWSZ) {
			aptix_error_set(APTIX_ERROR_ODB, "an object id of %d "
					"bytes", PQgetlength(q.res, i, 0));
			r = APTIX_ECORRUPT;
			break;
		}
		memcpy(id.id, PQgetvalue(q.res, i, 0), APTIX_OID_RAWSZ);
		r = cb(&id, payload);
	}
	q_release(&q);
	return r == APTIX_ITEROVER ? 0 : r;
}

/* --- objects in batches ------------------------------------------------- */

/* Ids a statement of exists_many or read_stored_many names at most. */
#define BATCH_IDS 1000
#define BYTEAOID 17

/* ids as a bytea[] parameter ($n::bytea[]) in binary form. */
static int ids_array(aptix_buf *out, const aptix_oid *ids, size_t n)
{
	size_t i;

	aptix__pg_array_header(out, n, BYTEAOID);
	for (i = 0; i < n; i++)
		aptix__pg_array_elem(out, ids[i].id, APTIX_OID_RAWSZ);
	return aptix_buf_oom(out) ? APTIX_ERROR : 0;
}

static int obj_exists_many(aptix_odb_backend *b, aptix_backend_txn *tx,
			   const aptix_oid *ids, size_t n, unsigned char *have)
{
	aptix_buf arr = APTIX_BUF_INIT;
	size_t at, k;
	struct q q;
	int i, r = 0;

	memset(have, 0, n);
	for (at = 0; at < n && r == 0; at += k) {
		k = n - at < BATCH_IDS ? n - at : BATCH_IDS;
		if ((r = ids_array(&arr, ids + at, k)) < 0)
			break;
		q_init(&q, "SELECT u.i FROM unnest($1::bytea[]) WITH "
		       "ORDINALITY AS u(id, i) WHERE EXISTS (SELECT 1 FROM "
		       "aptix_objects o WHERE o.id = u.id)");
		q_bytes(&q, arr.ptr, arr.len);
		if ((r = run_q(PG_OF(b, odb), tx, 0, &q)) < 0)
			break;
		for (i = 0; i < PQntuples(q.res); i++) {
			uint64_t ord = PQgetlength(q.res, i, 0) == 8 ?
				aptix__get_be64((const unsigned char *)
						PQgetvalue(q.res, i, 0)) : 0;

			if (ord >= 1 && ord <= k)
				have[at + ord - 1] = 1;
		}
		q_release(&q);
	}
	aptix_buf_release(&arr);
	return r;
}

/* Fewer ids a statement when their values come back: a bounded result. */
#define READ_IDS 256

static int obj_read_stored_many(aptix_odb_backend *b, aptix_backend_txn *tx,
				const aptix_oid *ids, size_t n,
				int (*cb)(const aptix_oid *id, const void *val,
					  size_t len, void *payload),
				void *payload)
{
	aptix_buf arr = APTIX_BUF_INIT;
	aptix_oid id;
	size_t at, k;
	struct q q;
	int i, r = 0;

	for (at = 0; at < n && r == 0; at += k) {
		k = n - at < READ_IDS ? n - at : READ_IDS;
		if ((r = ids_array(&arr, ids + at, k)) < 0)
			break;
		q_init(&q, "SELECT id, val FROM aptix_objects "
		       "WHERE id = ANY($1::bytea[])");
		q_bytes(&q, arr.ptr, arr.len);
		if ((r = run_q(PG_OF(b, odb), tx, 0, &q)) < 0)
			break;
		for (i = 0; i < PQntuples(q.res) && r == 0; i++) {
			if (PQgetlength(q.res, i, 0) != APTIX_OID_RAWSZ) {
				aptix_error_set(APTIX_ERROR_ODB, "an object "
						"id of %d bytes",
						PQgetlength(q.res, i, 0));
				r = APTIX_ECORRUPT;
				break;
			}
			memcpy(id.id, PQgetvalue(q.res, i, 0), APTIX_OID_RAWSZ);
			r = cb(&id, PQgetvalue(q.res, i, 1),
			       (size_t)PQgetlength(q.res, i, 1), payload);
		}
		q_release(&q);
	}
	aptix_buf_release(&arr);
	return r == APTIX_ITEROVER ? 0 : r;
}

/* The bases the batch's values name that are not in the batch. */
static int batch_bases(aptix_oid **out, size_t *nout, const aptix_oid *ids,
		       const void *const *vals, const size_t *lens, size_t n)
{
	aptix_oid bases[APTIX_STORED_MAX_SPLICES + 1];
	aptix_oidmap in = APTIX_OIDMAP_INIT;
	size_t i, alloc = 0, v;
	int j, nb, r = 0;

	*out = NULL;
	*nout = 0;
	for (i = 0; i < n && r == 0; i++) {
		if ((r = aptix_oidmap_put(&in, &ids[i], i)) < 0)
			continue;
		if ((nb = aptix_stored_bases(bases, vals[i], lens[i])) < 0) {
			r = APTIX_ECORRUPT;
			break;
		}
		for (j = 0; j < nb && r == 0; j++) {
			if (aptix_oidmap_get(&v, &in, &bases[j]) == 0)
				continue;
			if ((r = aptix__grow(out, &alloc, *nout,
					     sizeof(**out), 16)) == 0)
				(*out)[(*nout)++] = bases[j];
		}
	}
	aptix_oidmap_release(&in);
	return r;
}

static int check_batch_bases(aptix_odb_backend *b, aptix_backend_txn *tx,
			     const aptix_oid *ids, const void *const *vals,
			     const size_t *lens, size_t n)
{
	aptix_oid *bases;
	unsigned char *have = NULL;
	size_t nb, i;
	int r = batch_bases(&bases, &nb, ids, vals, lens, n);

	if (r == 0 && nb && !(have = aptix__calloc(nb, 1)))
		r = APTIX_ERROR;
	if (r == 0 && nb)
		r = obj_exists_many(b, tx, bases, nb, have);
	for (i = 0; r == 0 && i < nb; i++)
		if (!have[i]) {
			aptix_error_set(APTIX_ERROR_ODB, "objects were not "
					"stored: the base '%s' is missing",
					aptix_oid_hex(&bases[i]));
			r = APTIX_ERROR;
		}
	free(bases);
	free(have);
	return r;
}

/* Bytes of values one INSERT carries at most (it is one message). */
#define WRITE_BYTES (8u << 20)

static int obj_write_stored_many(aptix_odb_backend *b, aptix_backend_txn *tx,
				 const aptix_oid *ids, const void *const *vals,
				 const size_t *lens, size_t n)
{
	aptix_buf idarr = APTIX_BUF_INIT, valarr = APTIX_BUF_INIT;
	size_t at = 0, k, bytes;
	struct q q;
	int r;

	if (!tx)
		return APTIX_EINVALID;
	r = check_batch_bases(b, tx, ids, vals, lens, n);
	while (r == 0 && at < n) {
		for (k = 0, bytes = 0; at + k < n && k < BATCH_IDS &&
		     (k == 0 || bytes + lens[at + k] <= WRITE_BYTES); k++)
			bytes += lens[at + k];
		aptix__pg_array_header(&valarr, k, BYTEAOID);
		if ((r = ids_array(&idarr, ids + at, k)) < 0)
			break;
		for (bytes = 0; bytes < k; bytes++)
			aptix__pg_array_elem(&valarr, vals[at + bytes],
					     lens[at + bytes]);
		if (aptix_buf_oom(&valarr)) {
			r = APTIX_ERROR;
			break;
		}
		q_init(&q, "INSERT INTO aptix_objects (id, val) SELECT * FROM "
		       "unnest($1::bytea[], $2::bytea[]) "
		       "ON CONFLICT (org, id) DO NOTHING");
		q_bytes(&q, idarr.ptr, idarr.len);
		q_bytes(&q, valarr.ptr, valarr.len);
		r = write_q(PG_OF(b, odb), tx, &q, NULL);
		at += k;
	}
	aptix_buf_release(&idarr);
	aptix_buf_release(&valarr);
	return r;
}

/* --- refs and reflogs --------------------------------------------------- */

/*
 * HEAD is the user's (pg.h): its row is named after the role, and read
 * as "HEAD"; the org's row "HEAD" of a store made before stands in
 * until the user's is written; other users' HEADs are never shown.
 */
static int is_head(const char *name)
{
	return !strcmp(name, "HEAD");
}

static const char *head_row(aptix_refdb_backend *b)
{
	return aptix__pg_pool_head(PG_OF(b, refdb)->pool);
}

/* The row of ref name: the user's own for HEAD. */
static const char *row_of(aptix_refdb_backend *b, const char *name)
{
	return is_head(name) ? head_row(b) : name;
}

static int ref_lookup(aptix_buf *out, aptix_refdb_backend *b,
		      aptix_backend_txn *tx, const char *name)
{
	struct q q;

	q_init(&q, is_head(name) ? "SELECT value FROM aptix_refs "
	       "WHERE name = $1 OR name = 'HEAD' ORDER BY name = $1 DESC "
	       "LIMIT 1" : "SELECT value FROM aptix_refs WHERE name = $1");
	q_text(&q, row_of(b, name));
	return get_one(out, PG_OF(b, refdb), tx, &q, "ref", name);
}

/*
 * The parameters of a walk of refs or reflogs by prefix: $1 the prefix
 * (NULL: all), $2 the row of the user's HEAD, which the walk names HEAD.
 */
static void q_prefix_head(struct q *q, aptix_refdb_backend *b,
			  const char *prefix)
{
	q_text(q, prefix ? prefix : "");
	q_text(q, head_row(b));
}

static int ref_iterate(aptix_refdb_backend *b, const char *prefix,
		       aptix_backend_record_cb cb, void *payload)
{
	struct q q;

	q_init(&q, "SELECT n, value FROM (SELECT CASE WHEN name = $2 THEN "
	       "'HEAD' ELSE name END AS n, name, value FROM aptix_refs) r "
	       "WHERE starts_with(n, $1) AND (name = $2 OR "
	       "(NOT starts_with(name, 'HEAD@{') AND NOT (name = 'HEAD' AND "
	       "EXISTS (SELECT 1 FROM aptix_refs h WHERE h.name = $2)))) "
	       "ORDER BY n COLLATE \"C\"");
	q_prefix_head(&q, b, prefix);
	return walk(PG_OF(b, refdb), &q, cb, payload);
}

static int ref_reflog_append(aptix_refdb_backend *b, aptix_backend_txn *tx,
			     const char *name, const aptix_reflog_entry *e)
{
	const char *msg = e->message ? e->message : "";
	struct q q;

	if (!tx)
		return APTIX_EINVALID;
	q_init(&q, "INSERT INTO aptix_reflog (name, old_id, new_id, "
	       "time_ms, message) VALUES ($1, $2, $3, $4::int8, $5)");
	q_text(&q, row_of(b, name));
	q_bytes(&q, e->old_id.id, APTIX_OID_RAWSZ);
	q_bytes(&q, e->new_id.id, APTIX_OID_RAWSZ);
	q_int(&q, e->time_ms, 8);
	q_bytes(&q, msg, strlen(msg));
	return write_q(PG_OF(b, refdb), tx, &q, NULL);
}

/*
 * The statement of a ref update: old NULL any, "" absent, else exact.
 * The user's HEAD ($1 its row) is compared, when created or replaced,
 * with what HEAD reads as: the user's row, else the org's of a store
 * made before.
 */
static const char *update_sql(const aptix_refdb_update *u)
{
	int head = is_head(u->name);

	if (u->new_value && !u->old_value)
		return "INSERT INTO aptix_refs (name, value) VALUES ($1, $2) "
			"ON CONFLICT (org, name) DO UPDATE "
			"SET value = EXCLUDED.value";
	if (u->new_value && !*u->old_value)
		return head ?
			"INSERT INTO aptix_refs (name, value) SELECT $1, $2 "
			"WHERE NOT EXISTS (SELECT 1 FROM aptix_refs WHERE "
			"name = $1 OR name = 'HEAD') "
			"ON CONFLICT (org, name) DO NOTHING" :
			"INSERT INTO aptix_refs (name, value) VALUES ($1, $2) "
			"ON CONFLICT (org, name) DO NOTHING";
	if (u->new_value)
		return head ?
			"INSERT INTO aptix_refs (name, value) SELECT $1, $2 "
			"WHERE (SELECT value FROM aptix_refs WHERE name = $1 "
			"OR name = 'HEAD' ORDER BY name = $1 DESC LIMIT 1) = $3 "
			"ON CONFLICT (org, name) DO UPDATE SET value = "
			"EXCLUDED.value WHERE aptix_refs.value = $3" :
			"UPDATE aptix_refs SET value = $2 "
			"WHERE name = $1 AND value = $3";
	if (!u->old_value)
		return "DELETE FROM aptix_refs WHERE name = $1";
	if (!*u->old_value)	/* "delete what is absent": never holds */
		return "SELECT 1 FROM aptix_refs WHERE name = $1 AND false";
	return "DELETE FROM aptix_refs WHERE name = $1 AND value = $2";
}

static int ref_update(aptix_refdb_backend *b, aptix_backend_txn *tx,
		      const aptix_refdb_update *u)
{
	struct pg *pg = PG_OF(b, refdb);
	aptix_buf cur = APTIX_BUF_INIT;
	struct q q;
	int r;

	q_init(&q, update_sql(u));
	q_text(&q, row_of(b, u->name));
	if (u->new_value)
		q_text(&q, u->new_value);
	if (u->old_value && *u->old_value)
		q_text(&q, u->old_value);
	if (!tx)
		return APTIX_EINVALID;
	if ((r = run_q(pg, tx, 1, &q)) < 0)
		goto done;
	if (q_changed(&q) == 0) {
		/* lost: say how (a delete of an absent ref is not found) */
		r = ref_lookup(&cur, b, tx, u->name);
		if (r == APTIX_ENOTFOUND && !u->new_value &&
		    (!u->old_value || !*u->old_value))
			goto done;
		if (r < 0 && r != APTIX_ENOTFOUND)
			goto done;
		aptix_error_set(APTIX_ERROR_REFERENCE, "ref '%s' moved",
				u->name);
		r = APTIX_EMISMATCH;
		goto done;
	}
	r = u->log ? ref_reflog_append(b, tx, u->name, u->log) : 0;
done:
	aptix_buf_release(&cur);
	q_release(&q);
	return r;
}

/* Reflog rows (old, new, time, message[, name]) to cb or all_cb. */
static int reflog_rows(struct q *q, aptix_reflog_cb cb,
		       aptix_reflog_all_cb all_cb, void *payload)
{
	const PGresult *res = q->res;
	aptix_reflog_entry e;
	char *msg;
	int i, n = PQntuples(res), r = 0;

	for (i = 0; i < n && r == 0; i++) {
		if (PQgetlength(res, i, 0) != APTIX_OID_RAWSZ ||
		    PQgetlength(res, i, 1) != APTIX_OID_RAWSZ ||
		    PQgetlength(res, i, 2) != 8) {
			aptix_error_set(APTIX_ERROR_REFERENCE, "a reflog "
					"entry is corrupt");
			return APTIX_ECORRUPT;
		}
		memcpy(e.old_id.id, PQgetvalue(res, i, 0), APTIX_OID_RAWSZ);
		memcpy(e.new_id.id, PQgetvalue(res, i, 1), APTIX_OID_RAWSZ);
		e.time_ms = (int64_t)aptix__get_be64(
			(const unsigned char *)PQgetvalue(res, i, 2));
		if (!(msg = aptix__strndup(PQgetvalue(res, i, 3),
					   (size_t)PQgetlength(res, i, 3))))
			return APTIX_ERROR;
		e.message = msg;
		r = all_cb ? all_cb(PQgetvalue(res, i, 4), &e, payload) :
			cb(&e, payload);
		free(msg);
	}
	return r == APTIX_ITEROVER ? 0 : r;
}

static int ref_reflog_foreach(aptix_refdb_backend *b, const char *name,
			      aptix_reflog_cb cb, void *payload)
{
	struct q q;
	int r;

	q_init(&q, "SELECT old_id, new_id, time_ms, message FROM aptix_reflog "
	       "WHERE name = $1 ORDER BY seq DESC");
	q_text(&q, row_of(b, name));
	if ((r = run_q(PG_OF(b, refdb), NULL, 0, &q)) == 0)
		r = reflog_rows(&q, cb, NULL, payload);
	q_release(&q);
	return r;
}

/* Every reflog under prefix, deleted refs' too: by name, oldest first. */
static int ref_reflog_iterate(aptix_refdb_backend *b, const char *prefix,
			      aptix_reflog_all_cb cb, void *payload)
{
	struct q q;
	int r;

	q_init(&q, "SELECT old_id, new_id, time_ms, message, n FROM "
	       "(SELECT *, CASE WHEN name = $2 THEN 'HEAD' ELSE name END "
	       "AS n FROM aptix_reflog) l WHERE starts_with(n, $1) AND "
	       "(name = $2 OR NOT starts_with(name, 'HEAD@{')) "
	       "ORDER BY n COLLATE \"C\", seq");
	q_prefix_head(&q, b, prefix);
	if ((r = run_q(PG_OF(b, refdb), NULL, 0, &q)) == 0)
		r = reflog_rows(&q, NULL, cb, payload);
	q_release(&q);
	return r;
}

/* --- index records ------------------------------------------------------ */

/*
 * tx as a transaction of this backend, whose index puts wait in its
 * buffer (pg-ixbuf.c); NULL for none (or another backend's: run_q
 * says so).
 */
static struct aptix_pg_txn *own_txn(aptix_backend_txn *tx)
{
	return tx && tx->backend && tx->backend->transaction ==
		pg_transaction ? (struct aptix_pg_txn *)tx : NULL;
}

static int index_get(aptix_buf *out, aptix_index_backend *b,
		     aptix_backend_txn *tx, aptix_index_table t,
		     const void *key, size_t klen)
{
	struct aptix_pg_txn *pt = own_txn(tx);
	const aptix_buf *kept;
	struct q q;

	/* what the transaction put and has not written, else read ahead */
	switch (!pt ? -1 : aptix__pg_ixbuf_get(pt->ix, (int)t, key, klen,
						&kept) ? 1 :
		aptix__pg_prefetched_get(pt->pf, (int)t, key, klen, &kept)) {
	case 1:
		return aptix_buf_set(out, kept->ptr, kept->len) < 0 ?
			APTIX_ERROR : 0;
	case 0:
		aptix_error_set(APTIX_ERROR_REPOSITORY, "index record not "
				"found");
		return APTIX_ENOTFOUND;
	}

	q_init(&q, "SELECT val FROM aptix_index WHERE tbl = $1::int2 "
	       "AND key = $2");
	q_int(&q, t, 2);
	q_bytes(&q, key, klen);
	return get_one(out, PG_OF(b, index), tx, &q, "index record", "key");
}

static int index_view(aptix_index_backend *b, aptix_index_table t,
		      const void *key, size_t klen, aptix_backend_view_cb cb,
		      void *payload)
{
	aptix_buf v = APTIX_BUF_INIT;
	int r = index_get(&v, b, NULL, t, key, klen);

	if (r == 0)
		r = cb(v.ptr, v.len, payload);
	aptix_buf_release(&v);
	return r;
}

static const char *const iter_sql[2][2] = {
	/* forward: from start (inclusive), then after the last key met */
	{ "SELECT key, val FROM aptix_index WHERE tbl = $1::int2 "
	  "AND key >= $2 ORDER BY key LIMIT 256",
	  "SELECT key, val FROM aptix_index WHERE tbl = $1::int2 "
	  "AND key > $2 ORDER BY key LIMIT 256" },
	{ "SELECT key, val FROM aptix_index WHERE tbl = $1::int2 "
	  "AND ($3::int2 = 1 OR key <= $2) ORDER BY key DESC LIMIT 256",
	  "SELECT key, val FROM aptix_index WHERE tbl = $1::int2 "
	  "AND key < $2 ORDER BY key DESC LIMIT 256" },
};

/* The first query of a walk that wants one record (ITER_ONE). */
static const char *const iter_one_sql[2] = {
	"SELECT key, val FROM aptix_index WHERE tbl = $1::int2 "
	"AND key >= $2 ORDER BY key LIMIT 1",
	"SELECT key, val FROM aptix_index WHERE tbl = $1::int2 "
	"AND ($3::int2 = 1 OR key <= $2) ORDER BY key DESC LIMIT 1"
};

/* A count would read the table: the callers do without it. */
static int index_count(uint64_t *out, aptix_index_backend *b UNUSED,
		       aptix_index_table t UNUSED)
{
	*out = 0;
	return APTIX_ENOTFOUND;
}

/*
 * Pages of PAGE records: a walk that stops early (log -n 1 over a long
 * timeline) reads one page, not the table.
 */
static int index_iterate(aptix_index_backend *b, aptix_backend_txn *tx,
			 aptix_index_table t, const void *start, size_t slen,
			 unsigned flags, aptix_backend_record_cb cb,
			 void *payload)
{
	int rev = !!(flags & APTIX_INDEX_ITER_REVERSE), more = 0, r, n = 0;
	aptix_buf last = APTIX_BUF_INIT;
	struct aptix_pg_txn *pt = own_txn(tx);
	struct q q;

	if (pt && (flags & APTIX_INDEX_ITER_REVERSE) &&
	    (flags & APTIX_INDEX_ITER_ONE) && start) {
		const aptix_buf *at, *val;

		switch (aptix__pg_prefetched_seek(pt->pf, (int)t, start, slen,
						  &at, &val)) {
		case 0:
			return 0;
		case 1:
			r = cb(at->ptr, at->len, val->ptr, val->len, payload);
			return r == APTIX_ITEROVER ? 0 : r;
		}
	}
	/* what this transaction put is in the table before it is walked */
	if (pt && (r = aptix__pg_ixbuf_flush(pt)) < 0)
		return r;
	do {
		q_init(&q, (flags & APTIX_INDEX_ITER_ONE) && !more ?
		       iter_one_sql[rev] : iter_sql[rev][more]);
		q_int(&q, t, 2);
		if (more)
			q_bytes(&q, last.ptr, last.len);
		else
			q_bytes(&q, start ? start : "", start ? slen : 0);
		if (rev && !more)
			q_int(&q, start ? 0 : 1, 2);
		if ((r = run_q(PG_OF(b, index), tx, 0, &q)) < 0)
			break;
		n = PQntuples(q.res);
		if (n > 0)
			aptix_buf_set(&last, PQgetvalue(q.res, n - 1, 0),
				      (size_t)PQgetlength(q.res, n - 1, 0));
		r = aptix_buf_oom(&last) ? APTIX_ERROR :
			q_rows(&q, 0, cb, payload);
		q_release(&q);
		more = 1;
	} while (r == 0 && n == PAGE);
	q_release(&q);
	aptix_buf_release(&last);
	return r == APTIX_ITEROVER ? 0 : r;
}

static int index_put(aptix_index_backend *b, aptix_backend_txn *tx,
		     aptix_index_table t, const void *key, size_t klen,
		     const void *val, size_t vlen)
{
	struct aptix_pg_txn *pt = own_txn(tx);
	struct q q;

	if (!tx)
		return APTIX_EINVALID;
	if (pt) {	/* written at the next flush: before COMMIT */
		aptix__pg_prefetch_put(pt->pf, (int)t, key, klen, val, vlen);
		return aptix__pg_ixbuf_put(&pt->ix, (int)t, key, klen, val,
					   vlen);
	}
	q_init(&q, "INSERT INTO aptix_index (tbl, key, val) "
	       "VALUES ($1::int2, $2, $3) ON CONFLICT (org, tbl, key) "
	       "DO UPDATE SET val = EXCLUDED.val");
	q_int(&q, t, 2);
	q_bytes(&q, key, klen);
	q_bytes(&q, val, vlen);
	return write_q(PG_OF(b, index), tx, &q, NULL);
}

static int index_del(aptix_index_backend *b, aptix_backend_txn *tx,
		     aptix_index_table t, const void *key, size_t klen)
{
	struct aptix_pg_txn *pt = own_txn(tx);
	const aptix_buf *kept;
	struct q q;
	long n;
	int r;

	if (!tx)
		return APTIX_EINVALID;
	/*
	 * Whether it was there counts what this transaction put too: a put
	 * of this key waiting in the buffer is written first (the others
	 * wait: the delete does not touch them).
	 */
	if (pt && aptix__pg_ixbuf_get(pt->ix, (int)t, key, klen, &kept) &&
	    (r = aptix__pg_ixbuf_flush(pt)) < 0)
		return r;
	if (pt)
		aptix__pg_prefetch_del(pt->pf, (int)t, key, klen);
	q_init(&q, "DELETE FROM aptix_index WHERE tbl = $1::int2 "
	       "AND key = $2");
	q_int(&q, t, 2);
	q_bytes(&q, key, klen);
	if ((r = write_q(PG_OF(b, index), tx, &q, &n)) == 0 && n == 0) {
		aptix_error_set(APTIX_ERROR_REPOSITORY, "index record not "
				"found");
		r = APTIX_ENOTFOUND;
	}
	return r;
}

static int index_prefetch(aptix_index_backend *b UNUSED, aptix_backend_txn *tx,
			  aptix_index_table t, unsigned kind,
			  const aptix_buf *keys, size_t n)
{
	struct aptix_pg_txn *pt = own_txn(tx);

	return pt ? aptix__pg_prefetch(pt, (int)t, kind, keys, n) : 0;
}

/* --- running-turn claims: lease rows ------------------------------------ */

static int claim_lookup(aptix_buf *out, aptix_claims_backend *b,
			aptix_backend_txn *tx, const char *conv)
{
	struct q q;

	q_init(&q, "SELECT record FROM aptix_claims WHERE conv = $1");
	q_text(&q, conv);
	return get_one(out, PG_OF(b, claims), tx, &q, "claim on", conv);
}

static int claim_iterate(aptix_claims_backend *b, aptix_backend_record_cb cb,
			 void *payload)
{
	struct q q;

	q_init(&q, "SELECT conv, record FROM aptix_claims ORDER BY conv");
	return walk(PG_OF(b, claims), &q, cb, payload);
}

static int claim_acquire(aptix_claims_backend *b, aptix_backend_txn *tx,
			 const char *conv, const char *record)
{
	struct q q;
	long n;
	int r;

	if (!tx)
		return APTIX_EINVALID;
	q_init(&q, "INSERT INTO aptix_claims (conv, record) VALUES ($1, $2) "
	       "ON CONFLICT (org, conv) DO NOTHING");
	q_text(&q, conv);
	q_text(&q, record);
	if ((r = write_q(PG_OF(b, claims), tx, &q, &n)) == 0 && n == 0)
		r = aptix__claim_error(APTIX_EEXISTS, conv);
	return r;
}

/* record NULL: release. */
static int claim_cas(aptix_claims_backend *b, aptix_backend_txn *tx,
		     const char *conv, const char *old, const char *record)
{
	aptix_buf cur = APTIX_BUF_INIT;
	struct q q;
	int r;

	if (!old || !*old || !tx)
		return APTIX_EINVALID;
	q_init(&q, record ? "UPDATE aptix_claims SET record = $3, "
	       "since = now() WHERE conv = $1 AND record = $2" :
	       "DELETE FROM aptix_claims WHERE conv = $1 AND record = $2");
	q_text(&q, conv);
	q_text(&q, old);
	if (record)
		q_text(&q, record);
	if ((r = run_q(PG_OF(b, claims), tx, 1, &q)) == 0 &&
	    q_changed(&q) == 0) {
		r = claim_lookup(&cur, b, tx, conv);
		if (r == APTIX_ENOTFOUND || r == 0)
			r = aptix__claim_error(r ? r : APTIX_EMISMATCH, conv);
	}
	q_release(&q);
	aptix_buf_release(&cur);
	return r;
}

APTIX__CLAIMS_CAS_SLOTS(claim_cas)

/* --- owners of conversations ------------------------------------------- */

/*
 * A conversation is its user's unless shared (schema.sql, version 3):
 * only its owner may change that. An UPDATE that meets no row leaves
 * two cases apart by what the user sees: none (another's private
 * conversation reads the same as no conversation) or another's shared
 * one.
 */
static int pg_share(aptix_backend *b, const char *conv, int shared)
{
	struct pg *pg = (struct pg *)b;
	struct q q;
	int r;

	q_init(&q, "WITH u AS (UPDATE aptix_owners SET shared = $2::int2 = 1 "
	       "WHERE conv = $1 RETURNING 1) SELECT (SELECT count(*) FROM u), "
	       "(SELECT count(*) FROM aptix_owners WHERE conv = $1)");
	q_text(&q, conv);
	q_int(&q, shared ? 1 : 0, 2);
	if ((r = run_q(pg, NULL, 1, &q)) < 0)
		goto done;
	if (PQntuples(q.res) != 1 || PQgetlength(q.res, 0, 0) != 8) {
		aptix_error_set(APTIX_ERROR_REPOSITORY, "PostgreSQL: an "
				"unexpected answer");
		r = APTIX_ERROR;
	} else if (aptix__get_be64((const unsigned char *)
				   PQgetvalue(q.res, 0, 0)) == 0) {
		int seen = aptix__get_be64((const unsigned char *)
					   PQgetvalue(q.res, 0, 1)) > 0;

		aptix_error_set(APTIX_ERROR_REPOSITORY, seen ?
				"conversation '%s' is another user's: only "
				"its owner shares or unshares it" :
				"conversation '%s' not found", conv);
		r = seen ? APTIX_EINVALID : APTIX_ENOTFOUND;
	}
done:
	q_release(&q);
	return r;
}

static int pg_owners(aptix_backend *b,
		     int (*cb)(const char *conv, const char *owner,
			       int shared, void *payload),
		     void *payload)
{
	struct q q;
	int i, r;

	q_init(&q, "SELECT conv, owner, shared::int::int2 FROM aptix_owners "
	       "ORDER BY conv");
	if ((r = run_q((struct pg *)b, NULL, 0, &q)) < 0)
		return r;
	for (i = 0; i < PQntuples(q.res) && r == 0; i++)
		r = cb(PQgetvalue(q.res, i, 0), PQgetvalue(q.res, i, 1),
		       PQgetlength(q.res, i, 2) == 2 &&
		       PQgetvalue(q.res, i, 2)[1] == 1, payload);
	q_release(&q);
	return r;
}

static const char *pg_user(aptix_backend *b)
{
	return aptix__pg_pool_user(((struct pg *)b)->pool);
}

/* --- the bundle --------------------------------------------------------- */

static int pg_readonly(aptix_backend *b)
{
	return ((struct pg *)b)->readonly;
}

static int pg_listen(aptix_backend_listener **out, aptix_backend *b)
{
	return aptix__pg_listen(out, ((struct pg *)b)->pool);
}

static void pg_free(aptix_backend *b)
{
	struct pg *pg = (struct pg *)b;

	if (!b)
		return;
	aptix__pg_pool_free(pg->pool);
	free(pg);
}

static const aptix_odb_backend pg_odb = {
	.version = APTIX_ODB_BACKEND_VERSION,
	.read = obj_read,
	.read_header = obj_read_header,
	.write = obj_write,
	.exists = obj_exists,
	.exists_prefix = obj_exists_prefix,
	.foreach = obj_foreach,
	.read_stored = obj_read_stored,
	.write_stored = obj_write_stored,
	.exists_many = obj_exists_many,
	.read_stored_many = obj_read_stored_many,
	.write_stored_many = obj_write_stored_many,
};

static const aptix_refdb_backend pg_refdb = APTIX__REFDB_BACKEND_OF(ref_);
static const aptix_claims_backend pg_claims =
	APTIX__CLAIMS_BACKEND_OF(claim_);
static const aptix_index_backend pg_index = {
	.version = APTIX_INDEX_BACKEND_VERSION,
	.get = index_get, .view = index_view, .iterate = index_iterate,
	.put = index_put, .del = index_del, .count = index_count,
	.prefetch = index_prefetch,
};

static const aptix_backend pg_bundle = {
	.version = APTIX_BACKEND_VERSION,
	.name = "postgresql",
	.layout = APTIX_PG_SCHEMA_VERSION,
	.transaction = pg_transaction,
	.meta_get = pg_meta_get,
	.meta_put = pg_meta_put,
	.readonly = pg_readonly,
	.free = pg_free,
	.listen = pg_listen,
	.share = pg_share,
	.owners = pg_owners,
	.user = pg_user,
};

/*
 * postgresql.url and postgresql.org of the store's own config, and
 * postgresql.user (NULL when unset: the role logged in as).
 */
static int read_location(char **url, char **org, char **user,
			 const char *dir)
{
	aptix_config *cfg = NULL;
	const char *u, *o, *who;
	int r;

	*url = *org = *user = NULL;
	if (!dir) {
		aptix_error_set(APTIX_ERROR_REPOSITORY, "the 'postgresql' "
				"backend needs a store directory whose config "
				"names its URL (postgresql.url)");
		return APTIX_EINVALID;
	}
	if ((r = aptix_config_open_store_file(&cfg, dir)) < 0)
		return r;
	u = aptix_config_get(cfg, "postgresql.url");
	o = aptix_config_get(cfg, "postgresql.org");
	if (!u || !*u || !o || !*o) {
		aptix_error_set(APTIX_ERROR_REPOSITORY, "the store '%s' keeps "
				"its data in PostgreSQL but its config names "
				"no %s", dir, !u || !*u ? "postgresql.url" :
				"postgresql.org");
		r = APTIX_EINVALID;
	} else if ((r = aptix__pg_check_url(u, 0)) == 0) {
		who = aptix_config_get(cfg, "postgresql.user");
		*url = aptix__strdup(u);
		*org = aptix__strdup(o);
		r = *url && *org ? 0 : APTIX_ERROR;
		if (r == 0 && who && *who && !(*user = aptix__strdup(who)))
			r = APTIX_ERROR;
	}
	aptix_config_free(cfg);
	return r;
}

static int check_schema(struct pg_pool *pool)
{
	int version, r;

	if ((r = aptix__pg_schema_version(pool, &version)) < 0)
		return r;
	if (version == 0) {
		aptix_error_set(APTIX_ERROR_REPOSITORY, "the database holds "
				"no aptix schema (or this role may not read "
				"it): an administrator creates it with "
				"contrib/postgresql/schema.sql");
		return APTIX_ENOTFOUND;
	}
	if (version < APTIX_PG_SCHEMA_VERSION) {
		aptix_error_set(APTIX_ERROR_REPOSITORY, "the database's aptix "
				"schema is of version %d, older than this "
				"aptix needs (%d): an administrator upgrades "
				"it by running contrib/postgresql/schema.sql "
				"again", version, APTIX_PG_SCHEMA_VERSION);
		return APTIX_EVERSION;
	}
	if (version > APTIX_PG_SCHEMA_VERSION) {
		aptix_error_set(APTIX_ERROR_REPOSITORY, "the database's aptix "
				"schema is of version %d, newer than this "
				"aptix reads (%d): upgrade aptix", version,
				APTIX_PG_SCHEMA_VERSION);
		return APTIX_EVERSION;
	}
	return 0;
}

static int open_as(aptix_backend **out, const char *url, const char *org,
		   const char *user, unsigned flags)
{
	struct pg *pg;
	int r;

	*out = NULL;
	if ((r = aptix__pg_check_url(url, 1)) < 0)
		return r;
	if (!(pg = aptix__calloc(1, sizeof(*pg))) ||
	    (r = aptix__pg_pool_new(&pg->pool, url, org)) < 0 ||
	    (user && (r = aptix__pg_pool_set_user(pg->pool, user)) < 0) ||
	    (r = check_schema(pg->pool)) < 0) {
		if (pg)
			pg_free(&pg->parent);
		return r < 0 ? r : APTIX_ERROR;
	}
	pg->readonly = !!(flags & APTIX_STORE_RDONLY);
	pg->odb = pg_odb;
	pg->refdb = pg_refdb;
	pg->index = pg_index;
	pg->claims = pg_claims;
	pg->parent = pg_bundle;
	pg->parent.odb = &pg->odb;
	pg->parent.refdb = &pg->refdb;
	pg->parent.index = &pg->index;
	pg->parent.claims = &pg->claims;
	/* large objects on S3, when the store says so (its meta s3.*) */
	if ((r = aptix__odb_s3_from_meta(&pg->parent, org)) < 0) {
		pg_free(&pg->parent);
		return r;
	}
	*out = &pg->parent;
	return 0;
}

int aptix__backend_pg_open_url(aptix_backend **out, const char *url,
			       const char *org, unsigned flags)
{
	return open_as(out, url, org, NULL, flags);
}

int aptix__backend_pg_open(aptix_backend **out, const char *dir,
			   unsigned flags)
{
	char *url, *org, *user;
	int r;

	*out = NULL;
	if ((r = read_location(&url, &org, &user, dir)) < 0)
		return r;
	r = open_as(out, url, org, user, flags);
	free(url);
	free(org);
	free(user);
	return r;
}
