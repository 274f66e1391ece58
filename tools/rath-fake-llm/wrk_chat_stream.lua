-- wrk script: like wrk_chat.lua but streaming (SSE with stream_options.include_usage).
--   wrk -t1 -c64 -d5s -s tools/rath-fake-llm/wrk_chat_stream.lua http://127.0.0.1:PORT/v1/chat/completions
STREAM_EXTRA = ',"stream":true,"stream_options":{"include_usage":true}'
local dir = debug.getinfo(1, "S").source:match("^@(.*/)") or "./"
dofile(dir .. "wrk_chat.lua")
