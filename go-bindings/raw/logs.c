#include <pthread.h>
#include <stdint.h>
#include "cuzk.h"
#include "_cgo_export.h"

// The library's one log thread, set by the first record it delivers.
static pthread_t log_thread;
static int log_thread_known;

// C trampoline: the library's log thread calls this; it forwards to Go with the key that was
// set as userdata (an integer into logs.go's table, never a Go pointer).
static void cuzkGoLogTrampoline(void *userdata, const cuzk_log_record *rec) {
  if (!__atomic_load_n(&log_thread_known, __ATOMIC_ACQUIRE)) {
    log_thread = pthread_self();
    __atomic_store_n(&log_thread_known, 1, __ATOMIC_RELEASE);
  }
  goCuzkLog((uintptr_t)userdata, (cuzk_log_record *)rec);
}

// Key 0 sends the records back to stderr.
cuzk_status cuzkGoLogSet(uintptr_t key, uint32_t max_level, cuzk_error *err) {
  return cuzk_log_set_callback(key ? cuzkGoLogTrampoline : NULL, (void *)key, max_level, err);
}

// Whether the calling thread is the library's log thread (a callback runs on it; a goroutine
// inside a cgo callback stays on the callback's thread).
int cuzkGoOnLogThread(void) {
  return __atomic_load_n(&log_thread_known, __ATOMIC_ACQUIRE) &&
         pthread_equal(pthread_self(), log_thread);
}
