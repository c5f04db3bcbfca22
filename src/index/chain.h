/*
 * src/index/chain.h - the ancestors of a turn, read once (internal).
 *
 * A run needs its parent's history three ways: the response chain it
 * continues (the newest completed turn's response id and expiry), what
 * that chain already sent (context planning), and, when the chain
 * restarts, the earlier turns to rehydrate. An aptix__chain decodes each
 * ancestor at most once, lazily, newest first, and keeps what it read
 * for the life of the run: every consumer reads the same list.
 *
 * Only committed snapshots are kept (failed attempts are not part of a
 * conversation's history); the walk stops at a root, or after
 * APTIX__CHAIN_MAX_WALK snapshots.
 */
#ifndef APTIX_SRC_CHAIN_H
#define APTIX_SRC_CHAIN_H

#include "aptix/repo.h"
#include "aptix/context.h"

#define APTIX__CHAIN_MAX_WALK 100000

struct aptix__past {
	aptix_oid session;
	aptix_oid turn_id;
	aptix_turn turn;
	int completed;		/* turn.status == APTIX_TURN_COMPLETED */
};

/* Read an object (a write transaction's, queued or stored). */
typedef int (*aptix__chain_read_fn)(aptix_buf *out, aptix_otype *type,
				    void *ctx, const aptix_oid *id);

struct aptix__chain {
	aptix_repo *repo;
	aptix__chain_read_fn read;	/* NULL: read from the store */
	void *read_ctx;
	struct aptix__past *v;	/* committed ancestors, newest first */
	size_t n, alloc;
	aptix_oid start;	/* the snapshot a child continues */
	int has_start;
	aptix_oid next;		/* the next snapshot to read */
	int more;		/* next is valid */
	size_t walked;		/* snapshots read so far */
	char *start_conv;	/* the start's conversation, once read */
};

/** start NULL: a chain with no ancestors (a root turn). */
void aptix__chain_init(struct aptix__chain *c, aptix_repo *repo,
		       const aptix_oid *start);
void aptix__chain_release(struct aptix__chain *c);
/*
 * Read the snapshots and turns through fn (a write transaction that may
 * hold ancestors not committed yet), not from the store.
 */
void aptix__chain_set_reader(struct aptix__chain *c, aptix__chain_read_fn fn,
			     void *ctx);
/* A snapshot or a turn read as the chain reads them (out initialized). */
int aptix__chain_session(aptix_session *out, struct aptix__chain *c,
			 const aptix_oid *id);
int aptix__chain_turn(aptix_turn *out, struct aptix__chain *c,
		      const aptix_oid *id);

/**
 * The i-th committed ancestor (0: the newest), reading more of the
 * history when needed. @return 0; APTIX_ITEROVER past the oldest; a
 * read error. @note *out is owned by the chain, valid until its release.
 */
int aptix__chain_get(const struct aptix__past **out, struct aptix__chain *c,
		     size_t i);

/**
 * Call fn for each turn of the response chain that a child of the
 * chain's start continues, newest first: completed turns linked by
 * previous_response_id, back to the turn that started the chain. fn
 * returns non-zero to stop.
 */
typedef int (*aptix__link_fn)(const aptix_turn *t, void *payload);
int aptix__chain_links(struct aptix__chain *c, aptix__link_fn fn,
		       void *payload);

/** The response chain a child would continue (see aptix_chain_state_of). */
int aptix__chain_state(aptix_chain_state *out, struct aptix__chain *c,
		       int64_t now);

/**
 * Context planning (see aptix_context_plan): from the start's index
 * record (src/index/index-chain.c), or by walking the chain when the record
 * was written by an older version.
 */
int aptix__chain_plan(struct aptix__chain *c, int restart,
		      aptix_file_set *files, aptix_chunk_set *chunks);
/** The same by walking the chain's turns (stores of older versions). */
int aptix__chain_plan_walk(struct aptix__chain *c, aptix_file_set *files,
			   aptix_chunk_set *chunks);

#endif
