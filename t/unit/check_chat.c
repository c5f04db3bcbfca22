/*
 * check_chat.c - unit tests for porcelain/chat-model.c: the parser of
 * chat's input lines and the picker's model.
 */
#ifndef _POSIX_C_SOURCE
# define _POSIX_C_SOURCE 200809L
#endif

#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "unit.h"
#include "../../porcelain/chat-model.h"

static struct chat_line parse(const char *text, char *buf, size_t n)
{
	struct chat_line l;

	snprintf(buf, n, "%s", text);
	chat_parse(&l, buf);
	return l;
}

START_TEST(test_parse_text_and_empty)
{
	char buf[256];
	struct chat_line l;

	l = parse("  \t ", buf, sizeof(buf));
	ck_assert_int_eq(l.kind, CHAT_LINE_EMPTY);
	l = parse("fix the parser  \n", buf, sizeof(buf));
	ck_assert_int_eq(l.kind, CHAT_LINE_TEXT);
	ck_assert_str_eq(l.arg, "fix the parser");
	/* "//" sends a line starting with '/' */
	l = parse("//help is not a command", buf, sizeof(buf));
	ck_assert_int_eq(l.kind, CHAT_LINE_TEXT);
	ck_assert_str_eq(l.arg, "/help is not a command");
	/* a path is text */
	l = parse("/usr/lib holds what?", buf, sizeof(buf));
	ck_assert_int_eq(l.kind, CHAT_LINE_TEXT);
	ck_assert_str_eq(l.arg, "/usr/lib holds what?");
	l = parse("/etc.conf?", buf, sizeof(buf));
	ck_assert_int_eq(l.kind, CHAT_LINE_TEXT);
	l = parse("/ alone", buf, sizeof(buf));
	ck_assert_int_eq(l.kind, CHAT_LINE_TEXT);
	/* a multi-line text keeps its inner newlines */
	l = parse("one\ntwo\n", buf, sizeof(buf));
	ck_assert_int_eq(l.kind, CHAT_LINE_TEXT);
	ck_assert_str_eq(l.arg, "one\ntwo");
}
END_TEST

START_TEST(test_parse_commands)
{
	char buf[256];
	struct chat_line l;

	l = parse("/help", buf, sizeof(buf));
	ck_assert_int_eq(l.kind, CHAT_LINE_COMMAND);
	ck_assert_int_eq(l.cmd->id, CHAT_HELP);
	ck_assert_str_eq(l.arg, "");
	l = parse("/show   3  ", buf, sizeof(buf));
	ck_assert_int_eq(l.kind, CHAT_LINE_COMMAND);
	ck_assert_int_eq(l.cmd->id, CHAT_SHOW);
	ck_assert_str_eq(l.arg, "3");
	l = parse("/rename  A new title", buf, sizeof(buf));
	ck_assert_int_eq(l.kind, CHAT_LINE_COMMAND);
	ck_assert_int_eq(l.cmd->id, CHAT_RENAME);
	ck_assert_str_eq(l.arg, "A new title");
	l = parse("/files add a.c b.c", buf, sizeof(buf));
	ck_assert_int_eq(l.cmd->id, CHAT_FILES);
	ck_assert_str_eq(l.arg, "add a.c b.c");
	l = parse("/clear", buf, sizeof(buf));
	ck_assert_int_eq(l.cmd->id, CHAT_CLEAR);
	l = parse("/quit", buf, sizeof(buf));
	ck_assert_int_eq(l.cmd->id, CHAT_QUIT);
}
END_TEST

START_TEST(test_parse_errors)
{
	char buf[256];
	struct chat_line l;

	l = parse("/frobnicate now", buf, sizeof(buf));
	ck_assert_int_eq(l.kind, CHAT_LINE_ERROR);
	ck_assert_ptr_null(l.cmd);
	ck_assert_ptr_nonnull(strstr(l.error, "unknown command "
				     "'/frobnicate'"));
	l = parse("/rename", buf, sizeof(buf));
	ck_assert_int_eq(l.kind, CHAT_LINE_ERROR);
	ck_assert_str_eq(l.error, "usage: /rename <title>");
	l = parse("/quit now", buf, sizeof(buf));
	ck_assert_int_eq(l.kind, CHAT_LINE_ERROR);
	ck_assert_str_eq(l.error, "/quit takes no argument");
	/* commands are exact, in lower case */
	l = parse("/HELP", buf, sizeof(buf));
	ck_assert_int_eq(l.kind, CHAT_LINE_ERROR);
	l = parse("/hel", buf, sizeof(buf));
	ck_assert_int_eq(l.kind, CHAT_LINE_ERROR);
}
END_TEST

START_TEST(test_table)
{
	const struct chat_cmd *c;
	size_t n = 0;

	for (c = chat_commands; c->name; c++, n++) {
		/* each command is listed once, with help */
		ck_assert_ptr_eq(chat_find(c->name, strlen(c->name)), c);
		ck_assert_ptr_nonnull(c->help);
		ck_assert(!((c->flags & CHAT_F_ARG) &&
			    (c->flags & CHAT_F_NOARG)));
	}
	ck_assert_uint_eq(n, CHAT_QUIT + 1);
	/* what must not run beside a turn */
	ck_assert(chat_find("new", 3)->flags & CHAT_F_BUSY);
	ck_assert(chat_find("rerun", 5)->flags & CHAT_F_BUSY);
	ck_assert(!(chat_find("log", 3)->flags & CHAT_F_BUSY));
	ck_assert(!(chat_find("context", 7)->flags & CHAT_F_BUSY));
	ck_assert(chat_find("rerun", 5)->flags & CHAT_F_WRITES);
	/* forking is how a read-only viewer goes on */
	ck_assert(!(chat_find("fork", 4)->flags & CHAT_F_WRITES));
	ck_assert(!(chat_find("show", 4)->flags & CHAT_F_WRITES));
	ck_assert(!(chat_find("rewind", 6)->flags & CHAT_F_WRITES));
}
END_TEST

START_TEST(test_complete)
{
	const struct chat_cmd *v[32];
	size_t n, common;

	n = chat_complete(v, 32, "re", 2, &common);
	ck_assert_uint_eq(n, 4);	/* resume, rewind, rerun, rename */
	ck_assert_str_eq(v[0]->name, "resume");
	ck_assert_uint_eq(common, 2);
	n = chat_complete(v, 32, "sh", 2, &common);
	ck_assert_uint_eq(n, 1);
	ck_assert_str_eq(v[0]->name, "show");
	ck_assert_uint_eq(common, 4);
	n = chat_complete(v, 32, "co", 2, &common);
	ck_assert_uint_eq(n, 2);	/* context, compact */
	ck_assert_uint_eq(common, 2);
	n = chat_complete(v, 32, "", 0, &common);
	ck_assert_uint_eq(n, CHAT_QUIT + 1);
	n = chat_complete(v, 32, "zz", 2, &common);
	ck_assert_uint_eq(n, 0);
	/* v is bounded, the count is not */
	n = chat_complete(v, 2, "", 0, &common);
	ck_assert_uint_eq(n, CHAT_QUIT + 1);
}
END_TEST

START_TEST(test_continues)
{
	char buf[64];

	snprintf(buf, sizeof(buf), "first line \\\n");
	ck_assert_int_eq(chat_line_continues(buf), 1);
	ck_assert_str_eq(buf, "first line ");
	snprintf(buf, sizeof(buf), "an escaped \\\\");
	ck_assert_int_eq(chat_line_continues(buf), 0);
	snprintf(buf, sizeof(buf), "plain\n");
	ck_assert_int_eq(chat_line_continues(buf), 0);
	ck_assert_str_eq(buf, "plain");
	snprintf(buf, sizeof(buf), "\\");
	ck_assert_int_eq(chat_line_continues(buf), 1);
	ck_assert_str_eq(buf, "");
}
END_TEST

/* n rows: row i updated at i, "here" when i is even, titled "t<i>". */
static void make_picker(struct picker *p, size_t n)
{
	struct picker_row *rows = calloc(n ? n : 1, sizeof(*rows));
	size_t i;

	ck_assert_ptr_nonnull(rows);
	for (i = 0; i < n; i++) {
		snprintf(rows[i].ci.id, sizeof(rows[i].ci.id), "id%03lu",
			 (unsigned long)i);
		snprintf(rows[i].ci.title, sizeof(rows[i].ci.title),
			 "Title %lu", (unsigned long)i);
		rows[i].ci.updated_at = (int64_t)i * 1000;
		rows[i].here = i % 2 == 0;
	}
	picker_init(p, rows, n);
}

START_TEST(test_picker_order_and_scope)
{
	struct picker p;

	make_picker(&p, 6);
	/* this workspace's only, most recent first: 4, 2, 0 */
	ck_assert_uint_eq(p.nvis, 3);
	ck_assert_str_eq(picker_selected(&p)->ci.id, "id004");
	picker_move(&p, 1);
	ck_assert_str_eq(picker_selected(&p)->ci.id, "id002");
	picker_toggle_all(&p);
	/* the selection survives the toggle */
	ck_assert_uint_eq(p.nvis, 6);
	ck_assert_str_eq(picker_selected(&p)->ci.id, "id002");
	ck_assert_uint_eq(p.sel, 4);	/* 5, 4, 3, 2 */
	picker_move(&p, -100);
	ck_assert_ptr_null(picker_selected(&p));	/* new conversation */
	picker_move(&p, 100);
	ck_assert_str_eq(picker_selected(&p)->ci.id, "id000");
	picker_release(&p);

	make_picker(&p, 0);
	ck_assert_uint_eq(p.nvis, 0);
	ck_assert_ptr_null(picker_selected(&p));
	ck_assert_uint_eq(picker_pages(&p), 1);
	picker_page(&p, 1);
	ck_assert_ptr_null(picker_selected(&p));
	picker_release(&p);
}
END_TEST

START_TEST(test_picker_filter)
{
	struct picker p;

	make_picker(&p, 30);
	picker_toggle_all(&p);
	picker_set_filter(&p, "TITLE 2");	/* 2, 20..29 */
	ck_assert_uint_eq(p.nvis, 11);
	/* the selection (28, this workspace's latest) is still shown */
	ck_assert_str_eq(picker_selected(&p)->ci.id, "id028");
	picker_set_filter(&p, "title 29");
	ck_assert_str_eq(picker_selected(&p)->ci.id, "id029");
	picker_set_filter(&p, "id01");		/* by id: 10..19 */
	ck_assert_uint_eq(p.nvis, 10);
	picker_set_filter(&p, "no such");
	ck_assert_uint_eq(p.nvis, 0);
	ck_assert_ptr_null(picker_selected(&p));
	picker_set_filter(&p, "");
	ck_assert_uint_eq(p.nvis, 30);
	/* the filter holds across the workspace toggle */
	picker_set_filter(&p, "title 1");	/* 1, 10..19 */
	picker_toggle_all(&p);			/* even only: 10..18 */
	ck_assert_uint_eq(p.nvis, 5);
	picker_release(&p);
}
END_TEST

START_TEST(test_picker_pages_and_numbers)
{
	struct picker p;

	make_picker(&p, 60);
	picker_toggle_all(&p);
	ck_assert_uint_eq(picker_pages(&p), 3);	/* 25, 25, 10 */
	ck_assert_int_eq(picker_select_number(&p, 1), 0);
	ck_assert_uint_eq(picker_page_of(&p), 0);
	picker_page(&p, 1);
	ck_assert_uint_eq(p.sel, 26);
	ck_assert_uint_eq(picker_page_of(&p), 1);
	picker_page(&p, 1);
	ck_assert_uint_eq(picker_page_of(&p), 2);
	picker_page(&p, 1);
	ck_assert_uint_eq(p.sel, 60);
	picker_page(&p, -5);
	ck_assert_uint_eq(p.sel, 0);
	ck_assert_int_eq(picker_select_number(&p, 27), 0);
	ck_assert_str_eq(picker_selected(&p)->ci.id, "id033");
	ck_assert_uint_eq(picker_page_of(&p), 1);
	ck_assert_int_eq(picker_select_number(&p, 61), -1);
	ck_assert_uint_eq(p.sel, 27);
	ck_assert_int_eq(picker_select_number(&p, 0), 0);
	ck_assert_ptr_null(picker_selected(&p));
	picker_release(&p);
}
END_TEST

Suite *chat_suite(void)
{
	Suite *s = suite_create("chat");
	TCase *tc = tcase_create("parse");
	TCase *tp = tcase_create("picker");

	tcase_add_test(tc, test_parse_text_and_empty);
	tcase_add_test(tc, test_parse_commands);
	tcase_add_test(tc, test_parse_errors);
	tcase_add_test(tc, test_table);
	tcase_add_test(tc, test_complete);
	tcase_add_test(tc, test_continues);
	suite_add_tcase(s, tc);
	tcase_add_test(tp, test_picker_order_and_scope);
	tcase_add_test(tp, test_picker_filter);
	tcase_add_test(tp, test_picker_pages_and_numbers);
	suite_add_tcase(s, tp);
	return s;
}
