// Non-variadic wrappers for libcurl's variadic curl_easy_setopt and curl_easy_getinfo, which Swift
// cannot call. Handles are `void *` (libcurl's own `CURL` is `void` too), so this header needs no
// <curl/curl.h> and Swift sees each curl type from CCurl only.
#ifndef POSTBACK_CCURLSHIM_H
#define POSTBACK_CCURLSHIM_H

#include <stddef.h>
#include <stdint.h>

typedef size_t (*postback_curl_write_callback)(char *data, size_t size, size_t count, void *context);

/// curl_easy_setopt with a `long` argument; returns the CURLcode.
int postback_curl_set_long(void *handle, unsigned int option, long value);
/// curl_easy_setopt with a pointer (or string) argument.
int postback_curl_set_pointer(void *handle, unsigned int option, const void *value);
/// curl_easy_setopt with a curl_off_t argument.
int postback_curl_set_offset(void *handle, unsigned int option, int64_t value);
/// CURLOPT_WRITEFUNCTION or CURLOPT_HEADERFUNCTION (they share a signature).
int postback_curl_set_data_callback(void *handle, unsigned int option, postback_curl_write_callback callback);
/// curl_easy_getinfo for a `long` result.
int postback_curl_info_long(void *handle, unsigned int info, long *value);
/// curl_easy_getinfo for a string result (owned by curl).
int postback_curl_info_string(void *handle, unsigned int info, const char **value);

#endif
