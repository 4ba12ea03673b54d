// A stand-in for a library linked beside cuzk that embeds blst and sppark of its own, as
// filecoin-ffi's libfilcrypto.a does (Curio and Lotus link it): the same symbol names as the
// copies inside libcuzk.a, other definitions. Linked with a libcuzk.a whose symbols are not made
// local, the link fails ("multiple definition"), or one library's calls reach the other's code.
#include <cstddef>
#include <cstdint>

extern "C" {
typedef struct {
  uint64_t l[4];
} blst_scalar;

// blst's name; not blst's arithmetic (+1000 tells the two apart).
void blst_scalar_from_uint64(blst_scalar* ret, const uint64_t a[4]) {
  for (int i = 0; i < 4; i++) ret->l[i] = a[i] + 1000;
}
}

// sppark's names (util/gpu_t.cuh, all_gpus.cpp): the mangled names ignore the return type.
size_t ngpus() { return 40; }
int select_gpu(int id) { return id + 2; }

// What the other library computes with its own copies: 1001 + 40 + 5.
extern "C" uint64_t other_lib_check(void) {
  blst_scalar s;
  const uint64_t a[4] = {1, 2, 3, 4};
  blst_scalar_from_uint64(&s, a);
  return s.l[0] + ngpus() + (uint64_t)select_gpu(3);
}
