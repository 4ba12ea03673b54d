/*
 * C ABI tests: the drop-in and the async API, including bad inputs.
 *
 * Environment: CUZK_TEST_C1 (path of a 2KiB C1 output JSON), CUZK_TEST_SECTOR,
 * CUZK_TEST_MINER, optional CUZK_TEST_PARAMS (parameter directory), CUZK_TEST_PROOF_OUT (where
 * the drop-in's proof is written, for verification by `cuzk verify`).
 * CUZK_TEST_NO_GPU=1: the engine's only device is the CPU prover (checked).
 * Argument: "full" also proves the fixture through the drop-in (make test-c runs it under
 * AddressSanitizer); "errors" only checks errors and cancellation.
 */
#define _GNU_SOURCE /* memmem */
#include <unistd.h> /* alarm */

#include "common.h"

struct counts {
  int events;
};

static void on_event(void *userdata, const cuzk_timeline_event *ev) {
  struct counts *c = userdata;
  if (ev->struct_size >= sizeof(cuzk_timeline_event) && ev->detail != NULL) c->events++;
  /* Job-level events carry no partition. */
  if (ev->kind == CUZK_EVENT_KIND_JOB_QUEUED && ev->partition != CUZK_NO_PARTITION) c->events = -1000;
}

int main(int argc, char **argv) {
  alarm(900); /* watchdog: a hang ends the test (SIGALRM) instead of waiting for CI's limit */
  int full = argc > 1 && strcmp(argv[1], "full") == 0;
  struct fixture f;
  if (!load_fixture(&f)) return 2;
  unsigned char *c1 = f.c1;
  size_t c1_len = f.c1_len;
  uint64_t sector = f.sector;
  uint8_t prover[32], wrong_prover[32];
  memcpy(prover, f.prover, 32);
  prover_id_from_miner(strtoull(getenv("CUZK_TEST_MINER"), NULL, 10) + 1, wrong_prover);

  cuzk_error err = {0};
  cuzk_bytes proof = {0};
  uint64_t job = 0;

  CHECK(strcmp(cuzk_version(), "") != 0, "empty version");
  CHECK(strcmp(cuzk_status_name(CUZK_STATUS_OK), "OK") == 0, "status name");
  CHECK(strcmp(cuzk_status_name(CUZK_STATUS_INVALID_INPUT), "INVALID_INPUT") == 0, "status name");
  CHECK(strcmp(cuzk_status_name(12345), "UNKNOWN") == 0, "unknown status name");

  /* Nothing runs yet. */
  cuzk_job_request req;
  cuzk_job_request_default(&req);
  req.c1_ptr = c1;
  req.c1_len = c1_len;
  req.sector_id = sector;
  memcpy(req.prover_id, prover, 32);
  expect(cuzk_submit(&req, &job, &err), CUZK_STATUS_NOT_RUNNING, &err, "submit before start");
  expect(cuzk_await(1, 0, &proof, &err), CUZK_STATUS_NOT_RUNNING, &err, "await before start");

  /* Start. */
  cuzk_config cfg;
  cuzk_config_default(&cfg);
  CHECK(cfg.struct_size == sizeof(cuzk_config) && cfg.self_check, "config defaults");
  cfg.params_dir = getenv("CUZK_TEST_PARAMS");
  cuzk_config bad = cfg;
  bad.struct_size = 3;
  expect(cuzk_engine_start(&bad, &err), CUZK_STATUS_INVALID_ARGUMENT, &err, "bad struct_size");
  expect(cuzk_engine_start(&cfg, &err), CUZK_STATUS_OK, &err, "start");
  expect(cuzk_engine_start(&cfg, &err), CUZK_STATUS_OK, &err, "start again, same config");
  cuzk_config other = cfg;
  other.self_check = false;
  expect(cuzk_engine_start(&other, &err), CUZK_STATUS_ALREADY_RUNNING, &err, "start with another config");

  struct counts counts = {0};
  uint64_t handle = 0;
  expect(cuzk_timeline_register(NULL, NULL, &handle, &err), CUZK_STATUS_INVALID_ARGUMENT, &err, "NULL callback");
  expect(cuzk_timeline_register(on_event, &counts, &handle, &err), CUZK_STATUS_OK, &err, "register");

  /* Drop-in, bad inputs. */
  const char *garbage = "{\"registered_proof\": 17, \"vanilla_proofs\": [";
  expect(cuzk_seal_commit_phase2(NULL, 10, sector, &prover, &proof, &err), CUZK_STATUS_INVALID_ARGUMENT, &err, "NULL c1");
  expect(cuzk_seal_commit_phase2(c1, c1_len, sector, NULL, &proof, &err), CUZK_STATUS_INVALID_ARGUMENT, &err, "NULL prover id");
  expect(cuzk_seal_commit_phase2(c1, c1_len, sector, &prover, NULL, &err), CUZK_STATUS_INVALID_ARGUMENT, &err, "NULL proof_out");
  expect(cuzk_seal_commit_phase2((const uint8_t *)garbage, strlen(garbage), sector, &prover, &proof, &err),
         CUZK_STATUS_INVALID_INPUT, &err, "garbage JSON");
  expect(cuzk_seal_commit_phase2(c1, c1_len / 3, sector, &prover, &proof, &err), CUZK_STATUS_INVALID_INPUT, &err, "truncated JSON");
  expect(cuzk_seal_commit_phase2(c1, c1_len, sector, &wrong_prover, &proof, &err), CUZK_STATUS_INVALID_INPUT, &err, "wrong prover id");
  expect(cuzk_seal_commit_phase2(c1, c1_len, sector + 1, &prover, &proof, &err), CUZK_STATUS_INVALID_INPUT, &err, "wrong sector id");
  CHECK(cuzk_seal_commit_phase2(c1, 0, sector, &prover, &proof, NULL) == CUZK_STATUS_INVALID_INPUT, "NULL err_out is allowed");
  CHECK(proof.ptr == NULL && proof.len == 0, "no output written on failure");
  /* The circuit proofs' drop-in: the same refusals; a NULL prover id is allowed (the C1
     output's replica id is taken as it is), a wrong one is not. */
  expect(cuzk_seal_commit_phase2_circuit_proofs(NULL, 10, sector, NULL, &proof, &err), CUZK_STATUS_INVALID_ARGUMENT, &err,
         "circuit proofs: NULL c1");
  expect(cuzk_seal_commit_phase2_circuit_proofs(c1, c1_len, sector, NULL, NULL, &err), CUZK_STATUS_INVALID_ARGUMENT, &err,
         "circuit proofs: NULL proof_out");
  expect(cuzk_seal_commit_phase2_circuit_proofs((const uint8_t *)garbage, strlen(garbage), sector, NULL, &proof, &err),
         CUZK_STATUS_INVALID_INPUT, &err, "circuit proofs: garbage JSON");
  expect(cuzk_seal_commit_phase2_circuit_proofs(c1, c1_len, sector, &wrong_prover, &proof, &err), CUZK_STATUS_INVALID_INPUT,
         &err, "circuit proofs: wrong prover id");
  CHECK(proof.ptr == NULL && proof.len == 0, "no output written on failure");

  /* An error struct reused without freeing: cuzk frees the message it overwrites. */
  CHECK(cuzk_submit(NULL, &job, &err) == CUZK_STATUS_INVALID_ARGUMENT, "NULL request");
  CHECK(cuzk_cancel(987654, &err) == CUZK_STATUS_NOT_FOUND && err.status == CUZK_STATUS_NOT_FOUND, "reused error");
  cuzk_error_free(&err);
  /* A length above PTRDIFF_MAX is refused before anything reads the buffer. */
  expect(cuzk_seal_commit_phase2(c1, SIZE_MAX, sector, &prover, &proof, &err), CUZK_STATUS_INVALID_ARGUMENT, &err, "c1_len SIZE_MAX");

  /* Async: bad request, cancel, unknown ids. */
  expect(cuzk_submit(NULL, &job, &err), CUZK_STATUS_INVALID_ARGUMENT, &err, "NULL request");
  cuzk_job_request bad_req = req;
  bad_req.struct_size = 1;
  expect(cuzk_submit(&bad_req, &job, &err), CUZK_STATUS_INVALID_ARGUMENT, &err, "request struct_size");
  bad_req = req;
  bad_req.fixture_partitions = 1000;
  expect(cuzk_submit(&bad_req, &job, &err), CUZK_STATUS_INVALID_ARGUMENT, &err, "fixture shape out of range");
  expect(cuzk_submit(&req, &job, &err), CUZK_STATUS_OK, &err, "submit");
  expect(cuzk_cancel(job, &err), CUZK_STATUS_OK, &err, "cancel");
  expect(cuzk_await(job, -1, &proof, &err), CUZK_STATUS_CANCELLED, &err, "await cancelled");
  expect(cuzk_await(job, -1, &proof, &err), CUZK_STATUS_NOT_FOUND, &err, "await twice");
  expect(cuzk_cancel(987654, &err), CUZK_STATUS_NOT_FOUND, &err, "cancel unknown");
  expect(cuzk_await(job, 0, NULL, &err), CUZK_STATUS_INVALID_ARGUMENT, &err, "await NULL out");

  /* Devices: an unknown index is refused; the CPU prover (device 0 without a GPU) cannot leave. */
  expect(cuzk_device_set_enabled(99, false, &err), CUZK_STATUS_INVALID_ARGUMENT, &err, "unknown device");
  if (getenv("CUZK_TEST_NO_GPU"))
    expect(cuzk_device_set_enabled(0, false, &err), CUZK_STATUS_UNSUPPORTED, &err, "CPU prover stays");

  if (full) {
    /* Drop-in, valid: the proof is written for `cuzk verify` to check with filecoin-proofs. */
    expect(cuzk_seal_commit_phase2(c1, c1_len, sector, &prover, &proof, &err), CUZK_STATUS_OK, &err, "drop-in prove");
    CHECK(proof.ptr != NULL && proof.len == CUZK_PROOF_BYTES, "proof is %zu bytes", proof.len);
    const char *out = getenv("CUZK_TEST_PROOF_OUT");
    if (out && proof.ptr) {
      FILE *f = fopen(out, "wb");
      CHECK(f && fwrite(proof.ptr, 1, proof.len, f) == proof.len, "write %s", out);
      if (f) fclose(f);
    }
    cuzk_bytes_free(&proof);
    CHECK(proof.ptr == NULL && proof.len == 0, "bytes_free must zero");
    cuzk_bytes_free(&proof); /* twice is harmless */
  }
  /* Status and metrics. */
  cuzk_engine_report rep = {.struct_size = sizeof rep};
  expect(cuzk_engine_status(NULL, &err), CUZK_STATUS_INVALID_ARGUMENT, &err, "status NULL");
  expect(cuzk_engine_status(&rep, &err), CUZK_STATUS_OK, &err, "status");
  CHECK(rep.struct_size == sizeof(rep) && rep.devices == 1 && rep.memory_budget_bytes > 0, "status report");
  CHECK(rep.jobs_completed == (full ? 1u : 0u) && rep.jobs_cancelled >= 1, "job counters %llu %llu",
        (unsigned long long)rep.jobs_completed, (unsigned long long)rep.jobs_cancelled);
  cuzk_bytes text = {0};
  expect(cuzk_engine_metrics(0, &text, &err), CUZK_STATUS_OK, &err, "prometheus");
  char want[64];
  snprintf(want, sizeof want, "cuzk_jobs_completed_total %d\n", full ? 1 : 0);
  CHECK(text.ptr && memmem(text.ptr, text.len, want, strlen(want)) != NULL, "metrics lack %s", want);
  cuzk_bytes_free(&text);
  expect(cuzk_engine_metrics(1, &text, &err), CUZK_STATUS_OK, &err, "json status");
  CHECK(text.len > 2 && text.ptr[0] == '{', "json status");
  cuzk_bytes_free(&text);
  expect(cuzk_engine_metrics(7, &text, &err), CUZK_STATUS_INVALID_ARGUMENT, &err, "unknown metrics format");

  cuzk_bytes_free(NULL);
  cuzk_error_free(NULL);

  /* Unregister delivers what was recorded before it: all of the drop-in's events are in. */
  CHECK(cuzk_timeline_unregister(handle) == CUZK_STATUS_OK, "unregister");
  CHECK(counts.events >= (full ? 9 : 2), "timeline events seen: %d", counts.events);
  CHECK(cuzk_engine_shutdown() == CUZK_STATUS_OK, "shutdown");
  CHECK(cuzk_engine_shutdown() == CUZK_STATUS_OK, "shutdown twice");
  expect(cuzk_submit(&req, &job, &err), CUZK_STATUS_NOT_RUNNING, &err, "submit after shutdown");

  free(c1);
  printf("c-ffi (%s): %d passed, %d failed\n", full ? "full" : "errors", passed, failed);
  return failed ? 1 : 0;
}
