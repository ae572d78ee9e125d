// Header-only target: see include/COpenSSL.h.
