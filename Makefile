# threadlab - the two commands: `make run` and `make test` (see README.md).
# Everything else here is what they are made of.

PYTHON      ?= python3
VENV        := .venv
THREADLAB   := $(VENV)/bin/threadlab
CPUS        := $(shell nproc)
JOBS        ?= $(CPUS)
CMAKE_FLAGS ?=

BUILD       := build
BUILD_ASAN  := build-asan
BUILD_TSAN  := build-tsan
# ASan runs of the tests: see THREADLAB_ASAN_OPTIONS in CMakeLists.txt.
ASAN_TEST_OPTIONS := intercept_tls_get_addr=0

.PHONY: all run test deps build build-asan build-tsan venv test-native test-python run-test-native run-test-python clean jvm go peers test-gomp-gcc

all: build venv

REPORT_DIR  := results/report-latest

## run: build, run the default primitives suite, print the table, store the run,
## write the HTML report (results/report-latest/index.html) and print its path.
## A run with failed points (exit 1) still gets its report, then make fails.
run: build venv
	@status=0; $(THREADLAB) bench || status=$$?; \
	if [ $$status -le 1 ]; then $(THREADLAB) report latest -o $(REPORT_DIR) || exit $$?; fi; \
	exit $$status

## test: every test: native unit tests in the plain, ASan/UBSan and TSan builds, then the Python suite.
## The set-up runs side by side (SETUP_JOBS at a time): the three builds are the compiler's work, the
## virtual environment and the JVM/Go suites mostly downloads. Each one's output comes when it ends.
SETUP_JOBS ?= 4
TEST_SETUP  := build build-asan build-tsan venv peers
test: deps
	@echo "make test: making $(TEST_SETUP), $(SETUP_JOBS) at a time"
	@$(MAKE) --no-print-directory -j $(SETUP_JOBS) --output-sync=target $(TEST_SETUP)
	@$(MAKE) --no-print-directory run-test-native run-test-python

deps: .deps.stamp
.deps.stamp: scripts/install-deps.sh
	scripts/install-deps.sh
	@touch $@

define cmake_build
	cmake -S . -B $(1) -DCMAKE_BUILD_TYPE=$(2) -DTHREADLAB_WERROR=ON $(3) $(CMAKE_FLAGS) >/dev/null
	cmake --build $(1) -j $(JOBS)
endef

build: deps
	$(call cmake_build,$(BUILD),Release,)

build-asan: deps
	$(call cmake_build,$(BUILD_ASAN),RelWithDebInfo,-DTHREADLAB_SANITIZER=address)

build-tsan: deps
	$(call cmake_build,$(BUILD_TSAN),RelWithDebInfo,-DTHREADLAB_SANITIZER=thread)

venv: $(VENV)/.stamp
$(VENV)/.stamp: pyproject.toml | deps
	$(PYTHON) -m venv $(VENV)
	$(VENV)/bin/pip install --quiet --upgrade pip
	$(VENV)/bin/pip install --quiet -e '.[test]'
	@touch $@

## jvm: the JVM suite (`threadlab bench --suite jvm`, docs/jvm.md): jvm/target/benchmarks.jar (Maven, JMH,
## a JDK 21+ found by itself) and its launchers build/bin/threadlab-bench-jvm-{platform,virtual}
jvm: build venv
	scripts/build-jvm.sh

## go: the Go suite (`threadlab bench --suite go`, docs/go.md): build/bin/threadlab-bench-go
go: build
	scripts/build-go.sh

# For the tests: the JVM and Go suites when their toolchains are here (a
# missing JDK 21+, Maven or Go is reported, and their tests are skipped).
peers: build venv
	scripts/build-jvm.sh --if-available
	scripts/build-go.sh --if-available

# Tests run TEST_JOBS at a time, but for those that need the machine to
# themselves (RUN_SERIAL in native/tests/CMakeLists.txt, `alone` in
# tests/conftest.py) and the ULT runtimes' native tests, one at a time
# among themselves (RESOURCE_LOCK): docs/architecture.md.  One more than
# the CPUs: the tests wait on the programs and launchers they start for a
# good part of their time (on 2 CPUs, the parallel pytest phase took 240 s
# with 3 workers, 242 s with 4, 273 s with 2, one run after the other).
TEST_JOBS ?= $(shell echo $$(( $(CPUS) + 1 )))

test-native: build build-asan build-tsan
	@$(MAKE) --no-print-directory run-test-native
# The tests alone, on builds already made (make test makes them first).
run-test-native:
	cd $(BUILD) && ctest --output-on-failure -j $(TEST_JOBS)
	cd $(BUILD_ASAN) && ASAN_OPTIONS=$(ASAN_TEST_OPTIONS) ctest --output-on-failure -j $(TEST_JOBS)
	cd $(BUILD_TSAN) && ctest --output-on-failure -j $(TEST_JOBS)

# The Python suite also runs every native benchmark (quick) from the
# sanitizer builds; it finds them through these variables.  The tests
# marked `alone` run after the others, one at a time.  The others go to
# TEST_JOBS workers, the `heavy` ones first, and a worker that runs out
# takes tests queued for the other (worksteal): they end together.
# The tests start `python -m threadlab` again and again: its compiled
# modules are kept under build/pycache, even where PYTHONDONTWRITEBYTECODE
# is set (it was on this project's machines, and every start compiled the
# whole command line again: 0.2 s), and the sources stay clean.
PYTEST := PYTHONDONTWRITEBYTECODE= PYTHONPYCACHEPREFIX=$(CURDIR)/$(BUILD)/pycache \
	THREADLAB_NATIVE_DIR=$(CURDIR)/$(BUILD)/bin \
	THREADLAB_ASAN_DIR=$(CURDIR)/$(BUILD_ASAN)/bin \
	THREADLAB_TSAN_DIR=$(CURDIR)/$(BUILD_TSAN)/bin \
	ASAN_OPTIONS=$(ASAN_TEST_OPTIONS) \
	$(VENV)/bin/python -m pytest tests -q
test-python: venv build build-asan build-tsan peers
	@$(MAKE) --no-print-directory run-test-python
run-test-python:
	$(PYTEST) -n $(TEST_JOBS) --dist worksteal -m 'not alone'
	$(PYTEST) -m alone

clean:
	rm -rf $(BUILD) $(BUILD_ASAN) $(BUILD_TSAN) $(VENV) .deps.stamp jvm/target

## test-gomp-gcc: GCC's own libgomp testsuite (C, C++, Fortran) on libthreadlab-gomp
## beside libgomp (native/gomp/tools/gcc_testsuite.py; docs/omp-ult.md). Not part of
## `make test`: it installs the gcc-N-source package (80 MB) and takes minutes.
test-gomp-gcc: build
	@major=$$(gcc -dumpversion | cut -d. -f1); \
	if ! ls /usr/src/gcc-$$major/gcc-$$major.*.tar.* >/dev/null 2>&1; then \
		if [ "$$(id -u)" -ne 0 ]; then echo "test-gomp-gcc: needs GCC's sources: run (as root) apt-get install gcc-$$major-source gfortran" >&2; exit 2; fi; \
		apt-get install -y -q gcc-$$major-source gfortran || { apt-get update -q && apt-get install -y -q gcc-$$major-source gfortran; } || exit 2; \
	fi; \
	$(PYTHON) native/gomp/tools/gcc_testsuite.py --lib $(BUILD)/lib/libthreadlab-gomp.so
