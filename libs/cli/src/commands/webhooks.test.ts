// `po webhooks` against a stand-in client: what each command asks the API and what it prints
// (decision 0134). The real API is in the gateway's integration tests and the webhooks e2e.
import type { WebhookDeliveryView, WebhookView } from '@po/client';
import { describe, expect, it } from 'vitest';
import { runPo } from '../run-po.test-support.js';

const webhook: WebhookView = {
  name: 'ops',
  url: 'https://hooks.example/po',
  events: ['pipeline.failed', 'stage.failed'],
  enabled: true,
  createdAt: '2026-11-28T10:00:00.000Z',
  updatedAt: '2026-11-28T10:00:00.000Z',
};
const delivery: WebhookDeliveryView = {
  id: `msg_${'a'.repeat(32)}`,
  eventType: 'pipeline.failed',
  status: 'Failed',
  attempts: 8,
  lastResponseCode: 500,
  lastError: 'answered 500',
  nextAttemptAt: null,
  createdAt: '2026-11-28T10:00:00.000Z',
  deliveredAt: null,
};

async function po(args: string[]) {
  const calls: unknown[][] = [];
  const client = {
    webhooks: {
      list: async () => (calls.push(['list']), [webhook]),
      get: async (name: string) => (calls.push(['get', name]), webhook),
      put: async (name: string, body: unknown) => (
        calls.push(['put', name, body]),
        { ...webhook, secret: 'whsec_c2VjcmV0' }
      ),
      delete: async (name: string) => void calls.push(['delete', name]),
      deliveries: async (name: string, query: unknown) => (
        calls.push(['deliveries', name, query]),
        { items: [delivery], nextCursor: 'next-page-cursor' }
      ),
      retryDelivery: async (name: string, id: string) => (
        calls.push(['retry', name, id]),
        { ...delivery, status: 'Pending' }
      ),
    },
  };
  return { ...(await runPo(client, args)), calls };
}

describe('po webhooks', () => {
  it('put sends the url, the events and enabled, and prints the secret it gets once', async () => {
    const { calls, out, code } = await po([
      'webhooks',
      'put',
      'ops',
      '--url',
      'https://hooks.example/po',
      '--events',
      'pipeline.failed, stage.failed',
    ]);
    expect(code).toBe(0);
    expect(calls).toEqual([
      [
        'put',
        'ops',
        {
          url: 'https://hooks.example/po',
          events: ['pipeline.failed', 'stage.failed'],
          enabled: true,
        },
      ],
    ]);
    expect(out).toMatch(/secret\s+whsec_c2VjcmV0 {2}\(shown once/);
  });

  it('put --disabled stores it disabled; an unknown event is a usage error (exit 2) and nothing is sent', async () => {
    expect(
      (
        await po([
          'webhooks',
          'put',
          'ops',
          '--url',
          'https://x.example',
          '--events',
          'stage.failed',
          '--disabled',
        ])
      ).calls,
    ).toEqual([
      ['put', 'ops', { url: 'https://x.example', events: ['stage.failed'], enabled: false }],
    ]);
    const bad = await po([
      'webhooks',
      'put',
      'ops',
      '--url',
      'https://x.example',
      '--events',
      'pipeline.exploded',
    ]);
    expect(bad.code).toBe(2);
    expect(bad.calls).toEqual([]);
    expect(bad.err).toMatch(/--events takes a comma-separated list/);
  });

  it('list prints a table; -o json the API body', async () => {
    expect((await po(['webhooks', 'list'])).out).toMatch(
      /^WEBHOOK\s+ENABLED\s+URL\s+EVENTS\nops\s+yes\s+https:\/\/hooks\.example\/po\s+pipeline\.failed,stage\.failed$/,
    );
    expect(JSON.parse((await po(['-o', 'json', 'webhooks', 'list'])).out)).toEqual({
      items: [webhook],
    });
  });

  it('deliveries pages with --limit and --cursor and says how to get the next page; retry retries one', async () => {
    const page = await po([
      'webhooks',
      'deliveries',
      'ops',
      '--limit',
      '20',
      '--cursor',
      'this-page-cursor',
    ]);
    expect(page.calls).toEqual([['deliveries', 'ops', { limit: 20, cursor: 'this-page-cursor' }]]);
    expect(page.out).toMatch(/msg_a{32}\s+pipeline\.failed\s+Failed\s+8\s+500/);
    expect(page.err).toBe('more: --cursor next-page-cursor');
    const retried = await po(['webhooks', 'retry', 'ops', delivery.id]);
    expect(retried.calls).toEqual([['retry', 'ops', delivery.id]]);
    expect(retried.out).toBe(`delivery ${delivery.id} of ops: Pending, attempt 9 due now`);
  });

  it('delete deletes and says so', async () => {
    const r = await po(['webhooks', 'delete', 'ops']);
    expect(r.calls).toEqual([['delete', 'ops']]);
    expect(r.err).toBe('webhook ops deleted');
  });
});
