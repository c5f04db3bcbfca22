/*
 * aptix/remote.h - a local store with remotes, as git has: a remote is
 * a shared store on PostgreSQL (a libpq URL and the org whose rows it
 * sees), named in the store's config (remote.<name>.url, .org).
 *
 * push sends what the remote lacks of the history of conversations,
 * then moves their refs there by compare-and-swap, all in one
 * transaction; fetch brings what the remote has into remote-tracking
 * refs (refs/remotes/<remote>/<conversation>); clone makes a store from
 * a remote. History never merges: a conversation that moved on both
 * sides is rejected (or pushed as a fork, on request).
 *
 * Objects travel in their stored form, each checked against its id on
 * arrival, parents first (an object arrives after every object it
 * names, its bases included) in batches of their own transactions: a
 * push or fetch killed at any moment leaves the other side with no ref
 * to a missing object, only objects that no ref names yet.
 */
#ifndef APTIX_REMOTE_H
#define APTIX_REMOTE_H

#include "common.h"
#include "oid.h"
#include "repo.h"

#define APTIX_REMOTES_PREFIX "refs/remotes/"

typedef struct aptix_remote aptix_remote;

/**
 * @brief A remote's name: as a conversation id (aptix_conv_check_id()).
 * @return 0 or APTIX_EINVALID saying why.
 */
APTIX_EXTERN(int) aptix_remote_check_name(const char *name);
/**
 * @brief Name url (a postgresql:// URL without a password: refused,
 *        nothing stored) as the remote name of repo, seeing org's rows
 *        (NULL: "default").
 * @return 0; APTIX_EEXISTS when name is taken; APTIX_EINVALID.
 */
APTIX_EXTERN(int) aptix_remote_add(aptix_repo *repo, const char *name,
				   const char *url, const char *org);
/**
 * @brief Forget the remote name and its remote-tracking refs.
 * @return 0; APTIX_ENOTFOUND when there is no such remote.
 */
APTIX_EXTERN(int) aptix_remote_remove(aptix_repo *repo, const char *name);

typedef int (*aptix_remote_cb)(const char *name, const char *url,
			       const char *org, void *payload);
/** @brief The remotes of repo's config, by name. */
APTIX_EXTERN(int) aptix_remote_foreach(aptix_repo *repo, aptix_remote_cb cb,
				       void *payload);

/**
 * @brief Connect to a remote: a name of repo's config, or a URL (then
 *        org names its rows; NULL: "default"). repo may be NULL for a
 *        URL. The remote's store is made (what `aptix init` writes)
 *        when its org holds none yet.
 * @return 0; APTIX_ENOTFOUND (no such remote); APTIX_EINVALID (a bad
 *         URL, one with a password); APTIX_ENET (the server cannot be
 *         reached, or refused the login). Messages never hold a
 *         credential.
 */
APTIX_EXTERN(int) aptix_remote_open(aptix_remote **out, aptix_repo *repo,
				    const char *name_or_url, const char *org);
APTIX_EXTERN(void) aptix_remote_free(aptix_remote *rem);
/** @brief The remote's name, or NULL when opened by URL. */
APTIX_EXTERN(const char *) aptix_remote_name(const aptix_remote *rem);
/** @brief The remote's store, as a repository (owned by rem). */
APTIX_EXTERN(aptix_repo *) aptix_remote_repo(aptix_remote *rem);

/** What became of one conversation in a push or a fetch. */
typedef enum {
	APTIX_XFER_UPTODATE = 0,	/**< nothing to do */
	APTIX_XFER_NEW,			/**< the ref was made */
	APTIX_XFER_FASTFORWARD,		/**< moved forward */
	APTIX_XFER_FORCED,		/**< fetch: moved elsewhere */
	APTIX_XFER_FORK,		/**< push: sent as a new fork ref */
	APTIX_XFER_REJECT_FETCH_FIRST,	/**< the remote has what we lack */
	APTIX_XFER_REJECT_NONFF,	/**< the remote's is no ancestor */
	APTIX_XFER_REJECT_STALE,	/**< moved there during the push */
	APTIX_XFER_REJECT_ATOMIC	/**< another ref's CAS was lost */
} aptix_xfer_status;

typedef struct {
	char *conv;		/**< the conversation here */
	char *dst;		/**< where it went: a conversation id there
				     (a fork's new one), or a ref here */
	aptix_oid old_id;	/**< what dst held (zero: nothing) */
	aptix_oid new_id;	/**< what it holds now (or would) */
	aptix_xfer_status status;
} aptix_xfer_update;

typedef struct {
	aptix_xfer_update *updates;
	size_t n, alloc;
	size_t objects;		/**< objects sent (push) or received */
	size_t bytes;		/**< their stored bytes */
	size_t asked;		/**< ids asked about ("do you have") */
	size_t round_trips;	/**< batches of objects written */
} aptix_xfer_result;

#define APTIX_XFER_RESULT_INIT { NULL, 0, 0, 0, 0, 0, 0 }
APTIX_EXTERN(void) aptix_xfer_result_release(aptix_xfer_result *res);
/** @brief 1 when an update of res was rejected. */
APTIX_EXTERN(int) aptix_xfer_rejected(const aptix_xfer_result *res);

enum aptix_push_flags {
	/** push a conversation rejected as moved on both sides as a
	 *  new conversation <conv>-fork-<8 hex of its head> there */
	APTIX_PUSH_FORK = (1 << 0),
	/** write objects one statement an object (for measurement) */
	APTIX_PUSH_ROW_BY_ROW = (1 << 1),
};

/**
 * @brief Push convs (conversation ids; n 0: every conversation of repo)
 *        to rem. The ref updates are one transaction: all of them or
 *        none. Rejected ones are in res with their reason.
 * @return 0 (see res for rejections: aptix_xfer_rejected()); a store
 *         or connection error.
 */
APTIX_EXTERN(int) aptix_remote_push(aptix_xfer_result *res, aptix_repo *repo,
				    aptix_remote *rem,
				    const char *const *convs, size_t n,
				    unsigned flags);
/**
 * @brief Bring rem's conversations into refs/remotes/<remote>/<conv>
 *        (rem opened by name). A fetch with nothing new reads only the
 *        refs of both sides.
 */
APTIX_EXTERN(int) aptix_remote_fetch(aptix_xfer_result *res, aptix_repo *repo,
				     aptix_remote *rem);
/**
 * @brief A new store in dir (as aptix_repo_init()) with the remote
 *        "origin" at url (org's rows), fetched, each of its
 *        conversations made a conversation here, HEAD on the remote's.
 */
APTIX_EXTERN(int) aptix_remote_clone(aptix_repo **out, aptix_xfer_result *res,
				     const char *url, const char *org,
				     const char *dir);

#endif
