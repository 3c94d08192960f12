// libnghttp2 (Debian libnghttp2-dev). Swift calls the API directly; nothing to shim yet.
#include <nghttp2/nghttp2.h>
