/*
 * src/store/lmdb-file.h - LMDB's data file read with pread(), trusting nothing:
 * a check of its page structure (fsck; reindex before it rewrites the
 * index) and a salvage scan (aptix salvage). Internal to the library;
 * see lmdb-file.c for the format.
 */
#ifndef APTIX_LMDB_FILE_H
#define APTIX_LMDB_FILE_H

#include "util/common.h"

/** One problem found by the check: one line, no final LF. */
typedef void (*aptix_lmdb_problem_cb)(const char *msg, void *payload);

/**
 * @brief Check data.mdb at path: both meta pages, the file's size, and
 *        every page reachable from the meta page LMDB uses (the main
 *        tree, each table's tree, the free list): page numbers in range
 *        and used once, page headers, node bounds, key order and
 *        separator bounds, overflow pages, depths and counts against
 *        the trees' records. Never maps the file.
 * @return the number of problems found (each also given to cb), or
 *         APTIX_ERROR when the file cannot be read (message set).
 */
int aptix_lmdb_file_check(const char *path, aptix_lmdb_problem_cb cb,
			  void *payload);

/**
 * A record found by the salvage scan. table: the table's name when the
 * record was found by walking that table's tree from a meta page; NULL
 * for one found on a leaf page no tree reaches (an orphan, or a page
 * of an older version: it may be stale). off: where the value's vlen
 * bytes lie in the file (on its leaf page, or its overflow pages), for
 * a caller that reads them again later instead of keeping a copy.
 * Non-zero return stops.
 */
typedef int (*aptix_lmdb_record_cb)(const char *table, const void *key,
				    size_t klen, const void *val,
				    size_t vlen, uint64_t off,
				    void *payload);

/**
 * @brief Every readable record of data.mdb at path, skipping damaged
 *        pages and nodes: first the trees of the tables from each valid
 *        meta page (newest first), then every other leaf page.
 * @param[out] bad_pages pages skipped as damaged (may be NULL).
 * @return 0, cb's non-zero return, or APTIX_ERROR when the file cannot
 *         be read at all.
 */
int aptix_lmdb_file_salvage(const char *path, aptix_lmdb_record_cb cb,
			    void *payload, size_t *bad_pages);

/**
 * @brief Check the meta page LMDB will pick in data.mdb at path, before
 *        LMDB maps the file: LMDB reads both metas (the second at the
 *        first's page size), takes the newer, and maps the file with its
 *        page size without checking it, so a damaged page size faults
 *        inside mdb_env_open. Mirrors liblmdb 0.9's mdb_env_read_header.
 * @return 0 when LMDB can open it (or will refuse it itself: bad magic
 *         or version); APTIX_ECORRUPT with a message when the meta it
 *         would use has a page size that is not the file's; APTIX_ERROR
 *         when the file cannot be read.
 */
int aptix_lmdb_file_meta_check(const char *path);

/**
 * @brief Check the meta page LMDB picks (the newer of the two) in a map
 *        of data.mdb whose page size is psize, as a running process sees
 *        it: the pages can be damaged under it (overwritten, zeroed),
 *        and LMDB would then read an empty or a wrong tree, or fail an
 *        assertion.
 * @note Reads the map: call it where a fault on the map is contained.
 * @return 0, or APTIX_ECORRUPT with a message.
 */
int aptix_lmdb_map_meta_check(const unsigned char *map, uint32_t psize);

/*
 * Values in append order (store format 4; see store-lmdb.c): a record of
 * the objects, sessions or timeline table that starts with
 * APTIX_LMDB_PTR_MARK points to pieces in the table "values": 0x00, the
 * varint number of the first piece, the varint length (format 4: pieces
 * of APTIX_LMDB_PIECE_MAX bytes, the last one the rest), and (format 5)
 * the varint offset of the value in its first piece: pieces of
 * APTIX_LMDB_PIECE bytes filled by the values one after the other, the
 * last one of the table filled up by the next values written. Format 6
 * goes back to pieces of a value's own (as format 4, never shared, never
 * rewritten), the first one of the size that filled its page: 0x00,
 * first, length, the varint size of the first piece, and the be32 CRC-32
 * of the value.
 */
#define APTIX_LMDB_PIECE_MAX 2000
#define APTIX_LMDB_PIECE 1002
#define APTIX_LMDB_PTR_MARK 0x00

struct aptix_lmdb_ptr {
	uint64_t first;		/* number of the first piece */
	size_t len;		/* the value's length */
	size_t off;		/* where it starts in the first piece */
	size_t piece;		/* size of a full piece after the first */
	size_t head;		/* bytes of the value in the first piece */
	int has_crc;		/* format 6: the value's CRC-32 follows */
	uint32_t crc;		/* that CRC-32 (zlib's) of the value */
};

/**
 * @brief Read a record that may point into the values table.
 * @return 1 with the pointer's fields; 0 when the record holds its
 *         value; -1 when it starts as a pointer but is none (no message
 *         set).
 */
int aptix_lmdb__read_pointer(struct aptix_lmdb_ptr *p, const void *rec,
			     size_t rlen);

/** The number of pieces the value of p spans. */
size_t aptix_lmdb__ptr_pieces(const struct aptix_lmdb_ptr *p);

/**
 * The bytes of piece i (from 0) of the value of p: *start and *n, when
 * a piece of size bytes may be that piece; 0, or -1 when it may not
 * (every piece but the last holds exactly its part; the last one, in
 * formats 4 and 5, at least the rest: the values written after it may
 * have filled it up).
 */
int aptix_lmdb__ptr_piece(const struct aptix_lmdb_ptr *p, size_t i,
			  size_t size, size_t *start, size_t *n);

/** pread() of exactly len bytes at off: 0, or -1 (a short read, errno). */
int aptix_lmdb__pread(int fd, void *buf, size_t len, uint64_t off);

#endif
