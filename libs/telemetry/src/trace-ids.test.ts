import { createHash } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { formatTraceparent, isSpanId, isTraceId, otelTraceId, parseTraceparent } from './trace-ids.js';

const sha = (s: string) => createHash('sha256').update(s, 'utf8').digest('hex');

describe('a pipeline traceId as a W3C trace id (decision 0051)', () => {
  it('is the traceId itself when it is 32 lowercase hex digits', () => {
    expect(otelTraceId('4bf92f3577b34da6a3ce929d0e0e4736')).toBe('4bf92f3577b34da6a3ce929d0e0e4736');
  });

  it('lowercases 32 hex digits given in upper case', () => {
    expect(otelTraceId('4BF92F3577B34DA6A3CE929D0E0E4736')).toBe('4bf92f3577b34da6a3ce929d0e0e4736');
  });

  it('derives the first 32 hex digits of the SHA-256 of any other string, deterministically', () => {
    for (const traceId of ['order-4711', 't', '', 'ünïcödé-🚀', '0af7651916cd43dd8448eb211c80319', 'x'.repeat(36)]) {
      expect(otelTraceId(traceId)).toBe(sha(traceId).slice(0, 32));
      expect(otelTraceId(traceId)).toBe(otelTraceId(traceId));
      expect(isTraceId(otelTraceId(traceId))).toBe(true);
    }
  });

  it('derives one for the all-zero trace id, which W3C forbids', () => {
    const zero = '0'.repeat(32);
    expect(otelTraceId(zero)).toBe(sha(zero).slice(0, 32));
  });

  it('gives different trace ids to different traceIds', () => {
    expect(otelTraceId('order-1')).not.toBe(otelTraceId('order-2'));
  });
});

describe('traceparent', () => {
  it('parses a valid header (case forgiven) and formats one', () => {
    const header = '00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01';
    expect(parseTraceparent(header)).toEqual({ traceId: '4bf92f3577b34da6a3ce929d0e0e4736', spanId: '00f067aa0ba902b7', traceFlags: 1 });
    expect(parseTraceparent(` ${header.toUpperCase()} `)).toEqual(parseTraceparent(header));
    expect(formatTraceparent('4bf92f3577b34da6a3ce929d0e0e4736', '00f067aa0ba902b7', true)).toBe(header);
    expect(formatTraceparent('4bf92f3577b34da6a3ce929d0e0e4736', '00f067aa0ba902b7', false)).toBe(header.replace(/01$/, '00'));
  });

  it('accepts a future version with more fields, refuses version ff, extra fields on 00, zero ids and garbage', () => {
    expect(parseTraceparent('01-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01-extra')).toMatchObject({ spanId: '00f067aa0ba902b7' });
    for (const bad of [
      undefined,
      '',
      'ff-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01',
      '00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01-extra',
      `00-${'0'.repeat(32)}-00f067aa0ba902b7-01`,
      `00-4bf92f3577b34da6a3ce929d0e0e4736-${'0'.repeat(16)}-01`,
      '00-4bf92f3577b34da6a3ce929d0e0e473-00f067aa0ba902b7-01',
      'not a header',
    ]) {
      expect(parseTraceparent(bad), String(bad)).toBeUndefined();
    }
  });

  it('recognises span ids', () => {
    expect(isSpanId('00f067aa0ba902b7')).toBe(true);
    expect(isSpanId('0'.repeat(16))).toBe(false);
    expect(isSpanId('00F067AA0BA902B7')).toBe(false);
  });
});
