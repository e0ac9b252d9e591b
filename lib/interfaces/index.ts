export * from './redlock-module-options.interface.js';
export * from './locked-options.interface.js';
