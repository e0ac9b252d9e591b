// jest (29) cannot require() an ES module, Node (>= 20.19) can: mercurius
// requires @fastify/static, which requires content-disposition 3 (ESM
// only). This loads @fastify/static's own copy with Node's require, outside
// jest's module registry (pure functions, no state to share).
const { createRequire } = require('node:module');

module.exports = createRequire(require.resolve('@fastify/static'))(
  'content-disposition',
);
