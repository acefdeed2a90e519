-- Shared wrk script: POST body (env WRK_BODY) with the bearer token (env WRK_TOKEN) when
-- WRK_BODY is set, else GET; prints one machine-readable line at the end. Loopback only.
local token = os.getenv("WRK_TOKEN")
local body = os.getenv("WRK_BODY")
wrk.headers["Authorization"] = "Bearer " .. token
if body and body ~= "" then
	wrk.method = "POST"
	wrk.body = body
	wrk.headers["Content-Type"] = "application/json"
end
function done(summary, latency, requests)
	local secs = summary.duration / 1e6
	local bad = summary.errors.status + summary.errors.connect + summary.errors.read +
		summary.errors.write + summary.errors.timeout
	io.write(string.format("RESULT %d %.1f %.2f %.2f %d\n", summary.requests,
		summary.requests / secs, latency:percentile(50) / 1000, latency:percentile(99) / 1000, bad))
end
