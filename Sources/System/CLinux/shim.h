// Linux calls Glibc's Swift module map does not export: epoll (the server's event loops),
// eventfd (their wake-ups, and the sender's transfer loop's), mallopt (the process's mmap
// threshold, `returnLargeFreedBlocksToTheSystem`) and fallocate (`preallocate`, the record
// file's space reserved ahead of its writes).
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <malloc.h>
#include <sys/types.h>
#include <linux/falloc.h>

// glibc declares fallocate only under _GNU_SOURCE, which this module is not built with.
extern int fallocate(int fd, int mode, off_t offset, off_t length);

// fallocate(2) with FALLOC_FL_KEEP_SIZE: space for [offset, offset + length) allocated,
// the file's size unchanged. Returns 0, or -1 with errno set.
static inline int pushproof_preallocate(int fd, off_t offset, off_t length) {
    return fallocate(fd, FALLOC_FL_KEEP_SIZE, offset, length);
}
