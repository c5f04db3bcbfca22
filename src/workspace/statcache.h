/*
 * src/workspace/statcache.h - hashes of work-tree files keyed by their stat data,
 * as git's index keeps them, so that a scan need not hash a file it has
 * hashed before (src/workspace/statcache.c; the file format is in
 * objects-format.md, Storage).
 */
#ifndef APTIX_SRC_STATCACHE_H
#define APTIX_SRC_STATCACHE_H

#include "util/common.h"

#include <sys/stat.h>

struct aptix__statcache;

/*
 * Load the cache kept in the file path (a missing, unreadable or
 * malformed file is an empty cache: it is derived data). now_ns is the
 * time the scan starts: entries of files changed since a little before
 * it are never saved (see statcache.c). *out is NULL only on OOM.
 */
int aptix__statcache_load(struct aptix__statcache **out, const char *path,
			  int64_t now_ns);
/* The hex SHA-256 cached for path with this stat data, or NULL. */
const char *aptix__statcache_get(struct aptix__statcache *c,
				 const char *path, const struct stat *st);
/* Remember path's hash for the next scan. */
int aptix__statcache_put(struct aptix__statcache *c, const char *path,
			 const struct stat *st, const char *sha256);
/*
 * Write what this scan used back, atomically (a temporary file renamed
 * over the old one), when it differs from what was loaded. Best effort:
 * a failure leaves the old cache and sets no error.
 */
void aptix__statcache_save(struct aptix__statcache *c);
void aptix__statcache_free(struct aptix__statcache *c);

#endif
