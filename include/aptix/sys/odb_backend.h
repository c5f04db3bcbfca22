/*
 * aptix/sys/odb_backend.h - what an object database backend implements.
 *
 * Backends store and fetch (type, bytes) by id; they never compute ids.
 * A NULL slot means "not supported". A concrete backend embeds this
 * struct as its first member.
 */
#ifndef APTIX_SYS_ODB_BACKEND_H
#define APTIX_SYS_ODB_BACKEND_H

#include "../odb.h"

#define APTIX_ODB_BACKEND_VERSION 1

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
	void (*free)(struct aptix_odb_backend *b);
} aptix_odb_backend;

#endif
