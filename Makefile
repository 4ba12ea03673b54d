# cuzk: the two commands a newcomer needs are `make demo` and `make test`.
SHELL := /bin/bash
.SHELLFLAGS := -eu -o pipefail -c
CARGO ?= cargo
TARGET := target/release
CUZK := $(TARGET)/cuzk
PARAMS ?= $(or $(FIL_PROOFS_PARAMETER_CACHE),/var/tmp/filecoin-proof-parameters)
export FIL_PROOFS_PARAMETER_CACHE := $(PARAMS)
CFLAGS_TEST := -std=c11 -Wall -Wextra -Werror -Iinclude
# Every test stage runs under a deadline, so a hang fails with the stage's name in minutes, not
# at CI's limit (each test also has its own: `within`, `wait_until`, alarm(), go test -timeout).
DEADLINE = timeout --foreground --kill-after=30s
CBUILD := tests/c/build

.PHONY: all build build-cuda dev demo test test-ni fixtures header header-check size-check test-rust test-c test-go test-cuda test-gpu go-pc go-pc-cuda dev-go clean

all: build

## The static library keeps only its C API global (scripts/localize-staticlib.sh): it links
## beside other libraries that embed Rust, blst or sppark (filecoin-ffi's).
build:
	$(CARGO) build --release --locked
	scripts/localize-staticlib.sh $(TARGET)/libcuzk.a

## The same library and CLI with the GPU prover (`--features cuda`; nvcc 13.0 is installed from
## PyPI into ~/.cache/cuzk if missing). It proves on the CPU where there is no NVIDIA driver.
## Copies land in target/cuda/ (target/release/ keeps the default build the other tests use).
CUDA_ENV = eval "$$(scripts/install-nvcc.sh --env)"
build-cuda:
	$(CUDA_ENV) && $(CARGO) build --release --locked --features cuda
	mkdir -p target/cuda
	cp $(TARGET)/cuzk $(TARGET)/libcuzk.so $(TARGET)/libcuzk.a target/cuda/
	scripts/localize-staticlib.sh target/cuda/libcuzk.a
	$(CARGO) build --release --locked
	scripts/localize-staticlib.sh $(TARGET)/libcuzk.a

## Seal a small real sector, prove it through the engine, verify it, show the timeline.
demo: build
	$(CUZK) demo

## Test fixtures: random Groth16 params (cached in $(PARAMS)) and sealed 2KiB C1 outputs.
fixtures: build
	$(CUZK) setup --sector-size 2KiB
	$(CUZK) setup --sector-size 2KiB --partitions 10

header:
	scripts/gen-header.sh

## The public header matches the code (cbindgen), and kernels/' header (shared by the Rust and
## CUDA sides) is valid C with its layout assertions holding on this compiler.
header-check:
	scripts/gen-header.sh --check
	$(CC) -fsyntax-only -std=c99 -Wall -Wextra -Werror -x c kernels/cuzk_kernels.h

## Functions at a readable size: none in src/ or kernels/ over 100 lines, none in tools/ or cli/
## over 150 (clippy.toml sets clippy's too_many_lines to 100 for those who run clippy).
size-check:
	python3 scripts/fn-length.py 100 150

test-rust: fixtures
	$(DEADLINE) 50m $(CARGO) test --release --locked || { echo "make test-rust: failed or past its 50-minute deadline" >&2; exit 1; }

FIXTURE_C1 = $(PARAMS)/cuzk-fixtures/2KiB.c1.json

ASAN_CC = $(CC) $(CFLAGS_TEST) -O1 -g -fsanitize=address,undefined -fno-omit-frame-pointer
ASAN_RUN = ASAN_OPTIONS=detect_leaks=1 UBSAN_OPTIONS=halt_on_error=1

## The C ABI from C, under AddressSanitizer + UBSan: a real 2KiB proof through the drop-in
## (then checked by filecoin-proofs' verify_seal) and every error case; older and newer callers'
## struct sizes against guard pages; the callbacks.
test-c: build fixtures
	mkdir -p $(CBUILD)
	@# The static library beside another that embeds blst and sppark (filecoin-ffi's does).
	$(CXX) -O1 -c -o $(CBUILD)/other_lib.o tests/c/other_lib.cc && rm -f $(CBUILD)/libother.a && ar rcs $(CBUILD)/libother.a $(CBUILD)/other_lib.o
	$(CC) $(CFLAGS_TEST) -O1 -Itests/c -o $(CBUILD)/test_link_beside tests/c/test_link_beside.c $(CBUILD)/libother.a $(TARGET)/libcuzk.a -lstdc++ $(LIBS_BASE)
	CUZK_TEST_C1=$(FIXTURE_C1) CUZK_TEST_SECTOR=1 CUZK_TEST_MINER=1000 CUZK_TEST_NO_GPU=1 CUZK_TEST_PARAMS=$(PARAMS) \
	  $(DEADLINE) 15m $(CBUILD)/test_link_beside full
	$(ASAN_CC) -o $(CBUILD)/test_ffi_asan tests/c/test_ffi.c -L$(TARGET) -lcuzk -Wl,-rpath,$(abspath $(TARGET))
	$(ASAN_RUN) CUZK_TEST_C1=$(FIXTURE_C1) CUZK_TEST_SECTOR=1 CUZK_TEST_MINER=1000 CUZK_TEST_NO_GPU=1 CUZK_TEST_PARAMS=$(PARAMS) \
	  CUZK_TEST_PROOF_OUT=$(CBUILD)/dropin.proof $(DEADLINE) 15m $(CBUILD)/test_ffi_asan full
	$(CUZK) verify --c1 $(FIXTURE_C1) --sector-id 1 --miner-id 1000 --proof $(CBUILD)/dropin.proof
	$(ASAN_CC) -o $(CBUILD)/test_abi_asan tests/c/test_abi.c -L$(TARGET) -lcuzk -Wl,-rpath,$(abspath $(TARGET))
	$(ASAN_RUN) CUZK_TEST_PARAMS=$(PARAMS) $(DEADLINE) 5m $(CBUILD)/test_abi_asan
	$(ASAN_CC) -pthread -o $(CBUILD)/test_callbacks_asan tests/c/test_callbacks.c -L$(TARGET) -lcuzk -Wl,-rpath,$(abspath $(TARGET))
	$(ASAN_RUN) CUZK_TEST_C1=$(FIXTURE_C1) CUZK_TEST_SECTOR=1 CUZK_TEST_MINER=1000 \
	  CUZK_TEST_PARAMS=$(PARAMS) $(DEADLINE) 15m $(CBUILD)/test_callbacks_asan

## pkg-config files for linking libcuzk from outside this repository: target/release/cuzk.pc
## (CPU build) and, where `make build-cuda` has run, target/cuda/cuzk.pc (GPU build: the CUDA
## runtime is inside libcuzk.a; it needs libstdc++).
LIBS_BASE := -lgcc_s -lutil -lrt -lpthread -lm -ldl -lc
VERSION = $$(sed -n 's/^version = "\(.*\)"/\1/p' Cargo.toml | head -1)
define write_pc
	printf 'prefix=%s\nlibdir=$${prefix}/$(1)\nincludedir=$${prefix}/include\n\nName: cuzk\nDescription: Pipelined PoRep C2 prover%s\nVersion: %s\nCflags: -I$${includedir}\nLibs: $${libdir}/libcuzk.a %s\n' \
	  "$(abspath .)" "$(2)" "$(VERSION)" "$(3)" > $(1)/cuzk.pc
	@echo "wrote $(1)/cuzk.pc (PKG_CONFIG_PATH=$(abspath $(1)))"
endef
go-pc: build
	$(call write_pc,$(TARGET),,$(LIBS_BASE))
	if [ -f target/cuda/libcuzk.a ]; then $(MAKE) --no-print-directory go-pc-cuda; fi

go-pc-cuda:
	$(call write_pc,target/cuda, (CUDA),-lstdc++ $(LIBS_BASE))

# Goroutines submitting at once in the Go concurrency test. Each 2KiB proof costs ~45 s of a
# 2-core machine, so CI runs 4; `make test-go CUZK_GO_CONCURRENCY=50` runs the full 50.
CUZK_GO_CONCURRENCY ?= 4
GO ?= go

test-go: build fixtures
	cd go-bindings && $(GO) vet ./... && CGO_ENABLED=1 $(GO) build ./cmd/cuzk-commit2
	cd go-bindings && GOEXPERIMENT=cgocheck2 CUZK_GO_CONCURRENCY=$(CUZK_GO_CONCURRENCY) CUZK_TEST_C1=$(FIXTURE_C1) \
	  $(GO) test -race -count=1 -timeout 80m -v ./... 2>&1 | grep -Ev '^=== (RUN|PAUSE|CONT)'

## The `cuda` build on a machine without a GPU: it must load, say so once, and prove on the CPU.
test-cuda: build-cuda fixtures
	mkdir -p $(CBUILD)
	$(CUDA_ENV) && $(CARGO) test --release --locked --features cuda --lib -- prover:: sys::
	@# The library's own device discovery decides: with no usable GPU it says so once and proves
	@# on the CPU; with one, the GPU checks (test-gpu) run too.
	target/cuda/cuzk selftest --constraints 4096 2> $(CBUILD)/cuda-selftest.log
	if grep -q 'no usable GPU' $(CBUILD)/cuda-selftest.log; then \
	  test $$(grep -c 'no usable GPU' $(CBUILD)/cuda-selftest.log) -eq 1; \
	  echo "make test-cuda: the GPU checks (make test-gpu) were not run: $$(grep -o 'no usable GPU.*' $(CBUILD)/cuda-selftest.log | head -1)"; \
	else \
	  $(MAKE) --no-print-directory test-gpu; \
	fi
	target/cuda/cuzk prove --c1 $(FIXTURE_C1) --sector-id 1 --miner-id 1000 -o $(CBUILD)/cuda.proof
	$(CUZK) verify --c1 $(FIXTURE_C1) --sector-id 1 --miner-id 1000 --proof $(CBUILD)/cuda.proof
	$(CC) $(CFLAGS_TEST) -O1 -o $(CBUILD)/test_ffi_cuda tests/c/test_ffi.c -Ltarget/cuda -lcuzk -Wl,-rpath,$(abspath target/cuda)
	@# The C ABI of the cuda library with the CPU prover (CUZK_DEVICES=cpu), GPU or not.
	CUZK_DEVICES=cpu CUZK_TEST_C1=$(FIXTURE_C1) CUZK_TEST_SECTOR=1 CUZK_TEST_MINER=1000 CUZK_TEST_PARAMS=$(PARAMS) \
	  CUZK_TEST_NO_GPU=1 $(DEADLINE) 10m $(CBUILD)/test_ffi_cuda errors
	@# The cuda static library (sppark inside) beside another that embeds sppark and blst.
	$(CXX) -O1 -c -o $(CBUILD)/other_lib.o tests/c/other_lib.cc && rm -f $(CBUILD)/libother.a && ar rcs $(CBUILD)/libother.a $(CBUILD)/other_lib.o
	$(CC) $(CFLAGS_TEST) -O1 -Itests/c -o $(CBUILD)/test_link_beside_cuda tests/c/test_link_beside.c $(CBUILD)/libother.a target/cuda/libcuzk.a -lstdc++ $(LIBS_BASE)
	CUZK_DEVICES=cpu CUZK_TEST_C1=$(FIXTURE_C1) CUZK_TEST_SECTOR=1 CUZK_TEST_MINER=1000 CUZK_TEST_PARAMS=$(PARAMS) \
	  CUZK_TEST_NO_GPU=1 $(DEADLINE) 10m $(CBUILD)/test_link_beside_cuda errors
	@# Go against the cuda library (-tags cuzk_cuda): it links, and proves on the CPU here.
	cd go-bindings && $(GO) vet -tags cuzk_cuda ./... && CGO_ENABLED=1 $(GO) build -tags cuzk_cuda -o ../$(CBUILD)/cuzk-commit2-cuda ./cmd/cuzk-commit2
	cd go-bindings && CUZK_TEST_C1=$(FIXTURE_C1) $(GO) test -tags cuzk_cuda -count=1 -timeout 20m -v -run 'TestCudaBuild' . 2>&1 | grep -Ev '^=== (RUN|PAUSE|CONT)'
	$(MAKE) --no-print-directory go-pc-cuda

## The GPU checks, where the library finds a usable GPU (`make test` runs them there): the
## self-test with a row per GPU, parameters resident and streamed, each proof verified and
## byte-identical to the CPU's in the same run; a real 2KiB C1 proved on a GPU (its timeline
## names a cuda device) and accepted by filecoin-proofs' verify_seal; the GPU's fixed-base
## multiplication against the CPU's; the Go test of the cuda build with CUZK_EXPECT_GPU=1.
test-gpu: build-cuda fixtures
	mkdir -p $(CBUILD)
	$(DEADLINE) 10m target/cuda/cuzk selftest --constraints 65536 > $(CBUILD)/gpu-selftest.out
	cat $(CBUILD)/gpu-selftest.out
	ok='verified: yes +same bytes as the CPU: yes'; \
	r=$$(grep -cE "^ +cuda:[0-9]+ cuzk +prove .*$$ok" $(CBUILD)/gpu-selftest.out); \
	s=$$(grep -cE "^ +cuda:[0-9]+ cuzk streamed +prove .*$$ok" $(CBUILD)/gpu-selftest.out); \
	test $$r -ge 1 -a $$r -eq $$s || { echo "make test-gpu: self-test rows verified and identical: $$r resident, $$s streamed" >&2; exit 1; }
	$(DEADLINE) 10m target/cuda/cuzk prove --c1 $(FIXTURE_C1) --sector-id 1 --miner-id 1000 --timeline -o $(CBUILD)/gpu.proof 2> $(CBUILD)/gpu-prove.log
	grep -qE 'GPU_END.*cuda:' $(CBUILD)/gpu-prove.log || { echo "make test-gpu: the 2KiB proof was not proved on a GPU" >&2; exit 1; }
	$(CUZK) verify --c1 $(FIXTURE_C1) --sector-id 1 --miner-id 1000 --proof $(CBUILD)/gpu.proof
	$(CUDA_ENV) && CUZK_TEST_GPU=1 $(DEADLINE) 20m $(CARGO) test --release --locked --features cuda --test gpu -- --nocapture
	cd go-bindings && CUZK_EXPECT_GPU=1 CUZK_TEST_C1=$(FIXTURE_C1) $(GO) test -tags cuzk_cuda -count=1 -timeout 20m -v -run 'TestCudaBuild' . 2>&1 | grep -Ev '^=== (RUN|PAUSE|CONT)'
	@echo "make test-gpu: the GPU checks passed"

## Everything scripts/device-plan.sh runs on a GPU machine (which has no Rust or Go), built here,
## stripped and gzipped into .dev/ (the device tool carries at most 64 MiB): the cuda CLI, the
## kernels' tests (tests/gpu.rs), the C ABI test linked with the cuda library, the Go test.
dev: dev-go
	$(CUDA_ENV) && $(CARGO) test --release --locked --features cuda --test gpu --no-run --message-format=json 2>/dev/null \
	  | grep '"kind":\["test"\],"crate_types":\["bin"\],"name":"gpu"' \
	  | sed -n 's/.*"executable":"\([^"]*\)".*/\1/p' | tail -1 | xargs -I{} cp {} .dev/gpu.test
	cp target/cuda/cuzk .dev/cuzk
	$(CC) -O1 -o .dev/test_ffi_cuda tests/c/test_ffi.c -Iinclude target/cuda/libcuzk.a -lstdc++ -lgcc_s -lutil -lrt -lpthread -lm -ldl -lc
	strip .dev/cuzk .dev/gpu.test .dev/test_ffi_cuda
	gzip -f .dev/cuzk .dev/gpu.test .dev/test_ffi_cuda .dev/go/cuzk-go.test .dev/go/cuzk-commit2
	ls -la .dev .dev/go

## The Go test binary for the GPU machines (device tool, scripts/device-plan.sh h200-go):
## .dev/go/cuzk-go.test, linked with the cuda library, stripped.
dev-go: build-cuda
	mkdir -p .dev/go
	cd go-bindings && CGO_ENABLED=1 $(GO) test -c -tags cuzk_cuda -o ../.dev/go/cuzk-go.test .
	cd go-bindings && CGO_ENABLED=1 $(GO) build -tags cuzk_cuda -o ../.dev/go/cuzk-commit2 ./cmd/cuzk-commit2
	strip .dev/go/cuzk-go.test .dev/go/cuzk-commit2

## Non-interactive PoRep with real proofs (a 2KiB sector: 13 partitions, about 15 minutes of a
## 2-core CPU, so not in `make test`, which checks the rest of it with simulated provers).
test-ni: fixtures
	$(DEADLINE) 60m $(CARGO) test --release --locked --test ni_porep -- --ignored

## Everything CI runs.
test: header-check size-check test-rust test-c test-go test-cuda

clean:
	$(CARGO) clean
	rm -rf $(CBUILD)
