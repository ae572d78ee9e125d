// Why this shim exists: curl_easy_setopt, curl_easy_getinfo and curl_multi_setopt are C variadic
// functions, which Swift cannot call. Each wrapper below fixes one argument type so Swift sees an
// ordinary typed function. Some macros do not import into Swift (or import with the wrong type);
// they are re-exported here as typed constants.
#ifndef CCURL_H
#define CCURL_H

#include <curl/curl.h>

static inline CURLcode ccurl_easy_setopt_long(CURL *handle, CURLoption option, long value) {
    return curl_easy_setopt(handle, option, value);
}

static inline CURLcode ccurl_easy_setopt_offset(CURL *handle, CURLoption option, curl_off_t value) {
    return curl_easy_setopt(handle, option, value);
}

static inline CURLcode ccurl_easy_setopt_string(CURL *handle, CURLoption option, const char *value) {
    return curl_easy_setopt(handle, option, value);
}

static inline CURLcode ccurl_easy_setopt_pointer(CURL *handle, CURLoption option, void *value) {
    return curl_easy_setopt(handle, option, value);
}

static inline CURLcode ccurl_easy_setopt_slist(CURL *handle, CURLoption option, struct curl_slist *value) {
    return curl_easy_setopt(handle, option, value);
}

/// For CURLOPT_WRITEFUNCTION and CURLOPT_HEADERFUNCTION (same signature).
static inline CURLcode ccurl_easy_setopt_write_callback(CURL *handle, CURLoption option, curl_write_callback value) {
    return curl_easy_setopt(handle, option, value);
}

static inline CURLcode ccurl_easy_setopt_xferinfo_callback(CURL *handle, curl_xferinfo_callback value) {
    return curl_easy_setopt(handle, CURLOPT_XFERINFOFUNCTION, value);
}

static inline CURLcode ccurl_easy_getinfo_long(CURL *handle, CURLINFO info, long *value) {
    return curl_easy_getinfo(handle, info, value);
}

static inline CURLcode ccurl_easy_getinfo_offset(CURL *handle, CURLINFO info, curl_off_t *value) {
    return curl_easy_getinfo(handle, info, value);
}

static inline CURLcode ccurl_easy_getinfo_string(CURL *handle, CURLINFO info, char **value) {
    return curl_easy_getinfo(handle, info, value);
}

static inline CURLcode ccurl_easy_getinfo_pointer(CURL *handle, CURLINFO info, void **value) {
    return curl_easy_getinfo(handle, info, value);
}

static inline CURLcode ccurl_easy_getinfo_socket(CURL *handle, CURLINFO info, curl_socket_t *value) {
    return curl_easy_getinfo(handle, info, value);
}

/// Packets that arrived out of order on TCP socket `fd` (`tcpi_rcv_ooopack`): above 0 after a
/// loss on the path. -1 when the kernel does not say (before Linux 5.4) or `fd` is no TCP socket.
long long ccurl_tcp_out_of_order_packets(int fd);

static inline CURLMcode ccurl_multi_setopt_long(CURLM *handle, CURLMoption option, long value) {
    return curl_multi_setopt(handle, option, value);
}

static inline CURLcode ccurl_easy_setopt_share(CURL *handle, CURLSH *share) {
    return curl_easy_setopt(handle, CURLOPT_SHARE, share);
}

/// Room for the sockets one multi handle lists (more are counted, not listed).
#define CCURL_SOCKET_SLOTS 1024

/// The sockets open through one multi handle's transfers: their count (atomically: any thread
/// may read it) and the sockets themselves (used on the thread driving the multi handle only).
typedef struct ccurl_sockets ccurl_sockets;

ccurl_sockets *ccurl_sockets_create(void);
void ccurl_sockets_destroy(ccurl_sockets *sockets);

/// Makes `handle` open and close its sockets through functions that keep `sockets`. A connection
/// keeps the functions of the handle that opened it, so `sockets` must outlive every connection
/// (the multi handle).
CURLcode ccurl_easy_track_sockets(CURL *handle, ccurl_sockets *sockets);

/// Sockets open now (idle cached connections included).
long ccurl_sockets_count(const ccurl_sockets *sockets);

/// Bytes that arrived on the TCP connection of `handle`'s request and are not read yet (the
/// kernel's receive queue, `FIONREAD`), found among `sockets` by local and remote port; -1 when
/// unknown (no connection yet, or not one of `sockets`). `receive_space` is set to the kernel's
/// estimate of the connection's receive space (`tcpi_rcv_space`, what its advertised window grows
/// from), or -1 when unknown.
long long ccurl_easy_unread_bytes(CURL *handle, const ccurl_sockets *sockets, long long *receive_space);

/// A libcurl share object (`CURLSH *`) that shares TLS sessions and DNS answers between easy
/// handles, with a mutex per kind of shared data so handles on different threads may use it.
typedef struct ccurl_share ccurl_share;

/// A new share of TLS sessions and DNS answers; NULL when out of memory.
ccurl_share *ccurl_share_create(void);

/// The `CURLSH *` to pass to `CURLOPT_SHARE`.
CURLSH *ccurl_share_handle(ccurl_share *share);

/// Frees the share; no easy handle may use it any more.
void ccurl_share_destroy(ccurl_share *share);

static const long CCURL_GLOBAL_DEFAULT = CURL_GLOBAL_DEFAULT;
static const size_t CCURL_WRITEFUNC_PAUSE = CURL_WRITEFUNC_PAUSE;
static const long CCURL_MAX_WRITE_SIZE = CURL_MAX_WRITE_SIZE;
static const long CCURL_AUTH_BASIC = (long)CURLAUTH_BASIC;

#endif
