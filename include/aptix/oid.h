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
/** @brief The value (0..15) of the hex digit c, either case; -1 if none. */
APTIX_EXTERN(int) aptix_hex_value(int c);

/** Length of a UUID in text, "xxxxxxxx-xxxx-xxxx-xxxx-xxxxxxxxxxxx". */
#define APTIX_UUID_STRSZ 36

/**
 * @brief A random (version 4) UUID, as 36 lowercase characters and a NUL.
 * @param[out] out the UUID in text
 * @return 0, or APTIX_ERROR when the system has no randomness to give
 */
APTIX_EXTERN(int) aptix_uuid_v4(char out[APTIX_UUID_STRSZ + 1]);
/**
 * @brief Write the 16 bytes u as a UUID: 36 lowercase characters, a NUL.
 */
APTIX_EXTERN(void) aptix_uuid_format(char out[APTIX_UUID_STRSZ + 1],
				     const unsigned char u[16]);
/**
 * @brief Parse a UUID (32 hex digits, either case, with or without the
 * dashes at their usual places) into 16 bytes.
 * @return 0, or APTIX_EINVALID when s is not one (out is then undefined)
 */
APTIX_EXTERN(int) aptix_uuid_parse(unsigned char u[16], const char *s);

/** SHA-256 of arbitrary bytes (not an object id: no header). */
APTIX_EXTERN(int) aptix_sha256(aptix_oid *out, const void *data, size_t len);
/**
 * SHA-256 of what fd yields from its current offset to EOF, read 64 KiB
 * at a time (for files too large to load). *size (may be NULL) gets the
 * number of bytes hashed. APTIX_ERROR on a read error.
 */
APTIX_EXTERN(int) aptix_sha256_fd(aptix_oid *out, int fd, uint64_t *size);

#endif
