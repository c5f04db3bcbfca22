/*
 * t/unit/check_summary.c - the rolling summary kept in the session index
 * (src/index/index-summary.c).
 *
 * Random histories: each new snapshot continues one of the newest
 * committed ones (long conversations, with forks), and is committed or
 * failed. For every committed snapshot and a random point upto, the
 * summary a restart would send must name every turn 1..upto exactly once
 * (by its own line or by a range), in order, within its cap; the code
 * word that starts each instruction must survive while the cap leaves
 * room for it; fsck --full must find every record right; reindex must
 * make the same summaries.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "aptix.h"
#include "repo/repo.h"
#include "index/index.h"
#include "turn/run-int.h"
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

#define NSESSIONS 100

static uint64_t rng;

static unsigned rnd(unsigned n)
{
	rng = rng * 6364136223846793005ULL + 1442695040888963407ULL;
	return (unsigned)((rng >> 33) % n);
}

struct node {
	aptix_oid session;
	long seq;
	int committed;
};

static struct node nodes[NSESSIONS];

static void write_session(int i, int parent);

static void add_session(int i, int parent)
{
	nodes[i].seq = parent >= 0 ? nodes[parent].seq + 1 : 1;
	nodes[i].committed = parent < 0 || rnd(5) != 0;
	write_session(i, parent);
}

static void write_session(int i, int parent)
{
	aptix_txn *tx;
	aptix_turn t;
	aptix_session s;
	aptix_buf b = APTIX_BUF_INIT;
	aptix_oid instr, answer, turn;
	char text[256];
	int len;

	ck_assert_int_eq(aptix_txn_new(&tx, repo), 0);
	/* the code word first, then words of random length */
	len = snprintf(text, sizeof(text), "KW%d-%ld and then", i,
		       nodes[i].seq);
	while (len < 40 + (int)rnd(150))
		len += snprintf(text + len, sizeof(text) - (size_t)len,
				" w%.*s", (int)rnd(12), "abcdefghijklmnop");
	ck_assert_int_eq(aptix_txn_write_object(&instr, tx, APTIX_OBJ_BLOB,
						text, (size_t)len), 0);
	len = snprintf(text, sizeof(text), "Answer to %d: %s", i,
		       rnd(2) ? "short" : "a longer answer that goes on "
		       "and on about the code and what to change in it");
	ck_assert_int_eq(aptix_txn_write_object(&answer, tx, APTIX_OBJ_BLOB,
						text, (size_t)len), 0);
	aptix_turn_init(&t);
	t.conversation = (char *)"c";
	t.seq = nodes[i].seq;
	t.created_at = 1000 + i;
	t.status_at = t.created_at;
	t.instruction = instr;
	t.status = nodes[i].committed ? APTIX_TURN_COMPLETED :
		APTIX_TURN_FAILED;
	if (nodes[i].committed)
		t.answer = answer;
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
	ck_assert_int_eq(aptix_txn_write_object(&nodes[i].session, tx,
						APTIX_OBJ_SESSION, b.ptr,
						b.len), 0);
	ck_assert_msg(aptix_txn_commit(tx) == 0, "%s",
		      aptix_error_last()->message);
	aptix_txn_free(tx);
	aptix_buf_release(&b);
}

/* The code word of the instruction of turn seq on n's ancestry. */
static int ancestor_at(int n, long seq)
{
	aptix_session s;

	while (nodes[n].seq > seq) {
		int j;

		ck_assert_int_eq(aptix_session_lookup(&s, repo,
						      &nodes[n].session), 0);
		for (j = 0; j < n; j++)
			if (!aptix_oid_cmp(&nodes[j].session, &s.parent))
				break;
		aptix_session_release(&s);
		n = j;
	}
	return n;
}

/*
 * Check the summary of turns up to upto for a child of n: every turn
 * named once, in order, within cap; code words kept when there is room.
 */
static void check_one(int n, uint32_t upto, size_t cap, aptix_buf *keep)
{
	aptix_buf out = APTIX_BUF_INIT;
	uint32_t lo, hi, next = 1;
	const char *p;
	int r;

	r = aptix_index__rolling_summary(&out, &lo, &hi, repo,
					 &nodes[n].session, upto, cap);
	ck_assert_msg(r == 0, "session %d: %d %s", n, r,
		      r < 0 ? aptix_error_last()->message : "");
	if (keep)
		aptix_buf_put(keep, out.ptr, out.len);
	if (!upto) {
		ck_assert_uint_eq(out.len, 0);
		goto done;
	}
	ck_assert_uint_eq(lo, 1);
	ck_assert_uint_ge(hi, upto);
	ck_assert_uint_le(hi, (uint32_t)nodes[n].seq);
	ck_assert_msg(out.len <= cap, "session %d, upto %u: %zu bytes over "
		      "a cap of %zu", n, upto, out.len, cap);
	for (p = out.ptr; p && *p; p = strchr(p, '\n'), p = p ? p + 1 : p) {
		unsigned long a, b;

		if (!strncmp(p, "  Answer began: ", 16))
			continue;
		if (sscanf(p, "- Turns %lu-%lu asked: ", &a, &b) == 2) {
			ck_assert_uint_lt(a, b);
		} else {
			ck_assert_msg(sscanf(p, "- Turn %lu asked: ", &a) == 1,
				      "bad line: %.40s", p);
			b = a;
		}
		ck_assert_msg(a == next, "session %d: turn %u missing or "
			      "twice (line of %lu-%lu)", n, next, a, b);
		next = (uint32_t)b + 1;
	}
	ck_assert_uint_eq(next, hi + 1);
	/* at 4000 bytes forty turns keep their code words */
	if (cap >= 4000 && hi <= 40) {
		uint32_t k;

		for (k = 1; k <= upto; k++) {
			char word[32];

			snprintf(word, sizeof(word), "KW%d-%u ",
				 ancestor_at(n, k), k);
			ck_assert_msg(strstr(out.ptr, word) != NULL,
				      "session %d: %s missing", n, word);
		}
	}
done:
	aptix_buf_release(&out);
}

static const size_t caps[] = { 120, 400, 4000 };

START_TEST(test_every_turn_named)
{
	aptix_buf before = APTIX_BUF_INIT, after = APTIX_BUF_INIT;
	int recent[3] = { 0, 0, 0 };
	size_t n;
	int i;

	rng = 1234 + (uint64_t)_i;
	add_session(0, -1);
	for (i = 1; i < NSESSIONS; i++) {
		/* mostly the newest committed, sometimes a fork */
		int parent = recent[rnd(8) ? 0 : 1 + rnd(2)];

		add_session(i, parent);
		if (nodes[i].committed) {
			recent[2] = recent[1];
			recent[1] = recent[0];
			recent[0] = i;
		}
	}
	for (i = 0; i < NSESSIONS; i++) {
		uint32_t upto;

		if (!nodes[i].committed)
			continue;
		upto = 1 + (uint32_t)rnd((unsigned)nodes[i].seq);
		check_one(i, upto, caps[rnd(3)], NULL);
		check_one(i, (uint32_t)nodes[i].seq, 4000, &before);
		ck_assert_msg(aptix_index_verify_chain(repo,
						       &nodes[i].session) == 0,
			      "session %d: %s", i, aptix_error_last()->message);
	}
	ck_assert_int_eq(aptix_index_rebuild(repo, &n), 0);
	for (i = 0; i < NSESSIONS; i++)
		if (nodes[i].committed)
			check_one(i, (uint32_t)nodes[i].seq, 4000, &after);
	ck_assert_msg(before.len == after.len &&
		      !memcmp(before.ptr, after.ptr, before.len),
		      "reindex made other summaries");
	aptix_buf_release(&before);
	aptix_buf_release(&after);
}
END_TEST

/* One line of history, numbered from 1 again from session half on. */
static void write_renumbered(int half)
{
	int i;

	for (i = 0; i < NSESSIONS; i++) {
		nodes[i].seq = i < half ? i + 1 : i - half + 1;
		nodes[i].committed = 1;
		write_session(i, i - 1);
	}
}

/*
 * Plumbing writes turns with any number: here a fork (as
 * t/perf/build-store.sh makes them) starts again at 1 under a parent at
 * turn 70 of 100. Its records cannot hold ranges in turn order, so
 * they say "walk the history" (1) instead of breaking the index: every
 * write commits, fsck and reindex agree. The turns before the fork keep
 * their summaries.
 */
START_TEST(test_numbers_restart)
{
	int i, half = NSESSIONS * 7 / 10;
	size_t n;

	rng = 99;
	write_renumbered(half);
	for (i = 0; i < NSESSIONS; i++) {
		aptix_buf out = APTIX_BUF_INIT;
		uint32_t lo, hi;
		int r = aptix_index__rolling_summary(&out, &lo, &hi, repo,
						     &nodes[i].session,
						     (uint32_t)nodes[i].seq,
						     4000);

		ck_assert_msg(r == (i < half ? 0 : 1), "session %d: %d %s", i,
			      r, r < 0 ? aptix_error_last()->message : "");
		aptix_buf_release(&out);
		if (i < half)
			check_one(i, (uint32_t)nodes[i].seq, 400, NULL);
		ck_assert_msg(aptix_index_verify_chain(repo,
						       &nodes[i].session) == 0,
			      "session %d: %s", i, aptix_error_last()->message);
	}
	ck_assert_int_eq(aptix_index_rebuild(repo, &n), 0);
	ck_assert_uint_eq(n, NSESSIONS);
}
END_TEST

/*
 * A summary of a walked history (rolling_summary said 1) within its cap
 * whatever the number of turns: 5,000 one-turn lines into 40, 400 and
 * 4,000 bytes, numbered out of order.
 */
START_TEST(test_lines_within_cap)
{
	static const size_t lcaps[] = { 40, 400, 4000 };
	struct aptix_index_line *v = calloc(5000, sizeof(*v));
	size_t i, k;

	ck_assert_ptr_nonnull(v);
	for (i = 0; i < 5000; i++) {
		char text[64];

		snprintf(text, sizeof(text), "KW%zu asked something long enough "
			 "to be cut", i);
		aptix_index__line_set(&v[i], (long)(i % 70) + 1, text, text,
				      strlen(text), "an answer", 9);
	}
	for (k = 0; k < 3; k++) {
		size_t n;

		for (n = 1; n <= 5000; n *= 10) {
			aptix_buf out = APTIX_BUF_INIT;

			ck_assert_int_eq(aptix_index__summary_of_lines(&out, v,
								       n, lcaps[k]), 0);
			ck_assert_msg(out.len <= lcaps[k], "%zu lines: %zu "
				      "bytes over a cap of %zu", n, out.len,
				      lcaps[k]);
			ck_assert_msg(out.len > 0, "%zu lines: empty", n);
			aptix_buf_release(&out);
		}
	}
	ck_assert_uint_ge(aptix_index__summary_walk_max(4000), 16);
	ck_assert_uint_le(aptix_index__summary_walk_max(1 << 30), 1024);
	free(v);
}
END_TEST

/*
 * A restart on a history without a rolling summary (numbers restarting
 * at 1 under a fork, as plumbing writes them) reads only what its
 * summary needs and stays within context.summary-chars: the request of
 * a dry run says which turns it covers, and (under ASan or valgrind)
 * reads no freed memory while the history grows under it.
 */
START_TEST(test_restart_walked_history)
{
	aptix_run_options o = APTIX_RUN_OPTIONS_INIT;
	aptix_txn *tx;
	aptix_run *run;
	const aptix_run_result *res;
	const char *p;
	unsigned long lo, hi;
	size_t len;

	rng = 7;
	write_renumbered(NSESSIONS * 3 / 10);
	ck_assert_int_eq(aptix_txn_new(&tx, repo), 0);
	ck_assert_int_eq(aptix_txn_ref_update(tx, "refs/conversations/c",
					      &nodes[NSESSIONS - 1].session,
					      NULL, "test"), 0);
	ck_assert_int_eq(aptix_txn_commit(tx), 0);
	aptix_txn_free(tx);
	o.conversation = "c";
	o.instruction = "next";
	o.instruction_len = 4;
	o.dry_run = 1;
	o.new_chain = 1;
	o.no_stream = 1;
	ck_assert_int_eq(aptix_run_new(&run, repo, &o), 0);
	ck_assert_msg(aptix_run_begin(run) == 0, "%s",
		      aptix_error_last()->message);
	ck_assert_msg(aptix_run_request(run) == 0, "%s",
		      aptix_error_last()->message);
	res = aptix_run_result_of(run);
	p = strstr(res->request.ptr, "Summary of the earlier turns of this "
		   "conversation, turns ");
	ck_assert_ptr_nonnull(p);
	ck_assert_int_eq(sscanf(p, "Summary of the earlier turns of this "
				"conversation, turns %lu to %lu", &lo, &hi), 2);
	/* the window holds the last 6 (turns 70 down to 65 of the fork) */
	ck_assert_uint_eq(hi, (unsigned long)nodes[NSESSIONS - 7].seq);
	ck_assert_uint_ge(lo, 1);
	ck_assert_uint_le(lo, hi);
	/* the summary's text, JSON-escaped: within 4,000 bytes and a few
	 * escapes of its newlines */
	p = strstr(p, "):\\n") + 4;
	len = (size_t)(strstr(p, "\"") - p);
	ck_assert_msg(len <= 4000 + 2 * 64, "summary of %zu bytes", len);
	ck_assert_ptr_nonnull(strstr(p, "- Turns before these: not "
				     "summarised"));
	ck_assert_int_eq(aptix_run_finish(run), 0);
	aptix_run_free(run);
}
END_TEST

/*
 * A message of a restart's window cut for the replay: within max, valid
 * UTF-8, marked; long code blocks go first.
 */
START_TEST(test_cut_replay)
{
	aptix_buf text = APTIX_BUF_INIT, out = APTIX_BUF_INIT;
	size_t max, i;

	for (i = 0; i < 40; i++)
		aptix_buf_printf(&text, "Line %zu of prose, d\xc3\xa9j\xc3\xa0 "
				 "vu \xf0\x9f\x9a\x80.\n", i);
	aptix_buf_puts(&text, "```c\n");
	for (i = 0; i < 300; i++)
		aptix_buf_printf(&text, "int old_%zu;\n", i);
	aptix_buf_puts(&text, "```\nAnd the end.\n");
	ck_assert_int_eq(aptix_run__cut_replay(&out, text.ptr, text.len,
					       text.len), 0);
	ck_assert_uint_eq(out.len, text.len);
	for (max = 60; max < text.len; max += 37) {
		ck_assert_int_eq(aptix_run__cut_replay(&out, text.ptr,
						       text.len, max), 0);
		ck_assert_msg(out.len <= max, "%zu bytes over %zu", out.len,
			      max);
		ck_assert(aptix_utf8_valid(out.ptr, out.len));
		ck_assert_ptr_null(strstr(out.ptr, "int old_150;"));
		/* the block goes first: the prose is cut only without it */
		ck_assert_msg(strstr(out.ptr, "[300 lines of code not "
				     "replayed") != NULL ||
			      (strstr(out.ptr, " bytes not replayed ...]") &&
			       !strstr(out.ptr, "int old_")),
			      "max %zu of %zu: %s", max, text.len, out.ptr);
	}
	aptix_buf_release(&text);
	aptix_buf_release(&out);
}
END_TEST

Suite *summary_suite(void)
{
	Suite *s = suite_create("summary");
	TCase *tc = tcase_create("rolling");

	tcase_set_timeout(tc, 60);
	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_add_loop_test(tc, test_every_turn_named, 0, 2);
	tcase_add_test(tc, test_numbers_restart);
	tcase_add_test(tc, test_lines_within_cap);
	tcase_add_test(tc, test_restart_walked_history);
	tcase_add_test(tc, test_cut_replay);
	suite_add_tcase(s, tc);
	return s;
}
