/*
 * src/history/stream.h - the streamed topological walk of every indexed
 * session (revwalk.c's push_all in APTIX_SORT_TOPOLOGICAL | TIME), read
 * from the timeline a piece at a time (stream.c).
 */
#ifndef APTIX_SRC_HISTORY_STREAM_H
#define APTIX_SRC_HISTORY_STREAM_H

#include "aptix/index.h"

struct stream;

/* 1 when the walk returns si (it is not left out), else 0. */
typedef int (*stream_keep_fn)(const aptix_session_info *si, void *payload);

/*
 * A stream of repo's sessions created at or after since (0: all) that
 * keep says to return (keep_all: it returns 1 for every one), numbered
 * from first_seq on.
 * Returns 0; 1 when the store cannot be streamed (some records are not
 * in the timeline, or a time before 1970 is in it: read it whole);
 * an error.
 */
int stream_new(struct stream **out, aptix_repo *repo, int64_t since,
	       uint32_t first_seq, stream_keep_fn keep, void *payload,
	       int keep_all);
void stream_free(struct stream *s);

/*
 * The next session: newest first, a session only after all of its
 * children the stream returns (git's --date-order). 0, APTIX_ITEROVER,
 * or an error (APTIX_ECORRUPT when parents form a cycle).
 */
int stream_next(struct stream *s);

/*
 * The session stream_next() took, its number and its parent's (or
 * APTIX_REVWALK_NONE when the stream does not return the parent).
 * Valid until the next stream_next().
 */
const aptix_session_info *stream_cur(const struct stream *s, uint32_t *seq,
				     uint32_t *parent_seq);

#endif
