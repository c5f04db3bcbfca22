#!/bin/sh
test_description='aptix started with stdin, stdout and stderr closed

A process started by cron, nohup, an editor or a daemon may find
descriptors 0-2 closed. aptix occupies them with /dev/null before it
opens anything, so that the store never gets one of them and no message
meant for stderr lands in data.mdb or lock.mdb: a read command that
fails, a turn refused as busy beside a running one, a turn that
succeeds, and a .aptix store inside a git work tree (which warns) all
leave the store clean.'
. "$(dirname "$0")"/test-lib.sh
. "$TEST_DIRECTORY"/lib-standin.sh

if ! test_have_prereq PYTHON3
then
	skip_all='python3 is needed to run the OpenAI stand-in'
	test_done
fi

# store_clean <text>...: fsck --full is clean and neither store file
# holds any of the texts (messages aptix would have printed)
store_clean () {
	local dir t
	dir=$(store_dir) &&
	aptix fsck --full --no-dangling >fsck.out &&
	test_must_be_empty fsck.out &&
	for t in "$@"
	do
		if grep -a -F -l -e "$t" "$dir/data.mdb" "$dir/lock.mdb"
		then
			echo "'$t' was written into the store" >&2
			return 1
		fi
	done
}

# closed [--keep-stdin] <code> <command>...: run the command with
# descriptors 0-2 closed (1-2 with --keep-stdin); it must exit with
# code (and die of no signal)
closed () {
	local keep='' want code
	test "$1" = --keep-stdin && keep=t && shift
	want=$1
	shift
	if test -n "$keep"
	then
		"$@" >&- 2>&-
	else
		"$@" <&- >&- 2>&-
	fi
	code=$?
	test "$code" = "$want" && return 0
	echo "closed: '$*' exited with $code, wanted $want" >&2
	return 1
}

test_expect_success 'setup' '
	start_standin &&
	aptix init -q &&
	aptix continue -m "a first turn" >out 2>err &&
	conv=$(aptix symbolic-ref --short HEAD)
'

test_expect_success 'a read command that fails with stdout and stderr closed' '
	closed --keep-stdin 128 aptix show nosuchrev &&
	closed 128 aptix show nosuchrev &&
	store_clean nosuchrev "fatal:" &&
	aptix log --oneline >log &&
	grep "a first turn" log
'

test_expect_success 'a turn that succeeds with stdin, stdout and stderr closed' '
	closed 0 aptix continue -m "closed descriptors" &&
	store_clean "tokens (" &&
	aptix log --oneline >log &&
	grep "closed descriptors" log
'

test_expect_success 'a turn refused as busy, closed, beside a running turn' '
	head=$(aptix rev-parse HEAD) &&
	n=$(request_count) &&
	standin_fault "{\"kind\":\"slow\",\"delay\":6}" &&
	{ aptix continue --no-stream -m "the running turn" >first.out \
		2>first.err & } &&
	first=$! &&
	test_when_finished "kill_children $first" &&
	wait_for_requests $((n + 1)) &&
	closed 128 aptix continue -m "the refused turn" &&
	child_running $first &&
	wait_for_exit $first 20 &&
	wait $first &&
	grep "^Answer #.* to: the running turn" first.out &&
	store_clean "is busy" "fatal:" &&
	aptix log --oneline >log &&
	grep "the running turn" log &&
	! grep "the refused turn" log &&
	test "$(aptix rev-parse HEAD^)" = "$head"
'

test_expect_success 'a .aptix store inside a git work tree, closed descriptors' '
	mkdir legacy &&
	(
		cd legacy &&
		aptix init -q &&
		git init -q &&
		test -d .aptix &&
		aptix status >out 2>err &&
		grep "inside a git work tree" err &&
		closed 0 aptix status &&
		closed 128 aptix show nosuchrev &&
		closed 0 aptix continue -m "in the work tree" &&
		test "$(store_dir)" = "$(pwd)/.aptix" &&
		store_clean "inside a git work tree" nosuchrev "tokens (" &&
		aptix log --oneline >log &&
		grep "in the work tree" log
	)
'

test_done
