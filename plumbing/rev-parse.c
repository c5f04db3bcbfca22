/*
 * plumbing/rev-parse.c - turn names into object ids (git rev-parse).
 */
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <aptix.h>
#include "cli.h"
#include "commands.h"
#include "parse-options.h"

static const char *const rev_parse_usage[] = {
	"aptix rev-parse [--verify] [-q | --quiet] [--short[=<n>]] "
	"[--symbolic-full-name | --abbrev-ref] <name>...",
	"aptix rev-parse (--show-toplevel | --aptix-dir)",
	NULL
};

#define DEFAULT_ABBREV 7

/* The shortest unique abbreviation of id, at least len digits. */
static const char *unique_abbrev(char out[APTIX_OID_HEXSZ + 1],
				 aptix_odb *odb, const aptix_oid *id, int len)
{
	if (aptix_odb_abbrev(out, odb, id, len > 0 ? (size_t)len : 0) < 0)
		die_aptix();
	return out;
}

static int ref_exists(aptix_repo *repo, const char *name, char **full)
{
	aptix_oid id;
	int r = aptix_ref_resolve(&id, full, repo, name);

	if (r == 0)
		return 1;
	free(*full);
	*full = NULL;
	return 0;
}

/*
 * The full name of the ref that name spells, following symbolic refs
 * (git's dwim_ref()), in the order aptix_revparse() tries: HEAD and
 * refs/..., a conversation id, then a unique prefix of one. NULL when
 * name is not a ref (an object id, a name with ~ or ^).
 */
static char *dwim_ref(aptix_repo *repo, const char *name)
{
	char conv[APTIX_CONV_MAXLEN + 1];
	aptix_buf ref = APTIX_BUF_INIT;
	aptix_oid id;
	size_t len = strlen(name);
	char *full = NULL;

	if (strpbrk(name, "~^"))
		return NULL;
	if (!strcmp(name, "HEAD") || !strncmp(name, "refs/", 5)) {
		ref_exists(repo, name, &full);
		return full;
	}
	if (len == APTIX_OID_HEXSZ && aptix_is_hex(name, len))
		return NULL;
	if (aptix_conv_check_id(name) < 0)
		return NULL;
	aptix_buf_printf(&ref, "%s%s", APTIX_CONV_PREFIX, name);
	if (ref_exists(repo, ref.ptr, &full))
		goto done;
	if (len >= APTIX_OID_MINPREFIX && aptix_is_hex(name, len) &&
	    aptix_odb_resolve_prefix(&id, aptix_repo_odb(repo), name,
				     len) == 0)
		goto done;
	if (len >= 4 && aptix_conv_resolve(conv, repo, name) == 0) {
		aptix_buf_clear(&ref);
		aptix_buf_printf(&ref, "%s%s", APTIX_CONV_PREFIX, conv);
		ref_exists(repo, ref.ptr, &full);
	}
done:
	aptix_buf_release(&ref);
	return full;
}

int cmd_rev_parse(int argc, const char **argv, struct aptix_repo *repo)
{
	int verify = 0, quiet = 0, abbrev = INT_MIN, symbolic_full = 0;
	int abbrev_ref = 0, show_toplevel = 0, show_dir = 0, i, r;
	char hex[APTIX_OID_HEXSZ + 1];
	aptix_oid id;
	struct option options[] = {
		OPT_BOOL(0, "verify", &verify, "require exactly one name "
			 "that resolves"),
		OPT__QUIET(&quiet, "with --verify: fail silently"),
		{ OPTION_INTEGER, 0, "short", &abbrev, "n", "print the "
		  "shortest unique abbreviation (implies --verify)",
		  PARSE_OPT_OPTARG | PARSE_OPT_NONEG, DEFAULT_ABBREV, NULL },
		OPT_BOOL(0, "symbolic-full-name", &symbolic_full, "print "
			 "the full name of the ref a name spells"),
		OPT_BOOL(0, "abbrev-ref", &abbrev_ref, "print the short "
			 "name of the ref a name spells"),
		OPT_BOOL(0, "show-toplevel", &show_toplevel, "print the "
			 "workspace root"),
		OPT_BOOL(0, "aptix-dir", &show_dir, "print the path of the "
			 ".aptix directory"),
		OPT_END()
	};

	argc = parse_options(argc, argv, options, rev_parse_usage, 0);
	if (show_toplevel)
		printf("%s\n", aptix_repo_workdir(repo));
	if (show_dir)
		printf("%s\n", aptix_repo_path(repo));
	if (abbrev != INT_MIN) {
		verify = 1;	/* as in git, --short implies --verify */
		if (abbrev < APTIX_OID_MINPREFIX)
			abbrev = APTIX_OID_MINPREFIX;
		if (abbrev > APTIX_OID_HEXSZ)
			abbrev = APTIX_OID_HEXSZ;
	}
	if (verify && argc != 1) {
		if (quiet)
			return 1;
		die("needed a single revision");
	}
	for (i = 0; i < argc; i++) {
		r = aptix_revparse(&id, repo, argv[i]);
		if (r < 0) {
			if (verify && quiet)
				return 1;
			die_aptix();
		}
		if (symbolic_full || abbrev_ref) {
			char *full = dwim_ref(repo, argv[i]);

			if (full)
				printf("%s\n", abbrev_ref ?
				       aptix_ref_shorten(full) : full);
			free(full);
		} else if (abbrev != INT_MIN) {
			printf("%s\n", unique_abbrev(hex, aptix_repo_odb(repo),
						     &id, abbrev));
		} else {
			printf("%s\n", aptix_oid_tostr(hex, &id));
		}
	}
	return 0;
}
