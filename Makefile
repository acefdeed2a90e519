# Thin wrapper over CMake. `make run` and `make test` are the two newcomer commands.
BUILD      ?= build
ASAN_BUILD ?= build-asan
FUZZ_BUILD ?= build-fuzz
JOBS       ?= $(shell nproc 2>/dev/null || echo 2)
CMAKE_TYPE ?= RelWithDebInfo
FUZZ_SECONDS ?= 60

.PHONY: all deps build run test test-unit test-asan test-e2e fuzz bench clean

all: build

deps:
	@scripts/deps.sh

build: deps
	@cmake -S . -B $(BUILD) -DCMAKE_BUILD_TYPE=$(CMAKE_TYPE) >/dev/null
	@cmake --build $(BUILD) -j $(JOBS)

run: build
	exec $(BUILD)/bin/sbxd --foreground $(RUN_ARGS)

test: build
	ctest --test-dir $(BUILD) --output-on-failure -j 1
	$(MAKE) --no-print-directory test-asan
	tests/e2e/run.sh $(BUILD)/bin

test-asan: deps
	@cmake -S . -B $(ASAN_BUILD) -DCMAKE_BUILD_TYPE=Debug -DSBX_SANITIZE=ON >/dev/null
	@cmake --build $(ASAN_BUILD) -j $(JOBS)
	ASAN_OPTIONS=detect_leaks=0:abort_on_error=1 UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 \
	  ctest --test-dir $(ASAN_BUILD) --output-on-failure -j 1 -L 'unit|integration'

test-e2e: build
	tests/e2e/run.sh $(BUILD)/bin

fuzz: deps
	@CC=clang cmake -S . -B $(FUZZ_BUILD) -DCMAKE_C_COMPILER=clang -DSBX_FUZZ=ON >/dev/null
	@cmake --build $(FUZZ_BUILD) -j $(JOBS) --target fuzz_proto
	mkdir -p $(FUZZ_BUILD)/corpus
	$(FUZZ_BUILD)/bin/fuzz_proto -max_total_time=$(FUZZ_SECONDS) -max_len=70000 $(FUZZ_BUILD)/corpus tests/fuzz/seeds

bench: build
	bench/run-latency

clean:
	rm -rf $(BUILD) $(ASAN_BUILD) $(FUZZ_BUILD)
