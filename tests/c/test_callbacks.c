/*
 * Timeline callbacks through the C ABI, the way a C host uses them, under a watchdog (alarm:
 * a hang kills the test): a callback that unregisters itself, one that cancels its job, one
 * that calls what it must not (and gets CUZK_STATUS_IN_CALLBACK), unregistering while a job
 * runs and while the engine shuts down, each time freeing the userdata at once (built with
 * AddressSanitizer, a late callback is a use-after-free). Also a parameter directory that is
 * not UTF-8, the log callback (records arrive off the logging thread; replaced from inside
 * and from outside, its userdata freed at once) and the admission call.
 *
 * Environment as for test_ffi.c (CUZK_TEST_C1, CUZK_TEST_SECTOR, CUZK_TEST_MINER,
 * CUZK_TEST_PARAMS).
 */
#define _GNU_SOURCE
#include <pthread.h>
#include <stdatomic.h>
#include <unistd.h>

#include "common.h"

static struct fixture fx;
static cuzk_config cfg;

static cuzk_job_request request(void) {
  cuzk_job_request req;
  cuzk_job_request_default(&req);
  req.c1_ptr = fx.c1;
  req.c1_len = fx.c1_len;
  req.sector_id = fx.sector;
  memcpy(req.prover_id, fx.prover, 32);
  return req;
}

static uint64_t submit(void) {
  cuzk_job_request req = request();
  uint64_t job = 0;
  cuzk_error err = {0};
  expect(cuzk_submit(&req, &job, &err), CUZK_STATUS_OK, &err, "submit");
  return job;
}

static void start(void) {
  cuzk_error err = {0};
  expect(cuzk_engine_start(&cfg, &err), CUZK_STATUS_OK, &err, "start");
}

/* --- a callback that unregisters itself on its first event ------------------------------- */

struct self_unreg {
  uint64_t handle;
  atomic_int calls;
};

static void on_self_unreg(void *ud, const cuzk_timeline_event *ev) {
  (void)ev;
  struct self_unreg *s = ud;
  atomic_fetch_add(&s->calls, 1);
  CHECK(cuzk_timeline_unregister(s->handle) == CUZK_STATUS_OK, "unregister from its callback");
}

static void self_unregister(void) {
  struct self_unreg *s = calloc(1, sizeof *s);
  cuzk_error err = {0};
  expect(cuzk_timeline_register(on_self_unreg, s, &s->handle, &err), CUZK_STATUS_OK, &err, "register");
  for (int i = 0; i < 3; i++) {
    uint64_t job = submit();
    expect(cuzk_cancel(job, &err), CUZK_STATUS_OK, &err, "cancel");
    cuzk_bytes proof = {0};
    expect(cuzk_await(job, -1, &proof, &err), CUZK_STATUS_CANCELLED, &err, "await");
  }
  /* Another callback, unregistered from outside, flushes what was recorded before it. */
  struct self_unreg *other = calloc(1, sizeof *other);
  uint64_t h = 0;
  expect(cuzk_timeline_register(on_self_unreg, other, &h, &err), CUZK_STATUS_OK, &err, "register");
  other->handle = 0; /* this one unregisters a stale handle: not an error */
  CHECK(cuzk_timeline_unregister(h) == CUZK_STATUS_OK, "unregister");
  CHECK(atomic_load(&s->calls) == 1, "self-unregistered callback called %d times", atomic_load(&s->calls));
  free(s);
  free(other);
}

/* --- a callback that cancels the job it hears of, and calls what it must not ------------- */

struct reentry {
  atomic_int queued;
  atomic_int checked;
  atomic_int shutdown_message;
  int statuses[6];
};

static void on_reentry(void *ud, const cuzk_timeline_event *ev) {
  struct reentry *r = ud;
  if (ev->kind != CUZK_EVENT_KIND_JOB_QUEUED) return;
  if (atomic_fetch_add(&r->queued, 1) == 0) {
    cuzk_error err = {0};
    cuzk_bytes proof = {0};
    r->statuses[0] = cuzk_engine_shutdown();
    r->statuses[1] = cuzk_engine_start(&cfg, &err);
    cuzk_error_free(&err);
    r->statuses[2] = cuzk_await(ev->job_id, 1000, &proof, &err);
    cuzk_error_free(&err);
    r->statuses[3] = cuzk_seal_commit_phase2(fx.c1, fx.c1_len, fx.sector, &fx.prover, &proof, &err);
    cuzk_error_free(&err);
    /* A zero-timeout await is a poll: allowed (the job is still running). */
    r->statuses[4] = cuzk_await(ev->job_id, 0, &proof, &err);
    cuzk_error_free(&err);
    /* The variant with an error struct says why. */
    r->statuses[5] = cuzk_engine_shutdown_err(&err);
    atomic_store(&r->shutdown_message,
                 err.status == CUZK_STATUS_IN_CALLBACK && err.message != NULL && *err.message);
    cuzk_error_free(&err);
    atomic_store(&r->checked, 1);
  }
  cuzk_error err = {0};
  CHECK(cuzk_cancel(ev->job_id, &err) == CUZK_STATUS_OK, "cancel from a callback");
  cuzk_error_free(&err);
}

static void reentry(void) {
  struct reentry *r = calloc(1, sizeof *r);
  cuzk_error err = {0};
  uint64_t h = 0;
  expect(cuzk_timeline_register(on_reentry, r, &h, &err), CUZK_STATUS_OK, &err, "register");
  uint64_t job = submit();
  cuzk_bytes proof = {0};
  expect(cuzk_await(job, -1, &proof, &err), CUZK_STATUS_CANCELLED, &err, "await the job its callback cancelled");
  CHECK(cuzk_timeline_unregister(h) == CUZK_STATUS_OK, "unregister");
  CHECK(atomic_load(&r->checked) == 1, "the callback ran");
  const char *what[] = {"shutdown", "start", "waiting await", "drop-in", "polling await",
                        "shutdown with an error struct"};
  int want[] = {CUZK_STATUS_IN_CALLBACK, CUZK_STATUS_IN_CALLBACK, CUZK_STATUS_IN_CALLBACK,
                CUZK_STATUS_IN_CALLBACK, CUZK_STATUS_TIMEOUT,     CUZK_STATUS_IN_CALLBACK};
  CHECK(atomic_load(&r->shutdown_message) == 1, "cuzk_engine_shutdown_err from a callback: no message");
  for (int i = 0; i < 6; i++)
    CHECK(r->statuses[i] == want[i], "%s from a callback: %s, want %s", what[i],
          cuzk_status_name(r->statuses[i]), cuzk_status_name(want[i]));
  free(r);
}

/* --- unregister while work runs, and while the engine shuts down, freeing userdata -------- */

struct watched {
  atomic_int calls;
  atomic_int synth_started;
};

static void on_watched(void *ud, const cuzk_timeline_event *ev) {
  struct watched *w = ud; /* freed right after unregister: ASan reports any later call */
  atomic_fetch_add(&w->calls, 1);
  if (ev->kind == CUZK_EVENT_KIND_SYNTH_START) atomic_store(&w->synth_started, 1);
}

static void wait_for(atomic_int *flag) {
  while (!atomic_load(flag)) usleep(1000);
}

static void unregister_while_a_job_runs(void) {
  struct watched *w = calloc(1, sizeof *w);
  cuzk_error err = {0};
  uint64_t h = 0;
  expect(cuzk_timeline_register(on_watched, w, &h, &err), CUZK_STATUS_OK, &err, "register");
  uint64_t job = submit();
  wait_for(&w->synth_started);
  CHECK(cuzk_timeline_unregister(h) == CUZK_STATUS_OK, "unregister while synthesizing");
  free(w);
  /* The job goes on emitting events; none may reach the freed userdata. */
  expect(cuzk_cancel(job, &err), CUZK_STATUS_OK, &err, "cancel");
  cuzk_bytes proof = {0};
  expect(cuzk_await(job, -1, &proof, &err), CUZK_STATUS_CANCELLED, &err, "await");
}

static void *shutdown_thread(void *arg) {
  *(int *)arg = cuzk_engine_shutdown();
  return NULL;
}

static void unregister_during_shutdown(void) {
  struct watched *w = calloc(1, sizeof *w);
  cuzk_error err = {0};
  uint64_t h = 0;
  expect(cuzk_timeline_register(on_watched, w, &h, &err), CUZK_STATUS_OK, &err, "register");
  for (int i = 0; i < 3; i++) submit();
  wait_for(&w->synth_started);
  pthread_t t;
  int st = -1, st2 = -1;
  pthread_create(&t, NULL, shutdown_thread, &st);
  /* Shutdown has begun once submissions are refused as NOT_RUNNING (a full queue,
     RESOURCE_EXHAUSTED, is not that: keep trying; the test's alarm bounds the wait). */
  cuzk_job_request req = request();
  uint64_t job = 0;
  cuzk_status sub;
  while ((sub = cuzk_submit(&req, &job, &err)) == CUZK_STATUS_OK || sub == CUZK_STATUS_RESOURCE_EXHAUSTED)
    cuzk_error_free(&err);
  cuzk_error_free(&err);
  CHECK(sub == CUZK_STATUS_NOT_RUNNING, "a submission during shutdown: status %d", (int)sub);
  CHECK(cuzk_timeline_unregister(h) == CUZK_STATUS_OK, "unregister during shutdown");
  free(w);
  /* A second shutdown blocks until the first is done. */
  st2 = cuzk_engine_shutdown();
  pthread_join(t, NULL);
  CHECK(st == CUZK_STATUS_OK && st2 == CUZK_STATUS_OK, "shutdowns: %d %d", st, st2);
  cuzk_engine_report rep = {.struct_size = sizeof rep};
  expect(cuzk_engine_status(&rep, &err), CUZK_STATUS_NOT_RUNNING, &err, "no engine after shutdown");
  cuzk_admission a = {.struct_size = sizeof a};
  expect(cuzk_engine_admission(5, 0, 0, 0, &a, &err), CUZK_STATUS_NOT_RUNNING, &err, "no admission after shutdown");
}

/* --- the log callback ------------------------------------------------------------------- */

struct logs {
  atomic_int records;
  atomic_int started; /* the engine's start line, at INFO from cuzk::engine */
  atomic_int status_ok;
  atomic_int bad;
};

static void on_log(void *ud, const cuzk_log_record *r) {
  struct logs *l = ud;
  atomic_fetch_add(&l->records, 1);
  if (r->struct_size != sizeof *r || r->level < 1 || r->level > 5 || !r->target || !r->message)
    atomic_fetch_add(&l->bad, 1);
  if (strcmp(r->target, "cuzk::engine") == 0 && strstr(r->message, "cuzk engine started") == r->message &&
      r->level == 3 && r->unix_us > 1600000000ull * 1000000ull) {
    atomic_fetch_add(&l->started, 1);
    /* A log callback may call into cuzk (the engine may not be published yet: NOT_RUNNING). */
    cuzk_engine_report rep = {.struct_size = sizeof rep};
    cuzk_error err = {0};
    cuzk_status st = cuzk_engine_status(&rep, &err);
    if (st == CUZK_STATUS_OK || st == CUZK_STATUS_NOT_RUNNING) atomic_fetch_add(&l->status_ok, 1);
    cuzk_error_free(&err);
  }
}

/* Removes itself from inside on its first record. */
static void on_log_once(void *ud, const cuzk_log_record *r) {
  (void)r;
  atomic_int *calls = ud;
  if (atomic_fetch_add(calls, 1) == 0) {
    cuzk_error err = {0};
    CHECK(cuzk_log_set_callback(NULL, NULL, 0, &err) == CUZK_STATUS_OK, "log callback removed from inside");
    cuzk_error_free(&err);
  }
}

static void log_callback(void) {
  cuzk_error err = {0};
  struct logs *l = calloc(1, sizeof *l);
  expect(cuzk_log_set_callback(on_log, l, 3, &err), CUZK_STATUS_OK, &err, "log callback");
  expect(cuzk_log_set_callback(on_log, l, 9, &err), CUZK_STATUS_INVALID_ARGUMENT, &err, "log level 9");
  CHECK(cuzk_engine_shutdown() == CUZK_STATUS_OK, "shutdown");
  start(); /* logs "cuzk engine started" at INFO */
  /* Delivers what was logged before; then on_log is never called again. */
  expect(cuzk_log_set_callback(NULL, NULL, 0, &err), CUZK_STATUS_OK, &err, "log callback off");
  CHECK(atomic_load(&l->started) == 1 && atomic_load(&l->status_ok) == 1 && atomic_load(&l->bad) == 0,
        "log records: %d in all, %d start lines, %d status calls, %d malformed", atomic_load(&l->records),
        atomic_load(&l->started), atomic_load(&l->status_ok), atomic_load(&l->bad));
  free(l);

  atomic_int *calls = calloc(1, sizeof *calls);
  expect(cuzk_log_set_callback(on_log_once, calls, 3, &err), CUZK_STATUS_OK, &err, "self-removing log callback");
  CHECK(cuzk_engine_shutdown() == CUZK_STATUS_OK, "shutdown");
  start();
  CHECK(cuzk_engine_shutdown() == CUZK_STATUS_OK, "shutdown");
  start();
  /* Outside the callback: once this returns no call of it is running or will run. */
  expect(cuzk_log_set_callback(NULL, NULL, 0, &err), CUZK_STATUS_OK, &err, "log callback off again");
  CHECK(atomic_load(calls) == 1, "the self-removing callback ran %d times", atomic_load(calls));
  free(calls);
}

/* --- admission --------------------------------------------------------------------------- */

static void admission(void) {
  cuzk_error err = {0};
  cuzk_admission a;
  memset(&a, 0, sizeof a);
  a.struct_size = sizeof a;
  /* 5: StackedDrg2KiBV1_1, the fixture's type. */
  expect(cuzk_engine_admission(5, 0, 0, 0, &a, &err), CUZK_STATUS_OK, &err, "admission");
  CHECK(a.struct_size == sizeof a && a.admit == 1 && a.reason == CUZK_ADMIT_OK && a.partitions_per_job == 1 &&
            a.partitions_fit >= 1 && a.jobs_fit >= 1 && a.partition_bytes > 0 && a.free_bytes > 0,
        "idle engine: admit %d reason %u fit %llu", a.admit, a.reason, (unsigned long long)a.partitions_fit);
  expect(cuzk_engine_admission(99, 0, 0, 0, &a, &err), CUZK_STATUS_INVALID_ARGUMENT, &err, "unknown type");
  /* 15: StackedDrg2KiBV1_2_Feat_NonInteractivePoRep, 13 partitions of the same circuit (the same
     parameters); fixture shapes are for interactive types only. */
  expect(cuzk_engine_admission(15, 0, 0, 0, &a, &err), CUZK_STATUS_OK, &err, "NI-PoRep");
  CHECK(a.partitions_per_job == 13, "NI-PoRep: %llu partitions a job", (unsigned long long)a.partitions_per_job);
  expect(cuzk_engine_admission(15, 0, 2, 0, &a, &err), CUZK_STATUS_UNSUPPORTED, &err, "NI-PoRep fixture shape");
  expect(cuzk_engine_admission(6, 0, 0, 0, &a, &err), CUZK_STATUS_PARAMS, &err, "8MiB without parameters");
  expect(cuzk_engine_admission(5, 0, 0, 0, NULL, &err), CUZK_STATUS_INVALID_ARGUMENT, &err, "NULL out");
}

int main(void) {
  if (!load_fixture(&fx)) return 2;
  alarm(600); /* watchdog: a hang ends the test */
  cuzk_config_default(&cfg);
  cuzk_error err = {0};

  /* A parameter directory that is not UTF-8 is a path like any other. */
  cfg.params_dir = "/nonexistent/cuzk-\xff\xfe-params";
  expect(cuzk_engine_start(&cfg, &err), CUZK_STATUS_OK, &err, "start with a non-UTF-8 params_dir");
  uint64_t job = submit();
  cuzk_bytes proof = {0};
  cuzk_status st = cuzk_await(job, -1, &proof, &err);
  CHECK(st == CUZK_STATUS_PARAMS && err.message && strstr(err.message, "\xff") == NULL &&
            strstr(err.message, "cuzk-"),
        "missing parameters in a non-UTF-8 directory: %s %s", cuzk_status_name(st),
        err.message ? err.message : "");
  cuzk_error_free(&err);
  CHECK(cuzk_engine_shutdown() == CUZK_STATUS_OK, "shutdown");

  cfg.params_dir = getenv("CUZK_TEST_PARAMS");
  start();
  admission();
  log_callback();
  self_unregister();
  reentry();
  unregister_while_a_job_runs();
  unregister_during_shutdown();

  free(fx.c1);
  printf("c-callbacks: %d passed, %d failed\n", passed, failed);
  return failed ? 1 : 0;
}
