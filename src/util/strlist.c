/*
 * src/util/strlist.c - lists of malloc'ed strings: aptix_strlist
 * (aptix/strlist.h), and the char **v; size_t n pairs of the public
 * structs, which share its code (aptix__strv_*, src/util/common.h).
 */
#include "util/common.h"
#include "aptix/strlist.h"

/* Append s, which the list takes over; s is freed on failure. */
static int strv_take(char ***v, size_t *n, char *s)
{
	char **nv;

	if (!s)
		return APTIX_ERROR;
	if (!(nv = aptix__realloc(*v, (*n + 1) * sizeof(*nv)))) {
		free(s);
		return APTIX_ERROR;
	}
	nv[(*n)++] = s;
	*v = nv;
	return 0;
}

int aptix__strv_push(char ***v, size_t *n, const char *s)
{
	return strv_take(v, n, aptix__strdup(s));
}

int aptix__strv_vpushf(char ***v, size_t *n, const char *fmt, va_list ap)
{
	aptix_buf msg = APTIX_BUF_INIT;

	if (aptix_buf_vprintf(&msg, fmt, ap) < 0 || aptix_buf_oom(&msg)) {
		aptix_buf_release(&msg);
		return aptix_error_oom();
	}
	return strv_take(v, n, aptix_buf_detach(&msg));
}

void aptix__strv_clear(char ***v, size_t *n)
{
	size_t i;

	for (i = 0; i < *n; i++)
		free((*v)[i]);
	free(*v);
	*v = NULL;
	*n = 0;
}

int aptix__strv_copy(char ***dst, size_t *dn, char *const *src, size_t n)
{
	char **v = NULL;
	size_t i, k = 0;

	for (i = 0; i < n; i++) {
		if (aptix__strv_push(&v, &k, src[i]) < 0) {
			aptix__strv_clear(&v, &k);
			return APTIX_ERROR;
		}
	}
	aptix__strv_clear(dst, dn);
	*dst = v;
	*dn = k;
	return 0;
}

void aptix_strlist_init(aptix_strlist *l)
{
	l->items = NULL;
	l->nr = 0;
}

void aptix_strlist_release(aptix_strlist *l)
{
	aptix__strv_clear(&l->items, &l->nr);
}

int aptix_strlist_push(aptix_strlist *l, const char *s)
{
	return aptix__strv_push(&l->items, &l->nr, s);
}

int aptix_strlist_vpushf(aptix_strlist *l, const char *fmt, va_list ap)
{
	return aptix__strv_vpushf(&l->items, &l->nr, fmt, ap);
}

int aptix_strlist_pushf(aptix_strlist *l, const char *fmt, ...)
{
	va_list ap;
	int r;

	va_start(ap, fmt);
	r = aptix_strlist_vpushf(l, fmt, ap);
	va_end(ap);
	return r;
}

int aptix_strlist_copy(aptix_strlist *dst, const aptix_strlist *src)
{
	return aptix__strv_copy(&dst->items, &dst->nr, src->items, src->nr);
}
