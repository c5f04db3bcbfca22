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
 *        a session) or ^{session} (must be a session). "@" alone is
 *        HEAD; "<ref>@{<n>}" is the id the n-th newest entry of the
 *        ref's reflog recorded ("@{<n>}": HEAD's), and "@{-<n>}" the
 *        tip of the conversation HEAD left n switches ago.
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

/**
 * @brief The conversation HEAD was on before its n-th newest move
 *        between conversations (n >= 1), as its reflog records it
 *        ("... moving from <old> to <new>"); what `switch -` goes to.
 * @param[out] out the id, at least APTIX_CONV_MAXLEN + 1 bytes
 * @return 0; APTIX_ENOTFOUND when HEAD has not moved that often.
 */
APTIX_EXTERN(int) aptix_conv_previous(char *out, aptix_repo *repo, int n);

#endif
