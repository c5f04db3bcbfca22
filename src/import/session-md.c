/*
 * src/import/session-md.c - `aptix import session-md`: seed 004's
 * session.md (the Aptove agent's, or what `aptix export
 * --format=session-md` writes).
 *
 * The file is YAML front matter (provider, model, created_at; aptix
 * adds aptix_conversation and aptix_head) between `---` lines, then
 * blocks under `## User`, `## Assistant` and `## System` headers. A
 * turn is a User block and the Assistant blocks after it (several are
 * joined by a blank line); a User block with no answer before the next
 * User block is a failed attempt; a trailing one is left for later (the
 * agent appends the answer when its loop ends). A System block is kept
 * in the turn's source, not read. A body line that starts with a
 * backslash before a role header is that header, as text: one
 * backslash is taken off. Blank lines around a block's text are not
 * part of it.
 *
 * The conversation is "session-md-<id>": <id> is aptix_conversation
 * when the front matter has it, else the first 16 hex digits of the
 * SHA-256 of the front matter (of the file's name when it has none),
 * which appending turns does not change. Turns carry the front
 * matter's model and created_at: the format has no other time.
 */
#include "util/common.h"
#include "import/import.h"
#include "aptix/history.h"
#include "aptix/refs.h"

enum md_role { MD_NONE, MD_USER, MD_ASSISTANT, MD_SYSTEM };

struct md_state {
	struct imp_turn t;
	int in_fm;		/* 1: in the front matter, 2: after it */
	aptix_buf fm;		/* the front matter's text */
	char *conv_key;		/* aptix_conversation */
	enum md_role role;
	int has_user, has_assistant, warned;
	size_t blank;		/* blank lines held back in the block */
};

static int md_match(const char *path)
{
	return imp_name_is(path, "", ".md");
}

static int md_prescan(char **id, char **parent, const char *path UNUSED)
{
	*id = *parent = NULL;
	return 0;
}

static int md_begin(struct imp_file *f)
{
	struct md_state *st = IMP_STATE_NEW(f, struct md_state);

	if (!st)
		return APTIX_ERROR;
	aptix_buf_init(&st->fm, 0);
	return 0;
}

/* The length of the line without its newline and trailing blanks. */
static size_t trimmed(const char *line, size_t len)
{
	while (len && (line[len - 1] == '\n' || line[len - 1] == '\r' ||
		       line[len - 1] == ' ' || line[len - 1] == '\t'))
		len--;
	return len;
}

static enum md_role header_of(const char *line, size_t len)
{
	len = trimmed(line, len);
	if (len == 7 && !memcmp(line, "## User", 7))
		return MD_USER;
	if (len == 12 && !memcmp(line, "## Assistant", 12))
		return MD_ASSISTANT;
	if (len == 9 && !memcmp(line, "## System", 9))
		return MD_SYSTEM;
	return MD_NONE;
}

/* "key: value" of the front matter. */
static int fm_line(struct md_state *st, const char *line, size_t len)
{
	size_t n = trimmed(line, len);
	aptix_buf v = APTIX_BUF_INIT;
	int64_t ms;
	int r = 0;

	if (n > 6 && !memcmp(line, "model:", 6)) {
		aptix_buf_put(&v, line + 6, n - 6);
		r = imp_set_str(&st->t.where.model, v.ptr + strspn(v.ptr, " \t"));
	} else if (n > 11 && !memcmp(line, "created_at:", 11)) {
		aptix_buf_put(&v, line + 11, n - 11);
		if (aptix_date_parse(&ms, v.ptr + strspn(v.ptr, " \t"), 0) < 0)
			aptix_error_clear();
		else
			st->t.created_at = ms;
	} else if (n > 19 && !memcmp(line, "aptix_conversation:", 19)) {
		aptix_buf_put(&v, line + 19, n - 19);
		r = imp_set_str(&st->conv_key, v.ptr + strspn(v.ptr, " \t"));
	}
	if (aptix_buf_oom(&v))
		r = aptix_error_oom();
	aptix_buf_release(&v);
	return r < 0 ? r : aptix_buf_put(&st->fm, line, len);
}

/* The file's conversation, once its front matter is read. */
static int md_conversation(struct imp_file *f, struct md_state *st)
{
	char id[17];
	aptix_oid h;
	const char *base = strrchr(f->path, '/');
	int r;

	if (f->conv)
		return 0;
	if (st->conv_key && *st->conv_key && strlen(st->conv_key) <=
	    IMP_CONV_MAX - strlen("session-md-") &&
	    aptix_conv_check_id(st->conv_key) == 0)
		return imp_conversation(f, st->conv_key) < 0 ? APTIX_ERROR : 0;
	aptix_error_clear();
	base = base ? base + 1 : f->path;
	if (st->fm.len)
		r = aptix_sha256(&h, st->fm.ptr, st->fm.len);
	else
		r = aptix_sha256(&h, base, strlen(base));
	if (r < 0)
		return r;
	memcpy(id, aptix_oid_hex(&h), 16);
	id[16] = '\0';
	return imp_conversation(f, id) < 0 ? APTIX_ERROR : 0;
}

/* Trailing blank lines and newlines are not part of a block's text. */
static void trim_text(aptix_buf *b)
{
	aptix_buf_truncate(b, trimmed(b->ptr, b->len));
}

static int md_emit(struct imp_file *f, struct md_state *st)
{
	int64_t created = st->t.created_at;
	char *model = st->t.where.model;
	int r;

	if (!st->has_user && !st->has_assistant)
		return 0;
	trim_text(&st->t.instruction);
	trim_text(&st->t.answer);
	st->t.has_answer = st->has_assistant;
	st->t.where.model = NULL;
	if ((r = imp_set_str(&st->t.where.model, model)) < 0 ||
	    (r = imp_emit(f, &st->t)) < 0)
		goto done;
	imp_turn_release(&st->t);
	st->t.created_at = created;
	r = imp_set_str(&st->t.where.model, model);
done:
	free(model);
	st->has_user = st->has_assistant = 0;
	return r;
}

static int md_header(struct imp_file *f, struct md_state *st,
		     enum md_role role)
{
	int r;

	if ((r = md_conversation(f, st)) < 0)
		return r;
	if (role == MD_USER && (st->has_user || st->has_assistant) &&
	    (r = md_emit(f, st)) < 0)
		return r;
	if (role == MD_ASSISTANT && st->has_assistant && st->t.answer.len)
		st->blank = 2;	/* a blank line between two blocks */
	else
		st->blank = 0;
	if (role == MD_USER || (role == MD_ASSISTANT && !st->has_user &&
				!st->has_assistant))
		st->t.line = f->lineno;
	st->role = role;
	st->has_user |= role == MD_USER;
	st->has_assistant |= role == MD_ASSISTANT;
	imp_cut(f);
	return 0;
}

/* A line of a block: its text (one escaping backslash taken off). */
static int md_body(struct imp_file *f, struct md_state *st,
		   const char *line, size_t len)
{
	aptix_buf *to = st->role == MD_USER ? &st->t.instruction :
		st->role == MD_ASSISTANT ? &st->t.answer : NULL;
	size_t i;

	if (!trimmed(line, len)) {
		if (to && to->len)
			st->blank++;
		return 0;
	}
	/* blank lines go with what follows them: a grown file's turns
	 * keep their source */
	imp_cut(f);
	if (!to) {
		if (st->role == MD_NONE && !st->warned++)
			imp_warn(f, 0, "text before the first role header: "
				 "kept as source, not read");
		return 0;
	}
	for (i = 0; i < st->blank; i++)
		aptix_buf_putc(to, '\n');
	st->blank = 0;
	if (line[0] == '\\' && header_of(line + strspn(line, "\\"),
					 len - strspn(line, "\\")) != MD_NONE) {
		line++;
		len--;
	}
	aptix_buf_put(to, line, len);
	return aptix_buf_oom(to) ? aptix_error_oom() : 0;
}

static int md_line(struct imp_file *f, const char *line, size_t len,
		   int last UNUSED)
{
	struct md_state *st = f->state;
	enum md_role role;

	if (st->in_fm == 1) {
		imp_cut(f);
		if (trimmed(line, len) == 3 && !memcmp(line, "---", 3)) {
			st->in_fm = 2;
			return 0;
		}
		return fm_line(st, line, len);
	}
	if (!st->in_fm) {
		st->in_fm = 2;
		if (trimmed(line, len) == 3 && !memcmp(line, "---", 3)) {
			st->in_fm = 1;
			imp_cut(f);
			return 0;
		}
	}
	if ((role = header_of(line, len)) != MD_NONE)
		return md_header(f, st, role);
	return md_body(f, st, line, len);
}

static int md_end(struct imp_file *f)
{
	struct md_state *st = f->state;

	if (st->in_fm == 1) {
		imp_warn(f, 0, "the front matter does not end: nothing "
			 "imported");
		imp_partial(f, 1);
		return 0;
	}
	if (st->has_assistant)
		return md_emit(f, st);
	if (st->has_user)
		imp_pending(f);
	return 0;
}

static void md_release(struct imp_file *f)
{
	struct md_state *st = f->state;

	aptix_buf_release(&st->fm);
	free(st->conv_key);
}

const struct imp_tool aptix__imp_session_md = {
	"session-md", md_match, md_prescan, md_begin, NULL, md_end,
	md_release, md_line, NULL
};
