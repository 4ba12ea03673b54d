/*
 * The C ABI's promise to callers built against an older or newer header: "fields are only
 * appended". Structs the library must not read or write past are placed at the very end of a
 * mapped page, before a page with no access: a byte touched past them is a SIGSEGV here
 * (AddressSanitizer, which the build also runs under, sees only this file's own accesses, not
 * the library's).
 *
 * - Frozen copies of the first version of every struct that promises it. Their fields' offsets
 *   are checked against today's header at compile time, so a field inserted or moved before a
 *   version's end fails the build here (and in src/ffi's own offset checks).
 * - A version-1 cuzk_config of exactly its 48 bytes, against a guard page, starts the engine:
 *   nothing past its end is read.
 * - cuzk_engine_status and cuzk_engine_admission write at most the caller's struct_size bytes
 *   (a caller whose struct ends earlier gets nothing past its end), set struct_size to the bytes
 *   written, and refuse a struct_size of 1-7; a struct_size of 0 (a caller built against the
 *   first header, which did not ask for it) gets the first header's struct, and nothing past it.
 *
 * Environment: CUZK_TEST_PARAMS (parameter directory holding the 2KiB set, for admission).
 */
#define _DEFAULT_SOURCE /* MAP_ANONYMOUS */
#include <stddef.h>
#include <sys/mman.h>
#include <unistd.h> /* alarm, sysconf */

#include "common.h"

/* --- version 1 of each struct, frozen: never edit these ------------------------------------ */

struct config_v1 { /* 48 bytes on 64-bit targets */
  uint32_t struct_size;
  uint32_t synthesis_workers;
  uint32_t synthesis_lookahead;
  uint64_t memory_budget_bytes;
  const char *params_dir;
  uint8_t self_check;
  uint8_t timeline_stderr;
  const char *timeline_file;
};

struct engine_report_v1 {
  uint32_t struct_size, devices, devices_busy, devices_out_of_service;
  uint64_t jobs_in_flight, partitions_queued, partitions_synthesizing, partitions_ready, partitions_proving;
  uint64_t memory_budget_bytes, memory_reserved_bytes, memory_peak_bytes;
  uint64_t jobs_completed, jobs_failed, jobs_cancelled, params_resident, jobs_retained;
  uint64_t partitions_cpu_retried, timeline_events_dropped;
};

struct admission_v1 {
  uint32_t struct_size;
  uint8_t admit;
  uint32_t reason, partitions_per_job;
  uint64_t partitions_fit, jobs_fit, partition_bytes, params_bytes, queued_bytes, free_bytes, job_slots;
};

struct timeline_event_v1 {
  uint32_t struct_size, kind;
  uint64_t t_us, job_id;
  uint32_t partition, worker;
  uint64_t value;
  const char *detail;
};

struct log_record_v1 {
  uint32_t struct_size, level;
  uint64_t unix_us;
  const char *target, *message;
};

#define SAME(T, V, f) _Static_assert(offsetof(T, f) == offsetof(struct V, f), #T "." #f " moved: an ABI break")
#define LONGER(T, V) _Static_assert(sizeof(T) >= sizeof(struct V), #T " shrank: an ABI break")

_Static_assert(sizeof(void *) != 8 || sizeof(struct config_v1) == 48, "config v1 is 48 bytes");
SAME(cuzk_config, config_v1, struct_size);
SAME(cuzk_config, config_v1, synthesis_workers);
SAME(cuzk_config, config_v1, synthesis_lookahead);
SAME(cuzk_config, config_v1, memory_budget_bytes);
SAME(cuzk_config, config_v1, params_dir);
SAME(cuzk_config, config_v1, self_check);
SAME(cuzk_config, config_v1, timeline_stderr);
SAME(cuzk_config, config_v1, timeline_file);
LONGER(cuzk_config, config_v1);
/* Version 2 begins where version 1 ended. */
_Static_assert(offsetof(cuzk_config, job_retention_ms) == sizeof(struct config_v1), "config v2 starts at the v1 end");

SAME(cuzk_engine_report, engine_report_v1, struct_size);
SAME(cuzk_engine_report, engine_report_v1, devices);
SAME(cuzk_engine_report, engine_report_v1, devices_busy);
SAME(cuzk_engine_report, engine_report_v1, devices_out_of_service);
SAME(cuzk_engine_report, engine_report_v1, jobs_in_flight);
SAME(cuzk_engine_report, engine_report_v1, partitions_queued);
SAME(cuzk_engine_report, engine_report_v1, partitions_synthesizing);
SAME(cuzk_engine_report, engine_report_v1, partitions_ready);
SAME(cuzk_engine_report, engine_report_v1, partitions_proving);
SAME(cuzk_engine_report, engine_report_v1, memory_budget_bytes);
SAME(cuzk_engine_report, engine_report_v1, memory_reserved_bytes);
SAME(cuzk_engine_report, engine_report_v1, memory_peak_bytes);
SAME(cuzk_engine_report, engine_report_v1, jobs_completed);
SAME(cuzk_engine_report, engine_report_v1, jobs_failed);
SAME(cuzk_engine_report, engine_report_v1, jobs_cancelled);
SAME(cuzk_engine_report, engine_report_v1, params_resident);
SAME(cuzk_engine_report, engine_report_v1, jobs_retained);
SAME(cuzk_engine_report, engine_report_v1, partitions_cpu_retried);
SAME(cuzk_engine_report, engine_report_v1, timeline_events_dropped);
LONGER(cuzk_engine_report, engine_report_v1);

SAME(cuzk_admission, admission_v1, struct_size);
SAME(cuzk_admission, admission_v1, admit);
SAME(cuzk_admission, admission_v1, reason);
SAME(cuzk_admission, admission_v1, partitions_per_job);
SAME(cuzk_admission, admission_v1, partitions_fit);
SAME(cuzk_admission, admission_v1, jobs_fit);
SAME(cuzk_admission, admission_v1, partition_bytes);
SAME(cuzk_admission, admission_v1, params_bytes);
SAME(cuzk_admission, admission_v1, queued_bytes);
SAME(cuzk_admission, admission_v1, free_bytes);
SAME(cuzk_admission, admission_v1, job_slots);
LONGER(cuzk_admission, admission_v1);

SAME(cuzk_timeline_event, timeline_event_v1, struct_size);
SAME(cuzk_timeline_event, timeline_event_v1, kind);
SAME(cuzk_timeline_event, timeline_event_v1, t_us);
SAME(cuzk_timeline_event, timeline_event_v1, job_id);
SAME(cuzk_timeline_event, timeline_event_v1, partition);
SAME(cuzk_timeline_event, timeline_event_v1, worker);
SAME(cuzk_timeline_event, timeline_event_v1, value);
SAME(cuzk_timeline_event, timeline_event_v1, detail);
LONGER(cuzk_timeline_event, timeline_event_v1);

SAME(cuzk_log_record, log_record_v1, struct_size);
SAME(cuzk_log_record, log_record_v1, level);
SAME(cuzk_log_record, log_record_v1, unix_us);
SAME(cuzk_log_record, log_record_v1, target);
SAME(cuzk_log_record, log_record_v1, message);
LONGER(cuzk_log_record, log_record_v1);

/* --- out-structs sized by the caller ------------------------------------------------------- */

typedef cuzk_status (*fill_fn)(void *out, cuzk_error *err);

static cuzk_status fill_status(void *out, cuzk_error *err) { return cuzk_engine_status(out, err); }
static cuzk_status fill_admission(void *out, cuzk_error *err) {
  return cuzk_engine_admission(5 /* StackedDrg2KiBV1_1 */, 0, 0, 0, out, err);
}

/* `size` bytes ending exactly where a page with no access begins; release with `unguard`. */
static void *guarded(size_t size) {
  size_t page = (size_t)sysconf(_SC_PAGESIZE);
  unsigned char *m = mmap(NULL, 2 * page, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (m == MAP_FAILED || mprotect(m + page, page, PROT_NONE) != 0) {
    fprintf(stderr, "test_abi: cannot map a guard page\n");
    exit(2);
  }
  return m + page - size;
}

static void unguard(void *p) {
  size_t page = (size_t)sysconf(_SC_PAGESIZE);
  munmap((void *)((uintptr_t)p & ~(uintptr_t)(page - 1)), 2 * page);
}

#define CANARY 0xA5
static int untouched(const unsigned char *p, size_t from, size_t to) {
  for (size_t i = from; i < to; i++)
    if (p[i] != CANARY) return 0;
  return 1;
}

/* A caller built against the first header, which did not ask for struct_size: its struct of
 * that header (`v1` bytes) zero-initialised, then the guard page. It gets that header's fields
 * (`filled` says one of them was written), struct_size set to `v1`, nothing past them. */
static void zero_sized_output(const char *name, fill_fn fill, size_t v1, int (*filled)(const void *)) {
  cuzk_error err = {0};
  char what[128];
  fprintf(stderr, "test_abi: %s into a first-header caller's %zu zeroed bytes before a guard page\n", name, v1);
  unsigned char *first = guarded(v1);
  memset(first, 0, v1);
  snprintf(what, sizeof what, "%s with struct_size 0", name);
  expect(fill(first, &err), CUZK_STATUS_OK, &err, what);
  uint32_t size;
  memcpy(&size, first, 4);
  CHECK(size == v1, "%s: struct_size %u after the call, want the first header's %zu", name, size, v1);
  CHECK(filled(first), "%s: the first header's fields were not written", name);
  unguard(first);
}

static int report_filled(const void *p) {
  const struct engine_report_v1 *r = p;
  return r->devices >= 1 && r->memory_budget_bytes > 0;
}

static int admission_filled(const void *p) {
  const struct admission_v1 *a = p;
  return a->partitions_per_job >= 1 && a->partition_bytes > 0;
}

/* `full`: today's sizeof; `older`: the size of a caller whose struct lacks the last field. */
static void sized_output(const char *name, fill_fn fill, size_t full, size_t older) {
  cuzk_error err = {0};
  char what[128];
  /* Exactly the older caller's bytes, then the guard page: a write past them is a SIGSEGV. */
  fprintf(stderr, "test_abi: %s into %zu bytes before a guard page\n", name, older);
  unsigned char *exact = guarded(older);
  memset(exact, CANARY, older);
  uint32_t size = (uint32_t)older;
  memcpy(exact, &size, 4);
  snprintf(what, sizeof what, "%s into an older caller's %zu bytes", name, older);
  expect(fill(exact, &err), CUZK_STATUS_OK, &err, what);
  memcpy(&size, exact, 4);
  CHECK(size == older, "%s: struct_size %u after the call, want the %zu bytes written", name, size, older);
  unguard(exact);

  /* A larger buffer, the same struct_size: the bytes past it keep their canary. */
  size_t room = full + 64;
  unsigned char *buf = malloc(room);
  memset(buf, CANARY, room);
  memcpy(buf, &size, 4);
  snprintf(what, sizeof what, "%s, struct_size %zu", name, older);
  expect(fill(buf, &err), CUZK_STATUS_OK, &err, what);
  CHECK(untouched(buf, older, room), "%s wrote past the caller's struct_size %zu", name, older);

  /* A newer caller (a longer struct): today's fields, struct_size says how many bytes. */
  memset(buf, CANARY, room);
  size = (uint32_t)room;
  memcpy(buf, &size, 4);
  snprintf(what, sizeof what, "%s, a newer caller's %zu bytes", name, room);
  expect(fill(buf, &err), CUZK_STATUS_OK, &err, what);
  memcpy(&size, buf, 4);
  CHECK(size == full, "%s: struct_size %u after the call, want %zu", name, size, full);
  CHECK(untouched(buf, full, room), "%s wrote past its own struct", name);

  /* A struct_size too small to hold a field: refused. */
  for (uint32_t bad = 1; bad < 8; bad += 3) {
    memset(buf, CANARY, room);
    memcpy(buf, &bad, 4);
    snprintf(what, sizeof what, "%s, struct_size %u", name, bad);
    expect(fill(buf, &err), CUZK_STATUS_INVALID_ARGUMENT, &err, what);
    CHECK(untouched(buf, 4, room), "%s wrote into a refused struct", name);
  }
  free(buf);
}

/* Caller-filled structs take one versioning rule: any struct_size from the first header's to
 * today's is read (fields past it take their defaults); a smaller one (not initialized by the
 * struct's _default) or a larger one (a newer header's) is refused, naming the struct. */
static void caller_filled_sizes(void) {
  cuzk_error err = {0};
  uint64_t id = 0;
  cuzk_job_request req;
  cuzk_job_request_default(&req);
  CHECK(req.struct_size == sizeof req, "job request default size");
  cuzk_post_request post;
  cuzk_post_request_default(&post);
  cuzk_update_request update;
  cuzk_update_request_default(&update);
  CHECK(update.struct_size == sizeof update && update.registered_proof == -1, "update request default");
  cuzk_config cfg;
  cuzk_config_default(&cfg);
  uint32_t bad[] = {0, 4, 40, 4096};
  for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
    char what[96];
    req.struct_size = bad[i];
    snprintf(what, sizeof what, "submit, cuzk_job_request.struct_size %u", bad[i]);
    expect(cuzk_submit(&req, &id, &err), CUZK_STATUS_INVALID_ARGUMENT, &err, what);
    post.struct_size = bad[i];
    snprintf(what, sizeof what, "post submit, cuzk_post_request.struct_size %u", bad[i]);
    expect(cuzk_post_submit(&post, &id, &err), CUZK_STATUS_INVALID_ARGUMENT, &err, what);
    update.struct_size = bad[i];
    snprintf(what, sizeof what, "update submit, cuzk_update_request.struct_size %u", bad[i]);
    expect(cuzk_update_submit(&update, &id, &err), CUZK_STATUS_INVALID_ARGUMENT, &err, what);
    cfg.struct_size = bad[i];
    snprintf(what, sizeof what, "start, cuzk_config.struct_size %u", bad[i]);
    expect(cuzk_engine_start(&cfg, &err), CUZK_STATUS_INVALID_ARGUMENT, &err, what);
  }
  req.struct_size = 4096;
  CHECK(cuzk_submit(&req, &id, &err) == CUZK_STATUS_INVALID_ARGUMENT && err.message &&
            strstr(err.message, "cuzk_job_request.struct_size") && strstr(err.message, "newer header"),
        "a newer header's request is named: %s", err.message ? err.message : "");
  cuzk_error_free(&err);
}

/* The calls added so every call has an error struct and every enum a name. */
static void regular_calls(void) {
  cuzk_error err = {0};
  CHECK(strcmp(cuzk_event_kind_name(CUZK_EVENT_KIND_GPU_END), "GPU_END") == 0, "event kind name");
  CHECK(strcmp(cuzk_event_kind_name(CUZK_EVENT_KIND_JOB_QUEUED), "JOB_QUEUED") == 0, "first kind");
  CHECK(strcmp(cuzk_event_kind_name(-1), "UNKNOWN") == 0, "unknown kind -1");
  CHECK(strcmp(cuzk_event_kind_name(1000), "UNKNOWN") == 0, "unknown kind 1000");
  expect(cuzk_timeline_unregister_err(UINT64_MAX, &err), CUZK_STATUS_OK, &err, "unregister an unknown handle");
  cuzk_job_state st = CUZK_JOB_STATE_SUCCEEDED;
  expect(cuzk_poll(UINT64_MAX, &st, &err), CUZK_STATUS_NOT_FOUND, &err, "poll an unknown job");
  CHECK(st == CUZK_JOB_STATE_SUCCEEDED, "a failed poll writes nothing");
}

int main(void) {
  alarm(300); /* watchdog: a hang ends the test (SIGALRM) instead of waiting for CI's limit */
  cuzk_error err = {0};

  /* A version-1 caller: its config is exactly 48 bytes, then the guard page. */
  fprintf(stderr, "test_abi: start with a v1 config before a guard page\n");
  struct config_v1 *v1 = guarded(sizeof *v1);
  memset(v1, 0, sizeof *v1);
  v1->struct_size = sizeof *v1;
  v1->self_check = 1;
  v1->params_dir = getenv("CUZK_TEST_PARAMS");
  expect(cuzk_engine_start((const cuzk_config *)v1, &err), CUZK_STATUS_OK, &err, "start with a v1 config");
  unguard(v1);

  cuzk_engine_report rep;
  memset(&rep, 0, sizeof rep);
  rep.struct_size = sizeof rep;
  expect(cuzk_engine_status(&rep, &err), CUZK_STATUS_OK, &err, "status");
  CHECK(rep.struct_size == sizeof rep && rep.devices >= 1 && rep.memory_budget_bytes > 0, "status report");

  sized_output("cuzk_engine_status", fill_status, sizeof(cuzk_engine_report),
               offsetof(cuzk_engine_report, timeline_events_dropped));
  sized_output("cuzk_engine_admission", fill_admission, sizeof(cuzk_admission),
               offsetof(cuzk_admission, job_slots));
  zero_sized_output("cuzk_engine_status", fill_status, sizeof(struct engine_report_v1), report_filled);
  zero_sized_output("cuzk_engine_admission", fill_admission, sizeof(struct admission_v1), admission_filled);

  caller_filled_sizes();
  regular_calls();
  expect(cuzk_engine_shutdown_err(&err), CUZK_STATUS_OK, &err, "shutdown with an error struct");
  expect(cuzk_engine_shutdown_err(NULL), CUZK_STATUS_OK, &err, "shutdown again, no error struct");
  printf("test_abi: %d passed, %d failed\n", passed, failed);
  return failed ? 1 : 0;
}
