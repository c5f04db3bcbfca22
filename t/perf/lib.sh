# t/perf/lib.sh: helpers shared by run.sh and more.sh (sourced; needs $W).

now() { date +%s.%N; }
# rate N START END -> per second
rate() { awk -v n="$1" -v a="$2" -v b="$3" 'BEGIN { printf "%.0f", n / (b - a) }'; }
ratio() {
	case "$1$2" in
	*[!0-9.]*|'') printf '%s' - ;;
	*) awk -v a="$1" -v b="$2" 'BEGIN { if (b > 0) printf "%.2f", a / b; else printf "-" }' ;;
	esac
}
du_bytes() { du -sb "$1" | cut -f1; }
alloc_bytes() { du -s --block-size=1 "$1" | cut -f1; }
mib() { awk -v b="$1" 'BEGIN { printf "%.1f", b / 1048576 }'; }

# hf DIR WARMUP RUNS COMMAND [PREPARE]: time COMMAND (run in DIR, no
# shell: hyperfine -N; PREPARE before each run, not timed) and set
# HF_MEAN and HF_SD (ms, 2 decimals), HF ("mean ± sd") and HF_CPU (mean
# user + system time, ms). A command
# that fails sets them to "failed" and keeps its first error line in
# HF_ERR.
hf() {
	HF_ERR=
	if (cd "$1" && hyperfine -N -w "$2" -r "$3" --style none \
		${5:+--prepare "$5"} \
		--export-json "$W/hf.json" -- "$4") >/dev/null 2>"$W/hf.err"
	then
		set -- $(python3 -c 'import json, sys
r = json.load(open(sys.argv[1]))["results"][0]
print("%.2f %.2f %.2f" % (r["mean"] * 1e3, r["stddev"] * 1e3,
                          (r["user"] + r["system"]) * 1e3))' "$W/hf.json")
		HF_MEAN=$1 HF_SD=$2 HF="$1 ± $2" HF_CPU=$3
	else
		HF_MEAN=failed HF_SD=failed HF=failed HF_CPU=-
		HF_ERR=$(grep -v '^ *$' "$W/hf.err" | grep -iv warning | head -n 3 | tr '\n' ' ')
	fi
}

# padr WIDTH STRING: right-aligned in WIDTH columns (printf counts bytes;
# "±" takes two)
padr() {
	_w=$1
	case $2 in *±*) _w=$((_w + 1)) ;; esac
	printf "%${_w}s" "$2"
}

# hfrow LABEL DIR_A CMD_A DIR_G CMD_G WARMUP RUNS: one table row, aptix
# against git (a column is left empty when its command is empty).
hfrow() {
	_a= _am= _aerr=
	if [ -n "$3" ]; then
		hf "$2" "$6" "$7" "$3"
		_a=$HF _am=$HF_MEAN _aerr=$HF_ERR
	fi
	_g= _gm= _gerr=
	if [ -n "$5" ]; then
		hf "$4" "$6" "$7" "$5"
		_g=$HF _gm=$HF_MEAN _gerr=$HF_ERR
	fi
	printf '%-48s %s %s %9s%s\n' "$1" "$(padr 17 "$_a")" "$(padr 17 "$_g")" \
		"$([ -n "$_a" ] && [ -n "$_g" ] && echo "$(ratio "$_am" "$_gm")x")" "${HF_EXTRA:-}"
	[ -z "$_aerr" ] || echo "    aptix failed: $_aerr"
	[ -z "$_gerr" ] || echo "    git failed: $_gerr"
	return 0
}

# hfhead TITLE [EXTRA]: the header of hfrow's table (HF_EXTRA: a last column)
hfhead() { printf '%-48s %17s %17s %9s%s\n' "$1" "aptix ms" "git ms" "aptix/git" "${2:-}"; }

have_hyperfine() {
	command -v hyperfine >/dev/null 2>&1 && return 0
	echo "(hyperfine is not installed: latencies skipped; apt-get install hyperfine)"
	return 1
}

# count BINARY ARGS...: instructions (callgrind) of one run, in $W/ws
count() {
	(cd "$W/ws" && valgrind --tool=callgrind \
		--callgrind-out-file="$W/cg.out" "$@" >/dev/null 2>"$W/vg.err")
	sed -n 's/.*Collected : \([0-9]*\).*/\1/p' "$W/vg.err"
}

# build_cached DIR PREFIX ARG...: build DIR with build-store.sh ARG...
# (the word @ in them stands for DIR.tmp), after removing the older
# builds PREFIX* (another builder's or format's); says how long it took
# on stderr. Returns 1, with the builder's last lines, when it fails.
build_cached() {
	_dir=$1 _prefix=$2
	shift 2
	mkdir -p "${_dir%/*}"
	for _old in "$_prefix"*; do
		[ -e "$_old" ] && rm -rf "$_old"
	done
	for _a in "$@"; do
		shift
		case $_a in
		@) _a=$_dir.tmp ;;
		@/*) _a=$_dir.tmp/${_a#@/} ;;
		esac
		set -- "$@" "$_a"
	done
	_t=$(now)
	if ! APTIX="$APTIX" sh "$PERF_DIR/build-store.sh" "$@" \
		>"$W/build.log" 2>&1; then
		echo "building ${_dir##*/} failed:" >&2
		tail -n 5 "$W/build.log" >&2
		rm -rf "$_dir.tmp"
		return 1
	fi
	mv "$_dir.tmp" "$_dir"
	echo "store ${_dir##*/}: built in $(awk -v a="$_t" -v b="$(now)" \
		'BEGIN { printf "%.1f", b - a }') s, cached in t/perf/results/" >&2
}

# store_format: the store format of the aptix of this tree, part of the
# key of each cached store: a store of an older format still reads, but
# it would measure the older layout
store_format() {
	sed -n 's/^#define APTIX_STORE_FORMAT //p' \
		"$PERF_DIR/../../include/aptix/common.h"
}

# instant_responder: start t/perf/instant-responses.py in $W (stopped and
# $W removed on exit), and point OPENAI_BASE_URL and OPENAI_API_KEY at it
instant_responder() {
	python3 "$PERF_DIR/instant-responses.py" --port-file "$W/port" \
		>/dev/null 2>&1 &
	IR_PID=$!
	trap 'kill $IR_PID 2>/dev/null; rm -rf "$W"' EXIT
	while [ ! -s "$W/port" ]; do sleep 0.1; done
	OPENAI_BASE_URL="http://127.0.0.1:$(cat "$W/port")/v1"
	OPENAI_API_KEY=sk-bench-0123456789abcdef
	export OPENAI_BASE_URL OPENAI_API_KEY
}
