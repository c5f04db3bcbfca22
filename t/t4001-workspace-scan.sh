#!/bin/sh
# shellcheck disable=SC2034 # read by test-lib.sh
test_description='active files: aptix status over real git work trees

The files git reports modified, staged, untracked (not ignored), renamed
or unmerged, and those named with --file / --files-from; names with
spaces and newlines; files too large, binary, outside the workspace,
missing, in a symlink loop or deleted; thousands of dirty files against
files.max-count; what the next turn would do with each given the head
turn (send, unchanged, or everything again after a chain expired); and
a directory that is not a git work tree.'
. "$(dirname "$0")"/test-lib.sh

if ! test_have_prereq GIT
then
	# shellcheck disable=SC2034 # read by test_done
	skip_all='git is needed'
	test_done
fi

# files <dir> [<status options>]: "path|action|note" for each active
# file that `aptix status --json` run in <dir> lists (the JSON is left in
# status.json)
files () {
	local dir=$1
	shift
	(cd "$dir" && aptix status --json "$@") >status.json &&
	jq -r '.files[] | [.path, .action, (.note // "")] | join("|")' \
		status.json
}

# sha256_of <file>
sha256_of () {
	sha256sum "$1" | cut -d" " -f1
}

# head_turn <dir> <expires-at-ms> <path:sha256>...: commit, in the store
# of <dir>, a completed turn that sent these files, as the head of the
# current conversation
head_turn () {
	local dir=$1 expires=$2 files='' sep='' f
	shift 2
	for f in "$@"
	do
		files="$files$sep{\"path\":\"${f%%:*}\",\"sha256\":\"${f#*:}\",\"size\":1,\"touched\":true,\"sent\":true,\"too_large\":false,\"binary\":false}"
		sep=,
	done
	(
		cd "$dir" &&
		conv=$(aptix symbolic-ref --short HEAD) &&
		instr=$(echo q | aptix hash-object -w --stdin) &&
		turn=$(aptix write-turn --stdin <<-EOF
		{"conversation":"$conv","seq":1,"status":"completed",
		 "instruction":"$instr",
		 "created_at":${APTIX_TEST_DATE}000,"status_at":${APTIX_TEST_DATE}000,
		 "response_id":"resp_1","chain_expires_at":$expires,
		 "usage":{"input_tokens":0,"output_tokens":0,"total_tokens":0,
		          "cached_tokens":0,"reasoning_tokens":0,"model_requests":0},
		 "files":[$files]}
		EOF
		) &&
		session=$(aptix commit-session "$turn") &&
		aptix update-ref "refs/conversations/$conv" "$session"
	)
}

test_expect_success 'setup: a git work tree with a store' '
	test_tick &&
	mkdir outside &&
	echo "not yours" >outside/secret &&
	git init -q repo &&
	(
		cd repo &&
		test_write_lines "*.o" "/build/" >.gitignore &&
		echo one >modified.c &&
		echo two >staged.c &&
		echo three >old-name.c &&
		echo four >deleted.c &&
		echo five >clean.c &&
		mkdir sub &&
		echo six >sub/deep.c &&
		git add . &&
		git commit -q -m base &&
		aptix init -q
	)
'

test_expect_success 'a clean work tree: no active files, nothing printed' '
	(cd repo && aptix status) >out 2>err &&
	! grep "Active files" out &&
	test_must_be_empty err
'

test_expect_success JQ 'a clean work tree: "files" is empty' '
	(cd repo && aptix status --json) >out &&
	test "$(jq -c .files out)" = "[]" &&
	test "$(jq -c .file_warnings out)" = "[]"
'

test_expect_success 'the store is never an active file' '
	(cd repo && git status --porcelain -uall --ignored) >git-status &&
	! grep aptix git-status &&
	(cd repo && test -f "$(git rev-parse --git-common-dir)/aptix/data.mdb") &&
	(cd repo && aptix status) >out &&
	! grep aptix/ out
'

test_expect_success 'the stat cache is 0600, as the store'"'"'s other files' '
	(
		cd repo &&
		store=$(aptix rev-parse --aptix-dir) &&
		umask 022 &&
		echo cached >cached.c &&
		# older than the racy window: the stat cache keeps it
		touch -d "-1 hour" cached.c &&
		aptix status >/dev/null &&
		test -f "$store/stat-cache" &&
		test "$(stat -c %a "$store/stat-cache")" = 600 &&
		# one an older aptix left 0644 is made 0600 on the next scan
		chmod 644 "$store/stat-cache" &&
		aptix status >/dev/null &&
		test "$(stat -c %a "$store/stat-cache")" = 600 &&
		rm cached.c &&
		aptix status >/dev/null
	)
'

test_expect_success JQ 'modified, staged, untracked; not ignored nor clean' '
	(
		cd repo &&
		echo one-more >>modified.c &&
		echo two-more >>staged.c &&
		git add staged.c &&
		echo new >untracked.c &&
		echo obj >ignored.o &&
		mkdir build &&
		echo out >build/out &&
		mkdir newdir &&
		echo inner >newdir/inner.c
	) &&
	files repo >actual &&
	cat >expect <<-\EOF &&
	modified.c|send|
	newdir/inner.c|send|
	staged.c|send|
	untracked.c|send|
	EOF
	test_cmp expect actual
'

test_expect_success JQ 'path, sha256, size and touched in --json' '
	(cd repo && aptix status --json) >out &&
	jq -r ".files[] | select(.path == \"modified.c\") |
		[.sha256, .size, .touched] | map(tostring) | join(\" \")" out >actual &&
	echo "$(sha256_of repo/modified.c) 13 true" >expect &&
	test_cmp expect actual
'

test_expect_success 'the text form lists each file and its action' '
	(cd repo && aptix status) >out &&
	sed -n "/^Active files/,\$p" out >actual &&
	cat >expect <<-\EOF &&
	Active files (what the next turn does with them):
	  modified.c      send
	  newdir/inner.c  send
	  staged.c        send
	  untracked.c     send
	EOF
	test_cmp expect actual
'

test_expect_success JQ 'a rename: the new path only; a deletion: a warning' '
	(cd repo && git mv old-name.c new-name.c && rm deleted.c) &&
	files repo >actual &&
	(cd repo && aptix status) >out 2>err &&
	grep "^new-name.c|send|$" actual &&
	! grep "old-name.c" actual &&
	! grep "deleted.c" actual &&
	grep "^warning: '\''deleted.c'\'' is deleted in the work tree: not sent$" err &&
	jq -r ".file_warnings[]" status.json >warnings &&
	grep "deleted.c" warnings
'

test_expect_success JQ 'names with spaces and a newline' '
	echo sp >"repo/with space.c" &&
	printf "nl\n" >"repo/new
line.c" &&
	(cd repo && aptix status --json) >out &&
	jq -r ".files[].path" out >paths &&
	grep -x "with space.c" paths &&
	jq -e ".files[] | select(.path == \"new\\nline.c\") | .action == \"send\"" out
'

test_expect_success JQ 'from a subdirectory: paths relative to the workspace root' '
	(cd repo/sub && echo changed >deep.c && aptix status --json) >out &&
	jq -r ".files[].path" out >paths &&
	grep -x "sub/deep.c" paths &&
	grep -x "modified.c" paths
'

test_expect_success JQ 'too large: over files.max-size, not read, not sent' '
	awk "BEGIN { for (i = 0; i < 5000; i++) print \"line \" i \" of a large file\" }" >repo/large.txt &&
	files repo >actual &&
	grep "^large.txt|too large|$" actual &&
	jq -r ".files[] | select(.path == \"large.txt\") | [.size, .sha256] | map(tostring) | join(\" \")" status.json >large &&
	echo "$(wc -c <repo/large.txt | tr -d " ") null" >expect &&
	test_cmp expect large &&
	(cd repo && aptix status) >out &&
	grep "^  large.txt  *too large (1[0-9][0-9]\.[0-9] KiB)$" out
'

test_expect_success JQ 'a 20 GB sparse file is too large, from its size alone' '
	truncate -s 20G repo/sparse.img &&
	test_when_finished "rm -f repo/sparse.img" &&
	files repo >actual &&
	grep "^sparse.img|too large|$" actual &&
	jq -r ".files[] | select(.path == \"sparse.img\") | .size" status.json >size &&
	echo 21474836480 >expect &&
	test_cmp expect size &&
	(cd repo && aptix status) >out &&
	grep "^  sparse.img  *too large (20.0 GiB)$" out
'

test_expect_success JQ 'files.max-size sets the limit' '
	(cd repo && aptix config files.max-size 1m) &&
	files repo >actual &&
	grep "^large.txt|send|$" actual &&
	(cd repo && aptix config files.max-size 5) &&
	files repo >actual &&
	grep "^modified.c|too large|$" actual &&
	(cd repo && aptix config --unset files.max-size) &&
	files repo >actual &&
	grep "^large.txt|too large|$" actual
'

test_expect_success JQ 'binary: NUL bytes or invalid UTF-8' '
	printf "abc\000def" >repo/nul.bin &&
	printf "caf\351\n" >repo/latin1.txt &&
	printf "caf\303\251 \342\202\254\n" >repo/utf8.txt &&
	files repo >actual &&
	grep "^nul.bin|binary|$" actual &&
	grep "^latin1.txt|binary|$" actual &&
	grep "^utf8.txt|send|$" actual &&
	(cd repo && aptix status) >out &&
	grep "^  nul.bin  *binary$" out
'

test_expect_success JQ 'a symlink out of the workspace is not followed' '
	ln -s ../outside/secret repo/leak &&
	files repo >actual &&
	(cd repo && aptix status) >out 2>err &&
	grep "^leak|unreadable|outside the workspace$" actual &&
	grep "^  leak  *unreadable: outside the workspace$" out &&
	grep "^warning: path '\''leak'\'' is outside the workspace$" err &&
	! grep "not yours" status.json
'

test_expect_success JQ 'a symlink loop' '
	ln -s loop-b repo/loop-a &&
	ln -s loop-a repo/loop-b &&
	files repo >actual &&
	(cd repo && aptix status) >out 2>err &&
	grep "^loop-a|unreadable|symlink loop$" actual &&
	grep "^loop-b|unreadable|symlink loop$" actual &&
	grep "^warning: cannot read '\''loop-a'\'': symlink loop$" err
'

test_expect_success JQ '--file: a clean file, a missing one, one outside, a directory' '
	files repo --file clean.c --file nope.c --file ../outside/secret \
		--file sub >actual &&
	(
		cd repo &&
		aptix status --file nope.c --file ../outside/secret --file sub
	) >out 2>err &&
	grep "^clean.c|send|$" actual &&
	grep "^nope.c|unreadable|no such file$" actual &&
	grep "^../outside/secret|unreadable|outside the workspace$" actual &&
	! grep "^sub|" actual &&
	grep "^warning: cannot read '\''nope.c'\'': no such file$" err &&
	grep "^warning: path '\''../outside/secret'\'' is outside the workspace$" err &&
	grep "^warning: '\''sub'\'' is a directory: skipped$" err &&
	grep "^  nope.c  *unreadable: no such file$" out
'

test_expect_success JQ '--file is relative to the current directory' '
	(cd repo/sub && aptix status --json --file ../clean.c --file deep.c) >out &&
	jq -r ".files[].path" out >paths &&
	grep -x clean.c paths &&
	test $(grep -c -x sub/deep.c paths) = 1
'

test_expect_success JQ '--files-from a file and from stdin' '
	test_write_lines clean.c sub/deep.c "" nope.c >list &&
	files repo --files-from ../list >actual &&
	grep "^clean.c|send|$" actual &&
	grep "^nope.c|unreadable|no such file$" actual &&
	echo clean.c | files repo --files-from - >actual &&
	grep "^clean.c|send|$" actual
'

test_expect_success '--files-from a missing list: a warning, status goes on' '
	(cd repo && aptix status --files-from no-such-list) >out 2>err &&
	grep "^warning: cannot list the active files: .*no-such-list" err &&
	grep "^On conversation" out
'

test_expect_success JQ 'unmerged files are active' '
	git init -q merge &&
	(
		cd merge &&
		echo base >c.txt &&
		git add c.txt &&
		git commit -q -m base &&
		git checkout -q -b other &&
		echo other >c.txt &&
		git commit -q -a -m other &&
		git checkout -q - &&
		echo mine >c.txt &&
		git commit -q -a -m mine &&
		test_must_fail git merge -q other >/dev/null 2>&1 &&
		aptix init -q
	) &&
	files merge >actual &&
	echo "c.txt|send|" >expect &&
	test_cmp expect actual
'

test_expect_success JQ 'the head sent a file: unchanged until it changes' '
	git init -q chain &&
	(
		cd chain &&
		echo base >base &&
		git add base &&
		git commit -q -m base &&
		aptix init -q &&
		echo v1 >a.c &&
		echo s1 >b.c
	) &&
	head_turn chain $(((APTIX_TEST_DATE + 3600) * 1000)) \
		a.c:$(sha256_of chain/a.c) b.c:0000 &&
	files chain >actual &&
	cat >expect <<-\EOF &&
	a.c|unchanged|
	b.c|send|
	EOF
	test_cmp expect actual &&
	(cd chain && aptix status) >out &&
	grep "^  a.c  unchanged$" out &&
	grep "^  b.c  send$" out
'

test_expect_success JQ 'an edit makes it "send" again' '
	echo v2 >chain/a.c &&
	files chain >actual &&
	grep "^a.c|send|$" actual
'

test_expect_success JQ 'an expired chain: everything is sent again' '
	echo v1 >chain/a.c &&
	files chain >actual &&
	grep "^a.c|unchanged|$" actual &&
	head_turn chain $(((APTIX_TEST_DATE - 1) * 1000)) \
		a.c:$(sha256_of chain/a.c) &&
	files chain >actual &&
	grep "^a.c|send|$" actual
'

# snapshot <dir>: commit a turn whose files are those aptix status
# lists in <dir> now (as the head); print the session id
snapshot () {
	(
		cd "$1" &&
		conv=$(aptix symbolic-ref --short HEAD) &&
		files=$(aptix status --json | jq -c "[.files[] |
			select(.sha256 != null) | {path, sha256, size,
			touched, sent: (.action == \"send\"),
			too_large: (.action == \"too large\"),
			binary: (.action == \"binary\")}]") &&
		instr=$(echo snap | aptix hash-object -w --stdin) &&
		turn=$(aptix write-turn --stdin <<-EOF
		{"conversation":"$conv","seq":1,"status":"completed",
		 "instruction":"$instr",
		 "created_at":${APTIX_TEST_DATE}000,"status_at":${APTIX_TEST_DATE}000,
		 "usage":{"input_tokens":0,"output_tokens":0,"total_tokens":0,
		          "cached_tokens":0,"reasoning_tokens":0,"model_requests":0},
		 "files":$files}
		EOF
		) &&
		aptix commit-session "$turn"
	)
}

test_expect_success JQ 'diff of two snapshots of the work tree' '
	(cd chain && git add a.c && git commit -q -m a && echo v3 >a.c) &&
	echo keep >chain/b.c &&
	echo gone >chain/c.c &&
	s1=$(snapshot chain) &&
	old=$(sha256_of chain/a.c | cut -c1-12) &&
	echo v4 >chain/a.c &&
	rm chain/c.c &&
	echo fresh >"chain/d d.c" &&
	s2=$(snapshot chain) &&
	new=$(sha256_of chain/a.c | cut -c1-12) &&
	(cd chain && aptix diff $s1 $s2) >out &&
	sed -n "/^Files:/,/^Chunks:/p" out >actual &&
	cat >expect <<-EOF &&
	Files: 1 added, 1 removed, 1 changed
	  M a.c (sha256 $old -> $new)
	  D c.c (sha256 $(echo gone | sha256sum | cut -c1-12))
	  A d d.c (sha256 $(echo fresh | sha256sum | cut -c1-12))
	Chunks: same (0)
	EOF
	test_cmp expect actual
'

test_expect_success JQ 'thousands of dirty files: cut at files.max-count' '
	git init -q many &&
	(
		cd many &&
		echo base >base &&
		git add base &&
		git commit -q -m base &&
		aptix init -q &&
		mkdir d &&
		i=0 &&
		while test $i -lt 3000
		do
			printf "%d\n" $i >"d/f$(printf %04d $i).txt" &&
			i=$((i + 1)) || return 1
		done
	) &&
	(cd many && aptix status --json) >out &&
	(cd many && aptix status) >text 2>err &&
	test "$(jq ".files | length" out)" = 500 &&
	test "$(jq -r ".files[0].path" out)" = d/f0000.txt &&
	test "$(jq -r ".files[499].path" out)" = d/f0499.txt &&
	jq -r ".file_warnings[]" out >warnings &&
	grep -x "2500 more active files not considered (files.max-count)" warnings &&
	grep "^warning: 2500 more active files not considered (files.max-count)$" err &&
	(cd many && aptix config files.max-count 5000 && aptix status --json) >out &&
	test "$(jq ".files | length" out)" = 3000 &&
	test "$(jq -c .file_warnings out)" = "[]"
'

test_expect_success JQ 'not a git work tree: only named files' '
	mkdir plain &&
	(cd plain && aptix init -q && echo x >a.c && aptix status) >out 2>err &&
	! grep "Active files" out &&
	test_must_be_empty err &&
	files plain --file a.c >actual &&
	echo "a.c|send|" >expect &&
	test_cmp expect actual
'

test_expect_success 'no git in PATH: no active files, no error' '
	mkdir nogit &&
	ln -s "$(command -v aptix)" nogit/aptix &&
	(cd repo && PATH="$TRASH_DIRECTORY/nogit" aptix status) >out 2>err &&
	grep "^On conversation" out &&
	! grep "Active files" out &&
	test_must_be_empty err
'

test_expect_success 'status -h shows --file and --files-from' '
	test_expect_code 129 aptix status -h >out &&
	grep -e "--files-from" out &&
	grep -e "--file <path>" out
'

test_done
