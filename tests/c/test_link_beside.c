/*
 * cuzk's static library linked into one program beside another library that embeds blst and
 * sppark of its own (tests/c/other_lib.cc, a stand-in for filecoin-ffi's libfilcrypto.a): the
 * program links, each library reaches its own code, and a real proof goes through cuzk
 * (test_ffi.c's checks, run from here). The hazard: duplicate symbols fail the link, or one
 * library's calls land in the other's copy of blst or sppark.
 */
#define _GNU_SOURCE /* test_ffi.c's memmem */
#include <stdint.h>
#include <stdio.h>

uint64_t other_lib_check(void);

#define main test_ffi_main
#include "test_ffi.c"
#undef main

int main(int argc, char **argv) {
  uint64_t got = other_lib_check();
  if (got != 1001 + 40 + 5) {
    fprintf(stderr, "FAIL: the other library reached code that is not its own (%llu)\n",
            (unsigned long long)got);
    return 1;
  }
  fprintf(stderr, "test_link_beside: the other library uses its own blst and sppark symbols\n");
  return test_ffi_main(argc, argv);
}
