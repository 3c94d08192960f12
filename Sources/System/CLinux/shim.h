// Linux calls Glibc's Swift module map does not export: epoll (the server's event loops) and
// eventfd (their wake-ups, and the sender's transfer loop's).
#include <sys/epoll.h>
#include <sys/eventfd.h>
