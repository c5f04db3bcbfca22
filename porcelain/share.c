/*
 * porcelain/share.c - aptix share: on a shared store (PostgreSQL), a
 * conversation is its user's alone until shared with the org; this
 * shares it, makes it private again (--unshare), or lists what the
 * user sees with its owner.
 *
 * A conversation another user keeps private is reported exactly as one
 * that does not exist ("conversation '<id>' not found"): the store's
 * row-level security shows it to nobody else, and nothing here asks
 * more than that.
 */
#include <stdio.h>
#include <string.h>
#include <aptix.h>
#include "cli.h"
#include "commands.h"
#include "parse-options.h"
#include "view.h"

static const char *const share_usage[] = {
	"aptix share [--json]",
	"aptix share [--unshare] [--json] <conversation>...",
	"",
	"On a shared store (PostgreSQL), a conversation is seen by the user",
	"who started it alone until shared: then every user of the org sees,",
	"continues and forks it, until its owner unshares it. Without a",
	"conversation, lists those the user sees: id, shared or private,",
	"owner. <conversation>: an id, a unique prefix of one, or HEAD.",
	NULL
};

static json_t *info_json(const char *conv, const char *owner, int shared,
			 int mine)
{
	json_t *o = view_json_object();

	view_json_set(o, "conversation", view_json_str(conv));
	view_json_set(o, "owner", *owner ? view_json_str(owner) :
		      json_null());
	view_json_set(o, "shared", json_boolean(shared));
	view_json_set(o, "mine", json_boolean(mine));
	return o;
}

static int list_one(const aptix_share_info *info, void *payload)
{
	json_t *all = payload;
	const char *owner = *info->owner ? info->owner : "-";

	if (all) {
		view_json_append(all, info_json(info->conversation,
						info->owner, info->shared,
						info->mine));
		return 0;
	}
	cli_print_oneline(stdout, info->conversation,
			  strlen(info->conversation));
	printf(" %s ", info->shared ? "shared" : "private");
	cli_print_oneline(stdout, owner, strlen(owner));
	putchar('\n');
	return 0;
}

int cmd_share(int argc, const char **argv, struct aptix_repo *repo)
{
	char id[APTIX_CONV_MAXLEN + 1];
	const char *user;
	json_t *all = NULL;
	int unshare = 0, json = 0, i;
	struct option options[] = {
		OPT_BOOL(0, "unshare", &unshare,
			 "make the conversations private again"),
		OPT_BOOL(0, "json", &json, "print JSON"),
		OPT_END()
	};

	argc = parse_options(argc, argv, options, share_usage, 0);
	if (unshare && argc == 0)
		usage_with_options(share_usage, options);
	if (json)
		all = view_json_array();
	if (argc == 0) {
		if (aptix_share_foreach(repo, list_one, all) < 0)
			die_aptix();
		if (all)
			view_json_print(all);
		return 0;
	}
	user = aptix_share_user(repo);
	for (i = 0; i < argc; i++) {
		if (aptix_conv_resolve(id, repo, argv[i]) < 0 ||
		    aptix_share_set(repo, id, !unshare) < 0)
			die_aptix();
		if (all)
			view_json_append(all, info_json(id, user ? user : "",
							!unshare, 1));
		else
			printf("%s conversation '%s'\n", unshare ?
			       "Unshared" : "Shared", id);
	}
	if (all)
		view_json_print(all);
	return 0;
}
