/*
 * aptix/export.h - history out: sessions written as seed 004's
 * session.md, as a lossless JSON that `aptix import json` reads back
 * into the same object ids, or as markdown for people.
 *
 * An exporter is fed snapshots oldest first (a parent before its
 * children: a walk sorted APTIX_SORT_TOPOLOGICAL | APTIX_SORT_REVERSE)
 * and writes through a callback; the library prints nothing.
 *
 * The formats (Documentation/aptix-export.scd gives them in full):
 *
 *  - json: one JSON object a line. A header line {"type": "header",
 *    "format": "aptix-export", "version": 1}; a line a snapshot,
 *    {"type": "snapshot", "id", "session", "turn", "tool_calls",
 *    "tool_results", "blobs"}: the session, turn, tool-call and
 *    tool-result objects as their canonical JSON (each with its id),
 *    every blob they reference, by id, as {"text": ...} (UTF-8) or
 *    {"base64": ...}; then a line a ref, {"type": "ref", "name", "id"}.
 *    Every field of every object is there, so importing it gives the
 *    same ids.
 *  - session-md: seed 004's front matter (provider, model, created_at,
 *    and aptix_conversation, aptix_head) and a `## User` / `## Assistant`
 *    block a turn; a body line that would read as a role header gets a
 *    backslash. One line of history: failed attempts are left out.
 *  - markdown: a heading a conversation, a section a turn, tool calls
 *    folded in <details>.
 */
#ifndef APTIX_EXPORT_H
#define APTIX_EXPORT_H

#include "common.h"
#include "oid.h"
#include "repo.h"
#include "revwalk.h"

typedef enum {
	APTIX_EXPORT_SESSION_MD = 1,
	APTIX_EXPORT_JSON,
	APTIX_EXPORT_MARKDOWN
} aptix_export_format;

/** "session-md", "json", "markdown"; -1 (no error set) when unknown. */
APTIX_EXTERN(int) aptix_export_format_from_name(const char *name);

/** Where the bytes go: 0, or < 0 to stop (the error set by the callee). */
typedef int (*aptix_export_write_cb)(const void *data, size_t len,
				     void *payload);

typedef struct aptix_exporter aptix_exporter;

/**
 * @brief A new exporter writing fmt to write(payload).
 * @param[out] out free with aptix_exporter_free()
 * @return 0; APTIX_EINVALID for an unknown format; APTIX_ERROR (OOM)
 */
APTIX_EXTERN(int) aptix_exporter_new(aptix_exporter **out, aptix_repo *repo,
				     aptix_export_format fmt,
				     aptix_export_write_cb write,
				     void *payload);
/** @brief Free it (what was not finished is not written). NULL is ok. */
APTIX_EXTERN(void) aptix_exporter_free(aptix_exporter *ex);

/**
 * @brief Export one snapshot (its parent exported before it, or not at
 *        all: the JSON importer then needs the parent in its store).
 * @return 0; APTIX_ENOTFOUND when an object it needs is missing (a
 *         purged blob, for json); a read error; the callback's error.
 */
APTIX_EXTERN(int) aptix_exporter_add(aptix_exporter *ex,
				     const aptix_oid *session);
/** @brief Export every snapshot a walk returns, in its order. */
APTIX_EXTERN(int) aptix_exporter_add_walk(aptix_exporter *ex,
					  aptix_revwalk *w);
/**
 * @brief A ref to recreate on import (json; the other formats ignore
 *        it): name ("refs/conversations/<id>") and what it names.
 */
APTIX_EXTERN(int) aptix_exporter_add_ref(aptix_exporter *ex,
					 const char *name,
					 const aptix_oid *id);
/**
 * @brief Write what is held back (session-md's front matter, refs).
 * @return 0; APTIX_ENOTFOUND when session-md was given nothing
 */
APTIX_EXTERN(int) aptix_exporter_finish(aptix_exporter *ex);

#endif
