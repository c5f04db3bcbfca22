/*
 * check_backend.c - the store backend conformance suite.
 *
 * Every store backend (aptix/sys/store_backend.h) must pass these, run
 * once for each: LMDB and memory now; a new backend (PostgreSQL) adds a
 * line to backends[] and must pass them unchanged. They test what the
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

#include "aptix.h"
#include "store/odb-store.h"
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
	ck_assert_int_eq(s->iter(s, APTIX_TABLE_REFS, NULL, 0, seen_cb, &sn),
			 0);
	expect(&sn, sorted, 7);
	/* from the first key >= start */
	memset(&sn, 0, sizeof(sn));
	ck_assert_int_eq(s->iter(s, APTIX_TABLE_REFS, "ab", 2, seen_cb, &sn),
			 0);
	expect(&sn, from_ab, 3);
	/* down from the last key <= start, present or not */
	memset(&sn, 0, sizeof(sn));
	ck_assert_int_eq(s->iter_rev(s, APTIX_TABLE_REFS, "ab", 2, seen_cb,
				     &sn), 0);
	expect(&sn, down_ab, 5);
	memset(&sn, 0, sizeof(sn));
	ck_assert_int_eq(s->iter_rev(s, APTIX_TABLE_REFS, "aaz", 3, seen_cb,
				     &sn), 0);
	ck_assert_uint_eq(sn.n, 4);
	ck_assert_str_eq(sn.vals[0], "2");
	memset(&sn, 0, sizeof(sn));
	ck_assert_int_eq(s->iter_rev(s, APTIX_TABLE_REFS, "ac", 2, seen_cb,
				     &sn), 0);
	expect(&sn, down_ac, 5);
	/* from the last; APTIX_ITEROVER stops quietly */
	memset(&sn, 0, sizeof(sn));
	sn.stop_after = 3;
	ck_assert_int_eq(s->iter_rev(s, APTIX_TABLE_REFS, NULL, 0, seen_cb,
				     &sn), 0);
	expect(&sn, down_all, 3);
	/* tables are apart: the same key elsewhere is absent */
	memset(&sn, 0, sizeof(sn));
	ck_assert_int_eq(s->iter(s, APTIX_TABLE_RUNNING, NULL, 0, seen_cb,
				 &sn), 0);
	ck_assert_uint_eq(sn.n, 0);
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

static TCase *backend_case(const char *name, void (*fix)(void))
{
	TCase *tc = tcase_create(name);

	tcase_add_checked_fixture(tc, fix, teardown);
	tcase_set_timeout(tc, 60);
	tcase_add_test(tc, test_order_and_ranges);
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
	return s;
}
