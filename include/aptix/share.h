/*
 * aptix/share.h - whose a conversation is, on a store of several users.
 *
 * On a shared store (PostgreSQL), a conversation belongs to the user
 * who started it and is seen by that user alone until shared: then
 * every user of its org sees it and may continue or fork it, until its
 * owner unshares it. A store of one user (LMDB) has no owners: every
 * conversation is the store's, and these calls say so.
 */
#ifndef APTIX_SHARE_H
#define APTIX_SHARE_H

#include "common.h"
#include "repo.h"

/** One conversation as aptix_share_foreach() gives it. */
typedef struct {
	const char *conversation;	/**< its id */
	const char *owner;	/**< its user; "" for one of a store made
				 *   before owners were kept (shared) */
	int shared;		/**< 1 when the org sees it */
	int mine;		/**< 1 when owner is the current user */
} aptix_share_info;

/** @note info and its strings are valid during the call alone. */
typedef int (*aptix_share_cb)(const aptix_share_info *info, void *payload);

/**
 * @brief Share conversation conv (an id) with the org (shared 1), or
 *        make it its owner's alone again (0). Sharing it again is no
 *        error.
 * @return 0; APTIX_ENOTFOUND when the user sees no such conversation
 *         (another's private one is reported exactly as a missing
 *         one); APTIX_EINVALID when it is another user's, or the store
 *         has no owners (LMDB).
 */
APTIX_EXTERN(int) aptix_share_set(aptix_repo *repo, const char *conv,
				  int shared);

/**
 * @brief Each conversation the current user sees, by id: its own and
 *        those shared in its org.
 * @return 0, cb's non-zero value, or APTIX_EINVALID when the store has
 *         no owners.
 */
APTIX_EXTERN(int) aptix_share_foreach(aptix_repo *repo, aptix_share_cb cb,
				      void *payload);

/**
 * @brief The user the store shows the private conversations of.
 * @note Borrowed from repo, valid until aptix_repo_free().
 * @return the name, or NULL when the store has no users (LMDB).
 */
APTIX_EXTERN(const char *) aptix_share_user(aptix_repo *repo);

#endif
