/*
 * aptix.h - libaptix, the library under the aptix command.
 *
 * aptix keeps the history of AI coding-agent sessions the way git keeps
 * source history: every turn of a conversation is committed as an
 * immutable snapshot, named by the SHA-256 of its content, zlib-compressed
 * and indexed in LMDB, each snapshot pointing at its parent.
 *
 * Conventions: functions return 0 or a negative aptix_error_code and
 * record a message (aptix_error_last()); they never print or exit.
 * Out-parameters come first; what _new/_open returns is freed with the
 * matching _free, which accepts NULL.
 *
 * Caveats:
 *  - Objects are immutable; an id is the SHA-256 of the uncompressed
 *    "<type> <size>\0" header and content.
 *  - Do not share a repository handle across fork(): open it again in
 *    the child (an LMDB rule).
 *  - Do not put a store on a network file system (an LMDB rule).
 *  - One writer at a time per store; readers never wait for it. Write
 *    transactions are short: never hold one across a network call.
 */
#ifndef APTIX_H
#define APTIX_H

#include "aptix/common.h"
#include "aptix/errors.h"
#include "aptix/buf.h"
#include "aptix/oid.h"
#include "aptix/object.h"
#include "aptix/odb.h"
#include "aptix/repo.h"
#include "aptix/refs.h"
#include "aptix/index.h"
#include "aptix/revparse.h"
#include "aptix/config.h"
#include "aptix/context.h"
#include "aptix/openai.h"
#include "aptix/run.h"
#include "aptix/workspace.h"
#include "aptix/rag.h"

#endif
