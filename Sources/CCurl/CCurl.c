// Most of this target is header-only (see include/CCurl.h). This file holds what needs kernel
// headers that clash with glibc's when included into Swift.
#include <stddef.h>
#include <linux/tcp.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include "CCurl.h"

long long ccurl_tcp_out_of_order_packets(int fd) {
    struct tcp_info info;
    socklen_t length = sizeof info;
    if (getsockopt(fd, IPPROTO_TCP, TCP_INFO, &info, &length) != 0) return -1;
    // Kernels before 5.4 return a shorter struct without this field.
    if (length < offsetof(struct tcp_info, tcpi_rcv_ooopack) + sizeof info.tcpi_rcv_ooopack) return -1;
    return info.tcpi_rcv_ooopack;
}
