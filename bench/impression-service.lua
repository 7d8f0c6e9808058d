-- wrk script for bench/impression-service: POST one unsigned impression per request (the lines of
-- IMPRESSIONS, each wrk thread taking every Nth line and cycling through its share) to the signing
-- service, each connection pausing DELAY_MS between requests so the whole run offers a fixed rate
-- (connections x 1000 / DELAY_MS a second) instead of as many as the server can take. wrk's latency
-- is from a request's send to its reply, the pause excluded.
local counter = 0

function setup(thread)
  thread:set("thread_index", counter)
  counter = counter + 1
end

function init(args)
  local thread_count = tonumber(os.getenv("WRK_THREADS"))
  requests = {}
  local line_number = 0
  for line in io.lines(os.getenv("IMPRESSIONS")) do
    if line_number % thread_count == thread_index then
      requests[#requests + 1] = wrk.format("POST", "/impressions/sign", { ["Content-Type"] = "application/json" }, line)
    end
    line_number = line_number + 1
  end
  next_request = 0
  pause = tonumber(os.getenv("DELAY_MS"))
end

function request()
  next_request = next_request % #requests + 1
  return requests[next_request]
end

function delay()
  return pause
end
