/*
 * aptix/sys/store_backend.h - the transactional key-value store that the
 * LMDB and memory storage backends (aptix/sys/backend.h) lay their
 * objects, refs, index records and claims out in (src/store/backend-kv.c),
 * and that RAG, purge and salvage use directly.
 *
 * A store keeps a fixed set of tables of byte keys and values, sorted by
 * key. Reads see a consistent snapshot; writes run a callback inside one
 * atomic transaction, which the store may run again (for instance after
 * growing a full LMDB map), so the callback must only depend on its
 * payload and on what it reads through the transaction. LMDB and memory
 * implement it; a shared store (PostgreSQL) implements the domain
 * vtables of aptix/sys/backend.h instead.
 *
 * Threads: a store is shared by every thread of a process; each slot may
 * be called from any thread at any time. Reads see the last commit made
 * before they started.
 */
#ifndef APTIX_SYS_STORE_BACKEND_H
#define APTIX_SYS_STORE_BACKEND_H

#include "../common.h"
#include "../buf.h"

#define APTIX_STORE_BACKEND_VERSION 5

typedef enum {
	APTIX_TABLE_META = 0,	/**< store-wide settings: format version */
	APTIX_TABLE_OBJECTS,	/**< raw id -> type, size, zlib content */
	APTIX_TABLE_REFS,	/**< ref name -> hex id or "ref: <name>" */
	APTIX_TABLE_REFLOG,	/**< name NUL be64 seq -> entry */
	APTIX_TABLE_SESSIONS,	/**< session id -> index record */
	APTIX_TABLE_CHILDREN,	/**< parent id, child id -> "" */
	APTIX_TABLE_CONVS,	/**< conversation id -> index record */
	APTIX_TABLE_RUNNING,	/**< conversation id -> running turn */
	APTIX_TABLE_RAG,	/**< retrieval index (rag.c) */
	APTIX_TABLE_TIMELINE,	/**< be64 created ms, session id -> "" */
	APTIX_TABLE_PURGED,	/**< object id -> purge record (purge.c) */
	APTIX_TABLE_SEARCH,	/**< search index of sessions (search.c) */
	APTIX_TABLE_RECENCY,	/**< conversations by last update */
	APTIX_TABLE_IMPORTS,	/**< source keys of imported turns */
	APTIX_TABLE__COUNT
} aptix_table;

typedef struct aptix_store aptix_store;
typedef struct aptix_store_wtxn aptix_store_wtxn;

/**
 * Iteration callback: keys from start upwards. Return 0 to go on,
 * APTIX_ITEROVER to stop quietly, any other value to stop and return it.
 * @note key and val are valid only during the call.
 */
typedef int (*aptix_store_iter_cb)(const void *key, size_t klen,
				   const void *val, size_t vlen,
				   void *payload);

/**
 * A record of a walk of every record (iter_all): its number n (its
 * place in key order, from 0), its key when at hand (else NULL), its
 * value (NULL for the keys' callback). Return as aptix_store_iter_cb.
 * @note key and val are valid only during the call.
 */
typedef int (*aptix_store_numbered_cb)(uint64_t n, const void *key,
				       size_t klen, const void *val,
				       size_t vlen, void *payload);

typedef int (*aptix_store_write_fn)(aptix_store_wtxn *w, void *payload);

/** A problem of the store's structure, one line (no final LF). */
typedef void (*aptix_store_problem_cb)(const char *msg, void *payload);

/**
 * Zero-copy read callback: val is valid only during the call (the read
 * transaction ends when it returns). Its return value is view's.
 */
typedef int (*aptix_store_view_cb)(const void *val, size_t vlen,
				   void *payload);

struct aptix_store {
	unsigned version;
	/** Read one value into out. ENOTFOUND when absent. */
	int (*get)(aptix_buf *out, aptix_store *s, aptix_table t,
		   const void *key, size_t klen);
	/** Zero-copy read through cb. ENOTFOUND when absent. */
	int (*view)(aptix_store *s, aptix_table t, const void *key,
		    size_t klen, aptix_store_view_cb cb, void *payload);
	/**
	 * Iterate ascending from the first key >= start (NULL: first), or
	 * with reverse descending from the last key <= start (NULL: last).
	 */
	int (*iter)(aptix_store *s, aptix_table t, const void *start,
		    size_t slen, int reverse, aptix_store_iter_cb cb,
		    void *payload);
	/** Run fn inside one atomic, durable write transaction. */
	int (*write)(aptix_store *s, aptix_store_write_fn fn, void *payload);
	/*
	 * Inside write(). A backend's aptix_store_wtxn must start with a
	 * pointer to its aptix_store.
	 */
	int (*wget)(aptix_buf *out, aptix_store_wtxn *w, aptix_table t,
		    const void *key, size_t klen);
	int (*wput)(aptix_store_wtxn *w, aptix_table t, const void *key,
		    size_t klen, const void *val, size_t vlen);
	/** ENOTFOUND when absent. */
	int (*wdel)(aptix_store_wtxn *w, aptix_table t, const void *key,
		    size_t klen);
	int (*witer_rev)(aptix_store_wtxn *w, aptix_table t,
			 const void *start, size_t slen,
			 aptix_store_iter_cb cb, void *payload);
	/** 1 when the store was opened read-only (writes fail). */
	int (*readonly)(aptix_store *s);
	/** Bytes used on disk. */
	int (*disk_usage)(uint64_t *out, aptix_store *s);
	void (*free)(aptix_store *s);
	/**
	 * Check the store's own structure (LMDB: its pages) without
	 * trusting it: each problem to cb, one line. May be NULL (no such
	 * check). Returns the number of problems, or < 0.
	 */
	int (*check)(aptix_store *s, aptix_store_problem_cb cb,
		     void *payload);
	/**
	 * Rewrite the store's files without their free pages, so that no
	 * byte of a deleted value survives on disk (NULL: not supported).
	 * Refuses (APTIX_ELOCKED) while another process has the store
	 * open, and (APTIX_ERROR) when it could not drop the old bytes (a
	 * file with another hard link). Afterwards this handle only reads:
	 * it must be freed and the store opened again to write. With
	 * APTIX_STORE_COMPACT_CHECK it only says whether it could run now
	 * and changes nothing.
	 */
	int (*compact)(aptix_store *s, unsigned flags);
	/**
	 * Bring every value to the newest layout of this backend, in one
	 * write (LMDB: store format 6, each value in pieces of its own
	 * with a checksum; the pieces of older formats deleted). Nothing to
	 * do is no write. NULL: the backend has one layout. `aptix
	 * reindex` calls it.
	 */
	int (*relayout)(aptix_store *s);
	/**
	 * Inside write(): this write need not be durable when write()
	 * returns, only atomic; the next write that is not deferred makes
	 * it durable with itself. A power loss before then may undo it
	 * (all of it, and nothing written after it), which only a write
	 * that no one is told is committed may ask. NULL: every write is
	 * durable.
	 */
	void (*wdefer_sync)(aptix_store_wtxn *w);
	/**
	 * The number of keys of table t at the last commit, without
	 * reading them; NULL, or APTIX_ENOTFOUND with no message: the
	 * store cannot say cheaply.
	 */
	int (*count)(uint64_t *out, aptix_store *s, aptix_table t);
	/**
	 * Every record of table t, for a walk that reads them all (fsck),
	 * in the order that reads the store fastest: each key to key_cb in
	 * key order with its number n (0 for the first), and each value to
	 * val_cb with that number, after its key but in no given order,
	 * with its key when the store has it at hand (else NULL). LMDB
	 * gives the values kept in the values table in the order of that
	 * table (sequential pages, each read once, not one lookup each),
	 * and lets go of the pages it has read as it goes, so that the
	 * process does not hold the file (as git unmaps pack windows past
	 * core.packedGitLimit). A value that cannot be read comes as iter
	 * gives it: starting with the byte 0x00, which no value of a
	 * logged table starts with. val_cb NULL: the keys alone, no value
	 * read. Returns as iter. NULL: the store has no such walk (use
	 * iter).
	 */
	int (*iter_all)(aptix_store *s, aptix_table t,
			aptix_store_numbered_cb key_cb,
			aptix_store_numbered_cb val_cb, void *payload);
};

enum aptix_store_open_flags {
	APTIX_STORE_CREATE = (1 << 0),
	APTIX_STORE_RDONLY = (1 << 1)
};

enum aptix_store_compact_flags {
	APTIX_STORE_COMPACT_CHECK = (1 << 0)	/**< could it run now? */
};

/**
 * @brief Open (or create) the LMDB store in directory dir.
 * @return 0; APTIX_ENOTFOUND when dir holds no store and CREATE is not
 *         given; APTIX_ERROR with a message otherwise.
 */
APTIX_EXTERN(int) aptix_store_lmdb_open(aptix_store **out, const char *dir,
					unsigned flags);

/**
 * @brief A new, empty store in memory: every slot but check and compact,
 *        writes atomic (a failed write callback is undone), readers never
 *        seeing a write half done. Gone when freed.
 */
APTIX_EXTERN(int) aptix_store_memory_new(aptix_store **out);

#endif
