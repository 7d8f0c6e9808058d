// See include/CCurlShim.h for why these exist.
#include "CCurlShim.h"

#include <curl/curl.h>

int postback_curl_set_long(void *handle, unsigned int option, long value) {
    return curl_easy_setopt(handle, (CURLoption)option, value);
}

int postback_curl_set_pointer(void *handle, unsigned int option, const void *value) {
    return curl_easy_setopt(handle, (CURLoption)option, value);
}

int postback_curl_set_offset(void *handle, unsigned int option, int64_t value) {
    return curl_easy_setopt(handle, (CURLoption)option, (curl_off_t)value);
}

int postback_curl_set_data_callback(void *handle, unsigned int option, postback_curl_write_callback callback) {
    return curl_easy_setopt(handle, (CURLoption)option, callback);
}

int postback_curl_info_long(void *handle, unsigned int info, long *value) {
    return curl_easy_getinfo(handle, (CURLINFO)info, value);
}

int postback_curl_info_string(void *handle, unsigned int info, const char **value) {
    return curl_easy_getinfo(handle, (CURLINFO)info, value);
}
