/*
 * src/object/object.h - objects, internal to the library.
 */
#ifndef APTIX_SRC_OBJECT_H
#define APTIX_SRC_OBJECT_H

#include "aptix/object.h"

/* A copy of n ids (NULL for none); *bad set when out of memory. */
aptix_oid *aptix__oids_dup(const aptix_oid *v, size_t n, int *bad);
/* A deep copy of src into dst (released with aptix_turn_release). */
int aptix__turn_copy(aptix_turn *dst, const aptix_turn *src);
/* Parsers of stored objects that skip the canonical check (object.c). */
int aptix__turn_parse_trusted(aptix_turn *out, const void *data, size_t len);
int aptix__session_parse_trusted(aptix_session *out, const void *data,
				 size_t len);

#include "aptix/toolcall.h"

/* The index of the call (result) that has call_id among v[0..n-1], or n. */
size_t aptix__tool_call_index(const aptix_tool_call *v, size_t n,
			      const char *call_id);
size_t aptix__tool_result_index(const aptix_tool_result *v, size_t n,
				const char *call_id);

#endif
