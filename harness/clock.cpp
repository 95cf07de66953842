// The compiled clock (issue 48 items 4 and 5): the loop of every event-timed method (GPU MODE's batches, and
// cold, queued, warm and graph call by call), its events, its dirty flush and the key that decides a block's
// values, in C++, out of reach of the submission's Python. harness/clock.py
// builds it (g++, the parent, before any worker starts) and reads its records; docs/methodology.md ("The
// compiled clock") says what it closes and what it does not.
//
// No CUDA headers and no link to libcudart: the runtime's entry points are resolved with dlsym from the
// copy torch loaded. -DCLOCK_CUDA_HEADERS includes <cuda_runtime_api.h> and checks at compile time that
// the signatures called through here are the runtime's (nvcc; tests/test_clock.py).
//
// Python API (module _nvfp4_clock):
//   sha256(msg), hmac_sha256(key, msg) -> 32 bytes                 (checked against hashlib)
//   bind(key_fd, out_fd, loop, cuda, flush_ptr=0, flush_bytes=0, clean=None, runtime=None) -> str
//       once: the 32-byte key read from key_fd into static memory (key_fd closed), out_fd kept for the
//       records, loop's code object kept (the batch's calls are Python bytecode, as GPU MODE makes them),
//       the CUDA runtime resolved where cuda, else the host clock (CLOCK_MONOTONIC) stands in for events
//   draw_key(tag, untimed=None) -> int   calls untimed() (a nested clock call refused), synchronises,
//       draws 63 random bits with getrandom(2) and writes one record {"event":"key","tag","key","refused"}
//   time_batches(fn, groups, flush, capture, stream=0, tag=0, sample=None, method="gpumode", poison=None,
//                graph=None) -> (results, figures, sampled)
//       one timed pass of `method` (every method but gpumode: batches of one call; graph: a tuple of the
//       load, replay and output-copy callables); one record
//       {"event":"clock","tag","method","calls","times_us","span_us","wall_us","issue_us","refused","error"}
//       (issue_us: per batch, the host µs its calls took to return: the loop, or graph's replay)
//   state() -> dict (seq, refused, bound, runtime); never the key
//
// Every record is "SEQ MAC JSON\n" (harness/channel.py's line), written with write(2) on out_fd.

#define PY_SSIZE_T_CLEAN
#include <Python.h>

#include <cerrno>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

#include <dlfcn.h>
#include <fcntl.h>
#include <link.h>
#include <sys/random.h>
#include <time.h>
#include <unistd.h>

#ifdef CLOCK_CUDA_HEADERS
#include <type_traits>
#include <cuda_runtime_api.h>
#endif

namespace {

// ------------------------------------------------------------------------------------------------
// SHA-256, FIPS 180-4. The constants are derived here from their definition (section 4.2.2: the
// first 32 bits of the fractional parts of the cube roots of the first 64 primes; section 5.3.3:
// of the square roots of the first 8), in exact integer arithmetic, not typed in.

uint32_t K256[64];
uint32_t H256[8];

// floor(root(p) * 2^32) mod 2^32 for root = square (power 2) or cube (power 3): the largest x with
// x^power <= p * 2^(32 * power), found by bisection; p < 2^9, so x < 2^36 and x^3 < 2^117.
uint32_t root_fraction(uint64_t p, int power) {
    using u128 = unsigned __int128;
    const u128 target = static_cast<u128>(p) << (32 * power);
    uint64_t lo = 0, hi = uint64_t(1) << 36;
    while (hi - lo > 1) {
        const uint64_t mid = lo + (hi - lo) / 2;
        u128 v = static_cast<u128>(mid) * mid;
        if (power == 3) v *= mid;
        if (v <= target) lo = mid; else hi = mid;
    }
    return static_cast<uint32_t>(lo);  // the low 32 bits: the fractional part's first 32 bits
}

void derive_constants() {
    uint64_t primes[64];
    int n = 0;
    for (uint64_t c = 2; n < 64; ++c) {
        bool prime = true;
        for (int i = 0; i < n && primes[i] * primes[i] <= c; ++i)
            if (c % primes[i] == 0) { prime = false; break; }
        if (prime) primes[n++] = c;
    }
    for (int i = 0; i < 64; ++i) K256[i] = root_fraction(primes[i], 3);
    for (int i = 0; i < 8; ++i) H256[i] = root_fraction(primes[i], 2);
}

inline uint32_t rotr(uint32_t x, int n) { return (x >> n) | (x << (32 - n)); }

struct Sha256 {
    uint32_t h[8];
    uint8_t block[64];
    size_t used = 0;     // bytes waiting in block
    uint64_t total = 0;  // bytes hashed so far

    Sha256() { std::memcpy(h, H256, sizeof h); }

    void compress(const uint8_t* m) {  // section 6.2.2
        uint32_t w[64];
        for (int t = 0; t < 16; ++t)
            w[t] = (uint32_t(m[4 * t]) << 24) | (uint32_t(m[4 * t + 1]) << 16) | (uint32_t(m[4 * t + 2]) << 8) | m[4 * t + 3];
        for (int t = 16; t < 64; ++t) {
            const uint32_t s0 = rotr(w[t - 15], 7) ^ rotr(w[t - 15], 18) ^ (w[t - 15] >> 3);    // sigma0
            const uint32_t s1 = rotr(w[t - 2], 17) ^ rotr(w[t - 2], 19) ^ (w[t - 2] >> 10);     // sigma1
            w[t] = s1 + w[t - 7] + s0 + w[t - 16];
        }
        uint32_t a = h[0], b = h[1], c = h[2], d = h[3], e = h[4], f = h[5], g = h[6], hh = h[7];
        for (int t = 0; t < 64; ++t) {
            const uint32_t S1 = rotr(e, 6) ^ rotr(e, 11) ^ rotr(e, 25);  // Sigma1
            const uint32_t ch = (e & f) ^ (~e & g);
            const uint32_t t1 = hh + S1 + ch + K256[t] + w[t];
            const uint32_t S0 = rotr(a, 2) ^ rotr(a, 13) ^ rotr(a, 22);  // Sigma0
            const uint32_t maj = (a & b) ^ (a & c) ^ (b & c);
            const uint32_t t2 = S0 + maj;
            hh = g; g = f; f = e; e = d + t1; d = c; c = b; b = a; a = t1 + t2;
        }
        h[0] += a; h[1] += b; h[2] += c; h[3] += d; h[4] += e; h[5] += f; h[6] += g; h[7] += hh;
    }

    void update(const void* data, size_t n) {
        const uint8_t* p = static_cast<const uint8_t*>(data);
        total += n;
        while (n) {
            const size_t take = (64 - used < n) ? 64 - used : n;
            std::memcpy(block + used, p, take);
            used += take; p += take; n -= take;
            if (used == 64) { compress(block); used = 0; }
        }
    }

    void final(uint8_t out[32]) {  // padding, section 5.1.1: 1 bit, zeros, the length in bits (64, big-endian)
        const uint64_t bits = total * 8;
        block[used++] = 0x80;
        if (used > 56) {
            std::memset(block + used, 0, 64 - used);
            compress(block);
            used = 0;
        }
        std::memset(block + used, 0, 56 - used);
        for (int i = 0; i < 8; ++i) block[56 + i] = uint8_t(bits >> (56 - 8 * i));
        compress(block);
        used = 0;
        for (int i = 0; i < 8; ++i)
            for (int j = 0; j < 4; ++j) out[4 * i + j] = uint8_t(h[i] >> (24 - 8 * j));
    }
};

// HMAC, RFC 2104, with B = 64 and L = 32: H(K0 ^ opad || H(K0 ^ ipad || text)).
struct Hmac {
    Sha256 inner, outer;

    Hmac(const uint8_t* key, size_t len) {
        uint8_t k0[64] = {0};
        if (len > 64) {  // a key longer than B is hashed first
            Sha256 kh;
            kh.update(key, len);
            kh.final(k0);
        } else if (len) {
            std::memcpy(k0, key, len);
        }
        uint8_t pad[64];
        for (int i = 0; i < 64; ++i) pad[i] = k0[i] ^ 0x36;
        inner.update(pad, 64);
        for (int i = 0; i < 64; ++i) pad[i] = k0[i] ^ 0x5c;
        outer.update(pad, 64);
        std::memset(k0, 0, sizeof k0);
        std::memset(pad, 0, sizeof pad);
    }

    void update(const void* data, size_t n) { inner.update(data, n); }

    void final(uint8_t out[32]) {
        uint8_t digest[32];
        inner.final(digest);
        outer.update(digest, 32);
        outer.final(out);
    }
};

PyObject* py_sha256(PyObject*, PyObject* args) {
    Py_buffer msg;
    if (!PyArg_ParseTuple(args, "y*:sha256", &msg)) return nullptr;
    Sha256 s;
    s.update(msg.buf, static_cast<size_t>(msg.len));
    PyBuffer_Release(&msg);
    uint8_t out[32];
    s.final(out);
    return PyBytes_FromStringAndSize(reinterpret_cast<const char*>(out), 32);
}

PyObject* py_hmac_sha256(PyObject*, PyObject* args) {
    Py_buffer key, msg;
    if (!PyArg_ParseTuple(args, "y*y*:hmac_sha256", &key, &msg)) return nullptr;
    Hmac m(static_cast<const uint8_t*>(key.buf), static_cast<size_t>(key.len));
    m.update(msg.buf, static_cast<size_t>(msg.len));
    PyBuffer_Release(&key);
    PyBuffer_Release(&msg);
    uint8_t out[32];
    m.final(out);
    return PyBytes_FromStringAndSize(reinterpret_cast<const char*>(out), 32);
}

// ------------------------------------------------------------------------------------------------
// The clock's state: C static memory only. Nothing here is a Python object, so no frame, gc walk or
// attribute write reaches it; native code (ctypes) can (docs/methodology.md says so).

std::string hex(const uint8_t* p, size_t n) {
    static const char digits[] = "0123456789abcdef";
    std::string s(2 * n, '0');
    for (size_t i = 0; i < n; ++i) { s[2 * i] = digits[p[i] >> 4]; s[2 * i + 1] = digits[p[i] & 15]; }
    return s;
}

uint8_t g_key[32];
bool g_bound = false;
int g_out_fd = -1;
uint64_t g_seq = 0;         // the next record's sequence number (channel.Receiver's order check)
uint64_t g_refused = 0;     // calls refused since bind; every record carries the count
bool g_busy = false;        // inside time_batches or draw_key's untimed call: any clock call is refused
PyObject* g_loop = nullptr; // a function made from the bound loop's code object, with empty globals
PyObject* g_clean = nullptr;  // the read-only flush (a Python callable), or nullptr
void* g_flush_ptr = nullptr;  // the dirty flush: this many bytes zeroed on the timed stream
size_t g_flush_bytes = 0;

// The CUDA runtime's entry points, by the signatures of cuda_runtime_api.h (cudaError_t is an int-sized
// enum, cudaEvent_t and cudaStream_t are pointers; CLOCK_CUDA_HEADERS checks this at compile time).
using event_create_fn = int (*)(void**, unsigned int);            // cudaEventCreateWithFlags
using event_record_fn = int (*)(void*, void*);                    // cudaEventRecord(event, stream)
using event_elapsed_fn = int (*)(float*, void*, void*);           // cudaEventElapsedTime(ms, start, end)
using device_sync_fn = int (*)();                                 // cudaDeviceSynchronize
using memset_async_fn = int (*)(void*, int, size_t, void*);       // cudaMemsetAsync(ptr, value, bytes, stream)
using error_name_fn = const char* (*)(int);                       // cudaGetErrorName

#ifdef CLOCK_CUDA_HEADERS
static_assert(sizeof(cudaError_t) == sizeof(int), "cudaError_t is not int-sized");
static_assert(std::is_pointer<cudaEvent_t>::value && std::is_pointer<cudaStream_t>::value, "handles are pointers");
static_assert(std::is_same<decltype(&::cudaEventCreateWithFlags), cudaError_t (CUDARTAPI*)(cudaEvent_t*, unsigned int)>::value,
              "cudaEventCreateWithFlags");
static_assert(std::is_same<decltype(&::cudaEventRecord), cudaError_t (CUDARTAPI*)(cudaEvent_t, cudaStream_t)>::value,
              "cudaEventRecord");
static_assert(std::is_same<decltype(&::cudaEventElapsedTime), cudaError_t (CUDARTAPI*)(float*, cudaEvent_t, cudaEvent_t)>::value,
              "cudaEventElapsedTime");
static_assert(std::is_same<decltype(&::cudaDeviceSynchronize), cudaError_t (CUDARTAPI*)(void)>::value,
              "cudaDeviceSynchronize");
static_assert(std::is_same<decltype(&::cudaMemsetAsync), cudaError_t (CUDARTAPI*)(void*, int, size_t, cudaStream_t)>::value,
              "cudaMemsetAsync");
static_assert(std::is_same<decltype(&::cudaGetErrorName), const char* (CUDARTAPI*)(cudaError_t)>::value,
              "cudaGetErrorName");
#endif

double now_us() {  // CLOCK_MONOTONIC: what time.perf_counter reads on Linux
    timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec * 1e6 + ts.tv_nsec * 1e-3;
}

// The host clock standing in for the runtime on a machine without CUDA: an event holds the time it was
// recorded, synchronising and flushing do nothing (the calls ran on the host, done when they returned).
// NOTE: so CI runs the very protocol a GPU run does (bind, key, loop, records, the parent's checks).
int host_create(void** e, unsigned int) {
    *e = new double(-1.0);
    return 0;
}
int host_record(void* e, void*) {
    *static_cast<double*>(e) = now_us();
    return 0;
}
int host_elapsed(float* ms, void* a, void* b) {
    const double x = *static_cast<double*>(a), y = *static_cast<double*>(b);
    if (x < 0 || y < 0) return 600;  // cudaErrorNotReady's number: an event never recorded
    *ms = static_cast<float>((y - x) * 1e-3);
    return 0;
}
int host_sync() { return 0; }
int host_memset(void*, int, size_t, void*) { return 0; }
const char* host_name(int e) { return e == 600 ? "an event never recorded" : "host clock error"; }

struct Runtime {
    event_create_fn create = nullptr;
    event_record_fn record = nullptr;
    event_elapsed_fn elapsed = nullptr;
    device_sync_fn sync = nullptr;
    memset_async_fn memset = nullptr;
    error_name_fn name = nullptr;
    std::string from;
} rt;

std::vector<void*> g_events;  // created once, reused by every block (4 a batch)

int find_loaded_cudart(struct dl_phdr_info* info, size_t, void* data) {
    if (info->dlpi_name && std::strstr(info->dlpi_name, "libcudart.so")) {
        *static_cast<std::string*>(data) = info->dlpi_name;
        return 1;
    }
    return 0;
}

// The runtime torch loaded (found among the process's libraries and opened with RTLD_NOLOAD, so no
// second copy is loaded), or the library at ``path``. Empty on success, else why not.
std::string resolve_runtime(const char* path) {
    void* lib = nullptr;
    if (path) {
        lib = dlopen(path, RTLD_NOW | RTLD_LOCAL);
        rt.from = path;
    } else {
        std::string loaded;
        dl_iterate_phdr(find_loaded_cudart, &loaded);
        if (!loaded.empty()) {
            lib = dlopen(loaded.c_str(), RTLD_NOW | RTLD_NOLOAD);
            rt.from = loaded;
        } else {
            // NOTE: a torch with the runtime linked in statically: a copy of our own, which shares the
            // device's primary context with torch's through the driver (events and the legacy default
            // stream are the driver's), said as such in what bind returns
            for (const char* name : {"libcudart.so.13", "libcudart.so.12", "libcudart.so"}) {
                lib = dlopen(name, RTLD_NOW | RTLD_LOCAL);
                if (lib) { rt.from = std::string(name) + " (loaded by the clock: torch's own runtime was not found)"; break; }
            }
            if (!lib) return "no libcudart is loaded in this process and none could be opened (import torch and "
                             "initialise CUDA first)";
        }
    }
    if (!lib) return std::string("dlopen failed: ") + dlerror();
    rt.create = reinterpret_cast<event_create_fn>(dlsym(lib, "cudaEventCreateWithFlags"));
    rt.record = reinterpret_cast<event_record_fn>(dlsym(lib, "cudaEventRecord"));
    rt.elapsed = reinterpret_cast<event_elapsed_fn>(dlsym(lib, "cudaEventElapsedTime"));
    rt.sync = reinterpret_cast<device_sync_fn>(dlsym(lib, "cudaDeviceSynchronize"));
    rt.memset = reinterpret_cast<memset_async_fn>(dlsym(lib, "cudaMemsetAsync"));
    rt.name = reinterpret_cast<error_name_fn>(dlsym(lib, "cudaGetErrorName"));
    if (!rt.create || !rt.record || !rt.elapsed || !rt.sync || !rt.memset || !rt.name)
        return "a CUDA runtime entry point is missing in " + rt.from;
    return "";
}

void use_host_clock() {
    rt.create = host_create;
    rt.record = host_record;
    rt.elapsed = host_elapsed;
    rt.sync = host_sync;
    rt.memset = host_memset;
    rt.name = host_name;
    rt.from = "the host clock (CLOCK_MONOTONIC): no CUDA";
}

void refuse(const char* why) {
    ++g_refused;
    PyErr_Format(PyExc_RuntimeError, "%s (refused, and counted in the clock's next record)", why);
}

PyObject* py_bind(PyObject*, PyObject* args, PyObject* kwargs) {
    static const char* names[] = {"key_fd", "out_fd", "loop", "cuda", "flush_ptr", "flush_bytes", "clean", "runtime",
                                  nullptr};
    int key_fd, out_fd, cuda;
    PyObject *loop, *clean = Py_None;
    unsigned long long flush_ptr = 0, flush_bytes = 0;
    const char* path = nullptr;
    if (!PyArg_ParseTupleAndKeywords(args, kwargs, "iiOp|KKOz:bind", const_cast<char**>(names), &key_fd, &out_fd, &loop,
                                     &cuda, &flush_ptr, &flush_bytes, &clean, &path))
        return nullptr;
    if (g_bound || g_busy) {
        refuse("the clock is bound already");
        return nullptr;
    }
    if (!PyFunction_Check(loop)) {
        PyErr_SetString(PyExc_TypeError, "loop must be a Python function");
        return nullptr;
    }
    if (clean != Py_None && !PyCallable_Check(clean)) {
        PyErr_SetString(PyExc_TypeError, "clean must be callable or None");
        return nullptr;
    }
    if (fcntl(out_fd, F_GETFD) < 0) {
        PyErr_SetFromErrno(PyExc_OSError);
        return nullptr;
    }
    size_t got = 0;
    while (got < sizeof g_key) {  // the key straight into static memory: it is never a Python object
        const ssize_t n = read(key_fd, g_key + got, sizeof g_key - got);
        if (n < 0 && errno == EINTR) continue;
        if (n <= 0) break;
        got += static_cast<size_t>(n);
    }
    close(key_fd);
    if (got != sizeof g_key) {
        std::memset(g_key, 0, sizeof g_key);
        PyErr_Format(PyExc_RuntimeError, "the key descriptor gave %zu bytes, not %zu", got, sizeof g_key);
        return nullptr;
    }
    if (cuda) {
        const std::string why = resolve_runtime(path);
        if (!why.empty()) {
            std::memset(g_key, 0, sizeof g_key);
            PyErr_SetString(PyExc_RuntimeError, why.c_str());
            return nullptr;
        }
    } else {
        use_host_clock();
    }
    // NOTE: the loop's code object only, in a function of our own with empty globals: nothing a
    // submission rebinds later (the function's __code__, its module's names) changes what runs here
    PyObject* globals = PyDict_New();
    if (!globals) return nullptr;
    g_loop = PyFunction_New(PyFunction_GET_CODE(loop), globals);
    Py_DECREF(globals);
    if (!g_loop) return nullptr;
    if (clean != Py_None) {
        Py_INCREF(clean);
        g_clean = clean;
    }
    g_flush_ptr = reinterpret_cast<void*>(static_cast<uintptr_t>(flush_ptr));
    g_flush_bytes = static_cast<size_t>(flush_bytes);
    g_out_fd = out_fd;
    g_bound = true;
    return PyUnicode_FromString(rt.from.c_str());
}

void append_number(std::string& s, double v) {
    char buf[40];
    std::snprintf(buf, sizeof buf, "%.17g", v);
    s += buf;
}

void append_list(std::string& s, const char* key, const std::vector<double>& values, const std::vector<bool>* ok = nullptr) {
    s += ",\"";
    s += key;
    s += "\":[";
    for (size_t i = 0; i < values.size(); ++i) {
        if (i) s += ',';
        if (ok && !(*ok)[i]) s += "null"; else append_number(s, values[i]);
    }
    s += ']';
}

// One record: "SEQ MAC PAYLOAD\n", MAC = HMAC-SHA256(key, "SEQ " + PAYLOAD) in hex: the line format of
// harness/channel.py, so the parent reads it with a channel.Receiver under the clock's key.
bool emit(const std::string& payload) {
    const std::string seq = std::to_string(g_seq);
    Hmac m(g_key, sizeof g_key);
    m.update(seq.data(), seq.size());
    m.update(" ", 1);
    m.update(payload.data(), payload.size());
    uint8_t mac[32];
    m.final(mac);
    const std::string line = seq + " " + hex(mac, 32) + " " + payload + "\n";
    ++g_seq;
    size_t done = 0;
    while (done < line.size()) {
        const ssize_t n = write(g_out_fd, line.data() + done, line.size() - done);
        if (n < 0 && errno == EINTR) continue;
        if (n <= 0) return false;
        done += static_cast<size_t>(n);
    }
    return true;
}

void json_string(std::string& s, const char* text) {  // error names and fixed words only: escape what JSON needs
    s += '"';
    for (const char* p = text; *p; ++p) {
        const unsigned char c = static_cast<unsigned char>(*p);
        if (c == '"' || c == '\\') { s += '\\'; s += char(c); }
        else if (c < 0x20) s += ' ';
        else s += char(c);
    }
    s += '"';
}

int device_sync() {
    int rc;
    Py_BEGIN_ALLOW_THREADS  // as torch.cuda.synchronize does
    rc = rt.sync();
    Py_END_ALLOW_THREADS
    return rc;
}

// The key that decides a block's values (harness.judge.mask_pool_signs): drawn only after the untimed
// call before the block has returned and the device has drained, so nothing that call computed can be
// of the values the block times. The parent takes it from this record alone.
PyObject* py_draw_key(PyObject*, PyObject* args, PyObject* kwargs) {
    static const char* names[] = {"tag", "untimed", nullptr};
    long long tag;
    PyObject* untimed = Py_None;
    if (!PyArg_ParseTupleAndKeywords(args, kwargs, "L|O:draw_key", const_cast<char**>(names), &tag, &untimed))
        return nullptr;
    if (!g_bound) {
        PyErr_SetString(PyExc_RuntimeError, "bind() first");
        return nullptr;
    }
    if (g_busy) {  // a submission drawing the block's key from inside its untimed (or a timed) call
        refuse("a key drawn while the clock was running a call");
        return nullptr;
    }
    if (untimed != Py_None) {
        // NOTE: the untimed call runs from here, so a key drawn inside it is refused and counted: a
        // submission cannot hold the block's key before this call has returned
        g_busy = true;
        PyObject* r = PyObject_CallNoArgs(untimed);
        g_busy = false;
        if (!r) return nullptr;
        Py_DECREF(r);
    }
    const int rc = device_sync();
    if (rc != 0) {
        PyErr_Format(PyExc_RuntimeError, "cudaDeviceSynchronize: %s", rt.name(rc));
        return nullptr;
    }
    uint64_t key = 0;
    size_t got = 0;
    while (got < sizeof key) {
        const ssize_t n = getrandom(reinterpret_cast<uint8_t*>(&key) + got, sizeof key - got, 0);
        if (n < 0 && errno == EINTR) continue;
        if (n < 0) { PyErr_SetFromErrno(PyExc_OSError); return nullptr; }
        got += static_cast<size_t>(n);
    }
    key &= (uint64_t(1) << 63) - 1;  // 63 bits: a non-negative int64 and a JSON integer everywhere
    std::string payload = "{\"event\":\"key\",\"tag\":" + std::to_string(tag) + ",\"key\":" + std::to_string(key) +
                          ",\"refused\":" + std::to_string(g_refused) + "}";
    if (!emit(payload)) {
        PyErr_SetFromErrno(PyExc_OSError);
        return nullptr;
    }
    return PyLong_FromUnsignedLongLong(key);
}

// The timing methods the clock runs (harness.timing's EVENT_METHODS): GPU MODE's batches and the per-call
// methods, whose passes are batches of one call.
enum class Method { gpumode, cold, queued, warm, graph };

bool method_named(const char* name, Method* out) {
    static const struct { const char* name; Method method; } known[] = {
        {"gpumode", Method::gpumode}, {"cold", Method::cold}, {"queued", Method::queued}, {"warm", Method::warm},
        {"graph", Method::graph}};
    for (const auto& k : known)
        if (std::strcmp(name, k.name) == 0) { *out = k.method; return true; }
    return false;
}

// One timed pass, as harness.timing.time_block runs each method in Python, per batch (per call for every
// method but gpumode):
//   what sets the call's starting state, before the wall clock: cold's flush then (below) the synchronise;
//     warm's untimed call on the same input and the poison of its outputs; graph's load of the input;
//   synchronise, wall clock starts;
//   gpumode and queued: record before, the flush (no synchronise between it and the calls, as GPU MODE);
//   record start, the calls (the bound loop: Python bytecode, as GPU MODE's eval makes them; graph: the
//     replay callable), record end (graph: then the output's copy), the captures, record captured;
//   [the telemetry sample, last batch]; synchronise; wall clock stops.
// The figures are computed after the last batch and sent in one record; graph's are the raw replay times.
PyObject* py_time_batches(PyObject*, PyObject* args, PyObject* kwargs) {
    static const char* names[] = {"fn", "groups", "flush", "capture", "stream", "tag", "sample", "method", "poison",
                                  "graph", nullptr};
    PyObject *fn, *groups_in, *capture, *sample = Py_None, *poison = Py_None, *graph = Py_None;
    const char* flush_kind;
    const char* method_name = "gpumode";
    unsigned long long stream_value = 0;
    long long tag = 0;
    if (!PyArg_ParseTupleAndKeywords(args, kwargs, "OOsO|KLOsOO:time_batches", const_cast<char**>(names), &fn,
                                     &groups_in, &flush_kind, &capture, &stream_value, &tag, &sample, &method_name,
                                     &poison, &graph))
        return nullptr;
    if (!g_bound) {
        PyErr_SetString(PyExc_RuntimeError, "bind() first");
        return nullptr;
    }
    if (g_busy) {  // the submission calling the clock from inside a call it makes
        refuse("the clock was asked to time while it was running a call");
        return nullptr;
    }
    Method method;
    if (!method_named(method_name, &method)) {
        PyErr_Format(PyExc_ValueError, "unknown method %s (gpumode, cold, queued, warm or graph)", method_name);
        return nullptr;
    }
    const bool dirty = std::strcmp(flush_kind, "dirty") == 0, clean = std::strcmp(flush_kind, "clean") == 0;
    if (!dirty && !clean && std::strcmp(flush_kind, "none") != 0) {
        PyErr_Format(PyExc_ValueError, "unknown flush %s (dirty, clean or none)", flush_kind);
        return nullptr;
    }
    if (clean && !g_clean) {
        PyErr_SetString(PyExc_ValueError, "a clean flush was asked for and none was bound");
        return nullptr;
    }
    if (poison != Py_None && !PyCallable_Check(poison)) {
        PyErr_SetString(PyExc_TypeError, "poison must be callable or None");
        return nullptr;
    }
    PyObject *load = nullptr, *replay = nullptr, *output = nullptr;  // graph's, borrowed from the tuple
    if (method == Method::graph) {
        if (!PyTuple_Check(graph) || PyTuple_GET_SIZE(graph) != 3 || !PyCallable_Check(PyTuple_GET_ITEM(graph, 0)) ||
            !PyCallable_Check(PyTuple_GET_ITEM(graph, 1)) || !PyCallable_Check(PyTuple_GET_ITEM(graph, 2))) {
            PyErr_SetString(PyExc_TypeError, "graph must be a tuple of three callables (load, replay, output)");
            return nullptr;
        }
        load = PyTuple_GET_ITEM(graph, 0);
        replay = PyTuple_GET_ITEM(graph, 1);
        output = PyTuple_GET_ITEM(graph, 2);
    }
    const bool flush_first = method == Method::gpumode || method == Method::queued;  // between before and start
    void* stream = reinterpret_cast<void*>(static_cast<uintptr_t>(stream_value));
    // NOTE: the batches are copied into fresh tuples first: a call that mutates the list it can reach
    // does not change what this loop calls next
    PyObject* outer = PySequence_Tuple(groups_in);
    if (!outer) return nullptr;
    const Py_ssize_t G = PyTuple_GET_SIZE(outer);
    PyObject* groups = PyTuple_New(G);
    if (!groups) { Py_DECREF(outer); return nullptr; }
    for (Py_ssize_t j = 0; j < G; ++j) {
        PyObject* t = PySequence_Tuple(PyTuple_GET_ITEM(outer, j));
        if (!t) { Py_DECREF(outer); Py_DECREF(groups); return nullptr; }
        PyTuple_SET_ITEM(groups, j, t);  // steals t
        const Py_ssize_t n = PyTuple_GET_SIZE(t);
        if (n == 0 || (method != Method::gpumode && n != 1)) {
            Py_DECREF(outer);
            Py_DECREF(groups);
            PyErr_Format(PyExc_ValueError, "a batch of %zd calls (%s)", n,
                         n == 0 ? "an empty batch" : "every method but gpumode times one call a batch");
            return nullptr;
        }
    }
    Py_DECREF(outer);
    if (G == 0) {
        Py_DECREF(groups);
        PyErr_SetString(PyExc_ValueError, "no batches");
        return nullptr;
    }
    int first_error = 0;
    const char* failed_step = nullptr;
    auto check = [&](int rc, const char* step) {
        if (rc != 0 && first_error == 0) { first_error = rc; failed_step = step; }
    };
    while (g_events.size() < static_cast<size_t>(4 * G)) {
        void* ev = nullptr;
        const int rc = rt.create(&ev, 0u);  // cudaEventDefault: timing on, as torch.cuda.Event(enable_timing=True)
        if (rc != 0) {
            Py_DECREF(groups);
            PyErr_Format(PyExc_RuntimeError, "cudaEventCreateWithFlags: %s", rt.name(rc));
            return nullptr;
        }
        g_events.push_back(ev);
    }
    PyObject* results = PyList_New(0);
    if (!results) { Py_DECREF(groups); return nullptr; }
    std::vector<double> wall(G, 0.0), times(G, 0.0), span(G, 0.0), calls(G, 0.0), issue(G, 0.0);
    std::vector<bool> ok(G, true);
    PyObject* sampled = nullptr;
    const char* python_step = nullptr;  // the step whose Python call raised: the pass ends there
    // A Python call of the pass; false (python_step set) where it raised.
    auto call = [&](PyObject* callable, PyObject* arg, const char* step) {
        PyObject* r = arg ? PyObject_CallOneArg(callable, arg) : PyObject_CallNoArgs(callable);
        if (!r) { python_step = step; return false; }
        Py_DECREF(r);
        return true;
    };
    auto flush = [&]() {
        if (dirty) {
            // NOTE: the flush in C: a flush reached through a Python reference could be made a no-op,
            // and every timed call after it would read a warm L2
            check(rt.memset(g_flush_ptr, 0, g_flush_bytes, stream), "cudaMemsetAsync");
            return true;
        }
        return !clean || call(g_clean, nullptr, "flush");
    };
    g_busy = true;
    for (Py_ssize_t j = 0; j < G && !python_step; ++j) {
        PyObject* group = PyTuple_GET_ITEM(groups, j);
        const Py_ssize_t n = PyTuple_GET_SIZE(group);
        PyObject* data = PyTuple_GET_ITEM(group, 0);  // the call's input set (per-call methods: the only one)
        void** ev = &g_events[4 * j];  // before, start, end, captured
        calls[j] = double(n);
        if (method == Method::cold && !flush()) break;
        if (method == Method::warm && (!call(fn, data, "untimed call") || (poison != Py_None && !call(poison, data, "poison"))))
            break;
        if (method == Method::graph && !call(load, data, "load")) break;
        check(device_sync(), "cudaDeviceSynchronize");
        const double t0 = now_us();
        if (flush_first) {
            check(rt.record(ev[0], stream), "cudaEventRecord");
            if (!flush()) break;
        }
        // NOTE: issue: the host time of the calls (from just before the start event's record to the last call's
        // return). Where it nears the batch's event time, the device had (nearly) no call queued ahead: the
        // figure is the host path's, not the kernels' (harness.timing.host_bound). Stamped before the record,
        // not after it: between the start event and a cold call's launch the device idles, so a host clock
        // read there would be timed.
        const double i0 = now_us();
        check(rt.record(ev[1], stream), "cudaEventRecord");
        const Py_ssize_t first = PyList_GET_SIZE(results);
        if (method == Method::graph) {
            if (!call(replay, nullptr, "replay")) break;
            issue[j] = now_us() - i0;
            check(rt.record(ev[2], stream), "cudaEventRecord");
            PyObject* out = PyObject_CallNoArgs(output);  // every replay writes the same buffers: a copy each
            if (!out) { python_step = "output copy"; break; }
            const int appended = PyList_Append(results, out);
            Py_DECREF(out);
            if (appended != 0) { python_step = "output copy"; break; }
        } else {
            PyObject* r = PyObject_CallFunctionObjArgs(g_loop, fn, group, results, nullptr);
            if (!r) { python_step = "call"; break; }
            Py_DECREF(r);
            issue[j] = now_us() - i0;
            check(rt.record(ev[2], stream), "cudaEventRecord");
            if (PyList_GET_SIZE(results) != first + n) {  // the list is reachable from the calls: C counts them
                python_step = "loop";
                PyErr_Format(PyExc_RuntimeError, "a batch of %zd calls left %zd results", n,
                             PyList_GET_SIZE(results) - first);
                break;
            }
        }
        for (Py_ssize_t i = first; i < first + n && !python_step; ++i)
            call(capture, PyList_GET_ITEM(results, i), "capture");
        if (python_step) break;
        check(rt.record(ev[3], stream), "cudaEventRecord");
        double extra = 0.0;
        if (j == G - 1 && sample != Py_None) {
            // NOTE: read while the last batch may still run on the device (as the Python loop did); its
            // host time (around a millisecond) is left out of the wall clock
            const double s0 = now_us();
            sampled = PyObject_CallNoArgs(sample);
            extra = now_us() - s0;
            if (!sampled) { python_step = "telemetry sample"; break; }
        }
        check(device_sync(), "cudaDeviceSynchronize");
        wall[j] = now_us() - t0 - extra;
    }
    g_busy = false;
    const bool python_failed = python_step != nullptr;
    if (python_failed) device_sync();  // the device drained before the error record: nothing of this block runs on
    for (Py_ssize_t j = 0; j < G && !python_failed; ++j) {
        void** ev = &g_events[4 * j];
        float ms_call = 0.f, ms_span = 0.f;
        const int a = rt.elapsed(&ms_call, ev[1], ev[2]);
        // NOTE: the escape check's span holds what the wall clock holds: from before the flush where
        // the flush is inside it (gpumode, queued), else from the start event, to after the captures
        const int b = rt.elapsed(&ms_span, flush_first ? ev[0] : ev[1], ev[3]);
        check(a, "cudaEventElapsedTime");
        check(b, "cudaEventElapsedTime");
        ok[j] = a == 0 && b == 0;
        times[j] = double(ms_call) * 1e3 / calls[j];  // the sample: the batch's event time over its calls
        span[j] = double(ms_span) * 1e3;
    }
    std::string payload = "{\"event\":\"clock\",\"tag\":";
    payload += std::to_string(tag);
    payload += ",\"method\":";
    json_string(payload, method_name);
    append_list(payload, "calls", calls);
    if (!python_failed) {
        append_list(payload, "times_us", times, &ok);
        append_list(payload, "span_us", span, &ok);
        append_list(payload, "wall_us", wall);
        append_list(payload, "issue_us", issue);
    }
    payload += ",\"refused\":";
    payload += std::to_string(g_refused);
    payload += ",\"error\":";
    if (python_failed) {
        const std::string what = std::string("the ") + python_step + " raised";
        json_string(payload, what.c_str());
    } else if (first_error) {
        const std::string what = std::string(failed_step) + ": " + rt.name(first_error);
        json_string(payload, what.c_str());
    } else {
        payload += "null";
    }
    payload += '}';
    const bool sent = emit(payload);
    Py_DECREF(groups);
    if (python_failed) {  // the Python exception stands
        Py_DECREF(results);
        Py_XDECREF(sampled);
        return nullptr;
    }
    if (!sent) {
        Py_DECREF(results);
        Py_XDECREF(sampled);
        PyErr_SetFromErrno(PyExc_OSError);
        return nullptr;
    }
    if (first_error) {
        Py_DECREF(results);
        Py_XDECREF(sampled);
        PyErr_Format(PyExc_RuntimeError, "CUDA error %s: %s", failed_step, rt.name(first_error));
        return nullptr;
    }
    // NOTE: the figures handed back are the worker's, to decide whether to time the block again; the
    // parent takes its figures from the record, never from here
    PyObject* figures = PyDict_New();
    PyObject* t_list = PyList_New(G);
    PyObject* s_list = PyList_New(G);
    PyObject* w_list = PyList_New(G);
    PyObject* i_list = PyList_New(G);
    for (Py_ssize_t j = 0; j < G && t_list && s_list && w_list && i_list; ++j) {
        PyList_SET_ITEM(t_list, j, PyFloat_FromDouble(times[j]));
        PyList_SET_ITEM(s_list, j, PyFloat_FromDouble(span[j]));
        PyList_SET_ITEM(w_list, j, PyFloat_FromDouble(wall[j]));
        PyList_SET_ITEM(i_list, j, PyFloat_FromDouble(issue[j]));
    }
    PyObject* out = nullptr;
    if (figures && t_list && s_list && w_list && i_list && PyDict_SetItemString(figures, "times_us", t_list) == 0 &&
        PyDict_SetItemString(figures, "span_us", s_list) == 0 && PyDict_SetItemString(figures, "wall_us", w_list) == 0 &&
        PyDict_SetItemString(figures, "issue_us", i_list) == 0)
        out = PyTuple_Pack(3, results, figures, sampled ? sampled : Py_None);
    Py_XDECREF(figures);
    Py_XDECREF(t_list);
    Py_XDECREF(s_list);
    Py_XDECREF(w_list);
    Py_XDECREF(i_list);
    Py_DECREF(results);
    Py_XDECREF(sampled);
    return out;
}

PyObject* py_state(PyObject*, PyObject*) {
    return Py_BuildValue("{s:K,s:K,s:O,s:s}", "seq", static_cast<unsigned long long>(g_seq), "refused",
                         static_cast<unsigned long long>(g_refused), "bound", g_bound ? Py_True : Py_False, "runtime",
                         rt.from.c_str());
}

PyMethodDef methods[] = {
    {"sha256", py_sha256, METH_VARARGS, "SHA-256 (FIPS 180-4) of bytes."},
    {"hmac_sha256", py_hmac_sha256, METH_VARARGS, "HMAC-SHA256 (RFC 2104) of msg under key."},
    {"bind", reinterpret_cast<PyCFunction>(reinterpret_cast<void (*)(void)>(py_bind)), METH_VARARGS | METH_KEYWORDS,
     "bind(key_fd, out_fd, loop, cuda, flush_ptr=0, flush_bytes=0, clean=None, runtime=None): once, before any "
     "submission is imported."},
    {"draw_key", reinterpret_cast<PyCFunction>(reinterpret_cast<void (*)(void)>(py_draw_key)), METH_VARARGS | METH_KEYWORDS,
     "draw_key(tag, untimed=None) -> the block's key, after untimed() and a synchronise; one record."},
    {"time_batches", reinterpret_cast<PyCFunction>(reinterpret_cast<void (*)(void)>(py_time_batches)),
     METH_VARARGS | METH_KEYWORDS,
     "time_batches(fn, groups, flush, capture, stream=0, tag=0, sample=None, method='gpumode', poison=None, graph=None) "
     "-> (results, figures, sampled); one record."},
    {"state", py_state, METH_NOARGS, "seq, refused calls, runtime (never the key)."},
    {nullptr, nullptr, 0, nullptr}};

PyModuleDef module = {PyModuleDef_HEAD_INIT, "_nvfp4_clock", "The compiled clock (harness/clock.cpp).", -1, methods,
                      nullptr, nullptr, nullptr, nullptr};

}  // namespace

PyMODINIT_FUNC PyInit__nvfp4_clock() {
    derive_constants();
    return PyModule_Create(&module);
}
