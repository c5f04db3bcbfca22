#!/bin/sh
# contrib/check-func-length.sh - no C function is longer than the limit
# (150 lines unless -n says otherwise). A function's length is counted
# from the line of its opening brace to the line of its closing brace,
# both included: the project's style puts both alone at column 0 (K&R
# with the function's brace on its own line), so a function is the
# lines between a "{" that starts a line, after a header that has a
# "(" and no "=", and the next "}" that starts a line.
#
# Usage: contrib/check-func-length.sh [-n MAX] [FILE|DIR...]
# With no FILE or DIR, it reads the .c and .h files below src/, cli/,
# plumbing/, porcelain/ and serve/. Each function over the limit is
# reported as "file:line: name is N lines (limit MAX)", the line being
# the one that names it; the exit status is 1 if any is, 2 on misuse.
max=150
case $1 in
-n) test $# -ge 2 || { echo "usage: $0 [-n MAX] [FILE|DIR...]" >&2; exit 2; }
	max=$2; shift 2 ;;
-h|--help) sed -n '2,14s/^# \{0,1\}//p' "$0"; exit 0 ;;
-*) echo "usage: $0 [-n MAX] [FILE|DIR...]" >&2; exit 2 ;;
esac
case $max in
''|*[!0-9]*) echo "check-func-length: -n takes a number" >&2; exit 2 ;;
esac
if test $# = 0; then
	cd "$(dirname "$0")/.." || exit 2
	set -- src cli plumbing porcelain serve
fi
for p in "$@"; do
	test -e "$p" || { echo "check-func-length: no such file '$p'" >&2; exit 2; }
done
out=$(find "$@" -type f \( -name '*.c' -o -name '*.h' \) | LC_ALL=C sort |
while read -r f; do
	awk -v max="$max" -v file="$f" '
	# The header of a function is the run of lines since the last
	# one that ends a declaration, a definition or a directive.
	function reset() { nhead = 0 }
	# The name is the word before the "(" that matches the last ")"
	# of the header, so that a macro before it (an attribute) is not
	# taken for it.
	function name_of(   i, j, c, depth, pre, n) {
		depth = 0
		for (i = nhead; i >= 1; i--) {
			for (j = length(head[i]); j >= 1; j--) {
				c = substr(head[i], j, 1)
				if (c == ")")
					depth++
				else if (c == "(" && depth > 0 && --depth == 0) {
					pre = substr(head[i], 1, j - 1)
					sub(/[ \t]+$/, "", pre)
					n = pre
					sub(/.*[^A-Za-z0-9_]/, "", n)
					nameline = headline[i]
					return n
				}
			}
		}
		return ""
	}
	# A directive and its continuation lines hold no function.
	indef {
		indef = /\\$/
		reset()
		next
	}
	/^#/ {
		indef = /\\$/
		reset()
		next
	}
	infn {
		if ($0 ~ /^}/) {
			len = NR - start + 1
			if (len > max)
				printf "%s:%d: %s is %d lines (limit %d)\n",
					file, nameline, fname, len, max
			infn = 0
			reset()
		}
		next
	}
	/^\{/ {
		joined = ""
		for (i = 1; i <= nhead; i++)
			joined = joined " " head[i]
		if (index(joined, "(") && !index(joined, "=")) {
			fname = name_of()
			if (fname != "") {
				infn = 1
				start = NR
				next
			}
		}
		reset()
		next
	}
	/^[ \t]*$/ || /;[ \t]*$/ || /^}/ || /^[ \t]*\/?\*/ || /\*\/[ \t]*$/ {
		reset()
		next
	}
	{ head[++nhead] = $0; headline[nhead] = NR }
	' "$f"
done)
test -z "$out" && exit 0
printf '%s\n' "$out" >&2
exit 1
