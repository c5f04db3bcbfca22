/*
 * src/repo/gitdir.h - where a directory's git work tree and git directory
 * are, found without running git (internal; gitdir.c).
 */
#ifndef APTIX_SRC_GITDIR_H
#define APTIX_SRC_GITDIR_H

#include "aptix/buf.h"

struct aptix__gitloc {
	aptix_buf top;		/* the work tree's top ("": none) */
	aptix_buf gitdir;	/* its git directory (a worktree's own) */
	aptix_buf common;	/* the directory shared by its worktrees */
};

void aptix__gitloc_init(struct aptix__gitloc *loc);
void aptix__gitloc_release(struct aptix__gitloc *loc);

/*
 * Look for the work tree holding dir (an absolute, resolved path): the
 * nearest directory with a `.git` entry that is a git directory (one
 * holding HEAD), or a `gitdir: <path>` file pointing at one (linked
 * worktrees, submodules). The common directory is the one the git
 * directory's `commondir` file names, else the git directory itself.
 * Directories listed in $GIT_CEILING_DIRECTORIES are not entered, as
 * git does. Not in a work tree: top is empty, and that is no error.
 * Returns 0, or APTIX_ERROR (out of memory).
 */
int aptix__git_locate(struct aptix__gitloc *loc, const char *dir);

/* The top of the work tree holding dir into top ("": none). */
int aptix__git_top(aptix_buf *top, const char *dir);
/*
 * The derived WorkspaceId of a work tree root (root NULL: the current
 * directory): "<name of the work tree's top>.<short host name>".
 */
int aptix__workspace_derive(aptix_buf *out, const char *root);

/*
 * A remote URL without its user information (and query and fragment,
 * where tokens go too) into out: "https://tok@host/o/r?x" gives
 * "https://host/o/r", "git@host:o/r" gives "host:o/r"; a local path is
 * kept. The user information dropped goes into userinfo (unless NULL;
 * "" when there was none).
 */
int aptix__remote_clean(aptix_buf *out, aptix_buf *userinfo, const char *url);

/*
 * The WorkspaceId of a repository, the same on every machine: from its
 * remote URL (cleaned: host in lowercase and path, no scheme, no
 * ".git": "github.com/o/r") when there is one, else "root:<hex>", its
 * root commit, when dir is in a git work tree this machine has, else
 * the last component of dir (as aptix__workspace_derive cleans it). ""
 * when there is neither a remote nor an absolute dir.
 */
int aptix__workspace_of_repo(aptix_buf *out, const char *remote,
			     const char *dir);

/*
 * The parent of the absolute directory dir, in place: "/a/b" -> "/a",
 * "/a" -> "/" ("/" stays).
 */
void aptix__path_up(aptix_buf *dir);

#endif
