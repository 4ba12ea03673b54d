/*
 * Helpers shared by the C ABI tests: a CHECK macro that counts, status checks that free the
 * error, file reading, and the miner id -> prover id rule.
 */
#ifndef CUZK_TEST_COMMON_H
#define CUZK_TEST_COMMON_H

#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cuzk.h"

/* Counted from the callbacks' thread too. */
static atomic_int passed, failed;

#define CHECK(cond, ...)                                                       \
  do {                                                                         \
    if (cond) {                                                                \
      passed++;                                                                \
    } else {                                                                   \
      failed++;                                                                \
      fprintf(stderr, "FAIL %s:%d: ", __FILE__, __LINE__);                     \
      fprintf(stderr, __VA_ARGS__);                                            \
      fprintf(stderr, "\n");                                                   \
    }                                                                          \
  } while (0)

/* Checks a status and that the error carries it and a non-empty message, then frees it. */
static inline void expect(cuzk_status got, cuzk_status want, cuzk_error *err, const char *what) {
  CHECK(got == want, "%s: status %s, want %s (%s)", what, cuzk_status_name(got),
        cuzk_status_name(want), err->message ? err->message : "");
  if (want != CUZK_STATUS_OK) {
    CHECK(err->status == want, "%s: error struct has status %d", what, (int)err->status);
    CHECK(err->message != NULL && strlen(err->message) > 0, "%s: empty message", what);
  }
  cuzk_error_free(err);
  CHECK(err->message == NULL && err->status == CUZK_STATUS_OK, "%s: error_free must zero", what);
  cuzk_error_free(err); /* twice is harmless */
}

static inline unsigned char *read_file(const char *path, size_t *len) {
  FILE *f = fopen(path, "rb");
  if (!f) return NULL;
  fseek(f, 0, SEEK_END);
  long n = ftell(f);
  fseek(f, 0, SEEK_SET);
  unsigned char *buf = malloc((size_t)n);
  if (buf && fread(buf, 1, (size_t)n, f) != (size_t)n) {
    free(buf);
    buf = NULL;
  }
  fclose(f);
  *len = (size_t)n;
  return buf;
}

static inline void prover_id_from_miner(uint64_t miner, uint8_t out[32]) {
  memset(out, 0, 32);
  int i = 0;
  do {
    uint8_t b = miner & 0x7f;
    miner >>= 7;
    out[i++] = miner ? (uint8_t)(b | 0x80) : b;
  } while (miner);
}


/* The fixture the tests use, from CUZK_TEST_C1 / CUZK_TEST_SECTOR / CUZK_TEST_MINER. */
struct fixture {
  unsigned char *c1;
  size_t c1_len;
  uint64_t sector;
  uint8_t prover[32];
};

static inline int load_fixture(struct fixture *f) {
  const char *c1_path = getenv("CUZK_TEST_C1");
  const char *sector_s = getenv("CUZK_TEST_SECTOR");
  const char *miner_s = getenv("CUZK_TEST_MINER");
  if (!c1_path || !sector_s || !miner_s) {
    fprintf(stderr, "set CUZK_TEST_C1, CUZK_TEST_SECTOR, CUZK_TEST_MINER\n");
    return 0;
  }
  f->c1 = read_file(c1_path, &f->c1_len);
  if (!f->c1) {
    fprintf(stderr, "cannot read %s\n", c1_path);
    return 0;
  }
  f->sector = strtoull(sector_s, NULL, 10);
  prover_id_from_miner(strtoull(miner_s, NULL, 10), f->prover);
  return 1;
}

#endif
