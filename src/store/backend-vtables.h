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
	.put = p##put, .del = p##del,					\
}

#define APTIX__CLAIMS_BACKEND_OF(p) {					\
	.version = APTIX_CLAIMS_BACKEND_VERSION,			\
	.lookup = p##lookup, .iterate = p##iterate,			\
	.acquire = p##acquire, .replace = p##replace,			\
	.release = p##release,						\
}

#endif
