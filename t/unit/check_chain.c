/*
 * t/unit/check_chain.c - what the model holds, from the index record
 * (src/index/index-chain.c) against the walk over the chain's turns (chain.c).
 *
 * Random histories: every new snapshot hangs off a random earlier one;
 * it is committed or failed, its turn completed (with a response id
 * that continues the parent's chain, starts a new one, or names a chain
 * that is not the parent's) or failed; it sends random versions of a few
 * paths and random chunks. For every snapshot and random active files
 * and chunks, planning from the record must decide exactly what the
 * walk decides; after reindex too.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "aptix.h"
#include "repo/repo.h"
#include "index/index.h"
#include "index/chain.h"
#include "unit.h"

static char *tmpdir;
static aptix_repo *repo;

static void setup(void)
{
	int existed;

	tmpdir = unit_mkdtemp();
	ck_assert_msg(aptix_repo_init(&repo, tmpdir, &existed) == 0, "%s",
		      aptix_error_last()->message);
}

static void teardown(void)
{
	aptix_repo_free(repo);
	repo = NULL;
	unit_rmtree(tmpdir);
	free(tmpdir);
	tmpdir = NULL;
}

#define NPATHS 4
#define NVERSIONS 3
#define NCHUNKS 6
#define NSESSIONS 60

static const char *const paths[NPATHS] = { "a.c", "b.c", "src/x.h", "z" };

static uint64_t rng;

static unsigned rnd(unsigned n)
{
	rng = rng * 6364136223846793005ULL + 1442695040888963407ULL;
	return (unsigned)((rng >> 33) % n);
}

/* hex SHA-256 of a version: 64 hex digits */
static void version_sha(char out[65], unsigned path, unsigned version)
{
	char text[32];
	aptix_oid id;

	snprintf(text, sizeof(text), "%u/%u", path, version);
	ck_assert_int_eq(aptix_sha256(&id, text, strlen(text)), 0);
	aptix_oid_tostr(out, &id);
}

static void chunk_id(char out[40], unsigned c)
{
	snprintf(out, 40, "00000000-0000-4000-8000-%012u", c % 3);
}

static void chunk_hash(char out[65], unsigned c)
{
	version_sha(out, 100 + c, 0);
}

struct node {
	aptix_oid session;
	char response[32];	/* "" when none */
	int committed, completed;
};

static struct node nodes[NSESSIONS];

/* The response id a child of n would continue, as the walk sees it. */
static const char *chain_response(int n)
{
	while (n >= 0 && !nodes[n].committed)
		n = -1;	/* parents of failed ones are not tracked: none */
	return n >= 0 && nodes[n].completed ? nodes[n].response : NULL;
}

static void add_session(int i, int parent, int *parents)
{
	aptix_txn *tx;
	aptix_turn t;
	aptix_session s;
	aptix_buf b = APTIX_BUF_INIT;
	aptix_oid instr, answer, turn, snip[NCHUNKS];
	aptix_file_ref files[NPATHS];
	aptix_chunk_ref chunks[NCHUNKS];
	char shas[NPATHS][65], ids[NCHUNKS][40], hashes[NCHUNKS][65];
	char text[64], prev[32];
	const char *pr = parent >= 0 ? chain_response(parent) : NULL;
	size_t nf = 0, nc = 0;
	unsigned k;

	ck_assert_int_eq(aptix_txn_new(&tx, repo), 0);
	snprintf(text, sizeof(text), "instruction %d", i);
	ck_assert_int_eq(aptix_txn_write_object(&instr, tx, APTIX_OBJ_BLOB,
						text, strlen(text)), 0);
	ck_assert_int_eq(aptix_txn_write_object(&answer, tx, APTIX_OBJ_BLOB,
						"answer", 6), 0);
	aptix_turn_init(&t);
	t.conversation = (char *)"c";
	t.seq = i + 1;
	t.created_at = 1000 + i;
	t.status_at = t.created_at;
	t.instruction = instr;
	nodes[i].committed = parent < 0 || rnd(5) != 0;
	nodes[i].completed = rnd(6) != 0;
	t.status = nodes[i].completed ? APTIX_TURN_COMPLETED :
		APTIX_TURN_FAILED;
	if (nodes[i].completed) {
		t.answer = answer;
		snprintf(nodes[i].response, sizeof(nodes[i].response),
			 "resp_%d", i);
		t.response_id = nodes[i].response;
		switch (rnd(6)) {
		case 0:		/* a new chain */
			break;
		case 1:		/* a restart that names the old chain */
			t.previous_response_id = (char *)(pr ? pr : "x");
			t.chain_restarted = 1;
			break;
		case 2:		/* a chain that is not the parent's */
			snprintf(prev, sizeof(prev), "other_%d", i);
			t.previous_response_id = prev;
			break;
		default:
			t.previous_response_id = (char *)pr;
		}
	}
	for (k = 0; k < NPATHS; k++) {
		if (rnd(2))
			continue;
		version_sha(shas[nf], k, rnd(NVERSIONS));
		memset(&files[nf], 0, sizeof(files[nf]));
		files[nf].path = (char *)paths[k];
		files[nf].sha256 = shas[nf];
		files[nf].size = 10 + k;
		files[nf].sent = rnd(4) != 0;
		nf++;
	}
	for (k = 0; k < NCHUNKS; k++) {
		unsigned c = rnd(NCHUNKS * 2);

		if (rnd(2))
			continue;
		chunk_id(ids[nc], c);
		chunk_hash(hashes[nc], c);
		snprintf(text, sizeof(text), "chunk %u", c);
		ck_assert_int_eq(aptix_txn_write_object(&snip[nc], tx,
							APTIX_OBJ_BLOB, text,
							strlen(text)), 0);
		memset(&chunks[nc], 0, sizeof(chunks[nc]));
		chunks[nc].chunk_id = ids[nc];
		chunks[nc].path = (char *)"p.c";
		chunks[nc].start_line = 1;
		chunks[nc].end_line = 2;
		chunks[nc].content_hash = hashes[nc];
		chunks[nc].snippet = snip[nc];
		chunks[nc].sent = rnd(3) != 0;
		nc++;
	}
	t.files = files;
	t.nfiles = nf;
	t.chunks = chunks;
	t.nchunks = nc;
	ck_assert_int_eq(aptix_turn_serialize(&b, &t), 0);
	ck_assert_int_eq(aptix_txn_write_object(&turn, tx, APTIX_OBJ_TURN,
						b.ptr, b.len), 0);
	aptix_buf_clear(&b);
	aptix_session_init(&s);
	s.conversation = (char *)"c";
	if (parent >= 0) {
		s.parent = nodes[parent].session;
		s.has_parent = 1;
	}
	s.turn = turn;
	s.status = nodes[i].committed ? APTIX_SESSION_COMMITTED :
		APTIX_SESSION_FAILED;
	s.created_at = 1000 + i;
	s.session_type = (char *)"agent";
	ck_assert_int_eq(aptix_session_serialize(&b, &s), 0);
	ck_assert_msg(aptix_txn_write_object(&nodes[i].session, tx,
					     APTIX_OBJ_SESSION, b.ptr,
					     b.len) == 0, "%s",
		      aptix_error_last()->message);
	ck_assert_msg(aptix_txn_commit(tx) == 0, "%s",
		      aptix_error_last()->message);
	aptix_txn_free(tx);
	aptix_buf_release(&b);
	parents[i] = parent;
}

/* Random active files and chunks, planned both ways. */
static void compare(int n, unsigned round)
{
	aptix_file_set f1, f2;
	aptix_chunk_set c1, c2;
	struct aptix__chain ch;
	aptix_active_file *af;
	aptix_rag_chunk *rc;
	unsigned k;
	size_t j;
	int r;

	aptix_file_set_init(&f1);
	aptix_chunk_set_init(&c1);
	f1.v = calloc(NPATHS, sizeof(*f1.v));
	c1.v = calloc(NCHUNKS, sizeof(*c1.v));
	ck_assert_ptr_nonnull(f1.v);
	ck_assert_ptr_nonnull(c1.v);
	for (k = 0; k < NPATHS; k++) {
		af = &f1.v[f1.n++];
		af->path = strdup(paths[k]);
		version_sha(af->sha256, k, rnd(NVERSIONS));
		af->action = APTIX_FILE_SEND;
	}
	for (k = 0; k < NCHUNKS; k++) {
		unsigned c = rnd(NCHUNKS * 2);
		char id[40];

		rc = &c1.v[c1.n++];
		chunk_id(id, c);
		rc->chunk_id = strdup(id);
		chunk_hash(rc->content_hash, c);
		rc->sent = 1;
	}
	/* the same sets, for the walk */
	aptix_file_set_init(&f2);
	aptix_chunk_set_init(&c2);
	f2.v = calloc(NPATHS, sizeof(*f2.v));
	c2.v = calloc(NCHUNKS, sizeof(*c2.v));
	for (j = 0; j < f1.n; j++) {
		f2.v[j] = f1.v[j];
		f2.v[j].path = strdup(f1.v[j].path);
		aptix_buf_init(&f2.v[j].content, 0);
	}
	f2.n = f1.n;
	for (j = 0; j < c1.n; j++) {
		c2.v[j] = c1.v[j];
		c2.v[j].chunk_id = strdup(c1.v[j].chunk_id);
		aptix_buf_init(&c2.v[j].text, 0);
	}
	c2.n = c1.n;

	aptix__chain_init(&ch, repo, &nodes[n].session);
	r = aptix_index__chain_plan(repo, &nodes[n].session, &f1, &c1, NULL);
	ck_assert_msg(r == 0, "session %d: the record cannot tell (%d)", n, r);
	ck_assert_int_eq(aptix__chain_plan_walk(&ch, &f2, &c2), 0);
	aptix__chain_release(&ch);
	for (j = 0; j < f1.n; j++)
		ck_assert_msg(f1.v[j].action == f2.v[j].action,
			      "round %u, session %d, file %s: record %d, "
			      "walk %d", round, n, f1.v[j].path,
			      f1.v[j].action, f2.v[j].action);
	for (j = 0; j < c1.n; j++)
		ck_assert_msg(c1.v[j].sent == c2.v[j].sent,
			      "round %u, session %d, chunk %zu: record %d, "
			      "walk %d", round, n, j, c1.v[j].sent,
			      c2.v[j].sent);
	aptix_file_set_release(&f1);
	aptix_file_set_release(&f2);
	aptix_chunk_set_release(&c1);
	aptix_chunk_set_release(&c2);
}

START_TEST(test_record_matches_walk)
{
	int parents[NSESSIONS];
	unsigned round;
	size_t n;
	int i;

	rng = 42 + (uint64_t)_i;
	for (i = 0; i < NSESSIONS; i++)
		add_session(i, i ? (int)rnd((unsigned)i) : -1, parents);
	for (round = 0; round < 3; round++)
		for (i = 0; i < NSESSIONS; i++)
			compare(i, round);
	/* reindex computes the same records */
	ck_assert_int_eq(aptix_index_rebuild(repo, &n), 0);
	ck_assert_uint_eq(n, NSESSIONS);
	for (i = 0; i < NSESSIONS; i++)
		compare(i, 9);
}
END_TEST

START_TEST(test_chain_info)
{
	struct aptix_index_chain_info info;
	int parents[NSESSIONS];
	int i;

	rng = 7;
	for (i = 0; i < 10; i++)
		add_session(i, i - 1, parents);
	ck_assert_int_eq(aptix_index__chain_plan(repo, &nodes[9].session,
						 NULL, NULL, &info), 0);
	if (nodes[9].committed && nodes[9].completed)
		ck_assert_int_eq(info.has_chain, 1);
	if (info.has_chain) {
		ck_assert_uint_ge(info.links, 1);
		ck_assert_uint_gt(info.chars, 0);
	}
	ck_assert_uint_le(info.files, NPATHS);
}
END_TEST

Suite *chain_suite(void)
{
	Suite *s = suite_create("chain");
	TCase *tc = tcase_create("record");

	tcase_set_timeout(tc, 60);
	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_add_loop_test(tc, test_record_matches_walk, 0, 4);
	tcase_add_test(tc, test_chain_info);
	suite_add_tcase(s, tc);
	return s;
}
