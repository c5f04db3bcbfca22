/*
 * check_history.c - unit tests for src/util/date-parse.c and src/config/price.c
 * (aptix/history.h).
 */
#ifndef _POSIX_C_SOURCE
# define _POSIX_C_SOURCE 200809L
#endif

#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "aptix.h"
#include "unit.h"

/* 2023-11-14T22:13:20Z */
#define NOW 1700000000000LL

static int64_t parse(const char *text)
{
	int64_t ms = -1;

	ck_assert_msg(aptix_date_parse(&ms, text, NOW) == 0, "'%s': %s", text,
		      aptix_error_last()->message);
	return ms;
}

START_TEST(test_iso_dates)
{
	setenv("TZ", "UTC", 1);
	tzset();
	ck_assert_int_eq(parse("2023-11-14T22:13:20Z"), NOW);
	ck_assert_int_eq(parse("2023-11-14T22:13:20.123Z"), NOW);
	ck_assert_int_eq(parse("2023-11-14 22:13:20"), NOW);
	ck_assert_int_eq(parse("2023-11-14 22:13"), NOW - 20000);
	ck_assert_int_eq(parse("2023-11-14"), NOW - 80000000);
	ck_assert_int_eq(parse("2023-11-15T00:13:20+02:00"), NOW);
	ck_assert_int_eq(parse("2023-11-14T20:13:20-0200"), NOW);
	ck_assert_int_eq(parse("@1700000000"), NOW);
	/* without a zone: local time */
	setenv("TZ", "UTC-2", 1);
	tzset();
	ck_assert_int_eq(parse("2023-11-15 00:13:20"), NOW);
	setenv("TZ", "UTC", 1);
	tzset();
}
END_TEST

START_TEST(test_relative_dates)
{
	setenv("TZ", "UTC", 1);
	tzset();
	ck_assert_int_eq(parse("now"), NOW);
	ck_assert_int_eq(parse("2 days ago"), NOW - 2 * 86400000LL);
	ck_assert_int_eq(parse("2.days.ago"), NOW - 2 * 86400000LL);
	ck_assert_int_eq(parse("1 hour ago"), NOW - 3600000LL);
	ck_assert_int_eq(parse("90 minutes"), NOW - 90 * 60000LL);
	ck_assert_int_eq(parse("3 weeks ago"), NOW - 21 * 86400000LL);
	ck_assert_int_eq(parse("1 year ago"), NOW - 365 * 86400000LL);
	ck_assert_int_eq(parse("today"), NOW - 80000000);
	ck_assert_int_eq(parse("yesterday"), NOW - 80000000 - 86400000LL);
}
END_TEST

START_TEST(test_bad_dates)
{
	static const char *const bad[] = {
		"", "next tuesday", "2 fortnights ago", "2023-13-01",
		"2023-11-14T25:00", "2023-11-14 junk", "@", "ago", "-2 days",
		"2023-1-4",
	};
	int64_t ms = 42;
	size_t i;

	for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		ck_assert_msg(aptix_date_parse(&ms, bad[i], NOW) ==
			      APTIX_EINVALID, "'%s' accepted", bad[i]);
		ck_assert_ptr_nonnull(strstr(aptix_error_last()->message,
					     "invalid date"));
	}
	ck_assert_int_eq(ms, 42);
}
END_TEST

START_TEST(test_prices)
{
	aptix_price p;

	ck_assert_int_eq(aptix_price_lookup(&p, NULL, "gpt-5-mini"), 0);
	ck_assert(fabs(p.input - 0.25) < 1e-12);
	ck_assert(fabs(p.output - 2.0) < 1e-12);
	ck_assert(!p.from_config);
	/* a dated snapshot falls back to its model */
	ck_assert_int_eq(aptix_price_lookup(&p, NULL, "gpt-5-2025-08-07"), 0);
	ck_assert(fabs(p.input - 1.25) < 1e-12);
	ck_assert_int_eq(aptix_price_lookup(&p, NULL, "acme-7b"),
			 APTIX_ENOTFOUND);
	ck_assert_int_eq(aptix_price_lookup(&p, NULL, ""), APTIX_ENOTFOUND);
	ck_assert_int_eq(aptix_price_lookup(&p, NULL, "gpt-5-2025-08"),
			 APTIX_ENOTFOUND);
	/* 1M input of which 200k cached, 100k output, at gpt-5-mini */
	ck_assert_int_eq(aptix_price_lookup(&p, NULL, "gpt-5-mini"), 0);
	ck_assert(fabs(aptix_price_cost(&p, 1000000, 200000, 100000) -
		       0.405) < 1e-9);
	/* more cached than input (a bad record) never costs less than 0 */
	ck_assert(aptix_price_cost(&p, 10, 20, 0) >= 0);
}
END_TEST

START_TEST(test_price_keys)
{
	ck_assert(aptix_price_key("price.gpt-5.input"));
	ck_assert(aptix_price_key("price.gpt-4.1.cached-input"));
	ck_assert(aptix_price_key("PRICE.x.Output"));
	ck_assert(!aptix_price_key("price.input"));
	ck_assert(!aptix_price_key("price..input"));
	ck_assert(!aptix_price_key("price.gpt-5.inptu"));
	ck_assert(!aptix_price_key("prices.gpt-5.input"));
	ck_assert_int_eq(aptix_config_check_key("price.gpt-4.1.input", "2"),
			 0);
	ck_assert_int_eq(aptix_config_check_key("price.gpt-5.input", "x"),
			 APTIX_EINVALID);
	ck_assert_int_eq(aptix_config_check_key("price.gpt-5.inptu", "1"),
			 APTIX_EINVALID);
	aptix_error_clear();
}
END_TEST

Suite *history_suite(void)
{
	Suite *s = suite_create("history");
	TCase *tc = tcase_create("core");

	tcase_add_test(tc, test_iso_dates);
	tcase_add_test(tc, test_relative_dates);
	tcase_add_test(tc, test_bad_dates);
	tcase_add_test(tc, test_prices);
	tcase_add_test(tc, test_price_keys);
	suite_add_tcase(s, tc);
	return s;
}
