// The package is "type": "module"; the CommonJS build needs its own marker so
// Node reads dist/cjs/*.js as CommonJS. Takes the build's directory
// (default dist/cjs; test/package builds the package elsewhere).
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';

const dir = process.argv[2] ?? 'dist/cjs';
writeFileSync(
  join(dir, 'package.json'),
  JSON.stringify({ type: 'commonjs' }) + '\n',
);
