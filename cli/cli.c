/*
 * cli.c - error reporting and terminal helpers for the aptix CLI.
 */
#ifndef _POSIX_C_SOURCE
# define _POSIX_C_SOURCE 200809L
#endif

#include "cli.h"

#include <errno.h>
#include <signal.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define REPORT_BUFSIZE 4096

/*
 * Format the message into one buffer so it reaches stderr in a single
 * write, and replace control characters (other than '\t' and '\n', C1
 * controls included) with '?' so that untrusted text in a message cannot
 * drive the terminal.  Overlong messages are truncated.
 */
static void vreportf(const char *prefix, const char *fmt, va_list ap,
		     int with_errno, int saved_errno)
{
	char msg[REPORT_BUFSIZE];
	size_t plen = strlen(prefix);
	size_t len;
	char *p;
	int n;

	memcpy(msg, prefix, plen);
	n = vsnprintf(msg + plen, sizeof(msg) - plen, fmt, ap);
	if (n < 0)
		msg[plen] = '\0';
	len = strlen(msg);

	if (with_errno && len < sizeof(msg) - 1)
		snprintf(msg + len, sizeof(msg) - len, ": %s",
			 strerror(saved_errno));

	for (p = msg + plen; *p; p++) {
		unsigned char c = (unsigned char)*p;

		if ((c < 0x20 && c != '\t' && c != '\n') || c == 0x7f)
			*p = '?';
		/* a UTF-8 encoded C1 control, e.g. U+009B (CSI) */
		if (c == 0xc2 && (unsigned char)p[1] >= 0x80 &&
		    (unsigned char)p[1] <= 0x9f) {
			p[0] = '?';
			p[1] = '?';
			p++;
		}
	}

	len = strlen(msg);
	if (len >= sizeof(msg) - 1)
		len = sizeof(msg) - 2;
	msg[len++] = '\n';
	msg[len] = '\0';

	fflush(stderr);
	fputs(msg, stderr);
	fflush(stderr);
}

static void (*die_flush)(void *);
static void *die_flush_payload;

void cli_set_die_flush(void (*fn)(void *), void *payload)
{
	die_flush = fn;
	die_flush_payload = payload;
}

/* The output a command holds goes out first (once: it may die itself). */
static void flush_before_dying(void)
{
	void (*fn)(void *) = die_flush;

	die_flush = NULL;
	if (fn)
		fn(die_flush_payload);
	fflush(stdout);
}

void die(const char *fmt, ...)
{
	va_list ap;

	flush_before_dying();
	va_start(ap, fmt);
	vreportf("fatal: ", fmt, ap, 0, 0);
	va_end(ap);
	exit(EXIT_FATAL);
}

void die_errno(const char *fmt, ...)
{
	int saved_errno = errno;
	va_list ap;

	flush_before_dying();
	va_start(ap, fmt);
	vreportf("fatal: ", fmt, ap, 1, saved_errno);
	va_end(ap);
	exit(EXIT_FATAL);
}

int error(const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vreportf("error: ", fmt, ap, 0, 0);
	va_end(ap);
	return -1;
}

int error_errno(const char *fmt, ...)
{
	int saved_errno = errno;
	va_list ap;

	va_start(ap, fmt);
	vreportf("error: ", fmt, ap, 1, saved_errno);
	va_end(ap);
	errno = saved_errno;
	return -1;
}

void warning(const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vreportf("warning: ", fmt, ap, 0, 0);
	va_end(ap);
}

void *cli_grow(void *p, size_t *alloc, size_t nr, size_t size)
{
	size_t na;

	if (nr < *alloc)
		return p;
	na = *alloc ? *alloc * 2 : 16;
	if (na < *alloc || na > SIZE_MAX / size || !(p = realloc(p, na * size)))
		die("out of memory");
	*alloc = na;
	return p;
}

int cli_isatty_stdout(void)
{
	static int cached = -1;

	if (cached < 0)
		cached = isatty(STDOUT_FILENO) ? 1 : 0;
	return cached;
}

int cli_color_enabled(int fd)
{
	const char *term, *no_color;

	if (fd == STDOUT_FILENO) {
		if (!cli_isatty_stdout())
			return 0;
	} else if (!isatty(fd)) {
		return 0;
	}
	no_color = getenv("NO_COLOR");
	if (no_color && *no_color)
		return 0;
	term = getenv("TERM");
	if (!term || !*term || !strcmp(term, "dumb"))
		return 0;
	return 1;
}

static int is_tty_stream(FILE *fp)
{
	int fd = fileno(fp);

	if (fd < 0)
		return 0;
	if (fd == STDOUT_FILENO)
		return cli_isatty_stdout();
	return isatty(fd);
}

void cli_print_sanitized(FILE *fp, const char *s, size_t len)
{
	size_t i, start = 0;

	if (!is_tty_stream(fp)) {
		if (len)
			fwrite(s, 1, len, fp);
		return;
	}

	for (i = 0; i < len; i++) {
		unsigned char c = (unsigned char)s[i];
		unsigned char next = i + 1 < len ? (unsigned char)s[i + 1] : 0;

		if ((c < 0x20 && c != '\n' && c != '\t') || c == 0x7f) {
			if (i > start)
				fwrite(s + start, 1, i - start, fp);
			fputc('^', fp);
			fputc(c ^ 0x40, fp);
			start = i + 1;
		} else if (c == 0xc2 && next >= 0x80 && next <= 0x9f) {
			/* UTF-8 encoded C1 control, e.g. U+009B (CSI) */
			if (i > start)
				fwrite(s + start, 1, i - start, fp);
			fprintf(fp, "\\u%04x", (unsigned int)next);
			i++;
			start = i + 1;
		}
	}
	if (len > start)
		fwrite(s + start, 1, len - start, fp);
}

void cli_print_oneline(FILE *fp, const char *s, size_t len)
{
	size_t i, start = 0;

	for (i = 0; i < len; i++) {
		if (s[i] != '\n' && s[i] != '\r')
			continue;
		cli_print_sanitized(fp, s + start, i - start);
		fputs(s[i] == '\n' ? "\\n" : "\\r", fp);
		start = i + 1;
	}
	cli_print_sanitized(fp, s + start, len - start);
}

#include "aptix/errors.h"
#include "aptix/process.h"
#include "aptix/buf.h"

size_t cli_print_path(FILE *fp, const char *path)
{
	aptix_buf q = APTIX_BUF_INIT;
	size_t n;

	if (aptix_buf_put_path(&q, path) < 0) {
		aptix_buf_release(&q);
		n = strlen(path);
		cli_print_oneline(fp, path, n);
		return n;
	}
	cli_print_sanitized(fp, q.ptr, q.len);
	n = q.len;
	aptix_buf_release(&q);
	return n;
}

int error_aptix(void)
{
	return error("%s", aptix_error_last()->message);
}

void die_aptix(void)
{
	die("%s", aptix_error_last()->message);
}

int cli_run_foreground(struct aptix_process *p)
{
	struct sigaction ign, old_int, old_quit;
	int status = -1;

	fflush(NULL);
	memset(&ign, 0, sizeof(ign));
	ign.sa_handler = SIG_IGN;
	sigemptyset(&ign.sa_mask);
	sigaction(SIGINT, &ign, &old_int);
	sigaction(SIGQUIT, &ign, &old_quit);
	if (aptix_process_run(p, &status) < 0)
		status = error_aptix();
	sigaction(SIGINT, &old_int, NULL);
	sigaction(SIGQUIT, &old_quit, NULL);
	return status;
}

void cli_env_keys(const char *keys[2])
{
	keys[0] = getenv("OPENAI_API_KEY");
	keys[1] = getenv("QDRANT_API_KEY");
}
