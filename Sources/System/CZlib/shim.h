// zlib (Debian zlib1g-dev): the RFC 1950 streams inside HdrHistogram's compressed encoding.
#include <zlib.h>
