import { GCProfiler } from 'node:v8';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { MAX_JSON_DEPTH, isBlank, scanJson } from './json-scan.js';

const scan = (text: string, member?: string) => scanJson(Buffer.from(text, 'utf8'), member);
const problemOf = (text: string) => scan(text).problems[0] ?? null;
const problemsOf = (text: string) => scan(text).problems;

describe('the body scan finds what PostgreSQL cannot store, at its JSON pointer', () => {
  it('a U+0000 in a string is refused at that string, however deep', () => {
    expect(problemOf('{"stages":[{"stageName":"s"},{"input":"a\\u0000b"}]}')).toEqual({
      field: '/stages/1/input',
      message: 'must not contain the NUL character (U+0000)',
    });
    expect(problemOf('[[1,2],[3,{"p":[true,"\\u0000"]}]]')?.field).toBe('/1/1/p/1');
  });

  it('a lone surrogate in a value is refused at the value: a high one alone, before a non-low escape, before a plain character; a low one alone', () => {
    for (const text of [
      '"\\ud800"',
      '"x\\uD800\\u0041"',
      '"\\udbff😀"',
      '"\\udc00"',
      '"a\\ud800\\ud800\\udc00"',
    ]) {
      expect(problemOf(`{"data":{"k":${text}}}`), text).toEqual({
        field: '/data/k',
        message: 'must not contain a lone surrogate (an unpaired \\uD800-\\uDFFF escape)',
      });
    }
  });

  it('a surrogate pair, escaped or written as UTF-8, and an escaped backslash before "ud800" are fine', () => {
    expect(problemOf('{"a":"\\ud83d\\ude00","b":"😀","c":"\\\\ud800"}')).toBeNull();
  });

  it('a bad member name is refused at the object holding it; pointer tokens are escaped (RFC 6901)', () => {
    expect(problemOf('{"metadata":{"ok":1,"\\ud800x":1}}')).toEqual({
      field: '/metadata',
      message:
        'member names must not contain a lone surrogate (an unpaired \\uD800-\\uDFFF escape)',
    });
    expect(problemOf('{"\\u0000":1}')).toEqual({
      field: '',
      message: 'member names must not contain the NUL character (U+0000)',
    });
    expect(problemOf('{"a/b":{"c~d":["\\u0000"]}}')?.field).toBe('/a~1b/c~0d/0');
    expect(problemOf('{"\\u0061\\/":["\\udfff"]}')?.field).toBe('/a~1/0');
  });

  it('every problem is reported, in document order, up to a hundred', () => {
    expect(
      problemsOf('{"a":["ok","\\u0000"],"b":"\\ud800","\\udc00":{}}').map((p) => p.field),
    ).toEqual(['/a/1', '/b', '']);
    expect(problemsOf(`[${'"\\ud800",'.repeat(500)}1]`)).toHaveLength(100);
  });

  it(`nesting up to ${MAX_JSON_DEPTH} levels is fine; a container deeper is refused at its pointer`, () => {
    const nested = (levels: number) => '['.repeat(levels) + ']'.repeat(levels);
    expect(problemOf(nested(MAX_JSON_DEPTH))).toBeNull();
    expect(problemOf(nested(MAX_JSON_DEPTH + 1))).toEqual({
      field: '/0'.repeat(MAX_JSON_DEPTH),
      message: `must not nest deeper than ${MAX_JSON_DEPTH} levels`,
    });
    expect(problemsOf(`{"policies":[{"a":${nested(5000)}}]}`)).toEqual([
      {
        field: `/policies/0/a${'/0'.repeat(MAX_JSON_DEPTH - 3)}`,
        message: `must not nest deeper than ${MAX_JSON_DEPTH} levels`,
      },
    ]);
    // Siblings that go too deep are each reported; what lies deeper still is not looked into.
    const deep = (inner: string) => '['.repeat(MAX_JSON_DEPTH) + inner + ']'.repeat(MAX_JSON_DEPTH);
    expect(problemsOf(deep('[{"\\u0000":["\\ud800"]}],[]')).map((p) => p.field)).toEqual([
      '/0'.repeat(MAX_JSON_DEPTH - 1) + '/0',
      '/0'.repeat(MAX_JSON_DEPTH - 1) + '/1',
    ]);
  });

  it('malformed JSON is reported on the whole body, even after an unstorable string', () => {
    for (const text of [
      '{"a":',
      '{"a":"\\u0000"',
      '[1,]',
      '{"a" 1}',
      '"\\x"',
      '01',
      '1.',
      '-',
      'tru',
      '[]]',
      '"a\nb"',
      '"\\ud800\\uZZZZ"',
      '\uFEFF{}',
    ]) {
      expect(problemOf(text), JSON.stringify(text)).toEqual({
        field: '',
        message: 'must be valid JSON',
      });
    }
  });

  it('agrees with JSON.parse on what is JSON, and finds every unstorable string', () => {
    const LONE = /[\ud800-\udbff](?![\udc00-\udfff])|(?<![\ud800-\udbff])[\udc00-\udfff]/;
    const strings = (v: unknown): string[] =>
      typeof v === 'string'
        ? [v]
        : Array.isArray(v)
          ? v.flatMap(strings)
          : v !== null && typeof v === 'object'
            ? Object.entries(v).flatMap(([k, x]) => [k, ...strings(x)])
            : [];
    const storable = (v: unknown) =>
      strings(v).every((s) => !s.includes('\u0000') && !LONE.test(s));
    // Strings of characters that need care: lone surrogates and NUL (JSON.stringify escapes them),
    // pairs, escapes, pointer specials.
    const unit = fc.constantFrom(
      'a',
      '~',
      '/',
      'é',
      '😀',
      '\u0000',
      '\ud800',
      '\udc00',
      '"',
      '\\',
      '\n',
    );
    fc.assert(
      fc.property(
        fc.jsonValue({ maxDepth: 4, stringUnit: unit }),
        fc.boolean(),
        (value, spaced) => {
          const text = JSON.stringify(value, null, spaced ? 2 : undefined);
          const problem = problemOf(text);
          expect(problem === null).toBe(storable(value));
          if (problem === null) return;
          expect(problem.message).not.toBe('must be valid JSON');
          // The pointer leads to the unstorable string, or to the object with the unstorable name.
          let target: unknown = value;
          for (const token of problem.field.split('/').slice(1)) {
            target = (target as Record<string, unknown>)[
              token.replace(/~1/g, '/').replace(/~0/g, '~')
            ];
          }
          const bad = (s: string) => s.includes('\u0000') || LONE.test(s);
          expect(
            typeof target === 'string' ? bad(target) : Object.keys(target as object).some(bad),
          ).toBe(true);
        },
      ),
      { numRuns: 200 },
    );
    const jsonish = fc.string({
      unit: fc.constantFrom(...'{}[]:,"\\ u0 1-.eE+truefalsn\t\n'.split('')),
      maxLength: 24,
    });
    fc.assert(
      fc.property(jsonish, (text) => {
        let parses = true;
        try {
          JSON.parse(text);
        } catch {
          parses = false;
        }
        const problem = problemOf(text);
        expect(problem?.message === 'must be valid JSON').toBe(!parses);
      }),
      { numRuns: 10_000 },
    );
  }, 30_000);

  it('only JSON whitespace is blank', () => {
    expect(isBlank(Buffer.from(' \t\r\n'))).toBe(true);
    expect(isBlank(Buffer.from(''))).toBe(true);
    expect(isBlank(Buffer.from('\uFEFF'))).toBe(false);
  });
});

describe('a top-level member is found without parsing the body', () => {
  const valueOf = (text: string) => {
    const found = scan(text, 'apiKey').member;
    return found && Buffer.from(text).subarray(found.start, found.end).toString();
  };

  it('finds the last top-level member of that name, written plainly or with escapes', () => {
    expect(valueOf('{"name":"n","apiKey":"pos_a","stages":[]}')).toBe('"pos_a"');
    expect(valueOf('{"apiKey" : [1,{"x":2}] , "b":1}')).toBe('[1,{"x":2}]');
    expect(valueOf('{"apiKey":"one","apiKey":"two"}')).toBe('"two"');
    expect(valueOf('{"api\\u004bey":"escaped"}')).toBe('"escaped"');
    expect(valueOf('{"apiKey":{}}')).toBe('{}');
  });

  it('ignores members of that name deeper down, and bodies that are not objects', () => {
    expect(valueOf('{"stages":[{"apiKey":"inner"}],"x":{"apiKey":"inner"}}')).toBeNull();
    expect(valueOf('["apiKey","pos_a"]')).toBeNull();
    expect(valueOf('{"apiKeys":"pos_a","apiKe":1}')).toBeNull();
  });
});

/** Bytes allocated on the JS heap while `fn` runs, garbage collections included. */
function allocatedDuring(fn: () => void): number {
  const profiler = new GCProfiler();
  profiler.start();
  const before = process.memoryUsage().heapUsed;
  fn();
  const after = process.memoryUsage().heapUsed;
  const { statistics } = profiler.stop();
  let allocated = 0;
  let from = before;
  for (const gc of statistics) {
    allocated += gc.beforeGC.heapStatistics.usedHeapSize - from;
    from = gc.afterGC.heapStatistics.usedHeapSize;
  }
  return allocated + after - from;
}

describe('the scan does not allocate per element', () => {
  it('scanning a 2 MiB body of a million-element array allocates well under a megabyte', () => {
    const body = Buffer.from(`{"events":[${'0,'.repeat(999_999)}0]}`);
    scanJson(body);
    const allocated = allocatedDuring(() => expect(scanJson(body).problems).toEqual([]));
    // The old walk held an entry, a stack frame and a pointer string per element: ~180 MB here.
    expect(allocated).toBeLessThan(1024 * 1024);
  });
});
