#!/bin/sh
test_description='aptix import: the git commit and branch the tools record; a store imported before they were read is not imported twice'
. "$(dirname "$0")"/test-lib.sh
. "$TEST_DIRECTORY"/lib-import.sh

if ! test_have_prereq PYTHON3
then
	skip_all='python3 reads the JSON'
	test_done
fi

FIX=$TEST_DIRECTORY/fixtures/import
CODEX=codex-01a20a30-fe75-78c1-af75-749cedb50f1c
CODEX_FORK=codex-01a20a31-1121-7e41-b774-22bab679bcc6
CODEX_TOOL=codex-01a21d63-49bd-7463-9f9d-2c58154575c0
CLAUDE=claude-b189a95a-9d44-4c3d-b3eb-57c53bbdf17b
COMMIT=469f72bde058fc9f866fa8bd01345645bfa25fb1
PARENT_FILE=rollout-2026-11-23T20-55-12-01a20a30-fe75-78c1-af75-749cedb50f1c.jsonl

# worktree <dir> <rev>: the worktree of the snapshot's turn (show --json)
worktree () {
	instore "$1" aptix show --json "$2" |
	python3 -c 'import json,sys; print(json.dumps(json.load(sys.stdin)["worktree"], sort_keys=True))'
}

# import_all <dir> [<env arguments>...]: every tool's fixtures; the new
# turn count of each import in <dir>.new
import_all () {
	local d=$1
	shift
	: >"$d.new" &&
	while read -r tool path
	do
		instore "$d" "$@" aptix import --json "$tool" "$path" >out &&
		json_field new_turn_count out >>"$d.new" || return 1
	done <<-EOF
	codex $FIX/codex-0.169
	codex $FIX/codex-0.171-toolcall
	claude $FIX/claude-code-2.1.328/projects
	gemini $FIX/gemini-cli-0.61.0
	opencode $FIX/opencode-1.18.33/opencode.db
	EOF
}

test_expect_success 'codex: each turn has the commit and branch of its session_meta' '
	aptix init -q new &&
	import_all new &&
	echo "{\"branch\": \"master\", \"commit\": \"$COMMIT\", \"dirty\": false, \"remote\": null}" >expect &&
	worktree new $CODEX >actual &&
	test_cmp expect actual &&
	worktree new $CODEX~2 >actual &&
	test_cmp expect actual &&
	worktree new $CODEX_FORK >actual &&
	test_cmp expect actual &&
	instore new aptix show $CODEX >show &&
	grep "^Work tree: *$COMMIT on master\$" show
'

test_expect_success 'codex: a session_meta with an empty git: no work tree' '
	echo null >expect &&
	worktree new $CODEX_TOOL >actual &&
	test_cmp expect actual
'

test_expect_success 'claude: the branch of the prompt, no commit' '
	echo "{\"branch\": \"master\", \"commit\": null, \"dirty\": false, \"remote\": null}" >expect &&
	worktree new $CLAUDE >actual &&
	test_cmp expect actual &&
	instore new aptix show $CLAUDE >show &&
	grep "^Work tree: *no commit recorded on master\$" show
'

test_expect_success 'a store imported without them (as aptix did): importing again adds nothing' '
	aptix init -q old &&
	import_all old env APTIX_TEST_IMPORT_NO_GIT=1 &&
	echo null >expect &&
	worktree old $CODEX >actual &&
	test_cmp expect actual &&
	snapshot_state old >before &&
	python3 "$TEST_DIRECTORY/lib-store.py" old/.aptix values imports >kbefore &&
	import_all old &&
	printf "0\n0\n0\n0\n0\n" >expect &&
	test_cmp expect old.new &&
	snapshot_state old >after &&
	test_cmp before after &&
	python3 "$TEST_DIRECTORY/lib-store.py" old/.aptix values imports >kafter &&
	test_cmp kbefore kafter
'

test_expect_success 'a grown file imported into such a store goes on from its snapshots' '
	grown_goes_on grown "$FIX/codex-0.169/$PARENT_FILE" APTIX_TEST_IMPORT_NO_GIT=1 &&
	echo "{\"branch\": \"master\", \"commit\": \"$COMMIT\", \"dirty\": false, \"remote\": null}" >expect &&
	worktree grown $CODEX >actual &&
	test_cmp expect actual &&
	echo null >expect &&
	worktree grown $CODEX~1 >actual &&
	test_cmp expect actual
'

test_done
