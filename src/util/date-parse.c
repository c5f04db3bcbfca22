/*
 * src/util/date-parse.c - dates as a user types them (see aptix/history.h):
 * the ISO forms aptix prints, and the relative forms of git's
 * approxidate that people actually type ("2 days ago", "yesterday",
 * "3.weeks.ago"). Anything else is refused rather than guessed: a filter
 * that silently means something else is worse than an error.
 */
#include "util/common.h"
#include "aptix/history.h"
#include <ctype.h>
#include <stdlib.h>
#include <strings.h>
#include <time.h>

static int bad_date(const char *text)
{
	aptix_error_set(APTIX_ERROR_INVALID, "invalid date '%s' (expected "
			"YYYY-MM-DD[ HH:MM[:SS]], '<n> <unit>s ago', "
			"'yesterday', 'today' or 'now')", text);
	return APTIX_EINVALID;
}

/* Read exactly n digits. */
static int digits(int *out, const char **p, int n)
{
	int v = 0, i;

	for (i = 0; i < n; i++) {
		if (!isdigit((unsigned char)(*p)[i]))
			return -1;
		v = v * 10 + ((*p)[i] - '0');
	}
	*p += n;
	*out = v;
	return 0;
}

static int local_midnight(int64_t *ms, int64_t now_ms, int days_back)
{
	time_t t = (time_t)(now_ms / 1000);
	struct tm tm;

	if (!localtime_r(&t, &tm))
		return -1;
	tm.tm_hour = tm.tm_min = tm.tm_sec = 0;
	tm.tm_mday -= days_back;
	tm.tm_isdst = -1;
	t = mktime(&tm);
	if (t == (time_t)-1)
		return -1;
	*ms = (int64_t)t * 1000;
	return 0;
}

/*
 * "YYYY-MM-DD[( |T)HH:MM[:SS[.fff]]][Z|(+|-)HH[:]MM]"; the fraction of a
 * second is kept to the millisecond when keep_ms says so, else dropped.
 */
static int parse_iso(int64_t *ms, const char *s, int keep_ms)
{
	struct tm tm;
	int y, mo, d, h = 0, mi = 0, sec = 0, zh, zm, sign, has_zone = 0;
	int frac = 0, scale = 100;
	int64_t off = 0;
	time_t t;

	memset(&tm, 0, sizeof(tm));
	if (digits(&y, &s, 4) || *s++ != '-' || digits(&mo, &s, 2) ||
	    *s++ != '-' || digits(&d, &s, 2))
		return -1;
	if (*s == ' ' || *s == 'T') {
		s++;
		if (digits(&h, &s, 2) || *s++ != ':' || digits(&mi, &s, 2))
			return -1;
		if (*s == ':') {
			s++;
			if (digits(&sec, &s, 2))
				return -1;
			if (*s == '.') {
				s++;
				for (; isdigit((unsigned char)*s); s++) {
					frac += (*s - '0') * scale;
					scale /= 10;
				}
			}
		}
	}
	if (*s == ' ')
		s++;
	if (*s == 'Z' || *s == 'z') {
		has_zone = 1;
		s++;
	} else if (*s == '+' || *s == '-') {
		sign = *s++ == '-' ? -1 : 1;
		if (digits(&zh, &s, 2))
			return -1;
		if (*s == ':')
			s++;
		if (digits(&zm, &s, 2))
			return -1;
		has_zone = 1;
		off = sign * ((int64_t)zh * 3600 + zm * 60);
	}
	if (*s || mo < 1 || mo > 12 || d < 1 || d > 31 || h > 23 ||
	    mi > 59 || sec > 60)
		return -1;
	tm.tm_year = y - 1900;
	tm.tm_mon = mo - 1;
	tm.tm_mday = d;
	tm.tm_hour = h;
	tm.tm_min = mi;
	tm.tm_sec = sec;
	tm.tm_isdst = -1;
	t = has_zone ? timegm(&tm) : mktime(&tm);
	if (t == (time_t)-1)
		return -1;
	*ms = ((int64_t)t - off) * 1000 + (keep_ms ? frac : 0);
	return 0;
}

int aptix__date_parse_iso_ms(int64_t *ms, const char *text)
{
	return text ? parse_iso(ms, text, 1) : -1;
}

static const struct {
	const char *name;
	int64_t seconds;
} units[] = {
	{ "second", 1 }, { "sec", 1 }, { "minute", 60 }, { "min", 60 },
	{ "hour", 3600 }, { "day", 86400 }, { "week", 7 * 86400 },
	{ "month", 30 * 86400 }, { "year", 365 * 86400 },
};

/* "<n> <unit>[s] [ago]", words separated by blanks or dots. */
static int parse_relative(int64_t *ms, const char *s, int64_t now_ms)
{
	char *end;
	unsigned long n;
	size_t i, len;

	while (*s == ' ')
		s++;
	if (!isdigit((unsigned char)*s))
		return -1;
	n = strtoul(s, &end, 10);
	if (n > 1000000UL)
		return -1;
	s = end;
	while (*s == ' ' || *s == '.')
		s++;
	for (len = 0; isalpha((unsigned char)s[len]); len++)
		;
	if (len > 1 && s[len - 1] == 's')
		len--;
	for (i = 0; i < ARRAY_SIZE(units); i++)
		if (strlen(units[i].name) == len &&
		    !strncasecmp(units[i].name, s, len))
			break;
	if (i == ARRAY_SIZE(units))
		return -1;
	s += len;
	if (*s == 's')
		s++;
	while (*s == ' ' || *s == '.')
		s++;
	if (!strncasecmp(s, "ago", 3))
		s += 3;
	while (*s == ' ')
		s++;
	if (*s)
		return -1;
	*ms = now_ms - (int64_t)n * units[i].seconds * 1000;
	return 0;
}

int aptix_date_parse(int64_t *ms, const char *text, int64_t now_ms)
{
	char *end;
	long long secs;

	if (!text || !*text)
		return bad_date(text ? text : "");
	if (!strcasecmp(text, "now")) {
		*ms = now_ms;
		return 0;
	}
	if (!strcasecmp(text, "today"))
		return local_midnight(ms, now_ms, 0) ? bad_date(text) : 0;
	if (!strcasecmp(text, "yesterday"))
		return local_midnight(ms, now_ms, 1) ? bad_date(text) : 0;
	if (text[0] == '@' && isdigit((unsigned char)text[1])) {
		secs = strtoll(text + 1, &end, 10);
		if (*end || secs > INT64_MAX / 1000)
			return bad_date(text);
		*ms = (int64_t)secs * 1000;
		return 0;
	}
	if (!parse_iso(ms, text, 0) || !parse_relative(ms, text, now_ms))
		return 0;
	return bad_date(text);
}
