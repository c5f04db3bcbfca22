#!/bin/sh
test_description='aptix search: sessions ranked by BM25 over the search
index, scoped by conversation, workspace, date, status and model'
. "$(dirname "$0")"/test-lib.sh
. "$TEST_DIRECTORY"/lib-objects.sh

# hits <args>: the short ids search prints, one a line
hits () {
	aptix search "$@" >raw &&
	cut -c1-12 raw
}

short () {
	printf '%s\n' "$1" | cut -c1-12
}

test_expect_success 'setup' '
	aptix init -q &&
	test_tick && p1=$(make_answered c1 "write a parser" \
		"Use recursive descent for the parser; a parser is simple") &&
	test_tick && p2=$(make_answered c1 "and the lexer" \
		"The lexer splits bytes into tokens" $p1) &&
	test_tick && q1=$(make_answered c2 "parser generators?" \
		"Yacc and bison") &&
	test_tick &&
	t=$(aptix write-turn --conversation c3 --seq 1 --status failed \
		--instruction-text "parser of config files" --error "no network" \
		--created-at ${APTIX_TEST_DATE}000) &&
	f1=$(aptix commit-session --status failed \
		--created-at ${APTIX_TEST_DATE}000 $t) &&
	aptix update-ref refs/conversations/c1 $p2 &&
	aptix update-ref refs/conversations/c2 $q1 &&
	aptix symbolic-ref HEAD refs/conversations/c1
'

test_expect_success 'ranked: more occurrences first, any word of the query' '
	hits parser >out &&
	short $p1 >expect &&
	head -n 1 out >first &&
	test_cmp expect first &&
	test_line_count = 3 out &&
	hits lexer bison >out &&
	sort out >sorted &&
	{ short $p2 && short $q1; } | sort >expect &&
	test_cmp expect sorted &&
	hits PARSER >upper &&
	hits parser >lower &&
	test_cmp lower upper
'

test_expect_success 'a line: id, date, conversation, score, summary' '
	aptix search lexer >out &&
	grep "^$(short $p2) 20[0-9-]* c1 *[0-9][0-9]*\.[0-9][0-9] and the lexer$" out
'

test_expect_success 'scopes: --conversation, --status, --since/--until, --model' '
	hits --conversation c2 parser >out &&
	short $q1 >expect &&
	test_cmp expect out &&
	hits --status committed parser >out &&
	test_line_count = 2 out &&
	! grep $(short $f1) out &&
	hits --until "@$(($(session_field $p1 created_at) / 1000))" parser >out &&
	short $p1 >expect &&
	test_cmp expect out &&
	hits --since "@$(($(session_field $q1 created_at) / 1000))" parser >out &&
	test_line_count = 2 out &&
	! grep $(short $p1) out &&
	hits --model gpt-5-mini parser >out &&
	test_line_count = 2 out &&
	hits --model other parser >out &&
	test_must_be_empty out &&
	hits -n 1 parser >out &&
	test_line_count = 1 out
'

test_expect_success '--workspace: the sessions of that workspace' '
	hits --workspace nowhere parser >out &&
	test_must_be_empty out
'

test_expect_success '--json: sessions in a list, with their score' '
	aptix search --json lexer >out &&
	python3 -c "
import json, sys
h = json.load(open(\"out\"))
assert len(h) == 1, h
assert h[0][\"session\"] == \"$p2\", h
assert h[0][\"conversation\"] == \"c1\"
assert h[0][\"summary\"] == \"and the lexer\"
assert h[0][\"status\"] == \"committed\"
assert isinstance(h[0][\"score\"], float) and h[0][\"score\"] > 0
"
'

test_expect_success 'no hit is no line; a query without words is refused' '
	aptix search zzzunknown >out &&
	test_must_be_empty out &&
	test_expect_code 128 aptix search "!!" 2>err &&
	grep "has no word to search for" err &&
	test_expect_code 129 aptix search 2>err &&
	test_expect_code 128 aptix search --status nope parser 2>err &&
	grep "invalid --status" err
'

test_expect_success 'a store without a search index asks for reindex' '
	python3 "$TEST_DIRECTORY/lib-store.py" .aptix del search s &&
	test_expect_code 128 aptix search parser 2>err &&
	grep "no search index yet: run .aptix reindex." err &&
	aptix reindex &&
	hits parser >out &&
	test_line_count = 3 out
'

test_expect_success 'a word finds the camelCase and snake_case words it is part of' '
	test_tick &&
	cc=$(make_answered c3 "call parseConfig then load_user_data" "-") &&
	hits config >out &&
	grep "^$(short $cc)$" out &&
	hits user >out &&
	grep "^$(short $cc)$" out &&
	hits parseconfig >out &&
	grep "^$(short $cc)$" out &&
	hits load_user_data >out &&
	grep "^$(short $cc)$" out
'

test_expect_success 'a word finds the words it begins, below itself' '
	hits pars >out &&
	grep "^$(short $cc)$" out &&
	grep "^$(short $p1)$" out &&
	test_tick &&
	exact=$(make_answered c3 "pars and pars" "-") &&
	hits pars >out &&
	head -n 1 out | grep "^$(short $exact)$" &&
	hits parsez >out &&
	test_must_be_empty out
'

test_expect_success 'sessions an older aptix wrote: a hint until reindex' '
	python3 "$TEST_DIRECTORY/lib-store.py" .aptix values search |
		sed -n "s/^73 //p" >state &&
	python3 "$TEST_DIRECTORY/lib-store.py" .aptix del search s &&
	test_tick &&
	old=$(make_answered c1 "zebra from an older aptix" "-") &&
	python3 "$TEST_DIRECTORY/lib-store.py" .aptix put search s \
		"hex:$(cat state)" &&
	aptix search zebra >out 2>err &&
	test_must_be_empty out &&
	grep "^hint: 1 session is not in the search index" err &&
	grep "run .aptix reindex. to search it too" err &&
	aptix search --json parser >out 2>err &&
	grep "^hint: 1 session is not" err &&
	aptix reindex &&
	aptix search zebra >out 2>err &&
	test_must_be_empty err &&
	grep "^$(short $old) " out
'

test_done
