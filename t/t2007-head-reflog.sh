#!/bin/sh
test_description='HEAD'\''s reflog records every move, as git'\''s does

Every writer that moves HEAD'\''s conversation (continue, fork, rerun,
switch, chat, app-server turns) leaves one entry in HEAD'\''s reflog with
the ids it moved between, so that HEAD@{n} means the same thing before
and after a switch. continue --create moves HEAD to the conversation it
starts, as git switch -c does.'
. "$(dirname "$0")"/test-lib.sh
. "$TEST_DIRECTORY"/lib-standin.sh

if ! test_have_prereq PYTHON3
then
	skip_all='python3 is needed to run the OpenAI stand-in'
	test_done
fi

# reflog_msg <n>: the message of HEAD@{n}, without the id
reflog_msg () {
	aptix reflog | sed -n "$(($1 + 1))p" | sed "s/^[0-9a-f]* HEAD@{$1}: //"
}

# entries: the number of entries of HEAD's reflog
entries () {
	aptix reflog | wc -l | tr -d " "
}

test_expect_success 'setup' '
	start_standin &&
	aptix init -q
'

test_expect_success 'continue logs each turn in HEAD'\''s reflog' '
	aptix continue -q -m "first" &&
	aptix continue -q -m "second" &&
	A=$(aptix rev-parse HEAD~1) && B=$(aptix rev-parse HEAD) &&
	conv=$(aptix symbolic-ref --short HEAD) &&
	test "$(entries)" = 2 &&
	test "$(reflog_msg 0)" = "continue: second" &&
	test "$(reflog_msg 1)" = "continue: first" &&
	test "$(aptix rev-parse HEAD@{0})" = "$B" &&
	test "$(aptix rev-parse HEAD@{1})" = "$A"
'

test_expect_success 'fork: one entry, from the old head to the new one' '
	aptix fork -q "$A" -m "forked" &&
	F=$(aptix rev-parse HEAD) &&
	fconv=$(aptix symbolic-ref --short HEAD) &&
	test "$(entries)" = 3 &&
	test "$(reflog_msg 0)" = "fork: forked: moving from $conv to $fconv" &&
	test "$(aptix rev-parse HEAD@{0})" = "$F" &&
	test "$(aptix rev-parse HEAD@{1})" = "$B"
'

test_expect_success 'switch: HEAD@{n} keeps its meaning across it' '
	before=$(aptix rev-parse HEAD@{2}) &&
	aptix switch "$conv" >/dev/null &&
	test "$(entries)" = 4 &&
	test "$(aptix rev-parse HEAD@{0})" = "$B" &&
	test "$(aptix rev-parse HEAD@{1})" = "$F" &&
	test "$(aptix rev-parse HEAD@{3})" = "$before" &&
	aptix reflog >out &&
	! grep "^0000000" out
'

test_expect_success 'continue --create moves HEAD to the new conversation' '
	aptix continue --create --conversation named -m "named one" \
		>out 2>err &&
	grep "Switched to a new conversation .named." err &&
	test "$(aptix symbolic-ref --short HEAD)" = named &&
	test "$(entries)" = 5 &&
	test "$(reflog_msg 0)" = "continue: named one: moving from $conv to named" &&
	test "$(aptix rev-parse HEAD@{1})" = "$B"
'

test_expect_success 'continue --conversation of another one leaves HEAD and its reflog' '
	aptix continue -q --conversation "$conv" -m "elsewhere" &&
	test "$(aptix symbolic-ref --short HEAD)" = named &&
	test "$(entries)" = 5 &&
	aptix continue -q --create --conversation named -m "again" &&
	test "$(entries)" = 6 &&
	test "$(reflog_msg 0)" = "continue: again"
'

test_expect_success 'rerun: one entry' '
	N=$(aptix rev-parse HEAD) &&
	aptix rerun -q HEAD &&
	test "$(entries)" = 7 &&
	case "$(reflog_msg 0)" in "rerun: again: moving from named to "*) : ;; *) false ;; esac &&
	test "$(aptix rev-parse HEAD@{1})" = "$N"
'

test_expect_success 'chat turns on HEAD'\''s conversation: one entry each' '
	R=$(aptix rev-parse HEAD) &&
	echo "from chat" | aptix chat --no-rag >/dev/null 2>&1 &&
	test "$(entries)" = 8 &&
	test "$(reflog_msg 0)" = "continue: from chat" &&
	test "$(aptix rev-parse HEAD@{1})" = "$R" &&
	test "$(aptix rev-parse HEAD@{0})" = "$(aptix rev-parse HEAD)"
'

test_expect_success 'app-server turns on HEAD'\''s conversation are logged' '
	C=$(aptix rev-parse HEAD) &&
	hconv=$(aptix symbolic-ref --short HEAD) &&
	export hconv &&
	PYTHONPATH=$TEST_DIRECTORY python3 -c "
import os
from lib_jsonrpc import AppServer, check
s = AppServer()
s.request(\"turn/start\", {\"threadId\": os.environ[\"hconv\"],
                          \"input\": \"over rpc\"})
s.wait_notification(\"turn/completed\")
check(s.close() == 0, \"exit code\")
" &&
	test "$(entries)" = 9 &&
	test "$(aptix rev-parse HEAD@{1})" = "$C" &&
	test "$(aptix rev-parse HEAD@{0})" = "$(aptix rev-parse HEAD)" &&
	test "$(aptix rev-parse HEAD~1)" = "$C"
'

test_expect_success 'no entry has a zero id' '
	aptix reflog >out &&
	! grep "^0000000" out
'

# head_keys: the keys (hex) of HEAD's reflog records, oldest first
head_keys () {
	python3 "$TEST_DIRECTORY/lib-store.py" .aptix keys reflog |
	grep "^4845414400"
}

# rec <key>: the record (hex) under reflog key <key>
rec () {
	python3 "$TEST_DIRECTORY/lib-store.py" .aptix get reflog "hex:$1"
}

test_expect_success 'HEAD'\''s entry of a turn is a link to its conversation'\''s' '
	aptix continue -q -m "linked" &&
	hconv=$(aptix symbolic-ref --short HEAD) &&
	uuid=$(printf "%s" "$hconv" | tr -d -) &&
	last=$(head_keys | tail -n 1) &&
	rec "$last" >link &&
	# tag 1, a be64 time, a varint sequence, the conversation UUID:
	# 26 to 35 bytes instead of 72 and the reason
	grep "^01[0-9a-f]\{16\}[0-9a-f]*$uuid$" link &&
	test "$(wc -c <link)" -lt 72 &&
	test "$(reflog_msg 0)" = "continue: linked" &&
	aptix reflog "refs/conversations/$hconv" | sed -n 1p |
		sed "s/ [^ ]*@{0}:/:/" >conv-entry &&
	aptix reflog | sed -n 1p | sed "s/ HEAD@{0}:/:/" >head-entry &&
	test_cmp conv-entry head-entry &&
	test "$(aptix rev-parse HEAD@{0})" = "$(aptix rev-parse HEAD)" &&
	test "$(python3 "$TEST_DIRECTORY/lib-store.py" .aptix get meta format)" = 38
'

test_expect_success 'an older store'\''s full entry of HEAD reads as it is' '
	last=$(head_keys | tail -n 1) &&
	seq=$(printf "%s" "$last" | cut -c11-) &&
	next=$(printf "4845414400%016x" $((0x$seq + 1))) &&
	id=$(aptix rev-parse HEAD) &&
	python3 "$TEST_DIRECTORY/lib-store.py" .aptix put reflog "hex:$next" \
		"hex:$id${id}0000018bcfe6eea0$(printf "old: full" | od -An -tx1 | tr -d " \n")" &&
	test "$(reflog_msg 0)" = "old: full" &&
	test "$(reflog_msg 1)" = "continue: linked" &&
	python3 "$TEST_DIRECTORY/lib-store.py" .aptix del reflog "hex:$next"
'

test_expect_success 'a link to an entry that is gone is corrupt, not a crash' '
	hconv=$(aptix symbolic-ref --short HEAD) &&
	ckey=$(python3 "$TEST_DIRECTORY/lib-store.py" .aptix keys reflog |
		grep "^$(printf "refs/conversations/%s" "$hconv" |
			od -An -tx1 | tr -d " \n")00" | tail -n 1) &&
	saved=$(rec "$ckey") &&
	python3 "$TEST_DIRECTORY/lib-store.py" .aptix del reflog "hex:$ckey" &&
	test_must_fail aptix reflog >out 2>err &&
	grep "reflog of .HEAD. is corrupt" err &&
	python3 "$TEST_DIRECTORY/lib-store.py" .aptix put reflog "hex:$ckey" \
		"hex:$saved" &&
	aptix reflog >out &&
	grep "continue: linked" out
'

test_expect_success 'gc expires a link with the entry it links to' '
	aptix gc --prune=now --reflog-expire=now >out &&
	test -z "$(head_keys)" &&
	aptix reflog >out &&
	test_must_be_empty out
'

test_expect_success 'stop the stand-in' '
	stop_standin
'

test_done
