/*
 * aptix/oid.h - object ids: SHA-256 of "<type> <size>\0<content>".
 */
#ifndef APTIX_OID_H
#define APTIX_OID_H

#include "common.h"

#define APTIX_OID_RAWSZ 32
#define APTIX_OID_HEXSZ 64
/** Shortest abbreviation accepted by aptix_odb_resolve_prefix(). */
#define APTIX_OID_MINPREFIX 4

typedef struct {
	unsigned char id[APTIX_OID_RAWSZ];
} aptix_oid;

/** Parse exactly 64 hex digits (either case). APTIX_EINVALID otherwise. */
APTIX_EXTERN(int) aptix_oid_fromstr(aptix_oid *out, const char *hex);
/**
 * Parse the first len (<= 64) hex digits into out, zero-filling the rest.
 * APTIX_EINVALID when a character is not a hex digit.
 */
APTIX_EXTERN(int) aptix_oid_fromstrn(aptix_oid *out, const char *hex,
				     size_t len);
/** Write 64 lowercase hex digits and a NUL into out. Returns out. */
APTIX_EXTERN(char *) aptix_oid_tostr(char out[APTIX_OID_HEXSZ + 1],
				     const aptix_oid *id);
/** A static buffer per thread (4 rotating slots) for messages. */
APTIX_EXTERN(const char *) aptix_oid_hex(const aptix_oid *id);
APTIX_EXTERN(int) aptix_oid_cmp(const aptix_oid *a, const aptix_oid *b);
APTIX_EXTERN(int) aptix_oid_is_zero(const aptix_oid *id);
/** True when s is a run of n hex digits (no NUL within n). */
APTIX_EXTERN(int) aptix_is_hex(const char *s, size_t n);

/** SHA-256 of arbitrary bytes (not an object id: no header). */
APTIX_EXTERN(int) aptix_sha256(aptix_oid *out, const void *data, size_t len);
/**
 * SHA-256 of what fd yields from its current offset to EOF, read 64 KiB
 * at a time (for files too large to load). *size (may be NULL) gets the
 * number of bytes hashed. APTIX_ERROR on a read error.
 */
APTIX_EXTERN(int) aptix_sha256_fd(aptix_oid *out, int fd, uint64_t *size);

#endif
