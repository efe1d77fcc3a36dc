import { lookup } from 'node:dns/promises';
import { request as httpRequest, type RequestOptions } from 'node:http';
import { request as httpsRequest } from 'node:https';
import { isIP, type LookupFunction } from 'node:net';
import { isInternalAddress, signWebhook } from '@po/domain';

/**
 * Where a webhook may be sent (decision 0134): every address its host resolves to must be public,
 * unless private networks are allowed (WEBHOOK_ALLOW_PRIVATE_NETWORKS). The reason when not.
 */
export async function refusedWebhookTarget(
  url: URL,
  allowPrivateNetworks: boolean,
): Promise<string | null> {
  if (allowPrivateNetworks) return null;
  try {
    await publicAddressOf(url.hostname);
    return null;
  } catch (err) {
    return (err as Error).message;
  }
}

/** The first address of `host`, after checking that none of them is internal. */
async function publicAddressOf(host: string): Promise<{ address: string; family: number }> {
  const bare = host.startsWith('[') ? host.slice(1, -1) : host;
  const addresses = isIP(bare)
    ? [{ address: bare, family: isIP(bare) }]
    : await lookup(bare, { all: true, verbatim: true });
  if (addresses.length === 0) throw new Error(`${host} resolves to no address`);
  const internal = addresses.find((a) => isInternalAddress(a.address));
  if (internal)
    throw new Error(
      `resolves to ${internal.address}, a private, loopback or link-local address (WEBHOOK_ALLOW_PRIVATE_NETWORKS is not set)`,
    );
  return addresses[0]!;
}

export interface WebhookSend {
  url: string;
  secret: string;
  id: string;
  body: string;
  timeoutMs: number;
  allowPrivateNetworks: boolean;
  userAgent: string;
}

export type WebhookSendResult =
  { ok: true; status: number } | { ok: false; status: number | null; error: string };

/**
 * One attempt: a signed POST (Standard Webhooks headers), redirects not followed (a 3xx is a
 * failure), the whole exchange within `timeoutMs`. The connection goes to the address that was
 * checked, so a name that resolves elsewhere the second time cannot reach an internal one.
 */
export function sendWebhook(s: WebhookSend): Promise<WebhookSendResult> {
  const url = new URL(s.url);
  const timestamp = Math.floor(Date.now() / 1000);
  const checkedLookup: LookupFunction = (hostname, options, callback) => {
    const done = callback as (
      err: Error | null,
      address: string | { address: string; family: number }[],
      family?: number,
    ) => void;
    (s.allowPrivateNetworks ? lookup(hostname, { all: false }) : publicAddressOf(hostname)).then(
      (a) => (options.all ? done(null, [a]) : done(null, a.address, a.family)),
      (err: Error) => done(err, '', 0),
    );
  };
  const options: RequestOptions = {
    method: 'POST',
    lookup: checkedLookup,
    headers: {
      'content-type': 'application/json',
      'content-length': Buffer.byteLength(s.body),
      'user-agent': s.userAgent,
      'webhook-id': s.id,
      'webhook-timestamp': String(timestamp),
      'webhook-signature': signWebhook(s.secret, s.id, timestamp, s.body),
    },
    signal: AbortSignal.timeout(s.timeoutMs),
  };
  const bareHost = url.hostname.startsWith('[') ? url.hostname.slice(1, -1) : url.hostname;
  return new Promise((resolve) => {
    const settle = (r: WebhookSendResult) => resolve(r);
    // An IP literal skips `lookup`: it is checked here instead.
    if (isIP(bareHost) && !s.allowPrivateNetworks && isInternalAddress(bareHost)) {
      settle({
        ok: false,
        status: null,
        error: `${bareHost} is a private, loopback or link-local address`,
      });
      return;
    }
    const req = (url.protocol === 'https:' ? httpsRequest : httpRequest)(url, options, (res) => {
      const status = res.statusCode ?? 0;
      res.resume(); // the body is not read: only the status counts
      res.on('end', () =>
        settle(
          status >= 200 && status < 300
            ? { ok: true, status }
            : {
                ok: false,
                status,
                error:
                  status >= 300 && status < 400
                    ? `redirect (${status}) not followed`
                    : `answered ${status}`,
              },
        ),
      );
      res.on('error', (err) => settle({ ok: false, status, error: err.message }));
      // Cut off before its end (a deadline, a reset) without an error event: still one answer.
      res.on('close', () => settle({ ok: false, status, error: 'the connection closed before the answer ended' }));
    });
    req.on('error', (err) =>
      settle({
        ok: false,
        status: null,
        error:
          err.name === 'AbortError' || err.name === 'TimeoutError'
            ? `no answer within ${s.timeoutMs} ms`
            : err.message,
      }),
    );
    req.end(s.body);
  });
}
