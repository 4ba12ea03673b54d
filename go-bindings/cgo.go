package cuzk

/*
#cgo CFLAGS: -I${SRCDIR}/../include
#cgo !cuzk_shared,!cuzk_cuda LDFLAGS: ${SRCDIR}/../target/release/libcuzk.a -lgcc_s -lutil -lrt -lpthread -lm -ldl -lc
#cgo cuzk_shared,!cuzk_cuda LDFLAGS: -L${SRCDIR}/../target/release -lcuzk -Wl,-rpath,${SRCDIR}/../target/release
#cgo !cuzk_shared,cuzk_cuda LDFLAGS: ${SRCDIR}/../target/cuda/libcuzk.a -lstdc++ -lgcc_s -lutil -lrt -lpthread -lm -ldl -lc
#cgo cuzk_shared,cuzk_cuda LDFLAGS: -L${SRCDIR}/../target/cuda -lcuzk -Wl,-rpath,${SRCDIR}/../target/cuda
#include <stdlib.h>
#include "cuzk.h"

// Defined in timeline.c.
extern cuzk_status cuzkGoTimelineRegister(uintptr_t handle, uint64_t *id_out, cuzk_error *err);
*/
import "C"

import (
	"unsafe"
)

// takeError converts a C error into a Go *Error and frees the C memory (exactly once).
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

// takeBytes copies C-owned bytes into Go memory and frees them (exactly once). The length is
// a size_t end to end (C.GoBytes would cut it to a C int).
func takeBytes(b *C.cuzk_bytes) []byte {
	if b.ptr == nil {
		return nil
	}
	out := make([]byte, int(b.len))
	copy(out, unsafe.Slice((*byte)(unsafe.Pointer(b.ptr)), int(b.len)))
	C.cuzk_bytes_free(b)
	return out
}

// goBytesPtr lends Go memory to C for the duration of one call (it must hold no Go pointers).
func goBytesPtr(b []byte) *C.uint8_t {
	if len(b) == 0 {
		return nil
	}
	return (*C.uint8_t)(unsafe.Pointer(&b[0]))
}
