#!/bin/sh
test_description='fuzz corpus and regressions replayed

Each libFuzzer harness of t/fuzz/ is also built with a main() that
reads files (t/fuzz/replay-<name>, by make test); it runs here over the
seed corpus (t/fuzz/corpus/<name>) and the inputs of the crashes the
fuzzers found, now fixed (t/fuzz/regressions/<name>). Under make check
the second run is an ASan+UBSan build, so a regression shows as a
sanitizer report. A finding aborts the harness (exit >= 128).'
. "$(dirname "$0")"/test-lib.sh

for name in object config sse openai_json refname revparse
do
	replay=$APTIX_BUILD_DIR/t/fuzz/replay-$name
	if test -x "$replay"
	then
		test_set_prereq "REPLAY_$name"
	fi
	test_expect_success "REPLAY_$name" "replay $name: corpus and regressions" '
		set -- &&
		for d in "$TEST_DIRECTORY/fuzz/corpus/'"$name"'" \
			 "$TEST_DIRECTORY/fuzz/regressions/'"$name"'"
		do
			if test -d "$d"
			then
				set -- "$@" "$d"
			fi
		done &&
		test $# -gt 0 &&
		"$APTIX_BUILD_DIR/t/fuzz/replay-'"$name"'" "$@" >out &&
		cat out &&
		grep "^replayed [1-9][0-9]* inputs$" out
	'
done

test_done
