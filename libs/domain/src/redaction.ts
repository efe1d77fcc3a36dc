export const REDACTED = '[REDACTED]';

/**
 * Replaces every occurrence of a current sensitive value in a message (addendum §13). Longer values
 * go first so a secret that contains another secret is removed whole.
 */
export function redactSecrets(message: string, secrets: readonly string[]): string {
  const values = [...new Set(secrets.filter((s) => s.length > 0))].sort((a, b) => b.length - a.length);
  let out = message;
  for (const value of values) out = out.split(value).join(REDACTED);
  return out;
}
