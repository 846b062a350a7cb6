-- Runs after prelude.lua. Reads only: no write, so no replication and no WAIT.
-- KEYS[1] record; no ARGV. Returns {'ABSENT'} for a missing or expired record; else
-- {state, fingerprint, lease_until or '', completed_at or '', expires_at, now, response or ''}
-- with every time in ms on the server's clock (completed_at is '' for a record completed before
-- completions recorded their time).
local r = redis.call('HMGET', k, 'state', 'fingerprint', 'lease_until', 'completed_at', 'expires_at', 'response')
local state, fp, expiresAt = r[1], r[2], tonumber(r[5])
if not state or not expiresAt or now >= expiresAt then
  return {'ABSENT'}
end
if not fp or (state == 'IN_PROGRESS' and not r[3]) or (state == 'COMPLETED' and not r[6])
    or (state ~= 'IN_PROGRESS' and state ~= 'COMPLETED') then
  return redis.error_reply('IDEMCORRUPT the hash ' .. k .. ' is not a valid idem record')
end
return {state, fp, r[3] or '', r[4] or '', r[5], ms(now), r[6] or ''}
