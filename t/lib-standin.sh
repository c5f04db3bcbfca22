# shellcheck shell=bash
#
# lib-standin.sh -- run the OpenAI stand-in (t/standin/openai_standin.py)
# for end-to-end tests of the turn pipeline.
#
#	. "$TEST_DIRECTORY/lib-standin.sh"     (after test-lib.sh)
#
#	start_standin [<extra args>...]   start the stand-in (call it from a
#	                                  test body, not from a subshell); it
#	                                  logs every request under
#	                                  $TRASH_DIRECTORY/requests and
#	                                  requires the API key it exports:
#	                                  OPENAI_BASE_URL, OPENAI_API_KEY
#	                                  (sk-test-<random>), STANDIN_PORT,
#	                                  STANDIN_URL
#	stop_standin                      stop it
#	standin_fault '<json>'...         queue faults (POST /__control)
#	standin_reset                     clear the fault queue and counters
#	standin_control '<json>'          POST any control object
#	request_count                     number of POST /v1/responses logged
#	request_body <n>                  JSON body of the n-th of them (one
#	                                  line, compact, keys in order)
#	last_request_body                 ... of the last one
#	request_log <n>                   the whole log entry of the n-th
#	wait_for_requests <n> [<secs>]    poll until <n> requests are logged
#	                                  (default 10 s)
#	wait_for_exit <pid> [<secs>]      poll until our child <pid> is gone
#	child_running <pid>               the process lives (not a zombie) and
#	                                  is a child of this shell
#	start_turn <prefix> <args>...     run aptix continue <args> in the
#	                                  background, output in <prefix>.out
#	                                  and <prefix>.err, its pid in $pid
#	                                  (call it from the test body, not a
#	                                  subshell)
#	kill_children <pid>...            kill -9 and reap those of the pids
#	                                  that are still children of this
#	                                  shell (for test_when_finished: a
#	                                  reaped pid may belong to another
#	                                  process by now)
#	json_field <path>                 read JSON on stdin, print the value
#	                                  at <path> (.a.b, .list[0]): strings
#	                                  raw, null as "null", others as JSON
#	                                  (jq when there is one, else python3)
#	object_count                      number of objects in the store
#	store_text                        every record of every table of the
#	                                  store (mdb_dump -a), with objects
#	                                  inflated, as text (needs MDB_DUMP)
#
# Every helper needs the PYTHON3 prerequisite.

test_lazy_prereq MDB_DUMP 'mdb_dump -V'

STANDIN_LOG_DIR=$TRASH_DIRECTORY/requests

# Decided once: json_field runs in command substitutions, where a lazy
# prerequisite evaluated there would not be remembered.
standin_jq_=
if test_have_prereq JQ
then
	standin_jq_=t
fi

# The JSON control protocol, with curl when there is one.
standin_control () {
	if command -v curl >/dev/null 2>&1
	then
		curl -sS -f -X POST -H 'Content-Type: application/json' \
			--data-binary "$1" "$STANDIN_URL/__control"
	else
		python3 - "$STANDIN_URL/__control" "$1" <<-\EOF
		import sys, urllib.request
		req = urllib.request.Request(sys.argv[1], data=sys.argv[2].encode(),
		                             headers={"Content-Type": "application/json"})
		sys.stdout.write(urllib.request.urlopen(req, timeout=10).read().decode())
		EOF
	fi
}

start_standin () {
	local key
	key=sk-test-$(od -An -N12 -tx1 /dev/urandom | tr -d ' \n') &&
	rm -f "$TRASH_DIRECTORY/standin.port" &&
	test_start_server standin python3 "$TEST_DIRECTORY/standin/openai_standin.py" \
		--port-file "$TRASH_DIRECTORY/standin.port" \
		--log-dir "$STANDIN_LOG_DIR" --api-key "$key" "$@" &&
	test_wait_for_file "$TRASH_DIRECTORY/standin.port" 10 standin &&
	STANDIN_PORT=$(cat "$TRASH_DIRECTORY/standin.port") &&
	STANDIN_URL=http://127.0.0.1:$STANDIN_PORT &&
	OPENAI_BASE_URL=$STANDIN_URL/v1 &&
	OPENAI_API_KEY=$key &&
	export STANDIN_PORT STANDIN_URL OPENAI_BASE_URL OPENAI_API_KEY
}

stop_standin () {
	test_stop_server standin
}

# standin_fault '<fault>' ['<fault>'...]
standin_fault () {
	local IFS=,
	standin_control "{\"faults\":[$*]}" >/dev/null
}

standin_reset () {
	standin_control '{"reset":true}' >/dev/null
}

# The log files of POST /v1/responses, in order.
# (The stand-in writes them atomically: temp files are ".<name>.tmp.*".)
standin_request_files_ () {
	local f
	for f in "$STANDIN_LOG_DIR"/*-POST-v1_responses.json
	do
		test -e "$f" && printf '%s\n' "${f##*/}"
	done
	return 0
}

request_count () {
	standin_request_files_ | wc -l | tr -d ' '
}

# request_log <n>: the whole log entry of the n-th request.
request_log () {
	local f
	f=$(standin_request_files_ | sed -n "${1}p")
	if test -z "$f"
	then
		echo "request_log: no request #$1 in $STANDIN_LOG_DIR" >&2
		return 1
	fi
	cat "$STANDIN_LOG_DIR/$f"
}

# request_body <n>
request_body () {
	request_log "$1" >"$TRASH_DIRECTORY/.request_log" &&
	python3 -c '
import json, sys
entry = json.load(open(sys.argv[1]))
print(json.dumps(entry.get("body"), separators=(",", ":"), ensure_ascii=False))
' "$TRASH_DIRECTORY/.request_log"
}

last_request_body () {
	local n
	n=$(request_count) &&
	test "$n" -gt 0 &&
	request_body "$n"
}

# wait_for_requests <n> [<seconds>]
wait_for_requests () {
	local want=$1 tenths=$((${2:-10} * 10))
	while test "$(request_count)" -lt "$want"
	do
		if test "$tenths" -le 0
		then
			echo "wait_for_requests: still $(request_count) request(s), wanted $want" >&2
			return 1
		fi
		sleep 0.1
		tenths=$((tenths - 1))
	done
}

# child_running <pid>: the process lives and is a child of this shell
child_running () {
	local stat
	stat=$(cat "/proc/$1/stat" 2>/dev/null) || return 1
	stat=${stat##*) }
	# shellcheck disable=SC2086 # split the fields on purpose
	set -- $stat
	test "$1" != Z && test "$2" = "$$"
}

start_turn () {
	local prefix=$1
	shift
	aptix continue "$@" >"$prefix.out" 2>"$prefix.err" &
	pid=$!
}

kill_children () {
	local p
	for p in "$@"
	do
		if child_running "$p"
		then
			kill -9 "$p" 2>/dev/null
			wait "$p" 2>/dev/null
		fi
	done
	return 0
}

# wait_for_exit <pid> [<seconds>]
wait_for_exit () {
	local pid=$1 tenths=$((${2:-10} * 10))
	while child_running "$pid"
	do
		if test "$tenths" -le 0
		then
			echo "wait_for_exit: process $pid still runs" >&2
			return 1
		fi
		sleep 0.1
		tenths=$((tenths - 1))
	done
}

# json_field <path>
json_field () {
	if test -n "$standin_jq_"
	then
		jq -r "$1"
	else
		python3 -c '
import json, re, sys
v = json.load(sys.stdin)
# like jq: a missing key or index (or a step into null) gives null
for name, index in re.findall(r"\.([A-Za-z0-9_]+)|\[(\d+)\]", sys.argv[1]):
    if name:
        v = v.get(name) if isinstance(v, dict) else None
    else:
        i = int(index)
        v = v[i] if isinstance(v, list) and i < len(v) else None
if v is None:
    print("null")
elif isinstance(v, str):
    print(v)
elif isinstance(v, bool):
    print("true" if v else "false")
else:
    print(json.dumps(v))
' "$1"
	fi
}

# store_dir: the store of the current directory (.aptix, or the git
# directory's aptix/ in a git work tree)
store_dir () {
	aptix rev-parse --aptix-dir
}

# object_count: the records of the objects table.
object_count () {
	mdb_dump -s objects "$(store_dir)" |
	sed -e '1,/^HEADER=END$/d' -e '/^DATA=END$/d' |
	wc -l | awk '{ print $1 / 2 }'
}

# store_text: every key and value of every table, a record of the
# objects or sessions table that points into the values table put
# together from its pieces (store format 4), values of the objects table
# inflated where they inflate alone (see objects-format.md, "Storage"),
# then the content of every object as aptix reads it (packed, spliced and
# based values need aptix to be read).
store_text () {
	store_text_raw &&
	aptix cat-object --batch --batch-all-objects
}

store_text_raw () {
	mdb_dump -a "$(store_dir)" >"$TRASH_DIRECTORY/.store-dump" &&
	python3 -c '
import sys, zlib
db, pending, records = None, None, []
for line in open(sys.argv[1]):
    line = line.rstrip("\n")
    if line.startswith("database="):
        db = line[len("database="):]
    if not line.startswith(" "):
        continue
    raw = bytes.fromhex(line[1:])
    if pending is None:
        pending = raw
        continue
    records.append((db, pending, raw))
    pending = None
pieces = {k: v for db, k, v in records if db == "values"}

def varint(b, i):
    v, shift = 0, 0
    while i < len(b):
        v |= (b[i] & 0x7f) << shift
        shift += 7
        i += 1
        if not b[i - 1] & 0x80:
            return v, i
    return None, i

# a pointer: 0x00, the varint number of its first piece, the varint
# length; the pieces (2,000 bytes, the last the rest) under consecutive
# be64 numbers
def resolve(value):
    first, i = varint(value, 1)
    size, i = varint(value, i)
    if first is None or size is None or i != len(value):
        return value
    nums = range(first, first + (size + 1999) // 2000)
    out = b"".join(pieces.get(n.to_bytes(8, "big"), b"") for n in nums)
    return out if len(out) == size else value

for db, key, value in records:
    if db in ("objects", "sessions") and value[:1] == b"\0":
        value = resolve(value)
    if db == "objects" and value and not value[0] & 0x80:
        i = 1
        while i < len(value) and value[i] & 0x80:
            i += 1
        try:
            value = zlib.decompress(value[i + 1:])
        except zlib.error:
            pass
    sys.stdout.write("%s %s %s\n" % (db, key.hex(),
                     value.decode("utf-8", "replace")))
' "$TRASH_DIRECTORY/.store-dump"
}
