/*
 * src/txn/txn.h - a write transaction of the repository, internal (txn.c).
 */
#ifndef APTIX_SRC_TXN_H
#define APTIX_SRC_TXN_H

#include "index/index.h"

/* Size of an object queued in tx or stored (header only). */
int aptix_txn__object_size(size_t *size, aptix_txn *tx, const aptix_oid *id);
/*
 * Queue a blob stored spliced (objects-format.md, "Storage"): where the
 * JSON-escaped text of one of the bases (blobs already stored or queued)
 * appears in data, a reference to it is stored instead.
 */
int aptix_txn_write_blob_against(aptix_oid *out, aptix_txn *tx,
				 const void *data, size_t len,
				 const aptix_oid *bases, size_t nbases,
				 const aptix_oid *like);
/*
 * Queue an object deflated against like, an object of the same type
 * that is probably much like it (the parent's turn, the file's previous
 * version), when that saves a quarter of its size (objects-format.md,
 * "Based values"). like NULL, missing or unreadable: as
 * aptix_txn_write_object.
 */
int aptix_txn_write_object_like(aptix_oid *out, aptix_txn *tx,
				aptix_otype type, const void *data,
				size_t len, const aptix_oid *like);
/*
 * The same for a turn or session that the library has just serialized
 * from its struct (aptix_turn_serialize, aptix_session_serialize): it is
 * not parsed again to be validated. turn: the turn a session names, when
 * the caller has it (its index record is then made from it, not from a
 * parse of the stored turn); NULL otherwise.
 */
int aptix_txn__write_built(aptix_oid *out, aptix_txn *tx, aptix_otype type,
			   const void *data, size_t len,
			   const aptix_oid *like, const aptix_turn *turn);

/*
 * Queue an object in its stored form val, as another store keeps it (a
 * remote's transfer): decoded and checked against id (ECORRUPT), its
 * bases read from tx or the store; a session's index records are made
 * from it, as aptix_txn_write_object() does.
 */
int aptix_txn__write_stored(aptix_txn *tx, const aptix_oid *id,
			    const void *val, size_t len);

/* The running table (txn.c, run.c). */
int aptix_txn__running_claim(aptix_txn *tx, const char *conv,
			     const char *record);
/* strict: fail with APTIX_ENOTFOUND when the claim is not there. */
int aptix_txn__running_release(aptix_txn *tx, const char *conv,
			       const aptix_oid *pending_turn, int strict);
/*
 * Queue an index record put in table t (a record kept by its writer,
 * such as an import's source key: index-imports.c), applied in order
 * with the rest.
 */
int aptix_txn__index_put(aptix_txn *tx, aptix_index_table t,
			 const void *key, size_t klen, const void *val,
			 size_t vlen);
/* Check, at commit, that a ref holds old_id (NULL: that it is absent). */
int aptix_txn__ref_verify(aptix_txn *tx, const char *name,
			  const aptix_oid *old_id);
/*
 * The commit need not be durable on its own: the next durable write
 * makes it so (aptix/sys/store_backend.h, wdefer_sync). Only for a
 * write that nobody is told is committed.
 */
void aptix_txn__defer_sync(aptix_txn *tx);
/*
 * Check, when tx commits, that id is in the store (inside the write:
 * an object seen before is not written again, and aptix gc may delete
 * it before the commit if nothing reached it); APTIX_ENOTFOUND then,
 * and nothing is written.
 */
int aptix_txn__require_object(aptix_txn *tx, const aptix_oid *id);
/*
 * Objects written one call an object even where the backend takes
 * batches (write_stored_many): what a batch saves is measured so.
 */
void aptix_txn__row_by_row(aptix_txn *tx);

/*
 * Savepoints: aptix_txn__mark() names what tx has queued so far;
 * aptix_txn__rollback() drops everything queued after it (a batch of
 * several records that finds one of them was stored already).
 * aptix_txn__queued_before() tells whether the object id was queued
 * before the mark (1) or not (0).
 */
size_t aptix_txn__mark(const aptix_txn *tx);
int aptix_txn__rollback(aptix_txn *tx, size_t mark);
int aptix_txn__queued_before(const aptix_txn *tx, const aptix_oid *id,
			     size_t mark);

#endif
