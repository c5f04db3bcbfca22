/*
 * aptix/credscan.h - the credential detector.
 *
 * A rule set in the style of gitleaks (credentials.md lists every rule):
 * provider token formats (OpenAI, Anthropic, AWS, GitHub, GitLab, Slack,
 * Stripe, Google, Twilio, Shopify, Vault, ... JWT), PEM and PuTTY
 * private keys, Authorization headers, .netrc and mysql -p passwords,
 * keys base64- or hex-encoded or cut by a shell continuation,
 * passwords in URLs, values of high entropy
 * assigned to names such as *_KEY, *_SECRET, *_TOKEN or password, and
 * the values of the keys the caller names (OPENAI_API_KEY...: the
 * library reads no key from the environment).
 *
 * aptix applies it to what it would send, store or index: an active file
 * holding a credential is withheld (listed, not sent, not stored), a
 * file holding one is not indexed, a retrieved chunk holding one is
 * dropped, an instruction, a config value, a model or workspace name
 * holding one is refused.
 */
#ifndef APTIX_CREDSCAN_H
#define APTIX_CREDSCAN_H

#include "common.h"

/** One credential found. */
typedef struct {
	const char *rule;		/**< rule id, e.g. "github-token" */
	const char *description;	/**< e.g. "GitHub token" */
	size_t line;			/**< 1-based line where it starts */
	size_t offset, length;		/**< its bytes in the data */
} aptix_credential;

/** Return non-zero to stop the scan (the value is returned). */
typedef int (*aptix_credential_cb)(const aptix_credential *c,
				   void *payload);

/**
 * Asked, before anything is sent, whether a file the detector flags may
 * be sent all the same (an agent protocol asks its user): path is the
 * file's path relative to the work tree, c the first credential found
 * in it (its offsets are in the file). Never asked for the values of
 * the keys the caller named (rule known-key): those are never sent.
 * Return APTIX_CREDENTIAL_SEND to send (and store) the file; anything
 * else (0, an error) withholds it.
 */
typedef int (*aptix_credential_ask_cb)(const char *path,
				       const aptix_credential *c,
				       void *payload);
#define APTIX_CREDENTIAL_SEND 1

/** @brief The number of rules (the known-key rule included). */
APTIX_EXTERN(size_t) aptix_credscan_rule_count(void);

/**
 * @brief Rule i (0 <= i < aptix_credscan_rule_count()): its id and a
 *        description, static strings.
 * @return 0; APTIX_ENOTFOUND when i is out of range.
 */
APTIX_EXTERN(int) aptix_credscan_rule(const char **id,
				      const char **description, size_t i);

/**
 * @brief Every credential in data, in the order of their offsets for
 *        each rule (the rules run one after the other; a key named in
 *        keys comes first). keys: the values that are secrets whatever
 *        their form (NULL entries and keys under 8 bytes are ignored).
 * @return 0, or the first non-zero value cb returned.
 */
APTIX_EXTERN(int) aptix_credscan_foreach(const void *data, size_t len,
					 const char *const *keys,
					 size_t nkeys,
					 aptix_credential_cb cb,
					 void *payload);

/**
 * @brief The first credential found in data (see foreach).
 * @return 1 (found, *out set), 0 (none).
 */
APTIX_EXTERN(int) aptix_credscan_find(aptix_credential *out, const void *data,
				      size_t len, const char *const *keys,
				      size_t nkeys);

/**
 * @brief What to call it in a message: "an API key" (one of the keys
 *        the caller named) or "a credential" (a rule's).
 */
APTIX_EXTERN(const char *) aptix_credential_kind(const aptix_credential *c);

/**
 * @brief "<description> on line <n> (rule <id>)" in buf (cut to fit).
 * @return buf
 */
APTIX_EXTERN(const char *) aptix_credential_describe(char *buf, size_t n,
						     const aptix_credential *c);

/**
 * @brief The Shannon entropy of data in bits per byte (0 for no data):
 *        what the assignment rules compare with their thresholds.
 */
APTIX_EXTERN(double) aptix_credscan_entropy(const void *data, size_t len);

#endif
