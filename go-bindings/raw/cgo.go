package raw

// The link flags of the whole module: package cuzk has no cgo of its own. The build tags pick
// the library (see docs/go.md): the CPU build or the cuda one, linked statically or, with
// cuzk_shared, as libcuzk.so through an rpath to the same directory.

/*
#cgo CFLAGS: -I${SRCDIR}/../../include
#cgo !cuzk_shared,!cuzk_cuda LDFLAGS: ${SRCDIR}/../../target/release/libcuzk.a -lgcc_s -lutil -lrt -lpthread -lm -ldl -lc
#cgo cuzk_shared,!cuzk_cuda LDFLAGS: -L${SRCDIR}/../../target/release -lcuzk -Wl,-rpath,${SRCDIR}/../../target/release
#cgo !cuzk_shared,cuzk_cuda LDFLAGS: ${SRCDIR}/../../target/cuda/libcuzk.a -lstdc++ -lgcc_s -lutil -lrt -lpthread -lm -ldl -lc
#cgo cuzk_shared,cuzk_cuda LDFLAGS: -L${SRCDIR}/../../target/cuda -lcuzk -Wl,-rpath,${SRCDIR}/../../target/cuda
#include <stdlib.h>
#include "cuzk.h"
*/
import "C"

import "unsafe"

// Error is a failure the library reported: its status and its message.
type Error struct {
	Status  Status
	Message string
}

func (e *Error) Error() string { return "cuzk: " + e.Status.String() + ": " + e.Message }

// String is the library's name of the status ("INVALID_INPUT", ...; "UNKNOWN" for a value
// it does not know).
func (s Status) String() string { return StatusName(int32(s)) }

// takeError turns a status and its C error into an *Error (nil for CUZK_STATUS_OK) and frees
// the C message, exactly once (the library writes the error only on failure).
func takeError(st C.cuzk_status, cerr *C.cuzk_error) error {
	if st == C.CUZK_STATUS_OK {
		return nil
	}
	msg := ""
	if cerr.message != nil {
		msg = C.GoString(cerr.message)
	}
	C.cuzk_error_free(cerr)
	return &Error{Status: Status(st), Message: msg}
}

// takeBytes copies C-owned bytes into Go memory and frees them, exactly once. The length is a
// size_t end to end (C.GoBytes would cut it to a C int).
func takeBytes(b *C.cuzk_bytes) []byte {
	if b.ptr == nil {
		return nil
	}
	out := make([]byte, int(b.len))
	copy(out, unsafe.Slice((*byte)(unsafe.Pointer(b.ptr)), int(b.len)))
	C.cuzk_bytes_free(b)
	return out
}

// bytesPtr lends Go memory to C for the duration of one call, as a direct argument (it must
// hold no Go pointers). Empty is NULL.
func bytesPtr(b []byte) *C.uint8_t {
	if len(b) == 0 {
		return nil
	}
	return (*C.uint8_t)(unsafe.Pointer(&b[0]))
}

// cString copies s into C memory for one call; "" is NULL. Free the result with C.free.
func cString(s string) *C.char {
	if s == "" {
		return nil
	}
	return C.CString(s)
}
