# shellcheck shell=bash
#
# lib-objects.sh -- build turn and session objects with plumbing only
# (hash-object -w), for tests that need sessions to point refs at.
#
#	. "$TEST_DIRECTORY/lib-objects.sh"     (after test-lib.sh)
#
#	make_blob <text>                      store "<text>\n", print its id
#	make_turn <conv> <instruction> [<seq>]
#	                                      store a completed turn, print
#	                                      its id
#	make_session <conv> <instruction> [<parent> [<seq>]]
#	                                      store a committed session (and
#	                                      its turn and instruction blob),
#	                                      print its id; the turn is
#	                                      numbered <seq>, or one more
#	                                      than its parent's
#	make_answered <conv> <instruction> <answer> [<parent> [<files-json>]]
#	                                      store a committed session whose
#	                                      turn has an answer (and files)
#	make_failed <conv> <instruction> [<parent>]
#	                                      store a failed snapshot (and
#	                                      its failed turn), print its id
#	session_field <session> <key>         print a string or number field
#	                                      of a stored turn or session
#
# Times are APTIX_TEST_DATE (see test_tick) in milliseconds, or
# 1700000000000 when the clock has not been started; so two sessions that
# differ only in time need a test_tick between them. Objects are canonical
# JSON: one line, keys sorted, a final newline. The store is the one
# aptix finds from the current directory.

# make_blob <text>
make_blob () {
	printf '%s\n' "$1" | aptix hash-object -w --stdin
}

# object_field <object> <key>: the value of "key" (a string without
# escapes, or a number) in a stored turn or session.
object_field () {
	local type
	type=$(aptix cat-object -t "$1") &&
	aptix cat-object "$type" "$1" |
	sed -n -e "s/.*\"$2\":\"\\([^\"]*\\)\".*/\\1/p" \
		-e "s/.*\"$2\":\\([0-9][0-9]*\\).*/\\1/p"
}

session_field () {
	object_field "$@"
}

# make_turn <conv> <instruction> [<seq>]
make_turn () {
	local conv=$1 text=$2 seq=${3:-1} blob ms
	ms=${APTIX_TEST_DATE:-1700000000}000
	blob=$(make_blob "$text") || return 1
	printf '{"conversation":"%s","created_at":%s,"instruction":"%s","seq":%s,"status":"completed","status_at":%s,"usage":{"cached_tokens":0,"input_tokens":0,"model_requests":0,"output_tokens":0,"reasoning_tokens":0,"total_tokens":0},"v":1}\n' \
		"$conv" "$ms" "$blob" "$seq" "$ms" |
	aptix hash-object -w -t turn --stdin
}

# make_session <conv> <instruction> [<parent> [<seq>]]
make_session () {
	local conv=$1 text=$2 parent=${3-} seq=1 want=${4-} turn ms parent_json=
	ms=${APTIX_TEST_DATE:-1700000000}000
	if test -n "$parent"
	then
		parent=$(aptix rev-parse --verify "$parent") &&
		seq=$(object_field "$(object_field "$parent" turn)" seq) &&
		seq=$((seq + 1)) &&
		parent_json="\"parent\":\"$parent\"," || return 1
	fi
	seq=${want:-$seq}
	turn=$(make_turn "$conv" "$text" "$seq") || return 1
	printf '{"conversation":"%s","created_at":%s,"metadata":{"session_type":"agent"},%s"run_summary":{"duration_ms":0,"usage":{"completion_tokens":0,"model_requests":0,"prompt_tokens":0,"total_tokens":0}},"status":"committed","turn":"%s","v":1}\n' \
		"$conv" "$ms" "$parent_json" "$turn" |
	aptix hash-object -w -t session --stdin
}

# make_answered <conv> <instruction> <answer> [<parent>] [<files-json>]:
# a committed session whose turn has an answer (and files), at the time
# of the fake clock
make_answered () {
	local seq=1 ms=${APTIX_TEST_DATE}000 ins ans turn pj='' fj=''
	if test -n "${4-}"
	then
		seq=$(object_field "$(object_field "$4" turn)" seq) &&
		seq=$((seq + 1)) &&
		pj="\"parent\":\"$4\"," || return 1
	fi
	test -n "${5-}" && fj="\"files\":$5,"
	ins=$(make_blob "$2") && ans=$(make_blob "$3") &&
	turn=$(printf '{"answer":"%s","conversation":"%s","created_at":%s,%s"instruction":"%s","model":"gpt-5-mini","seq":%s,"status":"completed","status_at":%s,"usage":{"cached_tokens":0,"input_tokens":10,"model_requests":1,"output_tokens":5,"reasoning_tokens":0,"total_tokens":15},"v":1}\n' \
		"$ans" "$1" "$ms" "$fj" "$ins" "$seq" "$ms" |
		aptix hash-object -w -t turn --stdin) &&
	printf '{"conversation":"%s","created_at":%s,"metadata":{"session_type":"agent"},%s"run_summary":{"duration_ms":0,"usage":{"completion_tokens":5,"model_requests":1,"prompt_tokens":10,"total_tokens":15}},"status":"committed","turn":"%s","v":1}\n' \
		"$1" "$ms" "$pj" "$turn" |
	aptix hash-object -w -t session --stdin
}

# make_failed <conv> <instruction> [<parent>]: a failed snapshot (no ref
# moves to it), at the time of the fake clock
make_failed () {
	local blob turn ms=${APTIX_TEST_DATE}000 parent=
	test -n "${3-}" && parent="\"parent\":\"$3\","
	blob=$(make_blob "$2") &&
	turn=$(printf '{"conversation":"%s","created_at":%s,"instruction":"%s","seq":1,"status":"failed","status_at":%s,"usage":{"cached_tokens":0,"input_tokens":0,"model_requests":0,"output_tokens":0,"reasoning_tokens":0,"total_tokens":0},"v":1}\n' \
		"$1" "$ms" "$blob" "$ms" |
		aptix hash-object -w -t turn --stdin) &&
	printf '{"conversation":"%s","created_at":%s,"metadata":{"session_type":"agent"},%s"run_summary":{"duration_ms":0,"usage":{"completion_tokens":0,"model_requests":0,"prompt_tokens":0,"total_tokens":0}},"status":"failed","turn":"%s","v":1}\n' \
		"$1" "$ms" "$parent" "$turn" |
	aptix hash-object -w -t session --stdin
}
