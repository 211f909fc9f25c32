# agent-chat - build, test, benchmark, install.
#
#   make                 build ./agent-chat
#   make test            install missing Debian packages (as root), build,
#                        run every test (C unit, busted, functional,
#                        conformance); ends with prove's "Result: PASS"
#   make demo            set up, build and run the two-agent demo
#   make bench           benchmark tables: wall medians and instruction counts
#                        (AGENT_CHAT_BIN="cmd" to measure another implementation)
#   make bench-compare BASE=REV
#                        instruction counts of this tree beside revision REV's
#   make lint            luacheck + cppcheck
#   make install         PREFIX=/usr/local DESTDIR= (binary, man page,
#                        bash completion); make uninstall
#   make install-plugin  the Claude Code plugin with its own copy of the
#                        binary, as a local marketplace in PLUGIN_DIR
#                        (default ~/.local/share/agent-chat/claude-marketplace)
#   make DEVELOPER=1     warnings are errors
#   make SANITIZE=address,undefined test
#   make fuzz            libFuzzer targets in build/fuzz/ (clang, always with
#                        ASan and UBSan, whatever SANITIZE says)
#   make torture         the long runs: the crash-everywhere walk at every
#                        fault point with every action (TORTURE_SPECS), the
#                        fuzz targets FUZZ_TORTURE_SECONDS each, the stress
#                        test STRESS_TORTURE_SECONDS, the cursor race
#                        CURSOR_RACE_TORTURE_ROUNDS times, the stopped-poster
#                        loop PAUSE_TORTURE_SECONDS, the Claude team bridge's
#                        kill -9 run with BRIDGE_TORTURE_MESSAGES messages
#                        each way and BRIDGE_TORTURE_KILLS kills
#   make NO_FAULTS=1     compile the fault points out (the tests need them)

PREFIX ?= /usr/local
BINDIR ?= $(PREFIX)/bin
MANDIR ?= $(PREFIX)/share/man
BASHCOMPDIR ?= $(PREFIX)/share/bash-completion/completions
PLUGIN_DIR ?= $(HOME)/.local/share/agent-chat/claude-marketplace
DESTDIR ?=
PKG_CONFIG ?= pkg-config
CC ?= cc

# Recursive (=) so pkg-config runs only when a compile needs it, after the
# deps target had a chance to install it.
LUA_CFLAGS = $(shell $(PKG_CONFIG) --cflags lua5.4)
LUA_LIBS = $(shell $(PKG_CONFIG) --libs lua5.4)
YAML_CFLAGS = $(shell $(PKG_CONFIG) --cflags yaml-0.1)
YAML_LIBS = $(shell $(PKG_CONFIG) --libs yaml-0.1)
JANSSON_CFLAGS = $(shell $(PKG_CONFIG) --cflags jansson)
JANSSON_LIBS = $(shell $(PKG_CONFIG) --libs jansson)
# GNU readline for the REPL (optional: without it the REPL reads plain lines).
READLINE_LIBS = $(shell $(PKG_CONFIG) --libs readline 2>/dev/null)

WARN := -Wall -Wextra -Wshadow -Wstrict-prototypes -Wmissing-prototypes \
        -Wwrite-strings -Wvla -Wformat=2 -Wundef
CFLAGS ?= -O2 -g
ifdef DEVELOPER
WARN += -Werror
endif
ALL_CFLAGS = -std=c99 -D_POSIX_C_SOURCE=200809L -D_DEFAULT_SOURCE $(WARN) \
             -Iinclude -Isrc $(LUA_CFLAGS) $(JANSSON_CFLAGS) $(YAML_CFLAGS) $(CFLAGS) -MMD -MP
ALL_LDFLAGS = $(LDFLAGS)
ifdef NO_FAULTS
ALL_CFLAGS += -DAC_NO_FAULTS
endif
ifdef SANITIZE
ALL_CFLAGS += -fsanitize=$(SANITIZE) -fno-sanitize-recover=all -fno-omit-frame-pointer
ALL_LDFLAGS += -fsanitize=$(SANITIZE)
endif
# The libraries are linked statically (the .a files of their -dev packages):
# a process then maps only libc and libm, which saves every command ~0.6 M
# instructions of relocations and symbol look-ups (make bench-compare). The
# Lua API stays exported for the C modules a script may load (busted's
# luasystem and lfs look lua_* up in the process). STATIC_LIBS= links the
# shared libraries instead.
STATIC_LIBS ?= 1
ifeq ($(STATIC_LIBS),1)
READLINE_LINK = $(if $(READLINE_LIBS),$(shell $(PKG_CONFIG) --static --libs readline))
LIBS = -Wl,-Bstatic $(LUA_LIBS) $(JANSSON_LIBS) $(YAML_LIBS) $(READLINE_LINK) -Wl,-Bdynamic \
       -Wl,--export-dynamic-symbol=lua_* -Wl,--export-dynamic-symbol=luaL_* \
       -Wl,--export-dynamic-symbol=luaopen_* -lm -ldl
else
LIBS = $(LUA_LIBS) $(JANSSON_LIBS) $(YAML_LIBS) $(READLINE_LIBS) -lm
endif

# The pure-C runtime (no lua.h) is a static library shared by the binary
# and the C unit tests.
# The file-system backend (src/fs/, the folder format) sits below the store
# interface; nothing above it sees its headers (make check-layers).
FS_SRC := src/fs/fsutil.c src/fs/dirwatch.c src/fs/scan.c src/fs/seq.c src/fs/cursor.c \
          src/fs/mutex.c src/fs/records.c src/fs/workspace.c src/fs/journal.c src/fs/fsck.c \
          src/fs/store_fs.c src/fs/hostfile.c src/fs/trim.c
RUNTIME_SRC := src/err.c src/fault.c src/utf8.c src/pystr.c src/slug.c \
               src/buf.c src/json.c src/clock.c src/channel.c src/frontmatter.c \
               $(FS_SRC) src/store.c \
               src/wait.c src/codec.c src/isotime.c src/pathnorm.c src/audit.c \
               src/lockrec.c src/pathlock.c src/claimrec.c \
               src/taskrec.c src/board.c src/lease.c src/tasks.c src/receipts.c src/sha256.c \
               src/copy.c src/dynlib.c
RUNTIME_SRC += src/pyjson.c src/yamlscalar.c
HOST_SRC := src/main.c src/lua_host.c src/l_store.c src/l_sys.c src/l_tasks.c src/l_pathlock.c \
            src/l_json.c src/l_readline.c src/l_yaml.c src/l_fsck.c src/l_receipts.c src/l_folder.c \
            src/l_sandbox.c
# The HTTP server of `serve` (src/http/, libmicrohttpd loaded with dlopen
# when serve starts: src/http/mhdapi.h says why; only its header is needed
# to build) and its binding.
HTTP_SRC := src/http/mhdapi.c src/http/server.c
HOST_SRC += src/l_http.c $(HTTP_SRC)
MHD_CFLAGS = $(shell $(PKG_CONFIG) --cflags libmicrohttpd)
LUA_SRC := $(shell find lua -name '*.lua' | LC_ALL=C sort)

RUNTIME_OBJ := $(RUNTIME_SRC:src/%.c=build/%.o)
HOST_OBJ := $(HOST_SRC:src/%.c=build/%.o) build/embedded_lua.o

C_TEST_SRC := $(wildcard tests/c/test_*.c)
C_TESTS := $(C_TEST_SRC:tests/c/%.c=build/tests/%)

# The etcd client (src/etcd/, libcurl + jansson; see src/etcd/client.h) and
# the etcd store on it (store_etcd.c, records_etcd.c: docs/etcd.md): a
# library of their own, linked into agent-chat and by the client's tests
# (tests/c/test_etcd_*.c) and its benchmark. No curl outside src/etcd/
# (make check-layers). libcurl is not linked: the client loads it with
# dlopen when it opens (src/etcd/curlapi.h says why), so only its headers
# are needed to build.
CURL_CFLAGS = $(shell $(PKG_CONFIG) --cflags libcurl)
ETCD_LIBS := -ldl
ETCD_SRC := src/etcd/curlapi.c src/etcd/wire.c src/etcd/client.c src/etcd/http.c src/etcd/ops.c \
            src/etcd/watch.c \
            src/etcd/store_etcd.c src/etcd/records_etcd.c src/etcd/fsck_etcd.c src/etcd/trim_etcd.c
ETCD_OBJ := $(ETCD_SRC:src/%.c=build/%.o)

# The vendored kit: the source kit plus our documented deviations
# (tests/conformance/VENDORED.md); tests/conformance-vendored-tap checks that.
CONFORMANCE ?= tests/conformance/run
# Conformance families whose issues have landed (see the README).
CONFORMANCE_FAMILIES ?= msg task lock state event hook
# Families of the recorded corpus (tests/conformance/corpus) that pass whole.
CORPUS_FAMILIES ?= msg event hook state task lock

.PHONY: all deps test check demo bench bench-compare bench-etcd lint install install-plugin uninstall clean tests fuzz \
        torture check-layers
all: agent-chat

deps:
	@scripts/install-deps

agent-chat: $(RUNTIME_OBJ) $(HOST_OBJ) $(ETCD_OBJ)
	$(CC) $(ALL_CFLAGS) -pthread -o $@ $^ $(ALL_LDFLAGS) $(LIBS) $(ETCD_LIBS)

build/librt.a: $(RUNTIME_OBJ)
	$(AR) rcs $@ $^

build/l_readline.o: ALL_CFLAGS += $(if $(READLINE_LIBS),-DAC_HAVE_READLINE)
build/%.o: src/%.c | build
	@mkdir -p $(dir $@)
	$(CC) $(ALL_CFLAGS) -c -o $@ $<

# Lua modules are precompiled (debug info stripped) with the liblua we
# link, which halves start-up time; AGENT_CHAT_LUA_PATH loads the sources.
LUA_BC := $(LUA_SRC:%.lua=build/bc/%.luac)

build/tools/dump-lua: scripts/dump-lua.c | build
	@mkdir -p build/tools
	$(CC) $(ALL_CFLAGS) -Wno-missing-prototypes -o $@ $< $(ALL_LDFLAGS) $(LUA_LIBS)

build/bc/%.luac: %.lua build/tools/dump-lua
	@mkdir -p $(dir $@)
	build/tools/dump-lua $< $@

build/embedded_lua.c: $(LUA_BC) scripts/embed-lua | build
	scripts/embed-lua $@ $(LUA_BC)

build/embedded_lua.o: build/embedded_lua.c
	$(CC) $(ALL_CFLAGS) -Wno-missing-prototypes -c -o $@ $<

build/tests/%: tests/c/%.c $(wildcard tests/c/*.h) build/librt.a | build
	@mkdir -p build/tests
	$(CC) $(ALL_CFLAGS) -Itests/c -o $@ $< build/librt.a $(ALL_LDFLAGS) $(LIBS)

$(HTTP_SRC:src/%.c=build/%.o) build/l_http.o: ALL_CFLAGS += $(MHD_CFLAGS) -pthread
$(ETCD_OBJ): ALL_CFLAGS += $(CURL_CFLAGS)
build/libetcd.a: $(ETCD_OBJ)
	$(AR) rcs $@ $^

# The etcd tests start a cluster of their own through tests/etcd/with-cluster
# (or print a SKIP plan when etcd is not installed).
build/tests/test_etcd_%: tests/c/test_etcd_%.c $(wildcard tests/c/*.h) build/libetcd.a \
		build/librt.a | build
	@mkdir -p build/tests
	$(CC) $(ALL_CFLAGS) $(CURL_CFLAGS) -Itests/c -o $@ $< build/libetcd.a build/librt.a \
	  $(ALL_LDFLAGS) $(ETCD_LIBS) $(LIBS)

build/tests/bench_etcd: tests/bench/etcd_bench.c $(wildcard tests/c/*.h) build/libetcd.a \
		build/librt.a | build
	@mkdir -p build/tests
	$(CC) $(ALL_CFLAGS) $(CURL_CFLAGS) -Itests/c -o $@ $< build/libetcd.a build/librt.a \
	  $(ALL_LDFLAGS) $(ETCD_LIBS) $(LIBS)

build:
	@mkdir -p build

# ---- fuzzing (tests/fuzz/, see tests/fuzz/README.md) ----
# A build of its own: clang, libFuzzer, ASan and UBSan on every object, so
# neither CC nor SANITIZE nor CFLAGS reach it. The Lua-driving targets load
# the modules from lua/ (FUZZ_LUA_DIR) so that line hooks see line numbers.
FUZZ_CC ?= clang
FUZZ_TARGETS := frontmatter taskrec lockrec pathnorm argparse yaml etcdreply pattern
FUZZ_LUA_TARGETS := argparse yaml pattern
FUZZ_BINS := $(FUZZ_TARGETS:%=build/fuzz/fuzz_%)
FUZZ_SAN := -fsanitize=address,undefined -fno-sanitize-recover=all -fno-omit-frame-pointer
FUZZ_CFLAGS = -std=c99 -D_POSIX_C_SOURCE=200809L -D_DEFAULT_SOURCE $(WARN) \
              -Iinclude -Isrc -Itests/fuzz $(LUA_CFLAGS) $(JANSSON_CFLAGS) $(YAML_CFLAGS) \
              -O1 -g $(FUZZ_SAN) -DFUZZ_LUA_DIR='"$(CURDIR)/lua"' -MMD -MP
FUZZ_RUNTIME_OBJ := $(RUNTIME_SRC:src/%.c=build/fuzz/obj/%.o)
FUZZ_HOST_OBJ := $(filter-out build/fuzz/obj/main.o,$(HOST_SRC:src/%.c=build/fuzz/obj/%.o))
# Seconds per target in `make test` and in `make torture`.
FUZZ_SECONDS ?= 60
FUZZ_TORTURE_SECONDS ?= 600
STRESS_SECONDS ?= 20
STRESS_TORTURE_SECONDS ?= 300
CURSOR_RACE_TORTURE_ROUNDS ?= 25
PAUSE_TORTURE_SECONDS ?= 300
BRIDGE_TORTURE_MESSAGES ?= 5000
BRIDGE_TORTURE_KILLS ?= 100

fuzz: $(FUZZ_BINS)

build/fuzz/obj/l_readline.o: FUZZ_CFLAGS += $(if $(READLINE_LIBS),-DAC_HAVE_READLINE)
build/fuzz/obj/%.o: src/%.c
	@mkdir -p $(dir $@)
	$(FUZZ_CC) $(FUZZ_CFLAGS) -fsanitize=fuzzer-no-link -c -o $@ $<

build/fuzz/obj/%.o: tests/fuzz/%.c
	@mkdir -p build/fuzz/obj
	$(FUZZ_CC) $(FUZZ_CFLAGS) -fsanitize=fuzzer-no-link -c -o $@ $<

build/fuzz/fuzz_%: build/fuzz/obj/fuzz_%.o build/fuzz/obj/fuzzutil.o $(FUZZ_RUNTIME_OBJ)
	$(FUZZ_CC) $(FUZZ_SAN) -fsanitize=fuzzer -o $@ $^ $(LIBS) $(ETCD_LIBS)

FUZZ_ETCD_OBJ := $(ETCD_SRC:src/%.c=build/fuzz/obj/%.o)
$(FUZZ_ETCD_OBJ): FUZZ_CFLAGS += $(CURL_CFLAGS)
$(FUZZ_LUA_TARGETS:%=build/fuzz/fuzz_%): build/fuzz/obj/fuzzlua.o $(FUZZ_HOST_OBJ) $(FUZZ_ETCD_OBJ)
# The etcd reply decoders (no curl: wire.c only).
build/fuzz/fuzz_etcdreply: build/fuzz/obj/etcd/wire.o

tests: agent-chat $(C_TESTS) build/tests/libfrozen.so fuzz

# The clock and id freezer of the byte-identity spec (LD_PRELOAD; never
# linked into agent-chat). Plain flags: it is preloaded into sanitized and
# plain builds alike.
build/tests/libfrozen.so: tests/identity/frozen.c | build
	@mkdir -p build/tests
	$(CC) -shared -fPIC -O2 -Wall -Wextra -o $@ $< -ldl

# One prove run over every kind of test, so CI reads one closing line.
# fuzz:all replays every saved crash and corpus input, then fuzzes each
# target FUZZ_SECONDS (two at a time); tests/functional/stress_spec.lua
# runs its 32 processes for STRESS_SECONDS.
# On failure, tests/show-failures repeats what failed, with its diagnostics,
# after prove's summary (from the TAP copies in build/test-logs).
test check: deps
	@$(MAKE) --no-print-directory tests
	@$(MAKE) --no-print-directory check-layers
	@rm -rf build/test-logs && mkdir -p build/test-logs
	AGENT_CHAT_TEST_FSYNC=0 CONFORMANCE="$(CONFORMANCE)" \
	  CONFORMANCE_FAMILIES="$(CONFORMANCE_FAMILIES)" \
	  FUZZ_TARGETS="$(FUZZ_TARGETS)" FUZZ_SECONDS="$(FUZZ_SECONDS)" \
	  STRESS_SECONDS="$(STRESS_SECONDS)" AGENT_CHAT_TEST_LOGS="$(CURDIR)/build/test-logs" \
	  prove --exec tests/run-one $(C_TESTS) tests/unit/*_spec.lua \
	    tests/functional/*_spec.lua $(CONFORMANCE_FAMILIES:%=conformance:%) \
	    $(CORPUS_FAMILIES:%=corpus:%) tests/conformance-vendored-tap \
	    etcd-conformance:scenarios etcd-conformance:corpus fuzz:all \
	  || { tests/show-failures build/test-logs; exit 1; }

# The layers of docs/architecture.md: no file-system backend header,
# directory descriptor or mutating system call outside src/fs/, no lua.h
# outside the bindings and the host (tests/functional/layers_spec.lua shows
# it failing on planted violations).
check-layers:
	lua5.4 scripts/check-layers

# The long runs (CI does not run them); each part is its own prove line.
# Crash everywhere at every index: AGENT_CHAT_CRASH_ALL=1 makes the spec walk
# every fault point with every action instead of make test's subset.
TORTURE_SPECS := tests/functional/crash_everywhere_spec.lua
torture: deps
	@$(MAKE) --no-print-directory tests
	AGENT_CHAT_TEST_FSYNC=0 AGENT_CHAT_CRASH_ALL=1 prove --exec tests/run-one $(TORTURE_SPECS)
	FUZZ_TARGETS="$(FUZZ_TARGETS)" FUZZ_SECONDS="$(FUZZ_TORTURE_SECONDS)" \
	  prove --exec tests/run-one fuzz:all
	AGENT_CHAT_TEST_FSYNC=0 STRESS_SECONDS="$(STRESS_TORTURE_SECONDS)" \
	  prove --exec tests/run-one tests/functional/stress_spec.lua
	AGENT_CHAT_TEST_FSYNC=0 CURSOR_RACE_ROUNDS="$(CURSOR_RACE_TORTURE_ROUNDS)" \
	  prove --exec tests/run-one tests/functional/cursor_race_spec.lua
	AGENT_CHAT_TEST_FSYNC=0 AGENT_CHAT_PAUSE_SECONDS="$(PAUSE_TORTURE_SECONDS)" \
	  prove --exec tests/run-one tests/functional/paused_poster_spec.lua
	AGENT_CHAT_TEST_FSYNC=0 CLAUDE_BRIDGE_MESSAGES="$(BRIDGE_TORTURE_MESSAGES)" \
	  CLAUDE_BRIDGE_KILLS="$(BRIDGE_TORTURE_KILLS)" \
	  prove --exec tests/run-one tests/functional/claude_bridge_spec.lua

demo: deps
	@$(MAKE) --no-print-directory agent-chat
	scripts/demo

# BENCH_BASE=CMD also measures another binary in the same run (a base to
# compare with: its medians and the difference per row). Both tables: wall
# medians, and instruction counts under callgrind (scripts/bench says which).
# Then the etcd column: the same commands on a folder and on an etcd store of
# 3 members on tmpfs (tests/etcd/bench-store; a SKIP line without etcd).
bench: deps
	@$(MAKE) --no-print-directory agent-chat
	scripts/bench $(if $(BENCH_BASE),--compare '$(BENCH_BASE)') $(BENCH_ARGS)
	tests/etcd/with-cluster tests/etcd/bench-store

# The instruction counts of this tree and of git revision BASE (built from
# git archive in build/bench-base/SHA, kept), side by side.
BASE ?= main
bench-compare: deps
	@$(MAKE) --no-print-directory agent-chat
	scripts/bench --counts-only --compare-rev '$(BASE)' $(BENCH_ARGS)

# The etcd client against a 3-member cluster on tmpfs (tests/bench/README.md).
bench-etcd: deps
	@$(MAKE) --no-print-directory build/tests/bench_etcd
	tests/etcd/with-cluster build/tests/bench_etcd

lint:
	luacheck lua tests $(wildcard examples)
	cppcheck --quiet --error-exitcode=1 --enable=warning,portability \
	  --suppress=missingIncludeSystem -Iinclude -Isrc src tests/c

install: agent-chat
	install -d '$(DESTDIR)$(BINDIR)' '$(DESTDIR)$(MANDIR)/man1' '$(DESTDIR)$(BASHCOMPDIR)'
	install -m 755 agent-chat '$(DESTDIR)$(BINDIR)/agent-chat'
	install -m 644 man/agent-chat.1 '$(DESTDIR)$(MANDIR)/man1/agent-chat.1'
	install -m 644 completions/agent-chat.bash '$(DESTDIR)$(BASHCOMPDIR)/agent-chat'

# The plugin's hooks find this copy first when no AGENT_CHAT_BIN is set
# (claude-plugin/bin/agent-chat-hook); scripts/install-plugin says how to add
# the marketplace to Claude Code.
install-plugin: agent-chat
	scripts/install-plugin '$(PLUGIN_DIR)' ./agent-chat

uninstall:
	rm -f '$(DESTDIR)$(BINDIR)/agent-chat' '$(DESTDIR)$(MANDIR)/man1/agent-chat.1' \
	  '$(DESTDIR)$(BASHCOMPDIR)/agent-chat'

clean:
	rm -rf build agent-chat

-include $(RUNTIME_OBJ:.o=.d) $(HOST_OBJ:.o=.d) $(wildcard build/fuzz/obj/*.d build/fuzz/obj/fs/*.d)
-include $(ETCD_OBJ:.o=.d) $(wildcard build/fuzz/obj/etcd/*.d)
