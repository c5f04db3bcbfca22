/*
 * src/config/config-keys.c - the key table (see aptix/config.h): every key
 * aptix reads, with its type, default, bounds and a line of
 * documentation. It is the one place a default or a bound is written:
 * src/config/config.c validates and reads through it, `aptix config
 * --list-keys` prints it, and README.md's table is checked against that
 * output by t/t0100-config.sh.
 *
 * Keep it sorted by name. A default is written as a user would write it
 * in a config file (t/unit/check_config.c checks that each one parses
 * and fits its bounds). Rules that tie two keys together (rag's
 * chunk-overlap below chunk-lines) stay with the code that reads both.
 */
#include "util/common.h"
#include "aptix/config.h"
#include <math.h>
#include <strings.h>

#define OPEN HUGE_VAL

#define STRING(name, dflt, flags, doc) \
	{ name, APTIX_CONFIG_STRING, dflt, 0, 0, NULL, flags, doc }
#define LONG(name, dflt, lo, hi, doc) \
	{ name, APTIX_CONFIG_LONG, dflt, lo, hi, NULL, 0, doc }
#define DOUBLE(name, dflt, lo, hi, doc) \
	{ name, APTIX_CONFIG_DOUBLE, dflt, lo, hi, NULL, 0, doc }
#define DURATION(name, dflt, doc) \
	{ name, APTIX_CONFIG_DURATION, dflt, 0, OPEN, NULL, 0, doc }
#define BOOL(name, dflt, doc) \
	{ name, APTIX_CONFIG_BOOL, dflt, 0, 0, NULL, 0, doc }
#define ENUM(name, dflt, values, doc) \
	{ name, APTIX_CONFIG_ENUM, dflt, 0, 0, values, 0, doc }
#define URL(name, dflt, doc) \
	{ name, APTIX_CONFIG_URL, dflt, 0, 0, NULL, 0, doc }

static const char *const rag_backends[] = { "local", "qdrant", NULL };
static const char *const decorations[] = {
	"auto", "short", "full", "no", NULL
};
/* the store backends this build can open a store with (repo.c) */
static const char *const storage_backends[] = {
	"lmdb", "postgresql", NULL
};

static const aptix_config_key keys[] = {
	/*
	 * 120,000 bytes (about 30,000 tokens): four times what a restart
	 * sends (window 24,000 + summary 4,000, plus files), so restarts
	 * stay rare, while every turn's input, billed on the whole chain,
	 * stays far below any current model's window and stale file
	 * versions leave the model's context within a few dozen turns.
	 */
	LONG("context.chain-max-chars", "120000", 0, OPEN,
	     "bytes a response chain may add after its first request "
	     "before the next turn starts a new one (0: no limit)"),
	LONG("context.summary-chars", "4000", 0, OPEN,
	     "characters of the summary of turns older than the window"),
	LONG("context.window-chars", "24000", 0, OPEN,
	     "characters of recent turns replayed when a chain restarts"),
	LONG("context.window-turns", "6", 0, 1000,
	     "recent turns replayed when a chain restarts"),
	STRING("core.editor", NULL, 0,
	       "the editor for an instruction when none is given on a "
	       "terminal (APTIX_EDITOR overrides; then VISUAL, EDITOR)"),
	/*
	 * Read from the store's own file only (as git's extensions.*): a
	 * store that names a backend this build lacks is refused whole.
	 */
	ENUM("extensions.storage", "lmdb", storage_backends,
	     "the backend that keeps this store's data; read from the "
	     "store's own config file only"),
	LONG("files.max-count", "500", 0, OPEN,
	     "files attached to a turn at most"),
	LONG("files.max-size", "100k", 0, OPEN,
	     "bytes of one attached file at most"),
	/*
	 * 256 KiB (about 64,000 tokens): at least two files at
	 * files.max-size, yet a quarter of the input of the smaller
	 * windows (128,000 tokens) stays free for the history, the chunks
	 * and the answer; twenty stray 60 KB logs no longer make a 1.2 MB
	 * request, billed again on every turn of the chain.
	 */
	LONG("files.max-total", "256k", 0, OPEN,
	     "bytes of active files one turn sends at most (0: no limit)"),
	/*
	 * git's gc.pruneExpire and gc.reflogExpire, in this table's
	 * spelling. Nothing a user can reach is ever deleted by time by
	 * default: reflog entries (a conversation's own history among
	 * them) expire only when gc.reflog-expire says so.
	 */
	STRING("gc.prune-expire", "2.weeks.ago", APTIX_CONFIG_NONEMPTY,
	       "gc keeps unreachable objects younger than this (a date "
	       "as --since takes it; now; never)"),
	STRING("gc.reflog-expire", "never", APTIX_CONFIG_NONEMPTY,
	       "gc deletes reflog entries older than this (a date as "
	       "--since takes it; now; never)"),
	/* git's log.decorate: names on a terminal, plain in a pipe */
	ENUM("log.decorate", "auto", decorations,
	     "name the conversations at each session in log: auto (on a "
	     "terminal), short, full or no"),
	URL("openai.base-url", "https://api.openai.com/v1",
	    "the OpenAI API (OPENAI_BASE_URL overrides)"),
	DURATION("openai.chain-ttl", "30d",
		 "how long a stored response can be chained to"),
	DURATION("openai.idle-timeout", "2m",
		 "give up on a response that sends no byte for this long"),
	STRING("openai.instructions", NULL, 0,
	       "the system prompt of every turn"),
	LONG("openai.max-attempts", "5", 1, 20,
	     "tries of a request on 429, 5xx and network errors"),
	LONG("openai.max-response", "64m", 1024, OPEN,
	     "bytes of an answer (a body or a stream) at most"),
	STRING("openai.model", "gpt-5", APTIX_CONFIG_NONEMPTY,
	       "the model of a turn (APTIX_MODEL overrides)"),
	DOUBLE("openai.temperature", NULL, 0, 2,
	       "sampling temperature; unset: not sent"),
	DURATION("openai.timeout", "10m",
		 "a whole call, retries included"),
	/*
	 * A store on PostgreSQL (extensions.storage = postgresql): where
	 * it is and whose rows it sees. Store-file keys, as the backend
	 * reads them; the URL never holds a password (init refuses one).
	 */
	STRING("postgresql.org", NULL, 0,
	       "the organisation whose rows a PostgreSQL store sees"),
	STRING("postgresql.url", NULL, 0,
	       "the libpq URL of a PostgreSQL store, without a password"),
	STRING("postgresql.user", NULL, 0,
	       "the user whose private conversations a PostgreSQL store "
	       "shows; unset: the role it logs in as"),
	ENUM("rag.backend", "local", rag_backends,
	     "where the code index lives"),
	LONG("rag.chunk-lines", "40", 1, 100000,
	     "lines of a chunk of an indexed file"),
	LONG("rag.chunk-overlap", "5", 0, 99999,
	     "lines shared by neighbouring chunks (below rag.chunk-lines)"),
	STRING("rag.collection", "aptix", APTIX_CONFIG_NONEMPTY,
	       "the Qdrant collection"),
	LONG("rag.embed-batch", "64", 1, 2048,
	     "chunks per embeddings request"),
	STRING("rag.embedding-model", "text-embedding-3-small",
	       APTIX_CONFIG_NONEMPTY, "the embeddings model"),
	STRING("rag.language", NULL, 0,
	       "retrieve only chunks of this language"),
	LONG("rag.max-file-size", "1m", 0, 1L << 30,
	     "bytes of a file to index at most"),
	STRING("rag.path-prefix", NULL, 0,
	       "retrieve only under these paths (comma-separated)"),
	STRING("rag.repo", NULL, 0,
	       "the repository name in the index; unset: the work tree's"),
	BOOL("rag.required", "false",
	     "fail a turn when retrieval fails, instead of a warning"),
	DOUBLE("rag.score-threshold", "0", -OPEN, OPEN,
	       "drop retrieved chunks scoring below this"),
	DURATION("rag.timeout", "10s",
		 "give up on retrieval after this long"),
	LONG("rag.top-k", "8", 1, 100,
	     "chunks retrieved for a turn at most"),
	/*
	 * Large objects of a store on PostgreSQL kept on S3: read by
	 * init --backend, which writes them into the shared store, where
	 * every host and every remote user finds them. The credentials
	 * are never keys: the AWS environment variables or files.
	 */
	STRING("s3.bucket", NULL, 0,
	       "the S3 bucket of a shared store's large objects"),
	STRING("s3.region", NULL, 0,
	       "its region (unset: AWS_REGION, else us-east-1)"),
	LONG("s3.threshold", "1m", 1, OPEN,
	     "stored objects of this many bytes or more go to S3"),
	STRING("s3.url", NULL, 0,
	       "the S3 endpoint (http:// or https://) of a shared store's "
	       "large objects"),
	DURATION("turn.lease", "2m",
		 "a running turn's claim is taken over when not renewed for "
		 "this long"),
	STRING("workspace.id", NULL, 0,
	       "the workspace of new conversations (APTIX_WORKSPACE "
	       "overrides); unset: the store's, recorded by init"),
};

const aptix_config_key *aptix_config_keys(size_t *n)
{
	if (n)
		*n = ARRAY_SIZE(keys);
	return keys;
}

const aptix_config_key *aptix_config_key_find(const char *key)
{
	size_t i;

	for (i = 0; key && i < ARRAY_SIZE(keys); i++)
		if (!strcasecmp(keys[i].name, key))
			return &keys[i];
	return NULL;
}

const char *aptix_config_type_name(aptix_config_type type)
{
	static const char *const names[] = {
		"string", "bool", "integer", "number", "duration", "enum",
		"url"
	};

	return (unsigned)type < ARRAY_SIZE(names) ? names[type] : "?";
}
