// Most of this target is header-only (see include/CCurl.h). This file holds what needs kernel
// headers that clash with glibc's when included into Swift.
#include <stddef.h>
#include <linux/tcp.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <pthread.h>
#include <stdlib.h>
#include <unistd.h>
#include "CCurl.h"

long long ccurl_tcp_out_of_order_packets(int fd) {
    struct tcp_info info;
    socklen_t length = sizeof info;
    if (getsockopt(fd, IPPROTO_TCP, TCP_INFO, &info, &length) != 0) return -1;
    // Kernels before 5.4 return a shorter struct without this field.
    if (length < offsetof(struct tcp_info, tcpi_rcv_ooopack) + sizeof info.tcpi_rcv_ooopack) return -1;
    return info.tcpi_rcv_ooopack;
}

static curl_socket_t ccurl_open_counted(void *clientp, curlsocktype purpose, struct curl_sockaddr *address) {
    (void)purpose;
    curl_socket_t fd = socket(address->family, address->socktype | SOCK_CLOEXEC, address->protocol);
    if (fd != CURL_SOCKET_BAD) __atomic_add_fetch((long *)clientp, 1, __ATOMIC_RELAXED);
    return fd;
}

static int ccurl_close_counted(void *clientp, curl_socket_t fd) {
    __atomic_sub_fetch((long *)clientp, 1, __ATOMIC_RELAXED);
    return close(fd);
}

CURLcode ccurl_easy_count_sockets(CURL *handle, long *counter) {
    CURLcode result = curl_easy_setopt(handle, CURLOPT_OPENSOCKETFUNCTION, ccurl_open_counted);
    if (result == CURLE_OK) result = curl_easy_setopt(handle, CURLOPT_OPENSOCKETDATA, counter);
    if (result == CURLE_OK) result = curl_easy_setopt(handle, CURLOPT_CLOSESOCKETFUNCTION, ccurl_close_counted);
    if (result == CURLE_OK) result = curl_easy_setopt(handle, CURLOPT_CLOSESOCKETDATA, counter);
    return result;
}

long ccurl_socket_count(const long *counter) {
    return __atomic_load_n(counter, __ATOMIC_RELAXED);
}

struct ccurl_share {
    CURLSH *handle;
    pthread_mutex_t locks[CURL_LOCK_DATA_LAST];
};

static void ccurl_share_lock(CURL *handle, curl_lock_data data, curl_lock_access access, void *userptr) {
    (void)handle; (void)access;
    struct ccurl_share *share = userptr;
    if (data >= 0 && data < CURL_LOCK_DATA_LAST) pthread_mutex_lock(&share->locks[data]);
}

static void ccurl_share_unlock(CURL *handle, curl_lock_data data, void *userptr) {
    (void)handle;
    struct ccurl_share *share = userptr;
    if (data >= 0 && data < CURL_LOCK_DATA_LAST) pthread_mutex_unlock(&share->locks[data]);
}

ccurl_share *ccurl_share_create(void) {
    struct ccurl_share *share = calloc(1, sizeof *share);
    if (!share) return NULL;
    share->handle = curl_share_init();
    if (!share->handle) {
        free(share);
        return NULL;
    }
    for (int i = 0; i < CURL_LOCK_DATA_LAST; i++) pthread_mutex_init(&share->locks[i], NULL);
    // A share that cannot be set up whole is not used: sharing only saves work.
    if (curl_share_setopt(share->handle, CURLSHOPT_LOCKFUNC, ccurl_share_lock) != CURLSHE_OK
        || curl_share_setopt(share->handle, CURLSHOPT_UNLOCKFUNC, ccurl_share_unlock) != CURLSHE_OK
        || curl_share_setopt(share->handle, CURLSHOPT_USERDATA, share) != CURLSHE_OK
        || curl_share_setopt(share->handle, CURLSHOPT_SHARE, CURL_LOCK_DATA_SSL_SESSION) != CURLSHE_OK
        || curl_share_setopt(share->handle, CURLSHOPT_SHARE, CURL_LOCK_DATA_DNS) != CURLSHE_OK) {
        ccurl_share_destroy(share);
        return NULL;
    }
    return share;
}

CURLSH *ccurl_share_handle(ccurl_share *share) {
    return share->handle;
}

void ccurl_share_destroy(ccurl_share *share) {
    if (!share) return;
    // Still in use by an easy handle: its locks must outlive it, so the share is leaked
    // rather than freed under it (callers keep the share alive while handles use it).
    if (curl_share_cleanup(share->handle) != CURLSHE_OK) return;
    for (int i = 0; i < CURL_LOCK_DATA_LAST; i++) pthread_mutex_destroy(&share->locks[i]);
    free(share);
}
