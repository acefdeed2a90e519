# Thin wrapper over CMake. `make run` and `make test` are the two newcomer commands.
BUILD      ?= build
ASAN_BUILD ?= build-asan
FUZZ_BUILD ?= build-fuzz
JOBS       ?= $(shell nproc 2>/dev/null || echo 2)
CMAKE_TYPE ?= RelWithDebInfo
FUZZ_SECONDS ?= 60
FUZZ_SMOKE_SECONDS ?= 20 # per target, in `make test` (fuzz-smoke)
FUZZ_TARGETS ?= proto json mcp http

.PHONY: all deps build install run test test-unit test-asan test-e2e fuzz fuzz-build fuzz-smoke fuzz-run bench clean

all: build

deps:
	@scripts/deps.sh

build: deps
	@cmake -S . -B $(BUILD) -DCMAKE_BUILD_TYPE=$(CMAKE_TYPE) >/dev/null
	@cmake --build $(BUILD) -j $(JOBS)

run: build
	exec $(BUILD)/bin/sbxd --foreground $(RUN_ARGS)

# PREFIX (default /usr/local) and DESTDIR (staging) as usual: binaries and the tracing
# shims in PREFIX/libexec/sbx, PREFIX/bin/sbxd, the systemd unit, the docs
PREFIX ?= /usr/local
install: build
	@cmake -S . -B $(BUILD) -DCMAKE_INSTALL_PREFIX=$(PREFIX) >/dev/null
	@cmake --build $(BUILD) -j $(JOBS)
	DESTDIR=$(DESTDIR) cmake --install $(BUILD)

test: build
	ctest --test-dir $(BUILD) --output-on-failure -j 1
	$(MAKE) --no-print-directory test-asan
	@if command -v clang >/dev/null; then $(MAKE) --no-print-directory fuzz-smoke; \
	 else echo "sbx: clang not found, fuzz-smoke skipped (scripts/deps.sh installs it)"; fi
	tests/e2e/run.sh $(BUILD)/bin

test-asan: deps
	@cmake -S . -B $(ASAN_BUILD) -DCMAKE_BUILD_TYPE=Debug -DSBX_SANITIZE=ON >/dev/null
	@cmake --build $(ASAN_BUILD) -j $(JOBS)
	ASAN_OPTIONS=detect_leaks=0:abort_on_error=1 UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 \
	  ctest --test-dir $(ASAN_BUILD) --output-on-failure -j 1 -L 'unit|integration'

test-e2e: build
	tests/e2e/run.sh $(BUILD)/bin

# libFuzzer targets (tests/fuzz): each runs from its own corpus plus its seeds; fuzz_proto
# also from the corpus gen_seeds writes from proto_msgs.h. A crash exits non-zero and
# leaves the input in $(FUZZ_BUILD)/crash-*.
fuzz-build: deps
	@CC=clang cmake -S . -B $(FUZZ_BUILD) -DCMAKE_C_COMPILER=clang -DSBX_FUZZ=ON >/dev/null
	@cmake --build $(FUZZ_BUILD) -j $(JOBS) --target fuzzers
	@$(FUZZ_BUILD)/tests/gen_seeds $(FUZZ_BUILD)/seeds_proto

fuzz: fuzz-build
	@$(MAKE) --no-print-directory fuzz-run FUZZ_RUN_SECONDS=$(FUZZ_SECONDS)

fuzz-smoke: fuzz-build
	@$(MAKE) --no-print-directory fuzz-run FUZZ_RUN_SECONDS=$(FUZZ_SMOKE_SECONDS)

fuzz-run:
	@set -e; for t in $(FUZZ_TARGETS); do \
	  seeds=tests/fuzz/seeds_$$t; maxlen=8192; \
	  if [ $$t = proto ]; then seeds="tests/fuzz/seeds $(FUZZ_BUILD)/seeds_proto"; maxlen=70000; fi; \
	  mkdir -p $(FUZZ_BUILD)/corpus_$$t; \
	  echo "fuzz_$$t: $(FUZZ_RUN_SECONDS) s"; \
	  $(FUZZ_BUILD)/bin/fuzz_$$t -max_total_time=$(FUZZ_RUN_SECONDS) -max_len=$$maxlen \
	    -print_final_stats=1 -artifact_prefix=$(FUZZ_BUILD)/crash-$$t- \
	    $(FUZZ_BUILD)/corpus_$$t $$seeds 2>$(FUZZ_BUILD)/fuzz_$$t.log \
	    || { tail -n 60 $(FUZZ_BUILD)/fuzz_$$t.log; echo "fuzz_$$t: FAILED"; exit 1; }; \
	  grep -E 'DONE +cov' $(FUZZ_BUILD)/fuzz_$$t.log | tail -n 1; \
	done

# Benchmarks (never part of test): each script starts its own sbxd on loopback.
BENCHES ?= run-latency throughput control-plane rss peers network
bench: build
	set -e; for b in $(BENCHES); do echo "== bench/$$b"; bench/$$b $(BUILD)/bin; done

clean:
	rm -rf $(BUILD) $(ASAN_BUILD) $(FUZZ_BUILD)
