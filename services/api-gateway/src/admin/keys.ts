import { randomBytes } from 'node:crypto';

/** `pos_` followed by 43 base64url characters: 32 random bytes (addendum §2). */
export function generateApiKey(): string {
  return `pos_${randomBytes(32).toString('base64url')}`;
}
