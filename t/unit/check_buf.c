/*
 * check_buf.c - unit tests for src/util/buf.c (aptix/buf.h).
 */
#ifndef _POSIX_C_SOURCE
# define _POSIX_C_SOURCE 200809L
#endif

#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "aptix.h"
#include "unit.h"

static char *tmpdir;

static void setup(void)
{
	aptix_error_clear();
	tmpdir = unit_mkdtemp();
}

static void teardown(void)
{
	unit_rmtree(tmpdir);
	free(tmpdir);
	tmpdir = NULL;
	aptix_error_clear();
}

/* The invariants every buffer keeps, whatever happened to it. */
static void assert_valid(const aptix_buf *b)
{
	ck_assert_ptr_nonnull(b->ptr);
	ck_assert_int_eq(b->ptr[b->len], '\0');
	if (b->alloc)
		ck_assert_uint_lt(b->len, b->alloc);
}

START_TEST(test_init)
{
	aptix_buf a = APTIX_BUF_INIT, b;

	assert_valid(&a);
	ck_assert_uint_eq(a.len, 0);
	ck_assert_uint_eq(a.alloc, 0);
	ck_assert_uint_eq(a.max, 0);
	ck_assert_ptr_eq(a.ptr, aptix_buf__initbuf);
	ck_assert_str_eq(a.ptr, "");
	ck_assert_int_eq(aptix_buf_oom(&a), 0);

	memset(&b, 0x5a, sizeof(b));
	aptix_buf_init(&b, 0);
	assert_valid(&b);
	ck_assert_uint_eq(b.len, 0);
	ck_assert_uint_eq(b.max, 0);
	ck_assert_ptr_eq(b.ptr, aptix_buf__initbuf);

	aptix_buf_init(&b, 1000);
	assert_valid(&b);
	ck_assert_uint_eq(b.len, 0);
	ck_assert_uint_ge(b.alloc, 1001);
	ck_assert_str_eq(b.ptr, "");
	aptix_buf_release(&b);
	ck_assert_ptr_eq(b.ptr, aptix_buf__initbuf);
	ck_assert_uint_eq(b.alloc, 0);
	aptix_buf_release(&b);	/* twice is harmless */
	assert_valid(&b);

	/* releasing a never-allocated buffer leaves the shared "" alone */
	aptix_buf_release(&a);
	ck_assert_str_eq(aptix_buf__initbuf, "");
}
END_TEST

START_TEST(test_put)
{
	aptix_buf b = APTIX_BUF_INIT;
	static const char bin[] = { 'a', '\0', 'b', '\0', '\n', (char)0xff };
	size_t i;

	ck_assert_int_eq(aptix_buf_put(&b, "", 0), 0);
	assert_valid(&b);
	ck_assert_uint_eq(b.len, 0);

	ck_assert_int_eq(aptix_buf_puts(&b, "hello"), 0);
	ck_assert_int_eq(aptix_buf_putc(&b, ' '), 0);
	ck_assert_int_eq(aptix_buf_put(&b, "world!!", 5), 0);
	assert_valid(&b);
	ck_assert_uint_eq(b.len, 11);
	ck_assert_str_eq(b.ptr, "hello world");

	/* binary-safe, NUL kept after the data */
	aptix_buf_clear(&b);
	ck_assert_int_eq(aptix_buf_put(&b, bin, sizeof(bin)), 0);
	ck_assert_uint_eq(b.len, sizeof(bin));
	ck_assert_mem_eq(b.ptr, bin, sizeof(bin));
	assert_valid(&b);

	/* many small appends across several reallocations */
	aptix_buf_clear(&b);
	for (i = 0; i < 10000; i++) {
		ck_assert_int_eq(aptix_buf_putc(&b, (char)('a' + i % 26)), 0);
		assert_valid(&b);
	}
	ck_assert_uint_eq(b.len, 10000);
	for (i = 0; i < 10000; i++)
		ck_assert_int_eq(b.ptr[i], 'a' + (int)(i % 26));

	/* appending part of itself (memmove semantics) */
	aptix_buf_set(&b, "abcdef", 6);
	ck_assert_int_eq(aptix_buf_put(&b, b.ptr + 1, 3), 0);
	ck_assert_str_eq(b.ptr, "abcdefbcd");
	aptix_buf_release(&b);
}
END_TEST

START_TEST(test_printf)
{
	aptix_buf b = APTIX_BUF_INIT;
	char big[5001];

	ck_assert_int_eq(aptix_buf_printf(&b, "%d-%s-%c", 42, "x", 'y'), 0);
	ck_assert_str_eq(b.ptr, "42-x-y");
	ck_assert_uint_eq(b.len, 6);
	ck_assert_int_eq(aptix_buf_printf(&b, "%s", ""), 0);
	ck_assert_uint_eq(b.len, 6);
	ck_assert_int_eq(aptix_buf_printf(&b, "[%5zu]", (size_t)7), 0);
	ck_assert_str_eq(b.ptr, "42-x-y[    7]");

	/* longer than any initial allocation */
	memset(big, 'q', 5000);
	big[5000] = '\0';
	ck_assert_int_eq(aptix_buf_printf(&b, "<%s>", big), 0);
	ck_assert_uint_eq(b.len, 13 + 5002);
	ck_assert_int_eq(b.ptr[13], '<');
	ck_assert_int_eq(b.ptr[13 + 5001], '>');
	assert_valid(&b);
	aptix_buf_release(&b);
}
END_TEST

START_TEST(test_detach)
{
	aptix_buf b = APTIX_BUF_INIT;
	char *s;

	/* never allocated: still a fresh malloc'd "" */
	s = aptix_buf_detach(&b);
	ck_assert_ptr_nonnull(s);
	ck_assert_ptr_ne(s, aptix_buf__initbuf);
	ck_assert_str_eq(s, "");
	free(s);
	assert_valid(&b);

	aptix_buf_puts(&b, "owned");
	s = aptix_buf_detach(&b);
	ck_assert_str_eq(s, "owned");
	ck_assert_ptr_eq(b.ptr, aptix_buf__initbuf);
	ck_assert_uint_eq(b.len, 0);
	ck_assert_uint_eq(b.alloc, 0);
	assert_valid(&b);
	free(s);

	/* the buffer is usable again */
	ck_assert_int_eq(aptix_buf_puts(&b, "again"), 0);
	ck_assert_str_eq(b.ptr, "again");
	aptix_buf_release(&b);
}
END_TEST

START_TEST(test_truncate_clear_set)
{
	aptix_buf b = APTIX_BUF_INIT;
	size_t alloc;

	aptix_buf_truncate(&b, 0);	/* unallocated: no-op, no crash */
	aptix_buf_truncate(&b, 10);
	assert_valid(&b);
	ck_assert_uint_eq(b.len, 0);

	aptix_buf_puts(&b, "abcdef");
	aptix_buf_truncate(&b, 3);
	ck_assert_str_eq(b.ptr, "abc");
	ck_assert_uint_eq(b.len, 3);
	aptix_buf_truncate(&b, 10);	/* longer: no-op */
	ck_assert_str_eq(b.ptr, "abc");
	ck_assert_uint_eq(b.len, 3);
	aptix_buf_truncate(&b, 0);
	ck_assert_str_eq(b.ptr, "");
	assert_valid(&b);

	aptix_buf_puts(&b, "xyz");
	alloc = b.alloc;
	aptix_buf_clear(&b);
	ck_assert_uint_eq(b.len, 0);
	ck_assert_uint_eq(b.alloc, alloc);	/* memory kept */
	ck_assert_str_eq(b.ptr, "");

	ck_assert_int_eq(aptix_buf_set(&b, "new\0content", 11), 0);
	ck_assert_uint_eq(b.len, 11);
	ck_assert_mem_eq(b.ptr, "new\0content", 12);
	ck_assert_int_eq(aptix_buf_set(&b, "", 0), 0);
	ck_assert_uint_eq(b.len, 0);
	assert_valid(&b);
	aptix_buf_release(&b);
}
END_TEST

START_TEST(test_max_cap)
{
	aptix_buf b = APTIX_BUF_INIT;

	b.max = 10;
	ck_assert_int_eq(aptix_buf_put(&b, "0123456789", 10), 0);
	ck_assert_uint_eq(b.len, 10);
	ck_assert_int_eq(aptix_buf_oom(&b), 0);

	/* one byte more than max: EFULL and a sticky error state */
	ck_assert_int_eq(aptix_buf_putc(&b, 'x'), APTIX_EFULL);
	ck_assert_int_ne(aptix_buf_oom(&b), 0);
	ck_assert_ptr_nonnull(strstr(aptix_error_last()->message, "limit"));
	assert_valid(&b);
	ck_assert_uint_eq(b.len, 0);
	ck_assert_str_eq(b.ptr, "");

	/* later appends do nothing, even small ones that would fit */
	ck_assert_int_lt(aptix_buf_putc(&b, 'y'), 0);
	ck_assert_int_lt(aptix_buf_puts(&b, ""), 0);
	ck_assert_int_lt(aptix_buf_printf(&b, "%d", 1), 0);
	ck_assert_int_lt(aptix_buf_grow(&b, 1), 0);
	ck_assert_int_ne(aptix_buf_oom(&b), 0);
	ck_assert_uint_eq(b.len, 0);
	assert_valid(&b);
	/* detaching a failed buffer gives NULL, never the shared byte */
	ck_assert_ptr_null(aptix_buf_detach(&b));

	/* clear leaves the error state; the cap still applies */
	aptix_buf_clear(&b);
	ck_assert_int_eq(aptix_buf_oom(&b), 0);
	ck_assert_uint_eq(b.max, 10);
	ck_assert_int_eq(aptix_buf_puts(&b, "ok"), 0);
	ck_assert_str_eq(b.ptr, "ok");
	aptix_buf_release(&b);
	assert_valid(&b);
}
END_TEST

START_TEST(test_max_cap_printf)
{
	aptix_buf b = APTIX_BUF_INIT;

	b.max = 8;
	ck_assert_int_eq(aptix_buf_printf(&b, "%s", "12345678"), 0);
	ck_assert_str_eq(b.ptr, "12345678");
	aptix_buf_clear(&b);
	ck_assert_int_eq(aptix_buf_printf(&b, "%s", "123456789"),
			 APTIX_EFULL);
	ck_assert_int_ne(aptix_buf_oom(&b), 0);
	assert_valid(&b);
	aptix_buf_release(&b);

	/* grow() against the cap */
	b.max = 4;
	ck_assert_int_eq(aptix_buf_grow(&b, 4), 0);
	ck_assert_int_eq(aptix_buf_grow(&b, 5), APTIX_EFULL);
	ck_assert_int_ne(aptix_buf_oom(&b), 0);
	aptix_buf_release(&b);
}
END_TEST

START_TEST(test_grow_overflow)
{
	aptix_buf b = APTIX_BUF_INIT;

	aptix_buf_puts(&b, "abc");
	/* a size that cannot be represented fails cleanly, no allocation */
	ck_assert_int_lt(aptix_buf_grow(&b, SIZE_MAX), 0);
	ck_assert_int_ne(aptix_buf_oom(&b), 0);
	assert_valid(&b);
	ck_assert_int_lt(aptix_buf_put(&b, "x", 1), 0);
	aptix_buf_release(&b);
	ck_assert_int_eq(aptix_buf_oom(&b), 0);
	assert_valid(&b);
}
END_TEST

static void check_read_file(size_t size)
{
	aptix_buf b = APTIX_BUF_INIT;
	unsigned char *data = malloc(size + 1);
	char *path = unit_path(tmpdir, "f");

	ck_assert_ptr_nonnull(data);
	unit_fill_random(data, size, size);
	unit_write_file(path, data, size);
	ck_assert_int_eq(aptix_buf_read_file(&b, path), 0);
	ck_assert_uint_eq(b.len, size);
	if (size)
		ck_assert_int_eq(memcmp(b.ptr, data, size), 0);
	assert_valid(&b);
	aptix_buf_release(&b);
	free(path);
	free(data);
}

START_TEST(test_read_file)
{
	aptix_buf b = APTIX_BUF_INIT;
	char *missing = unit_path(tmpdir, "missing");

	check_read_file(0);
	check_read_file(1);
	check_read_file(65535);
	check_read_file(65536);
	check_read_file(65537);
	check_read_file(300000);

	ck_assert_int_eq(aptix_buf_read_file(&b, missing), APTIX_ENOTFOUND);
	ck_assert_ptr_nonnull(strstr(aptix_error_last()->message, missing));
	assert_valid(&b);
	/* a directory opens but cannot be read */
	ck_assert_int_eq(aptix_buf_read_file(&b, tmpdir), APTIX_ERROR);
	assert_valid(&b);
	aptix_buf_release(&b);
	free(missing);
}
END_TEST

START_TEST(test_read_fd)
{
	aptix_buf b = APTIX_BUF_INIT;
	int fds[2];
	char chunk[1000];
	size_t i;

	/* from a pipe, in several reads */
	ck_assert_int_eq(pipe(fds), 0);
	memset(chunk, 'p', sizeof(chunk));
	for (i = 0; i < 50; i++)
		ck_assert_int_eq(write(fds[1], chunk, sizeof(chunk)),
				 (int)sizeof(chunk));
	close(fds[1]);
	ck_assert_int_eq(aptix_buf_read_fd(&b, fds[0]), 0);
	close(fds[0]);
	ck_assert_uint_eq(b.len, 50000);
	ck_assert_int_eq(b.ptr[0], 'p');
	ck_assert_int_eq(b.ptr[49999], 'p');
	assert_valid(&b);
	aptix_buf_release(&b);

	ck_assert_int_eq(aptix_buf_read_fd(&b, -1), APTIX_ERROR);
	assert_valid(&b);
	aptix_buf_release(&b);
}
END_TEST

/* read_fd against b->max: a file of size bytes with the cap at max. */
static int read_capped(size_t size, size_t max, aptix_buf *b)
{
	char *path = unit_path(tmpdir, "capped");
	char *data = malloc(size + 1);
	int r;

	ck_assert_ptr_nonnull(data);
	memset(data, 'c', size);
	unit_write_file(path, data, size);
	aptix_buf_init(b, 0);
	b->max = max;
	r = aptix_buf_read_file(b, path);
	assert_valid(b);
	free(data);
	free(path);
	return r;
}

START_TEST(test_read_max)
{
	aptix_buf b;

	/* well under a small cap */
	ck_assert_int_eq(read_capped(10, 1000, &b), 0);
	ck_assert_uint_eq(b.len, 10);
	aptix_buf_release(&b);
	/* exactly at the cap */
	ck_assert_int_eq(read_capped(1000, 1000, &b), 0);
	ck_assert_uint_eq(b.len, 1000);
	aptix_buf_release(&b);
	ck_assert_int_eq(read_capped(0, 1, &b), 0);
	ck_assert_uint_eq(b.len, 0);
	aptix_buf_release(&b);
	/* one byte over */
	ck_assert_int_eq(read_capped(1001, 1000, &b), APTIX_EFULL);
	ck_assert_int_ne(aptix_buf_oom(&b), 0);
	ck_assert_uint_eq(b.len, 0);
	aptix_buf_release(&b);
	/* large cap, larger file */
	ck_assert_int_eq(read_capped(200000, 100000, &b), APTIX_EFULL);
	ck_assert_int_ne(aptix_buf_oom(&b), 0);
	aptix_buf_release(&b);
	ck_assert_int_eq(read_capped(200000, 200000, &b), 0);
	ck_assert_uint_eq(b.len, 200000);
	aptix_buf_release(&b);
}
END_TEST

START_TEST(test_strlist)
{
	aptix_strlist a = APTIX_STRLIST_INIT, b;
	char word[] = "borrowed";
	size_t i;

	ck_assert_uint_eq(a.nr, 0);
	ck_assert_ptr_null(a.items);
	ck_assert_int_eq(aptix_strlist_push(&a, word), 0);
	word[0] = 'X';
	ck_assert_str_eq(a.items[0], "borrowed");
	ck_assert_int_eq(aptix_strlist_pushf(&a, "%d %s", 42, "x"), 0);
	ck_assert_int_eq(aptix_strlist_push(&a, ""), 0);
	ck_assert_uint_eq(a.nr, 3);
	ck_assert_str_eq(a.items[1], "42 x");
	ck_assert_str_eq(a.items[2], "");
	for (i = 0; i < 200; i++)
		ck_assert_int_eq(aptix_strlist_pushf(&a, "%zu", i), 0);
	ck_assert_uint_eq(a.nr, 203);
	ck_assert_str_eq(a.items[202], "199");

	aptix_strlist_init(&b);
	ck_assert_int_eq(aptix_strlist_push(&b, "replaced"), 0);
	ck_assert_int_eq(aptix_strlist_copy(&b, &a), 0);
	ck_assert_uint_eq(b.nr, a.nr);
	for (i = 0; i < a.nr; i++) {
		ck_assert_str_eq(b.items[i], a.items[i]);
		ck_assert_ptr_ne(b.items[i], a.items[i]);
	}
	aptix_strlist_release(&a);
	ck_assert_uint_eq(a.nr, 0);
	ck_assert_ptr_null(a.items);
	ck_assert_str_eq(b.items[1], "42 x");
	ck_assert_int_eq(aptix_strlist_copy(&b, &a), 0);
	ck_assert_uint_eq(b.nr, 0);
	aptix_strlist_release(&b);
	aptix_strlist_release(&b);
}
END_TEST

/* aptix_buf_put_path(): git's quote_c_style, core.quotePath off */
START_TEST(test_put_path)
{
	static const struct {
		const char *in, *out;
	} cases[] = {
		{ "plain/file.c", "plain/file.c" },
		{ "with space.c", "with space.c" },
		{ "caf\xc3\xa9.c", "caf\xc3\xa9.c" },		/* UTF-8 kept */
		{ "new\nline.c", "\"new\\nline.c\"" },
		{ "tab\there", "\"tab\\there\"" },
		{ "\a\b\v\f\r", "\"\\a\\b\\v\\f\\r\"" },
		{ "esc\033[2J", "\"esc\\033[2J\"" },
		{ "del\x7f", "\"del\\177\"" },
		{ "q\"uote", "\"q\\\"uote\"" },
		{ "back\\slash", "\"back\\\\slash\"" },
		{ "c1\xc2\x9b" "31m", "\"c1\\302\\23331m\"" },	/* C1 CSI */
		{ "nbsp\xc2\xa0", "nbsp\xc2\xa0" },		/* not C1 */
		{ "bad\xff", "\"bad\\377\"" },			/* not UTF-8 */
		{ "cut\xe2\x82", "\"cut\\342\\202\"" },	/* cut sequence */
		{ "\xc3\xa9\n\xc3\xa9", "\"\xc3\xa9\\n\xc3\xa9\"" },
		{ "", "" },
	};
	aptix_buf b = APTIX_BUF_INIT;
	size_t i;

	for (i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		aptix_buf_clear(&b);
		aptix_buf_puts(&b, "<");
		ck_assert_int_eq(aptix_buf_put_path(&b, cases[i].in), 0);
		aptix_buf_puts(&b, ">");
		ck_assert_uint_eq(b.len, strlen(cases[i].out) + 2);
		ck_assert_msg(!memcmp(b.ptr + 1, cases[i].out,
				      strlen(cases[i].out)),
			      "case %zu: got %s", i, b.ptr);
	}
	aptix_buf_release(&b);
}
END_TEST

START_TEST(test_utf8)
{
	static const char euro[] = "a\xe2\x82\xac";	/* "a" U+20AC */

	ck_assert_uint_eq(aptix_utf8_seqlen((const unsigned char *)"A", 1),
			  1);
	ck_assert_uint_eq(aptix_utf8_seqlen((const unsigned char *)euro + 1,
					    3), 3);
	ck_assert_uint_eq(aptix_utf8_seqlen((const unsigned char *)euro + 1,
					    2), 0);
	ck_assert_uint_eq(aptix_utf8_seqlen((const unsigned char *)
					    "\xc0\x80", 2), 0);
	ck_assert_uint_eq(aptix_utf8_seqlen((const unsigned char *)
					    "\xed\xa0\x80", 3), 0);
	ck_assert_uint_eq(aptix_utf8_seqlen((const unsigned char *)
					    "\xf4\x90\x80\x80", 4), 0);
	ck_assert(aptix_utf8_valid(euro, 4));
	ck_assert(!aptix_utf8_valid(euro, 3));
	ck_assert(!aptix_utf8_valid("a\0b", 3));

	ck_assert_uint_eq(aptix_utf8_cut(euro, 4, 10), 4);
	ck_assert_uint_eq(aptix_utf8_cut(euro, 4, 4), 4);
	ck_assert_uint_eq(aptix_utf8_cut(euro, 4, 3), 1);
	ck_assert_uint_eq(aptix_utf8_cut(euro, 4, 2), 1);
	ck_assert_uint_eq(aptix_utf8_cut(euro, 4, 1), 1);
	ck_assert_uint_eq(aptix_utf8_cut(euro, 4, 0), 0);
	ck_assert_uint_eq(aptix_utf8_cut(euro + 1, 3, 2), 0);
}
END_TEST

Suite *buf_suite(void)
{
	Suite *s = suite_create("buf");
	TCase *tc = tcase_create("core");

	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_add_test(tc, test_init);
	tcase_add_test(tc, test_put);
	tcase_add_test(tc, test_printf);
	tcase_add_test(tc, test_detach);
	tcase_add_test(tc, test_truncate_clear_set);
	tcase_add_test(tc, test_max_cap);
	tcase_add_test(tc, test_max_cap_printf);
	tcase_add_test(tc, test_grow_overflow);
	tcase_add_test(tc, test_read_file);
	tcase_add_test(tc, test_read_fd);
	tcase_add_test(tc, test_read_max);
	tcase_add_test(tc, test_strlist);
	tcase_add_test(tc, test_utf8);
	tcase_add_test(tc, test_put_path);
	suite_add_tcase(s, tc);
	return s;
}
