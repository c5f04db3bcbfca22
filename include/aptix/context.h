/*
 * aptix/context.h - what a turn sends besides the instruction: the active
 * files of the working copy and the RAG chunks retrieved for it, and the
 * policy that sends each only when the model does not have it yet in the
 * current response chain (seed 000, sections 3, 6 and 7).
 */
#ifndef APTIX_CONTEXT_H
#define APTIX_CONTEXT_H

#include "common.h"
#include "buf.h"
#include "oid.h"
#include "repo.h"

/** What the next turn does with an active file. */
typedef enum {
	APTIX_FILE_SEND = 0,	/**< new or changed in this chain */
	APTIX_FILE_UNCHANGED,	/**< sent earlier in the chain, same SHA-256 */
	APTIX_FILE_TOO_LARGE,	/**< over files.max-size: not sent */
	APTIX_FILE_BINARY,	/**< NUL bytes or invalid UTF-8: not sent */
	APTIX_FILE_UNREADABLE,	/**< missing, a loop, no permission */
	APTIX_FILE_OVER_BUDGET,	/**< a new chain's context budget is spent */
	/** holds a credential (note says which, where): not sent, not stored */
	APTIX_FILE_WITHHELD
} aptix_file_action;

APTIX_EXTERN(const char *) aptix_file_action_name(aptix_file_action a);

typedef struct {
	char *path;		/**< relative to the workspace root, '/' */
	char sha256[65];	/**< hex SHA-256 of the content ("" if none) */
	long size;
	int touched;		/**< modified in the work tree (git) */
	int too_large, binary;
	aptix_buf content;	/**< the content, unless too large/unreadable */
	aptix_file_action action;
	char *note;		/**< why unreadable or withheld */
	/**
	 * it holds a credential that the caller's ask callback allowed
	 * to send (aptix_credential_ask_cb): sent and stored as any file
	 */
	int credential_allowed;
} aptix_active_file;

typedef struct {
	aptix_active_file *v;
	size_t n;
	char **warnings;
	size_t nwarnings;
	/** the git work tree's state, from the scan's git status */
	aptix_worktree worktree;
	int has_worktree;	/**< the root is in a work tree git took */
	size_t nhashed;		/**< files the scan hashed (not cached) */
	uint64_t nread;		/**< bytes the scan read */
} aptix_file_set;

APTIX_EXTERN(void) aptix_file_set_init(aptix_file_set *s);
APTIX_EXTERN(void) aptix_file_set_release(aptix_file_set *s);
/** Append a copy of a warning. */
APTIX_EXTERN(int) aptix_file_set_warn(aptix_file_set *s, const char *fmt,
				      ...) APTIX_FORMAT(2, 3);

/** A chunk retrieved for a turn. */
typedef struct {
	char *chunk_id;		/**< UUID form: a valid Qdrant point id */
	char *repo;
	char *path;
	long start_line, end_line;
	char *language;
	char content_hash[65];	/**< hex SHA-256 of the text */
	double score;
	aptix_buf text;
	int sent;		/**< set by planning: goes into the request */
} aptix_rag_chunk;

typedef struct {
	aptix_rag_chunk *v;
	size_t n;
	char **warnings;
	size_t nwarnings;
} aptix_chunk_set;

APTIX_EXTERN(void) aptix_chunk_set_init(aptix_chunk_set *s);
APTIX_EXTERN(void) aptix_chunk_set_release(aptix_chunk_set *s);
APTIX_EXTERN(int) aptix_chunk_set_warn(aptix_chunk_set *s, const char *fmt,
				       ...) APTIX_FORMAT(2, 3);

/** The state of the response chain a new turn would continue. */
typedef struct {
	int has_chain;		/**< an earlier turn has a response id */
	int expired;		/**< ... whose chain expired */
	char response_id[128];	/**< the previous_response_id to use */
	int64_t expires_at;
} aptix_chain_state;

/**
 * @brief The chain a child of parent would continue: the nearest
 *        completed ancestor's response id and whether it expired
 *        (now >= its chain_expires_at).
 */
APTIX_EXTERN(int) aptix_chain_state_of(aptix_chain_state *out,
				       aptix_repo *repo,
				       const aptix_oid *parent, int64_t now);

/**
 * @brief Decide what to send: walking the chain back from parent (to the
 *        turn that started it), a file is UNCHANGED when its last sent
 *        version in the chain has the same SHA-256, a chunk is not sent
 *        when the chain sent it already. With restart (a new chain:
 *        expired or not found) or no parent, everything is sent.
 *        TOO_LARGE, BINARY and UNREADABLE files keep their action.
 * @param files may be NULL; chunks may be NULL
 */
APTIX_EXTERN(int) aptix_context_plan(aptix_repo *repo,
				     const aptix_oid *parent, int restart,
				     aptix_file_set *files,
				     aptix_chunk_set *chunks);

/**
 * @brief The limits of one turn, applied after aptix_context_plan():
 *        files to send beyond max_total bytes in all (files.max-total;
 *        0: no limit) become OVER_BUDGET, in path order (a smaller file
 *        after a left-out one may still fit), and a warning of files
 *        names them (the first ten, then "N more"); a chunk of a file
 *        the model gets whole (SEND) or has whole in the chain
 *        (UNCHANGED) is not sent.
 * @param files may be NULL; chunks may be NULL
 */
APTIX_EXTERN(int) aptix_context_limit(aptix_file_set *files,
				      aptix_chunk_set *chunks,
				      long max_total);

/**
 * @brief The text sent ahead of the instruction: the files to send,
 *        whole, and the chunks to send, each in a fenced block with its
 *        path, lines and SHA-256. Appends to out. Paths are quoted as
 *        git quotes them when they must be (aptix_buf_put_path()), so
 *        that a file name cannot forge a line of this text.
 */
APTIX_EXTERN(int) aptix_context_render(aptix_buf *out,
				       const aptix_file_set *files,
				       const aptix_chunk_set *chunks);

#endif
