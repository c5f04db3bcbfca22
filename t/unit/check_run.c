/*
 * check_run.c - unit tests for the staged turn API (src/run*.c) and for
 * context planning (src/index/chain.c), against the local stand-in.
 *
 * Each stage is checked in its own state, out of order, and failing; and
 * after each failure the store is checked to be consistent: no claim
 * left, the conversation's ref where it was, a failed snapshot holding
 * the instruction whenever begin's write happened.
 */
#ifndef _POSIX_C_SOURCE
# define _POSIX_C_SOURCE 200809L
#endif

#include <check.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "aptix.h"
#include "unit.h"

Suite *run_suite(void);

#define NEED_SERVER() do { if (!have_server) return; } while (0)

static struct unit_standin srv;
static int have_server;
static char *tmpdir;
static aptix_repo *repo;

static void setup(void)
{
	aptix_error_clear();
	unsetenv("APTIX_DIR");
	unsetenv("APTIX_TEST_DATE");
	tmpdir = unit_mkdtemp();
	ck_assert_msg(aptix_repo_init(&repo, tmpdir, NULL) == 0, "%s",
		      aptix_error_last()->message);
	have_server = unit_standin_start_openai(&srv, "check_run");
}

static void teardown(void)
{
	unit_standin_stop(&srv);
	have_server = 0;
	aptix_repo_free(repo);
	repo = NULL;
	unit_rmtree(tmpdir);
	free(tmpdir);
}

static void options(aptix_run_options *o, const char *conv,
		    const char *text)
{
	aptix_run_options init = APTIX_RUN_OPTIONS_INIT;

	*o = init;
	o->conversation = conv;
	o->create = 1;		/* the suites name new conversations */
	o->instruction = text;
	o->instruction_len = text ? strlen(text) : 0;
	o->no_stream = 1;
	o->http.base_url = srv.base;
	o->http.api_key = UNIT_API_KEY;
	o->http.max_attempts = 1;
}

static int head(aptix_oid *out, const char *conv)
{
	char ref[128];

	snprintf(ref, sizeof(ref), "refs/conversations/%s", conv);
	return aptix_ref_resolve(out, NULL, repo, ref);
}

static int count_running_cb(const aptix_running_info *r, void *payload)
{
	(void)r;
	(*(int *)payload)++;
	return 0;
}

static int running(void)
{
	int n = 0;

	ck_assert_int_eq(aptix_run_foreach_running(repo, count_running_cb,
						   &n), 0);
	return n;
}

/* One whole turn through the stages; the session id goes to out. */
static void turn(aptix_oid *out, const char *conv, const char *text)
{
	aptix_run_options o;
	aptix_run *run;

	options(&o, conv, text);
	ck_assert_int_eq(aptix_run_new(&run, repo, &o), 0);
	ck_assert_msg(aptix_run_begin(run) == 0, "%s",
		      aptix_error_last()->message);
	ck_assert_int_eq(aptix_run_request(run), 0);
	ck_assert_msg(aptix_run_send(run) == 0, "%s",
		      aptix_error_last()->message);
	ck_assert_int_eq(aptix_run_finish(run), 0);
	if (out)
		*out = aptix_run_result_of(run)->session;
	aptix_run_free(run);
}

static void add_file(aptix_file_set *fs, const char *path,
		     const char *content)
{
	aptix_active_file *f;
	aptix_oid id;

	fs->v = realloc(fs->v, (fs->n + 1) * sizeof(*fs->v));
	ck_assert_ptr_nonnull(fs->v);
	f = &fs->v[fs->n++];
	memset(f, 0, sizeof(*f));
	f->path = strdup(path);
	aptix_buf_init(&f->content, 0);
	aptix_buf_puts(&f->content, content);
	f->size = (long)strlen(content);
	ck_assert_int_eq(aptix_sha256(&id, content, strlen(content)), 0);
	aptix_oid_tostr(f->sha256, &id);
	f->action = APTIX_FILE_SEND;
}

static void add_chunk(aptix_chunk_set *cs, const char *id)
{
	aptix_rag_chunk *c;

	cs->v = realloc(cs->v, (cs->n + 1) * sizeof(*cs->v));
	ck_assert_ptr_nonnull(cs->v);
	c = &cs->v[cs->n++];
	memset(c, 0, sizeof(*c));
	c->chunk_id = strdup(id);
	c->path = strdup("lib.c");
	c->repo = strdup("r");
	c->language = strdup("c");
	c->start_line = 1;
	c->end_line = 2;
	snprintf(c->content_hash, sizeof(c->content_hash), "%064d", 7);
	aptix_buf_init(&c->text, 0);
	aptix_buf_puts(&c->text, "void lib(void);\n");
	c->sent = 1;
}

START_TEST(test_stages)
{
	aptix_run_options o;
	aptix_file_set files;
	const aptix_run_result *res;
	aptix_run *run;
	aptix_session s;
	aptix_turn t;
	aptix_buf b = APTIX_BUF_INIT;
	aptix_oid h;

	NEED_SERVER();
	options(&o, "stages", "explain the parser");
	ck_assert_int_eq(aptix_run_new(&run, repo, &o), 0);
	ck_assert_int_eq(aptix_run_state_of(run), APTIX_RUN_NEW);
	/* new reads and writes nothing: the conversation is unborn */
	ck_assert_int_eq(head(&h, "stages"), APTIX_ENOTFOUND);
	ck_assert_int_eq(aptix_run_begin(run), 0);
	ck_assert_int_eq(aptix_run_state_of(run), APTIX_RUN_BEGUN);
	/* begin's write: the claim, and the instruction before any call */
	ck_assert_int_eq(running(), 1);
	ck_assert_int_eq(unit_standin_requests(&srv, "responses"), 0);
	aptix_file_set_init(&files);
	add_file(&files, "parser.c", "int parse(void) { return 0; }\n");
	ck_assert_int_eq(aptix_run_set_context(run, &files, NULL), 0);
	ck_assert_uint_eq(files.n, 0);		/* taken over */
	ck_assert_uint_eq(aptix_run_files(run)->n, 1);
	ck_assert_int_eq(aptix_run_request(run), 0);
	res = aptix_run_result_of(run);
	ck_assert_ptr_nonnull(strstr(res->request.ptr, "int parse(void)"));
	ck_assert_ptr_nonnull(strstr(res->request.ptr, "explain the parser"));
	ck_assert_int_eq(aptix_run_send(run), 0);
	ck_assert_int_eq(aptix_run_state_of(run), APTIX_RUN_SENT);
	ck_assert_int_eq(unit_standin_requests(&srv, "responses"), 1);
	ck_assert_int_eq(running(), 1);		/* until finish */
	ck_assert_int_eq(aptix_run_finish(run), 0);
	ck_assert_int_eq(aptix_run_state_of(run), APTIX_RUN_FINISHED);
	ck_assert(res->committed && res->completed);
	ck_assert_int_eq(running(), 0);
	ck_assert_int_eq(head(&h, "stages"), 0);
	ck_assert(!aptix_oid_cmp(&h, &res->session));
	/* the snapshot holds the turn, its file and its answer */
	ck_assert_int_eq(aptix_session_lookup(&s, repo, &h), 0);
	ck_assert_int_eq(s.status, APTIX_SESSION_COMMITTED);
	ck_assert_str_eq(s.title, "explain the parser");
	ck_assert_int_eq(aptix_turn_lookup(&t, repo, &s.turn), 0);
	ck_assert_int_eq(t.status, APTIX_TURN_COMPLETED);
	ck_assert_uint_eq(t.nfiles, 1);
	ck_assert_str_eq(t.files[0].path, "parser.c");
	ck_assert(t.files[0].sent);
	ck_assert_int_eq(aptix_blob_lookup(&b, repo, &t.instruction), 0);
	ck_assert_str_eq(b.ptr, "explain the parser");
	ck_assert_int_eq(aptix_blob_lookup(&b, repo, &t.answer), 0);
	ck_assert_str_eq(b.ptr, res->api.text.ptr);
	/* a typed lookup of the wrong type is refused */
	aptix_turn_release(&t);
	ck_assert_int_eq(aptix_turn_lookup(&t, repo, &h), APTIX_EINVALID);
	aptix_turn_release(&t);
	aptix_session_release(&s);
	aptix_buf_release(&b);
	aptix_file_set_release(&files);
	aptix_run_free(run);
}
END_TEST

START_TEST(test_out_of_order)
{
	aptix_run_options o;
	aptix_run *run;
	aptix_oid h;

	NEED_SERVER();
	options(&o, "order", "a question");
	ck_assert_int_eq(aptix_run_new(&run, repo, &o), 0);
	ck_assert_int_eq(aptix_run_request(run), APTIX_EINVALID);
	ck_assert_int_eq(aptix_run_send(run), APTIX_EINVALID);
	ck_assert_int_eq(aptix_run_finish(run), APTIX_EINVALID);
	ck_assert_int_eq(aptix_run_state_of(run), APTIX_RUN_NEW);
	ck_assert_int_eq(aptix_run_begin(run), 0);
	ck_assert_int_eq(aptix_run_begin(run), APTIX_EINVALID);
	ck_assert_int_eq(aptix_run_send(run), APTIX_EINVALID);
	ck_assert_int_eq(aptix_run_state_of(run), APTIX_RUN_BEGUN);
	ck_assert_int_eq(aptix_run_set_context(run, NULL, NULL), 0);
	ck_assert_int_eq(aptix_run_set_context(run, NULL, NULL),
			 APTIX_EINVALID);
	ck_assert_int_eq(aptix_run_request(run), 0);
	ck_assert_int_eq(aptix_run_request(run), APTIX_EINVALID);
	ck_assert_int_eq(aptix_run_send(run), 0);
	ck_assert_int_eq(aptix_run_finish(run), 0);
	ck_assert_int_eq(aptix_run_finish(run), APTIX_EINVALID);
	ck_assert_int_eq(head(&h, "order"), 0);
	aptix_run_free(run);
	ck_assert_int_eq(running(), 0);
}
END_TEST

START_TEST(test_begin_refuses)
{
	aptix_run_options o;
	aptix_run *run;
	aptix_oid h;
	static const char bad[] = { 'x', (char)0xff, 'y' };

	NEED_SERVER();
	/* no key: refused by new, unless a dry run */
	options(&o, "refused", "a question");
	o.http.api_key = NULL;
	ck_assert_int_eq(aptix_run_new(&run, repo, &o), APTIX_EINVALID);
	ck_assert_ptr_null(run);
	/* each bad instruction: begin fails, nothing stored */
	options(&o, "refused", "  \n\t ");
	ck_assert_int_eq(aptix_run_new(&run, repo, &o), 0);
	ck_assert_int_eq(aptix_run_begin(run), APTIX_EINVALID);
	ck_assert_ptr_nonnull(strstr(aptix_error_last()->message, "empty"));
	ck_assert_int_eq(aptix_run_finish(run), APTIX_EINVALID);
	aptix_run_free(run);
	options(&o, "refused", NULL);
	o.instruction = bad;
	o.instruction_len = sizeof(bad);
	ck_assert_int_eq(aptix_run_new(&run, repo, &o), 0);
	ck_assert_int_eq(aptix_run_begin(run), APTIX_EINVALID);
	ck_assert_ptr_nonnull(strstr(aptix_error_last()->message, "UTF-8"));
	aptix_run_free(run);
	options(&o, "refused", "my key is " UNIT_API_KEY);
	ck_assert_int_eq(aptix_run_new(&run, repo, &o), 0);
	ck_assert_int_eq(aptix_run_begin(run), APTIX_EINVALID);
	aptix_run_free(run);
	/* a fork from nothing */
	options(&o, NULL, "a fork");
	o.kind = APTIX_RUN_FORK;
	ck_assert_int_eq(aptix_run_new(&run, repo, &o), 0);
	ck_assert_int_eq(aptix_run_begin(run), APTIX_EINVALID);
	aptix_run_free(run);
	ck_assert_int_eq(running(), 0);
	ck_assert_int_eq(head(&h, "refused"), APTIX_ENOTFOUND);
	ck_assert_int_eq(unit_standin_requests(&srv, "responses"), 0);
}
END_TEST

/* A fork into the conversation the caller names (run options v6). */
static int fork_named(const aptix_oid *from, const char *name)
{
	aptix_run_options o;
	aptix_run *run;
	int r;

	options(&o, NULL, "forked");
	o.kind = APTIX_RUN_FORK;
	o.from = from;
	o.fork_conversation = name;
	ck_assert_int_eq(aptix_run_new(&run, repo, &o), 0);
	if ((r = aptix_run_begin(run)) == 0) {
		ck_assert_int_eq(aptix_run_request(run), 0);
		ck_assert_int_eq(aptix_run_send(run), 0);
		r = aptix_run_finish(run);
		ck_assert_str_eq(aptix_run_result_of(run)->conversation, name);
	}
	aptix_run_free(run);
	return r;
}

START_TEST(test_fork_named)
{
	aptix_oid a, h;
	aptix_session s;

	NEED_SERVER();
	turn(&a, "origin", "first");
	ck_assert_int_eq(fork_named(&a, "named-fork"), 0);
	ck_assert_int_eq(head(&h, "named-fork"), 0);
	ck_assert_int_eq(aptix_session_lookup(&s, repo, &h), 0);
	ck_assert(s.has_parent && !aptix_oid_cmp(&s.parent, &a));
	aptix_session_release(&s);
	/* an existing conversation, a bad name: refused, nothing stored */
	ck_assert_int_eq(fork_named(&a, "origin"), APTIX_EEXISTS);
	ck_assert_int_eq(fork_named(&a, "bad..name"), APTIX_EINVALID);
	ck_assert_int_eq(running(), 0);
}
END_TEST

START_TEST(test_dry_run)
{
	aptix_run_options o;
	aptix_gather_options g = APTIX_GATHER_OPTIONS_INIT;
	aptix_run *run;
	aptix_oid h, id;
	const char *text = "only a dry run";

	NEED_SERVER();
	options(&o, "dry", text);
	o.dry_run = 1;
	o.http.api_key = NULL;		/* not needed */
	ck_assert_int_eq(aptix_run_new(&run, repo, &o), 0);
	ck_assert_int_eq(aptix_run_begin(run), 0);
	ck_assert_int_eq(running(), 0);
	g.files = 0;
	g.rag = 0;
	ck_assert_int_eq(aptix_run_gather(run, &g), 0);
	ck_assert_int_eq(aptix_run_gather(run, &g), APTIX_EINVALID);
	ck_assert_int_eq(aptix_run_request(run), 0);
	ck_assert_ptr_nonnull(strstr(aptix_run_result_of(run)->request.ptr,
				     text));
	ck_assert_int_eq(aptix_run_send(run), APTIX_EINVALID);
	ck_assert_int_eq(aptix_run_finish(run), 0);
	aptix_run_free(run);
	/* nothing was stored: not even the instruction */
	ck_assert_int_eq(aptix_object_hash(&id, APTIX_OBJ_BLOB, text,
					   strlen(text)), 0);
	ck_assert(!aptix_odb_exists(aptix_repo_odb(repo), &id));
	ck_assert_int_eq(head(&h, "dry"), APTIX_ENOTFOUND);
	ck_assert_int_eq(unit_standin_requests(&srv, "responses"), 0);
}
END_TEST

/* A failed call: a failed snapshot, the head stays, the claim goes. */
START_TEST(test_failed_call)
{
	aptix_run_options o;
	aptix_run *run;
	const aptix_run_result *res;
	aptix_session s;
	aptix_turn t;
	aptix_oid before, h;

	NEED_SERVER();
	turn(&before, "fails", "a first turn");
	unit_standin_faults(&srv, "[{\"kind\":\"status\",\"status\":429,"
			    "\"code\":\"insufficient_quota\"}]");
	options(&o, "fails", "this call fails");
	ck_assert_int_eq(aptix_run_new(&run, repo, &o), 0);
	ck_assert_int_eq(aptix_run_begin(run), 0);
	ck_assert_int_eq(aptix_run_request(run), 0);
	ck_assert_int_eq(aptix_run_send(run), APTIX_EHTTP);
	ck_assert_int_eq(aptix_run_state_of(run), APTIX_RUN_FAILED);
	ck_assert_int_eq(aptix_run_finish(run), APTIX_EHTTP);
	res = aptix_run_result_of(run);
	ck_assert(res->committed && !res->completed);
	ck_assert_str_eq(res->error_code, "insufficient_quota");
	ck_assert_int_eq(head(&h, "fails"), 0);
	ck_assert(!aptix_oid_cmp(&h, &before));
	ck_assert_int_eq(aptix_session_lookup(&s, repo, &res->session), 0);
	ck_assert_int_eq(s.status, APTIX_SESSION_FAILED);
	ck_assert(!aptix_oid_cmp(&s.parent, &before));
	ck_assert_int_eq(aptix_turn_lookup(&t, repo, &s.turn), 0);
	ck_assert_uint_eq(t.nerrors, 1);
	ck_assert_ptr_nonnull(strstr(t.errors[0], "quota"));
	ck_assert_int_eq(t.seq, 2);
	aptix_turn_release(&t);
	aptix_session_release(&s);
	aptix_run_free(run);
	ck_assert_int_eq(running(), 0);
}
END_TEST

/* Freed after begin: a failed "abandoned" snapshot, no claim left. */
START_TEST(test_abandoned)
{
	aptix_run_options o;
	aptix_run *run;
	aptix_oid h;
	aptix_turn t;
	aptix_session s;
	const aptix_run_result *res;

	NEED_SERVER();
	options(&o, "abandoned", "begun and dropped");
	ck_assert_int_eq(aptix_run_new(&run, repo, &o), 0);
	ck_assert_int_eq(aptix_run_begin(run), 0);
	ck_assert_int_eq(running(), 1);
	res = aptix_run_result_of(run);
	/* finish here, as free would, to read what it stored */
	ck_assert_int_eq(aptix_run_finish(run), APTIX_ECANCELLED);
	ck_assert(res->committed && !res->completed);
	ck_assert_int_eq(aptix_session_lookup(&s, repo, &res->session), 0);
	ck_assert_int_eq(aptix_turn_lookup(&t, repo, &s.turn), 0);
	ck_assert_ptr_nonnull(strstr(t.errors[0], "abandoned"));
	aptix_turn_release(&t);
	aptix_session_release(&s);
	aptix_run_free(run);
	ck_assert_int_eq(running(), 0);
	ck_assert_int_eq(head(&h, "abandoned"), APTIX_ENOTFOUND);

	/* free alone releases the claim too */
	options(&o, "abandoned", "begun and freed");
	ck_assert_int_eq(aptix_run_new(&run, repo, &o), 0);
	ck_assert_int_eq(aptix_run_begin(run), 0);
	aptix_run_free(run);
	ck_assert_int_eq(running(), 0);

	/* a paid answer is kept even when the caller forgets finish */
	options(&o, "abandoned", "sent, not finished");
	ck_assert_int_eq(aptix_run_new(&run, repo, &o), 0);
	ck_assert_int_eq(aptix_run_begin(run), 0);
	ck_assert_int_eq(aptix_run_request(run), 0);
	ck_assert_int_eq(aptix_run_send(run), 0);
	aptix_run_free(run);
	ck_assert_int_eq(running(), 0);
	ck_assert_int_eq(head(&h, "abandoned"), 0);
}
END_TEST

/* Two runs on one conversation: the second begin is refused at once. */
START_TEST(test_busy)
{
	aptix_run_options o;
	aptix_run *a, *b;

	NEED_SERVER();
	options(&o, "busy", "the first");
	ck_assert_int_eq(aptix_run_new(&a, repo, &o), 0);
	ck_assert_int_eq(aptix_run_begin(a), 0);
	options(&o, "busy", "the second");
	ck_assert_int_eq(aptix_run_new(&b, repo, &o), 0);
	ck_assert_int_eq(aptix_run_begin(b), APTIX_ELOCKED);
	ck_assert_ptr_nonnull(strstr(aptix_error_last()->message, "busy"));
	ck_assert_int_eq(aptix_run_state_of(b), APTIX_RUN_NEW);
	aptix_run_free(b);
	ck_assert_int_eq(aptix_run_request(a), 0);
	ck_assert_int_eq(aptix_run_send(a), 0);
	ck_assert_int_eq(aptix_run_finish(a), 0);
	aptix_run_free(a);
	turn(NULL, "busy", "free again");
}
END_TEST

/* The head moved while the turn ran: kept as failed, head untouched. */
START_TEST(test_head_moved)
{
	aptix_run_options o;
	aptix_run *run;
	aptix_txn *tx;
	aptix_oid first, second, h;
	const aptix_run_result *res;

	NEED_SERVER();
	turn(&first, "moved", "one");
	turn(&second, "moved", "two");
	options(&o, "moved", "three");
	ck_assert_int_eq(aptix_run_new(&run, repo, &o), 0);
	ck_assert_int_eq(aptix_run_begin(run), 0);
	ck_assert_int_eq(aptix_run_request(run), 0);
	ck_assert_int_eq(aptix_run_send(run), 0);
	ck_assert_int_eq(aptix_txn_new(&tx, repo), 0);
	ck_assert_int_eq(aptix_txn_ref_update(tx, "refs/conversations/moved",
					      &first, &second, "reset"), 0);
	ck_assert_int_eq(aptix_txn_commit(tx), 0);
	aptix_txn_free(tx);
	ck_assert_int_eq(aptix_run_finish(run), APTIX_EMISMATCH);
	res = aptix_run_result_of(run);
	ck_assert(res->committed && !res->completed);
	ck_assert_int_eq(head(&h, "moved"), 0);
	ck_assert(!aptix_oid_cmp(&h, &first));
	ck_assert_int_eq(running(), 0);
	aptix_run_free(run);
}
END_TEST

/* A second turn chains, and does not send an unchanged file again. */
START_TEST(test_chain_and_plan)
{
	aptix_run_options o;
	aptix_file_set files;
	aptix_run *run;
	const aptix_run_result *res;
	aptix_oid first;
	aptix_turn t;
	aptix_session s;

	NEED_SERVER();
	options(&o, "chain", "first");
	ck_assert_int_eq(aptix_run_new(&run, repo, &o), 0);
	ck_assert_int_eq(aptix_run_begin(run), 0);
	aptix_file_set_init(&files);
	add_file(&files, "a.c", "int a;\n");
	add_file(&files, "b.c", "int b;\n");
	ck_assert_int_eq(aptix_run_set_context(run, &files, NULL), 0);
	ck_assert_int_eq(aptix_run_request(run), 0);
	ck_assert_int_eq(aptix_run_send(run), 0);
	ck_assert_int_eq(aptix_run_finish(run), 0);
	first = aptix_run_result_of(run)->session;
	aptix_run_free(run);

	options(&o, "chain", "second");
	ck_assert_int_eq(aptix_run_new(&run, repo, &o), 0);
	ck_assert_int_eq(aptix_run_begin(run), 0);
	add_file(&files, "a.c", "int a;\n");		/* unchanged */
	add_file(&files, "b.c", "int b = 2;\n");	/* changed */
	ck_assert_int_eq(aptix_run_set_context(run, &files, NULL), 0);
	ck_assert_int_eq(aptix_run_request(run), 0);
	ck_assert_int_eq(aptix_run_files(run)->v[0].action,
			 APTIX_FILE_UNCHANGED);
	ck_assert_int_eq(aptix_run_files(run)->v[1].action, APTIX_FILE_SEND);
	res = aptix_run_result_of(run);
	ck_assert_ptr_null(strstr(res->request.ptr, "int a;"));
	ck_assert_ptr_nonnull(strstr(res->request.ptr, "int b = 2;"));
	ck_assert_ptr_nonnull(strstr(res->request.ptr,
				     "\"previous_response_id\""));
	ck_assert_int_eq(aptix_run_send(run), 0);
	ck_assert_int_eq(aptix_run_finish(run), 0);
	ck_assert_int_eq(aptix_session_lookup(&s, repo, &res->session), 0);
	ck_assert(!aptix_oid_cmp(&s.parent, &first));
	ck_assert_int_eq(aptix_turn_lookup(&t, repo, &s.turn), 0);
	ck_assert_int_eq(t.seq, 2);
	ck_assert_uint_eq(t.nfiles, 2);
	ck_assert(!t.files[0].sent && t.files[1].sent);
	aptix_turn_release(&t);
	aptix_session_release(&s);
	aptix_run_free(run);
	aptix_file_set_release(&files);
}
END_TEST

/* The ask callback: allows the paths named in payload ("a|b"). */
static int ask_allow(const char *path, const aptix_credential *c,
		     void *payload)
{
	ck_assert_str_eq(c->rule, "github-token");
	return strstr(payload, path) ? APTIX_CREDENTIAL_SEND : 0;
}

/*
 * Files handed over that hold a credential: the options' ask decides,
 * before anything is sent; the configured key is never asked about.
 */
START_TEST(test_ask_credential)
{
	static const char token[] =
		"GITHUB_TOKEN=ghp_aB3dE5fG7hJ9kL1mN3pQ5rS7tU9vW1xY3zA5\n";
	aptix_run_options o;
	aptix_file_set files;
	aptix_run *run;
	const aptix_run_result *res;
	char keyed[128], allow[] = "yes.env|key.env";
	size_t i;
	int sent = 0, withheld = 0;

	NEED_SERVER();
	options(&o, "ask", "ask about the tokens");
	o.ask_credential = ask_allow;
	o.ask_payload = allow;
	ck_assert_int_eq(aptix_run_new(&run, repo, &o), 0);
	ck_assert_int_eq(aptix_run_begin(run), 0);
	aptix_file_set_init(&files);
	add_file(&files, "yes.env", token);
	add_file(&files, "no.env", token);
	snprintf(keyed, sizeof(keyed), "k=%s\n%s", UNIT_API_KEY, token);
	add_file(&files, "key.env", keyed);
	ck_assert_int_eq(aptix_run_set_context(run, &files, NULL), 0);
	ck_assert_int_eq(aptix_run_request(run), 0);
	res = aptix_run_result_of(run);
	ck_assert_ptr_nonnull(strstr(res->request.ptr, "ghp_aB3dE5fG7h"));
	ck_assert_ptr_null(strstr(res->request.ptr, UNIT_API_KEY));
	ck_assert_int_eq(aptix_run_files(run)->v[0].credential_allowed, 1);
	ck_assert_int_eq(aptix_run_files(run)->v[1].action,
			 APTIX_FILE_WITHHELD);
	ck_assert_int_eq(aptix_run_files(run)->v[2].action,
			 APTIX_FILE_WITHHELD);
	for (i = 0; i < res->nwarnings; i++) {
		sent += strstr(res->warnings[i], "'yes.env' holds a credential"
			       ", GitHub token on line 1 (rule github-token): "
			       "sent, as the user allowed") != NULL;
		withheld += strstr(res->warnings[i], "withheld") != NULL;
	}
	ck_assert_int_eq(sent, 1);
	ck_assert_int_eq(withheld, 2);
	aptix_run_free(run);
	aptix_file_set_release(&files);
}
END_TEST

/* aptix_context_plan directly: sent files and chunks, a restart. */
START_TEST(test_context_plan)
{
	aptix_run_options o;
	aptix_file_set files;
	aptix_chunk_set chunks;
	aptix_run *run;
	aptix_oid h;

	NEED_SERVER();
	options(&o, "plan", "with a chunk");
	ck_assert_int_eq(aptix_run_new(&run, repo, &o), 0);
	ck_assert_int_eq(aptix_run_begin(run), 0);
	aptix_file_set_init(&files);
	aptix_chunk_set_init(&chunks);
	add_file(&files, "x.c", "int x;\n");
	add_chunk(&chunks, "00000000-0000-4000-8000-000000000001");
	ck_assert_int_eq(aptix_run_set_context(run, &files, &chunks), 0);
	ck_assert_int_eq(aptix_run_request(run), 0);
	ck_assert_int_eq(aptix_run_send(run), 0);
	ck_assert_int_eq(aptix_run_finish(run), 0);
	aptix_run_free(run);
	ck_assert_int_eq(head(&h, "plan"), 0);

	/* the next turn of the chain has both already */
	add_file(&files, "x.c", "int x;\n");
	add_file(&files, "y.c", "int y;\n");
	ck_assert_int_eq(aptix_context_plan(repo, &h, 0, &files, NULL), 0);
	ck_assert_int_eq(files.v[0].action, APTIX_FILE_UNCHANGED);
	ck_assert_int_eq(files.v[1].action, APTIX_FILE_SEND);
	/* a new chain (restart) or no parent sends everything */
	ck_assert_int_eq(aptix_context_plan(repo, &h, 1, &files, NULL), 0);
	ck_assert_int_eq(files.v[0].action, APTIX_FILE_SEND);
	ck_assert_int_eq(aptix_context_plan(repo, &h, 0, &files, NULL), 0);
	ck_assert_int_eq(files.v[0].action, APTIX_FILE_UNCHANGED);
	ck_assert_int_eq(aptix_context_plan(repo, NULL, 0, &files, NULL), 0);
	ck_assert_int_eq(files.v[0].action, APTIX_FILE_SEND);
	/* a chunk the chain sent is not sent again; a new one is */
	add_chunk(&chunks, "00000000-0000-4000-8000-000000000001");
	add_chunk(&chunks, "00000000-0000-4000-8000-000000000002");
	ck_assert_int_eq(aptix_context_plan(repo, &h, 0, NULL, &chunks), 0);
	ck_assert(!chunks.v[0].sent);
	ck_assert(chunks.v[1].sent);
	aptix_file_set_release(&files);
	aptix_chunk_set_release(&chunks);
}
END_TEST

/* Cancelled from another thread while the answer streams: the flag is
 * set with aptix_cancel() and read atomically (ThreadSanitizer runs
 * this suite and reported the plain read of the flag as a race). */
static void *cancel_later(void *flag)
{
	struct timespec ts = { 0, 150 * 1000000L };

	nanosleep(&ts, NULL);
	aptix_cancel(flag);
	return NULL;
}

START_TEST(test_cancel_from_thread)
{
	static volatile sig_atomic_t flag;
	aptix_run_options o;
	aptix_run *run;
	pthread_t th;

	NEED_SERVER();
	flag = 0;
	unit_standin_faults(&srv, "[{\"kind\":\"slow\",\"delay\":0.5}]");
	options(&o, "cancelled", "a long answer, cancelled");
	o.no_stream = 0;
	o.http.cancel = &flag;
	ck_assert_int_eq(aptix_run_new(&run, repo, &o), 0);
	ck_assert_int_eq(aptix_run_begin(run), 0);
	ck_assert_int_eq(aptix_run_request(run), 0);
	ck_assert_int_eq(pthread_create(&th, NULL, cancel_later,
					(void *)&flag), 0);
	ck_assert_int_eq(aptix_run_send(run), APTIX_ECANCELLED);
	ck_assert_int_eq(pthread_join(th, NULL), 0);
	ck_assert_int_eq(aptix_run_finish(run), APTIX_ECANCELLED);
	ck_assert(aptix_run_result_of(run)->committed);
	aptix_run_free(run);
	ck_assert_int_eq(running(), 0);
}
END_TEST

Suite *run_suite(void)
{
	Suite *s = suite_create("run");
	TCase *tc = tcase_create("stages");

	tcase_set_timeout(tc, 120);
	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_add_test(tc, test_stages);
	tcase_add_test(tc, test_out_of_order);
	tcase_add_test(tc, test_begin_refuses);
	tcase_add_test(tc, test_fork_named);
	tcase_add_test(tc, test_dry_run);
	tcase_add_test(tc, test_failed_call);
	tcase_add_test(tc, test_abandoned);
	tcase_add_test(tc, test_busy);
	tcase_add_test(tc, test_head_moved);
	tcase_add_test(tc, test_chain_and_plan);
	tcase_add_test(tc, test_ask_credential);
	tcase_add_test(tc, test_context_plan);
	tcase_add_test(tc, test_cancel_from_thread);
	suite_add_tcase(s, tc);
	return s;
}
