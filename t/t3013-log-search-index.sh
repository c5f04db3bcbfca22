#!/bin/sh
test_description='the search index: kept with each turn, rebuilt by
reindex, and log -S / --grep / -i find through it exactly what a scan
of every session finds'
. "$(dirname "$0")"/test-lib.sh
. "$TEST_DIRECTORY"/lib-objects.sh

# search_keys: the keys of the search table, hex, one a line
search_keys () {
	python3 "$TEST_DIRECTORY/lib-store.py" .aptix keys search
}

# search_terms: the terms of the search index (those of "t" keys and
# those kept in blocks), hex, one a line
search_terms () {
	python3 "$TEST_DIRECTORY/lib-store.py" .aptix search-terms
}

# a term as search_terms prints it
term_key () {
	printf '%s' "$1" | od -An -tx1 | tr -d ' \n'
	echo
}

# texts <n>: n lines "instruction<TAB>answer" of words from a small
# vocabulary, seeded (some words mixed case, some joined by '_' or '.',
# one word longer than a term may be)
texts () {
	python3 - "$1" <<-\PY
	import random, sys
	rnd = random.Random(28)
	words = ["alpha", "Beta", "gamma", "delta", "epsilon", "zeta", "eta",
	         "theta", "IOTA", "kappa", "lambda", "mu", "nu_xi",
	         "omicron.pi", "rho", "sigma42", "tau", "upsilon", "phi",
	         "chi", "psi", "omega", "fooBar", "x", "caf\u00e9",
	         "a" * 70 + "tail"]
	for i in range(int(sys.argv[1])):
	    ins = " ".join(rnd.choice(words) for _ in range(rnd.randint(1, 6)))
	    ans = ", ".join(rnd.choice(words) for _ in range(rnd.randint(0, 9)))
	    print("%s\t%s" % (ins, ans or "-"))
	PY
}

NEEDLES='alpha
ALPHA
lph
pha be
a, b
Beta
beta
nu_xi
u_x
xi
omicron.pi
n.p
sigma4
gma42
42
x
 x 
caf
café
CAFÉ
atail
aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa
foobar
fooBar
oBa
ta, ta
-
nothing at all'

# queries <file>: log -S, -i -S and --grep of every needle, --all
queries () {
	printf '%s\n' "$NEEDLES" | while IFS= read -r n
	do
		echo "-S [$n]" &&
		aptix log --all --format=%h -S "$n" &&
		echo "-i -S [$n]" &&
		aptix log --all --format=%h -i -S "$n" &&
		echo "--grep [$n]" &&
		aptix log --all --format=%h --grep "$n" &&
		echo "-i --grep [$n]" &&
		aptix log --all --format=%h -i --grep "$n" || return 1
	done >"$1" &&
	aptix log --all --format=%h --grep "alpha" --grep "gam+a" >>"$1" &&
	aptix log --all --format=%h -E --grep "mu|rho" >>"$1" &&
	aptix log --all --format=%h -S tau --grep phi >>"$1"
}

test_expect_success 'a new store keeps the words of each turn' '
	aptix init -q &&
	test_tick && s1=$(make_answered c1 "Hello wonderful world" \
		"The answer is fooBar_baz 42") &&
	search_keys >keys &&
	grep "^73$" keys &&
	search_terms >keys &&
	grep "^$(term_key wonderful)$" keys &&
	grep "^$(term_key foobar_baz)$" keys &&
	grep "^$(term_key 42)$" keys &&
	! grep "^$(term_key Hello)$" keys &&
	test_tick && s2=$(make_answered c1 "second question" "swordfish" \
		$s1) &&
	search_terms >keys &&
	grep "^$(term_key swordfish)$" keys &&
	aptix update-ref refs/conversations/c1 $s2 &&
	aptix symbolic-ref HEAD refs/conversations/c1
'

test_expect_success 'setup: sessions of many words in two conversations' '
	texts 60 >texts &&
	parent= && conv=c1 && n=0 &&
	while IFS="	" read -r ins ans
	do
		n=$((n + 1)) &&
		if test $n = 31
		then
			aptix update-ref refs/conversations/c1 $s &&
			parent= && conv=c2
		fi &&
		test_tick &&
		s=$(make_answered $conv "$ins" "$ans" $parent) &&
		parent=$s || return 1
	done <texts &&
	aptix update-ref refs/conversations/c2 $s &&
	aptix log --all --oneline >all &&
	test_line_count = 62 all
'

test_expect_success 'log -S, -i, --grep: the same with the index as without' '
	queries with &&
	cp -R .aptix saved &&
	test_when_finished "rm -rf .aptix && mv saved .aptix" &&
	python3 "$TEST_DIRECTORY/lib-store.py" .aptix del search s &&
	queries without &&
	test_cmp without with &&
	grep -c . with >lines &&
	test $(cat lines) -gt 300
'

test_expect_success 'a session the index does not know is read (an older writer)' '
	python3 "$TEST_DIRECTORY/lib-store.py" .aptix values search |
		sed -n "s/^73 //p" >state &&
	python3 "$TEST_DIRECTORY/lib-store.py" .aptix del search s &&
	test_tick &&
	s=$(make_answered c2 "zebra unknown to the index" "-" $s) &&
	aptix update-ref refs/conversations/c2 $s &&
	! search_terms | grep "^$(term_key zebra)$" &&
	python3 "$TEST_DIRECTORY/lib-store.py" .aptix put search s \
		"hex:$(cat state)" &&
	aptix log --all --format=%h -S zebra >out &&
	short=$(echo $s | cut -c1-12) &&
	echo $short >expect &&
	test_cmp expect out &&
	aptix log --all --format=%h -S ebr --grep unknown >out &&
	test_cmp expect out
'

test_expect_success 'reindex rebuilds the index: the same keys, all sessions' '
	aptix reindex &&
	search_keys >before &&
	search_terms | grep "^$(term_key zebra)$" &&
	zebra=$(python3 "$TEST_DIRECTORY/lib-store.py" .aptix search-key-of \
		zebra) &&
	python3 "$TEST_DIRECTORY/lib-store.py" .aptix del search s &&
	python3 "$TEST_DIRECTORY/lib-store.py" .aptix del search \
		"hex:$zebra" &&
	! search_terms | grep "^$(term_key zebra)$" &&
	aptix reindex &&
	search_keys >after &&
	test_cmp before after &&
	queries again &&
	sed -n "/^-S \[alpha\]/,/^-i -S/p" again >alpha &&
	test $(wc -l <alpha) -gt 10
'

test_expect_success 'rare terms share blocks, common ones have keys' '
	search_keys >keys &&
	grep -c "^62" keys >blocks &&
	test $(cat blocks) -ge 1 &&
	python3 "$TEST_DIRECTORY/lib-store.py" .aptix search-key-of alpha \
		>key &&
	echo 74616c706861 >expect &&
	test_cmp expect key &&
	python3 "$TEST_DIRECTORY/lib-store.py" .aptix search-key-of zebra \
		>key &&
	grep "^62" key
'

test_expect_success 'a version 1 index (a key a term) is read, then written in blocks' '
	queries v2 &&
	cp -R .aptix saved &&
	test_when_finished "rm -rf .aptix && mv saved .aptix" &&
	search_terms >terms2 &&
	python3 "$TEST_DIRECTORY/lib-store.py" .aptix search-v1 &&
	! search_keys | grep "^62" &&
	search_terms >terms1 &&
	test_cmp terms2 terms1 &&
	python3 "$TEST_DIRECTORY/lib-store.py" .aptix get search s >state &&
	grep "^01" state &&
	queries v1 &&
	test_cmp v2 v1 &&
	test_tick &&
	y=$(make_answered c2 "yak alpha" "wombat" $s) &&
	aptix update-ref refs/conversations/c2 $y &&
	python3 "$TEST_DIRECTORY/lib-store.py" .aptix get search s >state &&
	grep "^02" state &&
	python3 "$TEST_DIRECTORY/lib-store.py" .aptix search-key-of wombat \
		>key &&
	echo 62776f6d626174 >expect &&
	test_cmp expect key &&
	aptix log --all --format=%h -S wombat >out &&
	echo $y | cut -c1-12 >expect &&
	test_cmp expect out &&
	aptix log --all --format=%h -S zebra >out &&
	test_line_count = 1 out
'

test_expect_success 'fsck --full checks the blocks; reindex mends them' '
	aptix fsck --full &&
	cp -R .aptix saved &&
	test_when_finished "rm -rf .aptix && mv saved .aptix" &&
	zebra=$(python3 "$TEST_DIRECTORY/lib-store.py" .aptix search-key-of \
		zebra) &&
	python3 "$TEST_DIRECTORY/lib-store.py" .aptix put search \
		"hex:$zebra" hex:0500 &&
	python3 "$TEST_DIRECTORY/lib-store.py" .aptix put search \
		tzebra hex:0100 &&
	test_must_fail aptix fsck --full >err 2>&1 &&
	grep "index mismatch: search index: corrupt block" err &&
	grep "search index: corrupt postings of term .zebra." err &&
	aptix fsck >err 2>&1 &&
	! grep "search index" err &&
	python3 "$TEST_DIRECTORY/lib-store.py" .aptix del search tzebra &&
	aptix reindex &&
	aptix fsck --full &&
	aptix log --all --format=%h -S zebra >out &&
	test_line_count = 1 out
'

test_expect_success 'purge: a secret word leaves the index and the file' '
	test_tick &&
	s=$(make_answered c2 "the key is zq7leakedvalue99" "kept okapi" $s) &&
	aptix update-ref refs/conversations/c2 $s &&
	search_terms >keys &&
	grep "^$(term_key zq7leakedvalue99)$" keys &&
	grep -a -c zq7leakedvalue99 .aptix/data.mdb >count &&
	test $(cat count) -gt 0 &&
	echo zq7leakedvalue99 >secret &&
	aptix purge --force --reason test --secret-from-file secret &&
	search_terms >keys &&
	! grep "^$(term_key zq7leakedvalue99)$" keys &&
	grep "^$(term_key okapi)$" keys &&
	! grep -a zq7leakedvalue99 .aptix/data.mdb &&
	aptix log --all --format=%h -S okapi >out &&
	echo $s | cut -c1-12 >expect &&
	test_cmp expect out
'

test_expect_success 'gc: the words of sessions it deletes go with them' '
	test_tick &&
	lost=$(make_answered c9 "unreachable quokka" "gone") &&
	search_terms >keys &&
	grep "^$(term_key quokka)$" keys &&
	aptix gc --prune=now &&
	search_terms >keys &&
	! grep "^$(term_key quokka)$" keys &&
	grep "^$(term_key okapi)$" keys
'

test_expect_success 'terms of more sessions than a run holds (sealed runs)' '
	sh "$TEST_DIRECTORY/perf/build-store.sh" 3 400 big >/dev/null &&
	(
		cd big &&
		aptix log --all --format=%h -S lexer >with &&
		aptix log --all --format=%h -S "turn 123." >>with &&
		aptix log --all --format=%h --grep Parser >>with &&
		test $(wc -l <with) -gt 20 &&
		python3 "$TEST_DIRECTORY/lib-store.py" .aptix keys search |
			grep "^63646574" >sealed &&
		test_line_count -gt 2 sealed &&
		python3 "$TEST_DIRECTORY/lib-store.py" .aptix del search s &&
		aptix log --all --format=%h -S lexer >without &&
		aptix log --all --format=%h -S "turn 123." >>without &&
		aptix log --all --format=%h --grep Parser >>without &&
		test_cmp without with &&
		aptix reindex &&
		aptix search --json -n 1000 details >hits &&
		grep -c "\"session\"" hits >n &&
		test "$(cat n)" = "$(aptix log --all --oneline | wc -l)"
	)
'

test_expect_success 'a store made before the index has none until reindex' '
	aptix init -q old &&
	(
		cd old &&
		test_tick && a=$(make_answered c1 "first words" "here") &&
		python3 "$TEST_DIRECTORY/lib-store.py" .aptix del search s &&
		test_tick && b=$(make_answered c1 "more words" "there" $a) &&
		aptix update-ref refs/conversations/c1 $b &&
		! python3 "$TEST_DIRECTORY/lib-store.py" .aptix get search s &&
		aptix log --all --format=%h -S there >out &&
		echo $b | cut -c1-12 >expect &&
		test_cmp expect out &&
		aptix reindex &&
		python3 "$TEST_DIRECTORY/lib-store.py" .aptix get search s &&
		aptix log --all --format=%h -S there >out &&
		test_cmp expect out
	)
'

# walk_queries <file>: log --all with -S / --grep and the options that
# change which sessions a walk returns, or their order
walk_queries () {
	for q in "-S lexer" "-S Lexer --reverse" "-S lexer -n 7" \
		"-S lexer --skip 5 -n 9" "-S lexer --no-failed" \
		"-S lexer --include-archived" "-S turn" \
		"-S turn --include-archived" "-i -S LEXER" "--grep lex.r" \
		"--grep Parser --reverse" "-S turn --since @1700003000" \
		"-S turn --until @1700009000" "-S 123." "-S zebrafish"
	do
		echo "log --all $q" &&
		aptix log --all --format="%h %s%d" $q || return 1
	done >"$1"
}

test_expect_success 'log --all -S / --grep read only the matches: the scan'"'"'s output' '
	sh "$TEST_DIRECTORY/perf/build-store.sh" 6 240 walk >/dev/null &&
	(
		cd walk &&
		aptix log --all --format=%s | grep -c "(#" >n &&
		test $(cat n) = 240 &&
		conv=$(aptix log --all --format=%c | sort -u | sed -n 2p) &&
		aptix conversation archive "$conv" &&
		aptix reindex >/dev/null &&
		walk_queries with &&
		cp -R .aptix saved &&
		python3 "$TEST_DIRECTORY/lib-store.py" .aptix del search s &&
		walk_queries without &&
		rm -rf .aptix && mv saved .aptix &&
		test_cmp without with &&
		grep -c " (#" with >lines &&
		test $(cat lines) -gt 200
	)
'

test_expect_success 'log --all -S and -n read the conversation records of what they show only' '
	cp -R walk/.aptix walk-saved &&
	test_when_finished "rm -rf walk/.aptix && mv walk-saved walk/.aptix" &&
	(
		cd walk &&
		aptix log --all --format="%h %c" -S "turn 123." >expect.S &&
		aptix log --all --format="%h %c" -n 3 >expect.n &&
		# a conversation none of those sessions is in, damaged
		cut -d" " -f2 expect.S expect.n >shown &&
		conv=$(aptix log --all --format=%c | sort -u |
			grep -v -F -f shown | head -n 1) &&
		test -n "$conv" &&
		python3 "$TEST_DIRECTORY/lib-store.py" .aptix put \
			conversations "$conv" hex:ff &&
		aptix log --all --format="%h %c" -S "turn 123." >actual.S &&
		test_cmp expect.S actual.S &&
		aptix log --all --format="%h %c" -n 3 >actual.n &&
		test_cmp expect.n actual.n &&
		# what does show one of its sessions reads it
		test_must_fail aptix log --all --format=%h -S lexer 2>err &&
		grep "index record of .* is corrupt" err &&
		test_must_fail aptix log --all --format=%h 2>err &&
		grep "index record of .* is corrupt" err
	)
'

test_expect_success 'a session older than its parent is marked; log keeps the order' '
	(
		cd walk &&
		python3 "$TEST_DIRECTORY/lib-store.py" .aptix get search K &&
		! search_keys | grep "^6b" &&
		head=$(aptix rev-parse HEAD) &&
		created=$(session_field $head created_at) &&
		APTIX_TEST_DATE=$((created / 1000 - 86400)) &&
		old=$(make_answered skewed "a lexer from the past" "-" $head) &&
		aptix update-ref refs/conversations/skewed $old &&
		hex=$(echo $old | sed "s/../& /g" | tr -d " ") &&
		search_keys | grep "^6b$hex$" &&
		walk_queries with &&
		grep "a lexer from the past" with &&
		cp -R .aptix saved &&
		python3 "$TEST_DIRECTORY/lib-store.py" .aptix del search s &&
		walk_queries without &&
		rm -rf .aptix && mv saved .aptix &&
		test_cmp without with &&
		aptix reindex >/dev/null &&
		search_keys | grep "^6b$hex$" &&
		walk_queries again &&
		test_cmp without again
	)
'


# short <id>: the 12-digit abbreviation log uses
short () {
	printf '%s\n' "$1" | cut -c1-12
}

# head_queries <file> <start>...: log -S / --grep from each start (a
# word list of revisions) with the options that change which sessions
# the walk returns, or their order
head_queries () {
	out=$1 &&
	shift &&
	for start in "$@"
	do
		for q in "-S lexer" "-S lexer --reverse" "-S lexer -n 2" \
			"-S lexer --skip 1 -n 3" "-S lexer --no-failed" \
			"-i -S LEXER" "--grep lex.r" "--grep Parser --reverse" \
			"-S turn" "-S 123." \
			"-S lexer --since @$SINCE" "-S lexer --until @$UNTIL" \
			"-S lexer --no-walk" "-S zebrafish"
		do
			echo "log $q $start" &&
			aptix log --format="%h %s%d" $q $start || return 1
		done
	done >"$out"
}

# same_without <file> <start>...: head_queries with and without the
# search index print the same, and some of it
same_without () {
	res=$1 &&
	shift &&
	head_queries with "$@" &&
	cp -R .aptix saved &&
	python3 "$TEST_DIRECTORY/lib-store.py" .aptix del search s &&
	head_queries without "$@" &&
	rm -rf .aptix && mv saved .aptix &&
	test_cmp without with &&
	cp with "$res"
}

test_expect_success 'log -S from start points reads only the matches: the walk'"'"'s output' '
	aptix init -q heads &&
	(
		cd heads &&
		# A: a1 - a2 - a3 - a4; B forks at a2: b1 - b2 - b3 (b3 older
		# than b2: a skewed clock); C: c1 - c2, apart
		test_tick && a1=$(make_answered A "lexer one" "-") &&
		test_tick && a2=$(make_answered A "two" "a Lexer here" $a1) &&
		test_tick && a3=$(make_answered A "three" "-" $a2) &&
		test_tick && fa3=$(make_failed A "failed before" $a3) &&
		test_tick && ff=$(make_failed A "failed lexer on failed" $fa3) &&
		test_tick && b1=$(make_answered B "lexer forked" "-" $a2) &&
		test_tick && fa2=$(make_failed A "lexer failed late" $a2) &&
		test_tick && a4=$(make_answered A "lexer four" "-" $a3) &&
		test_tick && b2=$(make_answered B "parse" "Parser lexer" $b1) &&
		test_tick && c1=$(make_answered C "lexer elsewhere" "-") &&
		test_tick && c2=$(make_answered C "turn 123." "-" $c1) &&
		test_tick && fc=$(make_failed C "lexer failed apart" $c2) &&
		SINCE=$((APTIX_TEST_DATE - 600)) &&
		UNTIL=$((APTIX_TEST_DATE - 300)) &&
		APTIX_TEST_DATE=$((APTIX_TEST_DATE - 86400)) &&
		b3=$(make_answered B "lexer skewed" "-" $b2) &&
		aptix update-ref refs/conversations/A $a4 &&
		aptix update-ref refs/conversations/B $b3 &&
		aptix update-ref refs/conversations/C $c2 &&
		aptix symbolic-ref HEAD refs/conversations/B &&
		same_without out "" A B C "A C" "^A B" "$a2..B" "$b1 $a3" \
			"$fa3" "$ff" "$a1" "$c1..C" "^B A C" &&
		# HEAD: b3 first although older than b2 (the start), the
		# failed attempt on a2 after b1 although newer (it comes with
		# a2), a2 not (its "Lexer" is another text), C not at all
		sed -n "/^log -S lexer \$/,/^log/p" out >head &&
		cat >expect <<-EOF &&
		log -S lexer 
		$(short $b3) lexer skewed (HEAD -> B)
		$(short $b2) parse
		$(short $b1) lexer forked
		$(short $fa2) lexer failed late
		$(short $a1) lexer one
		log -S lexer --reverse 
		EOF
		test_cmp expect head &&
		sed -n "/^log -S lexer A\$/,/^log/p" out >a &&
		grep "^$(short $ff) failed lexer on failed" a &&
		! grep "$(short $fc)" a
	)
'

test_expect_success 'log -S from start points on a generated history: the walk'"'"'s output' '
	(
		cd walk &&
		SINCE=1700003000 UNTIL=1700009000 &&
		aptix log --all --format=%c | sort -u >convs &&
		test_line_count -gt 5 convs &&
		set -- "" $(cat convs) "$(sed -n 1p convs) $(sed -n 4p convs)" \
			"^$(sed -n 2p convs) $(sed -n 3p convs)" \
			"HEAD~9..$(sed -n 5p convs)" &&
		same_without out "$@" &&
		grep -c " (#" out >lines &&
		test $(cat lines) -gt 400
	)
'

test_expect_success 'many matches: read once the walk has taken twice as many, the same output' '
	# APTIX_TEST_CANDS_DEFER=n: the matches are read after the walk
	# has taken n sessions (as past 16384 of them), not before it
	# starts: at each point of the walks, the same output
	(
		cd heads &&
		SINCE=$(($(aptix log -n 1 --format=%am A~1) / 1000)) &&
		UNTIL=$(($(aptix log -n 1 --format=%am B~1) / 1000)) &&
		set -- "" A B "A C" "^A B" "$(aptix rev-parse A~1)" &&
		same_without out "$@" &&
		for n in 0 1 2 3 4 5 7
		do
			(
				APTIX_TEST_CANDS_DEFER=$n &&
				export APTIX_TEST_CANDS_DEFER &&
				head_queries deferred "$@"
			) &&
			test_cmp out deferred || return 1
		done
	) &&
	(
		cd walk &&
		SINCE=1700003000 UNTIL=1700009000 &&
		set -- "" $(sed -n 1,2p convs) &&
		same_without out "$@" &&
		for n in 1 10 40
		do
			(
				APTIX_TEST_CANDS_DEFER=$n &&
				export APTIX_TEST_CANDS_DEFER &&
				head_queries deferred "$@"
			) &&
			test_cmp out deferred || return 1
		done
	)
'

test_done
