/*
 * aptix/config.h - settings: a git-config-style file in the store
 * (.aptix/config), under the user's ~/.config/aptix/config, with
 * environment overrides. Secrets (API keys) come only from the
 * environment and are never written.
 */
#ifndef APTIX_CONFIG_H
#define APTIX_CONFIG_H

#include "common.h"
#include "repo.h"

typedef struct aptix_config aptix_config;

/**
 * @brief Load the user's file then the store's (repo may be NULL), the
 *        later one winning, then environment overrides
 *        (OPENAI_BASE_URL -> openai.base-url, APTIX_MODEL -> openai.model,
 *        APTIX_WORKSPACE -> workspace.id).
 * @note The user's file is $XDG_CONFIG_HOME/aptix/config, else
 *       $HOME/.config/aptix/config; the store's is <repo path>/config.
 *       A missing file is skipped; an empty variable counts as unset.
 * @return 0; APTIX_EINVALID with file:line for a malformed file.
 */
APTIX_EXTERN(int) aptix_config_open(aptix_config **out, aptix_repo *repo);
/**
 * @brief aptix_config_open() for the store in directory storedir (NULL:
 *        no store: the user's file, the environment and -c only).
 */
APTIX_EXTERN(int) aptix_config_open_dir(aptix_config **out,
				       const char *storedir);
/**
 * @brief The store's own file alone (storedir/config), without the
 *        user's file, the environment or -c: what the store says about
 *        itself (extensions.*), which nothing else may change.
 */
APTIX_EXTERN(int) aptix_config_open_store_file(aptix_config **out,
					       const char *storedir);
APTIX_EXTERN(void) aptix_config_free(aptix_config *cfg);

/**
 * The last value of key ("section.name", case-insensitive), or NULL.
 * A key written without "= value" reads as "true". cfg may be NULL.
 * The string is borrowed, valid until aptix_config_free().
 */
APTIX_EXTERN(const char *) aptix_config_get(const aptix_config *cfg,
					    const char *key);
/**
 * Where the value aptix_config_get() returns comes from: "file:<path>"
 * or "env:<VARIABLE>"; NULL when key is unset. Borrowed like the value.
 */
APTIX_EXTERN(const char *) aptix_config_get_origin(const aptix_config *cfg,
						   const char *key);

/*
 * Typed getters with an explicit default, for keys outside the table
 * (new code should use the table getters below): *out is dflt when key
 * is unset (or cfg is NULL). A value that does not parse, or that breaks
 * the rules of a table key (e.g. openai.max-attempts 1..20), gives
 * APTIX_EINVALID "bad value 'x' for 'key': <why>" and leaves *out = dflt.
 */
/** Value or dflt; the value must be an integer (k, m, g suffixes ok). */
APTIX_EXTERN(int) aptix_config_get_long(long *out, const aptix_config *cfg,
					const char *key, long dflt);
/** true/false/yes/no/on/off/1/0. */
APTIX_EXTERN(int) aptix_config_get_bool(int *out, const aptix_config *cfg,
					const char *key, int dflt);
/** A duration: "30d", "12h", "15m", "90s", "500ms", or plain seconds. */
APTIX_EXTERN(int) aptix_config_get_duration_ms(int64_t *out,
					       const aptix_config *cfg,
					       const char *key, int64_t dflt);
/** A real number such as a temperature. */
APTIX_EXTERN(int) aptix_config_get_double(double *out,
					  const aptix_config *cfg,
					  const char *key, double dflt);

/*
 * The key table: every key aptix knows, with its type, default, bounds
 * and a line of documentation. It is the one source of truth: the
 * getters below take their defaults and bounds from it, and
 * aptix_config_set() validates with it. `aptix config --list-keys`
 * prints it. Keys not in the table may be set to anything.
 */
typedef enum aptix_config_type {
	APTIX_CONFIG_STRING,	/**< any text */
	APTIX_CONFIG_BOOL,	/**< true/false, yes/no, on/off, 1/0 */
	APTIX_CONFIG_LONG,	/**< an integer; k, m, g suffixes */
	APTIX_CONFIG_DOUBLE,	/**< a real number */
	APTIX_CONFIG_DURATION,	/**< 30d, 12h, 15m, 90s, 500ms or seconds */
	APTIX_CONFIG_ENUM,	/**< one of values[] */
	APTIX_CONFIG_URL	/**< http:// or https:// */
} aptix_config_type;

/** A flag of aptix_config_key: the value must not be empty. */
#define APTIX_CONFIG_NONEMPTY (1u << 0)

typedef struct aptix_config_key {
	const char *name;		/**< "section.name", lowercase */
	aptix_config_type type;
	/** The default, written as in a config file; NULL: none. */
	const char *dflt;
	/**
	 * LONG, DOUBLE, DURATION (in ms): the inclusive bounds;
	 * -HUGE_VAL and HUGE_VAL when a side is open.
	 */
	double min, max;
	const char *const *values;	/**< ENUM: NULL-terminated */
	unsigned flags;			/**< APTIX_CONFIG_NONEMPTY */
	const char *doc;		/**< one line */
} aptix_config_key;

/**
 * The key table, sorted by name; *n gets its length.
 * @note Static: valid for the life of the program.
 */
APTIX_EXTERN(const aptix_config_key *) aptix_config_keys(size_t *n);
/** The table's entry for key (case-insensitive), or NULL. */
APTIX_EXTERN(const aptix_config_key *) aptix_config_key_find(
	const char *key);
/**
 * @brief Whether `aptix config key value` may set it: what
 *        aptix_config_set() checks (a well-formed key, no secret, a valid
 *        value), and a key of the table or one of the user's own under
 *        "x.". Else APTIX_EINVALID, the message naming the nearest table
 *        key when one is close ("did you mean 'openai.model'?").
 */
APTIX_EXTERN(int) aptix_config_check_key(const char *key, const char *value);
/**
 * @brief Whether value is valid for key (the table's type and range, a
 *        price's number): what a read of a known key checks. Keys the
 *        table does not know are valid.
 * @return 0; APTIX_EINVALID, the message naming key and value.
 */
APTIX_EXTERN(int) aptix_config_check_value(const char *key,
					   const char *value);
/**
 * @brief aptix_config_check_value() on every setting of cfg: a turn
 *        checks them all before it writes anything.
 * @return 0; the first APTIX_EINVALID.
 */
APTIX_EXTERN(int) aptix_config_check_all(const aptix_config *cfg);
/** "string", "bool", "integer", "number", "duration", "enum", "url". */
APTIX_EXTERN(const char *) aptix_config_type_name(aptix_config_type type);

/*
 * Table getters: the value of key when set (cfg may be NULL), else the
 * table's default, checked against the table's type and bounds. key
 * must be a table key of the getter's type (APTIX_EINVALID otherwise).
 * A bad value gives APTIX_EINVALID "bad value 'x' for 'key': <why>",
 * e.g. "must be between 1 and 20", and *out holds the default.
 * A numeric key that is unset and has no default gives APTIX_ENOTFOUND
 * (*out = 0); a string one gives 0 with *out = NULL.
 */
APTIX_EXTERN(int) aptix_config_long(long *out, const aptix_config *cfg,
				    const char *key);
APTIX_EXTERN(int) aptix_config_bool(int *out, const aptix_config *cfg,
				    const char *key);
APTIX_EXTERN(int) aptix_config_double(double *out, const aptix_config *cfg,
				      const char *key);
APTIX_EXTERN(int) aptix_config_duration_ms(int64_t *out,
					   const aptix_config *cfg,
					   const char *key);
/**
 * Whether context.chain-max-chars is set below what a restart sends
 * (context.window-chars + context.summary-chars): 1 with the message
 * in msg (a warning to show: such a chain restarts with more than its
 * cap), 0 when it is not (or a value is bad: its getter says so).
 */
APTIX_EXTERN(int) aptix_config_restart_over_cap(char *msg, size_t max,
						const aptix_config *cfg);
/**
 * STRING, ENUM and URL keys.
 * @note *out is borrowed: from cfg (valid until aptix_config_free()) or
 *       from the static table.
 */
APTIX_EXTERN(int) aptix_config_string(const char **out,
				      const aptix_config *cfg,
				      const char *key);

typedef int (*aptix_config_cb)(const char *key, const char *value,
			       const char *origin, void *payload);
/**
 * Every setting in load order, with where it came from (origin as for
 * aptix_config_get_origin()). Keys are canonical: section and name
 * lowercased, a subsection ([section "sub"]) as written. A non-zero
 * return from cb stops the walk and is returned.
 */
APTIX_EXTERN(int) aptix_config_foreach(const aptix_config *cfg,
				       aptix_config_cb cb, void *payload);

/**
 * @brief Set (value != NULL) or unset a key in the store's config file,
 *        atomically (lock file, write, fsync, rename). Refuses secrets
 *        (keys whose name contains "api-key", "apikey", "token",
 *        "secret" or "password") and malformed keys or values of known
 *        keys.
 * @note Other lines and comments are kept. Setting replaces the last
 *       occurrence of key or adds it at the end of its section (created
 *       at the end of the file when missing); only "section.name" keys
 *       made of a-z, 0-9 and '-' can be set (the name starting with a
 *       letter). Unsetting removes every occurrence; it also accepts
 *       "section.subsection.name" and secret-looking keys, so that one
 *       written by hand can be removed. The file is parsed first: a
 *       malformed one is left alone (APTIX_EINVALID with file:line).
 * @return 0; APTIX_EINVALID; APTIX_ELOCKED when another process holds
 *         the lock; APTIX_ENOTFOUND when unsetting an absent key.
 */
APTIX_EXTERN(int) aptix_config_set(aptix_repo *repo, const char *key,
				   const char *value);
/** @brief aptix_config_set() on the store in directory storedir. */
APTIX_EXTERN(int) aptix_config_set_dir(const char *storedir, const char *key,
				       const char *value);

/**
 * @brief The path of the user's config file, read before the store's:
 *        $XDG_CONFIG_HOME/aptix/config, else ~/.config/aptix/config.
 * @return 0; APTIX_ENOTFOUND when neither variable is set.
 */
APTIX_EXTERN(int) aptix_config_user_path(aptix_buf *out);

/**
 * @brief aptix_config_set() on the user's file (aptix_config_user_path(),
 *        its directory made when missing), as git config --global.
 * @return as aptix_config_set(); APTIX_ENOTFOUND also when there is no
 *         user file path.
 */
APTIX_EXTERN(int) aptix_config_set_user(const char *key, const char *value);

#endif
