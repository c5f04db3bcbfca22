/*
 * aptix/sys/refdb_backend.h - the refs and reflogs of a storage backend
 * (aptix/sys/backend.h).
 *
 * A ref's value is text: 64 hex digits (a session id) or "ref: <name>"
 * (a symbolic ref). The library checks names and values and decides
 * what an update means (which reflog entries it makes, HEAD's among
 * them); the backend keeps them and does compare-and-swap: an update
 * names the value it expects, and changes nothing when the ref holds
 * another (PostgreSQL: UPDATE ... WHERE value = $old, 0 rows = lost).
 * A ref update and its reflog entry are one call, in the caller's
 * transaction; several updates in one transaction are one atomic batch.
 */
#ifndef APTIX_SYS_REFDB_BACKEND_H
#define APTIX_SYS_REFDB_BACKEND_H

#include "backend.h"
#include "../refs.h"

#define APTIX_REFDB_BACKEND_VERSION 1

/** old_value of an update that requires the ref to be absent. */
#define APTIX_REFDB_ABSENT ""

typedef struct {
	const char *name;
	/** NULL: whatever it holds; APTIX_REFDB_ABSENT; else exactly. */
	const char *old_value;
	/** NULL: delete the ref. */
	const char *new_value;
	/** The reflog entry of name made with it (NULL: none). */
	const aptix_reflog_entry *log;
} aptix_refdb_update;

typedef struct aptix_refdb_backend {
	unsigned version;		/**< APTIX_REFDB_BACKEND_VERSION */
	/** The value of name into out; tx NULL: last commit. ENOTFOUND. */
	int (*lookup)(aptix_buf *out, struct aptix_refdb_backend *b,
		      aptix_backend_txn *tx, const char *name);
	/**
	 * The refs whose names start with prefix ("" all), in ascending
	 * byte order of name: cb(name, len, value, len).
	 */
	int (*iterate)(struct aptix_refdb_backend *b, const char *prefix,
		       aptix_backend_record_cb cb, void *payload);
	/**
	 * Inside tx: compare-and-swap u->name from u->old_value to
	 * u->new_value and append u->log to its reflog. APTIX_EMISMATCH
	 * (nothing written) when the ref does not hold old_value;
	 * APTIX_ENOTFOUND when deleting a ref that is absent.
	 */
	int (*update)(struct aptix_refdb_backend *b, aptix_backend_txn *tx,
		      const aptix_refdb_update *u);
	/** Inside tx: append e to the reflog of name (newest last). */
	int (*reflog_append)(struct aptix_refdb_backend *b,
			     aptix_backend_txn *tx, const char *name,
			     const aptix_reflog_entry *e);
	/** The reflog of name, newest first. */
	int (*reflog_foreach)(struct aptix_refdb_backend *b, const char *name,
			      aptix_reflog_cb cb, void *payload);
	/**
	 * The reflogs of every name that starts with prefix ("" all),
	 * deleted refs' too: by name (ascending bytes), each one's entries
	 * oldest first; APTIX_ECORRUPT at an entry that cannot be read.
	 * Reachability counts them; reindex reads here which conversations
	 * were deleted.
	 */
	int (*reflog_iterate)(struct aptix_refdb_backend *b,
			      const char *prefix, aptix_reflog_all_cb cb,
			      void *payload);
} aptix_refdb_backend;

#endif
