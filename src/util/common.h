/*
 * src/util/common.h - included first by every library source file.
 */
#ifndef APTIX_SRC_COMMON_H
#define APTIX_SRC_COMMON_H

#ifndef _POSIX_C_SOURCE
# define _POSIX_C_SOURCE 200809L
#endif
#ifndef _DEFAULT_SOURCE
# define _DEFAULT_SOURCE 1
#endif

#include <errno.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "aptix/common.h"
#include "aptix/errors.h"
#include "aptix/buf.h"

#define UNUSED APTIX_UNUSED
#define ARRAY_SIZE(a) (sizeof(a) / sizeof((a)[0]))

#define APTIX_ASSERT_ARG(x) do { \
	if (!(x)) { \
		aptix_error_set(APTIX_ERROR_INVALID, \
				"invalid argument: '%s'", #x); \
		return APTIX_EINVALID; \
	} \
} while (0)

/* Allocation helpers that record an OOM error on failure. */
void *aptix__malloc(size_t n);
void *aptix__calloc(size_t n, size_t sz);
void *aptix__realloc(void *p, size_t n);
/*
 * Make room for element n of the array *pp (alloc elements of size
 * bytes): doubled, first elements the first time. 0, or APTIX_ERROR.
 */
int aptix__grow(void *pp, size_t *alloc, size_t n, size_t size,
		size_t first);
/*
 * Make room for one more entry in the open-addressed table *pp (*cap
 * slots of size bytes, n of them used, a power of two kept at most half
 * full): when full, doubled (first slots the first time), each used
 * entry moved, in slot order, to the first free slot from
 * hash(entry) & (cap - 1) onwards. A free slot is all zero bytes, and
 * used(entry) tells it from a used one. 0, or APTIX_ERROR.
 */
int aptix__hash_reserve(void *pp, size_t *cap, size_t n, size_t size,
			size_t first, uint32_t (*hash)(const void *entry),
			int (*used)(const void *entry));
/*
 * The answer to "is it there?" from the code r of a lookup: 1 when r is
 * 0, 0 when APTIX_ENOTFOUND (its error cleared), r when another error.
 */
int aptix__found(int r);
/* The code r of a lookup with absence no failure: 0 when r is
 * APTIX_ENOTFOUND (its error cleared), else r. */
int aptix__absent_ok(int r);
char *aptix__strdup(const char *s);
char *aptix__strndup(const char *s, size_t n);
/*
 * An ISO 8601 time as a tool writes it ("2026-01-02T03:04:05.678Z"), its
 * fraction of a second kept to the millisecond (aptix_date_parse, for
 * what a user types, reads it to the second). 0, or -1.
 */
int aptix__date_parse_iso_ms(int64_t *ms, const char *text);

/* ln(x) for x > 0, without libm (BM25 scores, entropy). */
double aptix__ln(double x);

/*
 * The char **v; size_t n string lists of the public structs (warnings,
 * errors), grown one string at a time; aptix_strlist is built on these.
 * push and vpushf append a copy (0, or APTIX_ERROR with the list
 * unchanged); copy replaces *dst with copies of src (unchanged on
 * failure); clear frees every string and the array, leaving NULL, 0.
 */
int aptix__strv_push(char ***v, size_t *n, const char *s);
int aptix__strv_vpushf(char ***v, size_t *n, const char *fmt, va_list ap)
	APTIX_FORMAT(3, 0);
int aptix__strv_copy(char ***dst, size_t *dn, char *const *src, size_t n);
void aptix__strv_clear(char ***v, size_t *n);

/* Big-endian integer encoding for keys that must sort numerically. */
/* A cancel flag, set by aptix_cancel() from any thread or a signal
 * handler: read it with an atomic load. */
static inline int aptix__cancelled(const volatile sig_atomic_t *flag)
{
	return flag && __atomic_load_n(flag, __ATOMIC_RELAXED) != 0;
}

static inline void aptix__put_be64(unsigned char *p, uint64_t v)
{
	int i;

	for (i = 7; i >= 0; i--) {
		p[i] = (unsigned char)(v & 0xff);
		v >>= 8;
	}
}

static inline void aptix__put_be32(unsigned char *p, uint32_t v)
{
	p[0] = (unsigned char)(v >> 24);
	p[1] = (unsigned char)(v >> 16);
	p[2] = (unsigned char)(v >> 8);
	p[3] = (unsigned char)v;
}

static inline uint32_t aptix__get_be32(const unsigned char *p)
{
	return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 |
		(uint32_t)p[2] << 8 | p[3];
}

static inline uint64_t aptix__get_be64(const unsigned char *p)
{
	uint64_t v = 0;
	int i;

	for (i = 0; i < 8; i++)
		v = (v << 8) | p[i];
	return v;
}

#include "util/banned.h"

#endif
