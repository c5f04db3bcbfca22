#!/bin/sh
# t/perf/pg-load-client.sh - one client of t/perf/pg-load.sh, a process
# of its own: turns on conversation CONV of the store in DIR until the
# clock passes UNTIL (seconds since the epoch), one line a step in LOG:
#
#	turn <start ms> <end ms> <exit> <session|-> <moved 0|1>
#	push <start ms> <end ms> <exit> <objects sent>
#	fetch <start ms> <end ms> <exit>
#
# KIND: direct (DIR is a store that is PostgreSQL) or local (DIR is an
# LMDB store with the remote origin: a push after every turn, a fetch
# after every fifth).
#
#	sh pg-load-client.sh KIND DIR CONV UNTIL LOG
set -u
kind=$1 dir=$2 conv=$3 until=$4 log=$5
APTIX=${APTIX:-aptix}
ms() { date +%s%3N; }
i=0
while [ "$(date +%s)" -lt "$until" ]; do
	i=$((i + 1))
	s=$(ms)
	out=$("$APTIX" -C "$dir" continue --json --no-stream --no-files \
		--no-rag --conversation "$conv" --create \
		-m "load turn $i of $conv" 2>>"$dir.err")
	rc=$?
	e=$(ms)
	id=$(printf '%s' "$out" | sed -n 's/.*"session": *"\([0-9a-f]\{64\}\)".*/\1/p' | head -n 1)
	moved=0
	case $out in *"conversation moved while the turn ran"*) moved=1 ;; esac
	echo "turn $s $e $rc ${id:--} $moved" >>"$log"
	[ "$kind" = local ] || continue
	s=$(ms)
	"$APTIX" -C "$dir" push origin "$conv" 2>"$dir.push"
	rc=$?
	e=$(ms)
	n=$(sed -n 's/^Sent \([0-9]*\) objects.*/\1/p' "$dir.push" | head -n 1)
	echo "push $s $e $rc ${n:-0}" >>"$log"
	[ $((i % 5)) -eq 0 ] || continue
	s=$(ms)
	"$APTIX" -C "$dir" fetch -q origin 2>>"$dir.err"
	rc=$?
	echo "fetch $s $(ms) $rc" >>"$log"
done
