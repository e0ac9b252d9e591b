// The package is "type": "module"; the CommonJS build needs its own marker so
// Node reads dist/cjs/*.js as CommonJS.
import { writeFileSync } from 'node:fs';
writeFileSync(
  'dist/cjs/package.json',
  JSON.stringify({ type: 'commonjs' }) + '\n',
);
