#!/bin/sh
# gen-doc.sh <aptix> <command> <page.scd>: print the page's scdoc source
# with its generated parts filled in from the command itself, so that
# the man page says what -h says and cannot drift from it:
#
#	@NAME@		aptix-<command> - <its line in 'aptix help'>
#	@SYNOPSIS@	the usage lines of -h (and their description)
#	@OPTIONS@	the option table of -h
#	@COMMANDS porcelain@, @COMMANDS plumbing@
#			the command list (aptix.scd)
#
# <command> is "aptix" for aptix(1), whose options are the global ones.
# The tables come from 'aptix <command> --dump-options' and
# 'aptix --list-cmds=help' (see cli/parse-options.h); everything
# else is the page's prose, as written.
set -e
aptix=$1 cmd=$2 page=$3
tmp=${TMPDIR:-/tmp}/gen-doc.$$
trap 'rm -f "$tmp".*' EXIT
if test "$cmd" = aptix; then
	"$aptix" --dump-options >"$tmp.opts"
else
	"$aptix" "$cmd" --dump-options >"$tmp.opts"
fi
"$aptix" --list-cmds=help >"$tmp.cmds"

awk -F '\t' -v cmd="$cmd" -v opts="$tmp.opts" -v cmds="$tmp.cmds" '
function esc(s) {
	gsub(/\\/, "\\\\", s)
	gsub(/\*/, "\\*", s)
	gsub(/_/, "\\_", s)
	# a leading "-" would start a list entry
	sub(/^-/, "\\-", s)
	return s
}
function name_line(   line, f, n) {
	while ((getline line <cmds) > 0) {
		split(line, f, "\t")
		if (f[1] == cmd) {
			close(cmds)
			return "aptix-" cmd " - " esc(f[3])
		}
	}
	close(cmds)
	print "gen-doc.sh: " cmd " is not a command" >"/dev/stderr"
	exit 1
}
function synopsis(   line, f, text, n, out) {
	out = ""
	while ((getline line <opts) > 0) {
		n = split(line, f, "\t")
		if (f[1] == "usage") {
			if (f[2] ~ /^[ \t]/) {
				sub(/^[ \t]+/, "", f[2])
				out = out " " esc(f[2])
				continue
			}
			if (out != "")
				out = out "\n\n"
			sub(/^aptix /, "", f[2])
			split(f[2], w, " ")
			sub(/^[^ ]+/, "", f[2])
			if (cmd == "aptix")
				out = out "*aptix* " esc(w[1] f[2])
			else
				out = out "*aptix " w[1] "*" esc(f[2])
		} else if (f[1] == "text") {
			sub(/^[ \t]+/, "", f[2])
			f[2] = esc(f[2])
			# not a list item, heading or table
			sub(/^[-#|]/, "\\\\&", f[2])
			text = text (text == "" ? "" : "\n") f[2]
		}
	}
	close(opts)
	if (text != "")
		out = out "\n\n" text
	return out
}
function options(   line, f, n, out, head) {
	out = ""
	while ((getline line <opts) > 0) {
		n = split(line, f, "\t")
		if (f[1] == "group") {
			if (f[2] != "") {
				sub(/:$/, "", f[2])
				out = out "## " esc(f[2]) "\n\n"
			}
			continue
		}
		if (f[1] != "option")
			continue
		head = ""
		if (f[2] != "")
			head = "*" f[2] "*"
		if (f[3] != "")
			head = head (head == "" ? "" : ", ") "*" esc(f[3]) "*"
		if (f[4] != "") {
			if (f[3] != "" && f[4] !~ /^\[/)
				head = head "=" esc(f[4])
			else if (f[3] != "")
				head = head esc(f[4])
			else
				head = head " " esc(f[4])
		}
		out = out head "\n\t" esc(f[6]) "\n\n"
	}
	close(opts)
	if (out == "")
		out = "None.\n\n"
	sub(/\n\n$/, "", out)
	return out
}
function commands(cat,   line, f, out) {
	out = ""
	while ((getline line <cmds) > 0) {
		split(line, f, "\t")
		if (f[2] == cat)
			out = out "*aptix-" f[1] "*(1)\n\t" esc(f[3]) "\n\n"
	}
	close(cmds)
	sub(/\n\n$/, "", out)
	return out
}
$0 == "@NAME@" { print name_line(); next }
$0 == "@SYNOPSIS@" { print synopsis(); next }
$0 == "@OPTIONS@" { print options(); next }
/^@COMMANDS [a-z]+@$/ {
	c = $0; gsub(/^@COMMANDS |@$/, "", c); print commands(c); next
}
/^@[A-Z]+.*@$/ {
	print FILENAME ": unknown marker " $0 >"/dev/stderr"; exit 1
}
{ print }
' "$page"
