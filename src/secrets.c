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

int aptix__holds_secret(const void *data, size_t len, const char *extra)
{
	return holds(data, len, getenv("OPENAI_API_KEY")) ||
		holds(data, len, getenv("QDRANT_API_KEY")) ||
		holds(data, len, extra);
}
