#include <stdint.h>
#include "cuzk.h"
#include "_cgo_export.h"

// C trampoline: the library's log thread calls this; it forwards to Go.
static void cuzkGoLogTrampoline(void *userdata, const cuzk_log_record *rec) {
  (void)userdata;
  goCuzkLog((cuzk_log_record *)rec);
}

cuzk_status cuzkGoLogSet(int on, uint32_t max_level, cuzk_error *err) {
  return cuzk_log_set_callback(on ? cuzkGoLogTrampoline : NULL, NULL, max_level, err);
}
