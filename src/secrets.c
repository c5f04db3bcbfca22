/*
 * src/secrets.c - see secrets.h.
 */
#define _GNU_SOURCE 1	/* memmem */
#include "common.h"
#include "secrets.h"

static int holds(const void *data, size_t len, const char *key)
{
	size_t klen = key ? strlen(key) : 0;

	return klen >= 8 && klen <= len && memmem(data, len, key, klen);
}

int aptix__holds_secret(const void *data, size_t len,
			const char *const *keys, size_t nkeys)
{
	size_t i;

	for (i = 0; i < nkeys; i++)
		if (holds(data, len, keys[i]))
			return 1;
	return 0;
}
