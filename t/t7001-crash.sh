#!/bin/sh
test_description='crash safety: commands killed with SIGKILL at random moments

A loop of turns (continue against the OpenAI stand-in, slowed down with
"slow" faults so that the kills land before, during and after the
network call and the commits) and plumbing writes (hash-object -w
--stdin-paths of large files, update-ref --stdin batches), each killed
with SIGKILL after a random delay of 0 to 200 ms. After every kill:

 - the next command recovers: status succeeds and shows no turn running;
 - fsck --full is clean (exit 0);
 - every turn that reported success (a session id printed by
   continue --json) is still there, readable and in its conversation;
 - every object printed by hash-object is there, and each batch landed
   whole or not at all; refs moved by a batch moved together.

At the end, no accepted instruction is lost: every instruction blob in
the store (each instruction carries a unique marker) is the instruction
of a turn of a session that log --all lists (completed, or failed when
the process died after the claim).

APTIX_CRASH_ITERATIONS sets the number of rounds (default 60; each
round kills at most one command); the loop also stops after
APTIX_CRASH_SECONDS (default 30, none when APTIX_CRASH_ITERATIONS is
given without it), so that the script stays under a minute in make check.
The number of kills survived is printed at the end.'

# read before test-lib.sh, which drops the APTIX_* variables
crash_iterations=${APTIX_CRASH_ITERATIONS:-${APTIX_TEST_CRASH_ITERATIONS-}}
crash_seconds=${APTIX_CRASH_SECONDS:-${APTIX_TEST_CRASH_SECONDS-}}
. "$(dirname "$0")"/test-lib.sh
. "$TEST_DIRECTORY"/lib-standin.sh
. "$TEST_DIRECTORY"/lib-objects.sh

if ! test_have_prereq PYTHON3
then
	skip_all='python3 is needed to run the OpenAI stand-in'
	test_done
fi

if test -n "$crash_iterations"
then
	iterations=$crash_iterations
	seconds=${crash_seconds:-0}
else
	iterations=60
	seconds=${crash_seconds:-30}
fi

# random_ms <max>: a random number in 0..max
random_ms () {
	echo $(( (RANDOM * 32768 + RANDOM) % ($1 + 1) ))
}

# sleep_ms <ms>
sleep_ms () {
	sleep "$(($1 / 1000)).$(printf %03d $(($1 % 1000)))"
}

# kill_after <pid> <ms>: SIGKILL pid after ms (if it still runs), reap
# it and set $rc to its exit status (137 when the kill landed).
kill_after () {
	test "$2" = 0 || sleep_ms "$2"
	kill -9 "$1" 2>/dev/null
	wait "$1" 2>/dev/null	# no "Killed" job notices: they hide failures
	rc=$?
}

# check_recovered: what must hold after every round ($round is set by
# the loop in the test body, which shellcheck does not see).
# shellcheck disable=SC2154
check_recovered () {
	aptix status --json >status.json 2>status.err || {
		echo "status failed after round $round:" >&2
		cat status.err >&2
		return 1
	}
	json_field .running <status.json >running &&
	if test "$(cat running)" != "[]"
	then
		echo "turns still running after round $round:" >&2
		cat status.json >&2
		return 1
	fi &&
	aptix fsck --full >fsck.out 2>&1 || {
		echo "fsck --full failed after round $round:" >&2
		cat fsck.out >&2
		return 1
	}
}

test_expect_success 'setup: store, stand-in, large files, two sessions' '
	aptix init &&
	start_standin &&
	aptix continue -q -m "crash test: first turn" >/dev/null &&
	conv=$(aptix status --json | json_field .conversation) &&
	test -n "$conv" &&
	python3 -c "
import base64, os
for n in (1, 2):
    with open(\"big%d\" % n, \"w\") as f:
        f.write(base64.b64encode(os.urandom(1 << 20)).decode())
" &&
	sa=$(make_session refcrash-a "session a") &&
	sb=$(make_session refcrash-b "session b") &&
	aptix update-ref refs/crash/a "$sa" &&
	aptix update-ref refs/crash/b "$sa" &&
	: >markers && : >successes && : >written
'

test_expect_success 'turns and plumbing writes killed at random moments' '
	kills=0 turns=0 turn_kills=0 ok_turns=0 hashes=0 refs=0 &&
	hash_kills= ref_kills= &&
	start=$(date +%s) &&
	round=0 &&
	while test "$round" -lt "$iterations"
	do
		round=$((round + 1)) &&
		if test "$seconds" -gt 0 &&
		   test $(($(date +%s) - start)) -ge "$seconds"
		then
			round=$((round - 1)) &&
			break
		fi &&
		# a fifth of the kills within 10 ms: before or at the claim
		if test "$(random_ms 4)" = 0
		then
			delay=$(random_ms 10)
		else
			delay=$(random_ms 200)
		fi &&
		what=$(random_ms 9) &&
		# a kill at once may land before the child opens out and err
		: >out && : >err &&
		case $what in
		[0-6])
			# a turn: in the main conversation, or a new one
			turns=$((turns + 1)) &&
			marker="crash-marker-$round-$RANDOM$RANDOM" &&
			instr="instruction $marker" &&
			blob=$(printf %s "$instr" | aptix hash-object --stdin) &&
			if test "$what" = 6
			then
				set -- --create --conversation "crash-new-$round"
			else
				set -- --conversation "$conv"
			fi &&
			standin_reset &&
			standin_fault "{\"kind\":\"slow\",\"delay\":0.0$(random_ms 5)}" &&
			{ aptix continue --json -q "$@" -m "$instr" >out 2>err &
			  pid=$!; } &&
			kill_after "$pid" "$delay" &&
			echo "$marker $blob $rc" >>markers &&
			session=$(sed -n "s/^  \"session\": \"\\([0-9a-f]\\{64\\}\\)\",\$/\\1/p" out) &&
			if test "$rc" = 0 && test -z "$session"
			then
				echo "round $round: continue succeeded without a session" >&2 &&
				cat out err >&2 &&
				false
			fi &&
			if test -n "$session"
			then
				ok_turns=$((ok_turns + 1)) &&
				# the session and its conversation (the last argument)
				eval "echo \"\$session --conversation \${$#}\"" >>successes
			fi &&
			if test "$rc" = 137
			then
				turn_kills=$((turn_kills + 1))
			elif test "$rc" != 0
			then
				echo "round $round: continue failed (exit $rc):" >&2 &&
				cat err >&2 &&
				false
			fi
			;;
		[7-8])
			# hash-object -w --stdin-paths: about 3 MB in one batch
			hashes=$((hashes + 1)) &&
			{ cat big1 && echo "$round"; } >f1 &&
			{ cat big2 && echo "$round"; } >f2 &&
			echo "hash-object $round" >f3 &&
			{ printf "f1\nf2\nf3\n" |
			  aptix hash-object -w --stdin-paths >out 2>err &
			  pid=$!; } &&
			kill_after "$pid" "$delay" &&
			aptix hash-object f1 f2 f3 >ids &&
			# ids are printed once committed, so a kill may
			# leave all or none of them printed
			if test "$rc" = 0 || test -s out
			then
				test_cmp ids out
			elif test "$rc" != 137
			then
				echo "round $round: hash-object failed (exit $rc):" >&2 &&
				cat err >&2 &&
				false
			fi &&
			present=0 &&
			for id in $(cat ids)
			do
				if aptix cat-object -e "$id"
				then
					present=$((present + 1))
				fi || return 1
			done &&
			if test "$rc" = 137
			then
				hash_kills="$hash_kills $present"
			fi &&
			if test -s out && test "$present" != 3
			then
				echo "round $round: objects hash-object printed are missing" >&2 &&
				false
			fi &&
			case $present in
			0|3) ;;
			*)
				echo "round $round: $present of 3 objects of one batch were stored" >&2 &&
				false ;;
			esac &&
			cat ids >>written
			;;
		*)
			# an atomic batch of two ref updates, killed while it
			# reads its input or while it commits
			refs=$((refs + 1)) &&
			old=$(aptix rev-parse refs/crash/a) &&
			if test "$old" = "$sa"
			then
				new=$sb
			else
				new=$sa
			fi &&
			{ { printf "update refs/crash/a %s %s\n" "$new" "$old" &&
			    sleep_ms "$(random_ms 100)" &&
			    printf "update refs/crash/b %s %s\n" "$new" "$old"
			  } 2>/dev/null | aptix update-ref --stdin >out 2>err &
			  pid=$!; } &&
			kill_after "$pid" "$delay" &&
			a=$(aptix rev-parse refs/crash/a) &&
			b=$(aptix rev-parse refs/crash/b) &&
			if test "$rc" = 0 && test "$a" != "$new"
			then
				echo "round $round: update-ref succeeded, ref not moved" >&2 &&
				false
			elif test "$rc" != 0 && test "$rc" != 137
			then
				echo "round $round: update-ref failed (exit $rc):" >&2 &&
				cat err >&2 &&
				false
			elif test "$rc" = 137
			then
				if test "$a" = "$new"
				then
					ref_kills="$ref_kills moved"
				else
					ref_kills="$ref_kills kept"
				fi
			fi &&
			if test "$a" != "$b"
			then
				echo "round $round: a batch landed half: a=$a b=$b" >&2 &&
				false
			fi &&
			{ test "$a" = "$old" || test "$a" = "$new"; } &&
			aptix reflog refs/crash/a >/dev/null
			;;
		esac &&
		if test "$rc" = 137
		then
			kills=$((kills + 1))
		fi &&
		check_recovered || return 1
	done &&
	set -- $hash_kills &&
	hk=$# hk0=$(echo "$hash_kills" | tr " " "\n" | grep -c "^0$" || :) &&
	set -- $ref_kills &&
	rk=$# rk0=$(echo "$ref_kills" | tr " " "\n" | grep -c "^kept$" || :) &&
	echo "$round rounds, $kills kills survived: $turns turns ($turn_kills killed, $ok_turns succeeded), $hashes hash-object batches ($hk killed: $hk0 before the commit, $((hk - hk0)) after), $refs update-ref batches ($rk killed: $rk0 before the commit, $((rk - rk0)) after)" >summary &&
	cat summary &&
	test "$round" -gt 0
'

test_expect_success 'every turn that reported success is still there' '
	while read -r session conv_opt conv_id
	do
		aptix show "$session" >show.out &&
		aptix show --json "$session" >show.json &&
		test "$(json_field .status <show.json)" = committed &&
		test "$(json_field .conversation <show.json)" = "$conv_id" &&
		aptix log --format=%H "$conv_id" >chain &&
		grep -q "^$session\$" chain || {
			echo "$session is not in the chain of $conv_id" >&2
			return 1
		}
	done <successes
'

test_expect_success 'every stored instruction belongs to a listed turn' '
	aptix log --all --format="%T" >turns &&
	aptix cat-object --batch <turns >turns.batch &&
	python3 -c "
import json, sys
for line in open(sys.argv[1], encoding=\"utf-8\", errors=\"replace\"):
    if line.startswith(\"{\"):
        t = json.loads(line)
        print(t[\"instruction\"], t[\"status\"])
" turns.batch | sort -u >referenced &&
	stored=0 lost=0 before=0 failed=0 completed=0 &&
	while read -r marker blob rc
	do
		if aptix cat-object -e "$blob"
		then
			stored=$((stored + 1)) &&
			status=$(sed -n "s/^$blob //p" referenced) &&
			case "$status,$rc" in
			,*)
				echo "instruction $marker ($blob) is stored but no turn has it" >&2 &&
				lost=$((lost + 1)) ;;
			failed,137)
				failed=$((failed + 1)) ;;
			completed,137)
				completed=$((completed + 1)) ;;
			esac
		elif test "$rc" = 137
		then
			before=$((before + 1))
		fi || return 1
	done <markers &&
	echo "$stored of $(wc -l <markers) instructions were accepted; $lost lost" &&
	test "$lost" = 0 &&
	aptix fsck --full &&
	printf "# t7001: %s\n# t7001: killed turns: %s before the claim, %s recovered as failed snapshots, %s completed before the kill; %s instructions accepted, none lost\n" \
		"$(cat summary)" "$before" "$failed" "$completed" "$stored" >&9
'

test_done
