/*
 * src/turn/run-int.h - the state of a turn being run (internal; see
 * aptix/run.h). run.c drives the stages; run-request.c builds the
 * request; run-commit.c does the two writes and the recovery of turns
 * whose process died.
 */
#ifndef APTIX_SRC_RUN_INT_H
#define APTIX_SRC_RUN_INT_H

#include "aptix/run.h"
#include "aptix/refs.h"
#include "aptix/credscan.h"
#include "index/chain.h"
#include "aptix/record.h"

struct aptix_run {
	aptix_repo *repo;
	aptix_run_options o;		/* a copy; o.http.cancel is set */
	const char **keys;		/* o.http.api_key, then o.secrets */
	size_t nkeys;
	volatile sig_atomic_t no_cancel;
	aptix_run_state state;
	int claimed;			/* begin's write is done */
	int context_given;		/* gather or set_context was called */
	aptix_run_result res;
	aptix_file_set files;
	aptix_chunk_set chunks;
	struct aptix__chain chain;	/* the parent's ancestors, read once */

	/* where the turn goes */
	char conv[APTIX_CONV_MAXLEN + 1];
	aptix_oid parent;
	int has_parent;
	char parent_conv[APTIX_CONV_MAXLEN + 1];
	int new_conv;			/* the ref must not exist yet */
	aptix_buf instruction;

	/* the response chain */
	char *model;
	char *previous;			/* previous_response_id to use */
	int restart;			/* rehydrate instead of chaining */
	char *expired_id;		/* for the warning */
	int64_t expired_at;
	uint64_t chain_chars;		/* restarted: the chain carried this */
	size_t rehydrated;		/* turns rehydrated into the request */

	/* settings */
	int64_t lease_ms;		/* turn.lease */
	struct aptix__lease *lease;	/* renews the claim (run-lease.c) */
	int64_t chain_ttl;
	long window_turns, window_chars, summary_chars, chain_max_chars;

	aptix_turn turn;		/* the turn being built */
	aptix_oid pending;		/* id of the pending turn (the claim) */
	int64_t started;
	int fail_rc;			/* the failure finish records */
	int slim;			/* store no payloads: the store is full */
	int bare;			/* nor files, chunks or warnings: they
					   could not be stored */
	int fallback;			/* what finish fell back from (EFULL,
					   EMISMATCH), 0: none */
	char *full_why;			/* why the store was full */

	/* tools (run-tools.c) */
	char *tools_json;		/* the tools sent: a JSON array */
	aptix_tool_call *pending_calls;	/* what the head asked for */
	size_t npending;
	aptix_buf *tbufs;		/* per output: output, stdout, stderr,
					   redacted */
	aptix_tool_result *tresults;	/* the results to record */
	aptix_record_tool_result *trecs;
	size_t ntool;
};

int aptix_run__add_warning(aptix_run *run, const char *fmt, ...)
	APTIX_FORMAT(2, 3);
/*
 * Whether data holds a credential (aptix/credscan.h: the rules, the API
 * key and the options' secrets): 1 with *c set, else 0.
 */
int aptix_run__credential(aptix_credential *c, const aptix_run *run,
			  const void *data, size_t len);

/* run-request.c */
int aptix_run__plan_context(aptix_run *run);
int aptix_run__build_request(aptix_run *run);
/*
 * A message of a restart's window cut to at most max bytes, marked
 * where it was cut: its longest code blocks first, then its middle.
 */
int aptix_run__cut_replay(aptix_buf *out, const char *text, size_t len,
			  size_t max);

/* run-lease.c: a thread renewing the claim of turn on conv */
struct aptix__lease;
int aptix__lease_start(struct aptix__lease **out, aptix_repo *repo,
		       const char *conv, const aptix_oid *turn,
		       int64_t lease_ms);
/* Stop renewing (waits for the thread). Accepts NULL. */
void aptix__lease_stop(struct aptix__lease *l);

/* run-tools.c */
struct json_t;
/*
 * The tools to send, the calls the head awaits, the outputs given:
 * checked, redacted, made into results (begin, before the claim).
 */
int aptix_run__plan_tools(aptix_run *run);
/* "tools" of req; the calls (a new chain) and outputs into input. */
int aptix_run__tool_input(aptix_run *run, struct json_t *req,
			  struct json_t *input);
void aptix_run__tools_release(aptix_run *run);

/* run-commit.c */
int aptix_run__claim(aptix_run *run);
int aptix_run__commit(aptix_run *run, int completed);


#endif
