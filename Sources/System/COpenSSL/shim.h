// OpenSSL 3 (Debian libssl-dev). Inline wrappers only for what Swift cannot call:
// function-like macros.
#include <openssl/ssl.h>
#include <openssl/err.h>
#include <openssl/evp.h>
#include <openssl/ec.h>
#include <openssl/ecdsa.h>
#include <openssl/rsa.h>
#include <openssl/pem.h>
#include <openssl/x509.h>
#include <openssl/x509v3.h>
#include <openssl/bio.h>
#include <openssl/bn.h>
#include <openssl/rand.h>
#include <openssl/sha.h>
#include <openssl/core_names.h>

static inline long cshim_SSL_CTX_set_mode(SSL_CTX *ctx, long mode) { return SSL_CTX_set_mode(ctx, mode); }
static inline uint64_t cshim_SSL_CTX_set_options(SSL_CTX *ctx, uint64_t op) { return SSL_CTX_set_options(ctx, op); }
static inline int cshim_SSL_CTX_set_min_proto_version(SSL_CTX *ctx, int v) { return SSL_CTX_set_min_proto_version(ctx, v); }
static inline long cshim_BIO_get_mem_data(BIO *b, char **pp) { return BIO_get_mem_data(b, pp); }
