// libc calls that Glibc does not export to Swift: fallocate(2) and O_DIRECT are declared only under
// _GNU_SOURCE, and mallopt(3) lives in <malloc.h>, which Glibc's module leaves out.
#ifndef CFILESHIMS_H
#define CFILESHIMS_H
#include <stddef.h>
#include <sys/types.h>

/// fallocate(fd, 0, offset, length): reserves blocks without writing zeros.
/// Returns 0 or -1 with errno set (EOPNOTSUPP where the file system cannot).
int cfs_fallocate(int fd, off_t offset, off_t length);

/// sync_file_range(fd, offset, length, SYNC_FILE_RANGE_WRITE): starts writeback of dirty pages
/// in the range without waiting for it. Returns 0 or -1 with errno set.
int cfs_start_writeback(int fd, off_t offset, off_t length);

/// open("/proc/self/fd/FD", O_WRONLY | O_CLOEXEC | O_DIRECT): a second descriptor of the very
/// file `fd` is open on (never a path lookup of its name, which another process may have pointed
/// elsewhere since), whose writes bypass the page cache (O_DIRECT, like fallocate, is declared
/// only under _GNU_SOURCE). Returns -1 with errno set where the file system refuses O_DIRECT
/// (EINVAL on tmpfs) or /proc is not mounted.
int cfs_reopen_direct_write(int fd);

/// mallopt(M_ARENA_MAX, count): at most `count` malloc arenas for the whole process. Returns 1 on
/// success, 0 on error.
int cfs_limit_malloc_arenas(int count);

/// fallocate(fd, FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE, offset, length): frees the blocks of
/// a range already consumed (a stream's spool). Returns 0 or -1 with errno set.
int cfs_punch_hole(int fd, off_t offset, off_t length);

/// openat(directory, name, O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC): one step of a walk down
/// a path (O_PATH needs only search permission, and is declared only under _GNU_SOURCE). Fails
/// with ELOOP or ENOTDIR at a symbolic link, which is never followed. Returns -1 with errno set.
int cfs_open_directory_step(int directory, const char *name);

/// open(directory, O_TMPFILE | O_RDWR | O_CLOEXEC, 0600): a file with no name, gone when closed.
/// Returns -1 with errno set where the file system cannot (EOPNOTSUPP, EISDIR on old kernels).
int cfs_open_anonymous(const char *directory);

/// Catches `numbers` (SIGINT, SIGTERM) with a handler that writes each signal's number as one
/// byte to a pipe (the only async-signal-safe thing it does), installed at once with sigaction:
/// no signal is lost between installing and listening. A second signal gets the default action
/// (the process ends at once, as a second Ctrl-C asks). Returns the pipe's read end (non-blocking,
/// close-on-exec), or -1 with errno set.
int cfs_catch_signals(const int *numbers, int count);

/// Gives `numbers` their default action again.
void cfs_default_signals(const int *numbers, int count);

/// CRC-32C (Castagnoli) of `length` bytes at `bytes`, continuing from `crc` (the check value of
/// the bytes before them; 0 to start): `cfs_crc32c(cfs_crc32c(0, a), b)` is the CRC of `a` then
/// `b`. Uses the SSE4.2 `crc32` instruction where the CPU has it, else a table.
unsigned int cfs_crc32c(unsigned int crc, const void *bytes, size_t length);

/// The same, always with the table (for tests that compare the two paths).
unsigned int cfs_crc32c_software(unsigned int crc, const void *bytes, size_t length);

/// Whether ``cfs_crc32c`` uses the SSE4.2 instruction on this CPU.
int cfs_crc32c_hardware(void);

#endif
