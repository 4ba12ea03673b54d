// Package cuzk is the Go binding of cuzk, a pipelined PoRep Commit2 (C2) prover.
//
// # Drop-in
//
// [SealCommitPhase2] has the signature and semantics of filecoin-ffi's
// ffi.SealCommitPhase2: the same C1 output bytes in, the same partitions × 192 proof bytes
// out, verified before they are returned. Replacing the import is the whole migration:
//
//	proof, err := cuzk.SealCommitPhase2(phase1Output, sectorNum, minerID)
//
// The prover id is derived from the miner id as filecoin-ffi does: the unsigned LEB128 of
// the actor id, zero-padded to 32 bytes ([ProverID]).
//
// # Engine
//
// One engine runs per process (it is a singleton in the library). [Start] starts it with a
// [Config] (or returns the running one if the configuration matches); [Engine.Submit] queues
// a job and returns its id at once; [Engine.Await] waits for it and honours the context: a
// cancelled or expired context cancels the job in the engine; [Engine.Cancel], [Engine.State]
// and [Engine.Close] (which may be called twice) complete the API. SealCommitPhase2 starts
// the engine with defaults if none runs.
//
// # Timeline
//
// [Engine.OnTimeline] registers a func receiving the engine's events (job queued, synthesis
// start/end, prover pickup/start/end, job done/failed/cancelled) for every partition. It is
// called from the engine's one timeline thread, one event at a time and in order, never from
// a worker: it should be quick (events queue up behind it). It may call the engine: Submit,
// Cancel, State, a zero-timeout poll, and the unregister func it was given (stopping after its
// own job's JobDone works); Close, Start, SealCommitPhase2 and a waiting Await return
// [ErrInCallback]. A panic inside it is recovered and reported through [SetPanicHandler]; it
// never reaches the host. The returned func unregisters it: called outside the callback it
// first delivers the events recorded before the call, and once it returns, the callback is
// never called again (also while the engine shuts down).
//
// # Memory and threads
//
// Inputs are only read during a call; the library keeps no reference to Go memory. Whatever
// the library allocates (proof bytes, error messages) is copied into Go memory and freed by
// the binding exactly once before the call returns. Every function is safe for concurrent
// use.
//
// # Errors
//
// Failures are *[Error] values with a [Status] and the library's message. They match the
// sentinel errors with errors.Is (for example errors.Is(err, ErrInvalidInput)). A context
// cancellation during Await returns an error that matches both the context's error and
// [ErrCancelled].
//
// # Linking
//
// By default the package links the static library target/release/libcuzk.a of the
// repository it sits in (build it first with `make build`), so the resulting Go binary needs
// no shared library at run time, like filecoin-ffi's libfilcrypto.a. That library proves on
// the CPU only.
//
// To prove on NVIDIA GPUs, build the library with `make build-cuda` (it lands in
// target/cuda/) and the Go program with `-tags cuzk_cuda`: it links target/cuda/libcuzk.a,
// the CUDA runtime inside it (static) and libstdc++. The binary still starts and proves on the
// CPU on a machine without an NVIDIA driver; [EngineStatus.Devices] and the timeline's device
// names ("cuda:0", "cpu") say which ran. Add `-tags cuzk_shared` (with or without cuzk_cuda)
// to link libcuzk.so instead, found through an rpath to the same directory. Outside the
// repository, `make go-pc` writes target/release/cuzk.pc and target/cuda/cuzk.pc for
// pkg-config users.
//
// # Two layers
//
// This package is written on the subpackage [github.com/cuzk-project/cuzk/go-bindings/raw],
// which holds all of the module's cgo: one thin Go function per C function of include/cuzk.h,
// Go structs laid out as the C structs (checked against the header by its tests) and the
// callbacks' trampolines. This package imports no "C". Use this package; use raw only for what
// it alone gives (the fixed-layout engine report, the library's version and names, the
// configuration's timeline file), keeping in mind that the engine and the log callback are one
// per process and shared by both layers.
//
// # Schedulers and operators
//
// [Engine.Admission] and [Engine.CanAccept] answer whether one more job of a proof type
// would start now within the memory budget, from the engine's own accounting; [Engine.Status]
// is a snapshot (queues, partitions by stage, memory, devices, counters, resident
// parameters), [Engine.Metrics] and [Engine.MetricsHandler] its Prometheus form.
// [SetLogger] sends the library's log records to a log/slog logger instead of stderr.
package cuzk
