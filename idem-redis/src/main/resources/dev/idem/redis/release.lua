-- Runs after prelude.lua and read-owner.lua.
-- KEYS[1] record; ARGV: owner. Returns 1 if removed, or if there is no live record (released
-- before, or expired); 0 if another owner holds it or it is completed.
if not live then
  return 1
end
if r[1] ~= 'IN_PROGRESS' or r[2] ~= ARGV[1] then
  return 0
end
redis.call('DEL', k)
return 1
