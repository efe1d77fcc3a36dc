import type { Middleware } from 'koa';
import { PayloadTooLarge, Unauthorized, ValidationFailed, type FieldError } from '@po/domain';
import type { AppContext, AppState } from './app.js';
import { hashSecret, type ApiKeyResolver } from './auth.js';
import { isBlank, scanJson, type JsonScan } from './json-scan.js';

type Validation<T> = { ok: true; value: T } | { ok: false; errors: FieldError[] };

/**
 * Reads the raw body with a byte limit: a Content-Length over the limit is refused before reading,
 * a chunked body the moment it passes the limit. Returns null when the body is empty.
 */
async function readBytes(ctx: AppContext, limitBytes: number): Promise<Buffer | null> {
  const declared = Number(ctx.get('content-length') || NaN);
  if (Number.isFinite(declared) && declared > limitBytes) throw tooLarge(ctx, limitBytes);
  const bytes = await new Promise<Buffer>((resolve, reject) => {
    const req = ctx.req;
    const chunks: Buffer[] = [];
    let size = 0;
    const done = () => {
      req.off('data', onData).off('end', onEnd).off('error', onError).off('close', onClose);
    };
    const onData = (chunk: Buffer) => {
      size += chunk.length;
      if (size <= limitBytes) return void chunks.push(chunk);
      done();
      reject(tooLarge(ctx, limitBytes));
    };
    const onEnd = () => {
      done();
      resolve(chunks.length === 1 ? chunks[0]! : Buffer.concat(chunks, size));
    };
    // A client that goes away mid-body, or sends a broken chunked body, ends the wait (with or
    // without an 'error' first): its request failed, the server did not, so it is a 400 (logged as
    // such, though nobody is left to read it).
    const onError = () => {
      done();
      reject(ValidationFailed.at('', 'the request body ended before it was complete'));
    };
    const onClose = onError;
    req.on('data', onData).on('end', onEnd).on('error', onError).on('close', onClose);
  });
  return isBlank(bytes) ? null : bytes;
}

/** How much of a refused body is read and dropped before the connection is cut instead. */
const DRAIN_MAX_BYTES = 64 * 1024 * 1024;

/**
 * The rest of a refused body is read and dropped, not left in the socket: closing a connection
 * whose upload is still arriving makes the kernel reset it, and the client (or the Ingress's nginx,
 * as a 502) never reads its 413. Past DRAIN_MAX_BYTES, or when the declared length is beyond it,
 * the connection is closed after the answer instead: a client sending that much gets cut off.
 */
function tooLarge(ctx: AppContext, limitBytes: number): PayloadTooLarge {
  const declared = Number(ctx.get('content-length') || NaN);
  if (Number.isFinite(declared) && declared > DRAIN_MAX_BYTES) ctx.set('Connection', 'close');
  let drained = 0;
  ctx.req.on('data', (chunk: Buffer) => {
    drained += chunk.length;
    if (drained > DRAIN_MAX_BYTES) ctx.req.socket.destroy();
  });
  ctx.req.resume();
  return new PayloadTooLarge(limitBytes);
}

/** Refuses what the scan found: malformed JSON, unstorable strings, deep nesting (400 at the values). */
function checked(scan: JsonScan): JsonScan {
  if (scan.problems.length > 0) throw new ValidationFailed(scan.problems);
  return scan;
}

/**
 * The body as JSON whatever its Content-Type says (addendum §1), or undefined when empty. Parsed
 * only once the scan has accepted it, so a body we refuse costs no more memory than its bytes.
 */
async function readJson(ctx: AppContext, limitBytes: number): Promise<unknown> {
  const bytes = await readBytes(ctx, limitBytes);
  if (bytes === null) return undefined;
  checked(scanJson(bytes));
  return parseScanned(bytes);
}

const PROTO_MESSAGE = 'must not have a member named "__proto__"';

/**
 * JSON.parse, then refuses a member named `__proto__` (400 at its object), as fastify and
 * secure-json-parse do: copies of such an object by spreading or assignment change their prototype,
 * and code downstream (validators, the database driver) then fails on them with a 500. Only text
 * that spells "proto" or has escapes is walked, so ordinary bodies cost no extra pass.
 */
function parseScanned(bytes: Buffer): unknown {
  const text = bytes.toString('utf8');
  const value = JSON.parse(text) as unknown;
  if (!text.includes('proto') && !text.includes('\\u')) return value;
  const stack: { value: unknown; pointer: string }[] = [{ value, pointer: '' }];
  while (stack.length > 0) {
    const { value: v, pointer } = stack.pop()!;
    if (v === null || typeof v !== 'object') continue;
    if (!Array.isArray(v) && Object.prototype.hasOwnProperty.call(v, '__proto__')) throw ValidationFailed.at(pointer, PROTO_MESSAGE);
    for (const [key, child] of Object.entries(v)) {
      if (child !== null && typeof child === 'object') stack.push({ value: child, pointer: `${pointer}/${key.replace(/~/g, '~0').replace(/\//g, '~1')}` });
    }
  }
  return value;
}

/** Body size check, then validation; the validated value lands in ctx.state.body. */
export function jsonBody<T>(
  validate: (data: unknown) => Validation<T>,
  limitBytes: number,
): Middleware<AppState> {
  return async (ctx, next) => {
    const raw = await readJson(ctx, limitBytes);
    const result = validate(raw === undefined ? null : raw);
    if (!result.ok) throw new ValidationFailed(result.errors);
    ctx.state.body = result.value;
    await next();
  };
}

/** Like jsonBody, but no body (or an empty one) is allowed and validates as `{}`. */
export function optionalJsonBody<T>(
  validate: (data: unknown) => Validation<T>,
  limitBytes: number,
): Middleware<AppState> {
  return async (ctx, next) => {
    const raw = await readJson(ctx, limitBytes);
    const result = validate(raw === undefined ? {} : raw);
    if (!result.ok) throw new ValidationFailed(result.errors);
    ctx.state.body = result.value;
    await next();
  };
}

const NOT_A_STRING = Symbol('not a string');

/** A member's value if it is a string or null; anything else is only told apart, never parsed. */
function memberValue(raw: Buffer): string | null | typeof NOT_A_STRING {
  if (raw[0] === 0x22) return JSON.parse(raw.toString('utf8')) as string;
  return raw[0] === 0x6e ? null : NOT_A_STRING;
}

/**
 * Authentication by a key inside the body (legacy POST /pipelines, addendum §2): the body is read
 * (413) and scanned (400), then its top-level `member` string alone is decoded and resolved (400 at
 * `/member`, 401) before the body is parsed, so an anonymous caller never gets a large body parsed.
 * The parsed, not yet validated body lands in ctx.state.body.
 */
export function bodyKeyAuth(
  resolve: ApiKeyResolver,
  member: string,
  limitBytes: number,
): Middleware<AppState> {
  return async (ctx, next) => {
    const bytes = await readBytes(ctx, limitBytes);
    const scan = bytes === null ? null : checked(scanJson(bytes, member));
    const key =
      bytes && scan?.member
        ? memberValue(bytes.subarray(scan.member.start, scan.member.end))
        : undefined;
    if (typeof key !== 'string') {
      const isObject = bytes !== null && bytes[bytes.findIndex((c) => c > 0x20)] === 0x7b;
      if (!isObject) throw ValidationFailed.at('', 'must be an object');
      throw ValidationFailed.at(
        `/${member}`,
        key === undefined || key === null ? 'is required' : 'must be a string',
      );
    }
    const app = await resolve(hashSecret(key));
    if (!app) throw new Unauthorized('Invalid API key in the body.');
    ctx.state.applicationId = app.applicationId;
    ctx.state.apiKeyId = app.keyId;
    ctx.state.body = parseScanned(bytes!);
    await next();
  };
}
