// Syscalls that Glibc does not export to Swift: fallocate(2) is declared only under _GNU_SOURCE.
#ifndef CFILESHIMS_H
#define CFILESHIMS_H
#include <sys/types.h>

/// fallocate(fd, 0, offset, length): reserves blocks without writing zeros.
/// Returns 0 or -1 with errno set (EOPNOTSUPP where the file system cannot).
int cfs_fallocate(int fd, off_t offset, off_t length);

/// sync_file_range(fd, offset, length, SYNC_FILE_RANGE_WRITE): starts writeback of dirty pages
/// in the range without waiting for it. Returns 0 or -1 with errno set.
int cfs_start_writeback(int fd, off_t offset, off_t length);

#endif
