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

#define APTIX_FILES_MAX_SIZE_DEFAULT (100 * 1024)
#define APTIX_FILES_MAX_COUNT_DEFAULT 500

/**
 * @brief The WorkspaceId: flag, else $APTIX_WORKSPACE, else config
 *        workspace.id, else derived: "<repository name>.<host name>"
 *        (repository name: the git work tree's top directory name, or
 *        root's name).
 */
APTIX_EXTERN(int) aptix_workspace_id(aptix_buf *out, const aptix_config *cfg,
				     const char *flag, const char *root);

typedef struct {
	unsigned version;
	const char *root;		/**< workspace root (absolute) */
	const char *const *paths;	/**< --file paths (relative to cwd) */
	size_t npaths;
	const char *files_from;		/**< --files-from: a file, or "-" */
	int no_git;			/**< skip the git dirty check */
	long max_size;			/**< 0: files.max-size or 100 KiB */
	long max_count;			/**< 0: files.max-count or 500 */
} aptix_scan_options;

#define APTIX_SCAN_OPTIONS_INIT { 1, NULL, NULL, 0, NULL, 0, 0, 0 }

/**
 * @brief The active files: those git reports modified, staged or
 *        untracked and not ignored (`git status --porcelain=v2 -z`; none
 *        outside a git work tree), plus those named. Each is hashed and,
 *        when within max_size, loaded; NUL bytes or invalid UTF-8 mark it
 *        binary. Bad entries (outside the workspace, missing, a symlink
 *        loop, unreadable) become UNREADABLE with a warning; more than
 *        max_count files are cut with a warning. Sorted by path.
 */
APTIX_EXTERN(int) aptix_workspace_scan(aptix_file_set *out,
				       const aptix_scan_options *o);

#endif
