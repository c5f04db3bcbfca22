/*
 * plumbing/symbolic-ref.c - read, set and delete symbolic refs (git
 * symbolic-ref).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <aptix.h>
#include "cli.h"
#include "commands.h"
#include "parse-options.h"

static const char *const symbolic_ref_usage[] = {
	"aptix symbolic-ref [-m <reason>] <name> <ref>",
	"aptix symbolic-ref [-q] [--short] [--no-recurse] <name>",
	"aptix symbolic-ref --delete [-q] <name>",
	NULL
};

/*
 * Read name as a symbolic ref: 0 with the target in *target (the last
 * one of the chain when recurse; it need not exist), 1 when name is not
 * symbolic. Dies when name does not exist.
 */
static int read_symref(char **target, aptix_repo *repo, const char *name,
		       int recurse)
{
	aptix_ref ref;
	aptix_oid id;
	int r;

	*target = NULL;
	if ((r = aptix_ref_read(&ref, repo, name)) == APTIX_ENOTFOUND)
		die("no such ref: %s", name);
	if (r < 0)
		die_aptix();
	if (!ref.target) {
		aptix_ref_release(&ref);
		return 1;
	}
	if (!recurse) {
		*target = ref.target;
		ref.target = NULL;
		aptix_ref_release(&ref);
		return 0;
	}
	aptix_ref_release(&ref);
	/* the last ref of the chain, also when it is unborn */
	r = aptix_ref_resolve(&id, target, repo, name);
	if (r < 0 && (r != APTIX_ENOTFOUND || !*target))
		die_aptix();
	aptix_error_clear();
	return 0;
}

static int commit_one(aptix_repo *repo, const char *name,
		      const char *target, const char *reason)
{
	aptix_txn *tx = NULL;
	int r;

	if ((r = aptix_txn_new(&tx, repo)) == 0) {
		if (target)
			r = aptix_txn_symref_update(tx, name, target, reason);
		else
			r = aptix_txn_ref_update(tx, name, NULL, NULL, reason);
	}
	if (r == 0)
		r = aptix_txn_commit(tx);
	aptix_txn_free(tx);
	if (r < 0)
		die_aptix();
	return 0;
}

int cmd_symbolic_ref(int argc, const char **argv, struct aptix_repo *repo)
{
	int quiet = 0, shorten = 0, delete = 0, recurse = 1, r;
	const char *reason = NULL;
	char *target = NULL;
	struct option options[] = {
		OPT__QUIET(&quiet, "do not complain when <name> is not a "
			   "symbolic ref"),
		OPT_BOOL('d', "delete", &delete, "delete the symbolic ref"),
		OPT_BOOL(0, "short", &shorten, "print the target without "
			 "'" APTIX_CONV_PREFIX "'"),
		OPT_BOOL(0, "recurse", &recurse, "follow a chain of symbolic "
			 "refs to its end (default)"),
		OPT_STRING('m', NULL, &reason, "reason", "reflog message"),
		OPT_END()
	};

	argc = parse_options(argc, argv, options, symbolic_ref_usage, 0);
	if (reason && !*reason)
		die("refusing to perform update with empty message");
	if (delete) {
		if (argc != 1)
			usage_with_options(symbolic_ref_usage, options);
		if (aptix_ref_check_name(argv[0]) < 0)
			die_aptix();
		if (read_symref(&target, repo, argv[0], 0))
			die("cannot delete %s, not a symbolic ref", argv[0]);
		free(target);
		if (!strcmp(argv[0], "HEAD"))
			die("deleting '%s' is not allowed", argv[0]);
		return commit_one(repo, argv[0], NULL,
				  reason ? reason : "symbolic-ref: delete");
	}
	switch (argc) {
	case 1:
		if (aptix_ref_check_name(argv[0]) < 0)
			die_aptix();
		r = read_symref(&target, repo, argv[0], recurse);
		if (r) {
			if (quiet)
				return 1;
			die("ref %s is not a symbolic ref", argv[0]);
		}
		printf("%s\n", shorten ? aptix_ref_shorten(target) : target);
		free(target);
		return 0;
	case 2:
		if (aptix_ref_check_name(argv[0]) < 0)
			die_aptix();
		if (strncmp(argv[1], "refs/", 5))
			die("refusing to point %s outside of refs/", argv[0]);
		if (aptix_ref_check_name(argv[1]) < 0)
			die_aptix();
		return commit_one(repo, argv[0], argv[1],
				  reason ? reason : "symbolic-ref");
	default:
		usage_with_options(symbolic_ref_usage, options);
	}
}
