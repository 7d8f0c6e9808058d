"""A fault-injecting HTTP/1.1 proxy on loopback, for the network-fault checks (scripts/network-faults).

It sits between a client (the receiver shipping to the object store, or forwarding to a partner) and
a server (SeaweedFS, scripts/partner-server), reads just enough of HTTP/1.1 to know where each
request and response begins and ends (Content-Length, chunked, 1xx interim answers, HEAD), and for
each request decides, at random with the probability set, on one fault:

  latency          every chunk in either direction waits LATENCY ± JITTER seconds (order kept)
  reset_request    the connection is reset (RST) after a random part of the request was passed on
  reset_response   the whole request is passed on; the response is cut by a reset after a random part
  drop_response    the whole request is passed on and the server answers it, but the client gets
                   a reset instead of the answer: the server did the work, the client cannot know
                   (the ambiguous PUT)
  stall            a random part of the request is passed on, then nothing more in either direction;
                   the connection stays open and silent until the client gives up
  blackhole        every connection is accepted and nothing is passed on; silent until the client gives up

Faults are per request, so a keep-alive connection meets them too. `stats` counts what was done
(by fault and method) and the servers' statuses by method (a `PUT 412` is a conditional create that
found the object). Loopback only; a library for the scripts, not a script of its own.
"""
import collections
import random
import socket
import struct
import threading
import time

FAULTS = ("clean", "latency", "reset_request", "reset_response", "drop_response", "stall", "blackhole")


def reset(sock):
    """Close with a TCP RST (SO_LINGER 0), as a middlebox or a crashed peer does."""
    try:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
        # Wakes the other pump's recv on this socket (close alone would not, and the RST would wait
        # for it); SHUT_RD sends nothing to the peer.
        sock.shutdown(socket.SHUT_RD)
    except OSError:
        pass
    try:
        sock.close()
    except OSError:
        pass


class Proxy:
    def __init__(self, upstream_port, seed=0, name="proxy"):
        self.upstream = ("127.0.0.1", upstream_port)
        self.name = name
        self.rng = random.Random(seed)
        self.lock = threading.Lock()
        self.mode, self.probability, self.latency, self.jitter = "clean", 0.0, 0.0, 0.0
        self.stats = collections.Counter()
        self.listener = socket.socket()
        self.listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        self.listener.bind(("127.0.0.1", 0))
        self.listener.listen(256)
        self.port = self.listener.getsockname()[1]
        self.closed = False
        threading.Thread(target=self._accept, daemon=True).start()

    def set(self, mode, probability=1.0, latency=0.0, jitter=0.0):
        """The fault from now on: one of FAULTS. Connections already stalled stay stalled."""
        assert mode in FAULTS, mode
        with self.lock:
            self.mode, self.probability, self.latency, self.jitter = mode, probability, latency, jitter

    def count(self, key, amount=1):
        with self.lock:
            self.stats[key] += amount

    def close(self):
        self.closed = True
        try:
            self.listener.close()
        except OSError:
            pass

    # Per request.

    def decide(self):
        """(fault, delay function) for a request that begins now."""
        with self.lock:
            mode, probability = self.mode, self.probability
            fault = mode if mode in ("blackhole", "latency") or self.rng.random() < probability else "clean"
            unit = self.rng.random()
        return fault, unit

    def delay(self):
        with self.lock:
            if self.latency <= 0:
                return 0.0
            return max(0.0, self.latency + self.rng.uniform(-self.jitter, self.jitter))

    def _accept(self):
        while not self.closed:
            try:
                client, _ = self.listener.accept()
            except OSError:
                return
            self.count("connections")
            client.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)  # no delay but the one injected
            threading.Thread(target=Connection(self, client).run, daemon=True).start()


class Request:
    def __init__(self, method, fault, unit):
        self.method, self.fault, self.unit = method, fault, unit
        self.body_complete = False


class Connection:
    """One client connection and its upstream connection: two pumps, each parsing its direction."""

    def __init__(self, proxy, client):
        self.proxy = proxy
        self.client = client
        self.upstream = None
        self.requests = collections.deque()  # requests passed on whose final response has not begun
        self.dead = threading.Event()  # reset or closed: both pumps stop
        self.raw = False  # framing lost (an early final answer to a request with a body): pass bytes on as they are

    def run(self):
        with self.proxy.lock:
            blackhole = self.proxy.mode == "blackhole"
        if blackhole:
            self.proxy.count("blackhole connections")
            return self.silence()
        try:
            self.upstream = socket.create_connection(self.proxy.upstream, timeout=10)
            self.upstream.settimeout(None)
            self.upstream.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        except OSError:
            self.proxy.count("upstream refused")
            return reset(self.client)
        threading.Thread(target=self.responses, daemon=True).start()
        self.requests_pump()

    def silence(self):
        """Read and drop what the client sends until it gives up; answer nothing."""
        if self.upstream is not None:
            reset(self.upstream)
        self.dead.set()
        try:
            while self.client.recv(65536):
                pass
        except OSError:
            pass
        try:
            self.client.close()
        except OSError:
            pass

    def kill(self):
        """Reset the client's connection; close the server's."""
        self.dead.set()
        reset(self.client)
        if self.upstream is not None:
            try:
                self.upstream.close()
            except OSError:
                pass

    def send(self, sock, data):
        delay = self.proxy.delay()
        if delay:
            time.sleep(delay)
        if self.dead.is_set():
            return False
        try:
            sock.sendall(data)
            return True
        except OSError:
            self.kill()
            return False

    # Client to server.

    def requests_pump(self):
        buffer = b""
        while not self.dead.is_set():
            try:
                chunk = self.client.recv(65536)
            except OSError:
                chunk = b""
            if not chunk:
                if not self.dead.is_set():
                    self.dead.set()
                    try:
                        self.upstream.shutdown(socket.SHUT_WR)
                    except OSError:
                        pass
                return
            if self.raw:
                if not self.send(self.upstream, chunk):
                    return
                continue
            buffer += chunk
            while buffer and not self.dead.is_set():
                if self.raw:
                    self.send(self.upstream, buffer)
                    buffer = b""
                    break
                end = buffer.find(b"\r\n\r\n")
                if end < 0:
                    break  # the head is not complete yet
                head = buffer[:end + 4]
                lines = head.decode("latin-1").split("\r\n")
                method = lines[0].split(" ")[0]
                length = 0
                for line in lines[1:]:
                    name, _, value = line.partition(":")
                    if name.strip().lower() == "content-length":
                        length = int(value.strip())
                fault, unit = self.proxy.decide()
                request = Request(method, fault, unit)
                self.proxy.count(f"{fault} {method}")
                total = len(head) + length
                if fault in ("reset_request", "stall", "blackhole"):
                    cut = 0 if fault == "blackhole" else 1 + int(unit * (total - 1))
                    sent = min(cut, len(buffer))
                    if sent:
                        self.send(self.upstream, buffer[:sent])
                    cut_remaining = cut - sent
                    if cut_remaining > 0:
                        # The cut is past what has arrived: pass on up to it, then fault.
                        while cut_remaining > 0 and not self.dead.is_set():
                            try:
                                more = self.client.recv(min(65536, cut_remaining))
                            except OSError:
                                more = b""
                            if not more:
                                break
                            self.send(self.upstream, more)
                            cut_remaining -= len(more)
                    if fault == "reset_request":
                        return self.kill()
                    return self.silence()
                self.requests.append(request)
                # Pass the head and the body on as they arrive. A request is complete before its last
                # byte is sent: the answer may come back before this thread runs again.
                sent = min(total, len(buffer))
                remaining = total - sent
                request.body_complete = remaining == 0
                if not self.send(self.upstream, buffer[:sent]):
                    return
                buffer = buffer[sent:]
                while remaining > 0 and not self.dead.is_set():
                    try:
                        more = self.client.recv(min(65536, remaining))
                    except OSError:
                        more = b""
                    if not more:
                        self.dead.set()
                        return
                    remaining -= len(more)
                    request.body_complete = remaining == 0
                    if not self.send(self.upstream, more):
                        return

    # Server to client.

    def responses(self):
        reader = Reader(self.upstream)
        while not self.dead.is_set():
            head = reader.head()
            if head is None:
                break
            status = int(head.split(b" ", 2)[1])
            if 100 <= status < 200:
                if not self.send(self.client, head):
                    return
                continue
            request = self.requests.popleft() if self.requests else Request("?", "clean", 0.0)
            self.proxy.count(f"status {request.method} {status}")
            if not request.body_complete:
                self.raw = True  # an early answer: the request's body may never come; stop parsing
            if request.fault == "drop_response":
                self.proxy.count(f"dropped answer {request.method} {status}")
                return self.kill()
            body = reader.body(head, request.method, status)
            if body is None:
                break
            if request.fault == "reset_response":
                whole = head + body
                cut = int(request.unit * len(whole))
                if cut:
                    self.send(self.client, whole[:cut])
                return self.kill()
            if not self.send(self.client, head + body):
                return
        if not self.dead.is_set():
            self.dead.set()
            try:
                self.client.shutdown(socket.SHUT_WR)
            except OSError:
                pass


class Reader:
    """Reads whole HTTP/1.1 response heads and bodies from a socket (responses are small here)."""

    def __init__(self, sock):
        self.sock = sock
        self.buffer = b""
        self.eof = False

    def fill(self):
        try:
            chunk = self.sock.recv(65536)
        except OSError:
            chunk = b""
        if not chunk:
            self.eof = True
            return False
        self.buffer += chunk
        return True

    def head(self):
        while b"\r\n\r\n" not in self.buffer:
            if not self.fill():
                return None
        end = self.buffer.index(b"\r\n\r\n") + 4
        head, self.buffer = self.buffer[:end], self.buffer[end:]
        return head

    def take(self, count):
        while len(self.buffer) < count:
            if not self.fill():
                return None
        data, self.buffer = self.buffer[:count], self.buffer[count:]
        return data

    def body(self, head, method, status):
        headers = {}
        for line in head.decode("latin-1").split("\r\n")[1:]:
            name, _, value = line.partition(":")
            if name:
                headers[name.strip().lower()] = value.strip()
        if method == "HEAD" or status in (204, 304):
            return b""
        if "chunked" in headers.get("transfer-encoding", "").lower():
            body = b""
            while True:
                while b"\r\n" not in self.buffer:
                    if not self.fill():
                        return None
                end = self.buffer.index(b"\r\n") + 2
                size_line, self.buffer = self.buffer[:end], self.buffer[end:]
                body += size_line
                size = int(size_line.split(b";")[0].strip(), 16)
                if size == 0:
                    while True:  # trailers, up to the empty line
                        while b"\r\n" not in self.buffer:
                            if not self.fill():
                                return None
                        end = self.buffer.index(b"\r\n") + 2
                        line, self.buffer = self.buffer[:end], self.buffer[end:]
                        body += line
                        if line == b"\r\n":
                            return body
                data = self.take(size + 2)
                if data is None:
                    return None
                body += data
        if "content-length" in headers:
            return self.take(int(headers["content-length"]))
        while self.fill():  # no length: up to the close
            pass
        data, self.buffer = self.buffer, b""
        return data
