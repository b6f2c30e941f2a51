-- The counters of one pool, read in one step so that they agree with each other.
-- KEYS: idle, counts, stats
-- Reply: {sessions, {url, sessions, ...}, {started, released, expired, rebound, epoch}, dropped keys}
local idle, counts, stats = KEYS[1], KEYS[2], KEYS[3]

local dropped = {}
local function expect(key, kind)
  local found = redis.call('TYPE', key)['ok']
  if found ~= 'none' and found ~= kind then
    redis.call('DEL', key)
    dropped[#dropped + 1] = key .. ' (' .. found .. ')'
  end
end
expect(idle, 'zset')
expect(counts, 'hash')
expect(stats, 'hash')

return {redis.call('ZCARD', idle), redis.call('HGETALL', counts),
        redis.call('HMGET', stats, 'started', 'released', 'expired', 'rebound', 'epoch'), dropped}
