/*
 * aptix/import.h - importers: the sessions of other coding agents (Codex,
 * Claude Code, Gemini CLI) recorded as aptix conversations.
 *
 * Each tool's files are read line by line (one JSON record a line; memory
 * bounded by a turn, not a file), cut into turns (an instruction and what
 * answered it), and each turn goes through the recorder
 * (aptix/record.h), so imported turns are stored as native ones are.
 * Every source record is kept: a turn's `response` blob is the records
 * of the turn, the bytes the tool wrote (credentials redacted).
 *
 * Idempotent and incremental by content addressing: a turn's content,
 * its snapshot and its conversation id depend only on the source records
 * (conversation "<tool>-<source session id>", times from the records),
 * so the snapshot's id is computed before anything is written and a
 * snapshot already stored is skipped; importing the same files again
 * writes nothing, a grown file writes only its new turns. A trailing
 * turn that is not over yet (no answer) is left for a later import.
 *
 * The library prints nothing: warnings (a malformed or truncated line,
 * an unknown record, a credential redacted) go to a callback with the
 * file and line.
 */
#ifndef APTIX_IMPORT_H
#define APTIX_IMPORT_H

#include "common.h"
#include "repo.h"
#include "strlist.h"

/** What an import did (or, dry, would do). */
typedef struct {
	size_t files;		/**< source files read */
	size_t conversations;	/**< conversations with a new snapshot */
	size_t turns;		/**< turns read (new or already stored) */
	size_t new_turns;	/**< of those, snapshots written */
	size_t tool_calls;	/**< tool calls seen in the turns */
	size_t flagged;		/**< credentials redacted */
	size_t skipped;		/**< lines not imported (malformed, ...) */
	size_t pending;		/**< trailing turns left for later */
	size_t warnings;	/**< warnings given */
	unsigned long long bytes;	/**< bytes of source read */
} aptix_import_stats;

/** A warning: file and 1-based line (0: the file as a whole). */
typedef void (*aptix_import_warn_cb)(const char *file, size_t line,
				     const char *msg, void *payload);
/** Progress: bytes read so far of total. */
typedef void (*aptix_import_progress_cb)(unsigned long long done,
					 unsigned long long total,
					 void *payload);

typedef struct {
	unsigned version;
	int dry_run;			/**< read and count, write nothing */
	aptix_import_warn_cb warn;
	aptix_import_progress_cb progress;
	void *payload;
	/** keys that are secrets whatever their form (the API key) */
	const char *const *keys;
	size_t nkeys;
} aptix_import_options;

#define APTIX_IMPORT_OPTIONS_VERSION 1
#define APTIX_IMPORT_OPTIONS_INIT { APTIX_IMPORT_OPTIONS_VERSION, 0, NULL, \
	NULL, NULL, NULL, 0 }

/** @brief 1 when tool is one aptix imports ("codex", "claude", ...). */
APTIX_EXTERN(int) aptix_import_tool_known(const char *tool);

/**
 * @brief The tool's default location under home: ~/.codex/sessions and
 *        ~/.codex/archived_sessions, ~/.claude/projects, ~/.gemini/tmp
 *        (the directories that exist).
 */
APTIX_EXTERN(int) aptix_import_default_paths(aptix_strlist *out,
					     const char *tool,
					     const char *home);

/**
 * @brief Import the tool's files: each path is a file or a directory
 *        searched for the tool's files (rollout-*.jsonl, *.jsonl...).
 * @param[out] stats what was read and written
 * @return 0 when everything was imported; 1 when some of it was not
 *         (warnings said what: a malformed line, a truncated one...);
 *         APTIX_EINVALID for an unknown tool; a store error (nothing of
 *         the turn being written is left half written).
 */
APTIX_EXTERN(int) aptix_import(aptix_import_stats *stats, aptix_repo *repo,
			       const char *tool, const char *const *paths,
			       size_t npaths,
			       const aptix_import_options *opts);

#endif
