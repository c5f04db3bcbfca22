/*
 * aptix/sys/claims_backend.h - the running-turn claims of a storage
 * backend (aptix/sys/backend.h).
 *
 * While a turn waits on the network its conversation is claimed: one
 * claim a conversation, a record (JSON, objects-format.md, "Running
 * claims") that names the holder, the pending turn and its lease. The
 * library decides whether a holder is alive (its process, its lease's
 * expiry); the backend keeps the records and makes each change a
 * compare-and-swap on the record, so that two hosts never both take a
 * claim, and a renewal never revives a claim that was stolen
 * (PostgreSQL: a lease row, INSERT ... ON CONFLICT DO NOTHING, UPDATE or
 * DELETE ... WHERE record = $old).
 */
#ifndef APTIX_SYS_CLAIMS_BACKEND_H
#define APTIX_SYS_CLAIMS_BACKEND_H

#include "backend.h"

#define APTIX_CLAIMS_BACKEND_VERSION 1

typedef struct aptix_claims_backend {
	unsigned version;		/**< APTIX_CLAIMS_BACKEND_VERSION */
	/** conv's claim into out; tx NULL: last commit. ENOTFOUND. */
	int (*lookup)(aptix_buf *out, struct aptix_claims_backend *b,
		      aptix_backend_txn *tx, const char *conv);
	/** Every claim, ascending by conversation: cb(conv, len, rec, len). */
	int (*iterate)(struct aptix_claims_backend *b,
		       aptix_backend_record_cb cb, void *payload);
	/** Inside tx: claim conv; APTIX_EEXISTS when it is claimed. */
	int (*acquire)(struct aptix_claims_backend *b, aptix_backend_txn *tx,
		       const char *conv, const char *record);
	/**
	 * Inside tx: replace the claim that holds exactly old by record
	 * (a lease renewed, a dead holder's claim taken over).
	 * APTIX_EMISMATCH when it holds another, APTIX_ENOTFOUND when
	 * conv is not claimed; nothing written then.
	 */
	int (*replace)(struct aptix_claims_backend *b, aptix_backend_txn *tx,
		       const char *conv, const char *old, const char *record);
	/** Inside tx: drop the claim that holds exactly old (as replace). */
	int (*release)(struct aptix_claims_backend *b, aptix_backend_txn *tx,
		       const char *conv, const char *old);
} aptix_claims_backend;

#endif
