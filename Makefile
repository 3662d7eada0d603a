# SPDX-License-Identifier: MIT
# Front door for a fresh Debian 12 machine. The real build is CMake in build/;
# the sanitizer build for unit tests lives in build-asan/.
BUILD      ?= build
ASAN_BUILD ?= build-asan
JOBS       ?= $(shell nproc)
CTEST_ARGS ?=
BENCH_ARGS ?=

.PHONY: all deps build asan check unit analyze fabric-check demo bench fuzz hostile install clean help

all: build

help:
	@echo "make demo    install what is missing, build, boot the fabric, run the demo"
	@echo "make check   install what is missing, build, run every unit and fabric test"
	@echo "make bench   rdmasec-bench vs perftest and ucmatose, QPN entropy (one fabric boot); sealing vs openssl"
	@echo "             (build/benchmarks/results.{json,svg}, docs/bench.md; BENCH_ARGS='--trials 500' for qpn-entropy)"
	@echo "make fuzz    build the libFuzzer targets with clang in build-fuzz and run each in turn"
	@echo "             (FUZZ_SECONDS=60 per target or FUZZ_RUNS=N executions each, see docs/fuzz.md)"
	@echo "make hostile the hostile-load suite's long version (one fabric boot, 60 s phases, 14 sources; docs/attack.md)"
	@echo "make analyze clang's static analyzer and clang's warnings over lib/, tools/, fi/ and benchmarks/ (fails on any)"
	@echo "make build | unit | fabric-check | install | clean"

deps:
	@bash scripts/install-deps

$(BUILD)/CMakeCache.txt: | deps
	cmake -S . -B $(BUILD) -DCMAKE_BUILD_TYPE=RelWithDebInfo

build: deps $(BUILD)/CMakeCache.txt
	cmake --build $(BUILD) -j $(JOBS)

$(ASAN_BUILD)/CMakeCache.txt: | deps
	cmake -S . -B $(ASAN_BUILD) -DCMAKE_BUILD_TYPE=Debug -DRSEC_SANITIZE=ON

asan: deps $(ASAN_BUILD)/CMakeCache.txt
	cmake --build $(ASAN_BUILD) -j $(JOBS)

unit: build asan
	ctest --test-dir $(BUILD) -L unit --output-on-failure $(CTEST_ARGS)
	ctest --test-dir $(ASAN_BUILD) -L unit --output-on-failure $(CTEST_ARGS)

fabric-check: build asan
	ctest --test-dir $(BUILD) -L fabric --output-on-failure $(CTEST_ARGS)
	ctest --test-dir $(ASAN_BUILD) -L sanitized --output-on-failure $(CTEST_ARGS)

# Before the fabric: a report fails in seconds what would take the fabric minutes.
check: unit analyze fabric-check

analyze: build
	bash scripts/analyze $(BUILD)

demo: build
	bash scripts/demo

bench: build
	RSEC_BUILD_DIR=$(BUILD) BENCH_ARGS="$(BENCH_ARGS)" bash benchmarks/run.sh

# The long hostile-load suite: longer phases, 14 sources (tests/fabric/hostile_load.sh).
hostile: build
	HOSTILE_LONG=1 RSEC_BUILD_DIR=$(abspath $(BUILD)) bash tests/fabric/hostile_load.sh

fuzz: deps
	CC=clang cmake -S . -B build-fuzz -DRSEC_FUZZ=ON -DRSEC_SANITIZE=ON
	cmake --build build-fuzz -j $(JOBS)
	bash scripts/fuzz build-fuzz

install: build
	cmake --install $(BUILD)

clean:
	rm -rf $(BUILD) $(ASAN_BUILD) build-fuzz
