import { applicationExists, createApiKey, createApplication, disableApiKey, endKeySessions, type Db } from '@po/db';
import { hashSecret } from '@po/http';
import { generateApiKey } from './keys.js';

export class UsageError extends Error {}

const USAGE = `usage:
  admin apps create --name NAME
  admin apps keys create --app N [--expires-at ISO]
  admin apps keys disable --key-id N`;

function flags(args: string[]): Map<string, string> {
  const out = new Map<string, string>();
  for (let i = 0; i < args.length; i += 2) {
    const flag = args[i];
    const value = args[i + 1];
    if (!flag?.startsWith('--') || value === undefined) throw new UsageError(`unexpected argument "${flag ?? ''}"\n${USAGE}`);
    out.set(flag.slice(2), value);
  }
  return out;
}

function positiveInt(value: string | undefined, flag: string): number {
  if (!value || !/^[1-9]\d*$/.test(value) || !Number.isSafeInteger(Number(value))) throw new UsageError(`--${flag} must be a positive integer`);
  return Number(value);
}

/** Runs one admin command; returns the JSON object to print. */
export async function runAdmin(db: Db, argv: string[], now = new Date()): Promise<Record<string, unknown>> {
  const [scope, verb, ...rest] = argv;
  if (scope !== 'apps') throw new UsageError(USAGE);
  if (verb === 'create') {
    const name = flags(rest).get('name');
    if (!name || [...name].length > 200) throw new UsageError('--name must be 1..200 characters');
    const apiKey = generateApiKey();
    const { app, key } = await db.$transaction(async (tx) => {
      const app = await createApplication(tx, name);
      const key = await createApiKey(tx, { applicationId: app.id, keyHash: hashSecret(apiKey), expiresAt: null });
      return { app, key };
    });
    return { applicationId: app.id, name: app.name, apiKey, keyId: key.id };
  }
  if (verb === 'keys') {
    const [action, ...keyArgs] = rest;
    const f = flags(keyArgs);
    if (action === 'create') {
      const applicationId = positiveInt(f.get('app'), 'app');
      const expiresRaw = f.get('expires-at');
      const expiresAt = expiresRaw === undefined ? null : new Date(expiresRaw);
      if (expiresAt && (Number.isNaN(expiresAt.getTime()) || !/(Z|[+-]\d{2}:\d{2})$/i.test(expiresRaw ?? ''))) {
        throw new UsageError('--expires-at must be an ISO date-time with an offset');
      }
      if (!(await applicationExists(db, applicationId))) throw new UsageError(`application ${applicationId} does not exist`);
      const apiKey = generateApiKey();
      const key = await createApiKey(db, { applicationId, keyHash: hashSecret(apiKey), expiresAt });
      return { keyId: key.id, applicationId, apiKey, expiresAt: key.expiresAt?.toISOString() ?? null };
    }
    if (action === 'disable') {
      const keyId = positiveInt(f.get('key-id'), 'key-id');
      // The worker sessions the key bootstrapped end with it (decision 0082).
      const disabled = await db.$transaction(async (tx) => {
        const key = await disableApiKey(tx, keyId, now);
        if (key) await endKeySessions(tx, { keyId, applicationId: key.applicationId }, now);
        return key;
      });
      if (!disabled) throw new UsageError(`API key ${keyId} does not exist`);
      return { keyId, disabled: true };
    }
  }
  throw new UsageError(USAGE);
}
