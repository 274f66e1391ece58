-- wrk script: the fan-out benchmark's first turn (a user message; the server
-- answers with a word_count tool call), non-streaming, keep-alive.
--   wrk -t1 -c64 -d5s -s tools/rath-fake-llm/wrk_chat.lua http://127.0.0.1:PORT/v1/chat/completions
-- WRK_TURN=tool sends the second turn instead (the server answers "done: 12").
local turn = os.getenv("WRK_TURN") or "user"
local tools = '[{"type":"function","function":{"name":"word_count","description":"Count the whitespace-separated words in a text.","parameters":{"type":"object","properties":{"text":{"type":"string"}},"required":["text"],"additionalProperties":false}}}]'
local system = '{"role":"system","content":"You count words. Always call the word_count tool, then report its result."}'
local user = '{"role":"user","content":"please count the words of session 42 w w w w w w"}'
local messages = '[' .. system .. ',' .. user .. ']'
if turn == "tool" then
  messages = '[' .. system .. ',' .. user ..
    ',{"role":"assistant","content":null,"tool_calls":[{"id":"call_1","type":"function","function":{"name":"word_count","arguments":"{\\"text\\":\\"please count the words of session 42 w w w w w w\\"}"}}]}' ..
    ',{"role":"tool","tool_call_id":"call_1","content":"12"}]'
end
wrk.method = "POST"
wrk.headers["Content-Type"] = "application/json"
wrk.headers["Authorization"] = "Bearer sk-fake-local"
wrk.body = '{"model":"fake-model","messages":' .. messages .. ',"tools":' .. tools .. (STREAM_EXTRA or '') .. '}'

-- Count non-200 answers so that a broken server cannot pass for a fast one.
local bad = 0
function response(status, headers, body)
  if status ~= 200 then bad = bad + 1 end
end
