/*
 * aptix/purge.h - removing what should never have been stored (a
 * credential committed before the detector knew it).
 *
 * A purged blob's bytes leave the objects table; the table "purged"
 * keeps its id with when and why, so that the DAG stays whole: a turn
 * still names the blob, fsck accepts the link, and a read of it fails
 * with "object <id> was purged on <date>: <reason>". A turn or session
 * holding the secret in its own fields (an error message, a title) is
 * redacted in place: each occurrence becomes as many '*', the object
 * keeps its id (recorded as redacted: fsck --full accepts the hash
 * mismatch) and its links. Reflog entries and index records holding
 * the secret are redacted the same way. The retrieval index drops the
 * files whose chunks or names held it, the stat cache (derived) goes
 * when a name in it holds it, the lines of chat's history (chat_history)
 * holding it go, and the store's files are compacted (the file a
 * symbolic data.mdb points to, in place), so that the bytes are in no
 * free page either. Last, no file of the store directory may still hold
 * the secret's bytes, or purge fails naming it.
 */
#ifndef APTIX_PURGE_H
#define APTIX_PURGE_H

#include "common.h"
#include "config.h"
#include "openai.h"
#include "oid.h"
#include "repo.h"

typedef enum {
	APTIX_PURGE_BLOB = 1,		/**< removed, recorded as purged */
	APTIX_PURGE_REDACT,		/**< turn or session, redacted */
	APTIX_PURGE_RECORD,		/**< reflog entry or index record */
	APTIX_PURGE_RAG_PATH,		/**< a file dropped from the index */
	APTIX_PURGE_FILE,		/**< a derived file of the store */
	APTIX_PURGE_FILE_LINES		/**< what: a file beside the store
					     (chat_history) whose lines
					     holding the secret go */
} aptix_purge_kind;

/** One thing purge removes or redacts (told before it does). */
typedef struct {
	aptix_purge_kind kind;
	aptix_oid id;			/**< BLOB, REDACT */
	const char *type;		/**< BLOB, REDACT: the object type */
	const char *table;		/**< RECORD: reflog, sessions... */
	/**
	 * RECORD: ref name; RAG_PATH: the path, the secret masked; FILE:
	 * its name in the store directory (stat-cache)
	 */
	const char *what;
} aptix_purge_item;

typedef struct {
	unsigned version;
	/** blobs to purge (turns and sessions are refused) */
	const aptix_oid *ids;
	size_t nids;
	/**
	 * Bytes (8 or more) whose every occurrence goes: blobs holding
	 * them are purged, turns, sessions, reflog entries and index
	 * records redacted. NULL: only ids.
	 */
	const void *secret;
	size_t secret_len;
	const char *reason;		/**< recorded; NULL: "purged" */
	int dry_run;			/**< tell, change nothing */
	/** for the qdrant index (as aptix_rag_index_options) */
	aptix_openai_options http;
	const char *qdrant_url, *qdrant_api_key;
	void (*on_item)(const aptix_purge_item *it, void *payload);
	void *payload;
} aptix_purge_options;

#define APTIX_PURGE_OPTIONS_INIT { 1, NULL, 0, NULL, 0, NULL, 0, \
	APTIX_OPENAI_OPTIONS_INIT, NULL, NULL, NULL, NULL }

typedef struct {
	size_t blobs, redacted, records, rag_paths;
	uint64_t disk_before, disk_after;	/**< data.mdb, bytes */
	size_t history_lines;	/**< lines of chat_history dropped */
} aptix_purge_stats;

/**
 * @brief Purge (see the file comment): one write transaction for the
 *        objects, the purge records, the reflog and the index; then the
 *        retrieval index; then the store is compacted.
 * @note Refused, nothing changed, while a turn is in flight, another
 *       process has the store open (compaction needs the store alone)
 *       or the data file has another hard link. Afterwards repo only
 *       reads: free it and open the store again to write.
 * @return 0; APTIX_EINVALID (nothing to purge, a secret under 8 bytes,
 *         an id that is not a blob, a redaction that would break an
 *         object); APTIX_ENOTFOUND (an id that is not stored);
 *         APTIX_ELOCKED; APTIX_ERROR when a file of the store still
 *         holds the secret afterwards (named in the message); a store
 *         error.
 */
APTIX_EXTERN(int) aptix_purge(aptix_purge_stats *out, aptix_repo *repo,
			      const aptix_config *cfg,
			      const aptix_purge_options *o);

/**
 * @brief Compact the store alone (what purge ends with), e.g. after a
 *        purge whose compaction was refused. Afterwards repo only reads.
 * @return 0; APTIX_ELOCKED while another process has the store open.
 */
APTIX_EXTERN(int) aptix_purge_compact(aptix_repo *repo);

/** What the store knows of a purged object. */
typedef struct {
	int64_t time;		/**< ms since the epoch */
	int redacted;		/**< 1: redacted in place; 0: removed */
	char reason[256];
} aptix_purge_info;

/**
 * @brief Whether id was purged (or redacted).
 * @return 0 (out set); APTIX_ENOTFOUND when it was not.
 */
APTIX_EXTERN(int) aptix_purge_lookup(aptix_purge_info *out, aptix_repo *repo,
				     const aptix_oid *id);

#endif
