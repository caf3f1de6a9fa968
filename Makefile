# The two commands (see README.md):
#   make demo   - run tailor's main job on the local embedded cluster
#   make test   - install what is missing, build, run every test
#   make images - the five container images, localhost/tailor/*:dev (podman)
#
# Everything else is CMake; this file only strings the steps together.
# Three build trees, each for one purpose:
#   build/release   RelWithDebInfo: the binaries, valgrind and promtool checks
#   build/sanitize  ASan+UBSan (gcc): every unit and integration test again
#                   (but those labelled "once": the demo's acts and report and
#                   the variants integration-tests/CMakeLists.txt lists)
#   build/fuzz      clang + libFuzzer: short fuzz runs (only the fuzz
#                   targets; scripts/clang-check.sh runs clang's front end
#                   over every other file)
SHELL := /bin/bash
JOBS ?= $(shell nproc)
CTEST_ARGS ?= --output-on-failure

.PHONY: all deps build test test-release test-sanitize test-fuzz fuzz-long demo demo-containers bench images clean

all: build

deps:
	@bash scripts/deps.sh

build/release/CMakeCache.txt:
	cmake -S . -B build/release -DCMAKE_BUILD_TYPE=RelWithDebInfo
build/sanitize/CMakeCache.txt:
	cmake -S . -B build/sanitize -DCMAKE_BUILD_TYPE=Sanitize
build/fuzz/CMakeCache.txt:
	CC=clang cmake -S . -B build/fuzz -DCMAKE_BUILD_TYPE=RelWithDebInfo -DTAILOR_FUZZ=ON

build: deps build/release/CMakeCache.txt
	cmake --build build/release -j $(JOBS)

# The release pass runs verbose so every cmocka line is in the log; the
# others print a test's output only when it fails.  Each pass keeps its
# ctest output in build/<tree>/ctest.out for the closing summary.
test: deps
	@$(MAKE) --no-print-directory test-release test-sanitize test-fuzz
	@bash scripts/test-summary.sh build/release build/sanitize build/fuzz

test-release: build/release/CMakeCache.txt
	cmake --build build/release -j $(JOBS)
	cd build/release && ctest $(CTEST_ARGS) -V -j $(JOBS) 2>&1 | tee ctest.out; exit $${PIPESTATUS[0]}

test-sanitize: build/sanitize/CMakeCache.txt
	cmake --build build/sanitize -j $(JOBS)
	cd build/sanitize && ctest $(CTEST_ARGS) -j $(JOBS) -LE 'valgrind|fuzz|bench|containers|once' 2>&1 | tee ctest.out; exit $${PIPESTATUS[0]}

# The fuzz tree builds only the libFuzzer targets (and what they link);
# clang sees every other file through scripts/clang-check.sh, over the
# release tree's compile database.  The fuzz runs take one core each.
test-fuzz: build/fuzz/CMakeCache.txt build/release/CMakeCache.txt
	cmake --build build/release -j $(JOBS)
	bash scripts/clang-check.sh build/release
	cmake --build build/fuzz -j $(JOBS) --target fuzzers
	cd build/fuzz && ctest $(CTEST_ARGS) -j $(JOBS) -L fuzz 2>&1 | tee ctest.out; exit $${PIPESTATUS[0]}

# Every fuzz target for FUZZ_RUNS executions (default 10^7), corpora kept
# in build/fuzz-long/corpus between runs; the report is
# build/fuzz-long/report.md.  FUZZ_MAX_TIME, FUZZ_TARGETS, FUZZ_PARALLEL:
# see scripts/fuzz-long.sh.
fuzz-long: build/fuzz/CMakeCache.txt
	cmake --build build/fuzz -j $(JOBS) --target fuzzers
	bash scripts/fuzz-long.sh build/fuzz build/fuzz-long

# Benchmarks (bench/*/): optimized build, then every bench-* program in
# full; they print figures and ratios and exit non-zero on an invalid plan.
bench: deps build/release/CMakeCache.txt
	cmake --build build/release -j $(JOBS)
	@set -e; for b in build/release/bench/*/bench-*; do \
	  echo "== $$b"; TAILOR_SHARED_DATA=$(CURDIR)/../shared/data $$b; done

# Container images with podman (deploy/README.md, "Images"): IMAGE_TAG
# (default dev); scripts/images.sh takes IMAGE_BASE and ENGINE=docker too.
IMAGE_TAG ?= dev
images:
	@bash scripts/images.sh $(IMAGE_TAG)

demo: build
	@bash scripts/demo.sh build/release

# The services from their images (make images), each in its own container,
# against the local cluster, as deploy/overlays/dev describes them
# (integration-tests/containers/containers_it.py --demo; deploy/README.md).
demo-containers: build
	@/usr/bin/python3 integration-tests/containers/containers_it.py build/release --demo

clean:
	rm -rf build
