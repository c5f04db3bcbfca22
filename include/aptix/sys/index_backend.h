/*
 * aptix/sys/index_backend.h - the index records of a storage backend
 * (aptix/sys/backend.h).
 *
 * The index (the sessions, their children, the conversations, the
 * timeline, the search index, the conversations by recency and the
 * source keys of imported turns: objects-format.md, "Index records") is
 * seven tables of
 * records, byte keys to byte values, iterated in ascending (or
 * descending) byte order of key. The library makes the keys and the
 * values and keeps them consistent with the objects and refs by writing
 * them in the same transaction; the backend keeps them. The index can
 * always be rebuilt from the objects and refs (`aptix reindex`).
 */
#ifndef APTIX_SYS_INDEX_BACKEND_H
#define APTIX_SYS_INDEX_BACKEND_H

#include "backend.h"

/*
 * 2 added prefetch; a backend of version 1 (without it) is still taken.
 */
#define APTIX_INDEX_BACKEND_VERSION 2

typedef enum {
	APTIX_INDEX_SESSIONS = 0,	/**< session id -> record (legacy) */
	APTIX_INDEX_CHILDREN,		/**< parent id, child id -> "" */
	APTIX_INDEX_CONVS,		/**< conversation id -> record */
	APTIX_INDEX_TIMELINE,		/**< be64 ms, session id -> record */
	APTIX_INDEX_SEARCH,		/**< search index (index/search.c) */
	APTIX_INDEX_RECENCY,		/**< ~be64 updated ms, conversation
					     id -> "" (index-recency.c) */
	APTIX_INDEX_IMPORTS,		/**< sha256(source key) -> snapshot
					     (index-imports.c) */
	APTIX_INDEX__COUNT
} aptix_index_table;

enum aptix_index_iter_flags {
	APTIX_INDEX_ITER_REVERSE = (1 << 0),	/**< descending keys */
	/**
	 * A hint: the callback wants the first record only (it stops the
	 * walk there); a backend may read just that one. Ignoring it is
	 * correct.
	 */
	APTIX_INDEX_ITER_ONE = (1 << 1)
};

/** What prefetch() is to answer ahead, for a transaction's later calls. */
enum aptix_index_prefetch_kind {
	/** get() of each key */
	APTIX_INDEX_PREFETCH_GET = 0,
	/** iterate(REVERSE | ONE) from each key: the last record <= it */
	APTIX_INDEX_PREFETCH_SEEK = 1
};

typedef struct aptix_index_backend {
	unsigned version;		/**< APTIX_INDEX_BACKEND_VERSION */
	/** One record into out; tx NULL: last commit. ENOTFOUND. */
	int (*get)(aptix_buf *out, struct aptix_index_backend *b,
		   aptix_backend_txn *tx, aptix_index_table t,
		   const void *key, size_t klen);
	/** One record, zero-copy, at the last commit. ENOTFOUND. */
	int (*view)(struct aptix_index_backend *b, aptix_index_table t,
		    const void *key, size_t klen, aptix_backend_view_cb cb,
		    void *payload);
	/**
	 * Records from the first key >= start (REVERSE: the last key <=
	 * start) on; start NULL: from the first (last). tx NULL: at the
	 * last commit.
	 */
	int (*iterate)(struct aptix_index_backend *b, aptix_backend_txn *tx,
		       aptix_index_table t, const void *start, size_t slen,
		       unsigned flags, aptix_backend_record_cb cb,
		       void *payload);
	/** Inside tx: set a record (replacing it). */
	int (*put)(struct aptix_index_backend *b, aptix_backend_txn *tx,
		   aptix_index_table t, const void *key, size_t klen,
		   const void *val, size_t vlen);
	/** Inside tx: remove a record; ENOTFOUND when absent. */
	int (*del)(struct aptix_index_backend *b, aptix_backend_txn *tx,
		   aptix_index_table t, const void *key, size_t klen);
	/**
	 * How many records table t holds at the last commit, without
	 * reading them (LMDB keeps the count); APTIX_ENOTFOUND, with no
	 * message, when the backend cannot say cheaply. May be NULL (the
	 * same).
	 */
	int (*count)(uint64_t *out, struct aptix_index_backend *b,
		     aptix_index_table t);
	/**
	 * Version 2. A hint, inside tx: the caller is about to ask these
	 * n keys of table t (kind: aptix_index_prefetch_kind), so that a
	 * backend whose every read is a round trip (PostgreSQL) reads them
	 * in one. The answers must stay what the calls would return once
	 * the transaction's own puts and deletes are counted; they hold
	 * until the next prefetch of the same kind (n 0: forget them) or
	 * the transaction's end. May be NULL: ignoring it is correct.
	 */
	int (*prefetch)(struct aptix_index_backend *b, aptix_backend_txn *tx,
			aptix_index_table t, unsigned kind,
			const aptix_buf *keys, size_t n);
} aptix_index_backend;

#endif
