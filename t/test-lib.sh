# shellcheck shell=bash
#
# test-lib.sh -- shell test harness for aptix, modelled on git's t/test-lib.sh.
#
# A test script looks like this:
#
#	#!/bin/sh
#	test_description='what this script covers'
#	. ./test-lib.sh            # or: . "$(dirname "$0")/test-lib.sh"
#
#	test_expect_success 'title' '
#		aptix init &&
#		test_path_is_dir .aptix
#	'
#
#	test_done
#
# Output is TAP (https://testanything.org/), so `prove` can run scripts.
# Test bodies are eval'd in the current shell (not in a subshell), with the
# trash directory as the working directory; variables set by one body are
# visible to later ones.  The library re-executes itself under bash if it is
# sourced from another shell, so scripts and bodies may use bash features.
#
# Command-line options of a test script (also read from $APTIX_TEST_OPTS):
#	-v, --verbose	show the output of test bodies (on stderr)
#	-x		trace test bodies with `set -x` (implies -v)
#	-i, --immediate	stop at the first failing test
#	-d, --debug	keep the trash directory when every test passed too
#			(its artifacts: the page's screenshots of t8103)
#	--root=DIR	create the trash directory under DIR instead of t/
#	-h, --help	print the test description and exit
#
# Environment knobs (all APTIX_TEST_* variables survive the environment
# clean-up described below):
#	APTIX_TEST_INSTALLED	do not require/prepend the freshly built binary;
#				if it names a directory, that directory is put
#				first in PATH, otherwise PATH is used as is
#	APTIX_TEST_OPTS		extra options, as if given on the command line
#	APTIX_TEST_SKIP		space-separated glob patterns; matching tests
#				("t1234.5") or whole scripts ("t1234") are skipped
#	APTIX_TEST_CHAIN_LINT	set to 0 to disable the &&-chain check
#
# Internal names use the prefix test_lib_ and end in an underscore.

# ---------------------------------------------------------------------------
# Make sure we are running under bash.  This part must stay POSIX sh.
# ---------------------------------------------------------------------------
if test -z "${BASH_VERSION:-}"
then
	exec bash "$0" "$@"
	echo "Bail out! cannot exec bash" >&2
	exit 1
fi

# ---------------------------------------------------------------------------
# Locations.
# ---------------------------------------------------------------------------

# TEST_DIRECTORY is the directory holding this file (t/), found through the
# path used to source it, so scripts work whatever the current directory is.
if ! TEST_DIRECTORY=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
then
	echo "Bail out! cannot locate the test directory"
	exit 1
fi

# APTIX_BUILD_DIR is where the freshly built binary lives (parent of t/),
# unless the caller already set it.
APTIX_BUILD_DIR=${APTIX_BUILD_DIR:-$(dirname "$TEST_DIRECTORY")}
export TEST_DIRECTORY APTIX_BUILD_DIR

# Name of the script without directory and ".sh", e.g. "t0000-basic", and
# the short test number used in messages and APTIX_TEST_SKIP, e.g. "t0000".
test_lib_name_=$(basename "$0" .sh)
this_test=${test_lib_name_%%-*}

# ---------------------------------------------------------------------------
# Command-line options.
# ---------------------------------------------------------------------------
test_lib_verbose_=
test_lib_trace_=
test_lib_immediate_=
test_lib_keep_=
test_lib_root_=$TEST_DIRECTORY

# APTIX_TEST_OPTS is split on whitespace (no globbing).
read -r -a test_lib_opts_ <<<"${APTIX_TEST_OPTS-}"
for test_lib_opt_ in "${test_lib_opts_[@]}" "$@"
do
	case "$test_lib_opt_" in
	-v|--verbose)
		test_lib_verbose_=t ;;
	-x|--trace)
		test_lib_trace_=t
		test_lib_verbose_=t ;;
	-i|--immediate)
		test_lib_immediate_=t ;;
	-d|--debug)
		test_lib_keep_=t ;;
	--root=*)
		test_lib_root_=${test_lib_opt_#--root=} ;;
	-h|--help)
		printf '%s\n' "${test_description:-(no description)}"
		exit 0 ;;
	*)
		echo "Bail out! $0: unknown option '$test_lib_opt_'"
		exit 1 ;;
	esac
done
unset test_lib_opt_ test_lib_opts_

# Make the root absolute: tests cd around.
if ! mkdir -p "$test_lib_root_" || ! test_lib_root_=$(cd "$test_lib_root_" && pwd)
then
	echo "Bail out! cannot use '$test_lib_root_' as root for the trash directory"
	exit 1
fi

# ---------------------------------------------------------------------------
# A predictable environment.
# ---------------------------------------------------------------------------

# Drop every APTIX_* variable except the test knobs and the build directory,
# so the user's configuration cannot leak into tests.
for test_lib_var_ in "${!APTIX_@}"
do
	case "$test_lib_var_" in
	APTIX_TEST_*|APTIX_BUILD_DIR)
		;;
	*)
		unset "$test_lib_var_" ;;
	esac
done
unset test_lib_var_

# The fake clock always starts from scratch (see test_tick); the
# importers read times as they do now (t9105 sets this itself).
unset APTIX_TEST_DATE APTIX_TEST_IMPORT_SECONDS

# Remote services, pagers, editors, locale, terminal, XDG directories.
unset OPENAI_API_KEY OPENAI_BASE_URL QDRANT_URL QDRANT_API_KEY
unset AWS_ACCESS_KEY_ID AWS_SECRET_ACCESS_KEY AWS_SESSION_TOKEN AWS_PROFILE \
	AWS_SHARED_CREDENTIALS_FILE AWS_REGION AWS_DEFAULT_REGION AWS_CONFIG_FILE
unset PAGER VISUAL CDPATH LANG LANGUAGE
unset XDG_CONFIG_HOME XDG_DATA_HOME XDG_CACHE_HOME XDG_STATE_HOME
LC_ALL=C
TZ=UTC
TERM=dumb
EDITOR=:
APTIX_PAGER='cat'
export LC_ALL TZ TERM EDITOR APTIX_PAGER

# Make git usable and deterministic inside the trash directory, and keep it
# from discovering the aptix source repository above t/.
unset GIT_DIR GIT_WORK_TREE GIT_INDEX_FILE GIT_OBJECT_DIRECTORY \
	GIT_ALTERNATE_OBJECT_DIRECTORIES GIT_CONFIG GIT_CONFIG_PARAMETERS \
	GIT_CONFIG_COUNT GIT_AUTHOR_DATE GIT_COMMITTER_DATE
GIT_CONFIG_NOSYSTEM=1
GIT_CEILING_DIRECTORIES=$TEST_DIRECTORY
GIT_AUTHOR_NAME='A U Thor'
GIT_AUTHOR_EMAIL='author@example.com'
GIT_COMMITTER_NAME='C O Mitter'
GIT_COMMITTER_EMAIL='committer@example.com'
export GIT_CONFIG_NOSYSTEM GIT_CEILING_DIRECTORIES \
	GIT_AUTHOR_NAME GIT_AUTHOR_EMAIL GIT_COMMITTER_NAME GIT_COMMITTER_EMAIL

# ---------------------------------------------------------------------------
# The aptix binary under test.
# ---------------------------------------------------------------------------
if test -n "${APTIX_TEST_INSTALLED:-}"
then
	# Test an installed aptix: use the given directory, or plain PATH.
	if test -d "$APTIX_TEST_INSTALLED"
	then
		PATH=$APTIX_TEST_INSTALLED:$PATH
	fi
	if test -z "${test_lib_no_binary:-}" && ! command -v aptix >/dev/null
	then
		echo "Bail out! APTIX_TEST_INSTALLED is set but no aptix is in PATH"
		exit 1
	fi
else
	if test -z "${test_lib_no_binary:-}" && ! test -x "$APTIX_BUILD_DIR/aptix"
	then
		echo "Bail out! $APTIX_BUILD_DIR/aptix not found; run make first"
		exit 1
	fi
	PATH=$APTIX_BUILD_DIR:$PATH
fi
export PATH

# ---------------------------------------------------------------------------
# File descriptors.
#
#	3	stdout of test bodies (log file, or stderr with -v)
#	4	stderr of test bodies (same destination as 3)
#	8	the script's original stdout (the TAP stream)
#	9	the script's original stderr
#
# Bodies run with stdin from /dev/null.  In quiet mode the output of each
# test goes to "<trash>.out" and is printed (as # comments on stderr) when
# the test fails.  test_must_fail and friends temporarily use fd 7.
# ---------------------------------------------------------------------------
exec 8>&1 9>&2
test_lib_out_="$test_lib_root_/trash directory.$test_lib_name_.out"
if test -n "$test_lib_verbose_"
then
	exec 3>&2 4>&2
else
	exec 3>/dev/null 4>/dev/null
fi
if test -n "$test_lib_trace_"
then
	# `set -x` output goes to the body's stderr, not to the command's.
	BASH_XTRACEFD=4
fi

# Open fds 3 and 4 for the next test: truncate the per-test output file.
test_lib_open_output_ () {
	if test -z "$test_lib_verbose_"
	then
		exec 3>"$test_lib_out_" 4>&3
	fi
}

# ---------------------------------------------------------------------------
# Counters and state.
# ---------------------------------------------------------------------------
test_count=0
test_lib_pass_=0
test_lib_fail_=0
test_lib_fixed_=0
test_lib_broken_=0
test_lib_skip_=0
test_lib_done_=
test_lib_in_test_=
test_lib_subshell_=0
test_lib_cleanup_cmds_=()
test_lib_cleanup_dirs_=()
test_lib_servers_=()
test_lib_satisfied_=' '
test_lib_unsatisfied_=' '
declare -A test_lib_lazy_=()

# ---------------------------------------------------------------------------
# Errors in the test script itself.
# ---------------------------------------------------------------------------

# BUG message...: report a mistake in the test script and abort it.
BUG () {
	echo "# BUG in test script $this_test: $*" >&9
	test_lib_done_=t
	exit 1
}

# ---------------------------------------------------------------------------
# Trash directory.
# ---------------------------------------------------------------------------
TRASH_DIRECTORY="$test_lib_root_/trash directory.$test_lib_name_"
export TRASH_DIRECTORY

test_lib_remove_trash_ () {
	if test -e "$TRASH_DIRECTORY"
	then
		# Tests may leave read-only directories behind.
		chmod -R u+rwx "$TRASH_DIRECTORY" 2>/dev/null
		rm -rf "$TRASH_DIRECTORY"
	fi
}

test_lib_remove_trash_
if ! mkdir -p "$TRASH_DIRECTORY" || ! cd "$TRASH_DIRECTORY"
then
	echo "Bail out! cannot create trash directory '$TRASH_DIRECTORY'"
	exit 1
fi
HOME=$TRASH_DIRECTORY
export HOME

# ---------------------------------------------------------------------------
# Exit handling: stop servers; complain if test_done was never reached
# (e.g. a test body called `exit`, or the script forgot test_done).
# ---------------------------------------------------------------------------
test_lib_on_exit_ () {
	test_lib_code_=$?
	test_lib_stop_all_servers_
	if test -z "$test_lib_done_"
	then
		test_lib_done_=t
		echo "# FATAL: $this_test exited with code $test_lib_code_ before test_done (test $test_count)" >&9
		if test "$test_lib_code_" = 0
		then
			test_lib_code_=1
		fi
		exit "$test_lib_code_"
	fi
}

test_lib_on_signal_ () {
	test_lib_done_=t
	echo "# interrupted, trash directory kept: $TRASH_DIRECTORY" >&9
	exit "$1"
}

trap 'test_lib_on_exit_' EXIT
trap 'test_lib_on_signal_ 130' INT
trap 'test_lib_on_signal_ 143' TERM

# ---------------------------------------------------------------------------
# Prerequisites.
# ---------------------------------------------------------------------------

# test_set_prereq NAME: declare that prerequisite NAME is satisfied.
test_set_prereq () {
	test_lib_unsatisfied_=${test_lib_unsatisfied_/ $1 / }
	case "$test_lib_satisfied_" in
	*" $1 "*) ;;
	*) test_lib_satisfied_="$test_lib_satisfied_$1 " ;;
	esac
}

# test_unset_prereq NAME: declare that prerequisite NAME is not satisfied.
test_unset_prereq () {
	test_lib_satisfied_=${test_lib_satisfied_/ $1 / }
	case "$test_lib_unsatisfied_" in
	*" $1 "*) ;;
	*) test_lib_unsatisfied_="$test_lib_unsatisfied_$1 " ;;
	esac
}

# test_lazy_prereq NAME 'script': NAME is satisfied if script succeeds.  The
# script runs at most once, when NAME is first needed, in a subshell inside
# a scratch directory "$TRASH_DIRECTORY/prereq-test-dir-NAME".
test_lazy_prereq () {
	test $# = 2 || BUG "test_lazy_prereq needs 2 arguments"
	test_lib_lazy_[$1]=$2
}

# Evaluate lazy prerequisite $1 (once) and record the result.
test_lib_eval_lazy_ () {
	local dir="$TRASH_DIRECTORY/prereq-test-dir-$1"
	local script="${test_lib_lazy_[$1]}"
	unset "test_lib_lazy_[$1]"
	mkdir -p "$dir" || BUG "cannot create $dir"
	if (cd "$dir" && eval "$script") </dev/null >&3 2>&4
	then
		test_set_prereq "$1"
	else
		test_unset_prereq "$1"
	fi
	rm -rf "$dir"
}

# test_have_prereq A,!B,...: succeed if every listed prerequisite is
# satisfied (and every !negated one is not).  The unmet ones are left in
# $test_lib_missing_prereq_.
test_have_prereq () {
	local list prereq negated have
	test_lib_missing_prereq_=
	IFS=, read -r -a list <<<"$1"
	for prereq in "${list[@]}"
	do
		case "$prereq" in
		'') continue ;;
		'!'*) negated=t; prereq=${prereq#!} ;;
		*) negated= ;;
		esac
		if test -n "${test_lib_lazy_[$prereq]+set}"
		then
			test_lib_eval_lazy_ "$prereq"
		fi
		case "$test_lib_satisfied_" in
		*" $prereq "*) have=t ;;
		*) have= ;;
		esac
		if test -n "$negated"
		then
			if test -z "$have"; then have=t; else have=; fi
		fi
		if test -z "$have"
		then
			test_lib_missing_prereq_="${test_lib_missing_prereq_:+$test_lib_missing_prereq_,}${negated:+!}$prereq"
		fi
	done
	test -z "$test_lib_missing_prereq_"
}

# Built-in lazy prerequisites.
test_lazy_prereq GIT 'git --version'
test_lazy_prereq CURL 'curl --version'
test_lazy_prereq PYTHON3 'python3 -c "import sys"'
test_lazy_prereq JQ 'jq --version'
# shellcheck disable=SC2016 # expanded when the prerequisite is evaluated
test_lazy_prereq NOT_ROOT 'test "$(id -u)" != 0'

# ---------------------------------------------------------------------------
# Running tests.
# ---------------------------------------------------------------------------

# Eval the body given in $1 with no positional parameters.  A separate
# function so that `return` in a body ends only the body.
test_lib_eval_inner_ () {
	local test_lib_body_=$1
	shift
	eval "$test_lib_body_"
}

# test_lib_eval_ BODY: eval BODY in the current shell with stdin from
# /dev/null and output to fds 3/4; sets and returns $test_lib_eval_ret_.
test_lib_eval_ () {
	test_lib_subshell_=$BASH_SUBSHELL
	test_lib_eval_inner_ "${test_lib_trace_:+set -x;}$1" </dev/null >&3 2>&4
	# fd 4 is silenced here so that tracing these lines stays invisible.
	{ test_lib_eval_ret_=$?; set +x; } 4>/dev/null
	return "$test_lib_eval_ret_"
}

# Succeed if the body's commands are joined with && (git's chain lint):
# "(exit 117) && BODY" must exit 117 without running anything.  Evaluated in
# a subshell so that a broken chain cannot have side effects here.
test_lib_chain_ok_ () {
	test "${APTIX_TEST_CHAIN_LINT:-1}" = 0 && return 0
	(
		test_lib_trace_=
		test_lib_in_test_=t
		test_lib_eval_ "(exit 117) && $1"
		exit "$test_lib_eval_ret_"
	)
	test $? = 117
}

# Run the test_when_finished commands of the current test, last first, each
# in the directory it was registered from.  A failing cleanup fails the test.
# (Locals carry the test_lib_ prefix because, with bash's dynamic scoping,
# plain names would capture assignments made by the evaluated commands.)
test_lib_run_cleanups_ () {
	local test_lib_i_=${#test_lib_cleanup_cmds_[@]} test_lib_ret_=$test_lib_eval_ret_
	test_lib_in_test_=
	while test "$test_lib_i_" -gt 0
	do
		test_lib_i_=$((test_lib_i_ - 1))
		cd "${test_lib_cleanup_dirs_[test_lib_i_]}" 2>/dev/null ||
			cd "$TRASH_DIRECTORY" || BUG "cannot cd to $TRASH_DIRECTORY"
		if ! test_lib_eval_ "${test_lib_cleanup_cmds_[test_lib_i_]}"
		then
			echo "test_when_finished command failed: ${test_lib_cleanup_cmds_[test_lib_i_]}" >&4
			test "$test_lib_ret_" = 0 && test_lib_ret_=1
		fi
	done
	test_lib_cleanup_cmds_=()
	test_lib_cleanup_dirs_=()
	test_lib_eval_ret_=$test_lib_ret_
}

# Does APTIX_TEST_SKIP contain a pattern matching $1 (e.g. "t0000.3")?
test_lib_skip_listed_ () {
	local pattern patterns
	read -r -a patterns <<<"${APTIX_TEST_SKIP-}"
	for pattern in "${patterns[@]}"
	do
		# Unquoted on purpose: the entries are glob patterns.
		# shellcheck disable=SC2254
		case "$1" in
		$pattern) return 0 ;;
		esac
	done
	return 1
}

# Make $1 safe as a TAP description: one line, '#' escaped.
test_lib_tap_title_ () {
	local t=${1//$'\n'/ }
	printf '%s' "${t//'#'/'\#'}"
}

# Print (on stderr, as TAP comments) what a failed test was and said.
# The same report goes to test-results/<script>.failed, which
# t/Makefile prints again after prove's summary (where a log cut to its
# tail still shows it).
test_lib_report_failure_ () {
	local report
	report=$(
		echo "# $test_lib_name_: failed test $test_count: $1"
		printf '%s\n' "$2" | sed 's/^/#	/'
		if test -z "$test_lib_verbose_" && test -s "$test_lib_out_"
		then
			echo "# output of the test (last 200 lines):"
			tail -n 200 "$test_lib_out_" | sed 's/^/#   /'
		fi
	)
	printf '%s\n' "$report" >&9
	# only the suite's own scripts (not those t0000 runs to fail)
	if test "$(cd "$(dirname "$0")" && pwd)" = "$TEST_DIRECTORY" &&
		mkdir -p "$TEST_DIRECTORY/test-results" 2>/dev/null
	then
		printf '%s\n' "$report" \
			>>"$TEST_DIRECTORY/test-results/$test_lib_name_.failed"
	fi
	if test -n "$test_lib_immediate_"
	then
		test_lib_done_=t
		test_lib_stop_all_servers_
		echo "1..$test_count"
		echo "# stopping at the first failure (--immediate); trash directory kept: $TRASH_DIRECTORY" >&9
		exit 1
	fi
}

# test_lib_run_ success|failure [PREREQ] TITLE BODY  (locals prefixed: see above)
test_lib_run_ () {
	local test_lib_mode_=$1 test_lib_prereq_='' test_lib_title_ test_lib_body_ test_lib_tap_
	shift
	test -n "$test_lib_in_test_" && BUG "test_expect_* inside a test body"
	case $# in
	2) ;;
	3) test_lib_prereq_=$1; shift ;;
	*) BUG "test_expect_$test_lib_mode_ needs 2 or 3 arguments, got $#" ;;
	esac
	test_lib_title_=$1 test_lib_body_=$2
	test_count=$((test_count + 1))
	test_lib_tap_=$(test_lib_tap_title_ "$test_lib_title_")
	test_lib_open_output_

	# Skipped?
	if test_lib_skip_listed_ "$this_test.$test_count"
	then
		test_lib_skip_=$((test_lib_skip_ + 1))
		echo "ok $test_count # skip $test_lib_tap_ (APTIX_TEST_SKIP)"
		return 0
	fi
	if test -n "$test_lib_prereq_" && ! test_have_prereq "$test_lib_prereq_"
	then
		test_lib_skip_=$((test_lib_skip_ + 1))
		echo "ok $test_count # skip $test_lib_tap_ (missing $test_lib_missing_prereq_)"
		return 0
	fi

	# A broken &&-chain is a bug in the test: always a real failure.
	if ! test_lib_chain_ok_ "$test_lib_body_"
	then
		test_lib_fail_=$((test_lib_fail_ + 1))
		echo "not ok $test_count - $test_lib_tap_"
		echo "# broken &&-chain (or syntax error) in the body of test $test_count; it was not run" >&9
		test_lib_report_failure_ "$test_lib_title_" "$test_lib_body_"
		return 0
	fi

	test_lib_in_test_=t
	test_lib_eval_ "$test_lib_body_"
	test_lib_run_cleanups_
	test_lib_in_test_=
	cd "$TRASH_DIRECTORY" || BUG "cannot cd back to $TRASH_DIRECTORY"

	case "$test_lib_mode_,$test_lib_eval_ret_" in
	success,0)
		test_lib_pass_=$((test_lib_pass_ + 1))
		echo "ok $test_count - $test_lib_tap_" ;;
	success,*)
		test_lib_fail_=$((test_lib_fail_ + 1))
		echo "not ok $test_count - $test_lib_tap_"
		test_lib_report_failure_ "$test_lib_title_" "$test_lib_body_" ;;
	failure,0)
		test_lib_fixed_=$((test_lib_fixed_ + 1))
		echo "ok $test_count - $test_lib_tap_ # TODO known breakage vanished" ;;
	failure,*)
		test_lib_broken_=$((test_lib_broken_ + 1))
		echo "not ok $test_count - $test_lib_tap_ # TODO known breakage" ;;
	esac
	return 0
}

# test_expect_success [PREREQ] TITLE BODY: BODY must succeed.
# PREREQ is a comma-separated list such as "GIT,!NOT_ROOT"; when unmet the
# test is reported as skipped.
test_expect_success () {
	test_lib_run_ success "$@"
}

# test_expect_failure [PREREQ] TITLE BODY: a known breakage.  A failing
# BODY is reported "not ok ... # TODO known breakage" (does not fail the
# script); a passing one as "ok ... # TODO known breakage vanished".
test_expect_failure () {
	test_lib_run_ failure "$@"
}

# test_when_finished 'command': run command after the current test body,
# whether it passed or not (LIFO order, in the directory current at the
# time of registration).  Only valid directly inside a test body.
test_when_finished () {
	test -n "$test_lib_in_test_" ||
		BUG "test_when_finished called outside a test body"
	if test "$BASH_SUBSHELL" != "$test_lib_subshell_"
	then
		echo "test_when_finished does nothing in a subshell" >&2
		return 1
	fi
	test_lib_cleanup_cmds_+=("$*")
	test_lib_cleanup_dirs_+=("$PWD")
}

# test_done: print the TAP plan and a summary, stop servers, remove the
# trash directory if everything passed, and exit (0 = no failures).
# If $skip_all is set and no test ran, the whole script is reported skipped.
test_done () {
	test_lib_done_=t
	test_lib_stop_all_servers_
	exec 3>/dev/null 4>/dev/null
	if test "$test_count" = 0 && test -n "${skip_all:-}"
	then
		echo "1..0 # SKIP $skip_all"
	else
		echo "1..$test_count"
	fi
	{
		if test "$test_lib_fixed_" != 0
		then
			echo "# $test_lib_fixed_ known breakage(s) vanished; please update test(s)"
		fi
		if test "$test_lib_broken_" != 0
		then
			echo "# still have $test_lib_broken_ known breakage(s)"
		fi
		if test "$test_lib_skip_" != 0
		then
			echo "# skipped $test_lib_skip_ test(s)"
		fi
		if test "$test_lib_fail_" = 0
		then
			echo "# $this_test: passed all $((test_count - test_lib_skip_ - test_lib_fixed_ - test_lib_broken_)) test(s) of $test_count"
		else
			echo "# $this_test: failed $test_lib_fail_ among $test_count test(s); trash directory kept: $TRASH_DIRECTORY"
		fi
	} >&2
	rm -f "$test_lib_out_"
	if test "$test_lib_fail_" = 0
	then
		cd "$test_lib_root_" || exit 1
		test -n "$test_lib_keep_" || test_lib_remove_trash_
		exit 0
	fi
	exit 1
}

# Skip the whole script if APTIX_TEST_SKIP says so.
if test_lib_skip_listed_ "$this_test"
then
	skip_all="skipped via APTIX_TEST_SKIP"
	test_done
fi

# ---------------------------------------------------------------------------
# Assertions.  Messages go to stderr (the test's log).
# ---------------------------------------------------------------------------

# Is word $2 in the comma-separated list $1?
test_lib_list_has_ () {
	case ",$1," in
	*",$2,"*) return 0 ;;
	*) return 1 ;;
	esac
}

# test_must_fail [ok=success,sigpipe] cmd args...: succeed if cmd fails in
# a controlled way, i.e. exits with status 1..125.  Fails (with a reason on
# stderr) if cmd succeeds, is not found (127) or not executable (126), or
# dies from a signal (>128, a crash).  "ok=" accepts success and/or a
# SIGPIPE death as well.  The command's own stderr is the caller's stderr,
# so `test_must_fail aptix foo 2>err` captures aptix's message.
test_must_fail () {
	local test_lib_ok_='' test_lib_code_
	case "${1-}" in
	ok=*) test_lib_ok_=${1#ok=}; shift ;;
	esac
	test $# -gt 0 || BUG "test_must_fail needs a command"
	"$@" 2>&7
	test_lib_code_=$?
	if test "$test_lib_code_" = 0
	then
		test_lib_list_has_ "$test_lib_ok_" success && return 0
		echo "test_must_fail: command succeeded: $*" >&2
		return 1
	elif test "$test_lib_code_" = 141 && test_lib_list_has_ "$test_lib_ok_" sigpipe
	then
		return 0
	elif test "$test_lib_code_" -gt 129
	then
		# 128 (fatal) and 129 (usage) are aptix's own exit codes,
		# as in git; above them, the command died by a signal
		echo "test_must_fail: died by signal $((test_lib_code_ - 128)): $*" >&2
		return 1
	elif test "$test_lib_code_" = 127
	then
		echo "test_must_fail: command not found: $*" >&2
		return 1
	elif test "$test_lib_code_" = 126
	then
		echo "test_must_fail: command not executable or bad exit $test_lib_code_: $*" >&2
		return 1
	fi
	return 0
} 7>&2 2>&4

# test_might_fail cmd...: like test_must_fail, but success is fine too.
test_might_fail () {
	test_must_fail ok=success "$@"
}

# test_expect_code N cmd args...: succeed if cmd exits with exactly N
# (stderr handling as for test_must_fail).
test_expect_code () {
	local test_lib_want_=$1 test_lib_code_
	shift
	"$@" 2>&7
	test_lib_code_=$?
	test "$test_lib_code_" = "$test_lib_want_" && return 0
	echo "test_expect_code: command exited with $test_lib_code_, we wanted $test_lib_want_: $*" >&2
	return 1
} 7>&2 2>&4

# test_cmp expected actual: compare two files, showing a unified diff.
test_cmp () {
	test $# = 2 || BUG "test_cmp needs 2 arguments"
	diff -u "$@"
}

# test_cmp_bin expected actual: compare two binary files.
test_cmp_bin () {
	cmp "$@"
}

# test_must_be_empty file: the file exists and is empty.
test_must_be_empty () {
	test $# = 1 || BUG "test_must_be_empty needs 1 argument"
	if ! test -f "$1"
	then
		echo "'$1' is missing" >&2
		return 1
	elif test -s "$1"
	then
		echo "'$1' is not empty, it contains:" >&2
		cat "$1" >&2
		return 1
	fi
}

# test_file_not_empty file: the file exists and is not empty.
test_file_not_empty () {
	test $# = 1 || BUG "test_file_not_empty needs 1 argument"
	if ! test -s "$1"
	then
		echo "'$1' is missing or empty" >&2
		return 1
	fi
}

# test_line_count OP N file: the number of lines in file compares OP N,
# where OP is an operator of test(1): = != -eq -ne -lt -le -gt -ge.
test_line_count () {
	test $# = 3 || BUG "test_line_count needs 3 arguments"
	local n
	if ! test -f "$3"
	then
		echo "test_line_count: '$3' is missing" >&2
		return 1
	fi
	n=$(($(wc -l <"$3")))
	if ! test "$n" "$1" "$2"
	then
		echo "test_line_count: line count of '$3' is $n, expected $1 $2; contents:" >&2
		cat "$3" >&2
		return 1
	fi
}

# test_path_is_file path [message]
test_path_is_file () {
	if ! test -f "$1"
	then
		echo "File '$1' doesn't exist. ${2-}" >&2
		return 1
	fi
}

# test_path_is_dir path [message]
test_path_is_dir () {
	if ! test -d "$1"
	then
		echo "Directory '$1' doesn't exist. ${2-}" >&2
		return 1
	fi
}

# test_path_exists path [message]
test_path_exists () {
	if ! test -e "$1"
	then
		echo "Path '$1' doesn't exist. ${2-}" >&2
		return 1
	fi
}

# test_path_is_missing path [message]: nothing (not even a dangling
# symlink) exists at path.
test_path_is_missing () {
	if test -e "$1" || test -L "$1"
	then
		echo "Path '$1' exists but should not. ${2-}" >&2
		ls -ld "$1" >&2
		return 1
	fi
}

# ---------------------------------------------------------------------------
# Helpers.
# ---------------------------------------------------------------------------

# test_tick: advance the fake clock.  The first call sets APTIX_TEST_DATE
# to 1700000000, each later call adds 60.  Also sets GIT_AUTHOR_DATE and
# GIT_COMMITTER_DATE to the same instant.  All three are exported.
test_tick () {
	if test -z "${APTIX_TEST_DATE:-}"
	then
		APTIX_TEST_DATE=1700000000
	else
		APTIX_TEST_DATE=$((APTIX_TEST_DATE + 60))
	fi
	GIT_AUTHOR_DATE="$APTIX_TEST_DATE +0000"
	GIT_COMMITTER_DATE=$GIT_AUTHOR_DATE
	export APTIX_TEST_DATE GIT_AUTHOR_DATE GIT_COMMITTER_DATE
}

# write_script file [interpreter] <<EOF: write stdin to file behind a
# "#!interpreter" line (default /bin/sh) and make it executable.
write_script () {
	{
		echo "#!${2-/bin/sh}" &&
		cat
	} >"$1" &&
	chmod +x "$1"
}

# test_write_lines lines...: print each argument on its own line.
test_write_lines () {
	printf '%s\n' "$@"
}

# test_seq [first] last: print the integers first..last (first defaults
# to 1), one per line.
test_seq () {
	local i last
	case $# in
	1) i=1; last=$1 ;;
	2) i=$1; last=$2 ;;
	*) BUG "test_seq needs 1 or 2 arguments" ;;
	esac
	while test "$i" -le "$last"
	do
		echo "$i"
		i=$((i + 1))
	done
}

# Filters turning a visible Q into a hard-to-type byte, and back.
q_to_nul () { tr Q '\000'; }
nul_to_q () { tr '\000' Q; }
q_to_tab () { tr Q '\011'; }
q_to_cr () { tr Q '\015'; }

# ---------------------------------------------------------------------------
# Background servers.
# ---------------------------------------------------------------------------

# test_start_server NAME cmd args...: start cmd in the background (from the
# current directory, stdin /dev/null) with stdout and stderr going to
# $TRASH_DIRECTORY/NAME.log, and its PID written to $TRASH_DIRECTORY/NAME.pid.
# It is stopped by test_stop_server NAME, or automatically by test_done or
# when the script exits.  Call it from the test body itself, not from a
# subshell.  To find its port, let the server write it to a file and use
# test_wait_for_file.
test_start_server () {
	test $# -ge 2 || BUG "test_start_server needs a name and a command"
	local name=$1 pid
	shift
	case "$name" in
	''|*/*) BUG "bad server name '$name'" ;;
	esac
	if test "$BASH_SUBSHELL" != 0
	then
		echo "test_start_server: cannot be used in a subshell" >&2
		return 1
	fi
	if test -f "$TRASH_DIRECTORY/$name.pid"
	then
		echo "test_start_server: server '$name' is already running" >&2
		return 1
	fi
	"$@" >"$TRASH_DIRECTORY/$name.log" 2>&1 </dev/null 3>&- 4>&- 8>&- 9>&- &
	pid=$!
	echo "$pid" >"$TRASH_DIRECTORY/$name.pid"
	test_lib_servers_+=("$name")
}

# Kill process $1 with SIGTERM, wait up to 5 seconds, then SIGKILL; reap it.
test_lib_kill_pid_ () {
	local pid=$1 i=0
	kill "$pid" 2>/dev/null
	while kill -0 "$pid" 2>/dev/null && test "$i" -lt 50
	do
		sleep 0.1
		i=$((i + 1))
	done
	if kill -0 "$pid" 2>/dev/null
	then
		kill -9 "$pid" 2>/dev/null
	fi
	wait "$pid" 2>/dev/null
	return 0
}

# test_stop_server NAME: stop a server started by test_start_server.
test_stop_server () {
	local name=$1 pidfile="$TRASH_DIRECTORY/$1.pid" pid i
	for i in "${!test_lib_servers_[@]}"
	do
		if test "${test_lib_servers_[i]}" = "$name"
		then
			unset "test_lib_servers_[i]"
		fi
	done
	if ! test -f "$pidfile"
	then
		echo "test_stop_server: no server '$name' is running" >&2
		return 1
	fi
	pid=$(cat "$pidfile")
	rm -f "$pidfile"
	case "$pid" in
	''|*[!0-9]*) echo "test_stop_server: bad PID '$pid' in $pidfile" >&2; return 1 ;;
	esac
	test_lib_kill_pid_ "$pid"
}

# Stop every server still registered (at test_done and at exit).
test_lib_stop_all_servers_ () {
	local name
	for name in "${test_lib_servers_[@]}"
	do
		test_stop_server "$name" 2>/dev/null
	done
	test_lib_servers_=()
}

# test_wait_for_file FILE [TIMEOUT [SERVER]]: poll until FILE exists and is
# not empty, for at most TIMEOUT seconds (an integer, default 10).  If the
# name of a server started with test_start_server is given, give up as soon
# as that server has exited.  On failure the server's log is shown.
test_wait_for_file () {
	local file=$1 tenths=$((${2:-10} * 10)) server=${3-} pid=
	if test -n "$server"
	then
		pid=$(cat "$TRASH_DIRECTORY/$server.pid" 2>/dev/null)
	fi
	while ! test -s "$file"
	do
		if test "$tenths" -le 0
		then
			echo "test_wait_for_file: timed out waiting for '$file'" >&2
			test -n "$server" && test_lib_show_log_ "$server"
			return 1
		fi
		if test -n "$pid" && ! kill -0 "$pid" 2>/dev/null
		then
			# One last look: it may have written the file and exited.
			test -s "$file" && return 0
			echo "test_wait_for_file: server '$server' exited before writing '$file'" >&2
			test_lib_show_log_ "$server"
			return 1
		fi
		sleep 0.1
		tenths=$((tenths - 1))
	done
}

test_lib_show_log_ () {
	echo "--- $TRASH_DIRECTORY/$1.log:" >&2
	cat "$TRASH_DIRECTORY/$1.log" >&2 2>/dev/null
	echo "---" >&2
}
