#include <stdint.h>
#include "cuzk.h"
#include "_cgo_export.h"

// C trampoline: the library calls this on its timeline thread; it forwards to Go with the key
// that was registered as userdata (an integer into timeline.go's table, never a Go pointer).
static void cuzkGoTimelineTrampoline(void *userdata, const cuzk_timeline_event *ev) {
  goCuzkTimeline((uintptr_t)userdata, (cuzk_timeline_event *)ev);
}

cuzk_status cuzkGoTimelineRegister(uintptr_t key, uint64_t *handle_out, cuzk_error *err) {
  return cuzk_timeline_register(cuzkGoTimelineTrampoline, (void *)key, handle_out, err);
}
