/*
 * src/context-plan.c - what a turn sends besides the instruction, and
 * what it may leave out because the model has it already through
 * previous_response_id (see aptix/context.h).
 *
 * A response chain is the run of completed turns linked by
 * previous_response_id: walking back from the turn a new one continues,
 * each turn's previous_response_id names the response of the turn before
 * it, until a turn that started a chain (none, or a restart).
 */
#include "common.h"
#include "repo.h"
#include "aptix/context.h"
#include "aptix/index.h"

#define MAX_WALK 100000

static int load(aptix_buf *buf, aptix_otype want, aptix_repo *repo,
		const aptix_oid *id)
{
	aptix_otype type;
	int r = aptix_odb_read(buf, &type, repo->odb, id, 0);

	if (r == 0 && type != want) {
		aptix_error_set(APTIX_ERROR_OBJECT, "object '%s' is a %s, not "
				"a %s", aptix_oid_hex(id),
				aptix_otype_name(type), aptix_otype_name(want));
		r = APTIX_EINVALID;
	}
	return r;
}

/*
 * Call fn for each completed turn of the chain that a child of parent
 * continues, newest first. fn returns non-zero to stop.
 */
typedef int (*chain_fn)(const aptix_turn *t, void *payload);

static int walk_chain(aptix_repo *repo, const aptix_oid *parent,
		      chain_fn fn, void *payload)
{
	aptix_buf buf = APTIX_BUF_INIT;
	aptix_oid cur = *parent;
	char want[128] = "";
	int steps, r = 0, more = 1;

	for (steps = 0; more && steps < MAX_WALK; steps++) {
		aptix_session s;
		aptix_turn t;

		if ((r = load(&buf, APTIX_OBJ_SESSION, repo, &cur)) < 0 ||
		    (r = aptix_session_parse(&s, buf.ptr, buf.len)) < 0)
			break;
		more = s.has_parent;
		cur = s.parent;
		if (s.status != APTIX_SESSION_COMMITTED) {
			aptix_session_release(&s);
			continue;
		}
		r = load(&buf, APTIX_OBJ_TURN, repo, &s.turn);
		aptix_session_release(&s);
		if (r < 0 || (r = aptix_turn_parse(&t, buf.ptr, buf.len)) < 0)
			break;
		if (t.status != APTIX_TURN_COMPLETED || !t.response_id ||
		    (*want && strcmp(want, t.response_id))) {
			/* not a link of this chain: it ends here */
			aptix_turn_release(&t);
			break;
		}
		r = fn(&t, payload);
		if (!r && t.previous_response_id && !t.chain_restarted)
			snprintf(want, sizeof(want), "%s",
				 t.previous_response_id);
		else
			more = 0;
		aptix_turn_release(&t);
		if (r)
			break;
	}
	aptix_buf_release(&buf);
	return r > 0 ? 0 : r;
}

struct state_walk {
	aptix_chain_state *out;
	int64_t now;
};

static int state_cb(const aptix_turn *t, void *payload)
{
	struct state_walk *sw = payload;

	sw->out->has_chain = 1;
	snprintf(sw->out->response_id, sizeof(sw->out->response_id), "%s",
		 t->response_id);
	sw->out->expires_at = t->chain_expires_at;
	sw->out->expired = t->chain_expires_at &&
		sw->now >= t->chain_expires_at;
	return 1;	/* the newest is enough */
}

int aptix_chain_state_of(aptix_chain_state *out, aptix_repo *repo,
			 const aptix_oid *parent, int64_t now)
{
	struct state_walk sw = { out, now };

	memset(out, 0, sizeof(*out));
	if (!parent)
		return 0;
	return walk_chain(repo, parent, state_cb, &sw);
}

struct plan_walk {
	aptix_file_set *files;
	aptix_chunk_set *chunks;
	char *seen;		/* files already decided (newest send wins) */
};

static int plan_cb(const aptix_turn *t, void *payload)
{
	struct plan_walk *pw = payload;
	size_t i, j;

	for (i = 0; pw->files && i < pw->files->n; i++) {
		aptix_active_file *f = &pw->files->v[i];

		if (pw->seen[i] || f->action != APTIX_FILE_SEND)
			continue;
		for (j = 0; j < t->nfiles; j++) {
			const aptix_file_ref *fr = &t->files[j];

			if (!fr->sent || strcmp(fr->path, f->path))
				continue;
			/* the last version the model saw of this path */
			pw->seen[i] = 1;
			if (!strcmp(fr->sha256, f->sha256))
				f->action = APTIX_FILE_UNCHANGED;
			break;
		}
	}
	for (i = 0; pw->chunks && i < pw->chunks->n; i++) {
		aptix_rag_chunk *c = &pw->chunks->v[i];

		if (!c->sent)
			continue;
		for (j = 0; j < t->nchunks; j++)
			if (t->chunks[j].sent &&
			    !strcmp(t->chunks[j].chunk_id, c->chunk_id) &&
			    !strcmp(t->chunks[j].content_hash,
				    c->content_hash)) {
				c->sent = 0;
				break;
			}
	}
	/* stop walking once nothing is left to decide */
	for (i = 0; pw->files && i < pw->files->n; i++)
		if (!pw->seen[i] && pw->files->v[i].action == APTIX_FILE_SEND)
			return 0;
	for (i = 0; pw->chunks && i < pw->chunks->n; i++)
		if (pw->chunks->v[i].sent)
			return 0;
	return 1;
}

int aptix_context_plan(aptix_repo *repo, const aptix_oid *parent,
		       int restart, aptix_file_set *files,
		       aptix_chunk_set *chunks)
{
	struct plan_walk pw;
	size_t i;
	int r;

	for (i = 0; files && i < files->n; i++)
		if (files->v[i].action == APTIX_FILE_UNCHANGED)
			files->v[i].action = APTIX_FILE_SEND;
	for (i = 0; chunks && i < chunks->n; i++)
		chunks->v[i].sent = 1;
	if (!parent || restart || ((!files || !files->n) &&
				   (!chunks || !chunks->n)))
		return 0;
	pw.files = files;
	pw.chunks = chunks;
	pw.seen = aptix__calloc(files && files->n ? files->n : 1, 1);
	if (!pw.seen)
		return APTIX_ERROR;
	r = walk_chain(repo, parent, plan_cb, &pw);
	free(pw.seen);
	return r;
}

/* A fence longer than any run of backticks in the text. */
static void fence(char *out, size_t max, const char *text, size_t len)
{
	size_t i, run = 0, longest = 0, n;

	for (i = 0; i < len; i++) {
		run = text[i] == '`' ? run + 1 : 0;
		if (run > longest)
			longest = run;
	}
	n = longest < 3 ? 3 : longest + 1;
	if (n >= max)
		n = max - 1;
	memset(out, '`', n);
	out[n] = '\0';
}

static const char *lang_of(const char *path)
{
	static const struct { const char *ext, *lang; } map[] = {
		{ ".c", "c" }, { ".h", "c" }, { ".cc", "cpp" },
		{ ".cpp", "cpp" }, { ".hpp", "cpp" }, { ".py", "python" },
		{ ".js", "javascript" }, { ".ts", "typescript" },
		{ ".go", "go" }, { ".rs", "rust" }, { ".java", "java" },
		{ ".cs", "csharp" }, { ".rb", "ruby" }, { ".sh", "sh" },
		{ ".md", "markdown" }, { ".json", "json" },
		{ ".yml", "yaml" }, { ".yaml", "yaml" },
		{ "Makefile", "make" },
	};
	size_t i, n = strlen(path);

	for (i = 0; i < ARRAY_SIZE(map); i++) {
		size_t m = strlen(map[i].ext);

		if (n >= m && !strcmp(path + n - m, map[i].ext))
			return map[i].lang;
	}
	return "";
}

static void block(aptix_buf *out, const char *lang, const char *text,
		  size_t len)
{
	char f[64];

	fence(f, sizeof(f), text, len);
	aptix_buf_printf(out, "%s%s\n", f, lang);
	aptix_buf_put(out, text, len);
	if (len && text[len - 1] != '\n')
		aptix_buf_putc(out, '\n');
	aptix_buf_printf(out, "%s\n\n", f);
}

static void list_paths(aptix_buf *out, const aptix_file_set *files,
		       aptix_file_action action, const char *head)
{
	size_t i;
	int any = 0;

	for (i = 0; i < files->n; i++) {
		if (files->v[i].action != action)
			continue;
		aptix_buf_puts(out, any ? ", " : head);
		aptix_buf_puts(out, files->v[i].path);
		any = 1;
	}
	if (any)
		aptix_buf_puts(out, "\n");
}

int aptix_context_render(aptix_buf *out, const aptix_file_set *files,
			 const aptix_chunk_set *chunks)
{
	size_t i, start = out->len;

	for (i = 0; files && i < files->n; i++) {
		const aptix_active_file *f = &files->v[i];

		if (f->action != APTIX_FILE_SEND)
			continue;
		aptix_buf_printf(out, "Active file %s (%ld bytes, sha256 "
				 "%.16s), as it is now in the working copy:\n",
				 f->path, f->size, f->sha256);
		block(out, lang_of(f->path), f->content.ptr, f->content.len);
	}
	if (files) {
		list_paths(out, files, APTIX_FILE_UNCHANGED, "Active files "
			   "unchanged since you last saw them: ");
		list_paths(out, files, APTIX_FILE_TOO_LARGE, "Active files "
			   "too large to send: ");
		list_paths(out, files, APTIX_FILE_BINARY, "Active binary "
			   "files, not sent: ");
	}
	for (i = 0; chunks && i < chunks->n; i++) {
		const aptix_rag_chunk *c = &chunks->v[i];

		if (!c->sent)
			continue;
		aptix_buf_printf(out, "Retrieved from %s lines %ld-%ld "
				 "(score %.3f):\n", c->path, c->start_line,
				 c->end_line, c->score);
		block(out, lang_of(c->path), c->text.ptr, c->text.len);
	}
	if (out->len > start)
		aptix_buf_puts(out, "Instruction:\n");
	return aptix_buf_oom(out) ? APTIX_ERROR : 0;
}
