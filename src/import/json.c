/*
 * src/import/json.c - `aptix import json`: the lossless JSON that `aptix
 * export --format=json` writes (aptix/export.h), read back into the
 * same object ids.
 *
 * A snapshot line holds the session, turn, tool-call and tool-result
 * objects as their canonical JSON and the bytes of every blob they
 * name. They are handed to the recorder as a turn and a session given
 * whole, with the blobs' bytes, so they are stored as native turns are
 * (the same bases, the same splices); the snapshot's id that comes out
 * must be the line's, or the line is refused (imp_record_given()). The
 * ref lines that end the file recreate the conversations' refs.
 */
#include "util/common.h"
#include "util/cjson.h"
#include "util/base64.h"
#include "import/import.h"
#include "aptix/record.h"

#define EXPORT_VERSION 1

struct json_state {
	int header;		/* 1: seen; -1: not ours, lines ignored */
};

/* What one snapshot line is made of, for the recorder. */
struct snap {
	json_t *blobs;
	aptix_session s;
	aptix_turn t;
	aptix_tool_call *calls;
	size_t ncalls;
	aptix_tool_result *results;
	aptix_record_tool_result *rr;
	size_t nresults;
	aptix_record_data *files, *chunks;
	aptix_buf *dec;		/* base64 blobs, decoded */
	size_t ndec, adec;
};

static int json_match(const char *path)
{
	return imp_name_is(path, "", ".json") ||
		imp_name_is(path, "", ".jsonl");
}

static int json_begin(struct imp_file *f)
{
	return (f->state = aptix__calloc(1, sizeof(struct json_state))) ?
		0 : APTIX_ERROR;
}

static int json_end(struct imp_file *f)
{
	struct json_state *st = f->state;

	if (st->header == -1) {
		imp_warn(f, 1, "not an aptix export: nothing imported");
		imp_partial(f, 0);
	}
	return 0;
}

static int bad(const char *what, const char *detail)
{
	aptix_error_set(APTIX_ERROR_INVALID, "%s: %s", what, detail);
	return APTIX_EINVALID;
}

/* The canonical bytes of v["object"] parsed by parse into out. */
#define PARSE_OBJECT(r, v, parse, out) do { \
	aptix_buf cb_ = APTIX_BUF_INIT; \
	json_t *o_ = json_object_get(v, "object"); \
	(r) = json_is_object(o_) ? aptix_cjson_dump(&cb_, o_) : \
		bad("a snapshot line", "an object without its JSON"); \
	if ((r) == 0 && ((r) = aptix_buf_putc(&cb_, '\n')) == 0) \
		(r) = parse(out, cb_.ptr, cb_.len); \
	aptix_buf_release(&cb_); \
} while (0)

/* A blob's bytes from the line: 0; 1 when the line lacks it. */
static int blob(aptix_record_data *d, struct snap *sn, const aptix_oid *id)
{
	json_t *v = json_object_get(sn->blobs, aptix_oid_hex(id)), *x;
	aptix_buf *b;

	d->ptr = NULL;
	d->len = 0;
	if (aptix_oid_is_zero(id) || !json_is_object(v))
		return 1;
	if (json_is_string(x = json_object_get(v, "text"))) {
		d->ptr = json_string_value(x);
		d->len = json_string_length(x);
		return 0;
	}
	if (!json_is_string(x = json_object_get(v, "base64")))
		return bad("a blob", "neither text nor base64");
	if (aptix__grow(&sn->dec, &sn->adec, sn->ndec, sizeof(*sn->dec),
			4) < 0)
		return APTIX_ERROR;
	b = &sn->dec[sn->ndec++];
	aptix_buf_init(b, 0);
	if (aptix_base64_decode(b, json_string_value(x),
				json_string_length(x)) < 0)
		return APTIX_EINVALID;
	d->ptr = b->ptr;
	d->len = b->len;
	return 0;
}

static void snap_release(struct snap *sn)
{
	size_t i;

	aptix_session_release(&sn->s);
	aptix_turn_release(&sn->t);
	aptix_tool_calls_free(sn->calls, sn->ncalls);
	for (i = 0; i < sn->nresults; i++)
		aptix_tool_result_release(&sn->results[i]);
	free(sn->results);
	free(sn->rr);
	free(sn->files);
	free(sn->chunks);
	for (i = 0; i < sn->ndec; i++)
		aptix_buf_release(&sn->dec[i]);
	free(sn->dec);
}

/* The turn's own blobs: instruction, answer, payloads, files, chunks. */
static int turn_blobs(aptix_record_options *ro, struct snap *sn)
{
	aptix_turn *t = &sn->t;
	size_t i;
	int r;

	if ((r = blob(&ro->instruction, sn, &t->instruction)) < 0 ||
	    (r = blob(&ro->answer, sn, &t->answer)) < 0 ||
	    (r = blob(&ro->request, sn, &t->request)) < 0 ||
	    (r = blob(&ro->response, sn, &t->response)) < 0)
		return r;
	if ((t->nfiles && !(sn->files = aptix__calloc(t->nfiles,
						      sizeof(*sn->files)))) ||
	    (t->nchunks && !(sn->chunks = aptix__calloc(t->nchunks,
							sizeof(*sn->chunks)))))
		return APTIX_ERROR;
	for (i = 0; i < t->nfiles; i++)
		if (t->files[i].has_content &&
		    (r = blob(&sn->files[i], sn, &t->files[i].content)) < 0)
			return r;
	for (i = 0; i < t->nchunks; i++)
		if ((r = blob(&sn->chunks[i], sn, &t->chunks[i].snippet)) < 0)
			return r;
	ro->file_contents = sn->files;
	ro->chunk_texts = sn->chunks;
	return 0;
}

static int tool_objects(aptix_record_options *ro, struct snap *sn,
			json_t *calls, json_t *results)
{
	size_t i, n = json_array_size(calls), m = json_array_size(results);
	int r = 0;

	if ((n && !(sn->calls = aptix__calloc(n, sizeof(*sn->calls)))) ||
	    (m && (!(sn->results = aptix__calloc(m, sizeof(*sn->results))) ||
		   !(sn->rr = aptix__calloc(m, sizeof(*sn->rr))))))
		return APTIX_ERROR;
	for (i = 0; !r && i < n; i++, sn->ncalls++)
		PARSE_OBJECT(r, json_array_get(calls, i), aptix_tool_call_parse,
			     &sn->calls[i]);
	for (i = 0; !r && i < m; i++, sn->nresults++) {
		aptix_tool_result *x = &sn->results[i];

		PARSE_OBJECT(r, json_array_get(results, i),
			     aptix_tool_result_parse, x);
		sn->rr[i].result = x;
		if (r < 0 ||
		    (r = blob(&sn->rr[i].out, sn, &x->out)) < 0 ||
		    (r = blob(&sn->rr[i].err, sn, &x->err)) < 0 ||
		    (r = blob(&sn->rr[i].output, sn, &x->output)) < 0)
			break;
		r = 0;
	}
	ro->tool_calls = sn->calls;
	ro->ntool_calls = sn->ncalls;
	ro->tool_results = sn->rr;
	ro->ntool_results = sn->nresults;
	return r < 0 ? r : 0;
}

/* The objects of a snapshot line, for the recorder. */
static int snap_read(aptix_record_options *ro, struct snap *sn, json_t *rec)
{
	json_t *calls = json_object_get(rec, "tool_calls");
	json_t *results = json_object_get(rec, "tool_results");
	json_t *sess = json_object_get(rec, "session");
	aptix_buf cb = APTIX_BUF_INIT;
	int r;

	sn->blobs = json_object_get(rec, "blobs");
	if (!json_is_object(sess) || !json_is_object(sn->blobs) ||
	    (calls && !json_is_array(calls)) ||
	    (results && !json_is_array(results)))
		return bad("a snapshot line", "malformed");
	if ((r = aptix_cjson_dump(&cb, sess)) == 0 &&
	    (r = aptix_buf_putc(&cb, '\n')) == 0)
		r = aptix_session_parse(&sn->s, cb.ptr, cb.len);
	aptix_buf_release(&cb);
	if (r < 0)
		return r;
	PARSE_OBJECT(r, json_object_get(rec, "turn"), aptix_turn_parse,
		     &sn->t);
	if (r < 0 || (r = turn_blobs(ro, sn)) < 0 ||
	    (r = tool_objects(ro, sn, calls, results)) < 0)
		return r;
	ro->turn = &sn->t;
	ro->session = &sn->s;
	ro->parent = sn->s.has_parent ? &sn->s.parent : NULL;
	return 0;
}

/* One blob of the snapshot, scanned (1: a credential in it). */
static int scan_blob(struct imp_file *f, const aptix_record_data *d,
		     const char *what, int found)
{
	int r;

	if (found < 0 || !d->ptr)
		return found;
	r = imp_credentials(f, d->ptr, d->len, what);
	return r < 0 ? r : found | r;
}

/*
 * The credential detector on every text of the snapshot, as on every
 * other import. An export's snapshot keeps the id the line gives, so a
 * credential cannot be redacted in it: the snapshot is refused (and
 * those built on it), with a warning naming the line and the rule.
 */
static int credentials(struct imp_file *f, aptix_record_options *ro,
		       struct snap *sn)
{
	aptix_buf what = APTIX_BUF_INIT;
	size_t i;
	int found = 0;

	found = scan_blob(f, &ro->instruction, "instruction", found);
	found = scan_blob(f, &ro->answer, "answer", found);
	found = scan_blob(f, &ro->request, "request", found);
	found = scan_blob(f, &ro->response, "response", found);
	for (i = 0; found >= 0 && i < sn->t.nfiles; i++) {
		aptix_buf_clear(&what);
		aptix_buf_printf(&what, "file '%s'", sn->t.files[i].path ?
				 sn->t.files[i].path : "");
		found = scan_blob(f, &sn->files[i], what.ptr, found);
	}
	for (i = 0; found >= 0 && i < sn->t.nchunks; i++)
		found = scan_blob(f, &sn->chunks[i], "retrieved chunk", found);
	for (i = 0; found >= 0 && i < sn->ncalls; i++) {
		aptix_record_data d = { sn->calls[i].arguments,
			sn->calls[i].arguments ?
			strlen(sn->calls[i].arguments) : 0 };

		found = scan_blob(f, &d, "tool call's arguments", found);
	}
	for (i = 0; found >= 0 && i < sn->nresults; i++) {
		found = scan_blob(f, &sn->rr[i].out, "tool's stdout", found);
		found = scan_blob(f, &sn->rr[i].err, "tool's stderr", found);
		found = scan_blob(f, &sn->rr[i].output, "tool's output",
				  found);
	}
	aptix_buf_release(&what);
	return found;
}

static int snapshot(struct imp_file *f, json_t *rec)
{
	aptix_record_options ro = APTIX_RECORD_OPTIONS_INIT;
	struct snap sn;
	aptix_oid expect;
	int r;

	memset(&sn, 0, sizeof(sn));
	aptix_session_init(&sn.s);
	aptix_turn_init(&sn.t);
	if (!imp_str(rec, "id") ||
	    aptix_oid_fromstr(&expect, imp_str(rec, "id")) < 0)
		r = bad("a snapshot line", "no id");
	else if ((r = snap_read(&ro, &sn, rec)) == 0 &&
		 (r = credentials(f, &ro, &sn)) == 1) {
		imp_partial(f, 1);	/* skipped */
		r = 0;
	} else if (r == 0) {
		r = imp_record_given(f, &ro, &expect);
	}
	if (r == APTIX_EINVALID || r == APTIX_ECORRUPT ||
	    r == APTIX_EVERSION) {
		imp_warn(f, 0, "%s: not imported", aptix_error_last()->message);
		aptix_error_clear();
		imp_partial(f, 1);
		r = 0;
	}
	snap_release(&sn);
	return r;
}

static int header(struct imp_file *f, json_t *rec)
{
	struct json_state *st = f->state;
	json_t *v = json_object_get(rec, "version");

	if (st->header)
		return 0;
	if (strcmp(imp_str(rec, "format") ? imp_str(rec, "format") : "",
		   "aptix-export") || !json_is_integer(v)) {
		st->header = -1;
		return 0;
	}
	if (json_integer_value(v) > EXPORT_VERSION) {
		imp_warn(f, 0, "an export of version %lld, newer than this "
			 "aptix reads (%d): nothing imported",
			 (long long)json_integer_value(v), EXPORT_VERSION);
		imp_partial(f, 0);
		st->header = -2;
		return 0;
	}
	st->header = 1;
	return 0;
}

static int json_record(struct imp_file *f, json_t *rec)
{
	struct json_state *st = f->state;
	const char *type = imp_str(rec, "type");
	aptix_oid id;
	int r = 0;

	/* the source is the file itself: no turn keeps its lines */
	aptix_buf_clear(&f->src);
	if (!rec)
		return 0;
	if (type && !strcmp(type, "header"))
		return header(f, rec);
	if (st->header != 1) {
		if (!st->header)
			st->header = -1;
		imp_partial(f, 1);
		return 0;
	}
	if (type && !strcmp(type, "snapshot")) {
		r = snapshot(f, rec);
	} else if (type && !strcmp(type, "ref")) {
		if (!imp_str(rec, "name") || !imp_str(rec, "id") ||
		    aptix_oid_fromstr(&id, imp_str(rec, "id")) < 0) {
			aptix_error_clear();
			imp_warn(f, 0, "a malformed ref line: not imported");
			imp_partial(f, 1);
			return 0;
		}
		r = imp_ref_set(f, imp_str(rec, "name"), &id);
	} else {
		imp_unknown(f, type);
	}
	return r;
}

const struct imp_tool aptix__imp_json = {
	"json", json_match, imp_prescan_none, json_begin, json_record, json_end,
	NULL, NULL, NULL
};
