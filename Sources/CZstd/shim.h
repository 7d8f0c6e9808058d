#ifndef POSTBACK_CZSTD_SHIM_H
#define POSTBACK_CZSTD_SHIM_H
#include <zstd.h>
#endif
