#!/bin/sh
test_description='hostile content: names, paths, escapes, huge and NUL-laden input

Object ids and ref names made of shell and terminal metacharacters are
refused cleanly (no crash, nothing run, nothing written, no escape
sequence echoed to the terminal). Paths of chunks and files written
through write-turn with "../", escape sequences and line feeds print
quoted as git quotes paths, so they forge no line and drive no
terminal. Escape sequences
in an answer (the stand-in echoes the instruction) are kept byte for
byte and printed raw to a pipe, made harmless on a terminal (script(1)
gives one). An instruction of 20 MiB goes through and its blob is stored
once; an instruction with NUL bytes is kept faithfully.'
. "$(dirname "$0")"/test-lib.sh
. "$TEST_DIRECTORY"/lib-standin.sh

if ! test_have_prereq PYTHON3
then
	skip_all='python3 is needed to run the OpenAI stand-in'
	test_done
fi

ESC=$(printf '\033')
BEL=$(printf '\007')
CSI8=$(printf '\302\233')	# U+009B, the 8-bit CSI, in UTF-8
OSC_TITLE="${ESC}]0;PWNED${BEL}"
CLEAR="${ESC}[2J"

# no_raw_controls <file>: no ESC, BEL or UTF-8 C1 control in the file
no_raw_controls () {
	if grep -q -F -e "$ESC" -e "$BEL" -e "$CSI8" "$1"
	then
		echo "raw control characters in $1:" >&2
		cat -A "$1" >&2
		return 1
	fi
}

# on_tty <file> <command>...: run the command with a terminal as
# stdout (script(1)); what it printed goes to file
on_tty () {
	local out=$1
	shift
	script -qec "$*" /dev/null >"$out" </dev/null
}

test_lazy_prereq TTY '
	script -qec "test -t 1" /dev/null </dev/null
'

test_expect_success 'setup' '
	aptix init &&
	start_standin &&
	aptix continue -q -m "a first turn" >/dev/null &&
	head=$(aptix rev-parse HEAD)
'

test_expect_success 'names with metacharacters are refused cleanly' '
	cat >names <<-EOF &&
	\$(touch pwned)
	\`touch pwned\`
	HEAD;touch pwned
	HEAD && touch pwned
	HEAD|touch pwned
	../../../etc/passwd
	refs/../../x
	refs/a b
	-rf
	--help=x
	HEAD~1;x
	${OSC_TITLE}x
	refs/${CLEAR}x
	refs/x${CSI8}31m
	a${ESC}[31mred
	0fef${ESC}c
	EOF
	printf "HEAD\\nrefs/forged\\n" >name-nl &&
	requests=$(request_count) &&
	while read -r name
	do
		for cmd in rev-parse "cat-object -p" "cat-object -t" show \
			"log -n 1" "reflog"
		do
			# shellcheck disable=SC2086
			test_must_fail aptix $cmd "$name" >out 2>err &&
			no_raw_controls err &&
			no_raw_controls out || return 1
		done &&
		test_must_fail aptix update-ref "$name" "$head" 2>err &&
		no_raw_controls err &&
		test_must_fail aptix update-ref "refs/ok/$name" "$head" 2>err &&
		no_raw_controls err &&
		test_must_fail aptix symbolic-ref HEAD "$name" 2>err &&
		no_raw_controls err &&
		test_must_fail aptix continue --conversation "$name" -m x 2>err &&
		no_raw_controls err &&
		test_must_fail aptix switch "$name" 2>err &&
		no_raw_controls err || return 1
	done <names &&
	test_must_fail aptix rev-parse "$(cat name-nl)" 2>err &&
	test_must_fail aptix update-ref "$(cat name-nl)" "$head" 2>err &&
	test_path_is_missing pwned &&
	test "$(request_count)" = "$requests" &&
	aptix for-each-ref >refs &&
	! grep -v "refs/conversations/" refs &&
	test "$(aptix rev-parse HEAD)" = "$head" &&
	aptix fsck
'

test_expect_success 'a conversation id that would make a bad ref name is refused' '
	requests=$(request_count) &&
	for id in "a." "a..b" "x.lock" ".a" "-a" "a/b" \
		"$(printf "%065d" 0)"
	do
		test_must_fail aptix continue --conversation "$id" -m "bad id" \
			2>err &&
		grep "invalid conversation id" err || return 1
	done &&
	test "$(request_count)" = "$requests" &&
	aptix status --json | json_field .running >running &&
	test "$(cat running)" = "[]"
'

test_expect_success 'hostile paths in a turn (write-turn JSON)' '
	blob=$(printf "hostile paths" | aptix hash-object -w --stdin) &&
	sha=$(printf x | sha256sum | cut -c1-64) &&
	cat >turn.json <<-EOF &&
	{"conversation":"hostile","seq":1,"status":"completed",
	 "instruction":"$blob","answer":"$blob",
	 "chunks":[
	  {"chunk_id":"6f1c2a9e-1b2c-4d3e-8f90-123456789abc","content_hash":"$sha",
	   "end_line":2,"path":"../../etc/passwd","score_micro":1,"sent":true,
	   "start_line":1},
	  {"chunk_id":"6f1c2a9e-1b2c-4d3e-8f90-123456789abd","content_hash":"$sha",
	   "end_line":2,"path":"a\\u001b]0;PWNED\\u0007b\\u001b[2J","score_micro":1,
	   "sent":false,"start_line":1}],
	 "files":[
	  {"binary":false,"path":"line1\\nSources: forged","sent":true,"sha256":"$sha",
	   "size":1,"too_large":false,"touched":false},
	  {"binary":false,"path":"c1\\u009b31mred\\rcr","sent":true,"sha256":"$sha",
	   "size":1,"too_large":false,"touched":false}]}
	EOF
	turn=$(aptix write-turn -F turn.json) &&
	session=$(aptix commit-session "$turn") &&
	aptix show "$session" >show.out &&
	aptix cat-object -p "$turn" >pretty.out &&
	cat -A show.out pretty.out &&
	# quoted as git quotes paths, to a pipe too: no line is forged by a
	# line feed in a path, no terminal driven by an escape
	no_raw_controls show.out &&
	no_raw_controls pretty.out &&
	! grep "^Sources: forged" show.out pretty.out &&
	grep -F "\"line1\\nSources: forged\"" show.out &&
	grep -F "\"line1\\nSources: forged\"" pretty.out &&
	grep -F "\"c1\\302\\23331mred\\rcr\"" show.out &&
	grep -F "\"a\\033]0;PWNED\\ab\\033[2J\":1-2" show.out &&
	grep -F "\"a\\033]0;PWNED\\ab\\033[2J\":1-2" pretty.out &&
	grep -F "../../etc/passwd:1-2" show.out &&
	# JSON keeps every byte
	aptix show --json "$session" >show.json &&
	python3 -c "
import json, sys
s = json.load(open(\"show.json\"))
paths = [c[\"path\"] for c in s[\"sources\"]] + [f[\"path\"] for f in s[\"files\"]]
want = [\"../../etc/passwd\", \"a\\x1b]0;PWNED\\x07b\\x1b[2J\",
        \"line1\\nSources: forged\", \"c1\\x9b31mred\\rcr\"]
assert paths == want, paths
" &&
	aptix fsck
'

test_expect_success TTY 'hostile paths are harmless on a terminal' '
	on_tty show.tty aptix show "$session" &&
	on_tty pretty.tty aptix cat-object -p "$turn" &&
	cat -A show.tty &&
	no_raw_controls show.tty &&
	no_raw_controls pretty.tty &&
	! grep "^Sources: forged" show.tty pretty.tty &&
	grep -F "\"a\\033]0;PWNED\\ab\\033[2J\"" show.tty &&
	grep -F "\"c1\\302\\23331mred" show.tty
'

instr="hostile ${OSC_TITLE} ${CLEAR} ${ESC}[31mred${ESC}[0m ${CSI8}31mC1"

test_expect_success 'escape sequences in an answer are kept and printed raw to a pipe' '
	aptix continue -m "$instr" >answer.out &&
	grep -F "$OSC_TITLE" answer.out &&
	grep -F "$CLEAR" answer.out &&
	grep -F "$CSI8" answer.out &&
	esc_session=$(aptix rev-parse HEAD) &&
	aptix show "$esc_session" >show.out &&
	test "$(grep -c -F "$OSC_TITLE" show.out)" = 2 &&
	aptix show --json "$esc_session" >show.json &&
	test "$(json_field .instruction <show.json)" = "$instr" &&
	json_field .answer <show.json >answer &&
	grep -F "$OSC_TITLE $CLEAR" answer &&
	aptix log -n 1 --format="%s" >log.out &&
	cat -A log.out
'

test_expect_success TTY 'escape sequences are harmless on a terminal' '
	on_tty cont.tty aptix continue -m "\"$instr again\"" &&
	on_tty show.tty aptix show &&
	on_tty log.tty aptix log --no-pager -n 3 &&
	on_tty logf.tty aptix log --no-pager -n 3 --format=%s &&
	on_tty status.tty aptix status &&
	on_tty sessions.tty aptix sessions &&
	answer_blob=$(aptix show --json | json_field .answer_id) &&
	on_tty blob.tty aptix cat-object -p "$answer_blob" &&
	for f in cont.tty show.tty log.tty logf.tty status.tty sessions.tty blob.tty
	do
		cat -A "$f" &&
		if grep -q -F -e "$OSC_TITLE" -e "$CLEAR" -e "$CSI8" -e "$BEL" "$f"
		then
			echo "a hostile sequence reached the terminal in $f" >&2 &&
			return 1
		fi || return 1
	done &&
	grep -F "^[]0;PWNED^G" show.tty &&
	grep -F "^[]0;PWNED^G" cont.tty
'

test_expect_success 'an instruction of 20 MiB goes through; its blob is stored once' '
	# seeded: random base64 holds a credential now and then (an AWS
	# key id, a JWT...), which is refused; this text holds none
	python3 -c "
import base64, random
r = random.Random(20)
with open(\"big\", \"w\") as f:
    for i in range(20):
        f.write(base64.b64encode(r.randbytes(786432)).decode()[:1048575] + (\"\\n\" if i < 19 else \"-\"))
" &&
	aptix credscan --count big >count &&
	grep "^1 files, 0 holding a credential" count &&
	test "$(wc -c <big)" = 20971520 &&
	before=$(wc -c <.aptix/data.mdb) &&
	aptix continue -q -F big >big.out &&
	after=$(wc -c <.aptix/data.mdb) &&
	id=$(aptix hash-object big) &&
	test "$(aptix show --json | json_field .instruction_id)" = "$id" &&
	aptix cat-object blob "$id" >back &&
	test_cmp_bin big back &&
	aptix cat-object --batch-check --batch-all-objects >objects &&
	test "$(grep -c " 20971520\$" objects)" = 1 &&
	# (the raw request, kept by design, holds the text a second time)
	echo "the store grew by $(((after - before) >> 20)) MiB" &&
	aptix log -n 1 --oneline >/dev/null &&
	aptix hash-object -w big &&
	test "$(wc -c <.aptix/data.mdb)" = "$after" &&
	aptix fsck --full
'

# Either answer is fine (the issue asks to check which one): refused
# with a clear message before anything is stored or sent, or kept byte
# for byte. The summaries of log never show a NUL.
test_expect_success 'an instruction with NUL bytes: refused clearly or kept faithfully' '
	printf "before\000after\000" >nul &&
	id=$(aptix hash-object nul) &&
	requests=$(request_count) &&
	head=$(aptix rev-parse HEAD) &&
	if aptix continue -q -F nul >nul.out 2>nul.err
	then
		echo "kept faithfully" >nul.result &&
		test "$(aptix show --json | json_field .instruction_id)" = "$id" &&
		aptix cat-object blob "$id" >back &&
		test_cmp_bin nul back &&
		aptix log -n 1 --format="%s" >log.out &&
		! tr -d "\n" <log.out | od -An -c | grep -F "\0"
	else
		echo "refused: $(cat nul.err)" >nul.result &&
		test_expect_code 128 aptix continue -q -F nul 2>nul.err &&
		grep "NUL" nul.err &&
		test_must_fail aptix cat-object -e "$id" &&
		test "$(request_count)" = "$requests" &&
		test "$(aptix rev-parse HEAD)" = "$head" &&
		printf "from stdin\000too" >nul2 &&
		test_expect_code 128 aptix continue -q -F - <nul2 2>nul.err &&
		grep "NUL" nul.err
	fi &&
	printf "# t7006: an instruction with NUL bytes is %s\n" "$(cat nul.result)" >&9 &&
	aptix fsck --full
'

test_expect_success 'NUL in the JSON of write-turn is refused with a message' '
	blob=$(printf x | aptix hash-object -w --stdin) &&
	printf "{\"conversation\":\"c1\",\"seq\":1,\"status\":\"pending\",\"instruction\":\"%s\",\"model\":\"a\\\\u0000b\"}" "$blob" >nul.json &&
	test_must_fail aptix write-turn -F nul.json 2>err &&
	grep "u0000" err
'

test_done
