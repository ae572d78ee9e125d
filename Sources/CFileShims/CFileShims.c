#define _GNU_SOURCE
#include <fcntl.h>
#include <malloc.h>
#include <stdio.h>
#include "CFileShims.h"

int cfs_fallocate(int fd, off_t offset, off_t length) {
    return fallocate(fd, 0, offset, length);
}

int cfs_start_writeback(int fd, off_t offset, off_t length) {
    return sync_file_range(fd, offset, length, SYNC_FILE_RANGE_WRITE);
}

int cfs_reopen_direct_write(int fd) {
    char path[64];
    snprintf(path, sizeof path, "/proc/self/fd/%d", fd);
    return open(path, O_WRONLY | O_CLOEXEC | O_DIRECT);
}

int cfs_limit_malloc_arenas(int count) {
    return mallopt(M_ARENA_MAX, count);
}

int cfs_punch_hole(int fd, off_t offset, off_t length) {
    return fallocate(fd, FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE, offset, length);
}

int cfs_open_directory_step(int directory, const char *name) {
    return openat(directory, name, O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
}

int cfs_open_anonymous(const char *directory) {
    return open(directory, O_TMPFILE | O_RDWR | O_CLOEXEC, 0600);
}

#include <errno.h>
#include <signal.h>
#include <string.h>
#include <unistd.h>

static volatile int cfs_signal_pipe = -1;

static volatile sig_atomic_t cfs_signals_seen = 0;

static void cfs_on_signal(int number) {
    int saved = errno;
    if (cfs_signals_seen++ > 0) {
        /* A second Ctrl-C: the user does not want to wait for the orderly stop. */
        signal(number, SIG_DFL);
        raise(number);
    }
    unsigned char byte = (unsigned char)number;
    if (cfs_signal_pipe >= 0) (void)!write(cfs_signal_pipe, &byte, 1);
    errno = saved;
}

int cfs_catch_signals(const int *numbers, int count) {
    int fds[2];
    if (pipe2(fds, O_CLOEXEC | O_NONBLOCK) != 0) return -1;
    cfs_signal_pipe = fds[1];
    struct sigaction action;
    memset(&action, 0, sizeof action);
    action.sa_handler = cfs_on_signal;
    sigemptyset(&action.sa_mask);
    action.sa_flags = SA_RESTART;
    for (int i = 0; i < count; i++) sigaction(numbers[i], &action, NULL);
    return fds[0];
}

void cfs_default_signals(const int *numbers, int count) {
    for (int i = 0; i < count; i++) signal(numbers[i], SIG_DFL);
}

// MARK: CRC-32C

#include <stdint.h>

#include <string.h>

// Slicing-by-8: entry k*256+n is the CRC of byte n followed by k zero bytes.
static uint32_t crc32c_table[8 * 256];
static int crc32c_table_ready;

static void crc32c_fill_table(void) {
    for (uint32_t n = 0; n < 256; n++) {
        uint32_t crc = n;
        for (int k = 0; k < 8; k++) crc = crc & 1 ? (crc >> 1) ^ 0x82F63B78u : crc >> 1;
        crc32c_table[n] = crc;
    }
    for (int slice = 1; slice < 8; slice++) {
        for (int n = 0; n < 256; n++) {
            uint32_t previous = crc32c_table[(slice - 1) * 256 + n];
            crc32c_table[slice * 256 + n] = (previous >> 8) ^ crc32c_table[previous & 0xFF];
        }
    }
    __atomic_store_n(&crc32c_table_ready, 1, __ATOMIC_RELEASE);
}

unsigned int cfs_crc32c_software(unsigned int crc, const void *bytes, size_t length) {
    // Filling twice from two threads writes the same values: harmless.
    if (!__atomic_load_n(&crc32c_table_ready, __ATOMIC_ACQUIRE)) crc32c_fill_table();
    const uint32_t *t = crc32c_table;
    const unsigned char *p = bytes;
    uint32_t state = ~crc;
    while (length >= 8) {
        uint32_t low, high;
        memcpy(&low, p, 4);
        memcpy(&high, p + 4, 4);
#if __BYTE_ORDER__ == __ORDER_BIG_ENDIAN__
        low = __builtin_bswap32(low);
        high = __builtin_bswap32(high);
#endif
        low ^= state;
        state = t[7 * 256 + (low & 0xFF)] ^ t[6 * 256 + ((low >> 8) & 0xFF)] ^ t[5 * 256 + ((low >> 16) & 0xFF)]
              ^ t[4 * 256 + (low >> 24)] ^ t[3 * 256 + (high & 0xFF)] ^ t[2 * 256 + ((high >> 8) & 0xFF)]
              ^ t[1 * 256 + ((high >> 16) & 0xFF)] ^ t[high >> 24];
        p += 8;
        length -= 8;
    }
    while (length--) state = (state >> 8) ^ t[(state ^ *p++) & 0xFF];
    return ~state;
}

#if defined(__x86_64__)
__attribute__((target("sse4.2")))
static unsigned int crc32c_sse42(unsigned int crc, const void *bytes, size_t length) {
    const unsigned char *p = bytes;
    uint64_t state = (uint32_t)~crc;
    while (length > 0 && ((uintptr_t)p & 7) != 0) { state = __builtin_ia32_crc32qi((uint32_t)state, *p++); length--; }
    while (length >= 8) {
        uint64_t word;
        memcpy(&word, p, 8);
        state = __builtin_ia32_crc32di(state, word);
        p += 8;
        length -= 8;
    }
    while (length > 0) { state = __builtin_ia32_crc32qi((uint32_t)state, *p++); length--; }
    return ~(uint32_t)state;
}
#endif

int cfs_crc32c_hardware(void) {
#if defined(__x86_64__)
    return __builtin_cpu_supports("sse4.2") ? 1 : 0;
#else
    return 0;
#endif
}

unsigned int cfs_crc32c(unsigned int crc, const void *bytes, size_t length) {
#if defined(__x86_64__)
    if (__builtin_cpu_supports("sse4.2")) return crc32c_sse42(crc, bytes, length);
#endif
    return cfs_crc32c_software(crc, bytes, length);
}
