-- Starts every script: the record key k, "now" in milliseconds from the server's clock, and integer formatting.
if redis.replicate_commands then redis.replicate_commands() end
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local function ms(n) return string.format('%d', n) end
local k = KEYS[1]
