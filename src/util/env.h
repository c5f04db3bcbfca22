/*
 * src/util/env.h - the one place libaptix reads the environment (internal).
 *
 * Every variable the library reads is in the table of src/util/env.c, with
 * what it does and whom it is for. The whole table is read once, on
 * first use (pthread_once), and copied: later setenv() calls are not
 * seen, and readers on any thread get the same answers. An empty
 * variable reads as unset. The secrets (OPENAI_API_KEY, QDRANT_*) are
 * not here: they come through options.
 */
#ifndef APTIX_ENV_H
#define APTIX_ENV_H

enum aptix_env_var {
	APTIX_ENV_DIR,			/* APTIX_DIR */
	APTIX_ENV_WORKSPACE,		/* APTIX_WORKSPACE */
	APTIX_ENV_MODEL,		/* APTIX_MODEL */
	APTIX_ENV_OPENAI_BASE_URL,	/* OPENAI_BASE_URL */
	APTIX_ENV_XDG_CONFIG_HOME,	/* XDG_CONFIG_HOME */
	APTIX_ENV_HOME,			/* HOME */
	APTIX_ENV_STORE_MAX_MB,		/* APTIX_STORE_MAX_MB */
	APTIX_ENV_LIBCURL,		/* APTIX_LIBCURL */
	APTIX_ENV_LIBCRYPTO,		/* APTIX_LIBCRYPTO */
	APTIX_ENV_ZLIB_LEVEL,		/* APTIX_ZLIB_LEVEL */
	APTIX_ENV_TEST_DATE,		/* APTIX_TEST_DATE */
	APTIX_ENV_GIT_CEILING,		/* GIT_CEILING_DIRECTORIES */
	APTIX_ENV_CONFIG_PARAMETERS,	/* APTIX_CONFIG_PARAMETERS */
	APTIX_ENV_XDG_DATA_HOME,	/* XDG_DATA_HOME */
	APTIX_ENV_CODEX_HOME,		/* CODEX_HOME */
	APTIX_ENV_CLAUDE_CONFIG_DIR,	/* CLAUDE_CONFIG_DIR */
	APTIX_ENV_AWS_ACCESS_KEY_ID,	/* AWS_ACCESS_KEY_ID */
	APTIX_ENV_AWS_SECRET_ACCESS_KEY,	/* AWS_SECRET_ACCESS_KEY */
	APTIX_ENV_AWS_SESSION_TOKEN,	/* AWS_SESSION_TOKEN */
	APTIX_ENV_AWS_PROFILE,		/* AWS_PROFILE */
	APTIX_ENV_AWS_CREDENTIALS_FILE,	/* AWS_SHARED_CREDENTIALS_FILE */
	APTIX_ENV_AWS_REGION,		/* AWS_REGION */
	APTIX_ENV_AWS_DEFAULT_REGION,	/* AWS_DEFAULT_REGION */
	APTIX_ENV_LLM_USER_PATH,	/* LLM_USER_PATH */
	APTIX_ENV_TEST_IMPORT_SECONDS,	/* APTIX_TEST_IMPORT_SECONDS */
	APTIX_ENV_TEST_IMPORT_NO_GIT,	/* APTIX_TEST_IMPORT_NO_GIT */
	APTIX_ENV_TEST_CANDS_DEFER,	/* APTIX_TEST_CANDS_DEFER */
	APTIX_ENV_TEST_NO_PREFETCH,	/* APTIX_TEST_NO_PREFETCH */
	APTIX_ENV_TEST_REINDEX_BATCH,	/* APTIX_TEST_REINDEX_BATCH */
	APTIX_ENV_TEST_HOSTNAME,	/* APTIX_TEST_HOSTNAME */
	APTIX_ENV_TEST_IMPORT_PATH_WS,	/* APTIX_TEST_IMPORT_PATH_WORKSPACE */
	APTIX_ENV__COUNT
};

/**
 * The value of var as it was at the first call, or NULL when it was
 * unset or empty.
 * @note Static: valid until aptix_env__reload().
 */
const char *aptix_env__get(enum aptix_env_var var);

/** The variable's name, e.g. "APTIX_DIR". */
const char *aptix_env__name(enum aptix_env_var var);

/**
 * Read the environment again (for unit tests that change it). Not
 * thread-safe: call it only while no other thread uses the library, and
 * drop the strings aptix_env__get() returned before.
 */
void aptix_env__reload(void);

#endif
