export * from './fenced-store.js';
