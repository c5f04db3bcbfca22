/*
 * src/turn/run.c - the stages of a turn (see aptix/run.h): settings, where
 * the turn goes, its context, the call, and the order they go in.
 * Building the request is in run-request.c, the writes in run-commit.c.
 */
#include "util/common.h"
#include "repo/repo.h"
#include "index/index.h"
#include "turn/run-int.h"
#include "secret/secrets.h"
#include "aptix/refs.h"
#include "aptix/revparse.h"

static const char *const state_names[] = {
	"new", "begun", "requested", "sent", "failed", "finished"
};

int aptix_run__add_warning(aptix_run *run, const char *fmt, ...)
{
	va_list ap;
	int r;

	va_start(ap, fmt);
	r = aptix__strv_vpushf(&run->res.warnings, &run->res.nwarnings, fmt,
			       ap);
	va_end(ap);
	return r;
}

int aptix_run__credential(aptix_credential *c, const aptix_run *run,
			  const void *data, size_t len)
{
	return aptix_credscan_find(c, data, len, run->keys, run->nkeys);
}

/* A name given for the turn (model, conversation...) is no credential. */
static int refuse_credential(const aptix_run *run, const char *what,
			     const char *value)
{
	aptix_credential c;
	char why[160];

	if (!value || !aptix_run__credential(&c, run, value, strlen(value)))
		return 0;
	aptix_error_set(APTIX_ERROR_INVALID, "the %s holds %s, %s: refusing "
			"to store or send it", what,
			aptix_credential_kind(&c),
			aptix_credential_describe(why, sizeof(why), &c));
	return APTIX_EINVALID;
}

/* A stage called in the wrong state changes nothing. */
static int wrong_state(const aptix_run *run, const char *stage)
{
	aptix_error_set(APTIX_ERROR_INVALID, "turn: %s is not allowed in "
			"state '%s'", stage, state_names[run->state]);
	return APTIX_EINVALID;
}

/*
 * A stage after begin failed: keep its error for the failed snapshot
 * that finish commits. code NULL: derived from r.
 */
static int fail(aptix_run *run, int r, const char *code)
{
	const char *msg = aptix_error_last()->message;

	free(run->res.error_message);
	free(run->res.error_code);
	run->res.error_message = aptix__strdup(msg);
	run->res.error_code = aptix__strdup(code ? code :
					    r == APTIX_ECANCELLED ?
					    "cancelled" : r == APTIX_ENET ?
					    "network_error" : r == APTIX_EFULL ?
					    "response_too_large" :
					    "invalid_response");
	/* a server may echo a key in its error: it is stored */
	aptix__redact_secrets_str(&run->res.error_message, run->keys,
				  run->nkeys);
	aptix__redact_secrets_str(&run->res.error_code, run->keys,
				  run->nkeys);
	run->fail_rc = r;
	run->state = APTIX_RUN_FAILED;
	return r;
}

/* The client's settings the caller left unset come from the config. */
static int http_settings(aptix_openai_options *h, const aptix_config *cfg)
{
	long attempts, max_response;
	int64_t timeout, idle;
	int r;

	if ((!h->base_url || !*h->base_url) &&
	    (r = aptix_config_string(&h->base_url, cfg,
				     "openai.base-url")) < 0)
		return r;
	if ((r = aptix_config_long(&attempts, cfg,
				   "openai.max-attempts")) < 0 ||
	    (r = aptix_config_duration_ms(&timeout, cfg,
					  "openai.timeout")) < 0 ||
	    (r = aptix_config_duration_ms(&idle, cfg,
					  "openai.idle-timeout")) < 0 ||
	    (r = aptix_config_long(&max_response, cfg,
				   "openai.max-response")) < 0)
		return r;
	if (!h->max_response)
		h->max_response = (size_t)max_response;
	if (aptix__url_has_userinfo(h->base_url)) {
		aptix_error_set(APTIX_ERROR_OPENAI, "the OpenAI base URL holds "
				"user information (user:password@): refusing "
				"it; give the key in OPENAI_API_KEY");
		return APTIX_EINVALID;
	}
	if (!h->max_attempts)
		h->max_attempts = (int)attempts;
	if (!h->total_timeout_ms)
		h->total_timeout_ms = (long)timeout;
	if (!h->idle_timeout_ms)
		h->idle_timeout_ms = (long)idle;
	return 0;
}

/* Settings come from the key table's defaults when cfg leaves them. */
/* The context.* numbers of the turn, in this order: the first bad one fails. */
static int context_settings(aptix_run *run, const aptix_config *cfg)
{
	static const struct {
		const char *key;
		size_t off;
	} longs[] = {
		{ "context.window-turns", offsetof(aptix_run, window_turns) },
		{ "context.window-chars", offsetof(aptix_run, window_chars) },
		{ "context.summary-chars", offsetof(aptix_run, summary_chars) },
		{ "context.chain-max-chars",
		  offsetof(aptix_run, chain_max_chars) },
	};
	size_t i;
	int r;

	for (i = 0; i < ARRAY_SIZE(longs); i++)
		if ((r = aptix_config_long((long *)((char *)run +
						     longs[i].off), cfg,
					   longs[i].key)) < 0)
			return r;
	return 0;
}

static int run_settings(aptix_run *run, const aptix_run_options *opts)
{
	const aptix_config *cfg = opts->cfg;
	const char *model = opts->model;
	int r;

	/* a bad setting fails the turn before anything is written */
	if ((r = aptix_config_check_all(cfg)) < 0 ||
	    (r = aptix_config_duration_ms(&run->chain_ttl, cfg,
					  "openai.chain-ttl")) < 0 ||
	    (r = aptix_config_duration_ms(&run->lease_ms, cfg,
					  "turn.lease")) < 0 ||
	    (r = context_settings(run, cfg)) < 0 ||
	    (r = http_settings(&run->o.http, cfg)) < 0 ||
	    (!model && (r = aptix_config_string(&model, cfg,
						"openai.model")) < 0))
		return r;
	if (!(run->model = aptix__strdup(model ? model : "")))
		return APTIX_ERROR;
	if ((r = refuse_credential(run, "model name", run->model)) < 0 ||
	    (r = refuse_credential(run, "conversation name",
				   opts->conversation)) < 0 ||
	    (r = refuse_credential(run, "workspace id", opts->workspace)) < 0)
		return r;
	if (!*run->model) {
		aptix_error_set(APTIX_ERROR_INVALID, "the model name is "
				"empty");
		return APTIX_EINVALID;
	}
	if (!opts->dry_run &&
	    (!run->o.http.api_key || !*run->o.http.api_key)) {
		aptix_error_set(APTIX_ERROR_OPENAI, "OPENAI_API_KEY is not set: "
				"export it in the environment (it is never "
				"stored)");
		return APTIX_EINVALID;
	}
	/* a key read from a file keeps its newline: bad before anything */
	if (!opts->dry_run && strpbrk(run->o.http.api_key, "\r\n")) {
		aptix_error_set(APTIX_ERROR_OPENAI, "OPENAI_API_KEY holds a "
				"line break (read from a file with its "
				"newline?): export the key alone");
		return APTIX_EINVALID;
	}
	return 0;
}

int aptix_run_new(aptix_run **out, aptix_repo *repo,
		  const aptix_run_options *opts)
{
	aptix_run *run;
	int r;

	*out = NULL;
	APTIX_ASSERT_ARG(repo);
	if (opts->version != APTIX_RUN_OPTIONS_VERSION) {
		aptix_error_set(APTIX_ERROR_INVALID, "turn: options version "
				"%u, expected %d", opts->version,
				APTIX_RUN_OPTIONS_VERSION);
		return APTIX_EINVALID;
	}
	if (!(run = aptix__calloc(1, sizeof(*run))))
		return APTIX_ERROR;
	run->repo = repo;
	run->o = *opts;
	if (!run->o.http.cancel)
		run->o.http.cancel = &run->no_cancel;
	aptix_buf_init(&run->res.request, 0);
	aptix_openai_result_init(&run->res.api);
	aptix_file_set_init(&run->files);
	aptix_chunk_set_init(&run->chunks);
	aptix__chain_init(&run->chain, repo, NULL);
	aptix_buf_init(&run->instruction, 0);
	aptix_turn_init(&run->turn);
	if (!(run->keys = aptix__calloc(1 + opts->nsecrets,
					sizeof(*run->keys)))) {
		aptix_run_free(run);
		return APTIX_ERROR;
	}
	run->keys[run->nkeys++] = opts->http.api_key;
	for (r = 0; (size_t)r < opts->nsecrets; r++)
		run->keys[run->nkeys++] = opts->secrets[r];
	if ((r = run_settings(run, opts)) < 0) {
		aptix_run_free(run);
		return r;
	}
	*out = run;
	return 0;
}

/* --- begin ------------------------------------------------------------- */

/* The head of run->conv: the parent of its next turn (none when unborn). */
static int head_of(aptix_oid *head, int *has_head, aptix_repo *repo,
		   const char *conv)
{
	aptix_buf ref = APTIX_BUF_INIT;
	int r;

	aptix_buf_printf(&ref, "%s%s", APTIX_CONV_PREFIX, conv);
	r = aptix_ref_resolve(head, NULL, repo, ref.ptr);
	aptix_buf_release(&ref);
	*has_head = r == 0;
	if (r == APTIX_ENOTFOUND) {
		aptix_error_clear();
		return 0;
	}
	return r;
}

static int place_continue(aptix_run *run)
{
	const char *name = run->o.conversation;
	int r = aptix_conv_resolve(run->conv, run->repo, name ? name : "HEAD");

	if (r == APTIX_ENOTFOUND && name && run->o.create) {
		/* a new conversation, named by the caller */
		if ((r = aptix_conv_check_new_id(name)) < 0)
			return r;
		snprintf(run->conv, sizeof(run->conv), "%s", name);
		aptix_error_clear();
	} else if (r == APTIX_ENOTFOUND && name &&
		   aptix_conv_check_id(name) == 0) {
		aptix_error_set(APTIX_ERROR_REFERENCE, "conversation '%s' not "
				"found", name);
	}
	if (r < 0)
		return r;
	if ((r = head_of(&run->parent, &run->has_parent, run->repo,
			 run->conv)) < 0)
		return r;
	run->new_conv = !run->has_parent;
	return 0;
}

/*
 * Retrying a failed turn whose conversation has not moved since: it goes
 * where the failed one would have gone. Returns 1 when it does.
 */
static int rerun_in_place(aptix_run *run, const aptix_session *from)
{
	aptix_oid head;
	int has_head;

	if (from->status != APTIX_SESSION_FAILED ||
	    head_of(&head, &has_head, run->repo, from->conversation) < 0) {
		aptix_error_clear();
		return 0;
	}
	if (has_head ? !from->has_parent || aptix_oid_cmp(&head,
							   &from->parent) :
	    from->has_parent)
		return 0;
	snprintf(run->conv, sizeof(run->conv), "%s", from->conversation);
	run->new_conv = !has_head;
	return 1;
}

/*
 * A fork's new conversation: the one the caller names (none may have a
 * head of that name), or a new UUID.
 */
static int fork_into(aptix_run *run)
{
	const char *name = run->o.kind == APTIX_RUN_FORK ?
		run->o.fork_conversation : NULL;
	aptix_oid head;
	int r, has_head;

	if (!name)
		return aptix_uuid_v4(run->conv);
	if ((r = aptix_conv_check_new_id(name)) < 0 ||
	    (r = head_of(&head, &has_head, run->repo, name)) < 0)
		return r;
	/* one whose first turn failed has no head: the fork is retried */
	if (has_head) {
		aptix_error_set(APTIX_ERROR_REFERENCE, "conversation '%s' "
				"exists: a fork starts a new one", name);
		return APTIX_EEXISTS;
	}
	snprintf(run->conv, sizeof(run->conv), "%s", name);
	return 0;
}

static int place_from(aptix_run *run)
{
	aptix_session from;
	aptix_turn t;
	int r;

	if (!run->o.from) {
		aptix_error_set(APTIX_ERROR_INVALID, "fork and rerun need a "
				"session");
		return APTIX_EINVALID;
	}
	if ((r = aptix_session_lookup(&from, run->repo, run->o.from)) < 0)
		goto done;
	if (run->o.kind == APTIX_RUN_FORK) {
		run->parent = *run->o.from;
		run->has_parent = 1;
	} else {
		run->parent = from.parent;
		run->has_parent = from.has_parent;
		if ((r = aptix_turn_lookup(&t, run->repo, &from.turn)) == 0)
			r = aptix_blob_lookup(&run->instruction, run->repo,
					      &t.instruction);
		aptix_turn_release(&t);
		if (r < 0 || rerun_in_place(run, &from))
			goto done;
	}
	run->new_conv = 1;
	r = fork_into(run);
done:
	aptix_session_release(&from);
	return r;
}

static int check_instruction(aptix_run *run)
{
	const aptix_buf *in = &run->instruction;
	aptix_credential c;
	char why[160];
	size_t i;

	for (i = 0; i < in->len && strchr(" \t\r\n", in->ptr[i]); i++)
		;
	/* the outputs of tool calls may go alone */
	if (i == in->len && !run->ntool) {
		aptix_error_set(APTIX_ERROR_INVALID, "the instruction is "
				"empty");
		return APTIX_EINVALID;
	}
	if (aptix_run__credential(&c, run, in->ptr, in->len)) {
		aptix_error_set(APTIX_ERROR_INVALID, "the instruction holds "
				"%s, %s: refusing to store or send it; take it "
				"out (keys belong in the environment)",
				aptix_credential_kind(&c),
				aptix_credential_describe(why, sizeof(why),
							  &c));
		return APTIX_EINVALID;
	}
	if (!aptix_utf8_valid(in->ptr, in->len)) {
		aptix_error_set(APTIX_ERROR_INVALID, "the instruction is not "
				"valid UTF-8 text (or holds a NUL byte)");
		return APTIX_EINVALID;
	}
	return 0;
}

/* Sequence number, chain and expiry, from the parent's history. */
static int plan_chain(aptix_run *run)
{
	const struct aptix__past *p;
	aptix_chain_state cs;
	aptix_session ps;
	aptix_turn pt;
	int r;

	run->turn.seq = 1;
	if (!run->has_parent)
		return 0;
	aptix__chain_release(&run->chain);
	aptix__chain_init(&run->chain, run->repo, &run->parent);
	/* read the newest ancestor now: a damaged history fails here */
	if ((r = aptix__chain_get(&p, &run->chain, 0)) < 0 &&
	    r != APTIX_ITEROVER)
		return r;
	if (r == 0 && run->chain.start_conv &&
	    !aptix_oid_cmp(&p->session, &run->parent)) {
		/* a committed parent: the chain has read it */
		snprintf(run->parent_conv, sizeof(run->parent_conv), "%s",
			 run->chain.start_conv);
		run->turn.seq = p->turn.seq + 1;
	} else {
		/* a parent that did not commit: its own session and turn */
		if ((r = aptix_session_lookup(&ps, run->repo,
					      &run->parent)) == 0) {
			snprintf(run->parent_conv, sizeof(run->parent_conv),
				 "%s", ps.conversation);
			if ((r = aptix_turn_lookup(&pt, run->repo,
						   &ps.turn)) == 0)
				run->turn.seq = pt.seq + 1;
			aptix_turn_release(&pt);
		}
		aptix_session_release(&ps);
		if (r < 0)
			return r;
	}
	/* the chain continues from the nearest completed turn */
	if ((r = aptix__chain_state(&cs, &run->chain, run->started)) < 0)
		return r;
	if (cs.has_chain && !cs.expired && !run->o.new_chain) {
		struct aptix_index_chain_info info;

		memset(&info, 0, sizeof(info));
		run->previous = aptix__strdup(cs.response_id);
		/*
		 * A chain that carries too much starts afresh (issue 10):
		 * what it added after its first request, so that a
		 * restart bigger than the cap is not restarted at once.
		 */
		if (run->chain_max_chars > 0 &&
		    aptix_index__chain_plan(run->repo, &run->parent, NULL,
					    NULL, &info) == 0 &&
		    info.has_chain) {
			uint64_t added = info.chars - (info.first < info.chars ?
						       info.first : info.chars);

			if (added > (uint64_t)run->chain_max_chars) {
				run->restart = 1;
				run->chain_chars = added;
			}
		}
	} else {
		/* expired, history but no chain, or a new chain asked for */
		run->restart = 1;
		if (cs.has_chain && cs.expired) {
			run->expired_id = aptix__strdup(cs.response_id);
			run->expired_at = cs.expires_at;
		}
	}
	return 0;
}

static int pending_turn(aptix_run *run)
{
	aptix_turn *t = &run->turn;

	t->conversation = aptix__strdup(run->conv);
	t->status = APTIX_TURN_PENDING;
	t->mode = aptix__strdup("ask");
	t->model = aptix__strdup(run->model);
	t->workspace = run->o.workspace ? aptix__strdup(run->o.workspace) :
		NULL;
	t->created_at = run->started;
	t->status_at = run->started;
	if (!t->conversation || !t->mode || !t->model ||
	    (run->o.workspace && !t->workspace))
		return aptix_error_oom();
	return 0;
}

int aptix_run_begin(aptix_run *run)
{
	int r;

	if (run->state != APTIX_RUN_NEW || run->started)
		return wrong_state(run, "begin");
	run->started = aptix_now_ms();
	if (run->o.kind == APTIX_RUN_CONTINUE)
		r = place_continue(run);
	else
		r = place_from(run);
	if (r < 0)
		return r;
	if (run->o.kind != APTIX_RUN_RERUN &&
	    (r = aptix_buf_set(&run->instruction, run->o.instruction,
			       run->o.instruction_len)) < 0)
		return r;
	if ((r = plan_chain(run)) < 0 || (r = aptix_run__plan_tools(run)) < 0 ||
	    (r = check_instruction(run)) < 0 || (r = pending_turn(run)) < 0) {
		aptix_run__tools_release(run);
		return r;
	}
	snprintf(run->res.conversation, sizeof(run->res.conversation), "%s",
		 run->conv);
	run->res.parent = run->parent;
	run->res.has_parent = run->has_parent;
	if (run->lease_ms < 1000)
		run->lease_ms = 1000;
	if (!run->o.dry_run && (r = aptix_run__claim(run)) < 0)
		return r;
	run->claimed = !run->o.dry_run;
	/* without renewals the claim still holds for one lease */
	if (run->claimed && aptix__lease_start(&run->lease, run->repo,
					       run->conv, &run->pending,
					       run->lease_ms) < 0)
		aptix_run__add_warning(run, "%s: the turn may be taken over "
				       "if it runs longer than turn.lease",
				       aptix_error_last()->message);
	run->state = APTIX_RUN_BEGUN;
	return 0;
}

/* --- context ----------------------------------------------------------- */

int aptix_run_gather(aptix_run *run, const aptix_gather_options *g)
{
	aptix_buf cache = APTIX_BUF_INIT;
	aptix_scan_options so;
	aptix_rag_query q;
	int r;

	if (run->state != APTIX_RUN_BEGUN || run->context_given)
		return wrong_state(run, "gather");
	run->context_given = 1;
	/* named files are sent without the working copy's (--no-files) */
	if (g->files || g->scan.npaths || g->scan.files_from) {
		so = g->scan;
		so.no_git |= !g->files;
		if (!so.root)
			so.root = aptix_repo_workdir(run->repo);
		if (!so.cfg)
			so.cfg = run->o.cfg;
		if (!so.nsecrets) {
			so.secrets = run->keys;
			so.nsecrets = run->nkeys;
		}
		if (!so.ask) {
			so.ask = run->o.ask_credential;
			so.ask_payload = run->o.ask_payload;
		}
		if (!so.stat_cache) {
			if ((r = aptix_workspace_stat_cache(&cache,
							    run->repo)) < 0)
				return fail(run, r, "context_error");
			so.stat_cache = cache.ptr;
			/* a dry run changes nothing in the store */
			so.stat_cache_readonly |= run->o.dry_run ||
				aptix_repo_readonly(run->repo);
		}
		r = aptix_workspace_scan(&run->files, &so);
		aptix_buf_release(&cache);
		if (r < 0)
			return fail(run, r, "context_error");
	}
	if (!g->rag)
		return 0;
	q = g->query;
	if (!q.query)
		q.query = run->instruction.ptr;
	q.http.on_delta = NULL;
	q.http.on_retry = NULL;
	if (!q.http.cancel)
		q.http.cancel = run->o.http.cancel;
	r = aptix_rag_retrieve(&run->chunks, run->repo, run->o.cfg, &q);
	if (r < 0) {
		aptix_error_set(APTIX_ERROR_QDRANT, "retrieval failed and "
				"rag.required is set: %s",
				aptix_error_last()->message);
		return fail(run, r, "retrieval_error");
	}
	return 0;
}

int aptix_run_set_context(aptix_run *run, aptix_file_set *files,
			  aptix_chunk_set *chunks)
{
	if (run->state != APTIX_RUN_BEGUN || run->context_given)
		return wrong_state(run, "set_context");
	run->context_given = 1;
	if (files) {
		aptix_file_set_release(&run->files);
		run->files = *files;
		aptix_file_set_init(files);
	}
	if (chunks) {
		aptix_chunk_set_release(&run->chunks);
		run->chunks = *chunks;
		aptix_chunk_set_init(chunks);
	}
	return 0;
}

/* --- request and send -------------------------------------------------- */

int aptix_run_request(aptix_run *run)
{
	int r;

	if (run->state != APTIX_RUN_BEGUN)
		return wrong_state(run, "request");
	if ((r = aptix_run__plan_context(run)) < 0 ||
	    (r = aptix_run__build_request(run)) < 0)
		return run->claimed ? fail(run, r, "request_error") : r;
	if (run->restart && run->chain_chars) {
		aptix_run__add_warning(run, "the response chain added %llu "
				       "bytes after its first request, over "
				       "context.chain-max-chars "
				       "(%ld): started a new chain with the "
				       "current files and the context of %zu "
				       "earlier turns rehydrated from the "
				       "store",
				       (unsigned long long)run->chain_chars,
				       run->chain_max_chars, run->rehydrated);
	}
	if (run->restart && run->expired_id) {
		char when[32];

		aptix_run__add_warning(run, "the response chain expired on %s "
				       "(response %s): started a new chain "
				       "with the context of %zu earlier turns "
				       "rehydrated from the store",
				       aptix_time_fmt(when, run->expired_at),
				       run->expired_id, run->rehydrated);
	} else if (run->restart && run->o.new_chain && run->has_parent) {
		aptix_run__add_warning(run, "started a new chain as asked, "
				       "with the context of %zu earlier turns "
				       "rehydrated from the store",
				       run->rehydrated);
	}
	if (run->restart && run->has_parent && run->chain_max_chars > 0 &&
	    run->res.request.len > (size_t)run->chain_max_chars)
		aptix_run__add_warning(run, "the new chain's first request is "
				       "%zu bytes, more than the %ld of "
				       "context.chain-max-chars: the chain "
				       "counts what it "
				       "adds after it; set the cap above "
				       "context.window-chars + context."
				       "summary-chars (%ld)",
				       run->res.request.len,
				       run->chain_max_chars,
				       run->window_chars + run->summary_chars);
	run->state = APTIX_RUN_REQUESTED;
	return 0;
}

/*
 * What the server said is stored: a key it echoed (in an error body, the
 * answer, an id) is redacted first. Out of memory drops the field.
 */
static void redact_answer(aptix_run *run)
{
	aptix_openai_result *api = &run->res.api;
	const char *const *k = run->keys;
	size_t n = run->nkeys;

	aptix__redact_secrets(&api->raw, k, n);
	aptix__redact_secrets(&api->text, k, n);
	aptix__redact_secrets(&run->res.request, k, n);
	aptix__redact_secrets_str(&api->response_id, k, n);
	aptix__redact_secrets_str(&api->status, k, n);
	aptix__redact_secrets_str(&api->error_code, k, n);
	aptix__redact_secrets_str(&api->error_message, k, n);
}

/* The server forgot the chain: start a new one, with all the context. */
static int restart_chain(aptix_run *run)
{
	const aptix_openai_result *api = &run->res.api;
	int r;

	aptix_run__add_warning(run, "the server no longer knows response %s "
			       "(%s): started a new chain with the context "
			       "rehydrated from the store",
			       run->previous ? run->previous : "?",
			       api->error_code ? api->error_code :
			       "not found");
	run->restart = 1;
	if ((r = aptix__chain_plan(&run->chain, 1, &run->files,
				   &run->chunks)) < 0)
		return r;
	return aptix_run__build_request(run);
}

/*
 * The deltas reach the caller with the keys redacted, as the answer is
 * stored: a key the server echoes is never shown while it streams, even
 * cut across two deltas (secrets.h, the redact stream).
 */
struct send_stream {
	struct aptix__redact_stream rs;
	const aptix_openai_options *caller;
};

static int send_delta(const char *text, size_t len, void *payload)
{
	struct send_stream *ss = payload;

	return aptix__redact_stream_feed(&ss->rs, text, len);
}

static void send_retry(int attempt, long wait_ms, const char *why,
		       void *payload)
{
	struct send_stream *ss = payload;

	ss->caller->on_retry(attempt, wait_ms, why, ss->caller->payload);
}

static int respond_redacted(aptix_run *run)
{
	aptix_run_result *res = &run->res;
	aptix_openai_options http = run->o.http;
	struct send_stream ss;
	int r;

	ss.caller = &run->o.http;
	aptix__redact_stream_init(&ss.rs, run->keys, run->nkeys,
				  run->o.http.on_delta, run->o.http.payload);
	if (http.on_delta)
		http.on_delta = send_delta;
	if (http.on_retry)
		http.on_retry = send_retry;
	http.payload = &ss;
	r = aptix_openai_respond(&res->api, &http, res->request.ptr,
				 res->request.len);
	if (http.on_delta && r != APTIX_ECANCELLED)
		aptix__redact_stream_flush(&ss.rs);
	aptix__redact_stream_release(&ss.rs);
	return r;
}

int aptix_run_send(aptix_run *run)
{
	aptix_run_result *res = &run->res;
	aptix_turn *t = &run->turn;
	int r, attempt;

	if (run->state != APTIX_RUN_REQUESTED || run->o.dry_run)
		return wrong_state(run, run->o.dry_run ? "send (dry run)" :
				   "send");
	for (attempt = 0;; attempt++) {
		aptix_openai_result_release(&res->api);
		aptix_openai_result_init(&res->api);
		r = respond_redacted(run);
		t->usage.model_requests += res->api.attempts > 0 ?
			res->api.attempts : 1;
		if (r == 0 || !res->api.previous_not_found || run->restart ||
		    attempt)
			break;
		if ((r = restart_chain(run)) < 0)
			return fail(run, r, "request_error");
	}
	redact_answer(run);
	if (run->restart && run->rehydrated)
		res->chain_restarted = 1;
	t->previous_response_id = run->previous ?
		aptix__strdup(run->previous) : NULL;
	t->response_at = aptix_now_ms();
	t->status_at = t->response_at;
	if (res->api.response_id)
		t->response_id = aptix__strdup(res->api.response_id);
	if (t->response_id)
		t->chain_expires_at = t->response_at + run->chain_ttl;
	t->usage.input_tokens = res->api.usage.input_tokens;
	t->usage.output_tokens = res->api.usage.output_tokens;
	t->usage.total_tokens = res->api.usage.total_tokens;
	t->usage.cached_tokens = res->api.usage.cached_tokens;
	t->usage.reasoning_tokens = res->api.usage.reasoning_tokens;
	if (r < 0)
		return fail(run, r, res->api.error_code);
	run->state = APTIX_RUN_SENT;
	return 0;
}

/* --- finish ------------------------------------------------------------ */

static int push_error(aptix_turn *t, const char *msg)
{
	return aptix__strv_push(&t->errors, &t->nerrors, msg);
}

/*
 * After a commit failed: the snapshot that can still be kept. A
 * completed turn whose head moved is kept as a failed one; a turn that
 * does not fit a full store is kept failed, without its payloads.
 * Returns 1 to commit again, 0 when nothing else can be kept.
 */
/*
 * The turn's last write failed (the store went away: a server lost):
 * its claim stays, with its instruction, for the next writer to find
 * its process gone and record it as failed. The error says so.
 */
static int not_recorded(int r)
{
	const aptix_error *e = aptix_error_last();
	aptix_buf msg = APTIX_BUF_INIT;

	aptix_buf_puts(&msg, e ? e->message : "the store cannot be written");
	aptix_error_set(e ? e->klass : APTIX_ERROR_REPOSITORY, "%s; the turn "
			"was not recorded: the next command that writes to the "
			"store (or aptix status) records it as failed, with "
			"its instruction", msg.ptr);
	aptix_buf_release(&msg);
	return r;
}

static int fall_back(aptix_run *run, int r, int *completed)
{
	aptix_run_result *res = &run->res;
	aptix_buf why = APTIX_BUF_INIT, e = APTIX_BUF_INIT;
	int again;

	aptix_buf_puts(&why, aptix_error_last()->message);
	if (r == APTIX_EMISMATCH && *completed) {
		aptix_buf_printf(&e, "the conversation moved while the turn "
				 "ran (%s); the snapshot was kept but the head "
				 "was not moved", why.ptr);
		aptix_run__add_warning(run, "%s", e.ptr);
		free(res->error_message);
		res->error_message = aptix_buf_detach(&why);
	} else if (r == APTIX_EFULL && !run->slim) {
		aptix_buf_printf(&e, "%s: the answer could not be stored",
				 why.ptr);
		free(run->full_why);
		run->full_why = aptix_buf_detach(&why);
		run->slim = 1;
	} else if (r != APTIX_EFULL && !run->bare) {
		/*
		 * Something of the turn cannot be stored (a name, a
		 * warning): keep the turn failed, with its instruction and
		 * why, rather than leave a claim that recovery will call a
		 * dead process.
		 */
		aptix_buf_printf(&e, "the turn could not be stored (%s): "
				 "kept failed, without its files and chunks",
				 why.ptr);
		aptix_run__add_warning(run, "%s", e.ptr);
		if (!res->error_message)
			res->error_message = aptix_buf_detach(&why);
		run->bare = 1;
		*completed = 0;
		run->fallback = r;
		again = !aptix_buf_oom(&e) && push_error(&run->turn,
							 e.ptr) == 0;
		aptix_buf_release(&why);
		aptix_buf_release(&e);
		return again;
	} else {
		aptix_buf_release(&why);
		return 0;
	}
	again = !aptix_buf_oom(&e) && push_error(&run->turn, e.ptr) == 0;
	aptix_buf_release(&why);
	aptix_buf_release(&e);
	if (r == APTIX_EFULL || !run->fallback)
		run->fallback = r;
	*completed = 0;
	return again;
}

int aptix_run_finish(aptix_run *run)
{
	aptix_run_result *res = &run->res;
	int completed, r;

	if (run->state == APTIX_RUN_NEW || run->state == APTIX_RUN_FINISHED)
		return wrong_state(run, "finish");
	if (run->o.dry_run) {
		/* nothing to write; a stage's failure stays the answer */
		run->state = APTIX_RUN_FINISHED;
		if (!run->fail_rc)
			return 0;
		aptix_error_set(APTIX_ERROR_INVALID, "%s", res->error_message ?
				res->error_message : "the dry run failed");
		return run->fail_rc;
	}
	if (run->state == APTIX_RUN_FAILED && !run->claimed)
		return wrong_state(run, "finish");
	completed = run->state == APTIX_RUN_SENT;
	if (!completed && !run->fail_rc) {
		/* finished before it was sent: the caller gave up */
		aptix_error_set(APTIX_ERROR_INVALID, "the turn was abandoned "
				"before it was sent");
		fail(run, APTIX_ECANCELLED, "abandoned");
	}
	if ((!completed && push_error(&run->turn, res->error_message ?
				      res->error_message : "failed") < 0) ||
	    aptix__strv_copy(&run->turn.warnings, &run->turn.nwarnings,
			     res->warnings, res->nwarnings) < 0)
		return APTIX_ERROR;
	aptix__lease_stop(run->lease);
	run->lease = NULL;
	while ((r = aptix_run__commit(run, completed)) < 0 &&
	       fall_back(run, r, &completed))
		;
	run->state = APTIX_RUN_FINISHED;
	res->duration_ms = aptix_now_ms() - run->started;
	if (r < 0)
		return not_recorded(r);
	run->claimed = 0;
	res->committed = 1;
	res->completed = completed;
	res->awaiting = completed && res->api.ncalls;
	if (run->fallback == APTIX_EFULL)
		aptix_error_set(APTIX_ERROR_REPOSITORY, "%s", run->full_why ?
				run->full_why : "the store is full");
	else if (!completed)	/* the failure stays the answer */
		aptix_error_set(run->fallback ? APTIX_ERROR_REPOSITORY :
				APTIX_ERROR_OPENAI, "%s", res->error_message ?
				res->error_message : "the turn failed");
	return run->fallback ? run->fallback : completed ? 0 : run->fail_rc;
}

/* --- the handle -------------------------------------------------------- */

void aptix_run_free(aptix_run *run)
{
	aptix_run_result *r;

	if (!run)
		return;
	/* never leave a claim behind: a paid answer is still committed */
	if (run->claimed && run->state != APTIX_RUN_FINISHED)
		aptix_run_finish(run);
	aptix__lease_stop(run->lease);
	r = &run->res;
	aptix_openai_result_release(&r->api);
	aptix_buf_release(&r->request);
	aptix__strv_clear(&r->warnings, &r->nwarnings);
	free(r->error_code);
	free(r->error_message);
	aptix_file_set_release(&run->files);
	aptix_chunk_set_release(&run->chunks);
	aptix__chain_release(&run->chain);
	aptix_buf_release(&run->instruction);
	aptix_turn_release(&run->turn);
	aptix_run__tools_release(run);
	free(run->model);
	free(run->previous);
	free(run->expired_id);
	free(run->full_why);
	free(run->keys);
	free(run);
}

aptix_run_state aptix_run_state_of(const aptix_run *run)
{
	return run->state;
}

const aptix_run_result *aptix_run_result_of(const aptix_run *run)
{
	return &run->res;
}

const aptix_file_set *aptix_run_files(const aptix_run *run)
{
	return &run->files;
}

const aptix_chunk_set *aptix_run_chunks(const aptix_run *run)
{
	return &run->chunks;
}

const char *aptix_run_instruction(const aptix_run *run, size_t *len)
{
	if (len)
		*len = run->instruction.len;
	return run->instruction.ptr;
}
