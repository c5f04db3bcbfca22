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
