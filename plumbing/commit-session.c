/*
 * plumbing/commit-session.c - create a session snapshot from a turn and
 * an optional parent session, like git commit-tree: the new id is
 * printed and no ref moves. Writing the object updates the session
 * index in the same transaction.
 *
 * With --stdin the session is read as loose JSON (the canonical field
 * names, any order and spacing); the turn argument and the options
 * override or fill its fields before aptix_session_from_json() reads
 * it. Defaults for what neither gives: the conversation of the turn,
 * status "committed", created_at now (APTIX_TEST_DATE in tests),
 * session_type "agent", transport "sse".
 *
 * The session is written by the recorder (aptix/record.h), as every
 * snapshot is: stored against its parent when the turn's is based, and
 * indexed; no ref moves (APTIX_RECORD_NO_REF).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <errno.h>
#include <jansson.h>
#include <aptix.h>
#include "cli.h"
#include "commands.h"
#include "parse-options.h"
#include "loose-json.h"

static const char *const commit_session_usage[] = {
	"aptix commit-session [<options>] <turn>",
	"aptix commit-session --stdin [<options>] [<turn>]",
	NULL
};

struct usage_opt {
	int given;
	unsigned long v[4];	/* prompt, completion, total, requests */
};

static int usage_cb(const struct option *opt, const char *arg, int unset)
{
	struct usage_opt *u = opt->value;
	char buf[128], *p, *comma;
	int i;

	if (unset) {
		u->given = 0;
		return 0;
	}
	if (strlen(arg) >= sizeof(buf))
		goto bad;
	strcpy(buf, arg);
	for (i = 0, p = buf; i < 4; i++, p = comma + 1) {
		comma = strchr(p, ',');
		if ((i < 3) != (comma != NULL))
			goto bad;
		if (comma)
			*comma = '\0';
		if (cli_parse_ulong(p, &u->v[i]) < 0)
			goto bad;
		if (!comma)
			break;
	}
	u->given = 1;
	return 0;
bad:
	return error("option 'usage' expects <prompt>,<completion>,<total>,"
		     "<requests> (four numbers)");
}

static void set_default(json_t *o, const char *key, const char *s)
{
	if (!json_object_get(o, key))
		loose_set(o, key, json_string(s), key);
}

/*
 * The object under key, created when absent; NULL when the input holds
 * something else there (the library then says what is wrong).
 */
static json_t *sub_object(json_t *o, const char *key)
{
	json_t *v = json_object_get(o, key);

	if (!v) {
		if (!(v = json_object()))
			die("out of memory");
		loose_set(o, key, v, key);
	}
	return json_is_object(v) ? v : NULL;
}

/* The id in o[key] when it is a well-formed one; else 0. */
static int get_oid(aptix_oid *out, json_t *o, const char *key)
{
	json_t *v = json_object_get(o, key);
	const char *s;

	if (!v || !json_is_string(v))
		return 0;
	s = json_string_value(v);
	if (strlen(s) != APTIX_OID_HEXSZ || !aptix_is_hex(s, APTIX_OID_HEXSZ))
		return 0;
	return aptix_oid_fromstr(out, s) == 0;
}

/* Read id, which must be an object of type want; dies otherwise. */
static void read_typed(aptix_buf *out, aptix_odb *odb, const aptix_oid *id,
		       aptix_otype want, const char *what)
{
	aptix_otype type;
	int r = aptix_odb_read(out, &type, odb, id, 0);

	if (r == APTIX_ENOTFOUND)
		die("%s '%s' does not exist", what, aptix_oid_hex(id));
	if (r < 0)
		die("%s: %s", what, aptix_error_last()->message);
	if (type != want)
		die("%s '%s' is a %s, not a %s", what, aptix_oid_hex(id),
		    aptix_otype_name(type), aptix_otype_name(want));
}

/* Write the session through the recorder; its id to id. */
static void record(aptix_oid *id, aptix_repo *repo, const aptix_buf *canon)
{
	aptix_record_options o = APTIX_RECORD_OPTIONS_INIT;
	aptix_record_result res;
	aptix_session s;

	if (aptix_session_parse(&s, canon->ptr, canon->len) < 0)
		die_aptix();
	o.flags = APTIX_RECORD_NO_REF;
	o.session = &s;
	o.parent = s.has_parent ? &s.parent : NULL;
	if (aptix_record_commit(&res, repo, &o) < 0)
		die_aptix();
	*id = res.session;
	aptix_session_release(&s);
}

int cmd_commit_session(int argc, const char **argv, struct aptix_repo *repo)
{
	int use_stdin = 0;
	const char *parent = NULL, *conversation = NULL, *status = NULL;
	const char *title = NULL, *workspace = NULL, *forked_from = NULL;
	struct opt_ulong_given duration = { 0, 0 }, created_at = { 0, 0 };
	struct usage_opt usage;
	aptix_buf in = APTIX_BUF_INIT, data = APTIX_BUF_INIT;
	aptix_buf canon = APTIX_BUF_INIT;
	aptix_odb *odb;
	aptix_oid id;
	json_t *o, *rs, *meta;
	char hex[APTIX_OID_HEXSZ + 1];
	struct option options[] = {
		OPT_STRING('p', "parent", &parent, "session",
			   "the parent session"),
		OPT_BOOL(0, "stdin", &use_stdin, "read the session as JSON "
			 "from standard input"),
		OPT_GROUP("Fields (override or fill the JSON)"),
		OPT_STRING(0, "conversation", &conversation, "id",
			   "conversation id (default: the turn's)"),
		OPT_STRING(0, "status", &status, "status", "snapshot status "
			   "(default: committed)"),
		OPT_STRING(0, "title", &title, "title", "conversation title"),
		OPT_ULONG_GIVEN(0, "duration-ms", &duration, "n",
				"run duration in milliseconds"),
		OPT_CALLBACK(0, "usage", &usage, "p,c,t,r", "prompt, "
			     "completion and total tokens, model requests",
			     usage_cb),
		OPT_STRING(0, "workspace", &workspace, "path",
			   "workspace of the run"),
		OPT_STRING(0, "forked-from", &forked_from, "conversation",
			   "conversation this one was forked from"),
		OPT_ULONG_GIVEN(0, "created-at", &created_at, "ms",
				"creation time in ms since the epoch "
				"(default: now)"),
		OPT_END()
	};

	memset(&usage, 0, sizeof(usage));
	argc = parse_options(argc, argv, options, commit_session_usage, 0);
	if (argc > 1 || (!use_stdin && argc != 1))
		usage_with_options(commit_session_usage, options);
	odb = aptix_repo_odb(repo);

	if (use_stdin) {
		if (aptix_buf_read_fd(&in, 0) < 0)
			die_aptix();
		o = loose_load(&in, APTIX_OBJ_SESSION);
	} else if (!(o = json_object())) {
		die("out of memory");
	}

	if (argc == 1) {
		if (aptix_revparse(&id, repo, argv[0]) < 0)
			die_aptix();
		loose_oid(o, "turn", &id);
	}
	if (get_oid(&id, o, "turn")) {
		aptix_turn turn;

		read_typed(&data, odb, &id, APTIX_OBJ_TURN, "turn");
		if (aptix_turn_parse(&turn, data.ptr, data.len) < 0)
			die("turn '%s' is corrupt: %s", aptix_oid_hex(&id),
			    aptix_error_last()->message);
		if (!conversation && !json_object_get(o, "conversation"))
			loose_str(o, "conversation", turn.conversation,
				  "conversation");
		aptix_turn_release(&turn);
	}
	if (parent) {
		if (aptix_revparse(&id, repo, parent) < 0)
			die_aptix();
		loose_oid(o, "parent", &id);
	}
	if (get_oid(&id, o, "parent"))
		read_typed(&data, odb, &id, APTIX_OBJ_SESSION, "parent");

	loose_str(o, "conversation", conversation, "conversation");
	loose_str(o, "status", status, "status");
	if (created_at.given)
		loose_set(o, "created_at",
			  json_integer((json_int_t)created_at.value),
			  "created-at");
	else if (!json_object_get(o, "created_at"))
		loose_set(o, "created_at", json_integer(aptix_now_ms()),
			  "created-at");
	set_default(o, "status", "committed");
	if ((rs = sub_object(o, "run_summary"))) {
		if (duration.given)
			loose_set(rs, "duration_ms",
				  json_integer((json_int_t)duration.value),
				  "duration-ms");
		if (usage.given) {
			json_t *u = sub_object(rs, "usage");
			static const char *const keys[] = {
				"prompt_tokens", "completion_tokens",
				"total_tokens", "model_requests"
			};
			int i;

			for (i = 0; u && i < 4; i++)
				loose_set(u, keys[i],
					  json_integer((json_int_t)usage.v[i]),
					  "usage");
		}
	}
	if ((meta = sub_object(o, "metadata"))) {
		loose_str(meta, "title", title, "title");
		loose_str(meta, "workspace", workspace, "workspace");
		loose_str(meta, "forked_from", forked_from, "forked-from");
		set_default(meta, "session_type", "agent");
		set_default(meta, "transport", "sse");
	}

	loose_canon(&canon, o, APTIX_OBJ_SESSION);

	record(&id, repo, &canon);
	printf("%s\n", aptix_oid_tostr(hex, &id));

	aptix_buf_release(&canon);
	aptix_buf_release(&data);
	aptix_buf_release(&in);
	return 0;
}
