#!/bin/sh
# shellcheck disable=SC2034 # test_description is read by test-lib.sh
test_description='aptix continue: the active files of a real git work tree

End to end against the OpenAI stand-in: a dirty file is sent on the first
turn, left out while it is unchanged, sent again after an edit; files over
files.max-size and binary files are skipped with a warning; --file,
--files-from and --no-files; bad names; everything sent again after a
chain restart; a fork sends what its ancestry had not sent. The file refs
recorded on each turn agree with the request bodies the stand-in received,
and the contents are stored once.'
. "$(dirname "$0")"/test-lib.sh
. "$TEST_DIRECTORY"/lib-standin.sh

if ! test_have_prereq PYTHON3 || ! test_have_prereq GIT || ! test_have_prereq JQ
then
	skip_all='python3 (for the stand-in), git and jq are needed'
	test_done
fi

# msg <n>: the text of the last input message of the n-th request (the
# one carrying the files and the instruction)
msg () {
	request_log "$1" | jq -r '.body.input[-1].content |
		if type == "string" then . else map(.text // "") | join("") end'
}

# files_of <rev>: "path|state|sent|sha256|touched" for each file ref of the
# turn of <rev>, as aptix show --json lists them
files_of () {
	aptix -C ws show --json "$1" | jq -r '.files[] |
		[.path, .state, (.sent | tostring), .sha256, (.touched | tostring)] |
		join("|")'
}

# field <rev> <path>: a field of aptix show --json
field () {
	aptix -C ws show --json "$1" | json_field "$2"
}

# content_of <rev> <path>: the content blob id recorded for that file
content_of () {
	aptix -C ws show --json "$1" |
	jq -r --arg p "$2" '.files[] | select(.path == $p) | .content'
}

sha () {
	sha256sum "ws/$1" | cut -d" " -f1
}

# count_objects: the objects in the store of ws
count_objects () {
	(cd ws && object_count)
}

# blobs_holding <file>: how many objects of the store have exactly the
# content of <file>
blobs_holding () {
	python3 "$TEST_DIRECTORY/lib-objects.py" \
		"$(aptix -C ws rev-parse --aptix-dir)" \
		>"$TRASH_DIRECTORY/.objects-dump" &&
	python3 - "$TRASH_DIRECTORY/.objects-dump" "$1" <<-\EOF
	import sys, zlib
	want = open(sys.argv[2], "rb").read()
	n = 0
	for line in open(sys.argv[1]):
	    v = bytes.fromhex(line.split()[1])
	    if v[0] & 0x60:	# packed, spliced (format 2) or based (3)
	        continue
	    i = 1
	    while v[i] & 0x80:
	        i += 1
	    data = v[i + 1:]
	    if not v[0] & 0x80:
	        data = zlib.decompress(data)
	    if data == want:
	        n += 1
	print(n)
	EOF
}

test_expect_success 'setup: a git work tree with a store, two dirty files' '
	start_standin &&
	git init -q ws &&
	(
		cd ws &&
		cat >main.c <<-\EOF &&
		int main(void)
		{
			return 0;
		}
		EOF
		echo "int util(void) { return 1; }" >util.c &&
		echo "int clean_helper(void) { return 2; } /* CLEAN_MARKER */" >clean.c &&
		echo "int other(void) { return 3; } /* OTHER_MARKER */" >other.c &&
		mkdir sub &&
		echo "int deep(void) { return 4; } /* DEEP_MARKER */" >sub/deep.c &&
		git add . &&
		git commit -q -m initial &&
		aptix init -q &&
		cat >main.c <<-\EOF &&
		int main(void)
		{
			/* MAIN_V1 */
			return util();
		}
		EOF
		echo "int util(void) { return 42; } /* UTIL_V1 */" >util.c
	) &&
	echo "SECRET_OUTSIDE" >outside &&
	git -C ws status --porcelain >st &&
	test_write_lines " M main.c" " M util.c" >expect &&
	test_cmp expect st
'

test_expect_success 'turn 1: both dirty files are sent, whole, with their path' '
	o0=$(count_objects) &&
	aptix -C ws continue -m "turn one" >out 2>err &&
	test "$(request_count)" = 1 &&
	msg 1 >m1 &&
	grep "^Active file main.c ($(wc -c <ws/main.c | tr -d " ") bytes, sha256 $(sha main.c | cut -c1-16)), as it is now in the working copy:$" m1 &&
	grep "^Active file util.c (" m1 &&
	grep -F "/* MAIN_V1 */" m1 &&
	grep -F "return util();" m1 &&
	grep -F "UTIL_V1" m1 &&
	# the whole file, not a diff
	grep -F "int main(void)" m1 &&
	! grep "^[-+]" m1 &&
	tail -n 2 m1 >tail &&
	test_write_lines "Instruction:" "turn one" >expect &&
	test_cmp expect tail &&
	s1=$(aptix -C ws rev-parse HEAD) &&
	r1=$(field HEAD .response_id) &&
	files_of HEAD >actual &&
	cat >expect <<-EOF &&
	main.c|sent|true|$(sha main.c)|true
	util.c|sent|true|$(sha util.c)|true
	EOF
	test_cmp expect actual &&
	o1=$(count_objects)
'

test_expect_success 'turn 2: unchanged files are not sent again' '
	aptix -C ws continue -m "turn two" >out 2>err &&
	test "$(request_count)" = 2 &&
	test "$(request_body 2 | json_field .previous_response_id)" = "$r1" &&
	msg 2 >m2 &&
	cat >expect <<-\EOF &&
	Active files unchanged since you last saw them: main.c, util.c
	Instruction:
	turn two
	EOF
	test_cmp expect m2 &&
	! grep -F MAIN_V1 m2 &&
	! grep -F UTIL_V1 m2 &&
	files_of HEAD >actual &&
	cat >expect <<-EOF &&
	main.c|unchanged|false|$(sha main.c)|true
	util.c|unchanged|false|$(sha util.c)|true
	EOF
	test_cmp expect actual &&
	s2=$(aptix -C ws rev-parse HEAD) &&
	o2=$(count_objects) &&
	d2=$((o2 - o1))
'

test_expect_success 'turn 3: an edited file is sent again, the other is not' '
	old_main=$(sha main.c) &&
	sed -e "s|MAIN_V1|MAIN_V2|" ws/main.c >main.new &&
	mv main.new ws/main.c &&
	# status tells beforehand what the turn does with each file
	aptix -C ws status --json >status.json &&
	python3 -c "
import json
print(\"\n\".join(\"%s|%s\" % (f[\"path\"], f[\"action\"])
                for f in json.load(open(\"status.json\"))[\"files\"]))
" >actual &&
	test_write_lines "main.c|send" "util.c|unchanged" >expect &&
	test_cmp expect actual &&
	aptix -C ws continue -m "turn three" >out 2>err &&
	test "$(request_count)" = 3 &&
	msg 3 >m3 &&
	grep "^Active file main.c (.*sha256 $(sha main.c | cut -c1-16))" m3 &&
	grep -F "MAIN_V2" m3 &&
	! grep -F "MAIN_V1" m3 &&
	! grep -F UTIL_V1 m3 &&
	grep "^Active files unchanged since you last saw them: util.c$" m3 &&
	files_of HEAD >actual &&
	cat >expect <<-EOF &&
	main.c|sent|true|$(sha main.c)|true
	util.c|unchanged|false|$(sha util.c)|true
	EOF
	test_cmp expect actual &&
	test "$old_main" != "$(sha main.c)" &&
	s3=$(aptix -C ws rev-parse HEAD) &&
	o3=$(count_objects) &&
	d3=$((o3 - o2))
'

test_expect_success MDB_DUMP 'file contents are blobs, stored once' '
	# the same content in turns 1, 2 and 3 is one object
	c1=$(content_of $s1 util.c) &&
	test "$c1" = "$(content_of $s2 util.c)" &&
	test "$c1" = "$(content_of $s3 util.c)" &&
	test "$c1" = "$(aptix -C ws hash-object util.c)" &&
	aptix -C ws cat-object blob "$c1" >actual &&
	test_cmp_bin ws/util.c actual &&
	test "$(blobs_holding ws/util.c)" = 1 &&
	test "$(content_of $s1 main.c)" = "$(content_of $s2 main.c)" &&
	test "$(content_of $s3 main.c)" = "$(aptix -C ws hash-object main.c)" &&
	test "$(content_of $s1 main.c)" != "$(content_of $s3 main.c)" &&
	# turn 3 stored one object more than turn 2: the new main.c
	test "$d3" = $((d2 + 1))
'

test_expect_success 'a file whose content goes back to a version sent earlier is sent' '
	sed -e "s|MAIN_V2|MAIN_V1|" ws/main.c >main.new &&
	mv main.new ws/main.c &&
	aptix -C ws continue -m "revert main" >out 2>err &&
	last_request_body >body &&
	msg "$(request_count)" >m &&
	grep -F "MAIN_V1" m &&
	grep "^Active file main.c (" m &&
	test "$(files_of HEAD | grep "^main.c|")" = "main.c|sent|true|$(sha main.c)|true" &&
	test "$(content_of HEAD main.c)" = "$(content_of $s1 main.c)"
'

test_expect_success 'a file over files.max-size is not sent; show and --json say so' '
	aptix -C ws config files.max-size 1k &&
	python3 -c "print(\"BIG_MARKER \" * 200)" >ws/big.txt &&
	size=$(wc -c <ws/big.txt | tr -d " ") &&
	test "$size" -gt 1024 &&
	# exactly the limit is not over it
	python3 -c "import sys; sys.stdout.write(\"EDGE_MARKER\" + \"e\" * 1013)" >ws/edge.txt &&
	test "$(wc -c <ws/edge.txt | tr -d " ")" = 1024 &&
	test_when_finished "rm -f ws/edge.txt" &&
	n=$(request_count) &&
	aptix -C ws continue --json -m "with a big file" >out.json 2>err &&
	test "$(request_count)" = $((n + 1)) &&
	msg $((n + 1)) >m &&
	grep "^Active file edge.txt (1024 bytes" m &&
	grep -F EDGE_MARKER m &&
	! grep "edge.txt.* too large" err &&
	! grep -F BIG_MARKER m &&
	! grep "^Active file big.txt" m &&
	grep "^Active files too large to send: big.txt$" m &&
	test "$(json_field .kind <out.json)" = answer &&
	json_field .warnings <out.json >warnings &&
	grep "big.txt.* too large to send ($size bytes, over files.max-size): skipped" warnings &&
	# never read, so not hashed: the size comes from stat
	test "$(files_of HEAD | grep "^big.txt|")" = "big.txt|too large|false||true" &&
	test "$(field HEAD .files[0].path)" = big.txt &&
	test "$(field HEAD .files[0].too_large)" = true &&
	test "$(field HEAD .files[0].content)" = null &&
	aptix -C ws show >show &&
	grep "^    big.txt .* too large" show &&
	sed -n "/^Warnings:/,\$p" show >show-warnings &&
	grep "big.txt.* too large to send ($size bytes, over files.max-size): skipped" show-warnings &&
	grep "^warning: .*big.txt.* too large" err
'

test_expect_success 'the limit follows files.max-size' '
	aptix -C ws config files.max-size 100k &&
	test_when_finished "aptix -C ws config files.max-size 1k" &&
	aptix -C ws continue -m "big is fine now" >out 2>err &&
	! grep "too large" err &&
	msg "$(request_count)" >m &&
	grep "^Active file big.txt (" m &&
	grep -F BIG_MARKER m
'

test_expect_success 'files past files.max-total are left out, named in the warnings' '
	aptix -C ws config files.max-size 100k &&
	test_when_finished "aptix -C ws config files.max-size 1k" &&
	test_when_finished "rm -f ws/log*.log" &&
	for i in 01 02 03 04 05 06 07 08 09 10 11 12 13 14 15 16 17 18 19 20
	do
		python3 -c "print(\"LOG_$i \" * 8600)" >ws/log$i.log || return 1
	done &&
	aptix -C ws status >status 2>status.err &&
	grep "^  log05.log  *over budget$" status &&
	grep "^  log01.log  *send$" status &&
	grep "log14.log.* left out: over the turn.s 262144 bytes of files (files.max-total)" status.err &&
	grep "^warning: 6 more active files (361206 bytes) left out (files.max-total)$" status.err &&
	aptix -C ws continue --dry-run -m "many logs" >dry 2>dry.err &&
	grep "log05.log.* left out.*files.max-total" dry.err &&
	grep "more active files (.* bytes) left out (files.max-total)" dry.err &&
	aptix -C ws continue --json -m "many logs" >out.json 2>err &&
	msg "$(request_count)" >m &&
	grep "^Active file log01.log (" m &&
	! grep "^Active file log05.log (" m &&
	! grep -F LOG_20 m &&
	grep "^Active files left out (over the context budget): .*log20.log" m &&
	json_field .warnings <out.json >warnings &&
	grep "active file .log05.log. (60201 bytes) left out" warnings &&
	test "$(wc -c <m)" -lt 300000 &&
	aptix -C ws config files.max-total 0 &&
	test_when_finished "aptix -C ws config --unset files.max-total" &&
	aptix -C ws status >status &&
	! grep "over budget" status
'

test_expect_success 'binary files (NUL bytes, invalid UTF-8) are skipped with a warning' '
	rm ws/big.txt &&
	printf "PNG\000BIN_MARKER\001\002" >ws/logo.png &&
	printf "caf\351 LATIN1_MARKER\n" >ws/latin1.txt &&
	n=$(request_count) &&
	aptix -C ws continue -m "with binary files" >out 2>err &&
	test "$(request_count)" = $((n + 1)) &&
	msg $((n + 1)) >m &&
	! grep -a -F BIN_MARKER m &&
	! grep -a -F LATIN1_MARKER m &&
	grep "^Active binary files, not sent: " m &&
	grep "^warning: active file .logo.png. is binary: skipped$" err &&
	grep "^warning: active file .latin1.txt. is binary: skipped$" err &&
	files_of HEAD >actual &&
	grep "^logo.png|binary|false|$(sha logo.png)|true$" actual &&
	grep "^latin1.txt|binary|false|$(sha latin1.txt)|true$" actual &&
	aptix -C ws show --json | json_field .warnings >warnings &&
	grep "logo.png. is binary" warnings &&
	rm ws/logo.png ws/latin1.txt
'

test_expect_success '--file sends a clean tracked file' '
	n=$(request_count) &&
	aptix -C ws continue --file clean.c -m "look at clean.c" >out 2>err &&
	! grep warning err &&
	msg $((n + 1)) >m &&
	grep "^Active file clean.c (" m &&
	grep -F CLEAN_MARKER m &&
	files_of HEAD >actual &&
	grep "^clean.c|sent|true|$(sha clean.c)|false$" actual
'

test_expect_success '--file again: unchanged in this chain, not sent' '
	n=$(request_count) &&
	aptix -C ws continue --file clean.c -m "clean.c again" >out 2>err &&
	msg $((n + 1)) >m &&
	! grep -F CLEAN_MARKER m &&
	grep "^Active files unchanged since you last saw them: .*clean.c" m &&
	files_of HEAD | grep "^clean.c|unchanged|false|"
'

test_expect_success '--files-from a list, and from stdin' '
	test_write_lines other.c sub/deep.c >files.list &&
	n=$(request_count) &&
	aptix -C ws continue --files-from ../files.list -m "the listed files" >out 2>err &&
	msg $((n + 1)) >m &&
	grep "^Active file other.c (" m &&
	grep "^Active file sub/deep.c (" m &&
	grep -F OTHER_MARKER m &&
	grep -F DEEP_MARKER m &&
	files_of HEAD >actual &&
	grep "^other.c|sent|true|$(sha other.c)|false$" actual &&
	grep "^sub/deep.c|sent|true|$(sha sub/deep.c)|false$" actual &&
	grep "^main.c|unchanged|" actual &&
	# a list in the work tree would be an untracked file itself: none
	! grep "files.list" actual &&
	echo "int other(void) { return 33; } /* OTHER_V2 */" >ws/other.c &&
	echo other.c | aptix -C ws continue --files-from - -m "from stdin" >out 2>err &&
	msg $((n + 2)) >m &&
	grep "^Active file other.c (" m &&
	grep -F OTHER_V2 m &&
	git -C ws checkout -q other.c
'

test_expect_success MDB_DUMP '--no-files: no file is sent nor recorded' '
	o=$(count_objects) &&
	n=$(request_count) &&
	aptix -C ws continue --no-files -m "no files please" >out 2>err &&
	test "$(request_count)" = $((n + 1)) &&
	msg $((n + 1)) >m &&
	echo "no files please" >expect &&
	test_cmp expect m &&
	files_of HEAD >actual &&
	test_must_be_empty actual &&
	# as many objects as a turn whose files were all stored already
	test $(($(count_objects) - o)) = "$d2"
'

test_expect_success 'after --no-files the chain still has the files' '
	n=$(request_count) &&
	aptix -C ws continue -m "after no files" >out 2>err &&
	msg $((n + 1)) >m &&
	grep "^Active files unchanged since you last saw them: main.c, util.c$" m &&
	! grep -F MAIN_V1 m
'

test_expect_success '--no-files --file: only the files named' '
	n=$(request_count) &&
	echo "int other(void) { return 7; } /* OTHER_NAMED */" >ws/other.c &&
	cp ws/util.c util.c.saved &&
	echo "changed /* UTIL_CHANGED */" >>ws/util.c &&
	aptix -C ws continue --no-files --file other.c -m "only other" >out 2>err &&
	msg $((n + 1)) >m &&
	grep "^Active file other.c (" m &&
	grep -F OTHER_NAMED m &&
	! grep -F UTIL_CHANGED m &&
	files_of HEAD | cut -d"|" -f1 >actual &&
	echo other.c >expect &&
	test_cmp expect actual &&
	git -C ws checkout -q other.c &&
	mv util.c.saved ws/util.c
'

test_expect_success '--file ../outside: a warning, the turn goes on' '
	n=$(request_count) &&
	aptix -C ws continue --file ../outside -m "outside" >out 2>err &&
	test "$(request_count)" = $((n + 1)) &&
	grep "^warning: path .\.\./outside. is outside the workspace" err &&
	grep "^Answer #" out &&
	! grep -F SECRET_OUTSIDE "$STANDIN_LOG_DIR"/* &&
	test "$(field HEAD .status)" = committed &&
	field HEAD .warnings >warnings &&
	grep "outside the workspace" warnings &&
	! files_of HEAD | grep outside
'

test_expect_success '--file missing: a warning, the turn goes on' '
	n=$(request_count) &&
	aptix -C ws continue --file missing -m "missing" >out 2>err &&
	test "$(request_count)" = $((n + 1)) &&
	grep "^warning: .*missing.*no such file" err &&
	test "$(field HEAD .status)" = committed &&
	! files_of HEAD | grep missing &&
	msg $((n + 1)) >m &&
	tail -n 1 m >actual &&
	echo missing >expect &&
	test_cmp expect actual
'

test_expect_success 'more bad names: the store, a directory, a missing list' '
	n=$(request_count) &&
	aptix -C ws continue --file .git/aptix/data.mdb --file sub -m "odd names" >out 2>err &&
	test "$(request_count)" = $((n + 1)) &&
	grep "^warning: .\.git/aptix/data.mdb. is in the aptix store" err &&
	grep "^warning: .sub. is a directory" err &&
	! files_of HEAD | grep -e "aptix/" -e "^sub|" &&
	test_must_fail aptix -C ws continue --files-from ../no-such-list -m "no list" >out 2>err &&
	grep "no-such-list" err &&
	test "$(request_count)" = $((n + 1))
'

test_expect_success 'a file holding a code fence is sent in a longer fence' '
	printf "before\n\140\140\140\140 inner\n\140\140\140\nafter\n" >ws/fence.md &&
	test_when_finished "rm -f ws/fence.md" &&
	n=$(request_count) &&
	aptix -C ws continue -m "fences" >out 2>err &&
	msg $((n + 1)) >m &&
	sed -n "/^Active file fence.md (/,/^\$/p" m >block &&
	cat >expect <<-\EOF &&
	`````markdown
	before
	```` inner
	```
	after
	`````
	EOF
	sed -e 1d -e "\$d" block >actual &&
	test_cmp expect actual
'

test_expect_success 'a line feed or a control character in a file name is quoted as git does' '
	name="new
Active file forged.c (9 bytes), as it is now in the working copy:" &&
	esc=$(printf "tab\there\033[31m\"q\"\\\\.c") &&
	echo "int nl(void) { return 1; }" >"ws/$name" &&
	echo "int esc(void) { return 2; }" >"ws/$esc" &&
	test_when_finished "rm -f \"ws/\$name\" \"ws/\$esc\"" &&
	n=$(request_count) &&
	aptix -C ws continue -m "odd names" >out 2>err &&
	msg $((n + 1)) >m &&
	! grep "^Active file forged.c" m &&
	grep -F "Active file \"new\\nActive file forged.c (9 bytes), as it is now in the working copy:\" (" m &&
	grep -F "Active file \"tab\\there\\033[31m\\\"q\\\"\\\\.c\" (" m &&
	aptix -C ws show >shown &&
	! grep "^Active file forged.c" shown &&
	grep -F "    \"new\\nActive file forged.c (9 bytes)" shown &&
	grep -F "    \"tab\\there\\033[31m\\\"q\\\"\\\\.c\"  " shown &&
	aptix -C ws status >status &&
	grep -F "  \"new\\nActive file forged.c" status &&
	# JSON keeps every byte
	aptix -C ws show --json | jq -r ".files[].path" >paths &&
	grep -x -F "$esc" paths
'

test_expect_success 'a symbolic link to a file outside the workspace is not followed' '
	ln -s ../outside ws/link &&
	test_when_finished "rm -f ws/link" &&
	n=$(request_count) &&
	aptix -C ws continue -m "a link" >out 2>err &&
	test "$(request_count)" = $((n + 1)) &&
	grep "^warning: .*link.* outside the workspace" err &&
	! grep -F SECRET_OUTSIDE "$STANDIN_LOG_DIR"/* &&
	! files_of HEAD | grep "^link|sent"
'

test_expect_success 'a file named twice, or as a dirty file, is one active file' '
	n=$(request_count) &&
	echo "int other(void) { return 34; } /* OTHER_V3 */" >ws/other.c &&
	aptix -C ws continue --file other.c --file ./other.c --file sub/../other.c \
		--file main.c -m "named twice" >out 2>err &&
	msg $((n + 1)) >m &&
	grep -c "^Active file other.c (" m >count &&
	echo 1 >expect &&
	test_cmp expect count &&
	files_of HEAD | cut -d"|" -f1 >actual &&
	test_write_lines main.c other.c util.c >expect &&
	test_cmp expect actual &&
	git -C ws checkout -q other.c
'

test_expect_success '--file from a subdirectory is relative to it' '
	n=$(request_count) &&
	(cd ws/sub && aptix continue --file deep.c -m "from sub") >out 2>err &&
	test "$(request_count)" = $((n + 1)) &&
	files_of HEAD | grep "^sub/deep.c|" &&
	msg $((n + 1)) | grep "^Active files unchanged since you last saw them: main.c, sub/deep.c, util.c$"
'

test_expect_success 'a failed turn did not give the model the file: the next turn sends it' '
	echo "int util(void) { return 7; } /* UTIL_V2 */" >ws/util.c &&
	aptix -C ws config openai.max-attempts 1 &&
	test_when_finished "aptix -C ws config --unset openai.max-attempts" &&
	head=$(aptix -C ws rev-parse HEAD) &&
	standin_fault "{\"kind\":\"status\",\"status\":500}" &&
	n=$(request_count) &&
	test_expect_code 1 aptix -C ws continue -m "this one fails" >out 2>err &&
	test "$(request_count)" = $((n + 1)) &&
	msg $((n + 1)) | grep -F UTIL_V2 &&
	test "$(aptix -C ws rev-parse HEAD)" = "$head" &&
	aptix -C ws continue -m "after the failure" >out 2>err &&
	msg $((n + 2)) >m &&
	grep "^Active file util.c (" m &&
	grep -F UTIL_V2 m
'

test_expect_success 'after a chain restart every active file is sent again' '
	rid=$(field HEAD .response_id) &&
	n=$(request_count) &&
	standin_fault "{\"kind\":\"expire_previous\"}" &&
	aptix -C ws continue -m "after expiry" >out 2>err &&
	test "$(request_count)" = $((n + 2)) &&
	# the chained attempt was refused...
	test "$(request_body $((n + 1)) | json_field .previous_response_id)" = "$rid" &&
	test "$(request_log $((n + 1)) | json_field .response.status)" = 400 &&
	# ...and the new chain has every active file
	request_body $((n + 2)) >body &&
	! grep previous_response_id body &&
	msg $((n + 2)) >m &&
	grep "^Active file main.c (" m &&
	grep "^Active file util.c (" m &&
	grep -F MAIN_V1 m &&
	grep -F UTIL_V2 m &&
	! grep "unchanged since" m &&
	grep "started a new chain" err &&
	test "$(field HEAD .chain_restarted)" = true &&
	files_of HEAD >actual &&
	cat >expect <<-EOF &&
	main.c|sent|true|$(sha main.c)|true
	util.c|sent|true|$(sha util.c)|true
	EOF
	test_cmp expect actual
'

test_expect_success 'the turn after the restart chains on: nothing sent again' '
	n=$(request_count) &&
	aptix -C ws continue -m "after the restart" >out 2>err &&
	msg $((n + 1)) >m &&
	grep "^Active files unchanged since you last saw them: main.c, util.c$" m &&
	! grep -F MAIN_V1 m &&
	! grep -F UTIL_V2 m
'

test_expect_success 'a fork from turn 1 sends what its ancestry had not sent' '
	# since turn 1: main.c is back to the content turn 1 sent, util.c
	# changed; new.c did not exist
	test "$(content_of HEAD main.c)" = "$(content_of $s1 main.c)" &&
	test "$(content_of HEAD util.c)" != "$(content_of $s1 util.c)" &&
	echo "int fresh(void); /* NEW_MARKER */" >ws/new.c &&
	n=$(request_count) &&
	conv=$(aptix -C ws symbolic-ref --short HEAD) &&
	aptix -C ws fork $s1 -m "fork of turn one" >out 2>err &&
	test "$(request_count)" = $((n + 1)) &&
	test "$(request_body $((n + 1)) | json_field .previous_response_id)" = "$r1" &&
	msg $((n + 1)) >m &&
	grep "^Active file util.c (" m &&
	grep -F UTIL_V2 m &&
	grep "^Active file new.c (" m &&
	grep -F NEW_MARKER m &&
	! grep "^Active file main.c" m &&
	! grep -F MAIN_V1 m &&
	grep "^Active files unchanged since you last saw them: main.c$" m &&
	test "$(field HEAD .parent)" = "$s1" &&
	files_of HEAD >actual &&
	cat >expect <<-EOF &&
	main.c|unchanged|false|$(sha main.c)|true
	new.c|sent|true|$(sha new.c)|true
	util.c|sent|true|$(sha util.c)|true
	EOF
	test_cmp expect actual &&
	# one blob for one content, across conversations
	test "$(content_of HEAD main.c)" = "$(content_of $s1 main.c)"
'

test_expect_success 'a fork from turn 2 inherits what turn 1 sent' '
	echo "int util(void) { return 42; } /* UTIL_V1 */" >ws/util.c &&
	test "$(sha util.c)" = "$(files_of $s1 | sed -n "s/^util.c|sent|true|\([0-9a-f]*\)|true$/\1/p")" &&
	n=$(request_count) &&
	aptix -C ws fork $s2 -m "fork of turn two" >out 2>err &&
	msg $((n + 1)) >m &&
	# turn 2 sent nothing itself; turn 1 had sent main.c and util.c
	grep "^Active files unchanged since you last saw them: main.c, util.c$" m &&
	grep "^Active file new.c (" m &&
	! grep -F UTIL_V1 m &&
	! grep -F MAIN_V1 m
'

test_expect_success 'the file refs of every turn agree with the request bodies' '
	aptix -C ws log --all --format=%H >sessions &&
	test_line_count -gt 15 sessions &&
	for s in $(cat sessions)
	do
		aptix -C ws show --json $s >"show-$s.json" || return 1
	done &&
	python3 - "$STANDIN_LOG_DIR" sessions <<-\EOF
	import glob, hashlib, json, os, subprocess, sys
	logs = [json.load(open(f)) for f in
	        sorted(glob.glob(os.path.join(sys.argv[1], "*-POST-v1_responses.json")))]
	by_rid = {e["response"].get("response_id"): e for e in logs
	          if e.get("response") and e["response"].get("status") == 200}
	checked = 0
	blobs = {}
	# a path as aptix writes it for the model: quoted as git quotes one
	# when it holds a control character, a quote or a backslash
	def q(p):
	    named = {7: "a", 8: "b", 9: "t", 10: "n", 11: "v", 12: "f", 13: "r",
	             0x22: "\"", 0x5c: "\\"}
	    bad = lambda o: o < 0x20 or o == 0x7f or o in named or 0x80 <= o <= 0x9f
	    if not any(bad(ord(c)) for c in p):
	        return p
	    out = ""
	    for c in p:
	        if ord(c) in named:
	            out += "\\" + named[ord(c)]
	        elif bad(ord(c)):
	            out += "".join("\\%03o" % x for x in c.encode())
	        else:
	            out += c
	    return "\"" + out + "\""
	# the path of an "Active file <path> (" line, quoted or not
	def path_of(rest):
	    if not rest.startswith("\""):
	        return rest.split(" (")[0]
	    i = 1
	    while rest[i] != "\"":
	        i += 2 if rest[i] == "\\" else 1
	    return rest[:i + 1]
	for s in open(sys.argv[2]).read().split():
	    d = json.load(open("show-%s.json" % s))
	    if d["status"] != "committed":
	        continue
	    body = by_rid[d["response_id"]]["body"]
	    msg = body["input"][-1]["content"]
	    unchanged = []
	    for line in msg.split("\n"):
	        if line.startswith("Active files unchanged since you last saw them: "):
	            unchanged = line.split(": ", 1)[1].split(", ")
	        if line.startswith("Active files left out (over the context budget): "):
	            # recorded as not sent, which show calls unchanged
	            unchanged += line.split(": ", 1)[1].split(", ")
	    for f in d["files"]:
	        blob = None
	        if f["content"]:
	            if f["content"] not in blobs:
	                blobs[f["content"]] = subprocess.run(
	                    ["aptix", "-C", "ws", "cat-object", "blob", f["content"]],
	                    capture_output=True, check=True).stdout
	            blob = blobs[f["content"]]
	        if blob is not None:
	            assert hashlib.sha256(blob).hexdigest() == f["sha256"], (s, f)
	            assert len(blob) == f["size"], (s, f)
	        head = "Active file %s (%d bytes, sha256 %s), as it is now" % (
	            q(f["path"]), f["size"], f["sha256"][:16])
	        if f["sent"]:
	            assert f["state"] == "sent", (s, f)
	            assert head in msg, (s, f, msg)
	            assert blob.decode() in msg, (s, f)
	            assert q(f["path"]) not in unchanged, (s, f)
	        else:
	            assert head not in msg, (s, f, msg)
	            assert "Active file %s (" % q(f["path"]) not in msg, (s, f)
	            if f["state"] == "unchanged":
	                assert q(f["path"]) in unchanged, (s, f, msg)
	        checked += 1
	    # every file sent in the body is recorded as sent
	    for line in msg.split("\n"):
	        if line.startswith("Active file "):
	            path = path_of(line[len("Active file "):])
	            assert [f for f in d["files"] if q(f["path"]) == path and f["sent"]], (s, line)
	assert checked > 30, checked
	EOF
'

test_expect_success 'expiry by time (openai.chain-ttl): everything is sent again' '
	aptix -C ws switch -c >/dev/null &&
	aptix -C ws config openai.chain-ttl 90s &&
	test_when_finished "aptix -C ws config --unset openai.chain-ttl" &&
	(
		test_tick &&
		aptix -C ws continue -m "ttl one" >out 2>err &&
		test_tick &&
		aptix -C ws continue -m "ttl two" >out 2>err &&
		msg "$(request_count)" >m &&
		! grep "^Active file " m &&
		test_tick &&
		test_tick &&
		n=$(request_count) &&
		aptix -C ws continue -m "ttl three" >out 2>err &&
		test "$(request_count)" = $((n + 1)) &&
		grep "^warning: the response chain expired" err &&
		msg $((n + 1)) >m &&
		grep "^Active file main.c (" m &&
		grep "^Active file util.c (" m &&
		grep "^Active file new.c (" m &&
		! grep "unchanged since" m
	)
'

test_lazy_prereq MDB_DUMP 'command -v mdb_dump'

# index_records: every record of the index tables, pieces put together
index_records () {
	python3 - "$TEST_DIRECTORY/lib-store.py" \
		"$(aptix -C ws rev-parse --aptix-dir)" <<-\EOF
	import importlib.util, sys
	spec = importlib.util.spec_from_file_location("lib_store", sys.argv[1])
	ls = importlib.util.module_from_spec(spec)
	spec.loader.exec_module(ls)
	for t in ("sessions", "conversations", "children", "timeline"):
	    for k, v in ls.table_records(sys.argv[2], t)[1]:
	        print(t, k.hex(), ls.resolve(sys.argv[2], v).hex())
	EOF
}

# A turn's commit makes its session's index record from the turn it has
# just built, not from a parse of the stored one: it must be the record
# reindex makes from the objects.
test_expect_success MDB_DUMP 'the records commits wrote are those reindex makes' '
	standin_fault "{\"kind\":\"status\",\"status\":400}" &&
	test_must_fail aptix -C ws continue -m "refused" >out 2>err &&
	index_records >before &&
	grep -c "^sessions " before >n &&
	test "$(cat n)" -gt 15 &&
	aptix -C ws reindex >out &&
	index_records >after &&
	test_cmp before after
'

test_done
