/*
 * aptix/revparse.h - turning names into ids.
 */
#ifndef APTIX_REVPARSE_H
#define APTIX_REVPARSE_H

#include "common.h"
#include "oid.h"
#include "repo.h"

/**
 * @brief Resolve a name: a full id, an abbreviation of 4 or more hex
 *        digits, HEAD, a ref (refs/...), a conversation id or a unique
 *        prefix of one (refs/conversations/<id>), each followed by any
 *        number of ~N (N-th ancestor), ^ (parent), ^{turn} (the turn of
 *        a session) or ^{session} (must be a session).
 * @return 0; APTIX_ENOTFOUND; APTIX_EAMBIGUOUS; APTIX_EINVALID for a
 *         malformed name.
 */
APTIX_EXTERN(int) aptix_revparse(aptix_oid *out, aptix_repo *repo,
				 const char *name);

/**
 * @brief Resolve a conversation: an id or a unique prefix of one (of 4
 *        or more characters), or HEAD for the current conversation.
 * @param[out] out the full id, at least APTIX_CONV_MAXLEN + 1 bytes
 */
APTIX_EXTERN(int) aptix_conv_resolve(char *out, aptix_repo *repo,
				     const char *name);

#endif
