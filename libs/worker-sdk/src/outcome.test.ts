// Result bodies and the handler context, without a server.
import { describe, expect, it } from 'vitest';
import { addLog, createCollected, createContext } from './context.js';
import { StageError, StageTimeoutError } from './errors.js';
import { buildResultBody, cleanErrorCode, fromReturn, fromThrow } from './outcome.js';
import type { PullJobResponse, StageNextMessage } from './protocol.js';

const message = {
  applicationId: 1,
  pipelineId: 2,
  stageId: 3,
  executionId: 'e',
  stageName: 's',
  stageHandlerName: 'h',
  input: '',
  pipelineContextItems: [],
  previousAttempts: 0,
  timeOutSeconds: null,
} as unknown as StageNextMessage;

const delivery = (input: string): PullJobResponse => ({
  token: 't',
  queue: 'q',
  messageId: 'm',
  headers: {},
  payload: { ...message, input },
});

describe('fromReturn', () => {
  it('keeps strings, serialises other values, and sends nothing for undefined or null', () => {
    expect(fromReturn('plain').result).toBe('plain');
    expect(fromReturn({ a: [1] }).result).toBe('{"a":[1]}');
    expect(fromReturn(0).result).toBe('0');
    expect(fromReturn(undefined)).not.toHaveProperty('result');
    expect(fromReturn(null)).not.toHaveProperty('result');
  });

  it('fails with a code the server will not retry when the value cannot be sent', () => {
    const circular: Record<string, unknown> = {};
    circular.self = circular;
    expect(fromReturn(circular)).toMatchObject({
      isSuccess: false,
      errorCode: 'RESULT_NOT_SERIALIZABLE',
      retryable: false,
    });
    expect(fromReturn('x'.repeat(262_145))).toMatchObject({
      isSuccess: false,
      errorCode: 'RESULT_TOO_LARGE',
    });
    expect(fromReturn('é'.repeat(131_072)).isSuccess).toBe(true); // exactly 262144 bytes
  });
});

describe('fromThrow', () => {
  it('maps StageError, abort reasons, string codes and anything else', () => {
    expect(fromThrow(new StageError('X', 'm', { retryable: true }), undefined)).toMatchObject({
      errorCode: 'X',
      retryable: true,
    });
    expect(fromThrow(new Error('late'), new StageTimeoutError(5))).toMatchObject({
      errorCode: 'TIMEOUT',
    });
    expect(fromThrow({ code: 'E\nBAD' }, undefined)).toMatchObject({ errorCode: 'E_BAD' });
    expect(fromThrow('just a string', undefined)).toMatchObject({ errorCode: 'HANDLER_ERROR' });
    expect(fromThrow(new Error('m'), undefined).extraLogs[0]).toMatchObject({
      message: 'HANDLER_ERROR: m',
      logLevel: 'Error',
    });
  });

  it('cleans error codes', () => {
    expect(cleanErrorCode('a'.repeat(300))).toHaveLength(200);
    expect(cleanErrorCode('   ')).toBe('HANDLER_ERROR');
  });

  it('StageError needs a code', () => {
    expect(() => new StageError('', 'm')).toThrow(TypeError);
  });
});

describe('buildResultBody', () => {
  it('keeps at most 100 log lines, with a marker and the failure line last', () => {
    const collected = createCollected();
    for (let i = 0; i < 150; i++) addLog(collected, `line ${i}`, 'Debug');
    const body = buildResultBody(message, 2, fromThrow(new Error('boom'), undefined), collected);
    expect(body.logs).toHaveLength(100);
    expect(body.logs?.[97]?.message).toBe('line 97');
    expect(body.logs?.[98]?.message).toBe(
      '52 more log lines were dropped (at most 100 per result)',
    );
    expect(body.logs?.[99]?.message).toBe('HANDLER_ERROR: boom');
    expect(body).toMatchObject({
      stageId: 3,
      executionId: 'e',
      attempt: 2,
      pipelineId: 2,
      isSuccess: false,
    });
  });

  it('shortens logs to fit the 327680-byte request limit', () => {
    const collected = createCollected();
    for (let i = 0; i < 10; i++) addLog(collected, 'y'.repeat(20_000), undefined);
    const body = buildResultBody(message, 1, fromReturn('x'.repeat(200_000)), collected);
    expect(Buffer.byteLength(JSON.stringify(body))).toBeLessThanOrEqual(327_680);
    expect(body.result).toHaveLength(200_000);
    expect(body.logs?.[0]?.message).toHaveLength(1000);
  });
});

describe('handler context', () => {
  const make = (input = '') => {
    const collected = createCollected();
    const ctx = createContext({
      delivery: delivery(input),
      handler: 'h',
      attempt: 1,
      signal: new AbortController().signal,
      collected,
    });
    return { ctx, collected };
  };

  it('json() parses the input, uses a fallback for empty input, and fails with VALIDATION_ERROR', () => {
    expect(make('{"a":1}').ctx.json()).toEqual({ a: 1 });
    expect(make('').ctx.json({ d: 1 })).toEqual({ d: 1 });
    expect(() => make('{').ctx.json()).toThrow(
      expect.objectContaining({ code: 'VALIDATION_ERROR', retryable: false }),
    );
    expect(() => make('').ctx.json()).toThrow(/empty/);
  });

  it('keeps the last change per key and refuses the 65th key', () => {
    const { ctx, collected } = make();
    ctx.setContext('k', 'one');
    ctx.setContext('k', 'two', { valueType: 'text' });
    expect([...collected.contextItems.values()]).toEqual([
      { key: 'k', value: 'two', isSensitive: false, valueType: 'text' },
    ]);
    for (let i = 1; i < 64; i++) ctx.setContext(`k${i}`, i);
    expect(() => ctx.setContext('one-too-many', 'x')).toThrow(RangeError);
    expect(() => ctx.setContext('', 'x')).toThrow(TypeError);
  });

  it('checks appended stages', () => {
    const { ctx, collected } = make();
    ctx.appendStages({ stageName: 'a', stageHandlerName: 'h', input: { n: 1 } });
    expect(collected.appendedStages).toHaveLength(1);
    expect(() => ctx.appendStages([{ stageName: 'b' } as never])).toThrow(/stageHandlerName/);
  });
});
