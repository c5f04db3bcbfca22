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
 *	aptix config --list-keys [--json]
 *					every key aptix knows: the key table
 *
 * --global reads and writes the user's file instead:
 * $XDG_CONFIG_HOME/aptix/config or ~/.config/aptix/config, as git
 * config --global; it needs no store, and neither does reading (the
 * user file and the environment then).
 *
 * --show-origin prefixes "file:<path>" or "env:<VARIABLE>" and a tab.
 * Built-in defaults are not shown by --list: only what is set.
 *
 * --list-keys prints one key a line, five fields separated by tabs:
 * name, type, default, range (min..max, an open side left empty, or the
 * values of an enum joined by '|'), documentation; "-" for an empty
 * field. --json prints the same as an array of objects.
 */
#include <math.h>
#include <stdio.h>
#include <string.h>
#include <aptix.h>
#include <aptix/config.h>
#include "cli.h"
#include "commands.h"
#include "parse-options.h"
#include "view.h"

static const char *const config_usage[] = {
	"aptix config [--global] [--show-origin] [--get] <key>",
	"aptix config [--global] <key> <value>",
	"aptix config [--global] --unset <key>",
	"aptix config [--global] [--show-origin] (-l | --list)",
	"aptix config --list-keys [--json]",
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

struct list_opts {
	int show_origin;
	const char *only;	/* --global: only this origin */
};

static int list_cb(const char *key, const char *value, const char *origin,
		   void *payload)
{
	const struct list_opts *lo = payload;

	if (lo->only && strcmp(origin, lo->only))
		return 0;
	print_setting(lo->show_origin ? origin : NULL, key, value);
	return 0;
}

/* The range field of --list-keys: "1..20", "0..", "local|qdrant", "-". */
static void key_range(aptix_buf *out, const aptix_config_key *k)
{
	const char *unit = k->type == APTIX_CONFIG_DURATION ? "ms" : "";
	size_t i;

	aptix_buf_clear(out);
	switch (k->type) {
	case APTIX_CONFIG_DURATION:
		if (k->min <= 0 && k->max == HUGE_VAL)
			break;	/* a duration is never negative anyway */
		/* fall through */
	case APTIX_CONFIG_LONG:
	case APTIX_CONFIG_DOUBLE:
		if (k->min == -HUGE_VAL && k->max == HUGE_VAL)
			break;
		if (k->min != -HUGE_VAL)
			aptix_buf_printf(out, "%.15g%s", k->min, unit);
		aptix_buf_puts(out, "..");
		if (k->max != HUGE_VAL)
			aptix_buf_printf(out, "%.15g%s", k->max, unit);
		break;
	case APTIX_CONFIG_ENUM:
		for (i = 0; k->values[i]; i++)
			aptix_buf_printf(out, "%s%s", i ? "|" : "",
					 k->values[i]);
		break;
	default:
		break;
	}
	if (!out->len)
		aptix_buf_putc(out, '-');
	if (aptix_buf_oom(out))
		die("out of memory");
}

static json_t *bound_json(const aptix_config_key *k, double v)
{
	if (isinf(v))
		return json_null();
	return k->type == APTIX_CONFIG_DOUBLE ? json_real(v) :
		view_json_int((int64_t)v);
}

static json_t *key_json(const aptix_config_key *k)
{
	json_t *o = view_json_object(), *values = json_null();
	size_t i;

	view_json_set(o, "name", view_json_str(k->name));
	view_json_set(o, "type", view_json_str(
			      aptix_config_type_name(k->type)));
	view_json_set(o, "default", k->dflt ? view_json_str(k->dflt) :
		      json_null());
	if (k->type == APTIX_CONFIG_LONG || k->type == APTIX_CONFIG_DOUBLE ||
	    k->type == APTIX_CONFIG_DURATION) {
		view_json_set(o, "min", bound_json(k, k->min));
		view_json_set(o, "max", bound_json(k, k->max));
	}
	if (k->type == APTIX_CONFIG_ENUM) {
		values = view_json_array();
		for (i = 0; k->values[i]; i++)
			view_json_append(values, view_json_str(k->values[i]));
	}
	view_json_set(o, "values", values);
	view_json_set(o, "nonempty", json_boolean(k->flags &
						  APTIX_CONFIG_NONEMPTY));
	view_json_set(o, "doc", view_json_str(k->doc));
	return o;
}

static void list_keys(int json)
{
	const aptix_config_key *keys;
	aptix_buf range = APTIX_BUF_INIT;
	json_t *all = json ? view_json_array() : NULL;
	size_t i, n;

	keys = aptix_config_keys(&n);
	for (i = 0; i < n; i++) {
		if (json) {
			view_json_append(all, key_json(&keys[i]));
			continue;
		}
		key_range(&range, &keys[i]);
		printf("%s\t%s\t%s\t%s\t%s\n", keys[i].name,
		       aptix_config_type_name(keys[i].type),
		       keys[i].dflt ? keys[i].dflt : "-", range.ptr,
		       keys[i].doc);
	}
	if (json)
		view_json_print(all);
	aptix_buf_release(&range);
}

/*
 * A value holding one of the keys of the environment, whatever its
 * format (the library's check knows only the formats of its rules):
 * refused, never echoed, as --model refuses it.
 */
static void refuse_key(const char *key, const char *value)
{
	const char *keys[2];
	aptix_credential c;
	char why[160];

	cli_env_keys(keys);
	if (aptix_credscan_find(&c, value, strlen(value), keys, 2))
		die("refusing to store '%s': its value holds %s, %s", key,
		    aptix_credential_kind(&c),
		    aptix_credential_describe(why, sizeof(why), &c));
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

/*
 * The store, when there is one: config runs outside a store for the
 * user's file (--global) and for reading. Dies when a write to the
 * store's file needs one.
 */
/*
 * Setting one of the keys of a restart's budget: warn when the chain
 * cap ends up below what a restart sends (issue 23).
 */
static void warn_restart_budget(struct aptix_repo *repo, const char *key)
{
	aptix_config *cfg = NULL;
	char msg[320];

	if (strcmp(key, "context.chain-max-chars") &&
	    strcmp(key, "context.window-chars") &&
	    strcmp(key, "context.summary-chars"))
		return;
	if (aptix_config_open(&cfg, repo) < 0) {
		aptix_error_clear();
		return;
	}
	if (aptix_config_restart_over_cap(msg, sizeof(msg), cfg))
		warning("%s", msg);
	aptix_config_free(cfg);
}

static struct aptix_repo *find_store(int need)
{
	struct aptix_repo *repo = NULL;

	if (aptix_repo_find(&repo, ".") < 0) {
		if (need)
			die_aptix();
		aptix_error_clear();
		return NULL;
	}
	return repo;
}

int cmd_config(int argc, const char **argv, struct aptix_repo *unused)
{
	struct aptix_repo *repo = NULL;
	aptix_config *cfg = NULL;
	const char *get = NULL, *unset = NULL, *value, *origin;
	int list = 0, list_keys_opt = 0, json = 0, show_origin = 0;
	int global = 0, status = 0, r;
	aptix_buf user = APTIX_BUF_INIT, only = APTIX_BUF_INIT;
	struct list_opts lo = { 0, NULL };
	struct option options[] = {
		OPT_BOOL(0, "global", &global, "use the user's file "
			 "(~/.config/aptix/config) instead of the store's"),
		OPT_BOOL('l', "list", &list, "list every setting"),
		OPT_BOOL(0, "list-keys", &list_keys_opt, "list every key aptix "
			 "knows, with its type, default and range"),
		OPT_BOOL(0, "json", &json, "with --list-keys: as JSON"),
		OPT_BOOL(0, "show-origin", &show_origin, "show where each "
			 "setting comes from (file or environment)"),
		OPT_STRING(0, "get", &get, "key", "print the value of a key"),
		OPT_STRING(0, "unset", &unset, "key", "remove a key from the "
			   "store's config"),
		OPT_END()
	};

	argc = parse_options(argc, argv, options, config_usage, 0);
	if (json && !list_keys_opt)
		usage_msg_opt("--json is only valid with --list-keys",
			      config_usage, options);
	if (list_keys_opt) {
		if (list || get || unset || show_origin || argc)
			usage_msg_opt("--list-keys takes no other argument",
				      config_usage, options);
		list_keys(json);
		return 0;
	}
	if (!!list + !!get + !!unset > 1)
		usage_msg_opt("only one action at a time", config_usage,
			      options);
	if (show_origin && (unset || (!list && !get && argc != 1)))
		usage_msg_opt("--show-origin is only valid when reading",
			      config_usage, options);
	if ((list && argc) || ((get || unset) && argc) ||
	    (!list && !get && !unset && (argc < 1 || argc > 2)))
		usage_with_options(config_usage, options);

	(void)unused;
	if (global) {
		if (aptix_config_user_path(&user) < 0)
			die_aptix();
		aptix_buf_printf(&only, "file:%s", user.ptr);
		if (aptix_buf_oom(&only))
			die("out of memory");
		lo.only = only.ptr;
	}
	repo = find_store(!global && (unset || argc == 2));
	lo.show_origin = show_origin;
	if (unset) {
		if (check_key(unset) < 0) {
			status = 2;
			goto done;
		}
		r = global ? aptix_config_set_user(unset, NULL) :
			aptix_config_set(repo, unset, NULL);
		if (r == APTIX_ENOTFOUND) {
			error_aptix();
			status = 5;
		} else if (r < 0) {
			die_aptix();
		}
		goto done;
	}
	if (argc == 2) {
		if (check_key(argv[0]) < 0) {
			status = 2;
			goto done;
		}
		if (aptix_config_check_key(argv[0], argv[1]) < 0)
			die_aptix();
		refuse_key(argv[0], argv[1]);
		if ((global ? aptix_config_set_user(argv[0], argv[1]) :
		     aptix_config_set(repo, argv[0], argv[1])) < 0)
			die_aptix();
		warn_restart_budget(repo, argv[0]);
		goto done;
	}

	if (aptix_config_open(&cfg, global ? NULL : repo) < 0)
		die_aptix();
	if (list) {
		aptix_config_foreach(cfg, list_cb, &lo);
		goto done;
	}
	if (!get)
		get = argv[0];
	if (check_key(get) < 0) {
		status = 2;
		goto done;
	}
	value = aptix_config_get(cfg, get);
	origin = aptix_config_get_origin(cfg, get);
	/* --global: the user file's value (the last one loaded from it) */
	if (value && lo.only && strcmp(origin, lo.only))
		value = NULL;
	if (!value)
		status = 1;
	else if (aptix_config_check_value(get, value) < 0)
		die_aptix();	/* a read is checked as a write is */
	else
		print_setting(show_origin ? origin : NULL, NULL, value);
done:
	aptix_config_free(cfg);
	aptix_repo_free(repo);
	aptix_buf_release(&user);
	aptix_buf_release(&only);
	return status;
}
