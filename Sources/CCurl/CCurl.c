// Header-only target: see include/CCurl.h.
