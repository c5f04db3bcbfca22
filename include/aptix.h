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
 * Threads: libaptix is made for long-running, multi-threaded processes.
 *  - An aptix_repo may be shared by every thread of the process, and so
 *    may what it hands out for reading (aptix_repo_odb()). Opening a
 *    store the process has open already shares its LMDB environment;
 *    each thread reads through its own read transaction.
 *  - An aptix_run (a turn), an aptix_txn, an aptix_config and every
 *    struct the caller holds (aptix_buf, aptix_turn, sets, results) are
 *    used by one thread at a time; several runs may go on at once on
 *    one repo, each on its own conversation.
 *  - The library keeps no unlocked process-wide mutable state: the last
 *    error is per thread; OpenSSL and libcurl are loaded once (under
 *    pthread_once or a lock); digest, zlib and HTTP state is per thread
 *    and freed when the thread exits.
 *  - Signals are the caller's: the library installs no handler; a
 *    cancel flag in the options stops a network call.
 *
 * Caveats:
 *  - Objects are immutable; an id is the SHA-256 of the uncompressed
 *    "<type> <size>\0" header and content.
 *  - Do not share a repository handle across fork(): open it again in
 *    the child (an LMDB rule).
 *  - Do not put a store on a network file system (an LMDB rule).
 *  - One writer at a time per store (across threads and processes);
 *    readers never wait for it. Write transactions are short: never
 *    hold one across a network call.
 *  - Opening a store never writes; a store the user cannot write opens
 *    read-only (aptix_repo_readonly()).
 *  - Descriptors 0-2: every entry that opens a store, a lock, a
 *    store's file or a pipe first occupies a closed one with /dev/null
 *    (aptix_sanitize_stdfds() in aptix/process.h), so that a store
 *    never gets descriptor 2 and a message meant for stderr never lands
 *    in it. A program that opens files of its own before calling the
 *    library should call aptix_sanitize_stdfds() first thing.
 */
#ifndef APTIX_H
#define APTIX_H

#include "aptix/common.h"
#include "aptix/errors.h"
#include "aptix/buf.h"
#include "aptix/oid.h"
#include "aptix/oidmap.h"
#include "aptix/strlist.h"
#include "aptix/object.h"
#include "aptix/toolcall.h"
#include "aptix/odb.h"
#include "aptix/repo.h"
#include "aptix/refs.h"
#include "aptix/index.h"
#include "aptix/search.h"
#include "aptix/revparse.h"
#include "aptix/config.h"
#include "aptix/context.h"
#include "aptix/openai.h"
#include "aptix/record.h"
#include "aptix/run.h"
#include "aptix/workspace.h"
#include "aptix/credscan.h"
#include "aptix/purge.h"
#include "aptix/rag.h"
#include "aptix/history.h"
#include "aptix/revwalk.h"
#include "aptix/reach.h"
#include "aptix/gc.h"
#include "aptix/remote.h"
#include "aptix/share.h"
#include "aptix/process.h"
#include "aptix/watch.h"

#endif
