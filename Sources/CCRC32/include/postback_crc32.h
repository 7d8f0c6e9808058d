#ifndef POSTBACK_CRC32_H
#define POSTBACK_CRC32_H
#include <stddef.h>
#include <stdint.h>

/// CRC-32 as zlib computes it (ISO-HDLC: the reflected IEEE 802.3 polynomial, initial and final
/// value all ones), of `count` bytes at `bytes`.
uint32_t postback_crc32(const void *bytes, size_t count);

/// The same through zlib alone: the reference the folded path is tested against.
uint32_t postback_crc32_zlib(const void *bytes, size_t count);

/// The folding constants the fast path uses, in order: x^(4·128+32), x^(4·128−32), x^(128+32),
/// x^(128−32), x^64 (each mod P, bit-reflected, shifted left by one), then P and µ bit-reflected;
/// for the test that derives them.
void postback_crc32_constants(uint64_t constants[7]);

/// Whether this CPU takes the folded path (PCLMULQDQ and SSE4.1).
int postback_crc32_folds(void);

#endif
