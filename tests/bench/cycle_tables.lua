-- wrk script: GET ${BENCH_PATH_PREFIX}${i} with i cycling over 0 .. BENCH_NTABLES-1, so
-- consecutive requests name different tables. Each wrk thread starts at its own offset.
--   BENCH_PATH_PREFIX=/v1/default/namespaces/lt/tables/t BENCH_NTABLES=200 \
--     wrk -t2 -c64 -d10s --latency -s cycle_tables.lua http://127.0.0.1:PORT
local prefix = os.getenv("BENCH_PATH_PREFIX")
local n = tonumber(os.getenv("BENCH_NTABLES") or "1")
local threads = 0

function setup(thread)
	thread:set("thread_no", threads)
	threads = threads + 1
end

function init(args)
	i = ((thread_no or 0) * 7919) % n
end

function request()
	i = i + 1
	if i >= n then
		i = 0
	end
	return wrk.format(nil, prefix .. i)
end
