// http-parser (Debian libhttp-parser-dev): the HTTP/1.1 request parser for FCM clients
// that do not speak HTTP/2.
#include <http_parser.h>
