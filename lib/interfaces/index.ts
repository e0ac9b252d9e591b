export * from './redlock-module-options.interface.js';
