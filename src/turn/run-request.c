/*
 * src/turn/run-request.c - what a turn sends: the context planned against
 * what its response chain already holds, and the Responses API request
 * body (model, instructions, input, previous_response_id while the chain
 * is alive, else the context rehydrated from the store).
 */
#include "util/common.h"
#include "repo/repo.h"
#include "index/index.h"
#include "turn/run-int.h"
#include "aptix/index.h"
#include "aptix/purge.h"
#include <jansson.h>

#define DEFAULT_INSTRUCTIONS "You are a coding assistant working on the " \
	"user's repository. Answer precisely; when you change code, show " \
	"the complete changed files or unified diffs."

/*
 * Files and chunks holding a credential are neither sent nor stored. The
 * scan withholds the files it reads already; this catches those a
 * caller handed over (aptix_run_set_context) and the chunks.
 */
/*
 * A file holding credential cr is sent when the scan's ask allowed it,
 * or when the options' ask allows it now (a file handed over); a key
 * the caller named (found first) never is.
 */
static int allowed(aptix_run *run, aptix_active_file *f,
		   const aptix_credential *cr)
{
	char why[160];

	if (!strcmp(cr->rule, "known-key"))
		return f->credential_allowed = 0;
	if (f->credential_allowed)
		return 1;
	if (!run->o.ask_credential ||
	    run->o.ask_credential(f->path, cr, run->o.ask_payload) !=
	    APTIX_CREDENTIAL_SEND) {
		aptix_error_clear();
		return 0;
	}
	aptix_credential_describe(why, sizeof(why), cr);
	aptix_run__add_warning(run, "active file '%s' holds %s, %s: sent, "
			       "as the user allowed", f->path,
			       aptix_credential_kind(cr), why);
	return f->credential_allowed = 1;
}

static void drop_secrets(aptix_run *run)
{
	aptix_file_set *files = &run->files;
	aptix_chunk_set *chunks = &run->chunks;
	aptix_credential cr;
	char why[160];
	size_t i, j;

	for (i = 0; i < files->n; i++) {
		aptix_active_file *f = &files->v[i];

		if (!f->content.len ||
		    !aptix_run__credential(&cr, run, f->content.ptr,
					   f->content.len) ||
		    allowed(run, f, &cr))
			continue;
		aptix_buf_release(&f->content);
		f->sha256[0] = '\0';
		f->action = APTIX_FILE_WITHHELD;
		aptix_credential_describe(why, sizeof(why), &cr);
		aptix_run__add_warning(run, "active file '%s' holds %s, %s: "
				       "withheld (neither sent nor stored)",
				       f->path,
				       aptix_credential_kind(&cr), why);
	}
	for (i = j = 0; i < chunks->n; i++) {
		aptix_rag_chunk *c = &chunks->v[i];

		if (aptix_run__credential(&cr, run, c->text.ptr,
					  c->text.len)) {
			aptix_run__add_warning(run, "a chunk of '%s' holds %s "
					       "(%s): neither sent nor stored",
					       c->path,
					       aptix_credential_kind(&cr),
					       cr.rule);
			free(c->chunk_id);
			free(c->repo);
			free(c->path);
			free(c->language);
			aptix_buf_release(&c->text);
			continue;
		}
		chunks->v[j++] = *c;
	}
	chunks->n = j;
}

int aptix_run__plan_context(aptix_run *run)
{
	const aptix_file_set *files = &run->files;
	const aptix_chunk_set *chunks = &run->chunks;
	long max_total;
	size_t i;
	int r;

	drop_secrets(run);
	if ((r = aptix__chain_plan(&run->chain, run->restart, &run->files,
				   &run->chunks)) < 0 ||
	    (r = aptix_config_long(&max_total, run->o.cfg,
				   "files.max-total")) < 0 ||
	    (r = aptix_context_limit(&run->files, &run->chunks,
				     max_total)) < 0)
		return r;
	for (i = 0; i < files->nwarnings; i++)
		aptix_run__add_warning(run, "%s", files->warnings[i]);
	for (i = 0; i < files->n; i++) {
		const aptix_active_file *f = &files->v[i];

		if (f->action == APTIX_FILE_TOO_LARGE)
			aptix_run__add_warning(run, "active file '%s' is too "
					       "large to send (%ld bytes, over "
					       "files.max-size): skipped",
					       f->path, f->size);
		else if (f->action == APTIX_FILE_BINARY)
			aptix_run__add_warning(run, "active file '%s' is "
					       "binary: skipped", f->path);
	}
	for (i = 0; i < chunks->nwarnings; i++)
		aptix_run__add_warning(run, "%s", chunks->warnings[i]);
	return 0;
}

static void add_text(json_t *input, const char *role, const char *text,
		     size_t len)
{
	json_t *m = json_object();

	json_object_set_new(m, "role", json_string(role));
	json_object_set_new(m, "content", json_stringn(text, len));
	json_array_append_new(input, m);
}

/*
 * A blob of the history to rehydrate; one that aptix purge removed
 * reads as "[purged]" rather than failing every new chain.
 */
static int history_blob(aptix_buf *out, aptix_repo *repo,
			const aptix_oid *id)
{
	aptix_purge_info info;
	int r = aptix_blob_lookup(out, repo, id);

	if (r == APTIX_ENOTFOUND && aptix_purge_lookup(&info, repo, id) == 0) {
		aptix_error_clear();
		return aptix_buf_set(out, "[purged]", 8) < 0 ?
			aptix_error_oom() : 0;
	}
	return r;
}

/* Bytes of a blob, from its header (0 when unreadable). */
static size_t blob_size(aptix_repo *repo, const aptix_oid *id)
{
	aptix_otype type;
	size_t sz = 0;

	if (aptix_oid_is_zero(id) ||
	    aptix_odb_read_header(&sz, &type, repo->odb, id) < 0)
		return 0;
	return sz;
}

/* One turn of the history: newest first. NULL past the oldest. */
static const aptix_turn *past(aptix_run *run, size_t i)
{
	const struct aptix__past *p;

	return aptix__chain_get(&p, &run->chain, i) == 0 ? &p->turn : NULL;
}

/*
 * The summary of the turns older than the window for a history whose
 * index records hold no rolling summary (indexed by an older version,
 * or numbered out of order by plumbing: a fork that starts again at 1),
 * read turn by turn: the newest of them, as many as a summary of
 * context.summary-chars can say something about; older ones are named
 * by a line of their own, not read, so that a restart costs the same
 * whatever the length of the history. *count: the turns summarised.
 * @note a turn from past() is valid only until the next call (the
 * chain's array grows), so each is copied out at once.
 */
#define OLDER_LINE "- Turns before these: not summarised (the index " \
	"holds no rolling summary of them)\n"

static int walk_summary(aptix_buf *out, uint32_t *lo, uint32_t *hi,
			size_t *count, aptix_run *run, size_t window)
{
	size_t cap = (size_t)run->summary_chars, n;
	size_t max = aptix_index__summary_walk_max(cap);
	struct aptix_index_line *v = aptix__calloc(max, sizeof(*v));
	aptix_buf instr = APTIX_BUF_INIT, ans = APTIX_BUF_INIT;
	const struct aptix__past *p;
	char sum[APTIX_SUMMARY_MAX + 1];
	int r = 0, more = 0;

	if (!v)
		return APTIX_ERROR;
	for (n = 0; n < max; n++) {
		if ((r = aptix__chain_get(&p, &run->chain, window + n)) < 0)
			break;
		aptix_buf_clear(&ans);
		if ((r = history_blob(&instr, run->repo,
				      &p->turn.instruction)) < 0 ||
		    (!aptix_oid_is_zero(&p->turn.answer) &&
		     (r = history_blob(&ans, run->repo,
				       &p->turn.answer)) < 0))
			break;
		aptix_summary_line(sum, APTIX_SUMMARY_MAX, instr.ptr,
				   instr.len);
		/* newest first here; the summary wants the oldest first */
		aptix_index__line_set(&v[max - 1 - n], p->turn.seq, sum,
				      instr.ptr, instr.len, ans.ptr, ans.len);
	}
	if (r == APTIX_ITEROVER)
		r = 0;
	else if (r == 0 && n == max)
		more = (r = aptix__chain_get(&p, &run->chain,
					     window + n)) == 0;
	if (r == APTIX_ITEROVER)
		r = 0;
	if (r < 0 || !n)
		goto done;
	if (more && cap >= 2 * strlen(OLDER_LINE)) {
		aptix_buf_puts(out, OLDER_LINE);
		cap -= strlen(OLDER_LINE);
	}
	*lo = v[max - n].seq;
	*hi = v[max - 1].seq;
	*count = n;
	r = aptix_index__summary_of_lines(out, v + max - n, n, cap);
done:
	free(v);
	aptix_buf_release(&instr);
	aptix_buf_release(&ans);
	return r;
}

/*
 * The summary of the turns before the window (the turn at index window
 * and older): from the rolling summary in the index records, a fixed
 * number of reads; for a history without one, walk_summary.
 */
static int add_summary(json_t *input, aptix_run *run, size_t window)
{
	aptix_buf summary = APTIX_BUF_INIT, body = APTIX_BUF_INIT;
	const aptix_turn *t = past(run, window);
	uint32_t lo, hi, upto;
	size_t count = 0;
	int r;

	if (!t)
		return 0;	/* the window holds every turn */
	upto = (uint32_t)t->seq;
	r = aptix_index__rolling_summary(&body, &lo, &hi, run->repo,
					 &run->parent, upto,
					 (size_t)run->summary_chars);
	if (r == 1) {	/* no rolling summary: read the turns */
		aptix_buf_clear(&body);
		r = walk_summary(&body, &lo, &hi, &count, run, window);
	} else if (r == 0) {	/* the base may cover window turns too */
		count = (hi > upto ? upto : hi) >= lo ?
			(hi > upto ? upto : hi) - lo + 1 : 0;
	}
	if (r < 0 || !body.len)
		goto done;
	aptix_buf_printf(&summary, "Summary of the earlier turns of this "
			 "conversation, turns %lu to %lu (the previous "
			 "responses are no longer available):\n",
			 (unsigned long)lo, (unsigned long)hi);
	aptix_buf_put(&summary, body.ptr, body.len);
	if (aptix_buf_oom(&summary)) {
		r = APTIX_ERROR;
		goto done;
	}
	add_text(input, "user", summary.ptr, summary.len);
	run->rehydrated += count;
done:
	aptix_buf_release(&summary);
	aptix_buf_release(&body);
	return r;
}

/* --- The window: recent turns replayed, cut to fit ------------------ */

/* What a replayed message keeps at least (or all of it, when shorter). */
#define REPLAY_MIN 256

struct fenced {
	size_t start, end;	/* the block's content, between its fences */
	size_t lines;
	int cut;
};

/* A fence line at p (at most 3 spaces, then 3 or more ` or ~): its
 * character and length, else 0. */
static size_t fence_at(char *ch, const char *p, const char *end)
{
	size_t n = 0, sp = 0;

	while (sp < 3 && p < end && *p == ' ') {
		p++;
		sp++;
	}
	if (p == end || (*p != '`' && *p != '~'))
		return 0;
	*ch = *p;
	while (p + n < end && p[n] == *ch)
		n++;
	return n >= 3 ? n : 0;
}

/* The fenced code blocks of text (Markdown), in order. */
static int find_blocks(struct fenced **out, size_t *nout, const char *text,
		       size_t len)
{
	const char *end = text + len, *p = text;
	size_t alloc = 0, open = 0;
	char och = 0;

	*out = NULL;
	*nout = 0;
	while (p < end) {
		const char *nl = memchr(p, '\n', (size_t)(end - p));
		const char *next = nl ? nl + 1 : end;
		char ch = 0;	/* set by fence_at() when it finds one */
		size_t n = fence_at(&ch, p, next);

		if (!open && n) {
			if (aptix__grow(out, &alloc, *nout, sizeof(**out),
					8) < 0)
				return APTIX_ERROR;
			memset(&(*out)[*nout], 0, sizeof(**out));
			(*out)[*nout].start = (size_t)(next - text);
			open = n;
			och = ch;
		} else if (open && n >= open && ch == och) {
			(*out)[(*nout)++].end = (size_t)(p - text);
			open = 0;
		} else if (open) {
			(*out)[*nout].lines++;
		}
		p = next;
	}
	if (open)	/* unclosed: to the end */
		(*out)[(*nout)++].end = len;
	return 0;
}

#define CODE_CUT "[%zu lines of code not replayed: files are sent in " \
	"their current version]\n"

/*
 * Collapse the largest code blocks of text until it fits max (answers
 * quote whole files: their versions of then must not take the place of
 * the current ones).
 */
static int cut_code(aptix_buf *out, const char *text, size_t len,
		    size_t max)
{
	struct fenced *b;
	size_t n, i, size = len, from = 0;
	char mark[128];

	if (find_blocks(&b, &n, text, len) < 0)
		return APTIX_ERROR;
	while (size > max) {
		size_t best = n, m;

		for (i = 0; i < n; i++)
			if (!b[i].cut && (best == n || b[i].end - b[i].start >
					   b[best].end - b[best].start))
				best = i;
		if (best == n)
			break;
		m = (size_t)snprintf(mark, sizeof(mark), CODE_CUT,
				     b[best].lines);
		if (b[best].end - b[best].start <= m)
			break;
		b[best].cut = 1;
		size -= b[best].end - b[best].start - m;
	}
	for (i = 0; i < n; i++) {
		if (!b[i].cut)
			continue;
		aptix_buf_put(out, text + from, b[i].start - from);
		aptix_buf_printf(out, CODE_CUT, b[i].lines);
		from = b[i].end;
	}
	aptix_buf_put(out, text + from, len - from);
	free(b);
	return aptix_buf_oom(out) ? APTIX_ERROR : 0;
}

int aptix_run__cut_replay(aptix_buf *out, const char *text, size_t len,
			  size_t max)
{
	aptix_buf t = APTIX_BUF_INIT;
	char mark[96];
	size_t m, head, tail, cut;
	int r;

	aptix_buf_clear(out);
	if (len <= max) {
		aptix_buf_put(out, text, len);
		return aptix_buf_oom(out) ? APTIX_ERROR : 0;
	}
	if ((r = cut_code(&t, text, len, max)) < 0)
		goto done;
	if (t.len <= max) {
		aptix_buf_put(out, t.ptr, t.len);
		goto done;
	}
	/* then the middle: the start and the end say most */
	m = (size_t)snprintf(mark, sizeof(mark), "\n[... %zu bytes not "
			     "replayed ...]\n", t.len);
	if (max <= m) {
		aptix_buf_put(out, t.ptr, aptix_utf8_cut(t.ptr, t.len, max));
		goto done;
	}
	head = aptix_utf8_cut(t.ptr, t.len, (max - m) * 2 / 3);
	tail = t.len - (max - m - head);
	while (tail < t.len && ((unsigned char)t.ptr[tail] & 0xc0) == 0x80)
		tail++;
	cut = tail - head;
	m = (size_t)snprintf(mark, sizeof(mark), "\n[... %zu bytes not "
			     "replayed ...]\n", cut);
	aptix_buf_put(out, t.ptr, head);
	aptix_buf_puts(out, mark);
	aptix_buf_put(out, t.ptr + tail, t.len - tail);
done:
	aptix_buf_release(&t);
	if (!r && aptix_buf_oom(out))
		r = APTIX_ERROR;
	return r;
}

/* The largest share x with the sum of min(size, x) within budget. */
static size_t fill_level(const size_t *size, size_t n, size_t budget)
{
	size_t lo = 0, hi = 0, i;

	for (i = 0; i < n; i++)
		if (size[i] > hi)
			hi = size[i];
	while (lo < hi) {
		size_t x = lo + (hi - lo + 1) / 2, sum = 0;

		for (i = 0; i < n && sum <= budget; i++)
			sum += size[i] < x ? size[i] : x;
		if (sum <= budget)
			lo = x;
		else
			hi = x - 1;
	}
	return lo;
}

static size_t at_least(size_t size)
{
	return size < REPLAY_MIN ? size : REPLAY_MIN;
}

/* Replay a message of the window, cut to limit bytes. */
static int replay(json_t *input, aptix_run *run, const char *role,
		  const aptix_oid *id, size_t limit)
{
	aptix_buf a = APTIX_BUF_INIT, c = APTIX_BUF_INIT;
	int r;

	if ((r = history_blob(&a, run->repo, id)) == 0 &&
	    (r = aptix_run__cut_replay(&c, a.ptr, a.len, limit)) == 0)
		add_text(input, role, c.ptr, c.len);
	aptix_buf_release(&a);
	aptix_buf_release(&c);
	return r;
}

/*
 * The context of a new chain, within context.window-chars plus
 * context.summary-chars: the most recent turns (at least the last one)
 * in what the window leaves after the turn's own context (used bytes),
 * each message cut to an equal share of it when they do not all fit
 * (a message shorter than its share is replayed whole; none is cut
 * below REPLAY_MIN, so the window holds as many turns as that allows),
 * and every older turn in a summary labelled with the turns it covers:
 * no turn is left out.
 */
static int rehydrate(json_t *input, aptix_run *run, size_t used)
{
	aptix_repo *repo = run->repo;
	size_t i, window = 0, floors = 0, room, level, *size;
	const aptix_turn *t;
	int r = 0;

	run->rehydrated = 0;
	room = (size_t)run->window_chars > used ?
		(size_t)run->window_chars - used : 0;
	if (!(size = aptix__calloc(2 * (size_t)run->window_turns + 2,
				   sizeof(*size))))
		return APTIX_ERROR;
	/* how many recent turns fit the window, newest first */
	for (i = 0; window < (size_t)run->window_turns &&
	     (t = past(run, i)) != NULL; i++) {
		size_t is = blob_size(repo, &t->instruction);
		size_t as = blob_size(repo, &t->answer);

		if (window && floors + at_least(is) + at_least(as) > room)
			break;
		floors += at_least(is) + at_least(as);
		size[2 * window] = is;
		size[2 * window + 1] = as;
		window++;
	}
	level = fill_level(size, 2 * window, room);
	if (level < REPLAY_MIN)
		level = REPLAY_MIN;
	if (run->summary_chars > 0 &&
	    (r = add_summary(input, run, window)) < 0)
		goto done;
	for (i = window; i > 0 && r == 0; i--) {
		t = past(run, i - 1);
		/* copied: replay() reads no more of the chain */
		if ((r = replay(input, run, "user", &t->instruction,
				level)) < 0)
			break;
		if (!aptix_oid_is_zero(&t->answer) &&
		    (r = replay(input, run, "assistant", &t->answer,
				level)) < 0)
			break;
		run->rehydrated++;
	}
done:
	free(size);
	return r;
}

/*
 * A new chain sends the context whole: what does not fit the window
 * (files first, in order, then chunks, best first) is left out, and
 * the turn's warnings say so.
 */
static void fit_context(aptix_run *run)
{
	size_t budget = (size_t)run->window_chars, used = 0, i;

	used = run->instruction.len;
	for (i = 0; i < run->files.n; i++) {
		aptix_active_file *f = &run->files.v[i];
		size_t sz = f->content.len + 128;

		if (f->action != APTIX_FILE_SEND)
			continue;
		if (used + sz > budget) {
			f->action = APTIX_FILE_OVER_BUDGET;
			aptix_run__add_warning(run, "active file '%s' (%ld "
					       "bytes) left out: over the new "
					       "chain's context budget "
					       "(context.window-chars)",
					       f->path, f->size);
			continue;
		}
		used += sz;
	}
	for (i = 0; i < run->chunks.n; i++) {
		aptix_rag_chunk *c = &run->chunks.v[i];
		size_t sz = c->text.len + 128;

		if (!c->sent)
			continue;
		if (used + sz > budget) {
			c->sent = 0;
			aptix_run__add_warning(run, "a chunk of '%s' (lines "
					       "%ld-%ld) left out: over the new "
					       "chain's context budget "
					       "(context.window-chars)",
					       c->path, c->start_line,
					       c->end_line);
			continue;
		}
		used += sz;
	}
}

static int set_temperature(json_t *req, const aptix_config *cfg)
{
	double t;
	int r = aptix_config_double(&t, cfg, "openai.temperature");

	if (r == APTIX_ENOTFOUND) {	/* unset: the model's default */
		aptix_error_clear();
		return 0;
	}
	if (r == 0)
		json_object_set_new(req, "temperature", json_real(t));
	return r;
}

int aptix_run__build_request(aptix_run *run)
{
	const aptix_config *cfg = run->o.cfg;
	const char *instr = cfg ? aptix_config_get(cfg, "openai.instructions") :
		NULL;
	json_t *req = json_object(), *input = json_array();
	aptix_buf text = APTIX_BUF_INIT;
	char *s = NULL;
	int r = 0;

	if (!req || !input) {
		json_decref(req);
		json_decref(input);
		return aptix_error_oom();
	}
	if (run->restart) {
		run->turn.chain_restarted = 1;
		free(run->previous);
		run->previous = NULL;
	}
	json_object_set_new(req, "model", json_string(run->model));
	if (!instr)
		instr = DEFAULT_INSTRUCTIONS;
	if (*instr)
		json_object_set_new(req, "instructions", json_string(instr));
	if (run->previous)
		json_object_set_new(req, "previous_response_id",
				    json_string(run->previous));
	else if (run->restart && run->has_parent)
		fit_context(run);
	r = aptix_context_render(&text, &run->files, &run->chunks);
	if (!r && !run->previous && run->restart && run->has_parent)
		r = rehydrate(input, run, text.len + run->instruction.len);
	if (!r)
		r = aptix_run__tool_input(run, req, input);
	aptix_buf_put(&text, run->instruction.ptr, run->instruction.len);
	/* tool outputs may go without a message */
	if (text.len || !run->ntool)
		add_text(input, "user", text.ptr, text.len);
	json_object_set_new(req, "input", input);
	if (!r)
		r = set_temperature(req, cfg);
	json_object_set_new(req, "store", json_true());
	json_object_set_new(req, "stream", json_boolean(!run->o.no_stream));
	/* 15 digits: 0.2 is sent as 0.2, not 0.20000000000000001 */
	if (!r && !(s = json_dumps(req, JSON_COMPACT | JSON_PRESERVE_ORDER |
				   JSON_REAL_PRECISION(15))))
		r = aptix_error_oom();
	json_decref(req);
	aptix_buf_release(&text);
	if (r < 0)
		return r;
	r = aptix_buf_set(&run->res.request, s, strlen(s));
	free(s);
	return r;
}
