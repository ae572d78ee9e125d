// Most of this target is header-only (see include/CCurl.h). This file holds what needs kernel
// headers that clash with glibc's when included into Swift.
#include <stddef.h>
#include <linux/tcp.h>
#include <netinet/in.h>
#include <arpa/inet.h>
#include <string.h>
#include <sys/ioctl.h>
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

struct ccurl_sockets {
    long count;
    /// Open sockets as fd + 1 (0: a free slot); written and read on the thread driving the
    /// multi handle, or by whoever cleans it up (then alone). Sockets beyond the slots are
    /// counted but not listed (their unread bytes are unknown).
    int slots[CCURL_SOCKET_SLOTS];
};

ccurl_sockets *ccurl_sockets_create(void) {
    return calloc(1, sizeof(ccurl_sockets));
}

void ccurl_sockets_destroy(ccurl_sockets *sockets) {
    free(sockets);
}

static curl_socket_t ccurl_open_tracked(void *clientp, curlsocktype purpose, struct curl_sockaddr *address) {
    (void)purpose;
    ccurl_sockets *sockets = clientp;
    curl_socket_t fd = socket(address->family, address->socktype | SOCK_CLOEXEC, address->protocol);
    if (fd == CURL_SOCKET_BAD) return fd;
    __atomic_add_fetch(&sockets->count, 1, __ATOMIC_RELAXED);
    for (int i = 0; i < CCURL_SOCKET_SLOTS; i++) {
        if (sockets->slots[i] == 0) {
            sockets->slots[i] = fd + 1;
            break;
        }
    }
    return fd;
}

static int ccurl_close_tracked(void *clientp, curl_socket_t fd) {
    ccurl_sockets *sockets = clientp;
    __atomic_sub_fetch(&sockets->count, 1, __ATOMIC_RELAXED);
    for (int i = 0; i < CCURL_SOCKET_SLOTS; i++) {
        if (sockets->slots[i] == fd + 1) {
            sockets->slots[i] = 0;
            break;
        }
    }
    return close(fd);
}

CURLcode ccurl_easy_track_sockets(CURL *handle, ccurl_sockets *sockets) {
    CURLcode result = curl_easy_setopt(handle, CURLOPT_OPENSOCKETFUNCTION, ccurl_open_tracked);
    if (result == CURLE_OK) result = curl_easy_setopt(handle, CURLOPT_OPENSOCKETDATA, sockets);
    if (result == CURLE_OK) result = curl_easy_setopt(handle, CURLOPT_CLOSESOCKETFUNCTION, ccurl_close_tracked);
    if (result == CURLE_OK) result = curl_easy_setopt(handle, CURLOPT_CLOSESOCKETDATA, sockets);
    return result;
}

long ccurl_sockets_count(const ccurl_sockets *sockets) {
    return __atomic_load_n(&sockets->count, __ATOMIC_RELAXED);
}

/// Whether `address` is `ip` (as libcurl writes it; not compared when NULL) and `port`.
static int ccurl_address_is(const struct sockaddr_storage *address, const char *ip, long port) {
    char text[INET6_ADDRSTRLEN] = "";
    long found = -1;
    if (address->ss_family == AF_INET) {
        const struct sockaddr_in *v4 = (const struct sockaddr_in *)address;
        inet_ntop(AF_INET, &v4->sin_addr, text, sizeof text);
        found = ntohs(v4->sin_port);
    } else if (address->ss_family == AF_INET6) {
        const struct sockaddr_in6 *v6 = (const struct sockaddr_in6 *)address;
        inet_ntop(AF_INET6, &v6->sin6_addr, text, sizeof text);
        found = ntohs(v6->sin6_port);
    }
    return found == port && (ip == NULL || strcmp(text, ip) == 0);
}

long long ccurl_easy_unread_bytes(CURL *handle, const ccurl_sockets *sockets, long long *receive_space) {
    *receive_space = -1;
    long local = -1, remote = -1;
    char *local_ip = NULL, *remote_ip = NULL;
    if (curl_easy_getinfo(handle, CURLINFO_LOCAL_PORT, &local) != CURLE_OK || local <= 0) return -1;
    if (curl_easy_getinfo(handle, CURLINFO_PRIMARY_PORT, &remote) != CURLE_OK || remote <= 0) return -1;
    if (curl_easy_getinfo(handle, CURLINFO_LOCAL_IP, &local_ip) != CURLE_OK) local_ip = NULL;
    if (curl_easy_getinfo(handle, CURLINFO_PRIMARY_IP, &remote_ip) != CURLE_OK) remote_ip = NULL;
    for (int i = 0; i < CCURL_SOCKET_SLOTS; i++) {
        int fd = sockets->slots[i] - 1;
        if (fd < 0) continue;
        struct sockaddr_storage address;
        socklen_t length = sizeof address;
        if (getsockname(fd, (struct sockaddr *)&address, &length) != 0 || !ccurl_address_is(&address, local_ip, local)) continue;
        length = sizeof address;
        if (getpeername(fd, (struct sockaddr *)&address, &length) != 0 || !ccurl_address_is(&address, remote_ip, remote)) continue;
        struct tcp_info info;
        socklen_t info_length = sizeof info;
        if (getsockopt(fd, IPPROTO_TCP, TCP_INFO, &info, &info_length) == 0 && info_length > offsetof(struct tcp_info, tcpi_rcv_space))
            *receive_space = info.tcpi_rcv_space;
        int unread = 0;
        return ioctl(fd, FIONREAD, &unread) == 0 ? unread : -1;
    }
    return -1;
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
