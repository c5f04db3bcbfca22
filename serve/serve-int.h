/*
 * serve/serve-int.h - what serve.c and turn.c share: the server's state
 * and the list of turns running in it.
 */
#ifndef APTIX_SERVE_INT_H
#define APTIX_SERVE_INT_H

#include <pthread.h>
#include <signal.h>
#include "serve.h"

struct serve_turn {
	struct serve *srv;
	struct serve_turn *next;	/* in srv->running */
	aptix_run *run;
	aptix_config *cfg;
	aptix_buf instruction, wsid;
	char **paths;			/* active files given by the client */
	size_t npaths;
	int files, rag, listed;
	volatile sig_atomic_t cancel;
	serve_event_fn fn;
	void *payload;
	aptix_credential_ask_cb ask;	/* NULL: credentials withheld */
	void *ask_payload;
	char conversation[APTIX_CONV_MAXLEN + 1];
	aptix_oid turn;
	const char *qdrant_key;
	char *tools;			/* the tools sent (JSON), or NULL */
	aptix_run_tool_outputs outputs;	/* tool_outputs given */
};

struct serve {
	aptix_repo *repo;
	char *workspace;	/* the default scope (NULL: every one) */
	int explicit_ws;	/* set, not derived: hide the unlabelled */
	pthread_mutex_t lock;
	pthread_cond_t changed;
	struct serve_turn *running;
	size_t nrunning;
	char **open;		/* seed 003's open sessions (ids) */
	size_t nopen, aopen;
};

/* Is a turn of conversation conv running in this server? */
int serve__busy(struct serve *s, const char *conv, aptix_oid *turn);

/* Parameters: a string member (NULL when absent or not a string). */
const char *serve__pstr(json_t *p, const char *key);
/* A boolean member: 1, 0, or def when absent; -1 when not a boolean. */
int serve__pbool(json_t *p, const char *key, int def);


#endif
