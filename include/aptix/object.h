/*
 * aptix/object.h - object types and the codec of turns and sessions.
 *
 * Five types: a blob holds bytes; a turn holds all that one turn of a
 * conversation recorded; a session is an immutable snapshot in the DAG
 * (parent, conversation, turn, status, run summary); a tool call is a
 * call the model asked for (aptix/toolcall.h), a tool result what came
 * of it. All but blobs are canonical JSON (see objects-format.md); large
 * texts are blobs referenced by id.
 */
#ifndef APTIX_OBJECT_H
#define APTIX_OBJECT_H

#include "common.h"
#include "buf.h"
#include "oid.h"

typedef enum {
	APTIX_OBJ_BAD = 0,
	APTIX_OBJ_BLOB = 1,
	APTIX_OBJ_TURN = 2,
	APTIX_OBJ_SESSION = 3,
	APTIX_OBJ_TOOL_CALL = 4,
	APTIX_OBJ_TOOL_RESULT = 5
} aptix_otype;

/** "blob", "turn", "session", "tool-call", "tool-result"; NULL else. */
APTIX_EXTERN(const char *) aptix_otype_name(aptix_otype t);
/** APTIX_OBJ_BAD when the name is unknown. */
APTIX_EXTERN(aptix_otype) aptix_otype_from_name(const char *name);

/** Id of an object: SHA-256 of "<type> <len>\0" followed by data. */
APTIX_EXTERN(int) aptix_object_hash(aptix_oid *out, aptix_otype type,
				    const void *data, size_t len);

/**
 * The newest object encoding this aptix reads and writes: version 2 is
 * a turn that links tool calls or results (older readers would drop
 * them, so such a turn says it is newer); every other object, and a
 * turn without tool calls, is still written as version 1, so its id is
 * the one an older aptix gives it.
 */
#define APTIX_OBJECT_VERSION 2
/** The version of turns without tool calls, and of sessions. */
#define APTIX_OBJECT_VERSION_1 1

/** A RAG chunk a turn retrieved. */
typedef struct {
	char *chunk_id;		/**< UUID-form chunk id (Qdrant point id) */
	char *path;
	long start_line, end_line;
	char *content_hash;	/**< SHA-256 hex of the chunk text */
	long score;		/**< score x 1e6, rounded */
	aptix_oid snippet;	/**< blob with the snippet text */
	int sent;		/**< sent in this turn's request */
} aptix_chunk_ref;

/** A file of the working copy that was active in a turn. */
typedef struct {
	char *path;		/**< relative to the workspace root */
	char *sha256;		/**< hex SHA-256 of the content */
	long size;
	int touched, sent, too_large, binary;
	aptix_oid content;	/**< blob with the content (zero if none) */
	int has_content;
} aptix_file_ref;

/**
 * The git work tree a turn ran in, when it ran in one (the turn's
 * "worktree" field): HEAD's commit (NULL on an unborn branch), its
 * branch (NULL when HEAD is detached), and whether git reported changed
 * or untracked files under the workspace root; an imported turn's also
 * the repository's remote URL the tool recorded (credentials stripped).
 */
typedef struct {
	char *commit;		/**< hex, lowercase (40 or 64 digits) */
	char *branch;		/**< short name ("main") */
	int dirty;
	char *remote;		/**< remote URL, no userinfo (NULL: none) */
} aptix_worktree;

typedef struct {
	long input_tokens, output_tokens, total_tokens;
	long cached_tokens, reasoning_tokens;
	long model_requests;
} aptix_usage;

typedef enum {
	APTIX_TURN_PENDING = 0,
	APTIX_TURN_COMPLETED,
	APTIX_TURN_FAILED
} aptix_turn_status;

APTIX_EXTERN(const char *) aptix_turn_status_name(aptix_turn_status s);

/**
 * A turn. Strings are owned by the struct (aptix_turn_release() frees
 * them); NULL strings and zero ids are absent fields.
 */
typedef struct {
	int version;
	char *conversation;
	long seq;			/**< 1-based position in its chain */
	aptix_turn_status status;
	char *mode;			/**< "ask" or "edit" */
	char *model;
	char *workspace;
	char *repo;
	int64_t created_at;		/**< milliseconds since the epoch */
	int64_t status_at;
	int64_t response_at;
	int64_t chain_expires_at;
	aptix_oid instruction;		/**< blob, always present */
	aptix_oid answer;		/**< blob, completed turns */
	aptix_oid request;		/**< blob: raw request JSON */
	aptix_oid response;		/**< blob: raw response payload */
	char *response_id;		/**< OpenAI response id */
	char *previous_response_id;
	aptix_usage usage;
	aptix_chunk_ref *chunks;
	size_t nchunks;
	aptix_file_ref *files;
	size_t nfiles;
	char **warnings;
	size_t nwarnings;
	char **errors;
	size_t nerrors;
	int chain_restarted;		/**< the chain started afresh here */
	aptix_worktree worktree;	/**< valid when has_worktree */
	int has_worktree;
	/** tool-call objects: the calls the response asked for, in order */
	aptix_oid *tool_calls;
	size_t ntool_calls;
	/** tool-result objects: the outputs this turn's request sent */
	aptix_oid *tool_results;
	size_t ntool_results;
} aptix_turn;

APTIX_EXTERN(void) aptix_turn_init(aptix_turn *t);
APTIX_EXTERN(void) aptix_turn_release(aptix_turn *t);

/** Session snapshot statuses (seed 002). */
typedef enum {
	APTIX_SESSION_CREATED = 0,
	APTIX_SESSION_COMMITTED,
	APTIX_SESSION_AWAITING_TOOL_RESULTS,
	APTIX_SESSION_FAILED,
	APTIX_SESSION_ARCHIVED
} aptix_session_status;

APTIX_EXTERN(const char *) aptix_session_status_name(aptix_session_status s);
/** -1 when unknown. */
APTIX_EXTERN(int) aptix_session_status_from_name(const char *s);
/**
 * A snapshot that succeeded: committed, or awaiting_tool_results (its
 * response asked for tool calls; a success, continued by their
 * outputs). Its conversation's ref names it; the chain goes on from it.
 */
APTIX_EXTERN(int) aptix_session_status_ok(aptix_session_status s);

typedef struct {
	int version;
	aptix_oid parent;		/**< zero for a root */
	int has_parent;
	char *conversation;
	aptix_oid turn;
	aptix_session_status status;
	int64_t created_at;		/**< milliseconds since the epoch */
	int64_t duration_ms;
	aptix_usage usage;
	char *session_type;		/**< "agent" */
	char *transport;		/**< "sse" or "stream" */
	char *workspace;
	char *title;			/**< conversation title, roots only */
	char *forked_from;		/**< conversation of the parent, forks */
} aptix_session;

APTIX_EXTERN(void) aptix_session_init(aptix_session *s);
APTIX_EXTERN(void) aptix_session_release(aptix_session *s);

/**
 * @brief Serialize a turn into its canonical bytes (appended to out).
 * @return 0, or APTIX_EINVALID when a required field is missing.
 */
APTIX_EXTERN(int) aptix_turn_serialize(aptix_buf *out, const aptix_turn *t);
/**
 * @brief Parse canonical turn bytes.
 * @return 0; APTIX_ECORRUPT when the bytes are not a canonical turn;
 *         APTIX_EVERSION when written by a newer version.
 */
APTIX_EXTERN(int) aptix_turn_parse(aptix_turn *out, const void *data,
				   size_t len);
APTIX_EXTERN(int) aptix_session_serialize(aptix_buf *out,
					  const aptix_session *s);
APTIX_EXTERN(int) aptix_session_parse(aptix_session *out, const void *data,
				      size_t len);

/**
 * @brief Build a turn from loose JSON (any key order, whitespace) as
 *        accepted by `aptix write-turn`. Ids given as hex strings.
 * @return 0 or APTIX_EINVALID with a message naming the bad field.
 */
APTIX_EXTERN(int) aptix_turn_from_json(aptix_turn *out, const char *json,
				       size_t len);
APTIX_EXTERN(int) aptix_session_from_json(aptix_session *out,
					  const char *json, size_t len);

/**
 * Ids an object references, for fsck and the connectivity walk: calls
 * cb for each with the type the reference must have.
 */
typedef int (*aptix_ref_cb)(const aptix_oid *id, aptix_otype type,
			    const char *field, void *payload);
APTIX_EXTERN(int) aptix_object_foreach_ref(aptix_otype type,
					   const void *data, size_t len,
					   aptix_ref_cb cb, void *payload);
/**
 * The same ids, types, field names and order, read from the text of a
 * turn or a session without parsing the whole object (other types:
 * aptix_object_foreach_ref()): for walks that only follow links, as
 * fsck --connectivity-only does. The JSON's shape and each id are
 * checked, the other fields are not.
 * @param[out] failed (may be NULL) 1 for a session whose status is
 * failed, else 0
 * @return 0; APTIX_ECORRUPT for text that is not a JSON object or an id
 * that is not one; what cb returns
 */
APTIX_EXTERN(int) aptix_object_scan_refs(aptix_otype type, const void *data,
					 size_t len, aptix_ref_cb cb,
					 void *payload, int *failed);

/** Check that data is a valid object of that type (blobs: always). */
APTIX_EXTERN(int) aptix_object_validate(aptix_otype type, const void *data,
					size_t len);

/** Format milliseconds since the epoch as ISO-8601 UTC with ms. */
APTIX_EXTERN(char *) aptix_time_fmt(char out[32], int64_t ms);
/** Now, in ms; honours APTIX_TEST_DATE (seconds) for tests. */
APTIX_EXTERN(int64_t) aptix_now_ms(void);

#endif
