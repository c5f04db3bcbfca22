/*
 * src/store/backend-kv.h - a storage backend over a key-value store
 * (backend-kv.c): the domain vtables of aptix/sys/backend.h laid out in
 * the tables of aptix/sys/store_backend.h. LMDB and memory are this.
 */
#ifndef APTIX_STORE_BACKEND_KV_H
#define APTIX_STORE_BACKEND_KV_H

#include "aptix/sys/backend.h"
#include "aptix/sys/store_backend.h"

/*
 * A backend named name over store, which it owns from then on (freed
 * with it, also when this fails). layout: the store's layout version.
 */
int aptix_backend_kv_new(aptix_backend **out, aptix_store *store,
			 const char *name, unsigned layout);
/* The key-value store under b; NULL when b is not over one. */
aptix_store *aptix_backend_kv_store(aptix_backend *b);
/*
 * The store's write transaction under tx; NULL when tx is not one of a
 * key-value backend (what only such a store keeps, the RAG and purge
 * tables, is then out of reach).
 */
aptix_store_wtxn *aptix_backend_kv_wtxn(aptix_backend_txn *tx);
/* The error for a tx of another backend given to a key-value slot. */
int aptix_backend_kv_foreign(aptix_backend_txn *tx);
/*
 * The time of the reflog record val (an entry, or a link to one:
 * objects-format.md, "reflog"): 0, or APTIX_ECORRUPT.
 */
int aptix_backend_kv_reflog_time(int64_t *time_ms, const void *val,
				 size_t vlen);
/*
 * Hand over the store: b is freed without it; the caller owns it again.
 */
void aptix_backend_kv_release_store(aptix_backend *b);

#endif
