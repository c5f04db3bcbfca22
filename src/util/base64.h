/*
 * src/util/base64.h - RFC 4648 base64 (with padding), for bytes carried
 * in JSON text: the blobs of `aptix export --format=json` that are not
 * UTF-8.
 */
#ifndef APTIX_BASE64_H
#define APTIX_BASE64_H

#include "aptix/buf.h"

/** Append the base64 of data to out. @return 0, or APTIX_ERROR (OOM). */
int aptix_base64_encode(aptix_buf *out, const void *data, size_t len);
/**
 * Append the bytes of base64 text to out (padding required, no white
 * space). @return 0; APTIX_EINVALID (error set) when it is not base64.
 */
int aptix_base64_decode(aptix_buf *out, const char *text, size_t len);

#endif
