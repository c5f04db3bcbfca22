/*
 * src/import/import.c - the importers' framework (see aptix/import.h and
 * import.h): finding a tool's files, reading them line by line, cutting
 * the source into turns with the tool, the credential check, and the
 * recording of each turn through the recorder.
 *
 * Idempotence is content addressing. A turn's content (its blobs: the
 * instruction, the answer, the source lines) and its snapshot are made
 * from the source alone: the conversation is "<tool>-<source id>", the
 * times are the records' times, the parent is the snapshot of the turn
 * before. So the snapshot's id is computed here first (the blob ids are
 * the hashes of their bytes, the turn and snapshot are serialized as the
 * recorder would write them: the snapshot is handed to it whole), and a
 * snapshot the store holds already is skipped: a second import writes no
 * object, a grown file writes only its new turns.
 */
#define _GNU_SOURCE 1	/* memmem */
#include "util/common.h"
#include "util/env.h"
#include "object/object.h"
#include "repo/gitdir.h"
#include "import/import.h"
#include "record/record.h"
#include "txn/txn.h"
#include "aptix/record.h"
#include "aptix/odb.h"
#include "aptix/oidmap.h"
#include "aptix/index.h"
#include "aptix/credscan.h"
#include <sqlite3.h>
#include "aptix/refs.h"
#include "aptix/history.h"
#include <dirent.h>
#include <sys/stat.h>

#define TITLE_MAX 72

/* The last workspace derived: its inputs and what came of them. */
struct ws_memo {
	char *cwd, *remote;
	char *ws, *old;		/* the workspace, and as aptix derived it before */
};

static void ws_memo_release(struct ws_memo *m)
{
	free(m->cwd);
	free(m->remote);
	free(m->ws);
	free(m->old);
	memset(m, 0, sizeof(*m));
}

struct imp_run {
	aptix_repo *repo;
	const aptix_import_options *o;
	aptix_import_stats *st;
	int partial;
	struct imp_keys keys;		/* the batch's (a dry run: all) */
	struct imp_keys fkeys;		/* the file's own (imp_key_put_file) */
	struct imp_key got;		/* a key read from the store */
	aptix_buf key_val;		/* a record's bytes, scratch */
	int key_err;			/* a key could not be read */
	aptix_oidmap left;		/* sha256(id) -> its files not read */
	unsigned file_no;		/* the top-level file being read */
	struct imp_conv **convs;
	size_t nconvs, aconvs;
	unsigned long long total;
	aptix_txn *tx;			/* the batch (see batch_commit) */
	aptix_oidmap moved_map;		/* sha256(conv) -> index in moved */
	aptix_oid *moved;		/* refs of forgotten conversations */
	size_t nmoved, amoved;		/* ... that the batch moves */
	size_t batch_turns, batch_bytes, batch_keys;
	unsigned batch_no;
	int relinking;			/* a waiting fork is imported again */
	aptix_oidmap relink_old;	/* ... its old snapshots */
	struct ws_memo wsm;	/* the last workspace derived (set_workspace) */
};

static const struct imp_tool *const tools[] = {
	&aptix__imp_codex, &aptix__imp_claude, &aptix__imp_gemini,
	&aptix__imp_json, &aptix__imp_session_md, &aptix__imp_opencode,
	&aptix__imp_llm
};

static const struct imp_tool *find_tool(const char *name)
{
	size_t i;

	for (i = 0; name && i < ARRAY_SIZE(tools); i++)
		if (!strcmp(tools[i]->name, name))
			return tools[i];
	return NULL;
}

int aptix_import_tool_known(const char *tool)
{
	return find_tool(tool) != NULL;
}

/* --- small helpers for the tools ---------------------------------------- */

void imp_turn_init(struct imp_turn *t)
{
	memset(t, 0, sizeof(*t));
	aptix_buf_init(&t->instruction, 0);
	aptix_buf_init(&t->answer, 0);
}

void *imp_state_new(struct imp_file *f, size_t size, size_t turn_off)
{
	char *st = aptix__calloc(1, size);

	if (st) {
		imp_turn_init((struct imp_turn *)(st + turn_off));
		f->state = st;
		f->state_turn = turn_off + 1;
	}
	return st;
}

void imp_state_free(struct imp_file *f)
{
	char *st = f->state;

	if (st && f->state_turn)
		imp_turn_release((struct imp_turn *)(st + f->state_turn - 1));
	free(st);
	f->state = NULL;
	f->state_turn = 0;
}

void imp_turn_release(struct imp_turn *t)
{
	size_t i;

	aptix_tool_calls_free(t->calls, t->ncalls);
	for (i = 0; i < t->nresults; i++) {
		aptix_tool_result_release(&t->results[i].r);
		aptix_buf_release(&t->results[i].out);
		aptix_buf_release(&t->results[i].err);
		aptix_buf_release(&t->results[i].output);
	}
	free(t->results);
	aptix_buf_release(&t->instruction);
	aptix_buf_release(&t->answer);
	imp_where_release(&t->where);
	imp_turn_init(t);
}

void imp_where_release(struct imp_where *w)
{
	free(w->model);
	free(w->cwd);
	free(w->commit);
	free(w->branch);
	free(w->remote);
	memset(w, 0, sizeof(*w));
}

const char *imp_str(json_t *o, const char *key)
{
	json_t *v = json_is_object(o) ? json_object_get(o, key) : NULL;

	return json_is_string(v) ? json_string_value(v) : NULL;
}

long imp_long(json_t *o, const char *key)
{
	json_t *v = json_is_object(o) ? json_object_get(o, key) : NULL;

	return json_is_integer(v) && json_integer_value(v) > 0 ?
		(long)json_integer_value(v) : 0;
}

int64_t imp_time(json_t *o, const char *key)
{
	const char *s = imp_str(o, key);
	int64_t ms = 0;

	if (!s || aptix__date_parse_iso_ms(&ms, s) < 0)
		return 0;
	if (aptix_env__get(APTIX_ENV_TEST_IMPORT_SECONDS))
		ms -= ms % 1000;	/* as an older aptix read it */
	return ms;
}

int imp_set_str(char **dst, const char *s)
{
	char *d;

	if (!s)
		return 0;
	if (!(d = aptix__strdup(s)))
		return APTIX_ERROR;
	free(*dst);
	*dst = d;
	return 0;
}

/*
 * Whether the workspace is derived as aptix did before it read the
 * repository (tests that make a store of then; an older aptix of the
 * other APTIX_TEST_IMPORT_* hooks did so too).
 */
static int path_ws(void)
{
	return aptix_env__get(APTIX_ENV_TEST_IMPORT_PATH_WS) ||
		aptix_env__get(APTIX_ENV_TEST_IMPORT_NO_GIT) ||
		aptix_env__get(APTIX_ENV_TEST_IMPORT_SECONDS);
}

/* Equal strings, or both NULL. */
static int same_str(const char *a, const char *b)
{
	return a ? b && !strcmp(a, b) : !b;
}

/* A field from holds replaces to's; one it does not hold is kept. */
int imp_where_copy(struct imp_where *to, const struct imp_where *from)
{
	if (imp_set_str(&to->model, from->model) < 0 ||
	    imp_set_str(&to->cwd, from->cwd) < 0 ||
	    imp_set_str(&to->commit, from->commit) < 0 ||
	    imp_set_str(&to->branch, from->branch) < 0 ||
	    imp_set_str(&to->remote, from->remote) < 0)
		return APTIX_ERROR;
	return 0;
}

/*
 * The exit code in a tool's output text, where the tool keeps it only
 * there: the first "Exit code N" (Claude Code) or "Exit Code: N" (Gemini
 * CLI) at the start of a line. Returns 1 when found.
 */
int imp_exit_code(long *code, const char *text)
{
	const char *p = text;
	char *end;
	long v;

	while (p && *p) {
		if (!strncmp(p, "Exit code ", 10) ||
		    !strncmp(p, "Exit Code: ", 11)) {
			p += p[9] == ':' ? 11 : 10;
			errno = 0;
			v = strtol(p, &end, 10);
			if (end != p && !errno && (!*end || *end == '\n' ||
						   *end == '\r' || *end == ' ')) {
				*code = v;
				return 1;
			}
		}
		if ((p = strchr(p, '\n')))
			p++;
	}
	return 0;
}

void imp_warn(struct imp_file *f, size_t line, const char *fmt, ...)
{
	aptix_buf b = APTIX_BUF_INIT;
	va_list ap;

	va_start(ap, fmt);
	aptix_buf_vprintf(&b, fmt, ap);
	va_end(ap);
	f->run->st->warnings++;
	if (f->run->o->warn)
		f->run->o->warn(f->path, line ? line : f->lineno, b.ptr,
				f->run->o->payload);
	aptix_buf_release(&b);
}

void imp_partial(struct imp_file *f, int skipped)
{
	f->run->st->skipped += skipped ? 1 : 0;
	f->run->partial = 1;
}

void imp_unknown(struct imp_file *f, const char *type)
{
	imp_warn(f, 0, "unknown record type '%s': kept as source, not read",
		 type ? type : "(none)");
	f->run->st->skipped++;
	f->run->partial = 1;
}

/* --- tool calls ---------------------------------------------------------- */

int imp_call_add(struct imp_turn *t, const char *call_id, const char *name,
		 const char *arguments, const char *kind, const char *item_id)
{
	aptix_tool_call *c;

	if (!call_id || !name)
		return 0;
	if (aptix__grow(&t->calls, &t->acalls, t->ncalls, sizeof(*t->calls),
			4) < 0)
		return APTIX_ERROR;
	c = &t->calls[t->ncalls];
	aptix_tool_call_init(c);
	t->ncalls++;
	if (imp_set_str(&c->call_id, call_id) < 0 ||
	    imp_set_str(&c->name, name) < 0 ||
	    imp_set_str(&c->arguments, arguments ? arguments : "") < 0 ||
	    imp_set_str(&c->kind, kind) < 0 ||
	    imp_set_str(&c->item_id, item_id) < 0)
		return APTIX_ERROR;
	return 0;
}

struct imp_result *imp_result_get(struct imp_turn *t, const char *call_id,
				  const char *source)
{
	struct imp_result *r;
	size_t i;

	for (i = 0; i < t->nresults; i++)
		if (!strcmp(t->results[i].r.call_id, call_id))
			return &t->results[i];
	if (aptix__grow(&t->results, &t->aresults, t->nresults,
			sizeof(*t->results), 4) < 0)
		return NULL;
	r = &t->results[t->nresults];
	memset(r, 0, sizeof(*r));
	aptix_tool_result_init(&r->r);
	aptix_buf_init(&r->out, 0);
	aptix_buf_init(&r->err, 0);
	aptix_buf_init(&r->output, 0);
	t->nresults++;
	if (imp_set_str(&r->r.call_id, call_id) < 0 ||
	    imp_set_str(&r->r.source, source) < 0)
		return NULL;
	return r;
}

const aptix_tool_call *imp_call_find(const struct imp_turn *t,
				     const char *call_id)
{
	size_t i = aptix__tool_call_index(t->calls, t->ncalls, call_id);

	return i < t->ncalls ? &t->calls[i] : NULL;
}

char *imp_dump(json_t *v)
{
	char *s = json_dumps(v, JSON_COMPACT | JSON_ENCODE_ANY);

	if (!s)
		aptix_error_oom();
	return s;
}

/* --- source keys ------------------------------------------------------- */

/*
 * A source key names a turn's snapshot (see import.h). The keys are kept
 * in the store's imports table (objects-format.md, "The import keys"),
 * written in the batch of the turns they name, so that a later run finds
 * a parent imported before without reading its files again. The run
 * keeps in memory only the keys of its uncommitted batch (and a dry run,
 * which writes nothing, all of them): memory does not grow with the
 * corpus.
 */
static void key_oid(aptix_oid *id, const char *key)
{
	aptix_sha256(id, key, strlen(key));
}

static int keys_put(struct imp_keys *ks, const aptix_oid *id,
		    const struct imp_key *k)
{
	size_t i;

	if (!aptix_oidmap_get(&i, &ks->map, id)) {
		ks->v[i] = *k;
		return 0;
	}
	if (aptix__grow(&ks->v, &ks->alloc, ks->n, sizeof(*ks->v), 64) < 0 ||
	    aptix_oidmap_put(&ks->map, id, ks->n) < 0)
		return APTIX_ERROR;
	ks->v[ks->n++] = *k;
	return 0;
}

static const struct imp_key *keys_get(const struct imp_keys *ks,
				      const aptix_oid *id)
{
	size_t i;

	return aptix_oidmap_get(&i, &ks->map, id) ? NULL : &ks->v[i];
}

static void keys_clear(struct imp_keys *ks)
{
	aptix_oidmap_clear(&ks->map);
	ks->n = 0;
}

static void keys_release(struct imp_keys *ks)
{
	aptix_oidmap_release(&ks->map);
	free(ks->v);
	memset(ks, 0, sizeof(*ks));
}

/*
 * Queue the record of k in the batch, unless the store has it so. A key
 * queued already, or naming a snapshot this run wrote (no earlier run's
 * record can name it), is written without reading what the store has:
 * on PostgreSQL that read is a round trip, and a first import would pay
 * one a turn for nothing.
 */
static int key_write(struct imp_run *run, const aptix_oid *id,
		     const struct imp_key *k, int queued)
{
	struct aptix_index_import_key ik;
	aptix_index_backend *ix = run->repo->backend->index;
	aptix_buf val = APTIX_BUF_INIT;
	int r;

	memset(&ik, 0, sizeof(ik));
	ik.session = k->session;
	ik.seq = k->seq;
	snprintf(ik.conv, sizeof(ik.conv), "%s", k->conv);
	ik.total = k->total;
	ik.has_total = k->total.input_tokens || k->total.cached_tokens ||
		k->total.output_tokens || k->total.reasoning_tokens ||
		k->total.total_tokens;
	if ((r = aptix_index__import_key_encode(&val, &ik)) < 0)
		goto done;
	r = queued || k->fresh ? APTIX_ENOTFOUND :
		ix->get(&run->key_val, ix, NULL, APTIX_INDEX_IMPORTS, id->id,
			32);
	if (r == APTIX_ENOTFOUND)
		aptix_error_clear();
	else if (r < 0)
		goto done;
	else if (run->key_val.len == val.len &&
		 !memcmp(run->key_val.ptr, val.ptr, val.len))
		goto done;	/* imported before: as it was */
	if ((r = run->tx ? 0 : aptix_txn_new(&run->tx, run->repo)) == 0 &&
	    (r = aptix_txn__index_put(run->tx, APTIX_INDEX_IMPORTS, id->id,
				      32, val.ptr, val.len)) == 0)
		run->batch_keys++;
done:
	aptix_buf_release(&val);
	return r < 0 ? r : 0;
}

int imp_key_put(struct imp_run *run, const char *key, const struct imp_key *k)
{
	aptix_oid id;
	int queued, r;

	aptix_index__import_key_id(&id, key);
	queued = keys_get(&run->keys, &id) != NULL;
	if ((r = keys_put(&run->keys, &id, k)) < 0 || run->o->dry_run ||
	    !*k->conv)
		return r;
	return key_write(run, &id, k, queued);
}

int imp_key_put_file(struct imp_run *run, const char *key,
		     const struct imp_key *k)
{
	aptix_oid id;

	aptix_index__import_key_id(&id, key);
	return keys_put(&run->fkeys, &id, k);
}

/* The key as an earlier batch or run stored it (NULL: none). */
static const struct imp_key *key_read(struct imp_run *run,
				      const aptix_oid *id)
{
	struct aptix_index_import_key ik;
	int r = aptix_index__import_key_get(&ik, &run->key_val, run->repo,
					    id);

	if (r < 0) {
		if (r != APTIX_ENOTFOUND && !run->key_err)
			run->key_err = r;	/* the run stops, saying why */
		else
			aptix_error_clear();
		return NULL;
	}
	memset(&run->got, 0, sizeof(run->got));
	run->got.session = ik.session;
	run->got.seq = ik.seq;
	snprintf(run->got.conv, sizeof(run->got.conv), "%s", ik.conv);
	run->got.total = ik.total;
	return &run->got;
}

const struct imp_key *imp_key_get(struct imp_run *run, const char *key)
{
	const struct imp_key *k;
	aptix_oid id;

	aptix_index__import_key_id(&id, key);
	if (!(k = keys_get(&run->fkeys, &id)) &&
	    !(k = keys_get(&run->keys, &id)))
		k = key_read(run, &id);
	return k;
}

void imp_key_here(struct imp_key *k, const struct imp_file *f)
{
	memset(k, 0, sizeof(*k));
	k->session = f->conv->parent;
	k->seq = f->conv->seq;
	k->fresh = f->conv->parent_fresh;
	snprintf(k->conv, sizeof(k->conv), "%s", f->conv->id);
}

/* --- conversations ------------------------------------------------------ */

static struct imp_conv *conv_get(struct imp_run *run, const char *id)
{
	struct imp_conv *c;
	size_t i;

	for (i = 0; i < run->nconvs; i++)
		if (!strcmp(run->convs[i]->id, id)) {
			c = run->convs[i];
			if (run->relinking && c->file_no != run->file_no) {
				/* made again from its first turn */
				memset(&c->parent, 0, sizeof(c->parent));
				c->has_parent = c->parent_fresh = 0;
				c->seq = 0;
				c->relink = 1;
			}
			c->file_no = run->file_no;
			return c;
		}
	if (aptix__grow(&run->convs, &run->aconvs, run->nconvs,
			sizeof(*run->convs), 16) < 0 ||
	    !(c = aptix__calloc(1, sizeof(*c))))
		return NULL;
	snprintf(c->id, sizeof(c->id), "%s", id);
	c->file_no = run->file_no;
	c->relink = run->relinking;
	run->convs[run->nconvs++] = c;
	return c;
}

static void conv_free(struct imp_conv *c)
{
	free(c->workspace);
	free(c->legacy_ws);
	free(c->cwd);
	free(c->remote);
	free(c);
}

/*
 * Forget a conversation whose files are read. When the uncommitted batch
 * moves its ref, where to is kept until the commit: a later file that
 * names it again (a shared subagent id) must see that ref, which the
 * store does not have yet.
 */
static int conv_forget(struct imp_run *run, struct imp_conv *c)
{
	aptix_oid h;
	int r = 0;

	if (c->moved_in == run->batch_no + 1) {
		key_oid(&h, c->id);
		if (aptix__grow(&run->moved, &run->amoved, run->nmoved,
				sizeof(*run->moved), 16) < 0 ||
		    aptix_oidmap_put(&run->moved_map, &h, run->nmoved) < 0)
			r = APTIX_ERROR;
		else
			run->moved[run->nmoved++] = c->ref_at;
	}
	conv_free(c);
	return r;
}

/*
 * A top-level file is read: what no file left can need goes. Files of
 * one id share its conversations (and a tool's keys for the file), so
 * they stay until the last of them is read; keys of the run stay (a
 * fork reads them, the ids it may fork from are not all known).
 */
static int convs_forget(struct imp_run *run)
{
	size_t i, n;
	int r = 0;

	keys_clear(&run->fkeys);
	for (i = n = 0; i < run->nconvs; i++) {
		if (run->convs[i]->file_no != run->file_no)
			run->convs[n++] = run->convs[i];
		else if (conv_forget(run, run->convs[i]) < 0)
			r = APTIX_ERROR;
	}
	run->nconvs = n;
	return r;
}

static int file_done(struct imp_run *run, const char *id, int *last)
{
	aptix_oid h;
	size_t left = 0;

	*last = 0;
	keys_clear(&run->fkeys);
	if (!id)
		return 0;	/* a tool that names no ids: one file */
	key_oid(&h, id);
	if (!aptix_oidmap_get(&left, &run->left, &h) && left > 0 &&
	    aptix_oidmap_put(&run->left, &h, --left) < 0)
		return APTIX_ERROR;
	if (left)
		return 0;
	*last = 1;
	return convs_forget(run);
}

int imp_conversation(struct imp_file *f, const char *id)
{
	aptix_buf b = APTIX_BUF_INIT;
	struct imp_conv *c;
	int r = 0;

	aptix_buf_printf(&b, "%s-%s", f->tool->name, id);
	if (aptix_buf_oom(&b))
		return aptix_error_oom();
	if (b.len > IMP_CONV_MAX || aptix_conv_check_id(b.ptr) < 0) {
		aptix_error_clear();
		imp_warn(f, 0, "source id '%.80s' cannot name a conversation",
			 id);
		r = 1;
	} else if (!(c = conv_get(f->run, b.ptr))) {
		r = APTIX_ERROR;
	} else {
		f->conv = c;
	}
	aptix_buf_release(&b);
	return r;
}

/* --- cutting the source ------------------------------------------------- */

void imp_cut(struct imp_file *f)
{
	f->cut = f->src.len;
	f->cut_line = f->lineno + 1;
}

/* Drop the source lines up to the cut: they are in a turn now. */
static void take_cut(struct imp_file *f)
{
	size_t rest = f->src.len - f->cut;

	memmove(f->src.ptr, f->src.ptr + f->cut, rest);
	aptix_buf_truncate(&f->src, rest);
	f->src_line = f->cut_line;
	f->cut = 0;
}

void imp_pending(struct imp_file *f)
{
	f->run->st->pending++;
}

static void conv_parent(struct imp_conv *c, const struct imp_key *k)
{

	c->parent = k->session;
	c->has_parent = !aptix_oid_is_zero(&k->session);
	c->parent_fresh = c->has_parent && k->fresh;
	c->seq = k->seq;
	snprintf(c->parent_conv, sizeof(c->parent_conv), "%s", k->conv);
}

void imp_parent(struct imp_file *f, const struct imp_key *k)
{
	if (f->forked_from && strcmp(k->conv, f->conv->id))
		f->linked = 1;
	conv_parent(f->conv, k);
}

int imp_branch(struct imp_file *f, const struct imp_key *k, const char *fmt,
	       ...)
{
	char id[IMP_CONV_MAX + 1];
	struct imp_key from;
	va_list ap;
	int r;

	va_start(ap, fmt);
	vsnprintf(id, sizeof(id), fmt, ap);
	va_end(ap);

	if (k)
		from = *k;
	else if (f->conv)
		imp_key_here(&from, f);
	else
		return 0;
	if ((r = imp_conversation(f, id)) != 0)
		return r < 0 ? r : 0;
	conv_parent(f->conv, &from);	/* the file's own: not a fork's link */
	return 0;
}

void imp_share(struct imp_file *f, const struct imp_key *k)
{
	imp_parent(f, k);
	f->run->st->turns++;
	take_cut(f);
}

int imp_prescan_none(char **id, char **parent, const char *path UNUSED)
{
	*id = *parent = NULL;
	return 0;
}

json_t *imp_first_record(const char *path)
{
	struct imp_lines ls;
	const char *line;
	size_t len;
	int last;
	json_t *rec = NULL;

	if (imp_lines_open(&ls, path) < 0)
		return NULL;
	if (imp_lines_next(&ls, &line, &len, &last) > 0)
		rec = json_loadb(line, len, 0, NULL);
	imp_lines_close(&ls);
	if (rec && !json_is_object(rec)) {
		json_decref(rec);
		rec = NULL;
	}
	return rec;
}

int imp_name_is(const char *path, const char *prefix, const char *suffix)
{
	const char *base = strrchr(path, '/');
	size_t n, m = strlen(suffix);

	base = base ? base + 1 : path;
	n = strlen(base);
	return !strncmp(base, prefix, strlen(prefix)) && n >= m &&
		!strcmp(base + n - m, suffix);
}

/* --- credentials --------------------------------------------------------- */

struct found {
	size_t off, len, line;
	const char *rule;
};

struct scan {
	struct found *v;
	size_t n, alloc;
};

static int found_cb(const aptix_credential *c, void *payload)
{
	struct scan *s = payload;

	if (aptix__grow(&s->v, &s->alloc, s->n, sizeof(*s->v), 4) < 0)
		return APTIX_ERROR;
	s->v[s->n].off = c->offset;
	s->v[s->n].len = c->length;
	s->v[s->n].line = c->line;
	s->v[s->n].rule = c->rule;
	s->n++;
	return 0;
}

static int by_offset(const void *a, const void *b)
{
	const struct found *x = a, *y = b;

	return x->off < y->off ? -1 : x->off > y->off;
}

static size_t count_lines(const char *p, size_t n)
{
	size_t lines = 0;
	const char *nl;

	while ((nl = memchr(p, '\n', n))) {
		lines++;
		n -= (size_t)(nl + 1 - p);
		p = nl + 1;
	}
	return lines;
}

/* The user information of remote URLs (imp_remote) in p. */
static int scan_hidden(struct scan *s, struct imp_file *f, const char *p,
		       size_t len)
{
	aptix_credential c;
	const char *at, *h;
	size_t i;

	memset(&c, 0, sizeof(c));
	c.rule = "url-userinfo";
	for (i = 0; i < f->hidden.nr; i++) {
		h = f->hidden.items[i];
		for (at = p; (at = memmem(at, len - (size_t)(at - p), h,
						 strlen(h))); at += strlen(h)) {
			c.offset = (size_t)(at - p);
			c.length = strlen(h);
			c.line = 1 + count_lines(p, c.offset);
			if (found_cb(&c, s) < 0)
				return APTIX_ERROR;
		}
	}
	return 0;
}

/* The credentials in p, in the order they come. */
static int scan(struct scan *s, struct imp_file *f, const char *p,
		size_t len)
{
	const aptix_import_options *o = f->run->o;
	int r;

	r = aptix_credscan_foreach(p, len, o->keys, o->nkeys, found_cb, s);
	if (r >= 0)
		r = scan_hidden(s, f, p, len);
	if (r >= 0 && s->n)
		qsort(s->v, s->n, sizeof(*s->v), by_offset);
	return r;
}

int imp_credentials(struct imp_file *f, const char *p, size_t len,
		    const char *what)
{
	struct scan s = { NULL, 0, 0 };
	size_t i;
	int r = scan(&s, f, p, len);

	for (i = 0; r >= 0 && i < s.n; i++) {
		f->run->st->flagged++;
		imp_warn(f, 0, "a credential (rule %s) in the %s: not "
			 "imported", s.v[i].rule, what);
	}
	free(s.v);
	return r < 0 ? r : s.n > 0;
}

/*
 * Redact every credential in b, warning for each with its line (line0:
 * the line of b's first byte; 0: the turn's line, fixed).
 */
static int redact(struct imp_file *f, aptix_buf *b, size_t line0,
		  size_t fixed, const char *what)
{
	aptix_buf out = APTIX_BUF_INIT;
	struct scan s = { NULL, 0, 0 };
	size_t i, at = 0;
	int r;

	r = scan(&s, f, b->ptr, b->len);
	if (r < 0 || !s.n)
		goto done;
	for (i = 0; i < s.n; i++) {
		if (s.v[i].off < at)
			continue;	/* inside one already redacted */
		aptix_buf_put(&out, b->ptr + at, s.v[i].off - at);
		aptix_buf_printf(&out, "<redacted:%s>", s.v[i].rule);
		at = s.v[i].off + s.v[i].len;
		f->run->st->flagged++;
		imp_warn(f, fixed ? fixed : line0 + s.v[i].line - 1,
			 "a credential (rule %s) in the %s: stored redacted",
			 s.v[i].rule, what);
	}
	aptix_buf_put(&out, b->ptr + at, b->len - at);
	if (aptix_buf_oom(&out))
		r = aptix_error_oom();
	else
		aptix_buf_set(b, out.ptr, out.len);
done:
	aptix_buf_release(&out);
	free(s.v);
	return r;
}

/* --- recording a turn ---------------------------------------------------- */

static void set_blob(aptix_record_data *d, const aptix_buf *b)
{
	d->ptr = b->ptr;
	d->len = b->len;
}

/* A commit id as a turn keeps it: 40 or 64 lowercase hex digits. */
static int commit_ok(const char *s)
{
	size_t n = s ? strspn(s, "0123456789abcdef") : 0;

	return s && !s[n] && (n == 40 || n == 64);
}

/*
 * The git work tree the tool says the turn ran in: its commit and
 * branch (dirty: the tools do not say), as the turn's worktree.
 */
static void make_worktree(aptix_turn *t, const struct imp_turn *it)
{
	const char *commit = commit_ok(it->where.commit) ? it->where.commit : NULL;
	const char *branch = it->where.branch && *it->where.branch ? it->where.branch : NULL;
	const char *remote = path_ws() ?
		NULL : it->where.remote;

	if ((!commit && !branch && !remote) ||
	    aptix_env__get(APTIX_ENV_TEST_IMPORT_NO_GIT) ||
	    aptix_env__get(APTIX_ENV_TEST_IMPORT_SECONDS))
		return;	/* as aptix did before it read them */
	t->has_worktree = 1;
	t->worktree.commit = (char *)commit;
	t->worktree.branch = (char *)branch;
	t->worktree.remote = (char *)remote;
}

/* The turn's fields (its blobs are made by the recorder from ro's). */
static void make_turn(aptix_turn *t, aptix_record_options *ro,
		      struct imp_file *f, struct imp_turn *it,
		      const aptix_buf *src)
{
	struct imp_conv *c = f->conv;

	t->conversation = c->id;
	t->seq = c->seq + 1;
	t->status = it->has_answer ? APTIX_TURN_COMPLETED : APTIX_TURN_FAILED;
	t->model = it->where.model;
	t->workspace = c->workspace;
	t->created_at = it->created_at;
	t->response_at = it->response_at;
	t->status_at = it->response_at ? it->response_at : it->created_at;
	t->usage = it->usage;
	make_worktree(t, it);
	set_blob(&ro->instruction, &it->instruction);
	if (it->has_answer)
		set_blob(&ro->answer, &it->answer);
	set_blob(&ro->response, src);
}

/*
 * The snapshot, made here rather than by the recorder: its session type
 * (a subagent's), its title and forked_from come from the source.
 */
static void make_session(aptix_session *s, struct imp_file *f,
			 const aptix_turn *t, char *title)
{
	struct imp_conv *c = f->conv;

	s->parent = c->parent;
	s->has_parent = c->has_parent;
	s->conversation = c->id;
	s->status = t->status == APTIX_TURN_COMPLETED ?
		APTIX_SESSION_COMMITTED : APTIX_SESSION_FAILED;
	s->created_at = t->status_at;
	s->duration_ms = t->status_at > t->created_at ?
		t->status_at - t->created_at : 0;
	s->usage = t->usage;
	s->session_type = (char *)(c->session_type ? c->session_type :
				   "agent");
	s->workspace = c->workspace;
	if (!c->has_parent || strcmp(c->parent_conv, c->id)) {
		s->title = title;
		if (c->has_parent)
			s->forked_from = c->parent_conv;
	}
}

/*
 * Queue the turn in a transaction of its own: the recorder makes every
 * object (the snapshot's id in res) without writing anything yet. When
 * the store holds that snapshot already, the transaction is dropped: an
 * import of the same records writes nothing.
 */
static int queue_turn(aptix_txn **tx, aptix_record_result *res,
		      struct imp_file *f, aptix_record_options *ro)
{
	int r;

	if ((r = aptix_txn_new(tx, f->run->repo)) < 0)
		return r;
	r = aptix_record__queue(res, *tx, f->run->repo, ro, NULL);
	if (r < 0) {
		aptix_txn_free(*tx);
		*tx = NULL;
	}
	return r;
}

/*
 * The snapshot an older aptix made of this turn, when the store holds
 * it: 1 and its id in sid. Each older aptix derived the workspace from
 * the directory and the host (legacy_ws); one kept no remote URL
 * (before imported turns kept the repository), one read no git work
 * tree (before they kept the commit and branch the tools record), and
 * one also read the tools' times to the second (before times kept their
 * milliseconds). A turn imported then is recognised by it, so importing
 * the same files again adds nothing, and the conversation goes on from
 * the snapshot it has. Only a turn whose parent this run did not write
 * can have one (an old snapshot's parent is an old one).
 */
enum twin_how {
	TWIN_NO_REMOTE = 1 << 0,
	TWIN_NO_WORKTREE = 1 << 1,
	TWIN_SECONDS = 1 << 2
};

static int twin_as(struct imp_file *f, aptix_record_options *ro,
		   aptix_turn *t, aptix_session *s, aptix_oid *sid,
		   unsigned how)
{
	const aptix_turn saved_t = *t;
	const aptix_session saved_s = *s;
	const int64_t saved_at = ro->created_at;
	aptix_record_result res;
	aptix_txn *tx = NULL;
	int r, found = 0;

	t->workspace = s->workspace = f->conv->legacy_ws;
	t->worktree.remote = NULL;
	if (how & TWIN_NO_WORKTREE)
		t->has_worktree = 0;
	if (how & TWIN_SECONDS) {
		t->created_at -= t->created_at % 1000;
		t->response_at -= t->response_at % 1000;
		t->status_at -= t->status_at % 1000;
		s->created_at = t->status_at;
		s->duration_ms = t->status_at > t->created_at ?
			t->status_at - t->created_at : 0;
		ro->created_at = s->created_at;
	}
	if ((r = queue_turn(&tx, &res, f, ro)) == 0 &&
	    (found = aptix_odb_exists(aptix_repo_odb(f->run->repo),
				      &res.session)))
		*sid = res.session;
	aptix_txn_free(tx);
	*t = saved_t;
	*s = saved_s;
	ro->created_at = saved_at;
	return r < 0 ? r : found;
}

static int legacy_twin(struct imp_file *f, aptix_record_options *ro,
		       aptix_turn *t, aptix_session *s, aptix_oid *sid)
{
	int r;

	if (f->conv->parent_fresh)
		return 0;
	if (t->has_worktree &&
	    (r = twin_as(f, ro, t, s, sid, TWIN_NO_REMOTE)) != 0)
		return r;
	if ((t->has_worktree || !same_str(t->workspace, f->conv->legacy_ws)) &&
	    (r = twin_as(f, ro, t, s, sid, TWIN_NO_WORKTREE)) != 0)
		return r;
	if (t->created_at % 1000 == 0 && t->response_at % 1000 == 0)
		return 0;	/* its seconds are its milliseconds */
	return twin_as(f, ro, t, s, sid, TWIN_NO_WORKTREE | TWIN_SECONDS);
}

/*
 * The batch: fresh turns are queued in one write transaction of the run
 * (run->tx) and committed together every IMP_BATCH_TURNS turns or
 * IMP_BATCH_BYTES of source (or IMP_BATCH_KEYS keys of turns imported
 * before), and at the end of the run, so that an import does not pay one
 * durable commit per turn. A full batch is committed before the next
 * turn is queued, so that the keys a tool puts after a turn go in the
 * turn's batch. Nothing is committed
 * that the store would not hold after an import of the same turns one
 * by one: a crash loses at most the batch, which the next import reads
 * again (a turn's snapshot is made from the source alone).
 */
#define IMP_BATCH_TURNS 256
#define IMP_BATCH_BYTES (1u << 20)
#define IMP_BATCH_KEYS 4096

static int batch_commit(struct imp_run *run)
{
	int r;

	if (!run->tx || (!run->batch_turns && !run->batch_keys))
		return 0;
	r = aptix_txn_commit(run->tx);
	if (r == APTIX_EMISMATCH)
		aptix_error_set(APTIX_ERROR_INVALID, "a conversation's ref "
				"moved while importing: the last %zu turns "
				"were not written (import again)",
				run->batch_turns);
	run->batch_turns = run->batch_bytes = run->batch_keys = 0;
	run->batch_no++;
	keys_clear(&run->keys);		/* the store has them */
	aptix_oidmap_clear(&run->moved_map);	/* the store has them */
	run->nmoved = 0;
	return r;
}

/*
 * Whether the conversation's ref holds what the turn's snapshot moves
 * it from (its parent; nothing for a new conversation): as this run's
 * queued turns leave it, else as the store has it.
 */
static int ref_holds(int *holds, struct imp_run *run, struct imp_conv *c,
		     const aptix_record_options *ro)
{
	aptix_buf name = APTIX_BUF_INIT;
	aptix_oid h;
	size_t i;
	int r = 0;

	if (!c->ref_known && !aptix_oidmap_get(&i, &run->moved_map,
					       (key_oid(&h, c->id), &h))) {
		c->ref_at = run->moved[i];	/* forgotten, moved by the batch */
		c->ref_known = 1;
	}
	if (!c->ref_known) {
		aptix_buf_printf(&name, "%s%s", APTIX_CONV_PREFIX, c->id);
		if (aptix_buf_oom(&name))
			return aptix_error_oom();
		r = aptix_ref_resolve(&c->ref_at, NULL, run->repo, name.ptr);
		aptix_buf_release(&name);
		if (r == APTIX_ENOTFOUND) {
			aptix_error_clear();
			memset(&c->ref_at, 0, sizeof(c->ref_at));
			r = 0;
		} else if (r < 0) {
			return r;
		}
		c->ref_known = 1;
	}
	if ((ro->flags & APTIX_RECORD_NEW_CONVERSATION) || !ro->parent)
		*holds = aptix_oid_is_zero(&c->ref_at);
	else
		*holds = !aptix_oid_cmp(&c->ref_at, ro->parent);
	return r;
}

/*
 * A waiting fork imported again (see relink()): its first new snapshot
 * starts the conversation afresh, where its ref named the old one. 1
 * when the ref moves from there (the recorder, which moves a new
 * conversation's ref only from nothing, leaves it).
 */
static int relinks(struct imp_run *run, const struct imp_conv *c,
		   const aptix_record_options *ro)
{
	size_t i;

	/* a ref moved on since (a turn of aptix's own) stays */
	return c->relink && !aptix_oid_is_zero(&c->ref_at) &&
		((ro->flags & APTIX_RECORD_NEW_CONVERSATION) || !ro->parent) &&
		!aptix_oidmap_get(&i, &run->relink_old, &c->ref_at);
}

static int ref_relink(struct imp_run *run, struct imp_conv *c,
		      const aptix_oid *sid)
{
	aptix_buf name = APTIX_BUF_INIT;
	int r;

	aptix_buf_printf(&name, "%s%s", APTIX_CONV_PREFIX, c->id);
	r = aptix_buf_oom(&name) ? aptix_error_oom() :
		aptix_txn_ref_update(run->tx, name.ptr, sid, &c->ref_at,
				     "import: the fork found its parent");
	aptix_buf_release(&name);
	return r;
}

/* Dry run: the parent is new, so is this; a stand-in id. */
static int dry_turn(aptix_oid *sid, const struct imp_conv *c,
		    const aptix_record_options *ro)
{
	aptix_buf b = APTIX_BUF_INIT;
	int r;

	aptix_buf_put(&b, c->parent.id, sizeof(c->parent.id));
	aptix_buf_put(&b, ro->response.ptr, ro->response.len);
	r = aptix_buf_oom(&b) ? aptix_error_oom() :
		aptix_sha256(sid, b.ptr, b.len);
	aptix_buf_release(&b);
	return r;
}

/* A dry run's turn: made in a transaction of its own, never committed. */
static int dry_write(struct imp_file *f, aptix_record_options *ro,
		     aptix_turn *t, aptix_session *s, aptix_oid *sid,
		     int *fresh)
{
	aptix_record_result res;
	aptix_txn *tx = NULL;
	int r;

	if ((r = queue_turn(&tx, &res, f, ro)) < 0)
		return r;
	*sid = res.session;
	*fresh = !aptix_odb_exists(aptix_repo_odb(f->run->repo),
				   &res.session);
	aptix_txn_free(tx);
	if (*fresh && (r = legacy_twin(f, ro, t, s, sid)) != 0)
		*fresh = 0;	/* r 1: imported before, as sid */
	return r < 0 ? r : 0;
}

/*
 * Queue it in the run's batch when the store does not have it: the ref
 * moved when it holds the parent, else left alone (with a warning).
 */
static int write_turn(struct imp_file *f, aptix_record_options *ro,
		      aptix_turn *t, aptix_session *s, aptix_oid *sid,
		      int *fresh)
{
	struct imp_run *run = f->run;
	struct imp_conv *c = f->conv;
	aptix_record_result res;
	size_t mark;
	int r, holds = 1, moves, relink;

	ro->parent = c->has_parent ? &c->parent : NULL;
	ro->parent_conversation = c->has_parent ? c->parent_conv : NULL;
	ro->verb = "import";
	ro->created_at = ro->session->created_at;
	if (c->has_parent && strcmp(c->parent_conv, c->id))
		ro->flags |= APTIX_RECORD_NEW_CONVERSATION;
	if (run->o->dry_run && c->has_parent &&
	    !aptix_odb_exists(aptix_repo_odb(run->repo), &c->parent)) {
		*fresh = 1;
		return dry_turn(sid, c, ro);
	}
	if (run->o->dry_run)
		return dry_write(f, ro, t, s, sid, fresh);
	if (!run->tx && (r = aptix_txn_new(&run->tx, run->repo)) < 0)
		return r;
	if ((run->batch_turns >= IMP_BATCH_TURNS ||
	     run->batch_bytes >= IMP_BATCH_BYTES ||
	     run->batch_keys >= IMP_BATCH_KEYS) &&
	    (r = batch_commit(run)) < 0)
		return r;
	moves = aptix_session_status_ok(s->status);
	if (moves && (r = ref_holds(&holds, run, c, ro)) < 0)
		return r;
	relink = moves && !holds && relinks(run, c, ro);
	if (!holds)
		ro->flags |= APTIX_RECORD_NO_REF;
	mark = aptix_txn__mark(run->tx);
	if ((r = aptix_record__queue(&res, run->tx, run->repo, ro, NULL)) < 0) {
		aptix_txn__rollback(run->tx, mark);
		return r;
	}
	*sid = res.session;
	*fresh = !aptix_txn__queued_before(run->tx, sid, mark) &&
		!aptix_odb_exists(aptix_repo_odb(run->repo), sid);
	if (*fresh && (r = legacy_twin(f, ro, t, s, sid)) != 0)
		*fresh = 0;	/* r 1: imported before, as sid */
	if (*fresh && relink && (r = ref_relink(run, c, sid)) == 0)
		holds = 1;
	if (!*fresh || r < 0)
		return aptix_txn__rollback(run->tx, mark) < 0 ? APTIX_ERROR :
			r < 0 ? r : 0;
	if (!holds)
		imp_warn(f, 0, "conversation '%s' has moved on: its ref is "
			 "left as it is", c->id);
	else if (moves) {
		c->ref_at = *sid;
		c->moved_in = run->batch_no + 1;
	}
	run->batch_turns++;
	run->batch_bytes += ro->response.len + ro->instruction.len +
		ro->answer.len;
	return 0;
}

static void conv_advance(struct imp_conv *c, const aptix_turn *t,
			 const aptix_oid *sid, int fresh)
{
	if (t->status != APTIX_TURN_COMPLETED)
		return;	/* a failed attempt: the next goes on from before */
	c->parent = *sid;
	c->has_parent = 1;
	c->parent_fresh = fresh;
	c->seq = t->seq;
	snprintf(c->parent_conv, sizeof(c->parent_conv), "%s", c->id);
}

/*
 * The conversation's WorkspaceId, from the repository the turn ran in
 * (aptix__workspace_of_repo: the remote URL, the root commit, the
 * directory's name; never this host's name), and the one an older aptix
 * derived from the directory and this host (its legacy twin's). The
 * last directory's are kept by the run: git is asked once per
 * repository, not once per conversation.
 */
static void set_workspace(struct imp_run *run, struct imp_conv *c,
			  const struct imp_where *w)
{
	const char *remote = w->remote, *cwd = w->cwd;
	aptix_buf ws = APTIX_BUF_INIT, old = APTIX_BUF_INIT;
	int r = 0;

	if (path_ws())
		remote = NULL;	/* as aptix did before it read them */
	if ((!cwd && !remote) ||
	    (c->workspace && same_str(c->cwd, cwd) &&
	     same_str(c->remote, remote)))
		return;
	if (same_str(run->wsm.cwd, cwd) && same_str(run->wsm.remote, remote) &&
	    run->wsm.ws) {
		aptix_buf_puts(&ws, run->wsm.ws);
		aptix_buf_puts(&old, run->wsm.old ? run->wsm.old : "");
	} else if ((r = aptix__workspace_of_repo(&ws, remote, cwd)) < 0 ||
		   (cwd && (r = aptix__workspace_derive(&old, cwd)) < 0)) {
		goto done;
	}
	if (path_ws() && old.len)
		aptix_buf_set(&ws, old.ptr, old.len);
	if (aptix_buf_oom(&ws) || aptix_buf_oom(&old) ||
	    imp_set_str(&c->cwd, cwd) < 0 ||
	    imp_set_str(&c->remote, remote) < 0 ||
	    imp_set_str(&c->workspace, ws.len ? ws.ptr : NULL) < 0 ||
	    imp_set_str(&c->legacy_ws, old.len ? old.ptr : NULL) < 0 ||
	    imp_set_str(&run->wsm.cwd, cwd) < 0 ||
	    imp_set_str(&run->wsm.remote, remote) < 0 ||
	    imp_set_str(&run->wsm.ws, ws.ptr) < 0 ||
	    imp_set_str(&run->wsm.old, old.ptr) < 0)
		r = APTIX_ERROR;
	if (!cwd) {
		free(run->wsm.cwd);
		run->wsm.cwd = NULL;
	}
	if (!remote) {
		free(run->wsm.remote);
		run->wsm.remote = NULL;
	}
done:
	if (r < 0)
		aptix_error_clear();
	aptix_buf_release(&ws);
	aptix_buf_release(&old);
}

int imp_remote(struct imp_file *f, struct imp_where *w, const char *url)
{
	aptix_buf clean = APTIX_BUF_INIT, user = APTIX_BUF_INIT;
	size_t i;
	int r;

	if (!url || !*url)
		return 0;
	if ((r = aptix__remote_clean(&clean, &user, url)) < 0)
		goto done;
	if (user.len && (memchr(user.ptr, ':', user.len) || user.len >= 20)) {
		for (i = 0; i < f->hidden.nr; i++)
			if (!strcmp(f->hidden.items[i], user.ptr))
				break;
		if (i == f->hidden.nr &&
		    (r = aptix_strlist_push(&f->hidden, user.ptr)) < 0)
			goto done;
	}
	r = clean.len ? imp_set_str(&w->remote, clean.ptr) : 0;
done:
	aptix_buf_release(&clean);
	aptix_buf_release(&user);
	return r;
}

/* A call's arguments, redacted like the rest. */
static int redact_str(struct imp_file *f, char **s, size_t line,
		      const char *what)
{
	aptix_buf b = APTIX_BUF_INIT;
	int r;

	if (!*s)
		return 0;
	if ((r = aptix_buf_puts(&b, *s)) >= 0 &&
	    (r = redact(f, &b, 0, line, what)) >= 0) {
		free(*s);
		*s = aptix_buf_detach(&b);
	}
	aptix_buf_release(&b);
	return r < 0 ? r : 0;
}

static int redact_turn(struct imp_file *f, struct imp_turn *it,
		       aptix_buf *src)
{
	size_t i;
	int r;

	if ((r = redact(f, src, f->src_line, 0, "source record")) < 0 ||
	    (r = redact(f, &it->instruction, 0, it->line,
			"instruction")) < 0 ||
	    (r = redact(f, &it->answer, 0, it->line, "answer")) < 0)
		return r;
	for (i = 0; i < it->ncalls; i++)
		if ((r = redact_str(f, &it->calls[i].arguments, it->line,
				    "tool call's arguments")) < 0)
			return r;
	for (i = 0; i < it->nresults; i++)
		if ((r = redact(f, &it->results[i].out, 0, it->line,
				"tool's stdout")) < 0 ||
		    (r = redact(f, &it->results[i].err, 0, it->line,
				"tool's stderr")) < 0 ||
		    (r = redact(f, &it->results[i].output, 0, it->line,
				"tool's output")) < 0)
			return r;
	return 0;
}

/* The calls and results of the turn, for the recorder (rr: n of them). */
static int tool_options(aptix_record_options *ro,
			aptix_record_tool_result **rr, struct imp_turn *it)
{
	size_t i;

	ro->tool_calls = it->calls;
	ro->ntool_calls = it->ncalls;
	if (!it->nresults)
		return 0;
	if (!(*rr = aptix__calloc(it->nresults, sizeof(**rr))))
		return APTIX_ERROR;
	for (i = 0; i < it->nresults; i++) {
		struct imp_result *x = &it->results[i];

		(*rr)[i].result = &x->r;
		if (x->has_out)
			set_blob(&(*rr)[i].out, &x->out);
		if (x->has_err)
			set_blob(&(*rr)[i].err, &x->err);
		if (x->has_output)
			set_blob(&(*rr)[i].output, &x->output);
	}
	ro->tool_results = *rr;
	ro->ntool_results = it->nresults;
	return 0;
}

int imp_emit(struct imp_file *f, struct imp_turn *it)
{
	aptix_record_options ro = APTIX_RECORD_OPTIONS_INIT;
	aptix_buf src = APTIX_BUF_INIT;
	aptix_record_tool_result *rr = NULL;
	char title[TITLE_MAX + 1];
	aptix_turn t;
	aptix_session s;
	aptix_oid sid;
	int r, fresh = 0;

	if (!f->conv) {
		imp_warn(f, it->line, "a turn before the session's first "
			 "record: not imported");
		f->run->partial = 1;
		take_cut(f);
		return 0;
	}
	aptix_turn_init(&t);
	aptix_session_init(&s);
	set_workspace(f->run, f->conv, &it->where);
	if ((r = aptix_buf_set(&src, f->src.ptr, f->cut)) < 0 ||
	    (r = redact_turn(f, it, &src)) < 0)
		goto done;
	aptix_summary_line(title, TITLE_MAX, it->instruction.ptr,
			   it->instruction.len);
	make_turn(&t, &ro, f, it, &src);
	make_session(&s, f, &t, title);
	if ((r = tool_options(&ro, &rr, it)) < 0)
		goto done;
	ro.turn = &t;
	ro.session = &s;
	f->run->st->turns++;
	f->run->st->tool_calls += it->ncalls;
	if ((r = write_turn(f, &ro, &t, &s, &sid, &fresh)) < 0)
		goto done;
	if (fresh) {
		f->run->st->new_turns++;
		if (!f->conv->written++)
			f->run->st->conversations++;
	}
	conv_advance(f->conv, &t, &sid, fresh);
	take_cut(f);
done:
	free(rr);
	aptix_buf_release(&src);
	return r;
}

/* --- snapshots given whole ---------------------------------------------- */

/* A conversation written to by this run, for the count of them. */
static int count_conversation(struct imp_run *run, const char *conv)
{
	struct imp_conv *c = conv_get(run, conv);

	if (!c)
		return APTIX_ERROR;
	if (!c->written++)
		run->st->conversations++;
	return 0;
}

int imp_record_given(struct imp_file *f, aptix_record_options *ro,
		     const aptix_oid *expect)
{
	aptix_odb *odb = aptix_repo_odb(f->run->repo);
	aptix_record_result res;
	aptix_txn *tx = NULL;
	int r;

	f->run->st->turns++;
	f->run->st->tool_calls += ro->ntool_calls;
	if ((r = batch_commit(f->run)) < 0)
		return r;
	if (aptix_odb_exists(odb, expect))
		return 0;
	if (f->run->o->dry_run && ro->parent &&
	    !aptix_odb_exists(odb, ro->parent)) {
		/* its parent is new too: it cannot be built, it is new */
		f->run->st->new_turns++;
		return count_conversation(f->run, ro->session->conversation);
	}
	ro->flags |= APTIX_RECORD_NO_REF;
	ro->verb = "import";
	if ((r = queue_turn(&tx, &res, f, ro)) < 0) {
		if (r == APTIX_EINVALID || r == APTIX_ENOTFOUND) {
			imp_warn(f, 0, "snapshot '%s' cannot be recorded: %s",
				 aptix_oid_hex(expect),
				 aptix_error_last()->message);
			aptix_error_clear();
			f->run->st->skipped++;
			f->run->partial = 1;
			return 0;
		}
		return r;
	}
	if (aptix_oid_cmp(&res.session, expect)) {
		imp_warn(f, 0, "snapshot '%s' would be stored as '%s': not "
			 "imported", aptix_oid_hex(expect),
			 aptix_oid_hex(&res.session));
		f->run->st->skipped++;
		f->run->partial = 1;
	} else if (f->run->o->dry_run ||
		   (r = aptix_txn_commit(tx)) == 0) {
		f->run->st->new_turns++;
		r = count_conversation(f->run, ro->session->conversation);
	}
	aptix_txn_free(tx);
	return r;
}

int imp_ref_set(struct imp_file *f, const char *name, const aptix_oid *id)
{
	aptix_txn *tx = NULL;
	aptix_oid at, zero;
	int r;

	if (aptix_ref_check_name(name) < 0 ||
	    strncmp(name, APTIX_CONV_PREFIX, strlen(APTIX_CONV_PREFIX))) {
		aptix_error_clear();
		imp_warn(f, 0, "'%.80s' is not a conversation's ref: not set",
			 name);
		f->run->partial = 1;
		return 0;
	}
	if ((r = batch_commit(f->run)) < 0)
		return r;
	if ((r = aptix_ref_resolve(&at, NULL, f->run->repo, name)) == 0) {
		if (aptix_oid_cmp(&at, id)) {
			imp_warn(f, 0, "%s names another session: left as it "
				 "is", name);
			f->run->partial = 1;
		}
		return 0;
	}
	if (r != APTIX_ENOTFOUND)
		return r;
	aptix_error_clear();
	if (!aptix_odb_exists(aptix_repo_odb(f->run->repo), id)) {
		if (!f->run->o->dry_run) {
			imp_warn(f, 0, "%s names a session that was not "
				 "imported: not set", name);
			f->run->partial = 1;
		}
		return 0;
	}
	if (f->run->o->dry_run)
		return 0;
	memset(&zero, 0, sizeof(zero));
	if ((r = aptix_txn_new(&tx, f->run->repo)) == 0 &&
	    (r = aptix_txn_ref_update(tx, name, id, &zero, "import")) == 0)
		r = aptix_txn_commit(tx);
	aptix_txn_free(tx);
	return r;
}

/* --- reading a file ------------------------------------------------------ */

static int read_line(struct imp_file *f, const char *line, size_t len,
		     int last)
{
	json_error_t jerr;
	json_t *rec;
	int r;

	f->run->st->bytes += len;
	if (aptix_buf_put(&f->src, line, len) < 0)
		return APTIX_ERROR;
	if (f->tool->line)
		return f->tool->line(f, line, len, last);
	if (len == (line[len - 1] == '\n' ? 1u : 0u))
		return 0;	/* an empty line */
	rec = json_loadb(line, len, 0, &jerr);
	if (!rec || !json_is_object(rec)) {
		if (last && line[len - 1] != '\n')
			imp_warn(f, 0, "truncated last line: not imported");
		else
			imp_warn(f, 0, "malformed line: not imported%s%s",
				 rec ? "" : ": ", rec ? "" : jerr.text);
		/* not part of any turn's records */
		aptix_buf_truncate(&f->src, f->src.len - len);
		f->run->st->skipped++;
		f->run->partial = 1;
		json_decref(rec);
		r = f->tool->record(f, NULL);
		return r;
	}
	r = f->tool->record(f, rec);
	json_decref(rec);
	return r;
}

static void progress(struct imp_run *run)
{
	if (run->o->progress)
		run->o->progress(run->st->bytes, run->total, run->o->payload);
}

static int read_file(struct imp_file *f)
{
	struct imp_lines ls;
	const char *line;
	size_t len;
	int r = 0, n = 0, last;

	if ((f->mem ? imp_lines_open_mem(&ls, f->mem) :
	     imp_lines_open(&ls, f->path)) < 0) {
		imp_warn(f, 0, "cannot open: %s", strerror(errno));
		f->run->partial = 1;
		return 0;
	}
	f->run->st->files++;
	while (r >= 0 && (n = imp_lines_next(&ls, &line, &len, &last)) > 0) {
		f->lineno++;
		r = read_line(f, line, len, last);
		if (!(f->lineno % 1024))
			progress(f->run);
	}
	if (r >= 0 && n < 0 && errno == ENOMEM && !ls.bad) {
		/* a line that cannot be held: not the end, no skip */
		r = aptix_error_oom();
	} else if (r >= 0 && n < 0) {
		imp_warn(f, 0, "read error: %s", imp_lines_error(&ls));
		f->run->partial = 1;
	}
	imp_lines_close(&ls);
	return r;
}

int imp_feed(struct imp_file *f, const char *line, size_t len)
{
	f->lineno++;
	if (!(f->lineno % 1024))
		progress(f->run);
	return len ? read_line(f, line, len, 0) : 0;
}

static int wait_put(struct imp_file *f);

/* A top-level file of its id (src: its lines, or NULL: read path). */
struct imp_source {
	const char *path, *id, *forked_from;
	const aptix_buf *mem;
	int linked;			/* out: the fork found its parent */
};

static int import_file(struct imp_run *run, const struct imp_tool *tool,
		       struct imp_source *is, struct imp_conv *conv)
{
	struct imp_file f = { .run = run, .tool = tool, .path = is->path,
			      .forked_from = is->forked_from, .id = is->id,
			      .mem = is->mem, .conv = conv,
			      .src = APTIX_BUF_INIT, .src_line = 1 };
	int r;

	if (tool->read)
		run->st->files++;
	if (!(r = tool->begin(&f)) &&
	    !(r = tool->read ? tool->read(&f) : read_file(&f)))
		r = tool->end(&f);
	if (!r && !conv && !f.linked)
		r = wait_put(&f);
	is->linked = f.linked;
	if (f.state && tool->release)
		tool->release(&f);
	imp_state_free(&f);
	aptix_buf_release(&f.src);
	aptix_strlist_release(&f.hidden);
	progress(run);
	return r;
}

int imp_import_child(struct imp_run *run, const struct imp_tool *tool,
		     const char *path, const char *conv_id,
		     const struct imp_key *parent, const char *session_type)
{
	struct imp_source is = { path, NULL, NULL, NULL, 0 };
	struct imp_conv *c;

	if (!(c = conv_get(run, conv_id)))
		return APTIX_ERROR;
	if (parent && !c->has_parent) {
		c->parent = parent->session;
		c->has_parent = 1;
		c->parent_fresh = parent->fresh;
		c->seq = parent->seq;
		snprintf(c->parent_conv, sizeof(c->parent_conv), "%s",
			 parent->conv);
	}
	c->session_type = session_type;
	return import_file(run, tool, &is, c);
}

/* --- finding the files ------------------------------------------------- */

struct src_file {
	char *path, *id, *parent;
	int done;
};

struct file_list {
	struct src_file *v;
	size_t n, alloc;
};

static int add_file(struct file_list *l, const char *path)
{
	if (aptix__grow(&l->v, &l->alloc, l->n, sizeof(*l->v), 16) < 0)
		return APTIX_ERROR;
	memset(&l->v[l->n], 0, sizeof(*l->v));
	if (!(l->v[l->n].path = aptix__strdup(path)))
		return APTIX_ERROR;
	l->n++;
	return 0;
}

static void list_release(struct file_list *l)
{
	size_t i;

	for (i = 0; i < l->n; i++) {
		free(l->v[i].path);
		free(l->v[i].id);
		free(l->v[i].parent);
	}
	free(l->v);
	memset(l, 0, sizeof(*l));
}

static int by_name(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

static int import_list(struct imp_run *run, const struct imp_tool *tool,
		       struct file_list *l);

/*
 * The files under dir that the tool reads, in name order, recursively:
 * with run NULL, each counted (run_total); else imported a directory at
 * a time (import_list), a directory's own files once its subdirectories
 * are, so that an import keeps no list of the whole tree: its memory
 * does not grow with the number of files.
 */
static int walk(struct imp_run *run, unsigned long long *total,
		const struct imp_tool *tool, const char *dir, int depth)
{
	aptix_strlist names = { 0 };
	struct file_list l = { NULL, 0, 0 };
	aptix_buf p = APTIX_BUF_INIT;
	struct dirent *de;
	struct stat sb;
	DIR *d;
	size_t i;
	int r = 0;

	if (depth > 16 || !(d = opendir(dir)))
		return 0;
	while ((de = readdir(d)))
		if (de->d_name[0] != '.' &&
		    aptix_strlist_push(&names, de->d_name) < 0)
			r = APTIX_ERROR;
	closedir(d);
	if (names.nr)	/* an empty directory has no array to sort */
		qsort(names.items, names.nr, sizeof(*names.items), by_name);
	for (i = 0; !r && i < names.nr; i++) {
		aptix_buf_clear(&p);
		aptix_buf_printf(&p, "%s/%s", dir, names.items[i]);
		if (stat(p.ptr, &sb) < 0)
			continue;
		if (S_ISDIR(sb.st_mode)) {
			/* Claude Code's subagents come with their parent */
			if (strcmp(names.items[i], "subagents"))
				r = walk(run, total, tool, p.ptr, depth + 1);
		} else if (S_ISREG(sb.st_mode) && tool->match(p.ptr)) {
			*total += (unsigned long long)sb.st_size;
			if (run)
				r = add_file(&l, p.ptr);
		}
	}
	if (!r && run)
		r = import_list(run, tool, &l);
	list_release(&l);
	aptix_strlist_release(&names);
	aptix_buf_release(&p);
	return r;
}

/*
 * llm's logs.db, where llm itself looks (llm/__init__.py user_dir():
 * $LLM_USER_PATH, else click's get_app_dir("io.datasette.llm"), that is
 * $XDG_CONFIG_HOME/io.datasette.llm or ~/.config/io.datasette.llm).
 */
static int llm_default_path(aptix_strlist *out, const char *home)
{
	const char *dir = aptix_env__get(APTIX_ENV_LLM_USER_PATH);
	const char *xdg = aptix_env__get(APTIX_ENV_XDG_CONFIG_HOME);
	aptix_buf p = APTIX_BUF_INIT;
	struct stat sb;
	int r = 0;

	if (dir)
		aptix_buf_printf(&p, "%s/logs.db", dir);
	else if (xdg && *xdg == '/')
		aptix_buf_printf(&p, "%s/io.datasette.llm/logs.db", xdg);
	else
		aptix_buf_printf(&p, "%s/.config/io.datasette.llm/logs.db",
				 home);
	if (aptix_buf_oom(&p))
		r = aptix_error_oom();
	else if (!stat(p.ptr, &sb) && S_ISREG(sb.st_mode))
		r = aptix_strlist_push(out, p.ptr);
	aptix_buf_release(&p);
	return r;
}

/*
 * Where each tool keeps its sessions: under the home its own variable
 * names (an absolute path), else under the user's home.
 */
int aptix_import_default_paths(aptix_strlist *out, const char *tool,
			       const char *home)
{
	static const struct {
		const char *tool;
		enum aptix_env_var var;	/* the tool's home, if set */
		const char *dflt;	/* else this under home */
		const char *sub[2];
	} where[] = {
		{ "codex", APTIX_ENV_CODEX_HOME, ".codex",
		  { "sessions", "archived_sessions" } },
		{ "claude", APTIX_ENV_CLAUDE_CONFIG_DIR, ".claude",
		  { "projects", NULL } },
		{ "gemini", APTIX_ENV__COUNT, ".gemini", { "tmp", NULL } },
		{ "opencode", APTIX_ENV_XDG_DATA_HOME, ".local/share",
		  { "opencode", NULL } },
	};
	aptix_buf p = APTIX_BUF_INIT;
	struct stat sb;
	const char *base;
	size_t i, j;
	int r = 0;

	APTIX_ASSERT_ARG(tool && home);
	if (!strcmp(tool, "llm"))
		return llm_default_path(out, home);
	for (i = 0; i < ARRAY_SIZE(where); i++) {
		if (strcmp(where[i].tool, tool))
			continue;
		base = where[i].var == APTIX_ENV__COUNT ? NULL :
			aptix_env__get(where[i].var);
		for (j = 0; j < 2 && where[i].sub[j] && !r; j++) {
			aptix_buf_clear(&p);
			if (base && *base == '/')
				aptix_buf_printf(&p, "%s/%s", base,
						 where[i].sub[j]);
			else
				aptix_buf_printf(&p, "%s/%s/%s", home,
						 where[i].dflt, where[i].sub[j]);
			if (!stat(p.ptr, &sb) && S_ISDIR(sb.st_mode))
				r = aptix_strlist_push(out, p.ptr);
		}
	}
	aptix_buf_release(&p);
	return r;
}

/* The file's id counted in run->left. */
static int count_ids(struct imp_run *run, const struct src_file *f)
{
	aptix_oid h;
	size_t n = 0;

	if (!f->id)
		return 0;
	key_oid(&h, f->id);
	aptix_oidmap_get(&n, &run->left, &h);
	return aptix_oidmap_put(&run->left, &h, n + 1);
}

/*
 * The bytes of the files named and of those under the directories named
 * (for the progress bar); a path that is not there is a warning.
 */
static void run_total(struct imp_run *run, const struct imp_tool *tool,
		      const char *const *paths, size_t npaths)
{
	struct stat sb;
	size_t i;

	for (i = 0; i < npaths; i++) {
		if (stat(paths[i], &sb) < 0) {
			run->st->warnings++;
			if (run->o->warn)
				run->o->warn(paths[i], 0, strerror(errno),
					     run->o->payload);
			run->partial = 1;
		} else if (S_ISDIR(sb.st_mode)) {
			walk(NULL, &run->total, tool, paths[i], 0);
		} else {
			run->total += (unsigned long long)sb.st_size;
		}
	}
}

/*
 * Import what the paths name: each directory's files a directory at a
 * time (walk), then the files named, together (a fork named with its
 * parent waits for it; one whose parent is in a directory named comes
 * after it).
 */
static int import_paths(struct imp_run *run, const struct imp_tool *tool,
			const char *const *paths, size_t npaths)
{
	struct file_list named = { NULL, 0, 0 };
	unsigned long long seen = 0;
	struct stat sb;
	size_t i;
	int r = 0;

	for (i = 0; !r && i < npaths; i++) {
		if (stat(paths[i], &sb) < 0)
			continue;	/* run_total warned */
		if (S_ISDIR(sb.st_mode))
			r = walk(run, &seen, tool, paths[i], 0);
		else
			r = add_file(&named, paths[i]);
	}
	if (!r)
		r = import_list(run, tool, &named);
	list_release(&named);
	return r;
}

/* A file whose parent is still to be imported waits for it. */
static int waits(const struct file_list *l, const struct src_file *s)
{
	size_t i;

	if (!s->parent)
		return 0;
	for (i = 0; i < l->n; i++)
		if (!l->v[i].done && l->v[i].id &&
		    !strcmp(l->v[i].id, s->parent))
			return 1;
	return 0;
}

/* --- forks imported before their parent ------------------------------- */

/*
 * A fork whose parent's turn is not in the store (its parent imported by
 * a later run) is imported as a conversation of its own, and waits for
 * it: the key "wait:<tool>:<parent id>:<n>" (n from 0, one per waiting
 * fork) names the newest snapshot of its file and its conversation
 * "<tool>-<fork id>". Once the last file of the parent's id is read,
 * each fork waiting on it is imported again from the source lines its
 * snapshots keep (their response blobs, root first): it finds its
 * parent's keys now, so it gets the snapshots an import of the parent
 * first gives it, and its refs move to them. A fork linked so names the
 * zero snapshot in its wait key (the slot is free again).
 */
#define WAIT_SLOTS 256

static int wait_key(aptix_buf *b, const struct imp_tool *tool,
		    const char *parent, unsigned n)
{
	aptix_buf_clear(b);
	aptix_buf_printf(b, "wait:%s:%s:%u", tool->name, parent, n);
	return aptix_buf_oom(b) ? aptix_error_oom() : 0;
}

/*
 * The slot of the fork of conversation conv waiting on parent (*n), or
 * where it goes (the first free one); 1 when it waits there.
 */
static int wait_slot(unsigned *n, struct imp_run *run,
		     const struct imp_tool *tool, const char *parent,
		     const char *conv)
{
	aptix_buf key = APTIX_BUF_INIT;
	const struct imp_key *k;
	unsigned i, free_at = WAIT_SLOTS;
	int r = 0;

	for (i = 0; !r && i < WAIT_SLOTS; i++) {
		if ((r = wait_key(&key, tool, parent, i)) < 0)
			break;
		k = imp_key_get(run, key.ptr);
		if (k && !strcmp(k->conv, conv)) {
			free_at = i;
			r = !aptix_oid_is_zero(&k->session);
			break;
		}
		if ((!k || aptix_oid_is_zero(&k->session)) &&
		    free_at == WAIT_SLOTS)
			free_at = i;
		if (!k)
			break;	/* the slots are used from 0 on */
	}
	aptix_buf_release(&key);
	*n = free_at;
	return r < 0 ? r : run->key_err ? run->key_err : r;
}

/* The fork waits (head: its file's newest snapshot; zero: no more). */
static int wait_set(struct imp_run *run, const struct imp_tool *tool,
		    const char *parent, const char *conv,
		    const aptix_oid *head)
{
	aptix_buf key = APTIX_BUF_INIT;
	struct imp_key w;
	unsigned n;
	int r;

	if ((r = wait_slot(&n, run, tool, parent, conv)) < 0)
		return r;
	if (n == WAIT_SLOTS || (!r && aptix_oid_is_zero(head)))
		return 0;	/* full; or not waiting, nor to wait */
	memset(&w, 0, sizeof(w));
	w.session = *head;
	snprintf(w.conv, sizeof(w.conv), "%s", conv);
	if ((r = wait_key(&key, tool, parent, n)) == 0)
		r = imp_key_put(run, key.ptr, &w);
	aptix_buf_release(&key);
	return r;
}

/* After a top-level file: a fork that did not find its parent waits. */
static int wait_put(struct imp_file *f)
{
	char conv[IMP_CONV_MAX + 1];
	int n;

	if (!f->forked_from || !f->id || !f->conv || !f->conv->has_parent ||
	    f->run->o->dry_run)
		return 0;
	n = snprintf(conv, sizeof(conv), "%s-%s", f->tool->name, f->id);
	if (n < 0 || (size_t)n >= sizeof(conv))
		return 0;
	return wait_set(f->run, f->tool, f->forked_from, conv,
			&f->conv->parent);
}

int imp_fork_waits(struct imp_file *f, const char *conv)
{
	unsigned n;

	return f->id && !f->run->o->dry_run &&
		wait_slot(&n, f->run, f->tool, f->id, conv) == 1;
}

/*
 * The source lines of a waiting fork as its snapshots keep them: from
 * head back to the root of its file's conversations (those of conv, and
 * its compactions', conv.c<n>), each turn's response blob.
 */
static int stored_source(aptix_buf *out, aptix_oidmap *old,
			 aptix_repo *repo, const aptix_oid *head,
			 const char *conv)
{
	aptix_odb *odb = aptix_repo_odb(repo);
	aptix_buf raw = APTIX_BUF_INIT, blob = APTIX_BUF_INIT;
	aptix_oid *resp = NULL, at = *head;
	size_t n = 0, alloc = 0, cl = strlen(conv);
	aptix_otype type;
	aptix_session s;
	aptix_turn t;
	int r = 0, more = 1;

	while (!r && more) {
		aptix_session_init(&s);
		aptix_turn_init(&t);
		if ((r = aptix_odb_read(&raw, &type, odb, &at, 0)) == 0 &&
		    (r = aptix_session_parse(&s, raw.ptr, raw.len)) == 0 &&
		    (r = aptix_odb_read(&raw, &type, odb, &s.turn, 0)) == 0 &&
		    (r = aptix_turn_parse(&t, raw.ptr, raw.len)) == 0 &&
		    (r = aptix__grow(&resp, &alloc, n, sizeof(*resp),
				     16)) == 0 &&
		    (r = aptix_oidmap_put(old, &at, n)) == 0) {
			resp[n++] = t.response;
			more = s.has_parent;
			at = s.parent;
		}
		if (!r && more && (strncmp(s.conversation, conv, cl) ||
				   (s.conversation[cl] &&
				    s.conversation[cl] != '.')))
			more = 0;	/* not the file's (cannot be) */
		aptix_session_release(&s);
		aptix_turn_release(&t);
	}
	while (!r && n--)
		if (!aptix_oid_is_zero(&resp[n]) &&
		    (r = aptix_odb_read(&blob, &type, odb, &resp[n], 0)) == 0)
			r = aptix_buf_put(out, blob.ptr, blob.len);
	free(resp);
	aptix_buf_release(&raw);
	aptix_buf_release(&blob);
	return r;
}

static int wait_resolve(struct imp_run *run, const struct imp_tool *tool,
			const char *id, unsigned depth);

/* Import the fork waiting in w again, from its stored source. */
static int relink(struct imp_run *run, const struct imp_tool *tool,
		  const char *parent, const struct imp_key *w,
		  unsigned depth)
{
	struct imp_source is = { w->conv, NULL, parent, NULL, 0 };
	aptix_buf src = APTIX_BUF_INIT;
	aptix_oid zero;
	int r;

	is.id = w->conv + strlen(tool->name) + 1;
	is.mem = &src;
	aptix_oidmap_clear(&run->relink_old);
	if ((r = stored_source(&src, &run->relink_old, run->repo, &w->session,
			       w->conv)) < 0)
		goto done;
	run->file_no++;
	run->relinking = 1;
	r = import_file(run, tool, &is, NULL);
	run->relinking = 0;
	memset(&zero, 0, sizeof(zero));
	if (!r && !(r = convs_forget(run)) && is.linked)
		r = wait_set(run, tool, parent, w->conv, &zero);
	if (!r)	/* the forks of the fork, linked to what it was */
		r = wait_resolve(run, tool, is.id, depth + 1);
done:
	aptix_buf_release(&src);
	return r;
}

/* The forks waiting on id, each imported again. */
static int wait_resolve(struct imp_run *run, const struct imp_tool *tool,
			const char *id, unsigned depth)
{
	aptix_buf key = APTIX_BUF_INIT;
	const struct imp_key *k;
	struct imp_key *w = NULL;
	size_t n = 0, alloc = 0, i;
	int r = 0;

	if (!id || run->o->dry_run || depth > 16)
		return 0;
	for (i = 0; !r && i < WAIT_SLOTS; i++) {
		if ((r = wait_key(&key, tool, id, (unsigned)i)) < 0 ||
		    !(k = imp_key_get(run, key.ptr)))
			break;
		if (!aptix_oid_is_zero(&k->session) &&
		    strlen(k->conv) > strlen(tool->name) &&
		    (r = aptix__grow(&w, &alloc, n, sizeof(*w), 4)) == 0)
			w[n++] = *k;
	}
	if (!r && run->key_err)
		r = run->key_err;
	/* a fork waiting since earlier in this run: its snapshots, which
	   relink reads back, are in the batch */
	if (!r && n)
		r = batch_commit(run);
	for (i = 0; !r && i < n; i++)
		r = relink(run, tool, id, &w[i], depth);
	free(w);
	aptix_buf_release(&key);
	return r;
}

static int import_all(struct imp_run *run, const struct imp_tool *tool,
		      struct file_list *l)
{
	struct imp_source is = { NULL, NULL, NULL, NULL, 0 };
	size_t i, left = l->n;
	int r = 0, progress_made, force = 0, last;

	while (!r && left) {
		progress_made = 0;
		for (i = 0; !r && i < l->n; i++) {
			if (l->v[i].done || (!force && waits(l, &l->v[i])))
				continue;
			l->v[i].done = 1;
			left--;
			progress_made = 1;
			run->file_no++;
			is.path = l->v[i].path;
			is.id = l->v[i].id;
			is.forked_from = l->v[i].parent;
			if (!(r = import_file(run, tool, &is, NULL)) &&
			    !(r = file_done(run, l->v[i].id, &last)) && last)
				r = wait_resolve(run, tool, l->v[i].id, 0);
			if (!r && run->key_err)
				r = run->key_err;
		}
		force = !progress_made;	/* a cycle: import them anyway */
	}
	return r;
}

/*
 * Import the files of l (one directory's, or those named): each one's
 * ids read first (prescan), so that a fork comes after its parent and
 * the files of one id are known; those counts go with the list.
 */
static int import_list(struct imp_run *run, const struct imp_tool *tool,
		       struct file_list *l)
{
	size_t i;
	int r = 0;

	for (i = 0; !r && i < l->n; i++) {
		r = tool->prescan(&l->v[i].id, &l->v[i].parent, l->v[i].path);
		if (!r)
			r = count_ids(run, &l->v[i]);
	}
	if (!r)
		r = import_all(run, tool, l);
	aptix_oidmap_clear(&run->left);
	return r;
}

static void run_release(struct imp_run *run)
{
	size_t i;

	for (i = 0; i < run->nconvs; i++)
		conv_free(run->convs[i]);
	free(run->convs);
	keys_release(&run->keys);
	keys_release(&run->fkeys);
	aptix_buf_release(&run->key_val);
	aptix_oidmap_release(&run->left);
	aptix_oidmap_release(&run->moved_map);
	aptix_oidmap_release(&run->relink_old);
	free(run->moved);
	aptix_txn_free(run->tx);
	ws_memo_release(&run->wsm);
}

int aptix_import(aptix_import_stats *stats, aptix_repo *repo,
		 const char *tool, const char *const *paths, size_t npaths,
		 const aptix_import_options *opts)
{
	static const aptix_import_options defaults = APTIX_IMPORT_OPTIONS_INIT;
	const struct imp_tool *t = find_tool(tool);
	struct imp_run run;
	int r, c;

	APTIX_ASSERT_ARG(stats && repo && (paths || !npaths));
	memset(stats, 0, sizeof(*stats));
	if (!t) {
		aptix_error_set(APTIX_ERROR_INVALID, "unknown tool '%s' "
				"(codex, claude, gemini, opencode, llm, "
				"json, session-md)",
				tool ? tool : "");
		return APTIX_EINVALID;
	}
	memset(&run, 0, sizeof(run));
	run.repo = repo;
	run.o = opts ? opts : &defaults;
	run.st = stats;
	run_total(&run, t, paths, npaths);
	r = import_paths(&run, t, paths, npaths);
	if (r >= 0 && (c = batch_commit(&run)) < 0)
		r = c;
	run_release(&run);
	return r < 0 ? r : run.partial ? 1 : 0;
}

/* --- SQLite sources -------------------------------------------------------- */

const char *imp_col(sqlite3_stmt *st, int i)
{
	return (const char *)sqlite3_column_text(st, i);
}

int imp_db_fail(struct imp_file *f, sqlite3 *db, const char *tool,
		const char *what)
{
	imp_warn(f, 0, "cannot read the %s database (%s): %s", tool, what,
		 db ? sqlite3_errmsg(db) : "out of memory");
	imp_partial(f, 1);
	return 0;
}

void imp_db_close(sqlite3 *db)
{
	sqlite3_stmt *st;

	while (db && (st = sqlite3_next_stmt(db, NULL)))
		sqlite3_finalize(st);
	sqlite3_close(db);
}
