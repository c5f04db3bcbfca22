/*
 * aptix/strlist.h - the one list of malloc'ed strings.
 *
 * A plain struct the caller holds: APTIX_STRLIST_INIT or
 * aptix_strlist_init(), then aptix_strlist_release(). Every string in it
 * is a copy the list owns. The library's own lists of warnings and
 * errors (char **warnings; size_t nwarnings in aptix_turn, aptix_file_set,
 * aptix_run_result...) are grown and freed by the same code.
 */
#ifndef APTIX_STRLIST_H
#define APTIX_STRLIST_H

#include <stdarg.h>
#include "common.h"

typedef struct {
	char **items;	/**< nr malloc'ed strings; NULL when nr is 0 */
	size_t nr;
} aptix_strlist;

#define APTIX_STRLIST_INIT { NULL, 0 }

/** @brief Make l an empty list (the same as APTIX_STRLIST_INIT). */
APTIX_EXTERN(void) aptix_strlist_init(aptix_strlist *l);
/** @brief Free every string and the array; l is empty and reusable. */
APTIX_EXTERN(void) aptix_strlist_release(aptix_strlist *l);
/**
 * @brief Append a copy of s.
 * @return 0, or APTIX_ERROR when out of memory (l is unchanged)
 */
APTIX_EXTERN(int) aptix_strlist_push(aptix_strlist *l, const char *s);
/**
 * @brief Append a formatted string (printf-style).
 * @return 0, or APTIX_ERROR when out of memory (l is unchanged)
 */
APTIX_EXTERN(int) aptix_strlist_pushf(aptix_strlist *l, const char *fmt, ...)
	APTIX_FORMAT(2, 3);
APTIX_EXTERN(int) aptix_strlist_vpushf(aptix_strlist *l, const char *fmt,
				       va_list ap) APTIX_FORMAT(2, 0);
/**
 * @brief Make dst a copy of src (its old strings are freed).
 * @return 0, or APTIX_ERROR when out of memory (dst is then unchanged)
 */
APTIX_EXTERN(int) aptix_strlist_copy(aptix_strlist *dst,
				     const aptix_strlist *src);

#endif
