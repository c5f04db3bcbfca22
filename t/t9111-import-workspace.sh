#!/bin/sh
test_description='aptix import: the workspace is the repository'"'"'s, not the path'"'"'s nor the host'"'"'s; the remote URL is kept without its credentials'
. "$(dirname "$0")"/test-lib.sh
. "$TEST_DIRECTORY"/lib-credcorpus.sh
. "$TEST_DIRECTORY"/lib-import.sh

if ! test_have_prereq PYTHON3
then
	skip_all='python3 reads the JSON'
	test_done
fi

# the Codex fixtures: a session (thread T1) and its fork
T1=01a20a30-fe75-78c1-af75-749cedb50f1c
CODEX=codex-$T1 CODEX_FORK=codex-01a20a31-1121-7e41-b774-22bab679bcc6
PARENT_FILE=rollout-2026-11-23T20-55-12-$T1.jsonl
FIX=$TEST_DIRECTORY/fixtures/import

# retarget <dir> <url or ""> [<cwd>]: the Codex fixtures in <dir>, their
# session_meta naming the repository <url> (none: "") and the directory <cwd>
retarget () {
	mkdir -p "$1" &&
	python3 - "$FIX/codex-0.169" "$@" <<-\PY
	import json, os, sys
	src, out, url = sys.argv[1], sys.argv[2], sys.argv[3]
	cwd = sys.argv[4] if len(sys.argv) > 4 else None
	for name in sorted(os.listdir(src)):
	    lines = open(os.path.join(src, name)).read().splitlines(True)
	    rec = json.loads(lines[0])
	    if url:
	        rec["payload"]["git"]["repository_url"] = url
	    lines[0] = json.dumps(rec, separators=(",", ":")) + "\n"
	    if cwd:
	        lines = [l.replace('"/home/dev/work/parser"', json.dumps(cwd))
	                 for l in lines]
	    open(os.path.join(out, name), "w").write("".join(lines))
	PY
}

# ids <dir>: every snapshot of the store, with its conversation
ids () {
	instore "$1" aptix log --all --format="%H %s" | sort
}

# field <dir> <rev> <name>: a field of show --json (worktree.remote: a path)
field () {
	instore "$1" aptix show --json "$2" |
	python3 -c 'import json,sys
v = json.load(sys.stdin)
for k in sys.argv[1].split("."):
    v = v[k] if v is not None else None
print(v)' "$3"
}

test_expect_success 'another host name gives the same snapshot ids' '
	aptix init -q a && aptix init -q b &&
	instore a env APTIX_TEST_HOSTNAME=alpha aptix import -q codex "$FIX/codex-0.169" &&
	instore b env APTIX_TEST_HOSTNAME=beta aptix import -q codex "$FIX/codex-0.169" &&
	ids a >a.ids && ids b >b.ids &&
	test_line_count -gt 3 a.ids &&
	test_cmp a.ids b.ids &&
	snapshot_state a >a.state && snapshot_state b >b.state &&
	test_cmp a.state b.state
'

test_expect_success 'no remote, no repository here: the directory'"'"'s name' '
	echo parser >expect &&
	field a $CODEX workspace >actual &&
	test_cmp expect actual &&
	instore a aptix cat-object -p "$(instore a aptix rev-parse $CODEX)" >sess &&
	grep "^workspace *parser$" sess
'

test_expect_success 'a host name really changed (unshare -u) changes nothing either' '
	if unshare -ur hostname other-host 2>/dev/null
	then
		aptix init -q u &&
		APTIX_DIR="$TRASH_DIRECTORY/u/.aptix" unshare -ur sh -c \
			"hostname other-host && aptix import -q codex \"$FIX/codex-0.169\"" &&
		ids u >u.ids &&
		test_cmp a.ids u.ids
	else
		say "unshare -ur is not allowed here: skipped"
	fi
'

test_expect_success 'the remote URL: its credentials never land in an object' '
	tok=$(crand 40) &&
	echo "$tok" >tok &&
	retarget tokd "https://x-access-token:$tok@GitHub.com/Org/Parser.git" &&
	aptix init -q t &&
	instore t aptix import --json codex tokd >out 2>err &&
	grep "$PARENT_FILE:1: a credential (rule url-userinfo) in the source record: stored redacted" err &&
	instore t aptix cat-object --batch --batch-all-objects >all &&
	! grep "$tok" all &&
	grep "<redacted:url-userinfo>@GitHub.com/Org/Parser.git" all &&
	echo https://GitHub.com/Org/Parser.git >expect &&
	field t $CODEX worktree.remote >actual &&
	test_cmp expect actual &&
	field t $CODEX_FORK worktree.remote >actual &&
	test_cmp expect actual &&
	echo github.com/Org/Parser >expect &&
	field t $CODEX workspace >actual &&
	test_cmp expect actual &&
	instore t aptix show $CODEX >show &&
	grep "^Remote: *https://GitHub.com/Org/Parser.git$" show &&
	grep "^Workspace: *github.com/Org/Parser$" show
'

test_expect_success 'a bare token as the user is one too; the same repository is one workspace' '
	tok=$(crand 40) &&
	retarget bare "https://$tok@github.com/Org/Parser/?ref=x#y" &&
	retarget scp "git@github.com:Org/Parser.git" &&
	aptix init -q bare && aptix init -q scp &&
	instore bare aptix import -q codex bare 2>err &&
	grep "rule url-userinfo" err &&
	instore bare aptix cat-object --batch --batch-all-objects >all &&
	! grep "$tok" all &&
	echo https://github.com/Org/Parser/ >expect &&
	field bare $CODEX worktree.remote >actual &&
	test_cmp expect actual &&
	instore scp aptix import -q codex scp 2>err &&
	test_must_be_empty err &&
	echo github.com:Org/Parser.git >expect &&
	field scp $CODEX worktree.remote >actual &&
	test_cmp expect actual &&
	echo github.com/Org/Parser >expect &&
	field bare $CODEX workspace >actual &&
	test_cmp expect actual &&
	field scp $CODEX workspace >actual &&
	test_cmp expect actual
'

test_expect_success 'a scp-like URL with a password: the password lands nowhere either' '
	tok=$(crand 40) &&
	retarget scppw "deploy:$tok@github.com:Org/Parser.git" &&
	aptix init -q scppw &&
	instore scppw aptix import -q codex scppw 2>err &&
	grep "rule url-userinfo" err &&
	instore scppw aptix cat-object --batch --batch-all-objects >all &&
	! grep "$tok" all &&
	echo github.com:Org/Parser.git >expect &&
	field scppw $CODEX worktree.remote >actual &&
	test_cmp expect actual &&
	echo github.com/Org/Parser >expect &&
	field scppw $CODEX workspace >actual &&
	test_cmp expect actual
'

test_expect_success GIT 'no remote, a repository this machine has: its root commit' '
	git init -q repo &&
	git -C repo -c user.name=A -c user.email=a@b commit -q --allow-empty -m one &&
	git -C repo -c user.name=A -c user.email=a@b commit -q --allow-empty -m two &&
	root=$(git -C repo rev-list --max-parents=0 HEAD) &&
	mkdir repo/sub &&
	retarget rooted "" "$TRASH_DIRECTORY/repo/sub" &&
	aptix init -q rooted &&
	instore rooted env APTIX_TEST_HOSTNAME=alpha aptix import -q codex rooted &&
	echo "root:$root" >expect &&
	field rooted $CODEX workspace >actual &&
	test_cmp expect actual &&
	aptix init -q rooted2 &&
	instore rooted2 env APTIX_TEST_HOSTNAME=beta aptix import -q codex rooted &&
	ids rooted >r1 && ids rooted2 >r2 &&
	test_cmp r1 r2
'

test_expect_success 'a store imported by the aptix before (path and host): importing again adds nothing' '
	retarget old "https://github.com/Org/Parser.git" &&
	aptix init -q old &&
	instore old env APTIX_TEST_IMPORT_PATH_WORKSPACE=1 aptix import -q codex old &&
	echo parser.$(hostname | sed "s/\..*//" | tr -c "A-Za-z0-9._\n-" -) >expect &&
	field old $CODEX workspace >actual &&
	test_cmp expect actual &&
	echo None >expect &&
	field old $CODEX worktree.remote >actual &&
	test_cmp expect actual &&
	snapshot_state old >before &&
	instore old aptix import --json codex old >out 2>err &&
	test_must_be_empty err &&
	test "$(json_field new_turn_count out)" = 0 &&
	snapshot_state old >after &&
	test_cmp before after
'

test_expect_success 'a grown file imported into such a store goes on from its snapshots' '
	grown_goes_on grown "old/$PARENT_FILE" APTIX_TEST_IMPORT_PATH_WORKSPACE=1 &&
	echo github.com/Org/Parser >expect &&
	field grown $CODEX workspace >actual &&
	test_cmp expect actual
'

test_done
