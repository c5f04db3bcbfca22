/*
 * aptix/workspace.h - the working copy: its WorkspaceId and its active
 * files (seed 000, sections 4 to 6).
 */
#ifndef APTIX_WORKSPACE_H
#define APTIX_WORKSPACE_H

#include "common.h"
#include "buf.h"
#include "config.h"
#include "context.h"
#include "repo.h"
#include "credscan.h"

/**
 * @brief The WorkspaceId: flag, else $APTIX_WORKSPACE, else config
 *        workspace.id, else derived: "<repository name>.<host name>"
 *        (repository name: the git work tree's top directory name, or
 *        root's name).
 * @note out is replaced. Empty values count as unset; cfg and root may
 *       be NULL (root: the current directory). The host name is cut at
 *       its first dot ("localhost" when there is none); in a derived id
 *       characters other than [A-Za-z0-9._-] become '-'. The work
 *       tree's top is found from its .git entry (no git process;
 *       $GIT_CEILING_DIRECTORIES honoured); not a work tree is no error.
 */
APTIX_EXTERN(int) aptix_workspace_id(aptix_buf *out, const aptix_config *cfg,
				     const char *flag, const char *root);

/**
 * @brief The WorkspaceId of a store's turns: flag, else
 *        $APTIX_WORKSPACE, else workspace.id, else the id the store
 *        recorded at init (aptix_repo_workspace()), else derived from
 *        its work tree as aptix_workspace_id() does (older stores).
 *        Moving or copying the work tree, or opening it on another host,
 *        does not change it.
 */
APTIX_EXTERN(int) aptix_repo_workspace_id(aptix_buf *out,
					  const aptix_repo *repo,
					  const aptix_config *cfg,
					  const char *flag);

typedef struct {
	unsigned version;
	const char *root;		/**< workspace root (absolute) */
	const char *const *paths;	/**< --file paths (relative to cwd) */
	size_t npaths;
	const char *files_from;		/**< --files-from: a file, or "-" */
	int no_git;			/**< skip the git dirty check */
	long max_size;			/**< 0: files.max-size (key table) */
	long max_count;			/**< 0: files.max-count (key table) */
	/** where files.max-size and files.max-count are read (may be NULL) */
	const aptix_config *cfg;
	/** keys that are credentials whatever their form (API keys) */
	const char *const *secrets;
	size_t nsecrets;
	/**
	 * the stat cache file (aptix_workspace_stat_cache()); NULL: none,
	 * every file is hashed
	 */
	const char *stat_cache;
	int stat_cache_readonly;	/**< use it, never write it */
	/**
	 * Asked for each file holding a credential (not a key of secrets)
	 * whether to send it all the same; NULL: withheld. Since version 2.
	 */
	aptix_credential_ask_cb ask;
	void *ask_payload;
} aptix_scan_options;

#define APTIX_SCAN_OPTIONS_VERSION 2
#define APTIX_SCAN_OPTIONS_INIT { APTIX_SCAN_OPTIONS_VERSION, NULL, NULL, \
	0, NULL, 0, 0, 0, NULL, NULL, 0, NULL, 0, NULL, NULL }

/**
 * @brief The active files: those git reports modified, staged or
 *        untracked and not ignored (`git status --porcelain=v2 -z`; none
 *        outside a git work tree), plus those named. Each is hashed and,
 *        when within max_size, loaded; NUL bytes or invalid UTF-8 mark it
 *        binary. Bad entries (outside the workspace, missing, a symlink
 *        loop, unreadable) become UNREADABLE with a warning; more than
 *        max_count files are cut with a warning. Sorted by path.
 * @note Details:
 *  - root NULL: the current directory. Named paths (--file, and the
 *    entries of --files-from) are relative to the current directory;
 *    they are recorded relative to root. A --files-from list holds one
 *    path a line, or one path per NUL-terminated entry when it contains
 *    a NUL byte (`git ls-files -z`); empty entries are skipped.
 *  - git runs once, as `git --no-optional-locks -C <root> status
 *    --porcelain=v2 --branch --no-ahead-behind -z
 *    --untracked-files=all -- . ':(exclude).aptix'`: only the files
 *    under root are taken when root is a subdirectory of the work tree.
 *    No git, or root not in a work tree: no git files, no warning. The
 *    store (.aptix/) is never an active file.
 *  - When git ran, out->has_worktree is set and out->worktree holds
 *    HEAD's commit and branch (from the --branch headers; NULL when
 *    unborn or detached) and dirty: any entry git reported under root.
 *  - Files git reports deleted are not listed: a warning names each
 *    (the first ten, then "N more deleted files not named"). Nested
 *    repositories and submodules are skipped with a warning.
 *  - A path outside root, or a symlink resolving outside it, is
 *    UNREADABLE with note "outside the workspace" and the warning
 *    "path 'x' is outside the workspace" (x as given). Other UNREADABLE
 *    notes: "no such file", "symlink loop", "permission denied", "not a
 *    regular file", or the system's message. A directory is skipped
 *    with a warning. Duplicates are merged (touched when git reported
 *    the file).
 *  - A file over max_size: too_large, with its size from stat and no
 *    content and no SHA-256 (sha256 ""): it is never read, however
 *    large. Binary files within max_size keep their content.
 *  - With a stat cache, a file whose stat data (size, mtime and ctime
 *    in ns, inode, device) is what the cache holds is not hashed again,
 *    as git's index does (src/workspace/statcache.c: the "racy git" rule); the
 *    cache is written back unless stat_cache_readonly. nhashed and
 *    nread of out count the files hashed and the bytes read.
 *  - Paths that root's .aptixignore names (gitignore syntax, see
 *    README.md) are never taken: git's are dropped silently, named ones
 *    with the warning "'x' is excluded by .aptixignore: not sent".
 *  - A file whose content holds a credential (aptix/credscan.h: the
 *    rules, and the values of secrets) is WITHHELD: its content is
 *    dropped, note says which rule on which line ("holds a credential:
 *    GitHub token on line 3 (rule github-token)"), and a warning names
 *    it. With an ask callback, the file is sent when the callback says
 *    so (action SEND, credential_allowed set, note and a warning say
 *    it was allowed); a key of secrets is withheld without asking.
 *  - action: UNREADABLE, TOO_LARGE, BINARY, WITHHELD or else SEND;
 *    planning (aptix_context_plan) turns SEND into UNCHANGED where it
 *    applies.
 *  - max_count cuts the list, sorted by path, after merging and before
 *    reading: "N more active files not considered (files.max-count)".
 *  - A name that is not valid UTF-8 cannot be recorded (paths in objects
 *    are UTF-8): it is skipped with the warning "'<name>': the file name
 *    is not valid UTF-8: skipped", its bad bytes shown as \xHH.
 * @return 0 (problems with single files are warnings); APTIX_EINVALID
 *         for bad options or a bad files.max-* value; APTIX_ENOTFOUND
 *         when root or the --files-from list cannot be read.
 */
APTIX_EXTERN(int) aptix_workspace_scan(aptix_file_set *out,
				       const aptix_scan_options *o);

/**
 * @brief The stat cache of a store's work tree: the file "stat-cache"
 *        in the store's directory, beside data.mdb (objects-format.md,
 *        Storage). Into out (replaced).
 */
APTIX_EXTERN(int) aptix_workspace_stat_cache(aptix_buf *out,
					     const aptix_repo *repo);

#endif
