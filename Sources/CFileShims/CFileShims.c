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

int cfs_open_anonymous(const char *directory) {
    return open(directory, O_TMPFILE | O_RDWR | O_CLOEXEC, 0600);
}
