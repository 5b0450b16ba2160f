-- wrk script: every request is one client-credentials grant at
-- POST /v1/oauth/tokens, for the client CLIENT_ID with secret
-- CLIENT_SECRET (both URL-safe: floe's secrets are base64url). Answers
-- other than 200 are counted and printed at the end.
wrk.method = "POST"
wrk.headers["Content-Type"] = "application/x-www-form-urlencoded"
wrk.body = "grant_type=client_credentials&scope=catalog&client_id=" .. os.getenv("CLIENT_ID") ..
	"&client_secret=" .. os.getenv("CLIENT_SECRET")

local threads = {}

function setup(thread)
	table.insert(threads, thread)
end

function init(args)
	failed = 0
end

function response(status, headers, body)
	if status ~= 200 then
		failed = failed + 1
	end
end

function done(summary, latency, requests)
	local n = 0
	for _, t in ipairs(threads) do
		n = n + t:get("failed")
	end
	io.write(string.format("grants not answered 200: %d\n", n))
end
