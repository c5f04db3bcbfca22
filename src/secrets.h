/*
 * src/secrets.h - keeping the API keys out of everything aptix stores or
 * sends: files and chunks holding the value of a key found in the
 * environment are not sent, indexed nor stored.
 */
#ifndef APTIX_SECRETS_H
#define APTIX_SECRETS_H

#include <stddef.h>

/*
 * 1 when data holds the value of OPENAI_API_KEY or QDRANT_API_KEY (or
 * extra, may be NULL), keys of 8 characters or more.
 */
int aptix__holds_secret(const void *data, size_t len, const char *extra);

#endif
