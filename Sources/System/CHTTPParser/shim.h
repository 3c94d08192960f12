// http-parser (Debian libhttp-parser-dev): the HTTP/1.1 request parser for FCM clients
// that do not speak HTTP/2.
#include <http_parser.h>

// The server's event loops live beside the HTTP/1.1 parser: Glibc's Swift module map does
// not export epoll or eventfd, and this is the one C module only HTTP2Server uses.
#include <sys/epoll.h>
#include <sys/eventfd.h>
