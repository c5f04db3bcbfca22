/*
 * src/util/env.c - the environment variables libaptix reads (see env.h).
 *
 *   variable		for	what it does
 *   APTIX_DIR		users	the store to use, instead of finding .aptix
 *   APTIX_WORKSPACE	users	overrides workspace.id
 *   APTIX_MODEL		users	overrides openai.model
 *   OPENAI_BASE_URL	users	overrides openai.base-url
 *   XDG_CONFIG_HOME	users	the user's config is $XDG_CONFIG_HOME/aptix/
 *   HOME		users	... else ~/.config/aptix/config
 *   APTIX_STORE_MAX_MB	tests	caps the LMDB map (full-disk tests)
 *   APTIX_LIBCURL	tests	the libcurl to dlopen (libcurl.so.4)
 *   APTIX_LIBCRYPTO	tests	the libcrypto to dlopen (libcrypto.so.3)
 *   APTIX_ZLIB_LEVEL	bench	the zlib level, one digit (make bench)
 *   APTIX_TEST_DATE	tests	the clock, in seconds since the epoch
 *   GIT_CEILING_DIRECTORIES
 *			users	where the search for a git work tree stops
 *   APTIX_CONFIG_PARAMETERS
 *			aptix -c	"key=value" lines that beat the config
 *   XDG_DATA_HOME	import	OpenCode's data: $XDG_DATA_HOME/opencode
 *   CODEX_HOME		import	Codex's home (~/.codex)
 *   CLAUDE_CONFIG_DIR	import	Claude Code's home (~/.claude)
 *   AWS_ACCESS_KEY_ID, AWS_SECRET_ACCESS_KEY, AWS_SESSION_TOKEN,
 *   AWS_PROFILE, AWS_SHARED_CREDENTIALS_FILE, AWS_REGION,
 *   AWS_DEFAULT_REGION	s3.c	S3 credentials and region
 *   LLM_USER_PATH	import	llm's directory, where its logs.db is
 *			(else $XDG_CONFIG_HOME/io.datasette.llm, as llm says)
 *   APTIX_TEST_IMPORT_SECONDS
 *			tests	importers read the tools' times to the second,
 *			as aptix did before it kept their milliseconds: a
 *			store imported then, for the tests that import it again
 *   APTIX_TEST_IMPORT_NO_GIT
 *			tests	importers leave out the git commit and branch,
 *			as aptix did before it read them (the same use)
 *   APTIX_TEST_CANDS_DEFER
 *			tests	log -S from a start reads the matches' records
 *			once the walk has taken this many sessions, as it
 *			does (at twice their count) past 16384 of them
 *   APTIX_TEST_NO_PREFETCH
 *			tests	the search index asks its backend nothing ahead
 *			(the index backend's prefetch): t0212 compares the
 *			records a PostgreSQL store gets with and without
 *   APTIX_TEST_REINDEX_BATCH
 *			tests	reindex writes this many sessions (keys, terms)
 *			a commit, so that a small store takes many commits
 *   APTIX_TEST_HOSTNAME
 *			tests	the host name of derived workspace ids
 *			(<work tree>.<host>), instead of gethostname()'s: a
 *			store made on another machine
 *   APTIX_TEST_IMPORT_PATH_WORKSPACE
 *			tests	importers derive the workspace from the
 *			recorded directory and this host and keep no remote
 *			URL, as aptix did before it read the repository (a
 *			store imported then, for the tests that import it again)
 *
 * The command-line tool reads a few more of its own (APTIX_PAGER,
 * PAGER, NO_COLOR, COLUMNS, APTIX_PROGRESS_DELAY, the API keys).
 */
#include "util/common.h"
#include "util/env.h"
#include <pthread.h>

static const char *const names[APTIX_ENV__COUNT] = {
	[APTIX_ENV_DIR] = "APTIX_DIR",
	[APTIX_ENV_WORKSPACE] = "APTIX_WORKSPACE",
	[APTIX_ENV_MODEL] = "APTIX_MODEL",
	[APTIX_ENV_OPENAI_BASE_URL] = "OPENAI_BASE_URL",
	[APTIX_ENV_XDG_CONFIG_HOME] = "XDG_CONFIG_HOME",
	[APTIX_ENV_HOME] = "HOME",
	[APTIX_ENV_STORE_MAX_MB] = "APTIX_STORE_MAX_MB",
	[APTIX_ENV_LIBCURL] = "APTIX_LIBCURL",
	[APTIX_ENV_LIBCRYPTO] = "APTIX_LIBCRYPTO",
	[APTIX_ENV_ZLIB_LEVEL] = "APTIX_ZLIB_LEVEL",
	[APTIX_ENV_TEST_DATE] = "APTIX_TEST_DATE",
	[APTIX_ENV_GIT_CEILING] = "GIT_CEILING_DIRECTORIES",
	[APTIX_ENV_CONFIG_PARAMETERS] = "APTIX_CONFIG_PARAMETERS",
	[APTIX_ENV_XDG_DATA_HOME] = "XDG_DATA_HOME",
	[APTIX_ENV_CODEX_HOME] = "CODEX_HOME",
	[APTIX_ENV_CLAUDE_CONFIG_DIR] = "CLAUDE_CONFIG_DIR",
	[APTIX_ENV_AWS_ACCESS_KEY_ID] = "AWS_ACCESS_KEY_ID",
	[APTIX_ENV_AWS_SECRET_ACCESS_KEY] = "AWS_SECRET_ACCESS_KEY",
	[APTIX_ENV_AWS_SESSION_TOKEN] = "AWS_SESSION_TOKEN",
	[APTIX_ENV_AWS_PROFILE] = "AWS_PROFILE",
	[APTIX_ENV_AWS_CREDENTIALS_FILE] = "AWS_SHARED_CREDENTIALS_FILE",
	[APTIX_ENV_AWS_REGION] = "AWS_REGION",
	[APTIX_ENV_AWS_DEFAULT_REGION] = "AWS_DEFAULT_REGION",
	[APTIX_ENV_LLM_USER_PATH] = "LLM_USER_PATH",
	[APTIX_ENV_TEST_IMPORT_SECONDS] = "APTIX_TEST_IMPORT_SECONDS",
	[APTIX_ENV_TEST_IMPORT_NO_GIT] = "APTIX_TEST_IMPORT_NO_GIT",
	[APTIX_ENV_TEST_CANDS_DEFER] = "APTIX_TEST_CANDS_DEFER",
	[APTIX_ENV_TEST_NO_PREFETCH] = "APTIX_TEST_NO_PREFETCH",
	[APTIX_ENV_TEST_REINDEX_BATCH] = "APTIX_TEST_REINDEX_BATCH",
	[APTIX_ENV_TEST_HOSTNAME] = "APTIX_TEST_HOSTNAME",
	[APTIX_ENV_TEST_IMPORT_PATH_WS] = "APTIX_TEST_IMPORT_PATH_WORKSPACE",
};

static pthread_once_t once = PTHREAD_ONCE_INIT;
static char *values[APTIX_ENV__COUNT];

/* Out of memory here reads as unset: there is no one to tell. */
static void load(void)
{
	const char *v;
	size_t i;

	for (i = 0; i < APTIX_ENV__COUNT; i++) {
		v = getenv(names[i]);
		values[i] = v && *v ? strdup(v) : NULL;
	}
}

const char *aptix_env__get(enum aptix_env_var var)
{
	pthread_once(&once, load);
	return (unsigned)var < APTIX_ENV__COUNT ? values[var] : NULL;
}

const char *aptix_env__name(enum aptix_env_var var)
{
	return (unsigned)var < APTIX_ENV__COUNT ? names[var] : NULL;
}

void aptix_env__reload(void)
{
	size_t i;

	pthread_once(&once, load);
	for (i = 0; i < APTIX_ENV__COUNT; i++)
		free(values[i]);
	load();
}
