#ifndef POSTBACK_CCURL_SHIM_H
#define POSTBACK_CCURL_SHIM_H
#include <curl/curl.h>
#endif
