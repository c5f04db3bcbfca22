/*
 * src/zstream.h - the stored form of an object (objects-format.md,
 * "Storage"): a flag-and-type byte, the content size as a LEB128
 * varint, then the content, zlib-compressed unless that saves nothing.
 */
#ifndef APTIX_ZSTREAM_H
#define APTIX_ZSTREAM_H

#include "aptix/object.h"

#define APTIX_STORED_RAW 0x80

/** Compression level used for new objects (measured in `make bench`). */
extern int aptix_zlib_level;

/** Encode content into out (replacing what it held). */
int aptix_stored_encode(aptix_buf *out, aptix_otype type, const void *data,
			size_t len);
/** Header only: type and size. ECORRUPT when malformed. */
int aptix_stored_header(aptix_otype *type, size_t *size, size_t *hdrlen,
			const void *val, size_t vlen);
/** Decode into out. ECORRUPT when damaged or truncated. */
int aptix_stored_decode(aptix_buf *out, aptix_otype *type, const void *val,
			size_t vlen);

#endif
