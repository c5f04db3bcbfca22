/*
 * porcelain/switch.c - aptix switch: make a conversation the current
 * one (HEAD -> refs/conversations/<id>), or create a new empty one.
 */
#ifndef _POSIX_C_SOURCE
# define _POSIX_C_SOURCE 200809L
#endif
#include <string.h>

#include "view.h"
#include "cli.h"
#include "commands.h"
#include "parse-options.h"

static const char *const switch_usage[] = {
	"aptix switch <conversation>",
	"aptix switch -",
	"aptix switch (-c | --create) [<new-conversation>]",
	"",
	"Makes a conversation (an id or a unique prefix of one) current;",
	"'-' is the one HEAD was on before the last switch (@{-1}).",
	"With -c, starts a new empty conversation (a random id unless one",
	"is given) and makes it current.",
	NULL
};

/* Does anything already use the conversation id? */
static int conv_exists(aptix_repo *repo, const char *id)
{
	aptix_conv_info ci;
	aptix_ref ref;
	char name[sizeof(APTIX_CONV_PREFIX) + APTIX_CONV_MAXLEN];

	if (aptix_index_conversation(&ci, repo, id) == 0)
		return 1;
	snprintf(name, sizeof(name), "%s%s", APTIX_CONV_PREFIX, id);
	if (aptix_ref_read(&ref, repo, name) == 0) {
		aptix_ref_release(&ref);
		return 1;
	}
	aptix_error_clear();
	return 0;
}

static void set_head(aptix_repo *repo, const char *id)
{
	char target[sizeof(APTIX_CONV_PREFIX) + APTIX_CONV_MAXLEN];
	aptix_txn *tx;

	snprintf(target, sizeof(target), "%s%s", APTIX_CONV_PREFIX, id);
	/* the store adds ": moving from <old> to <new>" */
	if (aptix_txn_new(&tx, repo) < 0 ||
	    aptix_txn_symref_update(tx, "HEAD", target, "switch") < 0 ||
	    aptix_txn_commit(tx) < 0)
		die_aptix();
	aptix_txn_free(tx);
}

static void print_title(aptix_repo *repo, const char *id)
{
	aptix_conv_info ci;

	if (aptix_index_conversation(&ci, repo, id) == 0 && *ci.title) {
		printf(" (");
		view_puts(stdout, ci.title);
		putchar(')');
	} else {
		aptix_error_clear();
	}
}

int cmd_switch(int argc, const char **argv, struct aptix_repo *repo)
{
	int create = 0;
	char id[APTIX_CONV_MAXLEN + 1], cur[APTIX_CONV_MAXLEN + 1];
	struct option options[] = {
		OPT_BOOL('c', "create", &create,
			 "start a new empty conversation"),
		OPT_END()
	};

	argc = parse_options(argc, argv, options, switch_usage, 0);
	if (argc > 1 || (!create && argc != 1))
		usage_with_options(switch_usage, options);

	if (create) {
		if (argc) {
			if (aptix_conv_check_new_id(argv[0]) < 0)
				die_aptix();
			if (conv_exists(repo, argv[0]))
				die("conversation '%s' already exists",
				    argv[0]);
			snprintf(id, sizeof(id), "%s", argv[0]);
		} else {
			if (aptix_uuid_v4(id) < 0)
				die_aptix();
		}
		set_head(repo, id);
		printf("Switched to a new conversation '%s'\n", id);
		return 0;
	}

	if (!strcmp(argv[0], "-") || !strcmp(argv[0], "@{-1}")) {
		if (aptix_conv_previous(id, repo, 1) < 0)
			die_aptix();
	} else if (aptix_conv_resolve(id, repo, argv[0]) < 0) {
		die_aptix();
	}
	if (aptix_conv_resolve(cur, repo, "HEAD") == 0 && !strcmp(cur, id)) {
		printf("Already on conversation '%s'", id);
		print_title(repo, id);
		putchar('\n');
		return 0;
	}
	aptix_error_clear();
	set_head(repo, id);
	printf("Switched to conversation '%s'", id);
	print_title(repo, id);
	putchar('\n');
	return 0;
}
