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

#endif
