import { Webhook } from 'standardwebhooks';
import { describe, expect, it } from 'vitest';
import {
  isInternalAddress,
  newWebhookMessageId,
  newWebhookSecret,
  nextWebhookAttemptIn,
  signWebhook,
  STANDARD_WEBHOOK_SCHEDULE,
} from './webhooks.js';

describe('signWebhook', () => {
  it('is verified by the standardwebhooks package', () => {
    const secret = newWebhookSecret();
    const id = newWebhookMessageId();
    const timestamp = Math.floor(Date.now() / 1000);
    const body = JSON.stringify({
      type: 'pipeline.completed',
      timestamp: new Date().toISOString(),
      data: { pipelineId: 7, name: 'nächtlich ✓' },
    });
    const headers = {
      'webhook-id': id,
      'webhook-timestamp': String(timestamp),
      'webhook-signature': signWebhook(secret, id, timestamp, body),
    };
    expect(new Webhook(secret).verify(body, headers)).toEqual(JSON.parse(body));
  });

  it('is refused by the verifier for another secret, another body or another id', () => {
    const secret = newWebhookSecret();
    const t = Math.floor(Date.now() / 1000);
    const sig = signWebhook(secret, 'msg_1', t, '{"a":1}');
    const verify = (s: string, id: string, body: string) => () =>
      new Webhook(s).verify(body, {
        'webhook-id': id,
        'webhook-timestamp': String(t),
        'webhook-signature': sig,
      });
    expect(verify(secret, 'msg_1', '{"a":1}')).not.toThrow();
    expect(verify(newWebhookSecret(), 'msg_1', '{"a":1}')).toThrow();
    expect(verify(secret, 'msg_1', '{"a":2}')).toThrow();
    expect(verify(secret, 'msg_2', '{"a":1}')).toThrow();
  });

  it('makes secrets of the whsec_ form with 24 bytes, and message ids that differ', () => {
    const secret = newWebhookSecret();
    expect(secret).toMatch(/^whsec_[A-Za-z0-9+/]{32}$/);
    expect(Buffer.from(secret.slice(6), 'base64')).toHaveLength(24);
    expect(newWebhookMessageId()).not.toBe(newWebhookMessageId());
  });
});

describe('nextWebhookAttemptIn', () => {
  it('follows the Standard Webhooks schedule: immediately, 5 s, 5 min, 30 min, 2 h, 5 h, 10 h, 10 h, then no more', () => {
    const waits = Array.from({ length: 9 }, (_, made) => nextWebhookAttemptIn(made));
    expect(waits).toEqual([0, 5, 300, 1800, 7200, 18000, 36000, 36000, null]);
  });

  it('takes a schedule of its own (the tests use short ones)', () => {
    expect([0, 1, 2, 3].map((made) => nextWebhookAttemptIn(made, [0, 1, 2]))).toEqual([
      0,
      1,
      2,
      null,
    ]);
    expect(STANDARD_WEBHOOK_SCHEDULE).toHaveLength(8);
  });
});

describe('isInternalAddress', () => {
  it.each([
    '127.0.0.1',
    '127.1.2.3',
    '10.0.0.5',
    '172.16.0.1',
    '172.31.255.255',
    '192.168.1.1',
    '169.254.169.254',
    '100.64.0.1',
    '0.0.0.0',
    '255.255.255.255',
    '::1',
    '::',
    'fd00::1',
    'fe80::1',
    '::ffff:127.0.0.1',
    '::ffff:10.1.2.3',
    '::ffff:c0a8:1',
    '::7f00:1',
    '64:ff9b::a00:1',
    // The same ranges in other spellings: written out, leading zeros, upper case, a zone id.
    '0:0:0:0:0:0:0:1',
    '0::1',
    '0000:0000::',
    '0:0:0:0:0:ffff:7f00:1',
    '::ffff:0:7f00:1',
    'FD12:3456::1',
    'fe80::1%eth0',
    'fc00:0:0:0:0:0:0:1',
    'not-an-address',
  ])('refuses %s', (address) => {
    expect(isInternalAddress(address)).toBe(true);
  });

  it.each([
    '93.184.216.34',
    '8.8.8.8',
    '172.32.0.1',
    '192.169.0.1',
    '100.128.0.1',
    '2606:4700:4700::1111',
    '2606:4700:4700:0:0:0:0:1111',
    '::ffff:8.8.8.8',
    '0:0:0:0:0:ffff:808:808',
  ])('allows %s', (address) => {
    expect(isInternalAddress(address)).toBe(false);
  });
});
