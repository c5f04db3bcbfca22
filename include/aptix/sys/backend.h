/*
 * aptix/sys/backend.h - a storage backend: what keeps a repository's
 * objects, refs and reflogs, index records and running-turn claims.
 *
 * A backend is a bundle of domain vtables (libgit2's model: one vtable
 * per domain, each versioned, a concrete backend embedding the struct as
 * its first member):
 *
 *   odb     aptix/sys/odb_backend.h     objects, in their stored form
 *   refdb   aptix/sys/refdb_backend.h   refs (compare-and-swap), reflogs
 *   index   aptix/sys/index_backend.h   sessions, children, conversations,
 *                                       timeline records
 *   claims  aptix/sys/claims_backend.h  running-turn claims and leases
 *
 * and one transaction that they all run inside. A turn commits its
 * objects, ref moves with their reflog entries, index records and the
 * release of its claim in one transaction(): all of it or none of it.
 * A slot that writes takes the transaction; a slot that reads takes a
 * transaction (it then sees that transaction's own writes) or NULL (it
 * sees the last commit). The library keeps the domain rules (what a ref
 * may hold, whether a claim's holder is alive, what a record says);
 * a backend stores and fetches, and does the compare of a
 * compare-and-swap itself, so that a shared backend (PostgreSQL:
 * UPDATE ... WHERE value = $old) can do it atomically on its side.
 *
 * Threads: a backend is shared by every thread of a process; any slot
 * may be called from any thread. A transaction belongs to the thread
 * that runs it.
 *
 * Two version numbers are kept apart (objects-format.md, "Versions"):
 * how an object's bytes are encoded (APTIX_OBJECT_ENCODING_VERSION, the
 * same in every backend) and how a backend lays out what it keeps (its
 * layout field, its own numbering: for LMDB the store "format").
 */
#ifndef APTIX_SYS_BACKEND_H
#define APTIX_SYS_BACKEND_H

#include "../common.h"
#include "../buf.h"

#define APTIX_BACKEND_VERSION 1

/**
 * The newest encoding of objects' stored bytes this library writes
 * (objects-format.md, "Storage"): 1 plain zlib, 2 packed and spliced
 * values, 3 based values.
 */
#define APTIX_OBJECT_ENCODING_VERSION 3

typedef struct aptix_backend aptix_backend;

/**
 * A transaction of a backend. A concrete backend's transaction embeds
 * this struct as its first member.
 */
typedef struct aptix_backend_txn {
	aptix_backend *backend;
} aptix_backend_txn;

/**
 * What runs inside a transaction. A non-zero return undoes everything
 * it wrote and is what transaction() returns. The backend may run it
 * again (after growing a full map, after a serialization failure), so
 * it must depend only on its payload and on what it reads through tx.
 */
typedef int (*aptix_backend_txn_fn)(aptix_backend_txn *tx, void *payload);

/**
 * A record met by an iteration (key and value as bytes). Return 0 to go
 * on, APTIX_ITEROVER to stop quietly, any other value to stop and
 * return it. @note key and val are valid only during the call.
 */
typedef int (*aptix_backend_record_cb)(const void *key, size_t klen,
				       const void *val, size_t vlen,
				       void *payload);

/** A zero-copy read: val is valid only during the call. */
typedef int (*aptix_backend_view_cb)(const void *val, size_t vlen,
				     void *payload);

struct aptix_odb_backend;
struct aptix_refdb_backend;
struct aptix_index_backend;
struct aptix_claims_backend;

/**
 * A listener of a shared backend: what other processes change is
 * announced to it (PostgreSQL: LISTEN/NOTIFY). wait() blocks until an
 * announcement comes or timeout_ms passes (< 0: forever), then gives
 * the names of the refs announced since the last call to cb (a name may
 * come more than once; a ref the caller may not see may come too: the
 * caller reads it again). It returns the number of names given, 0 when
 * it timed out, < 0 when the connection is lost (the listener is then
 * of no more use). free() closes it. A listener belongs to one thread.
 */
typedef struct aptix_backend_listener aptix_backend_listener;
struct aptix_backend_listener {
	int (*wait)(aptix_backend_listener *l, int timeout_ms,
		    int (*cb)(const char *ref, void *payload),
		    void *payload);
	void (*free)(aptix_backend_listener *l);
};

struct aptix_backend {
	unsigned version;		/**< APTIX_BACKEND_VERSION */
	const char *name;		/**< as registered: "lmdb" */
	unsigned layout;		/**< its own layout's version */
	/* the domains; owned by the backend, freed by free() */
	struct aptix_odb_backend *odb;
	struct aptix_refdb_backend *refdb;
	struct aptix_index_backend *index;
	struct aptix_claims_backend *claims;
	/** Run fn in one atomic, durable transaction (see above). */
	int (*transaction)(aptix_backend *b, aptix_backend_txn_fn fn,
			   void *payload);
	/**
	 * Store-wide settings (format, store-id, index-layout...): text
	 * values under short ASCII keys. ENOTFOUND when absent.
	 */
	int (*meta_get)(aptix_buf *out, aptix_backend *b,
			aptix_backend_txn *tx, const char *key);
	int (*meta_put)(aptix_backend_txn *tx, const char *key,
			const char *value);
	/** 1 when opened read-only (transactions then fail). */
	int (*readonly)(aptix_backend *b);
	/** Bytes it keeps (NULL: unknown). */
	int (*disk_usage)(uint64_t *out, aptix_backend *b);
	void (*free)(aptix_backend *b);
	/**
	 * A listener of the ref updates other processes commit (NULL: the
	 * backend announces none; its readers poll).
	 */
	int (*listen)(aptix_backend_listener **out, aptix_backend *b);
	/**
	 * Conversations owned by users (NULL: every conversation is the
	 * store's, as on LMDB). share: conv (an id) seen by the other
	 * users of the store (shared 1) or by its owner alone again (0);
	 * APTIX_ENOTFOUND when the user sees no such conversation (one
	 * that is another's and private reads the same as none),
	 * APTIX_EINVALID when it is another user's.
	 */
	int (*share)(aptix_backend *b, const char *conv, int shared);
	/**
	 * Each conversation the user sees, by id: its owner ("" for one
	 * of no user) and whether it is shared. cb's non-zero stops.
	 */
	int (*owners)(aptix_backend *b,
		      int (*cb)(const char *conv, const char *owner,
				int shared, void *payload),
		      void *payload);
	/** The user whose conversations it shows ("" or NULL: none). */
	const char *(*user)(aptix_backend *b);
};

/**
 * How a registered backend is opened: dir is the store's directory
 * (NULL: none, as for "memory", which refuses one).
 */
typedef int (*aptix_backend_open_fn)(aptix_backend **out, const char *dir,
				     unsigned flags);

/**
 * @brief Make a backend openable by name (the store's extensions.storage,
 *        aptix_backend_open()). Built in: "lmdb" and "memory".
 * @return 0; APTIX_EEXISTS when the name is taken.
 */
APTIX_EXTERN(int) aptix_backend_register(const char *name,
					 aptix_backend_open_fn open);

/**
 * @brief Open the backend registered as name (case-insensitive) for the
 *        store in dir; flags as aptix_store_lmdb_open()'s.
 * @return 0; APTIX_EVERSION when no backend has that name (the message
 *         lists those that do); what the backend's open returns.
 */
APTIX_EXTERN(int) aptix_backend_open(aptix_backend **out, const char *name,
				     const char *dir, unsigned flags);

/** @brief The registered names, ", " between them, into out. */
APTIX_EXTERN(int) aptix_backend_names(aptix_buf *out);

#endif
