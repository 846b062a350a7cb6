-- wrk script: POST /notes to the notes service, each request with a new Idempotency-Key (a create).
--   wrk -t2 -c16 -d20s --latency -s tools/idem-benchmarks/src/main/wrk/post-notes.lua http://127.0.0.1:8080
-- Each wrk thread has its own key prefix, so no two requests of a run share a key.
local counter = 0
local prefix = "t"

function setup(thread)
  thread:set("id", tostring(math.random(1, 1000000000)))
end

function init(args)
  prefix = id or tostring(math.random(1, 1000000000))
end

function request()
  counter = counter + 1
  return wrk.format("POST", "/notes",
    { ["Content-Type"] = "application/json", ["Idempotency-Key"] = prefix .. "-" .. counter .. "-" .. os.time() },
    '{"title":"hello"}')
end
