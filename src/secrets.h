/*
 * src/secrets.h - keeping the API keys out of everything aptix stores or
 * sends: files and chunks holding the value of a key are not sent,
 * indexed nor stored. The library reads no key from the environment:
 * the caller names the keys it was given.
 */
#ifndef APTIX_SECRETS_H
#define APTIX_SECRETS_H

#include <stddef.h>

/*
 * 1 when data holds one of the nkeys keys (NULL entries and keys of
 * fewer than 8 characters are ignored).
 */
int aptix__holds_secret(const void *data, size_t len,
			const char *const *keys, size_t nkeys);

#endif
