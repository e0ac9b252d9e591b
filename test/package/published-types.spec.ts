import { execFile } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, symlinkSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, relative } from 'node:path';
import { promisify } from 'node:util';
import ts from 'typescript';
import * as mainSource from '../../lib/index.js';
import * as coreSource from '../../lib/core/index.js';

/**
 * The typings users get: each entry point's declarations as both builds
 * emit them (`tsconfig.build.json` and its CommonJS variant, with
 * `stripInternal`), read with the TypeScript compiler. Nothing tagged
 * `@internal` is part of an entry point's surface, and what was stripped
 * is not named by what remains (apps compile with `skipLibCheck` off).
 */
const run = promisify(execFile);
const root = process.cwd();
const out = mkdtempSync(join(tmpdir(), 'nestjs-redlock-types-'));
const builds = {
  esm: { config: 'tsconfig.build.json', dir: join(out, 'esm') },
  cjs: { config: 'tsconfig.build.cjs.json', dir: join(out, 'cjs') },
};
const ENTRIES = ['', 'core', 'testing', 'terminus', 'otel'];
/**
 * Published classes and interfaces with members the library uses between
 * its own files, never users (tagged `@internal` in the source), with one
 * such member each that must be found, so the source is read right.
 */
const WITH_INTERNALS = [
  {
    name: 'Redlock',
    entry: 'core',
    source: 'lib/core/redlock.ts',
    known: 'extendLock',
  },
  {
    name: 'Lock',
    entry: 'core',
    source: 'lib/core/lock.ts',
    known: 'markLost',
  },
  {
    name: 'LockManager',
    entry: 'core',
    source: 'lib/core/lock-manager.ts',
    known: 'releaseLock',
  },
  {
    name: 'InMemoryRedlock',
    entry: 'testing',
    source: 'lib/testing/in-memory-redlock.ts',
    known: 'nodes',
  },
  {
    name: 'LockService',
    entry: '',
    source: 'lib/lock.service.ts',
    known: 'logger',
  },
  {
    name: 'TestClock',
    entry: 'testing',
    source: 'lib/testing/test-clock.ts',
    known: 'schedule',
  },
];

/** The members of class or interface `name` in a source file that are tagged `@internal`. */
function internalMembers(source: string, name: string): string[] {
  const file = ts.createSourceFile(
    source,
    readFileSync(join(root, source), 'utf8'),
    ts.ScriptTarget.ES2022,
    true,
  );
  const internal = (node: ts.Node) =>
    ts.getJSDocTags(node).some((t) => t.tagName.text === 'internal');
  const names: string[] = [];
  for (const statement of file.statements) {
    if (
      !(
        ts.isClassDeclaration(statement) || ts.isInterfaceDeclaration(statement)
      ) ||
      statement.name?.text !== name
    )
      continue;
    for (const member of statement.members) {
      if (ts.isConstructorDeclaration(member)) {
        // Parameter properties: each public one is a member.
        for (const p of member.parameters)
          if (
            ts.getModifiers(p)?.length &&
            internal(p) &&
            ts.isIdentifier(p.name)
          )
            names.push(p.name.text);
      } else if (
        internal(member) &&
        member.name &&
        ts.isIdentifier(member.name)
      )
        names.push(member.name.text);
    }
  }
  return names;
}

beforeAll(async () => {
  const tsc = join(root, 'node_modules/typescript/bin/tsc');
  await Promise.all(
    Object.values(builds).map(({ config, dir }) =>
      run(process.execPath, [
        tsc,
        '-p',
        config,
        '--outDir',
        dir,
        '--emitDeclarationOnly',
      ]),
    ),
  );
  await run(process.execPath, [
    'scripts/write-cjs-package.mjs',
    builds.cjs.dir,
  ]);
  // Peers (Nest, ioredis, terminus, OpenTelemetry) resolve from here.
  symlinkSync(join(root, 'node_modules'), join(out, 'node_modules'));
}, 180_000);

afterAll(() => rmSync(out, { recursive: true, force: true }));

/** A program over one build's entry points, as an app with `skipLibCheck` off. */
function programOf(dir: string, cjs: boolean): ts.Program {
  return ts.createProgram(
    ENTRIES.map((e) => join(dir, e, 'index.d.ts')),
    {
      module: cjs ? ts.ModuleKind.CommonJS : ts.ModuleKind.NodeNext,
      moduleResolution: cjs
        ? ts.ModuleResolutionKind.Bundler
        : ts.ModuleResolutionKind.NodeNext,
      target: ts.ScriptTarget.ES2022,
      strict: true,
      skipLibCheck: false,
      noEmit: true,
      types: ['node'],
      typeRoots: [join(root, 'node_modules/@types')],
    },
  );
}

/** Each entry's exported names, with their declarations and members' declarations. */
function surface(program: ts.Program, dir: string) {
  const checker = program.getTypeChecker();
  const found = new Map<string, ts.Declaration[]>();
  for (const entry of ENTRIES) {
    const file = program.getSourceFile(join(dir, entry, 'index.d.ts'))!;
    const moduleSymbol = checker.getSymbolAtLocation(file)!;
    for (const exported of checker.getExportsOfModule(moduleSymbol)) {
      const symbol =
        exported.flags & ts.SymbolFlags.Alias
          ? checker.getAliasedSymbol(exported)
          : exported;
      const declarations = [...(symbol.declarations ?? [])];
      const types: ts.Type[] = [];
      if (symbol.flags & (ts.SymbolFlags.Class | ts.SymbolFlags.Interface))
        types.push(checker.getDeclaredTypeOfSymbol(symbol));
      if (symbol.flags & ts.SymbolFlags.Value)
        types.push(checker.getTypeOfSymbol(symbol));
      for (const type of types) {
        for (const member of checker.getPropertiesOfType(type))
          declarations.push(...(member.declarations ?? []));
        for (const signature of [
          ...type.getConstructSignatures(),
          ...type.getCallSignatures(),
        ])
          if (signature.declaration) declarations.push(signature.declaration);
      }
      found.set(`${entry || 'main'}:${exported.name}`, declarations);
    }
  }
  return { checker, found };
}

/** The member names of an exported class or interface, as users see them. */
function membersOf(
  program: ts.Program,
  dir: string,
  entry: string,
  name: string,
) {
  const checker = program.getTypeChecker();
  const file = program.getSourceFile(join(dir, entry, 'index.d.ts'))!;
  const exported = checker
    .getExportsOfModule(checker.getSymbolAtLocation(file)!)
    .find((s) => s.name === name);
  if (!exported) throw new Error(`${entry || 'main'} does not export ${name}`);
  const symbol = checker.getAliasedSymbol(exported);
  return checker
    .getPropertiesOfType(checker.getDeclaredTypeOfSymbol(symbol))
    .map((p) => p.name);
}

describe.each(Object.entries(builds))(
  'the published typings (%s build)',
  (build, { dir }) => {
    let program: ts.Program;
    beforeAll(() => {
      program = programOf(dir, build === 'cjs');
    });

    it('no declaration of an entry point, nor any member of one, is tagged @internal', () => {
      const { found } = surface(program, dir);
      expect(found.size).toBeGreaterThan(50);
      const tagged: string[] = [];
      for (const [name, declarations] of found)
        for (const declaration of declarations)
          if (
            ts
              .getJSDocTags(declaration)
              .some((t) => t.tagName.text === 'internal')
          )
            tagged.push(
              `${name} (${relative(dir, declaration.getSourceFile().fileName)}: ${declaration.getText().split('\n')[0]})`,
            );
      expect(tagged).toEqual([]);
    });

    it("the library's internal members are not in the published classes (Redlock, Lock, LockManager, InMemoryRedlock...)", () => {
      for (const { name, entry, source, known } of WITH_INTERNALS) {
        const internal = internalMembers(source, name);
        expect(internal).toContain(known);
        const members = membersOf(program, dir, entry, name);
        expect(members.length).toBeGreaterThan(0);
        expect({ [name]: members.filter((m) => internal.includes(m)) }).toEqual(
          { [name]: [] },
        );
      }
      // What users do use stays.
      expect(membersOf(program, dir, 'core', 'LockManager')).toEqual(
        expect.arrayContaining([
          'acquire',
          'using',
          'inspect',
          'quit',
          'stats',
        ]),
      );
      expect(membersOf(program, dir, 'core', 'Lock')).toEqual(
        expect.arrayContaining([
          'resources',
          'value',
          'ttl',
          'signal',
          'extend',
        ]),
      );
    });

    it('what was stripped is not named by what remains: the typings of every entry point compile with skipLibCheck off', () => {
      // Errors in the peers' own typings are theirs; ours must have none.
      const ours = ts
        .getPreEmitDiagnostics(program)
        .filter((d) => d.file?.fileName.startsWith(dir))
        .map(
          (d) =>
            `${relative(dir, d.file!.fileName)}: ${ts.flattenDiagnosticMessageText(d.messageText, ' ')}`,
        );
      expect(ours).toEqual([]);
    });
  },
);

describe('the entry points', () => {
  it('nestjs-redlock/core leaves out the errors only the Nest layer throws, which nestjs-redlock exports; WakeOnRelease is a type only', () => {
    const core = Object.keys(coreSource);
    const main = Object.keys(mainSource);
    for (const nestOnly of [
      'LockKeyError',
      'LockServiceUnavailableError',
      'LockUpgradeError',
    ]) {
      expect(core).not.toContain(nestOnly);
      expect(main).toContain(nestOnly);
    }
    expect(core).not.toContain('WakeOnRelease');
    expect(core).toEqual(
      expect.arrayContaining(['Redlock', 'Lock', 'JitteredRetry']),
    );
  });
});
