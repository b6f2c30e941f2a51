-- The counters of one pool, read in one step so that they agree with each other.
-- KEYS: idle, counts, stats
-- Reply: {sessions, {url, sessions, ...}, {started, released, expired, rebound, epoch}, dropped keys}
local idle, counts, stats = pool_keys('idle', 'counts', 'stats')

return {redis.call('ZCARD', idle), redis.call('HGETALL', counts),
        redis.call('HMGET', stats, 'started', 'released', 'expired', 'rebound', 'epoch'), dropped}
