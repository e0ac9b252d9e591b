export * from './lua-script.js';
export * from './acquire.script.js';
export * from './release.script.js';
export * from './extend.script.js';
export * from './fence.script.js';
export * from './extend-many.script.js';
export { packPlace } from './wait-queue.lua.js';
export * from './keep.script.js';
export * from './inspect.script.js';
