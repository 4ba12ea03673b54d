// Package raw is the thin cgo layer of the cuzk Go binding: one Go function per C function of
// include/cuzk.h, Go structs laid out as the C structs, and Go constants for the header's enums
// and defines. (cuzk_engine_shutdown and cuzk_timeline_unregister are called in their _err
// forms, which differ only by the error message; cuzk_bytes_free and cuzk_error_free are called
// inside the package only, which frees everything the library returns.) Every `import "C"` of the module is in this package, with
// the link flags, the C shims and the callbacks' exported trampolines; the package
// github.com/cuzk-project/cuzk/go-bindings (package cuzk) is written on top of it and imports
// no "C" at all.
//
// Most programs want package cuzk: contexts, typed proof numbers, slog logging, sentinel
// errors and the filecoin-ffi drop-ins. This package is exported for the few that need the ABI
// itself: the fixed-layout engine report of cuzk_engine_status (no JSON, allowed inside
// callbacks), the library's version and names, the configuration's timeline file, and the
// library's own units (job ids, millisecond timeouts, registered proof numbers) without the
// go-state-types dependency. It is exported rather than internal because the C ABI it mirrors
// is itself a stable contract: numbers are never renumbered and struct fields are only
// appended, so the mirror promises no more than the header does.
//
// # Conventions
//
//   - Inputs are Go values ([]byte, string, [32]byte, the mirror structs) borrowed for the
//     call. Where the C call takes them inside a struct (a job's C1 output, a PoSt's vanilla
//     proofs) they are copied into C memory for the call, since cgo forbids Go pointers in
//     memory passed to C.
//   - Outputs are Go values. What the library allocates (proof bytes, metrics text, error
//     messages) is copied into Go memory and freed, exactly once, before the function returns;
//     nothing this package returns needs freeing.
//   - A failure is an *[Error]: the library's status and message, or nil on success.
//   - The mirror structs have the C structs' layout (checked by the package's tests against
//     the header, and their sizes at compile time); their pointer fields are unexported and
//     set by the functions that take the pointed-to data as Go values. Start from the
//     *Default functions, as C callers do, so that struct_size and the defaults are the
//     library's.
//
// # Shared process state
//
// The engine, the log callback and the timeline are the library's, one per process, and
// package cuzk uses them through this package: [LogSetCallback] replaces the logger that
// cuzk.SetLogger set (and the reverse), and engine calls here act on the engine that cuzk.Start
// started. Timeline callbacks are independent registrations and may be mixed freely.
//
// Callbacks run on library threads. A panic in one is recovered here and written to stderr,
// since it cannot cross into C; package cuzk recovers its callers' panics before that, and
// reports them through cuzk.SetPanicHandler.
package raw
