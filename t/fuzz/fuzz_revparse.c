/*
 * t/fuzz/fuzz_revparse.c - name resolution (aptix_revparse,
 * aptix_conv_resolve) against a small store made once, at start-up, in
 * a temporary directory: two conversations, a fork, a failed turn.
 *
 * Input: the name (cut at the first NUL). Invariants: a name that
 * resolves (other than a full id, taken as is) gives an object that
 * exists; resolving its full hex id gives it back; a conversation that
 * resolves has a valid id.
 */
#define _XOPEN_SOURCE 700	/* nftw */
#include <string.h>
#include <ftw.h>
#include <unistd.h>
#include "fuzz.h"
#include "util/common.h"
#include "aptix/repo.h"
#include "aptix/odb.h"
#include "aptix/refs.h"
#include "aptix/revparse.h"

static aptix_repo *repo;
static char dir[] = "/tmp/aptix-fuzz-revparse-XXXXXX";

static int rm_one(const char *path, const struct stat *sb, int flag,
		  struct FTW *ftw)
{
	(void)sb;
	(void)flag;
	(void)ftw;
	return remove(path);
}

static void rm_store(void)
{
	aptix_repo_free(repo);
	if (nftw(dir, rm_one, 16, FTW_DEPTH | FTW_PHYS) < 0)
		fprintf(stderr, "cannot remove %s\n", dir);
}

static int write_obj(aptix_oid *id, aptix_txn *tx, aptix_otype type,
		     const char *text)
{
	return aptix_txn_write_object(id, tx, type, text, strlen(text));
}

static void session(aptix_oid *out, aptix_txn *tx, const char *conv,
		    const char *instr, const aptix_oid *parent, long seq,
		    const char *status)
{
	aptix_oid blob, turn;
	char text[1024], ptext[80] = "";

	FUZZ_CHECK(write_obj(&blob, tx, APTIX_OBJ_BLOB, instr) == 0);
	snprintf(text, sizeof(text), "{\"conversation\":\"%s\","
		 "\"created_at\":1700000000000,\"instruction\":\"%s\","
		 "\"seq\":%ld,\"status\":\"completed\","
		 "\"status_at\":1700000000000,\"usage\":{\"cached_tokens\":0,"
		 "\"input_tokens\":0,\"model_requests\":0,\"output_tokens\":0,"
		 "\"reasoning_tokens\":0,\"total_tokens\":0},\"v\":1}\n",
		 conv, aptix_oid_hex(&blob), seq);
	FUZZ_CHECK(write_obj(&turn, tx, APTIX_OBJ_TURN, text) == 0);
	if (parent)
		snprintf(ptext, sizeof(ptext), "\"parent\":\"%s\",",
			 aptix_oid_hex(parent));
	snprintf(text, sizeof(text), "{\"conversation\":\"%s\","
		 "\"created_at\":1700000000000,\"metadata\":{\"session_type\":"
		 "\"agent\"},%s\"run_summary\":{\"duration_ms\":0,\"usage\":{"
		 "\"completion_tokens\":0,\"model_requests\":0,"
		 "\"prompt_tokens\":0,\"total_tokens\":0}},\"status\":\"%s\","
		 "\"turn\":\"%s\",\"v\":1}\n", conv, ptext, status,
		 aptix_oid_hex(&turn));
	FUZZ_CHECK(write_obj(out, tx, APTIX_OBJ_SESSION, text) == 0);
}

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
	static const char c1[] = "0fef017b-1c6e-4efb-87df-af692ed95084";
	static const char c2[] = "0fef9999-aaaa-4bbb-8ccc-dddddddddddd";
	aptix_oid s1, s2, s3, s4;
	aptix_txn *tx;
	int existed;

	(void)argc;
	(void)argv;
	FUZZ_CHECK(mkdtemp(dir) != NULL);
	FUZZ_CHECK(aptix_repo_init(&repo, dir, &existed) == 0);
	atexit(rm_store);
	FUZZ_CHECK(aptix_txn_new(&tx, repo) == 0);
	session(&s1, tx, c1, "first", NULL, 1, "committed");
	session(&s2, tx, c1, "second", &s1, 2, "committed");
	session(&s3, tx, c1, "third failed", &s2, 3, "failed");
	session(&s4, tx, c2, "a fork", &s1, 2, "committed");
	FUZZ_CHECK(aptix_txn_ref_update(tx, "refs/conversations/"
					"0fef017b-1c6e-4efb-87df-af692ed95084",
					&s2, NULL, "fuzz") == 0);
	FUZZ_CHECK(aptix_txn_ref_update(tx, "refs/conversations/"
					"0fef9999-aaaa-4bbb-8ccc-dddddddddddd",
					&s4, NULL, "fuzz") == 0);
	FUZZ_CHECK(aptix_txn_symref_update(tx, "HEAD", "refs/conversations/"
					   "0fef017b-1c6e-4efb-87df-"
					   "af692ed95084", "fuzz") == 0);
	FUZZ_CHECK(aptix_txn_commit(tx) == 0);
	aptix_txn_free(tx);
	return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char *name = malloc(size + 1), conv[APTIX_CONV_MAXLEN + 1];
	aptix_oid id, id2;
	size_t sz;
	aptix_otype type;

	if (!name)
		return 0;
	memcpy(name, data, size);
	name[size] = '\0';
	if (aptix_revparse(&id, repo, name) == 0) {
		/* a full id is taken as is (as git does); others exist */
		if (strlen(name) != 64 || strspn(name, "0123456789abcdef"
						 "ABCDEF") != 64)
			FUZZ_CHECK(aptix_odb_read_header(&sz, &type,
							 aptix_repo_odb(repo),
							 &id) == 0);
		FUZZ_CHECK(aptix_revparse(&id2, repo, aptix_oid_hex(&id)) == 0);
		FUZZ_CHECK(!aptix_oid_cmp(&id, &id2));
	}
	if (aptix_conv_resolve(conv, repo, name) == 0)
		FUZZ_CHECK(aptix_conv_check_id(conv) == 0);
	free(name);
	aptix_error_clear();
	return 0;
}
