/*
 * unit.h - shared declarations of the aptix unit-test suites (Check).
 *
 * Every t/unit/check_<module>.c exports one <module>_suite(); main.c
 * runs them all (or the one named on the command line) and also holds
 * the small helpers below.
 *
 * LMDB rule: a store may only be opened inside a test function or a
 * checked fixture, never in an unchecked fixture (Check forks after
 * those, and an LMDB environment must not cross fork()).
 */
#ifndef APTIX_UNIT_H
#define APTIX_UNIT_H

#include <check.h>
#include <limits.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

Suite *buf_suite(void);
Suite *oid_suite(void);
Suite *zstream_suite(void);
Suite *object_suite(void);
Suite *odb_suite(void);
Suite *repo_suite(void);
Suite *config_suite(void);
Suite *sse_suite(void);
Suite *openai_suite(void);
Suite *parse_options_suite(void);
Suite *rag_suite(void);
Suite *workspace_suite(void);
Suite *run_suite(void);
Suite *threads_suite(void);
Suite *chain_suite(void);
Suite *summary_suite(void);
Suite *credscan_suite(void);
Suite *chat_suite(void);
Suite *serve_suite(void);
Suite *jsonrpc_suite(void);
Suite *history_suite(void);
Suite *revwalk_suite(void);
Suite *process_suite(void);
Suite *backend_suite(void);
Suite *record_suite(void);
Suite *view_suite(void);
Suite *toolcall_suite(void);

/** A new empty directory under $TMPDIR (or /tmp); malloc'd path. */
char *unit_mkdtemp(void);
/** rm -rf path (no symlinks followed). Accepts NULL. */
void unit_rmtree(const char *path);
struct aptix_repo;
/**
 * A teardown's end: free *repo, remove the directory *dir and free its
 * path; both set to NULL. Either may already be NULL.
 */
void unit_repo_teardown(struct aptix_repo **repo, char **dir);
/** Deterministic pseudo-random bytes (xorshift64*) from seed. */
void unit_fill_random(void *buf, size_t len, uint64_t seed);
/** malloc'd "<a>/<b>". */
char *unit_path(const char *a, const char *b);
/** A new store in a new directory (*dir, malloc'd); checked fixtures only. */
struct aptix_repo *unit_repo_new(char **dir);
/** Free *repo, remove *dir and free it; both are left NULL. */
void unit_repo_free(struct aptix_repo **repo, char **dir);
/** Create a file holding len bytes of data (mode 0644). */
void unit_write_file(const char *path, const void *data, size_t len);

/** The OpenAI and Qdrant stand-in (t/standin/), see standin.c. */
struct unit_standin {
	pid_t pid;
	char dir[PATH_MAX];		/* its logs are in dir/logs */
	char url[128];			/* http://127.0.0.1:PORT */
	char base[160];			/* url + "/v1": the OpenAI base */
};

/**
 * Start the stand-in with args (NULL-terminated, may be NULL) after its
 * port and log options: 1 once it listens, 0 without python3 or the
 * script (a note naming who goes to stderr: the caller skips).
 */
int unit_standin_start(struct unit_standin *s, const char *who,
		       const char *const *args);
/**
 * The stand-in as the OpenAI-facing suites start it: key UNIT_API_KEY,
 * seed "unit". Returns what unit_standin_start() does.
 */
int unit_standin_start_openai(struct unit_standin *s, const char *who);
/** Stop it and remove its directory; harmless when not started. */
void unit_standin_stop(struct unit_standin *s);

/** The key the stand-in is started with by the suites that need one. */
#define UNIT_API_KEY "sk-test-unit-0123456789abcdef"

struct json_t;
/** A request to the stand-in's own endpoints: the JSON answer (200). */
struct json_t *unit_standin_json(const struct unit_standin *s,
				 const char *method, const char *path,
				 const char *body);
/** Install faults: a JSON array of fault objects. */
void unit_standin_faults(const struct unit_standin *s, const char *json);
/** requests.<endpoint> from the stand-in's counters. */
long unit_standin_requests(const struct unit_standin *s,
			   const char *endpoint);

#endif
