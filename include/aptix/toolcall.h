/*
 * aptix/toolcall.h - tool calls and their results, as objects.
 *
 * A tool call is what a model asked for: its call id, the tool's name,
 * the arguments exactly as the model produced them (a JSON text, kept
 * as a string: its bytes are what the model wrote, key order and white
 * space included) and an optional namespace. A tool result is what came
 * of one call: its status, exit code, duration, working directory and
 * argv, its stdout and stderr as blobs with their byte counts, the exact
 * output sent back to the model (a blob), whether that output was
 * truncated, and where the record comes from ("aptix" for a call
 * answered through this store, else the importer's name).
 *
 * Both are canonical JSON objects of their own type ("tool-call",
 * "tool-result"), hashed and stored like every object; a turn links the
 * calls its response asked for (tool_calls) and the results its request
 * sent (tool_results). objects-format.md, "Tool calls", specifies them.
 */
#ifndef APTIX_TOOLCALL_H
#define APTIX_TOOLCALL_H

#include "common.h"
#include "buf.h"
#include "oid.h"

/** The version of the tool-call and tool-result encodings. */
#define APTIX_TOOL_VERSION 1

/** A call the model asked for. Strings owned; NULL: absent. */
typedef struct {
	int version;
	char *call_id;		/**< the API's call_id (required) */
	char *name;		/**< the tool's name (required) */
	char *arguments;	/**< the exact JSON text (required, may be "") */
	char *ns;		/**< namespace (an MCP server...) */
	char *item_id;		/**< the output item's id ("fc_...") */
	char *kind;		/**< NULL: "function"; "custom", "local_shell" */
} aptix_tool_call;

typedef enum {
	APTIX_TOOL_OK = 0,
	APTIX_TOOL_ERROR,
	APTIX_TOOL_DENIED,
	APTIX_TOOL_CANCELLED
} aptix_tool_status;

/** "ok", "error", "denied", "cancelled". */
APTIX_EXTERN(const char *) aptix_tool_status_name(aptix_tool_status s);
/** -1 when unknown. */
APTIX_EXTERN(int) aptix_tool_status_from_name(const char *s);

/** What came of one call. Strings owned; NULL, zero ids: absent. */
typedef struct {
	int version;
	char *call_id;		/**< the call answered (required) */
	aptix_oid call;		/**< its tool-call object (zero: unknown) */
	aptix_tool_status status;
	int has_exit_code;
	int64_t exit_code;
	int64_t started_at;	/**< ms since the epoch; 0: unknown */
	int64_t duration_ms;
	char *cwd;
	char **argv;
	size_t argc;
	aptix_oid out, err;	/**< stdout, stderr blobs */
	int64_t out_bytes, err_bytes;	/**< their sizes as run */
	aptix_oid output;	/**< blob: exactly what the model was sent */
	int64_t output_bytes;
	int truncated;		/**< the output sent was cut */
	char *source;		/**< "aptix", or the importer ("codex") */
} aptix_tool_result;

APTIX_EXTERN(void) aptix_tool_call_init(aptix_tool_call *c);
APTIX_EXTERN(void) aptix_tool_call_release(aptix_tool_call *c);
/** Release n calls and free the array. Accepts NULL. */
APTIX_EXTERN(void) aptix_tool_calls_free(aptix_tool_call *v, size_t n);
APTIX_EXTERN(void) aptix_tool_result_init(aptix_tool_result *r);
APTIX_EXTERN(void) aptix_tool_result_release(aptix_tool_result *r);

/**
 * @brief Append the canonical bytes of a call (a result) to out.
 * @return 0; APTIX_EINVALID naming a missing or malformed field.
 */
APTIX_EXTERN(int) aptix_tool_call_serialize(aptix_buf *out,
					    const aptix_tool_call *c);
APTIX_EXTERN(int) aptix_tool_result_serialize(aptix_buf *out,
					      const aptix_tool_result *r);
/**
 * @brief Parse canonical bytes of a call (a result).
 * @return 0; APTIX_ECORRUPT when they are not canonical; APTIX_EVERSION
 *         when a newer aptix wrote them.
 */
APTIX_EXTERN(int) aptix_tool_call_parse(aptix_tool_call *out,
					const void *data, size_t len);
APTIX_EXTERN(int) aptix_tool_result_parse(aptix_tool_result *out,
					  const void *data, size_t len);
/**
 * @brief Build a call (a result) from loose JSON (`hash-object -t` of a
 *        hand-written object goes through the canonical parse instead).
 *        Unknown keys are refused.
 * @return 0, or APTIX_EINVALID naming the bad field.
 */
APTIX_EXTERN(int) aptix_tool_call_from_json(aptix_tool_call *out,
					    const char *json, size_t len);
APTIX_EXTERN(int) aptix_tool_result_from_json(aptix_tool_result *out,
					      const char *json, size_t len);

#endif
