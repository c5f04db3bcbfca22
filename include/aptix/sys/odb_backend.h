/*
 * aptix/sys/odb_backend.h - what an object database backend implements.
 *
 * Backends store and fetch (type, bytes) by id; they never compute ids.
 * A NULL slot means "not supported". A concrete backend embeds this
 * struct as its first member.
 *
 * The object domain of a storage backend (aptix/sys/backend.h) also
 * has read_stored and write_stored: an object's stored form (the
 * encoding of objects-format.md, "Storage", made by the library), read
 * and written inside the backend's transaction, so that a turn's
 * objects commit with its refs and index records. A backend keeps those
 * bytes as given: it never re-encodes them.
 */
#ifndef APTIX_SYS_ODB_BACKEND_H
#define APTIX_SYS_ODB_BACKEND_H

#include "../odb.h"
#include "backend.h"

#define APTIX_ODB_BACKEND_VERSION 6

typedef struct aptix_odb_backend {
	unsigned version;
	aptix_odb *odb;
	/** Fill out (replacing its content); ENOTFOUND, ECORRUPT. */
	int (*read)(aptix_buf *out, aptix_otype *type_out,
		    struct aptix_odb_backend *b, const aptix_oid *id);
	int (*read_header)(size_t *size_out, aptix_otype *type_out,
			   struct aptix_odb_backend *b, const aptix_oid *id);
	/** Store bytes under id; already present is success. */
	int (*write)(struct aptix_odb_backend *b, const aptix_oid *id,
		     const void *data, size_t len, aptix_otype type);
	int (*exists)(struct aptix_odb_backend *b, const aptix_oid *id);
	/**
	 * Ids starting with the first hexlen hex digits of prefix: the
	 * first match in *out and the number found (0, 1 or 2 meaning
	 * "more than one") in *count.
	 */
	int (*exists_prefix)(aptix_oid *out, int *count,
			     struct aptix_odb_backend *b,
			     const aptix_oid *prefix, size_t hexlen);
	int (*foreach)(struct aptix_odb_backend *b, aptix_odb_foreach_cb cb,
		       void *payload);
	/**
	 * The stored form of id into out (replaced). tx: inside that
	 * transaction, seeing its writes; NULL: the last commit.
	 * ENOTFOUND.
	 */
	int (*read_stored)(aptix_buf *out, struct aptix_odb_backend *b,
			   aptix_backend_txn *tx, const aptix_oid *id);
	/**
	 * Inside tx: keep val, the stored form of id, unless id is there
	 * already (then a no-op: a write replayed is harmless). Fails
	 * (APTIX_ERROR) when a base that val names is missing.
	 */
	int (*write_stored)(struct aptix_odb_backend *b,
			    aptix_backend_txn *tx, const aptix_oid *id,
			    const void *val, size_t len);
	/** NULL when its storage backend owns it (and frees it). */
	void (*free)(struct aptix_odb_backend *b);
	/**
	 * Every object in id order with its type and size, from the
	 * values met on the way (no lookup per object); an object whose
	 * header cannot be read with type APTIX_OBJ_BAD. NULL:
	 * aptix_odb_foreach_header() uses foreach.
	 */
	int (*foreach_header)(struct aptix_odb_backend *b,
			      aptix_odb_foreach_header_cb cb, void *payload);
	/*
	 * Batches, for a backend a round trip away (a remote's transfer,
	 * a turn's objects on PostgreSQL). Optional: NULL, and the library
	 * calls the one-object slots above in a loop instead.
	 */
	/**
	 * have[i] = 1 when ids[i] is stored, else 0. tx as read_stored's.
	 * Sees only what the backend lets this caller see (PostgreSQL: its
	 * org's rows), never whether anyone else holds an object.
	 */
	int (*exists_many)(struct aptix_odb_backend *b, aptix_backend_txn *tx,
			   const aptix_oid *ids, size_t n, unsigned char *have);
	/**
	 * The stored forms of those of ids that are stored, to cb (id,
	 * bytes valid during the call), in no particular order; ids not
	 * stored are skipped. A non-zero return of cb stops and is
	 * returned (APTIX_ITEROVER: 0).
	 */
	int (*read_stored_many)(struct aptix_odb_backend *b,
				aptix_backend_txn *tx, const aptix_oid *ids,
				size_t n,
				int (*cb)(const aptix_oid *id, const void *val,
					  size_t len, void *payload),
				void *payload);
	/**
	 * Inside tx: write_stored of each (ids[i], vals[i], lens[i]), in
	 * one go. A base one names must be stored or earlier in the batch.
	 */
	int (*write_stored_many)(struct aptix_odb_backend *b,
				 aptix_backend_txn *tx, const aptix_oid *ids,
				 const void *const *vals, const size_t *lens,
				 size_t n);
	/**
	 * Before the transaction that will write these stored forms (NULL:
	 * nothing to do): a backend that keeps some values elsewhere (S3)
	 * puts them there now, so that no transaction waits on it; the
	 * write_stored(_many) of the same values then uses what was put.
	 * Idempotent, and optional: a write never prepared still works.
	 */
	int (*prepare_stored)(struct aptix_odb_backend *b, const aptix_oid *ids,
			      const void *const *vals, const size_t *lens,
			      size_t n);
	/**
	 * Every object in id order from start (NULL: the first), as
	 * foreach_header gives them, with the content of those whose type
	 * is in types (1 << type), as read gives it, from the values met
	 * on the way (no lookup per object). data is NULL for the others,
	 * and for one whose content the walk cannot give (damaged, made of
	 * other objects, or failing the hash check that flags'
	 * APTIX_ODB_READ_VERIFY asks for): read tells why. Optional
	 * (version 5): without it aptix_odb_foreach_object() says
	 * APTIX_PASSTHROUGH.
	 */
	int (*foreach_object)(struct aptix_odb_backend *b,
			      const aptix_oid *start, unsigned types,
			      unsigned flags, aptix_odb_foreach_object_cb cb,
			      void *payload);
	/**
	 * Every object, its ids in order to id_cb and its objects to
	 * object_cb in the order that reads the backend fastest, as
	 * aptix_odb_foreach_all() says. Optional (version 6).
	 */
	int (*foreach_all)(struct aptix_odb_backend *b, unsigned types,
			   unsigned flags, aptix_odb_foreach_numbered_cb id_cb,
			   aptix_odb_foreach_numbered_cb object_cb,
			   void *payload);
} aptix_odb_backend;

#endif
