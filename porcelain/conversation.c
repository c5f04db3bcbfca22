/*
 * porcelain/conversation.c - aptix conversation: conversations as names,
 * as git branch manages branches.
 *
 *	list       the listing (what `aptix sessions` prints, same options)
 *	rename     set the title (aptix_conversation_set_title)
 *	archive    seed 002's soft delete: hidden from sessions, log --all
 *	unarchive  and the picker unless asked (aptix_conversation_set_archived)
 *	delete     the ref goes (its reflog records it); the sessions stay,
 *	           reachable through the reflog until a future gc. As git's
 *	           branch -d, a conversation no other ref reaches needs -D
 *
 * Every write goes through the library's transaction; this file only
 * resolves names and reports.
 */
#include <stdio.h>
#include <string.h>
#include <aptix.h>

#include "cli.h"
#include "commands.h"
#include "parse-options.h"

static const char *const conversation_usage[] = {
	"aptix conversation [list] [<sessions options>]",
	"aptix conversation rename [<conversation>] <title>",
	"aptix conversation archive <conversation>...",
	"aptix conversation unarchive <conversation>...",
	"aptix conversation delete [-f | -D] <conversation>...",
	"",
	"list takes the options of 'aptix sessions' (see aptix sessions -h).",
	"A conversation is an id or a unique prefix of one; rename without",
	"one renames the current conversation.",
	NULL
};

/* The full id of a conversation the user named (dies when unknown). */
static void resolve(char *out, aptix_repo *repo, const char *name)
{
	if (aptix_conv_resolve(out, repo, name) < 0)
		die_aptix();
}

static int conv_rename(int argc, const char **argv, aptix_repo *repo)
{
	char id[APTIX_CONV_MAXLEN + 1];
	const char *keys[2];
	struct option options[] = {
		OPT_END()
	};

	argc = parse_options(argc, argv, options, conversation_usage, 0);
	if (argc < 1 || argc > 2)
		usage_with_options(conversation_usage, options);
	resolve(id, repo, argc == 2 ? argv[0] : "HEAD");
	cli_env_keys(keys);
	if (aptix_conversation_set_title_keys(repo, id, argv[argc - 1], keys,
					      2) < 0)
		die_aptix();
	printf("Renamed conversation '%s'\n", id);
	return 0;
}

static int conv_archive(int argc, const char **argv, aptix_repo *repo,
			int archived)
{
	char id[APTIX_CONV_MAXLEN + 1];
	int i;
	struct option options[] = {
		OPT_END()
	};

	argc = parse_options(argc, argv, options, conversation_usage, 0);
	if (argc < 1)
		usage_with_options(conversation_usage, options);
	for (i = 0; i < argc; i++) {
		resolve(id, repo, argv[i]);
		if (aptix_conversation_set_archived(repo, id, archived) < 0)
			die_aptix();
		printf("%s conversation '%s'\n",
		       archived ? "Archived" : "Unarchived", id);
	}
	return 0;
}

/*
 * Whether another ref reaches a conversation's head, as git's branch -d
 * asks whether a branch is merged: else deleting it leaves its sessions
 * to the reflog alone.
 */
struct reach {
	aptix_repo *repo;
	const char *self;		/* the ref being deleted */
	const aptix_oid *head;		/* its session */
	int found;
};

static int reach_cb(const aptix_ref *ref, void *payload)
{
	struct reach *rc = payload;
	int r;

	if (ref->target || !strcmp(ref->name, rc->self))
		return 0;
	r = aptix_index_is_ancestor(rc->repo, rc->head, &ref->oid);
	if (r == APTIX_ENOTFOUND) {
		aptix_error_clear();	/* a ref to no indexed session */
		return 0;
	}
	if (r == 1) {
		rc->found = 1;
		return APTIX_ITEROVER;
	}
	return r;
}

static int reached_elsewhere(aptix_repo *repo, const char *ref,
			     const aptix_oid *head)
{
	struct reach rc;
	int r;

	rc.repo = repo;
	rc.self = ref;
	rc.head = head;
	rc.found = 0;
	r = aptix_ref_foreach(repo, "refs/", reach_cb, &rc);
	if (r < 0 && r != APTIX_ITEROVER)
		die_aptix();
	return rc.found;
}

static int delete_one(aptix_repo *repo, const char *name, int force)
{
	char id[APTIX_CONV_MAXLEN + 1], cur[APTIX_CONV_MAXLEN + 1];
	aptix_buf ref = APTIX_BUF_INIT;
	aptix_txn *tx = NULL;
	aptix_oid head;

	resolve(id, repo, name);
	if (aptix_conv_resolve(cur, repo, "HEAD") == 0 && !strcmp(cur, id) &&
	    !force)
		die("cannot delete the current conversation '%s': switch to "
		    "another one first (or use --force)", id);
	aptix_error_clear();
	aptix_buf_printf(&ref, "%s%s", APTIX_CONV_PREFIX, id);
	if (aptix_buf_oom(&ref))
		die("out of memory");
	if (aptix_ref_resolve(&head, NULL, repo, ref.ptr) < 0)
		die("conversation '%s' has no ref to delete (its first turn "
		    "failed?): archive it instead", id);
	if (!force && !reached_elsewhere(repo, ref.ptr, &head)) {
		error("conversation '%s' is not reached by another "
		      "conversation: only the reflog would keep its sessions",
		      id);
		fprintf(stderr, "hint: if you are sure you want to delete it, "
			"run 'aptix conversation delete -D %s'\n", name);
		aptix_buf_release(&ref);
		return -1;
	}
	/* compare-and-swap: a turn that lands meanwhile wins */
	if (aptix_txn_new(&tx, repo) < 0 ||
	    aptix_txn_ref_update(tx, ref.ptr, NULL, &head,
				 "conversation: delete") < 0 ||
	    aptix_txn_commit(tx) < 0)
		die_aptix();
	printf("Deleted conversation '%s' (was %.12s)\n", id,
	       aptix_oid_hex(&head));
	aptix_txn_free(tx);
	aptix_buf_release(&ref);
	return 0;
}

static int conv_delete(int argc, const char **argv, aptix_repo *repo)
{
	int force = 0, i, ret = 0;
	struct option options[] = {
		OPT_BOOL('f', "force", &force, "delete the current "
			 "conversation, or one no other conversation reaches"),
		OPT_BOOL('D', NULL, &force, "same as --force"),
		OPT_END()
	};

	argc = parse_options(argc, argv, options, conversation_usage, 0);
	if (argc < 1)
		usage_with_options(conversation_usage, options);
	for (i = 0; i < argc; i++)
		if (delete_one(repo, argv[i], force) < 0)
			ret = 1;	/* as git branch -d: the others go on */
	return ret;
}

int cmd_conversation(int argc, const char **argv, struct aptix_repo *repo)
{
	const char *sub = argc > 1 ? argv[1] : "list";
	struct option options[] = {
		OPT_END()
	};

	if (!strcmp(sub, "list"))
		return cmd_sessions(argc > 1 ? argc - 1 : argc,
				    argc > 1 ? argv + 1 : argv, repo);
	if (!strcmp(sub, "rename"))
		return conv_rename(argc - 1, argv + 1, repo);
	if (!strcmp(sub, "archive"))
		return conv_archive(argc - 1, argv + 1, repo, 1);
	if (!strcmp(sub, "unarchive"))
		return conv_archive(argc - 1, argv + 1, repo, 0);
	if (!strcmp(sub, "delete"))
		return conv_delete(argc - 1, argv + 1, repo);
	if (*sub == '-' && strcmp(sub, "-h") && strcmp(sub, "--help") &&
	    strcmp(sub, "--dump-options"))
		return cmd_sessions(argc, argv, repo);	/* list's options */
	parse_options(argc, argv, options, conversation_usage, 0);
	error("unknown subcommand '%s'", sub);
	usage_with_options(conversation_usage, options);
	return 129;
}
