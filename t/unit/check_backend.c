/*
 * check_backend.c - the backend conformance suite: the key-value stores
 * (aptix/sys/store_backend.h), then the storage backends' domain vtables
 * (aptix/sys/backend.h, "The domain vtables" below).
 *
 * Every key-value store must pass the first part, run once for each:
 * LMDB and memory now; a new one adds a line to backends[]. Every
 * registered storage backend (PostgreSQL too, once it registers) must
 * pass the second. They test what the
 * library relies on, through the slots and through a repository made
 * with aptix_repo_new() + aptix_repo_set_store(): key order, ranges
 * both ways, reads of a write's own changes, atomic batches, a write
 * that fails and is run again, compare-and-swap on refs under racing
 * threads with one winner, reflog order, running-turn claims and their
 * leases, and ref iteration order.
 */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <sys/wait.h>

#include "aptix.h"
#include "aptix/sys/backend.h"
#include "aptix/sys/odb_backend.h"
#include "aptix/sys/refdb_backend.h"
#include "aptix/sys/index_backend.h"
#include "aptix/sys/claims_backend.h"
#include "repo/running.h"
#include "store/odb-store.h"
#include "store/pg.h"
#include "store/odb-s3.h"
#include "txn/txn.h"
#include "unit.h"

static char *tmpdir;
static int backend;		/* index into backends[] */

static int open_lmdb(aptix_store **out)
{
	return aptix_store_lmdb_open(out, tmpdir, APTIX_STORE_CREATE);
}

static const struct {
	const char *name;
	int (*open)(aptix_store **out);
} backends[] = {
	{ "lmdb", open_lmdb },
	{ "memory", aptix_store_memory_new },
};

static void setup(void)
{
	aptix_error_clear();
	tmpdir = unit_mkdtemp();
}

static void teardown(void)
{
	unit_rmtree(tmpdir);
	free(tmpdir);
}

static void setup_lmdb(void)
{
	backend = 0;
	setup();
}

static void setup_memory(void)
{
	backend = 1;
	setup();
}

static aptix_store *open_store(void)
{
	aptix_store *s = NULL;

	ck_assert_msg(backends[backend].open(&s) == 0, "%s: %s",
		      backends[backend].name, aptix_error_last()->message);
	ck_assert_uint_eq(s->version, APTIX_STORE_BACKEND_VERSION);
	return s;
}

static aptix_repo *open_repo(void)
{
	aptix_repo *repo = NULL;
	aptix_store *s = open_store();

	ck_assert_int_eq(aptix_repo_new(&repo), 0);
	ck_assert_msg(aptix_repo_set_store(repo, s) == 0, "%s",
		      aptix_error_last()->message);
	return repo;
}

/* --- The slots ------------------------------------------------------------ */

struct kv {
	const char *key;
	size_t klen;
	const char *val;
};

static int put_all_fn(aptix_store_wtxn *w, void *payload)
{
	const struct kv *kv = payload;
	aptix_store *s = aptix_store_of_wtxn(w);
	int r;

	for (; kv->key; kv++)
		if ((r = s->wput(w, APTIX_TABLE_REFS, kv->key, kv->klen,
				 kv->val, strlen(kv->val))) < 0)
			return r;
	return 0;
}

/* Keys as LMDB orders them: bytes unsigned, a prefix first. */
static const struct kv keys[] = {
	{ "b", 1, "4" }, { "\xff", 1, "6" }, { "a", 1, "1" },
	{ "ab", 2, "3" }, { "\0", 1, "0" }, { "aa", 2, "2" },
	{ "a\0", 2, "1z" }, { NULL, 0, NULL }
};
static const char *const sorted[] = { "0", "1", "1z", "2", "3", "4", "6" };

struct seen {
	char vals[16][8];
	size_t n, stop_after;
};

static int seen_cb(const void *key, size_t klen, const void *val,
		   size_t vlen, void *payload)
{
	struct seen *sn = payload;

	(void)key;
	(void)klen;
	ck_assert_uint_lt(sn->n, 16);
	ck_assert_uint_lt(vlen, 8);
	memcpy(sn->vals[sn->n], val, vlen);
	sn->vals[sn->n++][vlen] = '\0';
	return sn->stop_after && sn->n == sn->stop_after ? APTIX_ITEROVER : 0;
}

static void expect(const struct seen *sn, const char *const *want, size_t n)
{
	size_t i;

	ck_assert_uint_eq(sn->n, n);
	for (i = 0; i < n; i++)
		ck_assert_str_eq(sn->vals[i], want[i]);
}

START_TEST(test_order_and_ranges)
{
	aptix_store *s = open_store();
	struct seen sn;
	const char *from_ab[] = { "3", "4", "6" };
	const char *down_ab[] = { "3", "2", "1z", "1", "0" };
	const char *down_ac[] = { "3", "2", "1z", "1", "0" };
	const char *down_all[] = { "6", "4", "3" };

	ck_assert_int_eq(s->write(s, put_all_fn, (void *)keys), 0);
	memset(&sn, 0, sizeof(sn));
	ck_assert_int_eq(s->iter(s, APTIX_TABLE_REFS, NULL, 0, 0, seen_cb, &sn),
			 0);
	expect(&sn, sorted, 7);
	/* from the first key >= start */
	memset(&sn, 0, sizeof(sn));
	ck_assert_int_eq(s->iter(s, APTIX_TABLE_REFS, "ab", 2, 0, seen_cb, &sn),
			 0);
	expect(&sn, from_ab, 3);
	/* down from the last key <= start, present or not */
	memset(&sn, 0, sizeof(sn));
	ck_assert_int_eq(s->iter(s, APTIX_TABLE_REFS, "ab", 2, 1, seen_cb,
				     &sn), 0);
	expect(&sn, down_ab, 5);
	memset(&sn, 0, sizeof(sn));
	ck_assert_int_eq(s->iter(s, APTIX_TABLE_REFS, "aaz", 3, 1, seen_cb,
				     &sn), 0);
	ck_assert_uint_eq(sn.n, 4);
	ck_assert_str_eq(sn.vals[0], "2");
	memset(&sn, 0, sizeof(sn));
	ck_assert_int_eq(s->iter(s, APTIX_TABLE_REFS, "ac", 2, 1, seen_cb,
				     &sn), 0);
	expect(&sn, down_ac, 5);
	/* from the last; APTIX_ITEROVER stops quietly */
	memset(&sn, 0, sizeof(sn));
	sn.stop_after = 3;
	ck_assert_int_eq(s->iter(s, APTIX_TABLE_REFS, NULL, 0, 1, seen_cb,
				     &sn), 0);
	expect(&sn, down_all, 3);
	/* tables are apart: the same key elsewhere is absent */
	memset(&sn, 0, sizeof(sn));
	ck_assert_int_eq(s->iter(s, APTIX_TABLE_RUNNING, NULL, 0, 0, seen_cb,
				 &sn), 0);
	ck_assert_uint_eq(sn.n, 0);
	s->free(s);
}
END_TEST

/* --- iter_all: every record, values in the store's order ----------------- */

#define ALL_N 40

/* Record i's value: in place, one piece, several pieces, none at all */
static size_t all_value(char *out, int i, int round)
{
	size_t len = (size_t[]){ 10, 100, 5000, 2100 }[i % 4], j;

	out[0] = 'x';	/* no value of a logged table starts with 0x00 */
	for (j = 1; j < len; j++)
		out[j] = (char)('a' + (i + j + round) % 26);
	return len;
}

static void all_key(unsigned char *key, int i)
{
	memset(key, i, 32);
	key[0] = (unsigned char)(i * 5);
}

/* Written last first, so that the values table is in reverse key order */
static int put_all_objects(aptix_store_wtxn *w, void *payload)
{
	aptix_store *s = aptix_store_of_wtxn(w);
	int round = *(int *)payload, i, r;
	unsigned char key[32];
	char val[5000];

	for (i = ALL_N - 1; i >= 0; i--) {
		all_key(key, i);
		if (round && i % 7)
			continue;	/* the second: a few replaced, one gone */
		if (round && i == 14)
			r = s->wdel(w, APTIX_TABLE_OBJECTS, key, 32);
		else
			r = s->wput(w, APTIX_TABLE_OBJECTS, key, 32, val,
				    all_value(val, i, round));
		if (r < 0)
			return r;
	}
	return 0;
}

struct all_seen {
	aptix_store *s;
	uint64_t nkeys, nvals;
	unsigned char key[ALL_N][32];
	int given[ALL_N];
	uint64_t order[ALL_N];	/* the numbers, as their values came */
};

static int all_key_cb(uint64_t n, const void *key, size_t klen,
		      const void *val, size_t vlen, void *payload)
{
	struct all_seen *a = payload;

	ck_assert_uint_eq(n, a->nkeys);
	ck_assert_ptr_null(val);
	ck_assert_uint_eq(vlen, 0);
	ck_assert_uint_eq(klen, 32);
	ck_assert_uint_lt(n, ALL_N);
	memcpy(a->key[n], key, 32);
	a->nkeys++;
	return 0;
}

static int all_val_cb(uint64_t n, const void *key, size_t klen,
		      const void *val, size_t vlen, void *payload)
{
	struct all_seen *a = payload;

	ck_assert_uint_lt(n, a->nkeys);	/* after its key */
	ck_assert_int_eq(a->given[n]++, 0);
	if (key) {
		ck_assert_uint_eq(klen, 32);
		ck_assert_int_eq(memcmp(key, a->key[n], 32), 0);
	}
	/* what a lookup of the key gives (not read here: a walk is on) */
	ck_assert_uint_gt(vlen, 0);
	ck_assert_int_eq(((const char *)val)[0], 'x');
	a->order[a->nvals++] = n;
	(void)val;
	return 0;
}

/* Each value again as get gives it, after the walk. */
static void all_check_values(aptix_store *s, const struct all_seen *a,
			     int round)
{
	aptix_buf v = APTIX_BUF_INIT;
	char want[5000];
	uint64_t n;

	for (n = 0; n < a->nkeys; n++) {
		int i = a->key[n][0] / 5;
		size_t len = all_value(want, i, round && !(i % 7));

		ck_assert_int_eq(a->given[n], 1);
		ck_assert_int_eq(s->get(&v, s, APTIX_TABLE_OBJECTS,
					a->key[n], 32), 0);
		ck_assert_uint_eq(v.len, len);
		ck_assert_int_eq(memcmp(v.ptr, want, len), 0);
	}
	aptix_buf_release(&v);
}

struct all_vals {
	aptix_store *s;
	size_t n;
	aptix_buf got[ALL_N];
};

static int all_copy_cb(uint64_t n, const void *key, size_t klen,
		       const void *val, size_t vlen, void *payload)
{
	struct all_vals *c = payload;

	(void)key;
	(void)klen;
	ck_assert_uint_lt(n, ALL_N);
	ck_assert_int_eq(aptix_buf_set(&c->got[n], val, vlen), 0);
	c->n++;
	return 0;
}

/*
 * iter_all gives every key in order, numbered, and every value once,
 * after its key; the values kept apart come in the order they were
 * written, not by key; and they are the values get gives.
 */
START_TEST(test_iter_all)
{
	aptix_store *s = open_store();
	struct all_seen *a = calloc(1, sizeof(*a));
	struct all_vals *c = calloc(1, sizeof(*c));
	int round, i, later;
	uint64_t k;

	if (!s->iter_all) {	/* memory: none (iter is its walk) */
		free(a);
		free(c);
		s->free(s);
		return;
	}
	for (round = 0; round < 2; round++) {
		ck_assert_int_eq(s->write(s, put_all_objects, &round), 0);
		memset(a, 0, sizeof(*a));
		ck_assert_int_eq(s->iter_all(s, APTIX_TABLE_OBJECTS,
					     all_key_cb, all_val_cb, a), 0);
		ck_assert_uint_eq(a->nkeys, round ? ALL_N - 1 : ALL_N);
		ck_assert_uint_eq(a->nvals, a->nkeys);
		all_check_values(s, a, round);
		/* the values kept apart came last key first */
		for (k = 0, later = 0; k + 1 < a->nvals; k++)
			if (a->key[a->order[k]][0] % 20 &&
			    a->key[a->order[k + 1]][0] % 20 &&
			    a->order[k] < a->order[k + 1])
				later++;
		ck_assert_int_eq(later, round ? 1 : 0);
	}
	/* without a callback for the keys */
	ck_assert_int_eq(s->iter_all(s, APTIX_TABLE_OBJECTS, NULL, all_copy_cb,
				     c), 0);
	ck_assert_uint_eq(c->n, ALL_N - 1);
	/* the keys alone */
	memset(a, 0, sizeof(*a));
	ck_assert_int_eq(s->iter_all(s, APTIX_TABLE_OBJECTS, all_key_cb, NULL,
				     a), 0);
	ck_assert_uint_eq(a->nkeys, ALL_N - 1);
	ck_assert_uint_eq(a->nvals, 0);
	for (i = 0; i < ALL_N; i++)
		aptix_buf_release(&c->got[i]);
	free(a);
	free(c);
	s->free(s);
}
END_TEST

struct rw_payload {
	int fail;		/* return this after the changes */
	int runs;
	int saw_own;		/* wget and witer_rev saw the write's puts */
};

/* Replace "a", delete "b", add "c"; read them back inside the write. */
static int change_fn(aptix_store_wtxn *w, void *payload)
{
	struct rw_payload *p = payload;
	aptix_store *s = aptix_store_of_wtxn(w);
	aptix_buf v = APTIX_BUF_INIT;
	struct seen sn;
	int r;

	p->runs++;
	if ((r = s->wput(w, APTIX_TABLE_REFS, "a", 1, "new", 3)) < 0 ||
	    (r = s->wdel(w, APTIX_TABLE_REFS, "b", 1)) < 0 ||
	    (r = s->wput(w, APTIX_TABLE_REFS, "c", 1, "c1", 2)) < 0 ||
	    (r = s->wput(w, APTIX_TABLE_REFS, "c", 1, "c2", 2)) < 0)
		return r;
	if (s->wdel(w, APTIX_TABLE_REFS, "nope", 4) != APTIX_ENOTFOUND)
		return APTIX_ERROR;
	aptix_error_clear();
	r = s->wget(&v, w, APTIX_TABLE_REFS, "c", 1);
	memset(&sn, 0, sizeof(sn));
	if (r == 0 && v.len == 2 && !memcmp(v.ptr, "c2", 2) &&
	    s->wget(&v, w, APTIX_TABLE_REFS, "b", 1) == APTIX_ENOTFOUND &&
	    s->witer_rev(w, APTIX_TABLE_REFS, "c", 1, seen_cb, &sn) == 0 &&
	    sn.n == 2 && !strcmp(sn.vals[0], "c2") &&
	    !strcmp(sn.vals[1], "new"))
		p->saw_own = 1;
	aptix_error_clear();
	aptix_buf_release(&v);
	return p->fail;
}

static void expect_value(aptix_store *s, const char *key, const char *want)
{
	aptix_buf v = APTIX_BUF_INIT;
	int r = s->get(&v, s, APTIX_TABLE_REFS, key, strlen(key));

	if (!want) {
		ck_assert_int_eq(r, APTIX_ENOTFOUND);
		aptix_error_clear();
	} else {
		ck_assert_int_eq(r, 0);
		ck_assert_uint_eq(v.len, strlen(want));
		ck_assert_int_eq(memcmp(v.ptr, want, v.len), 0);
	}
	aptix_buf_release(&v);
}

/*
 * A batch lands whole or not at all; a write that failed leaves the
 * store as it was and the same write run again lands once.
 */
START_TEST(test_atomic_batch)
{
	static const struct kv base[] = {
		{ "a", 1, "old" }, { "b", 1, "bee" }, { NULL, 0, NULL }
	};
	aptix_store *s = open_store();
	struct rw_payload p;

	ck_assert_int_eq(s->write(s, put_all_fn, (void *)base), 0);
	memset(&p, 0, sizeof(p));
	p.fail = APTIX_EMISMATCH;
	ck_assert_int_eq(s->write(s, change_fn, &p), APTIX_EMISMATCH);
	ck_assert_int_ge(p.runs, 1);
	ck_assert(p.saw_own);
	expect_value(s, "a", "old");
	expect_value(s, "b", "bee");
	expect_value(s, "c", NULL);
	/* run again after the failure */
	p.fail = 0;
	p.saw_own = 0;
	ck_assert_int_eq(s->write(s, change_fn, &p), 0);
	ck_assert(p.saw_own);
	expect_value(s, "a", "new");
	expect_value(s, "b", NULL);
	expect_value(s, "c", "c2");
	s->free(s);
}
END_TEST

static int bad_key_fn(aptix_store_wtxn *w, void *payload)
{
	aptix_store *s = aptix_store_of_wtxn(w);
	char big[512];

	(void)payload;
	memset(big, 'k', sizeof(big));
	if (s->wput(w, APTIX_TABLE_REFS, "", 0, "x", 1) != APTIX_EINVALID)
		return APTIX_ERROR;
	if (s->wput(w, APTIX_TABLE_REFS, big, sizeof(big), "x", 1) !=
	    APTIX_EINVALID)
		return APTIX_ERROR;
	/* 511 bytes is the longest key every backend takes */
	return s->wput(w, APTIX_TABLE_REFS, big, 511, "x", 1);
}

START_TEST(test_key_limits)
{
	aptix_store *s = open_store();

	ck_assert_msg(s->write(s, bad_key_fn, NULL) == 0, "%s",
		      aptix_error_last()->message);
	ck_assert_int_eq(s->readonly(s), 0);
	s->free(s);
}
END_TEST

/* --- A repository over the store ------------------------------------------ */

START_TEST(test_repo_over_store)
{
	aptix_repo *repo = open_repo();
	aptix_ref head;

	ck_assert_ptr_null(aptix_repo_path(repo));
	ck_assert_int_eq(aptix_ref_read(&head, repo, "HEAD"), 0);
	ck_assert_ptr_nonnull(head.target);
	ck_assert_int_eq(strncmp(head.target, APTIX_CONV_PREFIX,
				 strlen(APTIX_CONV_PREFIX)), 0);
	aptix_ref_release(&head);
	ck_assert_ptr_nonnull(aptix_repo_odb(repo));
	/* a store cannot be given twice; the caller keeps the second */
	{
		aptix_store *s = open_store();

		ck_assert_int_eq(aptix_repo_set_store(repo, s),
				 APTIX_EINVALID);
		s->free(s);
	}
	aptix_repo_free(repo);
}
END_TEST

static void blob(aptix_oid *out, aptix_repo *repo, const char *text)
{
	aptix_txn *tx;

	ck_assert_int_eq(aptix_txn_new(&tx, repo), 0);
	ck_assert_int_eq(aptix_txn_write_object(out, tx, APTIX_OBJ_BLOB, text,
						strlen(text)), 0);
	ck_assert_int_eq(aptix_txn_commit(tx), 0);
	aptix_txn_free(tx);
}

static int cas(aptix_repo *repo, const char *name, const aptix_oid *new_id,
	       const aptix_oid *old_id, const char *why)
{
	aptix_txn *tx;
	int r;

	ck_assert_int_eq(aptix_txn_new(&tx, repo), 0);
	ck_assert_int_eq(aptix_txn_ref_update(tx, name, new_id, old_id, why),
			 0);
	r = aptix_txn_commit(tx);
	aptix_txn_free(tx);
	return r;
}

#define RACERS 8
#define REF "refs/conversations/00000000-0000-4000-8000-000000000001"

struct racer {
	aptix_repo *repo;
	aptix_oid old_id, new_id;
	int result;
	pthread_barrier_t *go;
};

static void *race(void *arg)
{
	struct racer *rc = arg;

	pthread_barrier_wait(rc->go);
	rc->result = cas(rc->repo, REF, &rc->new_id, &rc->old_id, "race");
	return NULL;
}

struct log_seen {
	aptix_oid ids[64];
	char why[64][16];
	size_t n;
};

static int log_cb(const aptix_reflog_entry *e, void *payload)
{
	struct log_seen *ls = payload;

	ck_assert_uint_lt(ls->n, 64);
	ls->ids[ls->n] = e->new_id;
	snprintf(ls->why[ls->n++], 16, "%s", e->message);
	return 0;
}

/* Threads race one compare-and-swap from the same old id: one wins. */
START_TEST(test_cas_race)
{
	aptix_repo *repo = open_repo();
	struct racer rc[RACERS];
	pthread_t th[RACERS];
	pthread_barrier_t go;
	struct log_seen ls;
	aptix_oid base, now;
	char text[32];
	int i, wins = 0, winner = -1;

	blob(&base, repo, "base");
	ck_assert_int_eq(cas(repo, REF, &base, NULL, "start"), 0);
	pthread_barrier_init(&go, NULL, RACERS);
	for (i = 0; i < RACERS; i++) {
		snprintf(text, sizeof(text), "racer %d", i);
		rc[i].repo = repo;
		rc[i].old_id = base;
		rc[i].go = &go;
		blob(&rc[i].new_id, repo, text);
		ck_assert_int_eq(pthread_create(&th[i], NULL, race, &rc[i]),
				 0);
	}
	for (i = 0; i < RACERS; i++) {
		pthread_join(th[i], NULL);
		if (rc[i].result == 0) {
			wins++;
			winner = i;
		} else {
			ck_assert_int_eq(rc[i].result, APTIX_EMISMATCH);
		}
	}
	pthread_barrier_destroy(&go);
	ck_assert_int_eq(wins, 1);
	ck_assert_int_eq(aptix_ref_resolve(&now, NULL, repo, REF), 0);
	ck_assert(!aptix_oid_cmp(&now, &rc[winner].new_id));
	/* the reflog has the winner's entry alone, on top of the start */
	memset(&ls, 0, sizeof(ls));
	ck_assert_int_eq(aptix_reflog_foreach(repo, REF, log_cb, &ls), 0);
	ck_assert_uint_eq(ls.n, 2);
	ck_assert(!aptix_oid_cmp(&ls.ids[0], &rc[winner].new_id));
	ck_assert_str_eq(ls.why[0], "race");
	ck_assert(!aptix_oid_cmp(&ls.ids[1], &base));
	/* a must-not-exist update of an existing ref loses too */
	{
		aptix_oid zero;

		memset(&zero, 0, sizeof(zero));
		ck_assert_int_eq(cas(repo, REF, &base, &zero, "x"),
				 APTIX_EMISMATCH);
	}
	aptix_repo_free(repo);
}
END_TEST

/* Reflog entries come newest first, in the order they were made. */
START_TEST(test_reflog_order)
{
	aptix_repo *repo = open_repo();
	struct log_seen ls;
	aptix_oid ids[20];
	char text[32];
	int i;

	for (i = 0; i < 20; i++) {
		snprintf(text, sizeof(text), "v%d", i);
		blob(&ids[i], repo, text);
		ck_assert_int_eq(cas(repo, REF, &ids[i], i ? &ids[i - 1] : NULL,
				     text), 0);
	}
	memset(&ls, 0, sizeof(ls));
	ck_assert_int_eq(aptix_reflog_foreach(repo, REF, log_cb, &ls), 0);
	ck_assert_uint_eq(ls.n, 20);
	for (i = 0; i < 20; i++) {
		snprintf(text, sizeof(text), "v%d", 19 - i);
		ck_assert(!aptix_oid_cmp(&ls.ids[i], &ids[19 - i]));
		ck_assert_str_eq(ls.why[i], text);
	}
	aptix_repo_free(repo);
}
END_TEST

static int name_cb(const aptix_ref *ref, void *payload)
{
	aptix_strlist *l = payload;

	return aptix_strlist_push(l, ref->name);
}

/* Refs come sorted by name, whatever order they were made in. */
START_TEST(test_ref_order)
{
	static const char *const names[] = {
		"refs/conversations/00000000-0000-4000-8000-00000000000b",
		"refs/conversations/00000000-0000-4000-8000-00000000000a",
		"refs/conversations/00000000-0000-4000-8000-00000000000c",
	};
	aptix_repo *repo = open_repo();
	aptix_strlist l = APTIX_STRLIST_INIT;
	aptix_oid id;
	size_t i;

	blob(&id, repo, "x");
	for (i = 0; i < 3; i++)
		ck_assert_int_eq(cas(repo, names[i], &id, NULL, "make"), 0);
	ck_assert_int_eq(aptix_ref_foreach(repo, "refs/conversations/",
					   name_cb, &l), 0);
	ck_assert_uint_eq(l.nr, 3);
	ck_assert_str_eq(l.items[0], names[1]);
	ck_assert_str_eq(l.items[1], names[0]);
	ck_assert_str_eq(l.items[2], names[2]);
	aptix_strlist_release(&l);
	aptix_repo_free(repo);
}
END_TEST

#define CONV "00000000-0000-4000-8000-0000000000cc"

static int claim(aptix_repo *repo, const char *record)
{
	aptix_txn *tx;
	int r;

	ck_assert_int_eq(aptix_txn_new(&tx, repo), 0);
	ck_assert_int_eq(aptix_txn__running_claim(tx, CONV, record), 0);
	r = aptix_txn_commit(tx);
	aptix_txn_free(tx);
	return r;
}

static int release(aptix_repo *repo, const aptix_oid *turn)
{
	aptix_txn *tx;
	int r;

	ck_assert_int_eq(aptix_txn_new(&tx, repo), 0);
	ck_assert_int_eq(aptix_txn__running_release(tx, CONV, turn, 1), 0);
	r = aptix_txn_commit(tx);
	aptix_txn_free(tx);
	return r;
}

/*
 * A claim on a conversation holds while its lease does: a second claim
 * is refused (busy); one whose lease lapsed is reported dead (for
 * recovery), and released it can be taken again.
 */
START_TEST(test_claims)
{
	aptix_repo *repo = open_repo();
	aptix_oid turn, other;
	char live[512], lapsed[512], hex[APTIX_OID_HEXSZ + 1];
	long long now = (long long)time(NULL) * 1000;

	blob(&turn, repo, "pending turn");
	blob(&other, repo, "another turn");
	aptix_oid_tostr(hex, &turn);
	snprintf(live, sizeof(live), "{\"pid\":1,\"host\":\"conformance-"
		 "host\",\"since\":%lld,\"renewed\":%lld,\"lease\":600000,"
		 "\"turn\":\"%s\"}", now, now, hex);
	snprintf(lapsed, sizeof(lapsed), "{\"pid\":1,\"host\":\"conformance-"
		 "host\",\"since\":%lld,\"renewed\":%lld,\"lease\":1000,"
		 "\"turn\":\"%s\"}", now - 60000, now - 60000, hex);
	ck_assert_int_eq(claim(repo, live), 0);
	ck_assert_int_eq(claim(repo, live), APTIX_ELOCKED);
	ck_assert_ptr_nonnull(strstr(aptix_error_last()->message, "busy"));
	/* only the holder's pending turn releases it */
	ck_assert_int_eq(release(repo, &other), APTIX_ENOTFOUND);
	ck_assert_int_eq(claim(repo, live), APTIX_ELOCKED);
	ck_assert_int_eq(release(repo, &turn), APTIX_ENOTFOUND);
	aptix_error_clear();
	/* a lapsed lease: the claim is dead, not busy */
	{
		aptix_txn *tx;

		ck_assert_int_eq(aptix_txn_new(&tx, repo), 0);
		ck_assert_int_eq(aptix_txn__running_release(tx, CONV, &turn,
							    0), 0);
		ck_assert_int_eq(aptix_txn_commit(tx), 0);
		aptix_txn_free(tx);
	}
	ck_assert_int_eq(claim(repo, lapsed), 0);
	ck_assert_int_eq(claim(repo, live), APTIX_EEXISTS);
	ck_assert_int_eq(release(repo, &turn), 0);
	ck_assert_int_eq(claim(repo, live), 0);
	aptix_repo_free(repo);
}
END_TEST

/* === The domain vtables ================================================== */

/*
 * The storage backends (aptix/sys/backend.h) at the level of their
 * domain vtables: objects, refs and reflogs, index records, running
 * claims, and the transaction they run inside. Every test runs once
 * for every registered backend (a loop over aptix_backend_names()):
 * LMDB and memory now; a backend that registers (PostgreSQL) runs the
 * same tests unchanged (when APTIX_TEST_PG_URL names a server).
 */
#define MAX_BACKENDS 8
#define NELEM(a) (sizeof(a) / sizeof((a)[0]))

static char names[MAX_BACKENDS][32];
static int nnames;

/*
 * A backend that keeps its data in a server: PostgreSQL, when
 * APTIX_TEST_PG_URL gives one (t/t9420-pg-conformance.sh starts a
 * server of its own and sets it; without it the backend is left out).
 */
static const char *server_url(const char *name)
{
	const char *url = getenv("APTIX_TEST_PG_URL");

	if (strcmp(name, "postgresql"))
		return NULL;
	return url && *url ? url : "";
}

/* The registered backends, by name (read once, when the suite is made). */
static void read_names(void)
{
	aptix_buf b = APTIX_BUF_INIT;
	char *p, *save = NULL;
	const char *url;

	nnames = 0;
	if (aptix_backend_names(&b) < 0)
		return;		/* no test runs: the suite fails empty */
	for (p = strtok_r(b.ptr, ", ", &save); p && nnames < MAX_BACKENDS;
	     p = strtok_r(NULL, ", ", &save))
		if (!(url = server_url(p)) || *url)
			snprintf(names[nnames++], sizeof(names[0]), "%s", p);
	aptix_buf_release(&b);
}

/*
 * The store directory of a server's backend names the server and an
 * org of its own: each test sees an empty store (row-level security
 * keeps the orgs of earlier tests out of sight).
 */
static char server_org[96];

static void point_at_server(const char *url)
{
	static unsigned seq;
	char *org = server_org;

	snprintf(org, sizeof(server_org), "conformance-%ld-%ld-%u",
		 (long)getpid(),
		 (long)time(NULL), __atomic_add_fetch(&seq, 1,
						      __ATOMIC_SEQ_CST));
	ck_assert_int_eq(aptix_config_set_dir(tmpdir, "extensions.storage",
					      "postgresql"), 0);
	ck_assert_int_eq(aptix_config_set_dir(tmpdir, "postgresql.url", url),
			 0);
	ck_assert_int_eq(aptix_config_set_dir(tmpdir, "postgresql.org", org),
			 0);
}

/*
 * With APTIX_TEST_S3_URL (t0233: s3rver, its bucket aptix-test), a
 * server's backend keeps every value that names no base on S3 (a
 * threshold of 1 byte): the wrapper of store/odb-s3.c passes the same
 * suite.
 */
static void over_s3(aptix_backend *b)
{
	struct aptix_s3_location loc = { getenv("APTIX_TEST_S3_URL"),
					 "aptix-test", NULL, 1 };

	if (!loc.url || !*loc.url)
		return;
	ck_assert_msg(aptix__odb_s3_wrap(b, &loc, server_org) == 0, "%s",
		      aptix_error_last()->message);
}

/*
 * Backend i, new and empty: in the test's directory, or with none for a
 * backend that keeps no directory (memory).
 */
static aptix_backend *open_backend(int i)
{
	aptix_backend *b = NULL;
	const char *url = server_url(names[i]);
	int r;

	if (url)
		point_at_server(url);
	r = aptix_backend_open(&b, names[i], tmpdir, APTIX_STORE_CREATE);

	if (r == APTIX_EINVALID) {
		aptix_error_clear();
		r = aptix_backend_open(&b, names[i], NULL, APTIX_STORE_CREATE);
	}
	ck_assert_msg(r == 0, "%s: %s", names[i], aptix_error_last()->message);
	if (url)
		over_s3(b);
	ck_assert_uint_eq(b->version, APTIX_BACKEND_VERSION);
	ck_assert_str_eq(b->name, names[i]);
	ck_assert_uint_eq(b->odb->version, APTIX_ODB_BACKEND_VERSION);
	ck_assert_uint_eq(b->refdb->version, APTIX_REFDB_BACKEND_VERSION);
	ck_assert_uint_eq(b->index->version, APTIX_INDEX_BACKEND_VERSION);
	ck_assert_uint_eq(b->claims->version, APTIX_CLAIMS_BACKEND_VERSION);
	return b;
}

static void hex_of(char *hex, char c)
{
	memset(hex, c, APTIX_OID_HEXSZ);
	hex[APTIX_OID_HEXSZ] = '\0';
}

/* --- Compare-and-swap under racing threads ------------------------------ */


struct d_racer {
	aptix_backend *b;
	pthread_barrier_t *go;
	char value[APTIX_OID_HEXSZ + 1];
	const char *old;
	int ref_result, claim_result;
};

static int race_ref_fn(aptix_backend_txn *tx, void *payload)
{
	struct d_racer *rc = payload;
	aptix_refdb_update u;
	aptix_reflog_entry e;

	memset(&u, 0, sizeof(u));
	memset(&e, 0, sizeof(e));
	e.message = rc->value;
	u.name = REF;
	u.old_value = rc->old;
	u.new_value = rc->value;
	u.log = &e;
	return tx->backend->refdb->update(tx->backend->refdb, tx, &u);
}

static int race_claim_fn(aptix_backend_txn *tx, void *payload)
{
	struct d_racer *rc = payload;

	return tx->backend->claims->acquire(tx->backend->claims, tx, CONV,
					    rc->value);
}

static void *d_race(void *arg)
{
	struct d_racer *rc = arg;

	pthread_barrier_wait(rc->go);
	rc->ref_result = rc->b->transaction(rc->b, race_ref_fn, rc);
	rc->claim_result = rc->b->transaction(rc->b, race_claim_fn, rc);
	return NULL;
}

struct d_log_seen {
	char msg[64][APTIX_OID_HEXSZ + 1];
	int64_t time[64];
	size_t n;
};

static int d_log_cb(const aptix_reflog_entry *e, void *payload)
{
	struct d_log_seen *ls = payload;

	ck_assert_uint_lt(ls->n, 64);
	ls->time[ls->n] = e->time_ms;
	snprintf(ls->msg[ls->n++], sizeof(ls->msg[0]), "%s", e->message);
	return 0;
}

static void expect_text(aptix_backend *b, int claims, const char *key,
			const char *want)
{
	aptix_buf v = APTIX_BUF_INIT;
	int r = claims ? b->claims->lookup(&v, b->claims, NULL, key) :
		b->refdb->lookup(&v, b->refdb, NULL, key);

	if (!want) {
		ck_assert_int_eq(r, APTIX_ENOTFOUND);
		aptix_error_clear();
	} else {
		ck_assert_msg(r == 0, "%s: %d", key, r);
		ck_assert_str_eq(v.ptr, want);
	}
	aptix_buf_release(&v);
}

/*
 * Threads d_race the same compare-and-swap of a ref (from nothing) and
 * the same claim: each is won by exactly one, the others lose cleanly,
 * and the reflog holds the winner's entry alone.
 */
START_TEST(test_domain_cas_race)
{
	aptix_backend *b = open_backend(_i);
	struct d_racer rc[RACERS];
	pthread_t th[RACERS];
	pthread_barrier_t go;
	struct d_log_seen ls;
	int i, ref_wins = 0, claim_wins = 0, ref_winner = 0, claim_winner = 0;

	pthread_barrier_init(&go, NULL, RACERS);
	for (i = 0; i < RACERS; i++) {
		rc[i].b = b;
		rc[i].go = &go;
		rc[i].old = APTIX_REFDB_ABSENT;
		hex_of(rc[i].value, (char)('a' + i));
		ck_assert_int_eq(pthread_create(&th[i], NULL, d_race, &rc[i]),
				 0);
	}
	for (i = 0; i < RACERS; i++) {
		pthread_join(th[i], NULL);
		if (!rc[i].ref_result) {
			ref_wins++;
			ref_winner = i;
		} else {
			ck_assert_int_eq(rc[i].ref_result, APTIX_EMISMATCH);
		}
		if (!rc[i].claim_result) {
			claim_wins++;
			claim_winner = i;
		} else {
			ck_assert_int_eq(rc[i].claim_result, APTIX_EEXISTS);
		}
	}
	pthread_barrier_destroy(&go);
	ck_assert_int_eq(ref_wins, 1);
	ck_assert_int_eq(claim_wins, 1);
	expect_text(b, 0, REF, rc[ref_winner].value);
	expect_text(b, 1, CONV, rc[claim_winner].value);
	memset(&ls, 0, sizeof(ls));
	ck_assert_int_eq(b->refdb->reflog_foreach(b->refdb, REF, d_log_cb, &ls),
			 0);
	ck_assert_uint_eq(ls.n, 1);
	ck_assert_str_eq(ls.msg[0], rc[ref_winner].value);
	b->free(b);
}
END_TEST

/* --- One transaction across every domain -------------------------------- */

struct across {
	aptix_oid id;
	const char *stored;	/* any bytes: backends never decode them */
	size_t len;
	const char *expect_ref;	/* the ref's old value */
	int fail;		/* returned at the end */
	int runs;
};

static int across_fn(aptix_backend_txn *tx, void *payload)
{
	struct across *a = payload;
	aptix_backend *b = tx->backend;
	aptix_refdb_update u;
	aptix_reflog_entry e;
	char hex[APTIX_OID_HEXSZ + 1];
	aptix_buf v = APTIX_BUF_INIT;
	int r;

	a->runs++;
	aptix_oid_tostr(hex, &a->id);
	memset(&u, 0, sizeof(u));
	memset(&e, 0, sizeof(e));
	e.new_id = a->id;
	e.time_ms = 1000;
	e.message = "across";
	u.name = REF;
	u.old_value = a->expect_ref;
	u.new_value = hex;
	u.log = &e;
	if ((r = b->odb->write_stored(b->odb, tx, &a->id, a->stored,
				      a->len)) < 0 ||
	    (r = b->index->put(b->index, tx, APTIX_INDEX_CONVS, CONV,
			       strlen(CONV), "rec", 3)) < 0 ||
	    (r = b->claims->acquire(b->claims, tx, CONV, "claim")) < 0 ||
	    (r = b->meta_put(tx, "conformance", "1")) < 0)
		return r;
	/* a transaction reads its own writes */
	if ((r = b->odb->read_stored(&v, b->odb, tx, &a->id)) < 0)
		return r;
	ck_assert_uint_eq(v.len, a->len);
	ck_assert_int_eq(memcmp(v.ptr, a->stored, a->len), 0);
	aptix_buf_release(&v);
	if ((r = b->index->get(&v, b->index, tx, APTIX_INDEX_CONVS, CONV,
			       strlen(CONV))) < 0)
		return r;
	ck_assert_str_eq(v.ptr, "rec");
	aptix_buf_release(&v);
	/* the ref last: a lost compare-and-swap undoes everything */
	if ((r = b->refdb->update(b->refdb, tx, &u)) < 0)
		return r;
	if ((r = b->refdb->lookup(&v, b->refdb, tx, REF)) < 0)
		return r;
	ck_assert_str_eq(v.ptr, hex);
	aptix_buf_release(&v);
	return a->fail;
}

/* Nothing of a's transaction is there (present 0) or all of it (1). */
static void expect_across(aptix_backend *b, const struct across *a,
			  int present)
{
	aptix_buf v = APTIX_BUF_INIT;
	struct d_log_seen ls;
	int r;

	r = b->odb->read_stored(&v, b->odb, NULL, &a->id);
	ck_assert_int_eq(r, present ? 0 : APTIX_ENOTFOUND);
	if (present)
		ck_assert_int_eq(memcmp(v.ptr, a->stored, a->len), 0);
	ck_assert_int_eq(b->odb->exists(b->odb, &a->id), present);
	r = b->index->get(&v, b->index, NULL, APTIX_INDEX_CONVS, CONV,
			  strlen(CONV));
	ck_assert_int_eq(r, present ? 0 : APTIX_ENOTFOUND);
	r = b->claims->lookup(&v, b->claims, NULL, CONV);
	ck_assert_int_eq(r, present ? 0 : APTIX_ENOTFOUND);
	r = b->meta_get(&v, b, NULL, "conformance");
	ck_assert_int_eq(r, present ? 0 : APTIX_ENOTFOUND);
	r = b->refdb->lookup(&v, b->refdb, NULL, REF);
	ck_assert_int_eq(r, present ? 0 : APTIX_ENOTFOUND);
	memset(&ls, 0, sizeof(ls));
	ck_assert_int_eq(b->refdb->reflog_foreach(b->refdb, REF, d_log_cb, &ls),
			 0);
	ck_assert_uint_eq(ls.n, (size_t)present);
	aptix_buf_release(&v);
	aptix_error_clear();
}

/*
 * Objects, a ref with its reflog entry, an index record, a claim and a
 * setting in one transaction: a failure of the function, or a lost
 * compare-and-swap at its end, leaves none of them; run again, it lands
 * whole, once.
 */
START_TEST(test_atomic_across_domains)
{
	static const char stored[] = "\x01 not decoded by a backend";
	aptix_backend *b = open_backend(_i);
	struct across a;

	memset(&a, 0, sizeof(a));
	ck_assert_int_eq(aptix_object_hash(&a.id, APTIX_OBJ_BLOB, "x", 1), 0);
	a.stored = stored;
	a.len = sizeof(stored) - 1;
	a.expect_ref = APTIX_REFDB_ABSENT;
	a.fail = APTIX_ERROR;
	ck_assert_int_eq(b->transaction(b, across_fn, &a), APTIX_ERROR);
	ck_assert_int_ge(a.runs, 1);
	expect_across(b, &a, 0);
	/* the ref is expected at a value it does not hold: all undone */
	a.fail = 0;
	a.expect_ref = "0000000000000000000000000000000000000000000000000000000000000000";
	ck_assert_int_eq(b->transaction(b, across_fn, &a), APTIX_EMISMATCH);
	expect_across(b, &a, 0);
	/* replayed after the failures: lands once */
	a.expect_ref = APTIX_REFDB_ABSENT;
	ck_assert_msg(b->transaction(b, across_fn, &a) == 0, "%s",
		      aptix_error_last()->message);
	expect_across(b, &a, 1);
	b->free(b);
}
END_TEST

static int write_twice_fn(aptix_backend_txn *tx, void *payload)
{
	struct across *a = payload;
	aptix_odb_backend *odb = tx->backend->odb;
	int r;

	if ((r = odb->write_stored(odb, tx, &a->id, a->stored, a->len)) < 0)
		return r;
	/* the same object again: a no-op, its first bytes stay */
	return odb->write_stored(odb, tx, &a->id, "other", 5);
}

static int count_cb(const aptix_oid *id, void *payload)
{
	(void)id;
	(*(int *)payload)++;
	return 0;
}

/* An object written again (in a write replayed) is stored once. */
START_TEST(test_object_write_replayed)
{
	aptix_backend *b = open_backend(_i);
	aptix_buf v = APTIX_BUF_INIT;
	struct across a;
	int n = 0;

	memset(&a, 0, sizeof(a));
	ck_assert_int_eq(aptix_object_hash(&a.id, APTIX_OBJ_BLOB, "y", 1), 0);
	a.stored = "\x01 first";
	a.len = strlen(a.stored);
	ck_assert_int_eq(b->transaction(b, write_twice_fn, &a), 0);
	ck_assert_int_eq(b->transaction(b, write_twice_fn, &a), 0);
	ck_assert_int_eq(b->odb->read_stored(&v, b->odb, NULL, &a.id), 0);
	ck_assert_uint_eq(v.len, a.len);
	ck_assert_int_eq(memcmp(v.ptr, a.stored, a.len), 0);
	ck_assert_int_eq(b->odb->foreach(b->odb, count_cb, &n), 0);
	ck_assert_int_eq(n, 1);
	aptix_buf_release(&v);
	b->free(b);
}
END_TEST

/*
 * Index records a transaction writes are what it reads back: a get
 * (the newest put of a key), an iteration, a delete (found), whether
 * the backend sends each put at once or keeps them until it commits.
 */
static int count_rec_cb(const void *key, size_t klen, const void *val,
			size_t vlen, void *payload)
{
	(void)val;
	(void)vlen;
	if (klen == 2 && ((const char *)key)[0] == 'k')
		(*(int *)payload)++;
	return 0;
}

static int own_writes_fn(aptix_backend_txn *tx, void *payload)
{
	aptix_index_backend *ix = tx->backend->index;
	aptix_buf v = APTIX_BUF_INIT;
	int *n = payload, r;

	*n = 0;
	ck_assert_int_eq(ix->put(ix, tx, APTIX_INDEX_CONVS, "k1", 2, "a", 1),
			 0);
	ck_assert_int_eq(ix->put(ix, tx, APTIX_INDEX_CONVS, "k1", 2, "bb",
				 2), 0);
	ck_assert_int_eq(ix->put(ix, tx, APTIX_INDEX_CONVS, "k2", 2, "c", 1),
			 0);
	ck_assert_int_eq(ix->get(&v, ix, tx, APTIX_INDEX_CONVS, "k1", 2), 0);
	ck_assert_uint_eq(v.len, 2);
	ck_assert_int_eq(memcmp(v.ptr, "bb", 2), 0);
	/* a write walks its records backwards (every backend can) */
	ck_assert_int_eq(ix->iterate(ix, tx, APTIX_INDEX_CONVS, "kz", 2,
				     APTIX_INDEX_ITER_REVERSE, count_rec_cb,
				     n), 0);
	ck_assert_int_eq(*n, 2);
	ck_assert_int_eq(ix->del(ix, tx, APTIX_INDEX_CONVS, "k2", 2), 0);
	r = ix->get(&v, ix, tx, APTIX_INDEX_CONVS, "k2", 2);
	ck_assert_int_eq(r, APTIX_ENOTFOUND);
	aptix_error_clear();
	aptix_buf_release(&v);
	return 0;
}

START_TEST(test_index_own_writes)
{
	aptix_backend *b = open_backend(_i);
	aptix_buf v = APTIX_BUF_INIT;
	int n;

	ck_assert_int_eq(b->transaction(b, own_writes_fn, &n), 0);
	/* committed: the newest value, the deleted record gone */
	ck_assert_int_eq(b->index->get(&v, b->index, NULL, APTIX_INDEX_CONVS,
				       "k1", 2), 0);
	ck_assert_uint_eq(v.len, 2);
	ck_assert_int_eq(b->index->get(&v, b->index, NULL, APTIX_INDEX_CONVS,
				       "k2", 2), APTIX_ENOTFOUND);
	aptix_error_clear();
	aptix_buf_release(&v);
	b->free(b);
}
END_TEST

/*
 * Answers read ahead (the prefetch slot, where a backend has it) stay
 * what the calls return once the transaction's own puts and deletes
 * are counted: a put between a seek's answer and its key, a delete of
 * an answer, a put and a delete of a key asked.
 */
struct first_rec {
	char key[16], val[16];
	int n;
};

static int first_rec_cb(const void *key, size_t klen, const void *val,
			size_t vlen, void *payload)
{
	struct first_rec *f = payload;

	ck_assert_uint_lt(klen, sizeof(f->key));
	ck_assert_uint_lt(vlen, sizeof(f->val));
	memcpy(f->key, key, klen);
	f->key[klen] = '\0';
	memcpy(f->val, val, vlen);
	f->val[vlen] = '\0';
	f->n++;
	return APTIX_ITEROVER;
}

/* The seek from x (ONE: as the search index asks, maybe read ahead). */
static void seek_from(struct first_rec *f, aptix_index_backend *ix,
		      aptix_backend_txn *tx, const char *x, unsigned one)
{
	memset(f, 0, sizeof(*f));
	ck_assert_int_eq(ix->iterate(ix, tx, APTIX_INDEX_SEARCH, x, strlen(x),
				     APTIX_INDEX_ITER_REVERSE | one,
				     first_rec_cb, f), 0);
}

static void seek_is(aptix_index_backend *ix, aptix_backend_txn *tx,
		    const char *x, const char *key, const char *val)
{
	struct first_rec a, truth;

	seek_from(&a, ix, tx, x, APTIX_INDEX_ITER_ONE);
	seek_from(&truth, ix, tx, x, 0);
	ck_assert_int_eq(a.n, key != NULL);
	ck_assert_int_eq(truth.n, key != NULL);
	if (key) {
		ck_assert_str_eq(a.key, key);
		ck_assert_str_eq(a.val, val);
		ck_assert_str_eq(truth.key, key);
	}
}

static void get_is(aptix_index_backend *ix, aptix_backend_txn *tx,
		   const char *key, const char *val)
{
	aptix_buf v = APTIX_BUF_INIT;
	int r = ix->get(&v, ix, tx, APTIX_INDEX_SEARCH, key, strlen(key));

	if (!val) {
		ck_assert_int_eq(r, APTIX_ENOTFOUND);
		aptix_error_clear();
	} else {
		ck_assert_int_eq(r, 0);
		ck_assert_uint_eq(v.len, strlen(val));
		ck_assert_int_eq(memcmp(v.ptr, val, v.len), 0);
	}
	aptix_buf_release(&v);
}

static int put_str(aptix_index_backend *ix, aptix_backend_txn *tx,
		   const char *key, const char *val)
{
	return ix->put(ix, tx, APTIX_INDEX_SEARCH, key, strlen(key), val,
		       strlen(val));
}

static int prefetch_setup_fn(aptix_backend_txn *tx, void *payload)
{
	aptix_index_backend *ix = tx->backend->index;
	static const char *const k[] = { "b10", "b20", "b30", "b40" };
	size_t i;

	(void)payload;
	for (i = 0; i < NELEM(k); i++)
		ck_assert_int_eq(put_str(ix, tx, k[i], k[i] + 1), 0);
	return 0;
}

static void ask_ahead(aptix_index_backend *ix, aptix_backend_txn *tx,
		      unsigned kind, const char *const *keys, size_t n)
{
	aptix_buf b[8] = { APTIX_BUF_INIT };
	size_t i;

	if (ix->version < 2 || !ix->prefetch)
		return;
	for (i = 0; i < n; i++) {
		aptix_buf_init(&b[i], 0);
		aptix_buf_puts(&b[i], keys[i]);
	}
	ck_assert_int_eq(ix->prefetch(ix, tx, APTIX_INDEX_SEARCH, kind, b, n),
			 0);
	for (i = 0; i < n; i++)
		aptix_buf_release(&b[i]);
}

static int prefetch_fn(aptix_backend_txn *tx, void *payload)
{
	aptix_index_backend *ix = tx->backend->index;
	static const char *const seeks[] = { "b05", "b15", "b25", "b35",
					     "b45" };
	static const char *const gets[] = { "b10", "b20", "b99" };

	(void)payload;
	ask_ahead(ix, tx, APTIX_INDEX_PREFETCH_SEEK, seeks, NELEM(seeks));
	ask_ahead(ix, tx, APTIX_INDEX_PREFETCH_GET, gets, NELEM(gets));
	seek_is(ix, tx, "b05", NULL, NULL);
	seek_is(ix, tx, "b25", "b20", "20");
	get_is(ix, tx, "b99", NULL);
	/* a put between an answer and the key asked: the new answer */
	ck_assert_int_eq(put_str(ix, tx, "b22", "new"), 0);
	seek_is(ix, tx, "b25", "b22", "new");
	/* a put of an answer: its new value; of a key asked: found */
	ck_assert_int_eq(put_str(ix, tx, "b10", "upd"), 0);
	seek_is(ix, tx, "b15", "b10", "upd");
	get_is(ix, tx, "b10", "upd");
	ck_assert_int_eq(put_str(ix, tx, "b99", "late"), 0);
	get_is(ix, tx, "b99", "late");
	/* a put before every key: the answer of a seek that had none */
	ck_assert_int_eq(put_str(ix, tx, "b01", "first"), 0);
	seek_is(ix, tx, "b05", "b01", "first");
	/* a delete of an answer: the record below it */
	ck_assert_int_eq(ix->del(ix, tx, APTIX_INDEX_SEARCH, "b30", 3), 0);
	seek_is(ix, tx, "b35", "b22", "new");
	/* a delete of a key asked */
	ck_assert_int_eq(ix->del(ix, tx, APTIX_INDEX_SEARCH, "b20", 3), 0);
	get_is(ix, tx, "b20", NULL);
	seek_is(ix, tx, "b45", "b40", "40");
	/* forgotten: the same answers, from the table */
	ask_ahead(ix, tx, APTIX_INDEX_PREFETCH_SEEK, NULL, 0);
	ask_ahead(ix, tx, APTIX_INDEX_PREFETCH_GET, NULL, 0);
	seek_is(ix, tx, "b25", "b22", "new");
	get_is(ix, tx, "b10", "upd");
	return 0;
}

START_TEST(test_index_prefetch)
{
	aptix_backend *b = open_backend(_i);

	ck_assert_int_eq(b->transaction(b, prefetch_setup_fn, NULL), 0);
	ck_assert_int_eq(b->transaction(b, prefetch_fn, NULL), 0);
	b->free(b);
}
END_TEST

struct many {
	aptix_oid ids[3];
	int seen;
};

static int many_write_fn(aptix_backend_txn *tx, void *payload)
{
	struct many *m = payload;
	aptix_odb_backend *odb = tx->backend->odb;
	const void *vals[2] = { "\x01 one", "\x01 two" };
	size_t lens[2] = { 5, 5 };

	return odb->write_stored_many(odb, tx, m->ids, vals, lens, 2);
}

static int many_read_cb(const aptix_oid *id, const void *val, size_t len,
			void *payload)
{
	struct many *m = payload;

	ck_assert_int_ne(aptix_oid_cmp(id, &m->ids[2]), 0);
	ck_assert_uint_eq(len, 5);
	ck_assert_int_eq(memcmp(val, "\x01 ", 2), 0);
	m->seen++;
	return 0;
}

/* The batch slots, where a backend has them: as the one-object ones. */
START_TEST(test_object_batches)
{
	aptix_backend *b = open_backend(_i);
	unsigned char have[3];
	struct many m;

	if (!b->odb->exists_many) {
		b->free(b);
		return;
	}
	memset(&m, 0, sizeof(m));
	ck_assert_int_eq(aptix_object_hash(&m.ids[0], APTIX_OBJ_BLOB, "1", 1), 0);
	ck_assert_int_eq(aptix_object_hash(&m.ids[1], APTIX_OBJ_BLOB, "2", 1), 0);
	ck_assert_int_eq(aptix_object_hash(&m.ids[2], APTIX_OBJ_BLOB, "3", 1), 0);
	ck_assert_int_eq(b->odb->exists_many(b->odb, NULL, m.ids, 3, have), 0);
	ck_assert(!have[0] && !have[1] && !have[2]);
	ck_assert_int_eq(b->transaction(b, many_write_fn, &m), 0);
	ck_assert_int_eq(b->odb->exists_many(b->odb, NULL, m.ids, 3, have), 0);
	ck_assert(have[0] && have[1] && !have[2]);
	ck_assert_int_eq(b->odb->read_stored_many(b->odb, NULL, m.ids, 3,
						  many_read_cb, &m), 0);
	ck_assert_int_eq(m.seen, 2);
	b->free(b);
}
END_TEST

/* --- Reflogs ------------------------------------------------------------- */

struct append {
	const char *name;
	const char *msg;
	int64_t time;
};

static int append_fn(aptix_backend_txn *tx, void *payload)
{
	const struct append *ap = payload;
	aptix_reflog_entry e;

	memset(&e, 0, sizeof(e));
	e.time_ms = ap->time;
	e.message = ap->msg;
	return tx->backend->refdb->reflog_append(tx->backend->refdb, tx,
						 ap->name, &e);
}

static int all_logs_cb(const char *name, const aptix_reflog_entry *e,
		       void *payload)
{
	struct d_log_seen *ls = payload;

	ck_assert_uint_lt(ls->n, 64);
	snprintf(ls->msg[ls->n++], sizeof(ls->msg[0]), "%s %s", name,
		 e->message);
	return 0;
}

/*
 * Entries come newest first, in the order they were appended (not by
 * their times, which clocks may put out of order); reflogs of names
 * that share a prefix stay apart.
 */
START_TEST(test_domain_reflog_order)
{
	aptix_backend *b = open_backend(_i);
	struct d_log_seen ls;
	struct append ap;
	char msg[32];
	int i;

	for (i = 0; i < 20; i++) {
		snprintf(msg, sizeof(msg), "m%d", i);
		ap.name = i % 2 ? "refs/x" : "refs/x2";
		ap.msg = msg;
		ap.time = 5000 - i;	/* the clock went backwards */
		ck_assert_int_eq(b->transaction(b, append_fn, &ap), 0);
	}
	memset(&ls, 0, sizeof(ls));
	ck_assert_int_eq(b->refdb->reflog_foreach(b->refdb, "refs/x", d_log_cb,
						  &ls), 0);
	ck_assert_uint_eq(ls.n, 10);
	for (i = 0; i < 10; i++) {
		snprintf(msg, sizeof(msg), "m%d", 19 - 2 * i);
		ck_assert_str_eq(ls.msg[i], msg);
		ck_assert_int_eq(ls.time[i], 5000 - (19 - 2 * i));
	}
	memset(&ls, 0, sizeof(ls));
	ck_assert_int_eq(b->refdb->reflog_foreach(b->refdb, "refs/x2",
						  d_log_cb, &ls), 0);
	ck_assert_uint_eq(ls.n, 10);
	ck_assert_str_eq(ls.msg[0], "m18");
	memset(&ls, 0, sizeof(ls));
	ck_assert_int_eq(b->refdb->reflog_foreach(b->refdb, "refs/none",
						  d_log_cb, &ls), 0);
	ck_assert_uint_eq(ls.n, 0);
	/* every reflog under a prefix: by name, each oldest first */
	memset(&ls, 0, sizeof(ls));
	ck_assert_int_eq(b->refdb->reflog_iterate(b->refdb, "refs/x",
						  all_logs_cb, &ls), 0);
	ck_assert_uint_eq(ls.n, 20);
	for (i = 0; i < 20; i++) {
		snprintf(msg, sizeof(msg), "refs/x%s m%d", i < 10 ? "" : "2",
			 i < 10 ? 2 * i + 1 : 2 * (i - 10));
		ck_assert_str_eq(ls.msg[i], msg);
	}
	b->free(b);
}
END_TEST

/* --- Claims and leases --------------------------------------------------- */

struct claim_op {
	int what;		/* 0 acquire, 1 replace, 2 release */
	const char *old, *rec;
};

static int claim_fn(aptix_backend_txn *tx, void *payload)
{
	const struct claim_op *op = payload;
	aptix_claims_backend *cl = tx->backend->claims;

	if (op->what == 0)
		return cl->acquire(cl, tx, CONV, op->rec);
	if (op->what == 1)
		return cl->replace(cl, tx, CONV, op->old, op->rec);
	return cl->release(cl, tx, CONV, op->old);
}

static int claim_op(aptix_backend *b, int what, const char *old,
		    const char *rec)
{
	struct claim_op op = { what, old, rec };
	int r = b->transaction(b, claim_fn, &op);

	aptix_error_clear();
	return r;
}

/*
 * Every change of a claim is a compare-and-swap on its record: a lease
 * renewed by its holder, a renewal after the claim was taken over (it
 * must not revive), a release by one who no longer holds it.
 */
START_TEST(test_claim_cas)
{
	aptix_backend *b = open_backend(_i);

	ck_assert_int_eq(claim_op(b, 1, "r1", "r2"), APTIX_ENOTFOUND);
	ck_assert_int_eq(claim_op(b, 2, "r1", NULL), APTIX_ENOTFOUND);
	ck_assert_int_eq(claim_op(b, 0, NULL, "r1"), 0);
	ck_assert_int_eq(claim_op(b, 0, NULL, "other"), APTIX_EEXISTS);
	expect_text(b, 1, CONV, "r1");
	/* renewed by its holder */
	ck_assert_int_eq(claim_op(b, 1, "r1", "r1 renewed"), 0);
	/* taken over by another (its holder died) */
	ck_assert_int_eq(claim_op(b, 1, "r1 renewed", "thief"), 0);
	/* the first holder's renewal and release now lose */
	ck_assert_int_eq(claim_op(b, 1, "r1 renewed", "r1 again"),
			 APTIX_EMISMATCH);
	ck_assert_int_eq(claim_op(b, 2, "r1 renewed", NULL), APTIX_EMISMATCH);
	expect_text(b, 1, CONV, "thief");
	ck_assert_int_eq(claim_op(b, 2, "thief", NULL), 0);
	expect_text(b, 1, CONV, NULL);
	ck_assert_int_eq(claim_op(b, 0, NULL, "next"), 0);
	b->free(b);
}
END_TEST

static aptix_repo *open_domain_repo(int i)
{
	aptix_repo *repo = NULL;
	aptix_backend *b = open_backend(i);

	ck_assert_int_eq(aptix_repo_new(&repo), 0);
	ck_assert_msg(aptix_repo_set_backend(repo, b) == 0, "%s",
		      aptix_error_last()->message);
	return repo;
}

/*
 * A claim held by a process of this host that has died is dead at
 * once (no lease to wait for); taken over, the claim is the new
 * holder's, and a live holder's claim is never taken.
 */
START_TEST(test_claim_steal_after_death)
{
	aptix_repo *repo = open_domain_repo(_i);
	char rec[512], live[512], host[65], hex[APTIX_OID_HEXSZ + 1];
	long long now = (long long)time(NULL) * 1000;
	aptix_oid turn;
	pid_t pid = fork();

	ck_assert_int_ge(pid, 0);
	if (pid == 0)
		_exit(0);
	ck_assert_int_eq(waitpid(pid, NULL, 0), pid);
	aptix__host_name(host);
	ck_assert_int_eq(aptix_object_hash(&turn, APTIX_OBJ_BLOB, "t", 1), 0);
	aptix_oid_tostr(hex, &turn);
	snprintf(rec, sizeof(rec), "{\"pid\":%ld,\"host\":\"%s\",\"since\":"
		 "%lld,\"lease\":600000,\"turn\":\"%s\"}", (long)pid, host,
		 now, hex);
	snprintf(live, sizeof(live), "{\"pid\":%ld,\"host\":\"%s\",\"since\":"
		 "%lld,\"lease\":600000,\"turn\":\"%s\"}", (long)getpid(),
		 host, now, hex);
	ck_assert_int_eq(claim(repo, rec), 0);
	ck_assert_int_eq(claim(repo, live), APTIX_EEXISTS);
	/* recovery releases the dead holder's claim; then it is taken */
	ck_assert_int_eq(release(repo, &turn), 0);
	ck_assert_int_eq(claim(repo, live), 0);
	ck_assert_int_eq(claim(repo, rec), APTIX_ELOCKED);
	/* a live holder's claim: recovery leaves it */
	ck_assert_int_eq(release(repo, &turn), APTIX_ENOTFOUND);
	aptix_error_clear();
	ck_assert_int_eq(claim(repo, rec), APTIX_ELOCKED);
	aptix_repo_free(repo);
}
END_TEST

/* --- Iteration order ----------------------------------------------------- */

struct puts_payload {
	const char *const *keys;
	size_t n;
};

static int put_keys_fn(aptix_backend_txn *tx, void *payload)
{
	const struct puts_payload *pp = payload;
	aptix_backend *b = tx->backend;
	aptix_refdb_update u;
	char hex[APTIX_OID_HEXSZ + 1];
	size_t i;
	int r;

	hex_of(hex, 'e');
	for (i = 0; i < pp->n; i++) {
		const char *k = pp->keys[i];

		memset(&u, 0, sizeof(u));
		u.name = k;
		u.new_value = hex;
		if ((r = b->refdb->update(b->refdb, tx, &u)) < 0 ||
		    (r = b->index->put(b->index, tx, APTIX_INDEX_TIMELINE, k,
				       strlen(k), k, strlen(k))) < 0 ||
		    (r = b->claims->acquire(b->claims, tx, k, k)) < 0)
			return r;
	}
	return 0;
}

/* The keys a walk meets, "|" after each, until stop of them. */
struct keys_seen {
	aptix_buf keys;
	size_t n, stop;
};

static int key_cb(const void *key, size_t klen, const void *val,
		  size_t vlen, void *payload)
{
	struct keys_seen *ks = payload;

	(void)val;
	(void)vlen;
	aptix_buf_put(&ks->keys, key, klen);
	aptix_buf_putc(&ks->keys, '|');
	return ++ks->n == ks->stop ? APTIX_ITEROVER : 0;
}

/* The timeline's keys from start (slen bytes) in the flags' direction. */
static void index_walk_is(aptix_backend *b, const char *start, unsigned flags,
			  size_t stop, const char *want)
{
	struct keys_seen ks = { APTIX_BUF_INIT, 0, stop };

	ck_assert_int_eq(b->index->iterate(b->index, NULL,
					   APTIX_INDEX_TIMELINE, start,
					   start ? strlen(start) : 0, flags,
					   key_cb, &ks), 0);
	ck_assert_str_eq(ks.keys.ptr, want);
	aptix_buf_release(&ks.keys);
}

/*
 * Refs by prefix, index records both ways from a start key, and
 * claims: in byte order of their keys, whatever order they were made
 * in; a callback's APTIX_ITEROVER stops quietly.
 */
START_TEST(test_iteration_order)
{
	static const char *const made[] = {
		"refs/b", "refs/a/z", "refs/a", "refs/\xc3\xa9", "refs/ab",
		"refz", "refs/a/b"
	};
	static const char all[] = "refs/a|refs/a/b|refs/a/z|refs/ab|refs/b|"
		"refs/\xc3\xa9|refz|";
	struct puts_payload pp = { made, NELEM(made) };
	aptix_backend *b = open_backend(_i);
	struct keys_seen ks = { APTIX_BUF_INIT, 0, 0 };

	ck_assert_msg(b->transaction(b, put_keys_fn, &pp) == 0, "%s",
		      aptix_error_last()->message);
	ck_assert_int_eq(b->refdb->iterate(b->refdb, "refs/a", key_cb, &ks),
			 0);
	ck_assert_str_eq(ks.keys.ptr, "refs/a|refs/a/b|refs/a/z|refs/ab|");
	aptix_buf_clear(&ks.keys);
	ck_assert_int_eq(b->refdb->iterate(b->refdb, "", key_cb, &ks), 0);
	ck_assert_str_eq(ks.keys.ptr, all);
	aptix_buf_clear(&ks.keys);
	ck_assert_int_eq(b->claims->iterate(b->claims, key_cb, &ks), 0);
	ck_assert_str_eq(ks.keys.ptr, all);
	aptix_buf_release(&ks.keys);
	index_walk_is(b, NULL, 0, 0, all);
	/* from the first key >= start; down from the last <= start */
	index_walk_is(b, "refs/a/c", 0, 2, "refs/a/z|refs/ab|");
	index_walk_is(b, "refs/ab", APTIX_INDEX_ITER_REVERSE, 0,
		      "refs/ab|refs/a/z|refs/a/b|refs/a|");
	index_walk_is(b, "refs/b0", APTIX_INDEX_ITER_REVERSE, 2,
		      "refs/b|refs/ab|");
	index_walk_is(b, NULL, APTIX_INDEX_ITER_REVERSE, 1, "refz|");
	b->free(b);
}
END_TEST

/* --- The registry and versions -------------------------------------------- */

static int open_custom(aptix_backend **out, const char *dir, unsigned flags)
{
	(void)dir;
	return aptix_backend_open(out, "memory", NULL, flags);
}

/*
 * A backend is found by name (case aside), a name is registered once,
 * an unknown one is refused with the names there are; a repository
 * refuses a backend one of whose domains is of another version, and
 * works over one it takes.
 */
START_TEST(test_registry)
{
	aptix_backend *b = NULL;
	aptix_repo *repo = NULL;
	aptix_buf names = APTIX_BUF_INIT;
	unsigned keep;

	ck_assert_int_eq(aptix_backend_open(&b, "nosuch", tmpdir, 0),
			 APTIX_EVERSION);
	ck_assert_ptr_null(b);
	ck_assert_ptr_nonnull(strstr(aptix_error_last()->message, "lmdb"));
	ck_assert_int_eq(aptix_backend_names(&names), 0);
	if (!strstr(names.ptr, "conformance"))
		ck_assert_int_eq(aptix_backend_register("conformance",
							open_custom), 0);
	ck_assert_int_eq(aptix_backend_register("Conformance", open_custom),
			 APTIX_EEXISTS);
	ck_assert_int_eq(aptix_backend_register("lmdb", open_custom),
			 APTIX_EEXISTS);
	ck_assert_int_eq(aptix_backend_open(&b, "CONFORMANCE", NULL, 0), 0);
	ck_assert_ptr_nonnull(b);
	ck_assert_int_eq(aptix_repo_new(&repo), 0);
	keep = b->refdb->version;
	((aptix_refdb_backend *)b->refdb)->version = keep + 1;
	ck_assert_int_eq(aptix_repo_set_backend(repo, b), APTIX_EVERSION);
	((aptix_refdb_backend *)b->refdb)->version = keep;
	ck_assert_int_eq(aptix_repo_set_backend(repo, b), 0);
	{
		aptix_ref head;

		ck_assert_int_eq(aptix_ref_read(&head, repo, "HEAD"), 0);
		ck_assert_ptr_nonnull(head.target);
		aptix_ref_release(&head);
	}
	aptix_repo_free(repo);
	aptix_buf_release(&names);
}
END_TEST

/*
 * What libpq says (it may echo a connection string) loses any password
 * before it becomes an aptix error: the URL's, PGPASSWORD's, a
 * password= parameter's, a user:password@ of any URL.
 */
START_TEST(test_pg_scrub)
{
	static const char url[] =
		"postgresql://app:Url-Pw-1@db.example/aptix?sslmode=require";
	aptix_buf msg = APTIX_BUF_INIT;
	const char *keep = getenv("PGPASSWORD");
	char *saved = keep ? strdup(keep) : NULL;

	setenv("PGPASSWORD", "Env-Pw-2", 1);
	aptix_buf_puts(&msg, "could not connect to postgresql://app:"
		       "Url-Pw-1@db.example/aptix (Env-Pw-2)\n"
		       "host=x password=Param-Pw-3 user=y; "
		       "postgres://u:Other-Pw-4@h/d\n");
	aptix__pg_scrub(&msg, url);
	ck_assert_ptr_null(strstr(msg.ptr, "Url-Pw-1"));
	ck_assert_ptr_null(strstr(msg.ptr, "Env-Pw-2"));
	ck_assert_ptr_null(strstr(msg.ptr, "Param-Pw-3"));
	ck_assert_ptr_null(strstr(msg.ptr, "Other-Pw-4"));
	ck_assert_ptr_null(strchr(msg.ptr, '\n'));
	ck_assert_ptr_nonnull(strstr(msg.ptr, "could not connect to"));
	ck_assert_ptr_nonnull(strstr(msg.ptr, "db.example/aptix"));
	ck_assert_int_eq(aptix__pg_check_url(url, 1), APTIX_EINVALID);
	ck_assert_ptr_null(strstr(aptix_error_last()->message, "Url-Pw-1"));
	ck_assert_int_eq(aptix__pg_check_url("postgresql://app@db/aptix", 1),
			 0);
	if (saved)
		setenv("PGPASSWORD", saved, 1);
	else
		unsetenv("PGPASSWORD");
	free(saved);
	aptix_buf_release(&msg);
}
END_TEST

static TCase *domain_case(void)
{
	TCase *tc = tcase_create("domain");

	read_names();
	tcase_add_checked_fixture(tc, setup_lmdb, teardown);
	tcase_set_timeout(tc, 60);
	tcase_add_loop_test(tc, test_domain_cas_race, 0, nnames);
	tcase_add_loop_test(tc, test_atomic_across_domains, 0, nnames);
	tcase_add_loop_test(tc, test_object_write_replayed, 0, nnames);
	tcase_add_loop_test(tc, test_index_own_writes, 0, nnames);
	tcase_add_loop_test(tc, test_index_prefetch, 0, nnames);
	tcase_add_loop_test(tc, test_object_batches, 0, nnames);
	tcase_add_loop_test(tc, test_domain_reflog_order, 0, nnames);
	tcase_add_loop_test(tc, test_claim_cas, 0, nnames);
	tcase_add_loop_test(tc, test_claim_steal_after_death, 0, nnames);
	tcase_add_loop_test(tc, test_iteration_order, 0, nnames);
	tcase_add_test(tc, test_registry);
	tcase_add_test(tc, test_pg_scrub);
	return tc;
}

static TCase *backend_case(const char *name, void (*fix)(void))
{
	TCase *tc = tcase_create(name);

	tcase_add_checked_fixture(tc, fix, teardown);
	tcase_set_timeout(tc, 60);
	tcase_add_test(tc, test_order_and_ranges);
	tcase_add_test(tc, test_iter_all);
	tcase_add_test(tc, test_atomic_batch);
	tcase_add_test(tc, test_key_limits);
	tcase_add_test(tc, test_repo_over_store);
	tcase_add_test(tc, test_cas_race);
	tcase_add_test(tc, test_reflog_order);
	tcase_add_test(tc, test_ref_order);
	tcase_add_test(tc, test_claims);
	return tc;
}

Suite *backend_suite(void)
{
	Suite *s = suite_create("backend");

	suite_add_tcase(s, backend_case("lmdb", setup_lmdb));
	suite_add_tcase(s, backend_case("memory", setup_memory));
	suite_add_tcase(s, domain_case());
	return s;
}
