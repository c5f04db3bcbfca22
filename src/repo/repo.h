/*
 * src/repo/repo.h - the repository handle (internal).
 */
#ifndef APTIX_SRC_REPO_H
#define APTIX_SRC_REPO_H

#include "aptix/repo.h"
#include "aptix/sys/store_backend.h"
#include "aptix/sys/backend.h"
#include "aptix/context.h"

struct aptix_repo {
	char *path;		/* the .aptix directory */
	char *workdir;		/* the work tree it serves */
	char *workspace;	/* the WorkspaceId recorded at init */
	char *misplaced_to;	/* a .aptix in a git work tree: its home */
	/*
	 * Where its data is: objects, refs, index and claims go through
	 * backend's domain vtables; store is the key-value store under it
	 * (NULL for a backend over none), for what only such a store keeps
	 * (RAG, purge records) and its maintenance.
	 */
	aptix_backend *backend;
	aptix_store *store;
	aptix_odb *odb;
	/*
	 * 1 once the meta table said that no session record is kept in
	 * place (index.c): it never goes back, so it is read once.
	 * Atomic: threads share a repo.
	 */
	int index_in_timeline;
};

/*
 * A new store for workdir built aside (salvage): open in *out, in a
 * scratch directory next to where aptix_repo_init(workdir) puts its
 * store (that place goes to dest). aptix__repo_publish() closes it and
 * renames it there; aptix__repo_discard() closes and removes it. Either
 * frees repo. APTIX_EEXISTS when workdir has a store already (also
 * when one appears before the rename).
 */
int aptix__repo_init_aside(aptix_repo **out, aptix_buf *dest,
			   const char *workdir);
int aptix__repo_publish(aptix_repo *repo, const char *dest);
void aptix__repo_discard(aptix_repo *repo);
/* Remove a store directory's own files, then the directory if empty. */
void aptix__repo_remove_store(const char *dir);

/*
 * Refs inside a write (refs.c): the ref and its reflog entry only; the
 * transaction (txn.c) applies what else a ref change implies.
 */
int aptix_refs__apply(aptix_backend_txn *tx, const char *name,
		      const char *newval, int old_mode,
		      const aptix_oid *old_id, const aptix_oid *log_new,
		      const char *reason, int64_t now);

enum { OLD_ANY = 0, OLD_ABSENT, OLD_EXACT };

/* The conversation a ref name heads, or NULL (refs.c). */
const char *aptix_refs__conversation(const char *name);

/* APTIX_ELOCKED if the record's process lives, APTIX_EEXISTS if dead. */
int aptix_run__check_claim(const char *conv, const char *record,
			   size_t len);

/*
 * The key-value store under repo's backend into *out; APTIX_EINVALID
 * saying that what needs one when the backend keeps none (RAG, purge
 * and salvage work on the tables themselves).
 */
int aptix__repo_kv(aptix_store **out, aptix_repo *repo, const char *what);

/* The store format of the index layout of index.c (format 5). */
#define APTIX_INDEX_FORMAT 5
/* session records of version 6 (a compact rolling head) */
#define APTIX_RECORD_FORMAT 8
/* meta: every session record is in the timeline (none kept in place) */
#define APTIX_META_INDEX_LAYOUT "index-layout"
#define APTIX_INDEX_LAYOUT_TIMELINE "timeline"
/*
 * meta: set (not empty) from the first write of a reindex to its last:
 * the index is incomplete until a reindex finishes (index.c).
 */
#define APTIX_META_REINDEX "reindex"
/*
 * Note in the meta table that no session record is kept in place (a new
 * store, or one just reindexed): listings then skip the sessions table.
 */
int aptix__repo_mark_layout(aptix_backend_txn *tx);

/*
 * The store's id (meta "store-id", a random UUID made at init; an older
 * store gets one on first use, in a short write). Into out (replaced).
 */
int aptix__repo_store_id(aptix_buf *out, aptix_repo *repo);

#endif
