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
 * command: --instruction-text, --answer-text, --blob) and be a blob. The
 * blobs and the turn are written by the recorder (aptix/record.h), the
 * writer every turn goes through, in one transaction: on any error
 * nothing is written. A --blob is matched to the fields naming its id,
 * so that it is stored as a turn's blob of that kind is (the raw
 * response spliced against the answer...); with --parent, the objects
 * are stored against their counterparts in the parent's turn (ids never
 * depend on it).
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
	"aptix write-turn [--stdin | -F <file>] [-p <session>] [--blob <file>...]\n"
	"                 [<field options>]",
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

/* The blobs this command writes: their contents, read once. */
struct blobs {
	aptix_buf *v;
	aptix_oid *ids;
	size_t n;
};

struct ref_check {
	aptix_odb *odb;
	const struct blobs *written;
	const aptix_oid *text[2];	/* --instruction-text, --answer-text */
};

static int written_here(const struct ref_check *rc, const aptix_oid *id)
{
	size_t i;

	for (i = 0; i < 2; i++)
		if (rc->text[i] && !aptix_oid_cmp(rc->text[i], id))
			return 1;
	for (i = 0; i < rc->written->n; i++)
		if (!aptix_oid_cmp(&rc->written->ids[i], id))
			return 1;
	return 0;
}

static int check_ref(const aptix_oid *id, aptix_otype want,
		     const char *field, void *payload)
{
	struct ref_check *rc = payload;
	aptix_otype type;
	size_t size;
	int r;

	if (written_here(rc, id))
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

static void read_blobs(struct blobs *b, const aptix_strlist *files)
{
	size_t i;

	b->n = files->nr;
	b->v = calloc(b->n ? b->n : 1, sizeof(*b->v));
	b->ids = calloc(b->n ? b->n : 1, sizeof(*b->ids));
	if (!b->v || !b->ids)
		die("out of memory");
	for (i = 0; i < b->n; i++) {
		aptix_buf_init(&b->v[i], 0);
		if (aptix_buf_read_file(&b->v[i], files->items[i]) < 0 ||
		    aptix_object_hash(&b->ids[i], APTIX_OBJ_BLOB, b->v[i].ptr,
				      b->v[i].len) < 0)
			die_aptix();
	}
}

static void release_blobs(struct blobs *b)
{
	size_t i;

	for (i = 0; i < b->n; i++)
		aptix_buf_release(&b->v[i]);
	free(b->v);
	free(b->ids);
}

/* d = blob i when the field holds its id; 1 when it did. */
static int match(aptix_record_data *d, const aptix_oid *field,
		 const struct blobs *b, size_t i)
{
	if (aptix_oid_is_zero(field) || aptix_oid_cmp(field, &b->ids[i]))
		return 0;
	d->ptr = b->v[i].ptr;
	d->len = b->v[i].len;
	return 1;
}

/*
 * The contents of the turn's blobs, each given to the recorder as the
 * field that names it (fc and ct: one entry per file and chunk).
 */
static void assign_blobs(aptix_record_options *o, aptix_record_data *fc,
			 aptix_record_data *ct, const aptix_turn *t,
			 const struct blobs *b, const aptix_strlist *files)
{
	size_t i, k;

	for (i = 0; i < b->n; i++) {
		int hit = match(&o->instruction, &t->instruction, b, i) |
			match(&o->answer, &t->answer, b, i) |
			match(&o->request, &t->request, b, i) |
			match(&o->response, &t->response, b, i);

		for (k = 0; k < t->nfiles; k++)
			if (t->files[k].has_content)
				hit |= match(&fc[k], &t->files[k].content, b,
					     i);
		for (k = 0; k < t->nchunks; k++)
			hit |= match(&ct[k], &t->chunks[k].snippet, b, i);
		if (!hit)
			die("blob '%s' (%s) is not named by the turn",
			    files->items[i], aptix_oid_hex(&b->ids[i]));
	}
}

/* Write the turn and its blobs through the recorder; its id to id. */
static void record(aptix_oid *id, aptix_repo *repo, const aptix_buf *canon,
		   const struct blobs *b, const aptix_strlist *files,
		   const char *instruction_text, const char *answer_text,
		   const char *parent)
{
	aptix_record_options o = APTIX_RECORD_OPTIONS_INIT;
	aptix_record_data *fc, *ct;
	aptix_record_result res;
	aptix_oid pid;
	aptix_turn t;

	if (aptix_turn_parse(&t, canon->ptr, canon->len) < 0)
		die_aptix();
	fc = calloc(t.nfiles + 1, sizeof(*fc));
	ct = calloc(t.nchunks + 1, sizeof(*ct));
	if (!fc || !ct)
		die("out of memory");
	o.flags = APTIX_RECORD_TURN_ONLY;
	o.turn = &t;
	o.file_contents = fc;
	o.chunk_texts = ct;
	assign_blobs(&o, fc, ct, &t, b, files);
	if (instruction_text) {
		o.instruction.ptr = instruction_text;
		o.instruction.len = strlen(instruction_text);
	}
	if (answer_text) {
		o.answer.ptr = answer_text;
		o.answer.len = strlen(answer_text);
	}
	if (parent) {
		if (aptix_revparse(&pid, repo, parent) < 0)
			die_aptix();
		o.parent = &pid;
	}
	if (aptix_record_commit(&res, repo, &o) < 0)
		die_aptix();
	*id = res.turn;
	free(fc);
	free(ct);
	aptix_turn_release(&t);
}

int cmd_write_turn(int argc, const char **argv, struct aptix_repo *repo)
{
	int use_stdin = 0;
	const char *file = NULL, *conversation = NULL, *status = NULL;
	const char *instruction = NULL, *instruction_text = NULL;
	const char *answer_text = NULL, *model = NULL, *response_id = NULL;
	const char *previous_response_id = NULL, *parent = NULL;
	struct opt_ulong_given seq = { 0, 0 }, created_at = { 0, 0 };
	aptix_strlist warnings = APTIX_STRLIST_INIT;
	aptix_strlist errors = APTIX_STRLIST_INIT;
	aptix_strlist blob_files = APTIX_STRLIST_INIT;
	struct blobs blobs;
	aptix_buf in = APTIX_BUF_INIT, canon = APTIX_BUF_INIT;
	aptix_oid instr_id, answer_id, id;
	struct ref_check rc;
	json_t *o;
	char hex[APTIX_OID_HEXSZ + 1];
	struct option options[] = {
		OPT_BOOL(0, "stdin", &use_stdin, "read the turn as JSON from "
			 "standard input"),
		OPT_STRING('F', "file", &file, "file", "read the turn as JSON "
			   "from <file> ('-': standard input)"),
		OPT_STRING('p', "parent", &parent, "session", "the session "
			   "the turn continues: objects are stored against "
			   "the parent's"),
		OPT_STRING_LIST(0, "blob", &blob_files, "file", "store <file> "
				"as the turn's blob that has its id "
				"(repeatable)"),
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

	parse_options(argc, argv, options, write_turn_usage, PARSE_OPT_NO_ARGS);
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

	read_blobs(&blobs, &blob_files);
	memset(&rc, 0, sizeof(rc));
	rc.odb = aptix_repo_odb(repo);
	rc.written = &blobs;
	if (instruction_text) {
		if (aptix_object_hash(&instr_id, APTIX_OBJ_BLOB,
				      instruction_text,
				      strlen(instruction_text)) < 0)
			die_aptix();
		rc.text[0] = &instr_id;
		loose_oid(o, "instruction", &instr_id);
	} else if (instruction) {
		if (aptix_revparse(&instr_id, repo, instruction) < 0)
			die_aptix();
		loose_oid(o, "instruction", &instr_id);
	}
	if (answer_text) {
		if (aptix_object_hash(&answer_id, APTIX_OBJ_BLOB, answer_text,
				      strlen(answer_text)) < 0)
			die_aptix();
		rc.text[1] = &answer_id;
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
	record(&id, repo, &canon, &blobs, &blob_files, instruction_text,
	       answer_text, parent);
	printf("%s\n", aptix_oid_tostr(hex, &id));

	release_blobs(&blobs);
	aptix_strlist_release(&blob_files);
	aptix_buf_release(&canon);
	aptix_buf_release(&in);
	aptix_strlist_release(&warnings);
	aptix_strlist_release(&errors);
	return 0;
}
