-- wrk script for bench/serve: POST unique, really signed postbacks (one per line of POSTBACKS),
-- each wrk thread taking every Nth line so no postback is sent twice. A thread stops when its share
-- runs out. There is deliberately no response() callback: it would make wrk parse every response
-- into Lua, costing the load generator more CPU than the server's HTTP work on this 2-core machine.
-- wrk itself counts answers that are not 2xx/3xx (errors.status); the server only answers 200 with
-- a 2xx, so ok = completed requests - errors.status.
local threads = {}
local counter = 0

function setup(thread)
  thread:set("thread_index", counter)
  counter = counter + 1
  table.insert(threads, thread)
end

function init(args)
  local path = os.getenv("POSTBACKS")
  local thread_count = tonumber(os.getenv("WRK_THREADS"))
  local target = os.getenv("TARGET_PATH")
  requests = {}
  local line_number = 0
  for line in io.lines(path) do
    if line_number % thread_count == thread_index then
      requests[#requests + 1] = wrk.format("POST", target, { ["Content-Type"] = "application/json" }, line)
    end
    line_number = line_number + 1
  end
  next_request = 0
  exhausted = 0
end

function request()
  next_request = next_request + 1
  if next_request > #requests then
    exhausted = 1
    wrk.thread:stop()
    return wrk.format("GET", "/livez")
  end
  return requests[next_request]
end

function done(summary, latency, requests)
  local any_exhausted = 0
  for _, thread in ipairs(threads) do
    any_exhausted = math.max(any_exhausted, thread:get("exhausted"))
  end
  local e = summary.errors
  local total_other = e.status
  local total_ok = summary.requests - e.status
  io.write(string.format("WRK ok=%d other=%d duration_us=%d p50_us=%d p90_us=%d p99_us=%d max_us=%d errors_connect=%d errors_read=%d errors_write=%d errors_timeout=%d exhausted=%d\n",
    total_ok, total_other, summary.duration, latency:percentile(50), latency:percentile(90), latency:percentile(99),
    latency.max, e.connect, e.read, e.write, e.timeout, any_exhausted))
end
