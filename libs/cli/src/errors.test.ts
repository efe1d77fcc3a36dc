import { ConnectionError, ProblemError } from '@po/client';
import { CommanderError } from 'commander';
import { describe, expect, it } from 'vitest';
import { EXIT, UsageError, reportError } from './errors.js';

function capture() {
  const err: string[] = [];
  return { err, io: { out: () => {}, err: (t: string) => void err.push(t) } };
}

const problem = new ProblemError({
  status: 400,
  code: 'validation_failed',
  title: 'Validation failed',
  detail: 'the body is invalid',
  errors: [
    { field: '/stages/0/stageName', message: 'must NOT have fewer than 1 characters' },
    { field: '', message: 'must be object' },
  ],
  traceId: '0af7651916cd43dd8448eb211c80319c',
});

describe('reporting errors', () => {
  it('a problem: title, code, status and detail, then each field error and the trace id; exit 1', () => {
    const c = capture();
    expect(reportError(problem, c.io)).toBe(EXIT.ERROR);
    expect(c.err.join('\n')).toBe(
      [
        'po: Validation failed (validation_failed, HTTP 400): the body is invalid',
        '  /stages/0/stageName: must NOT have fewer than 1 characters',
        '  (body): must be object',
        '  trace id: 0af7651916cd43dd8448eb211c80319c',
      ].join('\n'),
    );
  });

  it('with --output json, the problem as JSON', () => {
    const c = capture();
    reportError(problem, c.io, 'json');
    expect(JSON.parse(c.err[0]!)).toMatchObject({
      code: 'validation_failed',
      status: 400,
      errors: [{ field: '/stages/0/stageName' }, { field: '' }],
    });
  });

  it('maps each kind of failure to its exit code', () => {
    const c = capture();
    expect(
      reportError(
        new ConnectionError('GET http://x/workers', { cause: new Error('ECONNREFUSED') }),
        c.io,
      ),
    ).toBe(EXIT.UNREACHABLE);
    expect(reportError(new UsageError('no API key'), c.io)).toBe(EXIT.USAGE);
    expect(reportError(new CommanderError(1, 'commander.unknownOption', 'x'), c.io)).toBe(
      EXIT.USAGE,
    );
    expect(
      reportError(new CommanderError(0, 'commander.helpDisplayed', '(outputHelp)'), c.io),
    ).toBe(EXIT.OK);
    expect(reportError(new Error('boom'), c.io)).toBe(EXIT.ERROR);
    expect(c.err[0]).toBe(
      'po: cannot reach the API (no answer from GET http://x/workers: ECONNREFUSED); set PO_API_URL or --api-url',
    );
  });
});
