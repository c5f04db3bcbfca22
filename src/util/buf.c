/*
 * src/util/buf.c - the growable string buffer (see aptix/buf.h).
 */
#include "util/common.h"
#include <fcntl.h>
#include <unistd.h>

char aptix_buf__initbuf[1];
char aptix_buf__oombuf[1];

void aptix_buf_init(aptix_buf *b, size_t hint)
{
	b->ptr = aptix_buf__initbuf;
	b->len = b->alloc = b->max = 0;
	if (hint)
		aptix_buf_grow(b, hint);
}

void aptix_buf_release(aptix_buf *b)
{
	if (b->alloc)
		free(b->ptr);
	b->ptr = aptix_buf__initbuf;
	b->len = b->alloc = 0;
}

void aptix_buf_clear(aptix_buf *b)
{
	if (b->ptr == aptix_buf__oombuf) {
		b->ptr = aptix_buf__initbuf;
		b->alloc = 0;
	}
	b->len = 0;
	if (b->alloc)
		b->ptr[0] = '\0';
}

char *aptix_buf_detach(aptix_buf *b)
{
	char *p;

	if (b->ptr == aptix_buf__oombuf)
		return NULL;
	if (!b->alloc) {
		p = aptix__strdup("");
	} else {
		p = b->ptr;
	}
	b->ptr = aptix_buf__initbuf;
	b->len = b->alloc = 0;
	return p;
}

int aptix_buf_oom(const aptix_buf *b)
{
	return b->ptr == aptix_buf__oombuf;
}

static int buf_fail(aptix_buf *b, int toobig)
{
	if (b->alloc)
		free(b->ptr);
	b->ptr = aptix_buf__oombuf;
	b->len = b->alloc = 0;
	if (toobig) {
		aptix_error_set(APTIX_ERROR_INVALID,
				"data exceeds the limit of %zu bytes", b->max);
		return APTIX_EFULL;
	}
	return aptix_error_oom();
}

int aptix_buf_grow(aptix_buf *b, size_t extra)
{
	size_t need, nalloc;
	char *p;

	if (b->ptr == aptix_buf__oombuf)
		return APTIX_ERROR;
	if (extra > SIZE_MAX - b->len - 1)
		return buf_fail(b, 0);
	need = b->len + extra + 1;
	if (b->max && need - 1 > b->max)
		return buf_fail(b, 1);
	if (need <= b->alloc)
		return 0;
	nalloc = b->alloc ? b->alloc : 64;
	while (nalloc < need)
		nalloc = nalloc > SIZE_MAX / 2 ? need : nalloc * 3 / 2 + 16;
	p = realloc(b->alloc ? b->ptr : NULL, nalloc);
	if (!p)
		return buf_fail(b, 0);
	if (!b->alloc)
		p[0] = '\0';
	b->ptr = p;
	b->alloc = nalloc;
	return 0;
}

int aptix_buf_put(aptix_buf *b, const void *data, size_t len)
{
	/* room already (alloc is 0 for the empty and the failed buffer) */
	if (len < b->alloc - b->len && (!b->max || b->len + len <= b->max)) {
		memmove(b->ptr + b->len, data, len);
		b->len += len;
		b->ptr[b->len] = '\0';
		return 0;
	}
	if (aptix_buf_grow(b, len) < 0)
		return b->max ? APTIX_EFULL : APTIX_ERROR;
	if (len)
		memmove(b->ptr + b->len, data, len);
	b->len += len;
	b->ptr[b->len] = '\0';
	return 0;
}

int aptix_buf_puts(aptix_buf *b, const char *s)
{
	return aptix_buf_put(b, s, strlen(s));
}

int aptix_buf_putc(aptix_buf *b, char c)
{
	return aptix_buf_put(b, &c, 1);
}

int aptix_buf_vprintf(aptix_buf *b, const char *fmt, va_list ap)
{
	va_list cp;
	int n;

	va_copy(cp, ap);
	n = vsnprintf(NULL, 0, fmt, cp);
	va_end(cp);
	if (n < 0)
		return APTIX_ERROR;
	if (aptix_buf_grow(b, (size_t)n) < 0)
		return b->max ? APTIX_EFULL : APTIX_ERROR;
	vsnprintf(b->ptr + b->len, (size_t)n + 1, fmt, ap);
	b->len += (size_t)n;
	return 0;
}

int aptix_buf_printf(aptix_buf *b, const char *fmt, ...)
{
	va_list ap;
	int r;

	va_start(ap, fmt);
	r = aptix_buf_vprintf(b, fmt, ap);
	va_end(ap);
	return r;
}

void aptix_buf_truncate(aptix_buf *b, size_t len)
{
	if (len < b->len && b->alloc) {
		b->len = len;
		b->ptr[len] = '\0';
	}
}

int aptix_buf_set(aptix_buf *b, const void *data, size_t len)
{
	aptix_buf_clear(b);
	return aptix_buf_put(b, data, len);
}

int aptix_buf_read_fd(aptix_buf *b, int fd)
{
	size_t want;
	ssize_t n;
	char extra;

	for (;;) {
		want = 65536;
		if (b->max && b->len <= b->max && b->max - b->len < want)
			want = b->max - b->len;
		if (b->max && !want) {
			/* at the cap: only EOF may follow */
			n = read(fd, &extra, 1);
			if (n < 0 && errno == EINTR)
				continue;
			if (n < 0) {
				aptix_error_set_os("read error");
				return APTIX_ERROR;
			}
			if (n > 0)
				return buf_fail(b, 1);
			break;
		}
		if (aptix_buf_grow(b, want) < 0)
			return b->max ? APTIX_EFULL : APTIX_ERROR;
		n = read(fd, b->ptr + b->len, b->alloc - b->len - 1);
		if (n < 0) {
			if (errno == EINTR)
				continue;
			aptix_error_set_os("read error");
			return APTIX_ERROR;
		}
		if (n == 0)
			break;
		b->len += (size_t)n;
		if (b->max && b->len > b->max)
			return buf_fail(b, 1);
		b->ptr[b->len] = '\0';
	}
	return 0;
}

int aptix_buf_read_file(aptix_buf *b, const char *path)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	int r;

	if (fd < 0) {
		int notfound = errno == ENOENT;

		aptix_error_set_os("cannot open '%s'", path);
		return notfound ? APTIX_ENOTFOUND : APTIX_ERROR;
	}
	r = aptix_buf_read_fd(b, fd);
	close(fd);
	return r;
}
