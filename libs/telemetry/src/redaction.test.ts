import { Writable } from 'node:stream';
import { afterEach, describe, expect, it } from 'vitest';
import { createLogger } from './logger.js';
import { MAX_SENSITIVE_VALUES, forgetSensitive, redactLine, rememberSensitive, rememberSensitiveItems } from './redaction.js';

afterEach(() => forgetSensitive());

function capture() {
  const lines: string[] = [];
  const logger = createLogger({
    service: 'test',
    destination: new Writable({
      write(chunk: Buffer, _e, done) {
        lines.push(chunk.toString());
        done();
      },
    }),
  });
  return { logger, lines };
}

describe('the logger censors what is known to be sensitive (decision 0053)', () => {
  it('removes API keys and session tokens wherever they appear in a line', () => {
    const apiKey = `pos_${'a'.repeat(43)}`;
    const session = `pws_${'B'.repeat(40)}-_9`;
    const { logger, lines } = capture();
    logger.warn({ err: new Error(`upstream said: bad key ${apiKey}`), note: `token=${session}` }, `failed with ${apiKey}`);
    expect(lines.join('')).not.toContain(apiKey);
    expect(lines.join('')).not.toContain(session);
    expect(JSON.parse(lines[0]!)).toMatchObject({ msg: 'failed with [REDACTED]', note: 'token=[REDACTED]' });
  });

  it('removes remembered sensitive context values from messages, fields and error texts, keeping the line valid JSON', () => {
    const secret = 'hunter2-"quoted"\\slash';
    rememberSensitiveItems([
      { value: secret, isSensitive: true },
      { value: 'public-value', isSensitive: false },
    ]);
    const { logger, lines } = capture();
    logger.error({ err: new Error(`duplicate key value (${secret})`), detail: { nested: [`x${secret}y`] }, other: 'public-value' }, `got ${secret}`);
    const line = lines[0]!;
    expect(line).not.toContain('hunter2');
    const parsed = JSON.parse(line);
    expect(parsed).toMatchObject({ msg: 'got [REDACTED]', detail: { nested: ['x[REDACTED]y'] }, other: 'public-value' });
    expect(parsed.err.message).toBe('duplicate key value ([REDACTED])');
  });

  it('leaves numbers and structure alone, and ignores values too short to be told from ordinary text', () => {
    rememberSensitive(['123456', 'abc']);
    expect(redactLine('{"durationMs":1234567,"msg":"id 123456 abc"}\n')).toBe('{"durationMs":1234567,"msg":"id [REDACTED] abc"}\n');
  });

  it('costs nothing on lines without credentials when nothing is remembered', () => {
    const line = '{"level":"info","msg":"request"}\n';
    expect(redactLine(line)).toBe(line);
  });

  it('keeps only the most recent values', () => {
    rememberSensitive(['first-secret-value']);
    rememberSensitive(Array.from({ length: MAX_SENSITIVE_VALUES }, (_, i) => `later-secret-${i}`));
    expect(redactLine('{"msg":"first-secret-value"}')).toBe('{"msg":"first-secret-value"}');
    expect(redactLine('{"msg":"later-secret-7"}')).toBe('{"msg":"[REDACTED]"}');
  });
});

describe('overlapping sensitive values', () => {
  it('censors the longer value whole when one contains another', () => {
    rememberSensitive(['secret-1', 'secret-1-extended']);
    expect(redactLine('{"msg":"secret-1-extended and secret-1"}')).toBe('{"msg":"[REDACTED] and [REDACTED]"}');
  });
});
