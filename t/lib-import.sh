# Shell helpers of the import and export tests (t91xx), sourced.

# instore <dir> <command>...: run a command on the store in <dir>
instore () {
	local d=$1
	shift
	APTIX_DIR="$TRASH_DIRECTORY/$d/.aptix" "$@"
}

# snapshot_state <dir>: every object (id, type, size) and every ref
snapshot_state () {
	instore "$1" aptix cat-object --batch-check --batch-all-objects | sort &&
	instore "$1" aptix for-each-ref
}

# json_field <name> <file>: one field of a --json summary (t9102 has its
# own, a jq path)
json_field () {
	python3 -c 'import json,sys; print(json.load(open(sys.argv[2]))[sys.argv[1]])' "$1" "$2"
}

# grown_goes_on <dir> <rollout> <VAR=value>: a store in <dir> gets the
# rollout's first two turns imported with VAR=value (as an older aptix
# did), then the whole file by this one: one new turn, a child of the
# snapshot the store had (the file in part/)
grown_goes_on () {
	local n
	aptix init -q "$1" &&
	mkdir -p part &&
	n=$(grep -n "\"task_complete\"" "$2" | sed -n 2p | cut -d: -f1) &&
	head -n "$n" "$2" >"part/${2##*/}" &&
	instore "$1" env "$3" aptix import -q codex part &&
	instore "$1" aptix rev-parse "$CODEX" >head2 &&
	cp "$2" part/ &&
	instore "$1" aptix import --json codex part >out 2>err &&
	test_must_be_empty err &&
	test "$(json_field new_turn_count out)" = 1 &&
	instore "$1" aptix rev-parse "$CODEX~1" >parent &&
	test_cmp head2 parent
}
