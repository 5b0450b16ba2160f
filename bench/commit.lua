-- wrk script: every request commits a property change to a table.
--   TABLES        how many tables the threads spread over (1: one hot table)
--   TABLE_PREFIX  table names are <prefix>0 .. <prefix>N-1 in namespace bench
--   WRK_THREADS   the -t given to wrk (threads split the tables between them)
--   KIND          "tables" (default) or "views": a view commit (replaceView)
-- Each thread writes its own property key, so no change is ever lost
-- silently: done() prints the status counts (409 = a commit refused).
local tables = tonumber(os.getenv("TABLES") or "16")
local prefix = os.getenv("TABLE_PREFIX") or "bench_t"
local nthreads = tonumber(os.getenv("WRK_THREADS") or "1")
local kind = os.getenv("KIND") or "tables"
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
   -- Threads take disjoint sets of tables and go round their own set, so
   -- with as many connections as tables every table has one writer.
   local per = math.max(1, math.floor(tables / nthreads))
   local t = prefix .. tostring((id * per + counter % per) % tables)
   local body = string.format(
      '{"requirements":[],"updates":[{"action":"set-properties","updates":{"w%d":"%d"}}]}',
      id, counter)
   -- The headers given with -H (a bearer token) go with every commit.
   local headers = {["Content-Type"] = "application/json"}
   for k, v in pairs(wrk.headers) do
      headers[k] = v
   end
   return wrk.format("POST", "/v1/namespaces/bench/" .. kind .. "/" .. t, headers, body)
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
