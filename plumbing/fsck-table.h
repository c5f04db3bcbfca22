/*
 * plumbing/fsck-table.h - fsck's table of the objects, numbered by rank
 * (their order by id), in a few bytes each (see fsck-table.c).
 */
#ifndef FSCK_TABLE_H
#define FSCK_TABLE_H

#include <stdint.h>
#include <aptix.h>

enum {
	F_CORRUPT = 1,		/* cannot be read or parsed */
	F_REACHABLE = 2,
	F_USED = 4,		/* referenced by some object */
	F_SHARED = 8,		/* its key is another object's too */
	F_FAILED = 16,		/* a failed session: kept, as a reflog is */
	F_OTHERS = 32,		/* of a conversation another user keeps */
	F_RECHECK = 64		/* to be checked alone (check_all) */
};

/* An object whose id the table keeps: rank and id. */
struct fsck_ided {
	uint32_t n;
	aptix_oid id;
};

struct fsck_ided_list {
	struct fsck_ided *v;
	size_t n, alloc;
};

struct fsck_table {
	size_t nobjs, aobjs;
	uint64_t *keys;		/* the first 8 bytes of each id, by rank */
	unsigned char *types;	/* APTIX_OBJ_BAD when unknown */
	unsigned char *flags;
	uint32_t *bucket;	/* first rank of each key >> shift */
	unsigned shift;
	int unsorted;		/* the walk did not give ids in order */
	aptix_oid last;		/* the walk's last id */
	/* ids kept: those of shared keys and BAD types, in rank order */
	struct fsck_ided_list shared;
	/* ids met since (corrupt, failed, others' sessions), in rank order */
	struct fsck_ided_list seen;
	aptix_oid *ids;		/* every id: only on a damaged store's paths */
	aptix_odb *odb;
	/* tests (APTIX_TEST_FSCK_KEY_BYTES, APTIX_TEST_FSCK_UNSORTED) */
	unsigned key_bytes;	/* 8, or fewer: keys that collide */
	int force_unsorted;	/* as if the walk gave ids out of order */
	/* links, by rank: a count each (255: see big), a start each 64 */
	uint32_t *links;
	size_t nlinks, alinks;
	unsigned char *nlink;
	uint32_t *chk;
	uint32_t *start;	/* or: where each object's links start */
	struct fsck_ided_list big;	/* n: rank, id.id: its count */
	size_t base;		/* first link of the object being checked */
};

/* Every object of odb, from a walk of its headers: 0, or < 0. */
int fsck_table_load(struct fsck_table *t, aptix_odb *odb);
void fsck_table_release(struct fsck_table *t);
/*
 * Or, from a walk that gives the ids in order and the objects after,
 * in any order (aptix_odb_foreach_all()): begin, then add id n (its
 * type APTIX_OBJ_BAD until set; -1 when out of order), then done before
 * the first lookup. The links of each object are then kept where they
 * start, so that objects can be checked in any order.
 */
void fsck_table_begin(struct fsck_table *t, aptix_odb *odb);
int fsck_table_add(struct fsck_table *t, size_t n, const aptix_oid *id);
void fsck_table_done(struct fsck_table *t);
/* Keep the ids of the objects want() selects (a walk of the ids). */
typedef int (*fsck_want_fn)(const struct fsck_table *t, size_t n,
			    void *payload);
int fsck_table_keep(struct fsck_table *t, fsck_want_fn want, void *payload);
/* Rank of id, or -1. */
long fsck_find(const struct fsck_table *t, const aptix_oid *id);
/* Whether object n is id. */
int fsck_is(const struct fsck_table *t, size_t n, const aptix_oid *id);
/* The id of object n (read again from the store when not kept). */
const aptix_oid *fsck_id_at(struct fsck_table *t, size_t n);
/* The id of object n when kept, else NULL. */
const aptix_oid *fsck_id_kept(const struct fsck_table *t, size_t n);
/* Set flags on object n, whose id is id, and keep that id. */
void fsck_flag(struct fsck_table *t, size_t n, const aptix_oid *id,
	       unsigned flags);
/* An id standing for object n in the reachability walk (kept, or made). */
void fsck_id_for(aptix_oid *out, const struct fsck_table *t, size_t n);

/* Links of object n, appended while it is checked, objects in order. */
void fsck_links_begin(struct fsck_table *t, size_t n);
void fsck_links_add(struct fsck_table *t, uint32_t to);
void fsck_links_undo(struct fsck_table *t);
/* Forget the links of object n (it is to be checked again). */
void fsck_links_drop(struct fsck_table *t, size_t n);
void fsck_links_end(struct fsck_table *t, size_t n);
/* Where the links of object n are in t->links: [*lo, *hi). */
void fsck_links_range(const struct fsck_table *t, size_t n, size_t *lo,
		      size_t *hi);

/* Call cb with the id of each object that want() selects, in rank order. */
typedef void (*fsck_each_fn)(const struct fsck_table *t, size_t n,
			     const aptix_oid *id, void *payload);
int fsck_foreach_selected(struct fsck_table *t, fsck_want_fn want,
			  fsck_each_fn cb, void *payload);

#endif
