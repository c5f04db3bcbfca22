/*
 * src/import/llm.c - `aptix import llm`: the logs.db of Simon Willison's
 * llm, in the schema of llm 0.32 (its migration m023_message_store:
 * tables messages, parts, threads, turns), read through SQLite, read-only.
 * The older tables (responses, conversations) are not read: a database
 * that has only those is warned about.
 *
 * llm keeps a conversation as a tree of content-addressed messages: a
 * message's hash is "b2:" and the hex of BLAKE2b with a 16-byte digest
 * of the canonical JSON (keys sorted, no blanks, non-ASCII as is) of
 * {"parent": <parent hash or null>, "message": Message.to_dict()}
 * (llm/logs.py message_hash, content_hash, canonical_json). Every message
 * read is hashed again here, as llm's own LogStore.verify() does; a
 * message whose hash does not match is not imported (a warning names
 * it), nor is anything built on it. Attachments are taken by the id and
 * type llm stored for them (their bytes, or a file a path names, are not
 * read again).
 *
 * A turn of llm (one model call) has parent_message_hash, the end of
 * its input, and tip_message_hash, the end of its output. An aptix turn
 * is a user's prompt and the model calls that answer it: the llm turns
 * up to one whose output asks for no tool (a turn whose tool calls have
 * no result yet is left for a later import). Its source record is one
 * line of JSON: the rows of the llm turns and of the messages (their
 * parts as llm stored them, and a text kept through fragments also as
 * it reads, "text_resolved") from the end of the aptix turn before it
 * (its source key: "llm:<hash>" of that message) to its own end. A thread is the conversation "llm-<thread id>"; a fork (a
 * thread whose messages start with another's, the same hashes) is a
 * conversation whose first snapshot is a child of the snapshot of the
 * last message it shares: forks share their parents' snapshots.
 */
#include "util/common.h"
#include "import/import.h"
#include "util/cjson.h"
#include <math.h>
#include <sodium.h>
#include <sqlite3.h>

#define LLM_HASH_MAX 64
#define LLM_WALK_MAX 100000	/* messages in one segment, at most */

/* --- canonical JSON and the hash ---------------------------------------- */

static int canon(aptix_buf *out, json_t *v, int sort);

/* A string as Python's json.dumps(ensure_ascii=False) writes it. */
static void canon_str(aptix_buf *out, const char *s, size_t n)
{
	size_t i;

	aptix_buf_putc(out, '"');
	for (i = 0; i < n; i++) {
		unsigned char c = (unsigned char)s[i];

		switch (c) {
		case '"': aptix_buf_puts(out, "\\\""); break;
		case '\\': aptix_buf_puts(out, "\\\\"); break;
		case '\n': aptix_buf_puts(out, "\\n"); break;
		case '\r': aptix_buf_puts(out, "\\r"); break;
		case '\t': aptix_buf_puts(out, "\\t"); break;
		case '\b': aptix_buf_puts(out, "\\b"); break;
		case '\f': aptix_buf_puts(out, "\\f"); break;
		default:
			if (c < 0x20)
				aptix_buf_printf(out, "\\u%04x", c);
			else
				aptix_buf_putc(out, (char)c);
		}
	}
	aptix_buf_putc(out, '"');
}

/*
 * A float as Python's repr(): the shortest digits that read back as the
 * same double; positional when the exponent is from -4 to 15, else
 * "<d>[.<ddd>]e<sign><2+ digits>".
 */
static void canon_real(aptix_buf *out, double v)
{
	char buf[40], digits[24];
	int p, exp10, nd, i;
	char *e;

	if (!isfinite(v)) {
		aptix_buf_puts(out, isnan(v) ? "NaN" : v < 0 ? "-Infinity" :
			       "Infinity");
		return;
	}
	for (p = 1; p <= 17; p++) {
		snprintf(buf, sizeof(buf), "%.*e", p - 1, v);
		if (strtod(buf, NULL) == v)
			break;
	}
	e = strchr(buf, 'e');
	exp10 = (int)strtol(e + 1, NULL, 10);
	for (nd = 0, i = buf[0] == '-'; buf + i < e; i++)
		if (buf[i] != '.')
			digits[nd++] = buf[i];
	while (nd > 1 && digits[nd - 1] == '0')
		nd--;
	digits[nd] = '\0';
	if (signbit(v))
		aptix_buf_putc(out, '-');
	if (exp10 < -4 || exp10 >= 16) {
		aptix_buf_putc(out, digits[0]);
		if (nd > 1)
			aptix_buf_printf(out, ".%s", digits + 1);
		aptix_buf_printf(out, "e%c%02d", exp10 < 0 ? '-' : '+',
				 exp10 < 0 ? -exp10 : exp10);
	} else if (exp10 < 0) {
		aptix_buf_puts(out, "0.");
		for (i = -1; i > exp10; i--)
			aptix_buf_putc(out, '0');
		aptix_buf_puts(out, digits);
	} else {
		for (i = 0; i <= exp10; i++)
			aptix_buf_putc(out, i < nd ? digits[i] : '0');
		aptix_buf_putc(out, '.');
		aptix_buf_puts(out, nd > exp10 + 1 ? digits + exp10 + 1 : "0");
	}
}

static int by_key(const void *a, const void *b)
{
	return strcmp(*(const char *const *)a, *(const char *const *)b);
}

static int canon_object(aptix_buf *out, json_t *v, int sort)
{
	size_t n = json_object_size(v), i = 0;
	const char **keys = n ? aptix__calloc(n, sizeof(*keys)) : NULL;
	const char *k;
	json_t *x;
	int r = 0;

	if (n && !keys)
		return APTIX_ERROR;
	json_object_foreach(v, k, x)
		keys[i++] = k;
	if (n && sort)
		qsort(keys, n, sizeof(*keys), by_key);
	aptix_buf_putc(out, '{');
	for (i = 0; i < n && !r; i++) {
		if (i)
			aptix_buf_putc(out, ',');
		canon_str(out, keys[i], strlen(keys[i]));
		aptix_buf_putc(out, ':');
		r = canon(out, json_object_get(v, keys[i]), sort);
	}
	aptix_buf_putc(out, '}');
	free(keys);
	return r;
}

/*
 * json.dumps(v, sort_keys=sort, separators=(",", ":"),
 * ensure_ascii=False); without sort, keys in the order they came.
 */
static int canon(aptix_buf *out, json_t *v, int sort)
{
	size_t i;
	int r = 0;

	switch (json_typeof(v)) {
	case JSON_OBJECT:
		return canon_object(out, v, sort);
	case JSON_ARRAY:
		aptix_buf_putc(out, '[');
		for (i = 0; i < json_array_size(v) && !r; i++) {
			if (i)
				aptix_buf_putc(out, ',');
			r = canon(out, json_array_get(v, i), sort);
		}
		aptix_buf_putc(out, ']');
		return r;
	case JSON_STRING:
		canon_str(out, json_string_value(v), json_string_length(v));
		return 0;
	case JSON_INTEGER:
		aptix_buf_printf(out, "%" JSON_INTEGER_FORMAT,
				 json_integer_value(v));
		return 0;
	case JSON_REAL:
		canon_real(out, json_real_value(v));
		return 0;
	case JSON_TRUE:
		aptix_buf_puts(out, "true");
		return 0;
	case JSON_FALSE:
		aptix_buf_puts(out, "false");
		return 0;
	default:
		aptix_buf_puts(out, "null");
		return 0;
	}
}

/* "b2:" and BLAKE2b-128 of the canonical {"parent", "message"}. */
static int message_hash(char out[LLM_HASH_MAX + 1], json_t *message,
			const char *parent)
{
	json_t *o = json_pack("{s:s?, s:O}", "parent", parent, "message",
			      message);
	aptix_buf b = APTIX_BUF_INIT;
	unsigned char d[16];
	size_t i;
	int r;

	if (!o)
		return aptix_error_oom();
	r = canon(&b, o, 1);
	json_decref(o);
	if (r >= 0 && aptix_buf_oom(&b))
		r = aptix_error_oom();
	if (r >= 0 && crypto_generichash(d, sizeof(d),
					 (const unsigned char *)b.ptr, b.len,
					 NULL, 0) != 0)
		r = aptix_error_oom();
	aptix_buf_release(&b);
	if (r < 0)
		return r;
	memcpy(out, "b2:", 3);
	for (i = 0; i < sizeof(d); i++)
		snprintf(out + 3 + 2 * i, 3, "%02x", d[i]);
	return 0;
}

/* --- the database ------------------------------------------------------- */

struct llm_db {
	sqlite3 *db;
	sqlite3_stmt *msg, *parts, *frag, *att, *tips;
};

/* A column of JSON text (NULL, or not JSON: an empty object). */
static json_t *col_json(sqlite3_stmt *st, int i, int *bad)
{
	const char *s = imp_col(st, i);
	json_t *v;

	if (!s || !*s)
		return NULL;
	if (!(v = json_loads(s, JSON_DECODE_ANY | JSON_ALLOW_NUL, NULL)))
		*bad = 1;
	return v;
}

/* A truthy JSON value, as Python's `if value:` reads it. */
static int truthy(json_t *v)
{
	if (!v)
		return 0;
	switch (json_typeof(v)) {
	case JSON_OBJECT: return json_object_size(v) > 0;
	case JSON_ARRAY: return json_array_size(v) > 0;
	case JSON_STRING: return json_string_length(v) > 0;
	case JSON_INTEGER: return json_integer_value(v) != 0;
	case JSON_REAL: return json_real_value(v) != 0;
	case JSON_TRUE: return 1;
	default: return 0;
	}
}

/* The text a text_ref list of pieces stands for (llm _decode_text_refs). */
static int decode_text_ref(struct llm_db *d, json_t *payload)
{
	json_t *pieces = json_object_get(payload, "text_ref"), *p;
	aptix_buf b = APTIX_BUF_INIT;
	size_t i;
	int r;

	if (!pieces)
		return 0;
	json_array_foreach(pieces, i, p) {
		json_t *lit = json_object_get(p, "literal");

		if (json_is_string(lit)) {
			aptix_buf_put(&b, json_string_value(lit),
				      json_string_length(lit));
			continue;
		}
		sqlite3_reset(d->frag);
		sqlite3_bind_int64(d->frag, 1, json_integer_value(
			json_object_get(p, "fragment")));
		if (sqlite3_step(d->frag) == SQLITE_ROW && imp_col(d->frag, 0))
			aptix_buf_put(&b, imp_col(d->frag, 0),
				      (size_t)sqlite3_column_bytes(d->frag, 0));
	}
	r = aptix_buf_oom(&b) ? aptix_error_oom() :
		json_object_set_new(payload, "text",
				    json_stringn(b.ptr, b.len)) ? APTIX_ERROR : 0;
	json_object_del(payload, "text_ref");
	aptix_buf_release(&b);
	return r;
}

/* An attachment as message_hash() sees it: {"id", "type"}. */
static json_t *canon_attachment(struct llm_db *d, json_t *ref)
{
	const char *id = imp_str(ref, "id");

	sqlite3_reset(d->att);
	sqlite3_bind_text(d->att, 1, id ? id : "", -1, SQLITE_TRANSIENT);
	if (sqlite3_step(d->att) != SQLITE_ROW)
		return json_pack("{s:s, s:n}", "id", id ? id : "", "type");
	return json_pack("{s:s, s:s?}", "id", id ? id : "", "type",
			 imp_col(d->att, 0));
}

/* Copy key from payload to d when keep says so. */
static void take(json_t *d, json_t *payload, const char *key, int keep)
{
	json_t *v = json_object_get(payload, key);

	if (v && keep)
		json_object_set(d, key, v);
}

/*
 * A part as Part.from_dict(payload).to_dict() gives it, its attachments
 * as message_hash() puts them (NULL: a type llm does not know).
 */
static json_t *canon_part(struct llm_db *d, json_t *p, const char *type)
{
	json_t *o = json_pack("{s:s}", "type", type), *a, *x;
	size_t i;

	if (!o)
		return NULL;
	if (!strcmp(type, "text") || !strcmp(type, "reasoning")) {
		take(o, p, "text", 1);
		if (!json_object_get(o, "text"))
			json_object_set_new(o, "text", json_string(""));
		if (!strcmp(type, "reasoning") &&
		    truthy(json_object_get(p, "redacted")))
			json_object_set_new(o, "redacted", json_true());
	} else if (!strcmp(type, "tool_call") ||
		   !strcmp(type, "tool_result")) {
		int call = !strcmp(type, "tool_call");

		take(o, p, "name", 1);
		take(o, p, call ? "arguments" : "output", 1);
		take(o, p, "tool_call_id",
		     !json_is_null(json_object_get(p, "tool_call_id")));
		if (truthy(json_object_get(p, "server_executed")))
			json_object_set_new(o, "server_executed", json_true());
		take(o, p, "exception", !call &&
		     !json_is_null(json_object_get(p, "exception")));
		if (!call && truthy(json_object_get(p, "attachments"))) {
			a = json_array();
			json_array_foreach(json_object_get(p, "attachments"),
					   i, x) {
				json_array_append_new(a, canon_attachment(d, x));
			}
			json_object_set_new(o, "attachments", a);
		}
	} else if (!strcmp(type, "attachment")) {
		if ((x = json_object_get(p, "attachment")))
			json_object_set_new(o, "attachment",
					    canon_attachment(d, x));
	} else {
		json_decref(o);
		return NULL;
	}
	take(o, p, "provider_metadata",
	     truthy(json_object_get(p, "provider_metadata")));
	return o;
}

/*
 * One message, read: its record for the source ({"hash", "parent_hash",
 * "role", "provider_metadata", "parts": [{"type", "tool_name", "text",
 * "payload"}]}, the columns as llm wrote them) in *rec, and the message
 * as it was hashed in *canonical. 1: it is not in the database or not
 * readable (*why says what).
 */
static int load_message(json_t **rec, json_t **canonical, struct llm_db *d,
			const char *hash, const char **why)
{
	json_t *parts = json_array(), *cparts = json_array(), *p, *cp, *pm;
	json_t *pr;
	int bad = 0, rc, ref;

	*rec = *canonical = NULL;
	sqlite3_reset(d->msg);
	sqlite3_bind_text(d->msg, 1, hash, -1, SQLITE_TRANSIENT);
	if (!parts || !cparts || sqlite3_step(d->msg) != SQLITE_ROW) {
		json_decref(parts);
		json_decref(cparts);
		*why = "it is not in the database";
		return parts && cparts ? 1 : aptix_error_oom();
	}
	pm = col_json(d->msg, 2, &bad);
	*rec = json_pack("{s:s, s:s?, s:s?, s:s?, s:o}", "hash", hash,
			 "parent_hash", imp_col(d->msg, 0), "role", imp_col(d->msg, 1),
			 "provider_metadata", imp_col(d->msg, 2), "parts", parts);
	*canonical = json_pack("{s:s?, s:o}", "role", imp_col(d->msg, 1),
			       "parts", cparts);
	if (*canonical && truthy(pm))
		json_object_set(*canonical, "provider_metadata", pm);
	json_decref(pm);
	sqlite3_reset(d->parts);
	sqlite3_bind_text(d->parts, 1, hash, -1, SQLITE_TRANSIENT);
	while (*rec && *canonical &&
	       (rc = sqlite3_step(d->parts)) == SQLITE_ROW) {
		const char *type = imp_col(d->parts, 0) ? imp_col(d->parts, 0) : "";

		json_array_append_new(parts, (pr = json_pack(
			"{s:s, s:s?, s:s?, s:s?}", "type", type, "tool_name",
			imp_col(d->parts, 1), "text", imp_col(d->parts, 2), "payload",
			imp_col(d->parts, 3))));
		if (!(p = col_json(d->parts, 3, &bad)))
			p = json_object();
		if (!json_is_object(p) || bad) {
			bad = 1;
			json_decref(p);
			continue;
		}
		if (imp_col(d->parts, 2))
			json_object_set_new(p, "text", json_stringn(
				imp_col(d->parts, 2),
				(size_t)sqlite3_column_bytes(d->parts, 2)));
		ref = json_object_get(p, "text_ref") != NULL;
		if (decode_text_ref(d, p) < 0 ||
		    !(cp = canon_part(d, p, type)))
			bad = 1;
		else
			json_array_append_new(cparts, cp);
		if (ref && json_object_get(p, "text"))	/* what it reads */
			json_object_set(pr, "text_resolved",
					json_object_get(p, "text"));
		json_decref(p);
	}
	if (!*rec || !*canonical) {
		json_decref(*rec);
		json_decref(*canonical);
		*rec = *canonical = NULL;
		return aptix_error_oom();
	}
	*why = bad ? "a part that llm cannot read back" : NULL;
	return bad;
}

/* --- the segments of the message tree ------------------------------------ */

/* The key of a message whose snapshot is stored ("llm:<hash>"). */
static const struct imp_key *key_of(struct imp_file *f, const char *hash)
{
	aptix_buf key = APTIX_BUF_INIT;
	const struct imp_key *k;

	aptix_buf_printf(&key, "llm:%s", hash);
	k = aptix_buf_oom(&key) ? NULL : imp_key_get(f->run, key.ptr);
	aptix_buf_release(&key);
	return k;
}

/* 1 when the message asks for a tool that nothing has answered yet. */
static int asks_tool(json_t *canonical)
{
	json_t *p;
	size_t i;

	json_array_foreach(json_object_get(canonical, "parts"), i, p) {
		if (!strcmp(imp_str(p, "type") ? imp_str(p, "type") : "",
			    "tool_call") &&
		    !json_is_true(json_object_get(p, "server_executed")))
			return 1;
	}
	return 0;
}

/*
 * The messages from the newest one whose snapshot is stored (its hash
 * in *from, "" for none) to tip, oldest first, each hashed again. 1: a
 * message is missing or does not match its hash (warned: the turn is
 * not imported).
 */
static int walk(json_t *msgs, char from[LLM_HASH_MAX + 1], struct imp_file *f,
		struct llm_db *d, const char *tip, size_t line)
{
	char at[LLM_HASH_MAX + 1], got[LLM_HASH_MAX + 1];
	json_t *rec, *canonical;
	const char *why = NULL, *parent;
	size_t n;
	int r = 0;

	snprintf(at, sizeof(at), "%s", tip);
	from[0] = '\0';
	for (n = 0; at[0] && !key_of(f, at); n++) {
		rec = canonical = NULL;
		if (n == LLM_WALK_MAX) {
			why = "its chain of parents is too long";
			r = 1;
		} else if ((r = load_message(&rec, &canonical, d, at,
					     &why)) < 0) {
			return r;
		}
		if (!r && strncmp(at, "b2:", 3))
			why = "its hash is not llm's b2: (BLAKE2b)", r = 1;
		parent = rec ? imp_str(rec, "parent_hash") : NULL;
		if (!r && (r = message_hash(got, canonical, parent)) < 0)
			break;
		if (!r && strcmp(got, at))
			why = "it does not match its hash", r = 1;
		json_decref(canonical);
		if (r) {
			json_decref(rec);
			imp_warn(f, line, "message '%s': %s: its turn is not "
				 "imported", at, why);
			imp_partial(f, 1);
			return 1;
		}
		json_array_insert_new(msgs, 0, rec);
		snprintf(at, sizeof(at), "%s", parent ? parent : "");
	}
	if (r >= 0)
		snprintf(from, LLM_HASH_MAX + 1, "%s", at);
	return r < 0 ? r : 0;
}

#define TURN_COLS "t.id, t.thread_id, t.parent_message_hash, " \
	"t.tip_message_hash, t.model, t.resolved_model, t.input_tokens, " \
	"t.output_tokens, t.token_details, t.duration_ms, t.datetime_utc"

/* A row of turns as the record keeps it. */
static json_t *turn_row(sqlite3_stmt *st)
{
	json_t *o = json_object();
	static const char *const names[] = {
		"id", "thread_id", "parent_message_hash", "tip_message_hash",
		"model", "resolved_model", "input_tokens", "output_tokens",
		"token_details", "duration_ms", "datetime_utc"
	};
	size_t i;

	for (i = 0; o && i < ARRAY_SIZE(names); i++) {
		if (sqlite3_column_type(st, (int)i) == SQLITE_INTEGER)
			json_object_set_new(o, names[i], json_integer(
				sqlite3_column_int64(st, (int)i)));
		else if (imp_col(st, (int)i))
			json_object_set_new(o, names[i],
					    json_string(imp_col(st, (int)i)));
	}
	return o;
}

/* The thread's llm turns that end at one of the messages. */
static json_t *segment_turns(struct llm_db *d, json_t *msgs,
			     const char *thread)
{
	json_t *turns = json_array(), *m;
	size_t i;

	json_array_foreach(msgs, i, m) {
		sqlite3_reset(d->tips);
		sqlite3_bind_text(d->tips, 1, imp_str(m, "hash"), -1,
				  SQLITE_TRANSIENT);
		sqlite3_bind_text(d->tips, 2, thread, -1, SQLITE_TRANSIENT);
		while (turns && sqlite3_step(d->tips) == SQLITE_ROW)
			json_array_append_new(turns, turn_row(d->tips));
	}
	return turns;
}

/*
 * One llm turn: when its output asks for no tool, the aptix turn that
 * ends with it, as a record; else left for the turn that answers it
 * (pending when it is the thread's tip).
 */
static int one_turn(struct imp_file *f, struct llm_db *d, sqlite3_stmt *st)
{
	const char *tip = imp_col(st, 3), *thread = imp_col(st, 1), *why = NULL;
	const char *thread_tip = imp_col(st, 11);
	char from[LLM_HASH_MAX + 1];
	json_t *rec = NULL, *canonical = NULL, *msgs, *out;
	aptix_buf line = APTIX_BUF_INIT;
	int r;

	if (!tip || !thread)
		return 0;
	if ((r = load_message(&rec, &canonical, d, tip, &why)) < 0)
		return r;
	r = !r && asks_tool(canonical);
	json_decref(rec);
	json_decref(canonical);
	if (r) {
		if (thread_tip && !strcmp(thread_tip, tip))
			imp_pending(f);
		return 0;
	}
	if (!(msgs = json_array()))
		return aptix_error_oom();
	if ((r = walk(msgs, from, f, d, tip, f->lineno + 1)) != 0) {
		json_decref(msgs);
		return r < 0 ? r : 0;
	}
	out = json_pack("{s:s, s:s, s:s, s:s?, s:o, s:o}", "type", "turn",
			"thread", thread, "tip", tip, "parent",
			from[0] ? from : NULL, "turns",
			segment_turns(d, msgs, thread), "messages", msgs);
	r = out ? aptix_json_compact(&line, out) : aptix_error_oom();
	json_decref(out);
	if (r == 0)
		r = imp_feed(f, line.ptr, line.len);
	aptix_buf_release(&line);
	return r;
}

static int db_fail(struct imp_file *f, struct llm_db *d, const char *what)
{
	return imp_db_fail(f, d->db, "llm", what);
}

static int has_table(struct llm_db *d, const char *name)
{
	sqlite3_stmt *st = NULL;
	int yes;

	if (sqlite3_prepare_v2(d->db, "SELECT 1 FROM sqlite_master WHERE "
			       "type = 'table' AND name = ?1", -1, &st,
			       NULL) != SQLITE_OK)
		return 0;
	sqlite3_bind_text(st, 1, name, -1, SQLITE_STATIC);
	yes = sqlite3_step(st) == SQLITE_ROW;
	sqlite3_finalize(st);
	return yes;
}

static int prepare(struct llm_db *d, sqlite3_stmt **turns)
{
	return sqlite3_prepare_v2(d->db, "SELECT parent_hash, role, "
				  "provider_metadata FROM messages WHERE "
				  "hash = ?1", -1, &d->msg, NULL) ||
		sqlite3_prepare_v2(d->db, "SELECT type, tool_name, text, "
				   "payload FROM parts WHERE message_hash = ?1 "
				   "ORDER BY position", -1, &d->parts, NULL) ||
		sqlite3_prepare_v2(d->db, "SELECT content FROM fragments "
				   "WHERE id = ?1", -1, &d->frag, NULL) ||
		sqlite3_prepare_v2(d->db, "SELECT type FROM attachments "
				   "WHERE id = ?1", -1, &d->att, NULL) ||
		sqlite3_prepare_v2(d->db, "SELECT " TURN_COLS " FROM turns t "
				   "WHERE t.tip_message_hash = ?1 AND "
				   "t.thread_id = ?2 ORDER BY t.datetime_utc, "
				   "t.rowid", -1, &d->tips, NULL) ||
		sqlite3_prepare_v2(d->db, "SELECT " TURN_COLS ", "
				   "th.tip_message_hash FROM turns t LEFT JOIN "
				   "threads th ON th.id = t.thread_id ORDER BY "
				   "t.datetime_utc, t.rowid", -1, turns, NULL);
}

static int read_db(struct imp_file *f, struct llm_db *d)
{
	sqlite3_stmt *turns = NULL;
	int r = 0, rc = SQLITE_DONE;

	if (!has_table(d, "turns") || !has_table(d, "messages")) {
		imp_warn(f, 0, has_table(d, "responses") ?
			 "an llm database older than llm 0.32 (its responses "
			 "and conversations tables): not read; aptix reads "
			 "llm 0.32's threads, turns, messages and parts" :
			 "not an llm database (no turns, no messages)");
		imp_partial(f, 1);
		return 0;
	}
	if (prepare(d, &turns)) {
		sqlite3_finalize(turns);
		return db_fail(f, d, "schema");
	}
	while (r >= 0 && (rc = sqlite3_step(turns)) == SQLITE_ROW)
		r = one_turn(f, d, turns);
	sqlite3_finalize(turns);
	return r < 0 ? r : rc == SQLITE_DONE ? 0 : db_fail(f, d, "turns");
}

static int llm_read(struct imp_file *f)
{
	struct llm_db d;
	int r;

	memset(&d, 0, sizeof(d));
	if (sodium_init() < 0) {
		aptix_error_set(APTIX_ERROR_OS, "libsodium cannot start");
		return APTIX_ERROR;
	}
	if (sqlite3_open_v2(f->path, &d.db, SQLITE_OPEN_READONLY, NULL) !=
	    SQLITE_OK)
		r = db_fail(f, &d, "open");
	else
		r = read_db(f, &d);
	imp_db_close(d.db);
	return r;
}

/* --- a record: the aptix turn -------------------------------------------- */

static int llm_match(const char *path)
{
	return imp_name_is(path, "logs", ".db");
}

/* A turn is read from its one record: nothing to keep between them. */
static int llm_none(struct imp_file *f UNUSED)
{
	return 0;
}

static void add_text(aptix_buf *to, const char *text)
{
	if (!text || !*text)
		return;
	if (to->len)
		aptix_buf_puts(to, "\n\n");
	aptix_buf_puts(to, text);
}

/* A tool's call or result ("call-<n>" when llm has no id for it). */
static int tool_part(struct imp_turn *t, json_t *payload, const char *type,
		     size_t *ncall, size_t *nres)
{
	const char *id = imp_str(payload, "tool_call_id");
	const char *name = imp_str(payload, "name");
	char fallback[32];
	struct imp_result *x;
	int r;

	if (!strcmp(type, "tool_call")) {
		/* as the model wrote them, numbers as Python writes them */
		aptix_buf args = APTIX_BUF_INIT;

		snprintf(fallback, sizeof(fallback), "call-%zu", ++*ncall);
		if (json_object_get(payload, "arguments"))
			r = canon(&args, json_object_get(payload, "arguments"),
				  0);
		else
			r = aptix_buf_puts(&args, "{}");
		if (r >= 0)
			r = aptix_buf_oom(&args) ? aptix_error_oom() :
				imp_call_add(t, id ? id : fallback,
					     name ? name : "tool", args.ptr,
					     NULL, NULL);
		aptix_buf_release(&args);
		return r;
	}
	snprintf(fallback, sizeof(fallback), "call-%zu", ++*nres);
	if (!(x = imp_result_get(t, id ? id : fallback, "llm")))
		return APTIX_ERROR;
	x->r.status = imp_str(payload, "exception") ? APTIX_TOOL_ERROR :
		APTIX_TOOL_OK;
	x->has_output = 1;
	aptix_buf_puts(&x->output, imp_str(payload, "output") ?
		       imp_str(payload, "output") : "");
	if (imp_str(payload, "exception")) {
		x->has_err = 1;
		aptix_buf_puts(&x->err, imp_str(payload, "exception"));
	}
	return 0;
}

/* The messages' parts: instruction, answer, calls and results. */
static int read_messages(struct imp_turn *t, json_t *msgs)
{
	size_t i, j, ncall = 0, nres = 0;
	json_t *m, *p, *payload;
	int r = 0;

	json_array_foreach(msgs, i, m) {
		const char *role = imp_str(m, "role") ? imp_str(m, "role") : "";

		json_array_foreach(json_object_get(m, "parts"), j, p) {
			const char *type = imp_str(p, "type");
			const char *text = imp_str(p, "text") ?
				imp_str(p, "text") : imp_str(p,
							     "text_resolved");

			if (!type)
				continue;
			if (!strcmp(type, "text") && !strcmp(role, "user"))
				add_text(&t->instruction, text);
			else if (!strcmp(type, "text") &&
				 !strcmp(role, "assistant"))
				add_text(&t->answer, text);
			if (strncmp(type, "tool_", 5) || r < 0)
				continue;
			payload = imp_str(p, "payload") ? json_loads(
				imp_str(p, "payload"), 0, NULL) : NULL;
			r = tool_part(t, payload, type, &ncall, &nres);
			json_decref(payload);
		}
	}
	return r;
}

/* A datetime_utc as ms (llm writes microseconds: ms are kept). */
static int64_t row_time(json_t *row)
{
	return imp_time(row, "datetime_utc");
}

/* The llm turns' model, times and usage. */
static int read_turns(struct imp_turn *t, json_t *turns)
{
	json_t *row, *det;
	size_t i;
	int64_t at;

	json_array_foreach(turns, i, row) {
		at = row_time(row);
		if (!t->created_at)
			t->created_at = at;
		t->response_at = at + json_integer_value(
			json_object_get(row, "duration_ms"));
		t->usage.input_tokens += imp_long(row, "input_tokens");
		t->usage.output_tokens += imp_long(row, "output_tokens");
		t->usage.total_tokens += imp_long(row, "input_tokens") +
			imp_long(row, "output_tokens");
		t->usage.model_requests++;
		det = imp_str(row, "token_details") ?
			json_loads(imp_str(row, "token_details"), 0, NULL) :
			NULL;
		t->usage.cached_tokens += imp_long(json_object_get(det,
			"prompt_tokens_details"), "cached_tokens") +
			imp_long(det, "cache_read_input_tokens");
		t->usage.reasoning_tokens += imp_long(json_object_get(det,
			"completion_tokens_details"), "reasoning_tokens");
		json_decref(det);
		if (imp_set_str(&t->where.model, imp_str(row, "resolved_model") ?
				imp_str(row, "resolved_model") :
				imp_str(row, "model")) < 0)
			return APTIX_ERROR;
	}
	return 0;
}

/* The conversation goes on from the message's snapshot (NULL: a root). */
static void start_at(struct imp_file *f, const char *parent)
{
	const struct imp_key *k = parent ? key_of(f, parent) : NULL;
	struct imp_key none;

	if (!k) {
		memset(&none, 0, sizeof(none));
		k = &none;
	}
	imp_parent(f, k);
}

static int llm_record(struct imp_file *f, json_t *rec)
{
	struct imp_turn t;
	const char *tip = imp_str(rec, "tip");
	aptix_buf key = APTIX_BUF_INIT;
	struct imp_key here;
	int r;

	if (!rec)
		return 0;
	if (strcmp(imp_str(rec, "type") ? imp_str(rec, "type") : "", "turn")) {
		imp_unknown(f, imp_str(rec, "type"));
		return 0;
	}
	f->conv = NULL;
	if ((r = imp_conversation(f, imp_str(rec, "thread"))) != 0)
		return r < 0 ? r : 0;
	start_at(f, imp_str(rec, "parent"));
	imp_cut(f);
	if (!json_array_size(json_object_get(rec, "messages"))) {
		/* the same messages as another thread's turn: shared */
		if (imp_str(rec, "parent") && key_of(f, imp_str(rec, "parent")))
			imp_share(f, key_of(f, imp_str(rec, "parent")));
		return 0;
	}
	imp_turn_init(&t);
	t.line = f->lineno;
	t.has_answer = 1;
	if ((r = read_messages(&t, json_object_get(rec, "messages"))) < 0 ||
	    (r = read_turns(&t, json_object_get(rec, "turns"))) < 0 ||
	    (r = imp_emit(f, &t)) < 0)
		goto done;
	imp_key_here(&here, f);
	aptix_buf_printf(&key, "llm:%s", tip ? tip : "");
	r = aptix_buf_oom(&key) ? aptix_error_oom() :
		imp_key_put(f->run, key.ptr, &here);
done:
	imp_turn_release(&t);
	aptix_buf_release(&key);
	return r;
}

const struct imp_tool aptix__imp_llm = {
	"llm", llm_match, imp_prescan_none, llm_none, llm_record, llm_none,
	NULL, NULL, llm_read
};
