/**
 * Lua source of `less(a, b)`: true when the canonical decimal string `a`
 * (digits only, no leading zeros) is below `b`. Comparing lengths, then bytes,
 * keeps tokens exact at any size: Lua 5.1 numbers are doubles and lose
 * integers above 2^53, and string `<` follows the server's locale.
 */
export const LUA_DECIMAL_LESS = `
local function less(a, b)
  if #a ~= #b then return #a < #b end
  for i = 1, #a do
    local x, y = string.byte(a, i), string.byte(b, i)
    if x ~= y then return x < y end
  end
  return false
end
`;
