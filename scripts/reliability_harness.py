"""Shared pieces of the reliability scripts (crash-test, disk-faults, slow-clients): finding the
release binary, starting `postback serve` and waiting for it to listen, plain HTTP/1.1 requests, and
reading the spool by SegmentReader's rules. Not a script of its own."""
import atexit
import json
import os
import signal
import socket
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "spark"))
import published_schema  # noqa: E402  (generated from Sources/AggregateSchema)

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
SKAN_PATH = "/.well-known/skadnetwork/report-attribution/"
MAXIMUM_LINE_BYTES = 4 << 20  # SegmentReader.maximumLineBytes


def add_binary_arguments(parser):
    parser.add_argument("--binary", help="the postback binary (default: SCRATCH/release/postback, built if missing)")
    parser.add_argument("--scratch-path", default=os.environ.get("SCRATCH_PATH", ".build"),
                        help="SwiftPM scratch path of the release build (default .build)")


def find_binary(args):
    """The release binary: --binary, or SCRATCH/release/postback (built there when missing)."""
    if args.binary:
        path = os.path.abspath(args.binary)
        if not os.access(path, os.X_OK):
            sys.exit(f"FAIL: {path} is not an executable")
        return path
    scratch = os.path.join(ROOT, args.scratch_path) if not os.path.isabs(args.scratch_path) else args.scratch_path
    path = os.path.join(scratch, "release", "postback")
    if not os.access(path, os.X_OK):
        print(f"== building release into {scratch}", flush=True)
        subprocess.run(["swift", "build", "-c", "release", "--product", "postback", "--scratch-path", scratch],
                       cwd=ROOT, check=True, stdout=subprocess.DEVNULL)
    return path


def work_directory(args, name):
    if getattr(args, "work", None):
        os.makedirs(args.work, exist_ok=True)
        return os.path.abspath(args.work)
    return tempfile.mkdtemp(prefix=f"postback-{name}-")


def generate(binary, key, count, seed, start=0, kinds=None):
    """`count` signed test postbacks (JSON lines as bytes), verifiable with --trust-key KEY."""
    command = [binary, "generate", "--key", key, "--create-key", "--count", str(count), "--seed", str(seed), "--start", str(start)]
    if kinds:
        command += ["--kinds", kinds]
    output = subprocess.run(command, check=True, stdout=subprocess.PIPE).stdout
    return [line for line in output.split(b"\n") if line]


def serve_options(text=None):
    """Extra receiver settings from SERVE_OPTIONS, the same JSON fragment bench/serve takes
    (e.g. '"threads": 3,'), so every script can run the receiver with other settings.
    A fragment that is not JSON members stops the script with the remedy (never a traceback)."""
    text = os.environ.get("SERVE_OPTIONS", "") if text is None else text
    fragment = text.strip().rstrip(",")
    if not fragment:
        return {}
    try:
        options = json.loads("{" + fragment + "}")
    except json.JSONDecodeError as error:
        sys.exit(f"FAIL: SERVE_OPTIONS is not JSON object members ({error}): {text!r}; "
                 "write e.g. SERVE_OPTIONS='\"threads\": 3,'")
    return options


def write_config(path, data_dir, key, **overrides):
    """The receiver's config: the scripts' settings, then SERVE_OPTIONS (the mode under test) on top,
    except for a key the script sets itself (its check depends on it)."""
    config = {"listen": "127.0.0.1:0", "data_dir": data_dir, "writer_id": "rx1", "allow_development": True,
              "trust_keys": [key], "log_level": "info"}
    for name, value in serve_options().items():
        if name not in overrides:
            config[name] = value
    config.update(overrides)
    with open(path, "w") as handle:
        json.dump(config, handle, indent=2)
    return path


_servers = []


def install_cleanup():
    """On any exit, also SIGTERM or SIGINT of the script, no receiver it started is left running
    (the scripts' `finally` blocks, such as unmounting, run too)."""
    def stop_all():
        for server in _servers:
            if server.alive():
                server.force_stop()

    def on_signal(number, _frame):
        sys.exit(128 + number)

    atexit.register(stop_all)
    signal.signal(signal.SIGTERM, on_signal)
    signal.signal(signal.SIGINT, on_signal)


class Server:
    """One `postback serve` process, its stderr in a log file. `start` returns once the server's
    `listening` log line has appeared (its readiness signal), with the address it names."""

    def __init__(self, binary, config, log_path, wrapper=(), listen=None):
        _servers.append(self)
        self.binary = binary
        self.config = config
        self.log_path = log_path
        self.wrapper = list(wrapper)
        self.listen = listen
        self.process = None
        self.address = None

    def start(self, timeout=60):
        command = self.wrapper + [self.binary, "serve", "--config", self.config]
        if self.listen:
            command += ["--listen", self.listen]
        self.log = open(self.log_path, "ab")
        offset = self.log.tell()
        self.process = subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=self.log)
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            address = self._listening_address(offset)
            if address:
                self.address = address
                return address
            if self.process.poll() is not None:
                raise RuntimeError(f"the server exited with {self.process.returncode} before listening; see {self.log_path}")
            time.sleep(0.005)
        raise RuntimeError(f"the server did not listen within {timeout} s; see {self.log_path}")

    def _listening_address(self, offset):
        with open(self.log_path, "rb") as handle:
            handle.seek(offset)
            for line in handle:
                if b'"msg":"listening"' in line:
                    try:
                        return json.loads(line)["address"]
                    except (ValueError, KeyError):
                        return None
        return None

    @property
    def pid(self):
        """The receiver's pid: the child of the wrapper (strace) when there is one."""
        if not self.wrapper:
            return self.process.pid
        with open(f"/proc/{self.process.pid}/task/{self.process.pid}/children") as handle:
            children = handle.read().split()
        return int(children[0]) if children else self.process.pid

    def kill(self):
        """SIGKILL, and wait for the process to be gone."""
        self.process.send_signal(signal.SIGKILL)
        self.process.wait()
        self.log.close()

    def stop(self, timeout=30):
        """SIGTERM (graceful stop); returns the exit status."""
        if self.process.poll() is None:
            # To the receiver itself: a tracer passes signals on, but stopping it would detach instead.
            os.kill(self.pid, signal.SIGTERM)
        try:
            status = self.process.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            self.force_stop()
            status = self.process.returncode
        self.log.close()
        return status

    def force_stop(self):
        """SIGKILL to the receiver and to its wrapper: a tracer killed alone would leave it running."""
        for pid in {self.pid, self.process.pid}:
            try:
                os.kill(pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
        self.process.wait()

    def alive(self):
        return self.process is not None and self.process.poll() is None

    def status_field(self, name):
        """A number from /proc/PID/status (e.g. VmRSS in KiB, Threads); 0 when absent."""
        with open(f"/proc/{self.pid}/status") as handle:
            for line in handle:
                if line.startswith(name + ":"):
                    return int(line.split()[1])
        return 0

    def rss_kib(self):
        return self.status_field("VmRSS")

    def thread_count(self):
        return self.status_field("Threads")

    def open_fds(self):
        return len(os.listdir(f"/proc/{self.pid}/fd"))


def free_port():
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def wait_until_serving(address, timeout=60, process=None):
    """Polls GET /livez until it answers (for servers whose log may not be readable, e.g. under strace)."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if process is not None and process.poll() is not None:
            raise RuntimeError(f"the server exited with {process.returncode}")
        try:
            status, _ = request(address, "GET", "/livez", timeout=1)
            if status == 200:
                return
        except OSError:
            pass
        time.sleep(0.01)
    raise RuntimeError(f"{address} did not answer /livez within {timeout} s")


def request(address, method, path, body=b"", timeout=10, headers=None):
    """One HTTP/1.1 request on a fresh connection: (status, body bytes)."""
    host, port = address.rsplit(":", 1)
    with socket.create_connection((host, int(port)), timeout=timeout) as connection:
        connection.settimeout(timeout)
        lines = [f"{method} {path} HTTP/1.1", f"Host: {address}", "Connection: close"]
        if method == "POST":
            lines += ["Content-Type: application/json", f"Content-Length: {len(body)}"]
        lines += [f"{name}: {value}" for name, value in (headers or {}).items()]
        connection.sendall(("\r\n".join(lines) + "\r\n\r\n").encode() + body)
        return read_response(connection)


def read_response(connection):
    data = b""
    while b"\r\n\r\n" not in data:
        chunk = connection.recv(65536)
        if not chunk:
            raise ConnectionError("connection closed before the response headers")
        data += chunk
    head, rest = data.split(b"\r\n\r\n", 1)
    status_line, *header_lines = head.decode("latin-1").split("\r\n")
    status = int(status_line.split(" ")[1])
    length = 0
    for line in header_lines:
        name, _, value = line.partition(":")
        if name.strip().lower() == "content-length":
            length = int(value.strip())
    while len(rest) < length:
        chunk = connection.recv(65536)
        if not chunk:
            raise ConnectionError("connection closed inside the response body")
        rest += chunk
    return status, rest[:length]


class Spool:
    """What the postbacks spool holds, read by SegmentReader's rules: a last line without its newline,
    or a last line that is not a record, or a line with a NUL byte that is not a record, is torn
    (skipped, never counted); any other bad line is corrupt. `bodies` counts each stored body; `keys` each dedup key."""

    def __init__(self, data_dir, spool="postbacks"):
        self.records = []
        self.torn = []
        self.corrupt = []
        self.segments = 0
        self.bodies = {}
        self.keys = {}
        root = os.path.join(data_dir, "raw", spool)
        if not os.path.isdir(root):
            return
        for day in sorted(os.listdir(root)):
            if not day.startswith("dt="):
                continue
            for name in sorted(os.listdir(os.path.join(root, day))):
                if name.startswith("part-") and name.endswith(".jsonl"):
                    self._read(os.path.join(root, day, name))
        for record in self.records:
            body = record["body"].encode() if "body" in record else None
            self.bodies[body] = self.bodies.get(body, 0) + 1
            key = record.get("dedup_key")
            if record.get("status") == "verified" and key is not None:
                self.keys[key] = self.keys.get(key, 0) + 1

    def _read(self, path):
        self.segments += 1
        with open(path, "rb") as handle:
            data = handle.read()
        lines = data.split(b"\n")
        ends_with_newline = data.endswith(b"\n")
        if ends_with_newline or not data:
            lines.pop()  # nothing after the last newline (or an empty file): no line there
        for number, line in enumerate(lines, start=1):
            last = number == len(lines)
            if last and not ends_with_newline:
                self.torn.append((path, number, len(line)))
                continue
            if line.endswith(b"\r"):
                line = line[:-1]
            record = parse_record(line) if len(line) <= MAXIMUM_LINE_BYTES else None
            if record is None:
                # A line with a NUL byte is zeros a power cut left (SegmentReader.isPowerCutDamage): torn anywhere.
                (self.torn if last or b"\0" in line else self.corrupt).append((path, number, len(line)))
            else:
                self.records.append(record)

    def duplicates(self):
        return {key: count for key, count in self.keys.items() if count > 1}


def parse_record(line):
    """A spool record as SpoolRecord(line:) would accept it (duplicate keys rejected), or None."""
    def no_duplicates(pairs):
        keys = [key for key, _ in pairs]
        if len(keys) != len(set(keys)):
            raise ValueError("duplicate key")
        return dict(pairs)
    try:
        record = json.loads(line.decode("utf-8"), object_pairs_hook=no_duplicates)
    except (ValueError, UnicodeDecodeError):
        return None
    if not isinstance(record, dict) or not isinstance(record.get("received_at"), str) or not isinstance(record.get("status"), str):
        return None
    if not isinstance(record.get("body"), str) and not isinstance(record.get("body_base64"), str):
        return None
    return record


# The tables `postback aggregate` publishes (AggregateTables.all): the checks compare every one.
AGGREGATE_TABLES = tuple(published_schema.DAY_TABLES)


def aggregate(binary, data_dir, days, schemas=None):
    """Runs `postback aggregate` over `days`; returns (exit status, {relative CSV path: bytes}, output)."""
    schemas = schemas or os.path.join(ROOT, "Samples", "schemas")
    first, last = min(days), max(days)
    # The stores these checks build were written today, a UTC day that is not over: allow it. Their
    # postbacks are signed with test keys (development): that is what the run is for (--allow-dev).
    run = subprocess.run([binary, "aggregate", "--data", data_dir, "--schemas", schemas, "--from", first, "--to", last, "--allow-open-day",
                          "--allow-dev"],
                         stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
    tables = {}
    agg = os.path.join(data_dir, "agg")
    for table in AGGREGATE_TABLES:
        for day in days:
            path = os.path.join(agg, table, f"dt={day}", "part-00000.csv")
            if os.path.exists(path):
                with open(path, "rb") as handle:
                    tables[f"{table}/dt={day}"] = handle.read()
    return run.returncode, tables, run.stdout.decode(errors="replace")


def spool_days(data_dir, spool="postbacks"):
    root = os.path.join(data_dir, "raw", spool)
    return sorted(name[3:] for name in os.listdir(root) if name.startswith("dt=")) if os.path.isdir(root) else []


def percentile(values, fraction):
    if not values:
        return float("nan")
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(fraction * len(ordered)))]


class Checks:
    """Collects PASS/FAIL lines; `finish` prints the tally and exits 0 only if nothing failed."""

    def __init__(self, name):
        self.name = name
        self.failed = 0
        self.passed = 0

    def check(self, condition, message):
        if condition:
            self.passed += 1
            print(f"PASS: {message}", flush=True)
        else:
            self.failed += 1
            print(f"FAIL: {message}", flush=True)
        return condition

    def finish(self):
        print(f"{self.name}: {self.passed} passed, {self.failed} failed", flush=True)
        sys.exit(1 if self.failed else 0)
