#ifndef POSTBACK_CZLIB_SHIM_H
#define POSTBACK_CZLIB_SHIM_H
#include <zlib.h>
#endif
