-- Prepended to every script by the loader (Scripts.java): the type guard of the keys a script touches.
-- A key of the wrong type (left by someone else) is dropped and reported in the reply, then treated as absent.
local dropped = {}
local function expect(key, kind)
  local found = redis.call('TYPE', key)['ok']
  if found ~= 'none' and found ~= kind then
    redis.call('DEL', key)
    dropped[#dropped + 1] = key .. ' (' .. found .. ')'
  end
end

local KIND = {binding = 'string', idle = 'zset', counts = 'hash', stats = 'hash', released = 'zset'}

-- KEYS in the order named (binding, idle, counts, stats, released), each checked for its type.
local function pool_keys(...)
  local names = {...}
  for i, name in ipairs(names) do
    expect(KEYS[i], KIND[name])
  end
  return unpack(KEYS, 1, #names)
end

