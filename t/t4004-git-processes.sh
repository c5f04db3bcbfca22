#!/bin/sh
test_description='a turn runs git at most once, and never outside a work tree

git status gives the dirty files; where the workspace sits in the work
tree comes from looking up the .git entry, not from another git
process. Outside a work tree no git runs at all.'
. "$(dirname "$0")"/test-lib.sh

# A git on PATH that logs each call to $GIT_CALLS, then runs the real one.
test_expect_success 'setup: a logging git' '
	real=$(command -v git) &&
	mkdir bin &&
	cat >bin/git <<-EOF &&
	#!/bin/sh
	echo "\$*" >>"\$GIT_CALLS"
	exec "$real" "\$@"
	EOF
	chmod +x bin/git &&
	GIT_CALLS=$PWD/calls && export GIT_CALLS
'

test_expect_success 'in a work tree (a subdirectory of it): one git status' '
	git init -q wt &&
	mkdir wt/sub &&
	echo dirty >wt/sub/dirty.txt &&
	(cd wt/sub && aptix init -q) &&
	rm -f calls &&
	(cd wt/sub && PATH=$TRASH_DIRECTORY/bin:$PATH aptix continue --dry-run -m x >../../out) &&
	test_line_count = 1 calls &&
	grep "^--no-optional-locks -C .* status " calls &&
	grep "dirty.txt" out
'

test_expect_success 'aptix status runs git once too' '
	rm -f calls &&
	(cd wt/sub && PATH=$TRASH_DIRECTORY/bin:$PATH aptix status >../../out) &&
	test_line_count = 1 calls &&
	grep "dirty.txt" out
'

test_expect_success 'outside a work tree: no git at all' '
	outside=$(mktemp -d "${TMPDIR:-/tmp}/aptix-nogit.XXXXXX") &&
	test_when_finished "rm -rf \"$outside\"" &&
	! (cd "$outside" && git rev-parse --git-dir >/dev/null 2>&1) &&
	(cd "$outside" && aptix init -q) &&
	rm -f calls &&
	(cd "$outside" && PATH=$TRASH_DIRECTORY/bin:$PATH aptix continue --dry-run -m x >/dev/null) &&
	test_path_is_missing calls
'

test_done
