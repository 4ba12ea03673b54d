// Device memory, events and errors for cuzk's CUDA code: owning types (a buffer or event is
// released by its owner's destructor, so no object keeps a list of what to free), and the one
// error convention of kernels/cuzk_kernels.h.

#ifndef CUZK_DEVICE_CUH
#define CUZK_DEVICE_CUH

#include <cuda_runtime.h>

#include <algorithm>
#include <atomic>
#include <cstdio>
#include <string>
#include <exception>
#include <new>
#include <stdexcept>

#include <util/exception.cuh>
#include <util/gpu_t.cuh>

#include "errors.cuh"

// Device memory the prover's buffers hold on each device (by CUDA ordinal), its peak, and a
// cap (cuzk_gpu_set_mem_cap): an allocation past the cap fails as cudaErrorMemoryAllocation
// does, as if the card had no more memory. One instance for the whole library (an inline
// function's static).
struct cuzk_mem_account_t {
    std::atomic<size_t> used{0}, peak{0}, cap{SIZE_MAX};
};
#define CUZK_MAX_DEVICES 64
inline cuzk_mem_account_t& cuzk_mem_account(int dev)
{
    static cuzk_mem_account_t acc[CUZK_MAX_DEVICES];
    return acc[(unsigned)dev % CUZK_MAX_DEVICES];
}

// Charges `bytes` to device `dev`, or throws the out-of-memory error past its cap.
inline void cuzk_mem_charge(int dev, size_t bytes)
{
    cuzk_mem_account_t& a = cuzk_mem_account(dev);
    size_t now = a.used.fetch_add(bytes) + bytes;
    if (now > a.cap.load()) {
        a.used.fetch_sub(bytes);
        throw cuda_error{-(int)cudaErrorMemoryAllocation,
                         std::string("cudaMalloc of ") + std::to_string(bytes >> 20) +
                             " MiB: over the device memory cap (CUZK_GPU_MEM_LIMIT): " +
                             cudaGetErrorString(cudaErrorMemoryAllocation)};
    }
    size_t p = a.peak.load();
    while (now > p && !a.peak.compare_exchange_weak(p, now)) {}
}

inline void cuzk_mem_uncharge(int dev, size_t bytes) { cuzk_mem_account(dev).used.fetch_sub(bytes); }

// A device array that owns its memory: empty, or `capacity()` elements from cudaMalloc on the
// device current when it grew, freed on destruction and charged to that device's account
// (above). Movable, not copyable.
template<class T>
class dev_vec_t {
    T* ptr_ = nullptr;
    size_t cap_ = 0;
    int dev_ = 0;

public:
    dev_vec_t() = default;
    explicit dev_vec_t(size_t n) { reserve(n, true); }
    ~dev_vec_t() { release(); }
    dev_vec_t(const dev_vec_t&) = delete;
    dev_vec_t& operator=(const dev_vec_t&) = delete;
    dev_vec_t(dev_vec_t&& o) noexcept : ptr_(o.ptr_), cap_(o.cap_), dev_(o.dev_)
    {
        o.ptr_ = nullptr;
        o.cap_ = 0;
    }
    dev_vec_t& operator=(dev_vec_t&& o) noexcept
    {
        if (this != &o) {
            release();
            std::swap(ptr_, o.ptr_);
            std::swap(cap_, o.cap_);
            std::swap(dev_, o.dev_);
        }
        return *this;
    }

    // Frees the memory (cudaFree waits for the device's work).
    void release()
    {
        if (ptr_) {
            (void)cudaFree(ptr_);
            cuzk_mem_uncharge(dev_, bytes());
        }
        ptr_ = nullptr;
        cap_ = 0;
    }
    // Room for n elements, with a quarter to spare unless `exact`. Growing frees the old array
    // first and keeps none of its contents. A zero-length array still gets an address.
    void reserve(size_t n, bool exact = false)
    {
        if (ptr_ && n <= cap_)
            return;
        release();
        size_t want = std::max<size_t>(exact ? n : n + n / 4, 1);
        CUDA_OK(cudaGetDevice(&dev_));
        cuzk_mem_charge(dev_, want * sizeof(T));
        cudaError_t e = cudaMalloc((void**)&ptr_, want * sizeof(T));
        if (e != cudaSuccess) {
            ptr_ = nullptr;
            cuzk_mem_uncharge(dev_, want * sizeof(T));
            CUDA_OK(e);
        }
        cap_ = want;
    }
    // Makes a device array of the host's n elements (n may be 0).
    void upload(const T* src, size_t n)
    {
        reserve(n, true);
        if (n)
            CUDA_OK(cudaMemcpy(ptr_, src, n * sizeof(T), cudaMemcpyHostToDevice));
    }

    T* get() const { return ptr_; }
    operator T*() const { return ptr_; }
    size_t capacity() const { return cap_; }
    size_t bytes() const { return cap_ * sizeof(T); }
};

// An event that records time (sppark's event_t does not), destroyed with its owner.
class timed_event_t {
    cudaEvent_t ev_ = nullptr;

public:
    timed_event_t() { CUDA_OK(cudaEventCreate(&ev_)); }
    ~timed_event_t()
    {
        if (ev_)
            (void)cudaEventDestroy(ev_);
    }
    timed_event_t(const timed_event_t&) = delete;
    timed_event_t& operator=(const timed_event_t&) = delete;
    operator cudaEvent_t() const { return ev_; }
};

// Puts the calling thread's current device back on scope exit (the entry points select the
// handle's GPU; the caller's choice is left as it was).
class device_scope_t {
    int prev_ = 0;

public:
    device_scope_t() { (void)cudaGetDevice(&prev_); }
    ~device_scope_t() { (void)cudaSetDevice(prev_); }
    device_scope_t(const device_scope_t&) = delete;
    device_scope_t& operator=(const device_scope_t&) = delete;
};

// sppark's index of the device with CUDA ordinal `ordinal`; -1 where sppark does not drive it.
static inline int sppark_index(int ordinal)
{
    for (size_t i = 0; i < ngpus(); i++)
        if (select_gpu((int)i).cid() == ordinal)
            return (int)i;
    return -1;
}

// A check of a kernel's output that failed (CUZK_KERNELS_EWRONG).
struct cuzk_wrong_output : std::runtime_error {
    using std::runtime_error::runtime_error;
};

// The code and message of the exception being handled: sppark's CUDA_OK throws a cuda_error
// whose code is the negated cudaError_t.
static inline int cuzk_caught(char* err, size_t len)
{
    try {
        throw;
    } catch (const cuda_error& e) {
        (void)cudaGetLastError();
        return cuzk_fail(err, len, e.code() < 0 ? -e.code() : CUZK_KERNELS_EHOST, e.what());
    } catch (const cuzk_wrong_output& e) {
        return cuzk_fail(err, len, CUZK_KERNELS_EWRONG, e.what());
    } catch (const std::bad_alloc&) {
        return cuzk_fail(err, len, CUZK_KERNELS_EHOST, "out of host memory");
    } catch (const std::exception& e) {
        return cuzk_fail(err, len, CUZK_KERNELS_EHOST, e.what());
    } catch (...) {
        return cuzk_fail(err, len, CUZK_KERNELS_EHOST, "unknown C++ exception");
    }
}

// `catch (...) { return cuzk_caught(err, errlen); }` closes every entry point's try block.
#define CUZK_CATCH_RETURN                     \
    catch (...)                               \
    {                                         \
        return cuzk_caught(err, errlen);      \
    }

#endif  // CUZK_DEVICE_CUH
