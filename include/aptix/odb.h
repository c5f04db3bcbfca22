/*
 * aptix/odb.h - the object database front end.
 *
 * The front end computes ids and owns the object format; backends (see
 * aptix/sys/odb_backend.h) only store and fetch bytes by id. Backends are
 * tried in priority order.
 */
#ifndef APTIX_ODB_H
#define APTIX_ODB_H

#include "common.h"
#include "buf.h"
#include "oid.h"
#include "object.h"

typedef struct aptix_odb aptix_odb;
struct aptix_odb_backend;

/** Create an empty object database with no backend. */
APTIX_EXTERN(int) aptix_odb_new(aptix_odb **out);
/** Free the database and its backends. Accepts NULL. */
APTIX_EXTERN(void) aptix_odb_free(aptix_odb *odb);
/**
 * Add a backend; the odb takes ownership. Higher priority is tried first.
 * A read-only (alternate) backend is never written to.
 */
APTIX_EXTERN(int) aptix_odb_add_backend(aptix_odb *odb,
					struct aptix_odb_backend *b,
					int priority, int read_only);

enum aptix_odb_read_flags {
	APTIX_ODB_READ_VERIFY = (1 << 0)	/**< re-hash, EMISMATCH if off */
};

/**
 * @brief Read an object's content into out (replacing what it held).
 * @return 0; APTIX_ENOTFOUND; APTIX_ECORRUPT when the stored bytes are
 *         damaged; APTIX_EMISMATCH (with VERIFY) when they do not hash
 *         to the id.
 */
APTIX_EXTERN(int) aptix_odb_read(aptix_buf *out, aptix_otype *type_out,
				 aptix_odb *odb, const aptix_oid *id,
				 unsigned flags);
/** Type and size without reading the content. */
APTIX_EXTERN(int) aptix_odb_read_header(size_t *size_out,
					aptix_otype *type_out,
					aptix_odb *odb, const aptix_oid *id);
/** 1 if present, 0 if not. */
APTIX_EXTERN(int) aptix_odb_exists(aptix_odb *odb, const aptix_oid *id);
/**
 * @brief Hash and store an object; storing one that exists is a no-op.
 * @param[out] out the id (may be NULL)
 */
APTIX_EXTERN(int) aptix_odb_write(aptix_oid *out, aptix_odb *odb,
				  aptix_otype type, const void *data,
				  size_t len);
/**
 * @brief Expand an abbreviated id of hexlen (>= 4) hex digits.
 * @return 0; APTIX_ENOTFOUND; APTIX_EAMBIGUOUS when several match.
 */
APTIX_EXTERN(int) aptix_odb_resolve_prefix(aptix_oid *out, aptix_odb *odb,
					   const char *hex, size_t hexlen);

/**
 * @brief The shortest abbreviation of id, at least min (>= 4) digits,
 *        that names no other object (git's find_unique_abbrev()).
 * @param[out] out NUL-terminated hex digits
 * @return 0, or an error of the backends.
 */
APTIX_EXTERN(int) aptix_odb_abbrev(char out[APTIX_OID_HEXSZ + 1],
				   aptix_odb *odb, const aptix_oid *id,
				   size_t min);

typedef int (*aptix_odb_foreach_cb)(const aptix_oid *id, void *payload);
/** Call cb for every object in id order; a non-zero return stops. */
APTIX_EXTERN(int) aptix_odb_foreach(aptix_odb *odb, aptix_odb_foreach_cb cb,
				    void *payload);

typedef int (*aptix_odb_foreach_header_cb)(const aptix_oid *id,
					   aptix_otype type, size_t size,
					   void *payload);
/**
 * @brief Every object in id order with its type and size, as
 * aptix_odb_read_header() gives them, in one pass over the store (one
 * lookup per object fewer: fsck). An object whose type is not known
 * that way (its header is damaged, or a backend cannot say) comes with
 * APTIX_OBJ_BAD and size 0: aptix_odb_read_header() says why.
 * @return 0; what cb returns; an error of the backends.
 */
APTIX_EXTERN(int) aptix_odb_foreach_header(aptix_odb *odb,
					   aptix_odb_foreach_header_cb cb,
					   void *payload);

typedef int (*aptix_odb_foreach_object_cb)(const aptix_oid *id,
					   aptix_otype type, const void *data,
					   size_t len, void *payload);
/** For aptix_odb_foreach_object(): the content of objects of type t. */
#define APTIX_ODB_TYPE(t) (1u << (t))
/**
 * @brief Every object in id order from start (NULL: the first) with
 * its type (as aptix_odb_foreach_header() gives it) and, when its type
 * is one of types (APTIX_ODB_TYPE() bits), its content as
 * aptix_odb_read() gives it, read in the same pass (fsck: no lookup
 * per object). data is NULL for the other objects, and for one whose
 * content is not to be had that way (damaged, made of other objects,
 * or failing the hash check of APTIX_ODB_READ_VERIFY in flags):
 * aptix_odb_read() gives it, or says why. data is valid during the
 * call, and cb must not read the store (a damaged page met by that
 * read would end the walk): it can stop the walk, read, and start a
 * new walk past the object.
 * @return 0; what cb returns (non-zero stops); APTIX_PASSTHROUGH when a
 * backend has no such walk (cb never called: read each object); an
 * error of the backends.
 */
APTIX_EXTERN(int) aptix_odb_foreach_object(aptix_odb *odb,
					   const aptix_oid *start,
					   unsigned types, unsigned flags,
					   aptix_odb_foreach_object_cb cb,
					   void *payload);

typedef int (*aptix_odb_foreach_numbered_cb)(size_t n, const aptix_oid *id,
					     aptix_otype type,
					     const void *data, size_t len,
					     void *payload);
/**
 * @brief Every object, for a walk that reads them all, in the order
 * that reads the store fastest (fsck --connectivity-only): id_cb gets
 * each id in id order with its number n (0 for the first; type
 * APTIX_OBJ_BAD, data NULL), then object_cb each object with its
 * number, after its id but in no given order (id NULL when the walk
 * does not have it at hand), its type and data as
 * aptix_odb_foreach_object() gives them. An LMDB store reads each of
 * its pages once, the values in the order they were written, and lets
 * go of the pages read as it goes. object_cb NULL: the ids alone, no
 * object read. cb must not read the store, as for
 * aptix_odb_foreach_object().
 * @return 0; what a callback returns (non-zero stops);
 * APTIX_PASSTHROUGH when odb has not exactly one backend, or its
 * backend no such walk (no callback called); an error of the backend.
 */
APTIX_EXTERN(int) aptix_odb_foreach_all(aptix_odb *odb, unsigned types,
					unsigned flags,
					aptix_odb_foreach_numbered_cb id_cb,
					aptix_odb_foreach_numbered_cb object_cb,
					void *payload);

/** An in-memory backend, for tests and scratch work. */
APTIX_EXTERN(int) aptix_odb_backend_mem(struct aptix_odb_backend **out);

#endif
