/*
 * aptix/oidmap.h - a small hash map from object id to a number.
 *
 * The number is whatever the caller indexes by: a position in an array of
 * its own, a count, flags. Entries are kept in insertion order (foreach
 * visits them so), and the table is open addressing on the first 8 bytes
 * of the id, which are as good as random since ids are SHA-256 hashes.
 * The map is a plain struct the caller holds: APTIX_OIDMAP_INIT or
 * aptix_oidmap_init(), then aptix_oidmap_release().
 */
#ifndef APTIX_OIDMAP_H
#define APTIX_OIDMAP_H

#include "common.h"
#include "oid.h"

typedef struct {
	aptix_oid id;
	size_t value;
} aptix_oidmap_entry;

typedef struct {
	aptix_oidmap_entry *entries;	/**< n of them, in insertion order */
	size_t n, alloc;
	size_t *slots;			/**< entry index + 1; 0 is empty */
	size_t nslots;			/**< 0 or a power of two */
} aptix_oidmap;

#define APTIX_OIDMAP_INIT { NULL, 0, 0, NULL, 0 }

/** @brief Make m an empty map (the same as APTIX_OIDMAP_INIT). */
APTIX_EXTERN(void) aptix_oidmap_init(aptix_oidmap *m);
/** @brief Free the memory; m is left empty and ready for reuse. */
APTIX_EXTERN(void) aptix_oidmap_release(aptix_oidmap *m);
/** @brief Remove every entry, keeping the memory. */
APTIX_EXTERN(void) aptix_oidmap_clear(aptix_oidmap *m);
/** @brief The number of entries. */
APTIX_EXTERN(size_t) aptix_oidmap_size(const aptix_oidmap *m);

/**
 * @brief Map id to value, replacing the value id had (its place in the
 * insertion order stays).
 * @return 0, or APTIX_ERROR when out of memory (m is unchanged)
 */
APTIX_EXTERN(int) aptix_oidmap_put(aptix_oidmap *m, const aptix_oid *id,
				   size_t value);
/**
 * @brief Look id up.
 * @param[out] value the value of id (may be NULL to test presence only)
 * @return 0, or APTIX_ENOTFOUND (no error is set: a miss is an answer)
 */
APTIX_EXTERN(int) aptix_oidmap_get(size_t *value, const aptix_oidmap *m,
				   const aptix_oid *id);

/** A non-zero return stops aptix_oidmap_foreach() and is returned. */
typedef int (*aptix_oidmap_foreach_cb)(const aptix_oid *id, size_t value,
				       void *payload);
/**
 * @brief Call cb on each entry, in insertion order. cb must not change m.
 * @return 0, or the first non-zero value cb returned
 */
APTIX_EXTERN(int) aptix_oidmap_foreach(const aptix_oidmap *m,
				       aptix_oidmap_foreach_cb cb,
				       void *payload);

#endif
