#!/bin/sh
test_description='objects-format.md: its worked examples hold

The object examples are recomputed; the store records of "Store records:
worked examples" are made by the script the document gives and compared,
vector by vector, with what the stores hold.'
. "$(dirname "$0")"/test-lib.sh

doc="$TEST_DIRECTORY/../objects-format.md"

# The indented lines of "## Worked examples": ids and JSON objects.
awk '/^## / { on = /^## Worked examples/ } on && /^    [0-9a-f{]/ { sub(/^    /, ""); print }' \
	"$doc" >examples

ex() { sed -n "$1p" examples; }

test_expect_success 'the document has its examples' '
	test_line_count = 16 examples
'

test_expect_success 'empty blob' '
	printf "" | aptix hash-object --stdin >actual &&
	ex 1 >expect &&
	test_cmp expect actual
'

test_expect_success 'blob ids equal git sha256 ids' '
	printf "hello\n" | aptix hash-object --stdin >actual &&
	ex 2 >expect &&
	test_cmp expect actual &&
	if test_have_prereq GIT
	then
		git init -q --object-format=sha256 g &&
		printf "hello\n" | git -C g hash-object --stdin >git-id &&
		test_cmp expect git-id
	fi
'

test_expect_success 'stored form of small blobs' '
	aptix init -q &&
	printf "" | aptix hash-object -w --stdin &&
	printf "hello\n" | aptix hash-object -w --stdin &&
	mdb_dump -s objects .aptix >dump &&
	grep -x " 8100" dump &&
	grep -x " 810668656c6c6f0a" dump
'

test_expect_success 'instruction blob' '
	printf "Explain the parser\n" | aptix hash-object -w --stdin >actual &&
	ex 3 >expect &&
	test_cmp expect actual
'

test_expect_success 'pending turn' '
	ex 4 >turn &&
	aptix hash-object -w -t turn turn >actual &&
	ex 5 >expect &&
	test_cmp expect actual &&
	aptix cat-object turn $(cat actual) >back &&
	test_cmp turn back
'

test_expect_success 'root session' '
	ex 6 >session &&
	aptix hash-object -w -t session session >actual &&
	ex 7 >expect &&
	test_cmp expect actual &&
	aptix cat-object -t $(cat actual) >type &&
	echo session >expect &&
	test_cmp expect type
'

test_expect_success 'tool call' '
	ex 8 >call &&
	aptix hash-object -w -t tool-call call >actual &&
	ex 9 >expect &&
	test_cmp expect actual &&
	aptix cat-object -t $(cat actual) >type &&
	echo tool-call >expect &&
	test_cmp expect type &&
	aptix cat-object tool-call $(cat actual) >back &&
	test_cmp call back
'

test_expect_success 'tool result' '
	printf "a.c\nb.c\n" | aptix hash-object -w --stdin >blob &&
	grep -q "$(cat blob)" examples &&
	ex 10 >result &&
	aptix hash-object -w -t tool-result result >actual &&
	ex 11 >expect &&
	test_cmp expect actual &&
	aptix cat-object -p $(cat actual) >pretty &&
	grep "^exit code  *0$" pretty &&
	grep "^call  *$(ex 9)$" pretty
'

test_expect_success 'a turn with a tool call is version 2' '
	ex 12 >turn2 &&
	aptix hash-object -w -t turn turn2 >actual &&
	ex 13 >expect &&
	test_cmp expect actual &&
	sed "s/\"v\":2/\"v\":1/" turn2 >turn2v1 &&
	test_must_fail aptix hash-object -t turn turn2v1 2>err &&
	grep "needs version 2" err &&
	sed "s/\"v\":2/\"v\":3/" turn2 >turn2v3 &&
	test_must_fail aptix hash-object -t turn turn2v3 2>err &&
	grep "upgrade aptix" err &&
	aptix fsck >out &&
	! grep -v "^dangling" out
'

test_expect_success PYTHON3 'an imported turn keeps the remote URL in its worktree' '
	ex 14 >turn3 &&
	aptix hash-object -w -t turn turn3 >actual &&
	ex 15 >expect &&
	test_cmp expect actual &&
	aptix cat-object turn $(cat actual) >back &&
	test_cmp turn3 back &&
	aptix cat-object -p $(cat actual) >pretty &&
	grep "^remote  *https://github.com/org/parser.git$" pretty &&
	python3 "$TEST_DIRECTORY/lib-store.py" .aptix value objects \
		"hex:$(cat actual)" >value &&
	python3 - "$TEST_DIRECTORY" value >body <<-\PY &&
	import importlib, sys, zlib
	sys.path.insert(0, sys.argv[1])
	varint = importlib.import_module("lib-objects").varint
	v = bytes.fromhex(open(sys.argv[2]).read().strip())
	assert v[0] & 0x1f == 2 and v[0] & 0x40, "a packed turn"
	_, i = varint(v, 1)
	plen, i = varint(v, i)
	body = v[i:] if v[0] & 0x80 else zlib.decompress(v[i:])
	assert len(body) == plen
	print(body.hex())
	PY
	grep "$(ex 16)\$" body &&
	sed "s/,\"remote\":\"[^\"]*\"//" turn3 >turn3old &&
	! test_cmp turn3 turn3old &&
	aptix hash-object -w -t turn turn3old >oldid &&
	aptix cat-object -p $(cat oldid) >pretty &&
	grep "^worktree  *469f72bde058fc9f866fa8bd01345645bfa25fb1 clean branch main$" pretty &&
	! grep "^remote" pretty
'

test_expect_success 'non-canonical turns are refused' '
	sed "s/\"seq\":1/\"seq\": 1/" turn >t1 &&
	test_must_fail aptix hash-object -t turn t1 2>err &&
	grep "not in canonical form" err &&
	sed "s/^{\(.*\),\"seq\":1,/{\"seq\":1,\1,/" turn >t2 &&
	! cmp turn t2 &&
	test_must_fail aptix hash-object -t turn t2 &&
	printf "%s" "$(cat turn)" >t3 &&
	test_must_fail aptix hash-object -t turn t3 &&
	sed "s/\"seq\":1/\"seq\":1.0/" turn >t4 &&
	test_must_fail aptix hash-object -t turn t4 &&
	sed "s/\"v\":1/\"v\":2/" turn >t5 &&
	test_must_fail aptix hash-object -t turn t5 2>err &&
	grep "is 2 without tool calls" err &&
	sed "s/\"v\":1/\"v\":3/" turn >t6 &&
	test_must_fail aptix hash-object -t turn t6 2>err &&
	grep "upgrade aptix" err
'

# The store records: the script that makes them, and each "vector <name>"
# as "<name> <hex>" (the hex digits of its lines, up to their "#").
awk '/^    # the script of the vectors below$/ { on = 1; next }
	on && !/^    / { exit }
	on { sub(/^    /, ""); print }' "$doc" >vector-script
awk '/^    vector / { name = $2; hex = ""; next }
	name != "" && /^    [0-9a-f]/ {
		line = $0; sub(/#.*/, "", line); gsub(/ /, "", line)
		hex = hex line; next }
	name != "" { print name, hex; name = "" }
	END { if (name != "") print name, hex }' "$doc" >vectors
awk '/^    json / { getline; sub(/^    /, ""); print }' "$doc" >running.json

store () {
	local dir=$1
	shift
	python3 "$TEST_DIRECTORY/lib-store.py" "$dir/.aptix" "$@"
}

# The nth session of main in time order (from its timeline key).
sid () {
	store main keys timeline | sed -n "$1p" | cut -c17-
}

# actual <name>: the bytes the vector <name> stands for, in hex.
# shellcheck disable=SC2154 # blob_a, blob_b, leak: set by the setup test
actual () {
	case $1 in
	reflog-key-0) store main keys reflog | sed -n 1p ;;
	reflog-0) store main get reflog "hex:$(actual reflog-key-0)" ;;
	reflog-1) store main get reflog \
		"hex:$(store main keys reflog | sed -n 2p)" ;;
	reflog-head-link) store values get reflog \
		"hex:$(store values keys reflog | grep "^48454144" | sed -n 2p)" ;;
	sessions-s1) store main get sessions "hex:$(sid 1)" ;;
	timeline-key-s1) store main keys timeline | sed -n 1p ;;
	record-s1) store main get timeline "hex:$(actual timeline-key-s1)" ;;
	record-s2) store main record "hex:$(sid 2)" ;;
	record-s3) store main record "hex:$(sid 3)" ;;
	children-s1-s2) store main keys children ;;
	conversation-c1) store main get conversations c1 ;;
	conversation-uuid) store main get conversations \
		6ba7b810-9dad-41d1-80b4-00c04fd430c8 ;;
	objects-a) store values get objects "hex:$blob_a" ;;
	objects-b) store values get objects "hex:$blob_b" ;;
	values-0) store values get values hex:0000000000000000 ;;
	values-1) store values get values hex:0000000000000001 ;;
	purged-leak) store values get purged "hex:$leak" ;;
	rag-stats) store rag get rag s ;;
	search-state) store main get search s ;;
	recency-state) store main get recency s ;;
	recency-key-c1) store main keys recency | grep "6331$" ;;
	import-key-id) store import keys imports ;;
	import-key-codex-t1-5)
		test "$(cd import && aptix rev-parse codex-t1)" = \
			"$(store import get imports hex:a126c135e3b97726a6603f17748b8fe1146f6f15d4b862bcfb671334cf318fc2 | cut -c3-66)" &&
		store import get imports hex:a126c135e3b97726a6603f17748b8fe1146f6f15d4b862bcfb671334cf318fc2 ;;
	search-ordinal-s2) store main get search "hex:69$(sid 2)" ;;
	search-doc-0) store main get search hex:6f00000000 ;;
	search-block-explain) store main get search bexplain ;;
	rag-doc-1) store rag get rag hex:6400000001 ;;
	rag-postings-parse) store rag get rag tparse ;;
	rag-manifest-main.c) store rag get rag fmain.c ;;
	*) echo "no such vector: $1" >&2; return 1 ;;
	esac
}

test_expect_success PYTHON3 'the document has its store vectors' '
	test_line_count -gt 40 vector-script &&
	test_line_count = 29 vectors &&
	! grep -v "^[a-z0-9.-]* [0-9a-f][0-9a-f]*$" vectors &&
	test_line_count = 1 running.json
'

test_expect_success PYTHON3 'the script of the store vectors runs' '
	mkdir v &&
	(cd v && sh -e ../vector-script) >script.out &&
	blob_a=$(sed -n 1p script.out) &&
	blob_b=$(sed -n 2p script.out) &&
	leak=$(printf "password=hunter2\n" | aptix hash-object --stdin) &&
	test_line_count = 3 script.out
'

while read -r name hex
do
	test_expect_success PYTHON3 "store vector $name" '
		(cd v && actual $name) >actual &&
		echo $hex >expect &&
		test_cmp expect actual
	'
done <vectors

test_expect_success PYTHON3 'the ids the store examples name are the stores'"'"' ' '
	sed -n "/^## Store records: worked examples/,\$p" "$doc" |
	grep -o "\`[0-9a-f]\{64\}\`" | tr -d "\`" | sort -u >ids &&
	test_line_count = 8 ids &&
	for id in $(cat ids)
	do
		(cd v/main && aptix cat-object -e $id) ||
		(cd v/values && aptix cat-object -e $id) ||
		(cd v && store values get purged hex:$id) >/dev/null ||
		return 1
	done
'

test_expect_success PYTHON3 'the stores of the vectors are sound' '
	for d in main values rag import
	do
		(cd v/$d && aptix fsck --full --no-dangling) || return 1
	done
'

test_expect_success PYTHON3 'the indexing run is timed by the wall clock' '
	# be64 ms, compared with the mtimes of files: not a monotonic clock
	t=$(cd v && store rag get rag if) &&
	test $((0x$t)) -ge $(( ($(date +%s) - 3600) * 1000 )) &&
	test $((0x$t)) -le $(( ($(date +%s) + 60) * 1000 ))
'

test_expect_success PYTHON3 'a running claim as documented is read' '
	mkdir r && (
		cd r &&
		aptix init -q &&
		printf "Explain the parser\n" | aptix hash-object -w --stdin &&
		store . put running c1 "$(cat ../running.json)" &&
		aptix fsck >fsck.out &&
		grep "^dead turn 18cf054225ac85e1315df09b5d27d2474cb0daa8c1eb629123ca2e0146dbabf5 in c1: pid 4242 on vector-host .*lease lapsed" fsck.out &&
		aptix status >status.out &&
		test_must_fail store . get running c1 &&
		aptix log --all --oneline >log.out &&
		grep "\[failed\] Explain the parser$" log.out
	)
'

test_done
