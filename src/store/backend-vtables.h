/*
 * src/store/backend-vtables.h - the refdb, index and claims tables of a
 * backend bundle, filled from functions named <prefix><slot>.
 *
 * Every bundle (backend-kv.c, backend-pg.c) names its functions after the
 * slots they fill (ref_lookup, index_put, claim_release, ...), so one
 * list of the slots serves them all and a slot added to a vtable is added
 * here once.
 */
#ifndef APTIX_STORE_BACKEND_VTABLES_H
#define APTIX_STORE_BACKEND_VTABLES_H

#include "aptix/sys/refdb_backend.h"
#include "aptix/sys/index_backend.h"
#include "aptix/sys/claims_backend.h"
#include "aptix/sys/odb_backend.h"

#define APTIX__REFDB_BACKEND_OF(p) {					\
	.version = APTIX_REFDB_BACKEND_VERSION,				\
	.lookup = p##lookup, .iterate = p##iterate, .update = p##update, \
	.reflog_append = p##reflog_append,				\
	.reflog_foreach = p##reflog_foreach,				\
	.reflog_iterate = p##reflog_iterate,				\
}

#define APTIX__INDEX_BACKEND_OF(p) {					\
	.version = APTIX_INDEX_BACKEND_VERSION,				\
	.get = p##get, .view = p##view, .iterate = p##iterate,		\
	.put = p##put, .del = p##del, .count = p##count,		\
}

#define APTIX__CLAIMS_BACKEND_OF(p) {					\
	.version = APTIX_CLAIMS_BACKEND_VERSION,			\
	.lookup = p##lookup, .iterate = p##iterate,			\
	.acquire = p##acquire, .replace = p##replace,			\
	.release = p##release,						\
}

/*
 * The refdb, index and claims tables of the bundle <name>: <name>_refdb,
 * <name>_index and <name>_claims, from its ref_*, index_* and claim_*
 * functions.
 */
#define APTIX__DOMAIN_VTABLES(name)					\
static const aptix_refdb_backend name##_refdb =				\
	APTIX__REFDB_BACKEND_OF(ref_);					\
static const aptix_index_backend name##_index =				\
	APTIX__INDEX_BACKEND_OF(index_);				\
static const aptix_claims_backend name##_claims =			\
	APTIX__CLAIMS_BACKEND_OF(claim_)

/*
 * A bundle's claim replace and release slots, over its own
 * claim_cas(b, tx, conv, old, record): replace needs a record, release is
 * the compare-and-swap to nothing.
 */
#define APTIX__CLAIMS_CAS_SLOTS(cas)					\
static int claim_replace(aptix_claims_backend *b, aptix_backend_txn *tx, \
			 const char *conv, const char *old,		\
			 const char *record)				\
{									\
	return record ? cas(b, tx, conv, old, record) : APTIX_EINVALID; \
}									\
static int claim_release(aptix_claims_backend *b, aptix_backend_txn *tx, \
			 const char *conv, const char *old)		\
{									\
	return cas(b, tx, conv, old, NULL);				\
}

/*
 * A claims backend's failure r with the message every backend gives:
 * APTIX_EEXISTS, conv is claimed (acquire); APTIX_ENOTFOUND, it is not
 * (replace, release); APTIX_EMISMATCH, the claim changed hands since it
 * was read. Returns r.
 */
int aptix__claim_error(int r, const char *conv);

/*
 * An object backend's write slot over its write_stored: data encoded
 * (objects-format.md, "Storage") and kept in a transaction of be's own.
 */
int aptix__odb_write_encoded(aptix_backend *be, aptix_odb_backend *odb,
			     const aptix_oid *id, const void *data, size_t len,
			     aptix_otype type);

/*
 * An object backend's read slot over its read_stored (outside any
 * transaction): the value decoded, its bases read through odb->read.
 */
int aptix__odb_read_decoded(aptix_buf *out, aptix_otype *type,
			    aptix_odb_backend *odb, const aptix_oid *id);

#endif
