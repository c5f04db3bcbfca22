/*
 * src/util/error.c - the thread-local last error. Its message is freed when
 * the next error replaces it, or when the thread exits.
 */
#include "util/common.h"
#include <pthread.h>

static _Thread_local aptix_error last_error;
static _Thread_local int last_error_set;
static char oom_message[] = "out of memory";
static pthread_once_t exit_once = PTHREAD_ONCE_INIT;
static pthread_key_t exit_key;
static int exit_key_ok;

/* Thread exit: the key's value is the thread's message. */
static void free_at_exit(void *msg)
{
	if (msg != oom_message)
		free(msg);
}

static void exit_init(void)
{
	exit_key_ok = pthread_key_create(&exit_key, free_at_exit) == 0;
}

const aptix_error *aptix_error_last(void)
{
	static const aptix_error none = { (char *)"no error", 0 };

	if (!last_error_set)
		return &none;
	return &last_error;
}

void aptix_error_clear(void)
{
	if (last_error.message != oom_message)
		free(last_error.message);
	if (last_error.message && exit_key_ok)
		pthread_setspecific(exit_key, NULL);
	last_error.message = NULL;
	last_error.klass = 0;
	last_error_set = 0;
}

static void set_message(int klass, char *msg)
{
	aptix_error_clear();
	last_error.message = msg ? msg : oom_message;
	last_error.klass = msg ? klass : APTIX_ERROR_NOMEMORY;
	last_error_set = 1;
	pthread_once(&exit_once, exit_init);
	if (exit_key_ok)
		pthread_setspecific(exit_key, last_error.message);
}

static char *vformat(const char *fmt, va_list ap, const char *suffix)
{
	va_list cp;
	int n;
	size_t slen = suffix ? strlen(suffix) + 2 : 0;
	char *msg;

	va_copy(cp, ap);
	n = vsnprintf(NULL, 0, fmt, cp);
	va_end(cp);
	if (n < 0)
		return NULL;
	msg = malloc((size_t)n + slen + 1);
	if (!msg)
		return NULL;
	vsnprintf(msg, (size_t)n + 1, fmt, ap);
	if (suffix) {
		memcpy(msg + n, ": ", 2);
		memcpy(msg + n + 2, suffix, slen - 1);
	}
	return msg;
}

void aptix_error_set(int klass, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	set_message(klass, vformat(fmt, ap, NULL));
	va_end(ap);
}

void aptix_error_set_os(const char *fmt, ...)
{
	va_list ap;
	int saved = errno;

	va_start(ap, fmt);
	set_message(APTIX_ERROR_OS, vformat(fmt, ap, strerror(saved)));
	va_end(ap);
	errno = saved;
}

int aptix_error_oom(void)
{
	set_message(APTIX_ERROR_NOMEMORY, NULL);
	return APTIX_ERROR;
}

void *aptix__malloc(size_t n)
{
	void *p = malloc(n ? n : 1);

	if (!p)
		aptix_error_oom();
	return p;
}

void *aptix__calloc(size_t n, size_t sz)
{
	void *p = calloc(n ? n : 1, sz ? sz : 1);

	if (!p)
		aptix_error_oom();
	return p;
}

void *aptix__realloc(void *p, size_t n)
{
	void *q = realloc(p, n ? n : 1);

	if (!q)
		aptix_error_oom();
	return q;
}

int aptix__grow(void *pp, size_t *alloc, size_t n, size_t size,
		size_t first)
{
	void **p = pp;
	size_t na;
	void *q;

	if (n < *alloc)
		return 0;
	na = *alloc ? *alloc * 2 : first;
	if (na <= n)
		na = n + 1;
	if (na > SIZE_MAX / size) {
		aptix_error_oom();
		return APTIX_ERROR;
	}
	if (!(q = aptix__realloc(*p, na * size)))
		return APTIX_ERROR;
	*p = q;
	*alloc = na;
	return 0;
}

int aptix__hash_reserve(void *pp, size_t *cap, size_t n, size_t size,
			size_t first, uint32_t (*hash)(const void *entry),
			int (*used)(const void *entry))
{
	unsigned char **p = pp, *v;
	size_t nc = *cap ? *cap * 2 : first, i, k;

	if ((n + 1) * 2 <= *cap)
		return 0;
	if (!(v = aptix__calloc(nc, size)))
		return APTIX_ERROR;
	for (i = 0; i < *cap; i++) {
		const unsigned char *e = *p + i * size;

		if (!used(e))
			continue;
		for (k = hash(e) & (nc - 1); used(v + k * size);
		     k = (k + 1) & (nc - 1))
			;
		memcpy(v + k * size, e, size);
	}
	free(*p);
	*p = v;
	*cap = nc;
	return 0;
}

int aptix__found(int r)
{
	if (r == APTIX_ENOTFOUND) {
		aptix_error_clear();
		return 0;
	}
	return r < 0 ? r : 1;
}

int aptix__absent_ok(int r)
{
	if (r != APTIX_ENOTFOUND)
		return r;
	aptix_error_clear();
	return 0;
}

char *aptix__strdup(const char *s)
{
	return s ? aptix__strndup(s, strlen(s)) : NULL;
}

char *aptix__strndup(const char *s, size_t n)
{
	char *p = aptix__malloc(n + 1);

	if (p) {
		memcpy(p, s, n);
		p[n] = '\0';
	}
	return p;
}

/* ln(x) for x > 0, without libm. */
double aptix__ln(double x)
{
	static const double LN2 = 0.69314718055994530942;
	double y, y2, term, sum = 0;
	int e = 0, k;

	while (x >= 2) {
		x /= 2;
		e++;
	}
	while (x < 1) {
		x *= 2;
		e--;
	}
	/* ln(x) = 2 atanh((x - 1) / (x + 1)), |y| < 1/3 */
	y = (x - 1) / (x + 1);
	y2 = y * y;
	term = y;
	for (k = 1; k < 60; k += 2) {
		sum += term / k;
		term *= y2;
		if (term < 1e-17)
			break;
	}
	return 2 * sum + e * LN2;
}
