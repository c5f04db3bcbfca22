#!/bin/sh
test_description='aptix import: source keys kept in the store, so that a fork imported by a later run shares its parent'
. "$(dirname "$0")"/test-lib.sh
. "$TEST_DIRECTORY"/lib-import.sh
. "$TEST_DIRECTORY"/lib-pg.sh

if ! test_have_prereq PYTHON3
then
	skip_all='python3 reads the summaries and the store'
	test_done
fi

FIX=$TEST_DIRECTORY/fixtures/import
CODEX_PARENT=codex-01a20a30-fe75-78c1-af75-749cedb50f1c
CODEX_FORK=codex-01a20a31-1121-7e41-b774-22bab679bcc6
CLAUDE_FORK=claude-fb2b60f9-dbe4-4e73-a69d-179fd2594653
CLAUDE_PROJ=claude-code-2.1.328/projects/-home-user-proj
CPARENT=d483c847-b747-45a9-b7f9-9365b1916fee

# store <dir> <command>...: the raw tables of the store in <dir>
store () {
	local dir=$1
	shift
	python3 "$TEST_DIRECTORY/lib-store.py" "$dir/.aptix" "$@"
}

# fork_later <dir>: the Codex parent imported, then its fork by another
# run; the fork shares the parent's snapshots, as in one run
fork_later () {
	instore "$1" aptix import --json codex cp >out &&
	test "$(json_field new_turn_count out)" = 3 &&
	instore "$1" aptix import --json codex cf >out 2>err &&
	test_must_be_empty err &&
	test "$(json_field new_turn_count out)" = 2 &&
	test "$(instore "$1" aptix rev-parse $CODEX_FORK~2)" = \
		"$(instore "$1" aptix rev-parse $CODEX_PARENT)" &&
	test "$(instore "$1" aptix rev-parse $CODEX_FORK)" = \
		"$(instore together aptix rev-parse $CODEX_FORK)"
}

# as_together <dir> <conversation>...: their heads are those of one run
as_together () {
	local d=$1 c
	shift
	for c
	do
		test "$(instore "$d" aptix rev-parse "$c")" = \
			"$(instore together aptix rev-parse "$c")" || return 1
	done
}

# again_nothing <dir> <tool> <path>...: importing again changes nothing
again_nothing () {
	local d=$1
	shift
	snapshot_state "$d" >before &&
	instore "$d" aptix import --json "$@" >out &&
	test "$(json_field new_turn_count out)" = 0 &&
	snapshot_state "$d" >after &&
	test_cmp before after
}

test_expect_success 'setup: a Codex parent and its fork, a Claude parent and its fork' '
	mkdir cp cf clp clf &&
	cp "$FIX"/codex-0.169/*01a20a30*.jsonl cp/ &&
	cp "$FIX"/codex-0.169/*01a20a31*.jsonl cf/ &&
	sed -n 1,16p "$FIX/$CLAUDE_PROJ/fb2b60f9-dbe4-4e73-a69d-179fd2594653.jsonl" |
	sed -e "s/fb2b60f9-dbe4-4e73-a69d-179fd2594653/$CPARENT/" \
	    -e "s/\"requestSessionId\":\"$CPARENT\",//" >clp/$CPARENT.jsonl &&
	cp "$FIX/$CLAUDE_PROJ/fb2b60f9-dbe4-4e73-a69d-179fd2594653.jsonl" clf/ &&
	aptix init -q together &&
	instore together aptix import codex cp cf &&
	instore together aptix import claude clp clf
'

test_expect_success 'codex: a fork imported by a later run shares its parent' '
	aptix init -q apart &&
	fork_later apart
'

test_expect_success 'codex: both again add nothing' '
	again_nothing apart codex cp cf
'

test_expect_success 'claude: a fork imported by a later run shares its parent' '
	aptix init -q capart &&
	instore capart aptix import --json claude clp >out &&
	instore capart aptix import --json claude clf >out 2>err &&
	test_must_be_empty err &&
	test "$(json_field new_turn_count out)" = 1 &&
	test "$(instore capart aptix rev-parse $CLAUDE_FORK~1)" = \
		"$(instore capart aptix rev-parse claude-$CPARENT)" &&
	test "$(instore capart aptix rev-parse $CLAUDE_FORK)" = \
		"$(instore together aptix rev-parse $CLAUDE_FORK)" &&
	again_nothing capart claude clp clf
'

test_expect_success 'claude: a fork imported before its parent is linked to it when the parent comes' '
	aptix init -q cfirst &&
	instore cfirst aptix import --json claude clf >out &&
	test "$(json_field new_turn_count out)" = 2 &&
	instore cfirst aptix import --json claude clp >out &&
	as_together cfirst claude-$CPARENT $CLAUDE_FORK &&
	test "$(instore cfirst aptix rev-parse $CLAUDE_FORK~1)" = \
		"$(instore cfirst aptix rev-parse claude-$CPARENT)" &&
	instore cfirst aptix fsck &&
	again_nothing cfirst claude clp clf &&
	again_nothing cfirst claude clf clp
'

test_expect_success 'codex: a fork imported before its parent is linked to it when the parent comes' '
	aptix init -q ffirst &&
	instore ffirst aptix import --json codex cf >out 2>err &&
	grep "forked from thread 01a20a30-fe75-78c1-af75-749cedb50f1c, which is not imported" err &&
	test "$(json_field new_turn_count out)" = 2 &&
	instore ffirst aptix import --json codex cp >out 2>err &&
	test_must_be_empty err &&
	as_together ffirst $CODEX_PARENT $CODEX_FORK &&
	test "$(instore ffirst aptix rev-parse $CODEX_FORK~2)" = \
		"$(instore ffirst aptix rev-parse $CODEX_PARENT)" &&
	instore ffirst aptix fsck &&
	again_nothing ffirst codex cp cf &&
	again_nothing ffirst codex cf &&
	again_nothing ffirst codex cp
'

# a directory's files are imported before the next directory's are read:
# the fork waits for its parent, as across runs, within the run
test_expect_success 'codex: one run over a tree whose fork is a directory before its parent' '
	mkdir -p tree/a tree/b &&
	cp cf/*.jsonl tree/a/ &&
	cp cp/*.jsonl tree/b/ &&
	aptix init -q onerun &&
	instore onerun aptix import --json codex tree >out 2>err &&
	grep "forked from thread 01a20a30-fe75-78c1-af75-749cedb50f1c, which is not imported" err &&
	as_together onerun $CODEX_PARENT $CODEX_FORK &&
	test "$(instore onerun aptix rev-parse $CODEX_FORK~2)" = \
		"$(instore onerun aptix rev-parse $CODEX_PARENT)" &&
	instore onerun aptix fsck &&
	again_nothing onerun codex tree
'

test_expect_success 'codex: a waiting fork whose ref moved on since keeps it' '
	aptix init -q moved &&
	instore moved aptix import codex cf 2>/dev/null &&
	instore moved aptix import codex "$FIX/codex-0.171-toolcall" &&
	other=$(instore moved aptix rev-parse codex-01a21d63-49bd-7463-9f9d-2c58154575c0) &&
	instore moved aptix update-ref refs/conversations/$CODEX_FORK $other &&
	instore moved aptix import codex cp 2>err &&
	grep "conversation .$CODEX_FORK. has moved on: its ref is left as it is" err &&
	test "$(instore moved aptix rev-parse $CODEX_FORK)" = "$other" &&
	as_together moved $CODEX_PARENT
'

test_expect_success 'codex and claude: every key of the turns as parent-first writes it' '
	store together values imports | sort >v.together &&
	for d in ffirst cfirst
	do
		store $d values imports | sort >v.$d &&
		grep -v -F -x -f v.together v.$d >extra.$d
		# what is left: the forks waiting records, now resolved
		! grep -v " 01\(00\)\{32\}" extra.$d || return 1
	done
'

test_expect_success 'the keys are in the store, one a turn, as one run writes them' '
	store together keys imports >keys.together &&
	store apart keys imports >keys.apart &&
	test_line_count = 5 keys.apart &&
	store together values imports | grep -c "636f6465782d" >n &&
	echo 5 >expect &&
	test_cmp expect n &&
	store apart values imports >v.apart &&
	store together values imports | grep -f keys.apart >v.together &&
	test_cmp v.together v.apart
'

test_expect_success 'the key of the fork point names the parent snapshot' '
	key=$(printf "codex:01a20a30-fe75-78c1-af75-749cedb50f1c:%s" \
		"$(sed -n "s/.*forked_from_ordinal_exclusive\":\([0-9]*\).*/\1/p" \
		   cf/*.jsonl | head -n 1)" |
	      sha256sum | cut -d" " -f1) &&
	store apart get imports "hex:$key" >rec &&
	cut -c3-66 rec >sid &&
	instore apart aptix rev-parse $CODEX_PARENT >expect &&
	test_cmp expect sid
'

test_expect_success 'every fixture imported twice: the second run writes nothing' '
	aptix init -q all &&
	for t in "codex $FIX/codex-0.169 $FIX/codex-0.171-toolcall" \
		 "claude $FIX/claude-code-2.1.328" \
		 "gemini $FIX/gemini-cli-0.61.0" \
		 "opencode $FIX/opencode-1.18.33/opencode.db"
	do
		# shellcheck disable=SC2086 # a tool and its paths
		instore all aptix import $t >/dev/null 2>&1
		snapshot_state all >before &&
		store all values imports >kbefore &&
		test -s kbefore &&
		instore all aptix import --json $t >out 2>/dev/null
		test "$(json_field new_turn_count out)" = 0 &&
		snapshot_state all >after &&
		store all values imports >kafter &&
		test_cmp before after &&
		test_cmp kbefore kafter || return 1
	done
'

test_expect_success 'fsck names a key whose snapshot is gone; reindex drops it' '
	instore apart aptix fsck &&
	rec=$(store apart get imports "hex:$key") &&
	bad=$(echo "$rec" | sed "s/^01\(.\{64\}\)/01$(printf "%064d" 0 | tr 0 e)/") &&
	zero=$(printf "%064d" 0) &&
	store apart put imports "hex:$zero" "hex:$bad" &&
	store apart put imports hex:01 hex:02 &&
	test_must_fail instore apart aptix fsck >out 2>&1 &&
	grep "^index mismatch: import key 01: malformed record (1 bytes)\$" out &&
	grep "^index mismatch: import key $zero names snapshot e\{64\} of .$CODEX_PARENT., which the store lacks\$" out &&
	instore apart aptix reindex &&
	instore apart aptix fsck &&
	test_must_fail store apart get imports "hex:$zero" &&
	test_must_fail store apart get imports hex:01 &&
	store apart get imports "hex:$key"
'

test_expect_success 'a key whose snapshot is gone is not followed' '
	store apart put imports "hex:$key" "hex:$bad" &&
	instore apart aptix import --json codex cf >out 2>err &&
	grep "forked from thread 01a20a30-fe75-78c1-af75-749cedb50f1c, which is not imported" err
'

test_expect_success POSTGRES 'PostgreSQL: a fork imported by a later run shares its parent' '
	start_pg &&
	test_when_finished stop_pg &&
	pg_sql -v app_role=aptix_app -f "$TEST_DIRECTORY/../contrib/postgresql/schema.sql" &&
	mkdir pgws &&
	aptix -C pgws init -q --backend "$PG_APP_URL" --org acme &&
	fork_later pgws &&
	again_nothing pgws codex cp cf &&
	pg_sql -c "SELECT conv, count(*) FROM aptix_index WHERE tbl = 6 GROUP BY conv ORDER BY conv" >convs &&
	printf "%s|3\n%s|2\n" $CODEX_PARENT $CODEX_FORK >expect &&
	test_cmp expect convs &&
	instore pgws aptix fsck
'

LOG_ALL="ALTER ROLE aptix_app SET log_statement = 'all'"
Q="'"

test_expect_success POSTGRES 'PostgreSQL: a fork imported before its parent is linked to it' '
	start_pg &&
	test_when_finished stop_pg &&
	mkdir pgfork &&
	aptix -C pgfork init -q --backend "$PG_APP_URL" --org forks &&
	instore pgfork aptix import -q codex cf 2>/dev/null &&
	instore pgfork aptix import -q codex cp &&
	as_together pgfork $CODEX_PARENT $CODEX_FORK &&
	again_nothing pgfork codex cp cf &&
	instore pgfork aptix fsck
'

# key_reads <from>: the reads of one import key (index table 6) that
# the PostgreSQL server logged from line <from> of its log on
key_reads () {
	tail -n "+$1" pg.log |
	grep -A1 "execute .*SELECT val FROM aptix_index WHERE tbl = " |
	grep -c "parameters: \$1 = '6'"
}

test_expect_success POSTGRES 'PostgreSQL: a first import writes its keys without reading each first' '
	start_pg &&
	test_when_finished stop_pg &&
	pg_sql -c "$LOG_ALL" &&
	mkdir pgfirst &&
	aptix -C pgfirst init -q --backend "$PG_APP_URL" --org firsts &&
	from=$(($(wc -l <pg.log) + 1)) &&
	instore pgfirst aptix import --json codex cp >out &&
	test "$(json_field new_turn_count out)" = 3 &&
	# the one read: whether a fork waits on the thread
	test "$(key_reads $from)" = 1 &&
	pg_sql -c "SELECT count(*) FROM aptix_index WHERE tbl = 6 AND org = ${Q}firsts$Q" >n &&
	echo 3 >expect &&
	test_cmp expect n &&
	from=$(($(wc -l <pg.log) + 1)) &&
	again_nothing pgfirst codex cp &&
	test "$(key_reads $from)" = 4
'

test_done
