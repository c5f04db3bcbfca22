/*
 * parse-options.h - table-driven command line option parsing, modelled
 * on git's parse-options.
 *
 * A command describes its options with an array of struct option built
 * from the OPT_*() macros and terminated by OPT_END(), then calls
 *
 *	argc = parse_options(argc, argv, options, usagestr, 0);
 *
 * argv[0] (the command name) is skipped.  Recognised options are stored
 * through their value pointers and removed; the remaining arguments are
 * moved to argv[0..argc-1] (argv[argc] is set to NULL) and their count
 * is returned.
 *
 * Accepted syntax: bundled short options ("-abc"), short values
 * attached or separate ("-ovalue", "-o value"), long values with '=' or
 * separate ("--out=x", "--out x"), "--no-<long>" to reset an option,
 * unambiguous prefixes of long names ("--verb" for "--verbose"), "--"
 * to end the options, and a lone "-" as an ordinary argument.  Options
 * and arguments may be interleaved unless PARSE_OPT_STOP_AT_NON_OPTION.
 *
 * "-h" and "--help" (unless the table defines them) print the usage to
 * stdout and exit with 129.  Unknown options print an error and the
 * usage to stderr and exit with 129; other errors (missing value, bad
 * number, ambiguous prefix, failing callback) print an error and exit
 * with 129.
 */
#ifndef APTIX_PARSE_OPTIONS_H
#define APTIX_PARSE_OPTIONS_H

#include <stddef.h>
#include <stdio.h>
#include <aptix/strlist.h>

#if defined(__GNUC__) || defined(__clang__)
# define PARSE_OPT_NORETURN __attribute__((noreturn))
#else
# define PARSE_OPT_NORETURN
#endif

/*
 * Option types and what value points to; "--no-<long>" resets the value
 * (0, NULL, an empty list) or calls the callback with unset = 1.
 */
enum parse_opt_type {
	OPTION_END,
	OPTION_GROUP,
	OPTION_BOOL,		/* int *: set to 1 */
	OPTION_COUNTUP,		/* int *: incremented per use */
	OPTION_STRING,		/* const char **: points into argv */
	OPTION_INTEGER,		/* int *: decimal */
	OPTION_ULONG,		/* unsigned long *: decimal, no sign */
	OPTION_STRING_LIST,	/* aptix_strlist *: appended to */
	OPTION_CALLBACK,	/* anything: callback(opt, arg, unset) */
	OPTION_SET_INT		/* int *: set to defval */
};

/* Flags for parse_options(). */
enum parse_opt_flags {
	/* keep "--" in the remaining arguments */
	PARSE_OPT_KEEP_DASHDASH = 1,
	/* stop at the first non-option argument (no permutation) */
	PARSE_OPT_STOP_AT_NON_OPTION = 2,
	/* leave unknown options in the remaining arguments */
	PARSE_OPT_KEEP_UNKNOWN = 4,
	/* the command takes no argument: the usage when one remains */
	PARSE_OPT_NO_ARGS = 8
};

/* Flags for a single struct option (its flags member). */
enum parse_opt_option_flags {
	/* the value is optional and must be attached: -ovalue, --o=value */
	PARSE_OPT_OPTARG = 1,
	/* the option takes no value (set by the non-value macros) */
	PARSE_OPT_NOARG = 2,
	/* no --no-<long> form */
	PARSE_OPT_NONEG = 4,
	/* not shown in the usage */
	PARSE_OPT_HIDDEN = 8,
	/* print argh as is instead of as "<argh>" */
	PARSE_OPT_LITERAL_ARGHELP = 16
};

struct option;

/*
 * Callback of OPTION_CALLBACK: arg is the value (NULL for NOARG
 * options, for an absent OPTARG value and when unset), unset is 1 for
 * "--no-<long>".  Return 0 on success; on failure print a message with
 * error() and return -1, which makes parse_options() exit with 129.
 */
typedef int parse_opt_cb(const struct option *opt, const char *arg,
			 int unset);

struct option {
	enum parse_opt_type type;
	int short_name;		/* 0 if none */
	const char *long_name;	/* NULL if none */
	void *value;
	const char *argh;	/* name of the value in the usage */
	const char *help;	/* the heading for OPT_GROUP */
	int flags;		/* enum parse_opt_option_flags */
	long defval;		/* OPTION_SET_INT value; OPTARG default */
	int (*callback)(const struct option *opt, const char *arg,
			int unset);
};

#define OPT_END() \
	{ OPTION_END, 0, NULL, NULL, NULL, NULL, 0, 0, NULL }
#define OPT_GROUP(h) \
	{ OPTION_GROUP, 0, NULL, NULL, NULL, (h), 0, 0, NULL }
#define OPT_BOOL_F(s, l, v, h, f) \
	{ OPTION_BOOL, (s), (l), (v), NULL, (h), \
	  PARSE_OPT_NOARG | (f), 1, NULL }
#define OPT_BOOL(s, l, v, h) OPT_BOOL_F(s, l, v, h, 0)
#define OPT_HIDDEN_BOOL(s, l, v, h) OPT_BOOL_F(s, l, v, h, PARSE_OPT_HIDDEN)
#define OPT_COUNTUP(s, l, v, h) \
	{ OPTION_COUNTUP, (s), (l), (v), NULL, (h), \
	  PARSE_OPT_NOARG, 0, NULL }
#define OPT__VERBOSE(v, h) OPT_COUNTUP('v', "verbose", (v), (h))
#define OPT__QUIET(v, h) OPT_COUNTUP('q', "quiet", (v), (h))
#define OPT_STRING_F(s, l, v, a, h, f) \
	{ OPTION_STRING, (s), (l), (v), (a), (h), (f), 0, NULL }
#define OPT_STRING(s, l, v, a, h) OPT_STRING_F(s, l, v, a, h, 0)
#define OPT_INTEGER(s, l, v, h) \
	{ OPTION_INTEGER, (s), (l), (v), "n", (h), 0, 0, NULL }
#define OPT_ULONG(s, l, v, h) \
	{ OPTION_ULONG, (s), (l), (v), "n", (h), 0, 0, NULL }
#define OPT_STRING_LIST(s, l, v, a, h) \
	{ OPTION_STRING_LIST, (s), (l), (v), (a), (h), 0, 0, NULL }
#define OPT_CALLBACK_F(s, l, v, a, h, f, cb) \
	{ OPTION_CALLBACK, (s), (l), (v), (a), (h), (f), 0, (cb) }
#define OPT_CALLBACK(s, l, v, a, h, cb) \
	OPT_CALLBACK_F(s, l, v, a, h, 0, cb)
#define OPT_SET_INT_F(s, l, v, h, i, f) \
	{ OPTION_SET_INT, (s), (l), (v), NULL, (h), \
	  PARSE_OPT_NOARG | (f), (i), NULL }
#define OPT_SET_INT(s, l, v, h, i) OPT_SET_INT_F(s, l, v, h, i, 0)

/*
 * Parse argv as described at the top of this file; returns the number
 * of remaining arguments, which are moved to argv[0..n-1].
 */
/*
 * A number that may or may not have been given: OPT_ULONG_GIVEN fills
 * a struct opt_ulong_given (--no-<name> clears it).
 */
struct opt_ulong_given {
	int given;
	unsigned long value;
};
int parse_opt_ulong_given(const struct option *opt, const char *arg,
			  int unset);
#define OPT_ULONG_GIVEN(s, l, v, a, h) \
	OPT_CALLBACK(s, l, v, a, h, parse_opt_ulong_given)

/*
 * A date (ISO, "2 days ago": aptix_date_parse) into an int64_t of
 * milliseconds; 0 when unset (the epoch itself is kept as 1: still a
 * bound).
 */
int parse_opt_date_ms(const struct option *opt, const char *arg, int unset);
#define OPT_DATE_MS(l, v, h) OPT_CALLBACK(0, l, v, "date", h, \
					  parse_opt_date_ms)

int parse_options(int argc, const char **argv,
		  const struct option *options,
		  const char * const usagestr[],
		  enum parse_opt_flags flags);

/*
 * Write the usage in git's format to fp: "usage: " before the first
 * usagestr line, "   or: " before the following ones up to an empty
 * string or the terminating NULL, the strings after an empty string as
 * indented description lines, then the option table with the help text
 * at column 26.
 */
void print_usage_with_options(FILE *fp, const char * const usagestr[],
			      const struct option *options);

/*
 * "aptix <cmd> --dump-options" (alone) prints this and exits with 0:
 * the usage and option table as tab-separated lines, for the man pages
 * and the shell completions (Documentation/gen-doc.sh), so that they
 * are made from the table -h prints and cannot drift from it:
 *	usage	<synopsis line>
 *	text	<description line of the usage>
 *	group	<heading>
 *	option	<-s>	<--long>	<value as -h shows it>	<neg>	<help>
 * neg is "neg" when "--no-<long>" is accepted. Hidden options are left
 * out.
 */
void dump_options(FILE *fp, const char * const usagestr[],
		  const struct option *options);

/* Print the usage to stderr and exit with 129. */
void usage_with_options(const char * const usagestr[],
			const struct option *options) PARSE_OPT_NORETURN;

/* Print "fatal: <msg>", a blank line and the usage; exit with 129. */
void usage_msg_opt(const char *msg, const char * const usagestr[],
		   const struct option *options) PARSE_OPT_NORETURN;

/*
 * Every exit of this module goes through this hook (default: exit()).
 * Tests may replace it with a function that longjmp()s out; if the hook
 * returns, exit() is called anyway.
 */
extern void (*parse_options_exit)(int code);

/*
 * Strictly parse a decimal unsigned long: digits only (no sign, no
 * whitespace, no trailing garbage), no overflow.  Returns 0 and stores
 * the value on success; returns -1 with errno set to EINVAL or ERANGE
 * and *out untouched on failure.
 */
int cli_parse_ulong(const char *s, unsigned long *out);

#endif
