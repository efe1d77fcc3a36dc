import { describe, expect, it } from 'vitest';
import { HelpRequested, UsageError, parseAdmin } from './commands.js';

describe('admin command arguments (commander)', () => {
  it('parses each command', () => {
    expect(parseAdmin(['apps', 'create', '--name', 'billing'])).toEqual({
      kind: 'apps create',
      name: 'billing',
    });
    expect(
      parseAdmin(['apps', 'keys', 'create', '--app', '7', '--expires-at', '2030-01-01T00:00:00Z']),
    ).toEqual({
      kind: 'apps keys create',
      applicationId: 7,
      expiresAt: new Date('2030-01-01T00:00:00Z'),
    });
    expect(parseAdmin(['apps', 'keys', 'disable', '--key-id', '3'])).toEqual({
      kind: 'apps keys disable',
      keyId: 3,
    });
    expect(parseAdmin(['results', 'dead-letters', 'list'])).toEqual({
      kind: 'results dead-letters list',
      limit: 50,
    });
    expect(parseAdmin(['results', 'dead-letters', 'list', '--limit', '5'])).toEqual({
      kind: 'results dead-letters list',
      limit: 5,
    });
    expect(parseAdmin(['results', 'dead-letters', 'replay', 'r-abc-1'])).toEqual({
      kind: 'results dead-letters replay',
      jobId: 'r-abc-1',
    });
    expect(parseAdmin(['results', 'dead-letters', 'replay', '--all'])).toEqual({
      kind: 'results dead-letters replay',
      jobId: null,
    });
    expect(parseAdmin(['results', 'dead-letters', 'drop', 'r-abc-1'])).toEqual({
      kind: 'results dead-letters drop',
      jobId: 'r-abc-1',
    });
  });

  it('--help on any command is help, not an error', () => {
    for (const argv of [
      ['--help'],
      ['apps', '--help'],
      ['apps', 'keys', 'create', '--help'],
      ['results', 'dead-letters', '--help'],
    ]) {
      const err = (() => {
        try {
          parseAdmin(argv);
        } catch (e) {
          return e;
        }
      })();
      expect(err).toBeInstanceOf(HelpRequested);
      expect((err as HelpRequested).text).toContain(
        `Usage: admin ${argv.slice(0, -1).join(' ')}`.trim(),
      );
    }
  });

  it('bad usage names the problem, then the usage', () => {
    expect(() => parseAdmin([])).toThrow(UsageError);
    expect(() => parseAdmin(['apps', 'create', '--name', 'x', 'extra'])).toThrow(
      /too many arguments[\s\S]*usage:/,
    );
    expect(() => parseAdmin(['apps', 'create', '--name', 'x', '--nme', 'y'])).toThrow(
      /unknown option '--nme'/,
    );
    expect(() => parseAdmin(['apps', 'create', '--name', ''])).toThrow(
      '--name must be 1..200 characters',
    );
    expect(() => parseAdmin(['apps', 'keys', 'create', '--app', '0'])).toThrow(/positive integer/);
  });
});
