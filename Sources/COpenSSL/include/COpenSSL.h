// libcrypto's EVP digest interface, imported into Swift as a module.
#ifndef COPENSSL_H
#define COPENSSL_H
#include <openssl/evp.h>
#include <openssl/crypto.h>
#include <openssl/hmac.h>
#endif
