// Linux calls Glibc's Swift module map does not export: epoll (the server's event loops),
// eventfd (their wake-ups, and the sender's transfer loop's) and mallopt (the process's
// mmap threshold, `returnLargeFreedBlocksToTheSystem`).
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <malloc.h>
