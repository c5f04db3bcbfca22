/*
 * aptix/refs.h - named pointers into the DAG: HEAD (symbolic, names the
 * current conversation) and refs/conversations/<id>, with a reflog.
 * Writes go through a transaction (aptix/repo.h) as compare-and-swap.
 */
#ifndef APTIX_REFS_H
#define APTIX_REFS_H

#include "common.h"
#include "oid.h"
#include "repo.h"

#define APTIX_REF_MAXLEN 255
#define APTIX_CONV_PREFIX "refs/conversations/"
/** Longest conversation id. */
#define APTIX_CONV_MAXLEN 64

typedef struct {
	char *name;
	aptix_oid oid;		/**< for direct refs */
	char *target;		/**< for symbolic refs, else NULL */
} aptix_ref;

APTIX_EXTERN(void) aptix_ref_release(aptix_ref *ref);

/**
 * @brief Check a ref name: "HEAD" or "refs/..." with no empty, "."-led or
 *        "-"-led component, no "..", "@{", control characters (C1 ones
 *        included), space or any of ~^:?*[\, no trailing "/", "." or
 *        ".lock"; other bytes above 0x7f must be valid UTF-8.
 * @return 0 or APTIX_EINVALID with a message saying why.
 */
APTIX_EXTERN(int) aptix_ref_check_name(const char *name);
/**
 * A conversation id: 1 to 64 of [A-Za-z0-9._-], not starting with . or -,
 * not ending with . or .lock, without .. (refs/conversations/<id> is then
 * a valid ref name).
 */
APTIX_EXTERN(int) aptix_conv_check_id(const char *id);
/**
 * @brief A name for a new conversation: a valid id that revparse cannot
 *        take for something else: not HEAD, not "@", and not 4 or more
 *        hex digits (an abbreviated session id).
 * @return 0 or APTIX_EINVALID with a message saying why.
 */
APTIX_EXTERN(int) aptix_conv_check_new_id(const char *id);
/**
 * @brief A ref name as revparse reads it back: "refs/conversations/<id>"
 * as "<id>" (when <id> is a valid conversation id), any other name as is.
 * @note The result points into name.
 */
APTIX_EXTERN(const char *) aptix_ref_shorten(const char *name);

/** Read a ref as stored (no peeling). ENOTFOUND when absent. */
APTIX_EXTERN(int) aptix_ref_read(aptix_ref *out, aptix_repo *repo,
				 const char *name);
/**
 * @brief Follow symbolic refs to an id.
 * @param[out] resolved name of the last ref in the chain, malloc'd; the
 *        caller frees it (may be NULL). Set even when the ref is unborn.
 * @return 0; APTIX_ENOTFOUND for a missing or unborn ref.
 */
APTIX_EXTERN(int) aptix_ref_resolve(aptix_oid *out, char **resolved,
				    aptix_repo *repo, const char *name);

typedef int (*aptix_ref_foreach_cb)(const aptix_ref *ref, void *payload);
/** Refs whose names start with prefix (NULL: all), sorted by name. */
APTIX_EXTERN(int) aptix_ref_foreach(aptix_repo *repo, const char *prefix,
				    aptix_ref_foreach_cb cb, void *payload);

typedef struct {
	aptix_oid old_id, new_id;
	int64_t time_ms;
	const char *message;	/**< valid during the callback */
} aptix_reflog_entry;

typedef int (*aptix_reflog_cb)(const aptix_reflog_entry *e, void *payload);
/** Entries of one ref, newest first. */
APTIX_EXTERN(int) aptix_reflog_foreach(aptix_repo *repo, const char *name,
				       aptix_reflog_cb cb, void *payload);

typedef int (*aptix_reflog_all_cb)(const char *name,
				   const aptix_reflog_entry *e,
				   void *payload);
/**
 * @brief Every entry of every reflog, those of deleted refs too (a
 * reflog outlives its ref), by name, oldest first within a reflog:
 * what reachability (aptix/reach.h) counts.
 * The name given to cb is valid during the call.
 */
APTIX_EXTERN(int) aptix_reflog_foreach_all(aptix_repo *repo,
					   aptix_reflog_all_cb cb,
					   void *payload);

#endif
