// Typed wrappers around libcurl's variadic functions, which Swift cannot call directly.
// Only the OriginFetcher target imports this module.
#ifndef CCURLSHIM_H
#define CCURLSHIM_H

#include <curl/curl.h>

CURLcode aasa_curl_setopt_long(CURL *handle, CURLoption option, long value);
CURLcode aasa_curl_setopt_off_t(CURL *handle, CURLoption option, curl_off_t value);
CURLcode aasa_curl_setopt_string(CURL *handle, CURLoption option, const char *value);
CURLcode aasa_curl_setopt_pointer(CURL *handle, CURLoption option, void *value);
CURLcode aasa_curl_setopt_slist(CURL *handle, CURLoption option, struct curl_slist *value);
CURLcode aasa_curl_setopt_write_callback(CURL *handle, CURLoption option, curl_write_callback callback);
CURLcode aasa_curl_setopt_opensocket_callback(CURL *handle, curl_opensocket_callback callback);
CURLcode aasa_curl_setopt_ssl_ctx_callback(CURL *handle, curl_ssl_ctx_callback callback);

CURLcode aasa_curl_getinfo_long(CURL *handle, CURLINFO info, long *value);
CURLcode aasa_curl_getinfo_off_t(CURL *handle, CURLINFO info, curl_off_t *value);
CURLcode aasa_curl_getinfo_string(CURL *handle, CURLINFO info, const char **value);
CURLcode aasa_curl_getinfo_pointer(CURL *handle, CURLINFO info, void **value);

CURLMcode aasa_curl_multi_setopt_long(CURLM *multi, CURLMoption option, long value);

/// The family and printable numeric address of a curl_sockaddr (for the address policy).
/// Returns 4 or 6 and writes the address bytes (4 or 16) into `bytes`; 0 for other families.
int aasa_sockaddr_address(const struct curl_sockaddr *address, unsigned char bytes[16]);
/// Opens the socket curl asked for (the default behaviour of an opensocket callback).
curl_socket_t aasa_open_socket(const struct curl_sockaddr *address);

#endif
