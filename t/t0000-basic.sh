#!/bin/sh

test_description='test the test library itself (t/test-lib.sh)

These tests do not need the aptix binary.  Behaviour that would make this
script fail (failing tests, fatal exits, --immediate, ...) is checked by
running small sub-scripts and comparing their TAP output.'

test_lib_no_binary=t
. "$(dirname "$0")"/test-lib.sh

# write_sub_test NAME <script: write ./NAME.sh, a test script that sources
# test-lib.sh (without needing the aptix binary) followed by the script.
write_sub_test () {
	{
		echo "test_description='sub-test $1'" &&
		echo 'test_lib_no_binary=t' &&
		echo '. "$TEST_DIRECTORY/test-lib.sh"' &&
		cat
	} | write_script "$1.sh"
}

# run_sub_test NAME [options...]: run ./NAME.sh with its trash directory in
# the current directory, stdout to NAME.out and stderr to NAME.err, without
# the knobs of the outer run; returns the sub-script's exit code.
run_sub_test () {
	local name=$1
	shift
	(
		unset APTIX_TEST_OPTS APTIX_TEST_SKIP APTIX_TEST_CHAIN_LINT &&
		exec ./"$name.sh" --root="$PWD" "$@" >"$name.out" 2>"$name.err"
	)
}

test_expect_success 'environment is set up' '
	test "$PWD" = "$TRASH_DIRECTORY" &&
	test "$HOME" = "$TRASH_DIRECTORY" &&
	case "$TRASH_DIRECTORY" in
	"$TEST_DIRECTORY/trash directory.t0000-basic") ;;
	*) false ;;
	esac &&
	test -f "$TEST_DIRECTORY/test-lib.sh" &&
	test -n "$APTIX_BUILD_DIR" &&
	test "$LC_ALL" = C &&
	test "$TZ" = UTC &&
	test "$APTIX_PAGER" = cat &&
	test -z "${PAGER+set}" &&
	test -z "${OPENAI_API_KEY+set}" &&
	test -z "${QDRANT_URL+set}" &&
	test "$GIT_CONFIG_NOSYSTEM" = 1 &&
	test -n "$GIT_AUTHOR_NAME" &&
	test -n "$GIT_COMMITTER_EMAIL"
'

test_expect_success 'a body may cd and set variables' '
	mkdir subdir &&
	cd subdir &&
	set_in_body=yes
'

test_expect_success 'next body starts in the trash directory and sees them' '
	test "$PWD" = "$TRASH_DIRECTORY" &&
	test "$set_in_body" = yes
'

test_expect_success 'test_must_fail accepts a normal failure' '
	test_must_fail false &&
	test_must_fail sh -c "exit 1" &&
	test_must_fail sh -c "exit 125"
'

test_expect_success 'test_must_fail rejects success' '
	test_expect_code 1 test_must_fail true 4>err &&
	grep "command succeeded" err
'

test_expect_success 'test_must_fail rejects death by signal' '
	test_expect_code 1 test_must_fail sh -c "ulimit -c 0; kill -SEGV \$\$" 4>err &&
	grep "died by signal" err &&
	test_expect_code 1 test_must_fail sh -c "kill -TERM \$\$" 4>err &&
	grep "died by signal 15" err
'

test_expect_success 'test_must_fail rejects missing and non-executable commands' '
	test_expect_code 1 test_must_fail ./no-such-command 4>err &&
	grep "not found" err &&
	echo "echo hi" >not-executable &&
	test_expect_code 1 test_must_fail ./not-executable 4>err &&
	grep "not executable" err
'

test_expect_success 'test_must_fail leaves the command output to the caller' '
	test_must_fail sh -c "echo to-out; echo to-err >&2; exit 2" >out 2>err &&
	echo to-out >expect &&
	test_cmp expect out &&
	echo to-err >expect &&
	test_cmp expect err
'

test_expect_success 'test_must_fail ok=success and test_might_fail' '
	test_must_fail ok=success true &&
	test_must_fail ok=success false &&
	test_might_fail true &&
	test_might_fail false &&
	test_expect_code 1 test_might_fail sh -c "kill -TERM \$\$" 4>/dev/null
'

test_expect_success 'test_expect_code' '
	test_expect_code 0 true &&
	test_expect_code 3 sh -c "exit 3" &&
	test_expect_code 1 test_expect_code 3 true 4>err &&
	grep "exited with 0, we wanted 3" err
'

test_expect_success 'test_cmp' '
	echo same >a &&
	echo same >b &&
	echo other >c &&
	test_cmp a b &&
	test_must_fail test_cmp a c >diff &&
	grep "^-same" diff &&
	grep "^+other" diff
'

test_expect_success 'file and path assertions' '
	: >empty &&
	test_seq 3 >three &&
	test_must_be_empty empty &&
	test_must_fail test_must_be_empty three 2>err &&
	grep "is not empty" err &&
	test_must_fail test_must_be_empty missing 2>err &&
	test_file_not_empty three &&
	test_must_fail test_file_not_empty empty 2>err &&
	test_line_count = 3 three &&
	test_line_count -gt 2 three &&
	test_line_count -lt 4 three &&
	test_line_count = 0 empty &&
	test_must_fail test_line_count = 2 three 2>err &&
	test_path_is_file three &&
	test_must_fail test_path_is_file . 2>err &&
	test_path_is_dir . &&
	test_must_fail test_path_is_dir three 2>err &&
	test_path_exists three &&
	test_path_is_missing no-such-file &&
	test_must_fail test_path_is_missing three 2>err &&
	ln -s no-such-target dangling &&
	test_must_fail test_path_is_missing dangling 2>err
'

test_expect_success 'test_seq, test_write_lines, q_to_nul, write_script' '
	test_seq 2 4 >actual &&
	test_write_lines 2 3 4 >expect &&
	test_cmp expect actual &&
	printf "aQb" | q_to_nul >actual &&
	printf "a\\000b" >expect &&
	test_cmp_bin expect actual &&
	write_script script.sh <<-\EOF &&
	echo "hello from $0"
	EOF
	test_path_is_file script.sh &&
	test -x script.sh &&
	echo "#!/bin/sh" >expect &&
	head -n 1 script.sh >actual &&
	test_cmp expect actual &&
	./script.sh >actual &&
	echo "hello from ./script.sh" >expect &&
	test_cmp expect actual
'

test_expect_success 'test_when_finished: register cleanups' '
	test_when_finished "rm -f marker" &&
	test_when_finished "echo first-registered >>order" &&
	test_when_finished "echo last-registered >>order" &&
	mkdir -p elsewhere &&
	cd elsewhere &&
	test_when_finished "touch cleaned-here" &&
	cd .. &&
	touch marker &&
	test_path_is_file marker
'

test_expect_success 'test_when_finished: cleanups ran, last first, in place' '
	test_path_is_missing marker &&
	test_write_lines last-registered first-registered >expect &&
	test_cmp expect order &&
	test_path_is_file elsewhere/cleaned-here
'

test_expect_success 'test_tick' '
	test -z "${APTIX_TEST_DATE+set}" &&
	test_tick &&
	test "$APTIX_TEST_DATE" = 1700000000 &&
	test_tick &&
	test "$APTIX_TEST_DATE" = 1700000060 &&
	sh -c "echo \$APTIX_TEST_DATE" >actual &&
	echo 1700000060 >expect &&
	test_cmp expect actual &&
	test "$GIT_COMMITTER_DATE" = "1700000060 +0000"
'

test_set_prereq HAVEIT
test_lazy_prereq LAZY_TRUE 'true'
test_lazy_prereq LAZY_FALSE 'false'

test_expect_success HAVEIT 'a test with a satisfied prerequisite runs' '
	haveit_ran=t
'

test_expect_success '!HAVEIT' 'a test with a negated satisfied prerequisite is skipped' '
	false
'

test_expect_success DONT_HAVE_THIS 'a test with a missing prerequisite is skipped' '
	false
'

test_expect_success 'prerequisites' '
	test "$haveit_ran" = t &&
	test_have_prereq HAVEIT &&
	test_have_prereq LAZY_TRUE &&
	! test_have_prereq LAZY_FALSE &&
	test_have_prereq HAVEIT,!LAZY_FALSE &&
	! test_have_prereq HAVEIT,DONT_HAVE_THIS &&
	test_path_is_missing prereq-test-dir-LAZY_TRUE
'

test_expect_success 'TAP output of passing, failing, TODO and skipped tests' '
	write_sub_test mixed <<-\EOF &&
	test_expect_success "passing" "true"
	test_expect_success "failing" "echo failure-output && false"
	test_expect_failure "known breakage" "false"
	test_expect_failure "fixed breakage" "true"
	test_expect_success MISSING "skipped" "false"
	test_expect_success "title with # hash" "true"
	test_done
	EOF
	test_expect_code 1 run_sub_test mixed &&
	cat >expect <<-\EOF &&
	ok 1 - passing
	not ok 2 - failing
	not ok 3 - known breakage # TODO known breakage
	ok 4 - fixed breakage # TODO known breakage vanished
	ok 5 # skip skipped (missing MISSING)
	ok 6 - title with \# hash
	1..6
	EOF
	test_cmp expect mixed.out &&
	grep "failure-output" mixed.err &&
	grep "failed 1 among 6 test(s)" mixed.err &&
	test_path_is_dir "trash directory.mixed"
'

test_expect_success 'a passing script exits 0 and removes its trash directory' '
	write_sub_test passing <<-\EOF &&
	test_expect_success "one" "touch file"
	test_expect_failure "two" "false"
	test_done
	EOF
	run_sub_test passing &&
	printf "ok 1 - one\nnot ok 2 - two # TODO known breakage\n1..2\n" >expect &&
	test_cmp expect passing.out &&
	test_path_is_missing "trash directory.passing" &&
	test_path_is_missing "trash directory.passing.out"
'

test_expect_success 'test_when_finished runs after a failing body' '
	write_sub_test whenfail <<-\EOF &&
	test_expect_success "fails" "test_when_finished \"touch ../cleaned\" && false"
	test_expect_success "cleanup fails" "test_when_finished false && true"
	test_done
	EOF
	test_expect_code 1 run_sub_test whenfail &&
	printf "not ok 1 - fails\nnot ok 2 - cleanup fails\n1..2\n" >expect &&
	test_cmp expect whenfail.out &&
	test_path_is_file cleaned
'

test_expect_success 'output of bodies: hidden, -v on stderr, -x traced' '
	write_sub_test noisy <<-\EOF &&
	test_expect_success "noisy" "echo to-stdout && echo to-stderr >&2"
	test_done
	EOF
	printf "ok 1 - noisy\n1..1\n" >expect &&
	run_sub_test noisy &&
	test_cmp expect noisy.out &&
	test_must_fail grep to-std noisy.err &&
	run_sub_test noisy -v &&
	test_cmp expect noisy.out &&
	grep to-stdout noisy.err &&
	grep to-stderr noisy.err &&
	run_sub_test noisy -x &&
	test_cmp expect noisy.out &&
	grep "^++* echo to-stdout" noisy.err &&
	test_must_fail grep "set +x" noisy.err
'

test_expect_success 'a broken &&-chain fails the test without running it' '
	write_sub_test chain <<-\EOF &&
	test_expect_success "broken chain" "
		touch ran-anyway
		true
	"
	test_done
	EOF
	test_expect_code 1 run_sub_test chain &&
	printf "not ok 1 - broken chain\n1..1\n" >expect &&
	test_cmp expect chain.out &&
	grep "broken &&-chain" chain.err &&
	test_path_is_missing "trash directory.chain/ran-anyway"
'

test_expect_success 'exit in a body, or a missing test_done, is fatal' '
	write_sub_test exiter <<-\EOF &&
	test_expect_success "exits" "exit 0"
	test_done
	EOF
	test_expect_code 1 run_sub_test exiter &&
	grep FATAL exiter.err &&
	test_must_fail grep "^1\.\." exiter.out &&
	write_sub_test nodone <<-\EOF &&
	test_expect_success "fine" "true"
	EOF
	test_must_fail run_sub_test nodone &&
	grep FATAL nodone.err
'

test_expect_success '--immediate stops at the first failure' '
	write_sub_test immediate <<-\EOF &&
	test_expect_success "one" "true"
	test_expect_success "two" "false"
	test_expect_success "three" "true"
	test_done
	EOF
	test_expect_code 1 run_sub_test immediate -i &&
	printf "ok 1 - one\nnot ok 2 - two\n1..2\n" >expect &&
	test_cmp expect immediate.out
'

test_expect_success 'skip_all and APTIX_TEST_SKIP' '
	write_sub_test skipall <<-\EOF &&
	skip_all="nothing to test here"
	test_done
	EOF
	run_sub_test skipall &&
	echo "1..0 # SKIP nothing to test here" >expect &&
	test_cmp expect skipall.out &&
	write_sub_test skiplist <<-\EOF &&
	test_expect_success "one" "true"
	test_expect_success "two" "false"
	test_done
	EOF
	APTIX_TEST_SKIP="other.1 skiplist.2" ./skiplist.sh --root="$PWD" >skiplist.out &&
	printf "ok 1 - one\nok 2 # skip two (APTIX_TEST_SKIP)\n1..2\n" >expect &&
	test_cmp expect skiplist.out
'

test_expect_success 'environment clean-up of sub-scripts' '
	write_sub_test env <<-\EOF &&
	test_expect_success "scrubbed" "
		test -z \"\${APTIX_SECRET+set}\" &&
		test \"\$APTIX_TEST_KEEP\" = kept &&
		test -z \"\${QDRANT_API_KEY+set}\" &&
		test -z \"\${OPENAI_BASE_URL+set}\" &&
		test \"\$APTIX_PAGER\" = cat &&
		test \"\$HOME\" = \"\$TRASH_DIRECTORY\"
	"
	test_done
	EOF
	env APTIX_SECRET=x APTIX_PAGER=less APTIX_TEST_KEEP=kept \
		QDRANT_API_KEY=k OPENAI_BASE_URL=http://example.invalid \
		./env.sh --root="$PWD" >env.out &&
	printf "ok 1 - scrubbed\n1..1\n" >expect &&
	test_cmp expect env.out
'

test_expect_success 'Bail out! when the aptix binary is missing' '
	write_script nobinary.sh <<-\EOF &&
	test_description="needs the binary"
	. "$TEST_DIRECTORY/test-lib.sh"
	test_done
	EOF
	mkdir empty-build &&
	test_expect_code 1 env -u APTIX_TEST_INSTALLED \
		APTIX_BUILD_DIR="$PWD/empty-build" \
		./nobinary.sh --root="$PWD" >nobinary.out &&
	grep "^Bail out!" nobinary.out
'

test_expect_success 'test_start_server, test_wait_for_file, test_stop_server' '
	write_script server.sh <<-\EOF &&
	echo started &&
	echo 4242 >port.tmp &&
	mv port.tmp port &&
	exec sleep 1000
	EOF
	test_start_server srv ./server.sh &&
	test_wait_for_file port 10 srv &&
	echo 4242 >expect &&
	test_cmp expect port &&
	pid=$(cat srv.pid) &&
	kill -0 "$pid" &&
	grep started srv.log &&
	test_stop_server srv &&
	test_path_is_missing srv.pid &&
	test_must_fail kill -0 "$pid" 2>/dev/null
'

test_expect_success 'test_wait_for_file gives up' '
	test_expect_code 1 test_wait_for_file never-written 1 2>err &&
	grep "timed out" err &&
	test_start_server dies sh -c "echo dying; exit 3" &&
	test_expect_code 1 test_wait_for_file never-written 10 dies 2>err &&
	grep "exited before writing" err &&
	grep dying err &&
	test_stop_server dies
'

test_expect_success 'servers are stopped when the script ends' '
	write_sub_test servers <<-\EOF &&
	test_expect_success "start" "
		test_start_server sleeper sleep 1000 &&
		cp sleeper.pid ../sleeper.pid
	"
	test_done
	EOF
	run_sub_test servers &&
	pid=$(cat sleeper.pid) &&
	test_must_fail kill -0 "$pid" 2>/dev/null &&
	write_sub_test servers-fatal <<-\EOF &&
	test_expect_success "start and exit" "
		test_start_server sleeper sleep 1000 &&
		cp sleeper.pid ../sleeper-fatal.pid &&
		exit 0
	"
	test_done
	EOF
	test_must_fail run_sub_test servers-fatal &&
	pid=$(cat sleeper-fatal.pid) &&
	test_must_fail kill -0 "$pid" 2>/dev/null
'

test_done
