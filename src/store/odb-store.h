/*
 * src/store/odb-store.h - the object backend over a store (internal).
 */
#ifndef APTIX_ODB_STORE_H
#define APTIX_ODB_STORE_H

#include "aptix/sys/odb_backend.h"
#include "aptix/sys/store_backend.h"
#include "aptix/purge.h"

/** A backend reading and writing the store's objects table. */
int aptix_odb_backend_store(aptix_odb_backend **out, aptix_store *store);
/** Inside a write: put an encoded object unless it is there already. */
int aptix_odb_store_put(aptix_store_wtxn *w, const aptix_oid *id,
			const aptix_buf *val);
/** Inside a write: raise the store's format for a value of format 2. */
int aptix_odb_store_note_format(aptix_store_wtxn *w, const aptix_buf *val);
/** The store's format is at least need (raised in this write). */
int aptix_odb_store_raise_format(aptix_store_wtxn *w, int need);
/*
 * A purge record (table "purged", key the 32 raw bytes of the id): u8
 * version (1), u8 kind (1 removed, 2 redacted), be64 time in ms, then
 * the reason in UTF-8. purge.c writes them.
 */
#define PURGE_VERSION 1
#define PURGE_REMOVED 1
#define PURGE_REDACTED 2
/** Decode a purge record: 0 or APTIX_ECORRUPT. */
int aptix__purge_decode(aptix_purge_info *out, const void *val, size_t len);
/** The store a write transaction belongs to. */
aptix_store *aptix_store_of_wtxn(aptix_store_wtxn *w);

#endif
