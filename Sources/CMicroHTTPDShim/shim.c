// See include/CMicroHTTPDShim.h for why these exist.
#include "CMicroHTTPDShim.h"

#include <stdarg.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/select.h>
#include <sys/socket.h>
#include <sys/types.h>
#include <arpa/inet.h>
#include <netinet/in.h>
#include <microhttpd.h>

// The daemon's C-side state: the logger, and whether new connections are refused (shutdown).
struct postback_logger_box {
    postback_mhd_logger logger;
    void *context;
    atomic_int refusing;
};

// libmicrohttpd's accept policy: every connection until shutdown, none after.
static enum MHD_Result postback_accept_policy(void *cls, const struct sockaddr *address, socklen_t length) {
    (void)address;
    (void)length;
    struct postback_logger_box *box = cls;
    return atomic_load(&box->refusing) ? MHD_NO : MHD_YES;
}

void postback_mhd_refuse_connections(void *logger_box) {
    struct postback_logger_box *box = logger_box;
    atomic_store(&box->refusing, 1);
}

static void postback_format_log(void *cls, const char *format, va_list arguments) {
    struct postback_logger_box *box = cls;
    char message[1024];
    vsnprintf(message, sizeof message, format, arguments);
    box->logger(box->context, message);
}

struct MHD_Daemon *postback_mhd_start(const struct postback_mhd_settings *settings, void **logger_box) {
    struct postback_logger_box *box = malloc(sizeof *box);
    *logger_box = NULL;
    if (box == NULL) return NULL;
    box->logger = settings->logger;
    box->context = settings->logger_context;
    atomic_init(&box->refusing, 0);

    unsigned int flags = MHD_USE_EPOLL_INTERNAL_THREAD | MHD_ALLOW_SUSPEND_RESUME | MHD_USE_ERROR_LOG;
    unsigned int pool = settings->thread_pool_size;
    // Options that take a callback and its context pass the callback as the intptr_t value.
    // The logger comes first, or libmicrohttpd prints messages about the options before it itself.
    struct MHD_OptionItem options[] = {
        { MHD_OPTION_EXTERNAL_LOGGER, (intptr_t)postback_format_log, box },
        { MHD_OPTION_LISTEN_SOCKET, settings->listen_fd, NULL },
        { MHD_OPTION_THREAD_POOL_SIZE, pool, NULL },
        { MHD_OPTION_CONNECTION_LIMIT, settings->connection_limit, NULL },
        { MHD_OPTION_PER_IP_CONNECTION_LIMIT, settings->per_ip_connection_limit, NULL },
        { MHD_OPTION_CONNECTION_TIMEOUT, settings->idle_timeout_seconds, NULL },
        { MHD_OPTION_CONNECTION_MEMORY_LIMIT, (intptr_t)settings->connection_memory_limit, NULL },
        { MHD_OPTION_NOTIFY_COMPLETED, (intptr_t)settings->request_completed, settings->request_completed_context },
        { MHD_OPTION_NOTIFY_CONNECTION, (intptr_t)settings->connection_notify, settings->connection_notify_context },
        { MHD_OPTION_URI_LOG_CALLBACK, (intptr_t)settings->uri_log, settings->uri_log_context },
        { MHD_OPTION_END, 0, NULL },
    };
    struct MHD_Daemon *daemon = MHD_start_daemon(
        flags, 0, postback_accept_policy, box, (MHD_AccessHandlerCallback)settings->access_handler, settings->access_context,
        MHD_OPTION_ARRAY, options, MHD_OPTION_END);
    if (daemon == NULL) {
        free(box);
        return NULL;
    }
    *logger_box = box;
    return daemon;
}

void postback_mhd_stop(struct MHD_Daemon *daemon, void *logger_box) {
    MHD_stop_daemon(daemon);
    free(logger_box);
}

int postback_mhd_connection_fd(struct MHD_Connection *connection) {
    const union MHD_ConnectionInfo *info = MHD_get_connection_info(connection, MHD_CONNECTION_INFO_CONNECTION_FD);
    return info == NULL ? -1 : info->connect_fd;
}

void *postback_mhd_socket_context(struct MHD_Connection *connection) {
    const union MHD_ConnectionInfo *info = MHD_get_connection_info(connection, MHD_CONNECTION_INFO_SOCKET_CONTEXT);
    return info == NULL ? NULL : info->socket_context;
}

unsigned int postback_mhd_http_status(struct MHD_Connection *connection) {
    const union MHD_ConnectionInfo *info = MHD_get_connection_info(connection, MHD_CONNECTION_INFO_HTTP_STATUS);
    return info == NULL ? 0 : info->http_status;
}

int postback_mhd_client_address(struct MHD_Connection *connection, char *buffer, size_t size) {
    const union MHD_ConnectionInfo *info = MHD_get_connection_info(connection, MHD_CONNECTION_INFO_CLIENT_ADDRESS);
    if (info == NULL || info->client_addr == NULL || size == 0) return -1;
    const struct sockaddr *address = info->client_addr;
    const void *bytes;
    if (address->sa_family == AF_INET) {
        bytes = &((const struct sockaddr_in *)address)->sin_addr;
    } else if (address->sa_family == AF_INET6) {
        bytes = &((const struct sockaddr_in6 *)address)->sin6_addr;
    } else {
        return -1;
    }
    return inet_ntop(address->sa_family, bytes, buffer, (socklen_t)size) == NULL ? -1 : 0;
}

// What the header fields' places in libmicrohttpd's read buffer show. libmicrohttpd 0.9.75 parses
// the header block in place: each line's terminator (CR LF, or LF) becomes NUL bytes, the colon a
// NUL, and key and value point into the line. So in a well-formed block each key follows the
// previous value's terminator, and each value follows its key's NUL and optional blanks. A folded
// line (obs-fold) is appended to a copy of the key elsewhere, and a NUL inside a value leaves bytes
// between the value's end and the next key: both break that layout, which is how they are seen
// (libmicrohttpd itself would drop a folded Content-Length, ignore a folded Transfer-Encoding and
// cut a value at a NUL).
struct postback_layout_walk {
    const char *previous_value_end;
    int problem;
    size_t bytes;
};

static enum MHD_Result postback_layout_step(void *context, enum MHD_ValueKind kind, const char *key, size_t key_size,
                                            const char *value, size_t value_size) {
    (void)kind;
    struct postback_layout_walk *walk = context;
    walk->bytes += key_size + value_size + 4;
    if (key == NULL || value == NULL) {
        walk->problem = POSTBACK_LAYOUT_FOLDED;
        return MHD_NO;
    }
    if (memchr(value, '\r', value_size) != NULL) {
        walk->problem = POSTBACK_LAYOUT_CONTROL;
        return MHD_NO;
    }
    // The value: after the key's NUL (the colon) and blanks only.
    const char *key_end = key + key_size;
    if (value <= key_end || value - key_end > 256 || key_end[0] != 0) {
        walk->problem = POSTBACK_LAYOUT_FOLDED;
        return MHD_NO;
    }
    for (const char *c = key_end + 1; c < value; c++) {
        if (*c != ' ' && *c != '\t') {
            walk->problem = POSTBACK_LAYOUT_FOLDED;
            return MHD_NO;
        }
    }
    // The key: right after the previous value's line terminator (one or two NULs).
    if (walk->previous_value_end != NULL) {
        ptrdiff_t gap = key - walk->previous_value_end;
        int terminator_only = (gap == 1 || gap == 2);
        for (ptrdiff_t i = 0; terminator_only && i < gap; i++) terminator_only = walk->previous_value_end[i] == 0;
        if (!terminator_only) {
            // A NUL in the previous value leaves its rest here; a folded key lives elsewhere.
            walk->problem = (gap > 2 && gap <= 8192) ? POSTBACK_LAYOUT_CONTROL : POSTBACK_LAYOUT_FOLDED;
            return MHD_NO;
        }
    }
    walk->previous_value_end = value + value_size;
    return MHD_YES;
}

int postback_mhd_header_layout(struct MHD_Connection *connection, size_t *header_bytes) {
    struct postback_layout_walk walk = { NULL, POSTBACK_LAYOUT_OK, 0 };
    MHD_get_connection_values_n(connection, MHD_HEADER_KIND, postback_layout_step, &walk);
    // The last value: its line terminator, then the empty line's, both NULs by now (the block ends
    // with them, so these two bytes are inside it). Anything else is the rest of a value cut at a NUL.
    if (walk.problem == POSTBACK_LAYOUT_OK && walk.previous_value_end != NULL
        && (walk.previous_value_end[0] != 0 || walk.previous_value_end[1] != 0)) {
        walk.problem = POSTBACK_LAYOUT_CONTROL;
    }
    if (header_bytes != NULL) *header_bytes = walk.bytes;
    return walk.problem;
}

int postback_socket_unsent_bytes(int fd) {
    int unsent = 0;
    return ioctl(fd, TIOCOUTQ, &unsent) == 0 ? unsent : -1;
}
