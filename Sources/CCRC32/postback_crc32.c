// CRC-32 of spool lines, fast: folded with carry-less multiplication (PCLMULQDQ), after Gopal et al.,
// "Fast CRC Computation for Generic Polynomials Using PCLMULQDQ Instruction" (Intel, 2009), for
// the bit-reflected CRC-32. zlib's own loop (Debian's 1.2.13) reads a line at 1–3 GB/s here, which
// is more than the checksum may cost the nightly job; folding reads it several times faster. zlib
// computes what is left (the last 0–15 bytes, short inputs, CPUs without the instruction), and is
// the reference the folded path is tested against (`CRC32Tests`).
#include "postback_crc32.h"

#include <immintrin.h>
#include <zlib.h>

// The folding constants, bit-reflected and shifted left by one, as the paper defines them for
// P(x) = 0x104C11DB7: x^(4·128+32) and x^(4·128−32) mod P fold 64 bytes ahead, x^(128+32) and
// x^(128−32) mod P fold 16 bytes ahead, x^64 mod P folds 64 bits to 32; then Barrett reduction with
// P itself and µ = floor(x^64 / P). `CRC32Tests` derives each from the polynomial.
static const uint64_t fold64[2] = {0x0154442bd4, 0x01c6e41596};
static const uint64_t fold16[2] = {0x01751997d0, 0x00ccaa009e};
static const uint64_t fold4to32 = 0x0163cd6124;
static const uint64_t barrett[2] = {0x01db710641, 0x01f7011641};

// The CRC register after `count` bytes (a multiple of 16, at least 64) from register `state`.
__attribute__((target("pclmul,sse4.1"))) static uint32_t folded(const unsigned char *p, size_t count, uint32_t state) {
    __m128i a = _mm_loadu_si128((const __m128i *)(p + 0));
    __m128i b = _mm_loadu_si128((const __m128i *)(p + 16));
    __m128i c = _mm_loadu_si128((const __m128i *)(p + 32));
    __m128i d = _mm_loadu_si128((const __m128i *)(p + 48));
    a = _mm_xor_si128(a, _mm_cvtsi32_si128((int)state));
    p += 64;
    count -= 64;

    // Four lanes, each folded 64 bytes ahead onto the next 64 bytes.
    __m128i k = _mm_loadu_si128((const __m128i *)fold64);
    while (count >= 64) {
        __m128i a0 = _mm_clmulepi64_si128(a, k, 0x00), a1 = _mm_clmulepi64_si128(a, k, 0x11);
        __m128i b0 = _mm_clmulepi64_si128(b, k, 0x00), b1 = _mm_clmulepi64_si128(b, k, 0x11);
        __m128i c0 = _mm_clmulepi64_si128(c, k, 0x00), c1 = _mm_clmulepi64_si128(c, k, 0x11);
        __m128i d0 = _mm_clmulepi64_si128(d, k, 0x00), d1 = _mm_clmulepi64_si128(d, k, 0x11);
        a = _mm_xor_si128(_mm_xor_si128(a0, a1), _mm_loadu_si128((const __m128i *)(p + 0)));
        b = _mm_xor_si128(_mm_xor_si128(b0, b1), _mm_loadu_si128((const __m128i *)(p + 16)));
        c = _mm_xor_si128(_mm_xor_si128(c0, c1), _mm_loadu_si128((const __m128i *)(p + 32)));
        d = _mm_xor_si128(_mm_xor_si128(d0, d1), _mm_loadu_si128((const __m128i *)(p + 48)));
        p += 64;
        count -= 64;
    }

    // The four lanes into one, then the rest 16 bytes at a time.
    k = _mm_loadu_si128((const __m128i *)fold16);
    __m128i x = a;
    const __m128i *next[3] = {&b, &c, &d};
    for (int lane = 0; lane < 3; lane++) {
        x = _mm_xor_si128(_mm_xor_si128(_mm_clmulepi64_si128(x, k, 0x00), _mm_clmulepi64_si128(x, k, 0x11)), *next[lane]);
    }
    while (count >= 16) {
        __m128i data = _mm_loadu_si128((const __m128i *)p);
        x = _mm_xor_si128(_mm_xor_si128(_mm_clmulepi64_si128(x, k, 0x00), _mm_clmulepi64_si128(x, k, 0x11)), data);
        p += 16;
        count -= 16;
    }

    // 128 bits to 64: the low half times x^(128−32) mod P onto the high half.
    const __m128i low32 = _mm_setr_epi32(-1, 0, -1, 0);
    x = _mm_xor_si128(_mm_srli_si128(x, 8), _mm_clmulepi64_si128(x, k, 0x10));
    // 64 to 32: the low 32 bits times x^64 mod P onto the rest.
    __m128i rest = _mm_srli_si128(x, 4);
    x = _mm_xor_si128(_mm_clmulepi64_si128(_mm_and_si128(x, low32), _mm_cvtsi64_si128((long long)fold4to32), 0x00), rest);
    // Barrett: q = low32(x) · µ, then x − low32(q) · P leaves the remainder in bits 32–63.
    k = _mm_loadu_si128((const __m128i *)barrett);
    __m128i q = _mm_and_si128(_mm_clmulepi64_si128(_mm_and_si128(x, low32), k, 0x10), low32);
    x = _mm_xor_si128(x, _mm_clmulepi64_si128(q, k, 0x00));
    return (uint32_t)_mm_extract_epi32(x, 1);
}

static int canFold(void) {
    static int answer = -1;  // a benign race: every thread computes the same answer
    if (answer < 0) answer = __builtin_cpu_supports("pclmul") && __builtin_cpu_supports("sse4.1");
    return answer;
}

void postback_crc32_constants(uint64_t constants[7]) {
    constants[0] = fold64[0];
    constants[1] = fold64[1];
    constants[2] = fold16[0];
    constants[3] = fold16[1];
    constants[4] = fold4to32;
    constants[5] = barrett[0];
    constants[6] = barrett[1];
}

int postback_crc32_folds(void) { return canFold(); }

uint32_t postback_crc32_zlib(const void *bytes, size_t count) {
    uLong crc = crc32(0L, Z_NULL, 0);
    const unsigned char *p = bytes;
    while (count > 0) {  // zlib takes a 32-bit length
        uInt chunk = count > (1u << 30) ? (1u << 30) : (uInt)count;
        crc = crc32(crc, p, chunk);
        p += chunk;
        count -= chunk;
    }
    return (uint32_t)crc;
}

uint32_t postback_crc32(const void *bytes, size_t count) {
    if (count < 64 || !canFold()) return postback_crc32_zlib(bytes, count);
    size_t whole = count & ~(size_t)15;
    uint32_t crc = ~folded(bytes, whole, 0xFFFFFFFFu);
    if (whole == count) return crc;
    return (uint32_t)crc32(crc, (const unsigned char *)bytes + whole, (uInt)(count - whole));
}
