-- wrk script: every request creates a new table in namespace bench.
--   RUN  a prefix for the table names, so runs against one catalog never
--        reuse a name (default "c")
-- Names are <RUN><thread>_<n>: unique per wrk thread, whatever the
-- connections per thread. done() prints the status counts: anything but
-- 200 is a create refused (400 an overlap, 409 a name taken).
local run = os.getenv("RUN") or "c"
local threads = {}
local next_id = 0

function setup(thread)
   thread:set("id", next_id)
   next_id = next_id + 1
   table.insert(threads, thread)
end

counter = 0
statuses = {}

function request()
   counter = counter + 1
   local body = string.format(
      '{"name":"%s%d_%d","schema":{"type":"struct","fields":[{"id":1,"name":"id","type":"long","required":false}]}}',
      run, id, counter)
   local headers = {["Content-Type"] = "application/json"}
   for k, v in pairs(wrk.headers) do
      headers[k] = v
   end
   return wrk.format("POST", "/v1/namespaces/bench/tables", headers, body)
end

function response(status, headers, body)
   statuses[status] = (statuses[status] or 0) + 1
end

function done(summary, latency, requests)
   local total = {}
   for _, t in ipairs(threads) do
      for code, n in pairs(t:get("statuses")) do
         total[code] = (total[code] or 0) + n
      end
   end
   for code, n in pairs(total) do
      io.write(string.format("status %d: %d\n", code, n))
   end
end
