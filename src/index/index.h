/*
 * src/index/index.h - the index of sessions and conversations, internal (index.c,
 * index-chain.c, index-summary.c).
 */
#ifndef APTIX_SRC_INDEX_H
#define APTIX_SRC_INDEX_H

#include "repo/repo.h"
#include "aptix/index.h"
#include "aptix/refs.h"
#include "aptix/sys/index_backend.h"
#include "util/tokens.h"

/* Index maintenance inside a write (index.c). */
/*
 * How the index reads the objects it summarises: those of a write in
 * progress, queued or stored (txn.c makes one over itself), or those of
 * the store (aptix_index__odb_reader). The index never opens a write.
 */
struct aptix_index_reader {
	int (*read)(aptix_buf *out, aptix_otype *type, void *ctx,
		    const aptix_oid *id);
	int (*size)(size_t *size, void *ctx, const aptix_oid *id);
	void *ctx;
};
/* A reader of the objects of odb. */
void aptix_index__odb_reader(struct aptix_index_reader *rd, aptix_odb *odb);
/*
 * What a committed turn adds to its response chain (index.c keeps, in
 * each session's record, what the model holds through the chain a child
 * would continue: see chain_state there).
 */
struct aptix_index_chain_delta {
	int link;		/* completed, with a response id */
	int continues;		/* has previous_response_id, not restarted */
	unsigned char response[16], previous[16];	/* id fingerprints */
	uint64_t chars;		/* instruction, answer, files, chunks sent */
	uint64_t answer;	/* of which the answer */
	int sizes_unknown;	/* a blob was purged: chars is a guess */
	char **paths;		/* files sent: path and raw SHA-256 */
	unsigned char (*shas)[32];
	size_t nfiles;
	unsigned char (*chunks)[16];	/* chunks sent: fingerprints */
	size_t nchunks;
};

/* A committed turn's line of the rolling summary (index-summary.c). */
#define APTIX_INDEX_LINE_INSTR 120	/* APTIX_SUMMARY_MAX */
#define APTIX_INDEX_LINE_ANSWER 80
struct aptix_index_line {
	int has;		/* the turn is committed */
	int cut;		/* the instruction goes on past the summary */
	uint32_t seq;
	char instr[APTIX_INDEX_LINE_INSTR + 1];
	char answer[APTIX_INDEX_LINE_ANSWER + 1];
};
void aptix_index__line_set(struct aptix_index_line *l, long seq,
			   const char *summary, const char *instr,
			   size_t ilen, const char *ans, size_t alen);
/* The summary field of a session record (its instruction's start). */
int aptix_index__record_summary(char out[121], const void *val,
				size_t vlen);
size_t aptix_index__line_size(const struct aptix_index_line *l);
/* At most max bytes of text's first line, cut at a word ("..."). */
void aptix__head_words(aptix_buf *out, const char *text, size_t len,
		       size_t max);
/*
 * A session's index record, wherever the sessions table says it is: in
 * place (store format 4 and older), or in the timeline under its time
 * (format 5). ENOTFOUND when the session is not indexed; ECORRUPT when
 * the sessions table names a record the timeline lacks.
 */
/*
 * Make the checksum of a session record of version 4 again after its
 * bytes were changed on purpose (purge masks a secret); others as they
 * are.
 */
void aptix_index__reseal(void *val, size_t vlen);
int aptix_index__view_record(aptix_index_backend *ix,
			     const unsigned char id[32],
			     aptix_backend_view_cb cb, void *payload);
/* A session's index record copied into out (from the store). */
int aptix_index__copy_record(aptix_buf *out, aptix_index_backend *ix,
			     const unsigned char id[32]);
int aptix_index__wget_record(aptix_buf *out, aptix_backend_txn *tx,
			     const unsigned char id[32]);
/* Reads a session's index record (in a write, or from the store). */
typedef int (*aptix_index__rec_fn)(aptix_buf *out, const unsigned char id[32],
				   void *ctx);
int aptix_index__rolling_get(aptix_buf *out, const unsigned char id[32],
			     void *repo);
/* The rolling section of a child of the record prec (NULL: a root). */
int aptix_index__rolling_encode(aptix_buf *out, const aptix_oid *parent,
				const aptix_buf *prec,
				const struct aptix_index_line *line,
				aptix_index__rec_fn get, void *ctx,
				int compact);
/* The rolling section's flag of a compact head (record version 6). */
#define APTIX_INDEX_ROLLING_COMPACT 16
/* The rolling section of a session record: 0; 1 when it has none. */
int aptix_index__rolling_section(const unsigned char **sec, size_t *len,
				 const void *val, size_t vlen);
/*
 * The summary of the turns up to upto that a child of head rehydrates,
 * compacted to cap bytes, and the turns it covers: 0; 1 when the
 * records cannot tell (indexed by an older version): walk the history.
 */
int aptix_index__rolling_summary(aptix_buf *out, uint32_t *lo,
				 uint32_t *hi, aptix_repo *repo,
				 const aptix_oid *head, uint32_t upto,
				 size_t cap);

/*
 * The summary of the committed turns v[0..n) (oldest first, numbered by
 * their seq in any order), compacted to cap bytes as the rolling summary
 * is: for a history whose records hold none (rolling_summary said 1).
 */
int aptix_index__summary_of_lines(aptix_buf *out,
				  const struct aptix_index_line *v, size_t n,
				  size_t cap);
/*
 * How many turns such a summary of cap bytes is worth reading: beyond
 * that, compaction gives a turn too little room to say anything.
 */
size_t aptix_index__summary_walk_max(size_t cap);

/* What a turn spent, as a session record keeps it (index-usage.c). */
struct aptix_index_usage {
	int known;		/* the turn was read; its counts fit */
	int sends_results;
	uint32_t tool_calls;
	aptix_usage u;
	char model[APTIX_MODEL_MAX + 1];
};
void aptix_index__usage_from_turn(struct aptix_index_usage *out,
				  const aptix_turn *t);
/* The usage section of a session record of version 5, from si. */
void aptix_index__usage_encode(aptix_buf *b, const aptix_session_info *si);
/* Read it into si: 0, or -1 when it runs past end. */
int aptix_index__usage_decode(aptix_session_info *si,
			      const unsigned char **p,
			      const unsigned char *end);

/* The usage section of a conversation record of version 3. */
void aptix_index__conv_usage_encode(aptix_buf *b, const aptix_conv_info *ci);
int aptix_index__conv_usage_decode(aptix_conv_info *ci,
				   const unsigned char **p,
				   const unsigned char *end);

struct aptix_index_session_op {
	aptix_oid id;
	aptix_session session;	/* parsed */
	int want_search;	/* prepare its words too (a write) */
	int search_ready;	/* ... it did */
	aptix__terms search;	/* the words of its texts */
	aptix_turn_status turn_status;
	struct aptix_index_usage usage;
	char summary[121];
	struct aptix_index_chain_delta delta;
	struct aptix_index_line line;
};
void aptix_index__op_release(struct aptix_index_session_op *op);
/*
 * fsck --full: the fields of a session record that log and show read
 * (summary, turn status, generation) against what op (prepared from its
 * objects) and the parent's record prec (empty for a root) make: 0, or
 * 3 with the error set naming the field.
 */
int aptix_index__verify_fields(const aptix_oid *id, const aptix_buf *rec,
			       const aptix_buf *prec,
			       const struct aptix_index_session_op *op);

/* The chain state in session records (index-chain.c). */
struct aptix_index_chain_info {
	int has_chain;		/* a child continues a response chain */
	uint64_t chars;		/* what that chain has carried */
	uint64_t first;		/* of which its first turn sent (0: not
				   known, a record of an older version) */
	uint32_t links, files, chunks;
};
int aptix_index__delta_from_turn(struct aptix_index_chain_delta *d,
				 const struct aptix_index_reader *rd,
				 const aptix_turn *t,
				 size_t instruction_len);
void aptix_index__delta_release(struct aptix_index_chain_delta *d);
/*
 * fplen: bytes of each file's SHA-256 the section keeps, 16 (what
 * records are written with, APTIX_INDEX_CHAIN_FP) or 32 (older
 * records, remade only to check them).
 */
#define APTIX_INDEX_CHAIN_FP 16
/*
 * first: keep what the chain's first turn sent (what aptix writes; 0
 * only to remake an older record to check it).
 */
int aptix_index__chain_encode(aptix_buf *out, const unsigned char *parent_sec,
			      size_t parent_len, int parent_known,
			      int committed,
			      const struct aptix_index_chain_delta *d,
			      size_t fplen, int first);
/* The chain section of a session record: 0; 1 for version 1 (none). */
int aptix_index__chain_section(const unsigned char **sec, size_t *len,
			       const void *val, size_t vlen);
/*
 * Context planning from the parent's record: 0 when done; 1 when the
 * record cannot tell (indexed by an older version): walk the chain.
 */
int aptix_index__chain_plan(aptix_repo *repo, const aptix_oid *parent,
			    aptix_file_set *files, aptix_chunk_set *chunks,
			    struct aptix_index_chain_info *info);
int aptix_index__apply_session(aptix_backend_txn *tx,
			       const struct aptix_index_session_op *op);
int aptix_index__conv_create(aptix_backend_txn *tx, const char *conv,
			     const char *workspace, int64_t created);
int aptix_index__conv_meta(aptix_backend_txn *tx, const char *conv,
			   const char *title, int archived);
/*
 * The recency key of conversation conv (index-recency.c), in the write
 * of its record: had/old_at what the record was (had 0: none), has/
 * new_at what it is (has 0: deleted).
 */
int aptix_index__recency_move(aptix_backend_txn *tx, const char *conv,
			      int had, int64_t old_at, int has,
			      int64_t new_at);
/*
 * reindex: how much one of its writes holds, dflt (sessions, keys) or
 * the number in APTIX_TEST_REINDEX_BATCH (tests make many writes of a
 * small store that way).
 */
size_t aptix_index__reindex_batch(size_t dflt);
/*
 * The timeline's records from key on (be64 created ms, id; NULL: all),
 * in key order, to cb (the legacy records kept in place are not seen).
 */
int aptix_index__timeline_from(aptix_repo *repo, const unsigned char *key,
			       aptix_session_info_cb cb, void *payload);
/* reindex: empty table t, in writes of a bounded number of keys. */
int aptix_index__clear_table(aptix_repo *repo, aptix_index_table t);
/*
 * Inside a write: APTIX_ELOCKED, saying so, while a reindex is under way
 * or was interrupted (meta "reindex" set: aptix_index_incomplete()).
 */
int aptix_index__check_complete(aptix_backend_txn *tx);
/* reindex: the recency index covers every conversation. */
int aptix_index__recency_seal(aptix_backend_txn *tx);

/*
 * The source key of an imported turn (index-imports.c; objects-format.md,
 * "The import keys"): the snapshot it names, that snapshot's seq and
 * conversation, and for Codex the cumulative usage there.
 */
struct aptix_index_import_key {
	aptix_oid session;
	long seq;
	char conv[APTIX_CONV_MAXLEN + 1];
	int has_total;
	aptix_usage total;
};
/* The record's key: the SHA-256 of the source key's text. */
void aptix_index__import_key_id(aptix_oid *out, const char *key);
int aptix_index__import_key_encode(aptix_buf *out,
				   const struct aptix_index_import_key *k);
/* APTIX_ECORRUPT for a record that is not one. */
int aptix_index__import_key_decode(struct aptix_index_import_key *k,
				   const void *val, size_t len);
/*
 * The record of id at the last commit (raw: its bytes); APTIX_ENOTFOUND
 * when there is none, or its snapshot is not in the store.
 */
int aptix_index__import_key_get(struct aptix_index_import_key *k,
				aptix_buf *raw, aptix_repo *repo,
				const aptix_oid *id);
/* reindex: 1 when a record is to go (unreadable, or names no snapshot). */
int aptix_index__import_key_stale(aptix_repo *repo, const void *val,
				  size_t len);
/*
 * Inside a write: the index records of sessions ids go (gc prunes their
 * objects in the same write): their records, timeline and children
 * keys, their search index entries; the records of the conversations
 * that held them are counted again from the sessions left. Sessions
 * not indexed are passed over.
 */
int aptix_index__forget_sessions(aptix_backend_txn *tx, const aptix_oid *ids,
				 size_t n);
int aptix_index__set_head(aptix_backend_txn *tx, const char *conv,
			  const aptix_oid *head, int64_t now);
/*
 * Compute the summary and turn status of a session, reading via rd.
 * turn: the session's turn, parsed, when the caller has it; NULL: read
 * and parsed here.
 */
int aptix_index__prepare(struct aptix_index_session_op *op,
			 const struct aptix_index_reader *rd,
			 int strict, const aptix_oid *id, const void *data,
			 size_t len, const aptix_turn *turn);

/* The search index (search.c): the words of a session's texts. */
int aptix_index__search_prepare(aptix__terms *out,
				const struct aptix_index_reader *rd,
				const aptix_session *s, const aptix_turn *t);
/*
 * Inside a write, after the sessions' records: the words of ops (those
 * prepared with want_search) into the search index.
 */
int aptix_index__search_apply(aptix_backend_txn *tx,
			      struct aptix_index_session_op *const *ops,
			      size_t n);
/*
 * Inside a write: session id goes from the search index (gc); its
 * ordinal to *ord (UINT32_MAX: it was not indexed).
 */
int aptix_index__search_forget(aptix_backend_txn *tx, const aptix_oid *id,
			       uint32_t *ord);
/*
 * Inside a write, after aptix_index__search_forget: the postings of the
 * n ordinals ords go from every word's list (runs, blocks, open runs),
 * and the words left with none.
 */
int aptix_index__search_drop(aptix_backend_txn *tx, const uint32_t *ords,
			     size_t n);

#endif
