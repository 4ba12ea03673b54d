#include <pthread.h>
#include <stdint.h>
#include "cuzk.h"
#include "_cgo_export.h"

// The library's one log thread, set by the first record it delivers.
static pthread_t log_thread;
static int log_thread_known;

// C trampoline: the library's log thread calls this; it forwards to Go.
static void cuzkGoLogTrampoline(void *userdata, const cuzk_log_record *rec) {
  (void)userdata;
  if (!__atomic_load_n(&log_thread_known, __ATOMIC_ACQUIRE)) {
    log_thread = pthread_self();
    __atomic_store_n(&log_thread_known, 1, __ATOMIC_RELEASE);
  }
  goCuzkLog((cuzk_log_record *)rec);
}

cuzk_status cuzkGoLogSet(int on, uint32_t max_level, cuzk_error *err) {
  return cuzk_log_set_callback(on ? cuzkGoLogTrampoline : NULL, NULL, max_level, err);
}

// Whether the calling thread is the library's log thread (a handler runs on it; a goroutine
// inside a cgo callback stays on the callback's thread).
int cuzkGoOnLogThread(void) {
  return __atomic_load_n(&log_thread_known, __ATOMIC_ACQUIRE) &&
         pthread_equal(pthread_self(), log_thread);
}
