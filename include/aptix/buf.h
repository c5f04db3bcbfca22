/*
 * aptix/buf.h - the one growable, binary-safe string buffer.
 *
 * Invariants: ptr is never NULL and always NUL-terminated; len excludes the
 * NUL. An allocation failure (or exceeding max, when max != 0) puts the
 * buffer in a sticky error state: later appends do nothing and
 * aptix_buf_oom() reports it, so callers may append several times and
 * check once.
 */
#ifndef APTIX_BUF_H
#define APTIX_BUF_H

#include <stdarg.h>
#include "common.h"

typedef struct {
	char *ptr;
	size_t len, alloc;
	size_t max;	/**< 0: unbounded; else appends beyond it fail */
} aptix_buf;

APTIX_EXTERN(char) aptix_buf__initbuf[];
APTIX_EXTERN(char) aptix_buf__oombuf[];

#define APTIX_BUF_INIT { aptix_buf__initbuf, 0, 0, 0 }

APTIX_EXTERN(void) aptix_buf_init(aptix_buf *b, size_t hint);
/** Free the memory; the buffer is reset to APTIX_BUF_INIT. */
APTIX_EXTERN(void) aptix_buf_release(aptix_buf *b);
/** Empty the buffer, keeping its memory. */
APTIX_EXTERN(void) aptix_buf_clear(aptix_buf *b);
/** Take ownership of the string; the buffer is reset. Caller frees. */
APTIX_EXTERN(char *) aptix_buf_detach(aptix_buf *b);
/** 0 on success, -1 (APTIX_EFULL set in the error) when out of space. */
APTIX_EXTERN(int) aptix_buf_grow(aptix_buf *b, size_t extra);
APTIX_EXTERN(int) aptix_buf_put(aptix_buf *b, const void *data, size_t len);
APTIX_EXTERN(int) aptix_buf_puts(aptix_buf *b, const char *s);
APTIX_EXTERN(int) aptix_buf_putc(aptix_buf *b, char c);
APTIX_EXTERN(int) aptix_buf_printf(aptix_buf *b, const char *fmt, ...)
	APTIX_FORMAT(2, 3);
APTIX_EXTERN(int) aptix_buf_vprintf(aptix_buf *b, const char *fmt,
				    va_list ap);
APTIX_EXTERN(void) aptix_buf_truncate(aptix_buf *b, size_t len);
/** Replace the content with len bytes of data. */
APTIX_EXTERN(int) aptix_buf_set(aptix_buf *b, const void *data, size_t len);
/** Non-zero once an allocation failed or max was exceeded. */
APTIX_EXTERN(int) aptix_buf_oom(const aptix_buf *b);
/**
 * Read a whole file descriptor until EOF. Returns 0, or APTIX_ERROR
 * (read error) / APTIX_EFULL (larger than b->max).
 */
APTIX_EXTERN(int) aptix_buf_read_fd(aptix_buf *b, int fd);
/** Read a whole file by path. APTIX_ENOTFOUND when it does not exist. */
APTIX_EXTERN(int) aptix_buf_read_file(aptix_buf *b, const char *path);

/**
 * @brief Length of the well-formed UTF-8 sequence at s (1 to 4 bytes;
 *        1 for ASCII, NUL included), or 0 when the bytes there are not
 *        well-formed UTF-8 (stray continuation, overlong form, surrogate,
 *        beyond U+10FFFF, or a sequence cut by the end of avail).
 * @param avail bytes readable at s (at least 1)
 */
APTIX_EXTERN(size_t) aptix_utf8_seqlen(const unsigned char *s, size_t avail);
/** @brief Whether s[0..len) is well-formed UTF-8 holding no NUL byte. */
APTIX_EXTERN(int) aptix_utf8_valid(const char *s, size_t len);
/**
 * @brief Where to cut s[0..len) to keep at most max bytes without
 * splitting a UTF-8 sequence: len when it fits, else max moved back to
 * the start of the sequence it falls in.
 */
APTIX_EXTERN(size_t) aptix_utf8_cut(const char *s, size_t len, size_t max);
/**
 * @brief Append a file path as git quotes one (quote_c_style, with
 *        core.quotePath off): as it is, unless it holds a control
 *        character (C0, DEL, or a UTF-8-encoded C1), a byte that is not
 *        well-formed UTF-8, '"' or '\\'; then in double quotes, with
 *        \a \b \t \n \v \f \r \" \\ and \ooo (octal) for the other
 *        bytes. So a name can neither forge a line nor drive a terminal
 *        wherever it is shown, to a person or to the model.
 */
APTIX_EXTERN(int) aptix_buf_put_path(aptix_buf *b, const char *path);

#endif
