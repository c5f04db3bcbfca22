#!/bin/sh
test_description='a full store: an LMDB map that cannot grow, a full file system

(a) APTIX_STORE_MAX_MB caps the LMDB map: writes past it fail with a
clear error and exit 128, nothing is damaged, what was written stays
readable, and once the cap is raised writing works again. A turn whose
final snapshot cannot fit (the store fills up while the answer streams)
fails cleanly; its claim is recovered as a failed snapshot by the next
command that has room.

(b) The same on a small tmpfs (needs root and mount): a full file
system gives "no space left on device", and freeing space (a ballast
file is removed) makes the store usable again.'
. "$(dirname "$0")"/test-lib.sh
. "$TEST_DIRECTORY"/lib-standin.sh

if ! test_have_prereq PYTHON3
then
	skip_all='python3 is needed to run the OpenAI stand-in'
	test_done
fi

# fill <limit> [<size>]: write random blobs of <size> bytes (64 KiB) until hash-object -w fails (at
# most <limit> of them); the ids written go to ids, the exit code of the
# failure to fill.rc and its message to fill.err.
fill () {
	local i=0 rc
	while test "$i" -lt "$1"
	do
		i=$((i + 1))
		head -c "${2:-65536}" /dev/urandom >"$TRASH_DIRECTORY/blob" &&
		aptix hash-object -w "$TRASH_DIRECTORY/blob" \
			>>"$TRASH_DIRECTORY/ids" 2>"$TRASH_DIRECTORY/fill.err"
		rc=$?
		if test "$rc" != 0
		then
			echo "$rc" >"$TRASH_DIRECTORY/fill.rc"
			echo "write $i failed with exit $rc:" \
				"$(cat "$TRASH_DIRECTORY/fill.err")"
			return 0
		fi
	done
	echo "the store did not fill up after $1 writes" >&2
	return 1
}

# all_readable: every id in ids is there and valid
all_readable () {
	while read -r id
	do
		aptix cat-object -e "$id" || {
			echo "$id is not readable" >&2
			return 1
		}
	done <"$TRASH_DIRECTORY/ids"
}

# fsck_clean: fsck --full exits 0 and reports nothing but dangling objects
fsck_clean () {
	aptix fsck --full >"$TRASH_DIRECTORY/fsck.out" 2>&1 &&
	! grep -v "^dangling " "$TRASH_DIRECTORY/fsck.out"
}

test_expect_success 'setup' '
	aptix init &&
	start_standin &&
	aptix continue -q -m "a first turn" >/dev/null &&
	first=$(aptix rev-parse HEAD) &&
	: >ids
'

test_expect_success 'writes past APTIX_STORE_MAX_MB fail cleanly' '
	APTIX_STORE_MAX_MB=2 &&
	export APTIX_STORE_MAX_MB &&
	test_when_finished "unset APTIX_STORE_MAX_MB" &&
	fill 100 &&
	test "$(cat fill.rc)" = 128 &&
	grep "store is full: it reached its maximum size of 2 MiB" fill.err &&
	test_line_count = 1 fill.err &&
	cp blob blob.failed &&
	test_must_fail aptix hash-object -w blob.failed 2>err &&
	grep "store is full" err
'

test_expect_success 'the full store is consistent and readable' '
	APTIX_STORE_MAX_MB=2 &&
	export APTIX_STORE_MAX_MB &&
	test_when_finished "unset APTIX_STORE_MAX_MB" &&
	test_line_count -gt 10 ids &&
	all_readable &&
	aptix show "$first" >/dev/null &&
	aptix status >/dev/null &&
	aptix log --all --oneline >/dev/null &&
	fsck_clean
'

test_expect_success 'raising the limit makes the store writable again' '
	id=$(aptix hash-object -w blob.failed) &&
	echo "$id" >>ids &&
	aptix cat-object blob "$id" >back &&
	test_cmp_bin blob.failed back &&
	all_readable &&
	fsck_clean
'

# The turn claims its conversation (a small write), then the store is
# filled to its cap while the stand-in streams the answer slowly, so that
# the final snapshot cannot fit: long system instructions (the config's
# openai.instructions, 256 KiB of random text) make its request and its
# response (which echoes them) some 400 KiB after compression.
test_expect_success 'a turn whose final snapshot cannot fit fails cleanly' '
	test_when_finished "rm -f .aptix/config" &&
	python3 -c "
import base64, os
with open(\".aptix/config\", \"a\") as f:
    f.write(\"[openai]\\n\\tinstructions = \" +
            base64.b64encode(os.urandom(196608)).decode() + \"\\n\")
" &&
	used=$(($(wc -c <.aptix/data.mdb) >> 20)) &&
	cap=$((used + 2)) &&
	head=$(aptix rev-parse HEAD) &&
	requests=$(request_count) &&
	standin_reset &&
	# the answer comes after 10 s (once: --no-stream), when fill is done
	# (ASan under prove -j2 on a loaded machine has needed more than 6)
	standin_fault "{\"kind\":\"slow\",\"delay\":10}" &&
	instr="the turn that finds the store full $(head -c 16 /dev/urandom | od -An -tx1 | tr -d " \\n")" &&
	echo "$instr" >instr &&
	{ APTIX_STORE_MAX_MB=$cap aptix continue --no-stream -m "$instr" >turn.out 2>turn.err &
	  pid=$!; } &&
	wait_for_requests $((requests + 1)) &&
	APTIX_STORE_MAX_MB=$cap fill 200 &&
	{ wait "$pid"; rc=$?; } &&
	cat turn.err &&
	test "$rc" -gt 0 && test "$rc" -lt 129 &&
	grep "store is full" turn.err &&
	APTIX_STORE_MAX_MB=$cap aptix status --json >status.json &&
	cat status.json &&
	test "$(aptix rev-parse HEAD)" = "$head" &&
	APTIX_STORE_MAX_MB=$cap all_readable &&
	APTIX_STORE_MAX_MB=$cap fsck_clean
'

test_expect_success 'the claim is recovered as a failed snapshot, the store works on' '
	aptix status --json >status.json &&
	test "$(json_field .running <status.json)" = "[]" &&
	test "$(json_field .last_failed.instruction <status.json)" = "$(cat instr)" &&
	json_field .last_failed.errors <status.json >errors &&
	cat errors &&
	aptix log --all --format="%S %s" >log &&
	grep "^failed the turn that finds the store full" log &&
	fsck_clean &&
	aptix continue -q -m "after the full store" >out &&
	test "$(aptix rev-parse HEAD^)" = "$head"
'

# Regression: when the final snapshot does not fit, the process records
# a failed snapshot without the payloads, with the "store is full" error,
# and releases its claim.
test_expect_success 'the failed snapshot says the store was full' '
	grep "store is full" errors
'

test_lazy_prereq TMPFS '
	test "$(id -u)" = 0 &&
	mkdir mnt &&
	mount -t tmpfs -o size=1m tmpfs mnt &&
	umount mnt
'

test_expect_success TMPFS 'a full file system: clear error, nothing damaged' '
	mkdir fs &&
	mount -t tmpfs -o size=2m tmpfs fs &&
	test_when_finished "umount fs" &&
	head -c 393216 /dev/zero >fs/ballast &&
	(
		cd fs &&
		aptix init &&
		aptix continue -q -m "a turn on the small file system" >/dev/null &&
		: >"$TRASH_DIRECTORY/ids" &&
		fill 100 &&
		test "$(cat "$TRASH_DIRECTORY/fill.rc")" = 128 &&
		grep "no space left on device" "$TRASH_DIRECTORY/fill.err" &&
		# then what is left, with small values (a 64 KiB one no longer
		# fits where a turn still does)
		fill 1000 256 &&
		test "$(cat "$TRASH_DIRECTORY/fill.rc")" = 128 &&
		grep "no space left on device" "$TRASH_DIRECTORY/fill.err" &&
		all_readable &&
		aptix status >/dev/null &&
		fsck_clean &&
		test_must_fail aptix continue -m "a turn on the full file system" \
			2>"$TRASH_DIRECTORY/err" &&
		cat "$TRASH_DIRECTORY/err" &&
		grep "no space left on device" "$TRASH_DIRECTORY/err" &&
		aptix status >/dev/null &&
		# the disk may have filled after the turn stored its
		# instruction: then its claim waits for room to be recorded
		aptix fsck --full >"$TRASH_DIRECTORY/fsck-full.out" 2>&1 &&
		! grep -v -e "^dangling " -e "^dead turn " \
			"$TRASH_DIRECTORY/fsck-full.out" &&

		rm ballast &&
		aptix hash-object -w "$TRASH_DIRECTORY/blob" >>"$TRASH_DIRECTORY/ids" &&
		aptix continue -q -m "after freeing space" >/dev/null &&
		all_readable &&
		fsck_clean &&
		aptix log --all --format="%S %s" >"$TRASH_DIRECTORY/log" &&
		cat "$TRASH_DIRECTORY/log" &&
		grep "^committed after freeing space" "$TRASH_DIRECTORY/log" &&
		if grep "^dead turn " "$TRASH_DIRECTORY/fsck-full.out"
		then
			grep "^failed a turn on the full file system" \
				"$TRASH_DIRECTORY/log"
		else
			! grep "a turn on the full file system" \
				"$TRASH_DIRECTORY/log"
		fi &&
		grep "^committed a turn on the small file system" "$TRASH_DIRECTORY/log"
	)
'

test_done
