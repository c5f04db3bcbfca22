/*
 * aptix/repo.h - a store: the .aptix directory with its LMDB environment.
 */
#ifndef APTIX_REPO_H
#define APTIX_REPO_H

#include "common.h"
#include "buf.h"
#include "process.h"
#include "odb.h"
#include "object.h"
#include "toolcall.h"
#include "sys/store_backend.h"
#include "sys/backend.h"

typedef struct aptix_repo aptix_repo;

/**
 * @brief Turn a read fault on a damaged store file into an error.
 *
 * liblmdb trusts its file: a truncated or damaged data.mdb makes a read
 * of its map fault (SIGSEGV, SIGBUS). With the guard installed, such a
 * fault inside a store read returns APTIX_ECORRUPT instead, and the
 * store then refuses writes; a fault anywhere else goes to the handler
 * that was there before. The library never installs a signal handler
 * by itself: a program that wants damaged stores reported rather than
 * fatal calls this once, before it starts threads. Idempotent.
 */
APTIX_EXTERN(int) aptix_fault_guard_install(void);
/**
 * @brief Put back the SIGSEGV and SIGBUS handlers that were in place
 *        before aptix_fault_guard_install(); a no-op without it.
 */
APTIX_EXTERN(void) aptix_fault_guard_remove(void);

/**
 * Name of the store directory outside a git work tree (and of stores
 * made by older versions inside one).
 */
#define APTIX_DIR_NAME ".aptix"
/**
 * Name of the store directory inside a git work tree's common git
 * directory (`$(git rev-parse --git-common-dir)/aptix`), where `git
 * clean` and `git add` never reach and which every `git worktree` of
 * the repository shares, as git-lfs and git-annex do.
 */
#define APTIX_GIT_STORE_NAME "aptix"

/**
 * @brief Create a store for workdir (mode 0700, files 0600): in the
 *        common git directory when workdir is in a git work tree, else
 *        in <workdir>/.aptix. The store is built in a scratch directory
 *        next to its place and renamed into it: an init killed midway
 *        leaves no half-made store. It records the work tree's derived
 *        WorkspaceId (aptix_repo_workspace()).
 * @param[out] existed set to 1 when a store was already there (it is
 *             then opened, like `git init` re-run: also a .aptix store
 *             in the git work tree, see aptix_repo_misplaced()); may
 *             be NULL.
 */
APTIX_EXTERN(int) aptix_repo_init(aptix_repo **out, const char *workdir,
				  int *existed);
/** Where a new store keeps its data (aptix_repo_init_ext()). */
typedef struct {
	unsigned version;	/**< APTIX_REPO_INIT_OPTIONS_VERSION */
	/** the backend: NULL or "lmdb" (the store's directory), or
	 *  "postgresql" (a database many hosts share) */
	const char *storage;
	/** postgresql: a libpq URL without a password (refused with
	 *  one: it is stored in the store's config) */
	const char *url;
	/** postgresql: the org whose rows the store sees (NULL:
	 *  "default") */
	const char *org;
	/** postgresql (version 2): objects of s3_threshold stored bytes
	 *  or more go to S3 at s3_url (the endpoint) in s3_bucket
	 *  (s3_region NULL: the environment's); written into the shared
	 *  store for every host. NULL s3_url: the store's setting stays */
	const char *s3_url;
	const char *s3_bucket;
	const char *s3_region;
	size_t s3_threshold;	/**< 0: 1 MiB */
	/** postgresql (version 3): the user whose private conversations
	 *  the store shows (postgresql.user; NULL: the role it logs in
	 *  as) */
	const char *user;
} aptix_repo_init_options;

#define APTIX_REPO_INIT_OPTIONS_VERSION 3
#define APTIX_REPO_INIT_OPTIONS_INIT \
	{ APTIX_REPO_INIT_OPTIONS_VERSION, NULL, NULL, NULL, NULL, NULL, \
	  NULL, 0, NULL }

/**
 * @brief aptix_repo_init() (storedir NULL) or aptix_repo_init_dir()
 *        with a backend of opts' choosing: its name, URL and org go to
 *        the new store's config (extensions.storage, postgresql.url,
 *        postgresql.org, postgresql.user when given); the directory
 *        then holds that config alone.
 *        A shared store that exists already is joined, its refs kept.
 * @return as aptix_repo_init(); APTIX_EINVALID for a URL with a
 *         password (nothing is created) or an unknown backend.
 */
APTIX_EXTERN(int) aptix_repo_init_ext(aptix_repo **out, const char *workdir,
				      const char *storedir,
				      const aptix_repo_init_options *opts,
				      int *existed);
/**
 * @brief Create a store in exactly storedir (not storedir/.aptix), its
 *        parents too, as git init honours GIT_DIR; an existing store
 *        is opened (*existed = 1).
 */
APTIX_EXTERN(int) aptix_repo_init_dir(aptix_repo **out, const char *storedir,
				      int *existed);
/**
 * @brief A repository with no storage yet, for embedders (as libgit2's
 *        git_repository_new): give it its storage with
 *        aptix_repo_set_backend() or aptix_repo_set_store().
 *        It has no directory (aptix_repo_path() is NULL: no config file,
 *        no stat cache) and no work tree until aptix_repo_set_workdir().
 */
APTIX_EXTERN(int) aptix_repo_new(aptix_repo **out);
/**
 * @brief Keep the repository's objects, refs, index and running turns in
 *        store (aptix/sys/store_backend.h: LMDB, memory, or the
 *        embedder's own), which the repository then owns and frees. A
 *        store that holds nothing gets what `aptix init` writes (the
 *        format, a store id, HEAD naming a fresh conversation); one that
 *        holds a store is checked as aptix_repo_open() checks it.
 * @return 0; APTIX_EVERSION for a backend or store of another version;
 *         APTIX_EINVALID when the repository has a store already. On
 *         failure the caller keeps store.
 */
APTIX_EXTERN(int) aptix_repo_set_store(aptix_repo *repo, aptix_store *store);
/**
 * @brief Keep the repository's data in backend (aptix/sys/backend.h:
 *        one from aptix_backend_open(), or the embedder's own), which
 *        the repository then owns and frees; a new one is initialised
 *        and an old one checked as aptix_repo_set_store() does.
 * @return 0; APTIX_EVERSION when the backend or one of its domain
 *         vtables is of another version; APTIX_EINVALID when the
 *         repository has its storage already. On failure the caller
 *         keeps backend.
 */
APTIX_EXTERN(int) aptix_repo_set_backend(aptix_repo *repo,
					 aptix_backend *backend);
/** @brief The work tree a repository made by aptix_repo_new() serves. */
APTIX_EXTERN(int) aptix_repo_set_workdir(aptix_repo *repo,
					 const char *workdir);
/**
 * @brief Open the store whose directory is dir.
 * @return 0; APTIX_ENOTFOUND when dir is not a store; APTIX_EVERSION
 *         when it was written by a newer format version.
 */
APTIX_EXTERN(int) aptix_repo_open(aptix_repo **out, const char *dir);
/**
 * @brief Find the store for start: $APTIX_DIR if set; else, in a git
 *        work tree, the store of its common git directory; else the
 *        nearest .aptix directory from start up to the root. The path
 *        goes to out. The search for a work tree reads .git entries (no
 *        git process) and honours $GIT_CEILING_DIRECTORIES.
 */
APTIX_EXTERN(int) aptix_repo_discover(aptix_buf *out, const char *start);
/**
 * @brief aptix_repo_discover() then open; the store's work tree
 *        (aptix_repo_workdir()) is the top of the work tree holding
 *        start when the store is in the git directory, so that each
 *        `git worktree` works on its own files.
 */
APTIX_EXTERN(int) aptix_repo_find(aptix_repo **out, const char *start);
/**
 * @brief Move the .aptix store of the git work tree holding start into
 *        the common git directory (one rename: atomic; running turns
 *        carry on, their open files follow it).
 * @param[out] to where it went
 * @return 0; APTIX_EINVALID outside a git work tree; APTIX_ENOTFOUND
 *         when the work tree has no .aptix store; APTIX_EEXISTS when the
 *         git directory has a store already; APTIX_ERROR (another file
 *         system: the message says how to move it by hand).
 */
APTIX_EXTERN(int) aptix_repo_migrate(aptix_buf *to, const char *start);
APTIX_EXTERN(void) aptix_repo_free(aptix_repo *repo);

/** @note Borrowed, valid until aptix_repo_free(). */
APTIX_EXTERN(const char *) aptix_repo_path(const aptix_repo *repo);
/** The work tree the store serves (the workspace root). */
APTIX_EXTERN(const char *) aptix_repo_workdir(const aptix_repo *repo);
/**
 * The WorkspaceId recorded in the store at init, or NULL (stores made
 * before it was recorded). It does not change when the work tree is
 * moved, copied or opened on another host.
 */
APTIX_EXTERN(const char *) aptix_repo_workspace(const aptix_repo *repo);
/**
 * NULL, or, for a .aptix store inside a git work tree (where `git clean
 * -fdx` deletes it and `git add -A` stages it), the place
 * aptix_repo_migrate() would move it to.
 */
APTIX_EXTERN(const char *) aptix_repo_misplaced(const aptix_repo *repo);
/** @note Borrowed, valid until aptix_repo_free(). */
APTIX_EXTERN(aptix_odb *) aptix_repo_odb(aptix_repo *repo);

/**
 * 1 when the store was opened read-only: its files (or the file system)
 * cannot be written by this user. Reads work; writes fail.
 */
APTIX_EXTERN(int) aptix_repo_readonly(const aptix_repo *repo);

/**
 * @brief Check the store's files below the objects (LMDB's pages: page
 *        numbers, headers, key order, the free list) without trusting
 *        them; each problem goes to cb as one line.
 * @return the number of problems (0: sound), or < 0 with a message.
 */
APTIX_EXTERN(int) aptix_repo_check_store(aptix_repo *repo,
					 void (*cb)(const char *msg,
						    void *payload),
					 void *payload);

typedef struct {
	size_t objects;		/**< objects in the new store */
	size_t objects_seen;	/**< sound copies found (with repeats) */
	size_t refs, reflog;	/**< refs and reflog entries copied */
	size_t refs_dropped;	/**< refs whose target was not recovered */
	size_t damaged_records;	/**< records of those tables unreadable */
	size_t bad_pages;	/**< pages skipped as damaged */
	size_t sessions;	/**< sessions indexed in the new store */
} aptix_salvage_stats;

/**
 * @brief Copy every readable object, ref and reflog entry of the store
 *        in directory from (a .aptix directory, perhaps damaged: it is
 *        read without trusting it, and never written) into a new store
 *        for workdir (where aptix_repo_init() puts it), with its config
 *        file, and index it. The store is built in a scratch directory
 *        next to its place and renamed there once complete, as init's
 *        is: a salvage that fails or is killed midway leaves no store
 *        (a killed one may leave its scratch, "<store>.salvage-XXXXXX").
 * @return 0; APTIX_EEXISTS when workdir holds a store already; < 0.
 */
APTIX_EXTERN(int) aptix_salvage(const char *from, const char *workdir,
				aptix_salvage_stats *stats);

/** Bytes the store's files take on disk (data.mdb actually allocated). */
APTIX_EXTERN(int) aptix_repo_disk_usage(uint64_t *bytes, aptix_repo *repo);

/*
 * Typed lookups: read an object, check its type and parse it, in one
 * call. Each returns 0; APTIX_ENOTFOUND when the object is missing;
 * APTIX_EINVALID when it is another type (the message names both);
 * APTIX_ECORRUPT or a parse error when its bytes are damaged. What out
 * holds on return is owned by the caller (aptix_session_release(),
 * aptix_turn_release(), aptix_buf_release()), also on failure.
 */
APTIX_EXTERN(int) aptix_session_lookup(aptix_session *out, aptix_repo *repo,
				       const aptix_oid *id);
APTIX_EXTERN(int) aptix_turn_lookup(aptix_turn *out, aptix_repo *repo,
				    const aptix_oid *id);
/**
 * A turn's instruction, answer, tool calls and tool results only, read
 * from its text without parsing the rest (the other fields are as
 * aptix_turn_init() leaves them): for what reads the texts of many
 * turns, as log -S does. Its errors are aptix_turn_lookup()'s.
 */
APTIX_EXTERN(int) aptix_turn_lookup_texts(aptix_turn *out, aptix_repo *repo,
					  const aptix_oid *id);
/** The content of a blob, replacing what out held. */
APTIX_EXTERN(int) aptix_blob_lookup(aptix_buf *out, aptix_repo *repo,
				    const aptix_oid *id);
/** A tool call, a tool result (aptix/toolcall.h); release them after. */
APTIX_EXTERN(int) aptix_tool_call_lookup(aptix_tool_call *out,
					 aptix_repo *repo,
					 const aptix_oid *id);
APTIX_EXTERN(int) aptix_tool_result_lookup(aptix_tool_result *out,
					   aptix_repo *repo,
					   const aptix_oid *id);

/*
 * Write transactions: everything a command changes (objects, index
 * records, refs) is queued in memory and applied in one short LMDB write
 * transaction by aptix_txn_commit(), so it all lands or none of it does.
 * A map that fills up is grown and the batch replayed.
 */
typedef struct aptix_txn aptix_txn;

APTIX_EXTERN(int) aptix_txn_new(aptix_txn **out, aptix_repo *repo);
/** Discards what was not committed. Accepts NULL. */
APTIX_EXTERN(void) aptix_txn_free(aptix_txn *tx);
/**
 * @brief Queue an object; sessions also queue their index records.
 * @return 0, APTIX_EINVALID when a turn/session is malformed or a
 *         session's parent or turn is missing.
 */
APTIX_EXTERN(int) aptix_txn_write_object(aptix_oid *out, aptix_txn *tx,
					 aptix_otype type, const void *data,
					 size_t len);
/**
 * @brief Queue a compare-and-swap ref update.
 * @param new_id NULL deletes the ref
 * @param old_id NULL: whatever it holds; a zero id: must not exist;
 *        else it must hold exactly that id
 * @param reason reflog message
 */
APTIX_EXTERN(int) aptix_txn_ref_update(aptix_txn *tx, const char *name,
				       const aptix_oid *new_id,
				       const aptix_oid *old_id,
				       const char *reason);
/** Queue a symbolic ref (name -> target ref). */
APTIX_EXTERN(int) aptix_txn_symref_update(aptix_txn *tx, const char *name,
					  const char *target,
					  const char *reason);
/** Number of queued operations. */
APTIX_EXTERN(size_t) aptix_txn_size(const aptix_txn *tx);
/**
 * @brief Apply the batch atomically and durably; the txn is emptied.
 * @return 0; APTIX_EMISMATCH (a ref CAS failed: nothing applied);
 *         APTIX_EFULL (disk full: nothing applied); APTIX_ERROR.
 */
APTIX_EXTERN(int) aptix_txn_commit(aptix_txn *tx);

/** Read an object, looking first at what tx has queued. */
APTIX_EXTERN(int) aptix_txn_read_object(aptix_buf *out, aptix_otype *type,
					aptix_txn *tx, const aptix_oid *id);

#endif
