/*
 * porcelain/config.c - aptix config: get and set options, like git
 * config.
 *
 *	aptix config <key>		the effective value (exit 1 if unset)
 *	aptix config <key> <value>	set it in the store's .aptix/config
 *	aptix config --unset <key>	remove it from there (exit 5 if absent)
 *	aptix config --list		key=value for everything set, in load
 *					order: user file, store file, env
 *
 * --show-origin prefixes "file:<path>" or "env:<VARIABLE>" and a tab.
 * Built-in defaults are not shown: only what is set.
 */
#include <stdio.h>
#include <string.h>
#include <aptix.h>
#include <aptix/config.h>
#include "cli.h"
#include "commands.h"
#include "parse-options.h"

static const char *const config_usage[] = {
	"aptix config [--show-origin] [--get] <key>",
	"aptix config <key> <value>",
	"aptix config --unset <key>",
	"aptix config [--show-origin] (-l | --list)",
	NULL
};

static void print_setting(const char *origin, const char *key,
			  const char *value)
{
	if (origin) {
		cli_print_sanitized(stdout, origin, strlen(origin));
		putchar('\t');
	}
	if (key) {
		cli_print_sanitized(stdout, key, strlen(key));
		putchar('=');
	}
	cli_print_sanitized(stdout, value, strlen(value));
	putchar('\n');
}

static int list_cb(const char *key, const char *value, const char *origin,
		   void *payload)
{
	int show_origin = *(int *)payload;

	print_setting(show_origin ? origin : NULL, key, value);
	return 0;
}

/* Like git: a key without a section is a usage error of its own. */
static int check_key(const char *key)
{
	const char *dot = strrchr(key, '.');

	if (!dot || dot == key || !dot[1]) {
		error("key does not contain a section: %s", key);
		return -1;
	}
	return 0;
}

int cmd_config(int argc, const char **argv, struct aptix_repo *repo)
{
	aptix_config *cfg = NULL;
	const char *get = NULL, *unset = NULL, *value;
	int list = 0, show_origin = 0, status = 0, r;
	struct option options[] = {
		OPT_BOOL('l', "list", &list, "list every setting"),
		OPT_BOOL(0, "show-origin", &show_origin, "show where each "
			 "setting comes from (file or environment)"),
		OPT_STRING(0, "get", &get, "key", "print the value of a key"),
		OPT_STRING(0, "unset", &unset, "key", "remove a key from the "
			   "store's config"),
		OPT_END()
	};

	argc = parse_options(argc, argv, options, config_usage, 0);
	if (!!list + !!get + !!unset > 1)
		usage_msg_opt("only one action at a time", config_usage,
			      options);
	if (show_origin && (unset || (!list && !get && argc != 1)))
		usage_msg_opt("--show-origin is only valid when reading",
			      config_usage, options);
	if ((list && argc) || ((get || unset) && argc) ||
	    (!list && !get && !unset && (argc < 1 || argc > 2)))
		usage_with_options(config_usage, options);

	if (unset) {
		if (check_key(unset) < 0)
			return 2;
		r = aptix_config_set(repo, unset, NULL);
		if (r == APTIX_ENOTFOUND) {
			error_aptix();
			return 5;
		}
		if (r < 0)
			die_aptix();
		return 0;
	}
	if (argc == 2) {
		if (check_key(argv[0]) < 0)
			return 2;
		if (aptix_config_set(repo, argv[0], argv[1]) < 0)
			die_aptix();
		return 0;
	}

	if (aptix_config_open(&cfg, repo) < 0)
		die_aptix();
	if (list) {
		aptix_config_foreach(cfg, list_cb, &show_origin);
		goto done;
	}
	if (!get)
		get = argv[0];
	if (check_key(get) < 0) {
		status = 2;
		goto done;
	}
	value = aptix_config_get(cfg, get);
	if (!value)
		status = 1;
	else
		print_setting(show_origin ?
			      aptix_config_get_origin(cfg, get) : NULL,
			      NULL, value);
done:
	aptix_config_free(cfg);
	return status;
}
