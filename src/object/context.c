/*
 * src/object/context.c - the file and chunk sets of aptix/context.h: their
 * life cycle and warnings. Planning and rendering (what a turn sends)
 * live in src/turn/context-plan.c.
 */
#include "util/common.h"
#include "aptix/context.h"

const char *aptix_file_action_name(aptix_file_action a)
{
	switch (a) {
	case APTIX_FILE_SEND:
		return "send";
	case APTIX_FILE_UNCHANGED:
		return "unchanged";
	case APTIX_FILE_TOO_LARGE:
		return "too large";
	case APTIX_FILE_BINARY:
		return "binary";
	case APTIX_FILE_UNREADABLE:
		return "unreadable";
	case APTIX_FILE_OVER_BUDGET:
		return "over budget";
	case APTIX_FILE_WITHHELD:
		return "withheld";
	}
	return "unknown";
}

void aptix_file_set_init(aptix_file_set *s)
{
	memset(s, 0, sizeof(*s));
}

void aptix_file_set_release(aptix_file_set *s)
{
	size_t i;

	if (!s)
		return;
	for (i = 0; i < s->n; i++) {
		free(s->v[i].path);
		free(s->v[i].note);
		aptix_buf_release(&s->v[i].content);
	}
	free(s->v);
	aptix__strv_clear(&s->warnings, &s->nwarnings);
	free(s->worktree.commit);
	free(s->worktree.branch);
	free(s->worktree.remote);
	memset(s, 0, sizeof(*s));
}

void aptix_chunk_set_init(aptix_chunk_set *s)
{
	memset(s, 0, sizeof(*s));
}

void aptix_chunk_set_release(aptix_chunk_set *s)
{
	size_t i;

	if (!s)
		return;
	for (i = 0; i < s->n; i++) {
		aptix_rag_chunk *c = &s->v[i];

		free(c->chunk_id);
		free(c->repo);
		free(c->path);
		free(c->language);
		aptix_buf_release(&c->text);
	}
	free(s->v);
	aptix__strv_clear(&s->warnings, &s->nwarnings);
	memset(s, 0, sizeof(*s));
}

/* A set's warning: one more line of its warnings, formatted. */
#define SET_WARN(name, T)						\
	int name(T *s, const char *fmt, ...)				\
	{								\
		va_list ap;						\
		int r;							\
									\
		APTIX_ASSERT_ARG(s && fmt);				\
		va_start(ap, fmt);					\
		r = aptix__strv_vpushf(&s->warnings, &s->nwarnings,	\
				       fmt, ap);			\
		va_end(ap);						\
		return r;						\
	}

SET_WARN(aptix_file_set_warn, aptix_file_set)
SET_WARN(aptix_chunk_set_warn, aptix_chunk_set)
