/*
 * src/import/import.h - the importers' framework (import.c) and the one
 * file per source tool (codex.c, claude.c, gemini.c).
 *
 * The framework reads a file line by line and hands each record, parsed,
 * to the tool; every line also goes into the file's pending source. The
 * tool cuts turns: it fills a struct imp_turn, calls imp_cut() after the
 * last line that belongs to the turn, and imp_emit() when the turn is
 * over; the framework then records the turn with the source lines up to
 * the cut as its `response` blob, and keeps the lines after the cut for
 * the next turn (so a turn's content does not change when the file grows:
 * lines written after a turn's last record belong to the next one).
 */
#ifndef APTIX_SRC_IMPORT_H
#define APTIX_SRC_IMPORT_H

#include "aptix/import.h"
#include "aptix/object.h"
#include "aptix/toolcall.h"
#include "aptix/record.h"
#include "aptix/oidmap.h"
#include "aptix/strlist.h"
#include <jansson.h>
#include <stddef.h>
#include <stdio.h>

#define IMP_CONV_MAX 64

/* A tool's result as a tool reads it: the fields, and its bytes. */
struct imp_result {
	aptix_tool_result r;
	aptix_buf out, err, output;
	int has_out, has_err, has_output;
};

/*
 * Where a turn ran, as the tool says: the model, the directory, and the
 * git work tree's commit and branch. A tool that says it once for a
 * whole session keeps one and copies it into each turn.
 */
struct imp_where {
	char *model, *cwd;
	char *commit, *branch;
	char *remote;		/* the repository's URL, credentials out */
};

void imp_where_release(struct imp_where *w);

struct imp_file;

/*
 * The repository's remote URL url (NULL: none) as the source records it:
 * without its user information into w->remote; user information that
 * holds a password or a token is redacted wherever the file's records
 * hold it (rule url-userinfo). Returns 0, or APTIX_ERROR.
 */
int imp_remote(struct imp_file *f, struct imp_where *w, const char *url);
int imp_where_copy(struct imp_where *to, const struct imp_where *from);

/* A turn as a tool reads it. */
struct imp_turn {
	aptix_buf instruction, answer;
	int has_answer;		/* 0: a failed attempt (no answer came) */
	struct imp_where where;
	int64_t created_at, response_at;
	aptix_usage usage;
	size_t line;		/* the line of its first record */
	aptix_tool_call *calls;	/* the calls the model asked for */
	size_t ncalls, acalls;
	struct imp_result *results;	/* what came of them */
	size_t nresults, aresults;
};

/* A conversation being imported: where its next snapshot goes. */
struct imp_conv {
	char id[IMP_CONV_MAX + 1];
	aptix_oid parent;	/* the newest committed snapshot */
	int has_parent;
	char parent_conv[IMP_CONV_MAX + 1];
	long seq;		/* the parent's turn's seq */
	const char *session_type;	/* NULL: "agent" */
	int parent_fresh;	/* parent written by this run, times in ms */
	char *workspace;	/* the repository's WorkspaceId */
	char *legacy_ws;	/* ... as aptix derived it before (a twin's) */
	char *cwd, *remote;	/* what they were derived from */
	size_t written;		/* snapshots written in it by this run */
	unsigned file_no;	/* the top-level file that used it last */
	unsigned moved_in;	/* 1 + the batch that moved its ref, or 0 */
	aptix_oid ref_at;	/* its ref, once read (zero: none) */
	int ref_known;		/* ... as this run's writes leave it */
	int relink;		/* a waiting fork's, imported again: its
				   ref goes to the new snapshots */
};

/* What a source key names: a snapshot, its seq, its conversation. */
struct imp_key {
	aptix_oid session;
	long seq;
	char conv[IMP_CONV_MAX + 1];
	aptix_usage total;	/* Codex: the cumulative usage there */
	int fresh;		/* written by this run (imp_conv's) */
};

struct imp_run;

/* A map of source keys. */
struct imp_keys {
	aptix_oidmap map;	/* sha256(key) -> index in v */
	struct imp_key *v;
	size_t n, alloc;
};

/* One file being read. */
struct imp_file {
	struct imp_run *run;
	const struct imp_tool *tool;
	const char *path;
	const char *forked_from;	/* the source id its prescan named as
					   its parent (NULL: none) */
	const char *id;		/* its source id (NULL: not named) */
	const aptix_buf *mem;	/* its lines, when not read from path (a
				   fork's source, as its snapshots keep it) */
	int linked;		/* a fork that found its parent's turn */
	size_t lineno;		/* the line being read */
	aptix_buf src;		/* lines not yet in a turn */
	size_t src_line;	/* the line src starts with */
	size_t cut;		/* end of the current turn's lines in src */
	size_t cut_line;	/* the first line after the cut */
	struct imp_conv *conv;
	void *state;		/* the tool's (freed by the import) */
	size_t state_turn;	/* 1 + the offset of its imp_turn (0: none) */
	aptix_strlist hidden;	/* credentials of remote URLs (imp_remote) */
};

struct imp_tool {
	const char *name;
	/* 1 when the file (its base name) is one of the tool's */
	int (*match)(const char *path);
	/*
	 * Read the start of a file: its source id (the conversation it
	 * belongs to) and the id it forks from (NULL: none), malloc'd.
	 * Files are imported so that a parent comes before its forks;
	 * files of one id are imported into one conversation.
	 */
	int (*prescan)(char **id, char **parent, const char *path);
	int (*begin)(struct imp_file *f);
	/* each record (rec NULL: a line that is not JSON, already warned) */
	int (*record)(struct imp_file *f, json_t *rec);
	int (*end)(struct imp_file *f);
	/*
	 * Free what f->state points to (NULL: nothing). The state itself
	 * and its imp_turn are the import's to free, after this.
	 */
	void (*release)(struct imp_file *f);
	/*
	 * A tool of text files (session.md) sets this instead of record:
	 * each line as read, its newline included (last: the file's last).
	 */
	int (*line)(struct imp_file *f, const char *line, size_t len,
		    int last);
	/*
	 * A tool whose source is not lines (a database, an indented JSON
	 * document) sets this: it reads f->path itself and hands each
	 * record, as one line of compact JSON, to imp_feed().
	 */
	int (*read)(struct imp_file *f);
};

extern const struct imp_tool aptix__imp_codex, aptix__imp_claude,
	aptix__imp_gemini, aptix__imp_json, aptix__imp_session_md,
	aptix__imp_opencode, aptix__imp_llm;

/* --- for the tools ----------------------------------------------------- */

void imp_turn_init(struct imp_turn *t);
/*
 * A tool's state for f (size bytes, zeroed, its imp_turn at turn_off
 * initialised), set as f->state; NULL when out of memory.
 */
void *imp_state_new(struct imp_file *f, size_t size, size_t turn_off);
/* Release and free f->state and its imp_turn (the tool's release ran). */
void imp_state_free(struct imp_file *f);
#define IMP_STATE_NEW(f, type) \
	((type *)imp_state_new(f, sizeof(type), offsetof(type, t)))
void imp_turn_release(struct imp_turn *t);

/* A warning naming the file and line (0: the current line). */
void imp_warn(struct imp_file *f, size_t line, const char *fmt, ...)
	APTIX_FORMAT(3, 4);
/* Something of the file was not imported (skipped: one more skipped). */
void imp_partial(struct imp_file *f, int skipped);

/* --- SQLite sources (llm, OpenCode) --- */
struct sqlite3;
struct sqlite3_stmt;
/* Column i of the row as text, or NULL. */
const char *imp_col(struct sqlite3_stmt *st, int i);
/*
 * A database that could not be read (what: "open", "schema", a table)
 * is a warning and a partial import, not an error: 0.
 */
int imp_db_fail(struct imp_file *f, struct sqlite3 *db, const char *tool,
		const char *what);
/* Every statement of db finalized, and db closed (NULL: nothing). */
void imp_db_close(struct sqlite3 *db);
/* A record whose type the tool does not know: warned, kept as source. */
void imp_unknown(struct imp_file *f, const char *type);

/*
 * The conversation the file's turns go to ("<tool>-<id>"); files of
 * one conversation share its state.
 */
int imp_conversation(struct imp_file *f, const char *id);

/*
 * A record the tool read itself (the read hook): one line of JSON,
 * counted and kept as source like a line of a file, then handed to
 * the tool's record callback.
 */
int imp_feed(struct imp_file *f, const char *line, size_t len);

/* The current turn's source ends after the line being read. */
void imp_cut(struct imp_file *f);
/* Record the turn (source: the lines up to the cut). */
int imp_emit(struct imp_file *f, struct imp_turn *t);
/* A trailing turn left for a later import (its lines stay unread). */
void imp_pending(struct imp_file *f);
/*
 * The turn up to the cut is one already stored elsewhere (a fork's
 * copy of its parent's records): the conversation goes on from it.
 */
void imp_share(struct imp_file *f, const struct imp_key *k);
/* The conversation's next snapshot is a child of k's (a fork). */
void imp_parent(struct imp_file *f, const struct imp_key *k);
/*
 * 1 when a fork of the file's source id, imported before it, waits for
 * it in conversation conv (that fork took the file's turns as its own:
 * the file takes their keys back).
 */
int imp_fork_waits(struct imp_file *f, const char *conv);
/*
 * The file's next turns go to the conversation "<tool>-<id>" (id as fmt
 * makes it), forked from k (NULL: the current conversation's newest
 * snapshot).
 */
int imp_branch(struct imp_file *f, const struct imp_key *k, const char *fmt,
	       ...) APTIX_FORMAT(3, 4);

/*
 * Record a snapshot given whole (the lossless JSON of `aptix export`):
 * ro names the session, turn, blobs and tool objects, no ref moves; the
 * snapshot's id must come out as expect, or nothing is written and the
 * line is warned about. Already stored: nothing to do.
 */
int imp_record_given(struct imp_file *f, aptix_record_options *ro,
		     const aptix_oid *expect);
/*
 * Set a ref the source names (the JSON's ref lines): created when
 * absent, left (with a warning) when it names something else.
 */
int imp_ref_set(struct imp_file *f, const char *name, const aptix_oid *id);

/*
 * Source keys: what a key of the source names in the store. A key put is
 * written to the store's imports table with the batch (objects-format.md,
 * "The import keys"), so later runs find it too. imp_key_get()'s answer
 * is valid until the next imp_key_get() or imp_key_put().
 */
int imp_key_put(struct imp_run *run, const char *key,
		const struct imp_key *k);
const struct imp_key *imp_key_get(struct imp_run *run, const char *key);
/*
 * A key only the file itself (and the files it imports) looks up: it
 * goes when the top-level file is read.
 */
int imp_key_put_file(struct imp_run *run, const char *key,
		     const struct imp_key *k);
/* The key of the conversation's newest snapshot (for imp_key_put). */
void imp_key_here(struct imp_key *k, const struct imp_file *f);

/*
 * Import another file now, into a new conversation whose first snapshot
 * is a child of parent (a Claude subagent: session type and id given).
 */
int imp_import_child(struct imp_run *run, const struct imp_tool *tool,
		     const char *path, const char *conv_id,
		     const struct imp_key *parent, const char *session_type);

/*
 * The lines of a source file (lines.c): plain, or zstd-compressed when
 * its name ends in ".zst", decompressed as it is read.
 */
struct imp_lines {
	FILE *fp;
	char *line;		/* plain: getline()'s buffer */
	size_t alloc;
	struct ZSTD_DCtx_s *z;	/* zstd: the decompressor */
	unsigned char *in;
	size_t in_size, in_len, in_pos;
	aptix_buf out;		/* zstd: decompressed, not yet returned */
	size_t out_pos;
	int frame_open;		/* a frame not finished yet */
	const char *bad;	/* what was wrong with the stream */
};

/* 0, or -1 with errno set (the file cannot be opened). */
int imp_lines_open(struct imp_lines *ls, const char *path);
/* The lines of bytes in memory (valid while ls is read). */
int imp_lines_open_mem(struct imp_lines *ls, const aptix_buf *b);
/*
 * The next line, its newline included (last: nothing follows it).
 * 1; 0 at the end; -1 on a read error (imp_lines_error() says what).
 */
int imp_lines_next(struct imp_lines *ls, const char **line, size_t *len,
		   int *last);
const char *imp_lines_error(const struct imp_lines *ls);
void imp_lines_close(struct imp_lines *ls);

/*
 * Warn for each credential in p (what: where it is, "instruction"), as
 * found in the line being read, "not imported"; flagged counted. 1 when
 * there was one: the caller does not import it (a source whose ids are
 * given cannot be redacted).
 */
int imp_credentials(struct imp_file *f, const char *p, size_t len,
		    const char *what);
/* The prescan of a tool whose files name no id (a database). */
int imp_prescan_none(char **id, char **parent, const char *path);
/* The first record of a file (NULL: none readable). */
json_t *imp_first_record(const char *path);
/* 1 when path's base name starts with prefix and ends with suffix. */
int imp_name_is(const char *path, const char *prefix, const char *suffix);

/* A call of the turn (arguments: the JSON text the model wrote). */
int imp_call_add(struct imp_turn *t, const char *call_id, const char *name,
		 const char *arguments, const char *kind, const char *item_id);
/* The call's result in the turn, made when new (NULL: out of memory). */
struct imp_result *imp_result_get(struct imp_turn *t, const char *call_id,
				  const char *source);
/* The call of that id in the turn, or NULL. */
const aptix_tool_call *imp_call_find(const struct imp_turn *t,
				     const char *call_id);
/* A JSON value as compact text (malloc'd; NULL: out of memory). */
char *imp_dump(json_t *v);

/* Helpers on records. */
const char *imp_str(json_t *o, const char *key);
int64_t imp_time(json_t *o, const char *key);
long imp_long(json_t *o, const char *key);
int imp_set_str(char **dst, const char *s);
/* Exit code from a tool's output text: "Exit code N", "Exit Code: N". */
int imp_exit_code(long *code, const char *text);

#endif
