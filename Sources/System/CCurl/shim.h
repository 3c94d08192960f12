// libcurl (Debian libcurl4-openssl-dev). curl_easy_setopt, curl_multi_setopt and
// curl_easy_getinfo are variadic, which Swift cannot call: one typed wrapper per argument kind.
#include <curl/curl.h>

static inline CURLcode cshim_easy_setopt_long(CURL *h, CURLoption o, long v) { return curl_easy_setopt(h, o, v); }
static inline CURLcode cshim_easy_setopt_off(CURL *h, CURLoption o, curl_off_t v) { return curl_easy_setopt(h, o, v); }
static inline CURLcode cshim_easy_setopt_ptr(CURL *h, CURLoption o, const void *v) { return curl_easy_setopt(h, o, v); }
static inline CURLcode cshim_easy_setopt_string(CURL *h, CURLoption o, const char *v) { return curl_easy_setopt(h, o, v); }
static inline CURLcode cshim_easy_setopt_slist(CURL *h, CURLoption o, struct curl_slist *v) { return curl_easy_setopt(h, o, v); }
typedef size_t (*cshim_write_callback)(char *, size_t, size_t, void *);
static inline CURLcode cshim_easy_setopt_write_callback(CURL *h, CURLoption o, cshim_write_callback v) { return curl_easy_setopt(h, o, v); }
static inline CURLMcode cshim_multi_setopt_long(CURLM *m, CURLMoption o, long v) { return curl_multi_setopt(m, o, v); }
static inline CURLcode cshim_easy_getinfo_long(CURL *h, CURLINFO i, long *v) { return curl_easy_getinfo(h, i, v); }
static inline CURLcode cshim_easy_getinfo_ptr(CURL *h, CURLINFO i, void **v) { return curl_easy_getinfo(h, i, v); }
static inline CURLcode cshim_easy_getinfo_double(CURL *h, CURLINFO i, double *v) { return curl_easy_getinfo(h, i, v); }
typedef int (*cshim_sockopt_callback)(void *, curl_socket_t, curlsocktype);
static inline CURLcode cshim_easy_setopt_sockopt_callback(CURL *h, cshim_sockopt_callback v) { return curl_easy_setopt(h, CURLOPT_SOCKOPTFUNCTION, v); }
typedef int (*cshim_closesocket_callback)(void *, curl_socket_t);
static inline CURLcode cshim_easy_setopt_closesocket_callback(CURL *h, cshim_closesocket_callback v) { return curl_easy_setopt(h, CURLOPT_CLOSESOCKETFUNCTION, v); }
