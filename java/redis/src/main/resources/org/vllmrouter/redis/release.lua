-- Releases one session of a pool (finish_session). With a release record, a router reconciling bindings it made
-- while the store was unreachable (or lost) will not bring the session back.
-- KEYS: binding, idle, counts, stats, released
-- ARGV: session id, now (ms), '1' to keep a release record
-- Reply: {1 if a binding was released else 0, dropped keys}
local binding, idle, counts, stats, released = KEYS[1], KEYS[2], KEYS[3], KEYS[4], KEYS[5]
local id = ARGV[1]

local dropped = {}
local function expect(key, kind)
  local found = redis.call('TYPE', key)['ok']
  if found ~= 'none' and found ~= kind then
    redis.call('DEL', key)
    dropped[#dropped + 1] = key .. ' (' .. found .. ')'
  end
end
expect(binding, 'string')
expect(idle, 'zset')
expect(counts, 'hash')
expect(stats, 'hash')
expect(released, 'zset')

if ARGV[3] == '1' then
  redis.call('ZADD', released, ARGV[2], id)
end
redis.call('ZREM', idle, id)
local bound = redis.call('GET', binding)
if not bound then
  return {0, dropped}
end
redis.call('DEL', binding)
if redis.call('HINCRBY', counts, bound, -1) <= 0 then
  redis.call('HDEL', counts, bound)
end
redis.call('HINCRBY', stats, 'released', 1)
return {1, dropped}
