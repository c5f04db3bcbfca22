/*
 * serve/acp-int.h - what serve/acp.c (the methods) and
 * serve/acp-history.c (history as session/update notifications, the
 * session list) share.
 */
#ifndef APTIX_ACP_INT_H
#define APTIX_ACP_INT_H

#include <pthread.h>
#include "acp.h"
#include "serve-int.h"

/* ACP's "resource not found": an unknown session. */
#define RPC_RESOURCE_NOT_FOUND (-32002)

/* A session this agent has open: new, loaded, resumed or forked. */
struct acp_session {
	struct acp_session *next;
	char id[APTIX_CONV_MAXLEN + 1];	/* = the conversation's id */
	char *cwd;			/* absolute, as the client gave it */
	char *workspace;		/* NULL: the server's */
	int prompting;			/* a session/prompt is running */
	int cancelled;			/* ... and session/cancel came */
};

/* A request aptix sent the client (fs/read_text_file), awaiting its answer. */
struct acp_call {
	struct acp_call *next;
	json_int_t id;
	json_t *reply;			/* the answer: {result} or {error} */
};

struct acp {
	struct serve *srv;
	struct jsonrpc *j;
	pthread_mutex_t lock;		/* sessions, calls and their fields */
	struct acp_session *sessions;
	int fs_read;			/* the client offers fs/read_text_file */
	pthread_cond_t replied;		/* a call got its answer, or eof */
	struct acp_call *calls;
	json_int_t next_id;
	int eof;			/* the client is gone: no answer comes */
};

/* What acp_replay_session() tells of one snapshot. */
enum {
	ACP_REPLAY_MESSAGES = 1 << 0,	/* user and agent message chunks */
	ACP_REPLAY_CONTEXT = 1 << 1,	/* active files, snippets */
	ACP_REPLAY_TOOLS = 1 << 2	/* the model's tool calls, results */
};

/* The notification session/update {sessionId, update}; update taken. */
void acp_update(struct acp *a, const char *sid, json_t *update);
/*
 * One snapshot as session/update notifications of session sid: what
 * says which parts. The message ids are the snapshot's ("<id>:user",
 * "<id>").
 */
int acp_replay_session(struct acp *a, const char *sid,
		       const aptix_oid *session, unsigned what);
/* The snapshots from the root down to head, oldest first, each whole. */
int acp_replay_chain(struct acp *a, const char *sid, const aptix_oid *head);
/*
 * What the turns of conversation sid from head back to its root (or to
 * a fork's start) cost, in US dollars, by aptix usage's prices
 * (price.<model>.*): 0, or -1 when a turn that spent tokens has no price.
 */
int acp_cost(double *out, struct acp *a, const char *sid,
	     const aptix_oid *head);
/* session/list {cwd, cursor} -> {sessions, nextCursor}. */
json_t *acp_list(struct acp *a, json_t *p, struct serve_err *e);
/* An absolute path of a path relative to the work tree (malloc'd). */
char *acp_abs_path(struct acp *a, const char *rel);

#endif
