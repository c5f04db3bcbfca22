/*
 * serve/events.h - the store's ref updates as a stream of Server-Sent
 * Events for `aptix serve`'s page (GET /api/events): one thread watches
 * the store (aptix/watch.h: announced by a PostgreSQL store, polled on
 * another while someone listens) and appends each change to a log that
 * every subscriber reads from where it is.
 *
 * Events:
 *   hello  {live: bool}          first, to each subscriber: whether the
 *                                store announces its updates (true) or
 *                                they are polled
 *   ref    {ref, value, conversation?}
 *                                a ref moved (value null: deleted;
 *                                conversation: the id, for a ref of one)
 *   error  {message}             the watch failed; it is started again
 */
#ifndef APTIX_SERVE_EVENTS_H
#define APTIX_SERVE_EVENTS_H

#include <sys/types.h>
#include <aptix.h>

struct events;
struct events_sub;

/* Start the watching thread over repo (borrowed). */
int events_start(struct events **out, aptix_repo *repo);
/* Stop it: every subscriber's stream then ends. */
void events_stop(struct events *ev);

struct events_sub *events_subscribe(struct events *ev);
/*
 * Up to max bytes of the events that came (the hello first), waiting up
 * to keepalive_ms for one: a comment line when none came, 0 when the
 * server stops.
 */
size_t events_read(struct events_sub *s, char *buf, size_t max,
		   long keepalive_ms);
void events_unsubscribe(struct events_sub *s);

#endif
