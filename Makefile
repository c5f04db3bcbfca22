# Makefile for aptix: libaptix (static and shared), the aptix command,
# its tests and benchmarks.
#
#	make                      build everything
#	make check                unit and shell tests, then again under
#	                          ASan+UBSan (in build-asan/), then the
#	                          threaded tests under TSan (in build-tsan/)
#	make test                 the tests once, without sanitizers
#	make install PREFIX=/usr/local DESTDIR=
#	                          (with the man pages, NO_DOC=1 for none,
#	                          and the bash, zsh and fish completions)
#	make deps                 install build and test dependencies (Debian)
#	make bench                benchmarks against git
#	make fuzz                 run each libFuzzer harness of t/fuzz/ for
#	                          FUZZ_SECONDS (default 60), in build-fuzz/
#	make SANITIZE=address,undefined   a sanitizer build
#	make O=dir                build into another directory
#	make V=1                  show the commands
#
# Local overrides go in config.mak.

all::

-include config.mak

PREFIX ?= /usr/local
prefix ?= $(PREFIX)
exec_prefix ?= $(prefix)
bindir ?= $(exec_prefix)/bin
libdir ?= $(exec_prefix)/lib
includedir ?= $(prefix)/include
mandir ?= $(prefix)/share/man
pkgconfigdir ?= $(libdir)/pkgconfig
bashcompdir ?= $(prefix)/share/bash-completion/completions
zshcompdir ?= $(prefix)/share/zsh/vendor-completions
fishcompdir ?= $(prefix)/share/fish/vendor_completions.d

CC ?= cc
CFLAGS ?= -O2 -g
PKG_CONFIG ?= pkg-config
INSTALL ?= install

O ?= .
VERSION = 0.1.0
SOVERSION = 0

WARNINGS = -Wall -Wextra -Werror -Wstrict-prototypes -Wmissing-prototypes \
	-Wold-style-definition -Wvla -Wwrite-strings -Wpointer-arith \
	-Wformat-security -Wdeclaration-after-statement -fno-common
ifdef DEVOPTS
WARNINGS := $(filter-out -Werror,$(WARNINGS))
endif

BASIC_CFLAGS = -std=c11 $(WARNINGS) -D_POSIX_C_SOURCE=200809L \
	-D_DEFAULT_SOURCE -Iinclude -fPIC -MMD -MP
LIB_CFLAGS = -Isrc -fvisibility=hidden $(PQ_CFLAGS)
CLI_CFLAGS = -Icli -Iplumbing -Iserve
ifdef SANITIZE
BASIC_CFLAGS += -fsanitize=$(SANITIZE) -fno-sanitize-recover=$(SANITIZE) \
	-fno-omit-frame-pointer -g
BASIC_LDFLAGS += -fsanitize=$(SANITIZE)
endif

# libpq: the PostgreSQL storage backend (src/store/backend-pg.c), a
# store shared by many hosts (issue 26); linked, not loaded on demand,
# because the library itself opens such a store by name.
# libsqlite3 (Debian's): `aptix import opencode` reads OpenCode's own
# database (opencode.db) through SQLite itself, the library that wrote
# it, read-only, rather than a hand-written reader of its file format
# (issue 25).
# libzstd (Debian's): Codex's rollouts compressed as .jsonl.zst, read
# as a stream by the importers (src/import/lines.c).
# libsodium (Debian's): `aptix import llm` checks llm's message hashes,
# BLAKE2b with a 16-byte digest (crypto_generichash); OpenSSL 3.0's
# BLAKE2B-512 has no digest size before 3.2, and its BLAKE2BMAC wants a
# key, so neither can compute them.
LIB_DEPS_PC = lmdb zlib jansson libpq sqlite3 libzstd libsodium
SQLITE_LIBS = $(shell $(PKG_CONFIG) --libs sqlite3 2>/dev/null || \
	echo -lsqlite3)
ZSTD_LIBS = $(shell $(PKG_CONFIG) --libs libzstd 2>/dev/null || \
	echo -lzstd)
PQ_CFLAGS = $(shell $(PKG_CONFIG) --cflags libpq 2>/dev/null || \
	echo -I/usr/include/postgresql)
SODIUM_LIBS = $(shell $(PKG_CONFIG) --libs libsodium 2>/dev/null || \
	echo -lsodium)
LIBS = -llmdb -lz -ljansson -lpq $(SQLITE_LIBS) $(ZSTD_LIBS) $(SODIUM_LIBS)
# libmicrohttpd: the HTTP server of `aptix serve`, its header only: the
# library is loaded by the command when it starts (serve/http.c), as
# libcurl is, so that other commands do not load it and GnuTLS
MHD_CFLAGS = $(shell $(PKG_CONFIG) --cflags libmicrohttpd 2>/dev/null)
MHD_LIBS = -lpthread
# Line editing for aptix chat (the command only, not the library):
# libedit, BSD-licensed; GNU readline's GPL would bind the binary. Its
# header only: chat loads the library (porcelain/chat-tty.c), so that
# other commands do not map it and the three libraries it needs.
EDIT_CFLAGS = $(shell $(PKG_CONFIG) --cflags libedit 2>/dev/null)
CHECK_CFLAGS = $(shell $(PKG_CONFIG) --cflags check 2>/dev/null)
CHECK_LIBS = $(shell $(PKG_CONFIG) --libs check 2>/dev/null || \
	echo -lcheck -lsubunit -lm -lrt -lpthread)

# The library, one folder a layer (src/README.md gives their order).
LIB_SRCS = $(sort $(wildcard src/*/*.c))
# cli/: main() and what every command shares (options, messages, pager).
CLI_SRCS = $(sort $(wildcard cli/*.c))
PLUMBING_SRCS = $(sort $(wildcard plumbing/*.c))
PORCELAIN_SRCS = $(sort $(wildcard porcelain/*.c))
# serve/: the handlers and transports of `aptix serve` and `aptix
# app-server` (linked into the command, not the library), and the files
# of the browser page, embedded at build time.
SERVE_SRCS = $(filter-out serve/page-files.c, \
	$(sort $(wildcard serve/*.c)))
PAGE_FILES = $(sort $(wildcard serve/page/*))
UNIT_SRCS = $(sort $(wildcard t/unit/*.c))

LIB_OBJS = $(patsubst %.c,$(O)/%.o,$(LIB_SRCS))
CLI_OBJS = $(patsubst %.c,$(O)/%.o,$(CLI_SRCS) $(PLUMBING_SRCS) \
	$(PORCELAIN_SRCS) $(SERVE_SRCS)) $(O)/serve/page-files.o
UNIT_OBJS = $(patsubst %.c,$(O)/%.o,$(UNIT_SRCS))
FUZZ_NAMES = object config sse openai_json refname revparse
FUZZ_OBJS = $(patsubst %,$(O)/t/fuzz/fuzz_%.o,$(FUZZ_NAMES)) \
	$(O)/t/fuzz/replay-main.o
FUZZ_REPLAY = $(patsubst %,$(O)/t/fuzz/replay-%,$(FUZZ_NAMES))
CLI_LIB_OBJS = $(O)/cli/cli.o $(O)/cli/parse-options.o \
	$(O)/porcelain/chat-model.o \
	$(O)/serve/serve.o $(O)/serve/turn.o $(O)/serve/jsonrpc.o \
	$(O)/serve/jsonrpc-out.o

ifneq ($(V),1)
QUIET_CC = @echo '   ' CC $@;
QUIET_LINK = @echo '   ' LINK $@;
QUIET_AR = @echo '   ' AR $@;
QUIET_GEN = @echo '   ' GEN $@;
endif

all:: $(O)/aptix $(O)/libaptix.a $(O)/libaptix.so $(O)/libaptix.pc

# Man pages: Documentation/aptix-<cmd>.scd holds a page's prose;
# gen-doc.sh fills in its NAME, SYNOPSIS and OPTIONS from the command's
# own tables (aptix <cmd> --dump-options), so they say what -h says;
# scdoc (Debian package scdoc) renders the roff. NO_DOC=1 skips them.
SCDOC ?= scdoc
DOC_SRCS = $(sort $(wildcard Documentation/aptix*.scd))
MAN_PAGES = $(patsubst Documentation/%.scd,$(O)/Documentation/%.1,$(DOC_SRCS))
ifndef NO_DOC
all:: doc
endif
doc: $(MAN_PAGES)

$(O)/Documentation/aptix.1: Documentation/aptix.scd \
		Documentation/gen-doc.sh $(O)/aptix
	@mkdir -p $(dir $@)
	$(QUIET_GEN)sh Documentation/gen-doc.sh $(O)/aptix aptix $< \
		>$@.in && $(SCDOC) <$@.in >$@+ && mv $@+ $@ && rm $@.in

$(O)/Documentation/aptix-%.1: Documentation/aptix-%.scd \
		Documentation/gen-doc.sh $(O)/aptix
	@mkdir -p $(dir $@)
	$(QUIET_GEN)sh Documentation/gen-doc.sh $(O)/aptix $* $< \
		>$@.in && $(SCDOC) <$@.in >$@+ && mv $@+ $@ && rm $@.in

$(O)/src/%.o: src/%.c
	@mkdir -p $(dir $@)
	$(QUIET_CC)$(CC) $(BASIC_CFLAGS) $(LIB_CFLAGS) $(CFLAGS) -c -o $@ $<

$(O)/cli/aptix.o: cli/aptix.c
	@mkdir -p $(dir $@)
	$(QUIET_CC)$(CC) $(BASIC_CFLAGS) $(CLI_CFLAGS) $(CFLAGS) \
		-DAPTIX_BUILD_VERSION='"$(VERSION)"' -c -o $@ $<

$(O)/cli/%.o: cli/%.c
	@mkdir -p $(dir $@)
	$(QUIET_CC)$(CC) $(BASIC_CFLAGS) $(CLI_CFLAGS) $(CFLAGS) -c -o $@ $<

$(O)/plumbing/%.o: plumbing/%.c
	@mkdir -p $(dir $@)
	$(QUIET_CC)$(CC) $(BASIC_CFLAGS) $(CLI_CFLAGS) $(CFLAGS) -c -o $@ $<

$(O)/porcelain/%.o: porcelain/%.c
	@mkdir -p $(dir $@)
	$(QUIET_CC)$(CC) $(BASIC_CFLAGS) $(CLI_CFLAGS) $(CFLAGS) -c -o $@ $<

$(O)/porcelain/chat-tty.o: porcelain/chat-tty.c
	@mkdir -p $(dir $@)
	$(QUIET_CC)$(CC) $(BASIC_CFLAGS) $(CLI_CFLAGS) $(EDIT_CFLAGS) \
		$(CFLAGS) -c -o $@ $<

$(O)/serve/%.o: serve/%.c
	@mkdir -p $(dir $@)
	$(QUIET_CC)$(CC) $(BASIC_CFLAGS) $(CLI_CFLAGS) $(MHD_CFLAGS) \
		$(CFLAGS) -c -o $@ $<

# The page's files as C arrays (serve/embed.sh), served by GET /.
$(O)/serve/page-files.c: serve/embed.sh $(PAGE_FILES)
	@mkdir -p $(dir $@)
	$(QUIET_GEN)sh serve/embed.sh $(PAGE_FILES) >$@+ && mv $@+ $@

$(O)/serve/page-files.o: $(O)/serve/page-files.c
	$(QUIET_CC)$(CC) $(BASIC_CFLAGS) -Iserve $(CFLAGS) -c -o $@ $<

$(O)/t/unit/%.o: t/unit/%.c
	@mkdir -p $(dir $@)
	$(QUIET_CC)$(CC) $(filter-out -Wdeclaration-after-statement, \
		$(BASIC_CFLAGS)) -Isrc $(CLI_CFLAGS) $(CHECK_CFLAGS) \
		$(CFLAGS) -c -o $@ $<

# The fuzz harnesses, built with a main() that replays files (make check
# runs them over t/fuzz/corpus and t/fuzz/regressions: t7004).
$(O)/t/fuzz/%.o: t/fuzz/%.c
	@mkdir -p $(dir $@)
	$(QUIET_CC)$(CC) $(BASIC_CFLAGS) -Isrc $(CFLAGS) -c -o $@ $<

.SECONDARY: $(FUZZ_OBJS)

$(O)/t/fuzz/replay-%: $(O)/t/fuzz/fuzz_%.o $(O)/t/fuzz/replay-main.o \
		$(O)/libaptix.a
	$(QUIET_LINK)$(CC) $(BASIC_LDFLAGS) $(LDFLAGS) -o $@ $^ $(LIBS)

$(O)/libaptix.a: $(LIB_OBJS)
	$(QUIET_AR)rm -f $@ && $(AR) rcs $@ $^

$(O)/libaptix.so: $(LIB_OBJS)
	$(QUIET_LINK)$(CC) -shared -Wl,-soname,libaptix.so.$(SOVERSION) \
		$(BASIC_LDFLAGS) $(LDFLAGS) -o $@ $^ $(LIBS)

$(O)/aptix: $(CLI_OBJS) $(O)/libaptix.a
	$(QUIET_LINK)$(CC) $(BASIC_LDFLAGS) $(LDFLAGS) -Wl,--as-needed \
		-o $@ $(CLI_OBJS) $(O)/libaptix.a $(LIBS) $(MHD_LIBS)

# The prefix is recorded: a change of it regenerates the file.
$(O)/libaptix.pc: Makefile FORCE
	@printf '%s\n' 'prefix=$(prefix)' 'libdir=$(libdir)' \
		'includedir=$(includedir)' >$@.prefix.new; \
	cmp -s $@.prefix.new $@.prefix 2>/dev/null && rm -f $@.prefix.new || \
	mv $@.prefix.new $@.prefix
	@test -f $@ && test $@ -nt $@.prefix || $(MAKE) --no-print-directory \
		$@.gen PC_OUT=$@

$(O)/libaptix.pc.gen:
	$(QUIET_GEN)printf '%s\n' 'prefix=$(prefix)' \
		'libdir=$(libdir)' 'includedir=$(includedir)' '' \
		'Name: libaptix' \
		'Description: git-like history of AI coding-agent sessions' \
		'Version: $(VERSION)' 'Requires.private: $(LIB_DEPS_PC)' \
		'Libs: -L$${libdir} -laptix' 'Cflags: -I$${includedir}' \
		>$(PC_OUT)

FORCE:

$(O)/t/unit/aptix-unit: $(UNIT_OBJS) $(CLI_LIB_OBJS) $(O)/libaptix.a
	$(QUIET_LINK)$(CC) $(BASIC_LDFLAGS) $(LDFLAGS) -o $@ $(UNIT_OBJS) \
		$(CLI_LIB_OBJS) $(O)/libaptix.a $(LIBS) $(CHECK_LIBS)

.PHONY: FORCE all check test tsan-test unit-test shell-test check-asan \
	install uninstall doc \
	clean deps bench demo hdr-check valgrind lint fuzz

unit-test: $(O)/t/unit/aptix-unit
	$(O)/t/unit/aptix-unit

test: all $(O)/t/unit/aptix-unit $(FUZZ_REPLAY)
	APTIX_BUILD_DIR=$(abspath $(O)) $(MAKE) -C t test

check: test
	$(MAKE) O=build-asan SANITIZE=address,undefined CFLAGS='-O1 -g' test
	$(MAKE) O=build-tsan SANITIZE=thread CFLAGS='-O1 -g' tsan-test

# The unit suites that run threads (many turns at once on one store,
# readers beside them; the JSON-RPC output's writer), for the
# ThreadSanitizer pass of make check.
TSAN_SUITES = run threads backend jsonrpc
tsan-test: $(O)/t/unit/aptix-unit
	APTIX_BUILD_DIR=$(abspath $(O)) APTIX_UNIT_SUITES='$(TSAN_SUITES)' \
		$(MAKE) -C t test T=unit/run-unit.sh

hdr-check:
	@for h in include/aptix/*.h include/aptix/sys/*.h include/aptix.h; do \
		echo "#include \"$$h\"" | $(CC) -std=c99 -pedantic -Werror \
			-Wall -Iinclude -I. -x c -fsyntax-only - || exit 1; \
	done

valgrind: $(O)/t/unit/aptix-unit
	CK_FORK=no valgrind --leak-check=full --error-exitcode=1 \
		$(O)/t/unit/aptix-unit

lint:
	sh contrib/check-layers.sh
	sh contrib/check-func-length.sh
	cppcheck --quiet --error-exitcode=1 --enable=warning -Iinclude -Isrc -Icli \
		-D__GNUC__ --suppress=missingIncludeSystem \
		src cli plumbing porcelain serve
	shellcheck -s bash -S warning -e SC2034 t/*.sh contrib/check-layers.sh \
		contrib/check-func-length.sh

DEB_PKGS = build-essential pkg-config liblmdb-dev lmdb-utils libssl-dev \
	zlib1g-dev libcurl4-openssl-dev libjansson-dev check python3 git \
	valgrind clang libclang-rt-14-dev curl jq hyperfine \
	libmicrohttpd-dev chromium libedit-dev tmux scdoc zsh fish \
	postgresql libpq-dev python3-jsonschema libsqlite3-dev libzstd-dev \
	libsodium-dev nodejs strace

deps:
	@missing=$$(for p in $(DEB_PKGS); do \
		dpkg-query -W -f='$${Status}\n' $$p 2>/dev/null | \
		grep -q 'install ok installed' || echo $$p; done); \
	if [ -n "$$missing" ]; then \
		echo "installing:" $$missing; \
		SUDO=; [ "$$(id -u)" = 0 ] || SUDO=sudo; \
		$$SUDO apt-get update -qq && \
		DEBIAN_FRONTEND=noninteractive $$SUDO apt-get install -y -qq \
			$$missing >/dev/null; \
	fi
	@# test-only: the ACP TypeScript SDK (t8202) and s3rver (t0233),
	@# pinned by the lockfile; Debian's nodejs comes without npm (a
	@# NodeSource nodejs, as on the CI machine, has it)
	@if ! command -v npm >/dev/null 2>&1; then \
		SUDO=; [ "$$(id -u)" = 0 ] || SUDO=sudo; \
		DEBIAN_FRONTEND=noninteractive $$SUDO apt-get install -y -qq \
			npm >/dev/null || true; \
	fi
	@if command -v npm >/dev/null 2>&1; then \
		npm ci --prefix t --no-audit --no-fund --loglevel=error; \
	else \
		echo "npm not found: t8202 (the ACP SDK client) and t0233 (S3) will be skipped"; \
	fi

demo: all
	@sh contrib/demo.sh

bench: all
	@APTIX=$${APTIX:-$(abspath $(O))/aptix} sh t/perf/run.sh

install: all
	$(INSTALL) -d $(DESTDIR)$(bindir) $(DESTDIR)$(libdir) \
		$(DESTDIR)$(includedir)/aptix/sys $(DESTDIR)$(pkgconfigdir)
	$(INSTALL) -m 755 $(O)/aptix $(DESTDIR)$(bindir)/aptix
	$(INSTALL) -m 644 $(O)/libaptix.a $(DESTDIR)$(libdir)/libaptix.a
	$(INSTALL) -m 755 $(O)/libaptix.so \
		$(DESTDIR)$(libdir)/libaptix.so.$(VERSION)
	ln -sf libaptix.so.$(VERSION) \
		$(DESTDIR)$(libdir)/libaptix.so.$(SOVERSION)
	ln -sf libaptix.so.$(SOVERSION) $(DESTDIR)$(libdir)/libaptix.so
	$(INSTALL) -m 644 include/aptix.h $(DESTDIR)$(includedir)/aptix.h
	$(INSTALL) -m 644 include/aptix/*.h $(DESTDIR)$(includedir)/aptix/
	$(INSTALL) -m 644 include/aptix/sys/*.h \
		$(DESTDIR)$(includedir)/aptix/sys/
	$(INSTALL) -m 644 $(O)/libaptix.pc $(DESTDIR)$(pkgconfigdir)/
	$(INSTALL) -d $(DESTDIR)$(bashcompdir) $(DESTDIR)$(zshcompdir) \
		$(DESTDIR)$(fishcompdir)
	$(INSTALL) -m 644 contrib/completion/aptix-completion.bash \
		$(DESTDIR)$(bashcompdir)/aptix
	$(INSTALL) -m 644 contrib/completion/aptix-completion.zsh \
		$(DESTDIR)$(zshcompdir)/_aptix
	$(INSTALL) -m 644 contrib/completion/aptix.fish \
		$(DESTDIR)$(fishcompdir)/aptix.fish
ifndef NO_DOC
	$(INSTALL) -d $(DESTDIR)$(mandir)/man1
	$(INSTALL) -m 644 $(MAN_PAGES) $(DESTDIR)$(mandir)/man1/
endif

uninstall:
	rm -f $(DESTDIR)$(bindir)/aptix $(DESTDIR)$(libdir)/libaptix.* \
		$(DESTDIR)$(pkgconfigdir)/libaptix.pc \
		$(DESTDIR)$(includedir)/aptix.h \
		$(DESTDIR)$(bashcompdir)/aptix $(DESTDIR)$(zshcompdir)/_aptix \
		$(DESTDIR)$(fishcompdir)/aptix.fish \
		$(patsubst $(O)/Documentation/%,$(DESTDIR)$(mandir)/man1/%, \
			$(MAN_PAGES))
	rm -rf $(DESTDIR)$(includedir)/aptix

# Fuzzing: the library and each harness built with clang and
# -fsanitize=fuzzer,address,undefined into build-fuzz/; each harness runs
# for FUZZ_SECONDS on a working copy of its seed corpus (new inputs go to
# build-fuzz/corpus/<name>, crashes to build-fuzz/crashes/). A crash found
# is fixed, and its input added to t/fuzz/regressions/<name>/.
FUZZ_CC ?= clang
FUZZ_SECONDS ?= 60
FUZZ_DIR = build-fuzz
FUZZ_CFLAGS = -g -O1 -fno-omit-frame-pointer \
	-fsanitize=address,undefined -fno-sanitize-recover=undefined
FUZZ_LIB_OBJS = $(patsubst %.c,$(FUZZ_DIR)/%.o,$(LIB_SRCS))
FUZZ_BINS = $(patsubst %,$(FUZZ_DIR)/fuzz_%,$(FUZZ_NAMES))

.SECONDARY: $(FUZZ_LIB_OBJS)

$(FUZZ_DIR)/src/%.o: src/%.c
	@mkdir -p $(dir $@)
	$(QUIET_CC)$(FUZZ_CC) $(BASIC_CFLAGS) $(LIB_CFLAGS) $(FUZZ_CFLAGS) \
		-fsanitize=fuzzer-no-link -c -o $@ $<

$(FUZZ_DIR)/fuzz_%: t/fuzz/fuzz_%.c $(FUZZ_LIB_OBJS)
	$(QUIET_LINK)$(FUZZ_CC) $(BASIC_CFLAGS) -Isrc $(FUZZ_CFLAGS) \
		-fsanitize=fuzzer -o $@ $< $(FUZZ_LIB_OBJS) $(LIBS)

fuzz: $(FUZZ_BINS)
	@fail=; for n in $(FUZZ_NAMES); do \
		mkdir -p $(FUZZ_DIR)/corpus/$$n $(FUZZ_DIR)/crashes && \
		echo "fuzz_$$n: $(FUZZ_SECONDS) s" && \
		$(FUZZ_DIR)/fuzz_$$n -max_total_time=$(FUZZ_SECONDS) \
			-print_final_stats=1 -max_len=65536 \
			-artifact_prefix=$(FUZZ_DIR)/crashes/$$n- \
			$(FUZZ_DIR)/corpus/$$n t/fuzz/corpus/$$n \
			>$(FUZZ_DIR)/fuzz_$$n.log 2>&1 || \
		{ fail="$$fail $$n"; tail -n 40 $(FUZZ_DIR)/fuzz_$$n.log; }; \
		grep -E '^stat::number_of_executed_units|^Done' \
			$(FUZZ_DIR)/fuzz_$$n.log; \
	done; \
	if test -n "$$fail"; then echo "fuzz: findings in:$$fail" \
		"(inputs in $(FUZZ_DIR)/crashes/)"; exit 1; fi

clean:
	rm -rf aptix libaptix.a libaptix.so libaptix.pc libaptix.pc.prefix \
		build-asan build-tsan build-fuzz \
		src/*/*.[od] cli/*.[od] plumbing/*.[od] porcelain/*.[od] \
		serve/*.[od] \
		serve/page-files.c t/unit/*.[od] \
		t/unit/aptix-unit t/fuzz/*.[od] t/fuzz/replay-* \
		Documentation/*.1 Documentation/*.1.scd
	$(MAKE) -C t clean

-include $(LIB_OBJS:.o=.d) $(CLI_OBJS:.o=.d) $(UNIT_OBJS:.o=.d) \
	$(FUZZ_OBJS:.o=.d)
