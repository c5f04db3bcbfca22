#!/bin/sh

test_description='a turn flushes three times, and last

A turn needs two durable writes: its claim (with the instruction)
before the network, its answer after. LMDB commits with a flush of the
pages and a synchronous write of the meta page: four flushes a turn.
The claim is now committed with MDB_NOMETASYNC semantics (its pages
flushed, its meta page written without waiting) and the commit after
the network flushes the claim'"'"'s meta page with its own pages, then
its own meta page (store-lmdb.c, "Flushes"): three. The process ends
only after the last of them, so what the user is told is committed is
on disk.'

. "$(dirname "$0")"/test-lib.sh
. "$TEST_DIRECTORY"/lib-standin.sh

test_lazy_prereq STRACE 'strace -o /dev/null true'
if ! test_have_prereq PYTHON3,STRACE
then
	# shellcheck disable=SC2034 # read by test_done
	skip_all='python3 and strace are needed'
	test_done
fi

# traced <command>...: run it under strace, then print data.mdb's
# writes and flushes in order: "write" (through a plain descriptor),
# "sync-write" (through an O_DSYNC or O_SYNC one: a flush), "flush"
# (fdatasync, fsync, msync)
traced () {
	# (LeakSanitizer cannot run under ptrace: no leak check here)
	ASAN_OPTIONS="${ASAN_OPTIONS:+$ASAN_OPTIONS:}detect_leaks=0" \
	strace -f -o trace \
		-e trace=openat,fdatasync,fsync,msync,write,writev,pwrite64,pwritev \
		"$@" >/dev/null &&
	awk '/openat\(.*data\.mdb/ {
			fd = $NF; kind[fd] = /O_D?SYNC/ ? "sync-write" : "write" }
		/fdatasync\(|fsync\(|msync\(/ { print "flush" }
		/(pwrite64|pwritev|writev|write)\(/ {
			split($2, a, /[(,]/)
			if (a[2] in kind) print kind[a[2]] }' trace |
	uniq
}

test_expect_success 'setup' '
	start_standin &&
	aptix init -q &&
	aptix continue -q --no-stream -m "first" >/dev/null
'

test_expect_success 'a turn flushes three times, the last one last' '
	traced aptix continue -q --no-stream -m "second" >actual &&
	cat >expect <<-\EOF &&
	write
	flush
	write
	flush
	write
	flush
	EOF
	test_cmp expect actual &&
	aptix log --oneline >log &&
	test_line_count = 2 log
'

test_expect_success 'every other write is durable on its own' '
	traced aptix update-ref refs/heads/x HEAD >actual &&
	cat >expect <<-\EOF &&
	write
	flush
	write
	flush
	EOF
	test_cmp expect actual
'

test_done
