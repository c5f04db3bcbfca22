/*
 * plumbing/write-turn.c - build a turn object from loose JSON and/or
 * flags, check what it references, store it and print its id.
 *
 * The JSON (from --stdin or -F) uses the field names of the canonical
 * format, in any order and spacing. Flags override or fill fields: they
 * are merged into the JSON before aptix_turn_from_json() reads it, so
 * every message about a bad field comes from the library. Fields that
 * neither gives: created_at is now (APTIX_TEST_DATE in tests),
 * status_at is created_at, and without JSON input the status is
 * "completed" when there is an answer, else "pending".
 *
 * Every blob the turn references must exist (or be written by this
 * command, --instruction-text and --answer-text) and be a blob. The
 * blobs and the turn are written in one transaction: on any error
 * nothing is written.
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

static const char *const write_turn_usage[] = {
	"aptix write-turn [--stdin | -F <file>] [<field options>]",
	"",
	"Reads a turn as loose JSON (--stdin, -F) and/or builds it from the",
	"field options, writes it and prints its id.",
	NULL
};

static void set_list(json_t *o, const char *key,
		     const aptix_strlist *list, const char *opt)
{
	json_t *a;
	size_t i;

	if (!list->nr)
		return;
	if (!(a = json_array()))
		die("out of memory");
	for (i = 0; i < list->nr; i++) {
		json_t *s = json_string(list->items[i]);

		if (!s)
			die("the value of --%s is not valid UTF-8", opt);
		json_array_append_new(a, s);
	}
	loose_set(o, key, a, opt);
}

/* Store text as a blob in tx; its id goes to out. */
static void write_blob(aptix_oid *out, aptix_txn *tx, const char *text)
{
	if (aptix_txn_write_object(out, tx, APTIX_OBJ_BLOB, text,
				   strlen(text)) < 0)
		die_aptix();
}

struct ref_check {
	aptix_odb *odb;
	const aptix_oid *written[2];	/* blobs queued in this txn */
};

static int check_ref(const aptix_oid *id, aptix_otype want,
		     const char *field, void *payload)
{
	struct ref_check *rc = payload;
	aptix_otype type;
	size_t size, i;
	int r;

	for (i = 0; i < 2; i++)
		if (rc->written[i] && !aptix_oid_cmp(rc->written[i], id))
			return 0;
	r = aptix_odb_read_header(&size, &type, rc->odb, id);
	if (r == APTIX_ENOTFOUND)
		die("turn: %s '%s' does not exist", field, aptix_oid_hex(id));
	if (r < 0)
		die("turn: %s: %s", field, aptix_error_last()->message);
	if (type != want)
		die("turn: %s '%s' is a %s, not a %s", field,
		    aptix_oid_hex(id), aptix_otype_name(type),
		    aptix_otype_name(want));
	return 0;
}

int cmd_write_turn(int argc, const char **argv, struct aptix_repo *repo)
{
	int use_stdin = 0;
	const char *file = NULL, *conversation = NULL, *status = NULL;
	const char *instruction = NULL, *instruction_text = NULL;
	const char *answer_text = NULL, *model = NULL, *response_id = NULL;
	const char *previous_response_id = NULL;
	struct opt_ulong_given seq = { 0, 0 }, created_at = { 0, 0 };
	aptix_strlist warnings = APTIX_STRLIST_INIT;
	aptix_strlist errors = APTIX_STRLIST_INIT;
	aptix_buf in = APTIX_BUF_INIT, canon = APTIX_BUF_INIT;
	aptix_oid instr_id, answer_id, id;
	struct ref_check rc;
	aptix_txn *tx = NULL;
	json_t *o;
	char hex[APTIX_OID_HEXSZ + 1];
	struct option options[] = {
		OPT_BOOL(0, "stdin", &use_stdin, "read the turn as JSON from "
			 "standard input"),
		OPT_STRING('F', "file", &file, "file", "read the turn as JSON "
			   "from <file> ('-': standard input)"),
		OPT_GROUP("Fields (override or fill the JSON)"),
		OPT_STRING(0, "conversation", &conversation, "id",
			   "conversation id"),
		OPT_ULONG_GIVEN(0, "seq", &seq, "n", "position in the chain "
			     "(1-based)"),
		OPT_STRING(0, "status", &status, "status",
			   "pending, completed or failed"),
		OPT_STRING(0, "instruction", &instruction, "blob",
			   "the blob holding the instruction"),
		OPT_STRING(0, "instruction-text", &instruction_text, "text",
			   "store <text> as the instruction blob"),
		OPT_STRING(0, "answer-text", &answer_text, "text",
			   "store <text> as the answer blob"),
		OPT_STRING(0, "model", &model, "model", "model name"),
		OPT_STRING(0, "response-id", &response_id, "id",
			   "response id"),
		OPT_STRING(0, "previous-response-id", &previous_response_id,
			   "id", "previous response id"),
		OPT_STRING_LIST(0, "warning", &warnings, "text",
				"a warning (repeatable; replaces the JSON's)"),
		OPT_STRING_LIST(0, "error", &errors, "text",
				"an error (repeatable; replaces the JSON's)"),
		OPT_ULONG_GIVEN(0, "created-at", &created_at, "ms",
			     "creation time in ms since the epoch "
			     "(default: now)"),
		OPT_END()
	};

	argc = parse_options(argc, argv, options, write_turn_usage, 0);
	if (argc)
		usage_with_options(write_turn_usage, options);
	if (use_stdin && file)
		usage_msg_opt("--stdin and -F cannot be used together",
			      write_turn_usage, options);
	if (instruction && instruction_text)
		usage_msg_opt("--instruction and --instruction-text cannot "
			      "be used together", write_turn_usage, options);

	if (use_stdin || (file && !strcmp(file, "-"))) {
		if (aptix_buf_read_fd(&in, 0) < 0)
			die_aptix();
		o = loose_load(&in, APTIX_OBJ_TURN);
	} else if (file) {
		if (aptix_buf_read_file(&in, file) < 0)
			die_aptix();
		o = loose_load(&in, APTIX_OBJ_TURN);
	} else if (!(o = json_object())) {
		die("out of memory");
	}

	if (aptix_txn_new(&tx, repo) < 0)
		die_aptix();
	memset(&rc, 0, sizeof(rc));
	rc.odb = aptix_repo_odb(repo);
	if (instruction_text) {
		write_blob(&instr_id, tx, instruction_text);
		rc.written[0] = &instr_id;
		loose_oid(o, "instruction", &instr_id);
	} else if (instruction) {
		if (aptix_revparse(&instr_id, repo, instruction) < 0)
			die_aptix();
		loose_oid(o, "instruction", &instr_id);
	}
	if (answer_text) {
		write_blob(&answer_id, tx, answer_text);
		rc.written[1] = &answer_id;
		loose_oid(o, "answer", &answer_id);
	}
	loose_str(o, "conversation", conversation, "conversation");
	if (seq.given)
		loose_set(o, "seq", json_integer((json_int_t)seq.value), "seq");
	loose_str(o, "status", status, "status");
	loose_str(o, "model", model, "model");
	loose_str(o, "response_id", response_id, "response-id");
	loose_str(o, "previous_response_id", previous_response_id,
		  "previous-response-id");
	set_list(o, "warnings", &warnings, "warning");
	set_list(o, "errors", &errors, "error");
	if (created_at.given)
		loose_set(o, "created_at",
			  json_integer((json_int_t)created_at.value),
			  "created-at");
	else if (!json_object_get(o, "created_at"))
		loose_set(o, "created_at", json_integer(aptix_now_ms()),
			  "created-at");
	if (!use_stdin && !file && !json_object_get(o, "status"))
		loose_str(o, "status", json_object_get(o, "answer") ?
			  "completed" : "pending", "status");

	loose_canon(&canon, o, APTIX_OBJ_TURN);

	if (aptix_object_foreach_ref(APTIX_OBJ_TURN, canon.ptr, canon.len,
				     check_ref, &rc) < 0)
		die_aptix();
	if (aptix_txn_write_object(&id, tx, APTIX_OBJ_TURN, canon.ptr,
				   canon.len) < 0 ||
	    aptix_txn_commit(tx) < 0)
		die_aptix();
	printf("%s\n", aptix_oid_tostr(hex, &id));

	aptix_txn_free(tx);
	aptix_buf_release(&canon);
	aptix_buf_release(&in);
	aptix_strlist_release(&warnings);
	aptix_strlist_release(&errors);
	return 0;
}
