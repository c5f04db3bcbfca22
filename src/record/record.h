/*
 * src/record/record.h - the recorder's internal entries (see
 * aptix/record.h; record.c).
 */
#ifndef APTIX_SRC_RECORD_H
#define APTIX_SRC_RECORD_H

#include "aptix/record.h"
#include "index/chain.h"

/*
 * aptix_record_commit() for a caller that has read the parent's
 * ancestors already (the run pipeline: its chain), so that they are not
 * read twice; chain NULL: read here.
 */
int aptix_record__commit(aptix_record_result *out, aptix_repo *repo,
			 const aptix_record_options *o,
			 struct aptix__chain *chain);
/*
 * Queue the record in tx without committing it (recovery adds the
 * release of the dead claim to the same write).
 */
int aptix_record__queue(aptix_record_result *out, aptix_txn *tx,
			aptix_repo *repo, const aptix_record_options *o,
			struct aptix__chain *chain);

/*
 * The tool calls and results of o as objects (tools.c), their ids put in
 * t's lists; parent: the parent's turn, whose calls the results may
 * answer (NULL: none known); results_stored: the claim of this turn
 * stored the results already (they are only named).
 */
int aptix__record_tools(aptix_turn *t, aptix_txn *tx,
			const aptix_record_options *o,
			const aptix_turn *parent, int results_stored);
/* Whether o's turn asks for calls that none of its results answers. */
int aptix__record_awaits(const aptix_record_options *o);

#endif
