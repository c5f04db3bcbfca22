/*
 * t/unit/check_record.c - the recorder (aptix/record.h, src/record.c):
 * turns recorded from their content make the objects, snapshot, title,
 * index records, ref and reflog entry; a fork, a failed turn, a
 * compare-and-swap that fails and writes nothing, the choice of bases
 * (every 8th turn stored without), the two writes of a turn that waits
 * on the network; and a history recorded again from its own objects
 * into another store gives the same ids, the same stored values and the
 * same index records.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "aptix.h"
#include "repo/repo.h"
#include "index/index.h"
#include "txn/txn.h"
#include "object/zstream.h"
#include "aptix/sys/odb_backend.h"
#include "unit.h"

static char *tmpdir, *tmpdir2;
static aptix_repo *repo, *repo2;

/*
 * Each store is made with nothing else open, then both are opened:
 * aptix_repo_init() while another store is open fails (ENOTFOUND, no
 * message), a bug of its own left for its owner.
 */
static void open_new(aptix_repo **out, const char *dir)
{
	char *path = unit_path(dir, ".aptix");
	int existed;

	ck_assert_msg(aptix_repo_init(out, dir, &existed) == 0, "%s",
		      aptix_error_last()->message);
	aptix_repo_free(*out);
	ck_assert_msg(aptix_repo_open(out, path) == 0, "%s",
		      aptix_error_last()->message);
	free(path);
}

static void setup(void)
{
	tmpdir = unit_mkdtemp();
	tmpdir2 = unit_mkdtemp();
	open_new(&repo, tmpdir);
	aptix_repo_free(repo);
	open_new(&repo2, tmpdir2);
	repo = NULL;
	open_new(&repo, tmpdir);
}

static void teardown(void)
{
	aptix_repo_free(repo);
	aptix_repo_free(repo2);
	repo = repo2 = NULL;
	unit_rmtree(tmpdir);
	unit_rmtree(tmpdir2);
	free(tmpdir);
	free(tmpdir2);
	tmpdir = tmpdir2 = NULL;
}

/* The content of turn k: texts long enough to be stored against bases. */
struct content {
	char instr[128], answer[256], request[1024], response[1024];
	char file[256];
	char sha[65], path[16], model[4], mode[4], conv[16];
	char warning[256], *warnings[1];
	aptix_file_ref fref;
	aptix_record_data fdata, cdata;
	aptix_chunk_ref cref;
	char snippet[160], cid[40], chash[65], cpath[16];
	aptix_turn t;
};

static void make_content(struct content *c, const char *conv, long seq,
			 int k, aptix_turn_status status)
{
	aptix_oid id;

	memset(c, 0, sizeof(*c));
	snprintf(c->instr, sizeof(c->instr), "Question %d about the parser\n"
		 "and the way it reads tokens, one after the other.\n", k);
	snprintf(c->answer, sizeof(c->answer), "Answer %d: the parser reads "
		 "a token, then \"peeks\" at the next one; it never goes "
		 "back, so a grammar must be LL(1) for it.\n", k);
	snprintf(c->file, sizeof(c->file), "int parse(void)\n{\n\t/* version "
		 "%d */\n\treturn next_token() + peek_token();\n}\n", k / 2);
	snprintf(c->request, sizeof(c->request), "{\"model\":\"m\",\"input\":"
		 "[{\"role\":\"user\",\"content\":\"int parse(void)\\n{\\n\\t/* "
		 "version %d */\\n\\treturn next_token() + peek_token();\\n}\\n"
		 "\\nQuestion %d about the parser\\nand the way it reads "
		 "tokens, one after the other.\\n\"},{\"role\":\"user\","
		 "\"content\":\"/* next_token: read one token of the input, "
		 "%d */\\nint next_token(void);\\n\"}]}", k / 2, k, k % 3);
	snprintf(c->response, sizeof(c->response), "{\"id\":\"resp_%d\","
		 "\"output_text\":\"Answer %d: the parser reads a token, then "
		 "\\\"peeks\\\" at the next one; it never goes back, so a "
		 "grammar must be LL(1) for it.\\n\",\"usage\":{}}", k, k);
	ck_assert_int_eq(aptix_sha256(&id, c->file, strlen(c->file)), 0);
	aptix_oid_tostr(c->sha, &id);
	snprintf(c->path, sizeof(c->path), "src/parse.c");
	snprintf(c->model, sizeof(c->model), "m");
	snprintf(c->mode, sizeof(c->mode), "ask");
	snprintf(c->conv, sizeof(c->conv), "%s", conv);
	c->fref.path = c->path;
	c->fref.sha256 = c->sha;
	c->fref.size = (long)strlen(c->file);
	c->fref.sent = c->fref.touched = 1;
	c->fdata.ptr = c->file;
	c->fdata.len = strlen(c->file);
	aptix_turn_init(&c->t);
	c->t.conversation = c->conv;
	c->t.seq = seq;
	c->t.status = status;
	c->t.model = c->model;
	c->t.mode = c->mode;
	c->t.created_at = 1700000000000 + k * 1000;
	c->t.status_at = c->t.created_at + 500;
	c->t.usage.input_tokens = 10 + k;
	c->t.usage.output_tokens = 5;
	c->t.usage.total_tokens = 15 + k;
	snprintf(c->warning, sizeof(c->warning), "files.max-size: "
		 "src/generated/tables.c (120034 bytes) was not sent, nor "
		 "src/generated/lexer.c (98211 bytes); raise files.max-size "
		 "to send them (turn %d)", k);
	c->warnings[0] = c->warning;
	c->t.warnings = c->warnings;
	c->t.nwarnings = 1;
	/* a chunk retrieved for it, its text in the request too */
	snprintf(c->snippet, sizeof(c->snippet), "/* next_token: read one "
		 "token of the input, %d */\nint next_token(void);\n", k % 3);
	snprintf(c->cid, sizeof(c->cid), "00000000-0000-4000-8000-%012d",
		 k % 3);
	snprintf(c->cpath, sizeof(c->cpath), "src/lex.h");
	ck_assert_int_eq(aptix_sha256(&id, c->snippet, strlen(c->snippet)),
			 0);
	aptix_oid_tostr(c->chash, &id);
	c->cref.chunk_id = c->cid;
	c->cref.path = c->cpath;
	c->cref.start_line = 1;
	c->cref.end_line = 2;
	c->cref.content_hash = c->chash;
	c->cref.score = 812345;
	c->cref.sent = 1;
	c->cdata.ptr = c->snippet;
	c->cdata.len = strlen(c->snippet);
	c->t.chunks = &c->cref;
	c->t.nchunks = 1;
	c->t.files = &c->fref;
	c->t.nfiles = 1;
}

/* The options recording c (borrowing it), the answer only if completed. */
static void options_of(aptix_record_options *o, struct content *c,
		       const aptix_oid *parent, unsigned flags)
{
	aptix_record_options init = APTIX_RECORD_OPTIONS_INIT;

	*o = init;
	o->flags = flags;
	o->turn = &c->t;
	o->instruction.ptr = c->instr;
	o->instruction.len = strlen(c->instr);
	if (c->t.status == APTIX_TURN_COMPLETED) {
		o->answer.ptr = c->answer;
		o->answer.len = strlen(c->answer);
		o->response.ptr = c->response;
		o->response.len = strlen(c->response);
	}
	o->request.ptr = c->request;
	o->request.len = strlen(c->request);
	o->file_contents = &c->fdata;
	o->chunk_texts = &c->cdata;
	o->parent = parent;
	o->created_at = c->t.status_at + 1;
	o->transport = "sse";
}

static void record(aptix_record_result *res, aptix_repo *r, const char *conv,
		   long seq, int k, aptix_turn_status status,
		   const aptix_oid *parent, unsigned flags)
{
	aptix_record_options o;
	struct content c;

	make_content(&c, conv, seq, k, status);
	options_of(&o, &c, parent, flags);
	ck_assert_msg(aptix_record_commit(res, r, &o) == 0, "%s",
		      aptix_error_last()->message);
}

/* The stored value of an object: 1 with *base set when it is based. */
static int stored_base(aptix_oid *base, aptix_repo *r, const aptix_oid *id)
{
	aptix_buf val = APTIX_BUF_INIT;
	int based;

	ck_assert_int_eq(r->store->get(&val, r->store, APTIX_TABLE_OBJECTS,
				       id->id, APTIX_OID_RAWSZ), 0);
	based = aptix_stored_based_on(base, val.ptr, val.len);
	ck_assert_int_ge(based, 0);
	aptix_buf_release(&val);
	return based;
}

static void ref_is(aptix_repo *r, const char *name, const aptix_oid *want)
{
	aptix_oid id;

	ck_assert_msg(aptix_ref_resolve(&id, NULL, r, name) == 0, "%s: %s",
		      name, aptix_error_last()->message);
	ck_assert_str_eq(aptix_oid_hex(&id), aptix_oid_hex(want));
}

static int newest_reflog_cb(const aptix_reflog_entry *e, void *payload)
{
	snprintf(payload, 128, "%s", e->message);
	return 1;
}

static void reflog_is(const char *name, const char *want)
{
	char msg[128] = "";

	aptix_reflog_foreach(repo, name, newest_reflog_cb, msg);
	ck_assert_str_eq(msg, want);
}

static int count_cb(const aptix_oid *id, void *payload)
{
	(void)id;
	(*(size_t *)payload)++;
	return 0;
}

static size_t count_objects(aptix_repo *r)
{
	size_t n = 0;

	ck_assert_int_eq(aptix_odb_foreach(aptix_repo_odb(r), count_cb, &n),
			 0);
	return n;
}

START_TEST(test_root_continue_fork_failed)
{
	aptix_record_result a, b, f, x, y;
	aptix_session s;
	aptix_turn t;
	aptix_conv_info ci;
	aptix_oid base;
	aptix_buf val = APTIX_BUF_INIT;
	size_t n;

	/* a root: title, ref created, reflog entry */
	record(&a, repo, "c1", 1, 1, APTIX_TURN_COMPLETED, NULL, 0);
	ck_assert_int_eq(a.moved, 1);
	ref_is(repo, "refs/conversations/c1", &a.session);
	reflog_is("refs/conversations/c1", "continue: Question 1 about the "
		  "parser");
	ck_assert_int_eq(aptix_session_lookup(&s, repo, &a.session), 0);
	ck_assert_str_eq(s.title, "Question 1 about the parser");
	ck_assert_int_eq(s.status, APTIX_SESSION_COMMITTED);
	ck_assert_str_eq(s.transport, "sse");
	ck_assert_int_eq(s.duration_ms, 501);
	ck_assert_int_eq(s.usage.input_tokens, 11);
	ck_assert_ptr_null(s.forked_from);
	aptix_session_release(&s);

	/* a continuation: no title; its objects stored against the root's */
	record(&b, repo, "c1", 2, 2, APTIX_TURN_COMPLETED, &a.session, 0);
	ref_is(repo, "refs/conversations/c1", &b.session);
	ck_assert_int_eq(aptix_session_lookup(&s, repo, &b.session), 0);
	ck_assert_ptr_null(s.title);
	ck_assert_str_eq(aptix_oid_hex(&s.parent), aptix_oid_hex(&a.session));
	aptix_session_release(&s);
	ck_assert_int_eq(stored_base(&base, repo, &b.turn), 1);
	ck_assert_str_eq(aptix_oid_hex(&base), aptix_oid_hex(&a.turn));
	/* the response is spliced against the answer */
	ck_assert_int_eq(aptix_turn_lookup(&t, repo, &b.turn), 0);
	ck_assert_int_eq(repo->store->get(&val, repo->store,
					  APTIX_TABLE_OBJECTS,
					  t.response.id, APTIX_OID_RAWSZ), 0);
	ck_assert(aptix_stored_is_spliced(val.ptr, val.len));
	ck_assert_int_eq(repo->store->get(&val, repo->store,
					  APTIX_TABLE_OBJECTS,
					  t.request.id, APTIX_OID_RAWSZ), 0);
	ck_assert(aptix_stored_is_spliced(val.ptr, val.len));
	aptix_buf_release(&val);
	aptix_turn_release(&t);

	/* a fork: a new conversation, titled, forked_from */
	record(&f, repo, "c2", 3, 3, APTIX_TURN_COMPLETED, &b.session,
	       APTIX_RECORD_NEW_CONVERSATION);
	ref_is(repo, "refs/conversations/c2", &f.session);
	ref_is(repo, "refs/conversations/c1", &b.session);
	reflog_is("refs/conversations/c2", "fork: Question 3 about the "
		  "parser");
	ck_assert_int_eq(aptix_session_lookup(&s, repo, &f.session), 0);
	ck_assert_str_eq(s.title, "Question 3 about the parser");
	ck_assert_str_eq(s.forked_from, "c1");
	aptix_session_release(&s);
	ck_assert_int_eq(aptix_index_conversation(&ci, repo, "c2"), 0);
	ck_assert_str_eq(ci.title, "Question 3 about the parser");
	ck_assert_int_eq(ci.turns, 1);

	/* a failed turn: a failed snapshot, the ref stays */
	record(&x, repo, "c1", 3, 4, APTIX_TURN_FAILED, &b.session, 0);
	ck_assert_int_eq(x.moved, 0);
	ref_is(repo, "refs/conversations/c1", &b.session);
	ck_assert_int_eq(aptix_session_lookup(&s, repo, &x.session), 0);
	ck_assert_int_eq(s.status, APTIX_SESSION_FAILED);
	aptix_session_release(&s);
	ck_assert_int_eq(aptix_index_conversation(&ci, repo, "c1"), 0);
	ck_assert_int_eq(ci.turns, 3);
	ck_assert_int_eq(ci.failed, 1);
	ck_assert_str_eq(aptix_oid_hex(&ci.head), aptix_oid_hex(&b.session));

	/* planned on a head that moved: nothing is written */
	n = count_objects(repo);
	{
		aptix_record_options o;
		struct content c;

		make_content(&c, "c1", 2, 5, APTIX_TURN_COMPLETED);
		options_of(&o, &c, &a.session, 0);
		ck_assert_int_eq(aptix_record_commit(&y, repo, &o),
				 APTIX_EMISMATCH);
		ck_assert_int_eq(y.moved, 0);
	}
	ck_assert_uint_eq(count_objects(repo), n);
	ref_is(repo, "refs/conversations/c1", &b.session);
}
END_TEST

START_TEST(test_every_8th_without_bases)
{
	aptix_record_result r[18];
	aptix_oid base, parent;
	int k;

	for (k = 1; k <= 17; k++) {
		record(&r[k], repo, "long", k, k, APTIX_TURN_COMPLETED,
		       k > 1 ? &parent : NULL, 0);
		parent = r[k].session;
	}
	ck_assert_int_eq(stored_base(&base, repo, &r[1].turn), 0);
	/* a base is never based: turns 2..7 are all based on the first */
	for (k = 2; k <= 7; k++) {
		ck_assert_int_eq(stored_base(&base, repo, &r[k].turn), 1);
		ck_assert_str_eq(aptix_oid_hex(&base), aptix_oid_hex(&r[1].turn));
	}
	for (k = 8; k <= 16; k += 8) {
		ck_assert_int_eq(stored_base(&base, repo, &r[k].turn), 0);
		ck_assert_int_eq(stored_base(&base, repo, &r[k].session), 0);
	}
	for (k = 9; k <= 15; k++) {
		ck_assert_int_eq(stored_base(&base, repo, &r[k].turn), 1);
		ck_assert_str_eq(aptix_oid_hex(&base), aptix_oid_hex(&r[8].turn));
	}
	ck_assert_int_eq(stored_base(&base, repo, &r[17].turn), 1);
	ck_assert_str_eq(aptix_oid_hex(&base), aptix_oid_hex(&r[16].turn));
}
END_TEST

static int claims_cb(const aptix_running_info *ri, void *payload)
{
	(void)ri;
	(*(int *)payload)++;
	return 0;
}

static int claims(aptix_repo *r)
{
	int n = 0;

	ck_assert_int_eq(aptix_run_foreach_running(r, claims_cb, &n), 0);
	return n;
}

/*
 * begin, then commit with the claim: the instruction and the claim are
 * durable before the second write, which releases the claim; the ids
 * are those of the same content recorded in one write.
 */
START_TEST(test_begin_commit)
{
	aptix_record_options o;
	aptix_record_result p, q, a, one;
	struct content c;

	record(&a, repo, "c1", 1, 1, APTIX_TURN_COMPLETED, NULL, 0);
	record(&one, repo2, "c1", 1, 1, APTIX_TURN_COMPLETED, NULL, 0);
	ck_assert_str_eq(aptix_oid_hex(&a.session), aptix_oid_hex(&one.session));

	make_content(&c, "c1", 2, 2, APTIX_TURN_PENDING);
	c.t.status_at = c.t.created_at;
	options_of(&o, &c, &a.session, 0);
	o.answer.ptr = o.request.ptr = o.response.ptr = NULL;
	ck_assert_msg(aptix_record_begin(&p, repo, &o) == 0, "%s",
		      aptix_error_last()->message);
	ck_assert_int_eq(claims(repo), 1);
	ck_assert(aptix_odb_exists(aptix_repo_odb(repo), &p.instruction));
	ck_assert(!aptix_odb_exists(aptix_repo_odb(repo), &p.turn));
	/* a second turn of the conversation is refused meanwhile */
	ck_assert_int_eq(aptix_record_begin(&q, repo, &o), APTIX_ELOCKED);

	/* ... the network call ... then the second write */
	c.t.status = APTIX_TURN_COMPLETED;
	c.t.status_at = c.t.created_at + 500;
	options_of(&o, &c, &a.session, 0);
	o.pending = &p.turn;
	ck_assert_msg(aptix_record_commit(&a, repo, &o) == 0, "%s",
		      aptix_error_last()->message);
	ck_assert_int_eq(claims(repo), 0);
	ref_is(repo, "refs/conversations/c1", &a.session);

	/* the same content in one write, in the other store */
	o.pending = NULL;
	o.parent = &one.session;
	ck_assert_int_eq(aptix_record_commit(&one, repo2, &o), 0);
	ck_assert_str_eq(aptix_oid_hex(&a.turn), aptix_oid_hex(&one.turn));
	ck_assert_str_eq(aptix_oid_hex(&a.session), aptix_oid_hex(&one.session));
	ck_assert_str_eq(aptix_oid_hex(&a.instruction),
			 aptix_oid_hex(&p.instruction));
	/* a live claim is not recovered */
	o.parent = &one.session;
	ck_assert_int_eq(aptix_record_begin(&p, repo2, &o), 0);
	ck_assert_int_eq(claims(repo2), 1);
	ck_assert_int_eq(aptix_record_recover(repo2, NULL), 0);
	ck_assert_int_eq(claims(repo2), 1);
}
END_TEST

/* seq 0: derived from the parent's turn. */
START_TEST(test_seq_derived)
{
	aptix_record_result a, b;
	aptix_turn t;

	record(&a, repo, "c1", 0, 1, APTIX_TURN_COMPLETED, NULL, 0);
	record(&b, repo, "c1", 0, 2, APTIX_TURN_COMPLETED, &a.session, 0);
	ck_assert_int_eq(aptix_turn_lookup(&t, repo, &b.turn), 0);
	ck_assert_int_eq(t.seq, 2);
	aptix_turn_release(&t);
}
END_TEST

START_TEST(test_bad_options)
{
	aptix_record_options o = APTIX_RECORD_OPTIONS_INIT;
	aptix_record_result res, a;
	aptix_session s;

	ck_assert_int_eq(aptix_record_commit(&res, repo, &o), APTIX_EINVALID);
	/* a session given whole, with another parent to record against */
	record(&a, repo, "c1", 1, 1, APTIX_TURN_COMPLETED, NULL, 0);
	ck_assert_int_eq(aptix_session_lookup(&s, repo, &a.session), 0);
	o.session = &s;
	o.parent = &a.session;
	ck_assert_int_eq(aptix_record_commit(&res, repo, &o), APTIX_EINVALID);
	o.parent = NULL;
	o.flags = APTIX_RECORD_NO_REF;
	ck_assert_int_eq(aptix_record_commit(&res, repo, &o), 0);
	ck_assert_str_eq(aptix_oid_hex(&res.session), aptix_oid_hex(&a.session));
	aptix_session_release(&s);
	o.version = 99;
	ck_assert_int_eq(aptix_record_commit(&res, repo, &o), APTIX_EINVALID);
	ck_assert_int_eq(aptix_record_begin(&res, repo, &o), APTIX_EINVALID);
}
END_TEST

/* --- a history recorded again from its own objects ---------------------- */

#define NREPLAY 20

static void blob(aptix_record_data *d, aptix_buf *keep, const aptix_oid *id)
{
	if (aptix_oid_is_zero(id))
		return;
	ck_assert_int_eq(aptix_blob_lookup(keep, repo, id), 0);
	d->ptr = keep->ptr;
	d->len = keep->len;
}

/* Record session sid of repo into repo2 from its content, as an importer. */
static void replay_one(const aptix_oid *sid)
{
	aptix_record_options o = APTIX_RECORD_OPTIONS_INIT;
	aptix_record_result res;
	aptix_buf b[6];
	aptix_record_data fc[1], ct[1];
	aptix_session s;
	aptix_turn t;
	aptix_oid base1, base2;
	int i, based;

	for (i = 0; i < 6; i++)
		aptix_buf_init(&b[i], 0);
	memset(fc, 0, sizeof(fc));
	memset(ct, 0, sizeof(ct));
	ck_assert_int_eq(aptix_session_lookup(&s, repo, sid), 0);
	ck_assert_int_eq(aptix_turn_lookup(&t, repo, &s.turn), 0);
	ck_assert_uint_le(t.nfiles, 1);
	blob(&o.instruction, &b[0], &t.instruction);
	blob(&o.answer, &b[1], &t.answer);
	blob(&o.request, &b[2], &t.request);
	blob(&o.response, &b[3], &t.response);
	if (t.nfiles)
		blob(&fc[0], &b[4], &t.files[0].content);
	o.file_contents = fc;
	ck_assert_uint_eq(t.nchunks, 1);
	blob(&ct[0], &b[5], &t.chunks[0].snippet);
	o.chunk_texts = ct;
	o.turn = &t;
	o.parent = s.has_parent ? &s.parent : NULL;
	o.created_at = s.created_at;
	o.transport = s.transport;
	if (s.forked_from)
		o.flags |= APTIX_RECORD_NEW_CONVERSATION;
	ck_assert_msg(aptix_record_commit(&res, repo2, &o) == 0, "%s",
		      aptix_error_last()->message);
	ck_assert_str_eq(aptix_oid_hex(&res.session), aptix_oid_hex(sid));
	ck_assert_str_eq(aptix_oid_hex(&res.turn), aptix_oid_hex(&s.turn));
	/* stored alike: the same bases */
	based = stored_base(&base1, repo, sid);
	ck_assert_int_eq(stored_base(&base2, repo2, sid), based);
	if (based)
		ck_assert(!aptix_oid_cmp(&base1, &base2));
	based = stored_base(&base1, repo, &s.turn);
	ck_assert_int_eq(stored_base(&base2, repo2, &s.turn), based);
	if (based)
		ck_assert(!aptix_oid_cmp(&base1, &base2));
	for (i = 0; i < 6; i++)
		aptix_buf_release(&b[i]);
	aptix_turn_release(&t);
	aptix_session_release(&s);
}

struct value_cmp {
	aptix_repo *other;
	size_t n;
};

static int same_value_cb(const aptix_oid *id, void *payload)
{
	struct value_cmp *vc = payload;
	aptix_buf a = APTIX_BUF_INIT, b = APTIX_BUF_INIT;

	aptix_odb_backend *ours = repo->backend->odb;
	aptix_odb_backend *theirs = vc->other->backend->odb;

	ck_assert_int_eq(ours->read_stored(&a, ours, NULL, id), 0);
	ck_assert_msg(theirs->read_stored(&b, theirs, NULL, id) == 0,
		      "%s is missing", aptix_oid_hex(id));
	ck_assert_msg(a.len == b.len && !memcmp(a.ptr, b.ptr, a.len),
		      "%s is stored differently", aptix_oid_hex(id));
	vc->n++;
	aptix_buf_release(&a);
	aptix_buf_release(&b);
	return 0;
}

static void same_info(const aptix_session_info *a,
		      const aptix_session_info *b)
{
	ck_assert(!aptix_oid_cmp(&a->id, &b->id));
	ck_assert(!aptix_oid_cmp(&a->parent, &b->parent));
	ck_assert(!aptix_oid_cmp(&a->turn, &b->turn));
	ck_assert_int_eq(a->has_parent, b->has_parent);
	ck_assert_int_eq(a->status, b->status);
	ck_assert_int_eq(a->turn_status, b->turn_status);
	ck_assert_int_eq(a->created_at, b->created_at);
	ck_assert_uint_eq(a->generation, b->generation);
	ck_assert_str_eq(a->conversation, b->conversation);
	ck_assert_str_eq(a->summary, b->summary);
}

static int copy_cb(const void *val, size_t vlen, void *payload)
{
	return aptix_buf_set(payload, val, vlen);
}

/* A session's index record, as stored. */
static int raw_record(aptix_buf *out, aptix_repo *r, const aptix_oid *id)
{
	return aptix_index__view_record(r->backend->index, id->id, copy_cb, out);
}

static int same_record_cb(const aptix_session_info *si, void *payload)
{
	aptix_session_info other;
	aptix_buf a = APTIX_BUF_INIT, b = APTIX_BUF_INIT;

	(*(size_t *)payload)++;
	ck_assert_int_eq(aptix_index_session(&other, repo2, &si->id), 0);
	same_info(si, &other);
	/* the records themselves, byte for byte */
	ck_assert_int_eq(raw_record(&a, repo, &si->id), 0);
	ck_assert_int_eq(raw_record(&b, repo2, &si->id), 0);
	ck_assert_msg(a.len == b.len && !memcmp(a.ptr, b.ptr, a.len),
		      "the index records of %s differ",
		      aptix_oid_hex(&si->id));
	aptix_buf_release(&a);
	aptix_buf_release(&b);
	return 0;
}

static void same_conv(const char *conv)
{
	aptix_conv_info a, b;

	ck_assert_int_eq(aptix_index_conversation(&a, repo, conv), 0);
	ck_assert_int_eq(aptix_index_conversation(&b, repo2, conv), 0);
	ck_assert(!aptix_oid_cmp(&a.head, &b.head));
	ck_assert(!aptix_oid_cmp(&a.last, &b.last));
	ck_assert(!aptix_oid_cmp(&a.last_failed, &b.last_failed));
	ck_assert_int_eq(a.created_at, b.created_at);
	ck_assert_int_eq(a.updated_at, b.updated_at);
	ck_assert_uint_eq(a.turns, b.turns);
	ck_assert_uint_eq(a.committed, b.committed);
	ck_assert_uint_eq(a.failed, b.failed);
	ck_assert_str_eq(a.title, b.title);
	ck_assert_str_eq(a.workspace, b.workspace);
}

/*
 * repo2 has the same objects as repo, stored the same, the same nsess
 * index records and conversations "main" and "fork", headed by main
 * and fork.
 */
static void same_stores(size_t nsess, const aptix_oid *main,
			const aptix_oid *fork)
{
	struct value_cmp vc = { NULL, 0 };
	size_t n = 0;

	vc.other = repo2;
	ck_assert_int_eq(aptix_odb_foreach(aptix_repo_odb(repo), same_value_cb,
					   &vc), 0);
	ck_assert_uint_eq(vc.n, count_objects(repo2));
	ck_assert_int_eq(aptix_index_foreach_session(repo, same_record_cb,
						     &n), 0);
	ck_assert_uint_eq(n, nsess);
	same_conv("main");
	same_conv("fork");
	ref_is(repo2, "refs/conversations/main", main);
	ref_is(repo2, "refs/conversations/fork", fork);
}

START_TEST(test_replay_gives_identical_ids)
{
	aptix_record_result r[NREPLAY];
	aptix_oid head;
	int k;

	/*
	 * main: a chain past its 16th turn (seq derived), a failed turn
	 * (5) and its retry from the same parent (6); a fork (12) from 7
	 */
	for (k = 0; k < NREPLAY; k++) {
		if (k == 12) {
			record(&r[k], repo, "fork", 0, k, APTIX_TURN_COMPLETED,
			       &r[7].session, APTIX_RECORD_NEW_CONVERSATION);
			continue;
		}
		record(&r[k], repo, "main", 0, k, k == 5 ?
		       APTIX_TURN_FAILED : APTIX_TURN_COMPLETED,
		       k ? &head : NULL, 0);
		if (k != 5)
			head = r[k].session;
	}
	for (k = 0; k < NREPLAY; k++)
		replay_one(&r[k].session);
	same_stores(NREPLAY, &head, &r[12].session);
}
END_TEST

/*
 * A backend the library cannot see tables under: the memory backend
 * behind a bundle of its own (its transaction is not the key-value
 * adapter's), as an embedder's or PostgreSQL's would be.
 */
struct opaque {
	aptix_backend parent;
	aptix_backend *inner;
};

static int opaque_transaction(aptix_backend *b, aptix_backend_txn_fn fn,
			      void *payload)
{
	aptix_backend *in = ((struct opaque *)b)->inner;

	return in->transaction(in, fn, payload);
}

static int opaque_meta_get(aptix_buf *out, aptix_backend *b,
			   aptix_backend_txn *tx, const char *key)
{
	aptix_backend *in = ((struct opaque *)b)->inner;

	return in->meta_get(out, in, tx, key);
}

static int opaque_readonly(aptix_backend *b)
{
	aptix_backend *in = ((struct opaque *)b)->inner;

	return in->readonly(in);
}

static void opaque_free(aptix_backend *b)
{
	aptix_backend *in = ((struct opaque *)b)->inner;

	in->free(in);
	free(b);
}

static aptix_repo *opaque_repo(void)
{
	struct opaque *o = calloc(1, sizeof(*o));
	aptix_repo *r = NULL;

	ck_assert_ptr_nonnull(o);
	ck_assert_int_eq(aptix_backend_open(&o->inner, "memory", NULL, 0), 0);
	o->parent = *o->inner;
	o->parent.name = "opaque";
	o->parent.transaction = opaque_transaction;
	o->parent.meta_get = opaque_meta_get;
	o->parent.readonly = opaque_readonly;
	o->parent.disk_usage = NULL;
	o->parent.free = opaque_free;
	ck_assert_int_eq(aptix_repo_new(&r), 0);
	ck_assert_msg(aptix_repo_set_backend(r, &o->parent) == 0, "%s",
		      aptix_error_last()->message);
	return r;
}

/*
 * The recorder, the transaction, refs, index and claims reach storage
 * only through the domain vtables: the same turns recorded over a
 * backend with no table in sight give the same objects (byte for byte),
 * index records, conversations and refs as over LMDB; what needs the
 * key-value tables (purge) says so instead of crashing.
 */
START_TEST(test_record_over_opaque_backend)
{
	aptix_record_result a[6], b[6], x;
	aptix_purge_options po = APTIX_PURGE_OPTIONS_INIT;
	aptix_purge_stats ps;
	uint64_t bytes = 1;
	int k;

	aptix_repo_free(repo2);
	repo2 = opaque_repo();
	for (k = 0; k < 6; k++) {
		const aptix_oid *pa = k ? &a[k == 5 ? 2 : k - 1].session : NULL;
		const aptix_oid *pb = k ? &b[k == 5 ? 2 : k - 1].session : NULL;
		unsigned flags = k == 5 ? APTIX_RECORD_NEW_CONVERSATION : 0;
		const char *conv = k == 5 ? "fork" : "main";
		aptix_turn_status st = k == 3 ? APTIX_TURN_FAILED :
			APTIX_TURN_COMPLETED;

		if (k == 4)
			pa = &a[2].session, pb = &b[2].session;
		record(&a[k], repo, conv, 0, k, st, pa, flags);
		record(&b[k], repo2, conv, 0, k, st, pb, flags);
		ck_assert_str_eq(aptix_oid_hex(&a[k].session),
				 aptix_oid_hex(&b[k].session));
	}
	same_stores(6, &b[4].session, &b[5].session);
	/* a claim and its release go through the claims domain too */
	{
		aptix_record_options o;
		struct content c;

		make_content(&c, "main", 0, 9, APTIX_TURN_PENDING);
		options_of(&o, &c, &b[4].session, 0);
		ck_assert_msg(aptix_record_begin(&x, repo2, &o) == 0, "%s",
			      aptix_error_last()->message);
		ck_assert_int_eq(aptix_record_begin(&x, repo2, &o),
				 APTIX_ELOCKED);
	}
	ck_assert_int_eq(aptix_repo_disk_usage(&bytes, repo2), 0);
	ck_assert_uint_eq(bytes, 0);
	ck_assert_int_eq(aptix_purge(&ps, repo2, NULL, &po), APTIX_EINVALID);
	ck_assert_ptr_nonnull(strstr(aptix_error_last()->message, "opaque"));
	ck_assert_int_eq(aptix_purge_compact(repo2), APTIX_EINVALID);
}
END_TEST

/*
 * gc works on LMDB only: a backend without key-value tables (opaque,
 * PostgreSQL) or whose file cannot be compacted (memory) is refused
 * with a message, nothing deleted.
 */
START_TEST(test_gc_refuses_other_backends)
{
	aptix_gc_options go = APTIX_GC_OPTIONS_INIT;
	aptix_gc_stats gs;
	aptix_repo *mem = NULL;
	aptix_store *s = NULL;
	aptix_record_result a;

	aptix_repo_free(repo2);
	repo2 = opaque_repo();
	record(&a, repo2, "main", 0, 0, APTIX_TURN_COMPLETED, NULL, 0);
	ck_assert_int_eq(aptix_gc(&gs, repo2, &go), APTIX_EINVALID);
	ck_assert_ptr_nonnull(strstr(aptix_error_last()->message, "opaque"));
	ck_assert_int_eq(aptix_store_memory_new(&s), 0);
	ck_assert_int_eq(aptix_repo_new(&mem), 0);
	ck_assert_int_eq(aptix_repo_set_store(mem, s), 0);
	record(&a, mem, "main", 0, 0, APTIX_TURN_COMPLETED, NULL, 0);
	go.dry_run = 1;
	ck_assert_int_eq(aptix_gc(&gs, mem, &go), APTIX_EINVALID);
	ck_assert_ptr_nonnull(strstr(aptix_error_last()->message,
				     "needs an LMDB store"));
	ck_assert_int_eq(aptix_odb_exists(aptix_repo_odb(mem), &a.session), 1);
	aptix_repo_free(mem);
}
END_TEST

/*
 * A write that finds a blob already stored does not store it again; if
 * aptix gc deletes that blob (nothing reached it) before the write
 * commits, the commit must fail and write nothing, never commit a
 * session whose blob is gone. The same for a session given to the
 * recorder whose turn went meanwhile.
 */
START_TEST(test_gc_between_dedup_and_commit)
{
	static const char text[] = "a file's content that a deleted "
		"conversation had, and a new turn has again";
	aptix_gc_options go = APTIX_GC_OPTIONS_INIT;
	aptix_gc_stats gs;
	aptix_txn *tx = NULL;
	aptix_oid id, id2, sess;
	size_t before;

	ck_assert_int_eq(aptix_txn_new(&tx, repo), 0);
	ck_assert_int_eq(aptix_txn_write_object(&id, tx, APTIX_OBJ_BLOB, text,
						sizeof(text) - 1), 0);
	ck_assert_int_eq(aptix_txn_commit(tx), 0);
	aptix_txn_free(tx);
	/* a second write finds it there, and only asks for it at commit */
	ck_assert_int_eq(aptix_txn_new(&tx, repo), 0);
	ck_assert_int_eq(aptix_txn_write_blob_against(&id2, tx, text,
						      sizeof(text) - 1, NULL, 0,
						      NULL), 0);
	ck_assert_int_eq(aptix_oid_cmp(&id, &id2), 0);
	ck_assert_int_eq(aptix_txn_write_object(&sess, tx, APTIX_OBJ_BLOB,
						"another", 7), 0);
	go.grace_ms = 0;
	go.no_compact = 1;
	ck_assert_int_eq(aptix_gc(&gs, repo, &go), 0);
	ck_assert_int_eq(aptix_odb_exists(aptix_repo_odb(repo), &id), 0);
	before = gs.objects - gs.pruned;
	ck_assert_int_eq(aptix_txn_commit(tx), APTIX_ENOTFOUND);
	ck_assert_ptr_nonnull(strstr(aptix_error_last()->message,
				     "was deleted meanwhile"));
	ck_assert_ptr_nonnull(strstr(aptix_error_last()->message,
				     aptix_oid_hex(&id)));
	aptix_txn_free(tx);
	/* nothing of that write is in the store */
	ck_assert_int_eq(aptix_odb_exists(aptix_repo_odb(repo), &sess), 0);
	go.dry_run = 1;
	ck_assert_int_eq(aptix_gc(&gs, repo, &go), 0);
	ck_assert_uint_eq(gs.objects, before);
}
END_TEST

Suite *record_suite(void)
{
	Suite *s = suite_create("record");
	TCase *tc = tcase_create("record");

	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_set_timeout(tc, 60);
	tcase_add_test(tc, test_root_continue_fork_failed);
	tcase_add_test(tc, test_gc_between_dedup_and_commit);
	tcase_add_test(tc, test_every_8th_without_bases);
	tcase_add_test(tc, test_begin_commit);
	tcase_add_test(tc, test_seq_derived);
	tcase_add_test(tc, test_bad_options);
	tcase_add_test(tc, test_replay_gives_identical_ids);
	tcase_add_test(tc, test_record_over_opaque_backend);
	tcase_add_test(tc, test_gc_refuses_other_backends);
	suite_add_tcase(s, tc);
	return s;
}
