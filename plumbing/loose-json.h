/*
 * plumbing/loose-json.h - building an object's loose JSON from command
 * options, shared by write-turn and commit-session: the options are
 * merged into the JSON given on input, and the library then reads the
 * whole (aptix_turn_from_json(), aptix_session_from_json()), so every
 * message about a bad field is the library's.
 */
#ifndef APTIX_LOOSE_JSON_H
#define APTIX_LOOSE_JSON_H

#include <jansson.h>
#include <aptix.h>

/*
 * o[key] = v, taking v's reference. v NULL means a string given as
 * --opt was not valid UTF-8: that is fatal.
 */
void loose_set(json_t *o, const char *key, json_t *v, const char *opt);
/* o[key] = s when s is not NULL (given as --opt). */
void loose_str(json_t *o, const char *key, const char *s, const char *opt);
/* o[key] = the hex of id. */
void loose_oid(json_t *o, const char *key, const aptix_oid *id);
/*
 * The input as a JSON object. When it is not one, the library's parser
 * for type (a turn or a session) says why, and that is fatal.
 */
json_t *loose_load(const aptix_buf *in, aptix_otype type);
/*
 * The canonical form of the type (a turn or a session) o describes, as
 * the library reads and serializes it, into canon. Consumes o; dies
 * with the library's message when o is not a valid one.
 */
void loose_canon(aptix_buf *canon, json_t *o, aptix_otype type);

#endif
