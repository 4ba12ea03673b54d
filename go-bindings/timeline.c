#include <stdint.h>
#include "cuzk.h"
#include "_cgo_export.h"

// C trampoline: the library calls this from its worker threads; it forwards to Go with the
// key that was registered as userdata (an integer into timeline.go's callback table, never a
// Go pointer).
static void cuzkGoTimelineTrampoline(void *userdata, const cuzk_timeline_event *ev) {
  goCuzkTimeline((uintptr_t)userdata, (cuzk_timeline_event *)ev);
}

cuzk_status cuzkGoTimelineRegister(uintptr_t handle, uint64_t *id_out, cuzk_error *err) {
  return cuzk_timeline_register(cuzkGoTimelineTrampoline, (void *)handle, id_out, err);
}
