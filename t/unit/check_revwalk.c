/*
 * t/unit/check_revwalk.c - the revision walker (src/history/revwalk.c,
 * aptix/revwalk.h).
 *
 * One small history, written as `continue`, `fork` and a failed turn
 * would write it (objects and index records in one transaction):
 *
 *	r0 (t=1000) -- a1 (1001) -- a2 (1002)        conversation a (HEAD)
 *	                  |\
 *	                  | f1 (1003, failed)          no ref names it
 *	                   \
 *	                    b1 (1004) -- b2 (1005)     conversation b, a fork
 *
 * and x (t=500), a child of a2 whose clock was wrong, for the orders
 * that differ when clocks are skewed.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "aptix.h"
#include "unit.h"

static char *tmpdir;
static aptix_repo *repo;

enum { R0, A1, A2, F1, B1, B2, X, NS };

static const struct {
	const char *name, *conv;
	int parent;
	int64_t created;
	int failed;
} hist[NS] = {
	{ "r0", "a", -1, 1000, 0 },
	{ "a1", "a", R0, 1001, 0 },
	{ "a2", "a", A1, 1002, 0 },
	{ "f1", "a", A1, 1003, 1 },
	{ "b1", "b", A1, 1004, 0 },
	{ "b2", "b", B1, 1005, 0 },
	{ "x", "c", A2, 500, 0 },
};

static aptix_oid ids[NS];
static aptix_oid last_turn;	/* the turn session_bytes() wrote */

static void setup(void)
{
	repo = unit_repo_new(&tmpdir);
}

static void teardown(void)
{
	unit_repo_free(&repo, &tmpdir);
}

/* The bytes of a session (its instruction and turn written by tx). */
static void session_bytes(aptix_buf *b, aptix_txn *tx, const char *instr,
			  const char *conv, const aptix_oid *parent,
			  int64_t created, int failed)
{
	aptix_oid iid, tid;
	aptix_turn t;
	aptix_session s;

	ck_assert_int_eq(aptix_txn_write_object(&iid, tx, APTIX_OBJ_BLOB,
						instr, strlen(instr)), 0);
	aptix_turn_init(&t);
	t.conversation = (char *)conv;
	t.seq = 1;
	t.created_at = created;
	t.status_at = created;
	t.instruction = iid;
	t.status = failed ? APTIX_TURN_FAILED : APTIX_TURN_COMPLETED;
	aptix_buf_clear(b);
	ck_assert_int_eq(aptix_turn_serialize(b, &t), 0);
	ck_assert_int_eq(aptix_txn_write_object(&tid, tx, APTIX_OBJ_TURN,
						b->ptr, b->len), 0);
	last_turn = tid;
	aptix_session_init(&s);
	s.conversation = (char *)conv;
	if (parent) {
		s.parent = *parent;
		s.has_parent = 1;
	}
	s.turn = tid;
	s.status = failed ? APTIX_SESSION_FAILED : APTIX_SESSION_COMMITTED;
	s.created_at = created;
	s.session_type = (char *)"agent";
	aptix_buf_clear(b);
	ck_assert_int_eq(aptix_session_serialize(b, &s), 0);
}

static void write_history(int upto)
{
	aptix_buf b = APTIX_BUF_INIT, ref = APTIX_BUF_INIT;
	aptix_txn *tx;
	char instr[64];
	int i;

	for (i = 0; i < upto; i++) {
		ck_assert_int_eq(aptix_txn_new(&tx, repo), 0);
		snprintf(instr, sizeof(instr), "instruction %s\nmore",
			 hist[i].name);
		session_bytes(&b, tx, instr, hist[i].conv, hist[i].parent < 0 ?
			      NULL : &ids[hist[i].parent], hist[i].created,
			      hist[i].failed);
		ck_assert_int_eq(aptix_txn_write_object(&ids[i], tx,
							APTIX_OBJ_SESSION,
							b.ptr, b.len), 0);
		if (!hist[i].failed) {
			aptix_buf_clear(&ref);
			aptix_buf_printf(&ref, "refs/conversations/%s",
					 hist[i].conv);
			ck_assert_int_eq(aptix_txn_ref_update(tx, ref.ptr,
							      &ids[i], NULL,
							      "test"), 0);
		}
		ck_assert_msg(aptix_txn_commit(tx) == 0, "%s",
			      aptix_error_last()->message);
		aptix_txn_free(tx);
	}
	ck_assert_int_eq(aptix_txn_new(&tx, repo), 0);
	ck_assert_int_eq(aptix_txn_symref_update(tx, "HEAD",
						 "refs/conversations/a",
						 "test"), 0);
	ck_assert_int_eq(aptix_txn_commit(tx), 0);
	aptix_txn_free(tx);
	aptix_buf_release(&b);
	aptix_buf_release(&ref);
}

static const char *name_of(const aptix_oid *id)
{
	int i;

	for (i = 0; i < NS; i++)
		if (!aptix_oid_cmp(id, &ids[i]))
			return hist[i].name;
	return "?";
}

/* The walk's sessions, by name, space-separated; ends the walk. */
static void walk_is(aptix_revwalk *w, const char *want)
{
	char got[256] = "";
	size_t n = 0;
	aptix_oid id;
	int r;

	while ((r = aptix_revwalk_next(&id, w)) == 0)
		n += (size_t)snprintf(got + n, sizeof(got) - n, "%s%s",
				      n ? " " : "", name_of(&id));
	ck_assert_msg(r == APTIX_ITEROVER, "%d: %s", r,
		      aptix_error_last()->message);
	ck_assert_str_eq(got, want);
}

static aptix_revwalk *walk_new(unsigned sorting, unsigned flags)
{
	aptix_revwalk *w;

	ck_assert_int_eq(aptix_revwalk_new(&w, repo), 0);
	ck_assert_int_eq(aptix_revwalk_sorting(w, sorting), 0);
	aptix_revwalk_set_flags(w, flags);
	return w;
}

START_TEST(test_orders)
{
	aptix_revwalk *w;

	write_history(NS);
	w = walk_new(APTIX_SORT_TIME, 0);
	ck_assert_int_eq(aptix_revwalk_push_head(w), 0);
	walk_is(w, "a2 a1 r0");
	aptix_revwalk_reset(w);
	ck_assert_int_eq(aptix_revwalk_push_ref(w, "refs/conversations/b"),
			 0);
	walk_is(w, "b2 b1 a1 r0");
	/* the settings outlive a reset; REVERSE reads the walk whole */
	aptix_revwalk_reset(w);
	ck_assert_int_eq(aptix_revwalk_sorting(w, APTIX_SORT_TIME |
					       APTIX_SORT_REVERSE), 0);
	ck_assert_int_eq(aptix_revwalk_push_head(w), 0);
	walk_is(w, "r0 a1 a2");
	aptix_revwalk_free(w);

	/* a skewed clock: date order puts x last, topological before a2 */
	w = walk_new(APTIX_SORT_TIME, 0);
	ck_assert_int_eq(aptix_revwalk_push_glob(w, "refs/conversations/*"),
			 0);
	walk_is(w, "b2 b1 a2 a1 r0 x");
	aptix_revwalk_free(w);
	w = walk_new(APTIX_SORT_TIME | APTIX_SORT_TOPOLOGICAL, 0);
	ck_assert_int_eq(aptix_revwalk_push_glob(w, "refs/conversations/*"),
			 0);
	walk_is(w, "b2 b1 x a2 a1 r0");
	aptix_revwalk_free(w);
	w = walk_new(APTIX_SORT_TIME | APTIX_SORT_TOPOLOGICAL |
		     APTIX_SORT_REVERSE, 0);
	ck_assert_int_eq(aptix_revwalk_push_glob(w, "refs/conversations/[bc]"),
			 0);
	walk_is(w, "r0 a1 a2 x b1 b2");
	aptix_revwalk_free(w);
}
END_TEST

START_TEST(test_hide_and_range)
{
	aptix_revwalk *w;
	aptix_revwalk_entry e;

	write_history(NS);
	/* b ^a: what b has that a has not */
	w = walk_new(APTIX_SORT_TIME, APTIX_REVWALK_FAILED);
	ck_assert_int_eq(aptix_revwalk_hide(w, &ids[A2]), 0);
	ck_assert_int_eq(aptix_revwalk_push(w, &ids[B2]), 0);
	walk_is(w, "b2 b1");
	aptix_revwalk_free(w);
	/* hide after push is the same */
	w = walk_new(APTIX_SORT_TIME, 0);
	ck_assert_int_eq(aptix_revwalk_push(w, &ids[B2]), 0);
	ck_assert_int_eq(aptix_revwalk_hide(w, &ids[A1]), 0);
	walk_is(w, "b2 b1");
	aptix_revwalk_free(w);
	/* --since ends branches, --until walks through */
	w = walk_new(APTIX_SORT_TIME, 0);
	aptix_revwalk_set_range(w, 1001, 1004);
	ck_assert_int_eq(aptix_revwalk_push(w, &ids[B2]), 0);
	ck_assert_int_eq(aptix_revwalk_next_entry(&e, w), 0);
	ck_assert_str_eq(name_of(&e.id), "b1");
	ck_assert_str_eq(e.conversation, "b");
	ck_assert_str_eq(e.summary, "instruction b1");
	ck_assert_uint_eq(e.generation, 3);
	ck_assert_int_eq(aptix_revwalk_next_entry(&e, w), 0);
	ck_assert_str_eq(name_of(&e.id), "a1");
	/* r0 is older than since: a1's parent is not in the walk */
	ck_assert_uint_eq(e.parent_seq, APTIX_REVWALK_NONE);
	ck_assert_int_eq(aptix_revwalk_next_entry(&e, w), APTIX_ITEROVER);
	aptix_revwalk_free(w);
	/* --no-walk */
	w = walk_new(APTIX_SORT_TIME, APTIX_REVWALK_NO_WALK |
		     APTIX_REVWALK_FAILED);
	ck_assert_int_eq(aptix_revwalk_push(w, &ids[A1]), 0);
	ck_assert_int_eq(aptix_revwalk_push(w, &ids[B2]), 0);
	walk_is(w, "b2 a1");
	aptix_revwalk_free(w);
}
END_TEST

START_TEST(test_failed_and_all)
{
	aptix_revwalk *w;
	aptix_revwalk_entry e, p;
	size_t n;

	write_history(NS);
	/* a failed attempt comes in beside its parent */
	w = walk_new(APTIX_SORT_TIME, APTIX_REVWALK_FAILED);
	ck_assert_int_eq(aptix_revwalk_push_head(w), 0);
	walk_is(w, "a2 f1 a1 r0");
	aptix_revwalk_free(w);
	/* --all: every session, the failed one too */
	w = walk_new(APTIX_SORT_TIME | APTIX_SORT_TOPOLOGICAL,
		     APTIX_REVWALK_FAILED);
	ck_assert_int_eq(aptix_revwalk_push_all(w), 0);
	walk_is(w, "b2 b1 f1 x a2 a1 r0");
	aptix_revwalk_free(w);
	w = walk_new(APTIX_SORT_TIME | APTIX_SORT_TOPOLOGICAL, 0);
	ck_assert_int_eq(aptix_revwalk_push_all(w), 0);
	walk_is(w, "b2 b1 x a2 a1 r0");
	aptix_revwalk_free(w);
	/* the newest three of the timeline, in date order */
	w = walk_new(APTIX_SORT_TIME, APTIX_REVWALK_FAILED);
	ck_assert_int_eq(aptix_revwalk_push_recent(w, 3), 0);
	ck_assert_int_eq(aptix_revwalk_next_entry(&e, w), 0);
	ck_assert_str_eq(name_of(&e.id), "b2");
	ck_assert_int_eq(aptix_revwalk_next_entry(&e, w), 0);
	ck_assert_str_eq(name_of(&e.id), "b1");
	ck_assert_int_eq(aptix_revwalk_get(&p, w, e.parent_seq), 0);
	ck_assert_str_eq(name_of(&p.id), "a1");
	ck_assert_int_eq(aptix_revwalk_next_entry(&e, w), 0);
	ck_assert_str_eq(name_of(&e.id), "f1");
	ck_assert_int_eq(e.status, APTIX_SESSION_FAILED);
	aptix_revwalk_free(w);
	/* a conversation without a head */
	w = walk_new(APTIX_SORT_TIME, APTIX_REVWALK_NO_WALK);
	ck_assert_int_eq(aptix_revwalk_push_conversation(w, "a", &n), 0);
	ck_assert_uint_eq(n, 4);
	walk_is(w, "a2 a1 r0");
	aptix_revwalk_free(w);
	/* archived conversations are left out of --all unless asked */
	ck_assert_int_eq(aptix_conversation_set_archived(repo, "b", 1), 0);
	w = walk_new(APTIX_SORT_TIME | APTIX_SORT_TOPOLOGICAL, 0);
	ck_assert_int_eq(aptix_revwalk_push_all(w), 0);
	walk_is(w, "x a2 a1 r0");
	aptix_revwalk_free(w);
	w = walk_new(APTIX_SORT_TOPOLOGICAL, APTIX_REVWALK_ARCHIVED);
	ck_assert_int_eq(aptix_revwalk_push_all(w), 0);
	walk_is(w, "b2 b1 x a2 a1 r0");
	aptix_revwalk_free(w);
}
END_TEST

/*
 * Sessions the index does not know (written straight into the object
 * database, as a stale index would leave them) are read from their
 * objects; a parent that is nowhere is an error, not a crash or a root.
 */
START_TEST(test_stale_index_and_missing_parent)
{
	aptix_odb *odb;
	aptix_txn *tx;
	aptix_buf b = APTIX_BUF_INIT;
	aptix_oid lost, y, z, blob;
	aptix_revwalk *w;
	aptix_revwalk_entry e;
	aptix_session_info si;

	write_history(A2 + 1);
	odb = aptix_repo_odb(repo);
	ck_assert_int_eq(aptix_txn_new(&tx, repo), 0);
	/* y: a child of a2 that only the objects know */
	session_bytes(&b, tx, "unindexed y", "a", &ids[A2], 2000, 0);
	ck_assert_int_eq(aptix_odb_write(&y, odb, APTIX_OBJ_SESSION, b.ptr,
					 b.len), 0);
	/* z: its parent was never stored */
	memset(&lost, 0xab, sizeof(lost));
	session_bytes(&b, tx, "orphan z", "a", &lost, 3000, 0);
	ck_assert_int_eq(aptix_odb_write(&z, odb, APTIX_OBJ_SESSION, b.ptr,
					 b.len), 0);
	ck_assert_int_eq(aptix_txn_commit(tx), 0);	/* the turns */
	aptix_txn_free(tx);
	ck_assert_int_eq(aptix_index_session(&si, repo, &y), APTIX_ENOTFOUND);

	w = walk_new(APTIX_SORT_TIME, APTIX_REVWALK_FAILED);
	ck_assert_int_eq(aptix_revwalk_push(w, &y), 0);
	ck_assert_int_eq(aptix_revwalk_next_entry(&e, w), 0);
	ck_assert(!aptix_oid_cmp(&e.id, &y));
	ck_assert_str_eq(e.summary, "unindexed y");
	ck_assert_str_eq(e.conversation, "a");
	walk_is(w, "a2 a1 r0");
	aptix_revwalk_free(w);

	w = walk_new(APTIX_SORT_TIME, 0);
	ck_assert_int_eq(aptix_revwalk_push(w, &z), 0);
	ck_assert_int_eq(aptix_revwalk_next(&y, w), APTIX_ENOTFOUND);
	ck_assert_ptr_nonnull(strstr(aptix_error_last()->message,
				     "is missing"));
	aptix_revwalk_free(w);

	/* not a session, no such object */
	ck_assert_int_eq(aptix_odb_write(&blob, odb, APTIX_OBJ_BLOB, "x", 1),
			 0);
	w = walk_new(APTIX_SORT_TIME, 0);
	ck_assert_int_eq(aptix_revwalk_push(w, &blob), APTIX_EINVALID);
	ck_assert_int_eq(aptix_revwalk_push(w, &lost), APTIX_ENOTFOUND);
	ck_assert_int_eq(aptix_revwalk_push_ref(w, "refs/conversations/no"),
			 APTIX_ENOTFOUND);
	walk_is(w, "");
	aptix_revwalk_free(w);
	aptix_buf_release(&b);
}
END_TEST

/* One session written and indexed (no ref moves). */
static void one_session(aptix_oid *id, const char *text, const char *conv,
			const aptix_oid *parent, int64_t created, int failed)
{
	aptix_buf b = APTIX_BUF_INIT;
	aptix_txn *tx;

	ck_assert_int_eq(aptix_txn_new(&tx, repo), 0);
	session_bytes(&b, tx, text, conv, parent, created, failed);
	ck_assert_int_eq(aptix_txn_write_object(id, tx, APTIX_OBJ_SESSION,
						b.ptr, b.len), 0);
	ck_assert_int_eq(aptix_txn_commit(tx), 0);
	aptix_txn_free(tx);
	aptix_buf_release(&b);
}

/*
 * The sessions of conversations: from their records down the children
 * index, and by a scan for one whose record cannot lead to them all
 * (two failed first attempts, then a first turn that worked).
 */
START_TEST(test_conversations)
{
	const char *convs[] = { "d", "a", "none" };
	size_t counts[3];
	aptix_oid d[3];
	aptix_revwalk *w;

	write_history(NS);
	one_session(&d[0], "first try", "d", NULL, 2000, 1);
	one_session(&d[1], "second try", "d", NULL, 2001, 1);
	one_session(&d[2], "third try", "d", NULL, 2002, 0);
	w = walk_new(APTIX_SORT_TIME | APTIX_SORT_REVERSE,
		     APTIX_REVWALK_FAILED | APTIX_REVWALK_NO_WALK);
	ck_assert_int_eq(aptix_revwalk_push_conversations(w, convs, 3,
							  counts), 0);
	ck_assert_uint_eq(counts[0], 3);
	ck_assert_uint_eq(counts[1], 4);
	ck_assert_uint_eq(counts[2], 0);
	walk_is(w, "r0 a1 a2 f1 ? ? ?");
	aptix_revwalk_free(w);
}
END_TEST

/* A turn (and its instruction) that no session references. */
static void lone_turn(aptix_oid *turn, const char *text, int64_t created)
{
	aptix_buf b = APTIX_BUF_INIT;
	aptix_txn *tx;

	ck_assert_int_eq(aptix_txn_new(&tx, repo), 0);
	session_bytes(&b, tx, text, "a", NULL, created, 0);
	*turn = last_turn;
	ck_assert_int_eq(aptix_txn_commit(tx), 0);
	aptix_txn_free(tx);
	aptix_buf_release(&b);
}

static aptix_reach *reach(int64_t grace, unsigned flags)
{
	aptix_reach_options o = APTIX_REACH_OPTIONS_INIT;
	aptix_reach *r;

	o.grace_ms = grace;
	o.flags = flags;
	ck_assert_int_eq(aptix_reach_new(&r, repo, &o), 0);
	ck_assert_msg(aptix_reach_compute(r) == 0, "%s",
		      aptix_error_last()->message);
	return r;
}

static void why_is(aptix_reach *r, const aptix_oid *id, int want)
{
	aptix_reach_why why = 0;
	int in = aptix_reach_contains(r, id, &why);

	ck_assert_msg(in == (want != 0) && (!in || (int)why == want),
		      "%s: %d (%d), want %d", aptix_oid_hex(id), in, why,
		      want);
}

/*
 * Reachability: refs, a reflog only, a claim only, failed sessions,
 * and the grace period (young sessions from the timeline, young turns
 * by their own time), each object with the first reason reaching it.
 */
START_TEST(test_reach)
{
	aptix_record_options o = APTIX_RECORD_OPTIONS_INIT;
	aptix_record_result claim;
	aptix_turn t;
	aptix_txn *tx;
	aptix_buf b = APTIX_BUF_INIT;
	aptix_oid young_turn, old_turn, orphan, zero;
	aptix_reach *r;
	int64_t now = aptix_now_ms();

	write_history(NS);
	/* b back to b1: b2 is in b's reflog only */
	ck_assert_int_eq(aptix_txn_new(&tx, repo), 0);
	ck_assert_int_eq(aptix_txn_ref_update(tx, "refs/conversations/b",
					      &ids[B1], &ids[B2], "back"), 0);
	/* a young session no ref names (commit-session without a ref) */
	session_bytes(&b, tx, "young orphan", "d", NULL, now - 1000, 0);
	ck_assert_int_eq(aptix_txn_write_object(&orphan, tx,
						APTIX_OBJ_SESSION, b.ptr,
						b.len), 0);
	ck_assert_int_eq(aptix_txn_commit(tx), 0);
	aptix_txn_free(tx);
	lone_turn(&young_turn, "young turn", now - 2000);
	lone_turn(&old_turn, "old turn", 1000);
	/* a turn running on a2: its instruction is held by the claim */
	aptix_turn_init(&t);
	t.conversation = (char *)"a";
	t.status = APTIX_TURN_PENDING;
	t.created_at = t.status_at = now;
	o.turn = &t;
	o.instruction.ptr = "claimed instruction";
	o.instruction.len = strlen(o.instruction.ptr);
	o.parent = &ids[A2];
	ck_assert_msg(aptix_record_begin(&claim, repo, &o) == 0, "%s",
		      aptix_error_last()->message);

	r = reach(0, 0);
	why_is(r, &ids[A2], APTIX_REACH_REF);
	why_is(r, &ids[R0], APTIX_REACH_REF);
	why_is(r, &ids[X], APTIX_REACH_REF);
	why_is(r, &ids[B1], APTIX_REACH_REF);
	why_is(r, &ids[B2], APTIX_REACH_REFLOG);
	why_is(r, &claim.instruction, APTIX_REACH_CLAIM);
	why_is(r, &claim.turn, APTIX_REACH_CLAIM);
	why_is(r, &ids[F1], APTIX_REACH_FAILED);
	why_is(r, &orphan, 0);
	why_is(r, &young_turn, 0);
	why_is(r, &old_turn, 0);
	ck_assert_uint_eq(aptix_reach_broken(r), 0);
	memset(&zero, 0, sizeof(zero));
	why_is(r, &zero, 0);
	aptix_reach_free(r);

	/* the grace period: the timeline's young sessions */
	r = reach(60 * 1000, 0);
	why_is(r, &orphan, APTIX_REACH_RECENT);
	why_is(r, &young_turn, 0);
	aptix_reach_free(r);
	/* ... and young objects, by their own time */
	r = reach(60 * 1000, APTIX_REACH_ALL | APTIX_REACH_SCAN_YOUNG);
	why_is(r, &orphan, APTIX_REACH_RECENT);
	why_is(r, &young_turn, APTIX_REACH_RECENT);
	why_is(r, &old_turn, 0);
	aptix_reach_free(r);
	/* only some roots */
	r = reach(0, APTIX_REACH_REFLOG);
	why_is(r, &ids[B2], APTIX_REACH_REFLOG);
	why_is(r, &ids[F1], 0);
	aptix_reach_free(r);
	aptix_buf_release(&b);
}
END_TEST

/* A missing object that a root reaches is in the set, and counted. */
START_TEST(test_reach_broken)
{
	aptix_reach *r;
	aptix_oid lost;

	write_history(A2 + 1);
	ck_assert_int_eq(aptix_reach_new(&r, repo, NULL), 0);
	memset(&lost, 0xcd, sizeof(lost));
	ck_assert_int_eq(aptix_reach_add(r, &lost, APTIX_REACH_ADDED), 0);
	ck_assert_int_eq(aptix_reach_compute(r), 0);
	why_is(r, &lost, APTIX_REACH_ADDED);
	ck_assert_uint_eq(aptix_reach_broken(r), 1);
	/* 3 sessions, 3 turns, 3 instructions, and the lost one */
	ck_assert_uint_eq(aptix_reach_count(r), 10);
	aptix_reach_free(r);
}
END_TEST

/* Every object, numbered by rank, for a numbered reachability. */
struct numbered {
	aptix_oid *ids;
	size_t n, alloc;
	int follows;		/* links_at calls that gave links */
};

static int number_collect(const aptix_oid *id, void *payload)
{
	struct numbered *nb = payload;

	if (nb->n == nb->alloc) {
		nb->alloc = nb->alloc ? 2 * nb->alloc : 64;
		nb->ids = realloc(nb->ids, nb->alloc * sizeof(*nb->ids));
		ck_assert_ptr_nonnull(nb->ids);
	}
	nb->ids[nb->n++] = *id;
	return 0;
}

static int oid_cmp_cb(const void *a, const void *b)
{
	return aptix_oid_cmp(a, b);
}

static long number_of(const aptix_oid *id, void *payload)
{
	struct numbered *nb = payload;
	const aptix_oid *hit = bsearch(id, nb->ids, nb->n, sizeof(*id),
				       oid_cmp_cb);

	return hit ? (long)(hit - nb->ids) : -1;
}

struct number_relay {
	struct numbered *nb;
	aptix_reach_mark_fn cb;
	void *cb_payload;
};

static int number_relay_cb(const aptix_oid *id, aptix_otype type,
			   const char *field, void *payload)
{
	struct number_relay *nr = payload;

	(void)field;
	return nr->cb(id, type, number_of(id, nr->nb), nr->cb_payload);
}

/* The links of object n, read from the store; the odd ones: "unknown". */
static int links_at(size_t n, aptix_reach_mark_fn cb, void *cb_payload,
		    void *payload)
{
	struct numbered *nb = payload;
	struct number_relay nr = { nb, cb, cb_payload };
	aptix_buf data = APTIX_BUF_INIT;
	aptix_otype type;
	int r;

	if (n % 2)
		return APTIX_ENOTFOUND;	/* the walk reads it itself */
	r = aptix_odb_read(&data, &type, aptix_repo_odb(repo), &nb->ids[n], 0);
	if (r == 0)
		r = aptix_object_foreach_ref(type, data.ptr, data.len,
					     number_relay_cb, &nr);
	aptix_buf_release(&data);
	nb->follows++;
	return r;
}

/*
 * With the caller's numbering (fsck's), the set is the same as with a
 * map, by number and by id, with the same reasons, a missing object
 * (not numbered) included.
 */
START_TEST(test_reach_numbered)
{
	aptix_reach_options o = APTIX_REACH_OPTIONS_INIT;
	struct numbered nb = { NULL, 0, 0, 0 };
	aptix_reach_why why, want;
	aptix_reach *r, *plain;
	aptix_oid lost, lone;
	size_t i, reached = 0;

	write_history(NS);
	lone_turn(&lone, "nothing reaches it", 1000);
	ck_assert_int_eq(aptix_odb_foreach(aptix_repo_odb(repo),
					   number_collect, &nb), 0);
	qsort(nb.ids, nb.n, sizeof(*nb.ids), oid_cmp_cb);
	memset(&lost, 0xcd, sizeof(lost));
	o.count = nb.n;
	o.number = number_of;
	o.links_at = links_at;
	o.links_payload = &nb;
	ck_assert_int_eq(aptix_reach_new(&r, repo, &o), 0);
	ck_assert_int_eq(aptix_reach_add(r, &lost, APTIX_REACH_ADDED), 0);
	ck_assert_int_eq(aptix_reach_compute(r), 0);
	ck_assert_int_eq(aptix_reach_new(&plain, repo, NULL), 0);
	ck_assert_int_eq(aptix_reach_add(plain, &lost, APTIX_REACH_ADDED), 0);
	ck_assert_int_eq(aptix_reach_compute(plain), 0);
	ck_assert_int_gt(nb.follows, 0);
	for (i = 0; i < nb.n; i++) {
		int in = aptix_reach_contains(plain, &nb.ids[i], &want);

		ck_assert_int_eq(aptix_reach_contains_at(r, i, &why), in);
		ck_assert(!in || why == want);
		ck_assert_int_eq(aptix_reach_contains(r, &nb.ids[i], &why),
				 in);
		ck_assert(!in || why == want);
		reached += in;
	}
	ck_assert_uint_gt(reached, 0);
	ck_assert_uint_lt(reached, nb.n);	/* the lone turn */
	why_is(r, &lone, 0);
	why_is(r, &lost, APTIX_REACH_ADDED);
	ck_assert_int_eq(aptix_reach_contains_at(r, nb.n, NULL), 0);
	ck_assert_uint_eq(aptix_reach_count(r), aptix_reach_count(plain));
	ck_assert_uint_eq(aptix_reach_broken(r), 1);
	aptix_reach_free(plain);
	aptix_reach_free(r);
	free(nb.ids);
}
END_TEST

/*
 * --all in topological date order streams from the timeline; read whole
 * (the same walk, reversed: APTIX_SORT_REVERSE reads it whole) it must
 * give the same sessions in the same order, with the same parents, on a
 * random history with skewed clocks, equal times, forks, failed
 * attempts, an archived conversation and a time range.
 */
/* more than a piece of the timeline (stream.c's CHUNK) */
#define RN 600
static aptix_oid rids[RN];

static unsigned rnd_state = 12345;
static unsigned rnd(unsigned n)
{
	rnd_state = rnd_state * 1103515245u + 12345u;
	return (rnd_state >> 8) % n;
}

static void write_random_history(void)
{
	aptix_buf b = APTIX_BUF_INIT, ref = APTIX_BUF_INIT;
	int64_t at[RN];
	int conv[RN], failed[RN], head[RN], parent, nconv = 0, i;
	aptix_txn *tx;
	char instr[64], cname[16];

	/* one write (a commit each would be slow): refs at its end */
	ck_assert_int_eq(aptix_txn_new(&tx, repo), 0);
	for (i = 0; i < RN; i++) {
		parent = i && rnd(100) >= 12 ? (int)rnd((unsigned)i) : -1;
		at[i] = 100000 + (int64_t)i * 10;
		if (parent >= 0 && rnd(100) < 15)	/* a clock behind */
			at[i] = at[parent] - 1 - (int64_t)rnd(300);
		else if (i && rnd(100) < 10)		/* the same ms */
			at[i] = at[i - 1];
		conv[i] = parent < 0 || rnd(100) < 20 ? nconv++ : conv[parent];
		head[conv[i]] = -1;
		failed[i] = rnd(100) < 10;
		snprintf(cname, sizeof(cname), "c%d", conv[i]);
		snprintf(instr, sizeof(instr), "random %d", i);
		session_bytes(&b, tx, instr, cname, parent < 0 ? NULL :
			      &rids[parent], at[i], failed[i]);
		ck_assert_int_eq(aptix_txn_write_object(&rids[i], tx,
							APTIX_OBJ_SESSION,
							b.ptr, b.len), 0);
	}
	for (i = 0; i < RN; i++)
		if (!failed[i])
			head[conv[i]] = i;
	for (i = 0; i < nconv; i++) {
		if (head[i] < 0)
			continue;
		aptix_buf_clear(&ref);
		aptix_buf_printf(&ref, "refs/conversations/c%d", i);
		ck_assert_int_eq(aptix_txn_ref_update(tx, ref.ptr,
						      &rids[head[i]], NULL,
						      "test"), 0);
	}
	ck_assert_msg(aptix_txn_commit(tx) == 0, "%s",
		      aptix_error_last()->message);
	aptix_txn_free(tx);
	aptix_buf_release(&b);
	aptix_buf_release(&ref);
}

struct walked {
	aptix_oid id, parent;
	uint32_t seq, parent_seq;
};

/* Walk push_all whole; *n entries, in the order returned. */
static struct walked *walk_all(size_t *n, unsigned sorting, unsigned flags,
			       int64_t since, int64_t until)
{
	struct walked *v = calloc(RN + 1, sizeof(*v));
	aptix_revwalk_entry e, again;
	aptix_revwalk *w = walk_new(sorting, flags);
	uint32_t prev = APTIX_REVWALK_NONE;
	int r;

	aptix_revwalk_set_range(w, since, until);
	ck_assert_int_eq(aptix_revwalk_push_all(w), 0);
	for (*n = 0; (r = aptix_revwalk_next_entry(&e, w)) == 0; (*n)++) {
		ck_assert_uint_lt(*n, RN);
		v[*n].id = e.id;
		v[*n].parent = e.parent;
		v[*n].seq = e.seq;
		v[*n].parent_seq = e.parent_seq;
		/* the one returned last is there; a streamed walk keeps no
		 * other */
		ck_assert_int_eq(aptix_revwalk_get(&again, w, e.seq), 0);
		ck_assert_int_eq(aptix_oid_cmp(&again.id, &e.id), 0);
		if (!(sorting & APTIX_SORT_REVERSE) &&
		    prev != APTIX_REVWALK_NONE)
			ck_assert_int_eq(aptix_revwalk_get(&again, w, prev),
					 APTIX_ENOTFOUND);
		prev = e.seq;
	}
	ck_assert_msg(r == APTIX_ITEROVER, "%s", aptix_error_last()->message);
	aptix_revwalk_free(w);
	return v;
}

/* Streamed and read whole agree: order, and each parent by number. */
static void same_walks(unsigned flags, int64_t since, int64_t until)
{
	size_t n, m, i, j;
	struct walked *a = walk_all(&n, APTIX_SORT_TIME |
				    APTIX_SORT_TOPOLOGICAL, flags, since,
				    until);
	struct walked *b = walk_all(&m, APTIX_SORT_TIME |
				    APTIX_SORT_TOPOLOGICAL |
				    APTIX_SORT_REVERSE, flags, since, until);

	ck_assert_uint_eq(n, m);
	ck_assert_uint_gt(n, 0);

	for (i = 0; i < n; i++) {
		const struct walked *x = &a[i], *y = &b[n - 1 - i];

		ck_assert_msg(!aptix_oid_cmp(&x->id, &y->id),
			      "flags %u range %lld-%lld: #%zu of %zu differs",
			      flags, (long long)since, (long long)until, i, n);
		/* the parent is numbered when the whole walk returns it */
		ck_assert_int_eq(x->parent_seq == APTIX_REVWALK_NONE,
				 y->parent_seq == APTIX_REVWALK_NONE);
		if (x->parent_seq == APTIX_REVWALK_NONE)
			continue;
		for (j = i + 1; j < n && a[j].seq != x->parent_seq; j++)
			;
		ck_assert_uint_lt(j, n);	/* after it, as its number */
		ck_assert_int_eq(aptix_oid_cmp(&a[j].id, &x->parent), 0);
	}
	free(a);
	free(b);
}

START_TEST(test_all_streams)
{
	rnd_state = 12345u + (unsigned)_i;
	write_random_history();
	same_walks(APTIX_REVWALK_FAILED, 0, 0);
	same_walks(0, 0, 0);
	same_walks(APTIX_REVWALK_FAILED, 100500, 101200);
	ck_assert_int_eq(aptix_conversation_set_archived(repo, "c1", 1), 0);
	same_walks(APTIX_REVWALK_FAILED, 0, 0);
	same_walks(APTIX_REVWALK_FAILED | APTIX_REVWALK_ARCHIVED, 0, 0);
}
END_TEST

Suite *revwalk_suite(void)
{
	Suite *s = suite_create("revwalk");
	TCase *tc = tcase_create("walk");

	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_add_test(tc, test_orders);
	tcase_add_test(tc, test_hide_and_range);
	tcase_add_test(tc, test_failed_and_all);
	tcase_add_test(tc, test_stale_index_and_missing_parent);
	tcase_add_test(tc, test_conversations);
	tcase_add_loop_test(tc, test_all_streams, 0, 2);
	suite_add_tcase(s, tc);
	tc = tcase_create("reach");
	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_add_test(tc, test_reach);
	tcase_add_test(tc, test_reach_broken);
	tcase_add_test(tc, test_reach_numbered);
	suite_add_tcase(s, tc);
	return s;
}
