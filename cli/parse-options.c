/*
 * parse-options.c - table-driven command line option parsing.
 */
#ifndef _POSIX_C_SOURCE
# define _POSIX_C_SOURCE 200809L
#endif

#include "parse-options.h"
#include "cli.h"

#include <errno.h>
#include <limits.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <aptix/errors.h>
#include <aptix/history.h>
#include <aptix/object.h>

#define USAGE_OPTS_WIDTH 24
#define USAGE_GAP 2

/* How an option was named on the command line. */
#define OPT_SHORT 1
#define OPT_UNSET 2

/* Results of the parsing steps. */
#define PO_OK 0
#define PO_ERROR (-1)
#define PO_UNKNOWN (-2)
#define PO_HELP (-3)

struct parse_opt_ctx {
	const char **argv;
	int argc;
	int idx;	/* next argv element to read */
	int nr;		/* arguments kept so far, in argv[0..nr-1] */
	const struct option *options;
	enum parse_opt_flags flags;
};

static void default_exit(int code)
{
	exit(code);
}

void (*parse_options_exit)(int code) = default_exit;

static void po_exit(int code) PARSE_OPT_NORETURN;

static void po_exit(int code)
{
	fflush(stdout);
	fflush(stderr);
	if (parse_options_exit)
		parse_options_exit(code);
	exit(code);
}

int cli_parse_ulong(const char *s, unsigned long *out)
{
	unsigned long v;
	char *end;

	if (!s || *s < '0' || *s > '9') {
		errno = EINVAL;
		return -1;
	}
	errno = 0;
	v = strtoul(s, &end, 10);
	if (*end) {
		errno = EINVAL;
		return -1;
	}
	if (errno == ERANGE)
		return -1;
	*out = v;
	return 0;
}

static int parse_int(const char *s, int *out)
{
	long v;
	char *end;

	if (!*s || !(*s == '-' || *s == '+' || (*s >= '0' && *s <= '9'))) {
		errno = EINVAL;
		return -1;
	}
	errno = 0;
	v = strtol(s, &end, 10);
	if (*end || end == s) {
		errno = EINVAL;
		return -1;
	}
	if (errno == ERANGE || v < INT_MIN || v > INT_MAX) {
		errno = ERANGE;
		return -1;
	}
	*out = (int)v;
	return 0;
}

/* Describe the option as the user named it, for error messages. */
static const char *optname(const struct option *opt, int how,
			   char *buf, size_t size)
{
	const char *name = opt->long_name;

	if (how & OPT_SHORT)
		snprintf(buf, size, "option '%c'", opt->short_name);
	else if (!(how & OPT_UNSET))
		snprintf(buf, size, "option '%s'", name);
	else if (!strncmp(name, "no-", 3))
		snprintf(buf, size, "option '%s'", name + 3);
	else
		snprintf(buf, size, "option 'no-%s'", name);
	return buf;
}

static int takes_value(const struct option *opt)
{
	switch (opt->type) {
	case OPTION_STRING:
	case OPTION_INTEGER:
	case OPTION_ULONG:
	case OPTION_STRING_LIST:
	case OPTION_CALLBACK:
		return !(opt->flags & PARSE_OPT_NOARG);
	default:
		return 0;
	}
}

/*
 * Apply opt.  arg is the attached value ("-ovalue", "--out=value") or
 * NULL; a required value that is not attached is taken from the next
 * argument.
 */
static int get_value(struct parse_opt_ctx *ctx, const struct option *opt,
		     const char *arg, int how)
{
	char name[256];
	int unset = !!(how & OPT_UNSET);
	unsigned long ul;
	int n;

	if (unset && arg)
		return error("%s takes no value",
			     optname(opt, how, name, sizeof(name)));
	if (!unset && arg && !takes_value(opt))
		return error("%s takes no value",
			     optname(opt, how, name, sizeof(name)));
	if (!unset && !arg && takes_value(opt) &&
	    !(opt->flags & PARSE_OPT_OPTARG)) {
		if (ctx->idx >= ctx->argc)
			return error("%s requires a value",
				     optname(opt, how, name, sizeof(name)));
		arg = ctx->argv[ctx->idx++];
	}

	switch (opt->type) {
	case OPTION_BOOL:
		*(int *)opt->value = unset ? 0 : 1;
		return PO_OK;
	case OPTION_COUNTUP:
		if (unset)
			*(int *)opt->value = 0;
		else if (*(int *)opt->value < 0)
			*(int *)opt->value = 1;
		else if (*(int *)opt->value < INT_MAX)
			(*(int *)opt->value)++;
		return PO_OK;
	case OPTION_SET_INT:
		*(int *)opt->value = unset ? 0 : (int)opt->defval;
		return PO_OK;
	case OPTION_STRING:
		*(const char **)opt->value = unset ? NULL : arg;
		return PO_OK;
	case OPTION_STRING_LIST:
		if (unset)
			aptix_strlist_release(opt->value);
		else if (aptix_strlist_push(opt->value, arg) < 0)
			die("out of memory");
		return PO_OK;
	case OPTION_INTEGER:
		if (unset) {
			*(int *)opt->value = 0;
			return PO_OK;
		}
		if (!arg) {
			*(int *)opt->value = (int)opt->defval;
			return PO_OK;
		}
		if (parse_int(arg, &n) < 0) {
			optname(opt, how, name, sizeof(name));
			if (errno == ERANGE)
				return error("value '%s' of %s is out of range",
					     arg, name);
			return error("%s expects a numerical value", name);
		}
		*(int *)opt->value = n;
		return PO_OK;
	case OPTION_ULONG:
		if (unset) {
			*(unsigned long *)opt->value = 0;
			return PO_OK;
		}
		if (!arg) {
			*(unsigned long *)opt->value =
				(unsigned long)opt->defval;
			return PO_OK;
		}
		if (cli_parse_ulong(arg, &ul) < 0) {
			optname(opt, how, name, sizeof(name));
			if (errno == ERANGE)
				return error("value '%s' of %s is out of range",
					     arg, name);
			return error("%s expects a numerical value", name);
		}
		*(unsigned long *)opt->value = ul;
		return PO_OK;
	case OPTION_CALLBACK:
		if (!opt->callback)
			return PO_OK;
		return opt->callback(opt, unset ? NULL : arg, unset) ?
			PO_ERROR : PO_OK;
	case OPTION_END:
	case OPTION_GROUP:
		break;
	}
	return PO_ERROR;
}

static const struct option *find_short(const struct option *options,
				       int c)
{
	for (; options && options->type != OPTION_END; options++)
		if (options->type != OPTION_GROUP &&
		    options->short_name == c)
			return options;
	return NULL;
}

static int has_long(const struct option *options, const char *name)
{
	for (; options && options->type != OPTION_END; options++)
		if (options->type != OPTION_GROUP && options->long_name &&
		    !strcmp(options->long_name, name))
			return 1;
	return 0;
}

/*
 * Does the user's arg[0..len) name the string prefix + name?
 * Returns 2 for an exact match, 1 for a proper prefix, 0 otherwise.
 */
static int match_name(const char *arg, size_t len, const char *prefix,
		      const char *name)
{
	size_t plen = strlen(prefix), nlen = strlen(name);

	if (len > plen + nlen)
		return 0;
	if (len <= plen)
		return len == plen && !strncmp(arg, prefix, len) && !nlen ?
			2 : 0;
	if (strncmp(arg, prefix, plen) ||
	    strncmp(arg + plen, name, len - plen))
		return 0;
	return len == plen + nlen ? 2 : 1;
}

/* The long name the user meant, for the ambiguity message. */
static void long_display(const struct option *opt, int unset,
			 const char **prefix, const char **name)
{
	*prefix = "";
	*name = opt->long_name;
	if (!unset)
		return;
	if (!strncmp(opt->long_name, "no-", 3))
		*name = opt->long_name + 3;
	else
		*prefix = "no-";
}

static int parse_long_opt(struct parse_opt_ctx *ctx, const char *arg)
{
	const char *eq = strchr(arg, '=');
	size_t len = eq ? (size_t)(eq - arg) : strlen(arg);
	const char *val = eq ? eq + 1 : NULL;
	const struct option *o, *abbrev = NULL, *ambig = NULL;
	int abbrev_unset = 0, ambig_unset = 0;

	if (!len)
		return PO_UNKNOWN;

	for (o = ctx->options; o->type != OPTION_END; o++) {
		int cand_unset[2];
		int m[2], i, nc = 0;

		if (o->type == OPTION_GROUP || !o->long_name)
			continue;

		m[nc] = match_name(arg, len, "", o->long_name);
		cand_unset[nc++] = 0;
		if (!(o->flags & PARSE_OPT_NONEG)) {
			if (!strncmp(o->long_name, "no-", 3))
				m[nc] = match_name(arg, len, "",
						   o->long_name + 3);
			else
				m[nc] = match_name(arg, len, "no-",
						   o->long_name);
			cand_unset[nc++] = 1;
		}

		for (i = 0; i < nc; i++) {
			if (m[i] == 2)
				return get_value(ctx, o, val, cand_unset[i] ?
						 OPT_UNSET : 0);
			if (m[i] != 1)
				continue;
			if (!abbrev) {
				abbrev = o;
				abbrev_unset = cand_unset[i];
			} else if (abbrev != o ||
				   abbrev_unset != cand_unset[i]) {
				ambig = o;
				ambig_unset = cand_unset[i];
			}
		}
	}

	if (ambig) {
		const char *p1, *n1, *p2, *n2;

		long_display(abbrev, abbrev_unset, &p1, &n1);
		long_display(ambig, ambig_unset, &p2, &n2);
		return error("ambiguous option: %.*s "
			     "(could be --%s%s or --%s%s)",
			     (int)len, arg, p1, n1, p2, n2);
	}
	if (abbrev)
		return get_value(ctx, abbrev, val,
				 abbrev_unset ? OPT_UNSET : 0);
	return PO_UNKNOWN;
}

/*
 * With PARSE_OPT_KEEP_UNKNOWN a bundle holding an unknown switch is
 * kept whole and none of it is applied.
 */
static int bundle_has_unknown(const struct option *options,
			      const char *p)
{
	for (; *p; p++) {
		const struct option *o = find_short(options,
						    (unsigned char)*p);

		if (!o)
			return *p != 'h';
		if (takes_value(o))
			return 0;
	}
	return 0;
}

/* Parse the bundle of short options p (the argument without '-'). */
static int parse_short_opts(struct parse_opt_ctx *ctx, const char *p,
			    int *unknown)
{
	if ((ctx->flags & PARSE_OPT_KEEP_UNKNOWN) &&
	    bundle_has_unknown(ctx->options, p))
		return PO_UNKNOWN;

	while (*p) {
		const struct option *o = find_short(ctx->options,
						    (unsigned char)*p);
		int ret;

		if (!o) {
			*unknown = (unsigned char)*p;
			return *p == 'h' ? PO_HELP : PO_UNKNOWN;
		}
		p++;
		if (takes_value(o))
			return get_value(ctx, o, *p ? p : NULL, OPT_SHORT);
		ret = get_value(ctx, o, NULL, OPT_SHORT);
		if (ret)
			return ret;
	}
	return PO_OK;
}

/* The value of opt as -h shows it ("<file>", "[=<n>]") into buf. */
static void format_argh(char *buf, size_t size, const struct option *opt)
{
	const char *argh = opt->argh ? opt->argh : "...";
	int literal = (opt->flags & PARSE_OPT_LITERAL_ARGHELP) ||
		!opt->argh || strpbrk(opt->argh, "()<>[]|");
	const char *open = "", *close = "";

	*buf = '\0';
	if (!takes_value(opt))
		return;
	if (opt->flags & PARSE_OPT_OPTARG) {
		open = opt->long_name ? "[=" : "[";
		close = "]";
	}
	snprintf(buf, size, "%s%s%s%s%s", open, literal ? "" : "<", argh,
		 literal ? "" : ">", close);
}

/* Tabs and newlines of a help text as spaces, for one TSV field. */
static void put_field(FILE *fp, const char *s)
{
	for (; s && *s; s++)
		fputc(*s == '\t' || *s == '\n' ? ' ' : *s, fp);
}

void dump_options(FILE *fp, const char * const usagestr[],
		  const struct option *options)
{
	const struct option *o;
	char argh[256];
	int desc = 0;

	for (; usagestr && *usagestr; usagestr++) {
		if (!**usagestr) {
			desc = 1;
			continue;
		}
		fprintf(fp, "%s\t", desc ? "text" : "usage");
		put_field(fp, *usagestr);
		fputc('\n', fp);
	}
	for (o = options; o && o->type != OPTION_END; o++) {
		if (o->type == OPTION_GROUP) {
			fputs("group\t", fp);
			put_field(fp, o->help);
			fputc('\n', fp);
			continue;
		}
		if (o->flags & PARSE_OPT_HIDDEN)
			continue;
		format_argh(argh, sizeof(argh), o);
		fputs("option\t", fp);
		if (o->short_name)
			fprintf(fp, "-%c", o->short_name);
		fprintf(fp, "\t%s%s\t%s\t%s\t",
			o->long_name ? "--" : "",
			o->long_name ? o->long_name : "", argh,
			o->long_name && !(o->flags & PARSE_OPT_NONEG) &&
			o->type != OPTION_CALLBACK ? "neg" : "");
		put_field(fp, o->help);
		fputc('\n', fp);
	}
}

int parse_options(int argc, const char **argv,
		  const struct option *options,
		  const char * const usagestr[],
		  enum parse_opt_flags flags)
{
	static const struct option no_options[] = { OPT_END() };
	struct parse_opt_ctx ctx;

	if (argc == 2 && !strcmp(argv[1], "--dump-options")) {
		dump_options(stdout, usagestr, options);
		po_exit(0);
	}

	if (!options)
		options = no_options;
	ctx.argv = argv;
	ctx.argc = argc;
	ctx.idx = 1;
	ctx.nr = 0;
	ctx.options = options;
	ctx.flags = flags;

	while (ctx.idx < ctx.argc) {
		const char *arg = argv[ctx.idx++];
		int unknown = 0;
		int ret;

		if (arg[0] != '-' || !arg[1]) {
			if (flags & PARSE_OPT_STOP_AT_NON_OPTION) {
				ctx.idx--;
				break;
			}
			argv[ctx.nr++] = arg;
			continue;
		}

		if (arg[1] == '-') {
			if (!arg[2]) {
				if (flags & PARSE_OPT_KEEP_DASHDASH)
					ctx.idx--;
				break;
			}
			if (!strcmp(arg + 2, "help") &&
			    !has_long(options, "help"))
				ret = PO_HELP;
			else
				ret = parse_long_opt(&ctx, arg + 2);
		} else {
			ret = parse_short_opts(&ctx, arg + 1, &unknown);
		}

		switch (ret) {
		case PO_OK:
			break;
		case PO_HELP:
			print_usage_with_options(stdout, usagestr, options);
			po_exit(EXIT_USAGE);
		case PO_UNKNOWN:
			if (flags & PARSE_OPT_KEEP_UNKNOWN) {
				argv[ctx.nr++] = arg;
				break;
			}
			if (arg[1] == '-')
				error("unknown option '%.*s'",
				      (int)strcspn(arg + 2, "="), arg + 2);
			else if (unknown >= 0x20 && unknown < 0x7f)
				error("unknown switch '%c'", unknown);
			else
				error("unknown non-ascii option in string: "
				      "'%s'", arg);
			usage_with_options(usagestr, options);
		default:
			po_exit(EXIT_USAGE);
		}
	}

	while (ctx.idx < ctx.argc)
		argv[ctx.nr++] = argv[ctx.idx++];
	if (ctx.nr && (flags & PARSE_OPT_NO_ARGS))
		usage_with_options(usagestr, options);
	if (ctx.nr < ctx.argc)
		argv[ctx.nr] = NULL;
	return ctx.nr;
}

static size_t print_argh(FILE *fp, const struct option *opt)
{
	const char *argh = opt->argh ? opt->argh : "...";
	int literal = (opt->flags & PARSE_OPT_LITERAL_ARGHELP) ||
		!opt->argh || strpbrk(opt->argh, "()<>[]|");
	const char *fmt;
	int n;

	if (opt->flags & PARSE_OPT_OPTARG) {
		if (opt->long_name)
			fmt = literal ? "[=%s]" : "[=<%s>]";
		else
			fmt = literal ? "[%s]" : "[<%s>]";
	} else {
		fmt = literal ? " %s" : " <%s>";
	}
	n = fprintf(fp, fmt, argh);
	return n > 0 ? (size_t)n : 0;
}

static void print_option_help(FILE *fp, const struct option *opt)
{
	size_t pos = 4;
	const char *cp, *np;
	int pad;

	fputs("    ", fp);
	if (opt->short_name) {
		fprintf(fp, "-%c", opt->short_name);
		pos += 2;
	}
	if (opt->short_name && opt->long_name) {
		fputs(", ", fp);
		pos += 2;
	}
	if (opt->long_name) {
		fprintf(fp, "--%s", opt->long_name);
		pos += 2 + strlen(opt->long_name);
	}
	if (takes_value(opt))
		pos += print_argh(fp, opt);

	if (pos == USAGE_OPTS_WIDTH + 1) {
		pad = -1;
	} else if (pos <= USAGE_OPTS_WIDTH) {
		pad = USAGE_OPTS_WIDTH - (int)pos;
	} else {
		fputc('\n', fp);
		pad = USAGE_OPTS_WIDTH;
	}

	for (cp = opt->help ? opt->help : ""; *cp; cp = np) {
		np = strchr(cp, '\n');
		np = np ? np + 1 : cp + strlen(cp);
		fprintf(fp, "%*s%.*s", pad + USAGE_GAP, "",
			(int)(np - cp), cp);
		pad = USAGE_OPTS_WIDTH;
	}
	fputc('\n', fp);
}

void print_usage_with_options(FILE *fp, const char * const usagestr[],
			      const struct option *options)
{
	const struct option *o;

	if (usagestr && *usagestr) {
		fprintf(fp, "usage: %s\n", *usagestr++);
		while (*usagestr && **usagestr)
			fprintf(fp, "   or: %s\n", *usagestr++);
		for (; *usagestr; usagestr++) {
			if (**usagestr)
				fprintf(fp, "    %s\n", *usagestr);
			else
				fputc('\n', fp);
		}
	}

	if (!options || options->type == OPTION_END) {
		fputc('\n', fp);
		return;
	}

	if (options->type != OPTION_GROUP)
		fputc('\n', fp);
	for (o = options; o->type != OPTION_END; o++) {
		if (o->type == OPTION_GROUP) {
			fputc('\n', fp);
			if (o->help && *o->help)
				fprintf(fp, "%s\n", o->help);
			continue;
		}
		if (o->flags & PARSE_OPT_HIDDEN)
			continue;
		print_option_help(fp, o);
	}
	fputc('\n', fp);
}

void usage_with_options(const char * const usagestr[],
			const struct option *options)
{
	fflush(stdout);
	print_usage_with_options(stderr, usagestr, options);
	po_exit(EXIT_USAGE);
}

void usage_msg_opt(const char *msg, const char * const usagestr[],
		   const struct option *options)
{
	fflush(stdout);
	fprintf(stderr, "fatal: %s\n\n", msg);
	usage_with_options(usagestr, options);
}

int parse_opt_date_ms(const struct option *opt, const char *arg, int unset)
{
	int64_t *ms = opt->value;

	if (unset) {
		*ms = 0;
		return 0;
	}
	if (aptix_date_parse(ms, arg, aptix_now_ms()) < 0)
		return error("%s", aptix_error_last()->message);
	if (!*ms)
		*ms = 1;	/* the epoch itself: still a bound */
	return 0;
}

int parse_opt_ulong_given(const struct option *opt, const char *arg,
			  int unset)
{
	struct opt_ulong_given *n = opt->value;

	if (unset) {
		n->given = 0;
		return 0;
	}
	if (cli_parse_ulong(arg, &n->value) < 0) {
		if (errno == ERANGE)
			return error("value '%s' of option '%s' is out of "
				     "range", arg, opt->long_name);
		return error("option '%s' expects a numerical value",
			     opt->long_name);
	}
	n->given = 1;
	return 0;
}
