# The two commands (see README.md):
#   make demo   - run tailor's main job on the local embedded cluster
#   make test   - install what is missing, build, run every test
#
# Everything else is CMake; this file only strings the steps together.
# Three build trees, each for one purpose:
#   build/release   RelWithDebInfo: the binaries, valgrind and promtool checks
#   build/sanitize  ASan+UBSan (gcc): every unit and integration test again
#   build/fuzz      clang + libFuzzer: short fuzz runs
JOBS ?= $(shell nproc)
CTEST_ARGS ?= --output-on-failure

.PHONY: all deps build test test-release test-sanitize test-fuzz demo bench clean

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

test: deps
	@$(MAKE) --no-print-directory test-release test-sanitize test-fuzz
	@echo "make test: all suites passed"

test-release: build/release/CMakeCache.txt
	cmake --build build/release -j $(JOBS)
	cd build/release && ctest $(CTEST_ARGS) -j $(JOBS)

test-sanitize: build/sanitize/CMakeCache.txt
	cmake --build build/sanitize -j $(JOBS)
	cd build/sanitize && ctest $(CTEST_ARGS) -j $(JOBS) -LE 'valgrind|fuzz'

test-fuzz: build/fuzz/CMakeCache.txt
	cmake --build build/fuzz -j $(JOBS)
	cd build/fuzz && ctest $(CTEST_ARGS) -L fuzz

demo: build
	@bash scripts/demo.sh build/release

clean:
	rm -rf build
