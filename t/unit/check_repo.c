/*
 * check_repo.c - unit tests for stores (src/repo/repo.c, src/store/store-lmdb.c),
 * write transactions (src/txn/txn.c), refs and the reflog (src/repo/refs.c), the
 * session index (src/index/index.c) and names (src/history/revparse.c).
 *
 * Every LMDB environment is opened inside a test function; the checked
 * fixtures only make and remove the scratch directory and reset the
 * environment variables the library reads.
 */
#ifndef _POSIX_C_SOURCE
# define _POSIX_C_SOURCE 200809L
#endif

#include <errno.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <lmdb.h>

#include "aptix.h"
#include "aptix/sys/store_backend.h"
#include "util/common.h"
#include "util/env.h"
#include "repo/repo.h"
#include "object/zstream.h"
#include "unit.h"

#define TEST_DATE "1700000000"
#define TEST_MS 1700000000000LL

static char *tmpdir;
static aptix_repo *repo;
static int saved_zlib_level;

static void setup(void)
{
	aptix_error_clear();
	saved_zlib_level = aptix_zlib_level;
	unsetenv("APTIX_DIR");
	unsetenv("APTIX_STORE_MAX_MB");
	setenv("APTIX_TEST_DATE", TEST_DATE, 1);
	aptix_env__reload();
	tmpdir = unit_mkdtemp();
	repo = NULL;
}

static void teardown(void)
{
	aptix_repo_free(repo);
	repo = NULL;
	unit_rmtree(tmpdir);
	free(tmpdir);
	tmpdir = NULL;
	unsetenv("APTIX_DIR");
	unsetenv("APTIX_STORE_MAX_MB");
	unsetenv("APTIX_TEST_DATE");
	aptix_env__reload();
	aptix_zlib_level = saved_zlib_level;
	aptix_error_clear();
}

static const char *errmsg(void)
{
	return aptix_error_last()->message;
}

static void init_repo(void)
{
	int existed = -1;

	ck_assert_msg(aptix_repo_init(&repo, tmpdir, &existed) == 0, "%s",
		      errmsg());
	ck_assert_int_eq(existed, 0);
}

static void reopen(void)
{
	char *dir = unit_path(tmpdir, ".aptix");

	aptix_repo_free(repo);
	repo = NULL;
	ck_assert_msg(aptix_repo_open(&repo, dir) == 0, "%s", errmsg());
	free(dir);
}

static void assert_oid_eq(const aptix_oid *a, const aptix_oid *b)
{
	ck_assert_msg(!aptix_oid_cmp(a, b), "%s != %s", aptix_oid_hex(a),
		      aptix_oid_hex(b));
}

static aptix_oid blob_id(const char *s)
{
	aptix_oid id;

	ck_assert_int_eq(aptix_object_hash(&id, APTIX_OBJ_BLOB, s, strlen(s)),
			 0);
	return id;
}

/* --- Building history ------------------------------------------------- */

static aptix_oid q_blob(aptix_txn *tx, const char *s)
{
	aptix_oid id;

	ck_assert_int_eq(aptix_txn_write_object(&id, tx, APTIX_OBJ_BLOB, s,
						strlen(s)), 0);
	return id;
}

static aptix_oid q_turn(aptix_txn *tx, const char *conv, long seq,
			int64_t at, const aptix_oid *instruction)
{
	aptix_turn t;
	aptix_buf b = APTIX_BUF_INIT;
	aptix_oid id;

	aptix_turn_init(&t);
	t.conversation = (char *)conv;
	t.seq = seq;
	t.status = APTIX_TURN_COMPLETED;
	t.created_at = at;
	t.status_at = at;
	t.instruction = *instruction;
	ck_assert_int_eq(aptix_turn_serialize(&b, &t), 0);
	ck_assert_int_eq(aptix_txn_write_object(&id, tx, APTIX_OBJ_TURN, b.ptr,
						b.len), 0);
	aptix_buf_release(&b);
	return id;
}

static int q_session(aptix_oid *out, aptix_txn *tx, const char *conv,
		     const aptix_oid *parent, const aptix_oid *turn,
		     int64_t at, const char *title)
{
	aptix_session s;
	aptix_buf b = APTIX_BUF_INIT;
	int r;

	aptix_session_init(&s);
	s.conversation = (char *)conv;
	if (parent) {
		s.parent = *parent;
		s.has_parent = 1;
	}
	s.turn = *turn;
	s.status = APTIX_SESSION_COMMITTED;
	s.created_at = at;
	s.duration_ms = 10;
	s.session_type = (char *)"agent";
	s.title = (char *)title;
	s.workspace = (char *)"/ws";
	ck_assert_int_eq(aptix_session_serialize(&b, &s), 0);
	r = aptix_txn_write_object(out, tx, APTIX_OBJ_SESSION, b.ptr, b.len);
	aptix_buf_release(&b);
	return r;
}

struct step {
	aptix_oid session, turn, instruction;
};

/*
 * Commit one turn of conv in one transaction: instruction, turn,
 * session on parent, and (when move) the conversation ref moved from
 * parent (or created when parent is NULL).
 */
static struct step commit_step(const char *conv, const struct step *parent,
			       long seq, int64_t at, const char *instruction,
			       const char *title, int move)
{
	struct step st;
	aptix_txn *tx;
	aptix_oid zero;
	char ref[128];

	memset(&zero, 0, sizeof(zero));
	ck_assert_int_eq(aptix_txn_new(&tx, repo), 0);
	st.instruction = q_blob(tx, instruction);
	st.turn = q_turn(tx, conv, seq, at, &st.instruction);
	ck_assert_msg(q_session(&st.session, tx, conv,
				parent ? &parent->session : NULL, &st.turn,
				at, title) == 0, "%s", errmsg());
	if (move) {
		snprintf(ref, sizeof(ref), APTIX_CONV_PREFIX "%s", conv);
		ck_assert_int_eq(aptix_txn_ref_update(tx, ref, &st.session,
			parent ? &parent->session : &zero, "commit"), 0);
	}
	ck_assert_msg(aptix_txn_commit(tx) == 0, "%s", errmsg());
	ck_assert_uint_eq(aptix_txn_size(tx), 0);
	aptix_txn_free(tx);
	return st;
}

static void set_ref(const char *name, const aptix_oid *id)
{
	aptix_txn *tx;

	ck_assert_int_eq(aptix_txn_new(&tx, repo), 0);
	ck_assert_int_eq(aptix_txn_ref_update(tx, name, id, NULL, "set"), 0);
	ck_assert_msg(aptix_txn_commit(tx) == 0, "%s", errmsg());
	aptix_txn_free(tx);
}

static void set_symref(const char *name, const char *target)
{
	aptix_txn *tx;

	ck_assert_int_eq(aptix_txn_new(&tx, repo), 0);
	ck_assert_int_eq(aptix_txn_symref_update(tx, name, target, "sym"), 0);
	ck_assert_msg(aptix_txn_commit(tx) == 0, "%s", errmsg());
	aptix_txn_free(tx);
}

/* The history used by the index, rebuild and revparse tests. */
static struct {
	struct step r1, r2, r3, f2, b1;
} h;

static void build_history(void)
{
	init_repo();
	h.r1 = commit_step("alpha", NULL, 1, 1000,
			   "First line\nsecond line", "My title", 1);
	h.r2 = commit_step("alpha", &h.r1, 2, 2000,
			   "  \n\tSecond instruction\r\nmore", NULL, 1);
	h.r3 = commit_step("alpha", &h.r2, 3, 3000, "third", NULL, 1);
	/* a fork of r1 in the same conversation, the ref not moved */
	h.f2 = commit_step("alpha", &h.r1, 2, 2500, "fork of first", NULL, 0);
	h.b1 = commit_step("beta", NULL, 1, 4000, "Beta instruction\nbody",
			   NULL, 1);
	/* conversations known only by a ref */
	set_ref(APTIX_CONV_PREFIX "gamma1", &h.r1.session);
	set_ref(APTIX_CONV_PREFIX "gamma2", &h.r2.session);
}

/* --- Init, open, discover --------------------------------------------- */

START_TEST(test_init_open)
{
	char *dir = unit_path(tmpdir, ".aptix"), *real = realpath(tmpdir, NULL);
	aptix_repo *again = NULL;
	aptix_ref head;
	int existed = -1;
	uint64_t bytes = 0;
	const char *id;
	size_t i;

	ck_assert_ptr_nonnull(real);
	init_repo();
	ck_assert_str_eq(aptix_repo_workdir(repo), real);
	ck_assert_ptr_nonnull(strstr(aptix_repo_path(repo), "/.aptix"));
	ck_assert_str_eq(aptix_repo_path(repo) + strlen(real), "/.aptix");
	ck_assert_ptr_nonnull(aptix_repo_odb(repo));
	ck_assert_int_eq(aptix_repo_disk_usage(&bytes, repo), 0);
	ck_assert_uint_gt(bytes, 0);

	/* HEAD names a fresh conversation, a UUID v4 */
	ck_assert_int_eq(aptix_ref_read(&head, repo, "HEAD"), 0);
	ck_assert_ptr_nonnull(head.target);
	ck_assert_int_eq(strncmp(head.target, APTIX_CONV_PREFIX,
				 strlen(APTIX_CONV_PREFIX)), 0);
	id = head.target + strlen(APTIX_CONV_PREFIX);
	ck_assert_uint_eq(strlen(id), 36);
	for (i = 0; i < 36; i++) {
		if (i == 8 || i == 13 || i == 18 || i == 23)
			ck_assert_int_eq(id[i], '-');
		else
			ck_assert(aptix_is_hex(id + i, 1));
	}
	ck_assert_int_eq(id[14], '4');
	ck_assert_int_eq(aptix_conv_check_id(id), 0);
	aptix_ref_release(&head);

	/* init again: opened, not recreated */
	ck_assert_int_eq(aptix_repo_init(&again, tmpdir, &existed), 0);
	ck_assert_int_eq(existed, 1);
	ck_assert_str_eq(aptix_repo_path(again), aptix_repo_path(repo));
	aptix_repo_free(again);
	again = NULL;

	/* open by path, from several handles at once */
	ck_assert_int_eq(aptix_repo_open(&again, dir), 0);
	ck_assert_str_eq(aptix_repo_workdir(again), real);
	aptix_repo_free(again);
	aptix_repo_free(NULL);

	/* init creates the work tree directory and missing parents */
	{
		char *deep = unit_path(tmpdir, "no/such/dir"), *store;
		struct stat st;

		aptix_repo_free(repo);
		repo = NULL;
		ck_assert_msg(aptix_repo_init(&repo, deep, &existed) == 0,
			      "%s", errmsg());
		ck_assert_int_eq(existed, 0);
		store = unit_path(deep, ".aptix/data.mdb");
		ck_assert_int_eq(stat(store, &st), 0);
		free(store);
		free(deep);
		/* but not through a file */
		aptix_repo_free(repo);
		repo = NULL;
		deep = unit_path(tmpdir, "no/such/dir/.aptix/data.mdb/x");
		ck_assert_int_lt(aptix_repo_init(&repo, deep, NULL), 0);
		ck_assert_ptr_null(repo);
		free(deep);
	}
	free(real);
	free(dir);
}
END_TEST

/*
 * The library installs no signal handler: an embedder's SIGSEGV and
 * SIGBUS handlers are the same after a store is made, opened, read and
 * freed; the fault guard replaces them only when asked, and puts them
 * back when removed.
 */
static void embedder_handler(int sig)
{
	(void)sig;
}

static int handler_is(int sig, void (*fn)(int))
{
	struct sigaction now;

	ck_assert_int_eq(sigaction(sig, NULL, &now), 0);
	return !(now.sa_flags & SA_SIGINFO) && now.sa_handler == fn;
}

START_TEST(test_signal_handlers)
{
	struct sigaction mine;
	aptix_repo *again = NULL;
	aptix_ref head;
	char *dir = unit_path(tmpdir, ".aptix");

	/* the runner installed the guard, as the command does */
	aptix_fault_guard_remove();
	memset(&mine, 0, sizeof(mine));
	mine.sa_handler = embedder_handler;
	sigemptyset(&mine.sa_mask);
	ck_assert_int_eq(sigaction(SIGSEGV, &mine, NULL), 0);
	ck_assert_int_eq(sigaction(SIGBUS, &mine, NULL), 0);

	init_repo();
	ck_assert_int_eq(aptix_repo_open(&again, dir), 0);
	ck_assert_int_eq(aptix_ref_read(&head, again, "HEAD"), 0);
	aptix_ref_release(&head);
	aptix_repo_free(again);
	aptix_repo_free(repo);
	repo = NULL;
	ck_assert(handler_is(SIGSEGV, embedder_handler));
	ck_assert(handler_is(SIGBUS, embedder_handler));

	ck_assert_int_eq(aptix_fault_guard_install(), 0);
	ck_assert_int_eq(aptix_fault_guard_install(), 0);	/* idempotent */
	ck_assert(!handler_is(SIGSEGV, embedder_handler));
	ck_assert(!handler_is(SIGBUS, embedder_handler));
	aptix_fault_guard_remove();
	ck_assert(handler_is(SIGSEGV, embedder_handler));
	ck_assert(handler_is(SIGBUS, embedder_handler));
	aptix_fault_guard_remove();				/* a no-op */
	ck_assert(handler_is(SIGSEGV, embedder_handler));

	/* back as the runner had it */
	signal(SIGSEGV, SIG_DFL);
	signal(SIGBUS, SIG_DFL);
	ck_assert_int_eq(aptix_fault_guard_install(), 0);
	free(dir);
}
END_TEST

/*
 * Stores made while another is open in the process are their own: the
 * second init once shared the first's environment (its data.mdb did not
 * exist yet, and the registry lookup fell through to the first store),
 * failed, and would have written into the first store.
 */
START_TEST(test_two_stores_in_one_process)
{
	char *a = unit_path(tmpdir, "a"), *b = unit_path(tmpdir, "b");
	aptix_repo *ra = NULL, *rb = NULL, *again = NULL;
	aptix_ref ha, hb;
	int existed;

	ck_assert_msg(aptix_repo_init(&ra, a, &existed) == 0, "%s",
		      aptix_error_last()->message);
	ck_assert_msg(aptix_repo_init(&rb, b, &existed) == 0, "%s",
		      aptix_error_last()->message);
	ck_assert_int_eq(existed, 0);
	ck_assert_int_eq(aptix_ref_read(&ha, ra, "HEAD"), 0);
	ck_assert_int_eq(aptix_ref_read(&hb, rb, "HEAD"), 0);
	/* each its own fresh conversation */
	ck_assert_str_ne(ha.target, hb.target);
	aptix_repo_free(rb);
	ck_assert_int_eq(aptix_repo_open(&again, aptix_repo_path(ra)), 0);
	aptix_ref_release(&hb);
	ck_assert_int_eq(aptix_ref_read(&hb, again, "HEAD"), 0);
	ck_assert_str_eq(ha.target, hb.target);
	aptix_ref_release(&ha);
	aptix_ref_release(&hb);
	aptix_repo_free(again);
	aptix_repo_free(ra);
	free(a);
	free(b);
}
END_TEST

START_TEST(test_modes)
{
	static const char *const files[] = { "data.mdb", "lock.mdb" };
	char *dir = unit_path(tmpdir, ".aptix");
	struct stat st;
	mode_t old = umask(0);	/* the library must not rely on umask */
	size_t i;
	int r;

	r = aptix_repo_init(&repo, tmpdir, NULL);
	umask(old);
	ck_assert_msg(r == 0, "%s", errmsg());
	ck_assert_int_eq(stat(dir, &st), 0);
	ck_assert(S_ISDIR(st.st_mode));
	ck_assert_msg((st.st_mode & 07777) == 0700, "mode %o",
		      (unsigned)(st.st_mode & 07777));
	for (i = 0; i < 2; i++) {
		char *f = unit_path(dir, files[i]);

		ck_assert_int_eq(stat(f, &st), 0);
		ck_assert_msg((st.st_mode & 07777) == 0600, "%s: mode %o",
			      files[i], (unsigned)(st.st_mode & 07777));
		free(f);
	}
	free(dir);
}
END_TEST

/*
 * A store opened by a process whose descriptors 0-2 are closed (a daemon,
 * cron): each entry below must occupy them first, so that what the
 * process then writes to "stdout" or "stderr" never lands in data.mdb or
 * lock.mdb. The entries run in a child that closes 0-2 before each one,
 * writes a marker to 0, 1 and 2 and a blob to the store; its exit code
 * says which step went wrong.
 */
#define FD_MARK "MARK-written-to-a-standard-descriptor"

static int closed_child_step(int step, const char *work, const char *dir)
{
	aptix_repo *r = NULL;
	aptix_buf found = APTIX_BUF_INIT;
	aptix_oid id;
	struct stat st;
	char blob[64];
	int fd, rc;

	close(0);
	close(1);
	close(2);
	switch (step) {
	case 0: rc = aptix_repo_init(&r, work, NULL); break;
	case 1: rc = aptix_repo_open(&r, dir); break;
	case 2: rc = aptix_repo_find(&r, work); break;
	case 3: rc = aptix_repo_init_dir(&r, dir, NULL); break;
	default:
		rc = aptix_repo_discover(&found, work);
		aptix_buf_release(&found);
		if (!rc)
			rc = aptix_repo_open(&r, dir);
		break;
	}
	if (rc < 0)
		return 10 + step;
	for (fd = 0; fd < 3; fd++) {
		if (fstat(fd, &st) < 0 || !S_ISCHR(st.st_mode))
			return 20 + step;
		if (write(fd, FD_MARK, strlen(FD_MARK)) < 0)
			return 30 + step;
	}
	snprintf(blob, sizeof(blob), "blob written in step %d", step);
	rc = aptix_odb_write(&id, aptix_repo_odb(r), APTIX_OBJ_BLOB, blob,
			     strlen(blob));
	aptix_repo_free(r);
	return rc < 0 ? 40 + step : 0;
}

static int has_mark(const char *data, size_t len)
{
	size_t n = strlen(FD_MARK), i;

	for (i = 0; i + n <= len; i++)
		if (!memcmp(data + i, FD_MARK, n))
			return 1;
	return 0;
}

static void assert_no_mark(const char *dir, const char *name)
{
	char *path = unit_path(dir, name);
	FILE *f = fopen(path, "rb");
	char *data;
	size_t len;

	ck_assert_ptr_nonnull(f);
	data = malloc(8 << 20);
	ck_assert_ptr_nonnull(data);
	len = fread(data, 1, 8 << 20, f);
	fclose(f);
	ck_assert_msg(!has_mark(data, len),
		      "a standard descriptor wrote into %s", path);
	free(data);
	free(path);
}

static void count_problem(const char *msg, void *payload)
{
	(void)msg;
	(*(int *)payload)++;
}

START_TEST(test_closed_stdfds)
{
	char *dir = unit_path(tmpdir, ".aptix");
	int step, status, problems = 0;
	pid_t pid;

	for (step = 0; step < 5; step++) {
		pid = fork();
		ck_assert_int_ge(pid, 0);
		if (pid == 0)
			_exit(closed_child_step(step, tmpdir, dir));
		ck_assert_int_eq(waitpid(pid, &status, 0), pid);
		ck_assert_msg(WIFEXITED(status) && WEXITSTATUS(status) == 0,
			      "step %d: status %#x", step, status);
	}
	assert_no_mark(dir, "data.mdb");
	assert_no_mark(dir, "lock.mdb");
	ck_assert_msg(aptix_repo_open(&repo, dir) == 0, "%s", errmsg());
	ck_assert_int_eq(aptix_repo_check_store(repo, count_problem,
						&problems), 0);
	ck_assert_int_eq(problems, 0);
	free(dir);
}
END_TEST

START_TEST(test_discover)
{
	aptix_buf out = APTIX_BUF_INIT;
	char *work = unit_path(tmpdir, "work"), *sub, *other, *real, *expect;

	ck_assert_int_eq(aptix_repo_init(&repo, work, NULL), 0);
	sub = unit_path(work, "a");
	ck_assert_int_eq(mkdir(sub, 0755), 0);
	free(sub);
	sub = unit_path(work, "a/b");
	ck_assert_int_eq(mkdir(sub, 0755), 0);
	free(sub);
	sub = unit_path(work, "a/b/c");
	ck_assert_int_eq(mkdir(sub, 0755), 0);
	real = realpath(work, NULL);
	ck_assert_ptr_nonnull(real);
	expect = unit_path(real, ".aptix");

	/* from the work tree, a subdirectory, and the store itself */
	ck_assert_int_eq(aptix_repo_discover(&out, work), 0);
	ck_assert_str_eq(out.ptr, expect);
	ck_assert_int_eq(aptix_repo_discover(&out, sub), 0);
	ck_assert_str_eq(out.ptr, expect);
	ck_assert_int_eq(aptix_repo_discover(&out, expect), 0);
	ck_assert_str_eq(out.ptr, expect);
	{
		aptix_repo *r2;

		ck_assert_int_eq(aptix_repo_open(&r2, out.ptr), 0);
		aptix_repo_free(r2);
	}

	/* outside any store */
	other = unit_path(tmpdir, "elsewhere");
	ck_assert_int_eq(mkdir(other, 0755), 0);
	aptix_buf_set(&out, "untouched", 9);
	ck_assert_int_eq(aptix_repo_discover(&out, other), APTIX_ENOTFOUND);
	ck_assert_ptr_nonnull(strstr(errmsg(), "not an aptix store"));
	ck_assert_int_eq(aptix_repo_discover(&out, "/"), APTIX_ENOTFOUND);

	/* APTIX_DIR wins, as given */
	setenv("APTIX_DIR", "/some/where/.aptix", 1);
	aptix_env__reload();
	ck_assert_int_eq(aptix_repo_discover(&out, other), 0);
	ck_assert_str_eq(out.ptr, "/some/where/.aptix");
	setenv("APTIX_DIR", "", 1);	/* empty: ignored */
	aptix_env__reload();
	ck_assert_int_eq(aptix_repo_discover(&out, sub), 0);
	ck_assert_str_eq(out.ptr, expect);
	unsetenv("APTIX_DIR");
	aptix_env__reload();

	/* a start that does not exist */
	free(other);
	other = unit_path(tmpdir, "missing");
	ck_assert_int_eq(aptix_repo_discover(&out, other), APTIX_ERROR);

	aptix_buf_release(&out);
	free(work);
	free(sub);
	free(other);
	free(real);
	free(expect);
}
END_TEST

START_TEST(test_not_a_store)
{
	char *plain = unit_path(tmpdir, "plain");
	char *missing = unit_path(tmpdir, "missing");
	char *file = unit_path(tmpdir, "file");
	aptix_store *st;

	ck_assert_int_eq(mkdir(plain, 0700), 0);
	{
		aptix_repo *r = (aptix_repo *)&st;	/* must be reset */

		ck_assert_int_eq(aptix_repo_open(&r, plain), APTIX_ENOTFOUND);
		ck_assert_ptr_null(r);
	}
	ck_assert_ptr_nonnull(strstr(errmsg(), "not an aptix store"));
	ck_assert_int_eq(aptix_repo_open(&repo, missing), APTIX_ENOTFOUND);
	ck_assert_ptr_null(repo);
	unit_write_file(file, "x", 1);
	ck_assert_int_lt(aptix_repo_open(&repo, file), 0);
	ck_assert_ptr_null(repo);

	/* an LMDB environment without aptix's format record */
	ck_assert_int_eq(aptix_store_lmdb_open(&st, plain, APTIX_STORE_CREATE),
			 0);
	st->free(st);
	ck_assert_int_eq(aptix_repo_open(&repo, plain), APTIX_ECORRUPT);
	ck_assert_ptr_null(repo);
	ck_assert_ptr_nonnull(strstr(errmsg(), "not an aptix store"));
	ck_assert_int_eq(aptix_store_lmdb_open(&st, missing, 0),
			 APTIX_ENOTFOUND);
	free(plain);
	free(missing);
	free(file);
}
END_TEST

static int put_format(aptix_store_wtxn *w, void *payload)
{
	aptix_store *s = *(aptix_store **)(void *)w;
	const char *v = payload;

	return s->wput(w, APTIX_TABLE_META, "format", 6, v, strlen(v));
}

/* Store a format value through the store vtable, then open. */
static int set_format(const char *value)
{
	char *dir = unit_path(tmpdir, ".aptix");
	aptix_store *st;
	int r;

	aptix_repo_free(repo);
	repo = NULL;
	ck_assert_int_eq(aptix_store_lmdb_open(&st, dir, 0), 0);
	ck_assert_int_eq(st->write(st, put_format, (void *)value), 0);
	st->free(st);
	r = aptix_repo_open(&repo, dir);
	free(dir);
	return r;
}

START_TEST(test_format_version)
{
	char newer[16];
	int existed;

	init_repo();
	snprintf(newer, sizeof(newer), "%d", APTIX_STORE_FORMAT + 1);
	ck_assert_int_eq(set_format(newer), APTIX_EVERSION);
	ck_assert_ptr_null(repo);
	ck_assert_ptr_nonnull(strstr(errmsg(), "upgrade"));
	/* init of such a store fails the same way */
	ck_assert_int_eq(aptix_repo_init(&repo, tmpdir, &existed),
			 APTIX_EVERSION);
	ck_assert_int_eq(existed, 1);
	ck_assert_ptr_null(repo);
	ck_assert_int_eq(set_format("999"), APTIX_EVERSION);
	ck_assert_int_eq(set_format("0"), APTIX_ECORRUPT);
	ck_assert_int_eq(set_format("x"), APTIX_ECORRUPT);
	ck_assert_int_eq(set_format("3"), 0);
	ck_assert_ptr_nonnull(repo);
	ck_assert_int_eq(set_format("4"), 0);
	ck_assert_ptr_nonnull(repo);
	ck_assert_int_eq(set_format("2"), 0);
	ck_assert_ptr_nonnull(repo);
	/* format 1 (issue 10's stores before packing) still opens */
	ck_assert_int_eq(set_format("1"), 0);
	ck_assert_ptr_nonnull(repo);
}
END_TEST

/* --- Transactions ------------------------------------------------------ */

/* --- Values in append order (store-lmdb.c, store format 4) ------------ */

struct vput {
	aptix_table t;
	unsigned char key;
	size_t len;		/* 0: delete */
	char fill;
};

static int put_values(aptix_store_wtxn *w, void *payload)
{
	aptix_store *s = *(aptix_store **)(void *)w;
	const struct vput *v = payload;
	unsigned char key[32];
	char *val;
	int r;

	for (; v->t != APTIX_TABLE__COUNT; v++) {
		memset(key, v->key, sizeof(key));
		if (!v->len) {
			if ((r = s->wdel(w, v->t, key, 32)) < 0)
				return r;
			continue;
		}
		val = malloc(v->len);
		memset(val, v->fill, v->len);
		val[0] = 1;	/* a type or a version: never 0 */
		val[v->len - 1] = 'z';
		r = s->wput(w, v->t, key, 32, val, v->len);
		free(val);
		if (r < 0)
			return r;
	}
	return 0;
}

static void assert_value(aptix_table t, unsigned char k, size_t len,
			 char fill)
{
	unsigned char key[32];
	aptix_buf b = APTIX_BUF_INIT;
	size_t i;

	memset(key, k, sizeof(key));
	ck_assert_msg(repo->store->get(&b, repo->store, t, key, 32) == 0,
		      "%s", errmsg());
	ck_assert_uint_eq(b.len, len);
	ck_assert_int_eq(b.ptr[0], 1);
	ck_assert_int_eq(b.ptr[len - 1], 'z');
	for (i = 1; i + 1 < len; i++)
		if (b.ptr[i] != fill)
			ck_abort_msg("byte %zu of a %zu-byte value", i, len);
	aptix_buf_release(&b);
}

struct vcount {
	size_t n, bytes;
	uint64_t hi;		/* the largest 8-byte key */
};

static int vcount_cb(const void *key, size_t klen, const void *val,
		     size_t vlen, void *payload)
{
	struct vcount *c = payload;

	(void)key;
	(void)klen;
	(void)val;
	c->n++;
	c->bytes += vlen;
	return 0;
}

/* The records of one LMDB table, read with liblmdb (the store closed). */
static struct vcount lmdb_table(const char *name, unsigned char first_of,
				unsigned char *first_byte)
{
	char *dir = unit_path(tmpdir, ".aptix");
	struct vcount c = { 0, 0, 0 };
	MDB_env *env;
	MDB_txn *txn;
	MDB_dbi dbi;
	MDB_cursor *cur;
	MDB_val k, v;
	unsigned char want[32];

	memset(want, first_of, sizeof(want));
	ck_assert_int_eq(mdb_env_create(&env), 0);
	mdb_env_set_maxdbs(env, 32);
	ck_assert_int_eq(mdb_env_open(env, dir, MDB_RDONLY, 0600), 0);
	ck_assert_int_eq(mdb_txn_begin(env, NULL, MDB_RDONLY, &txn), 0);
	ck_assert_int_eq(mdb_dbi_open(txn, name, 0, &dbi), 0);
	ck_assert_int_eq(mdb_cursor_open(txn, dbi, &cur), 0);
	while (mdb_cursor_get(cur, &k, &v, c.n ? MDB_NEXT : MDB_FIRST) == 0) {
		c.n++;
		c.bytes += v.mv_size;
		if (k.mv_size == 8)
			c.hi = aptix__get_be64(k.mv_data);
		if (first_byte && k.mv_size == 32 &&
		    !memcmp(k.mv_data, want, 32))
			*first_byte = *(unsigned char *)v.mv_data;
	}
	mdb_cursor_close(cur);
	mdb_txn_abort(txn);
	mdb_env_close(env);
	free(dir);
	return c;
}

START_TEST(test_values_layout)
{
	static const struct vput first[] = {
		{ APTIX_TABLE_OBJECTS, 0xa1, 10, 'a' },		/* in place */
		{ APTIX_TABLE_OBJECTS, 0xb2, 1500, 'b' },	/* one piece */
		{ APTIX_TABLE_OBJECTS, 0xc3, 4500, 'c' },	/* three */
		{ APTIX_TABLE_OBJECTS, 0xd4, 4000, 'd' },	/* two, full */
		{ APTIX_TABLE_SESSIONS, 0xe5, 1500, 'e' },
		{ APTIX_TABLE_SESSIONS, 0xf6, 600, 'f' },	/* in place */
		{ APTIX_TABLE__COUNT, 0, 0, 0 }
	};
	static const struct vput second[] = {
		{ APTIX_TABLE_OBJECTS, 0xc3, 100, 'C' },	/* replaced */
		{ APTIX_TABLE_OBJECTS, 0xb2, 0, 0 },		/* deleted */
		{ APTIX_TABLE_SESSIONS, 0xe5, 20, 'E' },	/* now in place */
		{ APTIX_TABLE__COUNT, 0, 0, 0 }
	};
	static const struct vput third[] = {
		{ APTIX_TABLE_OBJECTS, 0xc3, 150, 'Q' },
		{ APTIX_TABLE__COUNT, 0, 0, 0 }
	};
	struct vcount c = { 0, 0, 0 };
	aptix_buf b = APTIX_BUF_INIT;
	unsigned char byte = 0xff;

	init_repo();
	ck_assert_int_eq(set_format("3"), 0);
	ck_assert_msg(repo->store->write(repo->store, put_values,
					 (void *)first) == 0, "%s", errmsg());
	assert_value(APTIX_TABLE_OBJECTS, 0xa1, 10, 'a');
	assert_value(APTIX_TABLE_OBJECTS, 0xb2, 1500, 'b');
	assert_value(APTIX_TABLE_OBJECTS, 0xc3, 4500, 'c');
	assert_value(APTIX_TABLE_OBJECTS, 0xd4, 4000, 'd');
	assert_value(APTIX_TABLE_SESSIONS, 0xe5, 1500, 'e');
	assert_value(APTIX_TABLE_SESSIONS, 0xf6, 600, 'f');
	/* iteration hands out whole values too */
	ck_assert_int_eq(repo->store->iter(repo->store, APTIX_TABLE_OBJECTS,
					   NULL, 0, 0, vcount_cb, &c), 0);
	ck_assert_uint_eq(c.n, 4);
	ck_assert_uint_eq(c.bytes, 10 + 1500 + 4500 + 4000);
	/* the first pointer raised the format */
	ck_assert_int_eq(repo->store->get(&b, repo->store, APTIX_TABLE_META,
					  "format", 6), 0);
	ck_assert_str_eq(b.ptr, "6");
	ck_assert_msg(repo->store->write(repo->store, put_values,
					 (void *)second) == 0, "%s", errmsg());
	ck_assert_msg(repo->store->write(repo->store, put_values,
					 (void *)third) == 0, "%s", errmsg());
	assert_value(APTIX_TABLE_OBJECTS, 0xc3, 150, 'Q');
	assert_value(APTIX_TABLE_SESSIONS, 0xe5, 20, 'E');
	ck_assert_int_eq(repo->store->get(&b, repo->store, APTIX_TABLE_OBJECTS,
					  (unsigned char[32]){ 0xb2, 0xb2 }, 32),
			 APTIX_ENOTFOUND);
	aptix_buf_release(&b);
	aptix_repo_free(repo);
	repo = NULL;
	/*
	 * What is left in the values table (format 6: each value in pieces
	 * of its own, the first one filling what is left of its page, the
	 * next ones of 2,000 bytes, the last one the rest). The first
	 * write: b in piece 0 (1,500 bytes), c in 1-3 (2,000, 2,000, 500),
	 * d in 4-6 (1,526 filling the page, 2,000, 474), e in 7. The
	 * second deletes b's, c's and e's pieces and puts C in 8; the
	 * third deletes 8 and puts Q in 9. Left: 4-6 and 9; no piece was
	 * ever written twice.
	 */
	c = lmdb_table("values", 0, NULL);
	ck_assert_uint_eq(c.n, 4);
	ck_assert_uint_eq(c.bytes, 4000 + 150);
	ck_assert_uint_eq(c.hi, 9);
	lmdb_table("objects", 0xa1, &byte);
	ck_assert_int_eq(byte, 1);		/* in place */
	lmdb_table("objects", 0xd4, &byte);
	ck_assert_int_eq(byte, 0);		/* a pointer */
	lmdb_table("sessions", 0xf6, &byte);
	ck_assert_int_eq(byte, 1);	/* a record under 1,024 bytes */
}
END_TEST

/*
 * Pieces at their edges: values of exactly a piece, of a piece and a
 * few bytes, of the smallest size kept in pieces, each in its own.
 */
START_TEST(test_values_edges)
{
	static const struct vput one[] = {
		{ APTIX_TABLE_OBJECTS, 0xa1, 702, 'a' },	/* 0 */
		{ APTIX_TABLE__COUNT, 0, 0, 0 }
	};
	static const struct vput two[] = {
		{ APTIX_TABLE_OBJECTS, 0xb2, 300, 'b' },	/* 1 */
		{ APTIX_TABLE_OBJECTS, 0xc3, 1002, 'c' },	/* 2 */
		{ APTIX_TABLE_OBJECTS, 0xd4, 2004, 'd' },	/* 3, 4 */
		{ APTIX_TABLE_OBJECTS, 0xe5, 64, 'e' },		/* 5 */
		{ APTIX_TABLE__COUNT, 0, 0, 0 }
	};
	static const struct vput three[] = {
		{ APTIX_TABLE_OBJECTS, 0xf6, 2000, 'f' },	/* 6 */
		{ APTIX_TABLE__COUNT, 0, 0, 0 }
	};
	static const struct vput four[] = {
		{ APTIX_TABLE_OBJECTS, 0xb2, 0, 0 },	/* 1 deleted */
		{ APTIX_TABLE_OBJECTS, 0xc3, 0, 0 },	/* 2 deleted */
		{ APTIX_TABLE__COUNT, 0, 0, 0 }
	};
	struct vcount c;

	init_repo();
	ck_assert_msg(repo->store->write(repo->store, put_values,
					 (void *)one) == 0, "%s", errmsg());
	ck_assert_msg(repo->store->write(repo->store, put_values,
					 (void *)two) == 0, "%s", errmsg());
	ck_assert_msg(repo->store->write(repo->store, put_values,
					 (void *)three) == 0, "%s", errmsg());
	assert_value(APTIX_TABLE_OBJECTS, 0xa1, 702, 'a');
	assert_value(APTIX_TABLE_OBJECTS, 0xb2, 300, 'b');
	assert_value(APTIX_TABLE_OBJECTS, 0xc3, 1002, 'c');
	assert_value(APTIX_TABLE_OBJECTS, 0xd4, 2004, 'd');
	assert_value(APTIX_TABLE_OBJECTS, 0xe5, 64, 'e');
	assert_value(APTIX_TABLE_OBJECTS, 0xf6, 2000, 'f');
	ck_assert_msg(repo->store->write(repo->store, put_values,
					 (void *)four) == 0, "%s", errmsg());
	assert_value(APTIX_TABLE_OBJECTS, 0xa1, 702, 'a');
	assert_value(APTIX_TABLE_OBJECTS, 0xd4, 2004, 'd');
	assert_value(APTIX_TABLE_OBJECTS, 0xf6, 2000, 'f');
	aptix_repo_free(repo);
	repo = NULL;
	/* pieces 0 and 3-6: 1 and 2 went with b and c */
	c = lmdb_table("values", 0, NULL);
	ck_assert_uint_eq(c.n, 5);
	ck_assert_uint_eq(c.bytes, 702 + 2004 + 64 + 2000);
	ck_assert_uint_eq(c.hi, 6);
}
END_TEST

START_TEST(test_values_damaged)
{
	static const struct vput put[] = {
		{ APTIX_TABLE_OBJECTS, 0xc3, 4500, 'c' },
		{ APTIX_TABLE__COUNT, 0, 0, 0 }
	};
	static const unsigned char bad[][10] = {
		{ 0x00 },			/* no number */
		{ 0x00, 0x80 },			/* a varint cut short */
		{ 0x00, 0x00, 0x00 },		/* no length */
		{ 0x00, 0x00, 0x05, 0x01, 0x01 },	/* a byte too many */
		{ 0x00, 0x09, 0x05 },		/* no such piece */
		{ 0x00, 0x00, 0x05, 0xea, 0x07 },	/* offset 1002 */
		{ 0x00, 0x04, 0xd8, 0x04, 0x00 },	/* past the last piece */
		/* format 6: 5 bytes, all in piece 0 (of 2,000: not its
		 * size), and a CRC-32 that is not theirs */
		{ 0x00, 0x00, 0x05, 0x05, 0x12, 0x34, 0x56, 0x78 },
		/* the 2,000 bytes of piece 0, a CRC-32 that is not theirs */
		{ 0x00, 0x00, 0xd0, 0x0f, 0xd0, 0x0f, 0x12, 0x34, 0x56, 0x78 },
		{ 0x00, 0x00, 0x05, 0x05, 0x00, 0x00, 0x00 },	/* cut short */
		{ 0x00, 0x00, 0x05, 0x00, 0x00, 0x00, 0x00, 0x00 }, /* head 0 */
		{ 0x00, 0x00, 0x05, 0x06, 0x00, 0x00, 0x00, 0x00 }, /* 6 > 5 */
	};
	static const size_t badlen[] = { 1, 2, 3, 5, 3, 5, 5, 8, 10, 7, 8, 8 };
	char *dir;
	unsigned char key[32], k8[8] = { 0 };
	aptix_buf b = APTIX_BUF_INIT;
	MDB_env *env;
	MDB_txn *txn;
	MDB_dbi dbi, vdbi;
	MDB_val k = { 32, key }, v, pk = { 8, k8 };
	size_t i;

	init_repo();
	ck_assert_int_eq(repo->store->write(repo->store, put_values,
					    (void *)put), 0);
	aptix_repo_free(repo);
	repo = NULL;
	dir = unit_path(tmpdir, ".aptix");
	memset(key, 0x11, sizeof(key));
	ck_assert_int_eq(mdb_env_create(&env), 0);
	mdb_env_set_maxdbs(env, 32);
	ck_assert_int_eq(mdb_env_open(env, dir, 0, 0600), 0);
	ck_assert_int_eq(mdb_txn_begin(env, NULL, 0, &txn), 0);
	ck_assert_int_eq(mdb_dbi_open(txn, "objects", 0, &dbi), 0);
	ck_assert_int_eq(mdb_dbi_open(txn, "values", 0, &vdbi), 0);
	for (i = 0; i < sizeof(badlen) / sizeof(badlen[0]); i++) {
		key[0] = (unsigned char)i;
		v.mv_size = badlen[i];
		v.mv_data = (void *)bad[i];
		ck_assert_int_eq(mdb_put(txn, dbi, &k, &v, 0), 0);
	}
	/* the middle piece of c's value goes missing */
	k8[7] = 1;
	ck_assert_int_eq(mdb_del(txn, vdbi, &pk, NULL), 0);
	ck_assert_int_eq(mdb_txn_commit(txn), 0);
	mdb_env_close(env);
	ck_assert_msg(aptix_repo_open(&repo, dir) == 0, "%s", errmsg());
	free(dir);
	for (i = 0; i < sizeof(badlen) / sizeof(badlen[0]); i++) {
		key[0] = (unsigned char)i;
		ck_assert_int_eq(repo->store->get(&b, repo->store,
						  APTIX_TABLE_OBJECTS, key,
						  32), APTIX_ECORRUPT);
		ck_assert_ptr_nonnull(strstr(errmsg(), "corrupt"));
	}
	memset(key, 0xc3, sizeof(key));
	ck_assert_int_eq(repo->store->get(&b, repo->store, APTIX_TABLE_OBJECTS,
					  key, 32), APTIX_ECORRUPT);
	ck_assert_ptr_nonnull(strstr(errmsg(), "piece 2 of 3 "));
	/* a damaged record can still be deleted */
	ck_assert_int_eq(repo->store->write(repo->store, put_values,
		(void *)(const struct vput[]){
			{ APTIX_TABLE_OBJECTS, 0xc3, 0, 0 },
			{ APTIX_TABLE__COUNT, 0, 0, 0 } }), 0);
	aptix_buf_release(&b);
}
END_TEST

START_TEST(test_txn_atomic)
{
	aptix_txn *tx;
	aptix_oid x, y, v, junk, zero;
	aptix_ref ref;
	aptix_buf buf = APTIX_BUF_INIT;
	aptix_conv_info ci;
	aptix_otype t;

	init_repo();
	memset(&zero, 0, sizeof(zero));
	memset(&junk, 0x42, sizeof(junk));

	/* CAS on an absent ref expecting a value: nothing is applied */
	ck_assert_int_eq(aptix_txn_new(&tx, repo), 0);
	ck_assert_uint_eq(aptix_txn_size(tx), 0);
	ck_assert_int_eq(aptix_txn_commit(tx), 0);	/* empty: no-op */
	x = q_blob(tx, "object x");
	y = q_blob(tx, "object y");
	ck_assert_uint_eq(aptix_txn_size(tx), 2);
	q_blob(tx, "object x");				/* queued once */
	ck_assert_uint_eq(aptix_txn_size(tx), 2);
	/* queued objects can be read back before the commit */
	ck_assert_int_eq(aptix_txn_read_object(&buf, &t, tx, &x), 0);
	ck_assert_str_eq(buf.ptr, "object x");
	ck_assert_int_eq(t, APTIX_OBJ_BLOB);
	ck_assert_int_eq(aptix_txn_ref_update(tx, "refs/conversations/t", &x,
					      &junk, "cas"), 0);
	ck_assert_uint_eq(aptix_txn_size(tx), 3);
	ck_assert_int_eq(aptix_txn_commit(tx), APTIX_EMISMATCH);
	ck_assert_ptr_nonnull(strstr(errmsg(), "refs/conversations/t"));
	aptix_txn_free(tx);
	ck_assert_int_eq(aptix_odb_exists(aptix_repo_odb(repo), &x), 0);
	ck_assert_int_eq(aptix_odb_exists(aptix_repo_odb(repo), &y), 0);
	ck_assert_int_eq(aptix_ref_read(&ref, repo, "refs/conversations/t"),
			 APTIX_ENOTFOUND);
	ck_assert_int_eq(aptix_index_conversation(&ci, repo, "t"),
			 APTIX_ENOTFOUND);

	/* create (must not exist), then a second create fails */
	ck_assert_int_eq(aptix_txn_new(&tx, repo), 0);
	x = q_blob(tx, "object x");
	ck_assert_int_eq(aptix_txn_ref_update(tx, "refs/conversations/t", &x,
					      &zero, "create"), 0);
	ck_assert_int_eq(aptix_txn_commit(tx), 0);
	ck_assert_uint_eq(aptix_txn_size(tx), 0);
	v = q_blob(tx, "object v");
	ck_assert_int_eq(aptix_txn_ref_update(tx, "refs/conversations/t", &v,
					      &zero, "create again"), 0);
	ck_assert_int_eq(aptix_txn_commit(tx), APTIX_EMISMATCH);
	ck_assert_ptr_nonnull(strstr(errmsg(), "already exists"));
	aptix_txn_free(tx);
	ck_assert_int_eq(aptix_odb_exists(aptix_repo_odb(repo), &x), 1);
	ck_assert_int_eq(aptix_odb_exists(aptix_repo_odb(repo), &v), 0);

	/* a good update and a failing one in one batch: neither lands */
	ck_assert_int_eq(aptix_txn_new(&tx, repo), 0);
	v = q_blob(tx, "object v");
	ck_assert_int_eq(aptix_txn_ref_update(tx, "refs/heads/one", &v,
					      &zero, "one"), 0);
	ck_assert_int_eq(aptix_txn_ref_update(tx, "refs/conversations/t", &v,
					      &v, "stale"), 0);
	ck_assert_int_eq(aptix_txn_commit(tx), APTIX_EMISMATCH);
	aptix_txn_free(tx);
	ck_assert_int_eq(aptix_ref_read(&ref, repo, "refs/heads/one"),
			 APTIX_ENOTFOUND);
	ck_assert_int_eq(aptix_odb_exists(aptix_repo_odb(repo), &v), 0);
	ck_assert_int_eq(aptix_ref_read(&ref, repo, "refs/conversations/t"),
			 0);
	assert_oid_eq(&ref.oid, &x);
	aptix_ref_release(&ref);

	/* the right old value: applied; any old value (NULL): applied */
	ck_assert_int_eq(aptix_txn_new(&tx, repo), 0);
	v = q_blob(tx, "object v");
	ck_assert_int_eq(aptix_txn_ref_update(tx, "refs/conversations/t", &v,
					      &x, "move"), 0);
	ck_assert_int_eq(aptix_txn_ref_update(tx, "refs/heads/one", &x, NULL,
					      "any"), 0);
	ck_assert_int_eq(aptix_txn_commit(tx), 0);
	ck_assert_int_eq(aptix_odb_exists(aptix_repo_odb(repo), &v), 1);
	ck_assert_int_eq(aptix_ref_read(&ref, repo, "refs/conversations/t"),
			 0);
	assert_oid_eq(&ref.oid, &v);
	aptix_ref_release(&ref);

	/* delete: with the right old value, then of an absent ref */
	ck_assert_int_eq(aptix_txn_ref_update(tx, "refs/heads/one", NULL, &x,
					      "delete"), 0);
	ck_assert_int_eq(aptix_txn_commit(tx), 0);
	ck_assert_int_eq(aptix_ref_read(&ref, repo, "refs/heads/one"),
			 APTIX_ENOTFOUND);
	ck_assert_int_eq(aptix_txn_ref_update(tx, "refs/heads/one", NULL, NULL,
					      "delete"), 0);
	ck_assert_int_eq(aptix_txn_commit(tx), APTIX_ENOTFOUND);
	aptix_txn_free(tx);

	/* bad names are refused when queued */
	ck_assert_int_eq(aptix_txn_new(&tx, repo), 0);
	ck_assert_int_eq(aptix_txn_ref_update(tx, "refs/bad..name", &x, NULL,
					      "r"), APTIX_EINVALID);
	ck_assert_int_eq(aptix_txn_symref_update(tx, "HEAD", "nope", "r"),
			 APTIX_EINVALID);
	ck_assert_int_eq(aptix_txn_symref_update(tx, "refs/a", "refs/a", "r"),
			 APTIX_EINVALID);
	ck_assert_uint_eq(aptix_txn_size(tx), 0);
	/* malformed objects too */
	ck_assert_int_eq(aptix_txn_write_object(&v, tx, APTIX_OBJ_TURN, "{}\n",
						3), APTIX_ECORRUPT);
	ck_assert_uint_eq(aptix_txn_size(tx), 0);
	/* freeing a txn discards what it queued */
	v = q_blob(tx, "discarded");
	aptix_txn_free(tx);
	aptix_txn_free(NULL);
	ck_assert_int_eq(aptix_odb_exists(aptix_repo_odb(repo), &v), 0);

	/* all of it survives reopening */
	reopen();
	ck_assert_int_eq(aptix_ref_read(&ref, repo, "refs/conversations/t"),
			 0);
	ck_assert_int_eq(aptix_odb_exists(aptix_repo_odb(repo), &ref.oid), 1);
	aptix_ref_release(&ref);
	aptix_buf_release(&buf);
}
END_TEST

struct reflog_rec {
	aptix_reflog_entry e[8];
	char msg[8][32];
	int n, stop_after;
};

static int reflog_cb(const aptix_reflog_entry *e, void *payload)
{
	struct reflog_rec *r = payload;

	ck_assert_int_lt(r->n, 8);
	r->e[r->n] = *e;
	snprintf(r->msg[r->n], sizeof(r->msg[0]), "%s", e->message);
	r->e[r->n].message = r->msg[r->n];
	r->n++;
	return r->stop_after && r->n == r->stop_after ? 5 : 0;
}

START_TEST(test_reflog)
{
	aptix_oid a = blob_id("a"), b = blob_id("b"), zero;
	aptix_txn *tx;
	struct reflog_rec rec;

	init_repo();
	memset(&zero, 0, sizeof(zero));
	ck_assert_int_eq(aptix_txn_new(&tx, repo), 0);
	ck_assert_int_eq(aptix_txn_ref_update(tx, "refs/heads/main", &a, &zero,
					      "create"), 0);
	/* neighbours whose names share a prefix */
	ck_assert_int_eq(aptix_txn_ref_update(tx, "refs/heads/mai", &b, NULL,
					      "short"), 0);
	ck_assert_int_eq(aptix_txn_ref_update(tx, "refs/heads/main2", &b, NULL,
					      "long"), 0);
	ck_assert_int_eq(aptix_txn_commit(tx), 0);
	ck_assert_int_eq(aptix_txn_ref_update(tx, "refs/heads/main", &b, &a,
					      "update"), 0);
	ck_assert_int_eq(aptix_txn_commit(tx), 0);
	ck_assert_int_eq(aptix_txn_ref_update(tx, "refs/heads/main", NULL, &b,
					      "delete"), 0);
	ck_assert_int_eq(aptix_txn_commit(tx), 0);
	/* a failed update logs nothing */
	ck_assert_int_eq(aptix_txn_ref_update(tx, "refs/heads/main", &a, &b,
					      "stale"), 0);
	ck_assert_int_eq(aptix_txn_commit(tx), APTIX_EMISMATCH);
	aptix_txn_free(tx);

	memset(&rec, 0, sizeof(rec));
	ck_assert_int_eq(aptix_reflog_foreach(repo, "refs/heads/main",
					      reflog_cb, &rec), 0);
	ck_assert_int_eq(rec.n, 3);
	/* newest first */
	ck_assert_str_eq(rec.e[0].message, "delete");
	assert_oid_eq(&rec.e[0].old_id, &b);
	assert_oid_eq(&rec.e[0].new_id, &zero);
	ck_assert_str_eq(rec.e[1].message, "update");
	assert_oid_eq(&rec.e[1].old_id, &a);
	assert_oid_eq(&rec.e[1].new_id, &b);
	ck_assert_str_eq(rec.e[2].message, "create");
	assert_oid_eq(&rec.e[2].old_id, &zero);
	assert_oid_eq(&rec.e[2].new_id, &a);
	ck_assert_int_eq(rec.e[0].time_ms, TEST_MS);
	ck_assert_int_eq(rec.e[2].time_ms, TEST_MS);

	memset(&rec, 0, sizeof(rec));
	ck_assert_int_eq(aptix_reflog_foreach(repo, "refs/heads/mai",
					      reflog_cb, &rec), 0);
	ck_assert_int_eq(rec.n, 1);
	ck_assert_str_eq(rec.e[0].message, "short");
	memset(&rec, 0, sizeof(rec));
	ck_assert_int_eq(aptix_reflog_foreach(repo, "refs/heads/main2",
					      reflog_cb, &rec), 0);
	ck_assert_int_eq(rec.n, 1);
	ck_assert_str_eq(rec.e[0].message, "long");

	/* HEAD's initial symref was logged by nobody; unknown refs: empty */
	memset(&rec, 0, sizeof(rec));
	ck_assert_int_eq(aptix_reflog_foreach(repo, "refs/heads/none",
					      reflog_cb, &rec), 0);
	ck_assert_int_eq(rec.n, 0);
	/*
	 * a symref update is logged too, with the ids its targets name and
	 * where it moved from (what @{-1} reads)
	 */
	set_symref("HEAD", "refs/heads/main2");
	memset(&rec, 0, sizeof(rec));
	ck_assert_int_eq(aptix_reflog_foreach(repo, "HEAD", reflog_cb, &rec),
			 0);
	ck_assert_int_eq(rec.n, 1);
	ck_assert_ptr_nonnull(strstr(rec.e[0].message, "sym: moving from "));
	assert_oid_eq(&rec.e[0].new_id, &b);

	/* stopping early */
	memset(&rec, 0, sizeof(rec));
	rec.stop_after = 2;
	ck_assert_int_eq(aptix_reflog_foreach(repo, "refs/heads/main",
					      reflog_cb, &rec), 5);
	ck_assert_int_eq(rec.n, 2);
	ck_assert_int_eq(aptix_reflog_foreach(repo, "bad", reflog_cb, &rec),
			 APTIX_EINVALID);
}
END_TEST

/* --- Refs -------------------------------------------------------------- */

START_TEST(test_ref_names)
{
	static const char *const valid[] = {
		"HEAD", "refs/heads/main", "refs/conversations/abc-123",
		"refs/a", "refs/a.b/c", "refs/x@y", "refs/a-b", "refs/a_b",
		"refs/a/b/c/d", "refs/a.lockx", "refs/unicode-\xc3\xa9",
	};
	static const char *const invalid[] = {
		"", "head", "HEAD/x", "refs", "refs/", "refs//a", "refs/a/",
		"refs/a.", "refs/.a", "refs/a/.b", "refs/-a", "refs/a/-b",
		"refs/a..b", "refs/a@{1}", "refs/a b", "refs/a~1", "refs/a^",
		"refs/a:b", "refs/a?", "refs/a*", "refs/a[", "refs/a\\b",
		"refs/a\tb", "refs/a\nb", "refs/a\x7f", "refs/a.lock",
		"refs/a.lock/b", "/refs/a", "refs/a//b", "heads/main",
		"refs/heads/main.",
	};
	char longname[APTIX_REF_MAXLEN + 2];
	size_t i;

	for (i = 0; i < sizeof(valid) / sizeof(valid[0]); i++)
		ck_assert_msg(aptix_ref_check_name(valid[i]) == 0,
			      "rejected '%s': %s", valid[i], errmsg());
	for (i = 0; i < sizeof(invalid) / sizeof(invalid[0]); i++) {
		aptix_error_clear();
		ck_assert_msg(aptix_ref_check_name(invalid[i]) ==
			      APTIX_EINVALID, "accepted '%s'", invalid[i]);
		ck_assert_ptr_nonnull(strstr(errmsg(), "invalid ref name"));
	}
	/* length limit */
	memset(longname, 'x', sizeof(longname));
	memcpy(longname, "refs/", 5);
	longname[APTIX_REF_MAXLEN] = '\0';
	ck_assert_int_eq(aptix_ref_check_name(longname), 0);
	longname[APTIX_REF_MAXLEN] = 'x';
	longname[APTIX_REF_MAXLEN + 1] = '\0';
	ck_assert_int_eq(aptix_ref_check_name(longname), APTIX_EINVALID);
	ck_assert_ptr_nonnull(strstr(errmsg(), "too long"));
}
END_TEST

START_TEST(test_conv_ids)
{
	static const char *const valid[] = {
		"a", "alpha", "A-9_x.y", "0b3c6c1e-5b7a-4d8e-9f00-123456789abc",
		"a.lockx",
		"1234567890123456789012345678901234567890123456789012345678901234",
	};
	static const char *const invalid[] = {
		"", ".a", "-a", "a/b", "a b", "a..b", "a.lock", "a:b", "a~",
		"\xc3\xa9", "HEAD^",
		"12345678901234567890123456789012345678901234567890123456789012345",
	};
	size_t i;

	for (i = 0; i < sizeof(valid) / sizeof(valid[0]); i++)
		ck_assert_msg(aptix_conv_check_id(valid[i]) == 0,
			      "rejected '%s'", valid[i]);
	for (i = 0; i < sizeof(invalid) / sizeof(invalid[0]); i++)
		ck_assert_msg(aptix_conv_check_id(invalid[i]) ==
			      APTIX_EINVALID, "accepted '%s'", invalid[i]);
}
END_TEST

struct ref_list {
	char names[16][80];
	int n;
};

static int list_ref(const aptix_ref *ref, void *payload)
{
	struct ref_list *l = payload;

	ck_assert_int_lt(l->n, 16);
	snprintf(l->names[l->n++], sizeof(l->names[0]), "%s", ref->name);
	return 0;
}

START_TEST(test_symrefs)
{
	aptix_ref head, ref;
	aptix_oid id, a = blob_id("a");
	char *resolved = NULL, *target;
	struct ref_list l;

	init_repo();
	/* HEAD is born unborn: it names a conversation with no snapshot */
	ck_assert_int_eq(aptix_ref_read(&head, repo, "HEAD"), 0);
	ck_assert_ptr_nonnull(head.target);
	ck_assert_str_eq(head.name, "HEAD");
	target = strdup(head.target);
	ck_assert_ptr_nonnull(target);
	ck_assert_int_eq(aptix_ref_resolve(&id, &resolved, repo, "HEAD"),
			 APTIX_ENOTFOUND);
	ck_assert_ptr_nonnull(resolved);
	ck_assert_str_eq(resolved, target);
	ck_assert_ptr_nonnull(strstr(errmsg(), "no snapshot yet"));
	free(resolved);
	ck_assert_int_eq(aptix_ref_resolve(&id, NULL, repo, "HEAD"),
			 APTIX_ENOTFOUND);
	{
		char conv[APTIX_CONV_MAXLEN + 1];

		ck_assert_int_eq(aptix_conv_resolve(conv, repo, "HEAD"), 0);
		ck_assert_str_eq(conv, target + strlen(APTIX_CONV_PREFIX));
	}

	/* born: resolves through the symref */
	set_ref(target, &a);
	ck_assert_int_eq(aptix_ref_resolve(&id, &resolved, repo, "HEAD"), 0);
	assert_oid_eq(&id, &a);
	ck_assert_str_eq(resolved, target);
	free(resolved);
	ck_assert_int_eq(aptix_ref_resolve(&id, &resolved, repo, target), 0);
	ck_assert_str_eq(resolved, target);
	free(resolved);
	aptix_ref_release(&head);

	/* chains, loops, missing refs */
	set_symref("refs/s1", "refs/s2");
	set_symref("refs/s2", "refs/heads/x");
	set_ref("refs/heads/x", &a);
	ck_assert_int_eq(aptix_ref_resolve(&id, &resolved, repo, "refs/s1"), 0);
	ck_assert_str_eq(resolved, "refs/heads/x");
	free(resolved);
	set_symref("refs/heads/x", "refs/s1");
	ck_assert_int_eq(aptix_ref_resolve(&id, &resolved, repo, "refs/s1"),
			 APTIX_ECORRUPT);
	ck_assert_ptr_nonnull(strstr(errmsg(), "nests too deeply"));
	free(resolved);
	ck_assert_int_eq(aptix_ref_resolve(&id, &resolved, repo,
					   "refs/nothing"), APTIX_ENOTFOUND);
	ck_assert_str_eq(resolved, "refs/nothing");
	free(resolved);
	ck_assert_int_eq(aptix_ref_read(&ref, repo, "refs/bad name"),
			 APTIX_EINVALID);
	ck_assert_int_eq(aptix_ref_read(&ref, repo, "refs/nothing"),
			 APTIX_ENOTFOUND);

	/* listing, sorted, by prefix */
	memset(&l, 0, sizeof(l));
	ck_assert_int_eq(aptix_ref_foreach(repo, NULL, list_ref, &l), 0);
	ck_assert_int_eq(l.n, 5);
	ck_assert_str_eq(l.names[0], "HEAD");
	ck_assert_str_eq(l.names[1], target);
	ck_assert_str_eq(l.names[2], "refs/heads/x");
	ck_assert_str_eq(l.names[3], "refs/s1");
	ck_assert_str_eq(l.names[4], "refs/s2");
	memset(&l, 0, sizeof(l));
	ck_assert_int_eq(aptix_ref_foreach(repo, "refs/s", list_ref, &l), 0);
	ck_assert_int_eq(l.n, 2);
	ck_assert_str_eq(l.names[0], "refs/s1");
	memset(&l, 0, sizeof(l));
	ck_assert_int_eq(aptix_ref_foreach(repo, "refs/z", list_ref, &l), 0);
	ck_assert_int_eq(l.n, 0);
	free(target);
}
END_TEST

/* --- The session index -------------------------------------------------- */

struct id_list {
	aptix_oid ids[16];
	int n;
};

static int list_id(const aptix_oid *id, void *payload)
{
	struct id_list *l = payload;

	ck_assert_int_lt(l->n, 16);
	l->ids[l->n++] = *id;
	return 0;
}

static int count_session(const aptix_session_info *s, void *payload)
{
	struct id_list *l = payload;

	ck_assert_int_lt(l->n, 16);
	l->ids[l->n++] = s->id;
	return 0;
}

static int first_session(const aptix_session_info *s, void *payload)
{
	struct id_list *l = payload;

	l->ids[l->n++] = s->id;
	return APTIX_ITEROVER;
}

struct since_count {
	int64_t since;
	int n, older;	/* given; given though older than since */
	int64_t times[16];
};

static int count_since(const aptix_session_info *s, void *payload)
{
	struct since_count *sc = payload;

	ck_assert_int_lt(sc->n, 16);
	sc->times[sc->n++] = s->created_at;
	sc->older += s->created_at < sc->since;
	return 0;
}

/* Each since gives exactly the sessions created at it or later. */
static void check_since(void)
{
	static const int64_t sinces[] = { 0, 1, 1000, 1001, 2000, 3000,
					  3001, (int64_t)1 << 40 };
	struct since_count all, sc;
	size_t k;
	int i, want;

	memset(&all, 0, sizeof(all));
	ck_assert_int_eq(aptix_index_foreach_session_since(repo, 0,
							   count_since, &all),
			 0);
	ck_assert_int_eq(all.n, 5);
	for (k = 0; k < ARRAY_SIZE(sinces); k++) {
		memset(&sc, 0, sizeof(sc));
		sc.since = sinces[k];
		ck_assert_int_eq(aptix_index_foreach_session_since(repo,
				 sinces[k], count_since, &sc), 0);
		for (want = 0, i = 0; i < all.n; i++)
			want += all.times[i] >= sinces[k];
		ck_assert_int_eq(sc.n, want);
		ck_assert_int_eq(sc.older, 0);
	}
}

static int list_conv(const aptix_conv_info *c, void *payload)
{
	struct ref_list *l = payload;

	ck_assert_int_lt(l->n, 16);
	snprintf(l->names[l->n++], sizeof(l->names[0]), "%s", c->id);
	return 0;
}

START_TEST(test_index)
{
	aptix_session_info si;
	aptix_conv_info ci;
	struct id_list l;
	struct ref_list cl;
	int i;

	build_history();

	ck_assert_int_eq(aptix_index_session(&si, repo, &h.r1.session), 0);
	assert_oid_eq(&si.id, &h.r1.session);
	ck_assert_int_eq(si.has_parent, 0);
	ck_assert_uint_eq(si.generation, 1);
	ck_assert_str_eq(si.conversation, "alpha");
	ck_assert_str_eq(si.summary, "First line");
	ck_assert_int_eq(si.created_at, 1000);
	ck_assert_int_eq(si.status, APTIX_SESSION_COMMITTED);
	ck_assert_int_eq(si.turn_status, APTIX_TURN_COMPLETED);
	assert_oid_eq(&si.turn, &h.r1.turn);

	ck_assert_int_eq(aptix_index_session(&si, repo, &h.r2.session), 0);
	ck_assert_int_eq(si.has_parent, 1);
	assert_oid_eq(&si.parent, &h.r1.session);
	ck_assert_uint_eq(si.generation, 2);
	ck_assert_str_eq(si.summary, "Second instruction");
	ck_assert_int_eq(aptix_index_session(&si, repo, &h.r3.session), 0);
	ck_assert_uint_eq(si.generation, 3);
	assert_oid_eq(&si.parent, &h.r2.session);
	ck_assert_int_eq(aptix_index_session(&si, repo, &h.f2.session), 0);
	ck_assert_uint_eq(si.generation, 2);
	assert_oid_eq(&si.parent, &h.r1.session);
	ck_assert_int_eq(aptix_index_session(&si, repo, &h.b1.session), 0);
	ck_assert_uint_eq(si.generation, 1);
	ck_assert_str_eq(si.conversation, "beta");

	/* objects that are not sessions are not indexed */
	ck_assert_int_eq(aptix_index_session(&si, repo, &h.r1.turn),
			 APTIX_ENOTFOUND);

	/* children: the continuation and the fork, in id order */
	memset(&l, 0, sizeof(l));
	ck_assert_int_eq(aptix_index_children(repo, &h.r1.session, list_id,
					      &l), 0);
	ck_assert_int_eq(l.n, 2);
	ck_assert_int_lt(aptix_oid_cmp(&l.ids[0], &l.ids[1]), 0);
	ck_assert(!aptix_oid_cmp(&l.ids[0], &h.r2.session) ||
		  !aptix_oid_cmp(&l.ids[0], &h.f2.session));
	ck_assert(!aptix_oid_cmp(&l.ids[1], &h.r2.session) ||
		  !aptix_oid_cmp(&l.ids[1], &h.f2.session));
	memset(&l, 0, sizeof(l));
	ck_assert_int_eq(aptix_index_children(repo, &h.r2.session, list_id,
					      &l), 0);
	ck_assert_int_eq(l.n, 1);
	assert_oid_eq(&l.ids[0], &h.r3.session);
	memset(&l, 0, sizeof(l));
	ck_assert_int_eq(aptix_index_children(repo, &h.r3.session, list_id,
					      &l), 0);
	ck_assert_int_eq(l.n, 0);
	/* the same when the caller has the parent's time; another time
	 * finds none */
	ck_assert_int_eq(aptix_index_session(&si, repo, &h.r1.session), 0);
	memset(&l, 0, sizeof(l));
	ck_assert_int_eq(aptix_index_children_at(repo, &h.r1.session,
						 si.created_at, list_id, &l),
			 0);
	ck_assert_int_eq(l.n, 2);
	memset(&l, 0, sizeof(l));
	ck_assert_int_eq(aptix_index_children_at(repo, &h.r1.session,
						 si.created_at + 1, list_id,
						 &l), 0);
	ck_assert_int_eq(l.n, 0);

	/* conversation records */
	ck_assert_int_eq(aptix_index_conversation(&ci, repo, "alpha"), 0);
	ck_assert_str_eq(ci.id, "alpha");
	ck_assert_uint_eq(ci.turns, 4);
	ck_assert_str_eq(ci.title, "My title");
	ck_assert_int_eq(ci.has_head, 1);
	assert_oid_eq(&ci.head, &h.r3.session);
	ck_assert_int_eq(ci.created_at, 1000);
	ck_assert_int_eq(ci.updated_at, 3000);
	ck_assert_int_eq(ci.last_status, APTIX_SESSION_COMMITTED);
	ck_assert_str_eq(ci.workspace, "/ws");
	ck_assert_int_eq(ci.archived, 0);
	/* no title: the instruction's first line */
	ck_assert_int_eq(aptix_index_conversation(&ci, repo, "beta"), 0);
	ck_assert_str_eq(ci.title, "Beta instruction");
	ck_assert_uint_eq(ci.turns, 1);
	assert_oid_eq(&ci.head, &h.b1.session);
	/* known only from its ref */
	ck_assert_int_eq(aptix_index_conversation(&ci, repo, "gamma1"), 0);
	ck_assert_uint_eq(ci.turns, 0);
	ck_assert_int_eq(ci.has_head, 1);
	assert_oid_eq(&ci.head, &h.r1.session);
	ck_assert_int_eq(aptix_index_conversation(&ci, repo, "nope"),
			 APTIX_ENOTFOUND);
	ck_assert_int_eq(aptix_index_conversation(&ci, repo, ""),
			 APTIX_ENOTFOUND);

	memset(&l, 0, sizeof(l));
	ck_assert_int_eq(aptix_index_foreach_session(repo, count_session, &l),
			 0);
	ck_assert_int_eq(l.n, 5);
	for (i = 1; i < l.n; i++) {
		int j;

		for (j = 0; j < i; j++)
			ck_assert_int_ne(aptix_oid_cmp(&l.ids[j], &l.ids[i]),
					 0);
	}
	/* a callback that stops the walk stops it */
	memset(&l, 0, sizeof(l));
	ck_assert_int_eq(aptix_index_foreach_session(repo, first_session, &l),
			 0);
	ck_assert_int_eq(l.n, 1);
	check_since();
	memset(&cl, 0, sizeof(cl));
	ck_assert_int_eq(aptix_index_foreach_conversation(repo, list_conv,
							  &cl), 0);
	ck_assert_int_eq(cl.n, 4);
	ck_assert_str_eq(cl.names[0], "alpha");
	ck_assert_str_eq(cl.names[1], "beta");
	ck_assert_str_eq(cl.names[2], "gamma1");
	ck_assert_str_eq(cl.names[3], "gamma2");

	/*
	 * deleting the ref takes the conversation out of the listings (its
	 * sessions stay indexed)
	 */
	{
		aptix_txn *tx;

		ck_assert_int_eq(aptix_txn_new(&tx, repo), 0);
		ck_assert_int_eq(aptix_txn_ref_update(tx, APTIX_CONV_PREFIX
			"beta", NULL, &h.b1.session, "drop"), 0);
		ck_assert_int_eq(aptix_txn_commit(tx), 0);
		aptix_txn_free(tx);
	}
	ck_assert_int_eq(aptix_index_conversation(&ci, repo, "beta"),
			 APTIX_ENOTFOUND);
	ck_assert_int_eq(aptix_index_session(&si, repo, &h.b1.session), 0);
}
END_TEST

START_TEST(test_index_rejects)
{
	aptix_txn *tx;
	aptix_oid instr, turn, other_turn, s, missing;

	init_repo();
	memset(&missing, 0x77, sizeof(missing));
	ck_assert_int_eq(aptix_txn_new(&tx, repo), 0);
	instr = q_blob(tx, "do it");
	turn = q_turn(tx, "conv", 1, 10, &instr);
	other_turn = q_turn(tx, "other", 1, 10, &instr);

	/* parent missing, or not a session */
	ck_assert_int_eq(q_session(&s, tx, "conv", &missing, &turn, 10, NULL),
			 APTIX_EINVALID);
	ck_assert_ptr_nonnull(strstr(errmsg(), "parent"));
	ck_assert_int_eq(q_session(&s, tx, "conv", &instr, &turn, 10, NULL),
			 APTIX_EINVALID);
	ck_assert_ptr_nonnull(strstr(errmsg(), "not a session"));
	/* turn missing, not a turn, of another conversation */
	ck_assert_int_eq(q_session(&s, tx, "conv", NULL, &missing, 10, NULL),
			 APTIX_EINVALID);
	ck_assert_int_eq(q_session(&s, tx, "conv", NULL, &instr, 10, NULL),
			 APTIX_EINVALID);
	ck_assert_int_eq(q_session(&s, tx, "conv", NULL, &other_turn, 10,
				   NULL), APTIX_EINVALID);
	ck_assert_ptr_nonnull(strstr(errmsg(), "other"));
	/* a conversation id that cannot be a ref */
	ck_assert_int_eq(q_session(&s, tx, "bad..id", NULL, &turn, 10, NULL),
			 APTIX_EINVALID);
	ck_assert_uint_eq(aptix_txn_size(tx), 3);
	/* the instruction blob must exist too */
	{
		aptix_oid lost = blob_id("never written");
		aptix_oid t2 = q_turn(tx, "conv", 1, 11, &lost);

		ck_assert_int_eq(q_session(&s, tx, "conv", NULL, &t2, 11,
					   NULL), APTIX_EINVALID);
		ck_assert_ptr_nonnull(strstr(errmsg(), "instruction"));
	}
	ck_assert_int_eq(q_session(&s, tx, "conv", NULL, &turn, 10, NULL), 0);
	ck_assert_int_eq(aptix_txn_commit(tx), 0);
	aptix_txn_free(tx);
}
END_TEST

/* Every record of the index tables, as one comparable byte string. */
static int dump_cb(const void *key, size_t klen, const void *val,
		   size_t vlen, void *payload)
{
	aptix_buf *b = payload;

	aptix_buf_printf(b, "%zu:", klen);
	aptix_buf_put(b, key, klen);
	aptix_buf_printf(b, "=%zu:", vlen);
	aptix_buf_put(b, val, vlen);
	aptix_buf_putc(b, '\n');
	return 0;
}

static void dump_index(aptix_buf *b)
{
	static const aptix_table tables[] = {
		APTIX_TABLE_SESSIONS, APTIX_TABLE_CHILDREN, APTIX_TABLE_CONVS
	};
	size_t i;

	aptix_buf_clear(b);
	for (i = 0; i < 3; i++) {
		aptix_buf_printf(b, "table %d\n", (int)tables[i]);
		ck_assert_int_eq(repo->store->iter(repo->store, tables[i], NULL,
						   0, 0, dump_cb, b), 0);
	}
	ck_assert(!aptix_buf_oom(b));
}

static int damage_index(aptix_store_wtxn *w, void *payload)
{
	aptix_store *s = *(aptix_store **)(void *)w;
	int r;

	(void)payload;
	if ((r = s->wdel(w, APTIX_TABLE_SESSIONS, h.r2.session.id, 32)) < 0)
		return r;
	if ((r = s->wput(w, APTIX_TABLE_CONVS, "alpha", 5, "junk", 4)) < 0)
		return r;
	return s->wput(w, APTIX_TABLE_SESSIONS, "stray key", 9, "x", 1);
}

START_TEST(test_index_rebuild)
{
	aptix_buf before = APTIX_BUF_INIT, after = APTIX_BUF_INIT;
	aptix_conv_info ci;
	size_t n = 0;

	build_history();
	dump_index(&before);

	ck_assert_int_eq(aptix_index_rebuild(repo, &n), 0);
	ck_assert_uint_eq(n, 5);
	dump_index(&after);
	ck_assert_uint_eq(after.len, before.len);
	ck_assert_msg(!memcmp(after.ptr, before.ptr, before.len),
		      "rebuilt index differs");

	/* damaged records are replaced */
	ck_assert_int_eq(repo->store->write(repo->store, damage_index, NULL),
			 0);
	ck_assert_int_eq(aptix_index_conversation(&ci, repo, "alpha"),
			 APTIX_ECORRUPT);
	ck_assert_int_eq(aptix_index_rebuild(repo, NULL), 0);
	dump_index(&after);
	ck_assert_uint_eq(after.len, before.len);
	ck_assert(!memcmp(after.ptr, before.ptr, before.len));
	ck_assert_int_eq(aptix_index_conversation(&ci, repo, "alpha"), 0);
	ck_assert_uint_eq(ci.turns, 4);

	/* and it survives reopening */
	reopen();
	dump_index(&after);
	ck_assert(!memcmp(after.ptr, before.ptr, before.len));
	aptix_buf_release(&before);
	aptix_buf_release(&after);
}
END_TEST

START_TEST(test_conversation_meta)
{
	aptix_conv_info ci;
	size_t n = 0;
	char longer[APTIX_SUMMARY_MAX + 2];

	build_history();
	ck_assert_int_eq(aptix_index_conversation(&ci, repo, "alpha"), 0);
	ck_assert_uint_eq(ci.committed + ci.failed, ci.turns);
	ck_assert_int_eq(ci.has_last, 1);
	ck_assert_int_eq(ci.titled, 0);

	ck_assert_int_eq(aptix_conversation_set_title(repo, "alpha",
						      "Renamed"), 0);
	ck_assert_int_eq(aptix_conversation_set_archived(repo, "alpha", 1), 0);
	ck_assert_int_eq(aptix_index_conversation(&ci, repo, "alpha"), 0);
	ck_assert_str_eq(ci.title, "Renamed");
	ck_assert_int_eq(ci.titled, 1);
	ck_assert_int_eq(ci.archived, 1);
	ck_assert_uint_eq(ci.turns, 4);

	/* refused: unknown, empty, two lines, too long; nothing changes */
	ck_assert_int_eq(aptix_conversation_set_title(repo, "nope", "x"),
			 APTIX_ENOTFOUND);
	ck_assert_int_eq(aptix_conversation_set_title(repo, "alpha", "  "),
			 APTIX_EINVALID);
	ck_assert_int_eq(aptix_conversation_set_title(repo, "alpha",
						      "a\nb"),
			 APTIX_EINVALID);
	memset(longer, 'x', sizeof(longer) - 1);
	longer[sizeof(longer) - 1] = '\0';
	ck_assert_int_eq(aptix_conversation_set_title(repo, "alpha", longer),
			 APTIX_EINVALID);
	ck_assert_int_eq(aptix_conversation_set_archived(repo, "no pe", 1),
			 APTIX_EINVALID);
	ck_assert_int_eq(aptix_index_conversation(&ci, repo, "alpha"), 0);
	ck_assert_str_eq(ci.title, "Renamed");

	/* what the user said survives a rebuild */
	ck_assert_int_eq(aptix_index_rebuild(repo, &n), 0);
	ck_assert_int_eq(aptix_index_conversation(&ci, repo, "alpha"), 0);
	ck_assert_str_eq(ci.title, "Renamed");
	ck_assert_int_eq(ci.archived, 1);
	ck_assert_uint_eq(ci.turns, 4);
	ck_assert_int_eq(aptix_conversation_set_archived(repo, "alpha", 0), 0);
	ck_assert_int_eq(aptix_index_conversation(&ci, repo, "alpha"), 0);
	ck_assert_int_eq(ci.archived, 0);
	ck_assert_str_eq(ci.title, "Renamed");
}
END_TEST

START_TEST(test_summary_line)
{
	char out[APTIX_SUMMARY_MAX + 1];
	char longtext[300];

	aptix_summary_line(out, APTIX_SUMMARY_MAX, "one\ntwo", 7);
	ck_assert_str_eq(out, "one");
	aptix_summary_line(out, APTIX_SUMMARY_MAX, "\n\n  \t\r\nfirst\r\n", 14);
	ck_assert_str_eq(out, "first");
	aptix_summary_line(out, APTIX_SUMMARY_MAX, "tab\there", 8);
	ck_assert_str_eq(out, "tab here");
	aptix_summary_line(out, APTIX_SUMMARY_MAX, "", 0);
	ck_assert_str_eq(out, "");
	aptix_summary_line(out, APTIX_SUMMARY_MAX, "  \n ", 4);
	ck_assert_str_eq(out, "");
	/* only len bytes are read */
	aptix_summary_line(out, APTIX_SUMMARY_MAX, "abcdef", 3);
	ck_assert_str_eq(out, "abc");
	/* long lines are cut at max, never inside a UTF-8 sequence */
	memset(longtext, 'a', sizeof(longtext));
	aptix_summary_line(out, APTIX_SUMMARY_MAX, longtext, sizeof(longtext));
	ck_assert_uint_eq(strlen(out), APTIX_SUMMARY_MAX);
	memcpy(longtext + 119, "\xc3\xa9", 2);	/* straddles 120 */
	aptix_summary_line(out, APTIX_SUMMARY_MAX, longtext, sizeof(longtext));
	ck_assert_uint_eq(strlen(out), 119);
	memcpy(longtext + 118, "\xe2\x82\xac", 3);	/* 118..120 */
	aptix_summary_line(out, APTIX_SUMMARY_MAX, longtext, sizeof(longtext));
	ck_assert_uint_eq(strlen(out), 118);
}
END_TEST

/* --- Names --------------------------------------------------------------- */

static void assert_rev(const char *name, const aptix_oid *expect)
{
	aptix_oid id;
	int r;

	memset(&id, 0, sizeof(id));
	r = aptix_revparse(&id, repo, name);
	ck_assert_msg(r == 0, "'%s': %d %s", name, r, errmsg());
	ck_assert_msg(!aptix_oid_cmp(&id, expect), "'%s' gave %s, not %s",
		      name, aptix_oid_hex(&id), aptix_oid_hex(expect));
}

static void assert_rev_fails(const char *name, int code)
{
	aptix_oid id;
	int r = aptix_revparse(&id, repo, name);

	ck_assert_msg(r == code, "'%s': got %d (%s), expected %d", name, r,
		      errmsg(), code);
}

START_TEST(test_revparse)
{
	char hex[APTIX_OID_HEXSZ + 1], name[128], conv[APTIX_CONV_MAXLEN + 1];
	aptix_oid blob;

	build_history();
	/* HEAD still names the unborn conversation made by init */
	assert_rev_fails("HEAD", APTIX_ENOTFOUND);
	set_symref("HEAD", APTIX_CONV_PREFIX "alpha");

	/* full ids and abbreviations */
	aptix_oid_tostr(hex, &h.r2.session);
	assert_rev(hex, &h.r2.session);
	hex[10] = '\0';
	assert_rev(hex, &h.r2.session);
	hex[7] = '\0';
	assert_rev(hex, &h.r2.session);
	aptix_oid_tostr(hex, &h.r2.turn);
	hex[12] = '\0';
	assert_rev(hex, &h.r2.turn);
	/* a full id is taken as given */
	memset(hex, 'e', APTIX_OID_HEXSZ);
	hex[APTIX_OID_HEXSZ] = '\0';
	{
		aptix_oid e;

		aptix_oid_fromstr(&e, hex);
		assert_rev(hex, &e);
	}

	/* refs and conversations */
	assert_rev("HEAD", &h.r3.session);
	assert_rev("alpha", &h.r3.session);
	assert_rev(APTIX_CONV_PREFIX "alpha", &h.r3.session);
	assert_rev("beta", &h.b1.session);
	assert_rev("alph", &h.r3.session);		/* unique prefix */
	assert_rev("gamma1", &h.r1.session);
	assert_rev_fails("gamm", APTIX_EAMBIGUOUS);
	ck_assert_int_eq(aptix_conv_resolve(conv, repo, "alph"), 0);
	ck_assert_str_eq(conv, "alpha");
	ck_assert_int_eq(aptix_conv_resolve(conv, repo, "HEAD"), 0);
	ck_assert_str_eq(conv, "alpha");
	ck_assert_int_eq(aptix_conv_resolve(conv, repo, "gamm"),
			 APTIX_EAMBIGUOUS);
	ck_assert_int_eq(aptix_conv_resolve(conv, repo, "zeta"),
			 APTIX_ENOTFOUND);
	ck_assert_int_eq(aptix_conv_resolve(conv, repo, "bad/id"),
			 APTIX_EINVALID);

	/* ancestry */
	assert_rev("HEAD^", &h.r2.session);
	assert_rev("HEAD^^", &h.r1.session);
	assert_rev("HEAD^1", &h.r2.session);
	assert_rev("HEAD^0", &h.r3.session);
	assert_rev("HEAD~", &h.r2.session);
	assert_rev("HEAD~0", &h.r3.session);
	assert_rev("HEAD~1", &h.r2.session);
	assert_rev("HEAD~2", &h.r1.session);
	assert_rev("alpha~1^", &h.r1.session);
	assert_rev("HEAD~1~1", &h.r1.session);
	aptix_oid_tostr(hex, &h.f2.session);
	snprintf(name, sizeof(name), "%.9s~1", hex);
	assert_rev(name, &h.r1.session);
	assert_rev_fails("HEAD~3", APTIX_ENOTFOUND);
	assert_rev_fails("HEAD^^^", APTIX_ENOTFOUND);
	assert_rev_fails("HEAD^2", APTIX_ENOTFOUND);

	/* peeling */
	assert_rev("HEAD^{turn}", &h.r3.turn);
	assert_rev("HEAD~1^{turn}", &h.r2.turn);
	assert_rev("HEAD^{session}", &h.r3.session);
	assert_rev("beta^{turn}", &h.b1.turn);
	aptix_oid_tostr(hex, &h.r2.turn);
	snprintf(name, sizeof(name), "%s^{turn}", hex);
	assert_rev(name, &h.r2.turn);
	snprintf(name, sizeof(name), "%s^{session}", hex);
	assert_rev_fails(name, APTIX_EINVALID);
	snprintf(name, sizeof(name), "%s^", hex);	/* a turn's parent */
	assert_rev_fails(name, APTIX_EINVALID);
	blob = h.r1.instruction;
	aptix_oid_tostr(hex, &blob);
	snprintf(name, sizeof(name), "%s^{blob}", hex);
	assert_rev(name, &blob);
	snprintf(name, sizeof(name), "%s^{turn}", hex);
	assert_rev_fails(name, APTIX_EINVALID);
	assert_rev_fails("HEAD^{tree}", APTIX_EINVALID);

	/* malformed and unknown names */
	assert_rev_fails("HEAD^{turn", APTIX_EINVALID);
	assert_rev_fails("HEAD~x", APTIX_EINVALID);
	assert_rev_fails("HEAD~99999999999999999999", APTIX_EINVALID);
	assert_rev_fails("", APTIX_ENOTFOUND);
	assert_rev_fails("nosuch", APTIX_ENOTFOUND);
	assert_rev_fails("refs/conversations/nosuch", APTIX_ENOTFOUND);
	assert_rev_fails("abc", APTIX_ENOTFOUND);	/* too short an id */
	assert_rev_fails("bad name", APTIX_ENOTFOUND);
}
END_TEST

/* --- Map growth ------------------------------------------------------------ */

static void q_random_blob(aptix_txn *tx, aptix_oid *id, size_t size,
			  uint64_t seed)
{
	unsigned char *d = malloc(size);

	ck_assert_ptr_nonnull(d);
	unit_fill_random(d, size, seed);
	ck_assert_int_eq(aptix_txn_write_object(id, tx, APTIX_OBJ_BLOB, d,
						size), 0);
	free(d);
}

static void assert_verified(const aptix_oid *id, size_t size)
{
	aptix_buf out = APTIX_BUF_INIT;
	aptix_otype t;

	ck_assert_msg(aptix_odb_read(&out, &t, aptix_repo_odb(repo), id,
				     APTIX_ODB_READ_VERIFY) == 0, "%s",
		      errmsg());
	ck_assert_uint_eq(out.len, size);
	aptix_buf_release(&out);
}

static int count_cb(const aptix_oid *id, void *payload)
{
	(void)id;
	(*(size_t *)payload)++;
	return 0;
}

START_TEST(test_map_full)
{
	aptix_txn *tx;
	aptix_oid a, big[3], small, zero;
	aptix_ref ref;
	size_t i, n = 0;
	unsigned char *d;

	setenv("APTIX_STORE_MAX_MB", "2", 1);
	aptix_env__reload();
	init_repo();
	memset(&zero, 0, sizeof(zero));
	ck_assert_int_eq(aptix_txn_new(&tx, repo), 0);
	q_random_blob(tx, &a, 256 << 10, 1);
	ck_assert_int_eq(aptix_txn_ref_update(tx, "refs/heads/a", &a, &zero,
					      "a"), 0);
	ck_assert_int_eq(aptix_txn_commit(tx), 0);

	/* 3 MiB of incompressible data cannot fit a 2 MiB map */
	for (i = 0; i < 3; i++)
		q_random_blob(tx, &big[i], 1 << 20, 10 + i);
	ck_assert_int_eq(aptix_txn_ref_update(tx, "refs/heads/big", &big[0],
					      &zero, "big"), 0);
	ck_assert_int_eq(aptix_txn_commit(tx), APTIX_EFULL);
	ck_assert_ptr_nonnull(strstr(errmsg(), "full"));
	aptix_txn_free(tx);

	/* nothing of it landed; what was there is intact */
	for (i = 0; i < 3; i++)
		ck_assert_int_eq(aptix_odb_exists(aptix_repo_odb(repo),
						  &big[i]), 0);
	ck_assert_int_eq(aptix_ref_read(&ref, repo, "refs/heads/big"),
			 APTIX_ENOTFOUND);
	assert_verified(&a, 256 << 10);
	ck_assert_int_eq(aptix_odb_foreach(aptix_repo_odb(repo), count_cb, &n),
			 0);
	ck_assert_uint_eq(n, 1);

	/* a single large write fails the same way */
	d = malloc(3 << 20);
	ck_assert_ptr_nonnull(d);
	unit_fill_random(d, 3 << 20, 77);
	ck_assert_int_eq(aptix_odb_write(&small, aptix_repo_odb(repo),
					 APTIX_OBJ_BLOB, d, 3 << 20),
			 APTIX_EFULL);
	ck_assert_int_eq(aptix_odb_exists(aptix_repo_odb(repo), &small), 0);
	free(d);

	/* small writes still work, and everything survives a reopen */
	ck_assert_int_eq(aptix_odb_write(&small, aptix_repo_odb(repo),
					 APTIX_OBJ_BLOB, "small", 5), 0);
	reopen();
	assert_verified(&a, 256 << 10);
	assert_verified(&small, 5);
	ck_assert_int_eq(aptix_ref_read(&ref, repo, "refs/heads/a"), 0);
	assert_oid_eq(&ref.oid, &a);
	aptix_ref_release(&ref);
	ck_assert_int_eq(aptix_ref_read(&ref, repo, "HEAD"), 0);
	ck_assert_ptr_nonnull(ref.target);
	aptix_ref_release(&ref);
}
END_TEST

#define GROW_BLOB ((size_t)14 << 20)

START_TEST(test_map_grow)
{
	aptix_txn *tx;
	aptix_oid ids[5];
	struct stat st;
	char *data = unit_path(tmpdir, ".aptix/data.mdb");
	size_t i, n = 0;

	/*
	 * No maximum: the 64 MiB initial map must grow past 64 MiB. The
	 * blobs are random, so they are stored raw whatever the level;
	 * level 0 only skips a slow, useless deflate of 70 MiB (the
	 * fixture restores it).
	 */
	aptix_zlib_level = 0;
	init_repo();
	ck_assert_int_eq(aptix_txn_new(&tx, repo), 0);
	for (i = 0; i < 2; i++)
		q_random_blob(tx, &ids[i], GROW_BLOB, 100 + i);
	ck_assert_int_eq(aptix_txn_commit(tx), 0);
	for (i = 2; i < 5; i++)
		q_random_blob(tx, &ids[i], GROW_BLOB, 100 + i);
	ck_assert_int_eq(aptix_txn_ref_update(tx, "refs/heads/big", &ids[4],
					      NULL, "big"), 0);
	ck_assert_msg(aptix_txn_commit(tx) == 0, "%s", errmsg());
	aptix_txn_free(tx);

	ck_assert_int_eq(stat(data, &st), 0);
	ck_assert_msg(st.st_size > (off_t)64 << 20, "data.mdb is %lld bytes",
		      (long long)st.st_size);
	for (i = 0; i < 5; i++)
		ck_assert_int_eq(aptix_odb_exists(aptix_repo_odb(repo),
						  &ids[i]), 1);
	assert_verified(&ids[4], GROW_BLOB);
	ck_assert_int_eq(aptix_odb_foreach(aptix_repo_odb(repo), count_cb, &n),
			 0);
	ck_assert_uint_eq(n, 5);

	/* a new handle maps the grown file */
	reopen();
	assert_verified(&ids[0], GROW_BLOB);
	ck_assert_int_eq(aptix_odb_write(NULL, aptix_repo_odb(repo),
					 APTIX_OBJ_BLOB, "after", 5), 0);
	free(data);
}
END_TEST

Suite *repo_suite(void)
{
	Suite *s = suite_create("repo");
	TCase *store = tcase_create("store");
	TCase *refs = tcase_create("refs");
	TCase *index = tcase_create("index");
	TCase *map = tcase_create("map");

	tcase_add_checked_fixture(store, setup, teardown);
	tcase_add_test(store, test_init_open);
	tcase_add_test(store, test_modes);
	tcase_add_test(store, test_signal_handlers);
	tcase_add_test(store, test_two_stores_in_one_process);
	tcase_add_test(store, test_closed_stdfds);
	tcase_add_test(store, test_discover);
	tcase_add_test(store, test_not_a_store);
	tcase_add_test(store, test_format_version);
	tcase_add_test(store, test_values_layout);
	tcase_add_test(store, test_values_edges);
	tcase_add_test(store, test_values_damaged);
	tcase_add_test(store, test_txn_atomic);
	suite_add_tcase(s, store);

	tcase_add_checked_fixture(refs, setup, teardown);
	tcase_add_test(refs, test_reflog);
	tcase_add_test(refs, test_ref_names);
	tcase_add_test(refs, test_conversation_meta);
	tcase_add_test(refs, test_conv_ids);
	tcase_add_test(refs, test_symrefs);
	suite_add_tcase(s, refs);

	tcase_add_checked_fixture(index, setup, teardown);
	tcase_set_timeout(index, 20);
	tcase_add_test(index, test_index);
	tcase_add_test(index, test_index_rejects);
	tcase_add_test(index, test_index_rebuild);
	tcase_add_test(index, test_summary_line);
	tcase_add_test(index, test_revparse);
	suite_add_tcase(s, index);

	tcase_add_checked_fixture(map, setup, teardown);
	tcase_set_timeout(map, 60);
	tcase_add_test(map, test_map_full);
	tcase_add_test(map, test_map_grow);
	suite_add_tcase(s, map);
	return s;
}
