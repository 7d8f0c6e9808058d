// Non-variadic wrappers for the parts of libmicrohttpd that Swift cannot call.
//
// MHD_start_daemon, MHD_get_connection_info and the external logger (a va_list callback) are C
// variadics; Swift imports none of them. Everything else is called from Swift through CMicroHTTPD.
// This header deliberately does not include <microhttpd.h>: the daemon and connection stay opaque
// here, so Swift sees each MHD type from one module only.
#ifndef POSTBACK_CMICROHTTPDSHIM_H
#define POSTBACK_CMICROHTTPDSHIM_H

#include <stddef.h>

struct MHD_Daemon;
struct MHD_Connection;

// MARK: Callbacks (the same ABI as MHD's own typedefs, with enums as plain integers)

typedef int (*postback_mhd_access_handler)(void *context, struct MHD_Connection *connection, const char *url,
                                           const char *method, const char *version, const char *upload_data,
                                           size_t *upload_data_size, void **request_context);
typedef void (*postback_mhd_request_completed)(void *context, struct MHD_Connection *connection,
                                               void **request_context, int termination_code);
typedef void (*postback_mhd_connection_notify)(void *context, struct MHD_Connection *connection,
                                               void **socket_context, int notification_code);
typedef void *(*postback_mhd_uri_log)(void *context, const char *uri, struct MHD_Connection *connection);
/// Receives one formatted libmicrohttpd diagnostic (no trailing newline guarantee).
typedef void (*postback_mhd_logger)(void *context, const char *message);

struct postback_mhd_settings {
    int listen_fd;
    unsigned int thread_pool_size;
    unsigned int connection_limit;
    unsigned int per_ip_connection_limit;
    unsigned int idle_timeout_seconds;
    size_t connection_memory_limit;
    postback_mhd_access_handler access_handler;
    void *access_context;
    postback_mhd_request_completed request_completed;
    void *request_completed_context;
    postback_mhd_connection_notify connection_notify;
    void *connection_notify_context;
    postback_mhd_uri_log uri_log;
    void *uri_log_context;
    postback_mhd_logger logger;
    void *logger_context;
};

/// Starts a daemon on an already listening socket: an epoll thread pool with suspend/resume.
/// Returns NULL on failure. `logger_box` receives a small allocation the logger needs for the
/// daemon's lifetime; pass it to postback_mhd_stop.
struct MHD_Daemon *postback_mhd_start(const struct postback_mhd_settings *settings, void **logger_box);

/// From now on, closes every new connection as soon as it is accepted (shutdown). Used instead of
/// MHD_quiesce_daemon, which with an epoll thread pool races a worker removing the listening socket
/// from its epoll set itself, and aborts the process ("Failed to remove listen FD from epoll set").
void postback_mhd_refuse_connections(void *logger_box);

/// MHD_stop_daemon, then frees the logger box.
void postback_mhd_stop(struct MHD_Daemon *daemon, void *logger_box);

/// What `postback_mhd_header_layout` found.
enum {
    POSTBACK_LAYOUT_OK = 0,
    /// A line folded into the previous one (obs-fold), or fields not laid out as parsed in place.
    POSTBACK_LAYOUT_FOLDED = 1,
    /// A CR or NUL byte inside a field value.
    POSTBACK_LAYOUT_CONTROL = 2,
};

/// Checks the request's header fields as libmicrohttpd parsed them (see shim.c): one of
/// POSTBACK_LAYOUT_*. `header_bytes` (if not NULL) receives the fields' size as sent (names,
/// values, ": " and CR LF).
int postback_mhd_header_layout(struct MHD_Connection *connection, size_t *header_bytes);

/// Bytes written to socket `fd` and not yet acknowledged by the peer (SIOCOUTQ), or -1.
int postback_socket_unsent_bytes(int fd);

/// The connection's socket, or -1.
int postback_mhd_connection_fd(struct MHD_Connection *connection);

/// The per-connection pointer set in the connection-started notification, or NULL.
void *postback_mhd_socket_context(struct MHD_Connection *connection);

/// The status of the response queued on the connection (also one libmicrohttpd made itself), or 0.
unsigned int postback_mhd_http_status(struct MHD_Connection *connection);

/// The peer's IP address as text (inet_ntop) into `buffer`; 0 on success, -1 otherwise.
int postback_mhd_client_address(struct MHD_Connection *connection, char *buffer, size_t size);

#endif
