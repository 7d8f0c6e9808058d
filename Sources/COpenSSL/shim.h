// Only the libcrypto headers PostbackCrypto needs. The module map points here rather than at
// absolute system paths so pkg-config decides where OpenSSL lives.
#ifndef POSTBACK_COPENSSL_SHIM_H
#define POSTBACK_COPENSSL_SHIM_H

#include <openssl/bio.h>
#include <openssl/core_names.h>
#include <openssl/crypto.h>
#include <openssl/err.h>
#include <openssl/evp.h>
#include <openssl/pem.h>
#include <openssl/x509.h>

#endif
