// Only the libcrypto headers PostbackCrypto needs. The module map points here rather than at
// absolute system paths so pkg-config decides where OpenSSL lives.
#ifndef POSTBACK_COPENSSL_SHIM_H
#define POSTBACK_COPENSSL_SHIM_H

#include <openssl/bio.h>
#include <openssl/bn.h>
#include <openssl/core_names.h>
#include <openssl/crypto.h>
#include <openssl/ec.h>
#include <openssl/err.h>
#include <openssl/evp.h>
#include <openssl/obj_mac.h>
#include <openssl/pem.h>
#include <openssl/rand.h>
#include <openssl/x509.h>
#include <sys/prctl.h>

// prctl is variadic, which Swift cannot call: the two uses PostbackCrypto makes of it (a process
// holding a private key is made non-dumpable: no core file, no ptrace or /proc/PID/mem by its user).
static inline int postback_set_not_dumpable(void) { return prctl(PR_SET_DUMPABLE, 0, 0, 0, 0); }
static inline int postback_is_dumpable(void) { return prctl(PR_GET_DUMPABLE, 0, 0, 0, 0); }

// OpenSSL 3.0 marks these two deprecated (with the rest of the low-level EC API) but ships and
// supports them, and no provider-level call replaces them: the precomputed multiples of a group's
// generator, and a point's Jacobian coordinates (which let a verifier compare x(R) with r without
// an inversion). Wrapped here so the deprecation warning is silenced for these two calls only.
#pragma clang diagnostic push
#pragma clang diagnostic ignored "-Wdeprecated-declarations"
static inline int postback_EC_GROUP_precompute_mult(EC_GROUP *group, BN_CTX *ctx) {
    return EC_GROUP_precompute_mult(group, ctx);
}
static inline int postback_EC_POINT_get_Jprojective_coordinates(const EC_GROUP *group, const EC_POINT *point,
                                                                BIGNUM *x, BIGNUM *y, BIGNUM *z, BN_CTX *ctx) {
    return EC_POINT_get_Jprojective_coordinates_GFp(group, point, x, y, z, ctx);
}
#pragma clang diagnostic pop

#endif
