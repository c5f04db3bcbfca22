#!/bin/sh
test_description='man pages: one per command, made from the option tables'
. "$(dirname "$0")"/test-lib.sh

src=$TEST_DIRECTORY/..
doc=$src/Documentation
man1=$APTIX_BUILD_DIR/Documentation

aptix --list-cmds=all >commands
aptix --dump-options | cut -f3 | grep . >global-options

test_lazy_prereq MAN 'command -v man'
test_lazy_prereq MANPAGES 'test -f "$APTIX_BUILD_DIR/Documentation/aptix.1"'

# check_options <cmd> <page.scd>: every --option the prose names is one
# of the command's (or a global one): the prose cannot outlive an option.
check_options () {
	# aptix(1) may name any command'"'"'s options
	if test "$1" = aptix
	then
		cat all-options >known
	else
		aptix "$1" --dump-options | cut -f3 | sed "/^$/d" >known &&
		cat known >>all-options
	fi &&
	sed "s/--no-/--/g" known >>known &&
	cat global-options >>known &&
	{ grep -o -- "--[a-z][a-z0-9-]*" "$2" || :; } |
		sed "s/^--no-/--/" |
		sort -u >named &&
	sed "s/^--no-/--/" known | sort -u >known.sorted &&
	comm -23 named known.sorted >unknown &&
	if test -s unknown
	then
		echo "$2 documents options $1 does not have:" &&
		cat unknown &&
		return 1
	fi
}

test_expect_success 'every command has a page with the generated parts' '
	while read cmd
	do
		page=$doc/aptix-$cmd.scd &&
		grep -x @NAME@ "$page" &&
		grep -x @SYNOPSIS@ "$page" &&
		grep -x @OPTIONS@ "$page" &&
		grep -x "# DESCRIPTION" "$page" || return 1
	done <commands
'

test_expect_success 'the options each page names exist' '
	: >all-options &&
	while read cmd
	do
		check_options "$cmd" "$doc/aptix-$cmd.scd" || return 1
	done <commands &&
	check_options aptix "$doc/aptix.scd"
'

test_expect_success 'the check catches an option that is not there' '
	printf "Use *--no-such-option*.\n" >bad.scd &&
	test_must_fail check_options log bad.scd >out &&
	grep -x -- --such-option out
'

test_expect_success 'every page has a command' '
	ls "$doc" | sed -n "s/^aptix-\(.*\)\.scd$/\1/p" | sort >pages &&
	sort commands >expect &&
	test_cmp expect pages
'

test_expect_success MANPAGES 'the pages say what -h says' '
	aptix continue -h | sed -n "s/^ *--\([a-z-]*\).*/\1/p" >opts &&
	test $(wc -l <opts) -gt 5 &&
	while read o
	do
		grep -e "--$o" "$man1/aptix-continue.1" || return 1
	done <opts
'

test_lazy_prereq GROFF 'command -v groff'

test_expect_success GROFF,MANPAGES 'the pages are valid roff (groff -ww)' '
	cat "$man1"/*.1 | groff -man -ww -z 2>err &&
	test_must_be_empty err
'

test_expect_success MAN,MANPAGES 'man renders the pages' '
	for page in "$man1"/aptix.1 "$man1"/aptix-log.1
	do
		MANWIDTH=80 man --warnings -l "$page" >out 2>err &&
		test_must_be_empty err &&
		grep -q "^NAME" out &&
		grep -q "^SYNOPSIS" out &&
		grep -q "^OPTIONS" out || return 1
	done
'

test_expect_success MAN,MANPAGES 'make install installs the pages and completions; man finds them' '
	inst=$(mktemp -d) &&
	test_when_finished "rm -rf \"$inst\"" &&
	make -s -C "$src" O="$APTIX_BUILD_DIR" DESTDIR="$inst" install \
		>/dev/null &&
	page=$(find "$inst" -name aptix-continue.1) &&
	MANPATH=${page%/man1/aptix-continue.1} &&
	export MANPATH &&
	test -f "$MANPATH/man1/aptix.1" &&
	test -f "$MANPATH/man1/aptix-continue.1" &&
	MANWIDTH=80 man aptix-continue >out &&
	grep "aptix-continue - run one turn" out &&
	share=${MANPATH%/man} &&
	test -f "$share/bash-completion/completions/aptix" &&
	test -f "$share/zsh/vendor-completions/_aptix" &&
	test -f "$share/fish/vendor_completions.d/aptix.fish" &&
	mkdir man &&
	cp -R "$MANPATH/man1" man/
'

test_expect_success MAN,MANPAGES 'help and --help open the man page' '
	MANPATH=$PWD/man &&
	export MANPATH &&
	aptix help continue >out &&
	grep "aptix-continue - run one turn" out &&
	aptix continue --help >out &&
	grep "aptix-continue - run one turn" out &&
	aptix help >out &&
	grep "^COMMANDS" out &&
	test_expect_code 129 aptix continue -h >out &&
	grep "^usage: aptix continue" out
'

test_expect_success 'without the page, help prints the usage' '
	mkdir empty-man &&
	MANPATH=$PWD/empty-man &&
	export MANPATH &&
	test_expect_code 129 aptix help log >out &&
	grep "^usage: aptix log" out &&
	test_expect_code 129 aptix log --help >out &&
	grep "^usage: aptix log" out
'

test_done
