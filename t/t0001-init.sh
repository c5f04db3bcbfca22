#!/bin/sh
test_description='aptix init, store discovery and the dispatcher'
. "$(dirname "$0")"/test-lib.sh

test_expect_success 'init creates a private store' '
	aptix init >out &&
	grep "Initialized empty aptix store in .*/.aptix/" out &&
	test_path_is_dir .aptix &&
	test "$(stat -c %a .aptix)" = 700 &&
	test "$(stat -c %a .aptix/data.mdb)" = 600 &&
	test "$(stat -c %a .aptix/lock.mdb)" = 600
'

test_expect_success 'init again keeps the store' '
	echo keep | aptix hash-object -w --stdin >id &&
	aptix init >out &&
	grep "Reinitialized existing" out &&
	aptix cat-object -e $(cat id)
'

test_expect_success 'init into a new directory, -q' '
	aptix init -q sub/dir >out &&
	test_must_be_empty out &&
	test_path_is_dir sub/dir/.aptix
'

test_expect_success 'commands find the store from a subdirectory' '
	mkdir -p deep/er &&
	(cd deep/er && aptix cat-object -e $(cat ../../id))
'

test_expect_success '-C and APTIX_DIR' '
	aptix -C deep cat-object -e $(cat id) &&
	(cd / && APTIX_DIR="$TRASH_DIRECTORY/.aptix" aptix cat-object -e $(cat "$TRASH_DIRECTORY/id"))
'

test_expect_success 'a directory that is not a store' '
	mkdir -p /tmp/aptix-nostore-$$ &&
	test_when_finished "rm -rf /tmp/aptix-nostore-$$" &&
	(cd /tmp/aptix-nostore-$$ && test_must_fail aptix cat-object -p 0000 2>err &&
	 grep "^fatal: not an aptix store" err) &&
	test_must_fail env APTIX_DIR=/tmp/aptix-nostore-$$ aptix cat-object -p 0000 2>err &&
	grep "^fatal: not an aptix store" err
'

test_expect_success 'a store written by a newer format version is refused' '
	aptix init -q newer &&
	mdb_dump -s meta newer/.aptix >meta &&
	sed "s/^ 3[0-8]$/ 39/" meta >meta2 &&
	! cmp meta meta2 &&
	mdb_load -s meta -f meta2 newer/.aptix &&
	test_must_fail aptix -C newer cat-object -p 0000 2>err &&
	grep "newer than this aptix supports" err
'

test_expect_success 'version and help' '
	aptix --version >out &&
	grep "^aptix version [0-9]" out &&
	aptix help >out &&
	grep "hash-object" out &&
	grep "^Low-level commands" out
'

test_expect_success 'unknown command suggests the closest' '
	test_expect_code 1 aptix cat-objekt 2>err &&
	grep "is not an aptix command" err &&
	grep "cat-object" err
'

test_expect_success 'unknown global option' '
	test_expect_code 129 aptix --bogus
'

test_expect_success 'APTIX_DIR names the store init creates, as GIT_DIR does' '
	mkdir -p envdir/work &&
	(
		cd envdir/work &&
		APTIX_DIR=../elsewhere/.aptix aptix init >out &&
		grep "Initialized empty aptix store in .*/envdir/elsewhere/.aptix/" out &&
		test_path_is_missing .aptix &&
		test -f ../elsewhere/.aptix/data.mdb &&
		APTIX_DIR=../elsewhere/.aptix aptix status >status &&
		grep "^On conversation" status &&
		APTIX_DIR=../elsewhere/.aptix aptix init >out &&
		grep "^Reinitialized existing" out
	)
'

test_expect_success 'the store names its backend: one this build lacks is refused' '
	mkdir ext && (
		cd ext &&
		aptix init -q &&
		aptix config extensions.storage lmdb &&
		aptix status >/dev/null &&
		test_must_fail aptix config extensions.storage nosuch 2>err &&
		grep "extensions.storage" err &&
		printf "[extensions]\n\tstorage = sqlite\n" >>.aptix/config &&
		cp .aptix/data.mdb before.mdb &&
		test_expect_code 128 aptix status 2>err &&
		grep "^fatal: .*a .sqlite. backend, which this aptix cannot open (extensions.storage; this build has: lmdb, memory, postgresql)$" err &&
		test_expect_code 128 aptix log 2>err &&
		grep "sqlite" err &&
		# only the store says: not -c, not the user file
		test_expect_code 128 aptix -c extensions.storage=lmdb status &&
		cmp before.mdb .aptix/data.mdb &&
		# a backend that keeps nothing on disk is no store'"'"'s
		sed -i "s/sqlite/memory/" .aptix/config &&
		test_expect_code 128 aptix status 2>err &&
		grep "^fatal: the .memory. backend keeps nothing on disk" err &&
		cmp before.mdb .aptix/data.mdb
	)
'

test_done
